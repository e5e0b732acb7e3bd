//! The lab on its own host, end to end: `loadlab run --suite php-modphp-vs-fastcgi --quick --host
//! ssh://root@B` from A. A normal end has every cell stored with its tiers sampled in B, as
//! many cells as the plan has here, B recorded with the run; and however the run ends (its
//! end, Ctrl-C, kill -9 of loadlab in A, the path to B cut for 30 s) B is left with no
//! process but sshd's, no run directory, no record and no namespace of its lab. Needs root,
//! iproute2, openssh, Apache with mod_php, nginx and php-cgi.

use std::io::{BufRead, BufReader};
use std::process::{Child, Stdio};
use std::sync::mpsc;
use std::thread::JoinHandle;
use std::time::{Duration, Instant};

use loadlab_lab::{Lab, StateDir};
use loadlab_store::{ConfigRecord, Store};

use super::{comm, lab_hosts, left_in_b, stack_in_b};
use crate::support::hosts::Hosts;
use crate::support::sshd::Sshd;
use crate::support::{drain, output_within, sys, wait_until};

const SUITE: &str = "php-modphp-vs-fastcgi";
/// The whole quick suite, 24 cells of 1000 requests, with two stack starts on B each
/// repetition; about 1.2 min here when the machine is idle.
const WHOLE_RUN: Duration = Duration::from_secs(480);
/// After Ctrl-C or the path's return, loadlab in A ends within this.
const ENDS_WITHIN: Duration = Duration::from_secs(90);

/// `run --suite ... --quick --host B --out OUT` with `extra`.
fn run_args(sshd: &Sshd, out: &std::path::Path, extra: &[&str]) -> Vec<String> {
    let mut args: Vec<String> = ["run", "--suite", SUITE, "--quick", "--host", &sshd.url()]
        .iter()
        .map(|s| s.to_string())
        .collect();
    args.extend(["--out".to_string(), out.display().to_string()]);
    args.extend(extra.iter().map(|s| s.to_string()));
    args
}

/// The instance ids `run` said it brought up on B (`... up on HOST as ID at URL ...`).
fn ids_in(stdout: &str) -> Vec<String> {
    stdout
        .lines()
        .filter_map(|l| l.split(" as ").nth(1)?.split_whitespace().next().map(String::from))
        .collect()
}

/// Nothing of the run is left in B: within `limit` no process but sshd's (sshd's children
/// too when `sshd_too`), then no run directory, no record, no namespace of instances `ids`.
fn assert_b_empty(sshd: &Sshd, hosts: &Hosts, ids: &[String], limit: Duration, sshd_too: bool) {
    let left = if sshd_too { left_in_b } else { stack_in_b };
    let gone = wait_until(limit, || left(hosts, sshd).is_empty());
    let named: Vec<String> =
        left(hosts, sshd).iter().map(|p| format!("{p} {}", comm(*p))).collect();
    assert!(gone, "left in B after {limit:?}: {named:?}\nsshd: {}", sshd.log());
    let state = StateDir::at(sshd.remote_state());
    let records = state.all().expect("B's records");
    assert!(records.is_empty(), "B's lab still records {records:?}");
    let dirs: Vec<_> = std::fs::read_dir(state.run_root())
        .map(|d| d.filter_map(Result::ok).map(|e| e.path()).collect())
        .unwrap_or_default();
    assert!(dirs.is_empty(), "run directories left in B: {dirs:?}");
    let lab = Lab::new(state);
    let list = std::process::Command::new("ip").args(["netns", "list"]).output().expect("ip");
    let namespaces: Vec<String> = String::from_utf8_lossy(&list.stdout)
        .lines()
        .filter_map(|l| l.split_whitespace().next().map(String::from))
        .collect();
    for id in ids {
        let ns = lab.namespace_of(id);
        assert!(!namespaces.contains(&ns), "{id}'s namespace {ns} is left");
    }
}

