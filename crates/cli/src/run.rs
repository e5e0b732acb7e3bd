//! `loadlab run`: a suite's plan, cell by cell. Each stack instance comes up, is verified, runs
//! its cells while the sampler watches its tiers, and goes down; each finished cell is stored
//! at once (an interrupted run keeps what it measured); at the end the report is written and
//! the verdict printed.

use std::path::{Path, PathBuf};
use std::time::SystemTime;

use crate::exit::{Failure, INTERRUPTED, OK, SLO_FAILED};
use crate::load;
use crate::stack::lab_failure;
use anyhow::Context;
use clap::Args;
use loadlab_lab::Lab;
use loadlab_runner::executor::{CellDone, Instance};
use loadlab_runner::{run_plan, Events, Measure, RunContext, RunError};
use loadlab_store::{metric, Environment, RunInfo, RunStatus, Store};
use loadlab_suite::{Cell, StackSource};

#[derive(Debug, Args)]
pub struct RunArgs {
    /// A built-in suite's name, or a suite file (TOML; see docs/suites.md).
    #[arg(long = "suite", default_value = loadlab_suite::DEFAULT)]
    pub suite: String,
    /// Scale counts and durations down as the suite's [quick] section says.
    #[arg(long = "quick")]
    pub quick: bool,
    /// Directory for report.html and, unless --db says otherwise, loadlab.db.
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
    /// Run every stack behind this network profile (lan-100mbit, lan-1gbit, rate=RATE),
    /// whatever the suite says: seeds 000 and 001 measured across a 100 Mbit/s switch.
    #[arg(long = "net", value_name = "PROFILE")]
    pub net: Option<String>,
    /// Thresholds every workload's cells must hold over their repetitions ('p99<50ms,
    /// errors<0.1%,rps>1000'), instead of the suite's `slo`; exit 99 when one fails.
    #[arg(long = "slo", value_name = "THRESHOLDS", value_parser = load::parse_slo)]
    pub slo: Option<loadlab_runner::slo::Slo>,
}

