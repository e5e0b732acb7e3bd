//! What the report of a test run from several hosts adds: one row per agent (`agents` in the
//! JSON) and the mark of an agent lost.

use loadlab_agents::clock::Offset;
use loadlab_agents::coordinator::Roster;
use loadlab_agents::part::Part;
use loadlab_engine::Share;
use serde::Serialize;

/// One agent of the test, as agent 0 saw it.
#[derive(Debug, Clone, Serialize)]
pub struct AgentRow {
    pub index: usize,
    pub host: String,
    /// Its share, e.g. "agent 1 of 4".
    pub share: String,
    /// For an agent lost, its last heartbeat's counts: requests it made that the merged
    /// figures do not hold (its measurements never came).
    pub completed: Option<u64>,
    pub failed: Option<u64>,
    pub p50_us: Option<u64>,
    pub p99_us: Option<u64>,
    /// Its clock minus agent 0's, and the bound of that figure's error (half the round trip
    /// it was measured over), in microseconds.
    pub clock_offset_us: f64,
    pub clock_error_us: f64,
    /// How late it started after the agreed time by its own clock, microseconds; with the
    /// clock error, a bound on its start skew.
    pub start_late_us: Option<f64>,
    /// Its own trust flags (saturated, starved, network_bound, schedule_missed,
    /// client_limited): each is also a warning on the merged figures.
    pub flags: Vec<String>,
}

impl AgentRow {
    /// The row of agent `r`: from its measurements, or else from `beat`, its last heartbeat's
    /// (completed, failed).
    pub fn new(r: &Roster, share: Share, part: Option<(&Part, u64)>, beat: (u64, u64)) -> AgentRow {
        let Offset { offset_ns, rtt_ns } = r.offset;
        let us = |ns: f64| ns / 1000.0;
        AgentRow {
            index: r.index,
            host: r.host.clone(),
            share: format!("agent {} of {}", share.index, share.of),
            completed: Some(part.map_or(beat.0, |(p, _)| p.completed_failed().0)),
            failed: Some(part.map_or(beat.1, |(p, _)| p.completed_failed().1)),
            p50_us: part.map(|(p, _)| p.p50_us),
            p99_us: part.map(|(p, _)| p.p99_us),
            clock_offset_us: us(offset_ns as f64),
            clock_error_us: us(rtt_ns as f64 / 2.0),
            start_late_us: part.map(|(_, late)| us(late as f64)),
            flags: part.map(|(p, _)| p.flags.clone()).unwrap_or_else(|| vec!["lost".into()]),
        }
    }
}

/// The largest start skew of the test, an upper bound, microseconds. Under a schedule (open
/// loop, sessions) every agent's clock origin is the agreed start itself, whenever its thread
/// woke, so the schedules are apart by the clock error alone (a late wake-up makes that
/// agent's first arrivals late, measured in their latency). The closed loop has no schedule:
/// its connections start when the agent wakes, so the spread of the agents' lateness adds.
pub fn start_skew_us(rows: &[AgentRow], scheduled: bool) -> f64 {
    let late: Vec<f64> = rows.iter().filter_map(|r| r.start_late_us).collect();
    let spread = late.iter().cloned().fold(f64::MIN, f64::max)
        - late.iter().cloned().fold(f64::MAX, f64::min);
    let error = rows.iter().map(|r| r.clock_error_us).fold(0.0, f64::max);
    if scheduled {
        error
    } else {
        spread.max(0.0) + error
    }
}

/// An agent lost during the run.
#[derive(Debug, Clone, Copy, Serialize)]
pub struct AgentLost {
    pub index: usize,
    /// The second of the test in which it was lost.
    pub second: u64,
}
