//! loadlab's result store: one SQLite file, the only place loadlab touches SQLite.
//!
//! - [`Store`] opens (creating or migrating) the file and does every read and write. A run is
//!   `begin_run`, one `record_cell` per finished cell, `finish_run`. Each cell is committed in
//!   its own transaction, so a run stopped by Ctrl-C or a crash keeps every cell it finished.
//! - [`model`] has the plain data written and read back: [`RunInfo`], [`CellRecord`] (with its
//!   metrics, its [`Histograms`], per-second series (and a changing load's judged
//!   [`SecondRecord`]s), a visit's [`StepRecord`]s, resource samples, trust flags, what it
//!   counted and what limited it), [`ConfigRecord`]. The runner builds a cell's record from
//!   the bench's judged report and the lab's samples; the report reads it; neither sees SQL.
//! - [`Histograms`]: a bench's or a cell's distributions, the one value a live bench's report
//!   carries and a cell keeps, so that ab's tables read the same one live or stored.
//! - [`trust`] has the runner's judgement as kept with a cell: the one [`Flag`] type and
//!   [`LimitedBy`], what limited the cell's figures.
//! - [`metric`] names the usual metrics, so writer and reader agree; [`Counted`] says what
//!   a run counts (requests, views, visits, sessions), for the runner and the report alike.
//! - [`HostFacts`] and [`Identity`]: a lab host and the path to it, and who answered at an
//!   external target's URL, kept as typed values.
//! - With the `test-util` feature (other crates' dev-dependency), `CellRecord::for_test` builds
//!   a cell for a test with only what the test names set.
//! - The schema is versioned with `PRAGMA user_version` and grows by migrations (`schema.rs`);
//!   histograms are kept in HdrHistogram's V2 format beside their exact totals (`codec.rs`).

mod codec;
pub mod counted;
mod error;
pub mod histograms;
pub mod host;
pub mod metric;
pub mod model;
mod profile;
mod query;
mod schema;
mod store;
#[cfg(any(test, feature = "test-util"))]
mod testing;
pub mod trust;

pub use counted::Counted;
pub use error::{Result, StoreError};
pub use histograms::Histograms;
pub use host::{HostFacts, Identity};
pub use model::{
    CellId, CellRecord, ConfigRecord, Environment, LoadModel, LoadSpec, Run, RunId, RunInfo,
    RunProcess, RunStatus, RunSummary, Sample, SecondRecord, StepRecord,
};
pub use profile::{ProfileRecord, RunProfiles};
pub use store::Store;
pub use trust::{Flag, Limit, LimitedBy, TrustFlag};
