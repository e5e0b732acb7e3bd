//! One definition of a load's settings, below both the command line and the suite format:
//! each setting that `bench`/`sweep` take as a flag and a suite as a key (of `[[loads]]`, of
//! `[[workloads]]`, or the top-level `warmup`) is one field here, parsed by clap (derive) and
//! deserialized by serde (the keys named as the fields, or renamed on them) into the same
//! type, with its default defined once: clap's attribute, whose value a key left out takes as
//! well ([`unflagged`] is each type's `Default`, which `#[serde(default)]` fills in), the run's
//! own named from the engine's [`loadlab_engine::defaults`]. A setting only one of them has
//! says so on its field (a `#[serde(skip)]` field is command line only), a rule only one of
//! them has in [`Origin`].
//!
//! - [`Request`] and [`Expect`]: what is sent and what its answers must be, refused by
//!   [`Setting`] as each [`Origin`] names it.
//! - [`Connection`]: each connection's keep-alive and time bounds.
//! - [`Warmup`]: the load before the measurement.
//! - [`Protocol`]: TLS resumption and version, HTTP/2 or HTTP/3 and their streams.
//! - [`Schedule`]: how scheduled load (open loop, sessions) is spaced and bounded.
//! - [`Arrival`]: the spacing a user can name (`fixed`, `poisson`).
//! - [`parse_duration`]: durations as the flags and the suite file spell them.
//!
//! The runner lowers these into the engine's configuration (`loadlab_runner::commands::bench::flags`);
//! the suite reads its entries into these types and, with its own mirror of the keys'
//! positions, refuses a wrong value at its line and column.

mod duration;
mod request;

use std::time::Duration;

use loadlab_engine::{BenchConfig, Coalesce, Pacing};

pub use duration::parse_duration;
pub use request::{read_body, Expect, Origin, Refusal, Request, Setting};

/// Every default a load setting has, written once: the flags' `[default: ...]` and a suite key
/// left out both come from here, the run's own (those [`BenchConfig::new`] starts from) from
/// the engine's [`loadlab_engine::defaults`].
pub mod defaults {
    pub use loadlab_engine::defaults::{
        COALESCE, CONNECTIONS, CONNECT_TIMEOUT, DURATION, SEED, TIMEOUT, WARMUP,
    };
    /// Open loop and sessions: enough connections that a slow server shows as latency and
    /// errors rather than as a silently lower rate.
    pub const MAX_CONNECTIONS: usize = 10_000;
    /// HTTP/2 requests in flight on each connection (h2load's `-m`).
    pub const STREAMS: usize = 1;
    /// httperf's `--num-calls`: one request per connection.
    pub const CALLS_PER_CONN: u32 = 1;
}

/// How open-loop arrivals are spaced, as a user names it (`--arrival`, `arrival = "..."`).
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, clap::ValueEnum, serde::Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum Arrival {
    /// Evenly, one every 1/rate seconds.
    #[default]
    Fixed,
    /// Exponential gaps (a Poisson process), as independent users arrive.
    Poisson,
}

impl From<Arrival> for loadlab_engine::Arrival {
    fn from(a: Arrival) -> Self {
        match a {
            Arrival::Fixed => loadlab_engine::Arrival::Fixed,
            Arrival::Poisson => loadlab_engine::Arrival::Poisson,
        }
    }
}

/// Each connection's keep-alive and time bounds: `bench`'s and `sweep`'s `--no-keepalive`,
/// `-s`/`--timeout` and `--connect-timeout`, and a suite load's `keepalive` and `timeout`.
#[derive(Debug, Clone, Copy, PartialEq, Eq, clap::Args, serde::Deserialize)]
#[serde(default)]
pub struct Connection {
    /// Open a new connection for every request (as ab without -k).
    // Keep-alive is on unless the flag is given (a suite's `keepalive = false`); the id is
    // the flag's, which bench's `-k` conflicts with.
    #[arg(id = "no_keepalive", long = "no-keepalive", action = clap::ArgAction::SetFalse)]
    pub keepalive: bool,
    /// Bound on each request, from its start to its last byte (-s as ab's, in seconds).
    #[arg(short = 's', long = "timeout", default_value = duration::text(defaults::TIMEOUT), value_parser = parse_duration, allow_hyphen_values = true)]
    #[serde(deserialize_with = "duration::deserialize")]
    pub timeout: Duration,
    /// Bound on establishing each TCP connection.
    // Command line only: a suite's cells take the default.
    #[arg(long = "connect-timeout", default_value = duration::text(defaults::CONNECT_TIMEOUT), value_parser = parse_duration, allow_hyphen_values = true)]
    #[serde(skip)]
    pub connect_timeout: Duration,
}

