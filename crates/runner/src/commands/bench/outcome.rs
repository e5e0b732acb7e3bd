//! The outcome of one `bench` run, [`Report`]: every figure the outputs print, computed once
//! from the engine's result, its distributions kept whole, with the trust warnings that belong
//! beside them. The JSON output is this struct serialized; every other format reads from it
//! alone, and a lab cell's record is made from it, so that none can disagree.

use std::collections::BTreeMap;

use crate::judge::limit::{self, LimitedBy};
use crate::judge::slo::SloVerdict;
use crate::{Flag, Verdict};
use loadlab_engine::result::per_second;
use loadlab_engine::{Arrival, BenchConfig, BenchResult, ErrorClass, Pacing, Protocol};
use loadlab_engine::{Sends, Stop};
use loadlab_stats::{Moments, RecorderSummary};
use loadlab_store::Histograms;
use serde::Serialize;

#[derive(Debug, Serialize)]
pub struct Report {
    pub loadlab_version: &'static str,
    /// The load model: `closed` (ab, wrk), `open` (wrk2: --rate) or `sessions` (httperf:
    /// --conn-rate).
    pub mode: &'static str,
    /// The HTTP version spoken: `http/1.1`, or `h2` (`--http2`: chosen by ALPN over TLS, by
    /// prior knowledge over TCP; every connection checks it).
    pub protocol: &'static str,
    pub config: ConfigEcho,
    pub interrupted: bool,
    pub duration_s: f64,
    pub requests: Requests,
    pub rps: f64,
    /// Failures by class; every class present, zeroes included.
    pub errors: BTreeMap<&'static str, u64>,
    /// errno -> count for failures of class `other`.
    pub errors_other_errno: BTreeMap<String, u64>,
    /// For `tls` failures: each reason (the alert, or why the certificate was refused) and its
    /// count.
    pub errors_tls: BTreeMap<String, u64>,
    /// For `h2_stream` and `h2_conn` failures: each reason (what happened, with the error code
    /// the server sent) and its count.
    pub errors_h2: BTreeMap<String, u64>,
    /// Responses by exact status code.
    pub status: BTreeMap<String, u64>,
    /// Responses by status class (`1xx` .. `5xx`).
    pub status_class: BTreeMap<&'static str, u64>,
    pub bytes: Bytes,
    pub body_length: BodyLength,
    pub server: Server,
    /// `https://`: what the handshake settled on (version, cipher, group, alpn); null for
    /// `http://`.
    pub tls: Option<loadlab_engine::Negotiated>,
    /// Time per completed request. Closed loop: from its start to its last byte. Open loop and
    /// sessions: from when it was due (corrected for coordinated omission).
    pub latency_us: RecorderSummary,
    /// Open loop and sessions: from when each request was actually started (the uncorrected
    /// service time); null in the closed loop, where it equals `latency_us`.
    pub service_time_us: Option<RecorderSummary>,
    /// Open loop and sessions: offered against achieved rate; null in the closed loop.
    pub rate: Option<Rate>,
    pub connections: Connections,
    /// ab's breakdown: connect, waiting (time to first byte), processing, total.
    pub timings_us: TimingsUs,
    /// The distributions the summaries above are of, whole, as the store keeps them: for the
    /// layouts that read a whole distribution (ab's percentile table, the latency spectrum).
    #[serde(skip)]
    pub histograms: Histograms,
    pub throughput: Throughput,
    pub client: Client,
    /// What limited the throughput, decided once by [`limit::of_bench`] from the verdict
    /// (without samples of the server, which a bench does not take): the client, the network,
    /// the offered load, or not determined; stored and shown in the shape of a lab cell's.
    pub limited_by: LimitedBy,
    /// Reasons a figure above should not be taken at face value; empty when none.
    pub warnings: Vec<String>,
    /// Responses that were not 2xx, and whether the verdict marks the throughput for them
    /// (`non_2xx`: counted as completed, no --expect-status); for the text and CSV layouts.
    #[serde(skip)]
    pub not_2xx: (u64, bool),
    /// Of those, the answers a visit's step asked for by its status check (a login's 302),
    /// which are no error to an SLO; kept with a lab cell.
    #[serde(skip)]
    pub not_2xx_asked: u64,
    /// Facts worth knowing that do not weaken any figure (such as a varying body length).
    pub notes: Vec<String>,
    /// `--slo`: each threshold's figure and outcome, and the gate's verdict; null without it.
    pub slo: Option<SloVerdict>,
    /// `--urls`: each request of the list with its own figures, in the file's order; null
    /// without a list.
    pub urls: Option<Vec<super::traffic::UrlFigures>>,
    /// `--replay`, `--timing-script`: what was read, replayed and skipped; null otherwise.
    pub replay: Option<super::traffic::ReplayEcho>,
    /// `--wsesslog`: the visits' own figures (the requests' stay above); absent otherwise.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub sessions: Option<super::sessions::Sessions>,
    /// `--view`: the page views' figures and what each fetched (absent otherwise).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub views: Option<super::views::Views>,
    /// `--visits`: the visits of a visit file, step by step; absent otherwise.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub visits: Option<super::sessions::Visits>,
    /// `--agents N`: one row per agent (on agent 0's merged report only; absent otherwise).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub agents: Option<Vec<crate::hosts::across::AgentRow>>,
    /// `--agents N`: the agent lost, if one was, and when (absent otherwise).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub agent_lost: Option<crate::hosts::across::AgentLost>,
    /// `--agents N`: an agent was lost; its measurements until then are in the figures, and
    /// this says what the test is short of (absent otherwise).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub partial: Option<crate::hosts::across::Partial>,
    /// `--agents N` on any agent but agent 0: this report is that agent's share of the test
    /// (its `rate.offered_rps` its share of the schedule), beside the whole test's offered
    /// rate; agent 0 reports the whole (absent otherwise).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub share: Option<crate::hosts::across::OwnShare>,
    /// `--agents N`: the largest start skew, an upper bound, microseconds (absent otherwise).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub start_skew_us: Option<f64>,
    /// A rate that changes over time (a ramp, stages): the figures of every measured second,
    /// each with its own flags (absent otherwise).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub seconds: Option<Vec<crate::judge::seconds::Second>>,
    /// `--profile`: the lab instance's tiers' stacks over the measured span (the outputs
    /// render each tier's top functions; absent otherwise).
    #[serde(skip)]
    pub profiles: Option<super::profiled::BenchProfiles>,
}

