//! `bench --agents 3 --agent-hosts ssh://root@B,ssh://root@C`: one command in host A starts
//! the two other agents through ssh, on hosts of their own (the namespaces of [`Star`], each
//! of B and C with an sshd of the test's own, its keys made by the test, listening only in
//! its namespace), against a server in the hub. The shares add up exactly; kill -9 of a
//! remote agent's ssh, or of the remote agent, stops every agent within 3 s with exit 9; kill
//! -9 of agent 0 ends its sessions and the remote agents; Ctrl-C stops them on purpose; a
//! host that refuses ssh is exit 3, named; no loadlab process is left on any host after any
//! of them. Needs root, iproute2 and openssh. Without hosts, through a fake ssh: a session
//! that ends before the start ends the rendezvous at once (exit 8), and bad host lists exit 2.

use std::net::IpAddr;
use std::process::{Command, Output};
use std::thread;
use std::time::{Duration, Instant};

use crate::support::sshd::{self, Sshd};
use crate::support::{loadlab, output_within, Behaviour, TestServer};

use super::netns::Star;
use super::{json, sent, spawn, stderr, wait, LIMIT};

/// A, B and C; sshd in B and C. Fields drop in order: the sshds, then the namespaces.
struct Lab {
    sshds: Vec<Sshd>,
    server: TestServer,
    star: Star,
}

impl Lab {
    /// `None`: skipped visibly (a failure in CI) without root or openssh.
    fn new() -> Option<Lab> {
        let star = Star::new(3)?;
        let a = &star.agents[0];
        let mut sshds = Vec::new();
        for b in &star.agents[1..] {
            match Sshd::start(a, b) {
                Ok(s) => sshds.push(s),
                Err(skip) => {
                    assert!(!crate::support::skip::servers_required(), "{}", skip.0);
                    skip.report();
                    return None;
                }
            }
        }
        let server = star.serve(Behaviour::ok("hello"));
        Some(Lab { sshds, server, star })
    }

    /// `loadlab bench URL ARGS --agents 3 --agent-hosts HOSTS` in A, JSON on stdout.
    fn bench(&self, args: &[&str], hosts: &str) -> Command {
        let mut c = loadlab();
        c.args(["bench", &self.server.url("/")]).args(args);
        c.args(["--agents", "3", "--agent-hosts", hosts, "--format", "json", "--quiet"]);
        let sshds: Vec<&Sshd> = self.sshds.iter().collect();
        c.env("LOADLAB_SSH_COMMAND", sshd::ssh_command_for_all(&sshds));
        c.env("LOADLAB_STATE_DIR", self.sshds[0].local_state());
        c.env("LOADLAB_TOKEN", super::TOKEN);
        self.star.agents[0].within(&c)
    }

    /// `ssh://root@B,ssh://root@C`.
    fn hosts(&self) -> String {
        self.sshds.iter().map(Sshd::url).collect::<Vec<_>>().join(",")
    }

    /// The processes left on A, B, C and the hub, besides the test's sshds.
    fn left(&self) -> Vec<String> {
        let sshds: Vec<String> = self.sshds.iter().map(|s| s.pid().to_string()).collect();
        self.star.processes().into_iter().filter(|p| !sshds.contains(p)).collect()
    }

    /// Waits up to `limit` for no process to be left; what is left then.
    fn left_after(&self, limit: Duration) -> Vec<String> {
        let t0 = Instant::now();
        loop {
            let left = self.left();
            if left.is_empty() || t0.elapsed() > limit {
                return left;
            }
            thread::sleep(Duration::from_millis(50));
        }
    }
}

/// The pids whose parent is `parent`, with their command lines (/proc/PID/stat's 4th field,
/// read after the command name's closing parenthesis, which may itself hold spaces).
fn children(parent: u32) -> Vec<(u32, String)> {
    let mut found = Vec::new();
    for entry in std::fs::read_dir("/proc").expect("/proc").flatten() {
        let Ok(pid) = entry.file_name().to_string_lossy().parse::<u32>() else { continue };
        let Ok(stat) = std::fs::read_to_string(entry.path().join("stat")) else { continue };
        let ppid = stat.rsplit_once(')').and_then(|(_, rest)| rest.split_whitespace().nth(1));
        if ppid.and_then(|p| p.parse::<u32>().ok()) == Some(parent) {
            let cmdline = std::fs::read(entry.path().join("cmdline")).unwrap_or_default();
            found.push((pid, String::from_utf8_lossy(&cmdline).replace('\0', " ")));
        }
    }
    found
}

