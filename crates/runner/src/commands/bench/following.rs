//! The seconds of the run in progress, for a live view: the engine's per-second snapshots
//! ([`loadlab_engine::live`]) turned into seconds by the agents' stream ([`Deltas`], the one
//! path from snapshots to seconds), and each second, once every worker has closed it, read as
//! its [`Second`]: completed and offered, p50 and p99 from its interval histograms, errors by
//! class, connections open and the client's CPU. The flags a second raises are the judge's
//! ([`crate::judge::trust::raised_in`]).

use std::collections::BTreeMap;

use hdrhistogram::Histogram;
use loadlab_agents::part::decode;
use loadlab_agents::stream::{self, Deltas};
use loadlab_engine::live::Snapshot;
use loadlab_engine::ErrorClass;

/// One second of the run, every worker's.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct Second {
    /// From the start of measurement.
    pub second: u32,
    pub completed: u64,
    pub failed: u64,
    /// Arrivals due (the offered load; 0 in the closed loop).
    pub due: u64,
    pub errors: Vec<(ErrorClass, u64)>,
    /// The latency every output shows, at the median and the 99th percentile (µs).
    pub p50_us: Option<u64>,
    pub p99_us: Option<u64>,
    /// The most connections open at once, added over workers.
    pub open: u64,
    /// CPU the client's workers used, and waited for while runnable (µs).
    pub cpu_us: u64,
    pub cpu_wait_us: u64,
}

/// Follows a run's snapshots; gives each second once all of its `workers` closed it.
#[derive(Debug)]
pub struct Following {
    workers: usize,
    deltas: Deltas,
    seconds: stream::Seconds,
    /// Each second's connections and CPU (open, cpu, wait), added over workers.
    usage: BTreeMap<u32, (u64, u64, u64)>,
    /// Each worker's latest second published.
    latest: BTreeMap<usize, u32>,
    /// The next second to give.
    next: u32,
}

impl Following {
    pub fn new(workers: usize) -> Following {
        Following {
            workers: workers.max(1),
            deltas: Deltas::default(),
            seconds: stream::Seconds::new(),
            usage: BTreeMap::new(),
            latest: BTreeMap::new(),
            next: 0,
        }
    }

    /// Takes `snapshots` in; returns the seconds every worker has now closed. A worker's
    /// snapshot of second `s` carries the histograms it closed as `s` ended, so `s` is whole
    /// once each worker published a later one.
    pub fn feed(&mut self, snapshots: Vec<Snapshot>) -> Vec<Second> {
        for s in &snapshots {
            let u = self.usage.entry(s.second).or_default();
            (u.0, u.1, u.2) =
                (u.0 + s.second_open, u.1 + s.second_cpu_us, u.2 + s.second_cpu_wait_us);
            self.latest.insert(s.worker, s.second);
        }
        stream::add_all(&mut self.seconds, &self.deltas.seconds(snapshots));
        let closed = match self.latest.len() >= self.workers {
            true => self.latest.values().copied().min().unwrap_or(0),
            false => 0,
        };
        self.give(closed)
    }

    /// The run has ended: every second not given yet.
    pub fn finish(&mut self, snapshots: Vec<Snapshot>) -> Vec<Second> {
        let mut out = self.feed(snapshots);
        let last = self.seconds.keys().next_back().map_or(0, |s| s + 1);
        out.extend(self.give(last));
        out
    }

    /// The seconds before `until` not given yet.
    fn give(&mut self, until: u32) -> Vec<Second> {
        let out: Vec<Second> = (self.next..until).map(|n| self.second(n)).collect();
        self.next = self.next.max(until);
        out
    }

    fn second(&self, n: u32) -> Second {
        let mut out = Second { second: n, ..Default::default() };
        if let Some(s) = self.seconds.get(&n) {
            (out.completed, out.failed, out.due) =
                (s.counts.completed, s.counts.failed, s.counts.due);
            out.errors.clone_from(&s.counts.errors);
            let mut hist: Option<Histogram<u64>> = None;
            for h in s.latency.iter().filter_map(|v2| decode(v2).ok()) {
                match hist.as_mut() {
                    Some(all) => all.add(&h).unwrap_or_default(),
                    None => hist = Some(h),
                }
            }
            if let Some(h) = hist.filter(|h| !h.is_empty()) {
                (out.p50_us, out.p99_us) =
                    (Some(h.value_at_quantile(0.5)), Some(h.value_at_quantile(0.99)));
            }
        }
        if let Some(&(open, cpu, wait)) = self.usage.get(&n) {
            (out.open, out.cpu_us, out.cpu_wait_us) = (open, cpu, wait);
        }
        out
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use hdrhistogram::serialization::{Serializer, V2Serializer};
    use loadlab_engine::live::Counts;

    fn v2(values: &[u64]) -> Vec<u8> {
        let mut h = Histogram::<u64>::new_with_bounds(1, 3_600_000_000, 3).unwrap();
        for v in values {
            h.record(*v).unwrap();
        }
        let mut out = Vec::new();
        V2Serializer::new().serialize(&h, &mut out).unwrap();
        out
    }

    fn snapshot(worker: usize, second: u32, completed: u64, latency: &[u64]) -> Snapshot {
        Snapshot {
            worker,
            second,
            counts: Counts { completed, ..Default::default() },
            latency: vec![(second, v2(latency))],
            second_open: 2,
            second_cpu_us: 1000,
            ..Default::default()
        }
    }

    #[test]
    fn a_second_is_given_once_every_worker_closed_it() {
        let mut f = Following::new(2);
        // Worker 0 closed second 0; worker 1 has not: nothing yet.
        assert!(f.feed(vec![snapshot(0, 0, 10, &[100; 10])]).is_empty());
        let given = f.feed(vec![snapshot(1, 0, 5, &[300; 5]), snapshot(0, 1, 30, &[100; 20])]);
        assert!(given.is_empty(), "worker 1 has not published a later second: {given:?}");
        let given = f.feed(vec![snapshot(1, 1, 15, &[100; 10])]);
        assert_eq!(given.len(), 1, "{given:?}");
        let s = &given[0];
        assert_eq!((s.second, s.completed, s.open, s.cpu_us), (0, 15, 4, 2000));
        assert_eq!(s.p50_us, Some(100));
        assert!(s.p99_us.unwrap().abs_diff(300) <= 1, "{s:?}");
        // The end gives the rest, its counts the differences of the cumulative ones.
        let rest = f.finish(Vec::new());
        assert_eq!(rest.iter().map(|s| (s.second, s.completed)).collect::<Vec<_>>(), [(1, 30)]);
    }
}
