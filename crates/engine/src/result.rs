//! What a run measured: each worker's tallies, and their exact merge.

use std::collections::BTreeMap;
use std::time::{Duration, SystemTime};

use loadlab_stats::interval_log::{Intervals, Tagged};
use loadlab_stats::{Recorder, Series};

use crate::{ErrorClass, ErrorCounts};

/// The four timings ab reports per request, in microseconds.
///
/// - `connect`: establishing the TCP connection (0 on a reused keep-alive connection);
/// - `waiting`: from the last request byte written to the first response byte (time to first
///   byte);
/// - `processing`: total minus connect;
/// - `total`: from the start of the request (its connect included) to the last response byte.
///
/// In the open loop two more: `corrected`, from when each request was due to its last byte
/// (the latency a user arriving on schedule saw, coordinated omission corrected), and `late`,
/// how long after its due time each request was sent.
#[derive(Debug, Clone, Default)]
pub struct Timings {
    pub connect: Recorder,
    pub waiting: Recorder,
    pub processing: Recorder,
    pub total: Recorder,
    pub corrected: Recorder,
    pub late: Recorder,
    /// TLS handshakes, from the TCP connection to the handshake's end (https:// only; one per
    /// new connection).
    pub tls: Recorder,
}

impl Timings {
    pub fn merge(&mut self, other: &Timings) {
        self.connect.merge(&other.connect);
        self.waiting.merge(&other.waiting);
        self.processing.merge(&other.processing);
        self.total.merge(&other.total);
        self.corrected.merge(&other.corrected);
        self.late.merge(&other.late);
        self.tls.merge(&other.tls);
    }

    pub fn clear(&mut self) {
        self.connect.clear();
        self.waiting.clear();
        self.processing.clear();
        self.total.clear();
        self.corrected.clear();
        self.late.clear();
        self.tls.clear();
    }
}

/// Body lengths of completed responses: the first, and the range, so a length that varies is
/// reported as information and never as a failure (ab's "Length" failures hid real ones).
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct BodyLengths {
    pub first: Option<u64>,
    pub min: u64,
    pub max: u64,
}

impl BodyLengths {
    #[inline]
    pub fn record(&mut self, len: u64) {
        if self.first.is_none() {
            *self = BodyLengths { first: Some(len), min: len, max: len };
        } else {
            self.min = self.min.min(len);
            self.max = self.max.max(len);
        }
    }

    pub fn varied(&self) -> bool {
        self.min != self.max
    }

    fn merge(&mut self, other: &BodyLengths) {
        match (self.first, other.first) {
            (_, None) => {}
            (None, Some(_)) => *self = *other,
            (Some(_), Some(_)) => {
                self.min = self.min.min(other.min);
                self.max = self.max.max(other.max);
            }
        }
    }
}

/// One request of a mix on its own: how often it ended and how, and its latency (the one
/// every output shows: from the due time under a schedule), to two significant digits.
#[derive(Debug, Clone)]
pub struct EntryTally {
    pub completed: u64,
    pub failed: u64,
    /// Responses by status class, 1xx at index 0 to 5xx at 4 (validation failures included).
    pub status_classes: [u64; 5],
    pub latency: Recorder,
}

impl Default for EntryTally {
    fn default() -> Self {
        EntryTally {
            completed: 0,
            failed: 0,
            status_classes: [0; 5],
            latency: Recorder::with_digits(2),
        }
    }
}

impl EntryTally {
    fn merge(&mut self, o: &EntryTally) {
        self.completed += o.completed;
        self.failed += o.failed;
        for (a, b) in self.status_classes.iter_mut().zip(o.status_classes) {
            *a += b;
        }
        self.latency.merge(&o.latency);
    }
}

/// `--hdr-log`: one worker's latency histograms, one a second.
#[derive(Debug, Clone, Default)]
pub struct IntervalTally {
    /// The latency every output shows: from the due time under a schedule (corrected), from
    /// the start in the closed loop.
    pub latency: Intervals,
    /// Under a schedule, from when each request started (uncorrected); `None` in the closed
    /// loop, where it is `latency`.
    pub service: Option<Intervals>,
}

