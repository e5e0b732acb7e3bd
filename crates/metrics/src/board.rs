//! The figures a scrape shows: one [`Cell`] per set of [`Labels`] measured in this process (a
//! bench is one; a sweep's steps and a suite's cells are one each), each the sum of its
//! workers' last snapshots. Counters are cumulative from the start of each cell's measurement
//! and never go back: a cell measured again under the same labels (a suite's repeated run)
//! adds on to what it had, which is what Prometheus' `rate()` and `increase()` expect.

use std::collections::BTreeMap;
use std::sync::Mutex;

use hdrhistogram::Histogram;
use loadlab_engine::live::{Counts, Snapshot, Watch};
use loadlab_stats::Recorder;

/// The latency histogram's upper bounds in microseconds (Prometheus' `le`, in seconds when
/// rendered): 100 µs to 30 s, so that a loopback server's and a PHP stack's latencies both
/// fall across several buckets. `+Inf` follows them.
pub const BOUNDS_US: [u64; 18] = [
    100, 250, 500, 1_000, 2_500, 5_000, 10_000, 25_000, 50_000, 100_000, 250_000, 500_000,
    1_000_000, 2_500_000, 5_000_000, 10_000_000, 15_000_000, 30_000_000,
];

/// What names a cell's series.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Labels {
    /// The run's id in the store (`loadlab run`); empty for `bench` and `sweep`.
    pub run: String,
    pub stack: String,
    pub workload: String,
    /// The load, as a person reads it (`c=10`, `rate=500/s`).
    pub load: String,
    pub repetition: String,
}

/// One worker's figures as its last snapshot gave them, or the sum of several workers'.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct Figures {
    pub counts: Counts,
    /// Latencies at or below each of [`BOUNDS_US`] (cumulative, as Prometheus' buckets are).
    pub le: [u64; BOUNDS_US.len()],
    pub latency_count: u64,
    pub latency_sum_us: f64,
    pub open: u64,
    pub cpu_us: u64,
}

impl Figures {
    /// The figures of `snapshot`, with its worker's whole latency `latency` so far.
    pub fn of(snapshot: &Snapshot, latency: &Recorder) -> Figures {
        let mut f = Figures {
            counts: snapshot.counts.clone(),
            open: snapshot.open,
            cpu_us: snapshot.cpu_us,
            ..Figures::default()
        };
        f.add_latency(latency.histogram());
        f
    }

    /// Adds the latencies of `h` (µs) to the histogram's buckets, count and sum.
    pub fn add_latency(&mut self, h: &Histogram<u64>) {
        // One pass over the recorded values only (not every bucket of the histogram): each
        // value counts in every bound at or above it.
        for v in h.iter_recorded() {
            let first = BOUNDS_US.partition_point(|b| *b < v.value_iterated_to());
            for n in &mut self.le[first..] {
                *n += v.count_at_value();
            }
        }
        self.latency_count += h.len();
        self.latency_sum_us += h.mean() * h.len() as f64;
    }

    pub fn add(&mut self, o: &Figures) {
        self.counts.add(&o.counts);
        for (n, m) in self.le.iter_mut().zip(o.le) {
            *n += m;
        }
        self.latency_count += o.latency_count;
        self.latency_sum_us += o.latency_sum_us;
        self.open += o.open;
        self.cpu_us += o.cpu_us;
    }
}

/// One server tier of a lab cell as its sampler saw it: the CPU it used over the cell's
/// samples so far (added, so a counter) and its memory at the last one.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct Tier {
    pub tier: String,
    pub cpu_user_s: f64,
    pub cpu_sys_s: f64,
    /// The sum of its processes' resident sets.
    pub rss_bytes: u64,
    pub processes: u64,
}

/// One cell: its figures so far, and what the runner told of it.
#[derive(Debug, Clone, Default)]
pub struct Cell {
    pub labels: Labels,
    /// Earlier measurements under the same labels, added.
    done: Figures,
    /// Each worker's last figures of the measurement in progress (or the last one), and the
    /// second and completed count of its last snapshot, for the rate achieved.
    workers: BTreeMap<usize, (Figures, u32, f64)>,
    /// `--agents` on agent 0: each other agent's seconds as they streamed in, added.
    agents: BTreeMap<usize, Figures>,
    /// Measuring now.
    pub measuring: bool,
    /// The rate asked for, requests per second, when the load has one.
    pub offered: Option<f64>,
    /// Every trust flag by name, and whether the verdict raised it; empty until judged.
    pub flags: Vec<(String, bool)>,
    /// Its stack's tiers, in the sampler's order, once sampled (a lab cell's).
    pub tiers: Vec<Tier>,
}

