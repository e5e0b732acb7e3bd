//! `--format httperf`: httperf 0.9's report layout and its error names, so scripts and
//! autobench-style tooling that parse httperf keep working.
//!
//! httperf's error names map onto loadlab's classes: client-timo = client_timeout,
//! socket-timo = connect_timeout, connrefused, connreset, fd-unavail, addrunavail; parse,
//! short-body and validation failures have no httperf name and are counted in `other`, as
//! httperf counts unexpected conditions.

use std::io::{self, Write};

use loadlab_engine::BenchResult;

use super::Render;
use loadlab_runner::commands::bench::Report;

pub struct Httperf;

fn ms(us: f64) -> f64 {
    us / 1000.0
}

impl Render for Httperf {
    fn render(&self, r: &Report, _: &BenchResult, out: &mut dyn Write) -> io::Result<()> {
        header(r, out)?;
        connections(r, out)?;
        replies(r, out)?;
        cost(r, out)?;
        sessions(r, out)?;
        schedule(r, out)
    }
}

/// The command httperf would have run, and the totals.
fn header(r: &Report, out: &mut dyn Write) -> io::Result<()> {
    let c = &r.config;
    let t = r.duration_s;
    let e = &r.errors;
    let replies = r.requests.completed + e["validation"];
    let requests = r.requests.completed + r.requests.failed;
    // httperf's own flags only for its own model (sessions); the closed and open loops are
    // said as what they were, so the header never claims connections that were not made.
    let stop = match (c.requests, c.duration_s) {
        (Some(n), _) => format!(", {n} requests"),
        (None, Some(d)) => format!(", {d} s"),
        _ => String::new(),
    };
    let model = match (c.rate, c.calls_per_connection) {
        _ if r.views.is_some() || r.visits.is_some() => visitors(r, &stop),
        (Some(rate), Some(_)) if r.sessions.is_some() => {
            let n = c.conns.unwrap_or_default();
            let file = c.urls.as_deref().unwrap_or_default();
            format!(" --rate={rate} --wsesslog={n},{file} (think times as the file and X say)")
        }
        (Some(rate), Some(k)) => {
            let conns = c.conns.map_or(String::new(), |n| format!(" --num-conns={n}"));
            format!(" --rate={rate}{conns} --num-calls={k}")
        }
        (Some(rate), None) => format!(
            " (open loop, not httperf's sessions: {rate} requests/s over up to {} keep-alive \
             connections{stop})",
            c.connections
        ),
        (None, _) => {
            format!(" (closed loop, not httperf's sessions: {} connections{stop})", c.connections)
        }
    };
    writeln!(
        out,
        "loadlab {} (httperf layout) --server={} --port={} --uri={}{model} --timeout={}",
        r.loadlab_version, r.server.host, r.server.port, r.server.path, c.timeout_s
    )?;
    writeln!(out, "Maximum connect burst length: 1")?;
    writeln!(out)?;
    writeln!(
        out,
        "Total: connections {} requests {} replies {} test-duration {:.3} s",
        r.connections.opened, requests, replies, t
    )?;
    writeln!(out)?;
    Ok(())
}

/// Page views and visit files, which httperf has no flag for, said as what they were: to
/// httperf's eye each view or visit is a session (a view one burst, a visit a burst a step),
/// whose figures follow in its session lines.
fn visitors(r: &Report, stop: &str) -> String {
    let c = &r.config;
    let what = match (&r.views, &r.visits) {
        (Some(v), _) => format!("page views of {} and its {} resources", v.page, v.resources.len()),
        (None, Some(v)) => {
            let file = c.urls.as_deref().unwrap_or_default();
            format!("visits of {file}, {} steps", v.steps.len())
        }
        (None, None) => String::new(),
    };
    let pace = match c.rate {
        Some(rate) => format!("{rate} a second"),
        None => format!("{} visitors looping", c.connections),
    };
    let count = c.conns.map_or(String::new(), |n| format!(", {n} in all"));
    format!(" ({what}, {pace}{count}{stop}: httperf's sessions, one a view or visit)")
}

/// How many connections, how fast, for how long.
fn connections(r: &Report, out: &mut dyn Write) -> io::Result<()> {
    let conn_rate = r.connections.rate_per_s;
    let per_conn_ms = if conn_rate > 0.0 { 1000.0 / conn_rate } else { 0.0 };
    writeln!(
        out,
        "Connection rate: {conn_rate:.1} conn/s ({per_conn_ms:.1} ms/conn, <={} concurrent \
         connections)",
        r.connections.peak
    )?;
    let life = &r.connections.lifetime_us;
    writeln!(
        out,
        "Connection time [ms]: min {:.1} avg {:.1} max {:.1} median {:.1} stddev {:.1}",
        ms(life.min as f64),
        ms(life.mean),
        ms(life.max as f64),
        ms(life.p50 as f64),
        ms(life.stdev)
    )?;
    writeln!(out, "Connection time [ms]: connect {:.1}", ms(r.timings_us.connect.mean))?;
    writeln!(
        out,
        "Connection length [replies/conn]: {:.3}",
        r.connections.replies_per_connection.unwrap_or(0.0)
    )?;
    writeln!(out)?;
    Ok(())
}

