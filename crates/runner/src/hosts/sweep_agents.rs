//! `sweep --agents N --agent I`: a sweep run from N hosts. Agent 0 conducts: every step is one
//! agreed start for all agents on the rendezvous, which stays open from the first step to the
//! last, and the step's merged result (every agent's part added exactly, as in `bench`) is what
//! the sweep judges: its knee, its trust, the client's limit when any agent's is. Every other
//! agent runs the same steps from its own command line (the load is compared once, the rates
//! with it), each at the start agent 0 gives, and sends agent 0 its part.
//!
//! It is a [`Measure`] around the one that measures, so the sweep driver is the single host's
//! (and `sweep --ramp`'s: its one shaped run started together, its rows the whole test's).
//! Which step runs next is agent 0's to say, from the merged results, by the single host's
//! rule ([`crate::commands::sweep::choose`]: `--stop-after-knee`, `--find-knee`'s bisection): it names
//! the step with each start. Another agent decides nothing; it runs the named step only if it
//! is one its own command line allows at that point ([`crate::commands::sweep::allowed`]: the next of
//! `--rates`, or a midpoint of two neighbouring rates already run), and refuses any other.
//! An agent lost in a step ends the sweep there (that step is interrupted, never judged), or
//! with `--on-agent-loss continue` the sweep goes on without it, its part until the loss kept.

use std::fs::File;
use std::io::Write;
use std::net::{SocketAddr, TcpListener};
use std::path::Path;
use std::sync::Arc;
use std::time::Duration;

use loadlab_agents::coordinator::{self, Coordinator, Lost, OnLoss, Plan, Seen};
use loadlab_agents::member::{Hello, Idle, Member, Next};
use loadlab_agents::part::Part;
use loadlab_agents::stream::{self, Deltas, Seconds};
use loadlab_agents::wire::SweepStep;
use loadlab_agents::{load, AgentsError};
use loadlab_engine::{BenchConfig, BenchResult, Control, EngineError, HdrLog, Share};
use loadlab_stats::interval_log::{self, Section};

use crate::commands::bench::outcome::Report;
use crate::commands::run::executor::Measure;
use crate::commands::run::executor::RunError;
use crate::commands::sweep::ramp::{RampOutcome, RampPlan};
use crate::commands::sweep::{Conduct, NextStep, Step, SweepOutcome, SweepPlan};
use crate::hosts::across::{self, Partial};
use crate::hosts::agent::{self, part_of, share_of, AgentError, Agents};
use crate::judge::limit::{Limit, LimitedBy};
use crate::judge::seconds::Second;

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
    /// Agent 0: the step it chose to run next, named with the start.
    next: Option<NextStep>,
    /// Agent 0: the agents missing from the last step, and the shortfall they left.
    partial: Option<Partial>,
    /// Agent 0 with `--merged-hdr-log`: each step's merged intervals, by step (from 1).
    logs: Option<Vec<(usize, HdrLog)>>,
    /// Another agent, once it ran a step: its share of the test.
    own: Option<Share>,
}

