//! The effective parameters of one run, as the engine receives them.

use std::net::IpAddr;
use std::time::Duration;

use crate::mix::Traffic;
use crate::table::Table;
use crate::{check::Validation, http::Limits, EngineError, Pacing, Protocol, RequestSpec};
use crate::{Share, Stop, Target};

/// Everything a run needs. Built by the CLI (or a suite), checked by [`BenchConfig::check`].
#[derive(Debug, Clone)]
pub struct BenchConfig {
    pub target: Target,
    /// The request; with a mix or a replay, what every entry carries unless it says otherwise
    /// (the method, headers and body).
    pub request: RequestSpec,
    /// One request, a URL list's, or a replayed log's.
    pub traffic: Traffic,
    /// Keep a latency histogram per second for HdrHistogram's interval log (`--hdr-log`).
    pub hdr_log: bool,
    pub pacing: Pacing,
    /// Concurrent connections in the closed loop (each has one request outstanding at a time,
    /// or `protocol.streams()` over HTTP/2).
    pub connections: usize,
    pub protocol: Protocol,
    /// Worker threads, each with its own event loop; never more than `connections`.
    pub threads: usize,
    /// CPUs to pin workers to, round-robin; empty for no pinning.
    pub pin: Vec<usize>,
    pub stop: Stop,
    /// Reuse connections (HTTP/1.1 keep-alive); false opens one connection per request.
    pub keepalive: bool,
    /// Bound on one request, from its start (connect included) to the end of its response.
    pub timeout: Duration,
    /// Bound on establishing a TCP connection.
    pub connect_timeout: Duration,
    /// Load applied before measuring; its requests are not counted.
    pub warmup: Duration,
    pub validation: Validation,
    pub limits: Limits,
    /// Local addresses new connections bind to, round-robin, so that one address's ephemeral
    /// ports do not run out; empty for the kernel's choice.
    pub source_ips: Vec<IpAddr>,
    /// Seed for Poisson arrivals, so a run can be repeated exactly.
    pub seed: u64,
    /// `https://` targets: trust, resumption.
    pub tls: crate::tls::TlsOptions,
    /// Connect to this unix-domain socket instead of the URL's host and port (curl's
    /// `--unix-socket`); the URL still gives the Host header and the path.
    pub unix_socket: Option<std::path::PathBuf>,
    /// Open loop and sessions: when sends go out against their due times. By default the
    /// run measures what a wake-up costs and sends together what falls due within that
    /// window either side of a wake-up ([`crate::Sends`]); `Exact` sends each at its own due time; `Grid` puts the
    /// wake-ups on a grid of a step, each sending every arrival due by then (wrk2's 1 ms
    /// timer), for fewer wake-ups and less CPU. Due times do not move: each arrival's
    /// lateness is measured and counted in its latency.
    pub coalesce: crate::Coalesce,
    /// This host's part of a test spread over several (`--agents`); agent 0 of 1 alone.
    pub share: Share,
    /// A rate that changes over time (`--rate A..B`, `--stages`): the open loop's or the
    /// sessions' arrivals follow it (the pacing's rate is then its mean, for the report). The
    /// run lasts the shape's duration, with no warm-up: the shape is its own ramp.
    pub shape: Option<std::sync::Arc<crate::Shape>>,
    /// Visits (`--wsesslog`): what each visitor requests, as entries of `traffic`'s list;
    /// driven by `visits` instead of the request loop. `None` for requests alone.
    pub visits: Option<std::sync::Arc<crate::visits::Plan>>,
    /// A test from several hosts: the wall-clock time agreed at the rendezvous when the run's
    /// clock starts, after its setup (the engine's `start` module); `None`: as soon as it is
    /// set up. Not part of the load: each host has its own, by its own clock.
    pub start_at: Option<std::time::SystemTime>,
}

/// The defaults of a run's settings, written once: [`BenchConfig::new`] starts from them, and
/// `loadlab_load` names them as its flags' `[default: ...]` and a suite key's value when left out.
pub mod defaults {
    use std::time::Duration;

    /// A request's bound, from its start to its last byte: long enough that ordinary slowness
    /// is measured, not counted as errors.
    pub const TIMEOUT: Duration = Duration::from_secs(30);
    /// Establishing a TCP connection.
    pub const CONNECT_TIMEOUT: Duration = Duration::from_secs(10);
    /// The closed loop's connections when none are given.
    pub const CONNECTIONS: usize = 10;
    /// How long a run lasts when no count is given.
    pub const DURATION: Duration = Duration::from_secs(10);
    /// Load before the measurement: none.
    pub const WARMUP: Duration = Duration::ZERO;
    /// Open loop and sessions: sends grouped within the wake-up cost measured at start.
    pub const COALESCE: crate::Coalesce = crate::Coalesce::Auto;
    /// The seed of Poisson arrivals (the same seed and thread count repeat the same schedule).
    pub const SEED: u64 = 1;
}

