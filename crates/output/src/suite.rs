//! `loadlab run`'s lines: the plan, its cells (`--dry-run`), where the run goes, each stack
//! and cell as they finish, and the run's end with its verdict table and reports.

use std::io::{self, Write};

use loadlab_engine::visits::ViewPlan;
use loadlab_report::counted::{Counted, Measured};
use loadlab_report::Measure;
use loadlab_runner::commands::run::executor::{CellDone, Instance};
use loadlab_runner::{commands, Events};
use loadlab_store::RunStatus;
use loadlab_suite::{Cell, Plan};

/// The plan's first lines: its size and duration, and what it skips.
pub fn write_plan(out: &mut dyn Write, plan: &Plan) -> io::Result<()> {
    let estimate = plan.estimate();
    let plural = |n: usize| if n == 1 { "" } else { "s" };
    writeln!(
        out,
        "suite {}{}: {} cell{} on {}, about {:.1} min",
        plan.suite,
        if plan.quick { " (quick)" } else { "" },
        estimate.cells,
        plural(estimate.cells),
        estimate.places(),
        estimate.total.as_secs_f64() / 60.0
    )?;
    for s in &plan.skipped {
        writeln!(out, "  skipped: {} on {}: {}", s.workload, s.stack, s.reason)?;
    }
    Ok(())
}

/// `--dry-run`: every cell of the plan, in the order it would run.
pub fn write_cells(out: &mut dyn Write, plan: &Plan) -> io::Result<()> {
    for cell in &plan.cells {
        writeln!(
            out,
            "  {:>4} rep {} {:<28} {:<14} {}",
            cell.ordinal,
            loadlab_report::format::repetition(cell.repetition),
            cell.stack.label,
            cell.workload.name(),
            loadlab_runner::commands::run::executor::load_label(cell)
        )?;
    }
    Ok(())
}

/// What beginning the run found (on `err`: stale instances removed, crashed runs) and where
/// it goes.
pub fn write_started(
    out: &mut dyn Write,
    err: &mut dyn Write,
    started: &commands::run::Started,
) -> io::Result<()> {
    for id in &started.stale {
        writeln!(err, "loadlab: removed stale stack instance {id} left by an earlier run")?;
    }
    // Said once: a run whose process died is noticed by the next run into its store.
    for crashed in &started.crashed {
        writeln!(
            err,
            "loadlab: run {} ({}) did not finish: the process that ran it is gone (killed, or the \
             machine restarted); its {} finished cells are kept (loadlab report {} --db {})",
            crashed.run.id,
            crashed.run.suite,
            crashed.cells,
            crashed.run.id,
            started.db.display()
        )?;
    }
    writeln!(out, "run {} into {}", started.run_id, started.db.display())
}

/// The run's end: how much of it ran, the verdict table, the reports' paths.
pub fn write_end(
    out: &mut dyn Write,
    started: &commands::run::Started,
    plan: &Plan,
    finished: &commands::run::Finished,
) -> std::io::Result<()> {
    writeln!(out)?;
    let (run, done, all) = (started.run_id, finished.cells.len(), plan.cells.len());
    // Said before the verdict, which covers only what ran.
    match (finished.status, &finished.reason) {
        (RunStatus::Interrupted, _) => {
            writeln!(out, "run {run} interrupted: {done} of {all} cells finished and stored")?
        }
        // The reason is the error's, said once as stderr's last line (and stored with the run).
        (RunStatus::Failed, _) => writeln!(
            out,
            "run {run} failed: {done} of {all} cells finished and stored; the error that \
             stopped it is on stderr"
        )?,
        _ => {}
    }
    for line in &finished.unwritten {
        writeln!(out, "  and {line}")?;
    }
    write!(out, "{}", loadlab_report::verdict_table(&finished.verdicts))?;
    let report = finished.report.display();
    if !finished.report_written {
        return writeln!(out, "\nreport: none written");
    }
    match &finished.latest {
        commands::run::Latest::ThisRun(latest) => {
            writeln!(out, "\nreport: {} (this run's, also kept as {report})", latest.display())
        }
        commands::run::Latest::Earlier { path, shows } => writeln!(
            out,
            "\nreport: {report} (partial; {} still shows {})",
            path.display(),
            shows.as_deref().unwrap_or("an earlier run's report")
        ),
        commands::run::Latest::None => {
            writeln!(out, "\nreport: {report} (partial; no run here has finished)")
        }
    }
}