impl Cell {
    /// Its figures: the earlier measurements' and each worker's last, added.
    pub fn figures(&self) -> Figures {
        let mut all = self.done.clone();
        for (f, _, _) in self.workers.values() {
            all.add(f);
        }
        for f in self.agents.values() {
            all.add(f);
        }
        all
    }

    /// Completed per second over each worker's last second, added.
    pub fn achieved(&self) -> f64 {
        self.workers.values().map(|(_, _, rate)| rate).sum()
    }
}

/// Every cell of this process, the one measured last at the end. A watcher of the engine's
/// snapshots ([`Watch`]); the runner tells it of cells ([`Board::begin`], [`Board::end`]),
/// and verdicts.
#[derive(Debug, Default)]
pub struct Board {
    cells: Mutex<Vec<Cell>>,
}

impl Board {
    fn with<T>(&self, f: impl FnOnce(&mut Vec<Cell>) -> T) -> T {
        f(&mut self.cells.lock().unwrap_or_else(|e| e.into_inner()))
    }

    /// A measurement under `labels` begins, at the rate `offered` when it has one: the cell of
    /// those labels again (what it had kept) or a new one, now the last; one is measured at a
    /// time.
    pub fn begin(&self, labels: Labels, offered: Option<f64>) {
        self.with(|cells| {
            for c in cells.iter_mut() {
                c.measuring = false;
            }
            let mut cell = match cells.iter().position(|c| c.labels == labels) {
                Some(i) => cells.remove(i),
                None => Cell { labels, ..Cell::default() },
            };
            cell.done = cell.figures();
            cell.workers.clear();
            cell.agents.clear();
            (cell.measuring, cell.offered, cell.flags) = (true, offered, Vec::new());
            cells.push(cell);
        });
    }

    /// The measurement in progress has ended.
    pub fn end(&self) {
        self.with(|cells| cells.last_mut().map(|c| c.measuring = false));
    }

    /// The last cell's verdict: every flag by name and whether it was raised.
    pub fn judged(&self, flags: Vec<(String, bool)>) {
        self.with(|cells| cells.last_mut().map(|c| c.flags = flags));
    }

    /// `--agents` on agent 0: another agent's second (or part of one) as it streamed in, its
    /// counts and latencies of that second alone, added to what that agent had in the last
    /// cell: the cell's figures are then the whole test's, as its merged result will be.
    pub fn streamed(&self, agent: usize, second: &Figures) {
        self.with(|cells| {
            if let Some(cell) = cells.last_mut() {
                cell.agents.entry(agent).or_default().add(second);
            }
        });
    }

    /// One sample of the last cell's tiers: each one's CPU over the sample's interval
    /// (`cpu_user_s`, `cpu_sys_s`, added to what it had) and its memory and processes now.
    pub fn tiers_sampled(&self, sampled: &[Tier]) {
        self.with(|cells| {
            let Some(cell) = cells.last_mut() else { return };
            for s in sampled {
                let Some(t) = cell.tiers.iter_mut().find(|t| t.tier == s.tier) else {
                    cell.tiers.push(s.clone());
                    continue;
                };
                t.cpu_user_s += s.cpu_user_s;
                t.cpu_sys_s += s.cpu_sys_s;
                (t.rss_bytes, t.processes) = (s.rss_bytes, s.processes);
            }
        });
    }

    /// Every cell as it stands now.
    pub fn cells(&self) -> Vec<Cell> {
        self.with(|cells| cells.clone())
    }
}

impl Watch for Board {
    fn snapshot(&self, snapshot: &Snapshot, latency: &Recorder) {
        let figures = Figures::of(snapshot, latency);
        self.with(|cells| {
            // A snapshot before any cell began (a run measured without the runner's word)
            // still counts, under no labels.
            if cells.is_empty() {
                cells.push(Cell { measuring: true, ..Cell::default() });
            }
            let cell = cells.last_mut().expect("a cell was just made");
            let completed = figures.counts.completed as f64;
            let rate = match cell.workers.get(&snapshot.worker) {
                Some((_, second, _)) if snapshot.second <= *second => None,
                Some((last, second, _)) => Some(
                    (completed - last.counts.completed as f64)
                        / f64::from(snapshot.second - second),
                ),
                None => Some(completed / f64::from(snapshot.second + 1)),
            };
            let entry = cell.workers.entry(snapshot.worker).or_insert((Figures::default(), 0, 0.0));
            entry.2 = rate.unwrap_or(entry.2);
            (entry.0, entry.1) = (figures, snapshot.second);
        });
    }
}

