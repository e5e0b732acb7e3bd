//! Error classes for failed requests, and the engine's own errors.
//!
//! Every request that does not complete is counted in exactly one [`ErrorClass`]; classes are
//! never lumped together, so a run that failed for lack of file descriptors (the client's fault)
//! is told apart from one whose server reset connections (the server's fault).

use std::collections::BTreeMap;
use std::io;

use serde::{Deserialize, Serialize};

/// Why a request failed. The names are the JSON keys under `errors`.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum ErrorClass {
    /// The server refused the connection (ECONNREFUSED).
    Connrefused,
    /// The connection was reset (ECONNRESET, EPIPE), or the server closed it before sending
    /// any byte of the response.
    Connreset,
    /// The response did not complete within `--timeout`.
    ClientTimeout,
    /// The TCP connection was not established within `--connect-timeout`.
    ConnectTimeout,
    /// The client ran out of file descriptors (EMFILE, ENFILE): the client's limit, not the
    /// server's.
    FdUnavail,
    /// No local address or ephemeral port was available (EADDRNOTAVAIL).
    AddrUnavail,
    /// The response was not valid HTTP/1.1 or broke a parser limit.
    Parse,
    /// The connection closed before the body's declared end.
    ShortBody,
    /// The response was well formed but failed `--expect-*` validation.
    Validation,
    /// The TLS handshake or a record failed: a certificate not trusted, an alert, a broken
    /// record; the reasons are kept in [`ErrorCounts::tls_reasons`].
    Tls,
    /// HTTP/2: the server reset the request's stream (RST_STREAM, with its error code); the
    /// reasons are kept in [`ErrorCounts::h2_reasons`].
    H2Stream,
    /// HTTP/2: the request's connection failed at the protocol level (a GOAWAY that let it
    /// go unanswered, a frame or header block that broke the protocol or a limit); the
    /// reasons are kept in [`ErrorCounts::h2_reasons`].
    H2Conn,
    /// HTTP/3: the server reset the request's stream (RESET_STREAM, with its HTTP/3 error
    /// code); the connection carries on. Reasons in [`ErrorCounts::h2_reasons`].
    H3StreamReset,
    /// HTTP/3: the server closed the request's QUIC connection at the application level
    /// (CONNECTION_CLOSE with an HTTP/3 code), failing every request on it.
    H3Conn,
    /// QUIC: the request's connection failed at the transport level (a transport error
    /// either side detected, a stateless reset, no version in common), every request on it.
    QuicTransport,
    /// QUIC: nothing came from the server, not even an acknowledgement of the client's
    /// PINGs, for the idle timeout (the connect timeout): it stopped answering.
    QuicIdleTimeout,
    /// Any other error; the errno is kept in [`ErrorCounts::other_errno`].
    Other,
}

impl ErrorClass {
    pub const ALL: [ErrorClass; 17] = [
        ErrorClass::Connrefused,
        ErrorClass::Connreset,
        ErrorClass::ClientTimeout,
        ErrorClass::ConnectTimeout,
        ErrorClass::FdUnavail,
        ErrorClass::AddrUnavail,
        ErrorClass::Parse,
        ErrorClass::ShortBody,
        ErrorClass::Validation,
        ErrorClass::Tls,
        ErrorClass::H2Stream,
        ErrorClass::H2Conn,
        ErrorClass::H3StreamReset,
        ErrorClass::H3Conn,
        ErrorClass::QuicTransport,
        ErrorClass::QuicIdleTimeout,
        ErrorClass::Other,
    ];

    /// Its index in [`ErrorClass::ALL`] (and in a per-second bucket's `failed_by`).
    pub fn index(self) -> usize {
        self as usize
    }

