//! An agent's measurements as it sends them to agent 0, and their exact addition into agent
//! 0's result: every count a sum, every histogram added bucket by bucket (HdrHistogram's
//! `add`), so that a percentile of the merged test is the percentile of all its samples,
//! never an average of the agents' percentiles.
//!
//! A part is the agent's [`Tally`] (its counters, error classes, status codes, the
//! whole-run recorders in V2 encoding with their exact sums, the per-second series) and its
//! per-second interval histograms (`--hdr-log`'s), which agent 0 adds second by second for
//! `--merged-hdr-log`. The rebuilt tally is merged by the engine's own [`Tally::merge`], the
//! same addition that merges one host's workers, a URL list's per-entry figures included.

use std::collections::BTreeMap;

use hdrhistogram::serialization::{Deserializer, Serializer, V2Serializer};
use hdrhistogram::Histogram;
use loadlab_engine::{BenchResult, ErrorClass, Tally};
use loadlab_stats::interval_log::Tagged;
use loadlab_stats::recorder::{Recorder, Totals};
use loadlab_stats::series::Bucket;
use loadlab_store::{Flag, LimitedBy};
use serde::{Deserialize, Serialize};

/// One recorder: its histogram (HdrHistogram V2) and its exact totals.
#[derive(Debug, Clone, Serialize, Deserialize)]
pub struct Hist {
    #[serde(with = "crate::b64::one")]
    v2: Vec<u8>,
    count: u64,
    /// The exact sums as (high, low) 64-bit halves: JSON numbers past 64 bits are not read
    /// by every JSON reader (nor by serde through a buffered, internally tagged message).
    sum: (u64, u64),
    sum_sq: (u64, u64),
    min: u64,
    max: u64,
}

impl Hist {
    pub(crate) fn of(r: &Recorder) -> Hist {
        let mut v2 = Vec::new();
        // Into a Vec the V2 encoding fails only for a histogram it cannot express, which
        // loadlab's u64 histograms are not; an empty encoding would then fail to decode.
        let _ = V2Serializer::new().serialize(r.histogram(), &mut v2);
        let t = r.totals();
        let halves = |v: u128| ((v >> 64) as u64, v as u64);
        Hist {
            v2,
            count: t.count,
            sum: halves(t.sum),
            sum_sq: halves(t.sum_sq),
            min: t.min,
            max: t.max,
        }
    }

    pub(crate) fn recorder(&self) -> Result<Recorder, String> {
        let hist = decode(&self.v2)?;
        let whole = |(hi, lo): (u64, u64)| (u128::from(hi) << 64) | u128::from(lo);
        let totals = Totals {
            count: self.count,
            sum: whole(self.sum),
            sum_sq: whole(self.sum_sq),
            min: self.min,
            max: self.max,
        };
        Recorder::from_histogram(&hist, totals).map_err(|e| format!("a histogram's values: {e:?}"))
    }
}

/// Decodes one V2-encoded histogram.
pub fn decode(v2: &[u8]) -> Result<Histogram<u64>, String> {
    Deserializer::new().deserialize(&mut &v2[..]).map_err(|e| format!("a histogram: {e:?}"))
}

/// One worker's interval histograms: (second, V2 encoding).
pub type Seconds = Vec<(u32, Vec<u8>)>;

