//! `sweep --agents N --agent I`: a sweep run from N hosts. Agent 0 conducts: every step is one
//! agreed start for all agents on the rendezvous, which stays open from the first step to the
//! last, and the step's merged result (every agent's part added exactly, as in `bench`) is what
//! the sweep judges: its knee, its trust, the client's limit when any agent's is. Every other
//! agent runs the same steps from its own command line (the load is compared once, the rates
//! with it), each at the start agent 0 gives, and sends agent 0 its part.
//!
//! It is a [`Measure`] around the one that measures, so the sweep driver is the single host's
//! (and `sweep --ramp`'s: its one shaped run started together, its rows the whole test's).
//! An agent lost in a step ends the sweep there (that step is interrupted, never judged), or
//! with `--on-agent-loss continue` the sweep goes on without it, its part until the loss kept.

use std::net::{SocketAddr, TcpListener};
use std::sync::Arc;
use std::time::Duration;

use loadlab_agents::coordinator::{self, Coordinator, Lost, OnLoss, Plan};
use loadlab_agents::member::{Hello, Idle, Member, Next};
use loadlab_agents::part::Part;
use loadlab_agents::{load, AgentsError};
use loadlab_engine::{BenchConfig, BenchResult, Control, EngineError};

use crate::bench::agent::{part_of, share_of, AgentError, Agents};
use crate::bench::report::Report;
use crate::executor::Measure;
use crate::executor::RunError;
use crate::limit::{Limit, LimitedBy};
use crate::ramp::{RampOutcome, RampPlan};
use crate::seconds::Second;
use crate::sweep::{Step, SweepOutcome, SweepPlan};

/// This host's side of the rendezvous between steps.
enum Role {
    Conductor(Coordinator),
    /// A start received and not run yet (after joining), or the connection between steps.
    Ready(Member),
    Idle(Idle),
    /// Agent 0 said the sweep is over, or the connection failed.
    Over,
}

/// The measure of each step of a sweep run from several hosts.
pub struct AgentsMeasure<'a> {
    inner: &'a mut dyn Measure,
    agents: Agents,
    control: Arc<Control>,
    role: Role,
    step: usize,
    /// The agents lost, with the step (from 1) each was lost in.
    pub lost: Vec<(Lost, usize)>,
    /// Why agent 0 stopped this agent's sweep early, if it did (another agent).
    pub stopped_by: Option<String>,
    /// The client- or network-bound agents of the last step, naming them (agent 0).
    elsewhere: Option<LimitedBy>,
    /// The last step's parts (agent 0): their per-second flags and workers.
    parts: Vec<(usize, Part)>,
}

/// The sweep's load as agents compare it: the first step's load and the rates, the calls and
/// the targets of every step.
pub fn sweep_load(plan: &SweepPlan) -> Vec<(String, String)> {
    let mut load = plan.targets.first().map(|t| load::describe(&t.config)).unwrap_or_default();
    let urls: Vec<&str> = plan.targets.iter().map(|t| t.url.as_str()).collect();
    load.push(("--rates".into(), format!("{:?}", plan.rates)));
    load.push(("--calls-per-conn".into(), format!("{:?}", plan.calls)));
    load.push(("--arrival, --max-connections".into(), format!("{:?}", plan.arrival)));
    load.push(("--compare".into(), urls.join(" ")));
    load
}

