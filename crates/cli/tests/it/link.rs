//! The link a run crosses, end to end: loopback runs name `lo` with an unknown speed, and a run
//! to a server in a network namespace behind a veth pair names the veth and the 10000 Mbit/s
//! the kernel reports for it, without calling a light load network-bound.
//!
//! The namespace test needs root and `ip` (iproute2); it skips with a visible line without
//! them, and fails instead when `CI` or `LOADLAB_REQUIRE_SERVERS=1` is set. Everything it
//! creates is named after the test process and removed on drop; its only traffic goes to the
//! namespace it made.

use std::net::Ipv4Addr;
use std::path::{Path, PathBuf};
use std::process::Command;
use std::time::Duration;

use serde_json::json;

use super::{assert_exit, at, bench, strings};
use crate::support::skip::{find_program, missing, servers_required};
use crate::support::{loadlab, output_within, Behaviour, Skip, TestServer, RUN_LIMIT};

#[test]
fn loopback_runs_name_lo_and_its_speed_as_unknown() {
    let server = TestServer::start(Behaviour::ok("over loopback\n"));
    let report = bench(&server.url("/"), &["-n", "50", "-c", "2"], 0);
    assert_eq!(at(&report, "client.link"), &json!({"interface": "lo", "speed_mbps": null}));
    assert_eq!(at(&report, "client.network_bound"), &json!(false));

    let text = text_report(&server.url("/"));
    assert!(text.contains("  Link         lo (loopback: no link in between)\n"), "{text}");
    assert!(!text.contains("NETWORK-BOUND"), "{text}");

    match TestServer::start_on("[::1]:0", Behaviour::ok("over IPv6 loopback\n")) {
        Ok(v6) => {
            let report = bench(&v6.url("/"), &["-n", "50", "-c", "2"], 0);
            assert_eq!(at(&report, "client.link"), &json!({"interface": "lo", "speed_mbps": null}));
        }
        Err(e) => Skip(format!("IPv6 part: cannot bind [::1]: {e}")).report(),
    }
}

#[test]
fn a_veth_link_is_named_with_its_speed_and_a_light_load_is_not_network_bound() {
    let ns = match Netns::create() {
        Ok(ns) => ns,
        Err(skip) => {
            skip.report();
            return;
        }
    };
    // Declared after the namespace, so dropped before it: the server's drop connects to it.
    let server = ns.serve(Behaviour::ok("from the namespace\n"));
    let speed = std::fs::read_to_string(format!("/sys/class/net/{}/speed", ns.host_if))
        .expect("a veth reports a speed");
    assert_eq!(speed.trim(), "10000", "veth devices report 10000 Mbit/s");

    let report = bench(&server.url("/"), &["-n", "200", "-c", "2"], 0);
    assert_eq!(
        at(&report, "client.link"),
        &json!({"interface": ns.host_if, "speed_mbps": 10000}),
        "{report:#}"
    );
    assert_eq!(at(&report, "client.network_bound"), &json!(false), "{report:#}");
    assert!(!strings(&report, "warnings").iter().any(|w| w.contains("the link")), "{report:#}");
    assert!(server.requests() >= 200, "the load reached the namespace's server");

    let text = text_report(&server.url("/"));
    let line = format!("  Link         {} (10000 Mbit/s), 0% used", ns.host_if);
    assert!(text.contains(&line), "no {line:?} in:\n{text}");
}

/// `loadlab bench URL -n 50 -c 2` as text.
fn text_report(url: &str) -> String {
    let mut command = loadlab();
    command.args(["bench", url, "-n", "50", "-c", "2", "--quiet"]);
    let output = output_within(command, RUN_LIMIT);
    assert_exit(&output, 0);
    String::from_utf8(output.stdout).expect("UTF-8 report")
}

/// A network namespace joined to this one by a veth pair on a private /30: `host_if` here at
/// `.1`, its peer inside at `.2`. Removed on drop.
pub(super) struct Netns {
    ip: PathBuf,
    name: String,
    pub(super) host_if: String,
    inside: Ipv4Addr,
    peer: String,
}