/// One worker's tallies over the measured window; also the merged result's core.
#[derive(Debug, Clone)]
pub struct Tally {
    pub completed: u64,
    pub failed: u64,
    /// Measured requests still in flight when a timed run ended or was interrupted.
    pub unfinished: u64,
    /// Measured responses after which the connection stayed open for another request (ab's
    /// "Keep-Alive requests").
    pub keepalive: u64,
    pub connections_opened: u64,
    /// Requests whose last byte was written.
    pub sent: u64,
    /// Open loop: requests due within the measured window that were never sent.
    pub not_sent: u64,
    /// Lifetimes of measured connections, from connect to close, in microseconds.
    pub conn_life: Recorder,
    /// Replies carried by those connections.
    pub conn_replies: u64,
    /// https://: handshakes (timed in `timings.tls`) that resumed an earlier session.
    pub tls_resumed: u64,
    pub errors: ErrorCounts,
    /// Responses by status code, index = code (100..=999), validation failures included.
    pub status: Box<[u64; 1000]>,
    /// Every byte received, heads and chunk framing included.
    pub bytes_total: u64,
    /// Body bytes after chunked decoding.
    pub bytes_body: u64,
    pub lengths: BodyLengths,
    pub timings: Timings,
    /// Per-second counts, second 0 starting when measuring starts.
    pub series: Series,
    /// Request bytes written (each request's encoded length, once it was sent in full).
    pub bytes_sent: u64,
    /// A URL list's requests, each on its own (index = entry); empty otherwise.
    pub entries: Vec<EntryTally>,
    /// `--hdr-log`: per-second histograms; `None` unless asked for (and in a merged tally,
    /// whose workers' seconds go to [`BenchResult::hdr_log`]).
    pub intervals: Option<Box<IntervalTally>>,
    /// [`crate::Validation::keep_answer`] (a verify): the first measured answer, whole.
    pub answer: Option<Box<crate::check::KeptAnswer>>,
    /// Visits (`--wsesslog`): the visits' own figures; `None` in every other run.
    pub sessions: Option<Box<crate::session_tally::SessionTally>>,
}

impl Default for Tally {
    fn default() -> Self {
        Tally {
            completed: 0,
            failed: 0,
            unfinished: 0,
            keepalive: 0,
            connections_opened: 0,
            sent: 0,
            not_sent: 0,
            conn_life: Recorder::new(),
            conn_replies: 0,
            tls_resumed: 0,
            errors: ErrorCounts::default(),
            status: Box::new([0; 1000]),
            bytes_total: 0,
            bytes_body: 0,
            lengths: BodyLengths::default(),
            timings: Timings::default(),
            series: Series::default(),
            bytes_sent: 0,
            entries: Vec::new(),
            intervals: None,
            answer: None,
            sessions: None,
        }
    }
}

impl Tally {
    /// The latency every output shows: from when each request was due under a schedule (open
    /// loop and sessions: coordinated omission corrected), from its start in the closed loop.
    pub fn latency(&self, pacing: crate::Pacing) -> &Recorder {
        if pacing == crate::Pacing::Closed {
            &self.timings.total
        } else {
            &self.timings.corrected
        }
    }

    pub fn merge(&mut self, o: &Tally) {
        self.completed += o.completed;
        self.failed += o.failed;
        self.unfinished += o.unfinished;
        self.keepalive += o.keepalive;
        self.connections_opened += o.connections_opened;
        self.sent += o.sent;
        self.not_sent += o.not_sent;
        self.conn_life.merge(&o.conn_life);
        self.conn_replies += o.conn_replies;
        self.tls_resumed += o.tls_resumed;
        self.errors.merge(&o.errors);
        for (a, b) in self.status.iter_mut().zip(o.status.iter()) {
            *a += b;
        }
        self.bytes_total += o.bytes_total;
        self.bytes_body += o.bytes_body;
        self.lengths.merge(&o.lengths);
        self.timings.merge(&o.timings);
        self.series.merge(&o.series);
        self.bytes_sent += o.bytes_sent;
        if self.entries.len() < o.entries.len() {
            self.entries.resize_with(o.entries.len(), EntryTally::default);
        }
        for (a, b) in self.entries.iter_mut().zip(&o.entries) {
            a.merge(b);
        }
        if self.answer.is_none() {
            self.answer.clone_from(&o.answer);
        }
        if let Some(s) = &o.sessions {
            self.sessions.get_or_insert_default().merge(s);
        }
    }

    /// Counts one failed request of `class` in the totals and in its second's bucket.
    #[inline]
    pub fn count_failure(&mut self, class: ErrorClass, errno: Option<i32>, second: usize) {
        self.failed += 1;
        self.errors.add(class, errno);
        let bucket = self.series.at(second);
        bucket.failed += 1;
        bucket.failed_by[class as usize] += 1;
    }

    /// Status codes that occurred, with their counts.
    pub fn status_counts(&self) -> BTreeMap<u16, u64> {
        self.status
            .iter()
            .enumerate()
            .filter(|(_, n)| **n > 0)
            .map(|(code, n)| (code as u16, *n))
            .collect()
    }

    /// Responses per status class: index 0 = 1xx .. 4 = 5xx.
    pub fn status_classes(&self) -> [u64; 5] {
        let mut out = [0; 5];
        for (code, n) in self.status.iter().enumerate().filter(|(_, n)| **n > 0) {
            if (100..600).contains(&code) {
                out[code / 100 - 1] += n;
            }
        }
        out
    }
}

