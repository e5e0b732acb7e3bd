//! The path probe: the round-trip time of the path to the target, idle and under load, from the
//! TCP handshakes of probe connections made beside the load (a few before it, then a few each
//! second). A link whose queue sets the pace shows as a handshake that takes far longer under
//! load than idle, whatever speed the interface reports (seeds 000 and 001; a cloud NIC that
//! reports 10 Gbit/s behind a 50 Mbit/s shaper).
//!
//! Why the handshake: the kernel measures it from the SYN to the SYN-ACK, both answered by the
//! server's kernel, not its application, so a slow server (a PHP page, a full worker pool) does
//! not inflate it as it inflates the RTT of the load connections (their ACKs wait for the
//! response or the delayed-ACK timer). What it crosses is the path: the links and their queues
//! in both directions. A probe that gets no SYN-ACK within its bound is counted apart
//! (`unanswered`): a full listen queue drops SYNs too, so it is no evidence about the link.
//!
//! The probe runs on its own thread and costs the server a handful of accepts per second; it
//! touches nothing on the workers' hot path.

use std::net::{SocketAddr, TcpStream};
use std::os::fd::AsFd;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;
use std::thread::JoinHandle;
use std::time::{Duration, Instant};

use crate::sys::MachineCpu;

/// Handshakes measured before the load starts; the idle RTT is their minimum.
pub const IDLE_PROBES: usize = 5;
/// Failed handshakes after which the idle probing gives up. One failure is no reason to: the
/// kernel's first SYN retransmission comes after 1 s (TCP_TIMEOUT_INIT, RFC 6298 2.1), as long
/// as [`PROBE_TIMEOUT`], so a single SYN or SYN-ACK lost on a lossy path (`wan` loses 0.1% each
/// way) or held up past the bound fails its probe, and stopping there would leave a run on
/// that path with no idle RTT. Two bound what a target that does not answer costs the run to
/// 2 s.
pub const IDLE_FAILURES: usize = 2;
/// Time between two probes under load.
pub const PROBE_INTERVAL: Duration = Duration::from_millis(250);
/// A probe without a SYN-ACK after this long is unanswered.
pub const PROBE_TIMEOUT: Duration = Duration::from_secs(1);

/// The path's round-trip times, in microseconds, as the probes saw them.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct PathRtt {
    /// The smallest handshake RTT before the load: the path with empty queues. `None` when no
    /// idle probe was answered (or TCP_INFO could not be read), or the path was not probed.
    pub idle_us: Option<u32>,
    /// Why a probed path has no idle RTT; `None` when it has one or was not probed (loopback).
    /// The rules that compare with the idle RTT cannot apply: the verdict says so.
    pub idle_unknown: Option<NoIdleRtt>,
    /// Handshake RTTs of the probes made during the measured window, in order.
    pub under_load_us: Vec<u32>,
    /// Probes during the measured window that got no answer within [`PROBE_TIMEOUT`].
    pub unanswered: u32,
    /// The busy share of all the machine's CPUs over the window (client, servers on this
    /// machine and anything else): a full machine delays handshakes too, so a rise is then no
    /// evidence about the link.
    pub machine_busy: Option<f64>,
}

impl PathRtt {
    /// The median handshake RTT under load.
    pub fn median_under_load_us(&self) -> Option<u32> {
        let mut v = self.under_load_us.clone();
        v.sort_unstable();
        v.get(v.len() / 2).copied().filter(|_| !v.is_empty())
    }
}

/// Why the handshakes before the load gave no idle RTT.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct NoIdleRtt {
    /// Handshakes tried, and how many of them were answered with an RTT.
    pub tried: usize,
    pub answered: usize,
    /// What the last failed one met ("connection timed out after 1 s", "connection refused").
    pub last: String,
}

impl std::fmt::Display for NoIdleRtt {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(
            f,
            "{} of {} handshakes before the load failed, the last with {}",
            self.tried - self.answered,
            self.tried,
            self.last
        )
    }
}

/// A running probe: idle RTT taken, probing under load until [`Probe::finish`].
pub struct Probe {
    stop: Arc<AtomicBool>,
    handle: Option<JoinHandle<Window>>,
    idle: Result<u32, NoIdleRtt>,
}

