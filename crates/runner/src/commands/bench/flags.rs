//! The flags of `bench` and `sweep`, defined once as clap parses them (the parsed flags are the
//! configuration, with what a suite shares from `loadlab_load`): each request and connection,
//! the load model and stop condition, what is sent beyond one URL; lowered into the engine's
//! configuration with everything that can be checked checked before a byte is sent, each
//! refusal naming its flag.

use std::net::IpAddr;
use std::path::{Path, PathBuf};
use std::sync::Arc;
use std::time::Duration;

use crate::judge::capacity::Policy;
use loadlab_engine::{
    input, sys, Arrival, BenchConfig, EngineError, Level, Order, Pacing, Replay, RequestSpec, Stop,
    Target, Traffic, Validation,
};
pub use loadlab_load::Schedule;
use loadlab_load::{defaults, parse_duration, read_body, Origin};

/// A flag's value the user has to change, or the engine's refusal of what they made.
#[derive(Debug, thiserror::Error)]
pub enum FlagError {
    #[error("{0}")]
    Usage(String),
    #[error(transparent)]
    Engine(EngineError),
}

/// The request, connection and client flags of `bench` and `sweep`, as clap parses them: the
/// parsed flags are the configuration [`RequestFlags::config`] lowers.
#[derive(Debug, Clone, clap::Args)]
pub struct RequestFlags {
    /// Worker threads, each with its own event loop [default: CPUs available, or one per CPU
    /// of --pin; in bench's closed loop at most -c]. Not ab's -t (a time limit): -d here.
    #[arg(short = 't', long = "threads")]
    pub threads: Option<usize>,
    /// CPUs to pin the worker threads to, round-robin (e.g. 0 or 0,2-3).
    #[arg(long = "pin", value_name = "CPUS")]
    pub pin: Option<String>,
    #[command(flatten)]
    pub connection: loadlab_load::Connection,
    #[command(flatten)]
    pub request: loadlab_load::Request,
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
    /// ab's -p: POST the contents of FILE (the method becomes POST unless -m names another).
    #[arg(short = 'p', long = "post-file", value_name = "FILE", conflicts_with_all = ["body", "body_string", "put_file"])]
    pub post_file: Option<PathBuf>,
    /// ab's -u: PUT the contents of FILE.
    #[arg(short = 'u', long = "put-file", value_name = "FILE", conflicts_with_all = ["body", "body_string"])]
    pub put_file: Option<PathBuf>,
    /// ab's -T: the request's Content-Type header (with -p, -u or --body).
    #[arg(short = 'T', long = "content-type", value_name = "TYPE")]
    pub content_type: Option<String>,
    #[command(flatten)]
    pub warmup: loadlab_load::Warmup,
    #[command(flatten)]
    pub expect: loadlab_load::Expect,
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
    #[command(flatten)]
    pub protocol: loadlab_load::Protocol,
    /// Connect to this unix-domain socket instead of the URL's host and port (as curl's
    /// --unix-socket): the URL still gives the Host header and the path.
    #[arg(long = "unix-socket", value_name = "PATH")]
    pub unix_socket: Option<PathBuf>,
    /// When the connections do not fit what the client has (open-file limit, local ports toward
    /// the target, memory): refuse with exit 2 naming the limit, cap them to what fits with a
    /// warning, or run anyway (the excess fails as fd_unavail or addr_unavail).
    #[arg(long = "over-capacity", value_enum, default_value_t = Policy::Refuse)]
    pub over_capacity: Policy,
    /// Seed for Poisson arrivals (the same seed and thread count repeat the same schedule).
    #[arg(long = "seed", default_value_t = defaults::SEED)]
    pub seed: u64,
    /// No live progress line (sweep, which has none: no table on stderr with --format json).
    // Command line only: what the cli shows while the load runs.
    #[arg(short = 'q', long = "quiet")]
    pub quiet: bool,
    /// No live terminal view (oha's flag): the progress line instead. The view is on only
    /// when stdout and stderr are both a terminal, and never with -q.
    // Command line only, as -q.
    #[arg(long = "no-tui")]
    pub no_tui: bool,
}

impl Default for RequestFlags {
    /// No flag given: each default as `--help` states it.
    fn default() -> Self {
        loadlab_load::unflagged()
    }
}