/// The sweep's load as agents compare it: the first step's load and the rates, the calls and
/// the targets of every step, and whether bisection may add steps.
pub fn sweep_load(plan: &SweepPlan) -> Vec<(String, String)> {
    let mut load = plan.targets.first().map(|t| load::describe(&t.config)).unwrap_or_default();
    let urls: Vec<&str> = plan.targets.iter().map(|t| t.url.as_str()).collect();
    // Each value as the command line spells it: a mismatch shows both sides in the user's terms.
    let rates: Vec<String> = plan.rates.iter().map(f64::to_string).collect();
    load.push(("--rates".into(), rates.join(",")));
    let calls = plan.calls.map_or_else(|| "none".to_string(), |k| k.to_string());
    load.push(("--calls-per-conn".into(), calls));
    load.push(("--arrival".into(), format!("{:?}", plan.arrival).to_lowercase()));
    load.push(("--max-connections".into(), plan.max_connections.to_string()));
    load.push(("--compare".into(), urls.join(" ")));
    // Without it an agent would refuse agent 0's bisection steps: said before any load.
    load.push(("--find-knee".into(), plan.find_knee.to_string()));
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
        let logs = (index == 0 && agents.merged_hdr_log.is_some()).then(Vec::new);
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
            next: None,
            partial: None,
            logs,
            own: None,
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
        let start = c.start_step(self.next.map(wire_step)).map_err(rendezvous)?;
        let mut watch = c.watch(self.control.clone(), self.agents.others.clone(), start);
        mine.start_at = Some(wall(start));
        // Agent 0's own seconds too, for the shortfall of a step that misses an agent.
        self.control.live.enable();
        let own = self.inner.measure(&mine, addr, label);
        let mut own_seconds = Seconds::new();
        stream::add_all(&mut own_seconds, &Deltas::default().seconds(self.control.live.take()));
        if own.as_ref().map_or(true, |r| r.interrupted) {
            watch.stop_all("agent 0's run was interrupted or failed");
        }
        let (seen, lost) = watch.finish();
        c.forget(&lost);
        let mut result = own?;
        // Those lost before this step are missing from all of it.
        let mut missing: Vec<Lost> =
            self.lost.iter().map(|(l, _)| Lost { index: l.index, second: 0 }).collect();
        missing.extend(&lost);
        let continued = self.agents.on_loss == OnLoss::Continue;
        let due_each = agent::due_each(config, &c.weights());
        let secs = agent::seconds_of(&result);
        self.partial = (!missing.is_empty()).then(|| {
            shortfall(&own_seconds, &seen, &missing, (due_each.as_deref(), secs), continued)
        });
        let own_part = part_of(&result, &Report::new(&mine, addr, &result));
        coordinator::merge_all(&mut result, &seen)
            .map_err(|(i, reason)| EngineError::Config(format!("agent {i}'s part: {reason}")))?;
        let mut parts: Vec<(usize, &Part)> = vec![(0, &own_part)];
        parts.extend(seen.iter().filter_map(|s| Some((s.index, &*s.part.as_ref()?.0))));
        if let (Some(logs), Some(log)) = (&mut self.logs, &result.hdr_log) {
            logs.push((self.step, log.clone()));
        }
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
        let Role::Ready(member) = std::mem::replace(&mut self.role, Role::Over) else {
            let why = format!("the rendezvous is over before step {}", self.step);
            return Err(EngineError::Config(why));
        };
        let mut mine = config.clone();
        let share = share_of(self.agents.share.index, &member.weights);
        mine.take_share(share)?;
        mine.hdr_log = true;
        mine.start_at = Some(wall(member.start_local));
        let running = member.begin(self.control.clone()).map_err(rendezvous)?;
        let mut result = self.inner.measure(&mine, addr, label)?;
        across::own_share(&mut result, share);
        self.own = Some(share);
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
        self.partial = None;
        match self.role {
            Role::Conductor(_) => self.conduct(config, addr, label),
            _ => self.take_part(config, addr, label),
        }
    }

    fn cell(&mut self, labels: loadlab_metrics::Labels) {
        self.inner.cell(labels);
    }

    /// The verdict this host made of the step (agent 0's of the whole test), for its endpoint.
    fn judged(&mut self, verdict: &crate::judge::trust::Verdict) {
        self.inner.judged(verdict);
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
        // Another agent's rows are its own, flags and CPU as it judged them.
        if !matches!(self.role, Role::Conductor(_)) {
            return;
        }
        let parts: Vec<(usize, &Part)> = self.parts.iter().map(|(i, p)| (*i, p)).collect();
        let own = self.parts.first().map_or(1, |(_, p)| p.workers);
        crate::hosts::across::merged_seconds(rows, &parts, own);
    }
}

impl Conduct for AgentsMeasure<'_> {
    fn measurer(&mut self) -> &mut dyn Measure {
        self
    }

    fn partial(&self) -> Option<Partial> {
        self.partial.clone()
    }

    /// Agent 0: the step its (merged) results chose, named with the next start. Another
    /// agent: the step agent 0 names, once found among those its command line allows (and
    /// then its own figure of it); `None` when agent 0 says the sweep is over.
    fn next_step(
        &mut self,
        chosen: Option<NextStep>,
        allowed: &[NextStep],
    ) -> Result<Option<NextStep>, EngineError> {
        if let Role::Conductor(_) = self.role {
            self.next = chosen;
            return Ok(chosen);
        }
        let member = match std::mem::replace(&mut self.role, Role::Over) {
            Role::Ready(m) => m,
            Role::Idle(idle) => match idle.next(self.agents.timeout).map_err(rendezvous)? {
                Next::Start(m) => m,
                Next::Over(_) => return Ok(None),
            },
            _ => return Ok(None),
        };
        let step = named(member.step, allowed)?;
        self.role = Role::Ready(member);
        Ok(Some(step))
    }
}