#[derive(Debug, Serialize)]
pub struct ConfigEcho {
    pub url: String,
    pub address: String,
    pub method: String,
    /// Closed loop: the connections; otherwise the most that may be opened.
    pub connections: usize,
    /// `--http2`.
    pub http2: bool,
    /// `--streams`: requests in flight on each connection at most (1 for HTTP/1.1).
    pub streams: usize,
    /// Open loop: requests per second; sessions: connections per second.
    pub rate: Option<f64>,
    pub calls_per_connection: Option<u32>,
    /// `fixed` or `poisson`; null in the closed loop.
    pub arrival: Option<&'static str>,
    pub source_ips: Vec<String>,
    pub threads: usize,
    pub pin: Vec<usize>,
    /// `-n`, or null for a timed run or sessions.
    pub requests: Option<u64>,
    /// Sessions: `--conns` (connections to make), or null.
    pub conns: Option<u64>,
    /// The seed of Poisson arrivals, so a run can be repeated exactly.
    pub seed: u64,
    /// `-d` in seconds, or null for a counted run.
    pub duration_s: Option<f64>,
    pub keepalive: bool,
    pub timeout_s: f64,
    pub connect_timeout_s: f64,
    pub warmup_s: f64,
    /// `--coalesce`: the grid send wake-ups fall on, in microseconds (0: none).
    pub coalesce_us: u64,
    pub headers: Vec<String>,
    pub body_bytes: usize,
    pub expect_status: Vec<String>,
    pub expect_body_sha256: Option<String>,
    pub expect_contains: Option<String>,
    /// `--urls`: the list's file, or null.
    pub urls: Option<String>,
    /// `--urls-order`: `weighted` or `sequential`; null without a list.
    pub urls_order: Option<&'static str>,
    /// `--hdr-log`: whether the interval log was asked for (a shape keeps per-second
    /// histograms for its own rows without it).
    pub hdr_log: bool,
    /// A load that changes over time (`--rate A..B`, `--stages`, `-c A..B`, `--conn-rate
    /// A..B`) as `--stages` spells it (`4s:100..1000`); null for a fixed level.
    pub shape: Option<String>,
}

