//! A client out of file descriptors: with RLIMIT_NOFILE far below the connection count,
//! loadlab counts `fd_unavail` failures, blames itself in a warning, and still finishes.

use std::os::unix::process::CommandExt;
use std::process::Command;

use serde_json::Value;

use super::{assert_accounted, assert_exit, strings, uint};
use crate::support::{loadlab, output_within, Behaviour, TestServer, RUN_LIMIT};

/// Soft and hard limit alike, so that loadlab cannot raise the soft one to escape it.
const NOFILE: u64 = 24;

/// `command` with RLIMIT_NOFILE set to [`NOFILE`] in the child only.
fn with_fd_limit(mut command: Command) -> Command {
    // SAFETY: the closure runs in the child between fork and exec, where only
    // async-signal-safe functions may be called; setrlimit is a plain system call and the
    // closure neither allocates nor takes locks.
    unsafe {
        command.pre_exec(|| {
            // rlim_t is u64 on the 64-bit Linux targets loadlab runs on, as sys.rs assumes too.
            let limit = libc::rlimit { rlim_cur: NOFILE, rlim_max: NOFILE };
            if libc::setrlimit(libc::RLIMIT_NOFILE, &limit) != 0 {
                return Err(std::io::Error::last_os_error());
            }
            Ok(())
        });
    }
    command
}

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
    let output = output_within(with_fd_limit(command), RUN_LIMIT);
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
