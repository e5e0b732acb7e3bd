//! The figures of every second of a run whose load changes over time (`--rate A..B`,
//! `--stages`): one [`Second`] per measured second, judged once here so that the text, JSON and
//! CSV rows, the ramp's knee and the report all read the same flags.
//!
//! Latency percentiles come from the very histograms `--hdr-log` writes for that second (the
//! workers' interval histograms merged by [`interval_log::per_second`]), so a row and the log's
//! interval can never disagree. A second's flags are the run's trust rules applied to that
//! second's counters: a client starved at second 40 is flagged at second 40, and only there.
//!
//! A run stopped early (Ctrl-C, `--agents` losing a host) or shorter than its last whole second
//! ends with a partial second: it is a row too, marked with its length (`partial_s`), so that
//! the rows add up to the run's totals. Its counts are of its own length and its CPU share over
//! it; the ramp's knee and the store leave it out ([`whole`]): 0.3 s of counts read as a
//! second would be a false dip.

use std::collections::BTreeMap;

use loadlab_engine::{BenchConfig, BenchResult, ErrorClass, Pacing};
use loadlab_stats::interval_log;
use loadlab_stats::Bucket;
use serde::Serialize;

use crate::judge::trust::{Flag, SATURATION, STARVED_DENIED, STARVED_WAIT};

/// A second counts as behind its schedule when more than this share of its arrivals went out
/// later than the engine's lateness bound (1 ms): the whole run's rule at its 99th percentile.
pub const LATE_SHARE_OF_SECOND: f64 = 0.01;

/// One measured second.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct Second {
    /// From 0, the first measured second.
    pub second: u32,
    /// The last second's length when the run ended within it, in seconds (under 1); absent
    /// for a whole second.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub partial_s: Option<f64>,
    /// What the shape offered this second: arrivals due (x calls for sessions), sent or not;
    /// `None` in the closed loop, which has no offered rate (its next request waits for the
    /// last answer), rather than a 0 that would read as nothing offered.
    pub offered: Option<u64>,
    /// Requests sent in full this second.
    pub achieved: u64,
    pub completed: u64,
    pub failed: u64,
    /// Failures by class, only the classes that occurred.
    pub failed_by: BTreeMap<&'static str, u64>,
    /// Latency of the requests that completed this second (from the due time under a
    /// schedule), from the same histogram as `--hdr-log`'s interval; null with none.
    pub p50_us: Option<u64>,
    pub p90_us: Option<u64>,
    pub p99_us: Option<u64>,
    /// The most connections open at once this second.
    pub connections_open: u64,
    /// CPU the client's workers used this second, as a share of their threads' time.
    pub client_cpu: f64,
    /// The trust flags of this second (the run's rules on this second's counters).
    pub flags: Vec<Flag>,
    /// `--agents`: the agents whose own second was flagged, with their flags (each is in
    /// `flags` too); absent on one host and when no agent's second was.
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub flagged_agents: Vec<AgentFlags>,
}

/// One agent's flags of one second of a test from several hosts.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct AgentFlags {
    pub agent: usize,
    pub flags: Vec<Flag>,
}

impl Second {
    /// Whether the client (its CPU or descriptors), not the server, set this second's pace:
    /// such a second says nothing about the server.
    pub fn client_limited(&self) -> bool {
        self.flags.iter().any(Flag::untrusted)
    }
}

