//! loadlab's load generator: HTTP/1.1 and HTTP/2 load from one event loop per core.
//!
//! - [`BenchConfig`] holds a run's effective parameters; [`Target`] and [`RequestSpec`] say
//!   where requests go and what they carry, [`Traffic`] whether that is one request, a URL
//!   list's ([`mix`]) or a replayed log's ([`replay`], read by [`input`]); [`Validation`] what
//!   a good response looks like.
//! - [`run`] starts one worker thread per requested thread. Each worker (`worker`) owns an
//!   epoll loop, its connection slots (`conn`), one read buffer and its own recorders; the
//!   response parser (`http`) is incremental and bounded. Workers share nothing on the hot path
//!   but the request budget (`pacing`) and relaxed progress counters in [`Control`].
//! - When the workers end, their tallies merge exactly into a [`BenchResult`]: HDR histograms
//!   bucket by bucket, counters by addition.
//!
//! The engine knows nothing of output formats, stacks or storage.

// Every unsafe block says why it is sound; they all live in `sys`.
#![deny(clippy::undocumented_unsafe_blocks)]

pub mod cgroup;
pub mod check;
pub mod client;
mod config;
mod conn;
pub mod error;
mod exchange;
pub mod h2;
pub mod h3;
pub mod http;
pub mod input;
pub mod link;
pub mod live;
pub mod mix;
mod multiplexed;
mod over_quic;
mod pacing;
mod plain;
pub mod probe;
pub mod replay;
pub mod request;
pub mod result;
mod schedule;
mod sends;
mod session_tally;
pub mod shape;
mod slots;
mod spec;
mod start;
pub mod sys;
mod table;
pub mod target;
mod timer;
pub mod tls;
pub mod visits;
mod worker;

use std::net::{SocketAddr, TcpStream};
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::Arc;
use std::thread::JoinHandle;
use std::time::{Duration, Instant};

use worker::EventLoop;

pub use check::{Answer, KeptAnswer, Validation};
pub use config::{defaults, BenchConfig};
pub use error::{EngineError, ErrorClass, ErrorCounts};
pub use link::Link;
pub use mix::{Entry, Mix, Order, Traffic};
pub use pacing::{Pacing, Share, Stop, Weighted};
pub use probe::{NoIdleRtt, PathRtt};
pub use replay::{Replay, Skip};
pub use request::{Protocol, RequestSpec};
pub use result::{BenchResult, EntryTally, HdrLog, Tally, Timings, WorkerSummary};
pub use schedule::Arrival;
pub use sends::{Coalesce, Sends, WakeCost, MAX_WINDOW};
pub use shape::{Level, Shape, ShapeError, Stage};
pub use target::Target;
pub use tls::{Negotiated, TlsOptions, TlsVersion};

/// Shared between the caller and the workers while a run is going: a stop request (Ctrl-C) and
/// progress counters for a live display. Workers publish progress once per loop turn.
#[derive(Debug, Default)]
pub struct Control {
    pub stop: AtomicBool,
    pub completed: AtomicU64,
    pub failed: AtomicU64,
    /// A run of visits (page views, visit files, `--wsesslog`): the measured visits ended so
    /// far, completed and failed, which its live line counts instead of requests.
    pub visits_completed: AtomicU64,
    pub visits_failed: AtomicU64,
    /// Per-second snapshots for whoever asked for them (`bench --agents`), see [`live`].
    pub live: live::Live,
    /// When the last stop was asked for: a worker notices the stop only on its next turn,
    /// and the arrivals due after this are not a schedule the client failed to keep.
    stopped_at: std::sync::Mutex<Option<std::time::Instant>>,
}

impl Control {
    pub fn request_stop(&self) {
        self.stop_now();
    }

    /// Stops the run now, remembering when; whether a stop had already been asked for. The
    /// first stop is the one remembered: a second Ctrl-C must not move the schedule's end later
    /// and so count the arrivals due between the two as never sent.
    pub fn stop_now(&self) -> bool {
        self.stopped_at
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner)
            .get_or_insert_with(std::time::Instant::now);
        self.stop.swap(true, Ordering::Relaxed)
    }

    /// The end of the schedule a worker that ended at `end_at` had to keep: the instant the
    /// stop was asked for when it was (and came before), else `end_at`.
    pub(crate) fn schedule_end(&self, end_at: std::time::Instant) -> std::time::Instant {
        let asked = *self.stopped_at.lock().unwrap_or_else(std::sync::PoisonError::into_inner);
        match asked.filter(|_| self.stop.load(Ordering::Relaxed)) {
            Some(at) => at.min(end_at),
            None => end_at,
        }
    }
}

