//! The flags of `bench` and `sweep` as typed (the command line parses them): each request and
//! connection, the load model and stop condition, what is sent beyond one URL; made into the
//! engine's configuration with everything that can be checked checked before a byte is sent,
//! each refusal naming its flag.

use std::net::IpAddr;
use std::path::PathBuf;
use std::sync::Arc;
use std::time::Duration;

use loadlab_engine::{
    input, sys, Arrival, BenchConfig, EngineError, Level, Order, Pacing, Replay, RequestSpec, Stop,
    Target, Traffic, Validation,
};
pub use loadlab_load::Schedule;

/// A flag's value the user has to change, or the engine's refusal of what they made.
#[derive(Debug, thiserror::Error)]
pub enum FlagError {
    #[error("{0}")]
    Usage(String),
    #[error(transparent)]
    Engine(EngineError),
}

/// The request, connection and client flags, as typed.
#[derive(Debug, Clone, Default)]
pub struct RequestFlags {
    /// `-t`: worker threads [default: CPUs available, or one per CPU of `pin`].
    pub threads: Option<usize>,
    /// `--pin`: CPUs (a list such as 0,2-3) for the workers, round-robin.
    pub pin: Option<String>,
    /// Not `--no-keepalive`.
    pub keepalive: bool,
    pub timeout: Duration,
    pub connect_timeout: Duration,
    pub warmup: Duration,
    pub seed: u64,
    /// `--source-ips`: a range or a list.
    pub source_ips: Option<String>,
    pub unix_socket: Option<PathBuf>,
    /// `--http2` with its `--streams`.
    pub http2_streams: Option<usize>,
    pub insecure: bool,
    pub cacert: Option<PathBuf>,
    /// Not `--no-tls-resume`.
    pub tls_resume: bool,
    /// "1.2" or "1.3".
    pub tls_version: Option<String>,
    /// ab's -i: HEAD.
    pub head: bool,
    pub method: String,
    /// `-H`, "Name: value" each.
    pub headers: Vec<String>,
    /// ab's -C, NAME=VALUE each.
    pub cookies: Vec<String>,
    /// ab's -A, USER:PASSWORD.
    pub basic_auth: Option<String>,
    pub body: Option<PathBuf>,
    pub body_string: Option<String>,
    /// ab's -p and -u.
    pub post_file: Option<PathBuf>,
    pub put_file: Option<PathBuf>,
    /// ab's -T.
    pub content_type: Option<String>,
    pub expect_status: Option<String>,
    pub expect_body_sha256: Option<String>,
    pub expect_contains: Option<String>,
}

impl RequestFlags {
    /// A configuration for `url` with everything but the load model and the stop condition.
    pub fn config(&self, url: &str) -> Result<BenchConfig, FlagError> {
        let target = Target::parse(url).map_err(FlagError::Engine)?;
        let mut config = BenchConfig::new(target);
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
        config.keepalive = self.keepalive;
        config.timeout = self.timeout;
        config.connect_timeout = self.connect_timeout;
        config.warmup = self.warmup;
        config.seed = self.seed;
        if let Some(s) = &self.source_ips {
            config.source_ips = parse_ip_list(s).map_err(FlagError::Usage)?;
        }
        config.unix_socket.clone_from(&self.unix_socket);
        if let Some(streams) = self.http2_streams {
            config.protocol = loadlab_engine::Protocol::Http2 { streams };
        }
        config.tls = loadlab_engine::TlsOptions {
            insecure: self.insecure,
            cacert: self.cacert.clone(),
            resume: self.tls_resume,
            version: self.tls_version.as_deref().map(|v| match v {
                "1.2" => loadlab_engine::TlsVersion::Tls12,
                _ => loadlab_engine::TlsVersion::Tls13,
            }),
        };
        if config.target.tls && config.unix_socket.is_some() {
            return Err(FlagError::Usage("https:// over --unix-socket is not supported".into()));
        }

        config.request = self.request()?;
        config.validation = self.validation()?;
        Ok(config)
    }

    /// The request: method, headers (ab's -C, -A and -T among them) and body.
    fn request(&self) -> Result<RequestSpec, FlagError> {
        let method = if self.head { "HEAD".to_string() } else { self.method.clone() };
        let mut request = RequestSpec { method, ..RequestSpec::default() };
        for h in &self.headers {
            request.headers.push(RequestSpec::parse_header(h).map_err(FlagError::Engine)?);
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
            if self.method == "GET" {
                request.method = method.to_string();
            }
            request.body = std::fs::read(path)
                .map_err(|e| FlagError::Usage(format!("{flag} {}: {e}", path.display())))?;
        } else if let Some(path) = &self.body {
            request.body = std::fs::read(path)
                .map_err(|e| FlagError::Usage(format!("--body {}: {e}", path.display())))?;
        } else if let Some(s) = &self.body_string {
            request.body = s.as_bytes().to_vec();
        }
        Ok(request)
    }