pub fn run(args: RunArgs) -> anyhow::Result<u8> {
    let suite = loadlab_suite::load(&args.suite)
        .map_err(|e| anyhow::Error::new(Failure::Usage(e.to_string())))?;
    let mut suite = suite;
    if let Some(net) = &args.net {
        net.parse::<loadlab_lab::net::Profile>()
            .map_err(|e| anyhow::Error::new(Failure::Usage(format!("--net: {e}"))))?;
        for s in &mut suite.stacks {
            match &mut s.source {
                StackSource::Lab(lab) => {
                    lab.knobs.net = Some(net.clone()).filter(|n| n != "loopback")
                }
                // The profile shapes the lab's own link; a server of the user's is reached as
                // it is.
                StackSource::External(e) => {
                    eprintln!(
                        "loadlab: --net {net} does not apply to {} ({}): loadlab does not run it",
                        s.label, e.url
                    )
                }
            }
        }
    }
    if let Some(slo) = &args.slo {
        for w in &mut suite.workloads {
            w.slo = Some(slo.clone());
        }
    }
    if let Some(n) = args.repetitions {
        if n == 0 {
            return Err(Failure::Usage("--repetitions: at least 1".into()).into());
        }
        suite.repetitions = n;
        suite.quick.repetitions = Some(n);
    }
    let plan = loadlab_suite::plan(&suite, args.quick);
    let estimate = plan.estimate();
    outln!(
        "suite {}{}: {} cell{} on {} stack instance{}, about {:.1} min",
        plan.suite,
        if plan.quick { " (quick)" } else { "" },
        estimate.cells,
        if estimate.cells == 1 { "" } else { "s" },
        estimate.stack_ups,
        if estimate.stack_ups == 1 { "" } else { "s" },
        estimate.total.as_secs_f64() / 60.0
    )?;
    for s in &plan.skipped {
        outln!("  skipped: {} on {}: {}", s.workload, s.stack, s.reason)?;
    }
    // Every cell's connections against what the client has, before any stack starts.
    let has = loadlab_runner::capacity::Has::here(1);
    let threads = plan
        .client_cpus
        .as_ref()
        .map_or_else(|| loadlab_engine::sys::allowed_cpus().len(), |c| c.0.len());
    if let Err((cell, short)) = loadlab_runner::capacity::check_plan(&plan, &has, threads) {
        return Err(Failure::Usage(format!(
            "cell {cell}: {} connections do not fit: {} allows {}; lower the suite's \
             concurrency or raise the limit",
            loadlab_stats::format::count(short.asked as f64),
            short.figure,
            loadlab_stats::format::count(short.fits as f64)
        ))
        .into());
    }
    if let Some(why) = plan.cells.iter().find_map(loadlab_runner::executor::unsupported) {
        return Err(Failure::Usage(why).into());
    }
    // Said before anything runs: a plan that cannot answer its question is no surprise later.
    if let Some(line) = loadlab_runner::power::underpowered(&plan) {
        outln!("  note: {line}")?;
    }
    if args.dry_run {
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
        return Ok(OK);
    }
    // Every package the suite needs is checked before anything starts.
    let mut missing: Vec<&str> = Vec::new();
    for spec in suite.stacks.iter().filter_map(|s| s.lab_stack()) {
        for p in spec.stack.missing_packages(&spec.knobs) {
            if !missing.contains(&p) {
                missing.push(p);
            }
        }
    }
    if !missing.is_empty() {
        return Err(Failure::MissingPackage(format!(
            "suite {} needs packages that are not installed: {} (install them with: \
             apt-get install -y {})",
            plan.suite,
            missing.join(" "),
            missing.join(" ")
        ))
        .into());
    }

    std::fs::create_dir_all(&args.out)
        .with_context(|| format!("creating {}", args.out.display()))?;
    let db = args.db.clone().unwrap_or_else(|| args.out.join("loadlab.db"));
    let mut store = Store::open(&db).map_err(store_failure)?;
    let lab = Lab::from_env().map_err(lab_failure)?;
    for id in lab.clean_stale().map_err(lab_failure)? {
        eprintln!("loadlab: removed stale stack instance {id} left by an earlier run");
    }
    let packages = suite
        .stacks
        .iter()
        .filter_map(|s| s.lab_stack())
        .flat_map(|s| s.stack.packages(&s.knobs))
        .collect::<Vec<_>>();
    let info = RunInfo {
        suite: plan.suite.clone(),
        started_at: SystemTime::now(),
        environment: environment(&packages),
    };
    // Said once: a run whose process died is noticed by the next run into its store.
    for crashed in store.unnoticed_crashes().map_err(store_failure)? {
        eprintln!(
            "loadlab: run {} ({}) did not finish: the process that ran it is gone (killed, or the \
             machine restarted); its {} finished cells are kept (loadlab report {} --db {})",
            crashed.id,
            crashed.suite,
            crashed.cells,
            crashed.id,
            db.display()
        );
        store.notice_crash(crashed.id, SystemTime::now()).map_err(store_failure)?;
    }
    let run_id = store.begin_run(&info).map_err(store_failure)?;
    outln!("run {run_id} into {}", db.display())?;

    // Stacks come and go inside, and the run's record is closed and reported after: a second
    // Ctrl-C waits for both.
    let _finishing = crate::signals::Finishing::hold();
    let mut measure = load::EngineMeasure::new(false)?;
    let mut cx = RunContext {
        store: &mut store,
        run_id,
        client_cpus: plan.client_cpus.as_ref(),
        threads: loadlab_engine::sys::allowed_cpus().len(),
    };
    let outcome = run_plan(&plan, &lab, &mut measure, &mut Printer, &mut cx).map_err(run_failure);
    let status = match &outcome {
        Ok(()) if !measure.stopped() => RunStatus::Finished,
        _ => RunStatus::Interrupted,
    };
    store.finish_run(run_id, status, SystemTime::now()).map_err(store_failure)?;

    let report = args.out.join("report.html");
    crate::report_cmd::write_report(&store, run_id, &report)?;
    let cells = store.cells(run_id).map_err(store_failure)?;
    outln!()?;
    if status == RunStatus::Interrupted {
        // Said before the verdict, which covers only what ran.
        outln!(
            "run {run_id} interrupted: {} of {} cells finished and stored",
            cells.len(),
            plan.cells.len()
        )?;
    }
    // The SLO verdict is the stored cells' (each keeps the SLO its workload was judged by), so
    // this table, the exit code and every `loadlab report` of the run say the same.
    let verdicts = loadlab_report::verdicts(&cells);
    out!("{}", loadlab_report::verdict_table(&verdicts))?;
    let gates = loadlab_report::gate::gates(&verdicts);
    outln!("\nreport: {}", report.display())?;
    outcome?;
    Ok(if status == RunStatus::Interrupted {
        INTERRUPTED
    } else if gates.iter().any(|g| !g.verdict.passed) {
        SLO_FAILED
    } else {
        OK
    })
}