#[derive(Debug, Serialize)]
pub struct Rate {
    /// Requests per second the schedule offered (sessions: connections/s x calls).
    pub offered_rps: f64,
    /// Requests completed per second.
    pub achieved_rps: f64,
    /// Requests sent per second.
    pub sent_rps: f64,
    /// How late requests were sent after their due time, in microseconds.
    pub late_p50_us: u64,
    pub late_p99_us: u64,
    pub late_max_us: u64,
    /// Requests due in the measured window that were never sent (sessions: sessions never
    /// started, times their calls).
    pub not_sent: u64,
    /// Whether the schedule was kept: nothing left unsent, 99% sent within 1 ms of due.
    pub schedule_kept: bool,
    /// How sends went out against their due times: `grouped` (the default: those within the
    /// wake-up cost measured at start either side of a wake-up went together), `exact`
    /// (`--coalesce 0`) or `grid` (`--coalesce D`).
    pub sends: &'static str,
    /// How far off its due time a send could go by that choice, in microseconds: the
    /// measured wake-up cost (late or early), the grid's step (late), 0 for exact sends.
    pub send_window_us: u64,
}

#[derive(Debug, Serialize)]
pub struct Connections {
    pub opened: u64,
    /// Connections open at once, at most.
    pub peak: usize,
    /// Connections allowed: -c in the closed loop, --max-connections otherwise.
    pub limit: usize,
    /// Lifetimes of connections closed during the run (connect to close).
    pub lifetime_us: RecorderSummary,
    /// Replies per closed connection, on average (httperf's connection length).
    pub replies_per_connection: Option<f64>,
    /// Connections opened per second.
    pub rate_per_s: f64,
    /// https:// (or a page view's `https` origin): new connections whose TLS handshake
    /// resumed a session (of `timings_us.tls.count`); null for http://.
    pub tls_resumed: Option<u64>,
}

#[derive(Debug, Serialize)]
pub struct Requests {
    pub completed: u64,
    pub failed: u64,
    /// Requests in flight when a timed or interrupted run ended: neither completed nor failed.
    pub unfinished: u64,
    /// Requests whose last byte was written (a connect that failed sent none).
    pub sent: u64,
    /// Completed responses after which the connection stayed open (ab's Keep-Alive requests).
    pub keepalive: u64,
    pub connections_opened: u64,
}

#[derive(Debug, Serialize)]
pub struct Bytes {
    /// Every byte received: heads, bodies, chunk framing.
    pub total: u64,
    /// Body bytes after chunked decoding.
    pub body: u64,
    /// Request bytes written, head and body: the encoded request's length x `requests.sent`
    /// (ab's "Total body sent" when there is a body).
    pub sent: u64,
    pub total_per_s: f64,
}

#[derive(Debug, Serialize)]
pub struct BodyLength {
    pub first: Option<u64>,
    pub min: Option<u64>,
    pub max: Option<u64>,
    pub varied: bool,
}

#[derive(Debug, Serialize)]
pub struct Server {
    /// The Server header of the first response.
    pub software: Option<String>,
    pub host: String,
    pub port: u16,
    pub path: String,
}

#[derive(Debug, Serialize)]
pub struct TimingsUs {
    pub connect: RecorderSummary,
    /// https://: TLS handshakes, from the TCP connection to the handshake's end, one per new
    /// connection; null for http://.
    pub tls: Option<RecorderSummary>,
    pub waiting: RecorderSummary,
    pub processing: RecorderSummary,
    pub total: RecorderSummary,
}

#[derive(Debug, Serialize)]
pub struct Throughput {
    /// Completed requests per whole second of the run: min, mean, max, stdev (httperf's
    /// reply rate); null when the run lasted less than a second.
    pub per_second: Option<Moments>,
    /// Completed, failed and bytes for each second of the run.
    pub series: Vec<loadlab_stats::Bucket>,
}