/// Every measured second of `r`, the last one partial (`partial_s`) where the run ended
/// within it; the rows add up to the run's totals. Without the run's interval histograms (no
/// `hdr_log`) the percentiles are null.
pub fn of(cfg: &BenchConfig, r: &BenchResult) -> Vec<Second> {
    let latencies = r.hdr_log.as_ref().and_then(|l| l.latencies.first());
    let per_second = latencies.and_then(|l| interval_log::per_second(l).ok()).unwrap_or_default();
    let latency = |s: u32| per_second.iter().find(|l| l.second == s);
    let calls = match cfg.pacing {
        Pacing::Sessions { calls, .. } => u64::from(calls),
        _ => 1,
    };
    spans(r.duration.as_secs_f64(), r.tally.series.buckets())
        .into_iter()
        .enumerate()
        .map(|(s, (b, length))| {
            let l = latency(s as u32);
            Second {
                second: s as u32,
                partial_s: (length < 1.0).then_some(length),
                offered: (cfg.pacing != Pacing::Closed).then_some(b.due * calls),
                achieved: b.sent,
                completed: b.completed,
                failed: b.failed,
                failed_by: failed_by(&b),
                p50_us: l.map(|l| l.p50_us),
                p90_us: l.map(|l| l.p90_us),
                p99_us: l.map(|l| l.p99_us),
                connections_open: b.open,
                client_cpu: b.cpu_us as f64 / (1e6 * length * r.workers.len().max(1) as f64),
                flags: flags(r, &b, length),
                flagged_agents: Vec::new(),
            }
        })
        .collect()
}

/// The whole seconds of `rows`: all but a partial last one.
pub fn whole(rows: &[Second]) -> &[Second] {
    match rows.split_last() {
        Some((last, whole)) if last.partial_s.is_some() => whole,
        _ => rows,
    }
}

/// The buckets of a run of `duration` seconds, each with its length: one per whole second,
/// then the partial second it ended in, if any. What the engine stamped at or after the end
/// (the last arrivals due before it, sent a few microseconds late, and the CPU spent doing
/// so) goes to the last row, so that nothing counted is left out.
fn spans(duration: f64, buckets: &[Bucket]) -> Vec<(Bucket, f64)> {
    let full = duration.floor();
    let rows = full as usize + usize::from(duration > full);
    let mut spans: Vec<(Bucket, f64)> =
        (0..rows).map(|s| (buckets.get(s).copied().unwrap_or_default(), 1.0)).collect();
    if let Some((last, length)) = spans.last_mut() {
        if duration > full {
            *length = duration - full;
        }
        let open = buckets.iter().skip(rows).fold(last.open, |open, b| open.max(b.open));
        buckets.iter().skip(rows).for_each(|b| last.add(b));
        // The most open at once, not a sum over seconds.
        last.open = open;
    }
    spans
}

fn failed_by(b: &Bucket) -> BTreeMap<&'static str, u64> {
    ErrorClass::ALL
        .iter()
        .filter(|c| b.failed_by[c.index()] > 0)
        .map(|c| (c.name(), b.failed_by[c.index()]))
        .collect()
}

/// The run's trust rules on one second's counters (docs/trust.md), over its `length` in
/// seconds: the client's CPU used or waited for, its descriptors and ports, the schedule kept,
/// the connection pool, failures.
fn flags(r: &BenchResult, b: &Bucket, length: f64) -> Vec<Flag> {
    // The threads' time in this second: a partial second's CPU is judged over its length.
    let threads = r.workers.len().min(r.cpus_available).max(1) as f64 * length;
    let (cpu, wait) = (b.cpu_us as f64 / 1e6, b.cpu_wait_us as f64 / 1e6);
    let mut flags = Vec::new();
    if cpu >= SATURATION * threads {
        flags.push(Flag::ClientSaturated);
    }
    if wait >= STARVED_WAIT * threads && wait >= STARVED_DENIED * (cpu + wait) {
        flags.push(Flag::ClientStarved);
    }
    let exhausted = [ErrorClass::FdUnavail, ErrorClass::AddrUnavail];
    if exhausted.iter().any(|c| b.failed_by[c.index()] > 0) {
        flags.push(Flag::FdExhausted);
    }
    if r.pacing != Pacing::Closed {
        if b.late as f64 > LATE_SHARE_OF_SECOND * b.due.max(1) as f64 {
            flags.push(Flag::ScheduleMissed);
        }
        if b.open >= r.pool as u64 {
            flags.push(Flag::ConnectionsExhausted);
        }
    }
    if b.failed > 0 {
        flags.push(Flag::Errors);
    }
    flags
}

#[cfg(test)]
mod tests {
    use super::*;
    use loadlab_engine::{Arrival, Target};

