//! What `bench` and `sweep` share: the flags that shape each request and connection, their
//! translation into the engine's configuration, and running one measured load with its
//! progress line and Ctrl-C handling.

use std::net::IpAddr;
use std::path::PathBuf;
use std::time::Duration;

use clap::{Args, ValueEnum};
use loadlab_engine::{sys, Arrival, BenchConfig, Pacing, RequestSpec, Target, Validation};

use crate::exit::{engine_failure, Failure};
use crate::units::parse_duration;

/// `--slo THRESHOLDS`, checked before anything runs.
pub fn parse_slo(s: &str) -> Result<loadlab_runner::slo::Slo, String> {
    s.parse().map_err(|e: loadlab_runner::slo::SloError| e.to_string())
}

/// How open-loop arrivals are spaced.
#[derive(Debug, Clone, Copy, PartialEq, Eq, ValueEnum)]
pub enum ArrivalArg {
    /// Evenly, one every 1/rate seconds.
    Fixed,
    /// Exponential gaps (a Poisson process), as independent users arrive.
    Poisson,
}

impl From<ArrivalArg> for Arrival {
    fn from(a: ArrivalArg) -> Arrival {
        match a {
            ArrivalArg::Fixed => Arrival::Fixed,
            ArrivalArg::Poisson => Arrival::Poisson,
        }
    }
}

/// Flags for scheduled load (open loop and sessions), common to `bench` and `sweep`.
#[derive(Debug, Args)]
pub struct ScheduleArgs {
    /// How arrivals are spaced (open loop and sessions).
    #[arg(long = "arrival", value_enum, default_value_t = ArrivalArg::Fixed)]
    pub arrival: ArrivalArg,
    /// Open loop and sessions: connections may grow up to this many (in a sweep, per step)
    /// rather than the rate silently dropping.
    #[arg(long = "max-connections", value_name = "N", default_value_t = 10_000)]
    pub max_connections: usize,
    /// Open loop and sessions: send wake-ups on a grid of this step, each sending every
    /// arrival due by then (wrk2's timer has 1ms), for less client CPU; each arrival's
    /// lateness, up to a step, is measured and counted in its latency [default: 0s, each
    /// arrival at its own due time].
    #[arg(long = "coalesce", value_name = "DUR", default_value = "0s", value_parser = parse_duration, allow_hyphen_values = true)]
    pub coalesce: Duration,
}

impl ScheduleArgs {
    /// Arrivals at `rate` per second: single requests, or sessions of `calls` requests.
    pub fn pacing(&self, rate: f64, calls: Option<u32>) -> Pacing {
        let (arrival, max_connections) = (self.arrival.into(), self.max_connections);
        match calls {
            Some(calls) => Pacing::Sessions { rate, arrival, calls, max_connections },
            None => Pacing::Open { rate, arrival, max_connections },
        }
    }
}

