//! An agent's measurements streamed during the run, second by second: each agent turns its
//! workers' snapshots ([`loadlab_engine::live`], cumulative per worker) into the counts of
//! each second and that second's interval histograms, and sends them to agent 0 with its
//! heartbeats. Agent 0 adds them per agent; an agent that ends sends its whole part anyway
//! ([`crate::part`]), so the stream counts in the merged result only for an agent lost, whose
//! seconds until its loss are then added ([`merge_lost`]) instead of being dropped. The
//! stream also gives each second's arrivals due and requests sent, the shortfall of a test
//! that went on without an agent.

use std::collections::BTreeMap;

use hdrhistogram::Histogram;
use loadlab_engine::live::{Counts, Snapshot};
use loadlab_engine::{BenchResult, HdrLog, Pacing, Tally};
use loadlab_stats::recorder::{Recorder, Totals};
use serde::{Deserialize, Serialize};

use crate::part::decode;

/// One second of one agent (or the part of it some of its workers gave): its counts and its
/// interval histograms (HdrHistogram V2, one per worker).
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub struct Second {
    pub second: u32,
    pub counts: Counts,
    /// The latency every output shows (corrected under a schedule), and under a schedule the
    /// uncorrected one.
    #[serde(with = "crate::b64::list")]
    pub latency: Vec<Vec<u8>>,
    #[serde(with = "crate::b64::list")]
    pub service: Vec<Vec<u8>>,
}

impl Second {
    /// Adds `o` (the same second) into this one.
    pub fn add(&mut self, o: &Second) {
        self.counts.add(&o.counts);
        self.latency.extend(o.latency.iter().cloned());
        self.service.extend(o.service.iter().cloned());
    }
}

/// An agent's seconds so far, in order.
pub type Seconds = BTreeMap<u32, Second>;

/// Adds streamed seconds into `into`.
pub fn add_all(into: &mut Seconds, seconds: &[Second]) {
    for s in seconds {
        let second = Second { second: s.second, ..Default::default() };
        into.entry(s.second).or_insert(second).add(s);
    }
}

/// Turns the workers' cumulative snapshots into seconds: each keeps its worker's counts so far.
#[derive(Debug, Default)]
pub struct Deltas {
    last: BTreeMap<usize, Counts>,
}

impl Deltas {
    /// The seconds `snapshots` add (in no particular order; [`add_all`] sorts them).
    pub fn seconds(&mut self, snapshots: Vec<Snapshot>) -> Vec<Second> {
        let mut out = Vec::new();
        for s in snapshots {
            let last = self.last.entry(s.worker).or_default();
            let counts = s.counts.since(last);
            out.push(Second { second: s.second, counts, ..Default::default() });
            // Each closed histogram in a second of its own (a worker closes a second when the
            // next one starts, which may be after a snapshot of a later second).
            for (second, v2) in s.latency {
                out.push(Second { second, latency: vec![v2], ..Default::default() });
            }
            for (second, v2) in s.service {
                out.push(Second { second, service: vec![v2], ..Default::default() });
            }
            *last = s.counts;
        }
        out
    }
}

/// Adds what a lost agent streamed until its loss into agent 0's `result`: counts as sums,
/// the per-second series, the histograms into the whole-run recorders (the latency shown and,
/// under a schedule, the uncorrected one) and into the interval log beside agent 0's workers.
/// The recorders' exact sums are not streamed: a lost agent's count, minimum and maximum are
/// exact, its sum and sum of squares (the mean and deviation) those of the histogram's buckets.
pub fn merge_lost(result: &mut BenchResult, seconds: &Seconds) -> Result<(), String> {
    let scheduled = result.pacing != Pacing::Closed;
    add_counts(&mut result.tally, seconds, scheduled)?;
    if let Some(log) = result.hdr_log.as_mut() {
        add_to_log(log, seconds);
    }
    Ok(())
}

/// The interval log's part of [`merge_lost`]: the lost agent's seconds as one more worker of
/// each tagged latency (the log's writer adds a second's histograms over its workers).
fn add_to_log(log: &mut HdrLog, seconds: &Seconds) {
    for tagged in log.latencies.iter_mut() {
        let uncorrected = tagged.tag == Some("uncorrected");
        let worker: Vec<(u32, Vec<u8>)> = seconds
            .values()
            .flat_map(|s| {
                let v = if uncorrected { &s.service } else { &s.latency };
                v.iter().map(|h| (s.second, h.clone()))
            })
            .collect();
        tagged.workers.push(worker);
    }
}

/// The tally's part of [`merge_lost`].
fn add_counts(t: &mut Tally, seconds: &Seconds, scheduled: bool) -> Result<(), String> {
    let (mut latency, mut service) = (empty(), empty());
    for (second, s) in seconds.iter().map(|(n, s)| (*n, &s.counts)) {
        t.sent += s.sent;
        t.completed += s.completed;
        t.failed += s.failed;
        t.bytes_total += s.bytes;
        for (code, n) in &s.status {
            *t.status.get_mut(usize::from(*code)).ok_or("a status code above 999")? += n;
        }
        for (class, n) in &s.errors {
            for _ in 0..*n {
                t.errors.add(*class, None);
            }
        }
        let b = t.series.at(second as usize);
        (b.completed, b.failed, b.bytes) =
            (b.completed + s.completed, b.failed + s.failed, b.bytes + s.bytes);
    }
    for s in seconds.values() {
        for v2 in &s.latency {
            latency.add(decode(v2)?).map_err(|e| format!("adding a histogram: {e:?}"))?;
        }
        for v2 in &s.service {
            service.add(decode(v2)?).map_err(|e| format!("adding a histogram: {e:?}"))?;
        }
    }
    let shown = if scheduled { &mut t.timings.corrected } else { &mut t.timings.total };
    shown.merge(&recorder(&latency)?);
    if scheduled {
        t.timings.total.merge(&recorder(&service)?);
    }
    Ok(())
}