/// `run`'s progress lines.
struct Printer;

impl Events for Printer {
    fn stack_up(&mut self, cell: &Cell, up: &Instance) -> std::io::Result<()> {
        // An external target is not started: only its answers are checked.
        let what = match cell.stack.external_target() {
            Some(e) => format!("{} (external, {}) verified", cell.stack.label, e.url),
            None => format!("{} up and verified", cell.stack.label),
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

/// Executor errors mapped to the CLI's failure classes (and so to exit codes).
pub fn run_failure(e: RunError) -> anyhow::Error {
    match e {
        RunError::Lab(e) => lab_failure(e),
        RunError::Store(e) => store_failure(e),
        RunError::Engine(e) => load::engine_failure(e),
        RunError::Events(e) => e.into(),
        RunError::Unsupported(why) => Failure::Unsupported(why).into(),
        // As a lab stack that does not verify: the stack is not what the suite measures.
        e @ RunError::Verify { .. } => Failure::StackFailed(e.to_string()).into(),
    }
}

/// The machine and software the run measured on.
fn environment(packages: &[&str]) -> Environment {
    let read = |p: &str| std::fs::read_to_string(p).unwrap_or_default().trim().to_string();
    let cpu_model = std::fs::read_to_string("/proc/cpuinfo")
        .unwrap_or_default()
        .lines()
        .find_map(|l| {
            l.strip_prefix("model name").map(|v| v.trim_start_matches([' ', '\t', ':']).to_string())
        })
        .unwrap_or_default();
    let mut versions = std::collections::BTreeMap::new();
    let mut names: Vec<&str> = packages.to_vec();
    names.sort_unstable();
    names.dedup();
    if !names.is_empty() {
        if let Ok(out) = std::process::Command::new("dpkg-query")
            .args(["-W", "-f", "${Package} ${Version}\n"])
            .args(&names)
            .output()
        {
            for line in String::from_utf8_lossy(&out.stdout).lines() {
                if let Some((p, v)) = line.split_once(' ') {
                    versions.insert(p.to_string(), v.to_string());
                }
            }
        }
    }
    Environment {
        hostname: read("/proc/sys/kernel/hostname"),
        kernel: read("/proc/sys/kernel/osrelease"),
        cpu_model,
        cpu_count: std::thread::available_parallelism().map_or(1, |n| n.get() as u32),
        loadlab_version: env!("CARGO_PKG_VERSION").to_string(),
        packages: versions,
    }
}

/// Store errors: a bad path or a file that is not a store is the user's; the rest internal.
pub fn store_failure(e: loadlab_store::StoreError) -> anyhow::Error {
    if e.is_user_error() {
        Failure::Usage(e.to_string()).into()
    } else {
        anyhow::Error::new(e)
    }
}

/// The default store of `loadlab runs`, `report` and `compare`: the one `run` writes by
/// default.
pub fn default_db() -> PathBuf {
    Path::new("loadlab-out").join("loadlab.db")
}