/// What the path probe saw: handshake RTTs before and during the load.
#[derive(Debug, Serialize)]
pub struct Path {
    /// The smallest handshake RTT before the load (µs); null when none was answered.
    pub idle_rtt_us: Option<u32>,
    /// The median and largest handshake RTT of the probes during the measured window (µs).
    pub load_rtt_median_us: Option<u32>,
    pub load_rtt_max_us: Option<u32>,
    /// Probes made during the window, and those the target did not answer within 1 s.
    pub probes: usize,
    pub unanswered: u32,
    /// What the busier direction carried, in Mbit/s (payload, not framing).
    pub achieved_mbps: f64,
}

impl Path {
    fn of(r: &loadlab_engine::BenchResult) -> Path {
        let p = &r.path;
        Path {
            idle_rtt_us: p.idle_us,
            load_rtt_median_us: p.median_under_load_us(),
            load_rtt_max_us: p.under_load_us.iter().copied().max(),
            probes: p.under_load_us.len() + p.unanswered as usize,
            unanswered: p.unanswered,
            achieved_mbps: r.achieved_mbps(),
        }
    }
}

#[derive(Debug, Serialize)]
pub struct Client {
    pub cpu_user_s: f64,
    pub cpu_sys_s: f64,
    pub cpu_us_per_request: Option<f64>,
    /// CPU used over CPU available to the client's workers.
    pub cpu_busy: f64,
    /// The busiest worker's CPU use over its time.
    pub max_worker_busy: f64,
    /// True when the client used over 90% of the CPU it had: the server may be faster.
    pub saturated: bool,
    /// Seconds the client's workers were runnable but waited for a CPU (summed over workers).
    pub cpu_wait_s: f64,
    /// The share of its window that the worker which waited most spent waiting for a CPU.
    pub max_worker_waiting: f64,
    /// Times the workers were preempted.
    pub involuntary_switches: u64,
    /// The path's handshake RTT idle and under load (docs/trust.md, network_bound).
    pub path: Path,
    /// True when the client waited for a CPU so much that the rate is the client's: other
    /// work held its CPUs. See docs/trust.md.
    pub starved: bool,
    pub threads: usize,
    pub cpus_available: usize,
    /// Connections open at once, at most (asked: `config.connections`).
    pub peak_connections: usize,
    pub fd_limit: u64,
    /// The local interface the traffic crossed, and its speed.
    pub link: Link,
    /// True when the busier direction used at least 90% of the link's speed: the network, not
    /// the server, may have limited throughput. Always false when the speed is unknown.
    pub network_bound: bool,
}

#[derive(Debug, Serialize)]
pub struct Link {
    /// `lo`, `eth0`...; null when it could not be found.
    pub interface: Option<String>,
    /// Mbit/s as the kernel reports it; null when unknown (loopback, virtual devices).
    pub speed_mbps: Option<u64>,
    /// The share of the link's capacity the busier direction used (framing included); not
    /// serialized: the warning carries it.
    #[serde(skip)]
    pub utilisation: Option<f64>,
}

impl Link {
    pub fn of(r: &BenchResult) -> Link {
        Link {
            interface: r.link.interface.clone(),
            speed_mbps: r.link.speed_mbps,
            utilisation: r.link_utilisation(),
        }
    }

    /// How the text output names the link: `eth0 (100 Mbit/s)`, `lo (speed unknown)`.
    pub fn describe(&self) -> String {
        crate::judge::trust::describe_link(self.interface.as_deref(), self.speed_mbps)
    }
}

impl Bytes {
    fn of(r: &BenchResult) -> Bytes {
        let t = &r.tally;
        Bytes {
            total: t.bytes_total,
            body: t.bytes_body,
            sent: r.bytes_sent,
            total_per_s: per_second(t.bytes_total as f64, r.duration),
        }
    }
}

impl Report {
    /// The report of `r`, measured with `cfg` against `address`, judged here.
    pub fn new(cfg: &BenchConfig, address: std::net::SocketAddr, r: &BenchResult) -> Report {
        Report::judged(cfg, address, r, &Verdict::judge(cfg, r))
    }

