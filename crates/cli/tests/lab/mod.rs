//! The lab end to end through the `loadlab` binary: every stack comes up and verifies, serves
//! `loadlab bench -n 200`, is sampled, and goes down leaving no process; a killed loadlab's
//! stack is cleaned by the next start; errors get their exit codes; the user's own config and
//! docroot are served and tested by each server. These need the lab's
//! Debian packages: skipped with a visible line locally when one is missing, failures in CI.

mod caddy;
mod errors;
mod hygiene;
mod knobs;
mod listen;
mod net;
mod own;
mod stacks;
mod tls;
mod user;
mod views;
mod visits;

use std::os::unix::fs::symlink;
use std::path::{Path, PathBuf};
use std::process::{Command, Output};
use std::time::Duration;

use serde_json::Value;
use tempfile::TempDir;

pub use crate::support::assert_success;
use crate::support::{loadlab, output_within, skip, Skip};

/// A stack's start, verify and teardown together stay well within this, even on a busy
/// two-core CI machine running other tests beside them.
const LIMIT: Duration = Duration::from_secs(120);

/// One test's lab: a state directory of its own. The MariaDB datadir templates are shared
/// by every test (building one takes seconds; the lab's lock serialises the builders).
pub struct TestLab {
    dir: TempDir,
}

impl TestLab {
    /// `stack up NAME KNOBS --json` in a new lab: the lab and the answer, or `Err(Skip)`
    /// when a package the stack needs is missing (exit code 4; a panic in CI).
    pub fn up_or_skip(stack: &str, knobs: &[&str]) -> Result<(TestLab, Value), Skip> {
        let lab = TestLab::new();
        let mut args = vec!["stack", "up", stack, "--json"];
        args.extend_from_slice(knobs);
        let output = lab.run(&args);
        if output.status.code() == Some(4) {
            // "... install it with `apt-get install PACKAGE`"
            let stderr = String::from_utf8_lossy(&output.stderr);
            let package = stderr
                .split_once("apt-get install ")
                .map_or(stderr.trim(), |(_, rest)| rest.split('`').next().unwrap_or(rest));
            return Err(skip::missing(stack, package));
        }
        if output.status.code() == Some(6) {
            // A network profile where none can run (not root, no iproute2).
            let why = String::from_utf8_lossy(&output.stderr).trim().to_string();
            assert!(!skip::servers_required(), "CI must run network profiles: {why}");
            return Err(Skip(why));
        }
        assert_success(&output, &args);
        let up = serde_json::from_slice(&output.stdout).unwrap_or_else(|e| {
            panic!("stack up printed no JSON ({e}):\n{}", String::from_utf8_lossy(&output.stdout))
        });
        Ok((lab, up))
    }

    pub fn new() -> TestLab {
        let dir = tempfile::Builder::new().prefix("loadlab-lab-").tempdir().expect("temp dir");
        let shared = shared_templates();
        std::fs::create_dir_all(&shared).expect("create the shared template directory");
        symlink(&shared, dir.path().join("templates")).expect("link the templates");
        TestLab { dir }
    }

    /// `loadlab ARGS` with this lab's state directory.
    pub fn command(&self, args: &[&str]) -> Command {
        let mut command = loadlab();
        command.args(args).env("LOADLAB_STATE_DIR", self.dir.path());
        command
    }

    /// The library's view of this lab's state directory, as `loadlab` itself opens it.
    pub fn lab(&self) -> loadlab_lab::Lab {
        loadlab_lab::Lab::new(loadlab_lab::StateDir::at(self.dir.path()))
    }

    pub fn run(&self, args: &[&str]) -> Output {
        output_within(self.command(args), LIMIT)
    }

    /// `loadlab ARGS`, which must succeed and print JSON.
    pub fn json(&self, args: &[&str]) -> Value {
        let output = self.run(args);
        assert_success(&output, args);
        serde_json::from_slice(&output.stdout).unwrap_or_else(|e| {
            panic!(
                "loadlab {args:?} printed no JSON ({e}):\n{}",
                String::from_utf8_lossy(&output.stdout)
            )
        })
    }

    /// `stack up NAME KNOBS --json`.
    pub fn up(&self, stack: &str, knobs: &[&str]) -> Value {
        let mut args = vec!["stack", "up", stack, "--json"];
        args.extend_from_slice(knobs);
        self.json(&args)
    }

    pub fn down(&self, id: &str) {
        let output = self.run(&["stack", "down", id]);
        assert_success(&output, &["stack", "down", id]);
    }
}

impl Drop for TestLab {
    /// A failed test must not leave servers behind for the rest of the suite.
    fn drop(&mut self) {
        let _ = output_within(self.command(&["stack", "down", "--all"]), LIMIT);
    }
}

fn shared_templates() -> PathBuf {
    Path::new(env!("CARGO_TARGET_TMPDIR")).join("lab-templates")
}

/// The pids in an `up --json` answer.
pub fn pids(up: &Value) -> Vec<i32> {
    up["pids"]
        .as_array()
        .unwrap_or_else(|| panic!("no pids in {up:#}"))
        .iter()
        .map(|p| p.as_i64().expect("pid") as i32)
        .collect()
}

/// The pids among `pids` that still run. A zombie does not: it has exited and only waits
/// for its parent (init, once loadlab has exited) to collect it.
pub fn running(pids: &[i32]) -> Vec<i32> {
    pids.iter()
        .copied()
        .filter(|pid| {
            std::fs::read_to_string(format!("/proc/{pid}/stat")).is_ok_and(|stat| {
                let state =
                    stat.rsplit_once(')').and_then(|(_, rest)| rest.split_whitespace().next());
                !matches!(state, Some("Z" | "X"))
            })
        })
        .collect()
}

/// Brings `stack` up with `knobs` in a new lab, or skips the test when a package is missing:
/// `let (lab, up) = require_stack!("nginx", &[]);`
macro_rules! require_stack {
    ($stack:expr, $knobs:expr) => {
        match $crate::lab::TestLab::up_or_skip($stack, $knobs) {
            Ok(started) => started,
            Err(skip) => {
                skip.report();
                return;
            }
        }
    };
}
pub(crate) use require_stack;
