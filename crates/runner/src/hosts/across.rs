//! What the report of a test run from several hosts adds: one row per agent (`agents` in the
//! JSON), the mark of an agent lost, and the per-second rows made the whole test's.

use loadlab_agents::clock::Offset;
use loadlab_agents::coordinator::Roster;
use loadlab_agents::part::Part;
use loadlab_agents::stream::Seconds;
use loadlab_engine::{BenchResult, Pacing, Share};
use loadlab_store::Flag;
use serde::Serialize;

use crate::judge::limit::{Limit, LimitedBy};
use crate::judge::seconds::{AgentFlags, Second};

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
    /// Its own trust flags (saturated, starved, network_bound, schedule_missed): each is
    /// also a warning on the merged figures.
    pub flags: Vec<String>,
    /// What limited its own figures, as it judged them, with the evidence (null for an
    /// agent lost): the merged verdict is chosen from these ([`merged_limit`]).
    pub limited_by: Option<LimitedBy>,
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
            share: share_label(share),
            completed: Some(part.map_or(beat.0, |(p, _)| p.completed_failed().0)),
            failed: Some(part.map_or(beat.1, |(p, _)| p.completed_failed().1)),
            p50_us: part.map(|(p, _)| p.p50_us),
            p99_us: part.map(|(p, _)| p.p99_us),
            clock_offset_us: us(offset_ns as f64),
            clock_error_us: us(rtt_ns as f64 / 2.0),
            start_late_us: part.map(|(_, late)| us(late as f64)),
            flags: part.map(|(p, _)| p.flags.clone()).unwrap_or_else(|| vec!["lost".into()]),
            limited_by: part.and_then(|(p, _)| p.limited_by.clone()),
        }
    }
}

/// An agent's share in words: `agent 1 of 4`, or `agent 1 of 2, weight 1 of 4`.
pub fn share_label(share: Share) -> String {
    match share.weighted {
        None => format!("agent {} of {}", share.index, share.of),
        Some(w) => {
            format!("agent {} of {}, weight {} of {}", share.index, share.of, w.weight, w.total)
        }
    }
}

/// The fraction of the whole test that `share` is: its slots of all of them.
pub fn fraction(share: Share) -> f64 {
    match share.weighted {
        None => 1.0 / share.of.max(1) as f64,
        Some(w) => w.weight as f64 / w.total.max(1) as f64,
    }
}

/// An agent's own result made to say what it was offered: its share of the schedule. The
/// engine strides the one global schedule (each agent takes the arrivals of its slots), so its
/// result names the whole test's rate; judged as it came, an agent's rate would be its share
/// of the requests against the whole offer ("achieved below the offered"), and its limit and
/// knee those of a host that fell short.
pub fn own_share(result: &mut BenchResult, share: Share) {
    let f = fraction(share);
    match &mut result.pacing {
        Pacing::Closed => {}
        Pacing::Open { rate, .. } | Pacing::Sessions { rate, .. } => *rate *= f,
    }
}

