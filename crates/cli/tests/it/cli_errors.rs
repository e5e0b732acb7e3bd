//! Runs that cannot start: bad usage or input exits 2, an unreachable target exits 3, both
//! quickly, with one readable message on stderr and never a panic.

use std::process::Output;
use std::time::{Duration, Instant};

use super::assert_exit;
use crate::support::{closed_port, loadlab, output_within, Behaviour, TestServer};

/// Errors found before the run must come back well within this.
const QUICK: Duration = Duration::from_secs(5);

/// `loadlab ARGS`, checking the exit code, that it was quick, and that stdout stayed empty:
/// a run that did not happen has no report.
pub(super) fn fails(args: &[&str], code: i32) -> String {
    let mut command = loadlab();
    command.args(args);
    let started = Instant::now();
    let output: Output = output_within(command, Duration::from_secs(30));
    let took = started.elapsed();
    assert_exit(&output, code);
    assert!(took < QUICK, "loadlab {args:?} took {took:?}");
    assert!(output.stdout.is_empty(), "{}", String::from_utf8_lossy(&output.stdout));
    let stderr = String::from_utf8_lossy(&output.stderr).into_owned();
    assert!(!stderr.trim().is_empty(), "loadlab {args:?} exited {code} without a message");
    stderr
}

/// A URL nothing listens on: if a usage error were missed, the run would exit 3, not 2.
fn closed_url() -> String {
    format!("http://127.0.0.1:{}/", closed_port())
}

#[test]
fn tls_flags_that_contradict_are_usage_errors() {
    let stderr = fails(&["bench", "-n", "1", "--insecure", "--cacert", "x.pem", "https://x/"], 2);
    assert!(stderr.contains("--cacert"), "{stderr}");
    let url = "https://127.0.0.1/";
    let stderr = fails(&["bench", "-n", "1", "--unix-socket", "/nonexistent.sock", url], 2);
    assert!(stderr.contains("https:// over --unix-socket"), "{stderr}");
}

#[test]
fn malformed_urls_are_usage_errors() {
    for url in ["127.0.0.1:80/", "http://", "ftp://x/", "http://:80/", "http://user:pw@x/"] {
        let stderr = fails(&["bench", "-n", "1", url], 2);
        assert!(stderr.starts_with("loadlab: error: "), "{url}: {stderr}");
    }
}

/// `-n` counts requests, so with `--conn-rate` it is refused naming that flag: counting
/// sessions by it would make `--calls-per-conn 3 -n 10` send 30 requests. Sessions are
/// counted with `--conns`.
#[test]
fn requests_do_not_count_sessions() {
    let url = closed_url();
    let stderr = fails(&["bench", "--conn-rate", "10", "-n", "10", &url], 2);
    assert!(stderr.contains("--conn-rate"), "{stderr}");
}

#[test]
fn more_threads_than_connections() {
    let stderr = fails(&["bench", "-t", "5", "-c", "2", "-n", "1", &closed_url()], 2);
    assert!(stderr.contains("--threads 5"), "{stderr}");
}

#[test]
fn zero_connections_requests_or_duration() {
    let url = closed_url();
    for args in [["-c", "0", "-n", "1"], ["-c", "1", "-n", "0"], ["-c", "1", "-d", "0s"]] {
        let mut all = vec!["bench", url.as_str()];
        all.extend(args);
        fails(&all, 2);
    }
}

#[test]
fn bad_durations() {
    let url = closed_url();
    for args in [["-d", "5parsecs"], ["--timeout", "soon"], ["--warmup", "forever"]] {
        let mut all = vec!["bench", url.as_str()];
        all.extend(args);
        let stderr = fails(&all, 2);
        assert!(stderr.contains(args[1]), "{args:?}: {stderr}");
    }
}

#[test]
fn bad_expectations() {
    let url = closed_url();
    for args in [
        ["--expect-status", "abc"],
        ["--expect-status", "299-200"],
        ["--expect-status", "1000"],
        ["--expect-body-sha256", "abcd"],
        ["--expect-contains", ""],
    ] {
        let mut all = vec!["bench", "-n", "1", url.as_str()];
        all.extend(args);
        let stderr = fails(&all, 2);
        assert!(stderr.contains(args[0]), "{args:?}: {stderr}");
    }
}

#[test]
fn body_file_missing() {
    let dir = tempfile::tempdir().expect("temp dir");
    let missing = dir.path().join("no-such-body");
    let missing = missing.to_str().expect("UTF-8 temp path");
    let stderr = fails(&["bench", "-n", "1", "--body", missing, &closed_url()], 2);
    assert!(stderr.contains("--body") && stderr.contains("no-such-body"), "{stderr}");
}

#[test]
fn bad_header_or_method() {
    let server = TestServer::start(Behaviour::ok("x"));
    let url = server.url("/");
    for args in [["-H", "no colon here"], ["-H", "bad name: v"], ["-m", "GET /x"]] {
        let mut all = vec!["bench", "-n", "1", url.as_str()];
        all.extend(args);
        let stderr = fails(&all, 2);
        assert!(stderr.contains("invalid"), "{args:?}: {stderr}");
    }
    assert_eq!(server.requests(), 0, "nothing is sent when the input is bad");
    // A bad method is found before the preflight connect, so against a closed port it exits
    // 2 (usage), not 3 (unreachable).
    let stderr = fails(&["bench", "-n", "1", "-m", "GE T", &closed_url()], 2);
    assert!(stderr.contains("invalid method"), "{stderr}");
}

#[test]
fn closed_port_is_unreachable() {
    let port = closed_port();
    let stderr = fails(&["bench", "-n", "10", &format!("http://127.0.0.1:{port}/")], 3);
    assert!(stderr.contains("cannot reach") && stderr.contains(&port.to_string()), "{stderr}");
}

#[test]
fn unresolvable_host_is_unreachable() {
    // RFC 6761 §6.4: .invalid names never resolve.
    let stderr = fails(&["bench", "-n", "10", "http://nonexistent.invalid/"], 3);
    assert!(stderr.contains("nonexistent.invalid"), "{stderr}");
}
