//! netem, the kernel's network emulator (sch_netem), as a link's delay path where the kernel
//! has it: one netem qdisc at the root of each end of a veth pair carries the profile's rate,
//! delay, jitter and loss. This module owns that qdisc's `tc` arguments and the size of its
//! queue.
//!
//! netem's own `rate` shapes the bandwidth rather than a tbf above it. With a rate, netem
//! schedules each packet after the one before it (sch_netem.c, netem_enqueue: the last queued
//! packet's time to send is the reference), so jitter does not reorder a direction, as on a
//! real path and as loadlab's stage does; without one each packet's jittered delay is drawn on
//! its own and the time-sorted queue reorders packets that were closer together than the
//! jitter, which TCP takes for loss (measured: nginx's TCP saw reordering 2,827 times in 5 s
//! under a tbf, 233 times with netem's rate; docs/lab.md).

use std::time::Duration;

use crate::{burst, Profile, QUEUE};

/// What the limit counts a packet as: a full Ethernet frame without its FCS (a veth carries
/// 1514 bytes for a 1500-byte MTU).
const FULL_FRAME: u64 = 1514;

/// The arguments of `tc` that put netem at the root of `dev` (in namespace `ns`, or this one)
/// as `profile` says: `[-n NS] qdisc add dev DEV root netem limit N [delay D [J]] [loss P%]
/// [rate R]`.
pub fn qdisc_args(profile: &Profile, ns: Option<&str>, dev: &str) -> Vec<String> {
    qdisc_args_at(profile, ns, dev, &["root"])
}

/// The same at `at` in the device's tree: `root`, or `parent CLASSID` (below the htb class
/// that shapes a stack listening beyond loopback, [`crate::host`]).
pub fn qdisc_args_at(profile: &Profile, ns: Option<&str>, dev: &str, at: &[&str]) -> Vec<String> {
    let mut args: Vec<String> = Vec::new();
    if let Some(ns) = ns {
        args.extend(["-n".into(), ns.into()]);
    }
    args.extend(["qdisc", "add", "dev", dev].map(String::from));
    args.extend(at.iter().map(|a| a.to_string()));
    args.push("netem".into());
    args.extend(["limit".into(), limit(profile).to_string()]);
    if !profile.delay.is_zero() || !profile.jitter.is_zero() {
        args.extend(["delay".into(), micros(profile.delay)]);
        if !profile.jitter.is_zero() {
            // Uniform within ±jitter: netem's draw when no distribution is named, as the
            // stage's.
            args.push(micros(profile.jitter));
        }
    }
    if profile.loss > 0.0 {
        args.extend(["loss".into(), "random".into(), percent(profile.loss)]);
    }
    if let Some(rate) = profile.rate_bps {
        args.extend(["rate".into(), format!("{rate}bit")]);
    }
    args
}

/// netem's queue, in packets: it holds every packet for its delay (and jitter) and then for
/// its turn at the rate, and drops at the tail beyond its limit. The bytes it may hold are
/// those of a tbf on the stage path (the rate for [`QUEUE`], plus its bucket) and those in
/// flight for the delay and jitter, in full frames: a netem link carries one TCP segment per
/// packet (see [`crate::Link::create`]), so a link filled by bulk transfers queues for as long
/// on either path. netem's own default of 1000 packets would queue 600 ms at 20 Mbit/s, and
/// drop on a 1 Gbit/s link with 20 ms of delay (1,652 full frames in flight one way).
pub fn limit(profile: &Profile) -> u64 {
    let Some(rate) = profile.rate_bps else { return 1000 };
    let held = (profile.delay + profile.jitter + QUEUE).as_micros();
    let bytes = u128::from(rate) * held / 8_000_000 + u128::from(burst(rate, false));
    bytes.div_ceil(u128::from(FULL_FRAME)) as u64
}

fn micros(d: Duration) -> String {
    format!("{}us", d.as_micros())
}

/// A fraction as tc's percentage, without binary noise (0.001 -> `0.1%`).
fn percent(fraction: f64) -> String {
    format!("{}%", (fraction * 1e8).round() / 1e6)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn args(profile: &str, ns: Option<&str>) -> String {
        qdisc_args(&profile.parse().unwrap(), ns, "llvh3").join(" ")
    }

    #[test]
    fn tc_arguments_carry_rate_delay_jitter_and_loss() {
        assert_eq!(
            args("wan", None),
            "qdisc add dev llvh3 root netem limit 628 delay 20000us 2000us loss random 0.1% \
             rate 100000000bit"
        );
        assert_eq!(
            args("rate=1gbit,delay=20ms", Some("loadlab-net-x")),
            "-n loadlab-net-x qdisc add dev llvh3 root netem limit 6110 delay 20000us \
             rate 1000000000bit"
        );
        // Loss alone: no delay argument; jitter alone: a delay of zero around which it draws.
        assert_eq!(
            args("rate=10mbit,loss=2.5%", None),
            "qdisc add dev llvh3 root netem limit 63 loss random 2.5% rate 10000000bit"
        );
        assert_eq!(
            args("rate=10mbit,jitter=3ms", None),
            "qdisc add dev llvh3 root netem limit 66 delay 0us 3000us rate 10000000bit"
        );
    }

    #[test]
    fn the_queue_holds_the_bandwidth_delay_product_and_a_tbfs_queue() {
        let p = |s: &str| s.parse::<Profile>().unwrap();
        // 1 Gbit/s x (20 + 50) ms + a 500 KB bucket = 9.25 MB = 6,110 full frames.
        assert_eq!(limit(&p("rate=1gbit,delay=20ms")), 6_110);
        // 100 Mbit/s x 72 ms + 50 KB = 950 KB: 628 frames.
        assert_eq!(limit(&p("wan")), 628);
        // 20 Mbit/s x 72 ms + 32 KB: 141 frames, 85 ms of queue at most, not netem's 1000.
        assert_eq!(limit(&p("rate=20mbit,delay=20ms,jitter=2ms")), 141);
        assert_eq!(limit(&p("rate=10gbit,delay=100ms,jitter=10ms")), 135_403);
    }
}
