//! How `run` ends when a lab host fails it: the class of the failure kept (ssh that cannot
//! connect exits 3 as `stack up --host` does; the remote loadlab's own refusal keeps its
//! code), and a host lost mid-cell stops that cell at once (no word from the session for the
//! heartbeat timeout) rather than loading a dead path to the cell's end: exit 3, the host
//! named, the run's record failed, nothing left in B. Needs root, iproute2, openssh and nginx.

use std::io::{BufRead, BufReader};
use std::path::{Path, PathBuf};
use std::process::Stdio;
use std::time::{Duration, Instant};

use loadlab_store::Store;

use super::{lab_hosts, stack_in_b};
use crate::support::hosts::Hosts;
use crate::support::sshd::Sshd;
use crate::support::{drain, output_within, wait_until};

/// A suite of nginx on `host` serving hello.txt for `duration`, with `extra` stack keys.
fn suite_file(dir: &Path, host: &str, duration: &str, extra: &str) -> PathBuf {
    let path = dir.join("lost.toml");
    let text = format!(
        "name = \"lost\"\nrepetitions = 1\n\n[[stacks]]\nname = \"nginx\"\nhost = \"{host}\"\n\
         {extra}\n\n[[workloads]]\nname = \"hello.txt\"\n\n[[loads]]\nmodel = \"closed\"\n\
         concurrency = [2]\nduration = \"{duration}\"\n"
    );
    std::fs::write(&path, text).unwrap();
    path
}

fn run_suite(sshd: &Sshd, hosts: &Hosts, suite: &Path) -> std::process::Output {
    let out = sshd.dir.path().join("out").display().to_string();
    let suite = suite.display().to_string();
    let args = ["run", "--suite", &suite, "--out", &out];
    output_within(sshd.loadlab_in(&hosts.a, &args), Duration::from_secs(120))
}

#[test]
fn a_host_ssh_cannot_reach_exits_3_and_the_remotes_refusal_keeps_its_code() {
    let Some((hosts, sshd)) = lab_hosts() else { return };
    // B's IPv6 address: B is there, its sshd listens on IPv4 only, so ssh is refused.
    let nobody = format!("ssh://root@[{}]", hosts.b.addr6);
    let suite = suite_file(sshd.dir.path(), &nobody, "1s", "");
    let ran = run_suite(&sshd, &hosts, &suite);
    let said = String::from_utf8_lossy(&ran.stderr);
    assert_eq!(ran.status.code(), Some(3), "{said}");
    assert!(said.contains(&format!("ssh to {nobody} failed")), "{said}");
    assert!(!said.contains("panicked"), "{said}");

    // An address that is not B's: B's loadlab refuses it (exit 2), and so does this run.
    let suite = suite_file(sshd.dir.path(), &sshd.url(), "1s", "listen = \"10.215.255.254\"");
    let ran = run_suite(&sshd, &hosts, &suite);
    let said = String::from_utf8_lossy(&ran.stderr);
    assert_eq!(ran.status.code(), Some(2), "{said}");
    assert!(said.contains("not an address of this host"), "B's own message: {said}");
    assert!(said.contains(&format!("loadlab on {} failed (exit 2)", sshd.url())), "{said}");
}

#[test]
fn a_host_lost_mid_cell_stops_the_cell_and_the_run_exits_3_naming_it() {
    let Some((hosts, sshd)) = lab_hosts() else { return };
    let cell = Duration::from_secs(90);
    let suite = suite_file(sshd.dir.path(), &sshd.url(), "90s", "");
    let out = sshd.dir.path().join("out");
    let (suite_arg, out_arg) = (suite.display().to_string(), out.display().to_string());
    let mut command = sshd.loadlab_in(&hosts.a, &["run", "--suite", &suite_arg, "--out", &out_arg]);
    command.stdin(Stdio::null()).stdout(Stdio::piped()).stderr(Stdio::piped());
    let mut child = command.spawn().expect("start loadlab in A");
    let stderr = drain(child.stderr.take().unwrap());
    let mut stdout = BufReader::new(child.stdout.take().unwrap());
    let mut said = String::new();
    let mut line = String::new();
    while stdout.read_line(&mut line).unwrap_or(0) > 0 {
        said.push_str(&line);
        if line.contains("and verified") {
            break;
        }
        line.clear();
    }
    assert!(said.contains("and verified"), "no stack up on B: {said}");
    let _rest = drain(stdout.into_inner());
    // Into the cell, then the path goes.
    std::thread::sleep(Duration::from_secs(3));
    let cut = Instant::now();
    hosts.b.run("ip", &["link", "set", &hosts.b.interface, "down"]);
    let ended = wait_until(cell, || child.try_wait().unwrap().is_some());
    let took = cut.elapsed();
    if !ended {
        let _ = child.kill();
    }
    let status = child.wait().unwrap();
    let said = String::from_utf8_lossy(&stderr.join().unwrap()).into_owned();
    assert!(ended, "loadlab still ran {took:?} after the cut: {said}");
    eprintln!("run ended {took:?} after the cut: {status}");
    // The heartbeat timeout (5 s), the cell's stop, B's session dropped, the record closed.
    assert!(took < Duration::from_secs(20), "{took:?}: {said}");
    assert_eq!(status.code(), Some(3), "{said}");
    assert!(said.contains(&format!("lost {}", sshd.url())), "{said}");
    let store = Store::open(out.join("loadlab.db")).expect("the run's store");
    let run = store.runs().expect("runs").pop().expect("one run").run;
    assert_eq!(run.status, loadlab_store::RunStatus::Failed, "{said}");
    assert!(store.cells(run.id).expect("cells").is_empty(), "a lost cell is not stored");
    // B took its stack down by itself (no heartbeat); sshd's child there waits for the path.
    let gone = wait_until(super::GONE_WITHIN, || stack_in_b(&hosts, &sshd).is_empty());
    assert!(gone, "B's stack outlived the cut: {:?}", stack_in_b(&hosts, &sshd));
    hosts.b.run("ip", &["link", "set", &hosts.b.interface, "up"]);
}