/// What one worker thread reports when it ends.
#[derive(Debug, Clone)]
pub struct WorkerReport {
    pub tally: Tally,
    /// CPU the thread used during the measured window.
    pub cpu: crate::sys::CpuTime,
    /// Time the thread was runnable but waited for a CPU during the window.
    pub cpu_wait: Duration,
    /// Times the thread was preempted during the window.
    pub involuntary_switches: u64,
    /// The measured window as this worker saw it.
    pub wall: Duration,
    /// When this worker's last measured request ended, from the start of measuring.
    pub last_event: Duration,
    /// A counted schedule (`-n` with a rate): when this worker's first arrival that the count
    /// left out was due, from the start of measuring. Each arrival sent stands for the
    /// interval up to the next one, so N arrivals at R per second span N/R, not the N-1
    /// intervals between the first and the last.
    pub schedule_end: Option<Duration>,
    pub peak_open: usize,
    /// Connection slots the worker ended with (open loop: how far the pool grew).
    pub slots: usize,
    pub server: Option<String>,
    pub negotiated: Option<crate::tls::Negotiated>,
}

/// The merged result of a run.
#[derive(Debug, Clone)]
pub struct BenchResult {
    pub tally: Tally,
    /// Request bytes written (requests sent in full times the request's encoded length).
    pub bytes_sent: u64,
    /// The measured duration: until the last request ended (`-n`), and under a schedule no
    /// earlier than its next arrival that the count left out, or the planned duration
    /// (`-d`), or until the interruption.
    pub duration: Duration,
    pub interrupted: bool,
    pub workers: Vec<WorkerSummary>,
    /// The Server header of the first response seen.
    pub server: Option<String>,
    /// `https://`: what the first TLS handshake settled on (version, cipher suite, group,
    /// ALPN); every connection of a run offers the same, so one stands for all.
    pub tls: Option<crate::tls::Negotiated>,
    /// CPUs the client process could use.
    pub cpus_available: usize,
    /// Connections open at the same time, at most (sum of per-worker peaks).
    pub peak_open: usize,
    /// Connections the run was allowed: `-c` in the closed loop, `--max-connections` otherwise.
    pub pool: usize,
    /// The soft open-file limit in force during the run.
    pub fd_limit: u64,
    pub pacing: crate::Pacing,
    /// The HTTP version spoken (over TLS, the one ALPN chose: every connection checks it).
    pub protocol: crate::Protocol,
    /// The local interface the traffic crossed, and its speed when known.
    pub link: crate::Link,
    /// The path's handshake RTT, idle and under load (see [`crate::probe`]).
    pub path: crate::PathRtt,
    /// The client's cgroup CPU quota when it throttled the client during the run (see
    /// [`crate::cgroup`]): what a starved client waited for, then.
    pub cgroup_throttle: Option<crate::cgroup::CgroupThrottle>,
    /// `--hdr-log`: each worker's per-second histograms, to be merged second by second into
    /// HdrHistogram's interval log ([`loadlab_stats::interval_log::write_log`]).
    pub hdr_log: Option<HdrLog>,
    /// With [`crate::BenchConfig::start_at`]: how late the run's thread woke after that time
    /// (the clock's origin is the time itself: see the engine's `start` module). Zero otherwise.
    pub start_late: Duration,
    /// Open loop and sessions: when the sends went out against their due times, as the run
    /// settled it before its clock started; `None` in the closed loop.
    pub sends: Option<crate::Sends>,
}

/// The per-second histograms of a run, as the interval log needs them.
#[derive(Debug, Clone)]
pub struct HdrLog {
    /// When measuring started, by the wall clock: the log's start and base time.
    pub start: SystemTime,
    /// Closed loop: the latency, untagged. Open loop and sessions: `corrected` (from the due
    /// time) and `uncorrected` (from the send).
    pub latencies: Vec<Tagged>,
}

/// Per-worker figures kept after the merge, for the client's self-check.
#[derive(Debug, Clone, Copy)]
pub struct WorkerSummary {
    pub cpu: crate::sys::CpuTime,
    /// Time the worker was runnable but waited for a CPU (its scheduler run delay).
    pub cpu_wait: Duration,
    pub involuntary_switches: u64,
    pub wall: Duration,
}

impl WorkerSummary {
    /// Fraction of its wall time the worker spent on a CPU.
    pub fn busy(&self) -> f64 {
        if self.wall.is_zero() {
            return 0.0;
        }
        self.cpu.total().as_secs_f64() / self.wall.as_secs_f64()
    }