/// The idle RTT: the smallest of [`IDLE_PROBES`] answered handshakes made before any load,
/// giving up after [`IDLE_FAILURES`] failed ones (a target that does not answer must not hold
/// the run up for long).
pub fn idle_rtt(addr: SocketAddr) -> Result<u32, NoIdleRtt> {
    smallest_of(|| handshake(addr, PROBE_TIMEOUT))
}

/// [`idle_rtt`]'s rule over any source of handshakes.
fn smallest_of(mut probe: impl FnMut() -> Result<u32, String>) -> Result<u32, NoIdleRtt> {
    let (mut best, mut tried, mut failed) = (None::<u32>, 0, 0);
    let mut last = String::new();
    while tried - failed < IDLE_PROBES && failed < IDLE_FAILURES {
        tried += 1;
        match probe() {
            Ok(rtt) => best = Some(best.map_or(rtt, |b| b.min(rtt))),
            Err(why) => {
                failed += 1;
                last = why;
            }
        }
    }
    best.ok_or(NoIdleRtt { tried, answered: tried - failed, last })
}

impl Probe {
    /// Probes on a thread of its own, keeping what falls after `measure_start` (warm-up probes
    /// only warm); `idle` is what [`idle_rtt`] found before the load.
    pub fn start(addr: SocketAddr, measure_start: Instant, idle: Result<u32, NoIdleRtt>) -> Probe {
        let stop = Arc::new(AtomicBool::new(false));
        let flag = stop.clone();
        let handle = std::thread::Builder::new()
            .name("loadlab-probe".into())
            .spawn(move || probe_loop(addr, measure_start, &flag))
            .ok();
        Probe { stop, handle, idle }
    }

    /// Stops probing and returns what was seen.
    pub fn finish(mut self) -> PathRtt {
        self.stop.store(true, Ordering::Relaxed);
        let w = self.handle.take().and_then(|h| h.join().ok()).unwrap_or_default();
        let machine_busy = match (w.machine_start, MachineCpu::now()) {
            (Some(a), Some(b)) => b.busy_since(&a),
            _ => None,
        };
        PathRtt {
            idle_us: self.idle.as_ref().ok().copied(),
            idle_unknown: self.idle.err(),
            under_load_us: w.seen,
            unanswered: w.unanswered,
            machine_busy,
        }
    }
}

/// What the probe thread saw in the window.
#[derive(Default)]
struct Window {
    seen: Vec<u32>,
    unanswered: u32,
    machine_start: Option<MachineCpu>,
}

fn probe_loop(addr: SocketAddr, measure_start: Instant, stop: &AtomicBool) -> Window {
    let mut w = Window::default();
    let mut next = Instant::now() + PROBE_INTERVAL;
    while !stop.load(Ordering::Relaxed) {
        let now = Instant::now();
        if w.machine_start.is_none() && now >= measure_start {
            w.machine_start = MachineCpu::now();
        }
        if now < next {
            // Short naps, so that the end of the run is not held up by a whole interval.
            std::thread::sleep((next - now).min(Duration::from_millis(20)));
            continue;
        }
        next += PROBE_INTERVAL;
        let rtt = handshake_rtt(addr, PROBE_TIMEOUT);
        // A probe started before the window, or still waiting when the run ended, says
        // nothing about the window.
        if now < measure_start || stop.load(Ordering::Relaxed) {
            continue;
        }
        match rtt {
            Some(us) => w.seen.push(us),
            None => w.unanswered += 1,
        }
    }
    w
}

/// Connects to `addr` and returns the kernel's RTT estimate right after the handshake (one
/// sample: SYN to SYN-ACK), in microseconds; `None` when the connection failed or timed out.
/// The connection is closed at once.
pub fn handshake_rtt(addr: SocketAddr, timeout: Duration) -> Option<u32> {
    handshake(addr, timeout).ok()
}

