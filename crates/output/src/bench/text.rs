//! `--format text`: the default report for people, aligned, with each warning printed beside
//! the figure it weakens.

use std::io::{self, Write};

use loadlab_stats::RecorderSummary;

use super::Render;
use loadlab_runner::commands::bench::Report;
use loadlab_runner::judge::limit::Limit;
use loadlab_stats::format::{bytes, count, micros as us};

pub struct Text;

impl Render for Text {
    fn render(&self, r: &Report, out: &mut dyn Write) -> io::Result<()> {
        head(r, out)?;
        throughput(r, out)?;
        link(r, out)?;
        latency(r, out)?;
        super::views_text::write(r.views.as_ref(), out)?;
        super::sessions_text::write(r.sessions.as_ref(), out)?;
        super::sessions_text::steps(r.visits.as_ref(), out)?;
        outcomes(r, out)?;
        agents(r, out)?;
        client(r, out)?;
        if let Some(seconds) = &r.seconds {
            writeln!(out)?;
            super::seconds::text(seconds, r.mode == "closed", out)?;
        }
        if let Some(Ok(tiers)) = r.profiles.as_ref().map(|p| &p.tiers) {
            writeln!(out)?;
            crate::profile::write_tiers(out, tiers, crate::profile::TOP)?;
        }
        Ok(())
    }
}

/// The run's description: what was loaded, how, and who answered.
fn head(r: &Report, out: &mut dyn Write) -> io::Result<()> {
    let c = &r.config;
    let stop = match (c.requests.or(c.conns), c.duration_s) {
        (Some(n), _) if r.visits.is_some() => format!("{} visits", count(n as f64)),
        (Some(n), _) if r.views.is_some() => format!("{} views", count(n as f64)),
        (Some(n), _) if r.sessions.is_some() => format!("{} sessions", count(n as f64)),
        (Some(n), _) if c.conns.is_some() => format!("{} connections", count(n as f64)),
        (Some(n), _) => format!("{} requests", count(n as f64)),
        (_, Some(d)) => format!("{d}s"),
        _ => String::new(),
    };
    let warm =
        if c.warmup_s > 0.0 { format!(" after {}s warm-up", c.warmup_s) } else { String::new() };
    let file = c.urls.as_deref().unwrap_or("");
    match (&r.urls, &r.replay) {
        // Views, visits and sessions keep their distinct requests in the table of a URL list;
        // the line says what ran, not that table (a view's visits are sessions too).
        (Some(_), _) if r.views.is_some() => {
            let view = r.views.as_ref().map_or(("", 0), |v| (v.page.as_str(), v.resources.len()));
            let resources = match view.1 {
                0 => " (it names no resource)".to_string(),
                n => format!(" and its {}", counted(n as u64, "resource")),
            };
            writeln!(out, "loadlab bench {}: page views of {}{resources}", c.url, view.0)?
        }
        (Some(urls), _) if r.visits.is_some() || r.sessions.is_some() => {
            let what = if r.visits.is_some() { "visits" } else { "httperf's sessions" };
            let distinct = counted(urls.len() as u64, "distinct request");
            writeln!(out, "loadlab bench {}: {what} of {file} ({distinct})", c.url)?
        }
        (Some(urls), _) => writeln!(
            out,
            "loadlab bench {}: the {} of {file} ({}, seed {})",
            c.url,
            counted(urls.len() as u64, "request"),
            c.urls_order.unwrap_or("weighted"),
            c.seed
        )?,
        (None, Some(replay)) => {
            writeln!(out, "loadlab bench {}: replaying {} ({})", c.url, replay.file, replay.format)?
        }
        (None, None) => writeln!(out, "loadlab bench {} {}", c.method, c.url)?,
    }
    let keepalive = if c.keepalive { "keep-alive" } else { "new connection per request" };
    let model = model(r);
    let model = match (r.protocol, c.url.starts_with("https://")) {
        ("h2", true) => format!("{model} x {} streams, h2 (ALPN)", c.streams),
        ("h2", false) => format!("{model} x {} streams, h2c (prior knowledge)", c.streams),
        ("h3", _) => format!("{model} x {} streams, h3 (QUIC)", c.streams),
        _ => model,
    };
    let threads = counted(c.threads as u64, "thread");
    writeln!(out, "  {model}, {threads}, {keepalive}, {stop}{warm}")?;
    sends(r, out)?;
    writeln!(
        out,
        "  server {} at {}",
        r.server.software.as_deref().unwrap_or("(no Server header)"),
        c.address
    )?;
    if let Some(share) = &r.share {
        writeln!(
            out,
            "  {}: this host's share of the test; agent 0 reports the whole",
            share.agent
        )?;
    }
    if let Some(tls) = &r.tls {
        let group = tls.group.as_deref().map(|g| format!(", {g}")).unwrap_or_default();
        let alpn = tls.alpn.as_deref().unwrap_or("none");
        writeln!(out, "  tls {}, {}{group}, ALPN {alpn}", tls.version, tls.cipher)?;
    }
    writeln!(out)?;
    Ok(())
}