/// An empty histogram of the recorders' bounds.
fn empty() -> Histogram<u64> {
    let mut h = Recorder::new().histogram().clone();
    h.reset();
    h
}

/// A recorder of `hist`, its sums from the buckets (see [`merge_lost`]).
fn recorder(hist: &Histogram<u64>) -> Result<Recorder, String> {
    let (mut sum, mut sum_sq) = (0u128, 0u128);
    for v in hist.iter_recorded() {
        let (value, n) = (
            u128::from(hist.median_equivalent(v.value_iterated_to())),
            u128::from(v.count_at_value()),
        );
        sum += value * n;
        sum_sq += value * value * n;
    }
    let (min, max) = if hist.is_empty() { (0, 0) } else { (hist.min(), hist.max()) };
    let totals = Totals { count: hist.len(), sum, sum_sq, min, max };
    Recorder::from_histogram(hist, totals).map_err(|e| format!("a histogram's values: {e:?}"))
}

#[cfg(test)]
mod tests {
    use super::*;
    use hdrhistogram::serialization::{Serializer, V2Serializer};

    fn v2(values: &[u64]) -> Vec<u8> {
        let mut h = empty();
        for v in values {
            h.record(*v).unwrap();
        }
        let mut out = Vec::new();
        V2Serializer::new().serialize(&h, &mut out).unwrap();
        out
    }

    fn snapshot(
        worker: usize,
        second: u32,
        completed: u64,
        latency: Vec<(u32, Vec<u8>)>,
    ) -> Snapshot {
        Snapshot {
            worker,
            second,
            counts: Counts {
                due: completed + 1,
                sent: completed,
                completed,
                status: vec![(200, completed)],
                ..Default::default()
            },
            latency,
            ..Snapshot::default()
        }
    }

    #[test]
    fn cumulative_snapshots_become_seconds_and_a_lost_agents_seconds_are_merged() {
        let mut d = Deltas::default();
        let mut seconds = Seconds::new();
        // Two workers; the second snapshot of worker 0 comes late and carries two seconds'
        // histograms.
        let first = vec![snapshot(0, 0, 10, vec![(0, v2(&[100, 200]))]), snapshot(1, 0, 5, vec![])];
        add_all(&mut seconds, &d.seconds(first));
        let later = vec![
            snapshot(1, 1, 12, vec![(0, v2(&[300])), (1, v2(&[400]))]),
            snapshot(0, 2, 30, vec![(1, v2(&[500])), (2, v2(&[600, 700]))]),
        ];
        add_all(&mut seconds, &d.seconds(later));
        let counts: Vec<(u32, u64, u64, u64)> = seconds
            .values()
            .map(|s| (s.second, s.counts.completed, s.counts.due, s.latency.len() as u64))
            .collect();
        assert_eq!(counts, [(0, 15, 17, 2), (1, 7, 7, 2), (2, 20, 20, 1)]);
        assert_eq!(seconds[&0].counts.status, [(200, 15)]);

        // Merged into a closed loop's result: counts summed, every value in the histogram.
        let mut t = Tally { completed: 1, ..Default::default() };
        add_counts(&mut t, &seconds, false).unwrap();
        assert_eq!(t.completed, 43);
        assert_eq!(t.status[200], 42);
        let total = &t.timings.total;
        assert_eq!(total.totals().count, 7);
        assert_eq!(total.totals().max, total.histogram().highest_equivalent(700));
        assert_eq!(t.series.buckets()[1].completed, 7);
    }

    #[test]
    fn under_a_schedule_the_corrected_and_uncorrected_seconds_go_to_their_own_places() {
        let mut seconds = Seconds::new();
        let second = |n: u32, latency: &[u64], service: &[u64]| Second {
            second: n,
            counts: Counts { completed: latency.len() as u64, ..Default::default() },
            latency: vec![v2(latency)],
            service: vec![v2(service)],
        };
        add_all(&mut seconds, &[second(0, &[900, 1000], &[100, 200]), second(1, &[3000], &[300])]);
        let mut t = Tally::default();
        add_counts(&mut t, &seconds, true).unwrap();
        let (corrected, total) = (&t.timings.corrected, &t.timings.total);
        assert_eq!((corrected.totals().count, total.totals().count), (3, 3));
        assert_eq!(corrected.totals().min, 900);
        assert_eq!(total.totals().max, total.histogram().highest_equivalent(300));

        use loadlab_stats::interval_log::Tagged;
        let mut log = HdrLog {
            start: std::time::SystemTime::UNIX_EPOCH,
            latencies: vec![
                Tagged { tag: Some("corrected"), workers: vec![Vec::new()] },
                Tagged { tag: Some("uncorrected"), workers: vec![Vec::new()] },
            ],
        };
        add_to_log(&mut log, &seconds);
        // One more worker per tag, holding the lost agent's two seconds of that latency.
        for (tagged, first) in log.latencies.iter().zip([900, 100]) {
            let lost = &tagged.workers[1];
            assert_eq!(lost.iter().map(|(s, _)| *s).collect::<Vec<_>>(), [0, 1]);
            assert_eq!(decode(&lost[0].1).unwrap().min(), first, "{:?}", tagged.tag);
        }
    }
}
