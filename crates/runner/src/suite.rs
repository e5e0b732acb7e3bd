//! `run`: a suite's preparation and finish around the executor ([`crate::run_plan`]). Before
//! anything starts: the command line's overrides, every cell's connections against what the
//! client has, cells this build cannot load, the packages the stacks need. At the start: the
//! store, the lab, stale instances an earlier run left, runs whose process died, the run's
//! record with the machine's environment. At the end: the run's record closed, the report
//! written, and how the run ends decided from the stored cells' SLO gates. The command line
//! prints what these return; nothing here prints.

use std::path::{Path, PathBuf};
use std::time::SystemTime;

use loadlab_lab::Lab;
use loadlab_report::GroupVerdict;
use loadlab_store::{CellRecord, Environment, RunId, RunInfo, RunStatus, RunSummary, Store};
use loadlab_suite::{Plan, StackSource, Suite};

use crate::executor::{Events, Measure, RunContext, RunError};
use crate::slo::Slo;

/// What the command line changes of a suite.
#[derive(Debug, Clone, Default)]
pub struct Overrides {
    /// `--net PROFILE`: every lab stack behind this network profile (`loopback`: none).
    pub net: Option<String>,
    /// `--slo`: every workload's thresholds.
    pub slo: Option<Slo>,
    /// `--repetitions N`: of every cell, quick or not.
    pub repetitions: Option<u32>,
}

