//! One cell's figures in the layouts people already read: ApacheBench's summary and
//! percentile table, and httperf's rates, reply-rate spread and error names.
//!
//! They are built from what the store kept (metrics, the latency histogram, the per-second
//! series), so a figure the cell lacks is left out rather than printed as a misleading zero.

use std::fmt::Write;

use loadlab_stats::{Moments, Recorder};
use loadlab_store::{metric, CellRecord, LoadModel};

/// ab's percentile rows.
const AB_PERCENTILES: [f64; 8] = [50.0, 66.0, 75.0, 80.0, 90.0, 95.0, 98.0, 99.0];

/// httperf's error names for loadlab's classes (`errors.<class>` metrics), in httperf's order;
/// classes httperf has no name for are counted in its `other`, as httperf does.
const HTTPERF_ERRORS: [(&str, &[&str]); 7] = [
    ("client-timo", &["client_timeout"]),
    ("socket-timo", &["connect_timeout"]),
    ("connrefused", &["connrefused"]),
    ("connreset", &["connreset"]),
    ("fd-unavail", &["fd_unavail"]),
    ("addrunavail", &["addr_unavail"]),
    ("other", &["parse", "short_body", "validation", "other"]),
];

fn get(c: &CellRecord, name: &str) -> Option<f64> {
    c.metrics.get(name).copied().filter(|v| v.is_finite())
}

/// The cell's latency distribution, if it was stored and holds anything.
fn latency(c: &CellRecord) -> Option<&Recorder> {
    c.histograms.get("latency").filter(|r| !r.is_empty())
}

/// ab-style lines: rates, times per request, transfer rate and the percentile table.
pub fn ab(c: &CellRecord) -> String {
    let mut out = String::new();
    let t = c.duration_s;
    if let Some(n) = c.load.connections {
        let _ = writeln!(out, "Concurrency Level:      {n}");
    }
    let _ = writeln!(out, "Time taken for tests:   {t:.3} seconds");
    let done = get(c, metric::COMPLETED);
    let failed = get(c, metric::FAILED).or_else(|| get(c, metric::ERRORS));
    if let Some(done) = done {
        let _ = writeln!(out, "Complete requests:      {}", done + failed.unwrap_or(0.0));
    }
    if let Some(failed) = failed {
        let _ = writeln!(out, "Failed requests:        {failed}");
    }
    if let Some(bytes) = get(c, metric::BYTES) {
        let _ = writeln!(out, "Total transferred:      {bytes} bytes");
    }
    let rps = crate::verdict::Measure::Rps.value(c);
    if let Some(rps) = rps {
        let _ = writeln!(out, "Requests per second:    {rps:.2} [#/sec] (mean)");
    }
    // ab's first "time per request" is concurrency over throughput, which only means the mean
    // latency under a closed loop; under open load the measured mean is shown instead.
    match (c.load.model, c.load.connections, rps) {
        (LoadModel::Closed, Some(n), Some(rps)) if rps > 0.0 => {
            let _ =
                writeln!(out, "Time per request:       {:.3} [ms] (mean)", n as f64 * 1e3 / rps);
        }
        _ => {
            let mean = get(c, metric::MEAN_US).or_else(|| latency(c).map(Recorder::mean));
            if let Some(mean) = mean {
                let _ = writeln!(out, "Time per request:       {:.3} [ms] (mean)", mean / 1e3);
            }
        }
    }
    if let Some(rps) = rps.filter(|r| *r > 0.0) {
        let _ = writeln!(
            out,
            "Time per request:       {:.3} [ms] (mean, across all concurrent requests)",
            1e3 / rps
        );
    }
    if let (Some(bytes), true) = (get(c, metric::BYTES), t > 0.0) {
        let _ = writeln!(
            out,
            "Transfer rate:          {:.2} [Kbytes/sec] received",
            bytes / 1024.0 / t
        );
    }
    let _ = writeln!(out, "\nPercentage of the requests served within a certain time (ms)");
    if let Some(r) = latency(c) {
        for p in AB_PERCENTILES {
            let _ = writeln!(out, "  {p:.0}%  {:7.1}", r.percentile(p) as f64 / 1e3);
        }
        let _ = writeln!(out, " 100%  {:7.1} (longest request)", r.max() as f64 / 1e3);
    } else {
        for (p, name) in [(50, metric::P50_US), (90, metric::P90_US), (99, metric::P99_US)] {
            if let Some(v) = get(c, name) {
                let _ = writeln!(out, "  {p}%  {:7.1}", v / 1e3);
            }
        }
    }
    out
}

