//! The store's errors: the ones a user can fix (a wrong file, an unknown run) told apart from
//! internal ones.

use std::path::PathBuf;

use hdrhistogram::serialization::V2SerializeError;
use thiserror::Error;

use crate::model::RunId;

pub type Result<T, E = StoreError> = std::result::Result<T, E>;

#[derive(Debug, Error)]
#[non_exhaustive]
pub enum StoreError {
    #[error("cannot open the result store {}", path.display())]
    Open {
        path: PathBuf,
        #[source]
        source: rusqlite::Error,
    },

    #[error("{} is an SQLite file but not a loadlab result store", path.display())]
    NotAStore { path: PathBuf },

    #[error(
        "the result store {} has schema version {found}, newer than this loadlab knows \
         ({supported}): use a newer loadlab or another file",
        path.display()
    )]
    TooNew { path: PathBuf, found: i64, supported: i64 },

    #[error("cannot migrate the result store to schema version {version}")]
    Migration {
        version: i64,
        #[source]
        source: rusqlite::Error,
    },

    #[error("no run {0} in the result store")]
    UnknownRun(RunId),

    #[error("{what} = {value} does not fit SQLite's 64-bit integers")]
    OutOfRange { what: &'static str, value: u128 },

    #[error("cannot write {what} as JSON")]
    Json {
        what: &'static str,
        #[source]
        source: serde_json::Error,
    },

    #[error("cannot serialize histogram {name:?}")]
    Histogram {
        name: String,
        #[source]
        source: V2SerializeError,
    },

    /// Stored data that does not read back: written by a broken or newer loadlab, or edited.
    #[error("the result store holds unreadable data: {0}")]
    Corrupt(String),

    #[error("SQLite failed")]
    Sqlite(#[from] rusqlite::Error),
}

impl StoreError {
    /// True for errors the user caused and can fix (a wrong path, a file that is no store, a run
    /// that does not exist), which the CLI reports with their own exit code.
    pub fn is_user_error(&self) -> bool {
        matches!(
            self,
            StoreError::Open { .. }
                | StoreError::NotAStore { .. }
                | StoreError::TooNew { .. }
                | StoreError::UnknownRun(_)
        )
    }
}
