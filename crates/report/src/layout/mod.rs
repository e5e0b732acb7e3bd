//! The layouts of the tools people already read, ApacheBench's and httperf's, each written
//! once over one value, [`Figures`]: what a bench or a stored cell measured. A live `bench`
//! gives every part of it; a stored cell gives what the store kept ([`Figures::of_cell`]),
//! and a part it lacks is left out of the layout rather than printed as a misleading zero.
//! The parts that read a whole distribution (ab's percentile and connection times tables)
//! read the one [`Histograms`] value a live bench carries and a cell keeps.

mod ab;
mod cell;
mod httperf;

use std::collections::BTreeMap;
use std::io::{self, Write};

use loadlab_stats::{Moments, Recorder, RecorderSummary};
use loadlab_store::{Histograms, LoadModel};

pub use ab::ab;
pub use httperf::httperf;

/// One layout's writer: [`ab`] or [`httperf`].
pub type Layout = fn(&Figures, &mut dyn Write) -> io::Result<()>;

/// `f` written in `layout`, as text.
pub fn to_text(layout: Layout, f: &Figures) -> String {
    let mut out = Vec::new();
    // Writing to a Vec cannot fail, and every layout writes UTF-8.
    let _ = layout(f, &mut out);
    String::from_utf8_lossy(&out).into_owned()
}

/// What a bench or a cell measured, as the ab and httperf layouts read it.
#[derive(Debug, Clone)]
pub struct Figures<'a> {
    /// Who answered and how the load was asked for: a live bench's, for the layouts' opening
    /// lines; `None` for a stored cell, whose target and load the report states around it.
    pub target: Option<Target<'a>>,
    pub model: LoadModel,
    /// Measured time, warm-up excluded.
    pub duration_s: f64,
    /// The closed loop's connections (ab's `-c`); otherwise the most that may be opened.
    pub connections: Option<u64>,
    /// Connections open at once, at most.
    pub peak_connections: Option<u64>,
    pub connections_opened: Option<u64>,
    pub completed: u64,
    pub failed: u64,
    /// Failures by loadlab's class name (`connreset`...); a class absent counts 0.
    pub errors: BTreeMap<&'a str, u64>,
    /// Completed responses by status class (`2xx`...), when counted so.
    pub status_class: Option<BTreeMap<&'static str, u64>>,
    /// Completed responses that were not 2xx; `None` where not kept.
    pub non_2xx: Option<u64>,
    /// Requests written in full; `None` where not kept.
    pub sent: Option<u64>,
    /// Keep-alive on: the responses after which the connection stayed open.
    pub keepalive: Option<u64>,
    /// Every byte received, heads included.
    pub bytes_total: Option<u64>,
    /// Body bytes after chunked decoding.
    pub bytes_body: Option<u64>,
    /// Request bytes written, heads and bodies.
    pub bytes_sent: Option<u64>,
    /// The requests carried a body (ab then says what it sent).
    pub request_body: bool,
    /// Mean latency (from due time under an open loop), microseconds.
    pub latency_mean_us: Option<f64>,
    /// The distribution ab's percentile table reads.
    pub percentiles: Option<&'a Recorder>,
    /// ab's connection times table.
    pub timings: Option<Timings>,
    /// Time to the first byte of the answer, mean, microseconds (httperf's response time).
    pub waiting_mean_us: Option<f64>,
    /// Connect time, mean, microseconds.
    pub connect_mean_us: Option<f64>,
    /// Closed connections' lifetimes and replies per connection (httperf's connection lines).
    pub lifetimes: Option<Lifetimes>,
    /// Completed requests per whole second (httperf's reply rate); `None` under a second.
    pub per_second: Option<Moments>,
    /// The client's CPU time, user and system, seconds.
    pub cpu_s: Option<(f64, f64)>,
    /// The open loop's schedule; `None` in the closed loop.
    pub schedule: Option<Schedule>,
    /// `--wsesslog`'s session lines.
    pub sessions: Option<SessionLines<'a>>,
    /// Reasons a figure should not be taken at face value.
    pub warnings: &'a [String],
}

