//! The network link a run's traffic crosses: which local interface carries it, how fast that
//! interface is, and whether the run filled it (seeds 000 and 001 were capped by a 100 Mbit/s
//! switch without their authors noticing).
//!
//! [`Link::of`] is looked up once, before the run; [`utilisation`] and [`network_bound`] judge
//! the run's bytes after it. Nothing here touches the hot path.

use std::net::{IpAddr, Ipv4Addr, Ipv6Addr, SocketAddr, UdpSocket};
use std::path::Path;
use std::time::Duration;

/// At or above this share of the link's capacity, the network (not the server) is taken to
/// have limited the run. A full link never shows 100%: see [`WIRE_BYTES_PER_SEGMENT`].
pub const NETWORK_BOUND: f64 = 0.90;

/// A link that carried more than this share of the speed its interface reports is not limited
/// by that speed: the figure is nominal (a veth reports 10000 Mbit/s and carries 14 Gbit/s on
/// this kind of machine; a cloud NIC may report a speed it is not shaped to).
pub const NOMINAL: f64 = 1.10;

/// What [`Link::unix`] names as its interface.
pub const UNIX: &str = "unix socket";

/// HTTP bytes of one full TCP segment, and what that segment costs on an Ethernet wire: a
/// 1500-byte MTU minus 20 bytes of IPv4 header and 32 of TCP header with timestamps leaves
/// 1448 bytes of payload; the frame adds 14 bytes of Ethernet header, 4 of FCS, 8 of preamble
/// and 12 of inter-frame gap, 1538 in all. The payload a run counts is scaled by this ratio
/// so that a link carrying all it can reads as about 100%, not 94%. Smaller segments cost more
/// per byte, so the estimate is a lower bound of what the wire carried.
pub const PAYLOAD_BYTES_PER_SEGMENT: u64 = 1448;
pub const WIRE_BYTES_PER_SEGMENT: u64 = 1538;

/// The local interface that carries traffic to the target, and its speed.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Link {
    /// The interface name (`lo`, `eth0`, `veth1`); `None` when it could not be found.
    pub interface: Option<String>,
    /// The speed the kernel reports for it, in Mbit/s (10^6 bit/s); `None` when unknown:
    /// loopback, most virtual devices, a link that is down, or an interface not found.
    pub speed_mbps: Option<u64>,
}

impl Link {
    /// The link traffic from `source` (or the address the kernel picks) to `target` takes.
    ///
    /// Connecting a UDP socket sends nothing: the kernel only looks up the route and picks the
    /// local address it would send from, which getsockname then reports. That address is
    /// mapped to the interface that holds it. A target that is itself one of this machine's
    /// addresses is reached over loopback whatever interface holds it (the kernel's `local`
    /// routing table), so its link is `lo`.
    pub fn of(target: SocketAddr, source: Option<IpAddr>) -> Link {
        let interfaces = match crate::sys::interface_addresses() {
            Ok(list) => list,
            Err(_) => return Link::default(),
        };
        let local = |ip: IpAddr| interfaces.iter().find(|(_, a)| *a == ip).map(|(n, _)| n.clone());
        let interface = if target.ip().is_loopback() || local(target.ip()).is_some() {
            interfaces
                .iter()
                .find(|(_, a)| a.is_loopback())
                .map(|(n, _)| n.clone())
                .or_else(|| Some("lo".to_string()))
        } else {
            route_source(target, source).and_then(local)
        };
        let nic = interface.as_deref().and_then(|i| read_speed(Path::new("/sys/class/net"), i));
        // A shaper on the way out (tc's root tbf, or a netem with a rate, as loadlab's network
        // profiles and many test links set) is the link's real speed when it is the lower.
        let shaped = match interface.as_deref() {
            Some(i) if i != "lo" => shaped_rate_mbps(i),
            _ => None,
        };
        let speed_mbps = match (nic, shaped) {
            (Some(n), Some(s)) => Some(n.min(s)),
            (n, s) => n.or(s),
        };
        Link { interface, speed_mbps }
    }