impl BenchConfig {
    /// A configuration with the defaults ([`defaults`]) for `target`: keep-alive on, TLS
    /// sessions resumed.
    pub fn new(target: Target) -> Self {
        BenchConfig {
            target,
            request: RequestSpec::default(),
            traffic: Traffic::Single,
            hdr_log: false,
            pacing: Pacing::Closed,
            connections: defaults::CONNECTIONS,
            protocol: Protocol::Http1,
            threads: 1,
            pin: Vec::new(),
            stop: Stop::Duration(defaults::DURATION),
            keepalive: true,
            timeout: defaults::TIMEOUT,
            connect_timeout: defaults::CONNECT_TIMEOUT,
            warmup: defaults::WARMUP,
            validation: Validation::default(),
            limits: Limits::default(),
            source_ips: Vec::new(),
            seed: defaults::SEED,
            coalesce: defaults::COALESCE,
            unix_socket: None,
            tls: crate::tls::TlsOptions { resume: true, ..Default::default() },
            share: Share::default(),
            shape: None,
            visits: None,
            start_at: None,
        }
    }

    /// Paces the run by `shape`: the schedule's rate (open loop, sessions), or in the closed
    /// loop the connections open (k6's ramping VUs: each level rounded down, the pool its
    /// peak). The run lasts the shape's duration, keeps its interval histograms
    /// ([`BenchConfig::keeps_intervals`]: the figures of every second read them), and a
    /// schedule's rate becomes the shape's mean (the offered rate of the whole run).
    pub fn shaped(&mut self, shape: crate::Shape) {
        self.stop = Stop::Duration(shape.duration());
        match &mut self.pacing {
            Pacing::Open { rate, .. } | Pacing::Sessions { rate, .. } => *rate = shape.mean(),
            Pacing::Closed => {
                self.connections = (shape.peak().floor() as usize).max(1);
                self.threads = self.threads.min(self.connections);
            }
        }
        self.shape = Some(std::sync::Arc::new(shape));
    }

    /// Whether the workers keep a latency histogram per second: for `--hdr-log`'s interval
    /// log, and under a shape, whose figures of every second read them. `hdr_log` stays what
    /// was asked, so that the run's configuration says it truly.
    pub fn keeps_intervals(&self) -> bool {
        self.hdr_log || self.shape.is_some()
    }

    /// Paces the run by `level` as the flags gave it: nothing for a fixed level; a ramp over
    /// the run's duration; stages, which set it. A count (`-n`) has no duration to ramp over.
    pub fn shaped_by(&mut self, level: &crate::Level) -> Result<(), EngineError> {
        if level.fixed().is_some() {
            return Ok(());
        }
        let Stop::Duration(duration) = self.stop else {
            return invalid("a rate that changes over time needs a duration (-d), not a count");
        };
        if let Some(shape) = level.shape(duration) {
            self.shaped(shape.map_err(|e| EngineError::Config(e.to_string()))?);
        }
        Ok(())
    }

    /// Makes this configuration, the whole test's, agent `share`'s part of it: the closed
    /// loop's connections and count split by [`Share::part`]; the open loop's and the sessions'
    /// arrivals dealt from the one schedule (the workers' streams, see [`Share::stream`]), a
    /// count becoming the arrivals k < n that are this agent's, the connection bound split
    /// like the closed loop's connections. A replay keeps its `-n` (the first n lines of the
    /// log, of which this agent sends its stream's). Refused when the part would be empty.
    pub fn take_share(&mut self, share: Share) -> Result<(), EngineError> {
        self.share = share;
        let of = share.of as u64;
        let empty = |what: &str, total: u64| {
            EngineError::Config(format!(
                "{what} {total} cannot be split over {of} agents: agent {} would have none",
                share.index
            ))
        };
        match &mut self.pacing {
            Pacing::Closed => {
                let total = self.connections as u64;
                self.connections = share.part(total) as usize;
                if self.connections == 0 {
                    return Err(empty("--connections", total));
                }
                self.threads = self.threads.min(self.connections);
            }
            Pacing::Open { max_connections, .. } | Pacing::Sessions { max_connections, .. } => {
                // A weighted agent runs a worker per slot of the schedule (`Share::stream`),
                // each with a connection at least.
                let least = share.min_workers();
                *max_connections = (share.part(*max_connections as u64) as usize).max(least);
                self.threads = self.threads.min(*max_connections).max(least);
            }
        }
        let whole = self.stop;
        self.stop = match (self.stop, &self.pacing, self.traffic.replay()) {
            (Stop::Count(n), _, Some(_)) => Stop::Count(n),
            (Stop::Count(n), Pacing::Closed, None) => Stop::Count(share.part(n)),
            (Stop::Count(n), _, None) => Stop::Count(share.arrivals(n)),
            (d @ Stop::Duration(_), ..) => d,
        };
        match (whole, self.stop) {
            (Stop::Count(n), Stop::Count(0)) => Err(empty("the count", n)),
            _ => Ok(()),
        }
    }

