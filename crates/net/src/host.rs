//! A stack that listens beyond loopback (`stack up --listen ADDR`): which of this host's
//! addresses it binds, the address a client elsewhere reaches it at, the interface that
//! carries its traffic, and a profile's shaping of what the stack sends there ([`Shaping`]).
//!
//! Between two hosts loadlab owns only this end of the path, so a profile shapes the stack's
//! egress: its responses, the heavy direction, leave through an htb class at the profile's
//! rate (with netem below it for delay, jitter and loss where the kernel has netem). Only the
//! stack's own packets (its source port, and its address when it has one) are classified
//! into that class: htb sends every other packet (an ssh session, the rest of the host)
//! unshaped, as htb does with what no filter classifies (`default 0`). Ingress, the requests,
//! is not shaped: requests are small, and shaping them would need an ifb device per interface.
//!
//! Everything added hangs below one root qdisc with the handle [`ROOT`] (`10ad:`), so that what
//! a crash left is recognised as loadlab's ([`leftovers`]); each stack has the class
//! `10ad:N` and the filters of priorities `2N` (IPv4) and `2N+1` (IPv6), removed with it, and
//! the root goes with the last class.

use std::net::{IpAddr, Ipv4Addr, SocketAddr, UdpSocket};

use loadlab_programs::{IP, TC};

use crate::{burst, netem, output, step, Profile, QUEUE};

/// The handle of the root qdisc loadlab puts on an interface to shape a stack's egress.
pub const ROOT: &str = "10ad:";

/// Where a stack listening beyond loopback is, as the lab records it.
#[derive(Clone, Debug, PartialEq, serde::Serialize, serde::Deserialize)]
pub struct Exposure {
    /// The address the front tier binds: one of this host's, or `0.0.0.0` / `::`.
    pub bind: IpAddr,
    /// The address a client elsewhere reaches it at: `bind`, or for `0.0.0.0` / `::` the
    /// host's primary address ([`primary`]).
    pub public: IpAddr,
    /// Whether `public` is the primary address chosen for a wildcard `bind`.
    pub primary: bool,
    /// The interface that holds `public` (`lo` for a loopback address).
    pub interface: String,
    /// The profile's shaping of the stack's egress, when it runs behind one.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub shaping: Option<Shaping>,
}

impl Exposure {
    /// Resolves `bind`: refused unless it is an address of this host (or a wildcard), since a
    /// server would fail to bind it after the lab had started the tiers behind it.
    pub fn resolve(bind: IpAddr) -> Result<Exposure, String> {
        let addresses = local_addresses()?;
        if bind.is_unspecified() {
            let (public, interface) = primary(bind, &addresses)?;
            return Ok(Exposure { bind, public, primary: true, interface, shaping: None });
        }
        if let IpAddr::V6(v6) = bind {
            if v6.is_unicast_link_local() {
                return Err(format!(
                    "{bind} is link-local: a URL cannot carry its interface; give a global \
                     address or ::"
                ));
            }
        }
        let interface = addresses.iter().find(|(_, a)| *a == bind).map(|(i, _)| i.clone());
        let interface = interface.ok_or_else(|| {
            let mine: Vec<String> = addresses.iter().map(|(_, a)| a.to_string()).collect();
            format!(
                "{bind} is not an address of this host (it has {}); give one of those, 0.0.0.0 \
                 or ::",
                mine.join(", ")
            )
        })?;
        Ok(Exposure { bind, public: bind, primary: false, interface, shaping: None })
    }

    /// Whether clients beyond this host can reach the stack.
    pub fn is_beyond_loopback(&self) -> bool {
        !self.bind.is_loopback()
    }

    /// The text `stack show` and the stored configs carry for it.
    pub fn show(&self) -> String {
        let mut text = format!("front tier bound to {}", self.bind);
        if self.primary {
            text.push_str(&format!(
                ", reached at {} (this host's primary address: the default route's source)",
                self.public
            ));
        }
        text.push_str(&format!(" on {}\n", self.interface));
        if let Some(s) = &self.shaping {
            text.push_str(&s.show());
        }
        text
    }
}