    /// Whether the traffic stays on this machine (the loopback interface).
    /// Loopback, or a unix socket: client and server on one machine, no link in between.
    pub fn is_loopback(&self) -> bool {
        matches!(self.interface.as_deref(), Some("lo" | UNIX))
    }

    /// A unix-domain socket: no network at all.
    pub fn unix() -> Link {
        Link { interface: Some(UNIX.to_string()), speed_mbps: None }
    }

    pub fn is_unix(&self) -> bool {
        self.interface.as_deref() == Some(UNIX)
    }

    /// The link's capacity in bytes per second, when its speed is known.
    pub fn bytes_per_second(&self) -> Option<f64> {
        self.speed_mbps.map(|m| m as f64 * 1e6 / 8.0)
    }
}

/// The local address the kernel would send from to reach `target`.
fn route_source(target: SocketAddr, source: Option<IpAddr>) -> Option<IpAddr> {
    let bind = match (source, target) {
        (Some(ip), _) => SocketAddr::new(ip, 0),
        (None, SocketAddr::V4(_)) => SocketAddr::new(Ipv4Addr::UNSPECIFIED.into(), 0),
        (None, SocketAddr::V6(_)) => SocketAddr::new(Ipv6Addr::UNSPECIFIED.into(), 0),
    };
    let socket = UdpSocket::bind(bind).ok()?;
    socket.connect(target).ok()?;
    socket.local_addr().ok().map(|a| a.ip())
}

/// The rate of `interface`'s root qdisc when it is a tbf or a netem with a rate (an htb's
/// classes are not read), in Mbit/s, from `tc -j qdisc show dev IFACE`; `None` without `tc`,
/// without such a qdisc, or when the output is not understood.
fn shaped_rate_mbps(interface: &str) -> Option<u64> {
    if interface.is_empty() || interface.starts_with('-') {
        return None;
    }
    let tc = ["tc", "/usr/sbin/tc", "/sbin/tc"].into_iter().find_map(|tc| {
        std::process::Command::new(tc)
            .args(["-j", "qdisc", "show", "dev", interface])
            .stderr(std::process::Stdio::null())
            .output()
            .ok()
            .filter(|o| o.status.success())
    })?;
    parse_root_rate(&String::from_utf8_lossy(&tc.stdout))
}

/// The root qdisc's rate in `tc -j qdisc show` output, in Mbit/s: a tbf's `options.rate`, or a
/// netem's `options.rate.rate` (bytes per second in both).
fn parse_root_rate(json: &str) -> Option<u64> {
    let qdiscs: serde_json::Value = serde_json::from_str(json).ok()?;
    qdiscs.as_array()?.iter().find_map(|q| {
        let options = &q["options"];
        let bytes = match q["kind"].as_str() {
            Some("tbf") => options["rate"].as_u64(),
            Some("netem") => options["rate"]["rate"].as_u64(),
            _ => None,
        };
        let bytes = bytes.filter(|_| q["root"].as_bool() == Some(true))?;
        Some((bytes * 8).div_ceil(1_000_000)).filter(|&m| m > 0)
    })
}

/// The speed in Mbit/s that `DIR/IFACE/speed` reports. Loopback and most virtual devices make
/// the read fail (EINVAL); a NIC without link, or one whose driver does not know, reports -1.
/// Both are unknown, never zero. A TUN device (it has `tun_flags`) reports a speed its driver
/// makes up, which has changed between kernels (10 Mbit/s in Debian 12's 6.1, 10000 in 6.18):
/// unknown too, so that only a shaper on it says how fast it is.
fn read_speed(dir: &Path, interface: &str) -> Option<u64> {
    if interface.is_empty() || interface.contains('/') || interface.starts_with('.') {
        return None;
    }
    if dir.join(interface).join("tun_flags").exists() {
        return None;
    }
    let text = std::fs::read_to_string(dir.join(interface).join("speed")).ok()?;
    text.trim().parse::<i64>().ok().filter(|&s| s > 0).map(|s| s as u64)
}