/// [`handshake_rtt`], with what a failed handshake met.
fn handshake(addr: SocketAddr, timeout: Duration) -> Result<u32, String> {
    let stream = TcpStream::connect_timeout(&addr, timeout).map_err(|e| match e.kind() {
        std::io::ErrorKind::TimedOut => {
            format!("no answer within {} ms", timeout.as_millis())
        }
        _ => e.to_string(),
    })?;
    let rtt = crate::sys::tcp_info(stream.as_fd()).map(|i| i.tcpi_rtt);
    drop(stream);
    rtt.ok_or_else(|| "TCP_INFO unreadable".to_owned())
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::net::TcpListener;

    #[test]
    fn a_handshake_on_loopback_has_a_small_nonzero_rtt() {
        let listener = TcpListener::bind("127.0.0.1:0").unwrap();
        let rtt = handshake_rtt(listener.local_addr().unwrap(), PROBE_TIMEOUT).unwrap();
        assert!(rtt > 0 && rtt < 100_000, "{rtt} µs on loopback");
    }

    #[test]
    fn a_closed_port_is_no_rtt() {
        let port = TcpListener::bind("127.0.0.1:0").unwrap().local_addr().unwrap();
        // The listener is dropped: the port refuses.
        assert_eq!(handshake_rtt(port, PROBE_TIMEOUT), None);
    }

    #[test]
    fn probes_under_load_fall_in_the_window_only() {
        let listener = TcpListener::bind("127.0.0.1:0").unwrap();
        let addr = listener.local_addr().unwrap();
        let idle = idle_rtt(addr);
        assert!(idle.is_ok(), "{idle:?}");
        // A window that has not begun when the probe ends: every probe was a warm-up one.
        let before = Probe::start(addr, Instant::now() + Duration::from_secs(3600), idle.clone());
        std::thread::sleep(Duration::from_millis(600));
        let path = before.finish();
        assert!(path.under_load_us.is_empty() && path.unanswered == 0, "{path:?}");
        assert_eq!((path.idle_us, path.idle_unknown), (idle.clone().ok(), None));
        // A window already open: the probes made in it are kept. The first is due 250 ms in;
        // a second gives a loaded machine's scheduler four times that.
        let during = Probe::start(addr, Instant::now(), idle);
        std::thread::sleep(PROBE_INTERVAL * 4);
        let path = during.finish();
        assert!(!path.under_load_us.is_empty(), "{path:?}");
        assert_eq!(path.unanswered, 0);
        assert!(path.median_under_load_us().is_some());
    }

    /// One lost SYN (or SYN-ACK) fails an idle probe, and a run must not be left without an
    /// idle RTT by it: a failed probe is retried, up to [`IDLE_FAILURES`].
    #[test]
    fn a_failed_idle_handshake_is_retried_and_two_give_up_with_the_reason() {
        let replay = |answers: Vec<Result<u32, &str>>| {
            let mut it = answers.into_iter();
            let mut calls = 0;
            let got = smallest_of(|| {
                calls += 1;
                it.next().expect("no more probes than planned").map_err(str::to_owned)
            });
            (got, calls)
        };
        let lost = Err("no answer within 1000 ms");
        // One lost among five answered: their minimum, after six handshakes.
        assert_eq!(
            replay(vec![lost, Ok(41_000), Ok(40_200), Ok(40_900), Ok(40_100), Ok(40_500)]),
            (Ok(40_100), 6)
        );
        // Two failures give up: with what was answered, or with why nothing was.
        assert_eq!(replay(vec![Ok(40_300), lost, lost]), (Ok(40_300), 3));
        let refused = Err("Connection refused (os error 111)");
        let (got, calls) = replay(vec![refused, refused]);
        assert_eq!(calls, 2);
        let why = got.unwrap_err();
        assert_eq!(
            why.to_string(),
            "2 of 2 handshakes before the load failed, the last with Connection refused (os \
             error 111)"
        );
    }

    #[test]
    fn a_refusing_target_has_no_idle_rtt_and_says_why() {
        let port = TcpListener::bind("127.0.0.1:0").unwrap().local_addr().unwrap();
        let why = idle_rtt(port).unwrap_err();
        assert_eq!((why.tried, why.answered), (IDLE_FAILURES, 0));
        assert!(why.last.contains("refused"), "{why}");
    }

    #[test]
    fn median_of_nothing_is_none() {
        assert_eq!(PathRtt::default().median_under_load_us(), None);
        let p = PathRtt { under_load_us: vec![5, 1, 9], ..PathRtt::default() };
        assert_eq!(p.median_under_load_us(), Some(5));
    }
}