/// Open loop and sessions: when the sends went out against their due times.
fn sends(r: &Report, out: &mut dyn Write) -> io::Result<()> {
    let Some(rate) = &r.rate else { return Ok(()) };
    let window = rate.send_window_us;
    match rate.sends {
        "grouped" => {
            writeln!(out, "  sends grouped within {window} µs: this machine's wake-up cost")
        }
        "grid" => writeln!(out, "  sends on a {window} µs grid (--coalesce), up to a step late"),
        _ => writeln!(out, "  sends each at its own due time"),
    }
}

/// How the load was applied: the loop, its level or its shape as given (`--stages`'
/// spelling, the shape's mean beside a rate's), and the connections it may use.
fn model(r: &Report) -> String {
    let c = &r.config;
    let arrival = c.arrival.unwrap_or("fixed");
    // A shape is said as given; the rate the schedule echoes is then its mean.
    let level = |rate: f64, unit: &str| match &c.shape {
        Some(shape) => format!("in stages {shape} {unit} ({arrival}, mean {rate:.1})"),
        None => format!("{rate} {unit} ({arrival})"),
    };
    let at = if c.shape.is_some() { "" } else { "at " };
    match (r.mode, c.rate, c.calls_per_connection) {
        ("open", Some(rate), _) if c.arrival == Some("log") => {
            let speed = r.replay.as_ref().map_or(1.0, |x| x.speed);
            let speed = if speed == 1.0 { String::new() } else { format!(" x {speed}") };
            format!(
                "open loop at the log's timing{speed} (mean {rate:.1} req/s), up to {} \
                 connections",
                c.connections
            )
        }
        ("open", Some(rate), _) => {
            format!("open loop {at}{}, up to {} connections", level(rate, "req/s"), c.connections)
        }
        ("sessions", Some(rate), Some(k)) if r.views.is_some() => {
            format!(
                "page views: {rate} views/s ({arrival}), about {} each",
                counted(k.into(), "request")
            )
        }
        ("sessions", Some(rate), Some(k)) if r.visits.is_some() => {
            format!(
                "visits: {rate} visits/s ({arrival}), about {} each",
                counted(k.into(), "request")
            )
        }
        ("sessions", Some(rate), Some(k)) if r.sessions.is_some() => {
            format!(
                "visits: {rate} sessions/s ({arrival}), about {} each",
                counted(k.into(), "request")
            )
        }
        ("sessions", Some(rate), Some(k)) => format!(
            "sessions: {} x {k} calls, up to {} at once",
            level(rate, "new connections/s"),
            c.connections
        ),
        // A closed population of visitors (a visit file's, a session log's) or of viewers,
        // each on connections of its own: the level is people, not connections.
        _ if r.views.is_some() => counted(c.connections as u64, "viewer"),
        _ if r.visits.is_some() || r.sessions.is_some() => counted(c.connections as u64, "visitor"),
        // The closed loop's connections over time, up to the shape's peak.
        _ => match &c.shape {
            Some(shape) => format!("connections in stages {shape} (at most {})", c.connections),
            None => counted(c.connections as u64, "connection"),
        },
    }
}