/// The share of a `speed_mbps` link that `payload_bytes` of HTTP over `duration` used, framing
/// included (see [`WIRE_BYTES_PER_SEGMENT`]); `None` when the speed is unknown or no time
/// passed.
pub fn utilisation(payload_bytes: u64, duration: Duration, speed_mbps: Option<u64>) -> Option<f64> {
    let speed = speed_mbps.filter(|&s| s > 0)?;
    let secs = duration.as_secs_f64();
    if secs <= 0.0 {
        return None;
    }
    let wire =
        payload_bytes as f64 * WIRE_BYTES_PER_SEGMENT as f64 / PAYLOAD_BYTES_PER_SEGMENT as f64;
    Some(wire * 8.0 / secs / (speed as f64 * 1e6))
}

/// Whether `payload_bytes` moved in one direction over `duration` filled at least 90% of a
/// `speed_mbps` link, and not more than it could carry ([`NOMINAL`]). An unknown speed is
/// never network-bound by this rule: there is nothing to compare to.
pub fn network_bound(payload_bytes: u64, duration: Duration, speed_mbps: Option<u64>) -> bool {
    utilisation(payload_bytes, duration, speed_mbps)
        .is_some_and(|u| (NETWORK_BOUND..=NOMINAL).contains(&u))
}

#[cfg(test)]
mod tests {
    use super::*;

    const SEC: Duration = Duration::from_secs(1);

    #[test]
    fn a_full_100_mbit_link_is_network_bound() {
        // 100 Mbit/s is 12.5 MB/s on the wire; TCP over Ethernet delivers about 94% of it.
        let full = 12_500_000 * PAYLOAD_BYTES_PER_SEGMENT / WIRE_BYTES_PER_SEGMENT;
        let u = utilisation(full, SEC, Some(100)).unwrap();
        assert!((u - 1.0).abs() < 1e-3, "{u}");
        assert!(network_bound(full, SEC, Some(100)));
        // Seed 000: nginx at 356 req/s of a ~30 KB phpinfo page over 100 Mbit/s.
        assert!(network_bound(356 * 30 * 1024 * 10, 10 * SEC, Some(100)));
    }

    #[test]
    fn the_threshold_is_90_percent_of_the_wire() {
        // One byte more than the share, so that rounding cannot put it just below.
        let at = |share: f64| (12_500_000.0 * share * 1448.0 / 1538.0) as u64 + 1;
        assert!(network_bound(at(0.90), SEC, Some(100)));
        assert!(!network_bound(at(0.89), SEC, Some(100)));
        // The same bytes over twice the time, or on a ten times faster link, are not.
        assert!(!network_bound(at(0.95), 2 * SEC, Some(100)));
        assert!(!network_bound(at(0.95), SEC, Some(1000)));
        assert!(network_bound(at(0.95) * 100, SEC, Some(10_000)));
        // More than the link could carry: its speed is nominal, not a limit.
        assert!(network_bound(at(1.09), SEC, Some(100)));
        assert!(!network_bound(at(1.11), SEC, Some(100)));
        assert!(!network_bound(at(1.49) * 100, SEC, Some(10_000)));
    }

    #[test]
    fn unknown_speed_or_no_time_is_never_network_bound() {
        assert!(!network_bound(u64::MAX, SEC, None));
        assert!(!network_bound(u64::MAX, SEC, Some(0)));
        assert!(!network_bound(u64::MAX, Duration::ZERO, Some(100)));
        assert_eq!(utilisation(1, SEC, None), None);
        assert_eq!(utilisation(0, SEC, Some(100)), Some(0.0));
    }

    #[test]
    fn ipv4_loopback_is_lo_with_unknown_speed() {
        let link = Link::of("127.0.0.1:80".parse().unwrap(), None);
        assert_eq!(link, Link { interface: Some("lo".into()), speed_mbps: None });
        let link = Link::of("127.0.0.1:80".parse().unwrap(), Some("127.0.0.1".parse().unwrap()));
        assert_eq!(link.interface.as_deref(), Some("lo"));
    }

