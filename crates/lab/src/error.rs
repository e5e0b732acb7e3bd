//! The lab's error type: what went wrong, told apart so the CLI can give a missing package,
//! an unknown stack or a failed verify its own exit code and message.

use std::io;
use std::path::PathBuf;

/// Everything a lab operation can fail with.
#[derive(Debug, thiserror::Error)]
pub enum Error {
    /// A program a tier needs is not installed.
    #[error("{program} not found: install it with `apt-get install {package}`")]
    MissingPackage { program: String, package: String },
    /// No built-in stack has this name.
    #[error("no stack named {0:?} (see `loadlab stack list`)")]
    UnknownStack(String),
    /// A knob makes no sense for this stack (say, --opcache on a stack without PHP).
    #[error("{0}")]
    BadKnob(String),
    /// No instance has this id in the state directory.
    #[error("no running stack with id {0:?} (see `loadlab stack list`)")]
    NoSuchInstance(String),
    /// A tier exited or never became ready; `log` holds the end of its logs.
    #[error("{tier} did not start: {reason}{}", log_tail(.log))]
    Start { tier: String, reason: String, log: String },
    /// A server's own test refused its configuration with the user's files in it (`nginx -t`,
    /// `apache2 -t`, `php-fpm -t`, `varnishd -C`, PHP's reading of php.ini): `summary` is its
    /// line naming the user's file, `output` all it said, with the user's paths.
    #[error(
        "{tier} refused your configuration ({test}): {summary}\n--- {test} said ---\n{output}"
    )]
    Config { tier: String, test: String, summary: String, output: String },
    /// A workload did not answer as it must before any load is applied.
    #[error("verify failed for {workload}: {reason}")]
    Verify { workload: String, reason: String },
    /// A helper command (capturing a version, loading a database) failed.
    #[error("`{command}` failed: {reason}")]
    Command { command: String, reason: String },
    /// Processes of a stack were still there after SIGKILL.
    #[error("processes of {id} survived SIGKILL: {pids:?}")]
    Survivors { id: String, pids: Vec<i32> },
    /// A record in the state directory could not be read.
    #[error("bad state record {}: {reason}", path.display())]
    BadRecord { path: PathBuf, reason: String },
    /// A filesystem or system call failed; `context` says what loadlab was doing.
    #[error("{context}: {source}")]
    Io {
        context: String,
        #[source]
        source: io::Error,
    },
    /// A network profile was asked for where it cannot run: not root, no iproute2, or
    /// `via=netem` on a kernel without netem.
    #[error("{0}")]
    NetUnavailable(String),
    /// Processes named for sampling a server loadlab did not start are not running (a pid
    /// gone, an empty pidfile, a unit stopped).
    #[error("{0}")]
    Processes(String),
    /// A built-in visit cannot run where it was sent (no stack of the lab there, or not the
    /// stack it was written for).
    #[error("{0}")]
    NoVisit(String),
    /// Ctrl-C (or SIGTERM) arrived while a stack was starting; it was torn down.
    #[error("interrupted while starting; what had started was stopped")]
    Interrupted,
}

pub type Result<T, E = Error> = std::result::Result<T, E>;

impl From<loadlab_programs::Missing> for Error {
    fn from(m: loadlab_programs::Missing) -> Error {
        Error::MissingPackage { program: m.program, package: m.package }
    }
}

/// Adds what loadlab was doing to an `io::Error`: `fs::write(p, s).context(|| ...)?`.
pub(crate) trait IoContext<T> {
    fn context<C: Into<String>>(self, context: impl FnOnce() -> C) -> Result<T>;
}

impl<T> IoContext<T> for io::Result<T> {
    fn context<C: Into<String>>(self, context: impl FnOnce() -> C) -> Result<T> {
        self.map_err(|source| Error::Io { context: context().into(), source })
    }
}

fn log_tail(log: &str) -> String {
    if log.trim().is_empty() {
        String::new()
    } else {
        format!("\n--- log ---\n{}", log.trim_end())
    }
}