/// Flags for the request, the connections and the client, common to `bench` and `sweep`.
#[derive(Debug, Args)]
pub struct RequestArgs {
    /// Worker threads, each with its own event loop [default: CPUs available, or one per CPU
    /// of --pin; in bench's closed loop at most -c]. Not ab's -t (a time limit): -d here.
    #[arg(short = 't', long = "threads")]
    pub threads: Option<usize>,
    /// CPUs to pin the worker threads to, round-robin (e.g. 0 or 0,2-3).
    #[arg(long = "pin", value_name = "CPUS")]
    pub pin: Option<String>,
    /// Open a new connection for every request (as ab without -k).
    #[arg(long = "no-keepalive")]
    pub no_keepalive: bool,
    /// Bound on each request, from its start to its last byte (-s as ab's, in seconds).
    #[arg(short = 's', long = "timeout", default_value = "30s", value_parser = parse_duration, allow_hyphen_values = true)]
    pub timeout: Duration,
    /// Bound on establishing each TCP connection.
    #[arg(long = "connect-timeout", default_value = "10s", value_parser = parse_duration, allow_hyphen_values = true)]
    pub connect_timeout: Duration,
    /// The request method (ab's -m; h2load's -m is --streams).
    #[arg(short = 'm', long = "method", default_value = "GET")]
    pub method: String,
    /// An extra request header, "Name: value" (repeatable).
    #[arg(short = 'H', long = "header", value_name = "HEADER")]
    pub headers: Vec<String>,
    /// ab's -i: HEAD requests.
    #[arg(
        short = 'i',
        long = "head",
        conflicts_with_all = ["method", "body", "body_string", "post_file", "put_file"]
    )]
    pub head: bool,
    /// ab's -C: a cookie, NAME=VALUE, sent in the Cookie header (repeatable: one header, the
    /// cookies joined with "; ").
    #[arg(short = 'C', long = "cookie", value_name = "NAME=VALUE")]
    pub cookies: Vec<String>,
    /// ab's -A: HTTP Basic authentication, USER:PASSWORD (the Authorization header).
    #[arg(short = 'A', long = "basic-auth", value_name = "USER:PASSWORD")]
    pub basic_auth: Option<String>,
    /// Send the contents of FILE as the request body.
    #[arg(long = "body", value_name = "FILE", conflicts_with = "body_string")]
    pub body: Option<PathBuf>,
    /// Send S as the request body.
    #[arg(long = "body-string", value_name = "S", conflicts_with_all = ["post_file", "put_file"])]
    pub body_string: Option<String>,
    /// ab's -p: POST the contents of FILE (the method becomes POST unless -m names another).
    #[arg(short = 'p', long = "post-file", value_name = "FILE", conflicts_with_all = ["body", "put_file"])]
    pub post_file: Option<PathBuf>,
    /// ab's -u: PUT the contents of FILE.
    #[arg(short = 'u', long = "put-file", value_name = "FILE", conflicts_with = "body")]
    pub put_file: Option<PathBuf>,
    /// ab's -T: the request's Content-Type header (with -p, -u or --body).
    #[arg(short = 'T', long = "content-type", value_name = "TYPE")]
    pub content_type: Option<String>,
    /// Load applied before measuring, excluded from the results.
    #[arg(long = "warmup", default_value = "0s", value_parser = parse_duration, allow_hyphen_values = true)]
    pub warmup: Duration,
    /// Count responses with other status codes as failures (200, 200-299, 2xx, 200,304).
    #[arg(long = "expect-status", value_name = "CODES")]
    pub expect_status: Option<String>,
    /// Count responses whose body has another SHA-256 as failures.
    #[arg(long = "expect-body-sha256", value_name = "HEX")]
    pub expect_body_sha256: Option<String>,
    /// Count responses whose body does not contain TEXT as failures.
    #[arg(long = "expect-contains", value_name = "TEXT")]
    pub expect_contains: Option<String>,
    /// Local addresses to connect from, round-robin, so ephemeral ports last longer
    /// (127.0.0.1-127.0.0.16, or a comma-separated list).
    #[arg(long = "source-ips", value_name = "IPS", conflicts_with = "unix_socket")]
    pub source_ips: Option<String>,
    /// https://: accept any certificate (a self-signed test server); the connection is still
    /// encrypted.
    #[arg(long = "insecure")]
    pub insecure: bool,
    /// https://: trust the certificates in this PEM file instead of the system's.
    #[arg(long = "cacert", value_name = "FILE", conflicts_with = "insecure")]
    pub cacert: Option<PathBuf>,
    /// https://: a full handshake for every new connection, no session resumption.
    #[arg(long = "no-tls-resume")]
    pub no_tls_resume: bool,
    /// https://: offer only this TLS version (1.2 or 1.3) [default: both].
    #[arg(long = "tls-version", value_name = "VERSION", value_parser = ["1.2", "1.3"])]
    pub tls_version: Option<String>,
    /// Speak HTTP/2: h2 chosen by ALPN over https:// (a server that does not choose it is
    /// refused, exit 3), prior knowledge (h2c) over http://.
    #[arg(long = "http2")]
    pub http2: bool,
    /// With --http2: requests in flight on each connection (h2load's -m): the closed loop
    /// keeps connections x streams outstanding.
    #[arg(long = "streams", value_name = "N", default_value_t = 1, requires = "http2")]
    pub streams: usize,
    /// Connect to this unix-domain socket instead of the URL's host and port (as curl's
    /// --unix-socket): the URL still gives the Host header and the path.
    #[arg(long = "unix-socket", value_name = "PATH")]
    pub unix_socket: Option<PathBuf>,
    /// When the connections do not fit what the client has (open-file limit, local ports toward
    /// the target, memory): refuse with exit 2 naming the limit, cap them to what fits with a
    /// warning, or run anyway (the excess fails as fd_unavail or addr_unavail).
    #[arg(long = "over-capacity", value_enum, default_value_t = OverCapacity::Refuse)]
    pub over_capacity: OverCapacity,
    /// Seed for Poisson arrivals (the same seed and thread count repeat the same schedule).
    #[arg(long = "seed", default_value_t = 1)]
    pub seed: u64,
    /// No live progress line (sweep, which has none: no table on stderr with --format json).
    #[arg(short = 'q', long = "quiet")]
    pub quiet: bool,
}