/// Why a suite did not run, or did not finish.
#[derive(Debug, thiserror::Error)]
pub enum SuiteError {
    /// The user's to fix: a bad suite file or flag, connections that do not fit, a cell this
    /// build cannot load.
    #[error("{0}")]
    Usage(String),
    /// Packages the suite's stacks need are not installed; the message names apt-get's command.
    #[error("{0}")]
    MissingPackages(String),
    #[error(transparent)]
    Lab(#[from] loadlab_lab::Error),
    #[error(transparent)]
    Store(#[from] loadlab_store::StoreError),
    #[error("{what} {}: {source}", path.display())]
    Io { what: &'static str, path: PathBuf, source: std::io::Error },
}

/// Reads the suite `name` (a built-in one's name or a file) with `overrides` applied; with it
/// the notes to tell (a `--net` that does not apply to an external target).
pub fn load(name: &str, overrides: &Overrides) -> Result<(Suite, Vec<String>), SuiteError> {
    let mut suite = loadlab_suite::load(name).map_err(|e| SuiteError::Usage(e.to_string()))?;
    let mut notes = Vec::new();
    if let Some(net) = &overrides.net {
        net.parse::<loadlab_lab::net::Profile>()
            .map_err(|e| SuiteError::Usage(format!("--net: {e}")))?;
        for s in &mut suite.stacks {
            match &mut s.source {
                StackSource::Lab(lab) => {
                    lab.knobs.net = Some(net.clone()).filter(|n| n != "loopback")
                }
                // The profile shapes the lab's own link; a server of the user's is reached as
                // it is.
                StackSource::External(e) => notes.push(format!(
                    "--net {net} does not apply to {} ({}): loadlab does not run it",
                    s.label, e.url
                )),
            }
        }
    }
    if let Some(slo) = &overrides.slo {
        for w in &mut suite.workloads {
            w.slo = Some(slo.clone());
        }
    }
    if let Some(n) = overrides.repetitions {
        if n == 0 {
            return Err(SuiteError::Usage("--repetitions: at least 1".into()));
        }
        suite.repetitions = n;
        suite.quick.repetitions = Some(n);
    }
    Ok((suite, notes))
}

/// Checks before any stack starts: every cell's connections against what the client has, and
/// that this build can load every cell.
pub fn check(plan: &Plan) -> Result<(), SuiteError> {
    let has = crate::capacity::Has::here(1);
    if let Err((cell, short)) = crate::capacity::check_plan(plan, &has, client_threads(plan)) {
        return Err(SuiteError::Usage(format!(
            "cell {cell}: {} connections do not fit: {} allows {}; lower the suite's \
             concurrency or raise the limit",
            loadlab_stats::format::count(short.asked as f64),
            short.figure,
            loadlab_stats::format::count(short.fits as f64)
        )));
    }
    match plan.cells.iter().find_map(crate::executor::unsupported) {
        Some(why) => Err(SuiteError::Usage(why)),
        None => Ok(()),
    }
}

/// The client's threads: one per CPU it is pinned to, else one per CPU it may use.
fn client_threads(plan: &Plan) -> usize {
    plan.client_cpus
        .as_ref()
        .map_or_else(|| loadlab_engine::sys::allowed_cpus().len(), |c| c.0.len())
}

/// Every package the suite's lab stacks need, checked before anything starts.
pub fn check_packages(suite: &Suite) -> Result<(), SuiteError> {
    let mut missing: Vec<&str> = Vec::new();
    for spec in suite.stacks.iter().filter_map(|s| s.lab_stack()) {
        for p in spec.stack.missing_packages(&spec.knobs) {
            if !missing.contains(&p) {
                missing.push(p);
            }
        }
    }
    if missing.is_empty() {
        return Ok(());
    }
    Err(SuiteError::MissingPackages(format!(
        "suite {} needs packages that are not installed: {} (install them with: apt-get \
         install -y {})",
        suite.name,
        missing.join(" "),
        missing.join(" ")
    )))
}

/// A run that has begun: its store and record, the lab, and what was found on the way.
#[derive(Debug)]
pub struct Started {
    pub store: Store,
    pub db: PathBuf,
    pub lab: Lab,
    pub run_id: RunId,
    /// Stack instances an earlier run left, now removed.
    pub stale: Vec<String>,
    /// Runs into this store whose process died, noticed now (and so only once).
    pub crashed: Vec<RunSummary>,
}

/// Begins the run of `plan` (from `suite`) into `db` (default `out/loadlab.db`): the output
/// directory, the store, the lab with stale instances cleaned, crashed runs noticed, and the
/// run's record with the machine's environment.
pub fn begin(
    suite: &Suite,
    plan: &Plan,
    out: &Path,
    db: Option<&Path>,
) -> Result<Started, SuiteError> {
    std::fs::create_dir_all(out).map_err(|source| SuiteError::Io {
        what: "creating",
        path: out.to_path_buf(),
        source,
    })?;
    let db = db.map_or_else(|| out.join("loadlab.db"), Path::to_path_buf);
    let mut store = Store::open(&db)?;
    let lab = Lab::from_env()?;
    let stale = lab.clean_stale()?;
    let packages: Vec<&str> = suite
        .stacks
        .iter()
        .filter_map(|s| s.lab_stack())
        .flat_map(|s| s.stack.packages(&s.knobs))
        .collect();
    let info = RunInfo {
        suite: plan.suite.clone(),
        started_at: SystemTime::now(),
        environment: environment(&packages),
    };
    let crashed = store.unnoticed_crashes()?;
    for c in &crashed {
        store.notice_crash(c.id, SystemTime::now())?;
    }
    let run_id = store.begin_run(&info)?;
    Ok(Started { store, db, lab, run_id, stale, crashed })
}

/// The machine and software the run measures on, as the store keeps it.
fn environment(packages: &[&str]) -> Environment {
    let env = loadlab_lab::environment::read(packages);
    Environment {
        hostname: env.hostname,
        kernel: env.kernel,
        cpu_model: env.cpu_model,
        cpu_count: env.cpu_count,
        loadlab_version: env!("CARGO_PKG_VERSION").to_string(),
        packages: env.packages,
    }
}

/// Runs the plan's cells into the started run ([`crate::run_plan`]).
pub fn execute(
    started: &mut Started,
    plan: &Plan,
    measure: &mut dyn Measure,
    events: &mut dyn Events,
) -> Result<(), RunError> {
    let mut cx = RunContext {
        store: &mut started.store,
        run_id: started.run_id,
        client_cpus: plan.client_cpus.as_ref(),
        threads: loadlab_engine::sys::allowed_cpus().len(),
    };
    crate::run_plan(plan, &started.lab, measure, events, &mut cx)
}

/// How a suite run ends, for the exit code.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Disposition {
    Finished,
    /// Ctrl-C stopped it (or an error did): its finished cells are stored.
    Interrupted,
    /// It finished, but a workload's cells broke their SLO.
    SloFailed,
}

/// A run's end: its record closed, its report written, its stored cells judged.
#[derive(Debug)]
pub struct Finished {
    pub status: RunStatus,
    /// The cells stored, which every verdict covers.
    pub cells: Vec<CellRecord>,
    /// Per workload and load: each stack's figures and the comparisons.
    pub verdicts: Vec<GroupVerdict>,
    pub disposition: Disposition,
}

/// Ends the run after [`execute`] returned `outcome` (`stopped`: the user asked it to stop):
/// closes its record, writes the HTML report to `report`, and judges the stored cells. The
/// SLO verdict is the stored cells' (each keeps the SLO its workload was judged by), so the
/// table, the exit code and every `loadlab report` of the run say the same.
pub fn finish(
    started: &mut Started,
    outcome: &Result<(), RunError>,
    stopped: bool,
    report: &Path,
) -> Result<Finished, SuiteError> {
    let status = match outcome {
        Ok(()) if !stopped => RunStatus::Finished,
        _ => RunStatus::Interrupted,
    };
    let store = &mut started.store;
    store.finish_run(started.run_id, status, SystemTime::now())?;
    write_report(store, started.run_id, report)?;
    let cells = store.cells(started.run_id)?;
    let verdicts = loadlab_report::verdicts(&cells);
    let gates = loadlab_report::gate::gates(&verdicts);
    let disposition = if status == RunStatus::Interrupted {
        Disposition::Interrupted
    } else if gates.iter().any(|g| !g.verdict.passed) {
        Disposition::SloFailed
    } else {
        Disposition::Finished
    };
    Ok(Finished { status, cells, verdicts, disposition })
}

/// Renders stored run `id` as the self-contained HTML report into `path`.
pub fn write_report(store: &Store, id: RunId, path: &Path) -> Result<(), SuiteError> {
    let run = store.run(id)?;
    let cells = store.cells(id)?;
    let configs = store.configs(id)?;
    let html = loadlab_report::render_html(&run, &cells, &configs);
    std::fs::write(path, html).map_err(|source| SuiteError::Io {
        what: "writing",
        path: path.to_path_buf(),
        source,
    })
}

#[cfg(test)]
mod tests {
    use super::{load, Overrides, SuiteError};

    #[test]
    fn overrides_apply_to_every_workload_and_stack() {
        let overrides = Overrides {
            net: Some("lan-100mbit".into()),
            slo: Some("p99<50ms".parse().unwrap()),
            repetitions: Some(3),
        };
        let (suite, notes) = load(loadlab_suite::DEFAULT, &overrides).unwrap();
        assert_eq!((suite.repetitions, suite.quick.repetitions), (3, Some(3)));
        assert!(suite.workloads.iter().all(|w| w.slo.is_some()));
        for stack in suite.stacks.iter().filter_map(|s| s.lab_stack()) {
            assert_eq!(stack.knobs.net.as_deref(), Some("lan-100mbit"));
        }
        // A built-in suite runs only the lab's stacks: nothing the profile cannot shape.
        assert!(notes.is_empty(), "{notes:?}");
    }

    #[test]
    fn bad_overrides_are_the_users_to_fix() {
        let bad_net = Overrides { net: Some("carrier-pigeon".into()), ..Overrides::default() };
        assert!(matches!(load(loadlab_suite::DEFAULT, &bad_net), Err(SuiteError::Usage(_))));
        let none = Overrides { repetitions: Some(0), ..Overrides::default() };
        let err = load(loadlab_suite::DEFAULT, &none).unwrap_err();
        assert_eq!(err.to_string(), "--repetitions: at least 1");
        assert!(matches!(load("no-such-suite", &Overrides::default()), Err(SuiteError::Usage(_))));
    }
}
