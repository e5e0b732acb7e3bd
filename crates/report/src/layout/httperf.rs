//! httperf 0.9's report layout and its error names, so scripts and autobench-style tooling
//! that parse httperf keep working.
//!
//! httperf's error names map onto loadlab's classes: client-timo = client_timeout,
//! socket-timo = connect_timeout, connrefused, connreset, fd-unavail, addrunavail; parse,
//! short-body and validation failures have no httperf name and are counted in `other`, as
//! httperf counts unexpected conditions.

use std::io::{self, Write};

use super::{Figures, Load, Target};

fn ms(us: f64) -> f64 {
    us / 1000.0
}

/// Writes `f` in httperf's layout.
pub fn httperf(f: &Figures, out: &mut dyn Write) -> io::Result<()> {
    if let Some(target) = &f.target {
        command(target, out)?;
    }
    writeln!(
        out,
        "Total: connections {} requests {} replies {} test-duration {:.3} s",
        f.connections_opened.unwrap_or(0),
        f.done(),
        f.replies(),
        f.duration_s
    )?;
    writeln!(out)?;
    connections(f, out)?;
    replies(f, out)?;
    cost(f, out)?;
    sessions(f, out)?;
    schedule(f, out)
}

/// The command httperf would have run.
fn command(t: &Target, out: &mut dyn Write) -> io::Result<()> {
    let c = &t.load;
    // httperf's own flags only for its own model (sessions); the closed and open loops are
    // said as what they were, so the header never claims connections that were not made.
    let stop = match (c.requests, c.duration_s) {
        (Some(n), _) => format!(", {n} requests"),
        (None, Some(d)) => format!(", {d} s"),
        _ => String::new(),
    };
    let model = match (c.rate, c.calls_per_connection) {
        _ if c.views.is_some() || c.visit_steps.is_some() => visitors(c, &stop),
        (Some(rate), Some(_)) if c.wsesslog => {
            let n = c.conns.unwrap_or_default();
            let file = c.urls.unwrap_or_default();
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
        t.loadlab_version, t.host, t.port, t.path, c.timeout_s
    )?;
    writeln!(out, "Maximum connect burst length: 1")?;
    writeln!(out)
}

/// Page views and visit files, which httperf has no flag for, said as what they were: to
/// httperf's eye each view or visit is a session (a view one burst, a visit a burst a step),
/// whose figures follow in its session lines.
fn visitors(c: &Load, stop: &str) -> String {
    let what = match (c.views, c.visit_steps) {
        (Some((page, resources)), _) => {
            format!("page views of {page} and its {resources} resources")
        }
        (None, Some(steps)) => {
            format!("visits of {}, {steps} steps", c.urls.unwrap_or_default())
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
fn connections(f: &Figures, out: &mut dyn Write) -> io::Result<()> {
    if let (Some(opened), Some(peak)) = (f.connections_opened, f.peak_connections) {
        let conn_rate = f.per_s(opened as f64);
        let per_conn_ms = if conn_rate > 0.0 { 1000.0 / conn_rate } else { 0.0 };
        writeln!(
            out,
            "Connection rate: {conn_rate:.1} conn/s ({per_conn_ms:.1} ms/conn, <={peak} \
             concurrent connections)"
        )?;
    }
    if let Some(l) = &f.lifetimes {
        let life = l.lifetime_us;
        writeln!(
            out,
            "Connection time [ms]: min {:.1} avg {:.1} max {:.1} median {:.1} stddev {:.1}",
            ms(life.min as f64),
            ms(life.mean),
            ms(life.max as f64),
            ms(life.p50 as f64),
            ms(life.stdev)
        )?;
    }
    if let Some(connect) = f.connect_mean_us {
        writeln!(out, "Connection time [ms]: connect {:.1}", ms(connect))?;
    }
    if let Some(l) = &f.lifetimes {
        writeln!(out, "Connection length [replies/conn]: {:.3}", l.replies_per_connection)?;
    }
    writeln!(out)
}

/// Requests and replies: rates, sizes, times, statuses.
fn replies(f: &Figures, out: &mut dyn Write) -> io::Result<()> {
    let req_rate = f.per_s(f.done() as f64);
    let per_req_ms = if req_rate > 0.0 { 1000.0 / req_rate } else { 0.0 };
    writeln!(out, "Request rate: {req_rate:.1} req/s ({per_req_ms:.1} ms/req)")?;
    if let Some(written) = f.sent {
        let sent = f.bytes_sent.unwrap_or(0);
        let req_size = if written > 0 { sent as f64 / written as f64 } else { 0.0 };
        writeln!(out, "Request size [B]: {req_size:.1}")?;
    }
    writeln!(out)?;
    match &f.per_second {
        Some(m) => writeln!(
            out,
            "Reply rate [replies/s]: min {:.1} avg {:.1} max {:.1} stddev {:.1} ({} samples)",
            m.min, m.mean, m.max, m.stdev, m.samples
        )?,
        None => {
            writeln!(out, "Reply rate [replies/s]: min 0.0 avg 0.0 max 0.0 stddev 0.0 (0 samples)")?
        }
    }
    reply_time(f, out)?;
    reply_size(f, out)?;
    if let Some(sc) = &f.status_class {
        let n = |class: &str| sc.get(class).copied().unwrap_or(0);
        writeln!(
            out,
            "Reply status: 1xx={} 2xx={} 3xx={} 4xx={} 5xx={}",
            n("1xx"),
            n("2xx"),
            n("3xx"),
            n("4xx"),
            n("5xx")
        )?;
    }
    writeln!(out)
}

/// httperf's response time is time to first byte; transfer, first to last byte. Means are
/// linear, so the mean transfer time is the mean processing time minus the mean wait.
fn reply_time(f: &Figures, out: &mut dyn Write) -> io::Result<()> {
    let Some(waiting) = f.waiting_mean_us else { return Ok(()) };
    match &f.timings {
        Some(tm) => {
            let transfer = (tm.processing.mean - waiting).max(0.0);
            writeln!(
                out,
                "Reply time [ms]: response {:.1} transfer {:.1}",
                ms(waiting),
                ms(transfer)
            )
        }
        None => writeln!(out, "Reply time [ms]: response {:.1}", ms(waiting)),
    }
}

/// Reply size: the mean head and body of the replies.
fn reply_size(f: &Figures, out: &mut dyn Write) -> io::Result<()> {
    let (Some(total), Some(body)) = (f.bytes_total, f.bytes_body) else { return Ok(()) };
    let replies = f.replies();
    let (header, content) = if replies > 0 {
        let body = body as f64 / replies as f64;
        (total as f64 / replies as f64 - body, body)
    } else {
        (0.0, 0.0)
    };
    writeln!(
        out,
        "Reply size [B]: header {header:.1} content {content:.1} footer 0.0 (total {:.1})",
        header + content
    )
}

/// The client's CPU, the bytes carried, and the errors by httperf's names.
fn cost(f: &Figures, out: &mut dyn Write) -> io::Result<()> {
    if let Some((user, sys)) = f.cpu_s {
        let pct = |x: f64| 100.0 * f.per_s(x);
        writeln!(
            out,
            "CPU time [s]: user {user:.2} system {sys:.2} (user {:.1}% system {:.1}% total \
             {:.1}%)",
            pct(user),
            pct(sys),
            pct(user + sys)
        )?;
    }
    if let Some(total) = f.bytes_total {
        let bytes_per_s = f.per_s((total + f.bytes_sent.unwrap_or(0)) as f64);
        writeln!(
            out,
            "Net I/O: {:.1} KB/s ({:.1}*10^6 bps)",
            bytes_per_s / 1024.0,
            bytes_per_s * 8.0 / 1e6
        )?;
    }
    writeln!(out)?;
    let e = |class: &str| f.error(class);
    writeln!(
        out,
        "Errors: total {} client-timo {} socket-timo {} connrefused {} connreset {}",
        f.failed,
        e("client_timeout"),
        e("connect_timeout"),
        e("connrefused"),
        e("connreset")
    )?;
    let other = f.errors_of(&["parse", "short_body", "validation", "other"]);
    writeln!(
        out,
        "Errors: fd-unavail {} addrunavail {} ftab-full 0 other {other}",
        e("fd_unavail"),
        e("addr_unavail")
    )
}

/// The open loop's schedule, then the warnings.
fn schedule(f: &Figures, out: &mut dyn Write) -> io::Result<()> {
    if let Some(s) = &f.schedule {
        writeln!(out)?;
        writeln!(
            out,
            "Schedule: offered {:.1} req/s, achieved {:.1} req/s, late p99 {:.1} ms, \
             not sent {}",
            s.offered_rps,
            s.achieved_rps,
            ms(s.late_p99_us as f64),
            s.not_sent
        )?;
        writeln!(
            out,
            "Latency from due time [ms]: p50 {:.1} p99 {:.1} max {:.1}",
            ms(s.latency_p50_us as f64),
            ms(s.latency_p99_us as f64),
            ms(s.latency_max_us as f64)
        )?;
    }
    for w in f.warnings {
        writeln!(out, "WARNING: {w}")?;
    }
    Ok(())
}

/// `--wsesslog`: httperf's session lines, after its errors, as httperf prints them.
fn sessions(f: &Figures, out: &mut dyn Write) -> io::Result<()> {
    let Some(s) = &f.sessions else { return Ok(()) };
    writeln!(out)?;
    let (min, avg, max, stddev) = s.rate;
    writeln!(
        out,
        "Session rate [sess/s]: min {min:.2} avg {avg:.2} max {max:.2} stddev {stddev:.2} ({}/{})",
        s.completed, s.started
    )?;
    writeln!(out, "Session: avg {:.2} connections/session", s.connections_per_session)?;
    let secs = |us: f64| us / 1e6;
    writeln!(out, "Session lifetime [s]: {:.1}", secs(s.lifetime_mean_us))?;
    writeln!(out, "Session failtime [s]: {:.1}", secs(s.failtime_mean_us))?;
    let histogram: Vec<String> = s.length_histogram.iter().map(u64::to_string).collect();
    writeln!(out, "Session length histogram: {}", histogram.join(" "))
}