/// This host's addresses with their interfaces, from `ip -o addr show`.
pub fn local_addresses() -> Result<Vec<(String, IpAddr)>, String> {
    Ok(parse_addresses(&output(IP, &["-o", "addr", "show"])?))
}

/// `ip -o addr show` lines: `2: eth0    inet 10.0.0.2/24 brd ... scope global eth0\ ...`.
fn parse_addresses(text: &str) -> Vec<(String, IpAddr)> {
    text.lines()
        .filter_map(|line| {
            let fields: Vec<&str> = line.split_whitespace().collect();
            let name = fields.get(1)?.split('@').next()?;
            let addr = fields.get(3)?.split('/').next()?.parse().ok()?;
            matches!(*fields.get(2)?, "inet" | "inet6").then(|| (name.to_string(), addr))
        })
        .collect()
}

/// The host's primary address of `wildcard`'s family: the source address of its default
/// route (its `src`, or the address the kernel picks to reach its gateway: connecting a UDP
/// socket sends nothing), and the interface that holds it.
fn primary(wildcard: IpAddr, addresses: &[(String, IpAddr)]) -> Result<(IpAddr, String), String> {
    let family = if wildcard.is_ipv4() { "-4" } else { "-6" };
    let routes = output(IP, &[family, "-o", "route", "show", "default"])?;
    let no_route = || {
        format!(
            "{wildcard} needs this host's primary address for its URL, and there is no {} \
             default route to take it from; give the address clients reach it at",
            if wildcard.is_ipv4() { "IPv4" } else { "IPv6" }
        )
    };
    let route = routes.lines().next().ok_or_else(no_route)?;
    let word = |key: &str| {
        let words: Vec<&str> = route.split_whitespace().collect();
        words.iter().position(|w| *w == key).and_then(|i| words.get(i + 1)).map(|w| w.to_string())
    };
    let by_gateway = || {
        let gateway: IpAddr = word("via")?.parse().ok()?;
        let socket = UdpSocket::bind(SocketAddr::new(wildcard, 0)).ok()?;
        socket.connect(SocketAddr::new(gateway, 9)).ok()?;
        Some(socket.local_addr().ok()?.ip()).filter(|a| !a.is_unspecified())
    };
    let dev = word("dev");
    // IPv6 gateways are link-local: the first global address of the route's device instead.
    let by_device = || {
        addresses
            .iter()
            .filter(|(i, a)| Some(i) == dev.as_ref() && a.is_ipv4() == wildcard.is_ipv4())
            .map(|(_, a)| *a)
            .find(|a| !matches!(a, IpAddr::V6(v6) if v6.is_unicast_link_local()))
    };
    let public = word("src")
        .and_then(|s| s.parse().ok())
        .or_else(|| wildcard.is_ipv4().then(by_gateway).flatten())
        .or_else(by_device)
        .ok_or_else(no_route)?;
    let interface = addresses.iter().find(|(_, a)| *a == public).map(|(i, _)| i.clone());
    Ok((public, interface.or(dev).ok_or_else(no_route)?))
}

/// A profile's shaping of one stack's egress on one interface (see the module's header).
#[derive(Clone, Debug, PartialEq, serde::Serialize, serde::Deserialize)]
pub struct Shaping {
    pub interface: String,
    /// The class's minor number: the class is `10ad:N` (hex), its filters priorities 2N, 2N+1.
    pub class: u16,
    /// What the stack's packets are classified by.
    pub port: u16,
    /// The bound address, when the stack has one of its own (not a wildcard).
    pub source: Option<IpAddr>,
    /// The shaped rate, bit/s.
    pub rate_bps: u64,
    /// netem below the class (delay, jitter, loss); a byte FIFO the size of a tbf's queue
    /// otherwise.
    pub netem: bool,
}

