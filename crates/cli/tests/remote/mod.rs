//! A lab host over ssh, on one machine: namespaces A and B made by the test (support::hosts),
//! an sshd of the test's own in B (support::sshd), loadlab run in A with `--host
//! ssh://root@B`: the stack listens on B's address, where ssh reached B, and a bench from A
//! gets answers. B starts without loadlab on its PATH: the binary is copied into the
//! (test's) cache there once, then found. Every way a session can end takes the remote
//! stack down and leaves nothing in B (no process but sshd's listener, no run directory, no
//! record): `stack down --host`, the sshd child serving the session killed, the path cut, the
//! local loadlab killed with -9. Needs root, iproute2, openssh and nginx.

mod listen;
mod lost;
mod metrics;
mod net;
mod packages;
mod profile;
mod sample;
mod session;
mod suite;
mod tls;

use std::io::{BufRead, BufReader};
use std::path::PathBuf;
use std::process::{Command, Output, Stdio};
use std::time::{Duration, Instant};

use loadlab_lab::StateDir;
use serde_json::Value;

use crate::support::hosts::{Host, Hosts};
use crate::support::sshd::Sshd;
use crate::support::{assert_success, drain, output_within, sys, wait_until};

/// A start and verify of nginx there, with the binary copied first, stay within this.
const LIMIT: Duration = Duration::from_secs(120);
/// The remote notices a lost session within the heartbeat timeout (5 s); its teardown then
/// takes the servers' SIGTERM grace at most (10 s); a busy machine gets some more.
const GONE_WITHIN: Duration = Duration::from_secs(25);

/// Two hosts and an sshd in B, or `None` after a visible skip (a failure in CI).
fn lab_hosts() -> Option<(Hosts, Sshd)> {
    let hosts = Hosts::new()?;
    match Sshd::start(&hosts.a, &hosts.b) {
        Ok(sshd) => Some((hosts, sshd)),
        Err(skip) => {
            skip.report();
            None
        }
    }
}

/// The one cell of the one run stored in `out`, checked to have completed `requests` and
/// failed none.
fn only_cell(out: &std::path::Path, requests: f64) -> loadlab_store::CellRecord {
    use loadlab_store::{metric, Store};
    let store = Store::open(out.join("loadlab.db")).expect("the run's store");
    let run = store.runs().expect("runs").pop().expect("one run").run;
    let mut cells = store.cells(run.id).expect("cells");
    assert_eq!(cells.len(), 1);
    let cell = cells.remove(0);
    assert_eq!(cell.metrics[metric::COMPLETED], requests, "{:?}", cell.metrics);
    assert_eq!(cell.metrics[metric::FAILED], 0.0, "{:?}", cell.metrics);
    cell
}

/// The pids in B other than sshd's listener: what a remote stack and its session run.
fn left_in_b(hosts: &Hosts, sshd: &Sshd) -> Vec<i32> {
    pids_in(&hosts.b).into_iter().filter(|p| *p != sshd.pid()).collect()
}

/// Those of [`left_in_b`] that are not sshd's: the stack's and the remote loadlab's.
fn stack_in_b(hosts: &Hosts, sshd: &Sshd) -> Vec<i32> {
    left_in_b(hosts, sshd).into_iter().filter(|p| comm(*p) != "sshd").collect()
}

fn pids_in(host: &Host) -> Vec<i32> {
    let out = Command::new("ip").args(["netns", "pids", &host.netns]).output().expect("ip runs");
    String::from_utf8_lossy(&out.stdout).split_whitespace().filter_map(|p| p.parse().ok()).collect()
}

fn comm(pid: i32) -> String {
    std::fs::read_to_string(format!("/proc/{pid}/comm")).unwrap_or_default().trim().to_string()
}

fn run(sshd: &Sshd, hosts: &Hosts, args: &[&str]) -> Output {
    output_within(sshd.loadlab_in(&hosts.a, args), LIMIT)
}

/// `stack up nginx --host B --json` from A, held in the background: the instance, and what
/// was said on stderr.
fn up_held(sshd: &Sshd, hosts: &Hosts) -> (Value, String) {
    let url = sshd.url();
    let args = ["stack", "up", "nginx", "--host", &url, "--json"];
    let out = run(sshd, hosts, &args);
    assert_success(&out, &args);
    let instance: Value = serde_json::from_slice(&out.stdout).unwrap_or_else(|e| {
        panic!("stack up --host printed no JSON ({e}): {}", String::from_utf8_lossy(&out.stdout))
    });
    assert!(instance["id"].as_str().is_some_and(|id| id.starts_with("nginx-")), "{instance:#}");
    (instance, String::from_utf8_lossy(&out.stderr).into_owned())
}