/// Requests and replies: rates, sizes, times, statuses.
fn replies(r: &Report, out: &mut dyn Write) -> io::Result<()> {
    let t = r.duration_s;
    let e = &r.errors;
    let replies = r.requests.completed + e["validation"];
    let requests = r.requests.completed + r.requests.failed;
    let per_s = |x: f64| if t > 0.0 { x / t } else { 0.0 };
    let req_rate = per_s(requests as f64);
    let per_req_ms = if req_rate > 0.0 { 1000.0 / req_rate } else { 0.0 };
    writeln!(out, "Request rate: {req_rate:.1} req/s ({per_req_ms:.1} ms/req)")?;
    let written = r.requests.sent;
    let req_size = if written > 0 { r.bytes.sent as f64 / written as f64 } else { 0.0 };
    writeln!(out, "Request size [B]: {req_size:.1}")?;
    writeln!(out)?;
    match &r.throughput.per_second {
        Some(m) => writeln!(
            out,
            "Reply rate [replies/s]: min {:.1} avg {:.1} max {:.1} stddev {:.1} ({} samples)",
            m.min, m.mean, m.max, m.stdev, m.samples
        )?,
        None => {
            writeln!(out, "Reply rate [replies/s]: min 0.0 avg 0.0 max 0.0 stddev 0.0 (0 samples)")?
        }
    }
    // httperf's response time is time to first byte; transfer, first to last byte. Means
    // are linear, so the mean transfer time is the mean processing time minus the mean wait.
    let tm = &r.timings_us;
    let transfer = (tm.processing.mean - tm.waiting.mean).max(0.0);
    writeln!(
        out,
        "Reply time [ms]: response {:.1} transfer {:.1}",
        ms(tm.waiting.mean),
        ms(transfer)
    )?;
    let (header, content) = if replies > 0 {
        let body = r.bytes.body as f64 / replies as f64;
        (r.bytes.total as f64 / replies as f64 - body, body)
    } else {
        (0.0, 0.0)
    };
    writeln!(
        out,
        "Reply size [B]: header {header:.1} content {content:.1} footer 0.0 (total {:.1})",
        header + content
    )?;
    let sc = &r.status_class;
    writeln!(
        out,
        "Reply status: 1xx={} 2xx={} 3xx={} 4xx={} 5xx={}",
        sc["1xx"], sc["2xx"], sc["3xx"], sc["4xx"], sc["5xx"]
    )?;
    writeln!(out)?;
    Ok(())
}

/// The client's CPU, the bytes carried, and the errors by httperf's names.
fn cost(r: &Report, out: &mut dyn Write) -> io::Result<()> {
    let t = r.duration_s;
    let e = &r.errors;
    let per_s = |x: f64| if t > 0.0 { x / t } else { 0.0 };
    let (user, sys) = (r.client.cpu_user_s, r.client.cpu_sys_s);
    let pct = |x: f64| if t > 0.0 { 100.0 * x / t } else { 0.0 };
    writeln!(
        out,
        "CPU time [s]: user {user:.2} system {sys:.2} (user {:.1}% system {:.1}% total {:.1}%)",
        pct(user),
        pct(sys),
        pct(user + sys)
    )?;
    let bytes_per_s = per_s((r.bytes.total + r.bytes.sent) as f64);
    writeln!(
        out,
        "Net I/O: {:.1} KB/s ({:.1}*10^6 bps)",
        bytes_per_s / 1024.0,
        bytes_per_s * 8.0 / 1e6
    )?;
    writeln!(out)?;
    let other = e["parse"] + e["short_body"] + e["validation"] + e["other"];
    writeln!(
        out,
        "Errors: total {} client-timo {} socket-timo {} connrefused {} connreset {}",
        r.requests.failed,
        e["client_timeout"],
        e["connect_timeout"],
        e["connrefused"],
        e["connreset"]
    )?;
    writeln!(
        out,
        "Errors: fd-unavail {} addrunavail {} ftab-full 0 other {other}",
        e["fd_unavail"], e["addr_unavail"]
    )?;
    Ok(())
}

/// The open loop's schedule, then the warnings.
fn schedule(r: &Report, out: &mut dyn Write) -> io::Result<()> {
    if let Some(rate) = &r.rate {
        writeln!(out)?;
        writeln!(
            out,
            "Schedule: offered {:.1} req/s, achieved {:.1} req/s, late p99 {:.1} ms, \
             not sent {}",
            rate.offered_rps,
            rate.achieved_rps,
            ms(rate.late_p99_us as f64),
            rate.not_sent
        )?;
        let l = &r.latency_us;
        writeln!(
            out,
            "Latency from due time [ms]: p50 {:.1} p99 {:.1} max {:.1}",
            ms(l.p50 as f64),
            ms(l.p99 as f64),
            ms(l.max as f64)
        )?;
    }
    for w in &r.warnings {
        writeln!(out, "WARNING: {w}")?;
    }
    Ok(())
}

/// `--wsesslog`: httperf's session lines, after its errors, as httperf prints them.
fn sessions(r: &Report, out: &mut dyn Write) -> io::Result<()> {
    let Some(s) = &r.sessions else { return Ok(()) };
    writeln!(out)?;
    let (min, avg, max, stddev) = match &s.rate_samples {
        Some(x) => (x.min, x.avg, x.max, x.stddev),
        None => (s.rate_per_s, s.rate_per_s, s.rate_per_s, 0.0),
    };
    writeln!(
        out,
        "Session rate [sess/s]: min {min:.2} avg {avg:.2} max {max:.2} stddev {stddev:.2} ({}/{})",
        s.completed, s.started
    )?;
    writeln!(out, "Session: avg {:.2} connections/session", s.connections_per_session)?;
    let secs = |us: f64| us / 1e6;
    writeln!(out, "Session lifetime [s]: {:.1}", secs(s.lifetime_us.mean))?;
    writeln!(out, "Session failtime [s]: {:.1}", secs(s.failtime_us.mean))?;
    let histogram: Vec<String> = s.length_histogram.iter().map(u64::to_string).collect();
    writeln!(out, "Session length histogram: {}", histogram.join(" "))
}