    /// Rejects parameters that cannot be run: each group of rules in turn, the first broken
    /// rule's message as the error.
    pub fn check(&self) -> Result<(), EngineError> {
        self.check_workers()?;
        if self.unix_socket.is_some() && !self.source_ips.is_empty() {
            return invalid("--source-ips has no meaning over a unix socket");
        }
        self.check_pacing()?;
        self.check_shape()?;
        self.check_source_family()?;
        self.check_bounds()?;
        self.check_replay()?;
        if let Some(plan) = &self.visits {
            crate::visits::check(plan, &self.pacing, &self.traffic)?;
        }
        self.check_requests()
    }

    /// Connections, threads and what the protocol allows of them.
    fn check_workers(&self) -> Result<(), EngineError> {
        if self.connections == 0 {
            return invalid("the number of connections must be at least 1");
        }
        if self.threads == 0 {
            return invalid("the number of threads must be at least 1");
        }
        if let Protocol::Http2 { streams } | Protocol::Http3 { streams } = self.protocol {
            let flag = if self.protocol.is_h3() { "--http3" } else { "--http2" };
            if streams == 0 {
                return invalid("--streams must be at least 1");
            }
            if !self.keepalive {
                return Err(EngineError::Config(format!(
                    "--no-keepalive has no meaning with {flag}: use --conn-rate R \
                     --calls-per-conn 1 for a new connection per request"
                )));
            }
        }
        if self.protocol.is_h3() {
            return self.check_h3();
        }
        Ok(())
    }

    /// What HTTP/3 needs and what its connections carry so far: QUIC carries TLS 1.3 only
    /// (RFC 9001 section 4.2), over UDP, for requests of the closed and open loops.
    fn check_h3(&self) -> Result<(), EngineError> {
        if !self.target.tls {
            return invalid("--http3 needs an https:// URL: QUIC carries TLS 1.3 only");
        }
        if self.tls.version == Some(crate::TlsVersion::Tls12) {
            return invalid(
                "--http3 speaks TLS 1.3 only: --tls-version 1.2 has no meaning with it",
            );
        }
        if self.unix_socket.is_some() {
            return invalid("--http3 runs over UDP: --unix-socket has no meaning with it");
        }
        if self.visits.is_some() {
            return invalid("--http3 carries requests, not visits, for now");
        }
        if !self.source_ips.is_empty() {
            return invalid("--http3 connections bind no source address, for now");
        }
        Ok(())
    }

    /// The load model's own parameters, against the threads that share them.
    fn check_pacing(&self) -> Result<(), EngineError> {
        match self.pacing {
            Pacing::Closed if self.threads > self.connections => {
                return invalid("more threads than connections: each thread needs a connection")
            }
            Pacing::Open { rate, max_connections, .. }
            | Pacing::Sessions { rate, max_connections, .. } => {
                if !(rate.is_finite() && rate > 0.0) {
                    return invalid("the rate must be a positive number");
                }
                if max_connections < self.threads {
                    return invalid("--max-connections must be at least the number of threads");
                }
                if let Pacing::Sessions { calls: 0, .. } = self.pacing {
                    return invalid("each connection must carry at least one call");
                }
            }
            Pacing::Closed => {}
        }
        Ok(())
    }

    /// A shape paces a schedule over a timed run of its own length, from its start; visits
    /// arriving by it may also be counted (the run ends at the shape's end or with the last
    /// counted visit, whichever comes first).
    fn check_shape(&self) -> Result<(), EngineError> {
        let Some(shape) = &self.shape else { return Ok(()) };
        if self.pacing == Pacing::Closed && self.protocol != Protocol::Http1 {
            return invalid("connections that change over time are HTTP/1.1's only, for now");
        }
        if self.traffic.replay().is_some() {
            return invalid(
                "a replay's log sets its own pace: a rate shape has no meaning with it",
            );
        }
        if !self.warmup.is_zero() {
            return invalid("a rate shape has no warm-up: start it low instead (e.g. 30s:0..1000)");
        }
        match self.stop {
            Stop::Duration(d) if d.abs_diff(shape.duration()) < Duration::from_millis(1) => Ok(()),
            Stop::Duration(d) => Err(EngineError::Config(format!(
                "the run lasts {d:?} but its shape {:?}: a shape sets the duration",
                shape.duration()
            ))),
            // A session log's N sessions: at most N start in the shape's length.
            Stop::Count(_) if self.visits.is_some() && self.pacing != Pacing::Closed => Ok(()),
            Stop::Count(_) => invalid("a rate shape sets the duration: -n has no meaning with it"),
        }
    }