/// The run directory the remote lab gave instance `id`.
fn remote_run_dir(sshd: &Sshd, id: &str) -> PathBuf {
    StateDir::at(sshd.remote_state()).run_root().join(id)
}

/// The held remote stacks `stack list --json` shows in A.
fn held_in_a(sshd: &Sshd, hosts: &Hosts) -> Vec<Value> {
    let out = run(sshd, hosts, &["stack", "list", "--json"]);
    assert_success(&out, &["stack", "list", "--json"]);
    let list: Value = serde_json::from_slice(&out.stdout).expect("list JSON");
    list["remote"].as_array().cloned().unwrap_or_default()
}

/// Nothing of instance `id` is left in B within `limit`: no process but sshd's listener, no
/// run directory, no record of the remote lab's. How long that took.
fn assert_nothing_left(sshd: &Sshd, hosts: &Hosts, id: &str, limit: Duration) -> Duration {
    assert_left_only(sshd, hosts, id, limit, left_in_b)
}

/// As [`assert_nothing_left`], but counting only the processes `left` finds.
fn assert_left_only(
    sshd: &Sshd,
    hosts: &Hosts,
    id: &str,
    limit: Duration,
    left_in_b: fn(&Hosts, &Sshd) -> Vec<i32>,
) -> Duration {
    let started = Instant::now();
    let gone = wait_until(limit, || left_in_b(hosts, sshd).is_empty());
    let took = started.elapsed();
    let left: Vec<String> =
        left_in_b(hosts, sshd).iter().map(|p| format!("{p} {}", comm(*p))).collect();
    assert!(gone, "left in B after {limit:?}: {left:?}\nsshd: {}", sshd.log());
    assert!(!remote_run_dir(sshd, id).exists(), "{id}'s run directory is left in B");
    let records = StateDir::at(sshd.remote_state()).all().expect("B's records");
    assert!(records.is_empty(), "B's lab still records {records:?}");
    took
}

#[test]
fn up_over_ssh_copies_the_binary_once_and_down_leaves_nothing_on_b() {
    let Some((hosts, sshd)) = lab_hosts() else { return };
    for round in 0..3 {
        let (instance, said) = up_held(&sshd, &hosts);
        let id = instance["id"].as_str().unwrap().to_string();
        let copied = said.contains("copied this loadlab");
        assert_eq!(copied, round == 0, "round {round} said: {said}");
        let cached: Vec<_> = std::fs::read_dir(sshd.remote_cache()).expect("B's cache").collect();
        assert_eq!(cached.len(), 1, "one cached build in B");
        assert!(cached[0].as_ref().unwrap().path().join("loadlab").is_file());
        let servers = left_in_b(&hosts, &sshd);
        assert!(servers.iter().any(|p| comm(*p) == "nginx"), "no nginx in B: {servers:?}");
        assert!(remote_run_dir(&sshd, &id).is_dir());
        let held = held_in_a(&sshd, &hosts);
        assert_eq!(held.len(), 1, "{held:#?}");
        assert_eq!(
            (held[0]["id"].as_str(), held[0]["host"].as_str()),
            (Some(&*id), Some(&*sshd.url()))
        );
        // With --host; by its id alone (only a held stack has it); by --all, which ends held
        // sessions too.
        let url = sshd.url();
        let args: Vec<&str> = match round {
            0 => vec!["stack", "down", &id, "--host", &url],
            1 => vec!["stack", "down", &id],
            _ => vec!["stack", "down", "--all"],
        };
        let out = run(&sshd, &hosts, &args);
        assert_success(&out, &args);
        assert_eq!(String::from_utf8_lossy(&out.stdout).trim(), format!("{id} down on {url}"));
        // The session ended in order: the stack is already gone when `down` returns.
        assert_nothing_left(&sshd, &hosts, &id, Duration::from_secs(5));
        assert!(held_in_a(&sshd, &hosts).is_empty());
        let kept: Vec<_> = std::fs::read_dir(sshd.local_state().join("remote"))
            .map(|d| d.flatten().map(|e| e.file_name()).collect())
            .unwrap_or_default();
        assert!(kept.is_empty(), "A's state keeps {kept:?}");
    }
}

