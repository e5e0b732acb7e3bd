//! What `bench` and `sweep` share: the flags that shape each request and connection, their
//! translation into the engine's configuration, and running one measured load with its
//! progress line and Ctrl-C handling.

use std::path::PathBuf;
use std::time::Duration;

use clap::{Args, ValueEnum};
use loadlab_runner::bench::flags::RequestFlags;

use loadlab_load::parse_duration;

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
    #[arg(short = 's', long = "timeout", default_value = loadlab_load::defaults::TIMEOUT_FLAG, value_parser = parse_duration, allow_hyphen_values = true)]
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
    #[arg(long = "streams", value_name = "N", default_value_t = loadlab_load::defaults::STREAMS, requires = "http2")]
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
    /// The flags as typed, for the runner.
    pub fn flags(&self) -> RequestFlags {
        RequestFlags {
            threads: self.threads,
            pin: self.pin.clone(),
            keepalive: !self.no_keepalive,
            timeout: self.timeout,
            connect_timeout: self.connect_timeout,
            warmup: self.warmup,
            seed: self.seed,
            source_ips: self.source_ips.clone(),
            unix_socket: self.unix_socket.clone(),
            http2_streams: self.http2.then_some(self.streams),
            insecure: self.insecure,
            cacert: self.cacert.clone(),
            tls_resume: !self.no_tls_resume,
            tls_version: self.tls_version.clone(),
            head: self.head,
            method: self.method.clone(),
            headers: self.headers.clone(),
            cookies: self.cookies.clone(),
            basic_auth: self.basic_auth.clone(),
            body: self.body.clone(),
            body_string: self.body_string.clone(),
            post_file: self.post_file.clone(),
            put_file: self.put_file.clone(),
            content_type: self.content_type.clone(),
            expect_status: self.expect_status.clone(),
            expect_body_sha256: self.expect_body_sha256.clone(),
            expect_contains: self.expect_contains.clone(),
        }
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

/// A bench's error as its class says, naming the lab instance's CA file when the target is
/// one whose certificate was not trusted.
pub fn bench_failure(e: loadlab_runner::bench::BenchError) -> anyhow::Error {
    crate::exit::failure(loadlab_runner::advice::bench_with_lab_ca(e))
}