/// One agent's measurements.
#[derive(Debug, Clone, Serialize, Deserialize)]
pub struct Part {
    /// completed, failed, unfinished, keepalive, connections_opened, sent, not_sent,
    /// conn_replies, tls_resumed, bytes_total, bytes_body, bytes_sent: in that order.
    counters: [u64; 12],
    /// Status codes seen: (code, count).
    status: Vec<(u16, u64)>,
    /// Failures by class name, and the detail maps of classes `other`, `tls`, `h2_*`.
    errors: Vec<(String, u64)>,
    /// (errno, count): a list, as a JSON map's keys are text.
    other_errno: Vec<(i32, u64)>,
    tls_reasons: BTreeMap<String, u64>,
    h2_reasons: BTreeMap<String, u64>,
    /// The timings' recorders (connect, waiting, processing, total, corrected, late, tls) and
    /// the connections' lifetimes.
    timings: Vec<Hist>,
    conn_life: Hist,
    lengths: (Option<u64>, u64, u64),
    /// Per second, every counter of the engine's bucket ([`bucket_row`]'s order), so that the
    /// merged test has the per-second table of one host: offered, sent, open, CPU, failures.
    series: Vec<Vec<u64>>,
    /// A URL list's entries, in the list's order: completed, failed, status classes, latency.
    entries: Vec<(u64, u64, [u64; 5], Hist)>,
    /// The interval histograms: per tag, per worker, (second, V2).
    #[serde(with = "crate::b64::intervals")]
    pub intervals: Vec<(Option<String>, Vec<Seconds>)>,
    /// The agent's own bytes sent (the result's, beside the tally's).
    bytes_sent: u64,
    /// The agent's own latency percentiles and trust flags, for its row of the report (the
    /// merged figures come from the histograms, never from these).
    pub p50_us: u64,
    pub p99_us: u64,
    pub flags: Vec<String>,
    /// What limited the agent's own figures, as its runner judged it, with the evidence: the
    /// merged verdict is chosen from these (`runner::hosts::across::merged_limit`).
    #[serde(default)]
    pub limited_by: Option<LimitedBy>,
    /// The agent's connections open at once at most, and the most it could open: the
    /// merged test's are the sums.
    peak_open: usize,
    pool: usize,
    /// The agent's measured time: the test's is the longest (the agents started together).
    duration_ns: u64,
    /// Its workers (threads): the merged test's CPU share of a second is over all agents'.
    #[serde(default)]
    pub workers: usize,
    /// Under a shape, each measured second's trust flags as the agent judged its own second
    /// (`runner::seconds`): a flag on any agent is one on the merged row, naming it.
    #[serde(default)]
    pub second_flags: Vec<Vec<Flag>>,
    /// Visits' figures (`--visits`, `--wsesslog`, `--view`), added like the requests'.
    #[serde(default)]
    visits: Option<crate::visits::Visits<Hist>>,
}

impl Part {
    /// The measurements of an agent's finished run.
    pub fn of(result: &BenchResult) -> Part {
        let mut part = Part::of_tally(&result.tally, result.bytes_sent);
        (part.peak_open, part.pool) = (result.peak_open, result.pool);
        part.duration_ns = result.duration.as_nanos() as u64;
        part.workers = result.workers.len();
        part.intervals = result.hdr_log.as_ref().map_or_else(Vec::new, |log| {
            log.latencies.iter().map(|l| (l.tag.map(str::to_string), l.workers.clone())).collect()
        });
        part
    }

    pub(crate) fn of_tally(t: &Tally, bytes_sent: u64) -> Part {
        let ti = &t.timings;
        let recorders =
            [&ti.connect, &ti.waiting, &ti.processing, &ti.total, &ti.corrected, &ti.late, &ti.tls];
        Part {
            counters: [
                t.completed,
                t.failed,
                t.unfinished,
                t.keepalive,
                t.connections_opened,
                t.sent,
                t.not_sent,
                t.conn_replies,
                t.tls_resumed,
                t.bytes_total,
                t.bytes_body,
                t.bytes_sent,
            ],
            status: (0..1000u16)
                .filter(|c| t.status[*c as usize] > 0)
                .map(|c| (c, t.status[c as usize]))
                .collect(),
            errors: t
                .errors
                .iter()
                .filter(|(_, n)| *n > 0)
                .map(|(c, n)| (c.name().to_string(), n))
                .collect(),
            other_errno: t.errors.other_errno.iter().map(|(e, n)| (*e, *n)).collect(),
            tls_reasons: t.errors.tls_reasons.clone(),
            h2_reasons: t.errors.h2_reasons.clone(),
            timings: recorders.iter().map(|r| Hist::of(r)).collect(),
            conn_life: Hist::of(&t.conn_life),
            lengths: (t.lengths.first, t.lengths.min, t.lengths.max),
            series: t.series.buckets().iter().map(bucket_row).collect(),
            entries: t
                .entries
                .iter()
                .map(|e| (e.completed, e.failed, e.status_classes, Hist::of(&e.latency)))
                .collect(),
            intervals: Vec::new(),
            bytes_sent,
            p50_us: 0,
            p99_us: 0,
            peak_open: 0,
            pool: 0,
            duration_ns: 0,
            flags: Vec::new(),
            limited_by: None,
            workers: 0,
            second_flags: Vec::new(),
            visits: t.sessions.as_deref().map(|s| crate::visits::Visits::of(s, Hist::of)),
        }
    }

