//! The suite executor: a plan's cells, one stack instance at a time. Each instance comes up
//! and is verified, runs its cells while the sampler watches its tiers, and goes down whatever
//! happened; each finished cell is judged and stored at once, so an interrupted run keeps what
//! it measured.
//!
//! What measures ([`Measure`]), what stands stacks up ([`Stacks`]) and who is told ([`Events`])
//! are traits: the CLI passes the engine, the lab and its printer; tests pass fakes and a store
//! in a temporary file, and run whole plans in milliseconds.

use std::collections::BTreeSet;
use std::net::SocketAddr;
use std::time::{Duration, Instant, SystemTime};

use loadlab_engine::{BenchConfig, BenchResult, EngineError, Stop, Target};
use loadlab_lab::{CpuList, Knobs, Sampler, Stack};
use loadlab_store::{CellRecord, ConfigRecord, RunId, Store, StoreError};
use loadlab_suite::{Cell, Plan, Point};

use crate::trust::Verdict;

/// How often the sampler reads the stack's tiers.
pub const SAMPLE_INTERVAL: Duration = Duration::from_secs(1);

/// Why the executor stopped before the plan's end, other than Ctrl-C.
#[derive(Debug, thiserror::Error)]
pub enum RunError {
    #[error(transparent)]
    Lab(#[from] loadlab_lab::Error),
    #[error(transparent)]
    Store(#[from] StoreError),
    #[error(transparent)]
    Engine(#[from] EngineError),
    /// Telling the user failed (stdout closed).
    #[error("writing the progress: {0}")]
    Events(#[from] std::io::Error),
}

/// Runs one load: the engine, or a fake.
pub trait Measure {
    /// Resolves the target and checks once that it accepts connections.
    fn reach(&mut self, config: &mut BenchConfig) -> Result<SocketAddr, EngineError>;
    /// Runs `config` against `addr`; `label` names it on the live progress line.
    fn measure(
        &mut self,
        config: &BenchConfig,
        addr: SocketAddr,
        label: &str,
    ) -> Result<BenchResult, EngineError>;
    /// Whether the user asked the run to stop.
    fn stopped(&self) -> bool;
}

/// A stack instance that is up and verified.
#[derive(Debug, Clone)]
pub struct Instance {
    pub id: String,
    /// The front tier's base URL.
    pub url: String,
    /// From the call to `up` until verified.
    pub elapsed: Duration,
    /// How many checks verify made.
    pub checks: usize,
    /// Behind a network profile with delay, jitter or loss: what carried them.
    pub net_delay: Option<loadlab_lab::net::DelayPath>,
}

/// The readings of a sampler that is running; `stop` ends it.
pub trait Sampling {
    fn stop(self: Box<Self>) -> Vec<loadlab_lab::Sample>;
}

/// The lab as the executor uses it.
pub trait Stacks {
    /// Brings `stack` up with `knobs` and verifies it; `cancel` interrupts the start.
    fn up(
        &self,
        stack: &'static Stack,
        knobs: &Knobs,
        cancel: &dyn Fn() -> bool,
    ) -> Result<Instance, loadlab_lab::Error>;
    fn down(&self, id: &str) -> Result<(), loadlab_lab::Error>;
    /// The effective configuration and versions of every tier, to store with the run.
    fn capture(&self, id: &str) -> Result<Vec<loadlab_lab::Captured>, loadlab_lab::Error>;
    /// Starts sampling the instance's tiers.
    fn sample(&self, id: &str) -> Result<Box<dyn Sampling>, loadlab_lab::Error>;
}

impl Sampling for Sampler {
    fn stop(self: Box<Self>) -> Vec<loadlab_lab::Sample> {
        Sampler::stop(*self)
    }
}

impl Stacks for loadlab_lab::Lab {
    fn up(
        &self,
        stack: &'static Stack,
        knobs: &Knobs,
        cancel: &dyn Fn() -> bool,
    ) -> Result<Instance, loadlab_lab::Error> {
        let up = loadlab_lab::Lab::up(self, stack, knobs, cancel)?;
        Ok(Instance {
            id: up.record.id.clone(),
            url: up.record.url.clone(),
            elapsed: up.elapsed,
            checks: up.report.checks.len(),
            net_delay: up.record.net.as_ref().and_then(|l| l.delay),
        })
    }

    fn down(&self, id: &str) -> Result<(), loadlab_lab::Error> {
        loadlab_lab::Lab::down(self, id)
    }

    fn capture(&self, id: &str) -> Result<Vec<loadlab_lab::Captured>, loadlab_lab::Error> {
        loadlab_lab::Lab::capture(self, id)
    }

    fn sample(&self, id: &str) -> Result<Box<dyn Sampling>, loadlab_lab::Error> {
        Ok(Box::new(Sampler::start(self.targets(id)?, SAMPLE_INTERVAL)))
    }
}

/// A finished cell as the user is told of it.
#[derive(Debug)]
pub struct CellDone<'a> {
    pub cell: &'a Cell,
    /// The cell's label on the progress line (see [`cell_label`]).
    pub label: &'a str,
    pub result: &'a BenchResult,
    pub record: &'a CellRecord,
    pub verdict: &'a Verdict,
    pub limited_by: &'a crate::limit::LimitedBy,
    /// How long storing the cell took.
    pub stored_in: Duration,
}

/// What the executor tells as it goes.
pub trait Events {
    fn stack_up(&mut self, cell: &Cell, instance: &Instance) -> std::io::Result<()>;
    fn cell_done(&mut self, done: &CellDone<'_>) -> std::io::Result<()>;
    /// The cell was stopped by Ctrl-C; it is not stored and the run ends.
    fn cell_interrupted(&mut self, label: &str) -> std::io::Result<()>;
}

/// Where the run's cells go and what the client may use.
#[derive(Debug)]
pub struct RunContext<'a> {
    pub store: &'a mut Store,
    pub run_id: RunId,
    /// CPUs the client is pinned to (the suite's `client_cpus`).
    pub client_cpus: Option<&'a CpuList>,
    /// Threads when not pinned: the CPUs the client may use.
    pub threads: usize,
}

/// Runs `plan`'s cells, one stack instance at a time, until the end or until
/// [`Measure::stopped`]; every finished cell is stored before the next starts, and every
/// instance goes down before the next comes up or an error is returned.
pub fn run_plan(
    plan: &Plan,
    stacks: &dyn Stacks,
    measure: &mut dyn Measure,
    events: &mut dyn Events,
    cx: &mut RunContext<'_>,
) -> Result<(), RunError> {
    let total = plan.cells.len();
    let mut captured = BTreeSet::new();
    for group in plan.instances() {
        if measure.stopped() {
            break;
        }
        let spec = &group[0].stack;
        let instance = {
            let stop = &*measure;
            match stacks.up(spec.stack, &spec.knobs, &|| stop.stopped()) {
                Ok(up) => up,
                Err(loadlab_lab::Error::Interrupted) => break,
                Err(e) => return Err(e.into()),
            }
        };
        // Whatever happens in the cells, the stack goes down.
        let result = events.stack_up(&group[0], &instance).map_err(RunError::from).and_then(|()| {
            run_group(group, total, &instance, stacks, measure, events, cx, &mut captured)
        });
        let down = stacks.down(&instance.id);
        result?;
        down?;
    }
    Ok(())
}

#[allow(clippy::too_many_arguments)]
fn run_group(
    group: &[Cell],
    total: usize,
    instance: &Instance,
    stacks: &dyn Stacks,
    measure: &mut dyn Measure,
    events: &mut dyn Events,
    cx: &mut RunContext<'_>,
    captured: &mut BTreeSet<String>,
) -> Result<(), RunError> {
    let spec = &group[0].stack;
    if captured.insert(spec.label.clone()) {
        for c in stacks.capture(&instance.id)? {
            let record = ConfigRecord {
                stack: spec.label.clone(),
                tier: c.tier,
                kind: "capture".into(),
                name: c.what,
                content: c.text,
            };
            cx.store.record_config(cx.run_id, &record)?;
        }
    }
    for cell in group {
        if measure.stopped() {
            break;
        }
        let url = format!("{}{}", instance.url.trim_end_matches('/'), cell.workload.path);
        let mut config = cell_config(cell, &url, cx)?;
        let addr = measure.reach(&mut config)?;
        let label = cell_label(cell, total);
        let sampler = stacks.sample(&instance.id)?;
        let started_at = SystemTime::now();
        let result = measure.measure(&config, addr, &label);
        let samples = sampler.stop();
        let mut result = result?;
        // Behind a network profile the lab knows the link's speed, which the veth does not
        // report (it says 10000 Mbit/s): the verdict's link rule then judges against it.
        let net = cell.stack.knobs.net.as_deref();
        let link_bps =
            net.and_then(|n| n.parse::<loadlab_lab::net::Profile>().ok()).and_then(|p| p.rate_bps);
        if let Some(bps) = link_bps {
            result.link.speed_mbps = Some((bps / 1_000_000).max(1));
        }
        if result.interrupted {
            events.cell_interrupted(&label)?;
            break;
        }
        let verdict = Verdict::judge(&config, &result);
        let tier_cpus = match &cell.stack.knobs.cpus {
            Some(cpus) => cpus.0.len(),
            None => loadlab_engine::sys::allowed_cpus().len(),
        };
        let mut limited_by = crate::limit::limited_by(&result, &verdict, &samples, tier_cpus);
        // Behind a network profile the link's capacity is known: say it beside the evidence.
        if let (crate::limit::Limit::Network, Some(net), Some(bps)) =
            (&limited_by.limit, net, link_bps)
        {
            limited_by.evidence.push_str(&format!(
                "; the link is --net {net}, {}",
                loadlab_stats::format::mbps(bps as f64 / 1e6)
            ));
        }
        let mut record = crate::cell::record(
            cell,
            &config,
            &result,
            started_at,
            &samples,
            &verdict,
            &limited_by,
        );
        // The profile says what the link was asked to be; the machine decided what carried
        // its delay (netem where the kernel has it, unless `via=` said): stored beside it.
        if let Some(path) = instance.net_delay {
            record.knobs.insert("net_delay".into(), serde_json::json!(path));
        }
        let stored = Instant::now();
        cx.store.record_cell(cx.run_id, &record)?;
        events.cell_done(&CellDone {
            cell,
            label: &label,
            result: &result,
            record: &record,
            verdict: &verdict,
            limited_by: &limited_by,
            stored_in: stored.elapsed(),
        })?;
    }
    Ok(())
}

/// The engine's configuration for one cell.
fn cell_config(cell: &Cell, url: &str, cx: &RunContext<'_>) -> Result<BenchConfig, EngineError> {
    let target = Target::parse(url)?;
    let mut config = BenchConfig::new(target);
    config.threads = cx.threads.max(1);
    if let Some(cpus) = cx.client_cpus {
        config.pin = cpus.0.clone();
        config.threads = cpus.0.len().max(1);
    }
    cell.apply(&mut config);
    config.check()?;
    Ok(config)
}

/// A cell's label on the progress lines: `[  3/165] nginx  hello.txt  closed c=10 n=5000 `.
pub fn cell_label(cell: &Cell, total: usize) -> String {
    format!(
        "[{:>3}/{total}] {:<24} {:<12} {:<34} ",
        cell.ordinal + 1,
        cell.stack.label,
        cell.workload.name,
        load_label(cell)
    )
}

/// A short description of a cell's load, for the progress lines and `--dry-run`.
pub fn load_label(cell: &Cell) -> String {
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