    #[test]
    fn ipv6_loopback_is_lo_with_unknown_speed() {
        let link = Link::of("[::1]:80".parse().unwrap(), None);
        assert_eq!(link, Link { interface: Some("lo".into()), speed_mbps: None });
    }

    #[test]
    fn a_local_address_of_another_interface_is_reached_over_loopback() {
        // Traffic to one's own address never leaves the machine, whatever interface holds it.
        let own = crate::sys::interface_addresses()
            .unwrap()
            .into_iter()
            .find(|(_, ip)| !ip.is_loopback() && ip.is_ipv4());
        if let Some((name, ip)) = own {
            let link = Link::of(SocketAddr::new(ip, 80), None);
            assert_eq!(link.interface.as_deref(), Some("lo"), "{ip} of {name}");
        }
    }

    #[test]
    fn a_root_tbf_or_netem_is_read_as_the_links_rate() {
        let shaped = r#"[{"kind":"tbf","handle":"842d:","root":true,"refcnt":3,
            "options":{"rate":12500000,"burst":50000,"lat":50000}}]"#;
        assert_eq!(parse_root_rate(shaped), Some(100));
        // As tc 6.1 prints a netem with a rate (Debian 12's kernel, docs/lab.md).
        let netem = r#"[{"kind":"netem","handle":"8007:","root":true,"refcnt":3,"options":{
            "limit":1000,"delay":{"delay":0.02,"jitter":0.002,"correlation":0},
            "loss-random":{"loss":0.001,"correlation":0},"rate":{"rate":12500000,
            "packetoverhead":0,"cellsize":0,"celloverhead":0},"ecn":false,"gap":0}}]"#;
        assert_eq!(parse_root_rate(netem), Some(100));
        let unshaped = r#"[{"kind":"netem","root":true,"options":{"limit":1000,"gap":0}}]"#;
        assert_eq!(parse_root_rate(unshaped), None);
        assert_eq!(parse_root_rate(r#"[{"kind":"fq_codel","root":true,"options":{}}]"#), None);
        assert_eq!(parse_root_rate(r#"[{"kind":"tbf","root":false,"options":{"rate":1}}]"#), None);
        assert_eq!(parse_root_rate("not json"), None);
    }

    #[test]
    fn speed_files_are_read_as_the_kernel_writes_them() {
        let dir = tempdir();
        let write = |iface: &str, text: &str| {
            std::fs::create_dir_all(dir.join(iface)).unwrap();
            std::fs::write(dir.join(iface).join("speed"), text).unwrap();
        };
        write("eth0", "100\n");
        write("eth1", "-1\n");
        write("veth0", "10000\n");
        write("bad", "fast\n");
        write("tun0", "10\n");
        std::fs::write(dir.join("tun0").join("tun_flags"), "0x1001\n").unwrap();
        assert_eq!(read_speed(&dir, "tun0"), None);
        assert_eq!(read_speed(&dir, "eth0"), Some(100));
        assert_eq!(read_speed(&dir, "veth0"), Some(10_000));
        assert_eq!(read_speed(&dir, "eth1"), None);
        assert_eq!(read_speed(&dir, "bad"), None);
        assert_eq!(read_speed(&dir, "missing"), None);
        assert_eq!(read_speed(&dir, "../eth0"), None);
        std::fs::remove_dir_all(&dir).unwrap();
    }

    /// A fresh directory of this test's own (the engine has no tempfile dependency).
    fn tempdir() -> std::path::PathBuf {
        let dir = std::env::temp_dir().join(format!(
            "loadlab-link-{}-{:?}",
            std::process::id(),
            std::time::SystemTime::now().duration_since(std::time::UNIX_EPOCH).unwrap()
        ));
        std::fs::create_dir_all(&dir).unwrap();
        dir
    }
}
