//! Ctrl-C during a sweep, 20 times at 20 moments: in the first step's warm-up, in its
//! measurement, and in the second step. Every time the sweep ends at once with exit 0, shows
//! the cut step as interrupted in every format, and gives the knee of the finished steps only:
//! an interrupted step is never a failed one.

use std::process::{Output, Stdio};
use std::time::{Duration, Instant};

use serde_json::Value;

use super::assert_exit;
use crate::support::{drain, loadlab, wait_until, Behaviour, TestServer};

/// From SIGINT to exit, at most (loadlab takes milliseconds; this is for a loaded machine).
const STOP_LIMIT: Duration = Duration::from_secs(30);

/// Runs a sweep of 1 s steps (after a 1 s warm-up each) and sends SIGINT `delay` after the
/// first request reached the server.
fn interrupted_sweep(server: &TestServer, delay: Duration, json: bool) -> Output {
    let before = server.requests();
    let mut args = vec!["sweep", "--rates", "100,200,300", "--step-duration", "1s"];
    args.extend(if json { ["--format", "json"] } else { ["--format", "text"] });
    let url = server.url("/");
    args.push(&url);
    let mut child = loadlab()
        .args(&args)
        .stdin(Stdio::null())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .expect("spawn loadlab sweep");
    let stdout = drain(child.stdout.take().expect("piped stdout"));
    let stderr = drain(child.stderr.take().expect("piped stderr"));
    assert!(
        wait_until(Duration::from_secs(60), || server.requests() > before),
        "the sweep sent nothing"
    );
    std::thread::sleep(delay);
    crate::support::sys::signal_child(&child, libc::SIGINT).expect("SIGINT");
    let signalled = Instant::now();
    let status = loop {
        if let Some(status) = child.try_wait().expect("try_wait") {
            break status;
        }
        if signalled.elapsed() > STOP_LIMIT {
            let _ = child.kill();
            panic!("the sweep did not end within {STOP_LIMIT:?} of SIGINT");
        }
        std::thread::sleep(Duration::from_millis(10));
    };
    Output { status, stdout: stdout.join().unwrap(), stderr: stderr.join().unwrap() }
}

#[test]
fn an_interrupted_sweep_gives_the_knee_of_its_finished_steps_every_time() {
    let server = TestServer::start(Behaviour::ok("swept"));
    for i in 0..20u32 {
        // 0 to 2.4 s after the first request: the first step's warm-up (1 s), its
        // measurement (1 s), then the second step's warm-up.
        let delay = Duration::from_millis(125 * u64::from(i));
        let json = i % 2 == 0;
        let output = interrupted_sweep(&server, delay, json);
        assert_exit(&output, 0);
        let stdout = String::from_utf8_lossy(&output.stdout).into_owned();
        let stderr = String::from_utf8_lossy(&output.stderr).into_owned();
        let context = format!("run {i} ({delay:?}):\n{stdout}\n{stderr}");
        if json {
            let report: Value = serde_json::from_str(&stdout).expect(&context);
            assert_eq!(report["interrupted"], true, "{context}");
            let steps = report["steps"].as_array().expect("steps");
            assert!(!steps.is_empty(), "{context}");
            // The step Ctrl-C cut says so; a Ctrl-C that falls between two steps cuts none.
            let cut: Vec<&Value> = steps.iter().filter(|s| s["interrupted"] == true).collect();
            assert!(cut.len() <= 1, "{context}");
            let last = steps.last().unwrap();
            if let Some(c) = cut.first() {
                assert_eq!(*c, last, "only the last step can be cut: {context}");
            }
            let finished = steps.iter().filter(|s| s["interrupted"] == false).count();
            let knee = &report["knee"];
            assert_eq!(knee["interrupted"], true, "{context}");
            assert_eq!(knee["steps_judged"], finished, "{context}");
            // The cut step is never the one that broke: a finished step may (a loaded machine
            // can stall one), and then it lies below the cut one, which ran last.
            if let (Some(c), Some(next)) = (cut.first(), knee["next_offered_rps"].as_f64()) {
                let cut_rate = c["offered_rps"].as_f64().unwrap();
                assert!(next < cut_rate, "the knee blamed the interrupted step: {context}");
            }
            if knee["next_offered_rps"].is_null() {
                assert_eq!(knee["reason"], "none", "{context}");
            }
        } else {
            let cut = stdout.lines().filter(|l| l.contains("INTERRUPTED: not judged")).count();
            assert!(cut <= 1, "at most one cut step, shown as such: {context}");
            let knee = stdout.lines().find(|l| l.starts_with("knee of ")).expect(&context);
            assert!(knee.contains("interrupted"), "{context}");
            // The row of the cut step gives its offered rate (the second column); a knee line
            // that says a step broke never names that one.
            if let Some(row) = stdout.lines().find(|l| l.contains("INTERRUPTED")) {
                let cut: f64 = row.split_whitespace().nth(1).unwrap().parse().expect(&context);
                if let Some((_, after)) = knee.split_once("the next step (") {
                    let next: f64 = after.split_whitespace().next().unwrap().parse().unwrap();
                    assert!(next < cut, "the knee blamed the interrupted step: {context}");
                }
            }
        }
    }
}
