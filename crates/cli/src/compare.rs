//! `loadlab compare RUN_A RUN_B`: a benchstat-style A/B table of two stored runs.

use clap::Args;

use crate::exit::failure;
use crate::exit::{OK, SLO_FAILED};
use crate::report_cmd::{open_existing, pick_run};

#[derive(Debug, Args)]
pub struct CompareArgs {
    /// The base run's id.
    pub run_a: i64,
    /// The run compared with it.
    pub run_b: i64,
    /// Exit 99 when RUN_B is significantly worse than RUN_A anywhere (a lower rate, higher
    /// p50 or p99; Mann-Whitney at 0.05): a CI gate against the last good run.
    #[arg(long = "fail-on-regression")]
    pub fail_on_regression: bool,
    /// With --fail-on-regression: a regression of a figure whose stored flags say it measures
    /// the client (a missed schedule, a saturated client, ...) fails the gate too.
    #[arg(long = "gate-untrusted", requires = "fail_on_regression")]
    pub gate_untrusted: bool,
    /// Print the comparisons as JSON instead of the table (docs/suites.md).
    #[arg(long = "json")]
    pub json: bool,
    #[command(flatten)]
    pub store: crate::report_cmd::StoreArgs,
}

pub fn run(args: CompareArgs) -> anyhow::Result<u8> {
    let store = open_existing(&args.store)?;
    let (run_a, run_b) = (pick_run(&store, Some(args.run_a))?, pick_run(&store, Some(args.run_b))?);
    for id in [run_a, run_b] {
        crate::report_cmd::say_unfinished(&store, id)?;
    }
    let a = store.cells(run_a).map_err(failure)?;
    let b = store.cells(run_b).map_err(failure)?;
    let deltas = loadlab_report::compare_runs(&a, &b);
    let (name_a, name_b) = (format!("run {}", args.run_a), format!("run {}", args.run_b));
    if args.json {
        out!("{}", serde_json::to_string_pretty(&deltas)? + "\n")?;
    } else {
        out!("{}", loadlab_report::compare_table(&name_a, &a, &name_b, &b))?;
    }
    if !args.fail_on_regression {
        return Ok(OK);
    }
    let gate = loadlab_report::regression_gate(&deltas, &name_a, &name_b, args.gate_untrusted);
    for line in &gate.lines {
        eprintln!("loadlab: {line}");
    }
    Ok(if gate.failed { SLO_FAILED } else { OK })
}
