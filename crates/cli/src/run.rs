//! `loadlab run`: a suite's plan, cell by cell, run by [`loadlab_runner::suite`]; this prints
//! the plan, each stack instance and cell as it ends, and the verdict.

use std::path::PathBuf;

use crate::exit::{run_failure, suite_failure, INTERNAL, INTERRUPTED, OK, SLO_FAILED};
use crate::load;
use clap::Args;
use loadlab_runner::executor::{CellDone, Instance};
use loadlab_runner::{suite, Events, Measure};
use loadlab_store::{metric, RunStatus};
use loadlab_suite::{Cell, Plan};

#[derive(Debug, Args)]
pub struct RunArgs {
    /// A built-in suite's name, or a suite file (TOML; see docs/suites.md).
    #[arg(long = "suite", default_value = loadlab_suite::DEFAULT)]
    pub suite: String,
    /// Scale counts and durations down as the suite's [quick] section says.
    #[arg(long = "quick")]
    pub quick: bool,
    /// Directory for the run's report-RUN.html, report.html (the latest finished run's) and,
    /// unless --db says otherwise, loadlab.db.
    #[arg(long = "out", default_value = "loadlab-out")]
    pub out: PathBuf,
    /// The SQLite store to add the run to.
    #[arg(long = "db")]
    pub db: Option<PathBuf>,
    /// Print the plan and its estimated duration, and run nothing.
    #[arg(long = "dry-run")]
    pub dry_run: bool,
    /// Repetitions of every cell, instead of the suite's (or its [quick] section's).
    #[arg(long = "repetitions", value_name = "N")]
    pub repetitions: Option<u32>,
    /// Run every stack behind this network link, whatever the suite says (docs/lab.md).
    #[arg(long = "net", value_name = "PROFILE", long_help = crate::help::net_profiles(
        "Run every stack behind this network link, whatever the suite says"
    ))]
    pub net: Option<String>,
    /// Thresholds every workload's cells must hold over their repetitions ('p99<50ms,
    /// errors<0.1%,rps>1000'), instead of the suite's `slo`; exit 99 when one fails.
    #[arg(long = "slo", value_name = "THRESHOLDS", value_parser = load::parse_slo)]
    pub slo: Option<loadlab_runner::slo::Slo>,
    /// Run every stack of the suite on this lab host over ssh (as a stack's `host = ` in the
    /// suite does); the load stays on this machine. Each stack lives as long as its ssh
    /// session (docs/hosts.md).
    #[arg(long = "host", value_name = "ssh://[user@]host[:port]", value_parser = crate::remote::parse_host)]
    pub host: Option<loadlab_remote::Host>,
    /// Stacks on lab hosts: install the Debian packages they lack there first (apt-get, as
    /// root or with sudo -n), instead of stopping before the run with the list (exit 4).
    #[arg(long = "install-packages")]
    pub install_packages: bool,
}

pub fn run(args: RunArgs) -> anyhow::Result<u8> {
    let overrides = suite::Overrides {
        net: args.net.clone(),
        slo: args.slo.clone(),
        repetitions: args.repetitions,
        host: args.host.as_ref().map(ToString::to_string),
    };
    let (suite, notes) = suite::load(&args.suite, &overrides).map_err(suite_failure)?;
    for note in notes {
        eprintln!("loadlab: {note}");
    }
    let plan = loadlab_suite::plan(&suite, args.quick);
    print_plan(&plan)?;
    suite::check(&plan).map_err(suite_failure)?;
    // Said before anything runs: a plan that cannot answer its question is no surprise later.
    if let Some(line) = loadlab_runner::power::underpowered(&plan) {
        outln!("  note: {line}")?;
    }
    if args.dry_run {
        print_cells(&plan)?;
        return Ok(OK);
    }
    suite::check_packages(&suite).map_err(suite_failure)?;
    let remote = suite::remote_stacks(&suite, Box::new(|note| eprintln!("loadlab: {note}")))
        .installing(args.install_packages);
    if !args.install_packages {
        suite::check_remote_packages(&suite, &remote).map_err(suite_failure)?;
    }
    let mut started =
        suite::begin(&suite, &plan, &args.out, args.db.as_deref()).map_err(suite_failure)?;
    print_started(&started)?;

    // Stacks come and go inside, and the run's record is closed and reported after: a second
    // Ctrl-C waits for both.
    let _finishing = crate::signals::Finishing::hold();
    let mut measure = crate::progress::measure(false)?;
    let outcome = suite::execute(&mut started, &plan, &remote, &mut measure, &mut Printer);
    let stopped = measure.stopped();
    let finished =
        suite::finish(&mut started, &outcome, stopped, &args.out).map_err(suite_failure)?;
    print_end(&started, &plan, &finished)?;
    // A failed run exits with its error's code (5 for a verify that failed), said last.
    outcome.map_err(run_failure)?;
    Ok(match finished.disposition {
        suite::Disposition::Interrupted => INTERRUPTED,
        suite::Disposition::SloFailed => SLO_FAILED,
        suite::Disposition::Finished => OK,
        // Not reached: a failed run's outcome is its error, returned above.
        suite::Disposition::Failed => INTERNAL,
    })
}