/// The pre-flight of every run (`bench`, each `sweep` target, each suite cell): resolves the
/// target and checks once, before any load, that it can be loaded as configured, so that a
/// target that cannot be reached at all is reported at once, as ab and wrk do, instead of as a
/// run made only of failures. In order: a unix socket accepts a connection (the address
/// returned then only stands in for it: there is no name to resolve and no port); else the
/// first resolved address that accepts a TCP connection within the connect timeout; an
/// `https://` target completes one TLS handshake with the run's configuration (a certificate
/// the run cannot trust is one clear error); `--http2` over TCP (h2c with prior knowledge)
/// gets the server's SETTINGS (a server without h2c is one clear error).
pub fn preflight(config: &mut BenchConfig) -> Result<SocketAddr, EngineError> {
    if let Some(path) = &config.unix_socket {
        preflight_unix(path)?;
        return Ok(SocketAddr::from(([127, 0, 0, 1], config.target.port)));
    }
    config.target.resolve()?;
    let addr = preflight_tcp(&config.target, config.connect_timeout)?;
    preflight_tls(config, addr)?;
    preflight_h2c(config, addr)?;
    Ok(addr)
}

/// The first resolved address that accepts a TCP connection within `timeout`.
fn preflight_tcp(target: &Target, timeout: Duration) -> Result<SocketAddr, EngineError> {
    let mut last = None;
    for addr in &target.addrs {
        match TcpStream::connect_timeout(addr, timeout) {
            Ok(_) => return Ok(*addr),
            Err(e) => last = Some((addr, e)),
        }
    }
    // The address is named when it says more than the target: a name's resolved address.
    let at = |addr: &SocketAddr| {
        let shown = addr.to_string();
        if shown == target.authority {
            String::new()
        } else {
            format!("{shown}: ")
        }
    };
    let reason = match last {
        Some((addr, e)) if e.kind() == std::io::ErrorKind::TimedOut => {
            format!("{}no answer within {timeout:?}", at(addr))
        }
        Some((addr, e)) => format!("{}{e}", at(addr)),
        None => "no address to connect to".to_string(),
    };
    Err(EngineError::Unreachable { target: target.authority.clone(), reason })
}

/// For an `https://` target, after [`preflight_tcp`]: one TLS handshake with the run's
/// configuration, so that a certificate the run cannot trust is one clear error.
fn preflight_tls(config: &BenchConfig, addr: SocketAddr) -> Result<(), EngineError> {
    if !config.target.tls {
        return Ok(());
    }
    let unreachable = |reason: String| EngineError::Unreachable {
        target: config.target.authority.clone(),
        reason,
    };
    if config.protocol.is_h3() {
        return preflight_h3(config, addr).map_err(unreachable);
    }
    let h2 = config.protocol.is_h2();
    let tls_config = tls::client_config(&config.tls, h2).map_err(EngineError::Config)?;
    let name = tls::server_name(&config.target.host).map_err(EngineError::Config)?;
    tls::preflight(addr, name, tls_config, config.connect_timeout, h2).map_err(unreachable)
}

/// For `--http3`: the server offers h3 (Alt-Svc in its answer over TCP, RFC 9114 section
/// 3.1.1) and answers a GET over QUIC, with the run's trust; each missing piece is its own
/// reason.
fn preflight_h3(config: &BenchConfig, addr: SocketAddr) -> Result<(), String> {
    let tls = client::Tls::trusting(&config.tls, &config.target.host)?;
    let endpoint = client::Endpoint { addr, tls: Some(tls) };
    h3::get::offered(&endpoint, &config.target.path, config.connect_timeout)
        .map(drop)
        .map_err(|e| e.to_string())
}

/// The run's TLS configuration: ALPN offers what it speaks, h3 over QUIC.
fn run_tls_config(config: &BenchConfig) -> Result<Arc<rustls::ClientConfig>, EngineError> {
    let mut tls =
        tls::client_config(&config.tls, config.protocol.is_h2()).map_err(EngineError::Config)?;
    if config.protocol.is_h3() {
        Arc::make_mut(&mut tls).alpn_protocols = vec![b"h3".to_vec()];
    }
    Ok(tls)
}