    /// The JSON key (also used in text and CSV output).
    pub fn name(self) -> &'static str {
        match self {
            ErrorClass::Connrefused => "connrefused",
            ErrorClass::Connreset => "connreset",
            ErrorClass::ClientTimeout => "client_timeout",
            ErrorClass::ConnectTimeout => "connect_timeout",
            ErrorClass::FdUnavail => "fd_unavail",
            ErrorClass::AddrUnavail => "addr_unavail",
            ErrorClass::Parse => "parse",
            ErrorClass::ShortBody => "short_body",
            ErrorClass::Validation => "validation",
            ErrorClass::Tls => "tls",
            ErrorClass::H2Stream => "h2_stream",
            ErrorClass::H2Conn => "h2_conn",
            ErrorClass::H3StreamReset => "h3_stream_reset",
            ErrorClass::H3Conn => "h3_conn",
            ErrorClass::QuicTransport => "quic_transport",
            ErrorClass::QuicIdleTimeout => "quic_idle_timeout",
            ErrorClass::Other => "other",
        }
    }

    /// True for failures that happen before a connection exists: if every request failed this
    /// way the target was never reached.
    pub fn is_connect_phase(self) -> bool {
        matches!(
            self,
            ErrorClass::Connrefused
                | ErrorClass::ConnectTimeout
                | ErrorClass::FdUnavail
                | ErrorClass::AddrUnavail
        )
    }

    /// Classifies an I/O error by errno. Connect-time errors that are not refusals (such as
    /// EHOSTUNREACH) fall into `Other` with their errno kept.
    pub fn from_io(err: &io::Error) -> ErrorClass {
        if crate::tls::reason(err).is_some() {
            return ErrorClass::Tls;
        }
        match err.raw_os_error() {
            Some(libc::ECONNREFUSED) => ErrorClass::Connrefused,
            Some(libc::ECONNRESET) | Some(libc::EPIPE) | Some(libc::ECONNABORTED) => {
                ErrorClass::Connreset
            }
            Some(libc::ETIMEDOUT) => ErrorClass::ConnectTimeout,
            Some(libc::EMFILE) | Some(libc::ENFILE) => ErrorClass::FdUnavail,
            Some(libc::EADDRNOTAVAIL) | Some(libc::EADDRINUSE) => ErrorClass::AddrUnavail,
            _ => ErrorClass::Other,
        }
    }
}

// A per-second bucket counts failures by class in `ALL`'s order.
const _: () = assert!(ErrorClass::ALL.len() == loadlab_stats::series::FAILURE_CLASSES);

/// Failure counts per class, plus the errno of every `other` failure.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct ErrorCounts {
    counts: [u64; ErrorClass::ALL.len()],
    /// errno -> count, for failures of class `other` (errno 0 when there was none).
    pub other_errno: BTreeMap<i32, u64>,
    /// reason -> count, for failures of class `tls` (the alert, or why a certificate was
    /// refused).
    pub tls_reasons: BTreeMap<String, u64>,
    /// reason -> count, for failures of classes `h2_stream` and `h2_conn` (what happened,
    /// with the error code the server sent).
    pub h2_reasons: BTreeMap<String, u64>,
}

impl ErrorCounts {
    #[inline]
    pub fn add(&mut self, class: ErrorClass, errno: Option<i32>) {
        self.counts[class as usize] += 1;
        if class == ErrorClass::Other {
            *self.other_errno.entry(errno.unwrap_or(0)).or_insert(0) += 1;
        }
    }

    pub fn get(&self, class: ErrorClass) -> u64 {
        self.counts[class as usize]
    }

    pub fn total(&self) -> u64 {
        self.counts.iter().sum()
    }

    pub fn merge(&mut self, other: &ErrorCounts) {
        for (a, b) in self.counts.iter_mut().zip(other.counts.iter()) {
            *a += b;
        }
        for (errno, n) in &other.other_errno {
            *self.other_errno.entry(*errno).or_insert(0) += n;
        }
        for (reason, n) in &other.tls_reasons {
            *self.tls_reasons.entry(reason.clone()).or_insert(0) += n;
        }
        for (reason, n) in &other.h2_reasons {
            *self.h2_reasons.entry(reason.clone()).or_insert(0) += n;
        }
    }

    /// (class, count) for every class, zeroes included, in a fixed order.
    pub fn iter(&self) -> impl Iterator<Item = (ErrorClass, u64)> + '_ {
        ErrorClass::ALL.iter().map(|c| (*c, self.get(*c)))
    }
}