    /// Source addresses of the target's family.
    fn check_source_family(&self) -> Result<(), EngineError> {
        if let Some(ip) = self
            .source_ips
            .iter()
            .find(|ip| self.target.addrs.first().is_some_and(|a| a.is_ipv4() != ip.is_ipv4()))
        {
            return Err(EngineError::Config(format!(
                "source address {ip} is not of the target's address family"
            )));
        }
        Ok(())
    }

    /// The stop condition and the timeouts: above zero.
    fn check_bounds(&self) -> Result<(), EngineError> {
        match self.stop {
            Stop::Count(0) => return invalid("the number of requests must be at least 1"),
            Stop::Duration(d) if d.is_zero() => return invalid("the duration must be above zero"),
            _ => {}
        }
        if self.timeout.is_zero() || self.connect_timeout.is_zero() {
            return invalid("timeouts must be above zero");
        }
        Ok(())
    }

    /// A replay is an open loop that its log starts and ends.
    fn check_replay(&self) -> Result<(), EngineError> {
        let Some(replay) = self.traffic.replay() else { return Ok(()) };
        if !matches!(self.pacing, Pacing::Open { .. }) {
            return invalid(
                "a replay is an open loop: each line is due at its time (or at \
                 --rate); -c and --conn-rate have no meaning with it",
            );
        }
        if let Stop::Duration(_) = self.stop {
            return invalid(
                "a replay ends with its log: -d has no meaning with it (-n N \
                 replays its first N lines)",
            );
        }
        if !(replay.speed.is_finite() && replay.speed > 0.0) {
            return invalid("--speed must be a positive number");
        }
        if !self.warmup.is_zero() {
            // The lines due in a warm-up would be sent and not counted, so `-n` could not
            // say how many are: the log's start is the replay's start.
            return invalid(
                "a replay has no warm-up: its log starts it (leave the first lines \
                 out of the file to replay without them)",
            );
        }
        Ok(())
    }

    /// Encoding checks the method and headers, so bad ones are reported before any
    /// connection is tried; a URL list's entries too, each named by its line.
    fn check_requests(&self) -> Result<(), EngineError> {
        match self.protocol {
            Protocol::Http1 => drop(self.request.encode(&self.target, self.keepalive)?),
            Protocol::Http2 { .. } | Protocol::Http3 { .. } => {
                drop(self.request.h2_fields(&self.target, &self.target.path)?)
            }
        }
        if let Traffic::Mix(_) = self.traffic {
            self.table()?;
        }
        Ok(())
    }

    /// Connections the run may open: the closed loop's, or the most the open loop and the
    /// sessions may hold.
    pub(crate) fn pool(&self) -> usize {
        match self.pacing {
            Pacing::Closed => self.connections,
            Pacing::Open { max_connections, .. } | Pacing::Sessions { max_connections, .. } => {
                max_connections
            }
        }
    }

    /// Every request of the run, encoded once for its protocol (see [`Table`]).
    pub(crate) fn table(&self) -> Result<Table, EngineError> {
        Table::build(&self.traffic, &self.request, &self.target, self.keepalive, self.protocol)
    }
}

/// A configuration error with this message.
fn invalid(message: &str) -> Result<(), EngineError> {
    Err(EngineError::Config(message.to_string()))
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::Arrival;

    fn config(pacing: Pacing, connections: usize, stop: Stop) -> BenchConfig {
        let mut c = BenchConfig::new(Target::parse("http://127.0.0.1:9/").unwrap());
        (c.pacing, c.connections, c.stop, c.threads) = (pacing, connections, stop, 4);
        c
    }

    #[test]
    fn a_share_splits_connections_count_and_threads_and_refuses_an_empty_part() {
        let mut c = config(Pacing::Closed, 10, Stop::Count(1001));
        c.take_share(Share::new(2, 4)).unwrap();
        // floor(3 x 10 / 4) - floor(2 x 10 / 4) = 7 - 5; floor(3003/4) - floor(2002/4) = 750 - 500.
        assert_eq!((c.connections, c.stop, c.threads), (2, Stop::Count(250), 2));
        let open = Pacing::Open { rate: 100.0, arrival: Arrival::Fixed, max_connections: 9 };
        let mut c = config(open, 10, Stop::Count(10));
        c.take_share(Share::new(1, 3)).unwrap();
        // Arrivals 1, 4, 7 of 0..10.
        assert_eq!(c.stop, Stop::Count(3));
        assert!(matches!(c.pacing, Pacing::Open { max_connections: 3, .. }));
        let e = config(Pacing::Closed, 2, Stop::Count(10)).take_share(Share::new(0, 3));
        let e = e.unwrap_err().to_string();
        assert!(e.contains("--connections 2") && e.contains("3 agents"), "{e}");
    }
}