impl<'a> AgentsMeasure<'a> {
    /// The rendezvous, before the first step: agent 0 gathers every agent (a differing `load`
    /// refused, naming the option), the others join it.
    pub fn rendezvous(
        inner: &'a mut dyn Measure,
        agents: &Agents,
        load: Vec<(String, String)>,
    ) -> Result<AgentsMeasure<'a>, AgentError> {
        let control = inner.control().unwrap_or_default();
        let (index, of, weight) = (agents.share.index, agents.share.of, agents.weight);
        let role = if index == 0 {
            let listener = TcpListener::bind(agents.rendezvous).map_err(|source| {
                AgentsError::Io { context: "listening on --rendezvous", source }
            })?;
            let (token, timeout, on_loss) = (agents.token.clone(), agents.timeout, agents.on_loss);
            let plan = Plan { of, token, timeout, load, on_loss, weight };
            Role::Conductor(Coordinator::gather(listener, plan)?)
        } else {
            let hello = Hello { index, of, host: agents.host.clone(), load, weight };
            Role::Ready(Member::join(agents.rendezvous, &agents.token, hello, agents.timeout)?)
        };
        let (agents, step) = (agents.clone(), 0);
        Ok(AgentsMeasure {
            inner,
            agents,
            control,
            role,
            step,
            lost: Vec::new(),
            stopped_by: None,
            elsewhere: None,
            parts: Vec::new(),
        })
    }

    /// After the sweep: agent 0 tells every agent still here that it is over.
    pub fn finish(self) {
        if let Role::Conductor(c) = self.role {
            c.end("the sweep is over");
        }
    }

    /// Agent 0's step: one start for all, its own part, everyone's merged.
    fn conduct(
        &mut self,
        config: &BenchConfig,
        addr: SocketAddr,
        label: &str,
    ) -> Result<BenchResult, EngineError> {
        let Role::Conductor(c) = &mut self.role else { unreachable!("agent 0 conducts") };
        let mut mine = config.clone();
        mine.take_share(share_of(0, &c.weights()))?;
        mine.hdr_log = true;
        let start = c.start().map_err(rendezvous)?;
        let mut watch = c.watch(self.control.clone(), self.agents.others.clone(), start);
        mine.start_at = Some(wall(start));
        let own = self.inner.measure(&mine, addr, label);
        if own.as_ref().map_or(true, |r| r.interrupted) {
            watch.stop_all("agent 0's run was interrupted or failed");
        }
        let (seen, lost) = watch.finish();
        c.forget(&lost);
        let mut result = own?;
        let own_part = part_of(&result, &Report::new(&mine, addr, &result));
        coordinator::merge_all(&mut result, &seen)
            .map_err(|(i, reason)| EngineError::Config(format!("agent {i}'s part: {reason}")))?;
        let mut parts: Vec<(usize, &Part)> = vec![(0, &own_part)];
        parts.extend(seen.iter().filter_map(|s| Some((s.index, &*s.part.as_ref()?.0))));
        self.elsewhere = limited_elsewhere(&parts);
        self.parts = parts.into_iter().map(|(i, p)| (i, p.clone())).collect();
        if !lost.is_empty() && self.agents.on_loss == OnLoss::Stop {
            // What the step measured until the loss is shown, never judged.
            result.interrupted = true;
        }
        self.lost.extend(lost.into_iter().map(|l| (l, self.step)));
        Ok(result)
    }

    /// Another agent's step: the start agent 0 gives, its part sent.
    fn take_part(
        &mut self,
        config: &BenchConfig,
        addr: SocketAddr,
        label: &str,
    ) -> Result<BenchResult, EngineError> {
        let member = match std::mem::replace(&mut self.role, Role::Over) {
            Role::Ready(m) => m,
            Role::Idle(idle) => match idle.next(self.agents.timeout).map_err(rendezvous)? {
                Next::Start(m) => m,
                Next::Over(reason) => {
                    let why =
                        format!("agent 0 ended the sweep before step {}: {reason}", self.step);
                    return Err(EngineError::Config(why));
                }
            },
            _ => return Err(EngineError::Config("the rendezvous is over".into())),
        };
        let mut mine = config.clone();
        mine.take_share(share_of(self.agents.share.index, &member.weights))?;
        mine.hdr_log = true;
        mine.start_at = Some(wall(member.start_local));
        let running = member.begin(self.control.clone()).map_err(rendezvous)?;
        let result = self.inner.measure(&mine, addr, label)?;
        let late = result.start_late.as_nanos() as u64;
        let part = part_of(&result, &Report::new(&mine, addr, &result));
        let (stopped, idle) = running.end_step(part, late).map_err(rendezvous)?;
        self.role = Role::Idle(idle);
        if let Some(s) = stopped {
            self.stopped_by = Some(s.reason);
        }
        Ok(result)
    }
}

