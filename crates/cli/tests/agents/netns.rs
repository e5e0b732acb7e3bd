//! `bench --agents N` with every agent on a "host" of its own: each agent in a network
//! namespace the test makes, with its own address, and the server in another, the hub that
//! joins them (a veth pair per agent, the hub forwarding between them, as a switch would). The
//! agents reach the rendezvous and the server only over those links. The shares add up
//! exactly and the server sees each agent's own address; kill -9 of one agent stops every
//! agent within 3 s and leaves no process in any namespace. Needs root and iproute2.

use std::net::{IpAddr, Ipv4Addr, Ipv6Addr};
use std::path::Path;
use std::process::Command;
use std::sync::atomic::{AtomicU32, Ordering};
use std::thread;
use std::time::{Duration, Instant};

use crate::support::hosts::{self, Host};
use crate::support::{Behaviour, TestServer};

use super::{agent, all, json, sent, spawn, stderr, wait, TOKEN};

/// The rendezvous port on agent 0's address: its namespace is the test's own and new, so
/// nothing else listens there.
const RENDEZVOUS_PORT: u16 = 7070;

/// A hub namespace (the server's) and one namespace per agent, each joined to the hub by a
/// veth pair on a /30 of 10.216.0.0/16 (hosts.rs takes 10.215/16, loadlab's profiles 10.214/16).
/// Every namespace is removed on drop, so also when the test fails.
pub(super) struct Star {
    hub: String,
    /// The hub's address on each agent's link.
    pub(super) hub_addrs: Vec<Ipv4Addr>,
    pub(super) agents: Vec<Host>,
}

impl Star {
    /// `None` (a visible skip, a failure in CI) without root.
    pub(super) fn new(n: usize) -> Option<Star> {
        if !crate::support::sys::is_root() {
            assert!(!crate::support::skip::servers_required(), "CI must run host tests as root");
            crate::support::Skip("agents on hosts of their own need root".into()).report();
            return None;
        }
        static MADE: AtomicU32 = AtomicU32::new(0);
        let made = MADE.fetch_add(1, Ordering::Relaxed);
        let pid = std::process::id();
        // 16 addresses (four /30s) per star: the pid and the count spread concurrent ones.
        let block = (pid * 8 + made) % 4096;
        let base = u32::from(Ipv4Addr::new(10, 216, 0, 0)) + block * 16;
        let tag = format!("{pid}-{made}");
        let agents = (0..n)
            .map(|i| Host {
                netns: format!("{}ag{i}-{tag}", hosts::PREFIX),
                interface: format!("lls{made}-{i}a{}", pid % 100_000),
                addr: Ipv4Addr::from(base + 4 * i as u32 + 2),
                addr6: Ipv6Addr::UNSPECIFIED,
            })
            .collect();
        // Made before anything exists, so that a failure halfway is cleaned by its drop.
        let star = Star {
            hub: format!("{}hub-{tag}", hosts::PREFIX),
            hub_addrs: (0..n).map(|i| Ipv4Addr::from(base + 4 * i as u32 + 1)).collect(),
            agents,
        };
        star.build(made);
        Some(star)
    }

    fn build(&self, made: u32) {
        hosts::ip(&["netns", "add", &self.hub]);
        let forward = Command::new("ip")
            .args(["netns", "exec", &self.hub, "sysctl", "-qw", "net.ipv4.ip_forward=1"])
            .status()
            .expect("sysctl runs");
        assert!(forward.success(), "the hub forwards between the agents' links");
        hosts::ip(&["-n", &self.hub, "link", "set", "lo", "up"]);
        for (i, (a, hub_addr)) in self.agents.iter().zip(&self.hub_addrs).enumerate() {
            let hub_if = format!("lls{made}-{i}h{}", std::process::id() % 100_000);
            hosts::ip(&["netns", "add", &a.netns]);
            let (hub, ns) = (self.hub.as_str(), a.netns.as_str());
            hosts::ip(&[
                "link",
                "add",
                &hub_if,
                "netns",
                hub,
                "type",
                "veth",
                "peer",
                "name",
                &a.interface,
                "netns",
                ns,
            ]);
            hosts::ip(&["-n", hub, "addr", "add", &format!("{hub_addr}/30"), "dev", &hub_if]);
            hosts::ip(&["-n", hub, "link", "set", &hub_if, "up"]);
            hosts::ip(&["-n", ns, "link", "set", "lo", "up"]);
            hosts::ip(&["-n", ns, "addr", "add", &format!("{}/30", a.addr), "dev", &a.interface]);
            hosts::ip(&["-n", ns, "link", "set", &a.interface, "up"]);
            hosts::ip(&["-n", ns, "route", "add", "default", "via", &hub_addr.to_string()]);
        }
    }

    /// An in-process server listening in the hub on its first link's address. A socket
    /// belongs to the namespace of the thread that made it: a thread joins the hub (setns
    /// moves only that thread) to bind it, and the server's threads serve it from anywhere.
    pub(super) fn serve(&self, behaviour: Behaviour) -> TestServer {
        let path = Path::new("/run/netns").join(&self.hub);
        let bind = format!("{}:0", self.hub_addrs[0]);
        let joined = thread::spawn(move || {
            let file = std::fs::File::open(&path).expect("the hub's namespace file");
            crate::support::sys::enter_netns(&file).expect("setns into the hub");
            TestServer::start_on(&bind, behaviour)
        });
        joined.join().expect("the hub's thread").expect("bind in the hub")
    }