impl RequestFlags {
    /// A configuration for `url` with everything but the load model and the stop condition.
    pub fn config(&self, url: &str) -> Result<BenchConfig, FlagError> {
        let target = Target::parse(url).map_err(FlagError::Engine)?;
        let mut config = BenchConfig::new(target);
        if self.threads == Some(0) {
            return Err(FlagError::Usage(
                "-t 0: a run needs at least one worker thread (-t 1 or more; without -t, one \
                 per CPU)"
                    .into(),
            ));
        }
        let cpus = sys::allowed_cpus();
        config.threads = self.threads.unwrap_or(cpus.len()).max(1);
        if let Some(pin) = &self.pin {
            config.pin = pin
                .parse::<loadlab_lab::CpuList>()
                .map_err(|e| FlagError::Usage(format!("--pin: {e}")))?
                .0;
            if let Some(bad) = config.pin.iter().find(|c| !cpus.contains(c)) {
                return Err(FlagError::Usage(format!(
                    "--pin: CPU {bad} is not available (allowed: {cpus:?})"
                )));
            }
            // Pinned, the workers have the listed CPUs only: one worker per CPU unless -t says
            // otherwise (two workers on one CPU would only take turns on it).
            if self.threads.is_none() {
                config.threads = config.pin.len().max(1);
            }
        }
        self.connection.apply(&mut config);
        config.warmup = self.warmup.warmup;
        config.seed = self.seed;
        if let Some(s) = &self.source_ips {
            config.source_ips = parse_ip_list(s).map_err(FlagError::Usage)?;
        }
        config.unix_socket.clone_from(&self.unix_socket);
        config.tls.insecure = self.insecure;
        config.tls.cacert.clone_from(&self.cacert);
        self.protocol.apply(&mut config);
        if config.target.tls && config.unix_socket.is_some() {
            return Err(FlagError::Usage("https:// over --unix-socket is not supported".into()));
        }

        config.request = self.request()?;
        // `Connection: close` asks the server to close after its response (RFC 9112 section
        // 9.6), so every request opens a connection of its own: that is --no-keepalive, and the
        // configuration says so (wrk's users ask for a connection per request this way).
        if closes(&config.request.headers) {
            config.keepalive = false;
        }
        config.validation = self.validation()?;
        Ok(config)
    }

    /// Whether a `-H` header asks for `Connection: close`, which is --no-keepalive.
    pub fn asks_close(&self) -> bool {
        let headers: Vec<_> =
            self.request.headers.iter().filter_map(|h| RequestSpec::parse_header(h).ok()).collect();
        closes(&headers)
    }

    /// The request: method, headers (ab's -C, -A and -T among them) and body.
    fn request(&self) -> Result<RequestSpec, FlagError> {
        let refused = |e: loadlab_load::Refusal| FlagError::Usage(e.to_string());
        let mut request = self.request.spec(Origin::Flags, Path::new("")).map_err(refused)?;
        if self.head {
            request.method = "HEAD".to_string();
        }
        for (flag, header) in self.ab_headers().map_err(FlagError::Usage)? {
            if request.headers.iter().any(|(n, _)| n.eq_ignore_ascii_case(&header.0)) {
                return Err(FlagError::Usage(format!(
                    "{flag} and -H '{}: ...' both set the {} header: give it one way",
                    header.0, header.0
                )));
            }
            request.headers.push(header);
        }
        if let Some(t) = &self.content_type {
            let header = format!("Content-Type: {t}");
            request.headers.push(RequestSpec::parse_header(&header).map_err(FlagError::Engine)?);
        }
        // ab's -p and -u say the method as well as the body; an explicit -m still wins.
        let ab_body = [("-p", &self.post_file, "POST"), ("-u", &self.put_file, "PUT")];
        let body_file =
            ab_body.into_iter().find_map(|(flag, f, m)| f.as_ref().map(|f| (flag, f, m)));
        if let Some((flag, path, method)) = body_file {
            if self.request.method == "GET" {
                request.method = method.to_string();
            }
            request.body = read_body(path).map_err(|e| FlagError::Usage(format!("{flag}: {e}")))?;
        }
        Ok(request)
    }

    /// What a response must be to count as completed (--expect-*): any complete one when
    /// nothing is expected.
    fn validation(&self) -> Result<Validation, FlagError> {
        let expected = self.expect.validation(Origin::Flags);
        Ok(expected.map_err(|e| FlagError::Usage(e.to_string()))?.unwrap_or_default())
    }
}