#[test]
fn a_quick_suite_runs_on_b_from_a_every_cell_sampled_there_and_leaves_nothing() {
    let Some((hosts, sshd)) = lab_hosts() else { return };
    let out = sshd.dir.path().join("out");
    let here = output_within(
        sshd.loadlab_in(&hosts.a, &["run", "--suite", SUITE, "--quick", "--dry-run"]),
        Duration::from_secs(30),
    );
    let planned =
        String::from_utf8_lossy(&here.stdout).lines().filter(|l| l.contains(" rep ")).count();
    assert!(planned > 0, "{}", String::from_utf8_lossy(&here.stdout));

    let args = run_args(&sshd, &out, &[]);
    let words: Vec<&str> = args.iter().map(String::as_str).collect();
    let started = Instant::now();
    let ran = output_within(sshd.loadlab_in(&hosts.a, &words), WHOLE_RUN);
    let stdout = String::from_utf8_lossy(&ran.stdout).into_owned();
    assert!(
        ran.status.success(),
        "{:?}\n{stdout}\n{}",
        ran.status,
        String::from_utf8_lossy(&ran.stderr)
    );
    eprintln!("the quick suite on B took {:?}", started.elapsed());
    let ids = ids_in(&stdout);
    assert!(!ids.is_empty(), "no stack said to be up on B:\n{stdout}");
    // Gone when loadlab has ended: each session was closed in order.
    assert_b_empty(&sshd, &hosts, &ids, Duration::from_secs(5), true);

    let store = Store::open(out.join("loadlab.db")).expect("the run's store");
    let run = store.runs().expect("runs").pop().expect("one run").run;
    let cells = store.cells(run.id).expect("cells");
    assert_eq!(cells.len(), planned, "as many cells as the plan has here");
    for cell in &cells {
        let tiers: Vec<&str> = cell.samples.iter().map(|s| s.tier.as_str()).collect();
        assert!(!tiers.is_empty(), "cell {} of {} has no sample from B", cell.ordinal, cell.stack);
        let limit = cell.limited_by.as_ref().expect("judged");
        eprintln!("cell {} {}: {:?} {}", cell.ordinal, cell.stack, tiers, limit.evidence);
    }
    let configs = store.configs(run.id).expect("configs");
    let host: Vec<&ConfigRecord> =
        configs.iter().filter(|c| c.kind == ConfigRecord::HOST).collect();
    assert_eq!(host.len(), 1, "B recorded once");
    assert_eq!(host[0].name, sshd.url());
    let facts = host[0].host_facts().expect("B's facts");
    assert_eq!(facts.server_nic.as_ref(), Some(&hosts.b.interface), "{}", host[0].content);
    assert_eq!(facts.client_nic.as_ref(), Some(&hosts.a.interface), "{}", host[0].content);
    assert!(facts.idle_rtt_us.is_some(), "{}", host[0].content);
    assert!(host[0].stack.contains("nginx-spawn-fcgi"), "{}", host[0].content);
    // Each stack's effective configs were read there.
    assert!(configs.iter().any(|c| c.kind == "capture" && c.stack == "nginx-spawn-fcgi"));
}

/// A `run` in A: the child, its stdout's lines still to come, its stderr once it ends.
type Running = (Child, mpsc::Receiver<String>, Vec<String>, JoinHandle<Vec<u8>>);

/// `run` started in A with its stdout read line by line: returns once a cell has finished
/// on B, with the child and what it printed so far (and the rest as it comes).
fn start_until_a_cell(sshd: &Sshd, hosts: &Hosts, out: &std::path::Path) -> Running {
    let args = run_args(sshd, out, &["--repetitions", "1"]);
    let words: Vec<&str> = args.iter().map(String::as_str).collect();
    let mut command = sshd.loadlab_in(&hosts.a, &words);
    command.stdin(Stdio::null()).stdout(Stdio::piped()).stderr(Stdio::piped());
    let mut child = command.spawn().expect("start loadlab in A");
    let stderr = drain(child.stderr.take().unwrap());
    let (tx, lines) = mpsc::channel();
    let stdout = child.stdout.take().unwrap();
    std::thread::spawn(move || {
        for line in BufReader::new(stdout).lines().map_while(Result::ok) {
            if tx.send(line).is_err() {
                return;
            }
        }
    });
    let mut said = Vec::new();
    let deadline = Instant::now() + Duration::from_secs(180);
    while Instant::now() < deadline {
        match lines.recv_timeout(Duration::from_millis(200)) {
            Ok(line) => {
                let done = line.contains("req/s");
                said.push(line);
                if done {
                    return (child, lines, said, stderr);
                }
            }
            Err(mpsc::RecvTimeoutError::Timeout) => continue,
            Err(mpsc::RecvTimeoutError::Disconnected) => break,
        }
    }
    let _ = child.kill();
    let _ = child.wait();
    panic!("no cell finished on B: {said:#?}");
}