/// Errors that stop a run before or while it starts. Request failures are never errors of
/// this kind: they are counted in [`ErrorCounts`].
#[derive(Debug, thiserror::Error)]
pub enum EngineError {
    /// The configuration cannot be run (bad URL, zero connections, ...): the user's mistake.
    #[error("{0}")]
    Config(String),
    /// A file of requests (a URL list, an access log, a timing script) cannot be used: which
    /// file, which line (when one is to blame), and what to fix. The user's mistake, as
    /// `Config`.
    #[error("{}", input_message(file, *line, what))]
    Input { file: String, line: Option<usize>, what: String },
    /// The target could not be resolved or reached before the run, or was reached and its
    /// TLS handshake failed (the reason says which: `TLS: ...`).
    #[error("{}", unreachable_message(target, reason))]
    Unreachable { target: String, reason: String },
    /// The operating system refused something the engine needs (threads, epoll). The cause
    /// is only the source, not part of the message, so that a printed chain names it once.
    #[error("{context}")]
    Io {
        context: &'static str,
        #[source]
        source: io::Error,
    },
    /// A worker thread died; a bug.
    #[error("worker thread {0} panicked")]
    WorkerPanicked(usize),
}

/// "cannot reach" when the connection was not made; a handshake that failed after it was
/// (`TLS: ...`) says so itself.
fn unreachable_message(target: &str, reason: &str) -> String {
    format!("{}{target}: {reason}", unreachable_prefix(reason, "cannot reach "))
}

/// `prefix` (e.g. "cannot reach ") for a reason that is about reaching the target, nothing
/// for a TLS handshake that failed after the connection was made: one rule for every
/// message built from [`EngineError::Unreachable`]'s reason.
pub fn unreachable_prefix<'a>(reason: &str, prefix: &'a str) -> &'a str {
    if reason.starts_with("TLS: ") {
        ""
    } else {
        prefix
    }
}

/// `FILE:LINE: what` (as compilers and grep name a line, so an editor can jump to it), or
/// `FILE: what` when no line is to blame.
fn input_message(file: &str, line: Option<usize>, what: &str) -> String {
    match line {
        Some(n) => format!("{file}:{n}: {what}"),
        None => format!("{file}: {what}"),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn input_errors_name_the_file_and_the_line() {
        let e = |line| EngineError::Input { file: "urls.txt".into(), line, what: "bad".into() };
        assert_eq!(e(Some(3)).to_string(), "urls.txt:3: bad");
        assert_eq!(e(None).to_string(), "urls.txt: bad");
    }

    #[test]
    fn errno_classes() {
        let e = |n| io::Error::from_raw_os_error(n);
        assert_eq!(ErrorClass::from_io(&e(libc::ECONNREFUSED)), ErrorClass::Connrefused);
        assert_eq!(ErrorClass::from_io(&e(libc::ECONNRESET)), ErrorClass::Connreset);
        assert_eq!(ErrorClass::from_io(&e(libc::EPIPE)), ErrorClass::Connreset);
        assert_eq!(ErrorClass::from_io(&e(libc::EMFILE)), ErrorClass::FdUnavail);
        assert_eq!(ErrorClass::from_io(&e(libc::ENFILE)), ErrorClass::FdUnavail);
        assert_eq!(ErrorClass::from_io(&e(libc::EADDRNOTAVAIL)), ErrorClass::AddrUnavail);
        assert_eq!(ErrorClass::from_io(&e(libc::EHOSTUNREACH)), ErrorClass::Other);
    }

    #[test]
    fn counts_keep_errno_of_other() {
        let mut c = ErrorCounts::default();
        c.add(ErrorClass::Other, Some(libc::EHOSTUNREACH));
        c.add(ErrorClass::Other, Some(libc::EHOSTUNREACH));
        c.add(ErrorClass::Parse, None);
        let mut d = ErrorCounts::default();
        d.add(ErrorClass::Other, Some(libc::ENETUNREACH));
        c.merge(&d);
        assert_eq!(c.total(), 4);
        assert_eq!(c.get(ErrorClass::Other), 3);
        assert_eq!(c.other_errno[&libc::EHOSTUNREACH], 2);
        assert_eq!(c.other_errno[&libc::ENETUNREACH], 1);
    }
}
