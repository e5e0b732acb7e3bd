//! `--format ab` and `--format httperf`: the bench's [`Report`] given as the one value the
//! report crate's ab and httperf layouts read ([`Figures`]), so that a live bench and a
//! stored cell are written by the same code.

use std::io::{self, Write};

use loadlab_report::layout::{
    self, Figures, Lifetimes, Load, Schedule, SessionLines, Target, Timings,
};
use loadlab_store::LoadModel;

use super::Render;
use loadlab_runner::commands::bench::Report;

pub struct Ab;

pub struct Httperf;

impl Render for Ab {
    fn render(&self, r: &Report, out: &mut dyn Write) -> io::Result<()> {
        layout::ab(&figures(r), out)
    }
}

impl Render for Httperf {
    fn render(&self, r: &Report, out: &mut dyn Write) -> io::Result<()> {
        layout::httperf(&figures(r), out)
    }
}

/// What the bench measured, as the layouts read it; the tables of whole distributions read
/// the report's, as they read a stored cell's.
fn figures(r: &Report) -> Figures<'_> {
    let tm = &r.timings_us;
    Figures {
        target: Some(target(r)),
        model: match r.mode {
            "closed" => LoadModel::Closed,
            "open" => LoadModel::Open,
            _ => LoadModel::Session,
        },
        duration_s: r.duration_s,
        connections: Some(r.config.connections as u64),
        peak_connections: Some(r.connections.peak as u64),
        connections_opened: Some(r.connections.opened),
        completed: r.requests.completed,
        failed: r.requests.failed,
        errors: r.errors.iter().map(|(k, v)| (*k, *v)).collect(),
        status_class: Some(r.status_class.clone()),
        non_2xx: Some(r.not_2xx.0),
        sent: Some(r.requests.sent),
        keepalive: r.config.keepalive.then_some(r.requests.keepalive),
        bytes_total: Some(r.bytes.total),
        bytes_body: Some(r.bytes.body),
        bytes_sent: Some(r.bytes.sent),
        request_body: r.config.body_bytes > 0,
        latency_mean_us: Some(r.latency_us.mean),
        percentiles: r.histograms.request_times(),
        timings: Timings::of(&r.histograms),
        waiting_mean_us: Some(tm.waiting.mean),
        connect_mean_us: Some(tm.connect.mean),
        lifetimes: Some(Lifetimes {
            lifetime_us: r.connections.lifetime_us,
            replies_per_connection: r.connections.replies_per_connection.unwrap_or(0.0),
        }),
        per_second: r.throughput.per_second,
        cpu_s: Some((r.client.cpu_user_s, r.client.cpu_sys_s)),
        schedule: r.rate.as_ref().map(|rate| Schedule {
            offered_rps: rate.offered_rps,
            achieved_rps: rate.achieved_rps,
            late_p99_us: rate.late_p99_us,
            not_sent: rate.not_sent,
            latency_p50_us: r.latency_us.p50,
            latency_p99_us: r.latency_us.p99,
            latency_max_us: r.latency_us.max,
        }),
        sessions: r.sessions.as_ref().map(|s| SessionLines {
            started: s.started,
            completed: s.completed,
            rate: match &s.rate_samples {
                Some(x) => (x.min, x.avg, x.max, x.stddev),
                None => (s.rate_per_s, s.rate_per_s, s.rate_per_s, 0.0),
            },
            connections_per_session: s.connections_per_session,
            lifetime_mean_us: s.lifetime_us.mean,
            failtime_mean_us: s.failtime_us.mean,
            length_histogram: &s.length_histogram,
        }),
        warnings: &r.warnings,
    }
}

/// Who answered, and how the load was asked for.
fn target(r: &Report) -> Target<'_> {
    let c = &r.config;
    Target {
        loadlab_version: r.loadlab_version,
        host: &r.server.host,
        port: r.server.port,
        path: &r.server.path,
        software: r.server.software.as_deref(),
        tls: r.tls.as_ref().map(|t| (t.version.as_str(), t.cipher.as_str(), t.group.as_deref())),
        h2: r.protocol == "h2",
        document_length: (!r.body_length.varied).then(|| r.body_length.first.unwrap_or(0)),
        load: Load {
            rate: c.rate,
            calls_per_connection: c.calls_per_connection,
            conns: c.conns,
            requests: c.requests,
            duration_s: c.duration_s,
            connections: c.connections,
            timeout_s: c.timeout_s,
            urls: c.urls.as_deref(),
            wsesslog: r.sessions.is_some(),
            views: r.views.as_ref().map(|v| (v.page.as_str(), v.resources.len())),
            visit_steps: r.visits.as_ref().map(|v| v.steps.len()),
        },
    }
}
