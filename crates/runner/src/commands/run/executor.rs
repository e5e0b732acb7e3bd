//! The suite executor: a plan's cells, one stack instance at a time. Each lab instance comes
//! up and is verified, runs its cells while the sampler watches its tiers, and goes down
//! whatever happened; an external target (a server of the user's) is verified by its answers
//! before anything runs and again before each of its instances, and sampled only when the
//! suite names its processes. Each finished cell is judged and stored at once, so an
//! interrupted run keeps what it measured.
//!
//! What measures ([`Measure`]), what stands stacks up ([`Stacks`]) and who is told ([`Events`])
//! are traits: the CLI passes the engine, the lab and its printer; tests pass fakes and a store
//! in a temporary file, and run whole plans in milliseconds.

use std::collections::{BTreeMap, BTreeSet};
use std::net::SocketAddr;
use std::time::{Duration, Instant, SystemTime};

use loadlab_engine::{BenchConfig, BenchResult, EngineError, Protocol, Stop, Target};
use loadlab_lab::named::Processes;
use loadlab_lab::procfs::ProcId;
use loadlab_lab::sampler::{Members, Sampled, Watched};
use loadlab_lab::{CpuList, Sampler};
use loadlab_store::{CellRecord, ConfigRecord, Identity, ProfileRecord, RunId, Store, StoreError};
use loadlab_suite::{Cell, External, LabStack, Plan, Point, StackSource};

use crate::commands::run::found::Found;
use crate::commands::run::verify::{judge, judge_entries, one_request};
use crate::judge::trust::Verdict;

pub use crate::commands::sampled::{profile_records, SAMPLE_INTERVAL};