/// A header one of ab's flags sets, with the flag (for messages).
type FlagHeader = (&'static str, (String, String));

impl RequestFlags {
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

/// `bench`'s load model and stop condition, and the visitors it may bring, as clap parses them.
#[derive(Debug, Clone, Default, clap::Args)]
#[command(group(clap::ArgGroup::new("visitors").args(["wsesslog", "visits"])))]
pub struct LoadFlags {
    /// Closed loop: concurrent connections, each with one request outstanding [default: 10]
    /// (with --rate, wrk2's -c, the bound is --max-connections).
    /// A ramp (0..100 over -d) or stages (30s:0..100,1m:100) open and close connections on
    /// schedule (k6's ramping VUs), with the figures of every second.
    #[arg(short = 'c', long = "connections", value_parser = crate::values::connections)]
    pub connections: Option<Level>,
    /// Total requests to make after warm-up (not with --conn-rate, whose sessions are counted
    /// in connections: --conns).
    #[arg(short = 'n', long = "requests", conflicts_with_all = ["duration", "conns", "conn_rate"])]
    pub requests: Option<u64>,
    /// How long to run (10s, 1m, 500ms); the default when no count is given is 10s.
    #[arg(short = 'd', long = "duration", value_parser = parse_duration, allow_hyphen_values = true)]
    pub duration: Option<Duration>,
    /// Open loop: requests per second, due on a schedule whatever the server's speed; latency
    /// is measured from when each request was due (-R as wrk2). A ramp over the run
    /// (100..5000) or stages (30s:0..1000,2m:1000) make the rate change over time, with the
    /// figures of every second.
    #[arg(
        short = 'R',
        long = "rate",
        value_name = "R",
        conflicts_with = "conn_rate",
        value_parser = crate::values::level
    )]
    pub rate: Option<Level>,
    /// httperf's sessions: new connections per second, each carrying --calls-per-conn
    /// requests; a ramp or stages as --rate's.
    #[arg(long = "conn-rate", value_name = "R", value_parser = crate::values::level)]
    pub conn_rate: Option<Level>,
    /// The open loop's rate in stages (k6's ramping arrival rate): DURATION:LEVEL or
    /// DURATION:FROM..TO, comma-separated, e.g. '30s:0..1000,2m:1000,30s:1000..0'; the run
    /// lasts their sum.
    #[arg(
        long = "stages",
        value_name = "STAGES",
        conflicts_with_all = ["rate", "conn_rate", "duration", "requests"],
        value_parser = crate::values::stages
    )]
    pub stages: Option<Level>,
    /// Requests on each new connection with --conn-rate (httperf's --num-calls) [default: 1].
    #[arg(long = "calls-per-conn", visible_alias = "num-calls", value_name = "K")]
    pub calls_per_conn: Option<u32>,
    /// Total connections (sessions) to make with --conn-rate (httperf's --num-conns; httperf's
    /// --rate is --conn-rate here).
    #[arg(
        long = "conns",
        visible_alias = "num-conns",
        value_name = "N",
        conflicts_with = "duration"
    )]
    pub conns: Option<u64>,
    /// httperf's session log: N sessions of FILE's bursts (httperf's format), X the think time
    /// in seconds of a burst that names none; --rate is sessions per second, or -c visitors
    /// loop (docs/visits.md).
    #[arg(
        long = "wsesslog",
        value_name = "N,X,FILE",
        conflicts_with_all = ["requests", "duration", "conn_rate", "conns", "urls", "replay", "timing_script", "http3"]
    )]
    pub wsesslog: Option<String>,
    /// A visit file's visits (TOML steps with checks and captures, docs/visits.md), or files by
    /// weight (a.toml:3,b.toml, or --visits once per file): at --rate visits a second, or -c
    /// visitors; -n counts visits.
    // Visits, sessions and page views are not carried over HTTP/3 yet: refused as usage,
    // before a view's discovery reaches for the server.
    #[arg(long = "visits", value_name = "FILE", conflicts_with_all = ["wsesslog", "view", "urls", "replay", "timing_script", "http3"])]
    pub visits: Vec<String>,
    /// With --visits: a value its steps use as {NAME} ({visitor} in it: the visitor's number).
    #[arg(long = "given", value_name = "NAME=VALUE", requires = "visits")]
    pub given: Vec<String>,
    /// With --wsesslog or --visits: connections one visitor may hold at once, a burst's
    /// requests spread over them (httperf's --max-connections with sessions) [default: 4;
    /// --visits: its widest step's, up to 4].
    #[arg(long = "visitor-connections", value_name = "K", requires = "visitors")]
    pub visitor_connections: Option<usize>,
    /// Page views at --rate a second, or by -c viewers in a loop: the URL's page, then the
    /// resources its HTML and CSS name (same host), found once before the run, over up to
    /// --browser-connections connections of each viewer; -n counts views (docs/visits.md).
    #[arg(
        long = "view",
        conflicts_with_all = ["wsesslog", "conn_rate", "conns", "urls", "replay", "timing_script", "http3"]
    )]
    pub view: bool,
    /// With --view: also fetch the resources on these hosts (HOST: any port), over each
    /// viewer's own connections to them; other hosts' are listed as skipped.
    #[arg(
        long = "view-hosts",
        value_name = "HOST[:PORT],...",
        value_delimiter = ',',
        requires = "view"
    )]
    pub view_hosts: Vec<String>,
    /// With --view: connections one viewer may hold, as a browser's per host [default: 6].
    #[arg(long = "browser-connections", value_name = "K", requires = "view")]
    pub browser_connections: Option<usize>,
    /// With --view: each visitor views the page twice, the second time with a browser's cache
    /// of the first (fresh resources skipped, stale ones revalidated); -n counts visitors.
    #[arg(long = "repeat-view", requires = "view")]
    pub repeat_view: bool,
    #[command(flatten)]
    pub schedule: loadlab_load::Schedule,
}

/// A viewer's connections when --browser-connections is not given: a browser's per host.
pub(crate) const BROWSER_CONNECTIONS: usize = 6;

impl LoadFlags {
    /// The open loop's rate: `--rate`, or `--stages` (a rate in stages).
    pub fn rate(&self) -> Option<&Level> {
        self.rate.as_ref().or(self.stages.as_ref())
    }