/// The allowed step agent 0 named, or why this agent refuses to run it.
pub fn named(step: Option<SweepStep>, allowed: &[NextStep]) -> Result<NextStep, EngineError> {
    let Some(s) = step else {
        return Err(EngineError::Config("agent 0 started a sweep step without naming it".into()));
    };
    // The rate came as JSON's decimal text: equal to within rounding, the figure used is ours.
    let same = |a: &NextStep| {
        a.target == s.target && a.bisect == s.bisect && (a.rate - s.rate).abs() <= a.rate * 1e-9
    };
    allowed.iter().find(|a| same(a)).copied().ok_or_else(|| {
        let rates: Vec<String> = allowed.iter().map(|a| a.rate.to_string()).collect();
        EngineError::Config(format!(
            "agent 0 named a sweep step at {} req/s (target {}{}), which this agent's command \
             line does not allow now ({}): refused",
            s.rate,
            s.target + 1,
            if s.bisect { ", bisecting" } else { "" },
            if rates.is_empty() { "no step".into() } else { rates.join(", ") },
        ))
    })
}

fn wire_step(s: NextStep) -> SweepStep {
    SweepStep { target: s.target, rate: s.rate, bisect: s.bisect }
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
    let urls: Vec<&str> = plan.targets.iter().map(|t| t.url.as_str()).collect();
    let log = (format!("sweep {}", urls.join(" ")), true);
    conducted(inner, agents, sweep_load(plan), log, |m| {
        let mut outcome = crate::commands::sweep::drive(plan, m, on_step)?;
        if let Some(share) = m.own {
            // A share's knee is not the server's: the knees and gates are agent 0's.
            (outcome.knees, outcome.gates) = (Vec::new(), Vec::new());
            outcome.share = Some(across::share_label(share));
        }
        Ok(outcome)
    })
}

/// `sweep --ramp` as this host's part of one ramp from several hosts: the rendezvous (its
/// errors the outer one), the ramp, its per-second rows the whole test's (every agent's flags
/// and workers: [`crate::hosts::across::merged_seconds`]), then the word that it is over.
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
    let log = (format!("sweep --ramp {}", plan.url), false);
    conducted(inner, agents, load, log, |m| {
        let mut outcome = crate::commands::sweep::ramp::run_ramp(plan, m)?;
        if let Some(share) = m.own {
            (outcome.knee, outcome.share) = (None, Some(across::share_label(share)));
        }
        Ok(outcome)
    })
}

/// The rendezvous of `load`, `run` over it, how it ended for this host, and the word to every
/// agent that it is over; on agent 0 the other agents' seconds go where `inner` publishes its
/// own (its metrics endpoint), and `--merged-hdr-log` is made before the rendezvous (a path
/// that cannot be written is refused before any load) and written after: `log` says what ran,
/// and whether it was steps, each then tagged with its step (one run, a ramp: as `bench`'s).
fn conducted<T>(
    inner: &mut dyn Measure,
    agents: &Agents,
    load: Vec<(String, String)>,
    log: (String, bool),
    run: impl FnOnce(&mut AgentsMeasure<'_>) -> Result<T, RunError>,
) -> Result<(Result<T, RunError>, Ended), AgentError> {
    let log_file = match (&agents.merged_hdr_log, agents.share.index) {
        (Some(path), 0) => Some((path, File::create(path).map_err(log_error(path))?)),
        _ => None,
    };
    if agents.share.index == 0 {
        // Agent 0's endpoint, if any, serves the merge: each step's, or the ramp's one run.
        inner.merge_agents(&agents.others);
    }
    let mut measure = AgentsMeasure::rendezvous(inner, agents, load)?;
    let outcome = run(&mut measure);
    let ended =
        Ended { lost: std::mem::take(&mut measure.lost), stopped_by: measure.stopped_by.take() };
    let logs = measure.logs.take().unwrap_or_default();
    measure.finish();
    if let Some((path, file)) = log_file {
        write_merged_log(file, (&log.0, log.1), &logs).map_err(log_error(path))?;
    }
    Ok((outcome, ended))
}

/// `--merged-hdr-log`'s failure, naming the file.
fn log_error(path: &Path) -> impl FnOnce(std::io::Error) -> AgentError + '_ {
    move |source| AgentError::File { flag: "--merged-hdr-log", path: path.to_owned(), source }
}

