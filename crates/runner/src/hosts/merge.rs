//! `loadlab merge`: agents' interval logs (`--hdr-log`) read and added into one test's
//! figures, and written back as one log. The adding and its refusals are the stats crate's
//! (`log_merge`); this reads and writes the files.

use std::io::Write;
use std::path::{Path, PathBuf};

use loadlab_stats::log_merge::{self, MergeError, Merged};

/// Why logs were not merged.
#[derive(Debug, thiserror::Error)]
pub enum MergeFailure {
    /// A file that cannot be read or created: the user's to fix.
    #[error("{0}")]
    File(String),
    /// Not logs, or logs that cannot be added ([`MergeError::unmergeable`]).
    #[error(transparent)]
    Refused(#[from] MergeError),
    #[error("writing {path}: {source}")]
    Write {
        path: PathBuf,
        #[source]
        source: std::io::Error,
    },
}

/// The logs added, and their names as given.
pub struct Merging {
    pub files: Vec<String>,
    pub merged: Merged,
}

/// Reads each of `files` and adds them.
pub fn merge(files: &[PathBuf]) -> Result<Merging, MergeFailure> {
    let mut logs = Vec::new();
    for path in files {
        let name = path.display().to_string();
        let text = std::fs::read(path)
            .map_err(|e| MergeFailure::File(format!("{name}: cannot read it: {e}")))?;
        logs.push((name.clone(), log_merge::read(&name, &text)?));
    }
    let merged = log_merge::merge(&logs)?;
    Ok(Merging { files: logs.into_iter().map(|(n, _)| n).collect(), merged })
}

impl Merging {
    /// Writes the merged interval log to `path` (`--hdr-log`), its comment naming this
    /// loadlab's `version` and the logs.
    pub fn write(&self, path: &Path, version: &str) -> Result<(), MergeFailure> {
        let file = std::fs::File::create(path).map_err(|e| {
            MergeFailure::File(format!("--hdr-log {}: cannot create it: {e}", path.display()))
        })?;
        let mut out = std::io::BufWriter::new(file);
        let comment = format!("loadlab {version} merge {}", self.files.join(" "));
        let written = self.merged.write(&mut out, &comment).and_then(|()| out.flush());
        written.map_err(|source| MergeFailure::Write { path: path.to_path_buf(), source })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn an_unreadable_file_and_a_file_that_is_no_log_are_refused_as_input() {
        let dir = tempfile::tempdir().unwrap();
        let missing = dir.path().join("missing.hlog");
        let e = merge(std::slice::from_ref(&missing)).err().unwrap();
        assert!(matches!(&e, MergeFailure::File(m) if m.contains("cannot read it")), "{e}");
        let junk = dir.path().join("junk.hlog");
        std::fs::write(&junk, "not a log\n").unwrap();
        match merge(&[junk]).err().unwrap() {
            MergeFailure::Refused(e) => assert!(!e.unmergeable(), "{e}"),
            other => panic!("{other}"),
        }
    }
}
