//! `bench --agents N --agent I`: this host's part of one test run from N hosts. It wraps the
//! single-host bench rather than repeating it: the same [`prepare`] (capacity and pre-flight,
//! on this host's share), the rendezvous ([`loadlab_agents`]), the same measurement started
//! at the one start time, and on agent 0 the same [`judge`], of the whole test's
//! configuration, on the result with every other agent's part added exactly.

use std::net::{SocketAddr, TcpListener};
use std::sync::Arc;
use std::time::Duration;

use loadlab_agents::auth::Token;
use loadlab_agents::coordinator::{Coordinator, Counters, Lost, Plan, Roster, Seen};
use loadlab_agents::member::{Hello, Member};
use loadlab_agents::part::{self, Part};
use loadlab_agents::{load, AgentsError};
use loadlab_engine::{BenchResult, Control, HdrLog, Share};

use super::across::{self, AgentLost, AgentRow};
use super::report::Report;
use super::{judge, prepare, BenchError, Judged, Request};
use crate::executor::Measure;
use crate::limit::{Limit, LimitedBy};

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
}

/// How an agent's part ended.
#[derive(Debug)]
pub enum Outcome {
    /// Agent 0: the whole test merged and judged, with this host's own interval log (its
    /// `--hdr-log`; the merged one is the judged result's).
    Merged { judged: Box<Judged>, own_log: Option<HdrLog>, lost: Option<Lost> },
    /// Another agent: its own part, judged as such, and why agent 0 stopped it early, if it
    /// did.
    Member { judged: Box<Judged>, stopped: Option<String> },
}

/// Why an agent's part did not run or could not be merged.
#[derive(Debug, thiserror::Error)]
pub enum AgentError {
    #[error(transparent)]
    Bench(#[from] BenchError),
    #[error(transparent)]
    Agents(#[from] AgentsError),
    /// An agent's measurements could not be added (another version, a corrupt message).
    #[error("agent {index}'s measurements: {reason}")]
    Merge { index: usize, reason: String },
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
        return coordinate(whole, mine, agents, load, measure, control, address);
    }
    let hello =
        Hello { index: agents.share.index, of: agents.share.of, host: agents.host.clone(), load };
    let member = Member::join(agents.rendezvous, &agents.token, hello, agents.timeout)?;
    // The engine waits for the start after its setup, and its clock's origin is the start.
    mine.config.start_at = Some(wall(member.start_local));
    let running = member.begin(control)?;
    let result = measure.measure(&mine.config, address, "").map_err(BenchError::Engine)?;
    let late = result.start_late.as_nanos() as u64;
    let judged = judge(mine, address, result, capped);
    let stopped = running.end(part_of(&judged.result, &judged.report), late)?;
    Ok(Outcome::Member { judged: Box::new(judged), stopped })
}

/// Agent 0: the rendezvous, its own part, then the merge and one judgement of the whole.
fn coordinate(
    whole: Request,
    mut mine: Request,
    agents: &Agents,
    load: Vec<(String, String)>,
    measure: &mut dyn Measure,
    control: Arc<Control>,
    address: SocketAddr,
) -> Result<Outcome, AgentError> {
    let listener = TcpListener::bind(agents.rendezvous)
        .map_err(|source| AgentsError::Io { context: "listening on --rendezvous", source })?;
    let plan =
        Plan { of: agents.share.of, token: agents.token.clone(), timeout: agents.timeout, load };
    let mut coordinator = Coordinator::gather(listener, plan)?;
    let start = coordinator.start()?;
    let roster = coordinator.roster(&agents.host);
    let mut watch = coordinator.watch(control, agents.others.clone(), start);
    mine.config.start_at = Some(wall(start));
    let own = measure.measure(&mine.config, address, "");
    let late = own.as_ref().map_or(0, |r| r.start_late.as_nanos() as u64);
    if own.as_ref().map_or(true, |r| r.interrupted) {
        watch.stop_all("agent 0's run was interrupted or failed");
    }
    // The others are awaited even when this host's run failed, so that they are stopped and
    // none is left waiting.
    let (seen, lost) = watch.finish();
    let mut result = own.map_err(BenchError::Engine)?;
    let own_log = result.hdr_log.clone();
    let own_part = part_of(&result, &Report::new(&mine.config, address, &result));
    for s in &seen {
        if let Some((p, _)) = &s.part {
            part::merge_into(&mut result, p)
                .map_err(|reason| AgentError::Merge { index: s.index, reason })?;
        }
    }
    let mut judged = judge(whole, address, result, None);
    let rows = rows(&roster, &seen, (&own_part, late), &agents.share);
    across_hosts(&mut judged.report, &rows, lost);
    let scheduled = judged.report.rate.is_some();
    judged.report.start_skew_us = Some(across::start_skew_us(&rows, scheduled));
    judged.report.agents = Some(rows);
    Ok(Outcome::Merged { judged: Box::new(judged), own_log, lost })
}

/// The `agents` rows: each agent's share, counts, percentiles, clock and start, flags.
fn rows(roster: &[Roster], seen: &[Seen], own: (&Part, u64), share: &Share) -> Vec<AgentRow> {
    roster
        .iter()
        .map(|r| {
            let seen = seen.iter().find(|s| s.index == r.index);
            let part = match (r.index, seen) {
                (0, _) => Some(own),
                (_, Some(s)) => s.part.as_ref().map(|(p, l)| (&**p, *l)),
                (_, None) => None,
            };
            let beat = seen.map_or((0, 0), |s| (s.completed, s.failed));
            AgentRow::new(r, Share { index: r.index, of: share.of }, part, beat)
        })
        .collect()
}

/// Trust across hosts: a flag on any agent is a flag on the merged figure, naming the agent;
/// the merged limit is the client's when any agent's is; a lost agent marks the result.
fn across_hosts(report: &mut Report, rows: &[AgentRow], lost: Option<Lost>) {
    for row in rows.iter().filter(|r| !r.flags.is_empty()) {
        report.warnings.push(format!(
            "agent {} ({}): {}",
            row.index,
            row.host,
            row.flags.join(", ")
        ));
    }
    let client = rows.iter().find(|r| r.flags.iter().any(|f| f == "client_limited"));
    if let (Some(row), false) = (client, report.limited_by.limit == Limit::Client) {
        report.limited_by = LimitedBy {
            limit: Limit::Client,
            evidence: format!("agent {} ({}) was limited by its client", row.index, row.host),
        };
    }
    report.agent_lost = lost.map(|l| AgentLost { index: l.index, second: l.second });
    if let Some(l) = lost {
        report.warnings.push(format!(
            "agent {} was lost in second {}: every agent stopped; the figures are what was measured until then",
            l.index, l.second
        ));
    }
}

/// An agent's measurements with its own percentiles and flags.
fn part_of(result: &BenchResult, report: &Report) -> Part {
    let mut part = Part::of(result);
    (part.p50_us, part.p99_us) = (report.latency_us.p50, report.latency_us.p99);
    part.flags = flags_of(report);
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
        (report.limited_by.limit == Limit::Client, "client_limited"),
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