    /// Completed and failed requests.
    pub fn completed_failed(&self) -> (u64, u64) {
        (self.counters[0], self.counters[1])
    }

    /// Completed and failed visits (page views, visits, sessions); none without visits.
    pub fn visits_completed_failed(&self) -> (u64, u64) {
        self.visits.as_ref().map_or((0, 0), crate::visits::Visits::completed_failed)
    }

    /// The agent's tally, rebuilt.
    pub fn tally(&self) -> Result<Tally, String> {
        let mut t = Tally::default();
        let c = self.counters;
        (t.completed, t.failed, t.unfinished, t.keepalive, t.connections_opened, t.sent) =
            (c[0], c[1], c[2], c[3], c[4], c[5]);
        (t.not_sent, t.conn_replies, t.tls_resumed, t.bytes_total, t.bytes_body, t.bytes_sent) =
            (c[6], c[7], c[8], c[9], c[10], c[11]);
        for (code, n) in &self.status {
            let slot = t.status.get_mut(usize::from(*code)).ok_or("a status code above 999")?;
            *slot = *n;
        }
        self.errors_into(&mut t)?;
        let r: Vec<Recorder> = self.timings.iter().map(Hist::recorder).collect::<Result<_, _>>()?;
        let [connect, waiting, processing, total, corrected, late, tls] =
            <[Recorder; 7]>::try_from(r).map_err(|_| "not the seven timings")?;
        t.timings =
            loadlab_engine::Timings { connect, waiting, processing, total, corrected, late, tls };
        t.conn_life = self.conn_life.recorder()?;
        (t.lengths.first, t.lengths.min, t.lengths.max) = self.lengths;
        for (s, row) in self.series.iter().enumerate() {
            *t.series.at(s) = bucket_of(row);
        }
        for (completed, failed, status_classes, latency) in &self.entries {
            // Added into an entry's own two-digit recorder, as the engine's merge does.
            let mut entry = loadlab_engine::EntryTally {
                completed: *completed,
                failed: *failed,
                status_classes: *status_classes,
                ..Default::default()
            };
            entry.latency.merge(&latency.recorder()?);
            t.entries.push(entry);
        }
        t.sessions =
            self.visits.as_ref().map(|v| v.tally(Hist::recorder).map(Box::new)).transpose()?;
        Ok(t)
    }

    /// The failures by class: `ErrorCounts` is counted one failure at a time, so each is
    /// added as it was (an `other` with its errno), and the reasons' maps copied.
    fn errors_into(&self, t: &mut Tally) -> Result<(), String> {
        for (name, n) in &self.errors {
            let class = *ErrorClass::ALL
                .iter()
                .find(|c| c.name() == name)
                .ok_or_else(|| format!("an unknown error class {name:?}"))?;
            let mut left = *n;
            if class == ErrorClass::Other {
                for (errno, k) in &self.other_errno {
                    for _ in 0..(*k).min(left) {
                        t.errors.add(class, Some(*errno));
                    }
                    left -= (*k).min(left);
                }
            }
            for _ in 0..left {
                t.errors.add(class, None);
            }
        }
        t.errors.tls_reasons.clone_from(&self.tls_reasons);
        t.errors.h2_reasons.clone_from(&self.h2_reasons);
        Ok(())
    }
}

/// One second's bucket as a row: completed, failed, bytes, due, sent, late, open, cpu_us,
/// cpu_wait_us, then the failures by class in the engine's order.
fn bucket_row(b: &Bucket) -> Vec<u64> {
    let mut row = vec![
        b.completed,
        b.failed,
        b.bytes,
        b.due,
        b.sent,
        b.late,
        b.open,
        b.cpu_us,
        b.cpu_wait_us,
    ];
    row.extend_from_slice(&b.failed_by);
    row
}