    /// `bench URL`'s configuration: `request`'s, with this load model and stop condition and
    /// what is sent beyond one URL, checked as a whole before a byte is sent. `note` hears
    /// what a view found to fetch.
    pub fn config(
        &self,
        request: &RequestFlags,
        traffic: &TrafficFlags,
        url: &str,
        note: &mut dyn FnMut(&str),
    ) -> Result<BenchConfig, FlagError> {
        let usage = |m: String| Err(FlagError::Usage(m));
        let mut config = request.config(url)?;
        let rate = self.rate();
        config.pacing = match (rate, &self.conn_rate) {
            (Some(rate), _) => self.schedule.pacing(rate.mean(), None),
            (None, Some(rate)) => {
                let calls = self.calls_per_conn.unwrap_or(loadlab_load::defaults::CALLS_PER_CONN);
                self.schedule.pacing(rate.mean(), Some(calls))
            }
            // A replay is an open loop; its rate, the log's, is set once the log is read.
            (None, None) if traffic.replaying() => self.schedule.pacing(1.0, None),
            (None, None) => Pacing::Closed,
        };
        config.coalesce = self.schedule.coalesce;
        let connections = match &self.connections {
            None => loadlab_load::defaults::CONNECTIONS,
            Some(Level::Fixed(n)) => *n as usize,
            Some(shaped) if rate.is_some() || self.conn_rate.is_some() => {
                return usage(format!(
                    "-c {}: connections that change over time are a closed loop's; with --rate \
                     the rate changes instead",
                    shaped.mean()
                ))
            }
            // The pool is the shape's peak.
            Some(shaped) => (shaped.peak().floor() as usize).max(1),
        };
        config.connections = connections;
        if config.pacing == Pacing::Closed {
            match request.threads {
                Some(t) if t > connections => {
                    return usage(format!(
                        "--threads {t} is more than --connections {connections}: each thread \
                         needs a connection"
                    ))
                }
                Some(_) => {}
                None => config.threads = config.threads.min(connections.max(1)),
            }
        }
        config.stop = match (self.requests, self.conns, self.duration) {
            (Some(n), _, _) | (None, Some(n), _) => Stop::Count(n),
            (None, None, Some(d)) => Stop::Duration(d),
            (None, None, None) => Stop::Duration(defaults::DURATION),
        };
        traffic.apply(&mut config, rate.map(Level::mean), self.requests)?;
        let shaped = rate.or(self.conn_rate.as_ref()).or(self.connections.as_ref());
        if let Some(level) = shaped {
            config.shaped_by(level).map_err(FlagError::Engine)?;
        }
        self.visits(&mut config, rate.map(Level::mean), note)?;
        config.check().map_err(FlagError::Engine)?;
        Ok(config)
    }
}

impl LoadFlags {
    /// `--wsesslog`'s sessions, `--view`'s page views or `--visits`' visits at `rate` a second
    /// or (without `--rate`) by a closed population of `-c` visitors, into `config`.
    fn visits(
        &self,
        config: &mut BenchConfig,
        rate: Option<f64>,
        note: &mut dyn FnMut(&str),
    ) -> Result<(), FlagError> {
        self.no_connections_over_h2(config)?;
        let arrival = self.schedule.arrival.into();
        let per_visitor = self.visitor_connections;
        let kind = [
            (!self.visits.is_empty(), "--visits"),
            (self.wsesslog.is_some(), "--wsesslog"),
            (self.view, "--view"),
        ];
        let Some((_, flag)) = kind.into_iter().find(|(given, _)| *given) else { return Ok(()) };
        let fixed = matches!(self.connections, Some(Level::Fixed(_)) | None);
        if self.conn_rate.is_some() || (rate.is_none() && !fixed) {
            return Err(FlagError::Usage(format!(
                "{flag}: visitors arrive at --rate visits a second, or a fixed -c of them loop"
            )));
        }
        if !self.visits.is_empty() {
            let given = parse_given(&self.given)?;
            let is_file = |name: &str| std::path::Path::new(name).is_file();
            let weighted = loadlab_engine::visits::parse_visits(&self.visits, is_file)
                .map_err(|e| FlagError::Usage(format!("--visits {e}")))?;
            visit_file(&weighted, config, per_visitor, &given)?.apply(config, rate, arrival);
        }
        if let Some(spec) = &self.wsesslog {
            let per_visitor = per_visitor.unwrap_or(loadlab_engine::visits::PER_VISITOR);
            let w = loadlab_engine::visits::Wsesslog::read(spec, per_visitor)
                .map_err(FlagError::Engine)?;
            w.apply(config, rate, arrival);
        }
        if self.view {
            let connections = self.browser_connections.unwrap_or(BROWSER_CONNECTIONS);
            let (repeat, hosts) = (self.repeat_view, &self.view_hosts);
            let view = loadlab_engine::visits::View::discover(config, connections, repeat, hosts)
                .map_err(FlagError::Engine)?;
            note(&super::views::found(view.plan()));
            view.apply(config, rate, arrival);
        }
        Ok(())
    }
}