/// The requests and the rate, with the flags that say whose rate it is beside it.
fn throughput(r: &Report, out: &mut dyn Write) -> io::Result<()> {
    let q = &r.requests;
    let mut line = format!(
        "  Requests     {} completed, {} failed",
        count(q.completed as f64),
        count(q.failed as f64)
    );
    if q.unfinished > 0 {
        line.push_str(&format!(", {} unfinished at the end", count(q.unfinished as f64)));
    }
    writeln!(out, "{line}")?;
    // The flags stand beside the rate, not only in the warnings; whose rate it is comes from
    // the runner's one limit decision (`limited_by`), never from the flags again.
    let mut flag = String::new();
    for (set, name) in [
        (r.client.saturated, "CLIENT SATURATED"),
        (r.client.starved, "CLIENT STARVED"),
        (r.client.network_bound, "NETWORK-BOUND"),
    ] {
        if set {
            flag.push_str("   << ");
            flag.push_str(name);
        }
    }
    let whose = match r.limited_by.limit {
        Limit::Client => Some("the client's limit (a lower bound), not the server's"),
        Limit::Network => Some("the network's limit, not the server's"),
        _ => None,
    };
    match whose {
        // A client limit with none of these flags (out of descriptors or ports) still says so.
        Some(w) if flag.is_empty() => flag.push_str(&format!("   << {w}")),
        Some(w) => flag.push_str(&format!(": {w}")),
        None => {}
    }
    // Responses that were not 2xx count as completed unless --expect-status says otherwise
    // (the verdict's non_2xx): a rate of 404s is not the rate of the page asked for.
    let (not_2xx, marked) = r.not_2xx;
    if marked {
        flag.push_str(&format!(
            "   << {} OF RESPONSES NOT 2xx ({} of {}, counted as completed)",
            loadlab_stats::format::percent(not_2xx as f64 / q.completed.max(1) as f64),
            count(not_2xx as f64),
            count(q.completed as f64)
        ));
    }
    let errs = if q.failed > 0 { "   << with errors (see below)" } else { "" };
    writeln!(out, "  Throughput   {:.2} req/s{flag}{errs}", r.rps)?;
    if let Some(rate) = &r.rate {
        let kept = if rate.schedule_kept { "" } else { "   << SCHEDULE NOT KEPT" };
        let of = match r.share.as_ref().and_then(|s| s.test_offered_rps) {
            Some(whole) => format!(" (its share of the test's {whole:.2})"),
            None => String::new(),
        };
        let lost =
            if r.partial.is_some() { " (with the lost agents' share: see Partial)" } else { "" };
        writeln!(
            out,
            "  Schedule     offered {:.2} req/s{of}, sent {:.2} req/s, late p50 {} p99 {} max {}, \
             never sent {}{lost}{kept}",
            rate.offered_rps,
            rate.sent_rps,
            us(rate.late_p50_us as f64),
            us(rate.late_p99_us as f64),
            us(rate.late_max_us as f64),
            count(rate.not_sent as f64)
        )?;
    }
    if let Some(m) = &r.throughput.per_second {
        writeln!(
            out,
            "  Per second   min {:.0}  avg {:.0}  max {:.0}  stdev {:.1}  ({} samples)",
            m.min, m.mean, m.max, m.stdev, m.samples
        )?;
    }
    Ok(())
}

