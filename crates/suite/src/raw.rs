//! The suite file exactly as written: serde types that mirror the TOML, every value kept with
//! its span so that [`crate::suite`]'s checks can point at the line and column to fix.
//!
//! Every table denies unknown keys: a misspelt `repetitons = 5` must fail, not silently run
//! the default number of times.

use serde::de::IgnoredAny;
use serde::Deserialize;
use toml::Spanned;

/// The top level of a suite file.
#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct RawSuite {
    pub name: Spanned<String>,
    #[serde(default)]
    pub description: String,
    pub repetitions: Option<Spanned<u32>>,
    /// Read into [`loadlab_load::Warmup`], `--warmup`'s type: here only known.
    #[allow(dead_code)]
    pub warmup: Option<IgnoredAny>,
    pub interleave: Option<Spanned<bool>>,
    pub client_cpus: Option<Spanned<String>>,
    pub stack_cpus: Option<Spanned<String>>,
    /// The network profile of every stack that names none (`loopback`, `lan-100mbit`, ...).
    pub net: Option<Spanned<String>>,
    /// Thresholds every workload's cells must hold unless the workload names its own.
    pub slo: Option<Spanned<String>>,
    pub quick: Option<RawQuick>,
    /// Which cells are profiled: `all`, `knee` or `none` ([`crate::suite::Profiling`]).
    pub profile: Option<Spanned<String>>,
    /// Each entry with its span: the `[[stacks]]` header, for a stack that names neither a
    /// built-in stack nor a URL.
    pub stacks: Spanned<Vec<Spanned<RawStack>>>,
    pub workloads: Spanned<Vec<RawWorkload>>,
    pub loads: Spanned<Vec<RawLoad>>,
}

/// `[[stacks]]`: a built-in stack and its knobs, or (`url`) a server of the user's that
/// loadlab neither starts nor stops.
#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct RawStack {
    /// A built-in stack; exactly one of `name` and `url`.
    pub name: Option<Spanned<String>>,
    /// An external target's base URL (`http://` or `https://`).
    pub url: Option<Spanned<String>>,
    pub label: Option<Spanned<String>>,
    pub keepalive: Option<Spanned<bool>>,
    pub keepalive_timeout: Option<Spanned<String>>,
    pub keepalive_requests: Option<Spanned<u32>>,
    pub gzip: Option<Spanned<bool>>,
    pub opcache: Option<Spanned<bool>>,
    pub db: Option<Spanned<bool>>,
    pub workers: Option<Spanned<u32>>,
    pub php_workers: Option<Spanned<u32>>,
    pub access_log: Option<Spanned<bool>>,
    pub cpus: Option<Spanned<String>>,
    pub net: Option<Spanned<String>>,
    /// The address the front tier binds (an address of the stack's host, `0.0.0.0` or `::`)
    /// instead of 127.0.0.1, for a client on another host.
    pub listen: Option<Spanned<String>>,
    /// HTTPS on the front tier; the runner loads it at https:// trusting the instance's CA.
    pub tls: Option<Spanned<bool>>,
    /// HTTP/2 on the front tier (h2 by ALPN with `tls`, h2c without).
    pub http2: Option<Spanned<bool>>,
    /// Loaded over HTTP/3 (QUIC), where the front serves it: Caddy with `tls`. The stack is
    /// set up as without it (Caddy offers h3 whenever it speaks TLS); the client speaks it.
    pub http3: Option<Spanned<bool>>,
    /// A directory of the user's config snippets (relative to the suite file).
    pub config: Option<Spanned<String>>,
    /// A directory of the user's files served beside the lab's (relative to the suite file).
    pub docroot: Option<Spanned<String>>,
    /// The lab host the stack runs on (`ssh://[user@]host[:port]`); the client stays here.
    pub host: Option<Spanned<String>>,
    /// External `https://`: trust this PEM file's certificates (relative to the suite file).
    pub cacert: Option<Spanned<String>>,
    /// External `https://`: accept any certificate.
    pub insecure: Option<Spanned<bool>>,
    /// External: sample these processes (and their descendants) as the tier `external`.
    pub pids: Option<Spanned<Vec<Spanned<u32>>>>,
    /// External: sample the process whose pid this file holds, and its descendants.
    pub pidfile: Option<Spanned<String>>,
    /// External: sample this systemd unit's processes.
    pub unit: Option<Spanned<String>>,
}

