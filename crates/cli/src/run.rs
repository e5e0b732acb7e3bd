//! `loadlab run`: a suite's plan, cell by cell. Each stack instance comes up, is verified, runs
//! its cells while the sampler watches its tiers, and goes down; each finished cell is stored
//! at once (an interrupted run keeps what it measured); at the end the report is written and
//! the verdict printed.

use std::net::SocketAddr;
use std::path::{Path, PathBuf};
use std::time::{Duration, Instant, SystemTime};

use anyhow::Context;
use clap::Args;
use loadlab_engine::{BenchConfig, BenchResult, Control, ErrorClass, Pacing, Stop, Target};
use loadlab_lab::{Lab, Sampler};
use loadlab_store::{
    metric, CellRecord, ConfigRecord, Environment, Flag, LoadModel, LoadSpec, RunId, RunInfo,
    RunStatus, Sample, Store, TrustFlag,
};
use loadlab_suite::{Cell, Plan, Point};

use crate::bench_report::SCHEDULE_TOLERANCE_US;
use crate::exit::{Failure, INTERRUPTED, OK};
use crate::load;
use crate::stack::lab_failure;

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
}

/// How often the sampler reads the stack's tiers.
const SAMPLE_INTERVAL: Duration = Duration::from_secs(1);

pub fn run(args: RunArgs) -> anyhow::Result<u8> {
    let suite = loadlab_suite::load(&args.suite)
        .map_err(|e| anyhow::Error::new(Failure::Usage(e.to_string())))?;
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
    if args.dry_run {
        for cell in &plan.cells {
            outln!(
                "  {:>4} rep {} {:<28} {:<14} {}",
                cell.ordinal,
                loadlab_report::format::repetition(cell.repetition),
                cell.stack.label,
                cell.workload.name,
                load_label(cell)
            )?;
        }
        return Ok(OK);
    }
    // Every package the suite needs is checked before anything starts.
    let mut missing: Vec<&str> = Vec::new();
    for spec in &suite.stacks {
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
    let control = crate::signals::control()?;
    let packages = suite.stacks.iter().flat_map(|s| s.stack.packages(&s.knobs)).collect::<Vec<_>>();
    let info = RunInfo {
        suite: plan.suite.clone(),
        started_at: SystemTime::now(),
        environment: environment(&packages),
    };
    let run_id = store.begin_run(&info).map_err(store_failure)?;
    outln!("run {run_id} into {}", db.display())?;

    // Stacks come and go inside, and the run's record is closed and reported after: a second
    // Ctrl-C waits for both.
    let _finishing = crate::signals::Finishing::hold();
    let outcome = run_plan(&plan, &lab, &mut store, run_id, &control);
    let status = match &outcome {
        Ok(()) if !stopped(&control) => RunStatus::Finished,
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
    out!("{}", loadlab_report::verdict_table(&loadlab_report::verdicts(&cells)))?;
    outln!("\nreport: {}", report.display())?;
    outcome?;
    Ok(if status == RunStatus::Interrupted { INTERRUPTED } else { OK })
}

fn stopped(control: &Control) -> bool {
    crate::signals::interrupted(control)
}

/// Runs the cells, one stack instance at a time; stops at Ctrl-C with the finished cells kept.
fn run_plan(
    plan: &Plan,
    lab: &Lab,
    store: &mut Store,
    run_id: RunId,
    control: &Control,
) -> anyhow::Result<()> {
    let total = plan.cells.len();
    let mut captured = std::collections::BTreeSet::new();
    for group in plan.instances() {
        if stopped(control) {
            break;
        }
        let spec = &group[0].stack;
        let cancel = || stopped(control);
        let up = match lab.up(spec.stack, &spec.knobs, &cancel) {
            Ok(up) => up,
            Err(loadlab_lab::Error::Interrupted) => break,
            Err(e) => return Err(lab_failure(e)),
        };
        let id = up.record.id.clone();
        outln!(
            "{} up and verified in {:.2} s ({} checks), repetition {}",
            spec.label,
            up.elapsed.as_secs_f64(),
            up.report.checks.len(),
            loadlab_report::format::repetition(group[0].repetition)
        )?;
        // Whatever happens in the cells, the stack goes down.
        let result = run_group(
            group,
            total,
            &up.record.url,
            lab,
            &id,
            store,
            run_id,
            control,
            &mut captured,
            plan.client_cpus.as_ref(),
        );
        let down = lab.down(&id).map_err(lab_failure);
        result?;
        down?;
    }
    Ok(())
}

#[allow(clippy::too_many_arguments)]
fn run_group(
    group: &[Cell],
    total: usize,
    base_url: &str,
    lab: &Lab,
    id: &str,
    store: &mut Store,
    run_id: RunId,
    control: &Control,
    captured: &mut std::collections::BTreeSet<String>,
    client_cpus: Option<&loadlab_lab::CpuList>,
) -> anyhow::Result<()> {
    let spec = &group[0].stack;
    if captured.insert(spec.label.clone()) {
        for c in lab.capture(id).map_err(lab_failure)? {
            let record = ConfigRecord {
                stack: spec.label.clone(),
                tier: c.tier,
                kind: "capture".into(),
                name: c.what,
                content: c.text,
            };
            store.record_config(run_id, &record).map_err(store_failure)?;
        }
    }
    let targets = lab.targets(id).map_err(lab_failure)?;
    for cell in group {
        if stopped(control) {
            break;
        }
        let url = format!("{}{}", base_url.trim_end_matches('/'), cell.workload.path);
        let (config, addr) = cell_config(cell, &url, client_cpus)?;
        let prefix = format!(
            "[{:>3}/{total}] {:<24} {:<12} {:<34} ",
            cell.ordinal + 1,
            spec.label,
            cell.workload.name,
            load_label(cell)
        );
        let sampler = Sampler::start(targets.clone(), SAMPLE_INTERVAL);
        let started_at = SystemTime::now();
        // On a terminal a live progress line (the cell, elapsed, completed, req/s, errors) runs
        // on stderr during the cell; the cell's line is printed whole when it is done.
        let (result, _) = load::measure(&config, addr, false, &prefix)?;
        let samples = sampler.stop();
        if result.interrupted {
            outln!("{prefix}interrupted")?;
            break;
        }
        let record = cell_record(cell, &config, &result, started_at, samples);
        let stored = Instant::now();
        store.record_cell(run_id, &record).map_err(store_failure)?;
        let store_ms = stored.elapsed().as_secs_f64() * 1e3;
        let flags: Vec<&str> = record.flags.iter().map(|f| f.flag.as_str()).collect();
        outln!(
            "{prefix}{:>10.1} req/s  p99 {:>9}  {}{}",
            result.rps(),
            loadlab_stats::format::micros(record.metrics[metric::P99_US]),
            if flags.is_empty() { "ok".to_string() } else { flags.join(",") },
            if store_ms > 50.0 { format!("  (stored in {store_ms:.0} ms)") } else { String::new() }
        )?;
    }
    Ok(())
}

/// The engine's configuration for one cell.
fn cell_config(
    cell: &Cell,
    url: &str,
    client_cpus: Option<&loadlab_lab::CpuList>,
) -> anyhow::Result<(BenchConfig, SocketAddr)> {
    let target = Target::parse(url).map_err(load::engine_failure)?;
    let mut config = BenchConfig::new(target);
    config.threads = loadlab_engine::sys::allowed_cpus().len().max(1);
    if let Some(cpus) = client_cpus {
        config.pin = cpus.0.clone();
        config.threads = cpus.0.len().max(1);
    }
    cell.apply(&mut config);
    config.check().map_err(load::engine_failure)?;
    let addr = load::reach(&mut config)?;
    Ok((config, addr))
}

/// A short description of a cell's load, for the progress lines.
fn load_label(cell: &Cell) -> String {
    let stop = match cell.load.stop {
        Stop::Count(n) => format!("n={n}"),
        Stop::Duration(d) => format!("{}s", d.as_secs_f64()),
    };
    let ka = if cell.load.keepalive { "" } else { " no-ka" };
    match cell.load.point {
        Point::Closed { concurrency } => format!("closed c={concurrency} {stop}{ka}"),
        Point::Open { rate } => format!("open {rate}/s {stop}{ka}"),
        Point::Sessions { rate, calls } => format!("sessions {rate}/s x{calls} {stop}"),
    }
}

/// Converts what the engine measured into the store's record of the cell, with its trust
/// flags.
fn cell_record(
    cell: &Cell,
    config: &BenchConfig,
    r: &BenchResult,
    started_at: SystemTime,
    samples: Vec<loadlab_lab::Sample>,
) -> CellRecord {
    let t = &r.tally;
    let open = config.pacing != Pacing::Closed;
    let latency = if open { &t.timings.corrected } else { &t.timings.total };
    let mut metrics = std::collections::BTreeMap::new();
    let mut put = |k: &str, v: f64| {
        metrics.insert(k.to_string(), v);
    };
    put(metric::RPS, r.rps());
    put(metric::COMPLETED, t.completed as f64);
    put(metric::FAILED, t.failed as f64);
    put(metric::ERRORS, t.failed as f64);
    put(metric::BYTES, t.bytes_total as f64);
    put("bytes_body", t.bytes_body as f64);
    put("unfinished", t.unfinished as f64);
    put(metric::P50_US, latency.percentile(50.0) as f64);
    put(metric::P90_US, latency.percentile(90.0) as f64);
    put(metric::P99_US, latency.percentile(99.0) as f64);
    put(metric::MEAN_US, latency.mean());
    put(metric::CPU_US_PER_REQUEST, r.cpu_us_per_request().unwrap_or(f64::NAN));
    put("client_cpu_busy", r.client_busy());
    put("connections_opened", t.connections_opened as f64);
    put("peak_connections", r.peak_open as f64);
    for class in ErrorClass::ALL {
        put(&format!("{}.{}", metric::ERRORS, class.name()), t.errors.get(class) as f64);
    }
    if let Some(offered) = r.offered_rps() {
        put(metric::OFFERED_RPS, offered);
        put(metric::ACHIEVED_RPS, r.rps());
        put("late_p99_us", t.timings.late.percentile(99.0) as f64);
        put("not_sent", r.not_sent_requests() as f64);
    }
    let mut histograms = std::collections::BTreeMap::new();
    histograms.insert("latency".to_string(), latency.clone());
    if open {
        histograms.insert("latency_uncorrected".to_string(), t.timings.total.clone());
    }
    histograms.insert("connect".to_string(), t.timings.connect.clone());
    histograms.insert("waiting".to_string(), t.timings.waiting.clone());

    CellRecord {
        ordinal: cell.ordinal,
        stack: cell.stack.label.clone(),
        knobs: knobs_map(cell),
        workload: cell.workload.name.to_string(),
        load: load_spec(cell),
        repetition: cell.repetition,
        started_at,
        duration_s: r.duration.as_secs_f64(),
        metrics,
        histograms,
        series: t.series.clone(),
        samples: samples.iter().flat_map(store_samples).collect(),
        flags: flags(r),
    }
}

fn knobs_map(cell: &Cell) -> std::collections::BTreeMap<String, serde_json::Value> {
    match serde_json::to_value(&cell.stack.knobs) {
        Ok(serde_json::Value::Object(map)) => {
            map.into_iter().filter(|(_, v)| !v.is_null()).collect()
        }
        _ => Default::default(),
    }
}

fn load_spec(cell: &Cell) -> LoadSpec {
    let l = &cell.load;
    let mut spec = LoadSpec::new(match l.point {
        Point::Closed { .. } => LoadModel::Closed,
        Point::Open { .. } => LoadModel::Open,
        Point::Sessions { .. } => LoadModel::Session,
    });
    match l.point {
        Point::Closed { concurrency } => spec.connections = Some(concurrency as u64),
        Point::Open { rate } => spec.rate = Some(rate),
        Point::Sessions { rate, calls } => {
            spec.rate = Some(rate);
            spec.calls_per_connection = Some(u64::from(calls));
        }
    }
    match l.stop {
        Stop::Count(n) => spec.requests = Some(n),
        Stop::Duration(d) => spec.duration_s = Some(d.as_secs_f64()),
    }
    spec.keepalive = l.keepalive;
    spec.warmup_s = Some(l.warmup.as_secs_f64());
    if let Some(enc) = &l.accept_encoding {
        spec.extra.insert("accept_encoding".into(), enc.clone().into());
    }
    spec
}

/// The sampler's interval readings as the store keeps them: CPU seconds spent in the interval.
fn store_samples(s: &loadlab_lab::Sample) -> Vec<Sample> {
    let secs = s.interval_ms as f64 / 1000.0;
    let machine = s.machine.as_ref();
    s.tiers
        .iter()
        .map(|t| Sample {
            tier: t.tier.clone(),
            t_ms: s.t_ms,
            cpu_user_s: t.cpu_user_pct / 100.0 * secs,
            cpu_sys_s: t.cpu_sys_pct / 100.0 * secs,
            rss_bytes: t.rss_bytes,
            processes: t.processes as u32,
            loadavg: machine.map_or(0.0, |m| m.load1),
            machine_cpu: machine.map_or(0.0, |m| m.cpu_busy_pct / 100.0),
        })
        .collect()
}

/// The trust flags of a cell: the same judgements `bench` prints as warnings.
fn flags(r: &BenchResult) -> Vec<TrustFlag> {
    let t = &r.tally;
    let mut out = Vec::new();
    if r.saturated() {
        out.push(TrustFlag {
            flag: Flag::ClientSaturated,
            detail: format!(
                "client CPU {:.0}% (busiest worker {:.0}%)",
                r.client_busy() * 100.0,
                r.max_worker_busy() * 100.0
            ),
        });
    }
    let fd = t.errors.get(ErrorClass::FdUnavail) + t.errors.get(ErrorClass::AddrUnavail);
    if fd > 0 {
        out.push(TrustFlag {
            flag: Flag::FdExhausted,
            detail: format!("{fd} requests found no descriptor or local port"),
        });
    }
    if r.network_bound() {
        out.push(TrustFlag {
            flag: Flag::NetworkBound,
            detail: crate::bench_report::network_bound_warning(&crate::bench_report::Link::of(r)),
        });
    }
    if r.schedule_missed(SCHEDULE_TOLERANCE_US) {
        out.push(TrustFlag {
            flag: Flag::ScheduleMissed,
            detail: format!(
                "{} never sent, late p99 {}",
                r.not_sent_requests(),
                loadlab_stats::format::micros(t.timings.late.percentile(99.0) as f64)
            ),
        });
    }
    if t.completed == 0 {
        out.push(TrustFlag {
            flag: Flag::Other("nothing_completed".into()),
            detail: format!(
                "no request completed in the cell ({} failed, {} still in flight at its end): \
                 there is no rate or latency to compare",
                t.failed, t.unfinished
            ),
        });
    }
    if t.failed > 0 {
        let classes: Vec<String> = t
            .errors
            .iter()
            .filter(|(_, n)| *n > 0)
            .map(|(c, n)| format!("{n} {}", c.name()))
            .collect();
        out.push(TrustFlag {
            flag: Flag::Errors,
            detail: format!("{} of {}", classes.join(", "), t.completed + t.failed),
        });
    }
    out
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