impl LoadFlags {
    /// `--visitor-connections` or `--browser-connections` given with `--http2`: refused, not
    /// ignored. Over HTTP/2 a visitor holds one connection per origin and a burst's requests
    /// are its concurrent streams (RFC 9113 section 9.1), so a count of connections would
    /// change nothing.
    fn no_connections_over_h2(&self, config: &BenchConfig) -> Result<(), FlagError> {
        if !config.protocol.is_h2() {
            return Ok(());
        }
        let visitors = self.wsesslog.is_some() || !self.visits.is_empty();
        let given = [
            ("--visitor-connections", self.visitor_connections.filter(|_| visitors)),
            ("--browser-connections", self.browser_connections.filter(|_| self.view)),
        ];
        match given.into_iter().find_map(|(flag, k)| k.map(|k| (flag, k))) {
            Some((flag, k)) => Err(FlagError::Usage(format!(
                "{flag} {k} has no meaning with --http2: a visitor holds one connection per \
                 origin, its requests concurrent streams of it"
            ))),
            None => Ok(()),
        }
    }
}

/// How `--urls` entries are picked.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, clap::ValueEnum)]
pub enum UrlsOrder {
    /// At random in proportion to their weights, from --seed.
    #[default]
    Weighted,
    /// In the file's order, each entry `weight` times in a row.
    Sequential,
}

/// What `bench` sends beyond one URL (a URL list, a replayed log or timing script), and
/// its interval log, as clap parses them; the files themselves are read by
/// `loadlab_engine::input`.
#[derive(Debug, Clone, Default, clap::Args)]
pub struct TrafficFlags {
    /// A URL list: one request a line, `[weight=N] [body=@FILE] [METHOD] /path [Name:
    /// value]...` (docs/bench.md); the URL argument gives the scheme, host and port, -m, -H
    /// and the body flags what lines leave out.
    #[arg(long = "urls", value_name = "FILE", conflicts_with_all = ["replay", "timing_script"])]
    pub urls: Option<PathBuf>,
    /// How --urls entries are picked: by weight (from --seed) or in the file's order.
    #[arg(long = "urls-order", value_enum, default_value_t = UrlsOrder::Weighted, requires = "urls")]
    pub urls_order: UrlsOrder,
    /// Replay an access log (Common/Combined Log Format or JSON lines): each line due at its
    /// time after the first (an open loop; --rate R: at R per second instead); -n N replays
    /// its first N lines.
    #[arg(
        long = "replay",
        value_name = "FILE",
        conflicts_with_all = ["timing_script", "connections", "conn_rate", "duration"]
    )]
    pub replay: Option<PathBuf>,
    /// Replay h2load's timing script: per line, an offset in milliseconds, a tab, the URI.
    #[arg(
        long = "timing-script",
        value_name = "FILE",
        conflicts_with_all = ["connections", "conn_rate", "duration"]
    )]
    pub timing_script: Option<PathBuf>,
    /// With --replay or --timing-script: X times as fast as the log (2 halves every gap).
    #[arg(long = "speed", value_name = "X")]
    pub speed: Option<f64>,
    /// Write a latency histogram per second to FILE in HdrHistogram's interval-log format
    /// (tagged corrected and uncorrected under --rate and --conn-rate).
    #[arg(long = "hdr-log", value_name = "FILE")]
    pub hdr_log: Option<PathBuf>,
}

impl From<UrlsOrder> for Order {
    fn from(o: UrlsOrder) -> Order {
        match o {
            UrlsOrder::Weighted => Order::Weighted,
            UrlsOrder::Sequential => Order::Sequential,
        }
    }
}

impl TrafficFlags {
    /// The log or script to replay, if any.
    fn replay_file(&self) -> Option<&PathBuf> {
        self.replay.as_ref().or(self.timing_script.as_ref())
    }

    /// Whether a log or script is replayed: an open loop whatever -c says.
    pub fn replaying(&self) -> bool {
        self.replay_file().is_some()
    }

    /// Reads the list, log or script into `config` (already built from the other flags, with
    /// its load model and stop condition), and checks what does not go with a replay. `rate`
    /// is `--rate`, `requests` `-n`.
    fn apply(
        &self,
        config: &mut BenchConfig,
        rate: Option<f64>,
        requests: Option<u64>,
    ) -> Result<(), FlagError> {
        let usage = |m: &str| Err(FlagError::Usage(m.to_string()));
        config.hdr_log = self.hdr_log.is_some();
        if let Some(path) = &self.urls {
            let mix = input::url_list::read(path, &config.target, self.urls_order.into())
                .map_err(FlagError::Engine)?;
            config.traffic = Traffic::Mix(Arc::new(mix));
            return self.no_speed();
        }
        let Some(path) = self.replay_file() else { return self.no_speed() };
        let flag = if self.replay.is_some() { "--replay" } else { "--timing-script" };
        if self.replay.is_some() && config.request.method != "GET" {
            return usage("-m has no meaning with --replay: each line gives its method");
        }
        if !config.request.body.is_empty() {
            return usage(&format!("{flag} sends no body (logs hold none): drop the body flag"));
        }
        let mut replay: Replay = match &self.replay {
            Some(_) => input::access_log::read(path, &config.target),
            None => input::timing_script::read(path, &config.target),
        }
        .map_err(FlagError::Engine)?;
        if let Some(speed) = self.speed {
            if !(speed.is_finite() && speed > 0.0) {
                return usage(&format!("--speed {speed}: a speed is a positive number"));
            }
            if rate.is_some() {
                return usage("--speed scales the log's timing, which --rate replaces");
            }
            replay.speed = speed;
        }
        let lines = replay.len() as u64;
        let n = requests.unwrap_or(lines).min(lines);
        config.stop = Stop::Count(n);
        if let (Pacing::Open { arrival, max_connections, .. }, None) = (config.pacing, rate) {
            if arrival == Arrival::Poisson {
                return usage(&format!(
                    "--arrival poisson needs --rate with {flag}: without it each line is due at \
                     its time in the file"
                ));
            }
            config.pacing = Pacing::Open {
                rate: replay.mean_rate(n as usize),
                arrival: Arrival::Log,
                max_connections,
            };
        }
        config.traffic = Traffic::Replay(Arc::new(replay));
        Ok(())
    }

