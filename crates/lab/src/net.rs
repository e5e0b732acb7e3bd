//! Network profiles: the link between the client and a stack. `loopback` is the lab's default
//! (the stack on 127.0.0.1); the others put the stack in a network namespace of its own, joined
//! to the client's by a link whose two ends are shaped with `tc` as the profile says (seeds 000
//! and 001 measured across a 100 Mbit/s switch): a veth pair for bandwidth alone, a TUN pair
//! with loadlab's delay stage ([`stage`]) between them for delay, jitter and loss, on any
//! kernel, netem or not. This module owns the profiles, the namespace and its link, and what
//! `doctor` says about them.
//!
//! Everything created is named `loadlab-net-*` (namespace), `llv*` (veth) and `llt*` (TUN), on
//! a private 10.214.0.0/16 /30 per link, so that leftovers are recognised and nothing is
//! reachable from outside the machine.

use std::net::Ipv4Addr;
use std::path::PathBuf;
use std::process::Command;
use std::str::FromStr;
use std::time::Duration;

use crate::programs::{IP, TC};
use crate::state::is_root;

pub mod stage;

/// Namespaces loadlab creates start with this.
pub const NS_PREFIX: &str = "loadlab-net-";

/// A link's shape.
#[derive(Clone, Debug, PartialEq)]
pub struct Profile {
    /// `loopback`, `lan-100mbit`, ... or `custom` for the `rate=...,delay=...` form.
    pub name: String,
    /// Bandwidth each way, bit/s; `None`: not shaped (loopback).
    pub rate_bps: Option<u64>,
    /// One-way delay, and its jitter.
    pub delay: Duration,
    pub jitter: Duration,
    /// Loss each way, as a fraction.
    pub loss: f64,
}

impl Profile {
    pub fn is_loopback(&self) -> bool {
        self.name == "loopback"
    }

    /// Delay, jitter or loss: what needs netem (or a delay stage of loadlab's own).
    pub fn needs_delay_stage(&self) -> bool {
        !self.delay.is_zero() || !self.jitter.is_zero() || self.loss > 0.0
    }

    fn shaped(name: &str, mbit: u64) -> Profile {
        Profile {
            name: name.into(),
            rate_bps: Some(mbit * 1_000_000),
            delay: Duration::ZERO,
            jitter: Duration::ZERO,
            loss: 0.0,
        }
    }
}

impl FromStr for Profile {
    type Err = String;

    fn from_str(s: &str) -> Result<Profile, String> {
        match s {
            "loopback" => Ok(Profile {
                name: s.into(),
                rate_bps: None,
                delay: Duration::ZERO,
                jitter: Duration::ZERO,
                loss: 0.0,
            }),
            "lan-100mbit" => Ok(Profile::shaped(s, 100)),
            "lan-1gbit" => Ok(Profile::shaped(s, 1_000)),
            // 40 ms round trip: 20 ms each way, 2 ms of jitter, 0.1% loss, at 100 Mbit/s.
            "wan" => Ok(Profile {
                delay: Duration::from_millis(20),
                jitter: Duration::from_millis(2),
                loss: 0.001,
                ..Profile::shaped(s, 100)
            }),
            custom if custom.contains('=') => custom_profile(custom),
            other => Err(format!(
                "unknown network profile {other:?}: loopback, lan-100mbit, lan-1gbit, wan, or \
                 rate=100mbit,delay=20ms,jitter=2ms,loss=0.1%"
            )),
        }
    }
}

/// `rate=100mbit,delay=20ms,jitter=2ms,loss=0.1%`: any subset, `rate` needed.
fn custom_profile(s: &str) -> Result<Profile, String> {
    let mut p = Profile {
        name: "custom".into(),
        rate_bps: None,
        delay: Duration::ZERO,
        jitter: Duration::ZERO,
        loss: 0.0,
    };
    for part in s.split(',') {
        let (key, value) = part
            .split_once('=')
            .ok_or_else(|| format!("network profile {s:?}: {part:?} is not key=value"))?;
        let bad = |what: &str| format!("network profile {s:?}: {key}={value:?} is not {what}");
        match key.trim() {
            "rate" => {
                p.rate_bps =
                    Some(parse_rate(value.trim()).ok_or_else(|| bad("a rate such as 100mbit"))?)
            }
            "delay" => {
                p.delay = humantime::parse_duration(value.trim()).map_err(|_| bad("a duration"))?
            }
            "jitter" => {
                p.jitter = humantime::parse_duration(value.trim()).map_err(|_| bad("a duration"))?
            }
            "loss" => {
                let pct: f64 =
                    value.trim().trim_end_matches('%').parse().map_err(|_| bad("a percentage"))?;
                if !(0.0..100.0).contains(&pct) {
                    return Err(bad("a percentage below 100"));
                }
                p.loss = pct / 100.0;
            }
            other => {
                return Err(format!(
                    "network profile {s:?}: unknown key {other:?} (rate, delay, jitter, loss)"
                ))
            }
        }
    }
    if p.rate_bps.is_none() {
        return Err(format!("network profile {s:?}: rate= is needed (e.g. rate=100mbit)"));
    }
    Ok(p)
}

