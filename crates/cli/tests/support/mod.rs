//! Support for the integration tests: the `loadlab` binary under test, in-process HTTP servers
//! that misbehave on request, and real servers (nginx) that tests start and stop themselves.

// Each test module uses a different part of this; what one build leaves unused is not dead.
#![allow(dead_code, unused_imports, unused_macros)]

pub mod busy;
pub mod h2peer;
pub mod hosts;
pub mod nginx;
pub mod scrape;
pub mod servers;
pub mod skip;
pub mod sshd;
pub mod sys;
pub mod tmux;

#[cfg(test)]
mod selftest;

pub use h2peer::{H2Behaviour, H2Peer};
/// Polls a condition until it holds or a limit passes: for state another thread or process
/// reaches eventually, so tests wait for it instead of sleeping. The lab's own poller.
pub use loadlab_lab::wait::until as wait_until;
pub(crate) use nginx::{require_nginx, Listen, Nginx};
pub use servers::{closed_port, Behaviour, Request, SitePath, TestServer};
pub use skip::Skip;
pub use sys::with_fd_limit;

use std::io::Read;
use std::os::unix::process::CommandExt;
use std::process::{Command, Output, Stdio};
use std::sync::{Mutex, MutexGuard, PoisonError};
use std::thread;
use std::time::{Duration, Instant};

/// How long one run of the binary may take before the test fails: a hung loadlab must fail
/// the test, not hang the suite.
pub const RUN_LIMIT: Duration = Duration::from_secs(120);

/// A `Command` for the binary under test.
pub fn loadlab() -> Command {
    Command::new(env!("CARGO_BIN_EXE_loadlab"))
}

/// Runs `loadlab ARGS --format json --quiet` and parses stdout as JSON. The flags go last so
/// that they land after any subcommand. Panics, showing stdout and stderr, if stdout is not
/// JSON; the exit status is left to the caller, since failing runs must report JSON too.
pub fn run_json(args: &[&str]) -> (serde_json::Value, Output) {
    let mut command = loadlab();
    command.args(args).args(["--format", "json", "--quiet"]);
    let output = output_within(command, RUN_LIMIT);
    match serde_json::from_slice(&output.stdout) {
        Ok(value) => (value, output),
        Err(err) => panic!(
            "loadlab {args:?} did not print JSON ({err}); {}\n--- stdout ---\n{}\n--- stderr ---\n{}",
            output.status,
            String::from_utf8_lossy(&output.stdout),
            String::from_utf8_lossy(&output.stderr),
        ),
    }
}

/// Like `Command::output`, but kills the child and panics if it runs longer than `limit`.
pub fn output_within(mut command: Command, limit: Duration) -> Output {
    command.stdin(Stdio::null()).stdout(Stdio::piped()).stderr(Stdio::piped());
    let mut child = command.spawn().unwrap_or_else(|e| panic!("spawn {command:?}: {e}"));
    // Both pipes are drained while waiting: a child that fills one would otherwise block.
    let stdout = drain(child.stdout.take().expect("piped stdout"));
    let stderr = drain(child.stderr.take().expect("piped stderr"));
    let deadline = Instant::now() + limit;
    let status = loop {
        if let Some(status) = child.try_wait().expect("wait for child") {
            break status;
        }
        if Instant::now() >= deadline {
            let _ = child.kill();
            let _ = child.wait();
            let stderr = stderr.join().unwrap_or_default();
            panic!(
                "{command:?} did not finish within {limit:?}\n--- stderr ---\n{}",
                String::from_utf8_lossy(&stderr)
            );
        }
        thread::sleep(Duration::from_millis(10));
    };
    Output {
        status,
        stdout: stdout.join().unwrap_or_default(),
        stderr: stderr.join().unwrap_or_default(),
    }
}

/// Reads a child's pipe to its end on a thread of its own, so the child never blocks on a
/// full pipe while the test waits for it.
pub fn drain(mut pipe: impl Read + Send + 'static) -> thread::JoinHandle<Vec<u8>> {
    thread::spawn(move || {
        let mut bytes = Vec::new();
        let _ = pipe.read_to_end(&mut bytes);
        bytes
    })
}

/// Held by tests whose assertions are rates or latencies (achieved against offered, a knee,
/// a tail): two of them sharing a small machine's CPUs would measure each other. Tests that
/// only count run alongside them as usual.
pub fn timing_lock() -> MutexGuard<'static, ()> {
    static LOCK: Mutex<()> = Mutex::new(());
    // A failed timing test must not fail every one after it.
    LOCK.lock().unwrap_or_else(PoisonError::into_inner)
}

/// Panics, showing stdout and stderr, unless `loadlab ARGS` exited 0.
pub fn assert_success(output: &Output, args: &[&str]) {
    assert!(
        output.status.success(),
        "loadlab {args:?}: {}\n--- stdout ---\n{}\n--- stderr ---\n{}",
        output.status,
        String::from_utf8_lossy(&output.stdout),
        String::from_utf8_lossy(&output.stderr)
    );
}