    fn result(buckets: &[Bucket], workers: usize) -> (BenchConfig, BenchResult) {
        let mut cfg = BenchConfig::new(Target::parse("http://127.0.0.1:9/").unwrap());
        cfg.pacing = Pacing::Open { rate: 100.0, arrival: Arrival::Fixed, max_connections: 50 };
        let mut r = crate::fake::result(cfg.pacing, 1, buckets.len() as f64, 100, 0.1);
        r.workers.truncate(workers);
        r.tally.series.clear();
        for (s, b) in buckets.iter().enumerate() {
            *r.tally.series.at(s) = *b;
        }
        (cfg, r)
    }

    #[test]
    fn each_second_carries_its_own_flags() {
        let calm =
            Bucket { due: 100, sent: 100, completed: 100, cpu_us: 100_000, ..Default::default() };
        let mut starved = calm;
        starved.cpu_wait_us = 400_000;
        let mut late = calm;
        late.late = 5;
        let mut full = calm;
        (full.open, full.failed, full.failed_by[ErrorClass::FdUnavail.index()]) = (50, 1, 1);
        let (cfg, r) = result(&[calm, starved, late, full], 1);
        let rows = of(&cfg, &r);
        let flags: Vec<_> = rows.iter().map(|s| s.flags.clone()).collect();
        assert_eq!(flags[0], []);
        assert_eq!(flags[1], [Flag::ClientStarved]);
        assert_eq!(flags[2], [Flag::ScheduleMissed]);
        assert_eq!(flags[3], [Flag::FdExhausted, Flag::ConnectionsExhausted, Flag::Errors]);
        assert!(!rows[0].client_limited() && rows[1].client_limited() && !rows[2].client_limited());
        assert_eq!(rows[3].failed_by, BTreeMap::from([("fd_unavail", 1)]));
        assert_eq!((rows[0].offered, rows[0].achieved, rows[0].client_cpu), (Some(100), 100, 0.1));
        assert_eq!(rows[0].p50_us, None, "no interval histograms, no percentiles");
        assert!(rows.iter().all(|s| s.partial_s.is_none()), "4 s are 4 whole seconds");
    }

    /// A run stopped within a second has its partial second as a row of its own, marked with
    /// its length, its CPU share and flags judged over that length, so that its rows add up to
    /// its totals; `whole` leaves it out.
    #[test]
    fn a_partial_last_second_is_a_row_of_its_length_and_the_rows_add_up() {
        let mut cfg = BenchConfig::new(Target::parse("http://127.0.0.1:9/").unwrap());
        cfg.pacing = Pacing::Open { rate: 100.0, arrival: Arrival::Fixed, max_connections: 50 };
        let mut r = crate::fake::result(cfg.pacing, 340, 3.4, 100, 0.1);
        r.interrupted = true;
        // 0.38 s of CPU: 95% of the partial second's 0.4 s, 38% of a whole one.
        r.tally.series.at(2).cpu_us = 380_000;
        r.tally.series.at(3).cpu_us = 380_000;
        // Arrivals due before the end, sent just after it.
        r.tally.series.at(4).sent = 2;
        let rows = of(&cfg, &r);
        assert_eq!(rows.len(), 4, "{rows:?}");
        let completed: u64 = rows.iter().map(|s| s.completed).sum();
        assert_eq!(completed, r.tally.completed);
        let sent: u64 = rows.iter().map(|s| s.achieved).sum();
        assert_eq!(sent, r.tally.series.buckets().iter().map(|b| b.sent).sum::<u64>());
        assert!(rows[..3].iter().all(|s| s.partial_s.is_none()), "{rows:?}");
        let length = rows[3].partial_s.expect("the last second is partial");
        assert!((length - 0.4).abs() < 1e-6, "{length}");
        assert_eq!((rows[3].completed, rows[3].achieved), (40, 2));
        assert!((rows[3].client_cpu - 0.95).abs() < 1e-6, "{}", rows[3].client_cpu);
        assert_eq!(rows[3].flags, [Flag::ClientSaturated]);
        assert_eq!(rows[2].flags, []);
        assert_eq!(whole(&rows), &rows[..3]);
    }
}
