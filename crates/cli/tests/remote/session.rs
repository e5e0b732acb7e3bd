//! The remote end of a session without ssh: `stack up --session` here, its stdin and stdout
//! the test's. It prints the instance, then a sample a second, and takes the stack down at
//! EOF, or when its input falls silent past the heartbeat timeout, saying so last. Needs
//! nginx.

use std::io::{BufRead, BufReader, Write};
use std::process::{ChildStdin, ChildStdout, Stdio};
use std::sync::mpsc;
use std::time::{Duration, Instant};

use serde_json::Value;

use crate::lab::{pids, running, TestLab};
use crate::support::{drain, skip, wait_until};

/// The session's events, read on a thread so that the test can wait with a limit.
fn events(stdout: ChildStdout) -> mpsc::Receiver<Value> {
    let (tx, rx) = mpsc::channel();
    std::thread::spawn(move || {
        for line in BufReader::new(stdout).lines().map_while(Result::ok) {
            let event = serde_json::from_str(&line).unwrap_or_else(|e| panic!("{e}: {line}"));
            if tx.send(event).is_err() {
                return;
            }
        }
    });
    rx
}

/// `stack up nginx --foreground --session` in a new lab: the lab, its input, its events and
/// the instance; `None` (a visible skip, a failure in CI) without nginx.
fn session() -> Option<(TestLab, std::process::Child, ChildStdin, mpsc::Receiver<Value>, Value)> {
    if skip::find_program("nginx", &["/usr/sbin/nginx"]).is_none() {
        skip::missing("nginx", "nginx").report();
        return None;
    }
    let lab = TestLab::new();
    let mut command = lab.command(&["stack", "up", "nginx", "--foreground", "--session"]);
    // Not in an ssh session here: it stays on loopback even when the tests run under ssh.
    command.env_remove("SSH_CONNECTION");
    command.stdin(Stdio::piped()).stdout(Stdio::piped()).stderr(Stdio::piped());
    let mut child = command.spawn().expect("start loadlab");
    let stdin = child.stdin.take().unwrap();
    let rx = events(child.stdout.take().unwrap());
    let stderr = drain(child.stderr.take().unwrap());
    // Heartbeats while it starts: the start takes longer than the timeout on a busy machine.
    let mut stdin = stdin;
    let deadline = Instant::now() + Duration::from_secs(120);
    let up = loop {
        let _ = stdin.write_all(b"heartbeat\n");
        match rx.recv_timeout(Duration::from_millis(500)) {
            Ok(event) => break event,
            Err(_) if Instant::now() < deadline => continue,
            Err(_) => {
                let _ = child.kill();
                let _ = child.wait();
                panic!("no up event: {}", String::from_utf8_lossy(&stderr.join().unwrap()));
            }
        }
    };
    assert_eq!(up["event"], "up", "{up:#}");
    let instance = up["instance"].clone();
    assert!(instance["url"].as_str().is_some_and(|u| u.starts_with("http://")), "{instance:#}");
    Some((lab, child, stdin, rx, instance))
}

/// Events until `down` (within `limit`): the samples seen, and the id said down.
fn until_down(rx: &mpsc::Receiver<Value>, limit: Duration) -> (Vec<Value>, String) {
    let deadline = Instant::now() + limit;
    let mut samples = Vec::new();
    while let Ok(event) = rx.recv_timeout(deadline.saturating_duration_since(Instant::now())) {
        match event["event"].as_str() {
            Some("sample") => samples.push(event["sample"].clone()),
            Some("down") => return (samples, event["id"].as_str().unwrap().to_string()),
            _ => panic!("unexpected event {event:#}"),
        }
    }
    panic!("no down event within {limit:?} ({} samples)", samples.len())
}

#[test]
fn samples_each_second_then_down_at_eof() {
    let Some((_lab, mut child, mut stdin, rx, instance)) = session() else { return };
    let started = Instant::now();
    while started.elapsed() < Duration::from_millis(2500) {
        stdin.write_all(b"heartbeat\n").unwrap();
        std::thread::sleep(Duration::from_millis(500));
    }
    drop(stdin);
    let (samples, id) = until_down(&rx, Duration::from_secs(30));
    assert_eq!(id, instance["id"].as_str().unwrap());
    assert!((1..=4).contains(&samples.len()), "{} samples in about 2.5 s", samples.len());
    let tiers = samples[0]["tiers"].as_array().expect("tiers");
    assert_eq!(tiers[0]["tier"], "nginx", "{:#}", samples[0]);
    assert!(tiers[0]["processes"].as_u64().unwrap() >= 2, "nginx master and worker");
    assert!(child.wait().unwrap().success());
    assert!(running(&pids(&instance)).is_empty(), "servers left after EOF");
}

#[test]
fn silence_past_the_heartbeat_timeout_takes_it_down() {
    let Some((_lab, mut child, stdin, rx, instance)) = session() else { return };
    let silent = Instant::now();
    // The input stays open and says nothing: a cut path, as the remote sees it.
    let (_, id) = until_down(&rx, Duration::from_secs(30));
    let took = silent.elapsed();
    assert_eq!(id, instance["id"].as_str().unwrap());
    assert!(took >= Duration::from_secs(4), "down after {took:?} of silence, before the timeout");
    assert!(child.wait().unwrap().success());
    assert!(wait_until(Duration::from_secs(5), || running(&pids(&instance)).is_empty()));
    drop(stdin);
}