#[test]
fn a_stack_on_b_listens_where_ssh_reached_it_and_a_bench_from_a_gets_answers() {
    let Some((hosts, sshd)) = lab_hosts() else { return };
    let (instance, said) = up_held(&sshd, &hosts);
    let id = instance["id"].as_str().unwrap();
    let url = instance["url"].as_str().unwrap();
    assert!(url.starts_with(&format!("http://{}:", hosts.b.addr)), "{url} is not on B's address");
    assert!(said.contains("reachable from the network"), "the exposure is said: {said}");
    let bench_url = format!("{url}hello.txt");
    let args = ["bench", &bench_url, "-n", "200", "-c", "4", "--expect-status", "200"];
    let mut bench = sshd.loadlab_in(&hosts.a, &args);
    bench.args(["--format", "json", "--quiet"]);
    let out = output_within(bench, LIMIT);
    assert_success(&out, &args);
    let report: Value = serde_json::from_slice(&out.stdout).expect("bench JSON");
    assert_eq!(report["requests"]["completed"], 200, "{report:#}");
    assert_eq!(report["requests"]["failed"], 0, "{report:#}");
    let down = run(&sshd, &hosts, &["stack", "down", id, "--host", &sshd.url()]);
    assert_success(&down, &["stack", "down"]);
    assert_nothing_left(&sshd, &hosts, id, Duration::from_secs(5));
}

#[test]
fn the_sshd_child_killed_takes_the_remote_stack_down() {
    let Some((hosts, sshd)) = lab_hosts() else { return };
    let (instance, _) = up_held(&sshd, &hosts);
    let id = instance["id"].as_str().unwrap();
    let session: Vec<i32> =
        left_in_b(&hosts, &sshd).into_iter().filter(|p| comm(*p) == "sshd").collect();
    assert!(!session.is_empty(), "no sshd child serves the session");
    for pid in session {
        let _ = sys::kill(pid, libc::SIGKILL);
    }
    let took = assert_nothing_left(&sshd, &hosts, id, GONE_WITHIN);
    eprintln!("remote stack gone {took:?} after its sshd child was killed");
    assert!(wait_until(GONE_WITHIN, || held_in_a(&sshd, &hosts).is_empty()), "owner in A kept");
}

#[test]
fn a_cut_path_takes_the_remote_stack_down_within_the_heartbeat_timeout() {
    let Some((hosts, sshd)) = lab_hosts() else { return };
    let (instance, _) = up_held(&sshd, &hosts);
    let id = instance["id"].as_str().unwrap();
    hosts.b.run("ip", &["link", "set", &hosts.b.interface, "down"]);
    // sshd's session child in B cannot know the path is cut (it has nothing to send): only
    // the stack and the remote loadlab must be gone.
    let took = assert_left_only(&sshd, &hosts, id, GONE_WITHIN, stack_in_b);
    eprintln!("remote stack gone {took:?} after the path was cut");
    assert!(took >= Duration::from_secs(4), "gone before a heartbeat could be missed: {took:?}");
    hosts.b.run("ip", &["link", "set", &hosts.b.interface, "up"]);
    // ssh in A gives up by its keepalives (15 s); once the path is back, sshd's child in B
    // learns its client is gone.
    let owner_gone = wait_until(Duration::from_secs(40), || held_in_a(&sshd, &hosts).is_empty());
    assert!(owner_gone, "the owner in A still holds the lost session");
    assert_nothing_left(&sshd, &hosts, id, Duration::from_secs(60));
}

#[test]
fn kill_9_of_the_local_loadlab_takes_the_remote_stack_down() {
    let Some((hosts, sshd)) = lab_hosts() else { return };
    let url = sshd.url();
    let mut command = sshd
        .loadlab_in(&hosts.a, &["stack", "up", "nginx", "--host", &url, "--foreground", "--json"]);
    command.stdin(Stdio::null()).stdout(Stdio::piped()).stderr(Stdio::piped());
    let mut child = command.spawn().expect("start loadlab in A");
    let stderr = drain(child.stderr.take().unwrap());
    let mut line = String::new();
    BufReader::new(child.stdout.take().unwrap()).read_line(&mut line).unwrap();
    let instance: Value = serde_json::from_str(&line).unwrap_or_else(|e| {
        let _ = child.kill();
        let _ = child.wait();
        panic!("no instance ({e}): {line}\n{}", String::from_utf8_lossy(&stderr.join().unwrap()))
    });
    let id = instance["id"].as_str().unwrap();
    // `ip netns exec` execs loadlab in its own process: the child is loadlab itself.
    assert_eq!(comm(child.id() as i32), "loadlab");
    sys::signal_child(&child, libc::SIGKILL).unwrap();
    let _ = child.wait();
    let took = assert_nothing_left(&sshd, &hosts, id, GONE_WITHIN);
    eprintln!("remote stack gone {took:?} after kill -9 of the local loadlab");
    assert!(wait_until(GONE_WITHIN, || pids_in(&hosts.a).is_empty()), "ssh left in A");
}