#[cfg(test)]
mod tests {
    use loadlab_engine::ErrorClass;

    use super::*;

    fn snapshot(worker: usize, second: u32, completed: u64) -> Snapshot {
        let counts = Counts {
            completed,
            failed: 2,
            errors: vec![(ErrorClass::Connreset, 2)],
            ..Counts::default()
        };
        Snapshot { worker, second, counts, open: 3, cpu_us: 1000, ..Snapshot::default() }
    }

    fn latency(values_us: &[u64]) -> Recorder {
        let mut r = Recorder::new();
        for v in values_us {
            r.record(*v);
        }
        r
    }

    #[test]
    fn each_workers_last_snapshot_counts_once_and_buckets_are_cumulative() {
        let board = Board::default();
        board.begin(Labels { load: "c=2".into(), ..Labels::default() }, None);
        board.snapshot(&snapshot(0, 0, 100), &latency(&[50, 300]));
        board.snapshot(&snapshot(0, 1, 250), &latency(&[50, 300, 2_000]));
        board.snapshot(&snapshot(1, 1, 40), &latency(&[90]));
        let cells = board.cells();
        assert_eq!(cells.len(), 1);
        let f = cells[0].figures();
        assert_eq!((f.counts.completed, f.counts.failed), (290, 4));
        assert_eq!(f.counts.errors, [(ErrorClass::Connreset, 4)]);
        assert_eq!((f.latency_count, f.open, f.cpu_us), (4, 6, 2000));
        // <= 100 µs: 50 and 90; <= 500 µs: and 300; <= 2.5 ms: and 2000.
        assert_eq!(&f.le[..5], &[2, 2, 3, 3, 4]);
        assert_eq!(*f.le.last().unwrap(), 4);
        // Worker 0: 150 in its second 1; worker 1: 40 in its first two seconds.
        assert!((cells[0].achieved() - 170.0).abs() < 1e-9, "{}", cells[0].achieved());
    }

    #[test]
    fn another_agents_streamed_seconds_add_into_the_cell_and_not_into_the_next() {
        let board = Board::default();
        board.begin(Labels::default(), None);
        board.snapshot(&snapshot(0, 0, 100), &latency(&[50]));
        let second = |completed, us: u64| {
            let mut f =
                Figures { counts: Counts { completed, ..Counts::default() }, ..Figures::default() };
            f.add_latency(latency(&[us]).histogram());
            f
        };
        board.streamed(1, &second(30, 300));
        board.streamed(1, &second(20, 3_000));
        board.streamed(2, &second(5, 300));
        let f = board.cells()[0].figures();
        assert_eq!((f.counts.completed, f.latency_count), (155, 4));
        // <= 100 µs: agent 0's 50; <= 500 µs: and both 300s; <= 5 ms: and the 3,000.
        assert_eq!((f.le[0], f.le[2], f.le[5]), (1, 3, 4));
        board.begin(Labels { load: "next".into(), ..Labels::default() }, None);
        assert_eq!(board.cells()[1].figures().counts.completed, 0);
    }

    #[test]
    fn a_cell_measured_again_adds_on_and_a_new_one_starts_from_nothing() {
        let board = Board::default();
        let a = Labels { repetition: "1".into(), ..Labels::default() };
        board.begin(a.clone(), Some(100.0));
        board.snapshot(&snapshot(0, 0, 10), &latency(&[10]));
        board.judged(vec![("errors".into(), true)]);
        board.end();
        board.begin(Labels { repetition: "2".into(), ..Labels::default() }, None);
        board.snapshot(&snapshot(0, 0, 7), &latency(&[10]));
        board.begin(a, None);
        board.snapshot(&snapshot(0, 0, 5), &latency(&[10]));
        let tier = |user: f64, rss: u64| Tier {
            tier: "nginx".into(),
            cpu_user_s: user,
            cpu_sys_s: 0.25,
            rss_bytes: rss,
            processes: 2,
        };
        board.tiers_sampled(&[tier(0.5, 100)]);
        board.tiers_sampled(&[tier(0.25, 300)]);
        let cells = board.cells();
        assert_eq!(cells.len(), 2);
        // The tiers' CPU adds up over the samples; their memory is the last sample's.
        assert_eq!(cells[1].tiers, [Tier { cpu_sys_s: 0.5, ..tier(0.75, 300) }]);
        assert!(cells[0].tiers.is_empty());
        assert_eq!(cells[0].figures().counts.completed, 7);
        assert!(!cells[0].measuring);
        assert_eq!(cells[1].figures().counts.completed, 15, "10 before, 5 now");
        assert!(cells[1].measuring && cells[1].flags.is_empty());
    }
}