/// What was carried, over which link, for how long.
fn link(r: &Report, out: &mut dyn Write) -> io::Result<()> {
    let link = &r.client.link;
    // The transfer is marked when the runner decided that the network limited the run:
    // how full the link was is its evidence here, never a threshold tested again.
    let full = match link.utilisation {
        Some(u) if r.limited_by.limit == Limit::Network => {
            format!("   << NETWORK-BOUND: {:.0}% of {}", u * 100.0, link.describe())
        }
        _ => String::new(),
    };
    writeln!(
        out,
        "  Transfer     {}/s received ({} total, {} body){full}",
        bytes(r.bytes.total_per_s),
        bytes(r.bytes.total as f64),
        bytes(r.bytes.body as f64)
    )?;
    let p = &r.client.path;
    let rtt = match (p.idle_rtt_us, p.load_rtt_median_us) {
        (Some(idle), Some(load)) => format!(
            "; path RTT {} idle, {} under load (median of {} probes)",
            us(f64::from(idle)),
            us(f64::from(load)),
            p.probes - p.unanswered as usize
        ),
        (Some(idle), None) => format!("; path RTT {} idle", us(f64::from(idle))),
        _ => String::new(),
    };
    let used = link.utilisation.map_or(String::new(), |u| format!(", {:.0}% used", u * 100.0));
    if link.interface.as_deref() == Some("lo") {
        writeln!(out, "  Link         lo (loopback: no link in between)")?;
    } else if link.interface.as_deref() == Some(loadlab_engine::link::UNIX) {
        writeln!(out, "  Link         unix socket (no network in between)")?;
    } else {
        writeln!(out, "  Link         {}{used}{rtt}", link.describe())?;
    }
    writeln!(
        out,
        "  Duration     {:.3} s{}",
        r.duration_s,
        if r.interrupted { " (interrupted)" } else { "" }
    )?;
    writeln!(out)?;
    Ok(())
}

/// The latency percentiles and ab's breakdown of each request's time.
fn latency(r: &Report, out: &mut dyn Write) -> io::Result<()> {
    let q = &r.requests;
    if q.completed > 0 {
        latency_header(out)?;
        match &r.service_time_us {
            Some(service) => {
                percentiles(out, "from due", &r.latency_us)?;
                percentiles(out, "service", service)?;
                writeln!(
                    out,
                    "               (from due: counted from each request's scheduled time, \
                     corrected for coordinated omission; service: from when it was sent)"
                )?;
            }
            None => percentiles(out, "", &r.latency_us)?,
        }
        if q.failed > 0 {
            writeln!(out, "           (completed requests only; failed ones are not timed)")?;
        }
        writeln!(out)?;
        writeln!(
            out,
            "  Times        {:>9} {:>9} {:>9} {:>9} {:>9}",
            "min", "mean", "stdev", "median", "max"
        )?;
        let t = &r.timings_us;
        timing(out, "Connect", &t.connect)?;
        if let Some(tls) = &t.tls {
            timing(out, "TLS", tls)?;
        }
        timing(out, "Waiting", &t.waiting)?;
        timing(out, "Processing", &t.processing)?;
        timing(out, "Total", &t.total)?;
        writeln!(out)?;
    }
    Ok(())
}