impl RequestArgs {
    /// A configuration for `url` with everything but the load model and the stop condition.
    pub fn config(&self, url: &str) -> anyhow::Result<BenchConfig> {
        let usage = |m: String| anyhow::Error::new(Failure::Usage(m));
        let target = Target::parse(url).map_err(engine_failure)?;
        let mut config = BenchConfig::new(target);
        let cpus = sys::allowed_cpus();
        config.threads = self.threads.unwrap_or(cpus.len()).max(1);
        if let Some(pin) = &self.pin {
            config.pin =
                pin.parse::<loadlab_lab::CpuList>().map_err(|e| usage(format!("--pin: {e}")))?.0;
            if let Some(bad) = config.pin.iter().find(|c| !cpus.contains(c)) {
                return Err(usage(format!(
                    "--pin: CPU {bad} is not available (allowed: {cpus:?})"
                )));
            }
            // Pinned, the workers have the listed CPUs only: one worker per CPU unless -t says
            // otherwise (two workers on one CPU would only take turns on it).
            if self.threads.is_none() {
                config.threads = config.pin.len().max(1);
            }
        }
        config.keepalive = !self.no_keepalive;
        config.timeout = self.timeout;
        config.connect_timeout = self.connect_timeout;
        config.warmup = self.warmup;
        config.seed = self.seed;
        if let Some(s) = &self.source_ips {
            config.source_ips = parse_ip_list(s).map_err(usage)?;
        }
        config.unix_socket.clone_from(&self.unix_socket);
        if self.http2 {
            config.protocol = loadlab_engine::Protocol::Http2 { streams: self.streams };
        }
        config.tls = loadlab_engine::TlsOptions {
            insecure: self.insecure,
            cacert: self.cacert.clone(),
            resume: !self.no_tls_resume,
            version: self.tls_version.as_deref().map(|v| match v {
                "1.2" => loadlab_engine::TlsVersion::Tls12,
                _ => loadlab_engine::TlsVersion::Tls13,
            }),
        };
        if config.target.tls && config.unix_socket.is_some() {
            return Err(usage("https:// over --unix-socket is not supported".into()));
        }

        config.request = self.request()?;
        config.validation = self.validation()?;
        Ok(config)
    }

    /// The request: method, headers (ab's -C, -A and -T among them) and body.
    fn request(&self) -> anyhow::Result<RequestSpec> {
        let usage = |m: String| anyhow::Error::new(Failure::Usage(m));
        let method = if self.head { "HEAD".to_string() } else { self.method.clone() };
        let mut request = RequestSpec { method, ..RequestSpec::default() };
        for h in &self.headers {
            request.headers.push(RequestSpec::parse_header(h).map_err(engine_failure)?);
        }
        for (flag, header) in self.ab_headers().map_err(usage)? {
            if request.headers.iter().any(|(n, _)| n.eq_ignore_ascii_case(&header.0)) {
                return Err(usage(format!(
                    "{flag} and -H '{}: ...' both set the {} header: give it one way",
                    header.0, header.0
                )));
            }
            request.headers.push(header);
        }
        if let Some(t) = &self.content_type {
            let header = format!("Content-Type: {t}");
            request.headers.push(RequestSpec::parse_header(&header).map_err(engine_failure)?);
        }
        // ab's -p and -u say the method as well as the body; an explicit -m still wins.
        let ab_body = [("-p", &self.post_file, "POST"), ("-u", &self.put_file, "PUT")];
        let body_file =
            ab_body.into_iter().find_map(|(flag, f, m)| f.as_ref().map(|f| (flag, f, m)));
        if let Some((flag, path, method)) = body_file {
            if self.method == "GET" {
                request.method = method.to_string();
            }
            request.body = std::fs::read(path)
                .map_err(|e| usage(format!("{flag} {}: {e}", path.display())))?;
        } else if let Some(path) = &self.body {
            request.body = std::fs::read(path)
                .map_err(|e| usage(format!("--body {}: {e}", path.display())))?;
        } else if let Some(s) = &self.body_string {
            request.body = s.as_bytes().to_vec();
        }
        Ok(request)
    }

    /// What a response must be to count as completed (--expect-*).
    fn validation(&self) -> anyhow::Result<Validation> {
        let usage = |m: String| anyhow::Error::new(Failure::Usage(m));
        let mut v = Validation::default();
        if let Some(s) = &self.expect_status {
            v.status =
                Validation::parse_status(s).map_err(|e| usage(format!("--expect-status: {e}")))?;
        }
        if let Some(s) = &self.expect_body_sha256 {
            v.body_sha256 = Some(
                Validation::parse_sha256(s)
                    .map_err(|e| usage(format!("--expect-body-sha256: {e}")))?,
            );
        }
        if let Some(s) = &self.expect_contains {
            if s.is_empty() {
                return Err(usage("--expect-contains: the text must not be empty".into()));
            }
            v.body_contains = Some(s.as_bytes().to_vec());
        }
        Ok(v)
    }
}

