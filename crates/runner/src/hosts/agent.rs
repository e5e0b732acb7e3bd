//! `bench --agents N --agent I`: this host's part of one test run from N hosts. It wraps the
//! single-host bench rather than repeating it: the same [`prepare`] (capacity and pre-flight,
//! on this host's share), the rendezvous ([`loadlab_agents`]), the same measurement started
//! at the one start time, and on agent 0 the same [`judge`], of the whole test's
//! configuration, on the result with every other agent's part added exactly.

use std::net::{SocketAddr, TcpListener};
use std::sync::Arc;
use std::time::Duration;

use loadlab_agents::auth::Token;
use loadlab_agents::coordinator::{self, Counters, Lost, OnLoss, Plan, Roster, Seen};
use loadlab_agents::member::{Hello, Member, Stopped};
use loadlab_agents::part::Part;
use loadlab_agents::stream::{self, Deltas, Seconds};
use loadlab_agents::{load, AgentsError};
use loadlab_engine::{BenchConfig, BenchResult, Control, HdrLog, Share};

use super::across::{self, AgentLost, AgentRow, OwnShare, Partial};
use super::fleet::{self, Fleet, HostsError, Launch};
use crate::commands::bench::outcome::Report;
use crate::commands::bench::{judge, prepare, BenchError, Judged, Request};
use crate::commands::run::executor::Measure;

/// This host's place in the test.
#[derive(Debug, Clone)]
pub struct Agents {
    pub share: Share,
    /// Agent 0 listens here; the others connect to it.
    pub rendezvous: SocketAddr,
    pub token: Token,
    pub timeout: Duration,
    /// This host's name, for the report.
    pub host: String,
    /// Agent 0: the other agents' counters as their heartbeats arrive, for a live progress
    /// line of the whole test.
    pub others: Arc<Counters>,
    /// `--on-agent-loss`: stop every agent (the default) or go on without the lost one.
    pub on_loss: OnLoss,
    /// `--agent-weight`: this host's share is its weight over the sum of all agents' weights,
    /// which agent 0 learns at ready time and sends with the start.
    pub weight: u64,
    /// Agent 0 of `--agent-hosts`: the others, started by it through ssh.
    pub launch: Option<Launch>,
    /// Agent 0 of `sweep`: `--merged-hdr-log`, every step's merged intervals (`bench` writes
    /// its own from the merged result).
    pub merged_hdr_log: Option<std::path::PathBuf>,
}

/// How an agent's part ended.
#[derive(Debug)]
pub enum Outcome {
    /// Agent 0: the whole test merged and judged, with this host's own interval log (its
    /// `--hdr-log`; the merged one is the judged result's).
    Merged { judged: Box<Judged>, own_log: Option<HdrLog>, lost: Option<Lost> },
    /// Another agent: its own part, judged as such, and why agent 0 stopped it early, if it
    /// did (an agent lost, or on purpose: agent 0 was interrupted).
    Member { judged: Box<Judged>, stopped: Option<Stopped> },
}