/// The answers: status codes, error classes, body lengths, the replay and the URL list.
fn outcomes(r: &Report, out: &mut dyn Write) -> io::Result<()> {
    let statuses: Vec<String> =
        r.status.iter().map(|(k, n)| format!("{k}: {}", count(*n as f64))).collect();
    writeln!(
        out,
        "  Status       {}",
        if statuses.is_empty() { "no responses".into() } else { statuses.join("  ") }
    )?;
    let errors: Vec<String> = r
        .errors
        .iter()
        .filter(|(_, n)| **n > 0)
        .map(|(k, n)| format!("{k}: {}", count(*n as f64)))
        .chain(r.errors_other_errno.iter().map(|(errno, n)| format!("(errno {errno}: {n})")))
        .chain(r.errors_tls.iter().map(|(why, n)| format!("(tls {why}: {n})")))
        .chain(r.errors_h2.iter().map(|(why, n)| format!("(h2 {why}: {n})")))
        .collect();
    writeln!(
        out,
        "  Errors       {}",
        if errors.is_empty() { "none".into() } else { errors.join("  ") }
    )?;
    match (r.body_length.first, r.body_length.varied) {
        (Some(_), true) => writeln!(
            out,
            "  Body         {} to {} bytes (varied; not a failure)",
            r.body_length.min.unwrap_or(0),
            r.body_length.max.unwrap_or(0)
        )?,
        (Some(n), false) => writeln!(out, "  Body         {n} bytes per response")?,
        (None, _) => {}
    }
    if let Some(replay) = &r.replay {
        let span = replay.span_s.map_or(String::new(), |s| format!(", spanning {s:.3} s"));
        writeln!(
            out,
            "  Replay       {} of {} lines replayed ({} distinct requests{span}), {} skipped",
            count(replay.replayed as f64),
            count(replay.lines as f64),
            count(replay.distinct_requests as f64),
            count(replay.skipped.values().sum::<u64>() as f64),
        )?;
    }
    if let Some(urls) = &r.urls {
        url_table(out, urls)?;
    }
    Ok(())
}

/// `--agents N` (agent 0): each agent's part, its own figures beside the merged ones above.
fn agents(r: &Report, out: &mut dyn Write) -> io::Result<()> {
    let Some(rows) = &r.agents else { return Ok(()) };
    let skew = r.start_skew_us.map_or("-".into(), us);
    writeln!(out, "  Agents       {} agents, start skew at most {skew}", rows.len())?;
    for a in rows {
        let p = |v: Option<u64>| v.map_or("-".into(), |v| us(v as f64));
        let n = |v: Option<u64>| v.map_or("-".into(), |n| count(n as f64));
        let flags = if a.flags.is_empty() { "-".into() } else { a.flags.join(", ") };
        writeln!(
            out,
            "    {:>3} {:<16} completed {}  failed {}  p50 {}  p99 {}  clock {:+.0} µs (±{:.0})  \
             flags {flags}",
            a.index,
            a.host,
            n(a.completed),
            n(a.failed),
            p(a.p50_us),
            p(a.p99_us),
            a.clock_offset_us,
            a.clock_error_us,
        )?;
    }
    if let Some(l) = &r.agent_lost {
        writeln!(out, "  AGENT LOST   agent {} in second {}: partial result", l.index, l.second)?;
    }
    if let Some(p) = &r.partial {
        shortfall(p, out)?;
    }
    Ok(())
}

/// A test that lost an agent: the arrivals due and not sent, second by second (open loop).
fn shortfall(p: &loadlab_runner::hosts::across::Partial, out: &mut dyn Write) -> io::Result<()> {
    let how = if p.continued { "the others went on" } else { "every agent stopped" };
    let short = p.not_sent();
    if p.shortfall.is_empty() {
        return writeln!(out, "  Partial      {how}; closed loop: no schedule to fall short of");
    }
    writeln!(out, "  Partial      {how}; due and not sent: {} in all", count(short as f64))?;
    for s in &p.shortfall {
        writeln!(
            out,
            "    second {:>4}  due {:>8}  sent {:>8}  not sent {:>8}",
            s.second, s.due, s.sent, s.not_sent
        )?;
    }
    Ok(())
}