/// What an agent other than agent 0 says of its own report: that it is its share of the
/// test, and the whole test's offered rate beside its own (agent 0 reports the whole).
#[derive(Debug, Clone, Serialize)]
pub struct OwnShare {
    /// [`share_label`]: `agent 1 of 4`.
    pub agent: String,
    /// The whole test's offered rate, requests per second (null in the closed loop); this
    /// report's `rate.offered_rps` is its share of it.
    pub test_offered_rps: Option<f64>,
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

/// The merged test's per-second rows, as [`crate::judge::seconds::of`] gave them from the added
/// buckets and histograms, made the whole test's: the client's CPU share over every agent's
/// workers (not agent 0's alone, `own_workers`, over which the rows' share was taken), and
/// each second's flags those of every agent's own second (each agent judged its CPU,
/// descriptors and schedule on its own counters), naming the agents. `parts`: each agent's
/// index and measurements (an agent lost has none, and no flags to give).
pub fn merged_seconds(rows: &mut [Second], parts: &[(usize, &Part)], own_workers: usize) {
    let workers: usize = parts.iter().map(|(_, p)| p.workers).sum();
    for row in rows.iter_mut() {
        row.client_cpu *= own_workers.max(1) as f64 / workers.max(1) as f64;
        let mut flags: Vec<Flag> = Vec::new();
        row.flagged_agents.clear();
        for (agent, part) in parts {
            let Some(theirs) = part.second_flags.get(row.second as usize) else { continue };
            if theirs.is_empty() {
                continue;
            }
            for f in theirs.iter().filter(|f| !flags.contains(f)).cloned().collect::<Vec<_>>() {
                flags.push(f);
            }
            row.flagged_agents.push(AgentFlags { agent: *agent, flags: theirs.clone() });
        }
        row.flags = flags;
    }
}

/// An agent lost during the run.
#[derive(Debug, Clone, Copy, Serialize)]
pub struct AgentLost {
    pub index: usize,
    /// The second of the test in which it was lost.
    pub second: u64,
}

/// The merged test's limit, chosen from the agents' own verdicts: the client's when any
/// agent's is (a client-bound agent sent less than its share, so the sum is the clients'
/// figure, not the server's), else the network's when any agent's is (the same reasoning for
/// its link); each naming the agents and their evidence. Otherwise `merged`, the judgement
/// of the merged result.
pub fn merged_limit(merged: LimitedBy, rows: &[AgentRow]) -> LimitedBy {
    for limit in [Limit::Client, Limit::Network] {
        let held: Vec<String> = rows
            .iter()
            .filter_map(|r| {
                let l = r.limited_by.as_ref().filter(|l| l.limit == limit)?;
                Some(format!("agent {} ({}): {}", r.index, r.host, l.evidence))
            })
            .collect();
        if !held.is_empty() {
            return LimitedBy { limit, evidence: held.join("; ") };
        }
    }
    merged
}

/// A test that lost an agent: who was lost and when (all of them, in order), and with an open
/// loop the shortfall of each second.
#[derive(Debug, Clone, Serialize)]
pub struct Partial {
    pub lost: Vec<AgentLost>,
    /// Whether the others went on (`--on-agent-loss continue`) or all stopped.
    pub continued: bool,
    /// Open loop and sessions: per second of the test, the arrivals due over all agents and
    /// the requests sent; empty in the closed loop, which has no schedule to fall short of.
    pub shortfall: Vec<Shortfall>,
}

impl Partial {
    /// Over the whole test, the arrivals due and not sent: a lost agent's share from its loss
    /// on and what the others left unsent. Over the whole test, not the sum of the seconds'
    /// `not_sent`: a request sent just after a second's turn can count as due in one second
    /// and sent in the next.
    pub fn not_sent(&self) -> u64 {
        let (due, sent) = self.shortfall.iter().fold((0, 0), |(d, s), x| (d + x.due, s + x.sent));
        due.saturating_sub(sent)
    }
}

/// One second's arrivals due, requests sent and completed, over all agents.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
pub struct Shortfall {
    pub second: u64,
    pub due: u64,
    pub sent: u64,
    /// Due and not sent: `due - sent`, or 0.
    pub not_sent: u64,
    /// Completed in the second: with `sent`, the rows add up to the merged totals (every
    /// agent stopped streams its partial last second; a lost one's end at its loss).
    pub completed: u64,
}

/// The shortfall of each of `seconds` seconds, or more while any agent streamed a later one
/// (an agent stopped a little after agent 0's end): each agent's streamed `due`, `sent` and
/// `completed` (`agents`: index and its seconds); a lost agent's due from its loss on is what
/// its share of the schedule, `due_each[index]` arrivals a second, would have been. `None`
/// for `due_each` (the closed loop): no shortfall.
pub fn shortfall(
    agents: &[(usize, &Seconds)],
    lost: &[AgentLost],
    due_each: Option<&[f64]>,
    seconds: u64,
) -> Vec<Shortfall> {
    let Some(due_each) = due_each else { return Vec::new() };
    let streamed = agents.iter().filter_map(|(_, s)| s.keys().next_back()).max();
    let seconds = seconds.max(streamed.map_or(0, |last| u64::from(*last) + 1));
    (0..seconds)
        .map(|second| {
            let mut row = Shortfall { second, due: 0, sent: 0, not_sent: 0, completed: 0 };
            for (index, streamed) in agents {
                let at = u32::try_from(second).ok().and_then(|s| streamed.get(&s));
                // A lost agent's second in progress is never streamed, and it is found lost
                // only once silent for a while: its share is due from the first second it did
                // not stream, not from the second its loss was noticed in.
                let after = streamed.keys().next_back().is_none_or(|l| second > u64::from(*l));
                let gone = lost.iter().any(|l| l.index == *index && (second >= l.second || after));
                match at {
                    Some(s) => {
                        row.due += s.counts.due;
                        row.sent += s.counts.sent;
                        row.completed += s.counts.completed;
                    }
                    None if gone => row.due += due_each.get(*index).map_or(0, |d| d.round() as u64),
                    None => {}
                }
            }
            row.not_sent = row.due.saturating_sub(row.sent);
            row
        })
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    fn row(index: usize, limit: Option<(Limit, &str)>) -> AgentRow {
        AgentRow {
            index,
            host: format!("h{index}"),
            share: String::new(),
            completed: None,
            failed: None,
            p50_us: None,
            p99_us: None,
            clock_offset_us: 0.0,
            clock_error_us: 0.0,
            start_late_us: None,
            flags: Vec::new(),
            limited_by: limit.map(|(limit, e)| LimitedBy { limit, evidence: e.to_string() }),
        }
    }

    #[test]
    fn the_merged_limit_is_the_clients_when_any_agents_is_naming_it_and_its_evidence() {
        let offered = LimitedBy { limit: Limit::Offered, evidence: "kept up".into() };
        let rows = [
            row(0, Some((Limit::Offered, "kept up"))),
            row(1, Some((Limit::Network, "link 98% of 1 Gbit/s"))),
            row(2, Some((Limit::Client, "1.00 of 1 CPUs busy"))),
            row(3, None),
        ];
        let merged = merged_limit(offered.clone(), &rows);
        assert_eq!(merged.limit, Limit::Client);
        assert_eq!(merged.evidence, "agent 2 (h2): 1.00 of 1 CPUs busy");
        // Without a client-bound agent, the network-bound one decides, its evidence kept.
        let merged = merged_limit(offered.clone(), &rows[..2]);
        assert_eq!(merged.limit, Limit::Network);
        assert!(merged.evidence.contains("agent 1 (h1): link 98%"), "{}", merged.evidence);
        // No agent bound by its client or link: the merged result's own judgement stands.
        assert_eq!(merged_limit(offered.clone(), &rows[..1]), offered);
    }
}

#[cfg(test)]
mod seconds_tests {
    use super::*;
    use loadlab_engine::Pacing;