/// The plan's first lines: its size and duration, and what it skips.
fn print_plan(plan: &Plan) -> std::io::Result<()> {
    let estimate = plan.estimate();
    let plural = |n: usize| if n == 1 { "" } else { "s" };
    outln!(
        "suite {}{}: {} cell{} on {}, about {:.1} min",
        plan.suite,
        if plan.quick { " (quick)" } else { "" },
        estimate.cells,
        plural(estimate.cells),
        estimate.places(),
        estimate.total.as_secs_f64() / 60.0
    )?;
    for s in &plan.skipped {
        outln!("  skipped: {} on {}: {}", s.workload, s.stack, s.reason)?;
    }
    Ok(())
}

/// `--dry-run`: every cell of the plan, in the order it would run.
fn print_cells(plan: &Plan) -> std::io::Result<()> {
    for cell in &plan.cells {
        outln!(
            "  {:>4} rep {} {:<28} {:<14} {}",
            cell.ordinal,
            loadlab_report::format::repetition(cell.repetition),
            cell.stack.label,
            cell.workload.name,
            loadlab_runner::executor::load_label(cell)
        )?;
    }
    Ok(())
}

/// What beginning the run found and where it goes.
fn print_started(started: &suite::Started) -> std::io::Result<()> {
    for id in &started.stale {
        eprintln!("loadlab: removed stale stack instance {id} left by an earlier run");
    }
    // Said once: a run whose process died is noticed by the next run into its store.
    for crashed in &started.crashed {
        eprintln!(
            "loadlab: run {} ({}) did not finish: the process that ran it is gone (killed, or the \
             machine restarted); its {} finished cells are kept (loadlab report {} --db {})",
            crashed.id,
            crashed.suite,
            crashed.cells,
            crashed.id,
            started.db.display()
        );
    }
    outln!("run {} into {}", started.run_id, started.db.display())
}

/// The run's end: how much of it ran, the verdict table, the reports' paths.
fn print_end(
    started: &suite::Started,
    plan: &Plan,
    finished: &suite::Finished,
) -> std::io::Result<()> {
    outln!()?;
    let (run, done, all) = (started.run_id, finished.cells.len(), plan.cells.len());
    // Said before the verdict, which covers only what ran.
    match (finished.status, &finished.reason) {
        (RunStatus::Interrupted, _) => {
            outln!("run {run} interrupted: {done} of {all} cells finished and stored")?
        }
        (RunStatus::Failed, why) => outln!(
            "run {run} failed: {done} of {all} cells finished and stored; {}",
            why.as_deref().unwrap_or("no reason stored")
        )?,
        _ => {}
    }
    out!("{}", loadlab_report::verdict_table(&finished.verdicts))?;
    let report = finished.report.display();
    match &finished.latest {
        suite::Latest::ThisRun(latest) => {
            outln!("\nreport: {} (this run's, also kept as {report})", latest.display())
        }
        suite::Latest::Earlier { path, shows } => outln!(
            "\nreport: {report} (partial; {} still shows {})",
            path.display(),
            shows.as_deref().unwrap_or("an earlier run's report")
        ),
        suite::Latest::None => outln!("\nreport: {report} (partial; no run here has finished)"),
    }
}

/// `run`'s progress lines.
struct Printer;

impl Events for Printer {
    fn stack_up(&mut self, cell: &Cell, up: &Instance) -> std::io::Result<()> {
        // An external target is not started: only its answers are checked.
        let what = match (cell.stack.external_target(), cell.stack.lab_stack()) {
            (Some(e), _) => format!("{} (external, {}) verified", cell.stack.label, e.url),
            (None, Some(lab)) if lab.host.is_some() => format!(
                "{} up on {} as {} at {} and verified",
                cell.stack.label,
                lab.host.as_deref().unwrap_or_default(),
                up.id,
                up.url
            ),
            (None, _) => format!("{} up and verified", cell.stack.label),
        };
        outln!(
            "{what} in {:.2} s ({} checks), repetition {}",
            up.elapsed.as_secs_f64(),
            up.checks,
            loadlab_report::format::repetition(cell.repetition)
        )
    }

    fn cell_done(&mut self, d: &CellDone<'_>) -> std::io::Result<()> {
        let flags: Vec<&str> = d.verdict.findings.iter().map(|f| f.flag.name()).collect();
        let store_ms = d.stored_in.as_secs_f64() * 1e3;
        outln!(
            "{}{:>10.1} req/s  p99 {:>9}  {}  [{}]{}",
            d.label,
            d.result.rps(),
            loadlab_report::format::micros(d.record.metrics[metric::P99_US]),
            if flags.is_empty() { "ok".to_string() } else { flags.join(",") },
            d.limited_by.limit.name(),
            if store_ms > 50.0 { format!("  (stored in {store_ms:.0} ms)") } else { String::new() }
        )
    }

    fn cell_interrupted(&mut self, label: &str) -> std::io::Result<()> {
        outln!("{label}interrupted")
    }
}