impl Shaping {
    /// Shapes what `exposure`'s stack sends from `port` as `profile` says. `netem`: whether
    /// the kernel has it, asked only when the profile has delay, jitter or loss. Whatever was
    /// added is removed again when a step fails.
    pub fn create(
        exposure: &Exposure,
        port: u16,
        profile: &Profile,
        netem: &dyn Fn() -> bool,
    ) -> Result<Shaping, String> {
        if let Some(why) = crate::unavailable() {
            return Err(why);
        }
        let rate_bps = profile.rate_bps.ok_or("a profile without a rate shapes nothing")?;
        let delayed = profile.has_delay();
        if delayed && profile.via == Some(crate::DelayPath::Stage) {
            return Err("via=stage needs the stack in a namespace of its own, which --listen \
                        does not have: leave via= out to use netem"
                .into());
        }
        if delayed && !netem() {
            return Err(format!(
                "between hosts delay, jitter and loss need netem on this host's interface, and \
                 {}; a bandwidth profile (lan-100mbit, rate=...) works here",
                crate::profile::NO_NETEM.split(':').next().unwrap_or_default()
            ));
        }
        let interface = exposure.interface.clone();
        if interface == "lo" {
            return Err("the stack listens on loopback: --net without --listen puts it behind \
                        a shaped link on this host"
                .into());
        }
        // Two `stack up`s at once would pick the same class, or both add the root.
        let _picking = crate::pick_lock()?;
        let root_added = ensure_root(&interface)?;
        let class = free_class(&interface).ok_or("no free class left under 10ad:")?;
        let source = (!exposure.bind.is_unspecified()).then_some(exposure.bind);
        let shaping = Shaping { interface, class, port, source, rate_bps, netem: delayed };
        match shaping.add(profile) {
            Ok(()) => Ok(shaping),
            Err(e) => {
                shaping.remove_locked();
                if root_added {
                    let _ = step(TC, &["qdisc", "del", "dev", &shaping.interface, "root"]);
                }
                Err(e)
            }
        }
    }

    fn classid(&self) -> String {
        format!("{ROOT}{:x}", self.class)
    }

    /// The class at the profile's rate, its queue, and the filters that put the stack's
    /// packets in it.
    fn add(&self, profile: &Profile) -> Result<(), String> {
        let (dev, classid) = (self.interface.as_str(), self.classid());
        let rate = format!("{}bit", self.rate_bps);
        let burst = burst(self.rate_bps, false).to_string();
        // quantum only splits spare bandwidth between classes, which never borrow here; set
        // so that tc does not warn about the one it would derive from the rate.
        step(
            TC,
            &[
                "class", "add", "dev", dev, "parent", ROOT, "classid", &classid, "htb", "rate",
                &rate, "ceil", &rate, "burst", &burst, "cburst", &burst, "quantum", "60000",
            ],
        )?;
        if self.netem {
            let args = netem::qdisc_args_at(profile, None, dev, &["parent", &classid]);
            step(TC, &args.iter().map(String::as_str).collect::<Vec<_>>())?;
        } else {
            // The queue a tbf of the local profile holds: QUEUE at the rate, plus its bucket.
            let limit = self.rate_bps / 8 * QUEUE.as_millis() as u64 / 1000
                + burst.parse::<u64>().unwrap_or_default();
            let limit = limit.to_string();
            step(TC, &["qdisc", "add", "dev", dev, "parent", &classid, "bfifo", "limit", &limit])?;
        }
        // u32's `ip sport` and `ip6 sport` read the TCP header right after a fixed IP header
        // (20 bytes, 40 bytes): the servers' packets carry no IP options or extension headers.
        for (protocol, prio) in self.priorities() {
            let port = self.port.to_string();
            let (family, host) = match protocol {
                "ip" => ("ip", "32"),
                _ => ("ip6", "128"),
            };
            let mut args = vec!["filter", "add", "dev", dev, "parent", ROOT, "protocol"];
            let prio = prio.to_string();
            args.extend([
                protocol, "prio", &prio, "u32", "match", family, "sport", &port, "0xffff",
            ]);
            let src = self.source.map(|a| format!("{a}/{host}"));
            if let Some(src) = &src {
                args.extend(["match", family, "src", src]);
            }
            args.extend(["flowid", &classid]);
            step(TC, &args)?;
        }
        Ok(())
    }