    fn second(n: u32, flags: Vec<Flag>) -> Second {
        Second {
            second: n,
            partial_s: None,
            offered: Some(10),
            achieved: 10,
            completed: 10,
            failed: 0,
            failed_by: Default::default(),
            p50_us: None,
            p90_us: None,
            p99_us: None,
            connections_open: 2,
            client_cpu: 0.6,
            flags,
            flagged_agents: Vec::new(),
        }
    }

    #[test]
    fn a_second_flagged_on_any_agent_is_flagged_on_the_merged_row_naming_it() {
        let part = |workers: usize, flags: Vec<Vec<Flag>>| {
            let mut p = Part::of(&crate::fake::result(Pacing::Closed, 1, 2.0, 100, 0.01));
            (p.workers, p.second_flags) = (workers, flags);
            p
        };
        let zero = part(1, vec![vec![], vec![Flag::Errors]]);
        let one =
            part(2, vec![vec![Flag::ClientStarved], vec![Flag::Errors, Flag::ScheduleMissed]]);
        // The merged rows as judged on agent 0's thread count, with its CPU flag wrongly raised.
        let mut rows = vec![second(0, vec![Flag::ClientSaturated]), second(1, vec![])];
        merged_seconds(&mut rows, &[(0, &zero), (1, &one)], 1);
        assert_eq!(rows[0].flags, [Flag::ClientStarved]);
        assert_eq!(rows[1].flags, [Flag::Errors, Flag::ScheduleMissed]);
        let named: Vec<usize> = rows[1].flagged_agents.iter().map(|a| a.agent).collect();
        assert_eq!(named, [0, 1]);
        assert_eq!(rows[0].flagged_agents[0].agent, 1);
        // 0.6 of agent 0's one thread is 0.2 of the test's three.
        assert!((rows[0].client_cpu - 0.2).abs() < 1e-9, "{}", rows[0].client_cpu);
    }
}

#[cfg(test)]
mod shortfall_tests {
    use super::*;
    use loadlab_agents::stream::Second;
    use loadlab_engine::live::Counts;