/// httperf-style lines: request rate, reply rate spread per second, reply time, errors, client
/// CPU and net I/O.
pub fn httperf(c: &CellRecord) -> String {
    let mut out = String::new();
    let t = c.duration_s;
    if let Some(rate) = c.load.rate {
        let unit = if c.load.model == LoadModel::Session { "conn/s" } else { "req/s" };
        let _ = writeln!(out, "Offered rate: {rate:.1} {unit}");
    }
    let done = get(c, metric::COMPLETED);
    let failed = get(c, metric::FAILED).or_else(|| get(c, metric::ERRORS)).unwrap_or(0.0);
    if let (Some(done), true) = (done, t > 0.0) {
        let rate = (done + failed) / t;
        let per = if rate > 0.0 { 1e3 / rate } else { 0.0 };
        let _ = writeln!(out, "Request rate: {rate:.1} req/s ({per:.1} ms/req)");
    }
    // Whole seconds only: a partial last second would read as a false dip.
    let per_second = c.series.completed_per_second(t.floor() as usize);
    if let Some(m) = Moments::of(&per_second) {
        let _ = writeln!(
            out,
            "Reply rate [replies/s]: min {:.1} avg {:.1} max {:.1} stddev {:.1} ({} samples)",
            m.min, m.mean, m.max, m.stdev, m.samples
        );
    }
    let mean = get(c, metric::MEAN_US).or_else(|| latency(c).map(Recorder::mean));
    if let Some(mean) = mean {
        let _ = writeln!(out, "Reply time [ms]: response {:.1}", mean / 1e3);
    }
    let class = |names: &[&str]| -> f64 {
        // Folded from +0.0: an empty f64 sum is -0.0, which would print as "-0".
        names
            .iter()
            .filter_map(|n| get(c, &format!("{}.{n}", metric::ERRORS)))
            .fold(0.0, |a, b| a + b)
    };
    let counts: Vec<String> =
        HTTPERF_ERRORS.iter().map(|(name, classes)| format!("{name} {}", class(classes))).collect();
    let _ = writeln!(out, "Errors: total {failed} {}", counts.join(" "));
    if let Some(cpu) = get(c, metric::CPU_US_PER_REQUEST) {
        let _ = writeln!(out, "Client CPU: {cpu:.1} µs per request");
    }
    if let (Some(bytes), true) = (get(c, metric::BYTES), t > 0.0) {
        let per_s = bytes / t;
        let _ = writeln!(
            out,
            "Net I/O: {:.1} KB/s ({:.1}*10^6 bps)",
            per_s / 1024.0,
            per_s * 8.0 / 1e6
        );
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::testcell::cell;

    #[test]
    fn ab_and_httperf_figures_from_a_cell() {
        let mut c = cell("nginx", "static", 50, 0, 1_000.0);
        c.metrics.insert(metric::COMPLETED.into(), 10_000.0);
        c.metrics.insert(metric::FAILED.into(), 3.0);
        c.metrics.insert("errors.connreset".into(), 2.0);
        c.metrics.insert("errors.short_body".into(), 1.0);
        c.metrics.insert(metric::BYTES.into(), 1_024_000.0);
        let mut r = Recorder::new();
        for us in 1..=1_000 {
            r.record(us * 100);
        }
        c.histograms.insert("latency".into(), r);
        for s in 0..10 {
            c.series.at(s).completed = 1_000 + s as u64;
        }
        let ab = ab(&c);
        assert!(ab.contains("Concurrency Level:      50\n"), "{ab}");
        assert!(ab.contains("Complete requests:      10003\n"), "{ab}");
        assert!(ab.contains("Requests per second:    1000.00 [#/sec] (mean)\n"), "{ab}");
        assert!(ab.contains("Time per request:       50.000 [ms] (mean)\n"), "{ab}");
        assert!(ab.contains("Transfer rate:          100.00 [Kbytes/sec] received"), "{ab}");
        assert!(ab.contains("  50%     50.0\n"), "{ab}");
        assert!(ab.contains(" 100%    100.0 (longest request)"), "{ab}");

        let h = httperf(&c);
        assert!(h.contains("Request rate: 1000.3 req/s (1.0 ms/req)"), "{h}");
        assert!(h.contains("Reply rate [replies/s]: min 1000.0 avg 1004.5 max 1009.0"), "{h}");
        assert!(
            h.contains("Errors: total 3 client-timo 0 socket-timo 0 connrefused 0 connreset 2"),
            "{h}"
        );
        assert!(h.contains("other 1"), "{h}");
    }
}