impl RawStack {
    /// The lab's knobs, by the key [`RawStack::knob_span`] knows them by: refused on an
    /// external target, which runs as its owner configured it.
    pub const KNOBS: &'static [&'static str] = &[
        "keepalive",
        "keepalive_timeout",
        "keepalive_requests",
        "gzip",
        "opcache",
        "db",
        "workers",
        "php_workers",
        "access_log",
        "cpus",
        "net",
        "listen",
        "tls",
        "http2",
        "http3",
        "config",
        "docroot",
        "host",
    ];

    /// The keys only an external target takes, with where each is written.
    pub fn external_keys(&self) -> [(&'static str, Option<std::ops::Range<usize>>); 5] {
        [
            ("cacert", self.cacert.as_ref().map(Spanned::span)),
            ("insecure", self.insecure.as_ref().map(Spanned::span)),
            ("pids", self.pids.as_ref().map(Spanned::span)),
            ("pidfile", self.pidfile.as_ref().map(Spanned::span)),
            ("unit", self.unit.as_ref().map(Spanned::span)),
        ]
    }

    /// Where the knob `key` (as [`loadlab_lab::catalog::KnobProblem`] names it) is written.
    pub fn knob_span(&self, key: &str) -> Option<std::ops::Range<usize>> {
        let flag = |v: &Option<Spanned<bool>>| v.as_ref().map(Spanned::span);
        let count = |v: &Option<Spanned<u32>>| v.as_ref().map(Spanned::span);
        match key {
            "keepalive" => flag(&self.keepalive),
            "keepalive_timeout" => self.keepalive_timeout.as_ref().map(Spanned::span),
            "keepalive_requests" => count(&self.keepalive_requests),
            "gzip" => flag(&self.gzip),
            "opcache" => flag(&self.opcache),
            "db" => flag(&self.db),
            "workers" => count(&self.workers),
            "php_workers" => count(&self.php_workers),
            "access_log" => flag(&self.access_log),
            "cpus" => self.cpus.as_ref().map(Spanned::span),
            "net" => self.net.as_ref().map(Spanned::span),
            "listen" => self.listen.as_ref().map(Spanned::span),
            "tls" => flag(&self.tls),
            "http2" => flag(&self.http2),
            "http3" => flag(&self.http3),
            "config" => self.config.as_ref().map(Spanned::span),
            "docroot" => self.docroot.as_ref().map(Spanned::span),
            "host" => self.host.as_ref().map(Spanned::span),
            _ => None,
        }
    }
}

/// `[[workloads]]`: a built-in workload, or (`path`) a request of the user's, where it runs
/// and how its answers are checked.
#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct RawWorkload {
    pub name: Spanned<String>,
    /// A custom request's path (and query); `name` is then its label.
    pub path: Option<Spanned<String>>,
    // method, headers, body, body_file and the expect_* keys are bench's flags: each value is
    // read into `loadlab_load`'s Request and Expect ([`Workloads`]); here each key is known
    // with its position, for the checks and for a refusal of its value.
    pub method: Option<Spanned<IgnoredAny>>,
    pub headers: Option<Vec<Spanned<IgnoredAny>>>,
    pub body: Option<Spanned<IgnoredAny>>,
    pub body_file: Option<Spanned<IgnoredAny>>,
    /// A URL list (`bench --urls`'s format), relative to the suite file: the workload's
    /// requests, instead of one `path`.
    pub urls: Option<Spanned<String>>,
    /// How the list's entries are picked: `weighted` (the default) or `sequential`.
    pub urls_order: Option<Spanned<String>>,
    pub stacks: Option<Vec<Spanned<String>>>,
    pub expect_status: Option<Spanned<IgnoredAny>>,
    pub expect_contains: Option<Spanned<IgnoredAny>>,
    pub expect_sha256: Option<Spanned<IgnoredAny>>,
    /// Thresholds this workload's cells must hold (`p99<50ms,errors<0.1%`), over the suite's.
    pub slo: Option<Spanned<String>>,
    /// Page views: the page and the resources its HTML names, as `bench --view` fetches them.
    pub view: Option<Spanned<bool>>,
    /// With `view`: other hosts whose resources a view fetches too (`bench --view-hosts`).
    pub view_hosts: Option<Spanned<Vec<String>>>,
    /// Visits of several steps: a visit file (relative to the suite file) or a built-in
    /// visit's name (`wordpress:search`), as `bench --visits` takes them; several, each with
    /// an optional `:WEIGHT`, as a list (`["a.toml:3", "b.toml"]`) or one string of them.
    pub visits: Option<Spanned<VisitsValue>>,
    /// Values the visit's steps use as `{NAME}` (`given = { user = "member-{visitor}" }`), as
    /// `bench --given` gives them.
    pub given: Option<Spanned<std::collections::BTreeMap<String, String>>>,
}