/// A header one of ab's flags sets, with the flag (for messages).
type FlagHeader = (&'static str, (String, String));

impl RequestArgs {
    /// The headers of ab's -C (one Cookie header: RFC 6265 section 5.4 lets a client send
    /// only one, its pairs joined with "; "; ab itself keeps only the last -C) and -A (Basic
    /// authentication, RFC 7617: "user:password" in Base64), each with its flag.
    fn ab_headers(&self) -> Result<Vec<FlagHeader>, String> {
        use base64::Engine as _;
        let mut out = Vec::new();
        if !self.cookies.is_empty() {
            for c in &self.cookies {
                let name = c.split_once('=').map_or("", |(n, _)| n.trim());
                if name.is_empty() || c.contains([';', '\r', '\n']) {
                    return Err(format!("-C {c:?}: a cookie is NAME=VALUE (e.g. -C session=abc)"));
                }
            }
            out.push(("-C", ("Cookie".to_string(), self.cookies.join("; "))));
        }
        if let Some(auth) = &self.basic_auth {
            // As ab, leading blanks are not part of the user name.
            let auth = auth.trim_start();
            if !auth.contains(':') || auth.contains(['\r', '\n']) {
                return Err(format!("-A {auth:?}: write USER:PASSWORD (e.g. -A admin:secret)"));
            }
            let encoded = base64::engine::general_purpose::STANDARD.encode(auth);
            out.push(("-A", ("Authorization".to_string(), format!("Basic {encoded}"))));
        }
        Ok(out)
    }
}

/// What to do when the connections asked for do not fit what the client has.
#[derive(Debug, Clone, Copy, PartialEq, Eq, ValueEnum)]
pub enum OverCapacity {
    /// Refuse before any load (exit 2).
    Refuse,
    /// Run with the connections that fit, and say so.
    Cap,
    /// Run as asked: the connections that do not fit fail as fd_unavail or addr_unavail.
    Run,
}

impl From<OverCapacity> for loadlab_runner::capacity::Policy {
    fn from(p: OverCapacity) -> Self {
        use loadlab_runner::capacity::Policy;
        match p {
            OverCapacity::Refuse => Policy::Refuse,
            OverCapacity::Cap => Policy::Cap,
            OverCapacity::Run => Policy::Run,
        }
    }
}

/// [`crate::exit::bench_failure`], naming the lab instance's CA file when the target is one
/// whose certificate was not trusted.
pub fn bench_failure(e: loadlab_runner::bench::BenchError) -> anyhow::Error {
    use loadlab_runner::bench::BenchError;
    let instances = || {
        let lab = loadlab_lab::Lab::from_env().and_then(|lab| lab.instances());
        lab.map(|all| all.into_iter().map(|(r, _)| r).collect()).unwrap_or_default()
    };
    let e = match e {
        BenchError::Engine(e) => BenchError::Engine(loadlab_runner::advice::lab_ca(e, instances)),
        other => other,
    };
    crate::exit::bench_failure(e)
}

/// Parses `127.0.0.1-127.0.0.16` (an IPv4 range) or a comma-separated list of addresses.
pub fn parse_ip_list(s: &str) -> Result<Vec<IpAddr>, String> {
    let bad = |p: &str| format!("--source-ips: invalid address {p:?} in {s:?}");
    let mut out = Vec::new();
    for part in s.split(',').map(str::trim) {
        if let Some((a, b)) = part.split_once('-') {
            let a: std::net::Ipv4Addr = a.trim().parse().map_err(|_| bad(a))?;
            let b: std::net::Ipv4Addr = b.trim().parse().map_err(|_| bad(b))?;
            let (a, b) = (u32::from(a), u32::from(b));
            if a > b || b - a >= 65_536 {
                return Err(format!("--source-ips: range {part:?} is empty or too large"));
            }
            out.extend((a..=b).map(|ip| IpAddr::V4(ip.into())));
        } else {
            out.push(part.parse().map_err(|_| bad(part))?);
        }
    }
    Ok(out)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn ip_lists() {
        let ips = parse_ip_list("127.0.0.1-127.0.0.16").unwrap();
        assert_eq!(ips.len(), 16);
        assert_eq!(ips[15], "127.0.0.16".parse::<IpAddr>().unwrap());
        assert_eq!(parse_ip_list("::1, 127.0.0.2").unwrap().len(), 2);
        assert!(parse_ip_list("127.0.0.5-127.0.0.1").is_err());
        assert!(parse_ip_list("nope").is_err());
    }
}
