//! `--format ab`: ApacheBench 2.3's report, field for field and in its number formats, so
//! scripts that parse ab keep working. Two deliberate differences, both from ab's own options:
//! a body length that varies prints as `Variable` (ab -l) instead of failing requests, and the
//! first line names loadlab.

use std::io::{self, Write};

use loadlab_engine::BenchResult;
use loadlab_stats::RecorderSummary;

use super::Render;
use loadlab_runner::commands::bench::Report;

pub struct Ab;

/// ab's percentile table rows.
const PERCENTILES: [u32; 9] = [50, 66, 75, 80, 90, 95, 98, 99, 100];

/// ab rounds microseconds to whole milliseconds, half up (its `ap_round_ms`).
fn ms(us: f64) -> u64 {
    ((us + 500.0) / 1000.0).floor() as u64
}

impl Render for Ab {
    fn render(&self, r: &Report, result: &BenchResult, out: &mut dyn Write) -> io::Result<()> {
        server(r, out)?;
        totals(r, out)?;
        times(r, result, out)
    }
}

/// ab's preamble: who answered, over what, with which document.
fn server(r: &Report, out: &mut dyn Write) -> io::Result<()> {
    let done = r.requests.completed + r.requests.failed;
    writeln!(out, "This is loadlab {}, printing ApacheBench's report layout", r.loadlab_version)?;
    writeln!(out)?;
    writeln!(out, "Benchmarking {} (be patient)", r.server.host)?;
    writeln!(out, "Finished {done} requests")?;
    writeln!(out, "\n")?;
    writeln!(out, "Server Software:        {}", r.server.software.as_deref().unwrap_or(""))?;
    writeln!(out, "Server Hostname:        {}", r.server.host)?;
    writeln!(out, "Server Port:            {}", r.server.port)?;
    if let Some(tls) = &r.tls {
        // ab's three lines for https://.
        writeln!(out, "SSL/TLS Protocol:       {},{}", tls.version, tls.cipher)?;
        if let Some(group) = &tls.group {
            writeln!(out, "Server Temp Key:        {group}")?;
        }
        writeln!(out, "TLS Server Name:        {}", r.server.host)?;
    }
    if r.protocol == "h2" {
        // ab has no HTTP/2; h2load's wording.
        writeln!(out, "Application protocol:   h2")?;
    }
    writeln!(out)?;
    writeln!(out, "Document Path:          {}", r.server.path)?;
    if r.body_length.varied {
        writeln!(out, "Document Length:        Variable")?;
    } else {
        writeln!(out, "Document Length:        {} bytes", r.body_length.first.unwrap_or(0))?;
    }
    writeln!(out)?;
    Ok(())
}

/// ab's totals: requests, failures, bytes, rates.
fn totals(r: &Report, out: &mut dyn Write) -> io::Result<()> {
    let e = &r.errors;
    let done = r.requests.completed + r.requests.failed;
    let t = r.duration_s;
    writeln!(out, "Concurrency Level:      {}", concurrency(r))?;
    writeln!(out, "Time taken for tests:   {t:.3} seconds")?;
    writeln!(out, "Complete requests:      {done}")?;
    writeln!(out, "Failed requests:        {}", r.requests.failed)?;
    if r.requests.failed > 0 {
        let connect = e["connrefused"] + e["connect_timeout"] + e["fd_unavail"] + e["addr_unavail"];
        let receive = e["connreset"] + e["client_timeout"] + e["short_body"];
        let except = e["parse"] + e["validation"] + e["other"];
        writeln!(
            out,
            "   (Connect: {connect}, Receive: {receive}, Length: 0, Exceptions: {except})"
        )?;
    }
    let non_2xx: u64 = r.status_class.iter().filter(|(k, _)| **k != "2xx").map(|(_, n)| *n).sum();
    if non_2xx > 0 {
        writeln!(out, "Non-2xx responses:      {non_2xx}")?;
    }
    if r.config.keepalive {
        writeln!(out, "Keep-Alive requests:    {}", r.requests.keepalive)?;
    }
    writeln!(out, "Total transferred:      {} bytes", r.bytes.total)?;
    if r.config.body_bytes > 0 {
        writeln!(out, "Total body sent:        {}", r.bytes.sent)?;
    }
    writeln!(out, "HTML transferred:       {} bytes", r.bytes.body)?;
    if t > 0.0 && done > 0 {
        let n = done as f64;
        writeln!(out, "Requests per second:    {:.2} [#/sec] (mean)", n / t)?;
        writeln!(out, "Time per request:       {:.3} [ms] (mean)", mean_ms(r, n, t))?;
        writeln!(
            out,
            "Time per request:       {:.3} [ms] (mean, across all concurrent requests)",
            t * 1000.0 / n
        )?;
        writeln!(
            out,
            "Transfer rate:          {:.2} [Kbytes/sec] received",
            r.bytes.total as f64 / 1024.0 / t
        )?;
        if r.config.body_bytes > 0 {
            let sent = r.bytes.sent as f64 / 1024.0 / t;
            writeln!(out, "                        {sent:.2} kb/s sent")?;
            let total = (r.bytes.sent + r.bytes.total) as f64 / 1024.0 / t;
            writeln!(out, "                        {total:.2} kb/s total")?;
        }
    }
    Ok(())
}

