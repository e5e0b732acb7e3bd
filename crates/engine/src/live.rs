//! Measurements published while a run goes on, second by second, for whoever must have them
//! before the run ends: `bench --agents` streams them to agent 0, so that an agent lost
//! mid-run still counts for what it measured until then. Off unless asked for
//! ([`Live::enable`]): a worker then publishes, as its second clock closes each measured
//! second (the clock that also closes the per-second series' CPU and connections), its
//! counters so far and the interval histograms it closed, and once more at its end. Cumulative counters, not deltas: a snapshot lost or taken late loses nothing.
//!
//! Beside those taken ([`Live::take`]), a [`Watch`] (the Prometheus endpoint) is told of each
//! snapshot as it is published, with the worker's whole latency histogram so far: what it
//! keeps of them is its own, so a watched run keeps nothing that grows with its length here.

use std::sync::{Arc, Mutex};

use loadlab_stats::Recorder;

use serde::{Deserialize, Serialize};

use crate::ErrorClass;

/// Counters of a run: one worker's since measuring began, at the end of a second (as
/// published), or one second's (their differences, [`Counts::since`]), added over workers and
/// agents ([`Counts::add`]).
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct Counts {
    /// Arrivals taken off the schedule (open loop and sessions; 0 in the closed loop).
    pub due: u64,
    pub sent: u64,
    pub completed: u64,
    pub failed: u64,
    /// Every byte received.
    pub bytes: u64,
    /// Status codes seen: (code, count), codes in order.
    pub status: Vec<(u16, u64)>,
    /// Failures by class.
    pub errors: Vec<(ErrorClass, u64)>,
}

impl Counts {
    /// What happened since `earlier`, the same worker's earlier counts.
    pub fn since(&self, earlier: &Counts) -> Counts {
        fn pairs<K: PartialEq + Copy>(now: &[(K, u64)], then: &[(K, u64)]) -> Vec<(K, u64)> {
            now.iter()
                .map(|(k, n)| (*k, n - then.iter().find(|(x, _)| x == k).map_or(0, |(_, m)| *m)))
                .filter(|(_, n)| *n > 0)
                .collect()
        }
        Counts {
            due: self.due.saturating_sub(earlier.due),
            sent: self.sent.saturating_sub(earlier.sent),
            completed: self.completed.saturating_sub(earlier.completed),
            failed: self.failed.saturating_sub(earlier.failed),
            bytes: self.bytes.saturating_sub(earlier.bytes),
            status: pairs(&self.status, &earlier.status),
            errors: pairs(&self.errors, &earlier.errors),
        }
    }

    /// Adds `o` into these counts.
    pub fn add(&mut self, o: &Counts) {
        fn pairs<K: PartialEq + Copy>(into: &mut Vec<(K, u64)>, from: &[(K, u64)]) {
            for (k, n) in from {
                match into.iter_mut().find(|(x, _)| x == k) {
                    Some((_, m)) => *m += n,
                    None => into.push((*k, *n)),
                }
            }
        }
        self.due += o.due;
        self.sent += o.sent;
        self.completed += o.completed;
        self.failed += o.failed;
        self.bytes += o.bytes;
        pairs(&mut self.status, &o.status);
        pairs(&mut self.errors, &o.errors);
    }
}

/// What one worker publishes as a second turns.
#[derive(Debug, Clone, Default)]
pub struct Snapshot {
    pub worker: usize,
    /// The second of measurement the counts run to (the one in progress at the worker's last
    /// snapshot, now over; or at the worker's end the last one), counted from the start of
    /// measurement.
    pub second: u32,
    pub counts: Counts,
    /// Interval histograms closed since the worker's last snapshot: (second, HdrHistogram V2)
    /// of the latency every output shows, and of the uncorrected latency under a schedule.
    pub latency: Vec<(u32, Vec<u8>)>,
    pub service: Vec<(u32, Vec<u8>)>,
    /// Connections open as the snapshot was taken.
    pub open: u64,
    /// CPU time (user and system) the worker's thread used since measuring began, in
    /// microseconds.
    pub cpu_us: u64,
    /// Of the second `second` as the per-second series has it so far: the most connections
    /// open at once, and the CPU the worker's thread used and waited for (µs).
    pub second_open: u64,
    pub second_cpu_us: u64,
    pub second_cpu_wait_us: u64,
}

/// Told of every snapshot as a worker publishes it, in that worker's thread (once a second
/// per worker), with the worker's whole latency so far (the one every output shows,
/// [`crate::Tally::latency`]). It must be quick: the worker's loop waits for it.
pub trait Watch: Send + Sync {
    fn snapshot(&self, snapshot: &Snapshot, latency: &Recorder);
}