#[test]
fn one_command_starts_the_agents_on_their_hosts_through_ssh_and_the_shares_add_up() {
    let Some(lab) = Lab::new() else { return };
    let out = output_within(lab.bench(&["-c", "6", "-n", "301"], &lab.hosts()), LIMIT);
    assert_eq!(out.status.code(), Some(0), "{}", stderr(&out));
    let merged = json(&out);
    // floor((I+1)301/3) - floor(301 I/3): 100, 100, 101, and the server saw them all.
    assert_eq!(sent(&merged), 301);
    assert_eq!(lab.server.requests(), 301, "the server saw the single-host count");
    let rows = merged["agents"].as_array().expect("agents in agent 0's JSON");
    let completed: Vec<u64> = rows.iter().map(|r| r["completed"].as_u64().unwrap()).collect();
    assert_eq!(completed, [100, 100, 101]);
    // Each agent ran on its own host: the server saw A's, B's and C's addresses.
    let mut peers = lab.server.peers();
    peers.sort();
    peers.dedup();
    let own: Vec<IpAddr> = lab.star.agents.iter().map(|a| IpAddr::V4(a.addr)).collect();
    assert_eq!(peers, own);
    assert!(lab.left_after(Duration::from_secs(3)).is_empty(), "left: {:?}", lab.left());
}

/// Starts a 30 s test, waits until it runs, kills what `victim` picks (given agent 0's pid),
/// and checks that every agent stops within 3 s, agent 0 with exit 9 naming the lost agent,
/// and that nothing is left.
fn kill_9_stops_all(victim: &dyn Fn(&Lab, u32) -> u32) {
    let Some(lab) = Lab::new() else { return };
    let (child, out, err) = spawn(lab.bench(&["-c", "3", "-d", "30s"], &lab.hosts()));
    let t0 = Instant::now();
    while lab.server.requests() < 100 && t0.elapsed() < Duration::from_secs(30) {
        thread::sleep(Duration::from_millis(20));
    }
    assert!(lab.server.requests() >= 100, "the test did not start");
    // Agent 0 and the two remote agents run the test's URL; the secret is in no argv.
    let url = lab.server.url("/");
    assert!(running_with(&url).len() >= 3, "{:?}", running_with(&url));
    assert!(running_with(super::TOKEN).is_empty(), "{:?}", running_with(super::TOKEN));
    let pid = victim(&lab, child.id());
    let killed = Instant::now();
    let status = Command::new("kill").args(["-9", &pid.to_string()]).status().expect("kill");
    assert!(status.success(), "kill -9 {pid}");
    let (a0, _): (Output, _) = wait(child, out, err, Duration::from_secs(10));
    let took = killed.elapsed();
    assert!(took < Duration::from_secs(3), "agent 0 ended {took:?} after the kill");
    assert_eq!(a0.status.code(), Some(9), "{}", stderr(&a0));
    let merged = json(&a0);
    assert_eq!(merged["agent_lost"]["index"], 1, "{merged:#}");
    assert!(merged["requests"]["completed"].as_u64().unwrap() > 0, "what was measured");
    let left = lab.left_after(Duration::from_secs(3).saturating_sub(killed.elapsed()));
    assert!(left.is_empty(), "left {:?} after the kill: {left:?}", killed.elapsed());
}

#[test]
fn kill_9_of_a_remote_agents_ssh_stops_every_agent_within_3_s() {
    kill_9_stops_all(&|lab, zero| {
        // `ip netns exec` execs loadlab in place: agent 0's children are its ssh sessions.
        let b = lab.star.agents[1].addr.to_string();
        let ssh = children(zero).into_iter().find(|(_, cmd)| cmd.contains(&format!("@{b} ")));
        ssh.unwrap_or_else(|| panic!("no ssh to {b} among {:?}", children(zero))).0
    });
}

#[test]
fn kill_9_of_a_remote_agent_stops_every_agent_within_3_s() {
    kill_9_stops_all(&|lab, _| {
        let b = &lab.star.agents[1].netns;
        let in_b = crate::support::hosts::namespace_pids(b);
        let agent = in_b.iter().find(|pid| {
            let exe = std::fs::read_link(format!("/proc/{pid}/exe")).unwrap_or_default();
            exe.file_name().is_some_and(|n| n == "loadlab")
        });
        agent.unwrap_or_else(|| panic!("no loadlab in {b}: {in_b:?}")).parse().unwrap()
    });
}