/// The bucket of a [`bucket_row`]; a shorter row (an older agent's) leaves the rest 0.
fn bucket_of(row: &[u64]) -> Bucket {
    let at = |i: usize| row.get(i).copied().unwrap_or(0);
    let mut b = Bucket {
        completed: at(0),
        failed: at(1),
        bytes: at(2),
        due: at(3),
        sent: at(4),
        late: at(5),
        open: at(6),
        cpu_us: at(7),
        cpu_wait_us: at(8),
        ..Default::default()
    };
    for (i, n) in b.failed_by.iter_mut().enumerate() {
        *n = at(9 + i);
    }
    b
}

/// Adds `part` into `result`: its tally by [`Tally::merge`], its interval histograms beside
/// the result's own workers' (the log's writer adds every worker's histogram of a second).
pub fn merge_into(result: &mut BenchResult, part: &Part) -> Result<(), String> {
    result.tally.merge(&part.tally()?);
    result.bytes_sent += part.bytes_sent;
    result.peak_open += part.peak_open;
    result.pool += part.pool;
    result.duration = result.duration.max(std::time::Duration::from_nanos(part.duration_ns));
    if let Some(log) = result.hdr_log.as_mut() {
        for (tag, workers) in &part.intervals {
            let mine = log.latencies.iter_mut().find(|l| l.tag.map(str::to_string) == *tag);
            match mine {
                Some(Tagged { workers: w, .. }) => w.extend(workers.iter().cloned()),
                None => return Err(format!("an interval log tagged {tag:?} that agent 0 has not")),
            }
        }
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Deterministic, spread latencies (µs): a linear congruential sequence.
    fn samples(seed: u64, n: usize) -> Vec<u64> {
        let mut x = seed;
        (0..n)
            .map(|_| {
                x = x
                    .wrapping_mul(6_364_136_223_846_793_005)
                    .wrapping_add(1_442_695_040_888_963_407);
                1 + (x >> 40) % 500_000
            })
            .collect()
    }

    #[test]
    fn the_merged_histogram_is_the_histogram_of_all_samples() {
        let (a, b) = (samples(1, 5000), samples(2, 3000));
        let mut all = Recorder::new();
        let mut agents = [Tally::default(), Tally::default()];
        for (tally, s) in agents.iter_mut().zip([&a, &b]) {
            for us in s {
                tally.timings.total.record(*us);
                all.record(*us);
            }
            tally.completed = s.len() as u64;
            tally.status[200] = s.len() as u64;
        }
        agents[1].errors.add(ErrorClass::Other, Some(104));
        agents[1].failed = 1;
        // A second of every counter, on both: the merged second is their sum, field by field.
        let second = Bucket { due: 7, sent: 6, late: 1, open: 3, cpu_us: 900, ..Bucket::default() };
        for t in agents.iter_mut() {
            *t.series.at(1) = second;
            t.series.at(1).failed_by[ErrorClass::ClientTimeout.index()] = 2;
        }
        let [mut zero, other] = agents;
        // Through the wire, as a message: the framing and the tagged enum included.
        let mut sent = Vec::new();
        let done = crate::wire::Msg::Done { part: Box::new(Part::of_tally(&other, 7)), late_ns: 3 };
        crate::wire::send(&mut sent, &done).unwrap();
        let crate::wire::Msg::Done { part, .. } = crate::wire::recv(&mut sent.as_slice()).unwrap()
        else {
            panic!("not the measurements")
        };
        zero.merge(&part.tally().unwrap());
        let merged = &zero.timings.total;
        let buckets = |r: &Recorder| -> Vec<(u64, u64)> {
            r.histogram()
                .iter_recorded()
                .map(|v| (v.value_iterated_to(), v.count_at_value()))
                .collect()
        };
        assert_eq!(buckets(merged), buckets(&all));
        assert_eq!(merged.totals(), all.totals());
        assert_eq!(merged.percentile(99.0), all.percentile(99.0));
        assert_eq!((zero.completed, zero.status[200], zero.failed), (8000, 8000, 1));
        assert_eq!(zero.errors.other_errno.get(&104), Some(&1));
        let b = zero.series.buckets()[1];
        assert_eq!((b.due, b.sent, b.late, b.open, b.cpu_us), (14, 12, 2, 6, 1800));
        assert_eq!(b.failed_by[ErrorClass::ClientTimeout.index()], 4);
    }
}