/// A live bench's target and load, for ab's preamble and httperf's command line.
#[derive(Debug, Clone)]
pub struct Target<'a> {
    pub loadlab_version: &'a str,
    pub host: &'a str,
    pub port: u16,
    pub path: &'a str,
    /// The Server header of the first response.
    pub software: Option<&'a str>,
    /// `https://`: version, cipher and key exchange group.
    pub tls: Option<(&'a str, &'a str, Option<&'a str>)>,
    pub h2: bool,
    /// The first body's length; `None` when it varied.
    pub document_length: Option<u64>,
    pub load: Load<'a>,
}

/// How the load was asked for, as httperf's command line says it.
#[derive(Debug, Clone)]
pub struct Load<'a> {
    pub rate: Option<f64>,
    pub calls_per_connection: Option<u32>,
    pub conns: Option<u64>,
    pub requests: Option<u64>,
    pub duration_s: Option<f64>,
    pub connections: usize,
    pub timeout_s: f64,
    /// `--urls`, `--wsesslog` or `--visits`: the file.
    pub urls: Option<&'a str>,
    /// `--wsesslog`: httperf's own session log.
    pub wsesslog: bool,
    /// Page views: the page and how many resources it has.
    pub views: Option<(&'a str, usize)>,
    /// A visit file's steps.
    pub visit_steps: Option<usize>,
}

/// ab's "Connection Times (ms)" rows.
#[derive(Debug, Clone)]
pub struct Timings {
    pub connect: RecorderSummary,
    pub tls: Option<RecorderSummary>,
    pub processing: RecorderSummary,
    pub waiting: RecorderSummary,
    pub total: RecorderSummary,
}

impl Timings {
    /// The rows of `h`'s distributions; `None` unless connect, waiting, processing and each
    /// request's whole time were all kept (cells stored before the processing time was).
    pub fn of(h: &Histograms) -> Option<Timings> {
        let kept = |r: &Option<Recorder>| r.as_ref().map(Recorder::summary);
        Some(Timings {
            connect: kept(&h.connect)?,
            tls: kept(&h.tls),
            processing: kept(&h.processing)?,
            waiting: kept(&h.waiting)?,
            // Empty or not, as a live bench's table reads it (a run that completed nothing
            // still has httperf's transfer time from its answers).
            total: kept(&h.uncorrected).or_else(|| kept(&h.latency))?,
        })
    }
}

/// httperf's connection lines.
#[derive(Debug, Clone)]
pub struct Lifetimes {
    pub lifetime_us: RecorderSummary,
    pub replies_per_connection: f64,
}

/// The open loop's schedule: offered against achieved, and latency from due time.
#[derive(Debug, Clone)]
pub struct Schedule {
    pub offered_rps: f64,
    pub achieved_rps: f64,
    pub late_p99_us: u64,
    pub not_sent: u64,
    pub latency_p50_us: u64,
    pub latency_p99_us: u64,
    pub latency_max_us: u64,
}

/// httperf's session lines.
#[derive(Debug, Clone)]
pub struct SessionLines<'a> {
    pub started: u64,
    pub completed: u64,
    /// Session rate: min, avg, max, stddev.
    pub rate: (f64, f64, f64, f64),
    pub connections_per_session: f64,
    pub lifetime_mean_us: f64,
    pub failtime_mean_us: f64,
    pub length_histogram: &'a [u64],
}

impl Figures<'_> {
    /// Failures of `class`.
    fn error(&self, class: &str) -> u64 {
        self.errors.get(class).copied().unwrap_or(0)
    }

    /// Failures of any of `classes`.
    fn errors_of(&self, classes: &[&str]) -> u64 {
        classes.iter().map(|c| self.error(c)).sum()
    }

    /// Requests that ended, completed or failed.
    fn done(&self) -> u64 {
        self.completed + self.failed
    }

    /// Answers received: the completed, and those refused by validation after arriving.
    fn replies(&self) -> u64 {
        self.completed + self.error("validation")
    }

    /// `x` per second of the measured time; 0 for none.
    fn per_s(&self, x: f64) -> f64 {
        if self.duration_s > 0.0 {
            x / self.duration_s
        } else {
            0.0
        }
    }
}
