//! What an instance ran, as data for the run record: each tier's effective configuration
//! and versions ([`Captured`]), from a command's output or a file as it is on disk. A capture
//! that fails says so in its text: it must not stop the run it describes.

use std::path::Path;
use std::process::Command;
use std::time::Duration;

use serde::Serialize;

use crate::supervise;
use loadlab_programs as programs;

/// One piece of a tier's effective configuration or version, as data for the run record.
#[derive(Clone, Debug, PartialEq, Eq, Serialize)]
pub struct Captured {
    pub tier: String,
    /// What was captured: `nginx -T`, `varnishd -V`, `VCL`, ...
    pub what: String,
    pub text: String,
}

/// Runs a capture command: its stdout, or its stderr for tools that report there
/// (`varnishd -V`, `php-fpm -tt`), or the error as text, since a capture that fails must not
/// stop the run it describes.
pub fn capture_command(tier: &str, what: &str, command: Command) -> Captured {
    let text = match supervise::run_output(command, Duration::from_secs(10)) {
        Ok((stdout, stderr)) if stdout.trim().is_empty() => stderr,
        Ok((stdout, _)) => stdout,
        Err(e) => format!("capture failed: {e}"),
    };
    Captured { tier: tier.to_string(), what: what.to_string(), text }
}

/// Runs `need`'s program with `flag` (`-v`, `--version`) as a capture.
pub fn capture_version(tier: &str, need: &programs::Need, flag: &str) -> Captured {
    let what = format!("{} {flag}", need.name());
    match need.find() {
        Ok(program) => {
            let mut command = Command::new(program);
            command.arg(flag);
            capture_command(tier, &what, command)
        }
        Err(e) => Captured { tier: tier.into(), what, text: format!("capture failed: {e}") },
    }
}

/// Captures a generated file's contents as it is on disk.
pub fn capture_file(tier: &str, what: &str, path: &Path) -> Captured {
    let text = std::fs::read_to_string(path)
        .unwrap_or_else(|e| format!("capture failed: reading {}: {e}", path.display()));
    Captured { tier: tier.to_string(), what: what.to_string(), text }
}
