//! `loadlab compare RUN_A RUN_B`: a benchstat-style A/B table of two stored runs.

use clap::Args;

use crate::exit::OK;
use crate::report_cmd::{open_existing, pick_run};
use crate::run::store_failure;

#[derive(Debug, Args)]
pub struct CompareArgs {
    /// The base run's id.
    pub run_a: i64,
    /// The run compared with it.
    pub run_b: i64,
    #[command(flatten)]
    pub store: crate::report_cmd::StoreArgs,
}

pub fn run(args: CompareArgs) -> anyhow::Result<u8> {
    let store = open_existing(&args.store)?;
    let (run_a, run_b) = (pick_run(&store, Some(args.run_a))?, pick_run(&store, Some(args.run_b))?);
    for id in [run_a, run_b] {
        crate::report_cmd::say_unfinished(&store, id)?;
    }
    let a = store.cells(run_a).map_err(store_failure)?;
    let b = store.cells(run_b).map_err(store_failure)?;
    let table = loadlab_report::compare_table(
        &format!("run {}", args.run_a),
        &a,
        &format!("run {}", args.run_b),
        &b,
    );
    out!("{table}")?;
    Ok(OK)
}