    fn no_speed(&self) -> Result<(), FlagError> {
        match self.speed {
            Some(_) => Err(FlagError::Usage(
                "--speed scales a replay's timing: it goes with --replay or --timing-script".into(),
            )),
            None => Ok(()),
        }
    }
}

/// `--given NAME=VALUE`s (a suite workload's `given` table, written so): each a name a
/// visit's steps use as `{NAME}` and its value, which may hold `{visitor}`, the visitor's
/// number. A name twice, or one [`loadlab_visit::given_refusal`] refuses, is refused.
pub fn parse_given(items: &[String]) -> Result<Vec<(String, String)>, FlagError> {
    let mut given: Vec<(String, String)> = Vec::with_capacity(items.len());
    for item in items {
        let usage = |why: &str| Err(FlagError::Usage(format!("--given {item}: {why}")));
        let Some((name, value)) = item.split_once('=') else {
            return usage("write it NAME=VALUE");
        };
        if let Some(why) = loadlab_visit::given_refusal(name, value) {
            return usage(why);
        }
        if given.iter().any(|(n, _)| n == name) {
            return usage("given twice");
        }
        given.push((name.to_string(), value.to_string()));
    }
    Ok(given)
}

/// The visits of `weighted` for `config`'s target: a built-in visit's name (`wordpress:login`)
/// or a visit file, or a weighted mix of them (`a.toml:3,b.toml:1`, see
/// [`loadlab_engine::visits::parse_visits`]), as `bench --visits` and a suite's
/// `visits = ...` take them, with the values `given` by the user (over a built-in visit's
/// own). A name no step uses, or that a step captures, is refused.
pub(crate) fn visit_file(
    weighted: &[(String, u32)],
    config: &BenchConfig,
    per_visitor: Option<usize>,
    given: &[(String, String)],
) -> Result<loadlab_engine::visits::VisitFile, FlagError> {
    let mut vars: loadlab_visit::Vars = given.iter().cloned().collect();
    if let [(one, 1)] = weighted {
        let Some(builtin) = builtin_visit(one, &config.target.url)? else {
            return loadlab_engine::visits::VisitFile::read(one, config, per_visitor, vars)
                .map_err(FlagError::Engine);
        };
        let users = lab_values(one, &builtin, &mut vars, config)?;
        let name = builtin.visit.name;
        let mut visits = loadlab_engine::visits::VisitFile::parse(
            builtin.visit.text,
            name,
            config,
            per_visitor,
            vars,
        )
        .map_err(FlagError::Engine)?;
        visits.plan.users = users;
        return Ok(visits);
    }
    let mut files = Vec::with_capacity(weighted.len());
    let mut users = None;
    for (name, weight) in weighted.iter().cloned() {
        let text = match builtin_visit(&name, &config.target.url)? {
            Some(builtin) => {
                users = users.or(lab_values(&name, &builtin, &mut vars, config)?);
                builtin.visit.text.to_string()
            }
            None => std::fs::read_to_string(&name).map_err(|e| {
                FlagError::Engine(loadlab_engine::EngineError::Input {
                    file: name.clone(),
                    line: None,
                    what: e.to_string(),
                })
            })?,
        };
        files.push(loadlab_engine::visits::WeightedFile { name, text, weight });
    }
    let mut visits = loadlab_engine::visits::VisitFile::weighted(&files, config, per_visitor, vars)
        .map_err(FlagError::Engine)?;
    visits.plan.users = users;
    Ok(visits)
}

/// Adds the values the lab's instance gives built-in visit `spec` to `vars`, where the user
/// gave none of that name. Each visitor logs in as its own user of the stack: a closed
/// population larger than its users would share some, and lose logins to WordPress's unlocked
/// session row (docs/lab.md), so it is refused; an open loop's visitor numbers are known only
/// as it runs, so the users are returned for its trust rule (`visitors_past_users`).
fn lab_values(
    spec: &str,
    builtin: &loadlab_lab::visits::Resolved,
    vars: &mut loadlab_visit::Vars,
    config: &BenchConfig,
) -> Result<Option<u64>, FlagError> {
    let mut lab_given = false;
    for (name, value) in &builtin.given {
        if let std::collections::hash_map::Entry::Vacant(free) = vars.entry(name.clone()) {
            free.insert(value.clone());
            lab_given = true;
        }
    }
    if let (true, Some(users), Pacing::Closed) = (lab_given, builtin.visitors, config.pacing) {
        if config.connections > users {
            return Err(FlagError::Usage(format!(
                "--visits {spec}: the stack has {users} users for visitors, one each; \
                 -c {} asks for more",
                config.connections
            )));
        }
    }
    Ok(builtin.visitors.filter(|_| lab_given).map(|users| users as u64))
}