impl Netns {
    /// Err only when root or `ip` is missing and skipping is allowed; any other failure panics.
    pub(super) fn create() -> Result<Netns, Skip> {
        let ip = find_program("ip", &["/usr/sbin/ip", "/sbin/ip", "/usr/bin/ip"])
            .ok_or_else(|| missing("ip", "iproute2"))?;
        if !crate::support::sys::is_root() {
            let why = "creating a network namespace needs root";
            if servers_required() {
                panic!("{why}, and CI must run this test");
            }
            return Err(Skip(format!("{why} (LOADLAB_REQUIRE_SERVERS=1 makes this a failure)")));
        }
        // Named after the process (nextest runs each test in its own) and, within 10.200/16,
        // a /30 of its own, so concurrent test runs on one machine do not collide.
        let pid = std::process::id();
        let block = pid % 16_384;
        let base = Ipv4Addr::new(10, 200, (block / 64) as u8, (block % 64 * 4) as u8);
        let at = |n: u32| Ipv4Addr::from(u32::from(base) + n);
        let ns = Netns {
            ip,
            name: format!("loadlab-link-{pid}"),
            host_if: format!("llh{pid}"),
            inside: at(2),
            peer: format!("lln{pid}"),
        };
        let peer = ns.peer.clone();
        // Leftovers of an earlier process with this pid would make `add` fail.
        ns.quiet(&["link", "del", &ns.host_if]);
        ns.quiet(&["netns", "del", &ns.name]);
        ns.ip(&["netns", "add", &ns.name]);
        ns.ip(&["link", "add", &ns.host_if, "type", "veth", "peer", "name", &peer]);
        ns.ip(&["link", "set", &peer, "netns", &ns.name]);
        ns.ip(&["addr", "add", &format!("{}/30", at(1)), "dev", &ns.host_if]);
        ns.ip(&["link", "set", &ns.host_if, "up"]);
        ns.ip(&["-n", &ns.name, "addr", "add", &format!("{}/30", at(2)), "dev", &peer]);
        ns.ip(&["-n", &ns.name, "link", "set", &peer, "up"]);
        ns.ip(&["-n", &ns.name, "link", "set", "lo", "up"]);
        Ok(ns)
    }

    /// An in-process server listening inside the namespace. A socket belongs to the namespace
    /// of the thread that created it, for its whole life: a thread that joins the namespace
    /// (setns affects only the calling thread) binds the listener, and the server's threads
    /// then serve it from anywhere.
    pub(super) fn serve(&self, behaviour: Behaviour) -> TestServer {
        let path = Path::new("/run/netns").join(&self.name);
        let bind = format!("{}:0", self.inside);
        let joined = std::thread::spawn(move || {
            let file = std::fs::File::open(&path)
                .unwrap_or_else(|e| panic!("opening {}: {e}", path.display()));
            // Only this thread's network namespace changes, and the thread ends with the server.
            let entered = crate::support::sys::enter_netns(&file);
            entered.unwrap_or_else(|e| panic!("setns {}: {e}", path.display()));
            TestServer::start_on(&bind, behaviour)
        });
        let server = joined.join().expect("the namespace thread").expect("bind in the namespace");
        // The link is up and the address assigned, but IPv4 on a fresh veth may take a moment
        // to carry packets (duplicate address detection is IPv6 only; this is the carrier).
        let reachable = crate::support::wait_until(Duration::from_secs(10), || {
            std::net::TcpStream::connect_timeout(&server.addr(), Duration::from_millis(500)).is_ok()
        });
        assert!(reachable, "the server in {} is not reachable at {}", self.name, server.addr());
        server
    }

    /// Shapes what the namespace sends (the responses) with a token bucket: `rate` (tc's
    /// units, e.g. `50mbit`), a 32 KB burst and up to 50 ms of queue, as a slower link or a
    /// cloud shaper would, while the veth still reports 10000 Mbit/s. `None` removes it.
    pub(super) fn shape(&self, rate: Option<&str>) {
        match rate {
            Some(rate) => self.ip(&[
                "netns", "exec", &self.name, "tc", "qdisc", "replace", "dev", &self.peer, "root",
                "tbf", "rate", rate, "burst", "32kb", "latency", "50ms",
            ]),
            None => self.quiet(&[
                "netns", "exec", &self.name, "tc", "qdisc", "del", "dev", &self.peer, "root",
            ]),
        }
    }

    /// Runs `ip ARGS`, panicking with its stderr when it fails.
    fn ip(&self, args: &[&str]) {
        let output = Command::new(&self.ip).args(args).output().expect("run ip");
        assert!(
            output.status.success(),
            "ip {}: {}\n{}",
            args.join(" "),
            output.status,
            String::from_utf8_lossy(&output.stderr)
        );
    }

    /// Runs `ip ARGS`, ignoring the outcome.
    fn quiet(&self, args: &[&str]) {
        let _ = Command::new(&self.ip).args(args).output();
    }
}

impl Drop for Netns {
    fn drop(&mut self) {
        // Deleting one end of a veth pair deletes both; the namespace then holds nothing.
        self.quiet(&["link", "del", &self.host_if]);
        self.quiet(&["netns", "del", &self.name]);
    }
}
