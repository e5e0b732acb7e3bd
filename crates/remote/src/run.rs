//! Running one short ssh command to completion within a time limit (the probe, the copy, a
//! remote `stack down`), its output collected.

use std::io::Read;
use std::process::{Command, ExitStatus, Stdio};
use std::time::{Duration, Instant};

use crate::error::{Error, IoContext, Result};
use crate::host::Host;

/// What a finished command printed.
pub struct Finished {
    pub status: ExitStatus,
    pub stdout: String,
    pub stderr: String,
}

/// ssh's own exit code for a failure of its own (no connection, authentication).
pub const SSH_FAILED: i32 = 255;

/// Runs `command` with `stdin`, killing it after `limit`. ssh's own failure (exit 255) is
/// [`Error::Ssh`] with its message.
pub fn finish(
    mut command: Command,
    stdin: Stdio,
    host: &Host,
    limit: Duration,
) -> Result<Finished> {
    command.stdin(stdin).stdout(Stdio::piped()).stderr(Stdio::piped());
    let mut child = command.spawn().context(|| format!("starting {:?}", command.get_program()))?;
    let drain = |pipe: Option<Box<dyn Read + Send>>| {
        std::thread::spawn(move || {
            let mut text = String::new();
            if let Some(mut pipe) = pipe {
                let _ = pipe.read_to_string(&mut text);
            }
            text
        })
    };
    let stdout = drain(child.stdout.take().map(|p| Box::new(p) as Box<dyn Read + Send>));
    let stderr = drain(child.stderr.take().map(|p| Box::new(p) as Box<dyn Read + Send>));
    let deadline = Instant::now() + limit;
    let status = loop {
        if let Some(status) = child.try_wait().context(|| "waiting for ssh".into())? {
            break status;
        }
        if Instant::now() >= deadline {
            let _ = child.kill();
            let _ = child.wait();
            return Err(Error::Ssh {
                host: host.to_string(),
                reason: format!("took over {limit:?}"),
            });
        }
        std::thread::sleep(Duration::from_millis(10));
    };
    let finished = Finished {
        status,
        stdout: stdout.join().unwrap_or_default(),
        stderr: stderr.join().unwrap_or_default(),
    };
    if status.code() == Some(SSH_FAILED) {
        return Err(Error::Ssh { host: host.to_string(), reason: finished.stderr.trim().into() });
    }
    Ok(finished)
}