/// For `--http2` over TCP (h2c with prior knowledge), after [`preflight_tcp`]: the server answers
/// the HTTP/2 preface with its SETTINGS, so that a server without h2c is one clear error.
fn preflight_h2c(config: &BenchConfig, addr: SocketAddr) -> Result<(), EngineError> {
    if config.target.tls || !config.protocol.is_h2() || config.unix_socket.is_some() {
        return Ok(());
    }
    h2::preflight(addr, config.connect_timeout).map_err(|reason| EngineError::Unreachable {
        target: config.target.authority.clone(),
        reason,
    })
}

/// [`preflight_tcp`] for a unix-domain socket: it exists and accepts a connection.
fn preflight_unix(path: &std::path::Path) -> Result<(), EngineError> {
    std::os::unix::net::UnixStream::connect(path).map(drop).map_err(|e| EngineError::Unreachable {
        target: format!("unix:{}", path.display()),
        reason: e.to_string(),
    })
}

/// Runs the load described by `config` against `addr` and returns the merged result.
///
/// The steps, in order: check the configuration; settle what the run needs before its clock
/// starts (`Setup`); start the clock; create every worker with its share of the load
/// (`plan_workers`); start the path probe and the worker threads; join them all; merge their
/// tallies into the result (`merge`).
pub fn run(
    config: &BenchConfig,
    addr: SocketAddr,
    control: Arc<Control>,
) -> Result<BenchResult, EngineError> {
    config.check()?;
    let setup = Setup::new(config, addr)?;
    let (clock, start_late) = Clock::start(config);
    let workers = plan_workers(config, addr, &setup, &clock, &control)?;
    let path_probe =
        setup.idle_rtt.clone().map(|idle| probe::Probe::start(addr, clock.measure_start, idle));
    // The client's cgroup quota counters, read around the run as the workers read their CPU
    // account (a quota throttles the whole cgroup, so one reading serves every worker; the
    // window includes a warm-up, which a quota throttles the same way).
    let cgroup_start = cgroup::CgroupCpu::now();
    let handles = match spawn_workers(workers, &control) {
        Ok(handles) => handles,
        Err(e) => {
            drop(path_probe.map(probe::Probe::finish));
            return Err(e);
        }
    };
    // Every worker is joined before any of them is reported as failed, so none outlives the
    // run.
    let joined: Vec<_> = handles.into_iter().map(JoinHandle::join).collect();
    let path = path_probe.map(probe::Probe::finish).unwrap_or_default();
    let cgroup_throttle = cgroup::CgroupCpu::now().throttled_since(&cgroup_start);
    let reports = worker_reports(joined)?;
    let mut result = merge(config, &control, setup, &clock, reports, path, cgroup_throttle);
    result.start_late = start_late;
    Ok(result)
}