/// `visits = "..."` or `visits = ["...", ...]`.
#[derive(Debug, Clone, Deserialize)]
#[serde(untagged)]
pub enum VisitsValue {
    One(String),
    Many(Vec<String>),
}

/// `[[loads]]`: one load model and the points (concurrencies or rates) it is run at.
#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct RawLoad {
    pub model: Spanned<ModelName>,
    pub workloads: Option<Vec<Spanned<String>>>,
    pub concurrency: Option<Spanned<Vec<Spanned<u32>>>>,
    pub rates: Option<Spanned<Vec<Spanned<RateValue>>>>,
    pub sweep: Option<Spanned<String>>,
    /// A load that changes over time, as `bench --stages` takes it.
    pub stages: Option<Spanned<String>>,
    pub calls_per_conn: Option<Spanned<u32>>,
    pub requests: Option<Spanned<u64>>,
    pub conns: Option<Spanned<u64>>,
    pub duration: Option<Spanned<String>>,
    // keepalive, timeout, arrival, max_connections, streams and tls_resume are bench's flags:
    // each value is read into `loadlab_load`'s Connection, Protocol and Schedule
    // ([`Loads`]); here each key is known (a misspelt one is refused, and the keys are listed
    // in this order) with its position for the checks.
    pub keepalive: Option<Spanned<IgnoredAny>>,
    pub accept_encoding: Option<Spanned<String>>,
    pub timeout: Option<Spanned<IgnoredAny>>,
    pub arrival: Option<Spanned<IgnoredAny>>,
    pub max_connections: Option<Spanned<IgnoredAny>>,
    pub streams: Option<Spanned<IgnoredAny>>,
    /// A bool has nothing to check.
    #[allow(dead_code)]
    pub tls_resume: Option<IgnoredAny>,
}

/// The suite file's `[[loads]]` as one of `bench`'s flag types `T` reads them (each key left
/// out at the flag's default), every other key left to [`RawLoad`]: each entry a table of its
/// own (not flattened), so a wrong value is refused at its line and column.
#[derive(Debug, Deserialize)]
pub struct Loads<T> {
    pub loads: Vec<T>,
}

/// The suite file's `[[workloads]]` as one of `bench`'s flag types reads them, as [`Loads`],
/// every other key left to [`RawWorkload`].
#[derive(Debug, Deserialize)]
pub struct Workloads<T> {
    pub workloads: Vec<T>,
}

/// `[quick]`: how `--quick` shrinks the suite.
#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct RawQuick {
    pub factor: Option<Spanned<f64>>,
    pub min_requests: Option<Spanned<u64>>,
    pub min_conns: Option<Spanned<u64>>,
    pub min_duration: Option<Spanned<String>>,
    pub repetitions: Option<Spanned<u32>>,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum ModelName {
    Closed,
    Open,
    Sessions,
}

/// One entry of `rates`: a number (`500`), or a string the engine's `--rate` takes (`"2k"`, a
/// ramp `"100..5000"`), so that lists of numbers read as they always did.
#[derive(Debug)]
pub enum RateValue {
    Number(f64),
    Text(String),
}

impl<'de> Deserialize<'de> for RateValue {
    fn deserialize<D: serde::Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        struct Visitor;
        impl serde::de::Visitor<'_> for Visitor {
            type Value = RateValue;
            fn expecting(&self, f: &mut std::fmt::Formatter) -> std::fmt::Result {
                f.write_str("a rate (500) or a ramp (\"100..5000\")")
            }
            fn visit_i64<E: serde::de::Error>(self, v: i64) -> Result<RateValue, E> {
                Ok(RateValue::Number(v as f64))
            }
            fn visit_u64<E: serde::de::Error>(self, v: u64) -> Result<RateValue, E> {
                Ok(RateValue::Number(v as f64))
            }
            fn visit_f64<E: serde::de::Error>(self, v: f64) -> Result<RateValue, E> {
                Ok(RateValue::Number(v))
            }
            fn visit_str<E: serde::de::Error>(self, v: &str) -> Result<RateValue, E> {
                Ok(RateValue::Text(v.to_string()))
            }
        }
        d.deserialize_any(Visitor)
    }
}