/// ab's concurrency: its -c in the closed loop, where every connection always has a request
/// outstanding. Under an open loop or sessions the connections are a cap the schedule may
/// never reach: the most open at once is what the run had.
fn concurrency(r: &Report) -> usize {
    if r.mode == "closed" {
        r.config.connections
    } else {
        r.connections.peak
    }
}

/// ab's "Time per request (mean)": concurrency x time / requests, which is the mean latency
/// in the closed loop (Little's law: every connection busy all the time). Under an open loop
/// or sessions, connections sit idle between arrivals, so that product says nothing: the mean
/// latency measured (from due time) is given instead.
fn mean_ms(r: &Report, n: f64, t: f64) -> f64 {
    if r.mode == "closed" {
        r.config.connections as f64 * t * 1000.0 / n
    } else {
        r.latency_us.mean / 1000.0
    }
}

/// ab's connection times, its percentile table, then the warnings.
fn times(r: &Report, result: &BenchResult, out: &mut dyn Write) -> io::Result<()> {
    if r.requests.completed > 0 {
        let tm = &r.timings_us;
        writeln!(out, "\nConnection Times (ms)")?;
        writeln!(out, "              min  mean[+/-sd] median   max")?;
        row(out, "Connect:    ", &tm.connect)?;
        if let Some(tls) = &tm.tls {
            // Not in ab: https:// handshakes, one per new connection.
            row(out, "TLS:        ", tls)?;
        }
        row(out, "Processing: ", &tm.processing)?;
        row(out, "Waiting:    ", &tm.waiting)?;
        row(out, "Total:      ", &tm.total)?;
        // ab's own sanity check on skewed distributions.
        for (name, s) in [("processing", &tm.processing), ("total", &tm.total)] {
            if (s.mean - s.p50 as f64).abs() > s.stdev {
                writeln!(
                    out,
                    "WARNING: The median and mean for the {name} time are not within a normal \
                     deviation\n        These results are probably not that reliable."
                )?;
            }
        }
    }
    if r.requests.completed > 1 {
        let total = &result.tally.timings.total;
        writeln!(out, "\nPercentage of the requests served within a certain time (ms)")?;
        for p in PERCENTILES {
            if p >= 100 {
                writeln!(out, " 100%  {:5} (longest request)", ms(total.max() as f64))?;
            } else {
                writeln!(out, "  {p}%  {:5}", ms(total.percentile(f64::from(p)) as f64))?;
            }
        }
    }
    for w in &r.warnings {
        writeln!(out, "WARNING: {w}")?;
    }
    Ok(())
}

/// One line of ab's "Connection Times (ms)" table.
fn row(out: &mut dyn Write, label: &str, s: &RecorderSummary) -> io::Result<()> {
    writeln!(
        out,
        "{label}{:5} {:4} {:5.1} {:6} {:7}",
        ms(s.min as f64),
        ms(s.mean),
        s.stdev / 1000.0,
        ms(s.p50 as f64),
        ms(s.max as f64)
    )
}
