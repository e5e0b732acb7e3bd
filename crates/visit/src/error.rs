//! The errors of reading a visit: each names the file's line and column, so that a user finds
//! the mistake without guessing.

/// A visit file or session log that cannot be read as one.
#[derive(Debug, thiserror::Error, PartialEq, Eq)]
pub enum VisitError {
    /// A mistake at a place in the file.
    #[error("{file}:{line}:{column}: {message}")]
    At { file: String, line: usize, column: usize, message: String },
    /// A mistake in the file as a whole (no session in it, a step without a path).
    #[error("{file}: {message}")]
    File { file: String, message: String },
}