/// The client's cost, then every warning, note and the SLO gate's verdict.
fn client(r: &Report, out: &mut dyn Write) -> io::Result<()> {
    let cl = &r.client;
    let per_req = cl.cpu_us_per_request.map_or("-".into(), |v| format!("{v:.2} µs/request"));
    writeln!(
        out,
        "  Client CPU   user {:.2}s  sys {:.2}s  {per_req}  busiest worker {:.0}%  \
         peak connections {}",
        cl.cpu_user_s,
        cl.cpu_sys_s,
        cl.max_worker_busy * 100.0,
        cl.peak_connections
    )?;
    if !r.warnings.is_empty() {
        writeln!(out)?;
        for w in &r.warnings {
            writeln!(out, "  WARNING: {w}")?;
        }
    }
    if !r.notes.is_empty() {
        if r.warnings.is_empty() {
            writeln!(out)?;
        }
        for n in &r.notes {
            writeln!(out, "  note: {n}")?;
        }
    }
    if let Some(slo) = &r.slo {
        writeln!(out)?;
        writeln!(out, "  {}", slo.line())?;
    }
    Ok(())
}

/// `--urls`: one row per request of the list, in the file's order.
fn url_table(
    out: &mut dyn Write,
    urls: &[loadlab_runner::commands::bench::traffic::UrlFigures],
) -> io::Result<()> {
    let shown = |u: &loadlab_runner::commands::bench::traffic::UrlFigures| {
        loadlab_stats::format::request(&u.method, &u.path)
    };
    let width = urls.iter().map(|u| shown(u).chars().count()).max().unwrap_or(0).max(7);
    writeln!(
        out,
        "  URLs    {:>5} {:>6}  {:<width$} {:>9} {:>7} {:>6} {:>9} {:>9} {:>7} {:>7} {:>7} {:>7}",
        "line",
        "weight",
        "request",
        "completed",
        "failed",
        "share",
        "p50",
        "p99",
        "2xx",
        "3xx",
        "4xx",
        "5xx"
    )?;
    for u in urls {
        let class = |k: &str| count(u.status_class[k] as f64);
        let timed = u.completed > 0;
        let p = |v: u64| if timed { us(v as f64) } else { "-".into() };
        writeln!(
            out,
            "          {:>5} {:>6}  {:<width$} {:>9} {:>7} {:>6} {:>9} {:>9} {:>7} {:>7} {:>7} {:>7}",
            u.line,
            u.weight,
            shown(u),
            count(u.completed as f64),
            count(u.failed as f64),
            loadlab_stats::format::percent(u.share),
            p(u.latency_us.p50),
            p(u.latency_us.p99),
            class("2xx"),
            class("3xx"),
            class("4xx"),
            class("5xx"),
        )?;
    }
    Ok(())
}

/// The head of the latency table: its columns (`loadlab merge` prints the same table).
pub fn latency_header(out: &mut dyn Write) -> io::Result<()> {
    writeln!(
        out,
        "  Latency      {:>9} {:>9} {:>9} {:>9} {:>9} {:>9} {:>9} {:>9} {:>9}",
        "p50", "p75", "p90", "p95", "p99", "p99.9", "p99.99", "max", "mean"
    )
}

/// One row of the latency table.
pub fn percentiles(out: &mut dyn Write, name: &str, l: &RecorderSummary) -> io::Result<()> {
    writeln!(
        out,
        "  {name:<12} {:>9} {:>9} {:>9} {:>9} {:>9} {:>9} {:>9} {:>9} {:>9}",
        us(l.p50 as f64),
        us(l.p75 as f64),
        us(l.p90 as f64),
        us(l.p95 as f64),
        us(l.p99 as f64),
        us(l.p999 as f64),
        us(l.p9999 as f64),
        us(l.max as f64),
        us(l.mean)
    )
}

fn timing(out: &mut dyn Write, name: &str, s: &RecorderSummary) -> io::Result<()> {
    writeln!(
        out,
        "  {name:<12} {:>9} {:>9} {:>9} {:>9} {:>9}",
        us(s.min as f64),
        us(s.mean),
        us(s.stdev),
        us(s.p50 as f64),
        us(s.max as f64)
    )
}

/// `1 thread`, `2 threads`.
fn counted(n: u64, noun: &str) -> String {
    if n == 1 {
        format!("{n} {noun}")
    } else {
        format!("{n} {noun}s")
    }
}
