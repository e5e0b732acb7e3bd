//! Two "hosts" on one machine for the tests of a lab on another host: network namespaces A and
//! B made by the test, joined by a veth pair on a private /30 of 10.215.0.0/16 (loadlab's own
//! profiles use 10.214.0.0/16) and a /64 of the unique local fd15::/16, with B's default
//! routes through A so that B has a primary address of each family. Commands run in a host
//! with `ip netns exec`. Both namespaces (and the veth with them) are removed on drop, so also
//! when the test fails or panics. Needs root and iproute2.
//!
//! Nothing here reaches beyond the two namespaces: their only link is the pair between them.

use std::net::{Ipv4Addr, Ipv6Addr};
use std::process::Command;
use std::sync::atomic::{AtomicU32, Ordering};

/// The namespaces' names start with this, so that a crashed test's leftovers are recognised.
pub const PREFIX: &str = "lltest-";

/// Two hosts joined by one link.
pub struct Hosts {
    pub a: Host,
    pub b: Host,
}

/// One test host: a namespace and its address on the link.
pub struct Host {
    pub netns: String,
    /// Its end of the veth pair.
    pub interface: String,
    pub addr: Ipv4Addr,
    pub addr6: Ipv6Addr,
}

impl Host {
    /// Moves the calling thread into this host: its sockets from now on are the host's (a
    /// network namespace is a thread's, so the rest of the test process stays where it was).
    pub fn enter(&self) {
        let ns = std::fs::File::open(format!("/run/netns/{}", self.netns)).expect("the namespace");
        // SAFETY: setns(2) with a descriptor of a network namespace, for this thread alone.
        let entered =
            unsafe { libc::setns(std::os::fd::AsRawFd::as_raw_fd(&ns), libc::CLONE_NEWNET) };
        assert_eq!(entered, 0, "setns into {}: {}", self.netns, std::io::Error::last_os_error());
    }

    /// `COMMAND` run in this host: `ip netns exec NETNS PROGRAM ARGS...`.
    pub fn command(&self, program: impl AsRef<std::ffi::OsStr>) -> Command {
        let mut command = Command::new("ip");
        command.args(["netns", "exec", &self.netns]).arg(program);
        command
    }

    /// `command` (its program, arguments and environment) run in this host instead.
    pub fn within(&self, command: &Command) -> Command {
        let mut inside = self.command(command.get_program());
        inside.args(command.get_args());
        for (key, value) in command.get_envs() {
            match value {
                Some(v) => inside.env(key, v),
                None => inside.env_remove(key),
            };
        }
        inside
    }

    /// Runs `PROGRAM ARGS` in this host; its stdout, panicking with stderr on failure.
    pub fn run(&self, program: &str, args: &[&str]) -> String {
        let out = self.command(program).args(args).output().expect("ip netns exec runs");
        assert!(
            out.status.success(),
            "{program} {args:?} in {}: {}",
            self.netns,
            String::from_utf8_lossy(&out.stderr)
        );
        String::from_utf8_lossy(&out.stdout).into_owned()
    }

    /// `tc qdisc show dev IF` of this host's end of the link, runs of spaces as one.
    pub fn qdiscs(&self) -> String {
        let shown = self.run("tc", &["qdisc", "show", "dev", &self.interface]);
        shown.split_whitespace().collect::<Vec<_>>().join(" ")
    }
}