impl Measure for AgentsMeasure<'_> {
    fn reach(&mut self, config: &mut BenchConfig) -> Result<SocketAddr, EngineError> {
        self.inner.reach(config)
    }

    fn measure(
        &mut self,
        config: &BenchConfig,
        addr: SocketAddr,
        label: &str,
    ) -> Result<BenchResult, EngineError> {
        self.step += 1;
        match self.role {
            Role::Conductor(_) => self.conduct(config, addr, label),
            _ => self.take_part(config, addr, label),
        }
    }

    fn stopped(&self) -> bool {
        let lost = !self.lost.is_empty() && self.agents.on_loss == OnLoss::Stop;
        self.inner.stopped() || lost || self.stopped_by.is_some()
    }

    fn control(&self) -> Option<Arc<Control>> {
        Some(self.control.clone())
    }

    fn limit_elsewhere(&self) -> Option<LimitedBy> {
        self.elsewhere.clone()
    }

    fn whole_seconds(&self, rows: &mut [Second]) {
        let parts: Vec<(usize, &Part)> = self.parts.iter().map(|(i, p)| (*i, p)).collect();
        let own = self.parts.first().map_or(1, |(_, p)| p.workers);
        crate::bench::across::merged_seconds(rows, &parts, own);
    }
}

/// How a sweep from several hosts ended for this host, beside its outcome.
#[derive(Debug, Default)]
pub struct Ended {
    /// Agent 0: the agents lost, with the step (from 1) each was lost in.
    pub lost: Vec<(Lost, usize)>,
    /// Another agent: why agent 0 stopped its step early, if it did.
    pub stopped_by: Option<String>,
}

/// Runs `plan` as this host's part of a sweep from several hosts: the rendezvous (its errors
/// the outer one), then the single host's sweep driver over [`AgentsMeasure`] (its errors the
/// inner one), then the word to every agent that the sweep is over.
pub fn run_sweep(
    plan: &SweepPlan,
    inner: &mut dyn Measure,
    agents: &Agents,
    on_step: &mut dyn FnMut(&Step) -> std::io::Result<()>,
) -> Result<(Result<SweepOutcome, RunError>, Ended), AgentError> {
    if plan.find_knee || plan.stop_after_knee.is_some() {
        // They decide steps from the judged ones, which only agent 0 has.
        let why =
            "--find-knee and --stop-after-knee decide steps on one host for now: not with --agents";
        return Err(AgentError::Unsupported(why.into()));
    }
    let mut measure = AgentsMeasure::rendezvous(inner, agents, sweep_load(plan))?;
    let outcome = crate::sweep::run_sweep(plan, &mut measure, on_step);
    let ended =
        Ended { lost: std::mem::take(&mut measure.lost), stopped_by: measure.stopped_by.take() };
    measure.finish();
    Ok((outcome, ended))
}

/// `sweep --ramp` as this host's part of one ramp from several hosts: the rendezvous (its
/// errors the outer one), the ramp, its per-second rows the whole test's (every agent's flags
/// and workers: [`crate::bench::across::merged_seconds`]), then the word that it is over.
pub fn run_ramp(
    plan: &RampPlan,
    inner: &mut dyn Measure,
    agents: &Agents,
) -> Result<(Result<RampOutcome, RunError>, Ended), AgentError> {
    let mut load = load::describe(&plan.config);
    load.push((
        "--ramp, --ramp-duration".into(),
        format!("{}..{} {:?}", plan.from, plan.to, plan.duration),
    ));
    let mut measure = AgentsMeasure::rendezvous(inner, agents, load)?;
    let outcome = crate::ramp::run_ramp(plan, &mut measure);
    let ended =
        Ended { lost: std::mem::take(&mut measure.lost), stopped_by: measure.stopped_by.take() };
    measure.finish();
    Ok((outcome, ended))
}

/// The client's limit when any agent's own part was client-bound, else the network's when
/// any was network-bound, naming the agents and their evidence (agent 0 included).
fn limited_elsewhere(parts: &[(usize, &Part)]) -> Option<LimitedBy> {
    [Limit::Client, Limit::Network].into_iter().find_map(|limit| {
        let held: Vec<String> = parts
            .iter()
            .filter_map(|(i, p)| {
                let l = p.limited_by.as_ref().filter(|l| l.limit == limit)?;
                Some(format!("agent {i}: {}", l.evidence))
            })
            .collect();
        (!held.is_empty()).then(|| LimitedBy { limit, evidence: held.join("; ") })
    })
}

/// A rendezvous failure in the middle of a sweep, as the measure's error.
fn rendezvous(e: AgentsError) -> EngineError {
    EngineError::Config(format!("the rendezvous of agents: {e}"))
}

/// A start time of the rendezvous (ns since the epoch) on the wall clock.
fn wall(ns: u64) -> std::time::SystemTime {
    std::time::UNIX_EPOCH + Duration::from_nanos(ns)
}