#[test]
fn a_host_that_refuses_ssh_is_exit_3_naming_it_and_nothing_is_left() {
    let Some(lab) = Lab::new() else { return };
    // The hub's address on C's link: reachable from A, and nothing listens on its port 22.
    let refusing = format!("ssh://root@{}", lab.star.hub_addrs[2]);
    let hosts = format!("{},{refusing}", lab.sshds[0].url());
    let out = output_within(lab.bench(&["-c", "3", "-n", "30"], &hosts), LIMIT);
    assert_eq!(out.status.code(), Some(3), "{}", stderr(&out));
    assert!(stderr(&out).contains(&refusing), "names the host: {}", stderr(&out));
    assert_eq!(lab.server.requests(), 0, "no load without every agent");
    assert!(lab.left_after(Duration::from_secs(3)).is_empty(), "left: {:?}", lab.left());
}

/// Ctrl-C at a terminal signals the whole foreground process group: agent 0 and, were they in
/// it, its ssh sessions (which would die and take the remote agents with them, as losses).
/// They are in groups of their own, so agent 0 alone stops the test: the others are stopped
/// on purpose (exit 12, said in agent 0's result), and the figures are the whole test's.
#[test]
fn ctrl_c_to_agent_0s_process_group_stops_the_remote_agents_on_purpose() {
    use std::os::unix::process::CommandExt;
    let Some(lab) = Lab::new() else { return };
    let mut command = lab.bench(&["-c", "3", "-d", "30s"], &lab.hosts());
    command.process_group(0);
    let (child, out, err) = spawn(command);
    let t0 = Instant::now();
    while lab.server.requests() < 100 && t0.elapsed() < Duration::from_secs(30) {
        thread::sleep(Duration::from_millis(20));
    }
    assert!(lab.server.requests() >= 100, "the test did not start");
    let group = format!("-{}", child.id());
    let status = Command::new("kill").args(["-INT", "--", &group]).status().expect("kill");
    assert!(status.success(), "kill -INT -- {group}");
    let (a0, took) = wait(child, out, err, Duration::from_secs(10));
    assert!(took < Duration::from_secs(5), "agent 0 took {took:?} after Ctrl-C");
    assert_eq!(a0.status.code(), Some(0), "{}", stderr(&a0));
    let merged = json(&a0);
    assert_eq!(merged["interrupted"], true);
    assert!(merged["agent_lost"].is_null(), "stopped, not lost: {merged:#}");
    let rows = merged["agents"].as_array().expect("agents");
    assert!(rows.iter().all(|r| r["completed"].as_u64().unwrap() > 0), "{rows:?}");
    let warnings = merged["warnings"].to_string();
    for (i, s) in lab.sshds.iter().enumerate() {
        let said = format!("agent {} ({}) ended with exit 12", i + 1, s.url());
        assert!(warnings.contains(&said), "{said}: {warnings}");
    }
    assert!(lab.left_after(Duration::from_secs(3)).is_empty(), "left: {:?}", lab.left());
}

/// An ssh of the test's own for the tests that need no hosts: it runs the remote command line
/// here, with `sh -c` as sshd would; the session of a host whose name holds `broken` fails
/// as a remote agent that cannot run would (its line on stderr, exit 3), after the probe.
const FAKE_SSH: &str = r#"#!/bin/sh
for word; do dest=$remote; remote=$word; done
case "$dest:$remote" in
  *broken*LOADLAB_TOKEN*) echo "loadlab: error: this host cannot reach the target" >&2; exit 3 ;;
esac
exec sh -c "$remote"
"#;

/// `loadlab bench URL ARGS --agents 3 --agent-hosts HOSTS` with [`FAKE_SSH`], this loadlab
/// on its PATH (so that the probe finds it and nothing is copied).
fn fake_bench(dir: &std::path::Path, url: &str, args: &[&str], hosts: &str) -> Command {
    use std::os::unix::fs::PermissionsExt;
    let ssh = dir.join("ssh");
    std::fs::write(&ssh, FAKE_SSH).expect("write the fake ssh");
    std::fs::set_permissions(&ssh, std::fs::Permissions::from_mode(0o755)).unwrap();
    let bin = std::path::Path::new(env!("CARGO_BIN_EXE_loadlab")).parent().unwrap();
    let path = format!("{}:{}", bin.display(), std::env::var("PATH").unwrap_or_default());
    let mut c = loadlab();
    c.args(["bench", url]).args(args);
    c.args(["--agents", "3", "--agent-hosts", hosts, "--format", "json", "--quiet"]);
    c.env("LOADLAB_SSH_COMMAND", &ssh).env("PATH", path).env("XDG_CACHE_HOME", dir);
    c
}

/// The processes whose command line holds `text` (the test's URL: its agents).
fn running_with(text: &str) -> Vec<String> {
    let mut found = Vec::new();
    for entry in std::fs::read_dir("/proc").expect("/proc").flatten() {
        let cmdline = std::fs::read(entry.path().join("cmdline")).unwrap_or_default();
        let cmdline = String::from_utf8_lossy(&cmdline).replace('\0', " ");
        if cmdline.contains(text) {
            found.push(cmdline);
        }
    }
    found
}