/// `100mbit`, `1gbit`, `500kbit`, `2000000bit` in bit/s.
fn parse_rate(s: &str) -> Option<u64> {
    let lower = s.to_ascii_lowercase();
    let (digits, scale) = [("gbit", 1e9), ("mbit", 1e6), ("kbit", 1e3), ("bit", 1.0)]
        .iter()
        .find_map(|(suffix, scale)| lower.strip_suffix(suffix).map(|d| (d.to_string(), *scale)))?;
    let n: f64 = digits.trim().parse().ok()?;
    (n > 0.0).then_some((n * scale) as u64)
}

/// What this machine can do with profiles, as `doctor` says it.
#[derive(Clone, Debug, PartialEq, serde::Serialize)]
pub struct Capability {
    pub root: bool,
    pub ip: Option<PathBuf>,
    pub tc: Option<PathBuf>,
    /// The kernel took a netem qdisc (delay, jitter, loss) in a throwaway namespace.
    pub netem: bool,
    /// The kernel took a tbf qdisc (bandwidth).
    pub tbf: bool,
    /// `/dev/net/tun` is there, for the delay stage's devices.
    pub tun: bool,
}

impl Capability {
    /// Bandwidth profiles can run here.
    pub fn shaping(&self) -> bool {
        self.root && self.ip.is_some() && self.tc.is_some() && self.tbf
    }

    /// Delay, jitter and loss can run here (by loadlab's own stage, netem or not).
    pub fn delay(&self) -> bool {
        self.shaping() && self.tun
    }
}

/// Tries what the kernel can do in a namespace of its own, removed before returning.
pub fn capability() -> Capability {
    let (ip, tc) = (IP.path(), TC.path());
    let mut cap = Capability {
        root: is_root(),
        ip: ip.clone(),
        tc: tc.clone(),
        netem: false,
        tbf: false,
        tun: std::path::Path::new("/dev/net/tun").exists(),
    };
    if !(cap.root && ip.is_some() && tc.is_some()) {
        return cap;
    }
    let ns = format!("{NS_PREFIX}probe-{}", std::process::id());
    if step(IP, &["netns", "add", &ns]).is_err() {
        return cap;
    }
    let _ = step(IP, &["-n", &ns, "link", "set", "lo", "up"]);
    let qdisc = |kind: &[&str]| {
        let mut args = vec!["-n", ns.as_str(), "qdisc", "add", "dev", "lo", "root"];
        args.extend_from_slice(kind);
        let ok = step(TC, &args).is_ok();
        let _ = step(TC, &["-n", &ns, "qdisc", "del", "dev", "lo", "root"]);
        ok
    };
    cap.tbf = qdisc(&["tbf", "rate", "100mbit", "burst", "32kb", "latency", "50ms"]);
    cap.netem = qdisc(&["netem", "delay", "1ms"]);
    let _ = step(IP, &["netns", "del", &ns]);
    cap
}

/// Why no profile can run here (not root, no `ip` or `tc`), checked without changing
/// anything; `None` when one may.
pub fn unavailable() -> Option<String> {
    if !is_root() {
        return Some("network profiles need root (a namespace, a veth pair, tc qdiscs)".into());
    }
    if IP.path().is_none() || TC.path().is_none() {
        return Some("network profiles need iproute2 (ip and tc): apt-get install iproute2".into());
    }
    None
}

/// A namespace joined to this one by a shaped link: a veth pair for bandwidth-only profiles,
/// a pair of TUN devices with loadlab's delay stage between them for profiles with delay,
/// jitter or loss.
#[derive(Clone, Debug, PartialEq, serde::Serialize, serde::Deserialize)]
pub struct Link {
    pub namespace: String,
    pub host_if: String,
    pub ns_if: String,
    pub host_ip: Ipv4Addr,
    pub ns_ip: Ipv4Addr,
    /// The delay stage's process, when the link has one.
    #[serde(default)]
    pub stage: Option<u32>,
}

