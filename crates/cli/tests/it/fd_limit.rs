//! A client out of file descriptors. Asked for more connections than its open-file limit
//! allows, loadlab refuses at once (exit 2, naming the limit and how to raise it); with
//! `--over-capacity cap` it runs with what fits and says so; with `--over-capacity run` it runs
//! as asked, counts `fd_unavail` failures, blames itself in a warning, and still finishes.

use serde_json::Value;

use super::{assert_accounted, assert_exit, strings, uint};
use crate::support::{loadlab, output_within, with_fd_limit, Behaviour, TestServer, RUN_LIMIT};

/// Soft and hard limit alike, so that loadlab cannot raise the soft one to escape it.
const NOFILE: u64 = 24;

#[test]
fn descriptor_exhaustion_is_fd_unavail_and_the_run_finishes() {
    let server = TestServer::start(Behaviour::ok("hello"));
    let mut command = loadlab();
    // Two threads, whatever the machine: each worker's epoll instance costs a descriptor too,
    // and enough of them would exhaust the limit before the first connection.
    command.args(["bench", &server.url("/"), "-c", "64", "-n", "500", "-t", "2"]).args([
        "--over-capacity",
        "run",
        "--timeout",
        "5s",
        "--format",
        "json",
        "--quiet",
    ]);
    let output = output_within(with_fd_limit(command, NOFILE), RUN_LIMIT);
    assert_exit(&output, 0);
    let report: Value = serde_json::from_slice(&output.stdout).expect("JSON report");

    assert_accounted(&report, 500);
    let fd_unavail = uint(&report, "errors.fd_unavail");
    assert!(fd_unavail > 0, "{report:#}");
    // Running out of descriptors is the only thing that went wrong.
    assert_eq!(uint(&report, "requests.failed"), fd_unavail, "{report:#}");
    assert!(uint(&report, "requests.completed") > 0, "{report:#}");
    assert_eq!(uint(&report, "client.fd_limit"), NOFILE, "{report:#}");
    assert!(uint(&report, "client.peak_connections") < NOFILE, "{report:#}");
    let warnings = strings(&report, "warnings");
    assert!(warnings.iter().any(|w| w.contains("file descriptors")), "{warnings:?}");
}

/// 1,000,000 connections under an open-file limit of 256: refused before any load.
#[test]
fn connections_past_the_open_file_limit_are_refused_at_once_naming_it() {
    let server = TestServer::start(Behaviour::ok("hello"));
    let mut command = loadlab();
    command.args(["bench", &server.url("/"), "-c", "1000000", "-d", "2s", "--quiet"]);
    let started = std::time::Instant::now();
    let output = output_within(with_fd_limit(command, 256), RUN_LIMIT);
    assert_exit(&output, 2);
    assert!(started.elapsed() < std::time::Duration::from_secs(5), "not refused at once");
    let stderr = String::from_utf8_lossy(&output.stderr);
    assert!(
        stderr.contains("1,000,000 connections do not fit: the open-file limit of 256 (hard)"),
        "{stderr}"
    );
    assert!(stderr.contains("ulimit -n") && stderr.contains("--over-capacity cap"), "{stderr}");
    assert_eq!(stderr.lines().count(), 1, "one line: {stderr}");
    assert_eq!(server.requests(), 0, "no load was sent");
}

/// The same run with `--over-capacity cap`: what fits, a warning, and the run ends in time.
#[test]
fn capped_connections_run_with_what_fits_and_say_so() {
    let server = TestServer::start(Behaviour::ok("hello"));
    let mut command = loadlab();
    command.args(["bench", &server.url("/"), "-c", "1000000", "-d", "1s", "-t", "2"]).args([
        "--over-capacity",
        "cap",
        "--format",
        "json",
        "--quiet",
    ]);
    let started = std::time::Instant::now();
    let output = output_within(with_fd_limit(command, 256), RUN_LIMIT);
    assert_exit(&output, 0);
    assert!(started.elapsed() < std::time::Duration::from_secs(15), "{:?}", started.elapsed());
    let report: Value = serde_json::from_slice(&output.stdout).expect("JSON report");
    let connections = uint(&report, "config.connections");
    assert!(connections > 100 && connections < 256, "capped to {connections}: {report:#}");
    assert_eq!(uint(&report, "errors.fd_unavail"), 0, "{report:#}");
    assert!(uint(&report, "requests.completed") > 0, "{report:#}");
    let warnings = strings(&report, "warnings");
    assert!(
        warnings.iter().any(|w| w.starts_with(&format!(
            "ran with {connections} connections, not the 1,000,000 asked for"
        ))),
        "{warnings:?}"
    );
}

/// A control that fits: no capacity warning.
#[test]
fn connections_that_fit_run_without_a_capacity_warning() {
    let server = TestServer::start(Behaviour::ok("hello"));
    let mut command = loadlab();
    command.args([
        "bench",
        &server.url("/"),
        "-c",
        "100",
        "-n",
        "500",
        "--format",
        "json",
        "--quiet",
    ]);
    let output = output_within(with_fd_limit(command, 256), RUN_LIMIT);
    assert_exit(&output, 0);
    let report: Value = serde_json::from_slice(&output.stdout).expect("JSON report");
    assert_eq!(uint(&report, "config.connections"), 100);
    let warnings = strings(&report, "warnings");
    assert!(!warnings.iter().any(|w| w.contains("connections")), "{warnings:?}");
}