    /// What a response must be to count as completed (--expect-*).
    fn validation(&self) -> Result<Validation, FlagError> {
        let mut v = Validation::default();
        if let Some(s) = &self.expect_status {
            v.status = Validation::parse_status(s)
                .map_err(|e| FlagError::Usage(format!("--expect-status: {e}")))?;
        }
        if let Some(s) = &self.expect_body_sha256 {
            v.body_sha256 = Some(
                Validation::parse_sha256(s)
                    .map_err(|e| FlagError::Usage(format!("--expect-body-sha256: {e}")))?,
            );
        }
        if let Some(s) = &self.expect_contains {
            if s.is_empty() {
                return Err(FlagError::Usage(
                    "--expect-contains: the text must not be empty".into(),
                ));
            }
            v.body_contains = Some(s.as_bytes().to_vec());
        }
        Ok(v)
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

/// `bench`'s load model and stop condition, as typed.
#[derive(Debug, Clone)]
pub struct LoadFlags {
    /// `-c` [default: 10]: a level, or (a closed loop's stages) a shape.
    pub connections: Option<Level>,
    /// `-n`.
    pub requests: Option<u64>,
    /// `-d` [default, with no count: 10 s].
    pub duration: Option<Duration>,
    /// `--rate` (or `--stages`): the open loop, at a level or in a shape.
    pub rate: Option<Level>,
    /// `--conn-rate`: sessions, each of `calls_per_conn` requests [default: 1].
    pub conn_rate: Option<Level>,
    pub calls_per_conn: Option<u32>,
    /// `--conns`: sessions in all.
    pub conns: Option<u64>,
    pub schedule: Schedule,
    pub traffic: TrafficFlags,
    /// `--wsesslog N,X,FILE` and its `--visitor-connections`.
    pub wsesslog: Option<(String, Option<usize>)>,
    /// `--view`, its `--browser-connections`, `--repeat-view` and `--view-hosts`.
    pub view: Option<(Option<usize>, bool, Vec<String>)>,
    /// `--visits FILE` (a visit file, or a mix: each time the flag is given) and its
    /// `--visitor-connections`.
    pub visits: Option<(Vec<String>, Option<usize>)>,
    /// `--given NAME=VALUE`: values the visit's steps use as `{NAME}`, as typed.
    pub given: Vec<String>,
}

/// A viewer's connections when --browser-connections is not given: a browser's per host.
pub(crate) const BROWSER_CONNECTIONS: usize = 6;

impl LoadFlags {
    /// `bench URL`'s configuration: `request`'s, with this load model and stop condition and
    /// what is sent beyond one URL, checked as a whole before a byte is sent. `note` hears
    /// what a view found to fetch.
    pub fn config(
        &self,
        request: &RequestFlags,
        url: &str,
        note: &mut dyn FnMut(&str),
    ) -> Result<BenchConfig, FlagError> {
        let usage = |m: String| Err(FlagError::Usage(m));
        let mut config = request.config(url)?;
        let rate = self.rate.as_ref();
        config.pacing = match (rate, &self.conn_rate) {
            (Some(rate), _) => self.schedule.pacing(rate.mean(), None),
            (None, Some(rate)) => {
                let calls = self.calls_per_conn.unwrap_or(loadlab_load::defaults::CALLS_PER_CONN);
                self.schedule.pacing(rate.mean(), Some(calls))
            }
            // A replay is an open loop; its rate, the log's, is set once the log is read.
            (None, None) if self.traffic.replaying() => self.schedule.pacing(1.0, None),
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
            (None, None, None) => Stop::Duration(Duration::from_secs(10)),
        };
        self.traffic.apply(&mut config, rate.map(Level::mean), self.requests)?;
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
    /// `--wsesslog`'s sessions or `--view`'s page views at `rate` a second, or `--visits`'
    /// visits at `rate` a second or (without `--rate`) by a closed population of `-c`
    /// visitors, into `config`.
    fn visits(
        &self,
        config: &mut BenchConfig,
        rate: Option<f64>,
        note: &mut dyn FnMut(&str),
    ) -> Result<(), FlagError> {
        self.no_connections_over_h2(config)?;
        let arrival = self.schedule.arrival.into();
        if let Some((values, per_visitor)) = &self.visits {
            let fixed = matches!(self.connections, Some(Level::Fixed(_)) | None);
            if self.conn_rate.is_some() || (rate.is_none() && !fixed) {
                return Err(FlagError::Usage(
                    "--visits: visitors arrive at --rate visits a second, or a fixed -c of them \
                     loop"
                        .to_string(),
                ));
            }
            let given = parse_given(&self.given)?;
            let is_file = |name: &str| std::path::Path::new(name).is_file();
            let weighted = loadlab_engine::visits::parse_visits(values, is_file)
                .map_err(|e| FlagError::Usage(format!("--visits {e}")))?;
            visit_file(&weighted, config, *per_visitor, &given)?.apply(config, rate, arrival);
        }
        let Some(rate) = rate else { return Ok(()) };
        if let Some((spec, per_visitor)) = &self.wsesslog {
            let per_visitor = per_visitor.unwrap_or(loadlab_engine::visits::PER_VISITOR);
            let w = loadlab_engine::visits::Wsesslog::read(spec, per_visitor)
                .map_err(FlagError::Engine)?;
            w.apply(config, rate, arrival);
        }
        if let Some((connections, repeat, hosts)) = &self.view {
            let connections = connections.unwrap_or(BROWSER_CONNECTIONS);
            let view = loadlab_engine::visits::View::discover(config, connections, *repeat, hosts)
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
        let visitor = self.wsesslog.as_ref().and_then(|w| w.1);
        let visitor = visitor.or(self.visits.as_ref().and_then(|v| v.1));
        let given = [
            ("--visitor-connections", visitor),
            ("--browser-connections", self.view.as_ref().and_then(|v| v.0)),
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

/// What `bench` sends beyond one URL (a URL list, a replayed log or timing script), and
/// whether it keeps an interval log; the files themselves are read by
/// `loadlab_engine::input`.
#[derive(Debug, Clone)]
pub struct TrafficFlags {
    pub urls: Option<PathBuf>,
    pub urls_order: Order,
    /// `--replay`: an access log.
    pub replay: Option<PathBuf>,
    /// h2load's timing script.
    pub timing_script: Option<PathBuf>,
    pub speed: Option<f64>,
    /// `--hdr-log` given.
    pub hdr_log: bool,
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
        config.hdr_log = self.hdr_log;
        if let Some(path) = &self.urls {
            let mix = input::url_list::read(path, &config.target, self.urls_order)
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
        RequestFlags { method: "GET".into(), keepalive: true, ..RequestFlags::default() }
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
            headers: vec!["cookie: x=y".into()],
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
        let f = RequestFlags { post_file: Some(file), method: "PATCH".into(), ..flags() };
        assert_eq!(f.config("http://127.0.0.1:1/").unwrap().request.method, "PATCH");
    }

    fn load(rate: f64) -> LoadFlags {
        let schedule = Schedule { max_connections: 100, ..Schedule::default() };
        let traffic = TrafficFlags {
            urls: None,
            urls_order: Order::Sequential,
            replay: None,
            timing_script: None,
            speed: None,
            hdr_log: false,
        };
        LoadFlags {
            connections: None,
            requests: Some(4),
            duration: None,
            rate: Some(Level::Fixed(rate)),
            conn_rate: None,
            calls_per_conn: None,
            conns: None,
            schedule,
            traffic,
            wsesslog: None,
            view: None,
            visits: None,
            given: Vec::new(),
        }
    }

    /// Regression: with `--http2` these counts were silently ignored.
    #[test]
    fn a_visitors_connections_given_with_http2_are_refused_naming_the_flag() {
        let dir = tempfile::tempdir().unwrap();
        let log = dir.path().join("s.log");
        std::fs::write(&log, "/a.html\n    /a.css\n").unwrap();
        let spec = format!("2,0,{}", log.display());
        let second = Duration::from_secs(1);
        let http1 = RequestFlags { timeout: second, connect_timeout: second, ..flags() };
        let h2 = RequestFlags { http2_streams: Some(1), ..http1.clone() };
        let url = "http://127.0.0.1:1/";
        let refused = |load: LoadFlags| match load.config(&h2, url, &mut |_| {}) {
            Err(FlagError::Usage(m)) => m,
            other => panic!("not refused as usage: {other:?}"),
        };
        let sessions = LoadFlags { wsesslog: Some((spec.clone(), Some(3))), ..load(5.0) };
        let said = refused(sessions);
        assert!(said.starts_with("--visitor-connections 3 has no meaning with --http2"), "{said}");
        let views = LoadFlags { view: Some((Some(2), false, Vec::new())), ..load(5.0) };
        assert!(refused(views).starts_with("--browser-connections 2 has no meaning with --http2"));
        // Not given: the run is made; over HTTP/1.1 the count is the visitor's.
        let sessions = LoadFlags { wsesslog: Some((spec.clone(), None)), ..load(5.0) };
        let config = sessions.config(&h2, url, &mut |_| {}).unwrap();
        assert!(config.protocol.is_h2() && config.visits.is_some());
        let sessions = LoadFlags { wsesslog: Some((spec, Some(3))), ..load(5.0) };
        let config = sessions.config(&http1, url, &mut |_| {}).unwrap();
        assert_eq!(config.visits.unwrap().per_visitor, 3);
    }

    #[test]
    fn what_cannot_work_is_refused_naming_the_flag() {
        let socket = RequestFlags { unix_socket: Some("/tmp/s".into()), ..flags() };
        assert!(refusal(socket, "https://127.0.0.1:1/").contains("--unix-socket"));
        let cpus = sys::allowed_cpus();
        let absent = (0..).find(|c| !cpus.contains(c)).unwrap();
        let pin = RequestFlags { pin: Some(absent.to_string()), ..flags() };
        assert!(refusal(pin, "http://127.0.0.1:1/").starts_with("--pin: CPU"));
        let empty = RequestFlags { expect_contains: Some(String::new()), ..flags() };
        assert!(refusal(empty, "http://127.0.0.1:1/").starts_with("--expect-contains"));
    }
}
