//! What a worker thread needs to know, fixed for the run ([`WorkerSpec`]), whatever load it
//! drives on its event loop: where to connect, the encoded requests, the pacing, the limits
//! and the run's clock.

use std::net::{IpAddr, SocketAddr};
use std::sync::Arc;
use std::time::{Duration, Instant};

use crate::check::Validation;
use crate::http::Limits;
use crate::mix::Picker;
use crate::pacing::Pacing;
use crate::result::{EntryTally, IntervalTally, Tally};
use crate::table::Table;
use crate::Protocol;

/// What a worker needs to know, fixed for the run.
#[derive(Debug, Clone)]
pub(crate) struct WorkerSpec {
    pub addr: SocketAddr,
    /// Every request of the run, encoded once (HTTP/1.1 bytes, or HTTP/2 HEADERS and body).
    pub table: Arc<Table>,
    /// Which of them each new exchange carries (a replay's schedule says it instead).
    pub picker: Picker,
    /// Entries with figures of their own (a URL list's); 0 for none.
    pub tallied: usize,
    /// Keep per-second histograms for the interval log (`--hdr-log`).
    pub hdr_log: bool,
    /// Record per-second histograms for live readers ([`crate::live`]), each handed over once
    /// as it is published and kept only with `hdr_log`.
    pub live_intervals: bool,
    pub keepalive: bool,
    pub pacing: Pacing,
    pub protocol: Protocol,
    /// Closed loop: this worker's connections. Open loop and sessions: the most it may open.
    pub connections: usize,
    /// Closed-loop stages: how many of its connections are open over time.
    pub levels: Option<Levels>,
    pub timeout: Duration,
    pub connect_timeout: Duration,
    pub validation: Validation,
    pub limits: Limits,
    pub pin: Option<usize>,
    pub source_ips: Vec<IpAddr>,
    /// When scheduled sends go out against their due times, as the run settled it.
    pub sends: crate::Sends,
    /// Connect here instead of `addr` (`BenchConfig::unix_socket`).
    pub unix: Option<std::path::PathBuf>,
    /// `https://`: the run's TLS configuration and the server's name.
    pub tls: Option<(std::sync::Arc<rustls::ClientConfig>, rustls::pki_types::ServerName<'static>)>,
    /// When measuring starts (after warm-up); common to all workers.
    pub measure_start: Instant,
    /// When a timed run ends; `None` for a counted run.
    pub end: Option<Instant>,
}

/// Closed-loop stages (k6's ramping VUs): the whole test's connection level over time, this
/// host's share of it (its agent's, weighted or not; the whole on one host) and this worker's
/// share of the host's part.
#[derive(Debug, Clone)]
pub(crate) struct Levels {
    pub shape: Arc<crate::Shape>,
    pub agent: crate::Share,
    pub worker: crate::Share,
}

impl Levels {
    /// This worker's connections at `t` seconds into the run: the level rounded down, the
    /// agent's [`Share::part`](crate::Share::part) of it, and the worker's part of that. Each
    /// split telescopes, so the workers of all agents hold the level exactly, and a weighted
    /// agent its weight's part (3:1 over 8 connections: 6 and 2).
    pub fn at(&self, t: f64) -> usize {
        let level = self.shape.at(t).floor() as u64;
        self.worker.part(self.agent.part(level)) as usize
    }
}

impl WorkerSpec {
    /// A worker's empty tallies, sized for the run: whatever load its loop drives (requests,
    /// sessions, visits, views), the per-entry figures, the interval log's histograms and the
    /// per-second series are kept the same way. A `scheduled` load also keeps its latency
    /// from the send (the service time) beside the one from the due time.
    pub fn tally(&self, scheduled: bool) -> Tally {
        let mut tally = Tally::default();
        tally.entries.resize_with(self.tallied, EntryTally::default);
        if self.hdr_log || self.live_intervals {
            let service = scheduled.then(loadlab_stats::interval_log::Intervals::new);
            tally.intervals = Some(Box::new(IntervalTally { service, ..IntervalTally::default() }));
        }
        if let Some(end) = self.end {
            tally.series = loadlab_stats::Series::with_capacity(
                end.saturating_duration_since(self.measure_start).as_secs() as usize + 2,
            );
        }
        tally
    }
}