impl Link {
    /// Creates the namespace `loadlab-net-TAG`, the devices on a free /30, the shaping of both
    /// ends and, for delay or loss, the stage that carries packets between them. Whatever was
    /// created is removed again when a step fails.
    pub fn create(tag: &str, profile: &Profile) -> Result<Link, String> {
        if IP.path().is_none() || TC.path().is_none() {
            return Err("the ip and tc programs (iproute2) are missing".into());
        }
        if !is_root() {
            return Err("network profiles need root (a namespace, a veth pair, tc)".into());
        }
        let staged = profile.needs_delay_stage();
        let program = match (staged, stage::program()) {
            (true, None) => {
                return Err("delay and loss need the loadlab program's delay stage".into());
            }
            (_, program) => program,
        };
        // Two `stack up`s at once would pick the same free /30: the pick and the address it
        // claims happen under one machine-wide lock, released when `create` returns.
        let _picking = pick_lock()?;
        let index = free_block().ok_or("no free /30 left in 10.214.0.0/16")?;
        let base = u32::from(Ipv4Addr::new(10, 214, 0, 0)) + index * 4;
        // TUN devices for a staged link (llt*), a veth pair otherwise (llv*).
        let kind = if staged { "llt" } else { "llv" };
        let mut link = Link {
            namespace: format!("{NS_PREFIX}{tag}"),
            host_if: format!("{kind}h{index}"),
            ns_if: format!("{kind}n{index}"),
            host_ip: Ipv4Addr::from(base + 1),
            ns_ip: Ipv4Addr::from(base + 2),
            stage: None,
        };
        let shape = stage::Shape::from(profile);
        let mut build = || -> Result<(), String> {
            let (ns, h, n) = (link.namespace.clone(), link.host_if.clone(), link.ns_if.clone());
            let (ns, h, n) = (ns.as_str(), h.as_str(), n.as_str());
            step(IP, &["netns", "add", ns])?;
            if staged {
                step(IP, &["tuntap", "add", "dev", h, "mode", "tun"])?;
                step(IP, &["-n", ns, "tuntap", "add", "dev", n, "mode", "tun"])?;
            } else {
                step(IP, &["link", "add", h, "type", "veth", "peer", "name", n])?;
                step(IP, &["link", "set", n, "netns", ns])?;
            }
            step(IP, &["addr", "add", &format!("{}/30", link.host_ip), "dev", h])?;
            step(IP, &["link", "set", h, "up"])?;
            step(IP, &["-n", ns, "addr", "add", &format!("{}/30", link.ns_ip), "dev", n])?;
            step(IP, &["-n", ns, "link", "set", n, "up"])?;
            step(IP, &["-n", ns, "link", "set", "lo", "up"])?;
            if let Some(rate) = profile.rate_bps {
                // Both directions: what the stack sends leaves by its end, what the client
                // sends by the host's. The bucket holds at least 32 KB or 4 ms of the rate,
                // and a whole 64 KB GSO packet where the stage takes offloads (tbf would
                // split larger packets into wire-sized ones for the stage to carry one by one).
                let floor = if staged && stage::offloads(&shape) { 96 } else { 32 } * 1024;
                let burst = (rate / 8 / 250).max(floor).to_string();
                let rate = format!("{rate}bit");
                let tbf = ["root", "tbf", "rate", &rate, "burst", &burst, "latency", "50ms"];
                let mut a = vec!["-n", ns, "qdisc", "add", "dev", n];
                a.extend_from_slice(&tbf);
                step(TC, &a)?;
                let mut b = vec!["qdisc", "add", "dev", h];
                b.extend_from_slice(&tbf);
                step(TC, &b)?;
            }
            if let (true, Some(program)) = (staged, program) {
                link.stage = Some(stage::spawn(program, &link, &shape)?);
            }
            Ok(())
        };
        match build() {
            Ok(()) => Ok(link),
            Err(e) => {
                link.remove();
                Err(e)
            }
        }
    }

    /// Removes the devices and the namespace (deleting one end of a veth deletes both; the
    /// qdiscs go with their devices; the delay stage ends when its devices go, and is stopped
    /// if it has not). Safe to call on what is half there or already gone.
    pub fn remove(&self) {
        let _ = step(IP, &["link", "del", &self.host_if]);
        if let Some(pid) = self.stage {
            stage::stop(pid);
        }
        let _ = step(IP, &["netns", "del", &self.namespace]);
    }
}

/// Runs one `ip` or `tc` command, its stderr as the error.
fn step(program: crate::programs::Need, args: &[&str]) -> Result<(), String> {
    let path = program.path().ok_or_else(|| format!("{} is missing", program.name()))?;
    let out = Command::new(&path).args(args).output().map_err(|e| e.to_string())?;
    if out.status.success() {
        Ok(())
    } else {
        Err(format!(
            "{} {}: {}",
            program.name(),
            args.join(" "),
            String::from_utf8_lossy(&out.stderr).trim()
        ))
    }
}