    /// The filters' protocols and priorities: the stack's address family, or both for a
    /// wildcard (`::` may take IPv4 clients too).
    fn priorities(&self) -> Vec<(&'static str, u32)> {
        let n = u32::from(self.class) * 2;
        match self.source {
            Some(IpAddr::V4(_)) => vec![("ip", n)],
            Some(IpAddr::V6(_)) => vec![("ipv6", n + 1)],
            None => vec![("ip", n), ("ipv6", n + 1)],
        }
    }

    /// Removes the stack's filters and class, and the root with the last class. Safe to call
    /// on what is half there or already gone (a crash's leftovers).
    pub fn remove(&self) {
        let Ok(_lock) = crate::pick_lock() else { return };
        self.remove_locked();
        if classes(&self.interface).is_empty() && root_is_ours(&self.interface) {
            let _ = step(TC, &["qdisc", "del", "dev", &self.interface, "root"]);
        }
    }

    fn remove_locked(&self) {
        let dev = self.interface.as_str();
        for (_, prio) in self.priorities() {
            let _ =
                step(TC, &["filter", "del", "dev", dev, "parent", ROOT, "prio", &prio.to_string()]);
        }
        // Deleting the class deletes the queue below it.
        let _ = step(TC, &["class", "del", "dev", dev, "classid", &self.classid()]);
    }

    /// What is shaped and what is not, and the class as `tc` shows it.
    pub fn show(&self) -> String {
        let shown = output(
            TC,
            &["-s", "class", "show", "dev", &self.interface, "classid", &self.classid()],
        )
        .unwrap_or_else(|e| e);
        format!(
            "egress shaped: what the stack sends from port {} on {} (htb class {} at {} Mbit/s{}); \
             ingress (requests) not shaped\n{}",
            self.port,
            self.interface,
            self.classid(),
            self.rate_bps / 1_000_000,
            if self.netem { ", netem below it" } else { "" },
            shown.trim_end()
        )
    }
}

/// Puts loadlab's htb at the root of `dev` unless it is there; whether it was added. Refused
/// when the interface has a root qdisc of someone else's (a default one has the handle `0:`
/// and is replaced; deleting ours restores it).
fn ensure_root(dev: &str) -> Result<bool, String> {
    if root_is_ours(dev) {
        return Ok(false);
    }
    let shown = output(TC, &["qdisc", "show", "dev", dev, "root"])?;
    let handle = shown.split_whitespace().nth(2).unwrap_or("0:");
    if handle != "0:" {
        return Err(format!(
            "{dev} has a root qdisc of its own ({}); loadlab does not replace it",
            shown.trim()
        ));
    }
    // default 0: what no filter classifies is sent unshaped.
    step(TC, &["qdisc", "add", "dev", dev, "root", "handle", ROOT, "htb"])?;
    Ok(true)
}

fn root_is_ours(dev: &str) -> bool {
    output(TC, &["qdisc", "show", "dev", dev, "root"])
        .is_ok_and(|s| s.starts_with(&format!("qdisc htb {ROOT} root")))
}

/// The minor numbers of loadlab's classes on `dev`.
pub fn classes(dev: &str) -> Vec<u16> {
    let shown = output(TC, &["class", "show", "dev", dev, "parent", ROOT]).unwrap_or_default();
    shown
        .lines()
        .filter_map(|l| {
            u16::from_str_radix(l.split_whitespace().nth(2)?.strip_prefix(ROOT)?, 16).ok()
        })
        .collect()
}

