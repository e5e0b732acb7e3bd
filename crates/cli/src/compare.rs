//! `loadlab compare RUN_A RUN_B`: a benchstat-style A/B table of two stored runs.

use std::path::PathBuf;

use clap::Args;
use loadlab_store::RunId;

use crate::exit::OK;
use crate::report_cmd::open_existing;
use crate::run::store_failure;

#[derive(Debug, Args)]
pub struct CompareArgs {
    /// The base run's id.
    pub run_a: i64,
    /// The run compared with it.
    pub run_b: i64,
    /// The SQLite store.
    #[arg(long = "db")]
    pub db: Option<PathBuf>,
}

pub fn run(args: CompareArgs) -> anyhow::Result<u8> {
    let store = open_existing(args.db.as_deref())?;
    for id in [args.run_a, args.run_b] {
        crate::report_cmd::say_unfinished(&store, RunId(id))?;
    }
    let a = store.cells(RunId(args.run_a)).map_err(store_failure)?;
    let b = store.cells(RunId(args.run_b)).map_err(store_failure)?;
    let table = loadlab_report::compare_table(
        &format!("run {}", args.run_a),
        &a,
        &format!("run {}", args.run_b),
        &b,
    );
    out!("{table}")?;
    Ok(OK)
}