/// Waits for `child` to end within `limit` (killed and failed otherwise): its exit code.
fn ended(mut child: Child, limit: Duration) -> Option<i32> {
    let done = wait_until(limit, || child.try_wait().unwrap().is_some());
    if !done {
        let _ = child.kill();
        let _ = child.wait();
        panic!("loadlab in A did not end within {limit:?}");
    }
    child.wait().unwrap().code()
}

fn all_ids(said: &[String], rest: &mpsc::Receiver<String>) -> Vec<String> {
    let mut lines = said.to_vec();
    lines.extend(rest.try_iter());
    ids_in(&lines.join("\n"))
}

#[test]
fn ctrl_c_of_the_local_run_leaves_nothing_on_b() {
    let Some((hosts, sshd)) = lab_hosts() else { return };
    let out = sshd.dir.path().join("out");
    let (child, rest, said, _stderr) = start_until_a_cell(&sshd, &hosts, &out);
    sys::signal_child(&child, libc::SIGINT).unwrap();
    let code = ended(child, ENDS_WITHIN);
    assert_eq!(code, Some(130), "Ctrl-C's exit code: {said:#?}");
    // Closed in order before loadlab ended.
    assert_b_empty(&sshd, &hosts, &all_ids(&said, &rest), Duration::from_secs(5), true);
}

#[test]
fn kill_9_of_the_local_run_leaves_nothing_on_b() {
    let Some((hosts, sshd)) = lab_hosts() else { return };
    let out = sshd.dir.path().join("out");
    let (child, rest, said, _stderr) = start_until_a_cell(&sshd, &hosts, &out);
    sys::signal_child(&child, libc::SIGKILL).unwrap();
    let _ = ended(child, Duration::from_secs(10));
    let started = Instant::now();
    assert_b_empty(&sshd, &hosts, &all_ids(&said, &rest), super::GONE_WITHIN, true);
    eprintln!("B empty {:?} after kill -9 of loadlab in A", started.elapsed());
}

#[test]
fn the_path_to_b_cut_for_30_s_leaves_nothing_on_b() {
    let Some((hosts, sshd)) = lab_hosts() else { return };
    let out = sshd.dir.path().join("out");
    let (child, rest, said, stderr) = start_until_a_cell(&sshd, &hosts, &out);
    let cut = Instant::now();
    hosts.b.run("ip", &["link", "set", &hosts.b.interface, "down"]);
    // While cut, B's side takes its stack down when no heartbeat comes (5 s): sshd's child
    // there cannot know yet, so only the stack and the remote loadlab count.
    let ids = all_ids(&said, &rest);
    assert_b_empty(&sshd, &hosts, &ids, super::GONE_WITHIN, false);
    eprintln!("B's stack gone {:?} after the cut", cut.elapsed());
    std::thread::sleep(Duration::from_secs(30).saturating_sub(cut.elapsed()));
    hosts.b.run("ip", &["link", "set", &hosts.b.interface, "up"]);
    let code = ended(child, ENDS_WITHIN);
    eprintln!("loadlab in A ended with {code:?}, {:?} after the cut", cut.elapsed());
    let said = String::from_utf8_lossy(&stderr.join().unwrap()).into_owned();
    eprintln!("it said: {said}");
    assert_ne!(code, Some(0), "a run whose host was cut off did not finish");
    // Its record says it failed, and why.
    let store = Store::open(out.join("loadlab.db")).expect("the run's store");
    let run = store.runs().expect("runs").pop().expect("one run").run;
    assert_eq!(run.status, loadlab_store::RunStatus::Failed, "{said}");
    let mut ids = ids;
    ids.extend(ids_in(&rest.try_iter().collect::<Vec<_>>().join("\n")));
    assert_b_empty(&sshd, &hosts, &ids, Duration::from_secs(60), true);
}
