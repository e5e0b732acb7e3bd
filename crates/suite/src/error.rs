//! [`SuiteError`]: why a suite cannot be used, with the file, line and column to fix.

use std::fmt;
use std::io;
use std::ops::Range;
use std::path::PathBuf;

/// A suite that cannot be used. Every variant is the user's to fix (a typo, a missing file, a
/// name the lab does not know), never a fault of loadlab, which is why the CLI maps the whole
/// type to its usage exit code (2).
#[derive(Debug, thiserror::Error)]
pub enum SuiteError {
    /// The file is not TOML, or is TOML that does not describe a valid suite.
    #[error("{file}{}: {message}", at.map(|l| l.to_string()).unwrap_or_default())]
    Invalid {
        /// The file's path as given, or `built-in:NAME`.
        file: String,
        /// Where in the file; `None` only when the TOML parser gave no position.
        at: Option<Location>,
        message: String,
    },
    /// The suite file could not be read.
    #[error("reading suite file {}: {source}", path.display())]
    Read {
        path: PathBuf,
        #[source]
        source: io::Error,
    },
    /// Neither a built-in suite's name nor a file's path.
    #[error("no built-in suite named {name:?} (built-in: {known}); a suite file's path ends in .toml or holds a /")]
    UnknownSuite { name: String, known: String },
}

impl SuiteError {
    /// An error at `span` (byte offsets into `text`).
    pub(crate) fn at(file: &str, text: &str, span: Range<usize>, message: String) -> SuiteError {
        SuiteError::Invalid { file: file.to_string(), at: Some(locate(text, span.start)), message }
    }

    /// The position of an [`SuiteError::Invalid`], for tests and editors.
    pub fn location(&self) -> Option<Location> {
        match self {
            SuiteError::Invalid { at, .. } => *at,
            _ => None,
        }
    }
}

/// A position in a suite file, both counted from 1 as editors show them.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Location {
    pub line: usize,
    /// In characters, not bytes, so a name with accents before the error does not shift it.
    pub column: usize,
}

impl fmt::Display for Location {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, ":{}:{}", self.line, self.column)
    }
}

/// The line and column of byte `offset` in `text`.
pub(crate) fn locate(text: &str, offset: usize) -> Location {
    // A span may end past the text (an error at end of file); clamp, and step back to a char
    // boundary so slicing cannot panic.
    let mut offset = offset.min(text.len());
    while !text.is_char_boundary(offset) {
        offset -= 1;
    }
    let before = &text[..offset];
    let line_start = before.rfind('\n').map_or(0, |i| i + 1);
    Location {
        line: before.matches('\n').count() + 1,
        column: before[line_start..].chars().count() + 1,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn locations_count_from_one_in_characters() {
        let text = "a = 1\nnamé = \"x\"\n";
        assert_eq!(locate(text, 0), Location { line: 1, column: 1 });
        assert_eq!(locate(text, 6), Location { line: 2, column: 1 });
        // "namé = " is 7 characters but 8 bytes.
        assert_eq!(locate(text, 6 + 8), Location { line: 2, column: 8 });
        assert_eq!(locate(text, 999), Location { line: 3, column: 1 });
    }

    #[test]
    fn the_message_names_file_line_and_column() {
        let e = SuiteError::at("x.toml", "a\nbc", 3..4, "bad".into());
        assert_eq!(e.to_string(), "x.toml:2:2: bad");
        let e = SuiteError::Invalid { file: "x.toml".into(), at: None, message: "bad".into() };
        assert_eq!(e.to_string(), "x.toml: bad");
    }
}
