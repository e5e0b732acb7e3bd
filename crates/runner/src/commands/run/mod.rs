//! `run`: a suite's preparation and finish around the executor ([`crate::run_plan`]). Before
//! anything starts: the command line's overrides, every cell's connections against what the
//! client has, cells this build cannot load, the packages the stacks need. At the start: the
//! store, the lab, stale instances an earlier run left, runs whose process died, the run's
//! record with the machine's environment. At the end: the run's record closed, the report
//! written, and how the run ends decided from the stored cells' SLO gates. The command line
//! prints what these return; nothing here prints.

pub mod cell;
pub mod executor;
pub mod found;
pub mod lost;
pub mod stored;
pub mod verify;

#[cfg(test)]
mod external_tests;
#[cfg(test)]
mod visit_tests;

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};
use std::time::SystemTime;

use loadlab_lab::Lab;
use loadlab_report::GroupVerdict;
use loadlab_store::{CellRecord, Environment, RunId, RunInfo, RunStatus, RunSummary, Store};
use loadlab_suite::{Plan, StackSource, Suite};

use crate::commands::run::executor::{Events, Measure, RunContext, RunError};
use crate::hosts::session::{Placed, RemoteStacks};
use crate::judge::slo::Slo;

/// What the command line changes of a suite.
#[derive(Debug, Clone, Default)]
pub struct Overrides {
    /// `--net PROFILE`: every lab stack behind this network profile (`loopback`: none).
    pub net: Option<String>,
    /// `--slo`: every workload's thresholds.
    pub slo: Option<Slo>,
    /// `--repetitions N`: of every cell, quick or not.
    pub repetitions: Option<u32>,
    /// `--host ssh://...`: every lab stack on that lab host (the client stays here).
    pub host: Option<String>,
    /// `--profile`: which cells are profiled, whatever the suite says.
    pub profile: Option<loadlab_suite::Profiling>,
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
    /// On the way to a lab host (its class kept, as [`RunError::Remote`]).
    #[error(transparent)]
    Remote(loadlab_remote::Error),
    #[error(transparent)]
    Store(#[from] loadlab_store::StoreError),
    /// The OS error is in the text and not a cause of its own, so that an error chain says
    /// it once.
    #[error("{what} {}: {error}", path.display())]
    Io { what: &'static str, path: PathBuf, error: std::io::Error },
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
    if let Some(host) = &overrides.host {
        let host =
            host.parse::<loadlab_remote::Host>().map_err(|e| SuiteError::Usage(e.to_string()))?;
        for lab in suite.stacks.iter_mut().filter_map(|s| match &mut s.source {
            StackSource::Lab(lab) => Some(lab),
            StackSource::External(_) => None,
        }) {
            lab.host = Some(host.to_string());
        }
    }
    if let Some(profile) = overrides.profile {
        suite.profile = profile;
    }
    if suite.profile != loadlab_suite::Profiling::None {
        // PHP's own stacks need the PHP tiers set up for them when the stack starts, here or
        // on its lab host.
        for lab in suite.stacks.iter_mut().filter_map(|s| match &mut s.source {
            StackSource::Lab(lab) if lab.stack.has_php() => Some(lab),
            _ => None,
        }) {
            lab.knobs.excimer = loadlab_lab::knobs::OnOff::On;
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
    let has = crate::judge::capacity::Has::here(1);
    if let Err((cell, short)) = crate::judge::capacity::check_plan(plan, &has, client_threads(plan))
    {
        return Err(SuiteError::Usage(format!(
            "cell {cell}: {} connections do not fit: {} allows {}; lower the suite's \
             concurrency or raise the limit",
            loadlab_stats::format::count(short.asked as f64),
            short.figure,
            loadlab_stats::format::count(short.fits as f64)
        )));
    }
    match plan.cells.iter().find_map(crate::commands::run::executor::unsupported) {
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

/// Every package the suite's lab stacks here need, checked before anything starts (a lab
/// host's loadlab says what it lacks when its stack starts).
pub fn check_packages(suite: &Suite) -> Result<(), SuiteError> {
    let mut missing: Vec<&str> = Vec::new();
    let here: Vec<_> =
        suite.stacks.iter().filter_map(|s| s.lab_stack()).filter(|s| s.host.is_none()).collect();
    let perf = loadlab_lab::programs::PERF;
    if suite.profile != loadlab_suite::Profiling::None && !here.is_empty() && !perf.installed() {
        missing.push(perf.package);
    }
    for spec in here {
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

/// Every package the suite's stacks on lab hosts need, checked on each host before anything
/// starts (that host's loadlab looks for them, as [`check_packages`] does here; perf too
/// when profiling, which records there); `remote` finds (or copies) the binary there, once.
pub fn check_remote_packages(suite: &Suite, remote: &RemoteStacks) -> Result<(), SuiteError> {
    let mut hosts: BTreeMap<&str, Vec<loadlab_lab::programs::Need>> = BTreeMap::new();
    let profiled = suite.profile != loadlab_suite::Profiling::None;
    for spec in suite.stacks.iter().filter_map(|s| s.lab_stack()) {
        if let Some(host) = spec.host.as_deref() {
            let needs = hosts.entry(host).or_default();
            if profiled && needs.is_empty() {
                needs.push(loadlab_lab::programs::PERF);
            }
            needs.extend(spec.stack.needs(&spec.knobs));
        }
    }
    for (host, needs) in hosts {
        let missing = remote.missing(host, &needs).map_err(|e| match e {
            crate::commands::run::executor::StackError::Lab(e) => SuiteError::Lab(e),
            crate::commands::run::executor::StackError::Remote(e) => SuiteError::Remote(e),
        })?;
        if !missing.is_empty() {
            let list = missing.join(" ");
            return Err(SuiteError::MissingPackages(format!(
                "suite {} needs packages that {host} lacks: {list} (install them there with: \
                 apt-get install -y {list}; or run with --install-packages)",
                suite.name
            )));
        }
    }
    Ok(())
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
    std::fs::create_dir_all(out).map_err(|error| SuiteError::Io {
        what: "creating",
        path: out.to_path_buf(),
        error,
    })?;
    let db = db.map_or_else(|| out.join("loadlab.db"), Path::to_path_buf);
    let mut store = Store::open(&db)?;
    let lab = Lab::from_env()?;
    let stale = lab.clean_stale()?;
    // This machine's packages for its own stacks; a lab host's are stored with it.
    let packages: Vec<&str> = suite
        .stacks
        .iter()
        .filter_map(|s| s.lab_stack())
        .filter(|s| s.host.is_none())
        .flat_map(|s| s.stack.packages(&s.knobs))
        .collect();
    let info = RunInfo {
        suite: plan.suite.clone(),
        started_at: SystemTime::now(),
        environment: environment(&packages),
    };
    let crashed = store.unnoticed_crashes()?;
    for c in &crashed {
        store.notice_crash(c.run.id, SystemTime::now())?;
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

/// The stacks on lab hosts, for [`execute`]: `note` hears what is said on the way (a binary
/// copied there); each host's environment records the versions of the suite's packages.
pub fn remote_stacks(suite: &Suite, note: Box<dyn Fn(&str) + Send + Sync>) -> RemoteStacks {
    let packages = suite
        .stacks
        .iter()
        .filter_map(|s| s.lab_stack())
        .filter(|s| s.host.is_some())
        .flat_map(|s| s.stack.packages(&s.knobs))
        .map(str::to_string)
        .collect();
    RemoteStacks::new(note, packages)
}

/// Runs the plan's cells into the started run ([`crate::run_plan`]), each stack here or on
/// its lab host through `remote`.
pub fn execute(
    started: &mut Started,
    plan: &Plan,
    remote: &RemoteStacks,
    measure: &mut dyn Measure,
    events: &mut dyn Events,
) -> Result<(), RunError> {
    let mut cx = RunContext {
        store: &mut started.store,
        run_id: started.run_id,
        client_cpus: plan.client_cpus.as_ref(),
        threads: loadlab_engine::sys::allowed_cpus().len(),
    };
    let stacks = Placed { lab: &started.lab, remote };
    crate::run_plan(plan, &stacks, measure, events, &mut cx)
}

/// How a suite run ends, for the exit code.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Disposition {
    Finished,
    /// Ctrl-C stopped it: its finished cells are stored.
    Interrupted,
    /// An error stopped it (its exit code is the error's): its finished cells are stored.
    Failed,
    /// It finished, but a workload's cells broke their SLO.
    SloFailed,
}

/// What `OUT/report.html` shows once a run has ended: the latest finished run's report.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Latest {
    /// This run finished: `report.html` (the path) now points at its report.
    ThisRun(PathBuf),
    /// This run did not finish: `report.html` (the path) still shows an earlier run's report,
    /// `shows` names the file it points at (`None` for a file an older loadlab wrote).
    Earlier { path: PathBuf, shows: Option<String> },
    /// No run into this directory has finished yet: there is no `report.html`.
    None,
}

/// A run's end: its record closed, its report written, its stored cells judged.
#[derive(Debug)]
pub struct Finished {
    pub status: RunStatus,
    /// Why a failed run stopped, as stored with it.
    pub reason: Option<String>,
    /// The cells stored, which every verdict covers.
    pub cells: Vec<CellRecord>,
    /// Per workload and load: each stack's figures and the comparisons.
    pub verdicts: Vec<GroupVerdict>,
    pub disposition: Disposition,
    /// This run's own report, `OUT/report-RUN.html`.
    pub report: PathBuf,
    pub latest: Latest,
    /// A failed run: what could not be written after it failed either (its record closed, its
    /// report), each once. The failure's reason is the run's account, never hidden by these
    /// (a full disk that lost a cell cannot take the report either).
    pub unwritten: Vec<String>,
    /// Whether `report` was written (only a failed run goes on without it).
    pub report_written: bool,
}

/// Ends the run after [`execute`] returned `outcome` (`stopped`: the user asked it to stop):
/// closes its record (`interrupted` for Ctrl-C alone; `failed`, with the error, when an error
/// stopped it), writes its HTML report into `out` as `report-RUN.html` and, when it finished,
/// points `report.html` at it (so a partial run never hides the last full report), and judges
/// the stored cells. The SLO verdict is the stored cells' (each keeps the SLO its workload was
/// judged by), so the table, the exit code and every `loadlab report` of the run say the same.
pub fn finish(
    started: &mut Started,
    outcome: &Result<(), RunError>,
    stopped: bool,
    out: &Path,
) -> Result<Finished, SuiteError> {
    let (status, reason) = match outcome {
        _ if stopped => (RunStatus::Interrupted, None),
        Ok(()) => (RunStatus::Finished, None),
        Err(e) => (RunStatus::Failed, Some(failure_reason(e, started))),
    };
    let store = &mut started.store;
    let report = out.join(format!("report-{}.html", started.run_id));
    let (mut unwritten, mut report_written) = (Vec::new(), true);
    match &reason {
        Some(why) => {
            // Said beside the reason rather than in its place.
            let mut either = |what: &str, e: SuiteError| {
                unwritten.push(format!("{what} could not be written either: {}", with_cause(&e)))
            };
            if let Err(e) = store.fail_run(started.run_id, why, SystemTime::now()) {
                either("the run's record", e.into());
            }
            if let Err(e) = write_report(store, started.run_id, &report) {
                report_written = false;
                either("its report", e);
            }
        }
        None => {
            store.finish_run(started.run_id, status, SystemTime::now())?;
            write_report(store, started.run_id, &report)?;
        }
    }
    let latest = if status == RunStatus::Finished {
        point_latest(out, &report)?;
        Latest::ThisRun(out.join(LATEST))
    } else {
        latest_now(out)
    };
    let cells = store.cells(started.run_id)?;
    let verdicts = loadlab_report::verdicts(&cells);
    let gates = loadlab_report::gate::gates(&verdicts);
    let disposition = match status {
        RunStatus::Interrupted => Disposition::Interrupted,
        RunStatus::Failed => Disposition::Failed,
        _ if gates.iter().any(|g| !g.verdict.passed) => Disposition::SloFailed,
        _ => Disposition::Finished,
    };
    Ok(Finished {
        status,
        reason,
        cells,
        verdicts,
        disposition,
        report,
        latest,
        unwritten,
        report_written,
    })
}

/// Why a run failed, as it is stored and told: the error and its direct cause, once (a
/// cause's text often ends its parent's already; the causes below it, SQLite's code table,
/// say the same again). A store that failed is named; one that could not keep a cell (a full
/// disk) names that cell too (the cells before it are whole, and counted beside the reason).
fn failure_reason(e: &RunError, started: &Started) -> String {
    let store = started.db.display();
    match e {
        RunError::NotStored { cell, source } => {
            format!("the result store {store} could not keep {cell}: {}", with_cause(source))
        }
        RunError::Store(source) => format!("the result store {store}: {}", with_cause(source)),
        other => with_cause(other),
    }
}

/// `e` and its direct cause in one line, the cause left out when `e` already ends with it.
fn with_cause(e: &dyn std::error::Error) -> String {
    let why = e.to_string();
    match e.source().map(|c| c.to_string()) {
        Some(cause) if !why.ends_with(&cause) => format!("{why}: {cause}"),
        _ => why,
    }
}

/// The name, in a run's output directory, of the latest finished run's report.
const LATEST: &str = "report.html";

/// Points `OUT/report.html` at `report` (a relative symbolic link, so the directory can move),
/// replacing what was there in one rename: a reader sees the old report or the new one.
fn point_latest(out: &Path, report: &Path) -> Result<(), SuiteError> {
    let link = out.join(LATEST);
    let tmp = out.join(format!(".{LATEST}.{}", std::process::id()));
    let io = |what, path: &Path| {
        let path = path.to_path_buf();
        move |error| SuiteError::Io { what, path, error }
    };
    let _ = std::fs::remove_file(&tmp);
    let target = report.file_name().map(PathBuf::from).unwrap_or_else(|| report.to_path_buf());
    std::os::unix::fs::symlink(&target, &tmp).map_err(io("linking", &tmp))?;
    std::fs::rename(&tmp, &link).map_err(io("replacing", &link))
}

/// What `OUT/report.html` shows, for a run that did not move it.
fn latest_now(out: &Path) -> Latest {
    let path = out.join(LATEST);
    if !path.exists() {
        return Latest::None;
    }
    let shows = std::fs::read_link(&path).ok().map(|target| target.to_string_lossy().into_owned());
    Latest::Earlier { path, shows }
}

/// Renders stored run `id` as the self-contained HTML report into `path`.
pub fn write_report(store: &Store, id: RunId, path: &Path) -> Result<(), SuiteError> {
    let run = store.run(id)?;
    let cells = store.cells(id)?;
    let configs = store.configs(id)?;
    let profiles = store.run_profiles(id)?;
    let html = loadlab_report::render_html(&run, &cells, &configs, &profiles);
    std::fs::write(path, html).map_err(|error| SuiteError::Io {
        what: "writing",
        path: path.to_path_buf(),
        error,
    })
}

#[cfg(test)]
mod tests {
    use super::{finish, load, Latest, Overrides, Started, SuiteError};
    use crate::commands::run::executor::RunError;
    use loadlab_store::{RunInfo, RunStatus, Store};

    /// Run `n` of an in-memory store (the runs before it begun too), with a lab of its own
    /// (nothing is started).
    fn started(state: &std::path::Path, n: usize) -> Started {
        let mut store = Store::open_in_memory().unwrap();
        let info = RunInfo {
            suite: "external".into(),
            started_at: std::time::SystemTime::now(),
            environment: Default::default(),
        };
        let mut run_id = store.begin_run(&info).unwrap();
        for _ in 1..n {
            run_id = store.begin_run(&info).unwrap();
        }
        let lab = loadlab_lab::Lab::new(loadlab_lab::StateDir::at(state));
        Started { store, db: ":memory:".into(), lab, run_id, stale: vec![], crashed: vec![] }
    }

    /// A run that a failed verify stopped is `failed` with the error as its reason, not
    /// `interrupted` (Ctrl-C's status); each run has its own `report-RUN.html`, and
    /// `report.html` points at the latest finished run's alone, so an empty report never
    /// hides the last full one.
    #[test]
    fn a_failed_run_is_stored_as_failed_and_report_html_keeps_the_latest_finished_run() {
        let dir = tempfile::tempdir().unwrap();
        let out = dir.path().join("out");
        std::fs::create_dir(&out).unwrap();
        let verify = RunError::Verify {
            stack: "mine".into(),
            workload: "hello".into(),
            url: "http://127.0.0.1:9/".into(),
            reason: "connection refused".into(),
        };
        let why = verify.to_string();

        let mut failed = started(dir.path(), 1);
        let end = finish(&mut failed, &Err(verify), false, &out).unwrap();
        assert_eq!((end.status, end.reason.as_deref()), (RunStatus::Failed, Some(why.as_str())));
        let run = failed.store.run(failed.run_id).unwrap();
        assert_eq!((run.status, run.reason.as_deref()), (RunStatus::Failed, Some(why.as_str())));
        assert_eq!(end.report, out.join("report-1.html"));
        assert!(end.report.is_file());
        assert_eq!(end.latest, Latest::None);
        assert!(!out.join("report.html").exists(), "no finished run yet");

        let mut done = started(dir.path(), 2);
        let end = finish(&mut done, &Ok(()), false, &out).unwrap();
        assert_eq!((end.status, end.reason), (RunStatus::Finished, None));
        assert_eq!(end.latest, Latest::ThisRun(out.join("report.html")));
        let page = |p: &std::path::Path| std::fs::read_to_string(p).unwrap();
        assert_eq!(page(&out.join("report.html")), page(&out.join("report-2.html")));

        // Ctrl-C: interrupted, its partial report beside, report.html kept on run 2.
        let mut stopped = started(dir.path(), 3);
        let end = finish(&mut stopped, &Ok(()), true, &out).unwrap();
        assert_eq!((end.status, end.reason), (RunStatus::Interrupted, None));
        assert!(out.join("report-3.html").is_file());
        let kept =
            Latest::Earlier { path: out.join("report.html"), shows: Some("report-2.html".into()) };
        assert_eq!(end.latest, kept);
        assert_eq!(page(&out.join("report.html")), page(&out.join("report-2.html")));
    }

    /// The outcome of a run whose store could not keep cell 3: SQLite's error of a full disk.
    fn cell_lost() -> Result<(), RunError> {
        let full = rusqlite::Error::SqliteFailure(
            rusqlite::ffi::Error::new(rusqlite::ffi::SQLITE_FULL),
            // SQLite's own text for the code, as a full disk gives it.
            Some("database or disk is full".into()),
        );
        let source = loadlab_store::StoreError::Sqlite(full);
        let cell = "cell 3 (nginx hello.txt closed, 50 conn)".to_string();
        Err(RunError::NotStored { cell, source })
    }

    /// A store that cannot keep a cell (SQLite's "database or disk is full") fails the run
    /// with SQLite's reason, the store's name and the cell lost: never "SQLite failed" alone.
    #[test]
    fn a_store_that_cannot_keep_a_cell_is_named_with_the_cell_and_the_reason() {
        let dir = tempfile::tempdir().unwrap();
        let out = dir.path().join("out");
        std::fs::create_dir(&out).unwrap();
        let mut failed = started(dir.path(), 1);
        let end = finish(&mut failed, &cell_lost(), false, &out).unwrap();
        let said = "the result store :memory: could not keep cell 3 (nginx hello.txt closed, 50 \
                    conn): SQLite failed: database or disk is full";
        assert_eq!(end.reason.as_deref(), Some(said));
        let run = failed.store.run(failed.run_id).unwrap();
        assert_eq!(run.reason.as_deref(), Some(said));
    }

    /// A full disk that lost a cell cannot take the report either: the run's reason (the
    /// store, the cell lost) stays its account, and the report's failure is said beside it
    /// once, its OS error once.
    #[test]
    fn a_report_that_cannot_be_written_after_a_lost_cell_leaves_the_reason_in_place() {
        let dir = tempfile::tempdir().unwrap();
        let out = dir.path().join("out");
        std::fs::create_dir(&out).unwrap();
        // Writing through the link is writing to a full device: ENOSPC, as a full disk gives.
        std::os::unix::fs::symlink("/dev/full", out.join("report-1.html")).unwrap();
        let mut failed = started(dir.path(), 1);
        let end = finish(&mut failed, &cell_lost(), false, &out).expect("the run is ended");
        let reason = end.reason.as_deref().unwrap_or_default();
        assert!(reason.starts_with("the result store :memory: could not keep cell 3"), "{reason}");
        assert!(!end.report_written);
        let [line] = end.unwritten.as_slice() else { panic!("{:?}", end.unwritten) };
        let path = out.join("report-1.html");
        assert!(
            line.starts_with(&format!(
                "its report could not be written either: writing {}",
                path.display()
            )),
            "{line}"
        );
        assert_eq!(line.matches("No space left on device").count(), 1, "{line}");
    }

    #[test]
    fn overrides_apply_to_every_workload_and_stack() {
        let overrides = Overrides {
            net: Some("lan-100mbit".into()),
            slo: Some("p99<50ms".parse().unwrap()),
            repetitions: Some(3),
            host: None,
            profile: Some(loadlab_suite::Profiling::Knee),
        };
        let (suite, notes) = load(loadlab_suite::DEFAULT, &overrides).unwrap();
        assert_eq!((suite.repetitions, suite.quick.repetitions), (3, Some(3)));
        assert_eq!(suite.profile, loadlab_suite::Profiling::Knee);
        assert!(suite.workloads.iter().all(|w| w.slo.is_some()));
        for stack in suite.stacks.iter().filter_map(|s| s.lab_stack()) {
            assert_eq!(stack.knobs.net.as_deref(), Some("lan-100mbit"));
        }
        // A built-in suite runs only the lab's stacks: nothing the profile cannot shape.
        assert!(notes.is_empty(), "{notes:?}");
    }

    /// A profiled run needs perf: without it the run stops before anything starts, naming
    /// linux-perf with the stacks' packages (exit 4); a run not profiled does not ask for it.
    #[test]
    fn a_profiled_run_without_perf_names_linux_perf() {
        // nextest runs each test in a process of its own: the variable is this test's.
        std::env::set_var("LOADLAB_SEARCH_PATH", "/nonexistent-loadlab-test-dir");
        let profiled =
            Overrides { profile: Some(loadlab_suite::Profiling::All), ..Overrides::default() };
        let (suite, _) = load(loadlab_suite::DEFAULT, &profiled).unwrap();
        let err = super::check_packages(&suite).unwrap_err();
        assert!(matches!(err, SuiteError::MissingPackages(_)), "{err}");
        assert!(err.to_string().contains(" linux-perf"), "{err}");
        let (plain, _) = load(loadlab_suite::DEFAULT, &Overrides::default()).unwrap();
        assert!(!super::check_packages(&plain).unwrap_err().to_string().contains("linux-perf"));
    }

    /// A profiled run on a lab host readies the PHP tiers there for PHP's own stacks, as
    /// here: the host's stacks are profiled where they run.
    #[test]
    fn a_profiled_run_on_a_lab_host_readies_its_php_tiers_there() {
        let on_host = Overrides {
            host: Some("ssh://root@b".into()),
            profile: Some(loadlab_suite::Profiling::All),
            ..Overrides::default()
        };
        let (suite, _) = load("php-modphp-vs-fastcgi", &on_host).unwrap();
        let stacks: Vec<_> = suite.stacks.iter().filter_map(|s| s.lab_stack()).collect();
        assert!(!stacks.is_empty());
        for stack in stacks {
            assert_eq!(stack.host.as_deref(), Some("ssh://root@b"));
            assert!(stack.knobs.excimer.is_on(), "{}", stack.stack.name);
        }
    }

    #[test]
    fn bad_overrides_are_the_users_to_fix() {
        let bad_net = Overrides { net: Some("carrier-pigeon".into()), ..Overrides::default() };
        assert!(matches!(load(loadlab_suite::DEFAULT, &bad_net), Err(SuiteError::Usage(_))));
        let none = Overrides { repetitions: Some(0), ..Overrides::default() };
        let err = load(loadlab_suite::DEFAULT, &none).unwrap_err();
        assert_eq!(err.to_string(), "--repetitions: at least 1");
        assert!(matches!(load("no-such-suite", &Overrides::default()), Err(SuiteError::Usage(_))));
        let bad_host = Overrides { host: Some("lab2".into()), ..Overrides::default() };
        let err = load(loadlab_suite::DEFAULT, &bad_host).unwrap_err();
        assert!(err.to_string().starts_with("--host \"lab2\": not an ssh:// URL"), "{err}");
    }

    /// `run --host` puts every lab stack of the suite on that host, and the plan
    /// has the cells it has here.
    #[test]
    fn host_puts_every_lab_stack_there_and_the_plan_keeps_its_cells() {
        let name = "php-modphp-vs-fastcgi";
        let (here, _) = load(name, &Overrides::default()).unwrap();
        let host = Overrides { host: Some("ssh://root@10.215.0.2".into()), ..Overrides::default() };
        let (there, _) = load(name, &host).unwrap();
        assert!(here.stacks.iter().filter_map(|s| s.lab_stack()).all(|s| s.host.is_none()));
        for stack in there.stacks.iter().filter_map(|s| s.lab_stack()) {
            assert_eq!(stack.host.as_deref(), Some("ssh://root@10.215.0.2"));
        }
        let cells = |s| loadlab_suite::plan(s, true).cells.len();
        assert_eq!(cells(&here), cells(&there));
    }
}