#[test]
fn an_agent_that_fails_before_the_start_ends_the_rendezvous_at_once_naming_it() {
    let server = TestServer::start(Behaviour::ok("hello"));
    let dir = tempfile::tempdir().expect("temp dir");
    let url = server.url("/");
    let hosts = "ssh://good,ssh://broken";
    // Names this host cannot resolve: the rendezvous is given.
    let args = ["-c", "3", "-n", "30", "--rendezvous", &super::rendezvous()];
    let t0 = Instant::now();
    let out = output_within(fake_bench(dir.path(), &url, &args, hosts), LIMIT);
    let took = t0.elapsed();
    assert_eq!(out.status.code(), Some(8), "{}", stderr(&out));
    let said = "agent 2 (ssh://broken) ended with exit 3: loadlab: error: this host cannot reach";
    assert!(stderr(&out).contains(said), "{}", stderr(&out));
    // Not after --rendezvous-timeout's 60 s.
    assert!(took < Duration::from_secs(20), "took {took:?}");
    assert_eq!(server.requests(), 0, "no load without every agent");
    // Agent 1, started and waiting, ended with agent 0.
    let t0 = Instant::now();
    while !running_with(&url).is_empty() && t0.elapsed() < Duration::from_secs(3) {
        thread::sleep(Duration::from_millis(50));
    }
    assert!(running_with(&url).is_empty(), "left: {:?}", running_with(&url));
}

#[test]
fn hosts_that_are_not_n_minus_1_or_not_ssh_urls_are_refused_with_exit_2() {
    let dir = tempfile::tempdir().expect("temp dir");
    let url = "http://127.0.0.1:9/";
    for (hosts, says) in [
        ("ssh://a", "--agent-hosts names 1 hosts and --agents 3 needs 2"),
        ("ssh://a,ssh://b,ssh://c", "--agent-hosts names 3 hosts and --agents 3 needs 2"),
        ("ssh://a,b", "expected ssh://[user@]host[:port]"),
    ] {
        let out = output_within(fake_bench(dir.path(), url, &["-n", "9"], hosts), LIMIT);
        assert_eq!(out.status.code(), Some(2), "{hosts}: {}", stderr(&out));
        let line = stderr(&out);
        assert_eq!(line.lines().count(), 1, "one line: {line}");
        assert!(line.contains(says), "{hosts}: {line}");
    }
    // --agents 1 is a single host: a host to start is one too many, not ignored.
    let mut one = loadlab();
    one.args(["bench", url, "-n", "9", "--agents", "1", "--agent-hosts", "ssh://a"]);
    let out = output_within(one, LIMIT);
    assert_eq!(out.status.code(), Some(2), "{}", stderr(&out));
    assert!(stderr(&out).contains("names 1 hosts and --agents 1 needs 0"), "{}", stderr(&out));
}

/// kill -9 of agent 0 itself: nothing of it can clean up, yet its end of each session's input
/// closes with it, so its ssh sessions and the remote agents end within 3 s.
#[test]
fn kill_9_of_agent_0_leaves_no_agent_and_no_ssh_on_any_host() {
    let Some(lab) = Lab::new() else { return };
    let (mut child, out, err) = spawn(lab.bench(&["-c", "3", "-d", "30s"], &lab.hosts()));
    let t0 = Instant::now();
    while lab.server.requests() < 100 && t0.elapsed() < Duration::from_secs(30) {
        thread::sleep(Duration::from_millis(20));
    }
    assert!(lab.server.requests() >= 100, "the test did not start");
    let sessions = children(child.id());
    assert_eq!(sessions.len(), 2, "an ssh per host: {sessions:?}");
    child.kill().expect("kill -9 agent 0");
    let _ = child.wait();
    let (_, _) = (out.join(), err.join());
    let left = lab.left_after(Duration::from_secs(3));
    assert!(left.is_empty(), "left on the hosts: {left:?}");
    let alive = |pid: &u32| std::path::Path::new(&format!("/proc/{pid}")).exists();
    let t0 = Instant::now();
    while sessions.iter().any(|(p, _)| alive(p)) && t0.elapsed() < Duration::from_secs(3) {
        thread::sleep(Duration::from_millis(50));
    }
    let ssh_left: Vec<_> = sessions.iter().filter(|(p, _)| alive(p)).collect();
    assert!(ssh_left.is_empty(), "ssh left: {ssh_left:?}");
}