fn free_class(dev: &str) -> Option<u16> {
    let taken = classes(dev);
    // Priorities 2N and 2N+1 must fit tc's 16 bits.
    (1..0x7fff).find(|n| !taken.contains(n))
}

/// Interfaces of this network namespace with loadlab's root qdisc on them (a crashed stack's
/// shaping, when no instance records it), for `doctor`.
pub fn leftovers() -> Vec<String> {
    output(TC, &["qdisc", "show"]).map(|text| shaped_interfaces(&text)).unwrap_or_default()
}

/// The interfaces whose root qdisc is loadlab's in `tc qdisc show` output.
fn shaped_interfaces(text: &str) -> Vec<String> {
    // `qdisc htb 10ad: dev eth0 root refcnt 3 ...`: all devices' lists name each one.
    text.lines()
        .filter_map(|l| match l.split_whitespace().collect::<Vec<_>>()[..] {
            ["qdisc", "htb", ROOT, "dev", dev, "root", ..] => Some(dev.to_string()),
            _ => None,
        })
        .collect()
}

/// `127.0.0.1`, for the inner tiers.
pub const LOOPBACK: IpAddr = IpAddr::V4(Ipv4Addr::LOCALHOST);

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn addresses_are_read_with_their_interfaces() {
        let text = "1: lo    inet 127.0.0.1/8 scope host lo\\       valid_lft forever\n\
                    4: eth0    inet6 fd00::2/64 scope global nodad \\       valid_lft forever\n\
                    5: llvh0@if4    inet 10.214.0.1/30 scope global llvh0\\ valid_lft\n";
        let found = parse_addresses(text);
        assert_eq!(
            found,
            vec![
                ("lo".to_string(), "127.0.0.1".parse().unwrap()),
                ("eth0".to_string(), "fd00::2".parse().unwrap()),
                ("llvh0".to_string(), "10.214.0.1".parse().unwrap()),
            ]
        );
    }

    #[test]
    fn an_address_of_another_host_is_refused_naming_this_hosts() {
        let Ok(addresses) = local_addresses() else { return };
        let e = Exposure::resolve("10.215.255.254".parse().unwrap()).unwrap_err();
        assert!(e.contains("not an address of this host") && e.contains("127.0.0.1"), "{e}");
        assert!(!addresses.is_empty());
        let lo = Exposure::resolve("127.0.0.1".parse().unwrap()).unwrap();
        assert_eq!((lo.public, lo.interface.as_str(), lo.primary), (LOOPBACK, "lo", false));
        assert!(!lo.is_beyond_loopback());
        let e = Exposure::resolve("fe80::1".parse().unwrap()).unwrap_err();
        assert!(e.contains("link-local"), "{e}");
    }

    #[test]
    fn loadlabs_root_qdiscs_are_told_from_others() {
        let shown = "qdisc noqueue 0: dev lo root refcnt 2\n\
                     qdisc htb 10ad: dev eth0 root refcnt 3 r2q 10 default 0 direct_packets_stat 0\n\
                     qdisc bfifo 8957: dev eth0 parent 10ad:1 limit 675000b\n\
                     qdisc htb 1: dev eth1 root refcnt 2 r2q 10 default 0x10\n";
        assert_eq!(shaped_interfaces(shown), vec!["eth0".to_string()]);
    }

    #[test]
    fn filters_follow_the_address_family() {
        let s = |source: Option<&str>| Shaping {
            interface: "x".into(),
            class: 3,
            port: 8080,
            source: source.map(|s| s.parse().unwrap()),
            rate_bps: 1,
            netem: false,
        };
        assert_eq!(s(Some("10.0.0.1")).priorities(), vec![("ip", 6)]);
        assert_eq!(s(Some("fd00::1")).priorities(), vec![("ipv6", 7)]);
        assert_eq!(s(None).priorities(), vec![("ip", 6), ("ipv6", 7)]);
        assert_eq!(s(None).classid(), "10ad:3");
    }
}
