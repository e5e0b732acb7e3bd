//! A client out of file descriptors: with RLIMIT_NOFILE far below the connection count,
//! loadlab counts `fd_unavail` failures, blames itself in a warning, and still finishes.

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