/// The merged interval log: every step's seconds at their own time, tagged with the step
/// (`step2.corrected`, `step2.uncorrected`: the second of the JSON's `steps`) when `steps`.
fn write_merged_log(
    file: File,
    (what, steps): (&str, bool),
    logs: &[(usize, HdrLog)],
) -> std::io::Result<()> {
    let names: Vec<String> = logs.iter().map(|(step, _)| format!("step{step}")).collect();
    let sections: Vec<Section> = logs
        .iter()
        .zip(&names)
        .map(|((_, log), name)| Section {
            name: steps.then_some(name.as_str()),
            start: log.start,
            latencies: &log.latencies,
        })
        .collect();
    let version = env!("CARGO_PKG_VERSION");
    let comment = match steps {
        true => format!(
            "loadlab {version} {what}: every agent's intervals added, tagged stepN.corrected \
             and stepN.uncorrected (N: the step's place in the JSON's steps, from 1)"
        ),
        false => format!("loadlab {version} {what}: every agent's intervals added"),
    };
    let mut out = std::io::BufWriter::new(file);
    interval_log::write_sections(&mut out, &comment, &sections)?;
    out.flush()
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

/// A step that missed agents (`missing`, lost in it or before it): the shortfall of each of
/// its `secs` seconds from agent 0's own seconds and the others' streamed ones, an agent lost
/// before the step having streamed nothing in it (all its share due and not sent).
fn shortfall(
    own: &Seconds,
    seen: &[Seen],
    missing: &[Lost],
    (due_each, secs): (Option<&[f64]>, u64),
    continued: bool,
) -> Partial {
    let nothing = Seconds::new();
    let mut streamed = vec![(0, own)];
    streamed.extend(seen.iter().map(|s| (s.index, &s.seconds)));
    let earlier = missing.iter().filter(|m| !seen.iter().any(|s| s.index == m.index));
    streamed.extend(earlier.map(|m| (m.index, &nothing)));
    agent::partial(&streamed, missing, due_each, secs, continued)
}

/// A rendezvous failure in the middle of a sweep, as the measure's error.
fn rendezvous(e: AgentsError) -> EngineError {
    EngineError::Config(format!("the rendezvous of agents: {e}"))
}

/// A start time of the rendezvous (ns since the epoch) on the wall clock.
fn wall(ns: u64) -> std::time::SystemTime {
    std::time::UNIX_EPOCH + Duration::from_nanos(ns)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn an_agent_runs_only_a_step_its_command_line_allows() {
        let allowed = [
            NextStep { target: 0, rate: 800.0, bisect: false },
            NextStep { target: 0, rate: 600.0, bisect: true },
        ];
        let step = |rate, bisect| Some(SweepStep { target: 0, rate, bisect });
        // Agent 0's rate, read back from JSON, may differ in the last digit: ours is run.
        let near = named(step(600.000_000_000_1, true), &allowed).expect("allowed");
        assert_eq!(near, allowed[1]);
        for (s, says) in [
            (step(650.0, true), "at 650 req/s (target 1, bisecting)"),
            (step(600.0, false), "(800, 600)"),
            (Some(SweepStep { target: 1, rate: 800.0, bisect: false }), "target 2"),
            (None, "without naming it"),
        ] {
            let e = named(s, &allowed).expect_err("refused").to_string();
            assert!(e.contains(says), "{e}");
        }
        let e = named(step(100.0, false), &[]).expect_err("refused").to_string();
        assert!(e.contains("(no step): refused"), "{e}");
    }
}