#[test]
fn other_commands_run_there_and_keep_their_exit_codes() {
    let Some((hosts, sshd)) = lab_hosts() else { return };
    let url = sshd.url();
    let (instance, _) = up_held(&sshd, &hosts);
    let id = instance["id"].as_str().unwrap();
    let show = run(&sshd, &hosts, &["stack", "show", id, "--host", &url]);
    assert_success(&show, &["stack", "show"]);
    let text = String::from_utf8_lossy(&show.stdout);
    assert!(text.contains("===== nginx"), "stack show there: {text}");
    let doctor = run(&sshd, &hosts, &["doctor", "--json", "--host", &url]);
    assert_success(&doctor, &["doctor", "--json", "--host"]);
    let found: Value = serde_json::from_slice(&doctor.stdout).expect("doctor's JSON");
    assert!(found.is_object(), "{found:#}");
    // The remote loadlab's own refusal: its message and its exit code (2, bad usage).
    let bad = run(&sshd, &hosts, &["stack", "up", "no-such-stack", "--host", &url]);
    assert_eq!(bad.status.code(), Some(2), "{}", String::from_utf8_lossy(&bad.stderr));
    assert!(String::from_utf8_lossy(&bad.stderr).contains("no-such-stack"));
    let gone = run(&sshd, &hosts, &["stack", "show", "nginx-99", "--host", &url]);
    assert_eq!(gone.status.code(), Some(2), "no such instance there");
    // Taken down on B by B's own loadlab: the session there sees its record gone and ends,
    // and so does the owner in A.
    let mut down = crate::support::loadlab();
    down.args(["stack", "down", id]).env("LOADLAB_STATE_DIR", sshd.remote_state());
    let down = output_within(hosts.b.within(&down), LIMIT);
    assert_success(&down, &["stack", "down", "(in B)"]);
    assert_nothing_left(&sshd, &hosts, id, Duration::from_secs(10));
    assert!(wait_until(GONE_WITHIN, || held_in_a(&sshd, &hosts).is_empty()), "owner in A kept");
}

#[test]
fn ctrl_c_of_a_foreground_session_takes_it_down_in_order() {
    let Some((hosts, sshd)) = lab_hosts() else { return };
    let url = sshd.url();
    // --install-packages goes through; nginx's packages are all there, so nothing is installed.
    let up = ["stack", "up", "nginx", "--host", &url, "--foreground", "--install-packages"];
    let mut command = sshd.loadlab_in(&hosts.a, &up);
    command.stdin(Stdio::null()).stdout(Stdio::piped()).stderr(Stdio::piped());
    let mut child = command.spawn().expect("start loadlab in A");
    let stderr = drain(child.stderr.take().unwrap());
    let mut line = String::new();
    BufReader::new(child.stdout.take().unwrap()).read_line(&mut line).unwrap();
    let Some((id, printed_url)) =
        line.split_whitespace().next().zip(line.split_whitespace().nth(1))
    else {
        let _ = child.kill();
        panic!("no instance line: {line:?} {:?}", stderr.join());
    };
    assert!(line.contains(&format!("up and verified on {url}")), "{line}");
    assert!(printed_url.starts_with("http://"), "{line}");
    sys::signal_child(&child, libc::SIGINT).unwrap();
    let ended = wait_until(Duration::from_secs(30), || child.try_wait().unwrap().is_some());
    assert!(ended, "loadlab did not end after Ctrl-C");
    let status = child.wait().unwrap();
    let said = String::from_utf8_lossy(&stderr.join().unwrap()).into_owned();
    assert!(status.success(), "{status}: {said}");
    assert!(!said.contains("installing"), "nothing was missing: {said}");
    // The session was closed in order: the stack is gone when loadlab has ended.
    assert_nothing_left(&sshd, &hosts, id, Duration::from_secs(3));
}