    /// `loadlab bench URL ARGS` as agent `i` of all, in its own namespace.
    fn agent(&self, url: &str, args: &[&str], i: usize) -> Command {
        let at = format!("{}:{RENDEZVOUS_PORT}", self.agents[0].addr);
        self.agents[i].within(&agent(url, args, i, self.agents.len(), &at, TOKEN))
    }

    /// Every agent's `loadlab bench URL ARGS` at once, each succeeding; their outputs.
    fn run_all(&self, url: &str, args: &[&str]) -> Vec<std::process::Output> {
        let outs = all((0..self.agents.len()).map(|i| self.agent(url, args, i)).collect());
        for o in &outs {
            assert_eq!(o.status.code(), Some(0), "{}", stderr(o));
        }
        outs
    }

    /// The processes left in any of the star's namespaces.
    pub(super) fn processes(&self) -> Vec<String> {
        let mut all = hosts::namespace_pids(&self.hub);
        for a in &self.agents {
            all.extend(hosts::namespace_pids(&a.netns));
        }
        all
    }
}

impl Drop for Star {
    fn drop(&mut self) {
        for a in &self.agents {
            hosts::remove_namespace(&a.netns);
        }
        hosts::remove_namespace(&self.hub);
    }
}

#[test]
fn agents_on_hosts_of_their_own_split_the_count_exactly() {
    let Some(star) = Star::new(3) else { return };
    let server = star.serve(Behaviour::ok("hello"));
    let url = server.url("/");
    let args = ["-c", "6", "-n", "301"];
    let outs = star.run_all(&url, &args);
    // floor((I+1)301/3) - floor(301 I/3): 100, 100, 101, and agent 0 prints the whole.
    let merged = json(&outs[0]);
    assert_eq!(sent(&merged), 301);
    assert_eq!(outs[1..].iter().map(|o| sent(&json(o))).collect::<Vec<_>>(), [100, 101]);
    assert_eq!(server.requests(), 301, "the server saw the single-host count");
    let rows = merged["agents"].as_array().expect("agents in agent 0's JSON");
    let completed: Vec<u64> = rows.iter().map(|r| r["completed"].as_u64().unwrap()).collect();
    assert_eq!(completed, [100, 100, 101]);
    // Each agent came from its own host: the server saw each agent's address, and only those.
    let mut peers = server.peers();
    peers.sort();
    peers.dedup();
    let own: Vec<IpAddr> = star.agents.iter().map(|a| IpAddr::V4(a.addr)).collect();
    assert_eq!(peers, own);
    assert!(star.processes().is_empty(), "left: {:?}", star.processes());
}

#[test]
fn open_loop_agents_on_hosts_of_their_own_send_the_single_host_arrivals() {
    let Some(star) = Star::new(2) else { return };
    let server = star.serve(Behaviour::ok("hello"));
    let url = server.url("/");
    let args = ["-R", "300", "-n", "201"];
    let outs = star.run_all(&url, &args);
    // Arrivals k < 201 with k mod 2 = I: 101 and 100.
    assert_eq!(outs.iter().map(|o| sent(&json(o))).collect::<Vec<_>>(), [201, 100]);
    assert_eq!(server.requests(), 201);
    let merged = json(&outs[0]);
    // The agents' clocks were measured over a real link: a round trip, so an error bound.
    let rows = merged["agents"].as_array().expect("agents");
    assert!(rows[1]["clock_error_us"].as_f64().unwrap() > 0.0, "{rows:?}");
}

#[test]
fn kill_9_of_an_agent_on_its_own_host_stops_all_within_3_s_leaving_no_process() {
    let Some(star) = Star::new(3) else { return };
    let server = star.serve(Behaviour::ok("hello"));
    let url = server.url("/");
    let args = ["-c", "3", "-d", "30s"];
    let agents: Vec<_> = (0..3).map(|i| spawn(star.agent(&url, &args, i))).collect();
    let started = Instant::now();
    while server.requests() < 100 && started.elapsed() < Duration::from_secs(20) {
        thread::sleep(Duration::from_millis(20));
    }
    assert!(server.requests() >= 100, "the test did not start");
    let mut agents = agents.into_iter();
    let (zero, one, mut two) =
        (agents.next().unwrap(), agents.next().unwrap(), agents.next().unwrap());
    // `ip netns exec` execs loadlab in place: the child is agent 2 itself.
    two.0.kill().expect("kill -9 agent 2");
    let killed = Instant::now();
    let _ = two.0.wait();
    let (a0, _) = wait(zero.0, zero.1, zero.2, Duration::from_secs(10));
    let took0 = killed.elapsed();
    let (a1, _) = wait(one.0, one.1, one.2, Duration::from_secs(10));
    let took1 = killed.elapsed();
    assert!(took0 < Duration::from_secs(3), "agent 0 ended {took0:?} after the kill");
    assert!(took1 < Duration::from_secs(3), "agent 1 ended {took1:?} after the kill");
    assert_eq!(a0.status.code(), Some(9), "{}", stderr(&a0));
    assert_eq!(a1.status.code(), Some(9), "agent 1 was stopped: {}", stderr(&a1));
    let merged = json(&a0);
    assert_eq!(merged["agent_lost"]["index"], 2, "{merged:#}");
    assert!(merged["requests"]["completed"].as_u64().unwrap() > 0, "what was measured");
    assert!(star.processes().is_empty(), "left: {:?}", star.processes());
}