impl Default for Connection {
    fn default() -> Self {
        unflagged()
    }
}

impl Connection {
    /// Sets `config`'s keep-alive and time bounds.
    pub fn apply(&self, config: &mut BenchConfig) {
        config.keepalive = self.keepalive;
        config.timeout = self.timeout;
        config.connect_timeout = self.connect_timeout;
    }
}

/// The load applied before the measurement, not counted: `bench`'s and `sweep`'s `--warmup`,
/// and a suite's `warmup` (before each of its cells).
#[derive(Debug, Clone, Copy, PartialEq, Eq, clap::Args, serde::Deserialize)]
#[serde(default)]
pub struct Warmup {
    /// Load applied before measuring, excluded from the results.
    #[arg(long = "warmup", default_value = duration::text(defaults::WARMUP), value_parser = parse_duration, allow_hyphen_values = true)]
    #[serde(deserialize_with = "duration::deserialize")]
    pub warmup: Duration,
}

impl Default for Warmup {
    fn default() -> Self {
        unflagged()
    }
}

/// The protocol a load speaks and how it keeps its sessions: `bench`'s and `sweep`'s
/// `--no-tls-resume`, `--tls-version`, `--http2` and `--streams`, and a suite load's
/// `tls_resume` and `streams` (on a stack with `tls`, `http2` on).
#[derive(Debug, Clone, PartialEq, Eq, clap::Args, serde::Deserialize)]
#[serde(default)]
pub struct Protocol {
    /// https://: a full handshake for every new connection, no session resumption.
    #[arg(id = "no_tls_resume", long = "no-tls-resume", action = clap::ArgAction::SetFalse)]
    pub tls_resume: bool,
    /// https://: offer only this TLS version (1.2 or 1.3) [default: both].
    // Command line only.
    #[arg(long = "tls-version", value_name = "VERSION", value_parser = ["1.2", "1.3"])]
    #[serde(skip)]
    pub tls_version: Option<String>,
    /// Speak HTTP/2: h2 chosen by ALPN over https:// (a server that does not choose it is
    /// refused, exit 3), prior knowledge (h2c) over http://.
    // Command line only: a suite's lab stack speaks it by its own `http2` knob.
    #[arg(long = "http2", group = "multiplexed")]
    #[serde(skip)]
    pub http2: bool,
    /// Speak HTTP/3: QUIC over UDP with ALPN h3, https:// only; a server whose answer over
    /// TCP offers no h3 in Alt-Svc, or that gives no answer over QUIC, is refused (exit 3).
    // Command line only, as --http2.
    #[arg(long = "http3", group = "multiplexed", conflicts_with = "http2")]
    #[serde(skip)]
    pub http3: bool,
    /// With --http2 or --http3: requests in flight on each connection (h2load's -m): the
    /// closed loop keeps connections x streams outstanding.
    #[arg(long = "streams", value_name = "N", default_value_t = defaults::STREAMS, requires = "multiplexed")]
    pub streams: usize,
}

impl Default for Protocol {
    fn default() -> Self {
        unflagged()
    }
}

impl Protocol {
    /// Sets `config`'s TLS resumption and version, and HTTP/2 with its streams when `http2`.
    pub fn apply(&self, config: &mut BenchConfig) {
        config.tls.resume = self.tls_resume;
        config.tls.version = self.tls_version.as_deref().map(|v| match v {
            "1.2" => loadlab_engine::TlsVersion::Tls12,
            _ => loadlab_engine::TlsVersion::Tls13,
        });
        if self.http2 {
            config.protocol = loadlab_engine::Protocol::Http2 { streams: self.streams };
        }
        if self.http3 {
            config.protocol = loadlab_engine::Protocol::Http3 { streams: self.streams };
        }
    }
}