/// Why the executor stopped before the plan's end, other than Ctrl-C.
#[derive(Debug, thiserror::Error)]
pub enum RunError {
    #[error(transparent)]
    Lab(#[from] loadlab_lab::Error),
    /// On the way to a lab host, or its loadlab's: the class kept (ssh could not connect, the
    /// host cannot run this binary, the remote loadlab's own exit code, the host lost).
    #[error(transparent)]
    Remote(loadlab_remote::Error),
    #[error(transparent)]
    Store(#[from] StoreError),
    /// A measured cell the store could not keep (a full disk); the cells before it are whole,
    /// each committed on its own.
    #[error("{cell} was measured but not stored")]
    NotStored { cell: String, source: StoreError },
    #[error(transparent)]
    Engine(#[from] EngineError),
    /// Telling the user failed (stdout closed).
    #[error("writing the progress: {0}")]
    Events(#[from] std::io::Error),
    /// A cell this build cannot load (see [`unsupported`]).
    #[error("{0}")]
    Unsupported(String),
    /// A workload's answer was wrong before any of its cells ran: an external target's, or a
    /// custom workload's on a lab stack.
    #[error("verify failed for {workload} on {stack} ({url}): {reason}")]
    Verify { stack: String, workload: String, url: String, reason: String },
}

/// What a [`Stacks`] call failed with: the lab's error here, or the way to a lab host's, so
/// that a remote failure keeps its class (and `run --host` its exit code). The one stack
/// failure: `loadlab stack`'s sequences carry it too ([`crate::commands::stack::StackCommandError`]).
#[derive(Debug, thiserror::Error)]
pub enum StackError {
    #[error(transparent)]
    Lab(#[from] loadlab_lab::Error),
    #[error(transparent)]
    Remote(#[from] loadlab_remote::Error),
}

impl From<StackError> for RunError {
    fn from(e: StackError) -> RunError {
        match e {
            StackError::Lab(e) | StackError::Remote(loadlab_remote::Error::Lab(e)) => {
                RunError::Lab(e)
            }
            StackError::Remote(e) => RunError::Remote(e),
        }
    }
}

/// Runs one load: the engine, or a fake.
pub trait Measure {
    /// Resolves the target and checks once that it accepts connections: the engine's one
    /// pre-flight ([`loadlab_engine::preflight`]) unless a fake says otherwise.
    fn reach(&mut self, config: &mut BenchConfig) -> Result<SocketAddr, EngineError> {
        loadlab_engine::preflight(config)
    }
    /// Runs `config` against `addr`; `label` names it on the live progress line.
    fn measure(
        &mut self,
        config: &BenchConfig,
        addr: SocketAddr,
        label: &str,
    ) -> Result<BenchResult, EngineError>;
    /// What the next measurement is, for the metrics endpoint's labels; nothing by default.
    fn cell(&mut self, _labels: loadlab_metrics::Labels) {}
    /// Who is told of each sample of the stack's tiers while a cell runs (the live view, the
    /// metrics endpoint); `None` by default: nobody.
    fn tiers_live(&self) -> Option<loadlab_lab::sampler::Live> {
        None
    }
    /// Agent 0 of `--agents`: the other agents' figures as they stream in ([`Counters`]) go
    /// where this measure publishes its own (the metrics endpoint); nothing by default.
    ///
    /// [`Counters`]: loadlab_agents::coordinator::Counters
    fn merge_agents(&mut self, _others: &loadlab_agents::coordinator::Counters) {}
    /// The last measurement's verdict, made once where it was measured; nothing by default.
    fn judged(&mut self, _verdict: &crate::judge::trust::Verdict) {}
    /// Whether the user asked the run to stop.
    fn stopped(&self) -> bool;
    /// What stops the measurement running now from another thread ([`crate::commands::run::lost`]: a lab
    /// host lost mid-cell); `None` where nothing can.
    fn control(&self) -> Option<std::sync::Arc<loadlab_engine::Control>> {
        None
    }
    /// What limited another host's part of the last measurement (`sweep --agents`: an agent
    /// bound by its client or link, named), which the measurement's own verdict cannot see.
    fn limit_elsewhere(&self) -> Option<crate::judge::limit::LimitedBy> {
        None
    }
    /// Makes the last measurement's per-second rows the whole test's where other hosts had
    /// parts in it (their flags and CPU); nothing on one host.
    fn whole_seconds(&self, _rows: &mut [crate::judge::seconds::Second]) {}
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
    /// The instance's CA when its front speaks TLS: the engine trusts it alone.
    pub cacert: Option<std::path::PathBuf>,
    /// Behind a network profile with delay, jitter or loss: what carried them.
    pub net_delay: Option<loadlab_lab::net::DelayPath>,
}

/// The readings of a sampler that is running; `stop` ends it and gives its 1 Hz samples and,
/// where it counts them, the tiers' CPU from its start to its stop.
pub trait Sampling {
    fn stop(self: Box<Self>) -> Sampled;
    /// Tells `to` of each sample as it is taken, where this sampler can; nothing by default.
    fn live(&self, _to: loadlab_lab::sampler::Live) {}
    /// Why the sampled stack went out of reach, asked while the cell runs: a stack on a lab
    /// host whose session went silent. `None`: this one cannot be lost.
    fn lost(&self) -> Option<crate::commands::run::lost::Lost> {
        None
    }
}

/// The lab as the executor uses it.
pub trait Stacks {
    /// Brings `lab`'s stack up with its knobs (on its host) and verifies it; `cancel`
    /// interrupts the start.
    fn up(&self, lab: &LabStack, cancel: &dyn Fn() -> bool) -> Result<Instance, StackError>;
    fn down(&self, id: &str) -> Result<(), StackError>;
    /// The effective configuration and versions of every tier, to store with the run.
    fn capture(&self, id: &str) -> Result<Vec<loadlab_lab::Captured>, StackError>;
    /// Starts sampling the instance's tiers; with `profile`, recording their on-CPU stacks too
    /// where it can ([`Sampled::profiles`] says what it recorded, `None`: it cannot here).
    fn sample(&self, id: &str, profile: bool) -> Result<Box<dyn Sampling>, StackError>;
    /// The processes the suite named for an external target, as they are now.
    fn resolve(&self, processes: &Processes) -> Result<Vec<ProcId>, StackError>;
    /// Starts sampling those processes and their descendants as the tier [`EXTERNAL_TIER`].
    fn sample_processes(&self, roots: &[ProcId]) -> Result<Box<dyn Sampling>, StackError>;
    /// The lab host instance `id` runs on, when it is not this machine.
    fn host_facts(&self, _id: &str) -> Option<loadlab_store::HostFacts> {
        None
    }
}

/// The tier an external target's named processes are sampled as.
pub const EXTERNAL_TIER: &str = "external";

/// No sampler: an external target whose processes the suite did not name.
pub(crate) struct NoSamples;

impl Sampling for NoSamples {
    fn stop(self: Box<Self>) -> Sampled {
        Sampled { samples: Vec::new(), cpu: None, profiles: None }
    }
}

impl Sampling for Sampler {
    fn stop(self: Box<Self>) -> Sampled {
        Sampler::finish(*self)
    }

    fn live(&self, to: loadlab_lab::sampler::Live) {
        Sampler::live(self, to);
    }
}

impl Stacks for loadlab_lab::Lab {
    fn up(&self, lab: &LabStack, cancel: &dyn Fn() -> bool) -> Result<Instance, StackError> {
        if let Some(host) = &lab.host {
            return Err(loadlab_lab::Error::BadKnob(format!(
                "{} runs on {host}: this lab starts stacks here only (runner::hosts::session::Placed \
                 puts them there)",
                lab.stack.name
            ))
            .into());
        }
        let up = loadlab_lab::Lab::up(self, lab.stack, &lab.knobs, cancel)?;
        Ok(Instance {
            id: up.record.id.clone(),
            url: up.record.url.clone(),
            elapsed: up.elapsed,
            checks: up.report.checks.len(),
            cacert: up.record.cacert(),
            net_delay: up.record.net.as_ref().and_then(|l| l.delay),
        })
    }

    fn down(&self, id: &str) -> Result<(), StackError> {
        Ok(loadlab_lab::Lab::down(self, id)?)
    }

    fn capture(&self, id: &str) -> Result<Vec<loadlab_lab::Captured>, StackError> {
        Ok(loadlab_lab::Lab::capture(self, id)?)
    }

    fn sample(&self, id: &str, profile: bool) -> Result<Box<dyn Sampling>, StackError> {
        Ok(Box::new(loadlab_lab::Lab::sampler(self, id, SAMPLE_INTERVAL, profile)?))
    }

    fn resolve(&self, processes: &Processes) -> Result<Vec<ProcId>, StackError> {
        Ok(processes.resolve()?)
    }

    fn sample_processes(&self, roots: &[ProcId]) -> Result<Box<dyn Sampling>, StackError> {
        let tier = Watched {
            tier: EXTERNAL_TIER.to_string(),
            members: Members::Trees(roots.to_vec()),
            pool: None,
        };
        Ok(Box::new(Sampler::watch(vec![tier], SAMPLE_INTERVAL)))
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
    pub limited_by: &'a crate::judge::limit::LimitedBy,
    /// How long storing the cell took.
    pub stored_in: Duration,
}

/// What the executor tells as it goes.
pub trait Events {
    fn stack_up(&mut self, cell: &Cell, instance: &Instance) -> std::io::Result<()>;
    fn cell_done(&mut self, done: &CellDone<'_>) -> std::io::Result<()>;
    /// The cell was stopped by Ctrl-C; it is not stored and the run ends.
    fn cell_interrupted(&mut self, label: &str) -> std::io::Result<()>;
    /// perf could not profile (the kernel refused `perf_event_open`): the run goes on without
    /// profiles. Told once, with perf's line.
    fn profile_refused(&mut self, _why: &str) -> std::io::Result<()> {
        Ok(())
    }
    /// A view workload's page was found on the instance just said up: what each of its
    /// views fetches, for the rest of the instance's cells. Said once per page and instance.
    fn views_found(
        &mut self,
        _workload: &str,
        _plan: &loadlab_engine::visits::ViewPlan,
    ) -> std::io::Result<()> {
        Ok(())
    }
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

/// What samples an instance's cells.
enum Watch {
    /// A lab instance: its tiers.
    Lab(String),
    /// An external target's named processes.
    Processes(Vec<ProcId>),
    /// An external target the suite named no processes of.
    Nothing,
}

/// Runs `plan`'s cells, one stack instance at a time, until the end or until
/// [`Measure::stopped`]; every finished cell is stored before the next starts, and every lab
/// instance goes down before the next comes up or an error is returned. Every external target
/// is verified before anything runs, so a wrong one stops the run before any cell.
pub fn run_plan(
    plan: &Plan,
    stacks: &dyn Stacks,
    measure: &mut dyn Measure,
    events: &mut dyn Events,
    cx: &mut RunContext<'_>,
) -> Result<(), RunError> {
    if let Some(why) = plan.cells.iter().find_map(unsupported) {
        return Err(RunError::Unsupported(why));
    }
    let mut run = Execution {
        total: plan.cells.len(),
        stacks,
        measure,
        events,
        cx,
        captured: BTreeSet::new(),
        on_hosts: on_hosts(plan),
        found: Found::default(),
        refused_told: false,
    };
    // The first instance of each external target, verified up front and used as it comes.
    let mut verified: BTreeMap<String, Instance> = BTreeMap::new();
    for group in plan.instances().filter(|g| g[0].repetition == 0) {
        let Some(external) = group[0].stack.external_target() else { continue };
        let Some((instance, answered)) = run.verify_external(group, external)? else {
            return Ok(());
        };
        run.record_identity(group, external, &answered)?;
        verified.insert(group[0].stack.label.clone(), instance);
    }
    for group in plan.instances() {
        if run.measure.stopped() {
            break;
        }
        let spec = &group[0].stack;
        let carry_on = match &spec.source {
            StackSource::Lab(lab) => run.lab_instance(group, lab)?,
            StackSource::External(external) => {
                let instance = match verified.remove(&spec.label) {
                    Some(instance) => Some(instance),
                    None => run.verify_external(group, external)?.map(|(instance, _)| instance),
                };
                match instance {
                    Some(instance) => run.external_instance(group, external, &instance)?,
                    None => false,
                }
            }
        };
        if !carry_on {
            break;
        }
    }
    Ok(())
}

/// One run of a plan: where its cells go, what measures and samples them, who is told.
struct Execution<'r, 'c> {
    total: usize,
    stacks: &'r dyn Stacks,
    measure: &'r mut dyn Measure,
    events: &'r mut dyn Events,
    cx: &'r mut RunContext<'c>,
    /// Stacks whose configuration (or identity) is stored already: once per run; lab hosts
    /// too (`ssh://...`), whose record is stored with the first of their stacks to come up.
    captured: BTreeSet<String>,
    /// Each lab host of the plan and the labels of the stacks it runs.
    on_hosts: BTreeMap<String, Vec<String>>,
    /// The view workloads' pages, found once per instance.
    found: Found,
    /// Whether perf's refusal to profile was told (once per run).
    refused_told: bool,
}

/// The plan's lab hosts, each with the labels of its stacks.
fn on_hosts(plan: &Plan) -> BTreeMap<String, Vec<String>> {
    let mut hosts: BTreeMap<String, Vec<String>> = BTreeMap::new();
    for cell in &plan.cells {
        let Some(host) = cell.stack.lab_stack().and_then(|l| l.host.clone()) else { continue };
        let labels = hosts.entry(host).or_default();
        if !labels.contains(&cell.stack.label) {
            labels.push(cell.stack.label.clone());
        }
    }
    hosts
}

impl Execution<'_, '_> {
    /// Brings a lab instance up, verifies the custom workloads it runs, runs its cells and
    /// takes it down whatever happened; `false` when a Ctrl-C interrupted its start.
    fn lab_instance(&mut self, group: &[Cell], lab: &LabStack) -> Result<bool, RunError> {
        let mut instance = {
            let stop = &*self.measure;
            match self.stacks.up(lab, &|| stop.stopped()) {
                Ok(up) => up,
                Err(StackError::Lab(loadlab_lab::Error::Interrupted)) => return Ok(false),
                Err(e) => return Err(e.into()),
            }
        };
        let host = self.stacks.host_facts(&instance.id);
        // Whatever happens in the cells, the stack goes down.
        let result =
            self.record_host(host.as_ref()).and_then(|()| self.verify_custom(group, &mut instance));
        let result = result.and_then(|()| {
            let label = &group[0].stack.label;
            if self.captured.insert(label.clone()) {
                for c in self.stacks.capture(&instance.id)? {
                    let record = ConfigRecord {
                        stack: label.clone(),
                        tier: c.tier,
                        kind: "capture".into(),
                        name: c.what,
                        content: c.text,
                    };
                    self.cx.store.record_config(self.cx.run_id, &record)?;
                }
            }
            self.cells(group, &instance, &Watch::Lab(instance.id.clone()), host.as_ref())
        });
        let down = self.stacks.down(&instance.id);
        result?;
        down?;
        Ok(true)
    }

    /// Runs an external target's cells, sampling the processes the suite named (resolved for
    /// each instance: a restarted server has other pids).
    fn external_instance(
        &mut self,
        group: &[Cell],
        external: &External,
        instance: &Instance,
    ) -> Result<bool, RunError> {
        let watch = match &external.processes {
            Some(p) => Watch::Processes(self.stacks.resolve(p)?),
            None => Watch::Nothing,
        };
        self.cells(group, instance, &watch, None)?;
        Ok(true)
    }

    /// The lab host a stack came up on, the first time: its machine and the path to it,
    /// stored as a config record of the kind [`ConfigRecord::HOST`].
    fn record_host(&mut self, host: Option<&loadlab_store::HostFacts>) -> Result<(), RunError> {
        let Some(facts) = host.filter(|f| !self.captured.contains(&f.host)) else {
            return Ok(());
        };
        let stacks = self.on_hosts.get(&facts.host).map_or(String::new(), |l| l.join(", "));
        let record = ConfigRecord::of_host(facts, &stacks);
        self.cx.store.record_config(self.cx.run_id, &record)?;
        self.captured.insert(facts.host.clone());
        Ok(())
    }

    /// An external target's verify: every workload of `group` answered as its cells will
    /// check. `None` when a Ctrl-C came while it ran.
    fn verify_external(
        &mut self,
        group: &[Cell],
        external: &External,
    ) -> Result<Option<(Instance, Answered)>, RunError> {
        let started = Instant::now();
        let mut instance = Instance {
            id: group[0].stack.label.clone(),
            url: external.url.clone(),
            elapsed: Duration::ZERO,
            checks: 0,
            // Its TLS options are the suite's, set for every cell of it (`cell_config`).
            cacert: None,
            net_delay: None,
        };
        let answered =
            verify_answers(group, &instance, |_| true, self.measure, self.cx, &mut self.found)?;
        if answered.interrupted {
            return Ok(None);
        }
        instance.elapsed = started.elapsed();
        instance.checks = answered.checks;
        Ok(Some((instance, answered)))
    }

    /// The custom workloads of a lab instance's cells, which the lab's verify does not know:
    /// each answered as its cells will check (counted with the instance's checks), or the
    /// instance goes down and the run stops.
    fn verify_custom(&mut self, group: &[Cell], instance: &mut Instance) -> Result<(), RunError> {
        let wanted = |c: &Cell| c.workload.spec.custom();
        let answered =
            verify_answers(group, instance, wanted, self.measure, self.cx, &mut self.found)?;
        instance.checks += answered.checks;
        Ok(())
    }

    /// Who answered at an external target's URL, stored with the run as a lab stack's configs
    /// are: the URL, the address it resolved to, TLS, the Server header, what is sampled.
    fn record_identity(
        &mut self,
        group: &[Cell],
        external: &External,
        answered: &Answered,
    ) -> Result<(), RunError> {
        let tls = match (&external.tls.cacert, external.tls.insecure) {
            _ if !external.url.starts_with("https://") => "no".to_string(),
            (Some(ca), _) => format!("yes, trusting {}", ca.display()),
            (None, true) => "yes, any certificate accepted (insecure)".to_string(),
            (None, false) => "yes, trusting the system's certificates".to_string(),
        };
        let sampled = match &external.processes {
            Some(p) => {
                let n = self.stacks.resolve(p)?.len();
                format!("{} ({n} process{} now, with their descendants)", p.describe(), plural(n))
            }
            None => "not sampled: external target (name its processes with pids, pidfile or unit)"
                .to_string(),
        };
        let identity = Identity {
            url: external.url.clone(),
            address: answered.addr.map_or("?".to_string(), |a| a.to_string()),
            tls,
            server: answered.server.clone().unwrap_or_else(|| "(no Server header)".into()),
            sampling: sampled,
            verified: answered.details.clone(),
        };
        let record = ConfigRecord::of_identity(&group[0].stack.label, EXTERNAL_TIER, &identity);
        self.cx.store.record_config(self.cx.run_id, &record)?;
        self.captured.insert(group[0].stack.label.clone());
        Ok(())
    }

    /// One cell's load while `watch` samples, stopped at once if the stack goes out of reach:
    /// then its figures are of a path that went away, and the run ends with
    /// [`loadlab_remote::Error::Lost`] naming `place` (the lab host).
    fn measure_sampled(
        &mut self,
        config: &BenchConfig,
        addr: SocketAddr,
        label: &str,
        watch: &Watch,
        place: &str,
        profile: bool,
    ) -> Result<(BenchResult, Sampled), RunError> {
        let sampler = match watch {
            Watch::Lab(id) => self.stacks.sample(id, profile)?,
            Watch::Processes(roots) => self.stacks.sample_processes(roots)?,
            Watch::Nothing => Box::new(NoSamples),
        };
        if let Some(to) = self.measure.tiers_live() {
            sampler.live(to);
        }
        let lost = sampler.lost();
        let measure = &mut *self.measure;
        let (result, lost) =
            crate::commands::run::lost::watched(measure.control(), lost.as_ref(), || {
                measure.measure(config, addr, label)
            });
        let sampled = sampler.stop();
        if let Some(reason) = lost {
            let host = place.to_string();
            return Err(RunError::Remote(loadlab_remote::Error::Lost { host, reason }));
        }
        Ok((result?, sampled))
    }

    /// A profiled cell's profiles as stored, and what became of the profiling in its knobs
    /// (`profile`: `perf`, or why there is none); perf's refusal is told once per run.
    fn profiles(
        &mut self,
        cell: &Cell,
        sampled: &Sampled,
        record: &mut CellRecord,
    ) -> Result<Vec<ProfileRecord>, RunError> {
        if !cell.profiled {
            return Ok(Vec::new());
        }
        let (said, tiers) = match &sampled.profiles {
            None => {
                ("not recorded: profiles are taken of the lab's stacks only".to_string(), &[][..])
            }
            Some(p) => match &p.refused {
                Some(why) => {
                    if !self.refused_told {
                        self.refused_told = true;
                        self.events.profile_refused(why)?;
                    }
                    (format!("refused: {why}"), &[][..])
                }
                None => ("perf".to_string(), &p.tiers[..]),
            },
        };
        record.knobs.insert("profile".into(), serde_json::json!(said));
        Ok(profile_records(tiers))
    }

    /// Lists the pages found since the last call (each once, after its instance is said up).
    fn list_found(&mut self) -> Result<(), RunError> {
        for (workload, plan) in self.found.take_fresh() {
            self.events.views_found(&workload, &plan)?;
        }
        Ok(())
    }

    /// An instance's cells, each measured while `watch` samples, judged and stored at once;
    /// the first Ctrl-C ends them.
    fn cells(
        &mut self,
        group: &[Cell],
        instance: &Instance,
        watch: &Watch,
        host: Option<&loadlab_store::HostFacts>,
    ) -> Result<(), RunError> {
        self.events.stack_up(&group[0], instance)?;
        self.list_found()?;
        for cell in group {
            if self.measure.stopped() {
                break;
            }
            let url = format!("{}{}", instance.url.trim_end_matches('/'), cell.workload.path);
            let mut config = cell_config(cell, &url, instance, self.cx, &mut self.found)?;
            self.list_found()?;
            let addr = self.measure.reach(&mut config)?;
            let label = cell_label(cell, self.total);
            self.measure.cell(metrics_labels(cell, self.cx.run_id));
            let started_at = SystemTime::now();
            let place = host.map_or(instance.id.as_str(), |h| h.host.as_str());
            let (mut result, sampled) =
                self.measure_sampled(&config, addr, &label, watch, place, cell.profiled)?;
            // Behind a network profile the lab knows the link's speed, which the veth does not
            // report (it says 10000 Mbit/s): the verdict's link rule then judges against it.
            let net = cell.stack.knobs().and_then(|k| k.net.as_deref());
            let link_bps = net
                .and_then(|n| n.parse::<loadlab_lab::net::Profile>().ok())
                .and_then(|p| p.rate_bps);
            if let Some(bps) = link_bps {
                result.link.speed_mbps = Some((bps / 1_000_000).max(1));
            }
            if result.interrupted {
                self.events.cell_interrupted(&label)?;
                break;
            }
            let verdict = Verdict::judge(&config, &result);
            self.measure.judged(&verdict);
            let mut report =
                crate::commands::bench::outcome::Report::judged(&config, addr, &result, &verdict);
            // A cell's limit is judged with the samples of its stack, which a bench lacks.
            report.limited_by = cell_limit(cell, &result, &verdict, &sampled, link_bps, host);
            let mut record = crate::commands::run::cell::record(
                cell,
                (&config, &result, &report),
                started_at,
                &sampled.samples,
                &verdict,
            );
            // The profile says what the link was asked to be; the machine decided what carried
            // its delay (netem where the kernel has it, unless `via=` said): stored beside it.
            if let Some(path) = instance.net_delay {
                record.knobs.insert("net_delay".into(), serde_json::json!(path));
            }
            // Which machine ran the stack, when not this one (the report says so per stack).
            if let Some(h) = host {
                record.knobs.insert("host".into(), serde_json::json!(h.host));
                record.knobs.insert("host_cpus".into(), serde_json::json!(h.cpu_count));
            }
            let profiles = self.profiles(cell, &sampled, &mut record)?;
            let stored = Instant::now();
            let run_id = self.cx.run_id;
            self.cx.store.record_profiled_cell(run_id, &record, &profiles).map_err(|source| {
                let (stack, load) = (&cell.stack.label, load_label(cell));
                let cell =
                    format!("cell {} ({stack} {} {load})", cell.ordinal + 1, cell.workload.name());
                RunError::NotStored { cell, source }
            })?;
            self.events.cell_done(&CellDone {
                cell,
                label: &label,
                result: &result,
                record: &record,
                verdict: &verdict,
                limited_by: &report.limited_by,
                stored_in: stored.elapsed(),
            })?;
        }
        Ok(())
    }
}

/// What the instance answered, for the run's record.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Answered {
    /// Workloads checked, one request each.
    pub checks: usize,
    /// The address the first request connected to (the URL's host resolved).
    pub addr: Option<SocketAddr>,
    /// The first answer's Server header.
    pub server: Option<String>,
    /// `workload: status, bytes` for each check, in order.
    pub details: Vec<String>,
    /// A Ctrl-C came while checking: nothing more was checked.
    pub interrupted: bool,
}

/// Sends one request of each distinct workload of `group` (those `wanted`) to `instance` and
/// checks its answer; the first wrong one is a [`RunError::Verify`] naming the stack, the URL
/// and what was wrong. A target that cannot be reached is a failed verify too: the stack is
/// there to be measured.
pub fn verify_answers(
    group: &[Cell],
    instance: &Instance,
    wanted: impl Fn(&Cell) -> bool,
    measure: &mut dyn Measure,
    cx: &RunContext<'_>,
    found: &mut Found,
) -> Result<Answered, RunError> {
    let mut answered =
        Answered { checks: 0, addr: None, server: None, details: Vec::new(), interrupted: false };
    let mut seen: Vec<&str> = Vec::new();
    for cell in group.iter().filter(|c| wanted(c)) {
        if seen.contains(&cell.workload.name()) {
            continue;
        }
        seen.push(cell.workload.name());
        let url = format!("{}{}", instance.url.trim_end_matches('/'), cell.workload.path);
        let failed = |reason: String| RunError::Verify {
            stack: cell.stack.label.clone(),
            workload: cell.workload.name().to_string(),
            url: url.clone(),
            reason,
        };
        let mut config = one_request(cell_config(cell, &url, instance, cx, found)?);
        let addr = match measure.reach(&mut config) {
            Ok(addr) => addr,
            Err(EngineError::Unreachable { reason, .. }) => {
                let not = loadlab_engine::error::unreachable_prefix(&reason, "not reachable: ");
                return Err(failed(format!("{not}{reason}")));
            }
            Err(e) => return Err(e.into()),
        };
        let label = format!("verify {} {} ", cell.stack.label, cell.workload.name());
        let result = measure.measure(&config, addr, &label)?;
        if result.interrupted {
            answered.interrupted = true;
            return Ok(answered);
        }
        let detail = judge(&result, &config).map_err(failed)?;
        if let Some(why) = judge_entries(&result, &config) {
            return Err(failed(why));
        }
        answered.checks += 1;
        answered.addr.get_or_insert(addr);
        if answered.server.is_none() {
            answered.server.clone_from(&result.server);
        }
        answered.details.push(format!("{}: {detail}", cell.workload.name()));
    }
    Ok(answered)
}

/// What limited a cell ([`crate::judge::limit::decide`]): its tiers' CPU from their counters at the
/// cell's start and end where the sampler counted them, else from its samples; each tier
/// could use the CPUs of its `cpus` knob, else the client's allowed CPUs. Behind a network
/// profile the link's capacity is said beside the network's evidence. On a lab host the
/// tiers and the machine are that host's (its CPUs; the evidence names it), the client's CPU
/// this machine's.
fn cell_limit(
    cell: &Cell,
    result: &BenchResult,
    verdict: &Verdict,
    sampled: &Sampled,
    link_bps: Option<u64>,
    host: Option<&loadlab_store::HostFacts>,
) -> crate::judge::limit::LimitedBy {
    use crate::judge::limit::{decide, Limit, StackEvidence};
    let tier_cpus = match (cell.stack.knobs().and_then(|k| k.cpus.as_ref()), host) {
        (Some(cpus), _) => cpus.0.len(),
        (None, Some(h)) if h.cpu_count > 0 => h.cpu_count as usize,
        (None, _) => loadlab_engine::sys::allowed_cpus().len(),
    };
    let mut stack = match &sampled.cpu {
        Some(cpu) => StackEvidence::counted(cpu, &sampled.samples, tier_cpus),
        None => StackEvidence::sampled(&sampled.samples, tier_cpus),
    };
    stack.elsewhere = host.is_some();
    let mut limited_by = decide(result, verdict, &stack);
    let net = cell.stack.knobs().and_then(|k| k.net.as_deref());
    if let (Limit::Network, Some(net), Some(bps)) = (&limited_by.limit, net, link_bps) {
        limited_by.evidence.push_str(&format!(
            "; the link is --net {net}, {}",
            loadlab_stats::format::mbps(bps as f64 / 1e6)
        ));
    }
    let server_side = matches!(
        limited_by.limit,
        Limit::TierCpu(_) | Limit::WorkerPool(_) | Limit::Database | Limit::MachineCpu
    );
    if let (true, Some(h)) = (server_side, host) {
        limited_by.evidence.push_str(&format!(" (on {}, {} CPUs)", h.host, h.cpu_count));
    }
    limited_by
}

fn plural(n: usize) -> &'static str {
    if n == 1 {
        ""
    } else {
        "es"
    }
}

/// Why `cell` cannot be loaded as the suite asks, if it cannot: a load without keep-alive on a
/// stack with `http2` or `http3` on (neither has a connection per request; a session of one
/// call is one), or visits over HTTP/3 (which carries requests, not visits, for now). Said
/// before any stack starts.
pub fn unsupported(cell: &Cell) -> Option<String> {
    let protocol = cell.protocol();
    let (version, key) = match protocol {
        Protocol::Http1 => return None,
        Protocol::Http2 { .. } => ("HTTP/2", "http2"),
        Protocol::Http3 { .. } => ("HTTP/3", "http3"),
    };
    let at = format!("cell {} ({})", cell.ordinal, cell.stack.label);
    if !cell.load.connection.keepalive {
        return Some(format!(
            "{at}: keepalive = false has no meaning over {version} ({key} is on): use a \
             sessions load with calls_per_conn = 1 for a connection per request"
        ));
    }
    (protocol.is_h3() && cell.workload.spec.visits.is_some()).then(|| {
        format!("{at}: HTTP/3 carries requests, not visits, for now: load visits over h1 or h2")
    })
}

/// The engine's configuration for one cell at `url` on `instance`: over TLS trusting a lab
/// instance's own CA when its front speaks TLS (no `--insecure`: the certificate is checked
/// for the address loaded, as verify checked it), or as an external target's `cacert` or
/// `insecure` say; the client's threads and pinning; the cell's request, load and checks; a
/// view workload's page as `instance` found it ([`Found`]).
pub(crate) fn cell_config(
    cell: &Cell,
    url: &str,
    instance: &Instance,
    cx: &RunContext<'_>,
    found: &mut Found,
) -> Result<BenchConfig, EngineError> {
    let target = Target::parse(url)?;
    let mut config = BenchConfig::new(target);
    config.tls.cacert = instance.cacert.clone();
    if let Some(external) = cell.stack.external_target() {
        config.tls = external.tls.clone();
    }
    config.threads = cx.threads.max(1);
    if let Some(cpus) = cx.client_cpus {
        config.pin = cpus.0.clone();
        config.threads = cpus.0.len().max(1);
    }
    cell.apply(&mut config);
    if cell.workload.spec.view {
        let workload = (cell.workload.name(), cell.workload.spec.view_hosts.as_slice());
        found.apply(&instance.id, workload, &mut config)?;
    }
    if let Some(spec) = &cell.workload.spec.visits {
        visits(&mut config, spec, &cell.workload.spec.given)?;
    }
    config.check()?;
    Ok(config)
}

/// A visit workload's cell: its visits, as `bench --visits` runs them, at the load's rate
/// (counting visits) or, under a closed load, by its concurrency of visitors, each starting
/// its next visit when one ends.
fn visits(
    config: &mut BenchConfig,
    spec: &[(String, u32)],
    given: &[(String, String)],
) -> Result<(), EngineError> {
    let (rate, arrival) = (config.pacing.rate(), config.pacing.arrival());
    let v =
        crate::commands::bench::flags::visit_file(spec, config, None, given).map_err(
            |e| match e {
                crate::commands::bench::flags::FlagError::Engine(e) => e,
                e => EngineError::Config(e.to_string()),
            },
        )?;
    v.apply(config, rate, arrival);
    Ok(())
}

/// A cell's label on the progress lines: `[  3/165] nginx  hello.txt  closed c=10 n=5000 `.
pub fn cell_label(cell: &Cell, total: usize) -> String {
    format!(
        "[{:>3}/{total}] {:<24} {:<12} {:<34} ",
        cell.ordinal + 1,
        cell.stack.label,
        cell.workload.name(),
        load_label(cell)
    )
}

/// The labels of a cell's series on the metrics endpoint.
fn metrics_labels(cell: &Cell, run: RunId) -> loadlab_metrics::Labels {
    loadlab_metrics::Labels {
        run: run.to_string(),
        stack: cell.stack.label.clone(),
        workload: cell.workload.name().to_string(),
        load: load_label(cell),
        repetition: cell.repetition.to_string(),
    }
}

/// A short description of a cell's load, for the progress lines and `--dry-run`.
pub fn load_label(cell: &Cell) -> String {
    let stop = match cell.load.stop {
        Stop::Count(n) => format!("n={n}"),
        Stop::Duration(d) => format!("{}s", d.as_secs_f64()),
    };
    if let Some(shaped) = shaped_label(cell) {
        return shaped;
    }
    let no_ka =
        !cell.load.connection.keepalive && !matches!(cell.load.point, Point::Sessions { .. });
    let full = !cell.load.protocol.tls_resume && cell.stack.knobs().is_some_and(|k| k.tls.is_on());
    let ka =
        format!("{}{}", if no_ka { " no-ka" } else { "" }, if full { " no-resume" } else { "" });
    let poisson =
        if cell.load.schedule.arrival == loadlab_load::Arrival::Poisson { " poisson" } else { "" };
    match cell.load.point {
        Point::Closed { concurrency } if cell.protocol() != Protocol::Http1 => {
            format!("closed c={concurrency} m={} {stop}", cell.load.protocol.streams)
        }
        Point::Closed { concurrency } => format!("closed c={concurrency} {stop}{ka}"),
        Point::Open { rate } => format!("open {rate}/s{poisson} {stop}{ka}"),
        Point::Sessions { rate, calls } => {
            format!("sessions {rate}/s{poisson} x{calls} {stop}{ka}")
        }
    }
}

/// A load that changes over time, for the plan: its model, stages and length
/// (`open stages 10s:0..1000,20s:1000 30s`); `None` for a fixed load.
fn shaped_label(cell: &Cell) -> Option<String> {
    let stages = cell.load.shape_label()?;
    let secs = cell.load.shape.as_ref()?.duration().as_secs_f64();
    let model = match cell.load.point {
        Point::Closed { .. } => "closed connections".to_string(),
        Point::Open { .. } => "open".to_string(),
        Point::Sessions { calls, .. } => format!("sessions x{calls}"),
    };
    Some(format!("{model} stages {stages} {secs}s"))
}
