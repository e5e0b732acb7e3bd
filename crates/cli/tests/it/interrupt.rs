//! Ctrl-C during a timed run: loadlab stops at once, prints the report of what it measured
//! so far, marked as interrupted, and exits 0.

use std::process::{Output, Stdio};
use std::thread;
use std::time::{Duration, Instant};

use serde_json::Value;

use super::{assert_exit, float, strings, uint};
use crate::support::{drain, loadlab, wait_until, Behaviour, TestServer};

/// From SIGINT to exit, at most: loadlab takes milliseconds; the slack is for a loaded machine.
const STOP_LIMIT: Duration = Duration::from_secs(30);
/// How long the first requests may take to arrive: loadlab starts in milliseconds.
const START_LIMIT: Duration = Duration::from_secs(60);
/// The run asked for: far longer than the two limits together, so that a run which ignored
/// SIGINT could not pass for one that stopped.
const ASKED: &str = "600s";

/// Runs `loadlab bench URL args` until `server` has answered `requests`, then sends it SIGINT:
/// its output, and how long it lived.
fn interrupted(server: &TestServer, args: &[&str], requests: u64) -> (Output, Duration) {
    let spawned = Instant::now();
    let mut child = loadlab()
        .args(["bench", &server.url("/")])
        .args(args)
        .stdin(Stdio::null())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .expect("spawn loadlab");
    let stdout = drain(child.stdout.take().expect("piped stdout"));
    let stderr = drain(child.stderr.take().expect("piped stderr"));

    // Requests reaching the server mean the handler is installed and the run is measuring.
    let running = wait_until(START_LIMIT, || server.requests() >= requests);
    assert!(child.try_wait().expect("try_wait").is_none(), "loadlab exited before SIGINT");
    // The child has not been reaped: try_wait just found it running.
    crate::support::sys::signal_child(&child, libc::SIGINT).expect("kill");
    let signalled = Instant::now();
    let status = loop {
        if let Some(status) = child.try_wait().expect("try_wait") {
            break status;
        }
        if signalled.elapsed() > STOP_LIMIT {
            let _ = child.kill();
            let _ = child.wait();
            panic!("loadlab did not exit within {STOP_LIMIT:?} of SIGINT");
        }
        thread::sleep(Duration::from_millis(10));
    };
    let lifetime = spawned.elapsed();
    let output = Output {
        status,
        stdout: stdout.join().expect("stdout reader"),
        stderr: stderr.join().expect("stderr reader"),
    };
    assert!(running, "loadlab made no requests within {START_LIMIT:?}");
    assert_exit(&output, 0);
    (output, lifetime)
}

fn json(output: &Output) -> Value {
    serde_json::from_slice(&output.stdout).unwrap_or_else(|e| {
        panic!("no JSON after SIGINT ({e}): {}", String::from_utf8_lossy(&output.stdout))
    })
}

#[test]
fn sigint_stops_a_timed_run_and_reports_it() {
    let server = TestServer::start(Behaviour::ok("hello"));
    let args = ["-d", ASKED, "-c", "2", "--format", "json", "--quiet"];
    let (output, lifetime) = interrupted(&server, &args, 100);
    let report = json(&output);
    assert_eq!(report["interrupted"], true, "{report:#}");
    let completed = uint(&report, "requests.completed");
    assert!(completed > 0, "{report:#}");
    assert!(completed <= server.requests(), "{report:#}");
    // The duration is the time until the interruption, not the 600 s asked for: it lies within
    // the process's lifetime, which the limits above keep far below 600 s.
    let duration = float(&report, "duration_s");
    assert!(duration > 0.0 && duration < lifetime.as_secs_f64(), "{lifetime:?}: {report:#}");
    let warnings = strings(&report, "warnings");
    assert!(warnings.iter().any(|w| w.contains("interrupted")), "{warnings:?}");
}

/// An open loop stopped by Ctrl-C kept its schedule up to the stop: the arrivals due after
/// it, until a worker noticed, are not arrivals it failed to send.
#[test]
fn sigint_in_a_kept_schedule_leaves_nothing_never_sent() {
    let _quiet = crate::support::timing_lock();
    let server = TestServer::start(Behaviour::ok("hello"));
    let args = ["-R", "300", "-d", ASKED, "--format", "json", "--quiet"];
    // About a second of a healthy run, each stop landing between two sends; tried a few
    // times, as one stop may land just as a send was due.
    for _ in 0..3 {
        let report = json(&interrupted(&server, &args, server.requests() + 300).0);
        assert_eq!(report["interrupted"], true, "{report:#}");
        assert_eq!(uint(&report, "rate.not_sent"), 0, "{report:#}");
        let said = strings(&report, "warnings");
        assert!(!said.iter().any(|w| w.contains("never sent")), "{said:?}");
    }
}