/// What a run settles before its clock starts, in this order.
struct Setup {
    /// Every request the run sends, encoded once.
    table: Arc<table::Table>,
    /// The soft open-file limit, raised to the hard one where the kernel allows.
    fd_limit: u64,
    /// One TLS configuration for the run, so that its connections share the session cache,
    /// and the server's name.
    tls: Option<(Arc<rustls::ClientConfig>, rustls::pki_types::ServerName<'static>)>,
    cpus_available: usize,
    /// Which interface the traffic takes and how fast it is: looked up once, before any load.
    link: Link,
    /// The path's RTT with empty queues, measured before any load (and before the clock
    /// starts, so that a slow path does not make the schedule late), or why there is none; the
    /// probe thread then samples it under load. `None` on loopback, which has no link whose
    /// queue could pace a run: it is not probed, and the server sees only the run's own
    /// connections.
    idle_rtt: Option<Result<u32, probe::NoIdleRtt>>,
    /// When scheduled sends go out against their due times: automatic grouping measures the
    /// wake-up cost here, before the clock starts, so the calibration's few milliseconds
    /// delay no arrival.
    sends: Sends,
}

impl Setup {
    fn new(config: &BenchConfig, addr: SocketAddr) -> Result<Setup, EngineError> {
        let table = Arc::new(config.table()?);
        let (fd_limit, _) = sys::raise_fd_limit();
        let tls = match config.target.tls {
            true => Some((
                run_tls_config(config)?,
                tls::server_name(&config.target.host).map_err(EngineError::Config)?,
            )),
            false => None,
        };
        let cpus_available = sys::allowed_cpus().len();
        let link = match &config.unix_socket {
            Some(_) => Link::unix(),
            None => Link::of(addr, config.source_ips.first().copied()),
        };
        let idle_rtt = (!link.is_loopback()).then(|| probe::idle_rtt(addr));
        let sends = match (config.pacing.rate(), &config.visits) {
            // Visitors' calls are timed by their visits, not grouped (see `worker::visits`).
            (Some(_), None) => {
                let (unix, tls) = (config.unix_socket.is_some(), config.target.tls);
                let sleeps = worker::stamped(config.pacing, unix, tls, config.protocol);
                config.coalesce.settle(&mut timer::Calibration { sleeps })
            }
            _ => Sends::Exact,
        };
        Ok(Setup { table, fd_limit, tls, cpus_available, link, idle_rtt, sends })
    }
}

/// The run's clock, common to all workers.
struct Clock {
    /// When the run started (the schedule's origin), by the monotonic and the wall clock.
    start: Instant,
    wall_start: std::time::SystemTime,
    /// When measuring starts, after the warm-up.
    measure_start: Instant,
    /// When a timed run ends; `None` for a counted one.
    end: Option<Instant>,
}

impl Clock {
    /// Starts now, or at `config.start_at` (see [`start`]); returns the clock and how late
    /// the start was.
    fn start(config: &BenchConfig) -> (Clock, Duration) {
        let started = config.start_at.map_or_else(start::now, start::at);
        let (start, wall_start) = (started.origin, started.wall);
        let measure_start = start + config.warmup;
        // A counted run ends when its count is done, or under a shape (counted visits) at the
        // shape's end if that comes first.
        let end = match config.stop {
            Stop::Duration(d) => Some(measure_start + d),
            Stop::Count(_) => config.shape.as_ref().map(|s| measure_start + s.duration()),
        };
        (Clock { start, wall_start, measure_start, end }, started.late)
    }
}

/// Every worker of the run, each with its share of the connections, of the budget and of the
/// schedule.
///
/// Every worker's event loop is created before any worker starts: a running worker opens its
/// connections at once, and under a tight open-file limit they would take the descriptors
/// that the next worker's epoll instance needs.
fn plan_workers(
    config: &BenchConfig,
    addr: SocketAddr,
    setup: &Setup,
    clock: &Clock,
    control: &Arc<Control>,
) -> Result<Vec<Job>, EngineError> {
    let threads = config.threads;
    let pool = config.pool();
    // A replay's lines are its budget: each worker sends its own share of them (`-n` cuts the
    // log), so no worker can run short while another holds what it needs.
    let budget_stop = match &config.traffic {
        Traffic::Replay(_) => Stop::Duration(Duration::ZERO),
        _ => config.stop,
    };
    let budgets = pacing::Budget::split(budget_stop, threads, pool * config.protocol.streams());
    let mut workers = Vec::with_capacity(threads);
    for (i, budget) in budgets.into_iter().enumerate() {
        // Connections spread evenly; the first `connections % threads` workers take one more.
        // Closed-loop stages: the worker's part of the agent's part of the peak, as of every
        // level (`spec::Levels`: each a `Share::part`, so agents and workers add up).
        let connections = match (&config.shape, config.pacing) {
            (Some(shape), Pacing::Closed) => {
                let peak = config.share.part(shape.peak().floor() as u64);
                Share::new(i, threads).part(peak) as usize
            }
            _ => pool / threads + usize::from(i < pool % threads),
        };
        let mut spec = worker_spec(config, addr, setup, clock, i, connections)?;
        // Live listeners read each second's latency from the interval histograms; the run's
        // result keeps them (its interval log) only when the configuration asks.
        spec.live_intervals = control.live.enabled();
        let schedule = worker_schedule(config, clock, i);
        let creating =
            |source| EngineError::Io { context: "creating a worker's event loop", source };
        // Visits are a source of the worker's requests (see `visits`); their arrivals are a
        // schedule.
        let visits = match &config.visits {
            Some(plan) => {
                let stream = config.share.stream(i, config.threads);
                Some(worker::Visits::new(plan.clone(), stream, config.seed).map_err(creating)?)
            }
            None => None,
        };
        let w = worker::Worker::new(spec, budget, schedule, visits, control.clone(), i)
            .map_err(creating)?;
        let job: Job = Box::new(move || w.run());
        workers.push(job);
    }
    Ok(workers)
}

/// What worker `i` of the run needs to know, fixed for the run.
fn worker_spec(
    config: &BenchConfig,
    addr: SocketAddr,
    setup: &Setup,
    clock: &Clock,
    i: usize,
    connections: usize,
) -> Result<spec::WorkerSpec, EngineError> {
    Ok(spec::WorkerSpec {
        addr,
        table: setup.table.clone(),
        picker: {
            let (stream, streams) = config.share.stream(i, config.threads);
            mix::Picker::new(&config.traffic, stream, streams, config.seed)?
        },
        tallied: config.traffic.tallied(),
        hdr_log: config.keeps_intervals(),
        live_intervals: false,
        keepalive: config.keepalive,
        pacing: config.pacing,
        protocol: config.protocol,
        connections,
        levels: match (&config.shape, config.pacing) {
            (Some(shape), Pacing::Closed) => Some(spec::Levels {
                shape: shape.clone(),
                agent: config.share,
                worker: Share::new(i, config.threads),
            }),
            _ => None,
        },
        timeout: config.timeout,
        connect_timeout: config.connect_timeout,
        validation: config.validation.clone(),
        limits: config.limits,
        pin: (!config.pin.is_empty()).then(|| config.pin[i % config.pin.len()]),
        source_ips: config.source_ips.clone(),
        sends: setup.sends,
        unix: config.unix_socket.clone(),
        tls: setup.tls.clone(),
        measure_start: clock.measure_start,
        end: clock.end,
    })
}

/// Worker `i`'s share of the open loop's or the sessions' schedule (`None` in the closed
/// loop). Warm-up arrivals come first, on the same schedule, so the measured window starts
/// with the pool already grown; a replay's lines are dealt out the same way, `-n` replaying
/// only the first N.
fn worker_schedule(config: &BenchConfig, clock: &Clock, i: usize) -> Option<schedule::Schedule> {
    let rate = config.pacing.rate()?;
    let arrival = match config.pacing {
        Pacing::Open { arrival, .. } | Pacing::Sessions { arrival, .. } => arrival,
        Pacing::Closed => Arrival::Fixed,
    };
    // Worker i as one stream of the global schedule: on a single host stream i of the threads,
    // as agent I of N stream I + N i of N x threads (see `Share::stream`).
    let (i, threads) = config.share.stream(i, config.threads);
    let mut s = schedule::Schedule::new(rate, arrival, clock.start, i, threads, config.seed);
    if let Some(shape) = &config.shape {
        s = s.shaped(shape.clone(), i, threads);
    }
    match &config.traffic {
        Traffic::Replay(r) => {
            let replayed = match config.stop {
                Stop::Count(n) => usize::try_from(n).unwrap_or(usize::MAX),
                Stop::Duration(_) => usize::MAX,
            };
            Some(s.replaying(r.clone(), i, threads, replayed))
        }
        _ => Some(s),
    }
}

type WorkerHandle = JoinHandle<std::io::Result<result::WorkerReport>>;

/// One worker's event loop, ready to run on its thread, with the request loop's load or the
/// visits'.
type Job = Box<dyn FnOnce() -> std::io::Result<result::WorkerReport> + Send>;

/// Starts one thread per worker. If one cannot start, the workers already running are stopped
/// and joined before the error is returned, so none outlives the run.
fn spawn_workers(workers: Vec<Job>, control: &Control) -> Result<Vec<WorkerHandle>, EngineError> {
    let mut handles = Vec::with_capacity(workers.len());
    for (i, worker) in workers.into_iter().enumerate() {
        match std::thread::Builder::new().name(format!("loadlab-w{i}")).spawn(worker) {
            Ok(handle) => handles.push(handle),
            Err(source) => {
                control.request_stop();
                for h in handles {
                    let _ = h.join();
                }
                return Err(EngineError::Io { context: "starting a worker thread", source });
            }
        }
    }
    Ok(handles)
}

/// The joined workers' reports, or the first worker's failure (a panic, or an error of its
/// event loop).
fn worker_reports(
    joined: Vec<std::thread::Result<std::io::Result<result::WorkerReport>>>,
) -> Result<Vec<result::WorkerReport>, EngineError> {
    let mut reports = Vec::with_capacity(joined.len());
    for (i, report) in joined.into_iter().enumerate() {
        let report = report
            .map_err(|_| EngineError::WorkerPanicked(i))?
            .map_err(|source| EngineError::Io { context: "polling for events", source })?;
        reports.push(report);
    }
    Ok(reports)
}

/// The workers' reports merged into the run's result: histograms bucket by bucket, counters
/// by addition, the server and the TLS parameters as the first worker to see them saw them.
fn merge(
    config: &BenchConfig,
    control: &Control,
    setup: Setup,
    clock: &Clock,
    mut reports: Vec<result::WorkerReport>,
    path: PathRtt,
    cgroup_throttle: Option<cgroup::CgroupThrottle>,
) -> BenchResult {
    let interrupted = control.stop.load(Ordering::Relaxed);
    // Taken out of the reports before their tallies merge.
    let hdr_log = config.keeps_intervals().then(|| hdr_log(&mut reports, config, clock.wall_start));
    let mut tally = Tally::default();
    let mut server = None;
    let mut tls = None;
    for r in &reports {
        tally.merge(&r.tally);
        if server.is_none() {
            server.clone_from(&r.server);
        }
        if tls.is_none() {
            tls.clone_from(&r.negotiated);
        }
    }
    let bytes_sent = tally.bytes_sent;
    BenchResult {
        tally,
        bytes_sent,
        duration: measured_duration(config, &reports, interrupted),
        interrupted,
        workers: reports
            .iter()
            .map(|r| WorkerSummary {
                cpu: r.cpu,
                cpu_wait: r.cpu_wait,
                involuntary_switches: r.involuntary_switches,
                wall: r.wall,
            })
            .collect(),
        server,
        tls,
        cpus_available: setup.cpus_available,
        peak_open: reports.iter().map(|r| r.peak_open).sum(),
        pool: config.pool(),
        fd_limit: setup.fd_limit,
        pacing: config.pacing,
        protocol: config.protocol,
        link: setup.link,
        path,
        cgroup_throttle,
        hdr_log,
        start_late: Duration::ZERO,
        sends: config.pacing.rate().map(|_| setup.sends),
    }
}

/// How long the run measured: a timed run's duration, unless it was interrupted; otherwise
/// until its last worker ended.
fn measured_duration(
    config: &BenchConfig,
    reports: &[result::WorkerReport],
    interrupted: bool,
) -> Duration {
    if let Stop::Duration(d) = config.stop {
        if !interrupted {
            return d;
        }
    }
    let last = reports.iter().map(|r| r.wall).max().unwrap_or_default();
    // A counted schedule ends when its first arrival left out was due, whichever worker held
    // it: 200 arrivals at 200/s span one second, not the 0.995 s between the first and the
    // last, and one request at 10/s is not 400 req/s.
    match reports.iter().filter_map(|r| r.schedule_end).min() {
        Some(due) => last.max(due),
        None => last,
    }
}

/// The workers' per-second histograms, taken out of their reports for the interval log; its
/// start is when measuring began, by the wall clock.
fn hdr_log(
    reports: &mut [result::WorkerReport],
    config: &BenchConfig,
    wall_start: std::time::SystemTime,
) -> HdrLog {
    use loadlab_stats::interval_log::Tagged;
    let scheduled = config.pacing != Pacing::Closed;
    let mut latency = Tagged { tag: scheduled.then_some("corrected"), workers: Vec::new() };
    let mut service = Tagged { tag: Some("uncorrected"), workers: Vec::new() };
    for r in reports.iter_mut() {
        if let Some(i) = r.tally.intervals.take() {
            let i = *i;
            latency.workers.push(i.latency.finish());
            if let Some(s) = i.service {
                service.workers.push(s.finish());
            }
        }
    }
    let mut latencies = vec![latency];
    if scheduled {
        latencies.push(service);
    }
    HdrLog { start: wall_start + config.warmup, latencies }
}