    fn seconds(per_second: &[(u64, u64)]) -> Seconds {
        per_second
            .iter()
            .enumerate()
            .map(|(i, (due, sent))| {
                let second = i as u32;
                let counts =
                    Counts { due: *due, sent: *sent, completed: *sent, ..Default::default() };
                (second, Second { second, counts, ..Default::default() })
            })
            .collect()
    }

    #[test]
    fn a_lost_agents_seconds_count_until_its_loss_and_its_share_is_short_after() {
        // Agent 1 streamed two seconds, then was lost in second 2; agent 0 ran all four.
        let zero = seconds(&[(50, 50), (50, 49), (50, 50), (50, 50)]);
        let one = seconds(&[(50, 50), (50, 50)]);
        let lost = [AgentLost { index: 1, second: 2 }];
        let s = shortfall(&[(0, &zero), (1, &one)], &lost, Some(&[50.0, 50.0]), 4);
        let rows: Vec<(u64, u64, u64)> = s.iter().map(|r| (r.due, r.sent, r.not_sent)).collect();
        assert_eq!(rows, [(100, 100, 0), (100, 99, 1), (100, 50, 50), (100, 50, 50)]);
        let completed: Vec<u64> = s.iter().map(|r| r.completed).collect();
        assert_eq!(completed, [100, 99, 50, 50]);
        // An agent that streamed a second past the seconds asked for extends the rows.
        let longer = seconds(&[(50, 50), (50, 50), (50, 50), (50, 50), (0, 3)]);
        let s = shortfall(&[(0, &longer), (1, &one)], &lost, Some(&[50.0, 50.0]), 4);
        assert_eq!(s.len(), 5);
        assert_eq!((s[4].due, s[4].sent, s[4].completed), (50, 3, 3));
        // Lost as second 3 began, found lost in second 4: its share is due from second 2,
        // the one it did not stream, not from the second its loss was noticed in.
        let late = [AgentLost { index: 1, second: 4 }];
        let s = shortfall(&[(0, &zero), (1, &one)], &late, Some(&[50.0, 50.0]), 4);
        let due: Vec<u64> = s.iter().map(|r| r.due).collect();
        assert_eq!(due, [100, 100, 100, 100]);
        let partial = Partial { lost: late.to_vec(), continued: true, shortfall: s };
        assert_eq!(partial.not_sent(), 101, "over the whole test");
        // The closed loop has no schedule: no shortfall to give.
        assert!(shortfall(&[(0, &zero)], &lost, None, 4).is_empty());
    }
}