/// The workers' snapshots not taken yet (`None` while nobody asked for them), and who watches
/// them.
#[derive(Default)]
pub struct Live {
    pending: Mutex<Option<Vec<Snapshot>>>,
    watchers: Mutex<Vec<Arc<dyn Watch>>>,
}

impl std::fmt::Debug for Live {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        let watchers = self.watchers.lock().unwrap_or_else(|e| e.into_inner()).len();
        f.debug_struct("Live").field("pending", &self.pending).field("watchers", &watchers).finish()
    }
}

impl Live {
    /// Asks the next runs' workers to publish.
    pub fn enable(&self) {
        let mut p = self.pending.lock().unwrap_or_else(|e| e.into_inner());
        p.get_or_insert_with(Vec::new);
    }

    /// Asks the next runs' workers to publish, and tells `watcher` of each snapshot.
    pub fn watch(&self, watcher: Arc<dyn Watch>) {
        self.watchers.lock().unwrap_or_else(|e| e.into_inner()).push(watcher);
    }

    pub fn enabled(&self) -> bool {
        self.pending.lock().unwrap_or_else(|e| e.into_inner()).is_some()
            || !self.watchers.lock().unwrap_or_else(|e| e.into_inner()).is_empty()
    }

    /// The snapshots published since the last call, in the order they came.
    pub fn take(&self) -> Vec<Snapshot> {
        let mut p = self.pending.lock().unwrap_or_else(|e| e.into_inner());
        p.as_mut().map(std::mem::take).unwrap_or_default()
    }

    pub(crate) fn publish(&self, snapshot: Snapshot, latency: &Recorder) {
        for w in self.watchers.lock().unwrap_or_else(|e| e.into_inner()).iter() {
            w.snapshot(&snapshot, latency);
        }
        if let Some(p) = self.pending.lock().unwrap_or_else(|e| e.into_inner()).as_mut() {
            p.push(snapshot);
        }
    }
}

/// The counts of a worker's tally, `due` given (the schedule's).
pub(crate) fn counts(t: &crate::Tally, due: u64) -> Counts {
    Counts {
        due,
        sent: t.sent,
        completed: t.completed,
        failed: t.failed,
        bytes: t.bytes_total,
        status: (0..1000u16)
            .filter(|c| t.status[*c as usize] > 0)
            .map(|c| (c, t.status[c as usize]))
            .collect(),
        errors: t.errors.iter().filter(|(_, n)| *n > 0).collect(),
    }
}

#[cfg(test)]
mod tests {
    use std::io::{Read, Write};
    use std::net::TcpListener;
    use std::sync::Arc;
    use std::time::Duration;

    use crate::{BenchConfig, Control, Stop, Target};

    /// A keep-alive server on 127.0.0.1 that answers every request read with one fixed
    /// response, until its listener's thread is left behind by the test's end (each
    /// connection's thread ends when the client closes it).
    fn server() -> std::net::SocketAddr {
        let listener = TcpListener::bind("127.0.0.1:0").unwrap();
        let addr = listener.local_addr().unwrap();
        std::thread::spawn(move || {
            for mut conn in listener.incoming().flatten() {
                std::thread::spawn(move || {
                    let mut buf = [0u8; 4096];
                    while let Ok(n) = conn.read(&mut buf) {
                        let requests = buf[..n].windows(4).filter(|w| w == b"\r\n\r\n").count();
                        let answer =
                            b"HTTP/1.1 200 OK\r\nContent-Length: 2\r\n\r\nok".repeat(requests);
                        if n == 0 || conn.write_all(&answer).is_err() {
                            return;
                        }
                    }
                });
            }
        });
        addr
    }

    /// Two connections on `threads` workers for `ms` against a fresh [`server`]; the run's
    /// control does not listen yet.
    fn two_connections(
        threads: usize,
        ms: u64,
    ) -> (BenchConfig, std::net::SocketAddr, Arc<Control>) {
        let addr = server();
        let target = Target::parse(&format!("http://{addr}/")).unwrap();
        let mut config = BenchConfig::new(target);
        (config.connections, config.threads) = (2, threads);
        config.stop = Stop::Duration(Duration::from_millis(ms));
        (config, addr, Arc::new(Control::default()))
    }