/// `--visits NAME` of one of the lab's built-in visits (docs/lab.md), with the values the
/// lab's stack at `url` gives it; `None` for a visit file.
fn builtin_visit(
    spec: &str,
    url: &str,
) -> Result<Option<loadlab_lab::visits::Resolved>, FlagError> {
    if loadlab_lab::visits::builtin(spec).is_none() {
        return Ok(None);
    }
    let usage = |e: loadlab_lab::Error| FlagError::Usage(format!("--visits {spec}: {e}"));
    let lab = loadlab_lab::Lab::from_env().map_err(usage)?;
    let records: Vec<_> = lab.instances().map_err(usage)?.into_iter().map(|(r, _)| r).collect();
    loadlab_lab::visits::resolve(&records, spec, url).map_err(usage)
}

/// Whether the headers hold `Connection: close` (the header is a comma-separated list of
/// options, RFC 9110 section 7.6.1, and case-insensitive).
fn closes(headers: &[(String, String)]) -> bool {
    headers.iter().any(|(name, value)| {
        name.eq_ignore_ascii_case("connection")
            && value.split(',').any(|option| option.trim().eq_ignore_ascii_case("close"))
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn given_values_are_name_equals_value_once_each() {
        let typed = |items: &[&str]| {
            parse_given(&items.iter().map(|s| s.to_string()).collect::<Vec<_>>())
                .map_err(|e| e.to_string())
        };
        let ok = typed(&["user=member-{visitor}", "q=a=b"]).unwrap();
        assert_eq!(ok[0], ("user".to_string(), "member-{visitor}".to_string()));
        assert_eq!(ok[1], ("q".to_string(), "a=b".to_string()));
        for (items, said) in [
            (&["user"][..], "--given user: write it NAME=VALUE"),
            (&["a=1", "a=2"][..], "--given a=2: given twice"),
            (&["visitor=3"][..], "--given visitor=3: {visitor} is the visitor's number"),
            (&["a b=1"][..], "--given a b=1: a name is letters"),
        ] {
            let e = typed(items).unwrap_err();
            assert!(e.starts_with(said), "{e}");
        }
    }

    #[test]
    fn ip_lists() {
        let ips = parse_ip_list("127.0.0.1-127.0.0.16").unwrap();
        assert_eq!(ips.len(), 16);
        assert_eq!(ips[15], "127.0.0.16".parse::<IpAddr>().unwrap());
        assert_eq!(parse_ip_list("::1, 127.0.0.2").unwrap().len(), 2);
        assert!(parse_ip_list("127.0.0.5-127.0.0.1").is_err());
        assert!(parse_ip_list("nope").is_err());
    }

    fn flags() -> RequestFlags {
        RequestFlags::default()
    }

    fn refusal(flags: RequestFlags, url: &str) -> String {
        match flags.config(url) {
            Err(FlagError::Usage(m)) => m,
            other => panic!("not refused as usage: {other:?}"),
        }
    }

    #[test]
    fn ab_headers_are_one_cookie_and_basic_auth_and_clash_with_the_same_h() {
        let cookies = vec!["a=1".to_string(), "b=2".to_string()];
        let f = RequestFlags { cookies, basic_auth: Some(" admin:secret".into()), ..flags() };
        let request = f.config("http://127.0.0.1:1/").unwrap().request;
        let header = |n: &str| request.headers.iter().find(|(h, _)| h == n).map(|(_, v)| v.clone());
        assert_eq!(header("Cookie").as_deref(), Some("a=1; b=2"));
        assert_eq!(header("Authorization").as_deref(), Some("Basic YWRtaW46c2VjcmV0"));
        let clash = RequestFlags {
            cookies: vec!["a=1".into()],
            request: loadlab_load::Request {
                headers: vec!["cookie: x=y".into()],
                ..Default::default()
            },
            ..flags()
        };
        assert!(refusal(clash, "http://127.0.0.1:1/").contains("-C and -H"));
        let bad = RequestFlags { cookies: vec!["novalue".into()], ..flags() };
        assert!(refusal(bad, "http://127.0.0.1:1/").starts_with("-C \"novalue\""));
    }

    #[test]
    fn a_post_file_makes_the_method_post_unless_m_names_another() {
        let dir = tempfile::tempdir().unwrap();
        let file = dir.path().join("body");
        std::fs::write(&file, b"x=1").unwrap();
        let f = RequestFlags { post_file: Some(file.clone()), ..flags() };
        let request = f.config("http://127.0.0.1:1/").unwrap().request;
        assert_eq!((request.method.as_str(), request.body.as_slice()), ("POST", &b"x=1"[..]));
        let request = loadlab_load::Request { method: "PATCH".into(), ..Default::default() };
        let f = RequestFlags { post_file: Some(file), request, ..flags() };
        assert_eq!(f.config("http://127.0.0.1:1/").unwrap().request.method, "PATCH");
    }

    fn load(rate: f64) -> LoadFlags {
        let schedule = Schedule { max_connections: 100, ..Schedule::default() };
        LoadFlags {
            requests: Some(4),
            rate: Some(Level::Fixed(rate)),
            schedule,
            ..LoadFlags::default()
        }
    }

    /// With `--http2` these counts have no meaning: refused, never silently ignored.
    #[test]
    fn a_visitors_connections_given_with_http2_are_refused_naming_the_flag() {
        let dir = tempfile::tempdir().unwrap();
        let log = dir.path().join("s.log");
        std::fs::write(&log, "/a.html\n    /a.css\n").unwrap();
        let spec = format!("2,0,{}", log.display());
        let second = Duration::from_secs(1);
        let connection = loadlab_load::Connection {
            timeout: second,
            connect_timeout: second,
            ..Default::default()
        };
        let http1 = RequestFlags { connection, ..flags() };
        let protocol = loadlab_load::Protocol { http2: true, ..Default::default() };
        let h2 = RequestFlags { protocol, ..http1.clone() };
        let url = "http://127.0.0.1:1/";
        let traffic = TrafficFlags::default();
        let refused = |load: LoadFlags| match load.config(&h2, &traffic, url, &mut |_| {}) {
            Err(FlagError::Usage(m)) => m,
            other => panic!("not refused as usage: {other:?}"),
        };
        let sessions =
            LoadFlags { wsesslog: Some(spec.clone()), visitor_connections: Some(3), ..load(5.0) };
        let said = refused(sessions);
        assert!(said.starts_with("--visitor-connections 3 has no meaning with --http2"), "{said}");
        let views = LoadFlags { view: true, browser_connections: Some(2), ..load(5.0) };
        assert!(refused(views).starts_with("--browser-connections 2 has no meaning with --http2"));
        // Not given: the run is made; over HTTP/1.1 the count is the visitor's.
        let sessions = LoadFlags { wsesslog: Some(spec.clone()), ..load(5.0) };
        let config = sessions.config(&h2, &traffic, url, &mut |_| {}).unwrap();
        assert!(config.protocol.is_h2() && config.visits.is_some());
        let sessions =
            LoadFlags { wsesslog: Some(spec), visitor_connections: Some(3), ..load(5.0) };
        let config = sessions.config(&http1, &traffic, url, &mut |_| {}).unwrap();
        assert_eq!(config.visits.unwrap().per_visitor, 3);
    }

    /// `-t 0` is refused in one line rather than run as one thread.
    #[test]
    fn no_threads_are_refused() {
        let none = RequestFlags { threads: Some(0), ..flags() };
        let said = refusal(none, "http://127.0.0.1:1/");
        assert!(said.starts_with("-t 0: a run needs at least one worker thread"), "{said}");
        assert!(!said.contains('\n'), "{said}");
    }

    fn header(h: &str) -> loadlab_load::Request {
        loadlab_load::Request { headers: vec![h.into()], ..Default::default() }
    }

    /// `-H 'Connection: close'` (any case, among other options) is --no-keepalive, and the
    /// configuration says so; other Connection options keep keep-alive on.
    #[test]
    fn a_connection_close_header_is_no_keepalive() {
        let url = "http://127.0.0.1:1/";
        for close in ["Connection: close", "connection: Upgrade, CLOSE"] {
            let given = RequestFlags { request: header(close), ..flags() };
            assert!(!given.config(url).unwrap().keepalive, "{close}");
        }
        let kept = RequestFlags { request: header("Connection: keep-alive"), ..flags() };
        assert!(kept.config(url).unwrap().keepalive);
        assert!(flags().config(url).unwrap().keepalive);
    }

    #[test]
    fn what_cannot_work_is_refused_naming_the_flag() {
        let socket = RequestFlags { unix_socket: Some("/tmp/s".into()), ..flags() };
        assert!(refusal(socket, "https://127.0.0.1:1/").contains("--unix-socket"));
        let cpus = sys::allowed_cpus();
        let absent = (0..).find(|c| !cpus.contains(c)).unwrap();
        let pin = RequestFlags { pin: Some(absent.to_string()), ..flags() };
        assert!(refusal(pin, "http://127.0.0.1:1/").starts_with("--pin: CPU"));
        let expect =
            loadlab_load::Expect { expect_contains: Some(String::new()), ..Default::default() };
        let empty = RequestFlags { expect, ..flags() };
        assert!(refusal(empty, "http://127.0.0.1:1/").starts_with("--expect-contains"));
    }

    /// A bad -H or -m is refused before anything is sent, naming its flag, as a suite's
    /// `headers` and `method` are (the same check).
    #[test]
    fn a_bad_header_or_method_is_refused_naming_its_flag() {
        let url = "http://127.0.0.1:1/";
        let said = refusal(RequestFlags { request: header("no colon"), ..flags() }, url);
        assert!(said.starts_with("-H: invalid header \"no colon\""), "{said}");
        let method = loadlab_load::Request { method: "GE T".into(), ..Default::default() };
        let said = refusal(RequestFlags { request: method, ..flags() }, url);
        assert!(said.starts_with("-m: invalid method \"GE T\""), "{said}");
    }
}