    /// The report of `r` with `verdict`, the judgement already made of it.
    pub fn judged(
        cfg: &BenchConfig,
        address: std::net::SocketAddr,
        r: &BenchResult,
        verdict: &Verdict,
    ) -> Report {
        let t = &r.tally;
        let errors = ErrorClass::ALL.iter().map(|c| (c.name(), t.errors.get(*c))).collect();
        let classes = loadlab_store::metric::STATUS_CLASSES.into_iter().zip(t.status_classes());
        let status_class: BTreeMap<_, _> = classes.collect();
        let scheduled = cfg.pacing != Pacing::Closed;
        let (latency, service) = if scheduled {
            (t.timings.corrected.summary(), Some(t.timings.total.summary()))
        } else {
            (t.timings.total.summary(), None)
        };
        let rate = Rate::of(r, verdict);
        let mut report = Report {
            loadlab_version: env!("CARGO_PKG_VERSION"),
            mode: mode(&cfg.pacing),
            protocol: protocol(&r.protocol),
            config: ConfigEcho::new(cfg, address),
            interrupted: r.interrupted,
            duration_s: r.duration.as_secs_f64(),
            requests: Requests::of(t),
            rps: r.rps(),
            errors,
            errors_other_errno: t
                .errors
                .other_errno
                .iter()
                .map(|(e, n)| (e.to_string(), *n))
                .collect(),
            errors_tls: t.errors.tls_reasons.clone(),
            errors_h2: t.errors.h2_reasons.clone(),
            status: t.status_counts().into_iter().map(|(c, n)| (c.to_string(), n)).collect(),
            status_class,
            bytes: Bytes::of(r),
            body_length: BodyLength::of(t),
            server: Server::of(cfg, r),
            tls: r.tls.clone(),
            latency_us: latency,
            service_time_us: service,
            rate,
            connections: Connections::of(cfg, r),
            timings_us: TimingsUs::of(cfg, t),
            histograms: histograms(cfg, r),
            throughput: Throughput {
                per_second: Moments::of(&r.per_second_completed()),
                series: t.series.buckets().to_vec(),
            },
            client: Client::of(r, verdict),
            limited_by: limit::of_bench(r, verdict),
            warnings: verdict.warnings(),
            not_2xx: (crate::judge::trust::not_2xx(t), verdict.has(Flag::Non2xx)),
            not_2xx_asked: crate::judge::trust::not_2xx(t)
                - crate::judge::trust::unasked_not_2xx(t),
            notes: verdict.notes.clone(),
            slo: None,
            urls: super::traffic::urls(cfg, r),
            replay: super::traffic::replay(cfg),
            sessions: super::sessions::Sessions::of(r),
            views: super::views::Views::of(cfg, r),
            visits: super::sessions::Visits::of(cfg, r),
            agents: None,
            agent_lost: None,
            partial: None,
            share: None,
            start_skew_us: None,
            seconds: cfg.shape.is_some().then(|| crate::judge::seconds::of(cfg, r)),
            profiles: None,
        };
        // Lines of a log that were not replayed are said beside the figures, never dropped.
        let skipped = report.replay.as_ref().and_then(|r| r.skipped_sentence());
        report.notes.extend(skipped);
        report
    }

    /// True when nothing reached the server: every request failed before a connection existed,
    /// and not because the client ran out of descriptors (its own limit, flagged as such).
    pub fn target_unreachable(&self) -> bool {
        self.requests.completed == 0
            && self.requests.failed > 0
            && self.errors[ErrorClass::FdUnavail.name()] == 0
            && ErrorClass::ALL
                .iter()
                .filter(|c| !c.is_connect_phase())
                .all(|c| self.errors[c.name()] == 0)
    }
}