    #[test]
    fn published_seconds_add_up_to_the_runs_result() {
        let (mut config, addr, control) = two_connections(2, 2300);
        config.hdr_log = true;
        control.live.enable();
        let result = crate::run(&config, addr, control.clone()).unwrap();
        let snapshots = control.live.take();
        // Each worker published seconds 0 and 1 as they ended, then its end in second 2.
        for worker in 0..2 {
            let seconds: Vec<u32> =
                snapshots.iter().filter(|s| s.worker == worker).map(|s| s.second).collect();
            assert_eq!(seconds, [0, 1, 2], "worker {worker}");
        }
        // The last snapshot of each worker holds its whole counts: their sum is the result's.
        let mut last = super::Counts::default();
        for worker in 0..2 {
            last.add(&snapshots.iter().rev().find(|s| s.worker == worker).unwrap().counts);
        }
        assert!(result.tally.completed > 0);
        assert_eq!(last.completed, result.tally.completed);
        assert_eq!(last.status, [(200, result.tally.completed)]);
        // Seconds 0 and 1 were closed and published with their histograms.
        let histograms: Vec<u32> =
            snapshots.iter().flat_map(|s| s.latency.iter().map(|(second, _)| *second)).collect();
        assert!(histograms.contains(&0) && histograms.contains(&1), "{histograms:?}");
    }

    #[test]
    fn live_seconds_carry_latency_connections_and_cpu_without_an_interval_log() {
        let (config, addr, control) = two_connections(1, 1300);
        control.live.enable();
        let result = crate::run(&config, addr, control.clone()).unwrap();
        let snapshots = control.live.take();
        // The second that closed went out with its histogram, its connections and its CPU...
        let first = snapshots.iter().find(|s| s.second == 0).unwrap();
        assert_eq!(first.latency.iter().map(|(s, _)| *s).collect::<Vec<_>>(), [0]);
        assert_eq!(first.second_open, 2);
        assert!(first.second_cpu_us > 0);
        // ...while the result has no interval log: nobody asked for one.
        assert!(result.hdr_log.is_none());
    }

    #[test]
    fn without_an_interval_log_each_closed_second_is_published_once_and_counts_every_request() {
        // A run of whole seconds: its end closes its last.
        each_second_published_once_counts_every_request(2000, &[0, 1]);
    }

    #[test]
    fn a_run_ending_within_a_second_publishes_that_partial_seconds_histogram_too() {
        each_second_published_once_counts_every_request(1500, &[0, 1]);
    }

    /// A run of `ms` on two workers without an interval log: each worker's published
    /// histograms are of `seconds`, once each, and count every request of the result.
    fn each_second_published_once_counts_every_request(ms: u64, seconds: &[u32]) {
        let (config, addr, control) = two_connections(2, ms);
        control.live.enable();
        let result = crate::run(&config, addr, control.clone()).unwrap();
        // Handed over as they closed (the worker keeps none of them for the run's end): the
        // histograms published, each worker's seconds once each, count every request.
        let snapshots = control.live.take();
        let mut workers = vec![Vec::new(); 2];
        for s in &snapshots {
            workers[s.worker].extend(s.latency.iter().cloned());
        }
        for w in &workers {
            let published: Vec<u32> = w.iter().map(|(second, _)| *second).collect();
            assert_eq!(published, seconds, "each second once, in order");
        }
        let latency = loadlab_stats::interval_log::Tagged { tag: None, workers };
        let counted: u64 = loadlab_stats::interval_log::per_second(&latency)
            .unwrap()
            .iter()
            .map(|s| s.count)
            .sum();
        assert!(result.tally.completed > 0);
        assert_eq!(counted, result.tally.completed);
        assert!(result.hdr_log.is_none());
    }

    /// Keeps each worker's last snapshot and the count of its latency histogram then.
    #[derive(Default)]
    struct Last(std::sync::Mutex<std::collections::BTreeMap<usize, (super::Snapshot, u64)>>);

    impl super::Watch for Last {
        fn snapshot(&self, s: &super::Snapshot, latency: &loadlab_stats::Recorder) {
            self.0.lock().unwrap().insert(s.worker, (s.clone(), latency.count()));
        }
    }

    #[test]
    fn a_watcher_sees_each_workers_whole_latency_connections_and_cpu_and_nothing_is_kept() {
        let (config, addr, control) = two_connections(2, 1300);
        let last = Arc::new(Last::default());
        control.live.watch(last.clone());
        assert!(control.live.enabled());
        let result = crate::run(&config, addr, control.clone()).unwrap();
        // Watched, not asked to keep: nothing waits to be taken.
        assert!(control.live.take().is_empty());
        let last = last.0.lock().unwrap();
        assert_eq!(last.len(), 2);
        let completed: u64 = last.values().map(|(s, _)| s.counts.completed).sum();
        let counted: u64 = last.values().map(|(_, n)| *n).sum();
        assert!(result.tally.completed > 0);
        assert_eq!((completed, counted), (result.tally.completed, result.tally.completed));
        for (s, _) in last.values() {
            assert_eq!(s.open, 1, "{s:?}");
            assert!(s.cpu_us > 0, "{s:?}");
        }
    }
}