impl Hosts {
    /// Makes A and B; `None` (with a visible skip, or a failure in CI) without root.
    pub fn new() -> Option<Hosts> {
        if !crate::support::sys::is_root() {
            assert!(!crate::support::skip::servers_required(), "CI must run host tests as root");
            crate::support::Skip("test hosts are network namespaces: they need root".into())
                .report();
            return None;
        }
        static MADE: AtomicU32 = AtomicU32::new(0);
        let n = MADE.fetch_add(1, Ordering::Relaxed);
        let tag = format!("{}-{n}", std::process::id());
        // One /30 per pair: the pid and the count spread pairs of concurrent tests apart.
        let block = (std::process::id() * 8 + n) % 16_384;
        let base = u32::from(Ipv4Addr::new(10, 215, 0, 0)) + block * 4;
        let host = |name: &str, offset: u32| Host {
            netns: format!("{PREFIX}{name}-{tag}"),
            interface: format!("llt{name}{n}-{}", std::process::id() % 100_000),
            addr: Ipv4Addr::from(base + offset),
            addr6: Ipv6Addr::new(0xfd15, block as u16, 0, 0, 0, 0, 0, offset as u16),
        };
        // Made before anything exists, so that a failure halfway is cleaned by its drop.
        let hosts = Hosts { a: host("a", 1), b: host("b", 2) };
        hosts.build();
        Some(hosts)
    }

    fn build(&self) {
        let (a, b) = (&self.a, &self.b);
        ip(&["netns", "add", &a.netns]);
        ip(&["netns", "add", &b.netns]);
        ip(&[
            "link",
            "add",
            &a.interface,
            "netns",
            &a.netns,
            "type",
            "veth",
            "peer",
            "name",
            &b.interface,
            "netns",
            &b.netns,
        ]);
        for (host, gateway) in [(a, None), (b, Some(a))] {
            let ns = host.netns.as_str();
            let dev = host.interface.as_str();
            ip(&["-n", ns, "link", "set", "lo", "up"]);
            ip(&["-n", ns, "addr", "add", &format!("{}/30", host.addr), "dev", dev]);
            // nodad: usable at once, not after duplicate address detection's second.
            ip(&["-n", ns, "addr", "add", &format!("{}/64", host.addr6), "dev", dev, "nodad"]);
            ip(&["-n", ns, "link", "set", dev, "up"]);
            if let Some(gateway) = gateway {
                ip(&["-n", ns, "route", "add", "default", "via", &gateway.addr.to_string()]);
                let via6 = gateway.addr6.to_string();
                ip(&["-n", ns, "-6", "route", "add", "default", "via", &via6, "dev", dev]);
            }
        }
    }

    /// Whether either namespace still exists (for tests of what the drop removes).
    pub fn names(&self) -> [&str; 2] {
        [&self.a.netns, &self.b.netns]
    }
}

impl Drop for Hosts {
    /// Removing a namespace kills nothing in it: whatever a test left running there is killed
    /// first (`ip netns pids`), then the namespaces go, and the veth pair with them.
    fn drop(&mut self) {
        for host in [&self.a, &self.b] {
            remove_namespace(&host.netns);
        }
    }
}

/// The processes in namespace `netns` now (`ip netns pids`).
pub fn namespace_pids(netns: &str) -> Vec<String> {
    let pids = Command::new("ip").args(["netns", "pids", netns]).output();
    let text = pids.map(|o| String::from_utf8_lossy(&o.stdout).into_owned());
    text.unwrap_or_default().split_whitespace().map(str::to_string).collect()
}

/// Kills what runs in `netns`, then removes it (and its end of every veth pair with it).
pub fn remove_namespace(netns: &str) {
    for pid in namespace_pids(netns) {
        let _ = Command::new("kill").args(["-9", &pid]).status();
    }
    let _ = Command::new("ip").args(["netns", "del", netns]).status();
}

/// Namespaces of these tests' that exist now.
pub fn leftover_namespaces() -> Vec<String> {
    let out = Command::new("ip").args(["netns", "list"]).output().expect("ip runs");
    String::from_utf8_lossy(&out.stdout)
        .lines()
        .filter_map(|l| l.split_whitespace().next())
        .filter(|n| n.starts_with(PREFIX))
        .map(str::to_string)
        .collect()
}

/// Runs `ip ARGS`, panicking with its stderr when it fails.
pub fn ip(args: &[&str]) {
    let out = Command::new("ip").args(args).output().expect("ip runs");
    assert!(out.status.success(), "ip {args:?}: {}", String::from_utf8_lossy(&out.stderr));
}