impl ConfigEcho {
    fn new(cfg: &BenchConfig, address: std::net::SocketAddr) -> ConfigEcho {
        let v = &cfg.validation;
        ConfigEcho {
            url: cfg.target.url.clone(),
            address: match &cfg.unix_socket {
                Some(path) => format!("unix:{}", path.display()),
                None => address.to_string(),
            },
            method: cfg.request.method.clone(),
            connections: match cfg.pacing {
                Pacing::Closed => cfg.connections,
                Pacing::Open { max_connections, .. } | Pacing::Sessions { max_connections, .. } => {
                    max_connections
                }
            },
            http2: cfg.protocol.is_h2(),
            streams: cfg.protocol.streams(),
            rate: cfg.pacing.rate(),
            calls_per_connection: match cfg.pacing {
                Pacing::Sessions { calls, .. } => Some(calls),
                _ => None,
            },
            arrival: match cfg.pacing {
                Pacing::Open { arrival, .. } | Pacing::Sessions { arrival, .. } => {
                    Some(match arrival {
                        Arrival::Fixed => "fixed",
                        Arrival::Poisson => "poisson",
                        Arrival::Log => "log",
                    })
                }
                Pacing::Closed => None,
            },
            source_ips: cfg.source_ips.iter().map(|ip| ip.to_string()).collect(),
            threads: cfg.threads,
            pin: cfg.pin.clone(),
            requests: match (cfg.stop, cfg.pacing) {
                (Stop::Count(_), Pacing::Sessions { .. }) | (Stop::Duration(_), _) => None,
                (Stop::Count(n), _) => Some(n),
            },
            conns: match (cfg.stop, cfg.pacing) {
                (Stop::Count(n), Pacing::Sessions { .. }) => Some(n),
                _ => None,
            },
            seed: cfg.seed,
            duration_s: match cfg.stop {
                Stop::Duration(d) => Some(d.as_secs_f64()),
                Stop::Count(_) => None,
            },
            keepalive: cfg.keepalive,
            timeout_s: cfg.timeout.as_secs_f64(),
            connect_timeout_s: cfg.connect_timeout.as_secs_f64(),
            warmup_s: cfg.warmup.as_secs_f64(),
            coalesce_us: cfg.coalesce.grid().map_or(0, |step| step.as_micros() as u64),
            headers: cfg.request.headers.iter().map(|(n, v)| format!("{n}: {v}")).collect(),
            body_bytes: cfg.request.body.len(),
            expect_status: expect_status(v),
            expect_body_sha256: v
                .body_sha256
                .map(|h| h.iter().map(|b| format!("{b:02x}")).collect()),
            expect_contains: v
                .body_contains
                .as_ref()
                .map(|c| String::from_utf8_lossy(c).into_owned()),
            urls: match &cfg.traffic {
                loadlab_engine::Traffic::Mix(m) => Some(m.file.clone()),
                _ => None,
            },
            urls_order: match &cfg.traffic {
                loadlab_engine::Traffic::Mix(m) => Some(match m.order {
                    loadlab_engine::Order::Weighted => "weighted",
                    loadlab_engine::Order::Sequential => "sequential",
                }),
                _ => None,
            },
            hdr_log: cfg.hdr_log,
            shape: cfg.shape.as_ref().map(|shape| shape.to_string()),
        }
    }
}

impl Rate {
    /// Open loop and sessions: offered against achieved, and how late the sends were.
    fn of(r: &BenchResult, verdict: &Verdict) -> Option<Rate> {
        let t = &r.tally;
        r.offered_rps().map(|offered| Rate {
            offered_rps: offered,
            achieved_rps: r.rps(),
            sent_rps: per_second(t.sent as f64, r.duration),
            late_p50_us: t.timings.late.percentile(50.0),
            late_p99_us: t.timings.late.percentile(99.0),
            late_max_us: t.timings.late.max(),
            not_sent: r.not_sent_requests(),
            schedule_kept: !verdict.has(Flag::ScheduleMissed),
            sends: r.sends.unwrap_or(Sends::Exact).name(),
            send_window_us: r.sends.map_or(0, |s| s.window().as_micros() as u64),
        })
    }
}

impl Connections {
    fn of(cfg: &BenchConfig, r: &BenchResult) -> Connections {
        let t = &r.tally;
        Connections {
            opened: t.connections_opened,
            peak: r.peak_open,
            limit: r.pool,
            lifetime_us: t.conn_life.summary(),
            replies_per_connection: (t.conn_life.count() > 0)
                .then(|| t.conn_replies as f64 / t.conn_life.count() as f64),
            rate_per_s: per_second(t.connections_opened as f64, r.duration),
            tls_resumed: speaks_tls(cfg).then_some(t.tls_resumed),
        }
    }
}