    /// Fraction of its wall time the worker wanted a CPU and did not have one.
    pub fn waiting(&self) -> f64 {
        if self.wall.is_zero() {
            return 0.0;
        }
        self.cpu_wait.as_secs_f64() / self.wall.as_secs_f64()
    }
}

impl BenchResult {
    pub fn cpu(&self) -> crate::sys::CpuTime {
        let mut t = crate::sys::CpuTime::default();
        for w in &self.workers {
            t.user += w.cpu.user;
            t.sys += w.cpu.sys;
        }
        t
    }

    pub fn rps(&self) -> f64 {
        per_second(self.tally.completed as f64, self.duration)
    }

    /// The latency every output shows ([`Tally::latency`]).
    pub fn latency(&self) -> &Recorder {
        self.tally.latency(self.pacing)
    }

    /// Client CPU per completed or failed request, in microseconds.
    pub fn cpu_us_per_request(&self) -> Option<f64> {
        let n = self.tally.completed + self.tally.failed;
        (n > 0).then(|| self.cpu().total().as_secs_f64() * 1e6 / n as f64)
    }

    /// Time the workers waited for a CPU while runnable, summed.
    pub fn cpu_wait(&self) -> Duration {
        self.workers.iter().map(|w| w.cpu_wait).sum()
    }

    /// Involuntary context switches of the workers, summed.
    pub fn involuntary_switches(&self) -> u64 {
        self.workers.iter().map(|w| w.involuntary_switches).sum()
    }

    /// The share of its window that the worker which waited most spent waiting for a CPU.
    pub fn max_worker_waiting(&self) -> f64 {
        self.workers.iter().map(WorkerSummary::waiting).fold(0.0, f64::max)
    }

    /// For the worker that waited most: the share of its window it waited for a CPU, and the
    /// share of the time it wanted a CPU (running or waiting) that it waited.
    pub fn starvation(&self) -> (f64, f64) {
        self.workers
            .iter()
            .map(|w| {
                let (wait, busy) = (w.waiting(), w.busy());
                (wait, if wait + busy > 0.0 { wait / (wait + busy) } else { 0.0 })
            })
            .fold((0.0, 0.0), |a, b| if b.0 > a.0 { b } else { a })
    }

    /// The busiest worker's share of its CPU.
    pub fn max_worker_busy(&self) -> f64 {
        self.workers.iter().map(WorkerSummary::busy).fold(0.0, f64::max)
    }

    /// CPU used over CPU available: workers beyond the number of CPUs share them.
    pub fn client_busy(&self) -> f64 {
        let wall = self.duration.as_secs_f64();
        let cpus = self.workers.len().min(self.cpus_available).max(1) as f64;
        if wall <= 0.0 {
            return 0.0;
        }
        self.cpu().total().as_secs_f64() / (wall * cpus)
    }

    /// Open loop: requests per second offered by the schedule.
    pub fn offered_rps(&self) -> Option<f64> {
        self.pacing.offered_rps()
    }

    /// Requests due but never sent: arrivals, times the calls of each for sessions.
    pub fn not_sent_requests(&self) -> u64 {
        match self.pacing {
            crate::Pacing::Sessions { calls, .. } => self.tally.not_sent * u64::from(calls),
            _ => self.tally.not_sent,
        }
    }

    /// The share of the link's capacity that the busier direction used, framing included;
    /// `None` when the link's speed is unknown.
    pub fn link_utilisation(&self) -> Option<f64> {
        crate::link::utilisation(self.busier_bytes(), self.duration, self.link.speed_mbps)
    }

    /// Whether the busier direction averaged at least [`crate::link::NETWORK_BOUND`] of the
    /// link's speed over the run: the network, not the server, may have limited it. Never
    /// true when the speed is unknown. See [`crate::link`].
    pub fn network_bound(&self) -> bool {
        crate::link::network_bound(self.busier_bytes(), self.duration, self.link.speed_mbps)
    }

    /// What the busier direction carried over the run, in Mbit/s of HTTP bytes.
    pub fn achieved_mbps(&self) -> f64 {
        per_second(self.busier_bytes() as f64 * 8.0, self.duration) / 1e6
    }

    /// The bytes of the busier direction: received, or sent for large uploads.
    fn busier_bytes(&self) -> u64 {
        self.tally.bytes_total.max(self.bytes_sent)
    }

    /// Completed requests per second over each whole measured second (httperf's reply rate).
    pub fn per_second_completed(&self) -> Vec<f64> {
        let full = self.duration.as_secs() as usize;
        self.tally.series.completed_per_second(full)
    }
}

pub fn per_second(x: f64, d: Duration) -> f64 {
    if d.is_zero() {
        0.0
    } else {
        x / d.as_secs_f64()
    }
}
