//! `--format csv`: one header line and one row, for spreadsheets and shell loops; a URL list's
//! requests add columns (`url1`, `url1_completed`, ...), never rows. A load that changes over
//! time has a row for each second instead (`seconds`).

use std::io::{self, Write};

use super::Render;
use loadlab_runner::commands::bench::Report;

pub struct Csv;

impl Render for Csv {
    fn render(&self, r: &Report, out: &mut dyn Write) -> io::Result<()> {
        // A load that changes over time: one row a second, not one for the run.
        match &r.seconds {
            Some(seconds) => super::seconds::csv(seconds, out),
            None => run_row(r, out),
        }
    }
}

/// The run's one row, under its header.
fn run_row(r: &Report, out: &mut dyn Write) -> io::Result<()> {
    let l = &r.latency_us;
    let mut cols: Vec<(&str, String)> = vec![
        ("url", quote(&r.config.url)),
        ("connections", r.config.connections.to_string()),
        ("threads", r.config.threads.to_string()),
        ("keepalive", r.config.keepalive.to_string()),
        ("duration_s", format!("{:.6}", r.duration_s)),
        ("completed", r.requests.completed.to_string()),
        ("failed", r.requests.failed.to_string()),
        ("unfinished", r.requests.unfinished.to_string()),
        ("rps", format!("{:.2}", r.rps)),
        ("mode", r.mode.to_string()),
        ("protocol", r.protocol.to_string()),
        ("offered_rps", r.rate.as_ref().map_or(String::new(), |x| format!("{:.2}", x.offered_rps))),
        ("late_p99_us", r.rate.as_ref().map_or(String::new(), |x| x.late_p99_us.to_string())),
        ("not_sent", r.rate.as_ref().map_or(String::new(), |x| x.not_sent.to_string())),
        ("bytes_total", r.bytes.total.to_string()),
        ("bytes_body", r.bytes.body.to_string()),
        ("latency_min_us", l.min.to_string()),
        ("latency_mean_us", format!("{:.1}", l.mean)),
        ("latency_stdev_us", format!("{:.1}", l.stdev)),
        ("latency_p50_us", l.p50.to_string()),
        ("latency_p75_us", l.p75.to_string()),
        ("latency_p90_us", l.p90.to_string()),
        ("latency_p95_us", l.p95.to_string()),
        ("latency_p99_us", l.p99.to_string()),
        ("latency_p999_us", l.p999.to_string()),
        ("latency_p9999_us", l.p9999.to_string()),
        ("latency_max_us", l.max.to_string()),
    ];
    for (class, n) in &r.errors {
        cols.push((class, n.to_string()));
    }
    let cpu = r.client.cpu_us_per_request.map_or(String::new(), |v| format!("{v:.3}"));
    cols.extend([
        ("cpu_user_s", format!("{:.3}", r.client.cpu_user_s)),
        ("cpu_sys_s", format!("{:.3}", r.client.cpu_sys_s)),
        ("cpu_us_per_request", cpu),
        ("non_2xx", r.not_2xx.0.to_string()),
        ("saturated", r.client.saturated.to_string()),
        ("starved", r.client.starved.to_string()),
        ("network_bound", r.client.network_bound.to_string()),
        ("interrupted", r.interrupted.to_string()),
        ("warnings", r.warnings.len().to_string()),
    ]);
    // A replay: what was replayed and skipped. A URL list: each request's figures, as
    // columns urlK_* (K its place in the list), so the run stays one row.
    if let Some(replay) = &r.replay {
        cols.push(("replayed", replay.replayed.to_string()));
        cols.push(("skipped", replay.skipped.values().sum::<u64>().to_string()));
    }
    let mut url_cols = Vec::new();
    for (k, u) in r.urls.iter().flatten().enumerate() {
        let k = k + 1;
        let timed = |v: u64| if u.completed > 0 { v.to_string() } else { String::new() };
        url_cols.extend([
            (format!("url{k}"), quote(&format!("{} {}", u.method, u.path))),
            (format!("url{k}_line"), u.line.to_string()),
            (format!("url{k}_weight"), u.weight.to_string()),
            (format!("url{k}_completed"), u.completed.to_string()),
            (format!("url{k}_failed"), u.failed.to_string()),
            (format!("url{k}_p50_us"), timed(u.latency_us.p50)),
            (format!("url{k}_p99_us"), timed(u.latency_us.p99)),
        ]);
        for (class, n) in &u.status_class {
            url_cols.push((format!("url{k}_{class}"), n.to_string()));
        }
    }
    cols.extend(url_cols.iter().map(|(k, v)| (k.as_str(), v.clone())));
    let header: Vec<&str> = cols.iter().map(|(k, _)| *k).collect();
    let row: Vec<&str> = cols.iter().map(|(_, v)| v.as_str()).collect();
    writeln!(out, "{}", header.join(","))?;
    writeln!(out, "{}", row.join(","))
}

/// RFC 4180 quoting for a field that may hold commas or quotes.
fn quote(s: &str) -> String {
    if s.contains([',', '"', '\n', '\r']) {
        format!("\"{}\"", s.replace('"', "\"\""))
    } else {
        s.to_string()
    }
}
