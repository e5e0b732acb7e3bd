//! Debian's headless Chromium for the browser test: finding it, and running it with a deadline.
//!
//! A missing Chromium skips the test with a visible line locally, but fails it when `CI` or
//! `LOADLAB_REQUIRE_SERVERS` is set, so CI never passes by running nothing (the Makefile's
//! TEST_PACKAGES installs `chromium`).

use std::io::{Read, Write};
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
use std::thread;
use std::time::{Duration, Instant};

/// Whether missing programs fail the test instead of skipping it.
fn required() -> bool {
    ["LOADLAB_REQUIRE_SERVERS", "CI"]
        .iter()
        .any(|name| std::env::var(name).is_ok_and(|v| !v.is_empty() && v != "0" && v != "false"))
}

/// Chromium's path, or `None` after saying on stderr why the test skips (locally only).
pub fn find_or_skip() -> Option<PathBuf> {
    let path = std::env::var_os("PATH").unwrap_or_default();
    let found = ["chromium", "chromium-browser"]
        .iter()
        .flat_map(|name| std::env::split_paths(&path).map(move |dir| dir.join(name)))
        .find(|p| p.is_file());
    if found.is_none() {
        assert!(
            !required(),
            "chromium is required for the report's browser test (apt-get install chromium)"
        );
        // libtest hides eprintln! of passing tests; a skip nobody sees looks like a pass.
        let _ = writeln!(
            std::io::stderr(),
            "skipped: chromium not installed (apt-get install chromium; LOADLAB_REQUIRE_SERVERS=1 \
             makes this a failure)"
        );
    }
    found
}

/// What one Chromium run printed.
pub struct Run {
    pub success: bool,
    pub stdout: String,
    pub stderr: String,
}

/// Runs headless Chromium on `page` with its own profile in `profile` and `extra` arguments,
/// killing it after `limit` (a hung browser must fail the test, not stall CI).
pub fn run(chromium: &Path, profile: &Path, page: &Path, extra: &[String], limit: Duration) -> Run {
    let mut child = Command::new(chromium)
        .args([
            "--headless",
            "--no-sandbox",
            "--disable-gpu",
            "--disable-background-networking",
            "--disable-component-update",
            "--disable-sync",
            "--no-first-run",
            "--enable-logging=stderr",
            "--v=0",
        ])
        .arg(format!("--user-data-dir={}", profile.display()))
        .args(extra)
        .arg(format!("file://{}", page.display()))
        .stdin(Stdio::null())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .expect("start chromium");
    let drain = |mut pipe: Box<dyn Read + Send>| {
        thread::spawn(move || {
            let mut buf = Vec::new();
            let _ = pipe.read_to_end(&mut buf);
            String::from_utf8_lossy(&buf).into_owned()
        })
    };
    let out = drain(Box::new(child.stdout.take().expect("piped stdout")));
    let err = drain(Box::new(child.stderr.take().expect("piped stderr")));
    let deadline = Instant::now() + limit;
    let status = loop {
        if let Some(status) = child.try_wait().expect("wait for chromium") {
            break status;
        }
        if Instant::now() > deadline {
            let _ = child.kill();
            let _ = child.wait();
            panic!(
                "chromium did not finish within {limit:?}; stderr:\n{}",
                err.join().unwrap_or_default()
            );
        }
        thread::sleep(Duration::from_millis(50));
    };
    Run {
        success: status.success(),
        stdout: out.join().unwrap_or_default(),
        stderr: err.join().unwrap_or_default(),
    }
}
