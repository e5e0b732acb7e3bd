//! ApacheBench 2.3's report, field for field and in its number formats, so scripts that parse
//! ab keep working. Two deliberate differences, both from ab's own options: a body length that
//! varies prints as `Variable` (ab -l) instead of failing requests, and the first line names
//! loadlab.

use std::io::{self, Write};

use loadlab_stats::RecorderSummary;
use loadlab_store::LoadModel;

use super::{Figures, Target};

/// ab's percentile table rows; 100 is its "longest request".
const PERCENTILES: [u32; 9] = [50, 66, 75, 80, 90, 95, 98, 99, 100];

/// ab rounds microseconds to whole milliseconds, half up (its `ap_round_ms`).
fn ms(us: f64) -> u64 {
    ((us + 500.0) / 1000.0).floor() as u64
}

/// Writes `f` in ab's layout.
pub fn ab(f: &Figures, out: &mut dyn Write) -> io::Result<()> {
    if let Some(target) = &f.target {
        server(f, target, out)?;
    }
    totals(f, out)?;
    rates(f, out)?;
    times(f, out)?;
    percentiles(f, out)?;
    for w in f.warnings {
        writeln!(out, "WARNING: {w}")?;
    }
    Ok(())
}

/// ab's preamble: who answered, over what, with which document.
fn server(f: &Figures, t: &Target, out: &mut dyn Write) -> io::Result<()> {
    writeln!(out, "This is loadlab {}, printing ApacheBench's report layout", t.loadlab_version)?;
    writeln!(out)?;
    writeln!(out, "Benchmarking {} (be patient)", t.host)?;
    writeln!(out, "Finished {} requests", f.done())?;
    writeln!(out, "\n")?;
    writeln!(out, "Server Software:        {}", t.software.unwrap_or(""))?;
    writeln!(out, "Server Hostname:        {}", t.host)?;
    writeln!(out, "Server Port:            {}", t.port)?;
    if let Some((version, cipher, group)) = t.tls {
        // ab's three lines for https://.
        writeln!(out, "SSL/TLS Protocol:       {version},{cipher}")?;
        if let Some(group) = group {
            writeln!(out, "Server Temp Key:        {group}")?;
        }
        writeln!(out, "TLS Server Name:        {}", t.host)?;
    }
    if t.h2 {
        // ab has no HTTP/2; h2load's wording.
        writeln!(out, "Application protocol:   h2")?;
    }
    writeln!(out)?;
    writeln!(out, "Document Path:          {}", t.path)?;
    match t.document_length {
        Some(n) => writeln!(out, "Document Length:        {n} bytes")?,
        None => writeln!(out, "Document Length:        Variable")?,
    }
    writeln!(out)?;
    Ok(())
}

/// ab's totals: concurrency, time, requests, failures, bytes.
fn totals(f: &Figures, out: &mut dyn Write) -> io::Result<()> {
    if let Some(n) = concurrency(f) {
        writeln!(out, "Concurrency Level:      {n}")?;
    }
    writeln!(out, "Time taken for tests:   {:.3} seconds", f.duration_s)?;
    writeln!(out, "Complete requests:      {}", f.done())?;
    writeln!(out, "Failed requests:        {}", f.failed)?;
    if f.failed > 0 {
        let connect =
            f.errors_of(&["connrefused", "connect_timeout", "fd_unavail", "addr_unavail"]);
        let receive = f.errors_of(&["connreset", "client_timeout", "short_body"]);
        let except = f.errors_of(&["parse", "validation", "other"]);
        writeln!(
            out,
            "   (Connect: {connect}, Receive: {receive}, Length: 0, Exceptions: {except})"
        )?;
    }
    if let Some(n) = f.non_2xx.filter(|n| *n > 0) {
        writeln!(out, "Non-2xx responses:      {n}")?;
    }
    if let Some(n) = f.keepalive {
        writeln!(out, "Keep-Alive requests:    {n}")?;
    }
    if let Some(n) = f.bytes_total {
        writeln!(out, "Total transferred:      {n} bytes")?;
    }
    if let Some(n) = f.bytes_sent.filter(|_| f.request_body) {
        writeln!(out, "Total body sent:        {n}")?;
    }
    if let Some(n) = f.bytes_body {
        writeln!(out, "HTML transferred:       {n} bytes")?;
    }
    Ok(())
}

/// ab's rates: requests per second, the two times per request, the transfer rates.
fn rates(f: &Figures, out: &mut dyn Write) -> io::Result<()> {
    let t = f.duration_s;
    let done = f.done();
    if t <= 0.0 || done == 0 {
        return Ok(());
    }
    let n = done as f64;
    writeln!(out, "Requests per second:    {:.2} [#/sec] (mean)", n / t)?;
    if let Some(mean) = mean_ms(f, n) {
        writeln!(out, "Time per request:       {mean:.3} [ms] (mean)")?;
    }
    writeln!(
        out,
        "Time per request:       {:.3} [ms] (mean, across all concurrent requests)",
        t * 1000.0 / n
    )?;
    if let Some(total) = f.bytes_total {
        let received = total as f64 / 1024.0 / t;
        writeln!(out, "Transfer rate:          {received:.2} [Kbytes/sec] received")?;
        if let Some(sent) = f.bytes_sent.filter(|_| f.request_body) {
            writeln!(out, "                        {:.2} kb/s sent", sent as f64 / 1024.0 / t)?;
            let both = (sent + total) as f64 / 1024.0 / t;
            writeln!(out, "                        {both:.2} kb/s total")?;
        }
    }
    Ok(())
}

/// ab's concurrency: its -c in the closed loop, where every connection always has a request
/// outstanding. Under an open loop or sessions the connections are a cap the schedule may
/// never reach: the most open at once is what the run had.
fn concurrency(f: &Figures) -> Option<u64> {
    if f.model == LoadModel::Closed {
        f.connections
    } else {
        f.peak_connections
    }
}

/// ab's "Time per request (mean)": concurrency x time / requests, which is the mean latency
/// in the closed loop (Little's law: every connection busy all the time). Under an open loop
/// or sessions, connections sit idle between arrivals, so that product says nothing: the mean
/// latency measured (from due time) is given instead.
fn mean_ms(f: &Figures, n: f64) -> Option<f64> {
    match (f.model, f.connections) {
        (LoadModel::Closed, Some(c)) => Some(c as f64 * f.duration_s * 1000.0 / n),
        _ => f.latency_mean_us.map(|us| us / 1000.0),
    }
}

/// ab's connection times.
fn times(f: &Figures, out: &mut dyn Write) -> io::Result<()> {
    let Some(tm) = f.timings.as_ref().filter(|_| f.completed > 0) else { return Ok(()) };
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
    Ok(())
}

/// ab's percentile table.
fn percentiles(f: &Figures, out: &mut dyn Write) -> io::Result<()> {
    let Some(total) = f.percentiles.filter(|r| f.completed > 1 && !r.is_empty()) else {
        return Ok(());
    };
    writeln!(out, "\nPercentage of the requests served within a certain time (ms)")?;
    for p in PERCENTILES {
        if p >= 100 {
            writeln!(out, " 100%  {:5} (longest request)", ms(total.max() as f64))?;
        } else {
            writeln!(out, "  {p}%  {:5}", ms(total.percentile(f64::from(p)) as f64))?;
        }
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
