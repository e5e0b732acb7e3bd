//! What can go wrong on the way to a remote lab host, told apart by who can fix it.

/// The remote crate's errors.
#[derive(Debug, thiserror::Error)]
pub enum Error {
    /// `--host` is not `ssh://[user@]host[:port]`, or `LOADLAB_SSH_COMMAND` cannot be split.
    #[error("--host {0}")]
    BadHost(String),
    #[error("LOADLAB_SSH_COMMAND: {0}")]
    BadSshCommand(String),
    /// ssh itself failed (exit 255: no connection, refused key, unknown host key).
    #[error("ssh to {host} failed: {reason}")]
    Ssh { host: String, reason: String },
    /// The remote cannot run this binary: another architecture or an older glibc.
    #[error("{host} cannot run this loadlab: {reason}")]
    Incompatible { host: String, reason: String },
    /// The remote loadlab ended with an error of its own (printed on stderr by it); `code`
    /// is its exit code, one of loadlab's.
    #[error("loadlab on {host} failed (exit {code})")]
    Remote { host: String, code: u8 },
    /// A session that was up ended, or went silent, before it was closed: the host or the
    /// path to it is lost (the remote takes its stack down when its heartbeat stops).
    #[error("lost {host}: {reason}")]
    Lost { host: String, reason: String },
    /// The remote said something this side cannot read.
    #[error("{host}: {reason}")]
    Protocol { host: String, reason: String },
    /// A command line the remote end would refuse (`stack up --host` with a local
    /// directory), refused here first.
    #[error("{0}")]
    Usage(String),
    /// Ctrl-C or SIGTERM before the remote stack was up.
    #[error("{0}")]
    Interrupted(String),
    /// The local process holding a session did not end it when asked.
    #[error("{0}")]
    OwnerStuck(String),
    #[error("{context}: {source}")]
    Io {
        context: String,
        #[source]
        source: std::io::Error,
    },
    #[error(transparent)]
    Lab(#[from] loadlab_lab::Error),
}

pub type Result<T> = std::result::Result<T, Error>;

/// `.context(|| "what was being done")` on io results.
pub trait IoContext<T> {
    fn context(self, what: impl FnOnce() -> String) -> Result<T>;
}

impl<T> IoContext<T> for std::io::Result<T> {
    fn context(self, what: impl FnOnce() -> String) -> Result<T> {
        self.map_err(|source| Error::Io { context: what(), source })
    }
}