/// Why an agent's part did not run or could not be merged.
#[derive(Debug, thiserror::Error)]
pub enum AgentError {
    #[error(transparent)]
    Bench(#[from] BenchError),
    #[error(transparent)]
    Agents(#[from] AgentsError),
    /// What agents cannot run together yet: the user's to change.
    #[error("{0}")]
    Unsupported(String),
    /// An agent's measurements could not be added (another version, a corrupt message).
    #[error("agent {index}'s measurements: {reason}")]
    Merge { index: usize, reason: String },
    /// `--agent-hosts`: starting the others, or their sessions' end before the start.
    #[error(transparent)]
    Hosts(#[from] HostsError),
    /// A file an output flag names could not be created or written.
    #[error("{flag} {}: {source}", path.display())]
    File { flag: &'static str, path: std::path::PathBuf, source: std::io::Error },
}

/// Runs this host's part of `request` (the whole test, as every agent's command line gives
/// it). `control` is the one `measure` stops by; `progress` is told the other agents'
/// counters while agent 0 runs.
pub fn run(
    request: Request,
    agents: &Agents,
    measure: &mut dyn Measure,
    control: Arc<Control>,
    warn: &mut dyn FnMut(&str),
) -> Result<Outcome, AgentError> {
    let whole = request.clone();
    let mut mine = request;
    mine.config.take_share(agents.share).map_err(BenchError::Engine)?;
    // Agent 0 merges the intervals of everyone: every agent keeps them.
    mine.config.hdr_log = true;
    let (address, capped) = prepare(&mut mine.config, mine.over_capacity, measure)?;
    if let Some(w) = &capped {
        warn(w);
    }
    let load = load::describe(&whole.config);
    if agents.share.index == 0 {
        return coordinate(whole, mine, agents, (load, address), measure, control, warn);
    }
    let (index, of, weight) = (agents.share.index, agents.share.of, agents.weight);
    let hello = Hello { index, of, host: agents.host.clone(), load, weight };
    let member = Member::join(agents.rendezvous, &agents.token, hello, agents.timeout)?;
    let (mut mine, capped) = reshare(&whole, mine, capped, index, &member.weights)?;
    // The engine waits for the start after its setup, and its clock's origin is the start.
    mine.config.start_at = Some(wall(member.start_local));
    let running = member.begin(control)?;
    let mut result = measure.measure(&mine.config, address, "").map_err(BenchError::Engine)?;
    let late = result.start_late.as_nanos() as u64;
    let share = mine.config.share;
    across::own_share(&mut result, share);
    // The intervals were kept for agent 0's merge; the report echoes the flag as given.
    mine.config.hdr_log = whole.config.hdr_log;
    let mut judged = judge(measure, mine, address, result, capped);
    let test_offered_rps = whole.config.pacing.offered_rps();
    judged.report.share = Some(OwnShare { agent: across::share_label(share), test_offered_rps });
    let stopped = running.end(part_of(&judged.result, &judged.report), late)?;
    Ok(Outcome::Member { judged: Box::new(judged), stopped })
}

/// Agent 0: the rendezvous (the others started first with `--agent-hosts`), its own part, then
/// the merge and one judgement of the whole.
fn coordinate(
    whole: Request,
    mine: Request,
    agents: &Agents,
    (load, address): (Vec<(String, String)>, SocketAddr),
    measure: &mut dyn Measure,
    control: Arc<Control>,
    warn: &mut dyn FnMut(&str),
) -> Result<Outcome, AgentError> {
    let (of, on_loss) = (agents.share.of, agents.on_loss);
    let (listener, mut fleet) = match &agents.launch {
        Some(launch) => fleet::start(
            launch,
            of,
            launch.rendezvous.is_some().then_some(agents.rendezvous),
            warn,
        )?,
        None => (bind(agents.rendezvous)?, Fleet::default()),
    };
    let (token, timeout) = (agents.token.clone(), agents.timeout);
    let plan = Plan { of, token, timeout, load, on_loss, weight: agents.weight };
    let mut coordinator = fleet.gather(listener, plan, &control)?;
    let weights = coordinator.weights();
    let (mut mine, _) = reshare(&whole, mine, None, 0, &weights)?;
    let start = coordinator.start()?;
    let roster = coordinator.roster(&agents.host);
    // Agent 0's own seconds too, for the shortfall of a test that lost an agent.
    control.live.enable();
    let mut watch = coordinator.watch(control.clone(), agents.others.clone(), start);
    mine.config.start_at = Some(wall(start));
    let own = measure.measure(&mine.config, address, "");
    let late = own.as_ref().map_or(0, |r| r.start_late.as_nanos() as u64);
    let mut own_seconds = Seconds::new();
    stream::add_all(&mut own_seconds, &Deltas::default().seconds(control.live.take()));
    if own.as_ref().map_or(true, |r| r.interrupted) {
        watch.stop_all("agent 0's run was interrupted or failed");
    }
    // The others are awaited even when this host's run failed, so that they are stopped and
    // none is left waiting.
    let (seen, lost) = watch.finish();
    let sessions = fleet.finish();
    let mut result = own.map_err(BenchError::Engine)?;
    let own_log = result.hdr_log.clone();
    let own_part = part_of(&result, &Report::new(&mine.config, address, &result));
    coordinator::merge_all(&mut result, &seen)
        .map_err(|(index, reason)| AgentError::Merge { index, reason })?;
    let (due_each, secs) = (due_each(&whole.config, &weights), seconds_of(&result));
    let mut judged = judge(measure, whole, address, result, None);
    let mut parts = vec![(0, &own_part)];
    parts.extend(seen.iter().filter_map(|s| Some((s.index, &*s.part.as_ref()?.0))));
    let seconds = judged.report.seconds.as_deref_mut().unwrap_or_default();
    across::merged_seconds(seconds, &parts, own_part.workers);
    let rows = rows(&roster, &seen, (&own_part, late), &weights);
    across_hosts(&mut judged.report, &rows, &lost, on_loss == OnLoss::Continue);
    judged.report.warnings.extend(sessions);
    if !lost.is_empty() {
        let mut streamed = vec![(0, &own_seconds)];
        streamed.extend(seen.iter().map(|s| (s.index, &s.seconds)));
        let continued = on_loss == OnLoss::Continue;
        // Sessions' shortfall counts arrivals (sessions), their `not_sent` requests.
        let scheduled_requests = judged.report.mode == "open";
        let partial = partial(&streamed, &lost, due_each.as_deref(), secs, continued);
        // One account of what was never sent: the schedule's line counts the lost agent's
        // share as the shortfall does, not only what the agents still running left unsent.
        if let Some(rate) = judged.report.rate.as_mut().filter(|_| scheduled_requests) {
            rate.not_sent = partial.not_sent();
        }
        judged.report.partial = Some(partial);
    }
    let scheduled = judged.report.rate.is_some();
    judged.report.start_skew_us = Some(across::start_skew_us(&rows, scheduled));
    judged.report.agents = Some(rows);
    let lost = lost.first().copied();
    Ok(Outcome::Merged { judged: Box::new(judged), own_log, lost })
}

/// The rendezvous listener of an agent 0 whose others start by themselves.
fn bind(at: SocketAddr) -> Result<TcpListener, AgentsError> {
    TcpListener::bind(at)
        .map_err(|source| AgentsError::Io { context: "listening on --rendezvous", source })
}

/// Each agent's arrivals due a second, by `weights`; `None` in the closed loop.
pub(crate) fn due_each(whole: &BenchConfig, weights: &[u64]) -> Option<Vec<f64>> {
    whole
        .pacing
        .rate()
        .map(|r| (0..weights.len()).map(|i| r * across::fraction(share_of(i, weights))).collect())
}

/// The seconds a result's shortfall is given for: its measured ones, a partial last included.
pub(crate) fn seconds_of(result: &BenchResult) -> u64 {
    result.duration.as_secs_f64().ceil() as u64
}

/// A result that lost agents: which, when, and the shortfall per second (due and not sent).
pub(crate) fn partial(
    streamed: &[(usize, &Seconds)],
    lost: &[Lost],
    due_each: Option<&[f64]>,
    secs: u64,
    continued: bool,
) -> Partial {
    let lost: Vec<AgentLost> =
        lost.iter().map(|l| AgentLost { index: l.index, second: l.second }).collect();
    let shortfall = across::shortfall(streamed, &lost, due_each, secs);
    Partial { lost, continued, shortfall }
}

/// The `agents` rows: each agent's share, counts, percentiles, clock and start, flags.
fn rows(roster: &[Roster], seen: &[Seen], own: (&Part, u64), weights: &[u64]) -> Vec<AgentRow> {
    roster
        .iter()
        .map(|r| {
            let seen = seen.iter().find(|s| s.index == r.index);
            let part = match (r.index, seen) {
                (0, _) => Some(own),
                (_, Some(s)) => s.part.as_ref().map(|(p, l)| (&**p, *l)),
                (_, None) => None,
            };
            // A lost agent: what it streamed, else its last heartbeat's counts.
            let beat = seen.map_or((0, 0), |s| match s.seconds.is_empty() {
                true => (s.completed, s.failed),
                false => s
                    .seconds
                    .values()
                    .fold((0, 0), |(c, f), x| (c + x.counts.completed, f + x.counts.failed)),
            });
            AgentRow::new(r, share_of(r.index, weights), part, beat)
        })
        .collect()
}

/// Trust across hosts: a flag on any agent is a flag on the merged figure, naming the agent;
/// the merged limit is the client's when any agent's is; a lost agent marks the result.
fn across_hosts(report: &mut Report, rows: &[AgentRow], lost: &[Lost], continued: bool) {
    for row in rows.iter().filter(|r| !r.flags.is_empty()) {
        report.warnings.push(format!(
            "agent {} ({}): {}",
            row.index,
            row.host,
            row.flags.join(", ")
        ));
    }
    report.limited_by = across::merged_limit(report.limited_by.clone(), rows);
    report.agent_lost = lost.first().map(|l| AgentLost { index: l.index, second: l.second });
    for l in lost {
        report.warnings.push(format!(
            "agent {} was lost in second {}: its figures until then are in the merged ones; {}",
            l.index,
            l.second,
            match continued {
                true => "the others went on without it (partial: see the shortfall)",
                false => "every agent stopped; the figures are what was measured until then",
            }
        ));
    }
}

/// Agent `index`'s share: by `weights` (every agent's, in index order) when any is not 1.
pub(crate) fn share_of(index: usize, weights: &[u64]) -> Share {
    match weights.iter().all(|w| *w == 1) {
        true => Share::new(index, weights.len()),
        false => Share::weighted(index, weights),
    }
}

/// This host's part once every agent's weight is known: taken again from the whole test by
/// its weight (the capacity fitted again to it; the target stays as the pre-flight resolved
/// it), or `mine` as it was when every weight is 1.
fn reshare(
    whole: &Request,
    mine: Request,
    capped: Option<String>,
    index: usize,
    weights: &[u64],
) -> Result<(Request, Option<String>), AgentError> {
    let share = share_of(index, weights);
    if share.weighted.is_none() {
        return Ok((mine, capped));
    }
    let mut again = whole.clone();
    again.config.take_share(share).map_err(BenchError::Engine)?;
    again.config.hdr_log = true;
    again.config.target = mine.config.target;
    let has = crate::judge::capacity::Has::for_config(&again.config);
    let capped = crate::judge::capacity::fit(&mut again.config, again.over_capacity, &has)
        .map_err(BenchError::Capacity)?;
    Ok((again, capped))
}

/// An agent's measurements with its own percentiles and flags.
pub(crate) fn part_of(result: &BenchResult, report: &Report) -> Part {
    let mut part = Part::of(result);
    (part.p50_us, part.p99_us) = (report.latency_us.p50, report.latency_us.p99);
    part.flags = flags_of(report);
    part.limited_by = Some(report.limited_by.clone());
    part.second_flags = report.seconds.iter().flatten().map(|s| s.flags.clone()).collect();
    part
}

/// The flags of an agent's own measurements that weaken a merged figure.
fn flags_of(report: &Report) -> Vec<String> {
    let c = &report.client;
    [
        (c.saturated, "saturated"),
        (c.starved, "starved"),
        (c.network_bound, "network_bound"),
        (report.rate.as_ref().is_some_and(|r| !r.schedule_kept), "schedule_missed"),
    ]
    .into_iter()
    .filter(|(on, _)| *on)
    .map(|(_, name)| name.to_string())
    .collect()
}

/// A start time of the rendezvous (ns since the epoch) on the wall clock.
fn wall(ns: u64) -> std::time::SystemTime {
    std::time::UNIX_EPOCH + Duration::from_nanos(ns)
}