/// The run made TLS handshakes: to an https:// target, or to a page view's `https` origin.
fn speaks_tls(cfg: &BenchConfig) -> bool {
    cfg.target.tls || cfg.visits.as_ref().is_some_and(|p| p.origins.speaks_tls())
}

/// The load model as the report names it.
fn mode(pacing: &Pacing) -> &'static str {
    match pacing {
        Pacing::Closed => "closed",
        Pacing::Open { .. } => "open",
        Pacing::Sessions { .. } => "sessions",
    }
}

/// The HTTP version spoken, as the report names it.
fn protocol(protocol: &Protocol) -> &'static str {
    protocol.name()
}

/// `r`'s distributions: the latency every output shows (with the uncorrected one beside it
/// under a schedule), ab's connection times and the connections' lifetimes.
fn histograms(cfg: &BenchConfig, r: &BenchResult) -> Histograms {
    let t = &r.tally.timings;
    let scheduled = cfg.pacing != Pacing::Closed;
    Histograms {
        latency: Some(r.latency().clone()),
        uncorrected: scheduled.then(|| t.total.clone()),
        connect: Some(t.connect.clone()),
        tls: speaks_tls(cfg).then(|| t.tls.clone()),
        waiting: Some(t.waiting.clone()),
        processing: Some(t.processing.clone()),
        lifetime: Some(r.tally.conn_life.clone()),
    }
}

impl TimingsUs {
    fn of(cfg: &BenchConfig, t: &loadlab_engine::Tally) -> TimingsUs {
        TimingsUs {
            connect: t.timings.connect.summary(),
            tls: speaks_tls(cfg).then(|| t.timings.tls.summary()),
            waiting: t.timings.waiting.summary(),
            processing: t.timings.processing.summary(),
            total: t.timings.total.summary(),
        }
    }
}

impl Client {
    fn of(r: &BenchResult, verdict: &Verdict) -> Client {
        let cpu = r.cpu();
        Client {
            cpu_user_s: cpu.user.as_secs_f64(),
            cpu_sys_s: cpu.sys.as_secs_f64(),
            cpu_us_per_request: r.cpu_us_per_request(),
            cpu_busy: r.client_busy(),
            max_worker_busy: r.max_worker_busy(),
            saturated: verdict.has(Flag::ClientSaturated),
            cpu_wait_s: r.cpu_wait().as_secs_f64(),
            max_worker_waiting: r.max_worker_waiting(),
            involuntary_switches: r.involuntary_switches(),
            starved: verdict.has(Flag::ClientStarved),
            path: Path::of(r),
            threads: r.workers.len(),
            cpus_available: r.cpus_available,
            peak_connections: r.peak_open,
            fd_limit: r.fd_limit,
            link: Link::of(r),
            network_bound: verdict.has(Flag::NetworkBound),
        }
    }
}

impl Requests {
    fn of(t: &loadlab_engine::Tally) -> Requests {
        Requests {
            completed: t.completed,
            failed: t.failed,
            unfinished: t.unfinished,
            sent: t.sent,
            keepalive: t.keepalive,
            connections_opened: t.connections_opened,
        }
    }
}

impl BodyLength {
    fn of(t: &loadlab_engine::Tally) -> BodyLength {
        BodyLength {
            first: t.lengths.first,
            min: t.lengths.first.map(|_| t.lengths.min),
            max: t.lengths.first.map(|_| t.lengths.max),
            varied: t.lengths.varied(),
        }
    }
}

impl Server {
    fn of(cfg: &BenchConfig, r: &BenchResult) -> Server {
        Server {
            software: r.server.clone(),
            host: cfg.target.host.clone(),
            port: cfg.target.port,
            path: cfg.target.path.clone(),
        }
    }
}

/// `--expect-status` as given: codes and ranges.
fn expect_status(v: &loadlab_engine::Validation) -> Vec<String> {
    v.status.iter().map(|(a, b)| if a == b { a.to_string() } else { format!("{a}-{b}") }).collect()
}