/// How scheduled load (open loop and sessions) is spaced and bounded: `bench`'s and `sweep`'s
/// flags, and a suite load's `arrival` and `max_connections` keys.
#[derive(Debug, Clone, Copy, PartialEq, clap::Args, serde::Deserialize)]
#[serde(default)]
pub struct Schedule {
    /// How arrivals are spaced (open loop and sessions).
    #[arg(long = "arrival", value_enum, default_value_t = Arrival::Fixed)]
    pub arrival: Arrival,
    /// Open loop and sessions: connections may grow up to this many (in a sweep, per step)
    /// rather than the rate silently dropping.
    #[arg(long = "max-connections", value_name = "N", default_value_t = defaults::MAX_CONNECTIONS)]
    pub max_connections: usize,
    /// Open loop and sessions: `auto` sends together what falls due within the wake-up cost
    /// measured at start either side of a wake-up (said in the output); a DUR puts send wake-ups on a grid of that
    /// step, each sending every arrival due by then (wrk2's timer has 1ms), for less client
    /// CPU; `0` sends each arrival at its own due time. Lateness is measured and counted in
    /// the latency.
    // Command line only: a suite's cells take the default, as a flag not given does.
    #[arg(long = "coalesce", value_name = "DUR", default_value = coalesce_text(defaults::COALESCE), value_parser = parse_coalesce, allow_hyphen_values = true)]
    #[serde(skip)]
    pub coalesce: Coalesce,
}

/// `--coalesce`: `auto`, or a grid's step (`0`: exact sends).
pub fn parse_coalesce(s: &str) -> Result<Coalesce, String> {
    match s.trim() {
        "auto" => Ok(Coalesce::Auto),
        s => parse_duration(s).map(Coalesce::step).map_err(|e| format!("{e}, or auto")),
    }
}

/// `c` as `--coalesce`'s `[default: ...]` shows it and [`parse_coalesce`] reads it back.
fn coalesce_text(c: Coalesce) -> &'static str {
    match c {
        Coalesce::Auto => "auto",
        Coalesce::Exact => "0s",
        Coalesce::Grid(step) => duration::text(step),
    }
}

impl Default for Schedule {
    fn default() -> Self {
        unflagged()
    }
}

/// What clap makes of a command line that gives none of `T`'s flags: each default as `--help`
/// states it, so that a suite key left out and a flag not given are the same value. `T`'s
/// flags may name only each other (in `requires`, `conflicts_with`).
pub fn unflagged<T: clap::Args + clap::FromArgMatches>() -> T {
    let command = T::augment_args(clap::Command::new("defaults"));
    let matches = command.try_get_matches_from(["defaults"]);
    let matches = matches.expect("every flag has a default or is optional");
    T::from_arg_matches(&matches).expect("the matches are T's own")
}

impl Schedule {
    /// Arrivals at `rate` per second: single requests, or sessions of `calls` requests.
    pub fn pacing(&self, rate: f64, calls: Option<u32>) -> Pacing {
        let (arrival, max_connections) = (self.arrival.into(), self.max_connections);
        match calls {
            Some(calls) => Pacing::Sessions { rate, arrival, calls, max_connections },
            None => Pacing::Open { rate, arrival, max_connections },
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn no_flags_are_the_defaults() {
        let c = Connection::default();
        assert_eq!((c.keepalive, c.timeout), (true, Duration::from_secs(30)));
        assert_eq!(c.connect_timeout, Duration::from_secs(10));
        let s = Schedule::default();
        assert_eq!((s.arrival, s.max_connections), (Arrival::Fixed, defaults::MAX_CONNECTIONS));
        assert_eq!(s.coalesce, Coalesce::Auto);
        assert_eq!(parse_coalesce("0"), Ok(Coalesce::Exact));
        assert_eq!(parse_coalesce("1ms"), Ok(Coalesce::Grid(Duration::from_millis(1))));
        assert!(parse_coalesce("-1ms").is_err());
        assert!(parse_coalesce("soon").is_err_and(|e| e.ends_with("500ms, or auto")));
        assert_eq!(Warmup::default().warmup, Duration::ZERO);
    }

    /// No flag given, the engine's configuration is the one it starts from: one set of
    /// defaults, the engine's.
    #[test]
    fn no_flags_leave_the_engines_defaults() {
        let target = loadlab_engine::Target::parse("http://127.0.0.1:1/").unwrap();
        let fresh = BenchConfig::new(target);
        let mut config = fresh.clone();
        Connection::default().apply(&mut config);
        Protocol::default().apply(&mut config);
        config.warmup = Warmup::default().warmup;
        config.coalesce = Schedule::default().coalesce;
        assert_eq!((config.keepalive, config.timeout), (fresh.keepalive, fresh.timeout));
        assert_eq!(config.connect_timeout, fresh.connect_timeout);
        assert_eq!((config.warmup, config.coalesce), (fresh.warmup, fresh.coalesce));
        assert_eq!((config.tls.resume, config.protocol), (fresh.tls.resume, fresh.protocol));
    }
}