/// `run`'s progress lines, as its cells go.
pub struct Progress<W: Write>(pub W);

impl<W: Write> Events for Progress<W> {
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
        writeln!(
            self.0,
            "{what} in {:.2} s ({} checks), repetition {}",
            up.elapsed.as_secs_f64(),
            up.checks,
            loadlab_report::format::repetition(cell.repetition)
        )
    }

    fn cell_done(&mut self, d: &CellDone<'_>) -> std::io::Result<()> {
        let flags: Vec<&str> = d.verdict.findings.iter().map(|f| f.flag.name()).collect();
        let store_ms = d.stored_in.as_secs_f64() * 1e3;
        writeln!(
            self.0,
            "{}{}  {}  [{}]{}",
            d.label,
            cell_figures(d.record),
            if flags.is_empty() { "ok".to_string() } else { flags.join(",") },
            d.limited_by.limit.name(),
            if store_ms > 50.0 { format!("  (stored in {store_ms:.0} ms)") } else { String::new() }
        )
    }

    fn views_found(&mut self, workload: &str, plan: &ViewPlan) -> std::io::Result<()> {
        writeln!(self.0, "  {workload}: {}", loadlab_runner::commands::bench::views::fetches(plan))
    }

    fn cell_interrupted(&mut self, label: &str) -> std::io::Result<()> {
        writeln!(self.0, "{label}interrupted")
    }

    fn profile_refused(&mut self, why: &str) -> std::io::Result<()> {
        writeln!(
            self.0,
            "  profile: perf could not record ({why}); the run goes on without profiles"
        )
    }
}

/// A finished cell's rate and tail as its workload counts them (the report's [`Counted`]):
/// `   1234.5 req/s  p99     1.2ms`, `      2.8 views/s  load p99  41.3ms`, `      1.5 visits/s
/// visit p99  2.90 s`.
fn cell_figures(record: &loadlab_store::CellRecord) -> String {
    let counted = Counted::of(record);
    let rate = counted.value(Measure::Rps, record).unwrap_or(f64::NAN);
    let p99 =
        counted.value(Measure::P99, record).map_or("—".into(), loadlab_report::format::micros);
    format!("{rate:>10.1} {}  {} {p99:>9}", counted.rate_unit(), counted.name(Measure::P99))
}

#[cfg(test)]
mod tests {
    use loadlab_store::{metric, CellRecord, LoadModel, LoadSpec};

    use super::cell_figures;

    fn record(metrics: &[(&str, f64)]) -> CellRecord {
        CellRecord::for_test("wp", "w", LoadSpec::new(LoadModel::Open)).with_metrics(metrics)
    }

    #[test]
    fn a_cells_progress_line_says_what_its_workload_counts() {
        let requests = [(metric::RPS, 60.0), (metric::P99_US, 9_000.0)];
        assert_eq!(cell_figures(&record(&requests)), "      60.0 req/s  p99   9.00 ms");
        let mut views = requests.to_vec();
        views.extend([(metric::VIEWS_RPS, 2.8), (metric::VIEW_P99_US, 41_300.0)]);
        assert_eq!(cell_figures(&record(&views)), "       2.8 views/s  load p99   41.3 ms");
        let mut visits = requests.to_vec();
        visits.push((metric::VISITS_RPS, 1.5));
        // No visit completed: no duration.
        assert_eq!(cell_figures(&record(&visits)), "       1.5 visits/s  visit p99         —");
    }
}