/// An exclusive lock on `/run/loadlab-net.lock`, held while the returned file is open.
fn pick_lock() -> Result<std::fs::File, String> {
    use std::os::fd::AsRawFd as _;
    let path = std::path::Path::new("/run/loadlab-net.lock");
    let file = std::fs::OpenOptions::new()
        .create(true)
        .truncate(false)
        .write(true)
        .open(path)
        .map_err(|e| format!("{}: {e}", path.display()))?;
    // SAFETY: flock on a descriptor we own; it blocks until the other holder closes its file.
    if unsafe { libc::flock(file.as_raw_fd(), libc::LOCK_EX) } != 0 {
        return Err(format!("{}: {}", path.display(), std::io::Error::last_os_error()));
    }
    Ok(file)
}

/// The /30s already given to veths of loadlab's, read from the host's addresses.
fn free_block() -> Option<u32> {
    let ip = IP.path()?;
    let out = Command::new(ip).args(["-4", "-o", "addr", "show"]).output().ok()?;
    let text = String::from_utf8_lossy(&out.stdout);
    (0..16_384u32).find(|i| {
        let host = Ipv4Addr::from(u32::from(Ipv4Addr::new(10, 214, 0, 0)) + i * 4 + 1);
        !text.contains(&format!(" {host}/"))
    })
}

/// Namespaces of loadlab's that exist now (`ip netns list`), for `doctor` and cleanup.
pub fn namespaces() -> Vec<String> {
    let Some(ip) = IP.path() else { return Vec::new() };
    let Ok(out) = Command::new(ip).args(["netns", "list"]).output() else { return Vec::new() };
    String::from_utf8_lossy(&out.stdout)
        .lines()
        .filter_map(|l| l.split_whitespace().next())
        .filter(|n| n.starts_with(NS_PREFIX))
        .map(str::to_string)
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn built_in_and_custom_profiles() {
        let lan: Profile = "lan-100mbit".parse().unwrap();
        assert_eq!((lan.rate_bps, lan.needs_delay_stage()), (Some(100_000_000), false));
        assert!("loopback".parse::<Profile>().unwrap().is_loopback());
        let wan: Profile = "wan".parse().unwrap();
        assert_eq!((wan.delay, wan.loss), (Duration::from_millis(20), 0.001));
        assert!(wan.needs_delay_stage());
        let c: Profile = "rate=50mbit,delay=10ms,loss=0.5%".parse().unwrap();
        assert_eq!(
            (c.rate_bps, c.delay, c.loss),
            (Some(50_000_000), Duration::from_millis(10), 0.005)
        );
        for bad in ["lan", "rate=fast", "delay=10ms", "rate=1mbit,loss=100%", "rate=1mbit,mtu=9000"]
        {
            assert!(bad.parse::<Profile>().is_err(), "{bad}");
        }
        assert_eq!(parse_rate("1gbit"), Some(1_000_000_000));
        assert_eq!(parse_rate("500kbit"), Some(500_000));
        assert_eq!(parse_rate("0mbit"), None);
    }

    #[test]
    fn a_shaped_link_is_created_and_leaves_nothing_when_removed() {
        let cap = capability();
        if !cap.shaping() {
            let strict = std::env::var_os("LOADLAB_REQUIRE_SERVERS").is_some_and(|v| v == "1");
            assert!(!strict, "CI must be able to shape links: {cap:?}");
            eprintln!("SKIP: cannot shape links here: {cap:?}");
            return;
        }
        assert!(!namespaces().iter().any(|n| n.contains("probe")), "the probe left its namespace");
        let tag = format!("test-{}", std::process::id());
        let link = Link::create(&tag, &"lan-100mbit".parse().unwrap()).expect("a link");
        let tc = TC.path().unwrap();
        let shown = |args: &[&str]| {
            String::from_utf8_lossy(&Command::new(&tc).args(args).output().unwrap().stdout)
                .into_owned()
        };
        let inside = shown(&["-n", &link.namespace, "qdisc", "show", "dev", &link.ns_if]);
        let outside = shown(&["qdisc", "show", "dev", &link.host_if]);
        link.remove();
        assert!(inside.contains("tbf") && inside.contains("rate 100Mbit"), "{inside}");
        assert!(outside.contains("tbf") && outside.contains("rate 100Mbit"), "{outside}");
        assert!(!namespaces().contains(&link.namespace), "the namespace is left");
        assert!(!std::path::Path::new("/sys/class/net").join(&link.host_if).exists());
        // A test binary carries no delay stage (the loadlab program does): refused, nothing made.
        assert!(Link::create(&tag, &"wan".parse().unwrap()).is_err(), "no stage here");
        assert!(!namespaces().contains(&link.namespace), "a refused profile creates nothing");
    }
}
