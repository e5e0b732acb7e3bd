//! What the store keeps of one measured cell: the bench's [`Report`] (the figures `bench`
//! prints, computed once) turned into named metrics (the `metric::` names the report reads),
//! with its distributions, what it counted, the result's per-second series, the sampler's
//! readings and the trust verdict's flags.

use std::collections::BTreeMap;
use std::time::SystemTime;

use loadlab_engine::{BenchConfig, BenchResult, Stop};
use loadlab_store::{metric, CellRecord, LoadModel, LoadSpec, Sample, SecondRecord, StepRecord};
use loadlab_suite::{Cell, Point, StackSource};

use crate::commands::bench::outcome::Report;
use crate::judge::trust::Verdict;

/// The store's record of `cell`, measured with `config` as `r` and reported as `report` (with
/// what limited it, judged), started at `started_at`, with the sampler's readings and the
/// verdict's flags.
pub fn record(
    cell: &Cell,
    (config, r, report): (&BenchConfig, &BenchResult, &Report),
    started_at: SystemTime,
    samples: &[loadlab_lab::Sample],
    verdict: &Verdict,
) -> CellRecord {
    CellRecord {
        ordinal: cell.ordinal,
        stack: cell.stack.label.clone(),
        knobs: knobs_map(cell),
        workload: cell.workload.name().to_string(),
        load: load_spec(cell),
        repetition: cell.repetition,
        started_at,
        duration_s: report.duration_s,
        metrics: metrics(report),
        histograms: report.histograms.clone(),
        series: r.tally.series.clone(),
        seconds: judged_seconds(report),
        steps: visit_steps(report),
        samples: samples.iter().flat_map(store_samples).collect(),
        flags: verdict.store_flags(),
        counted: Some(crate::judge::trust::counted(config)),
        limited_by: Some(report.limited_by.clone()),
        // As judged by the report: the workload's own, the suite's, or `run --slo`'s, which
        // replaces them in the suite before the plan is made.
        slo: cell.workload.spec.slo.as_ref().map(|s| s.text.clone()),
    }
}

/// Under a load that changes over time, every whole second as [`crate::judge::seconds`] judged it
/// (the rows `bench` prints), for the report to draw as rates per second: a partial last
/// second (a stopped cell's) would draw as a dip, and is left out. Nothing for a fixed load.
fn judged_seconds(report: &Report) -> Vec<SecondRecord> {
    let Some(rows) = &report.seconds else { return Vec::new() };
    crate::judge::seconds::whole(rows)
        .iter()
        .cloned()
        .map(|s| SecondRecord {
            // The store keeps a count: the closed loop's none is 0 there (its load says closed).
            offered: s.offered.unwrap_or(0),
            achieved: s.achieved,
            p50_us: s.p50_us,
            p90_us: s.p90_us,
            p99_us: s.p99_us,
            connections_open: s.connections_open,
            flags: s.flags,
        })
        .collect()
}

/// The cell's named figures (`metric::` names), a URL list's per request too.
fn metrics(report: &Report) -> BTreeMap<String, f64> {
    let latency = &report.latency_us;
    let mut metrics = BTreeMap::new();
    let mut put = |k: &str, v: f64| {
        metrics.insert(k.to_string(), v);
    };
    put(metric::RPS, report.rps);
    put(metric::COMPLETED, report.requests.completed as f64);
    put(metric::FAILED, report.requests.failed as f64);
    put(metric::NON_2XX, report.not_2xx.0 as f64);
    if report.not_2xx_asked > 0 {
        put(metric::NON_2XX_ASKED, report.not_2xx_asked as f64);
    }
    put(metric::ERRORS, report.requests.failed as f64);
    put(metric::BYTES, report.bytes.total as f64);
    put(metric::BYTES_BODY, report.bytes.body as f64);
    put(metric::UNFINISHED, report.requests.unfinished as f64);
    put(metric::P50_US, latency.p50 as f64);
    put(metric::P90_US, latency.p90 as f64);
    put(metric::P99_US, latency.p99 as f64);
    put(metric::MEAN_US, latency.mean);
    put(metric::CPU_US_PER_REQUEST, report.client.cpu_us_per_request.unwrap_or(f64::NAN));
    put(metric::CLIENT_CPU_BUSY, report.client.cpu_busy);
    put(metric::CONNECTIONS_OPENED, report.connections.opened as f64);
    put(metric::PEAK_CONNECTIONS, report.connections.peak as f64);
    put(metric::SENT, report.requests.sent as f64);
    put(metric::BYTES_SENT, report.bytes.sent as f64);
    if report.config.keepalive {
        put(metric::KEEPALIVE, report.requests.keepalive as f64);
    }
    put(metric::CPU_USER_S, report.client.cpu_user_s);
    put(metric::CPU_SYS_S, report.client.cpu_sys_s);
    if let Some(n) = report.connections.replies_per_connection {
        put(metric::REPLIES_PER_CONNECTION, n);
    }
    for (class, n) in &report.status_class {
        put(&metric::status_class(class), *n as f64);
    }
    for (class, n) in &report.errors {
        put(&metric::error_class(class), *n as f64);
    }
    if let Some(rate) = &report.rate {
        put(metric::OFFERED_RPS, rate.offered_rps);
        put(metric::ACHIEVED_RPS, rate.achieved_rps);
        put(metric::LATE_P99_US, rate.late_p99_us as f64);
        put(metric::NOT_SENT, rate.not_sent as f64);
    }
    url_metrics(report, &mut put);
    view_metrics(report, &mut put);
    visit_metrics(report, &mut put);
    metrics
}

/// A visit workload's figures, as `bench --visits` reports them: visits completed and failed,
/// completed visits per second, and the visit duration's percentiles.
fn visit_metrics(report: &Report, put: &mut impl FnMut(&str, f64)) {
    let Some(v) = &report.visits else { return };
    put(metric::VISITS, v.completed as f64);
    put(metric::VISITS_FAILED, v.failed as f64);
    put(metric::VISITS_RPS, v.rate_per_s);
    // No completed visit has no duration (the report shows "—"), not one of 0 µs.
    if v.completed > 0 {
        put(metric::VISIT_P50_US, v.duration_us.p50 as f64);
        put(metric::VISIT_P99_US, v.duration_us.p99 as f64);
    }
}

/// A visit workload's steps, each with its figures (`bench --visits`' JSON `steps`); none for
/// other cells.
fn visit_steps(report: &Report) -> Vec<StepRecord> {
    let Some(v) = &report.visits else { return Vec::new() };
    v.steps
        .iter()
        .map(|s| {
            let done = s.completed > 0;
            StepRecord {
                label: s.step.clone(),
                started: s.started,
                completed: s.completed,
                failed: s.failed.clone(),
                p50_us: done.then_some(s.latency_us.p50),
                p99_us: done.then_some(s.latency_us.p99),
            }
        })
        .collect()
}

/// A view workload's figures: views per second and page-load percentiles.
fn view_metrics(report: &Report, put: &mut impl FnMut(&str, f64)) {
    let Some(v) = &report.views else { return };
    put(metric::VIEWS, v.completed as f64);
    put(metric::VIEWS_RPS, v.rps);
    // No completed view has no page-load time (the report shows "—"), not one of 0 µs.
    if v.completed > 0 {
        put(metric::VIEW_P50_US, v.load_time_us.p50 as f64);
        put(metric::VIEW_P99_US, v.load_time_us.p99 as f64);
    }
}

/// A URL list: each request's own figures, named by its method and path
/// (`url.GET /cart.p99_us`), as `bench --urls` reports them. A method and path that several
/// lines share (with other headers or bodies) are told apart by their line, so that no line's
/// figures overwrite another's (`url.GET /cart (line 7).p99_us`).
fn url_metrics(report: &Report, put: &mut impl FnMut(&str, f64)) {
    let Some(urls) = &report.urls else { return };
    // How many lines each method and path has: counted once, not per line (a list may hold
    // thousands).
    let mut lines: BTreeMap<(&str, &str), usize> = BTreeMap::new();
    for u in urls {
        *lines.entry((u.method.as_str(), u.path.as_str())).or_default() += 1;
    }
    for u in urls {
        let path = if lines[&(u.method.as_str(), u.path.as_str())] > 1 {
            format!("{} (line {})", u.path, u.line)
        } else {
            u.path.clone()
        };
        let figures = [
            u.completed as f64,
            u.failed as f64,
            u.not_2xx as f64,
            u.latency_us.p50 as f64,
            u.latency_us.p99 as f64,
        ];
        for (what, v) in metric::URL_FIGURES.iter().zip(figures) {
            put(&metric::url(&u.method, &path, what), v);
        }
        put(&metric::url(&u.method, &path, metric::URL_LINE), u.line as f64);
    }
}

/// The stack's settings as stored with the cell: a lab stack's knobs, and `http3` when it was
/// loaded over HTTP/3 (as `http2` says HTTP/2); an external target's URL (the `url` key tells
/// the report the stack was not the lab's).
fn knobs_map(cell: &Cell) -> BTreeMap<String, serde_json::Value> {
    let knobs = match &cell.stack.source {
        StackSource::Lab(lab) => serde_json::to_value(&lab.knobs),
        StackSource::External(e) => Ok(serde_json::json!({ "url": e.url })),
    };
    let mut map: BTreeMap<String, serde_json::Value> = match knobs {
        Ok(serde_json::Value::Object(map)) => {
            map.into_iter().filter(|(_, v)| !v.is_null()).collect()
        }
        _ => Default::default(),
    };
    if cell.stack.lab_stack().is_some_and(|lab| lab.http3) {
        map.insert("http3".into(), "on".into());
    }
    map
}

fn load_spec(cell: &Cell) -> LoadSpec {
    let l = &cell.load;
    let mut spec = LoadSpec::new(match l.point {
        Point::Closed { .. } => LoadModel::Closed,
        Point::Open { .. } => LoadModel::Open,
        Point::Sessions { .. } => LoadModel::Session,
    });
    match l.point {
        Point::Closed { concurrency } => spec.connections = Some(concurrency as u64),
        Point::Open { rate } => spec.rate = Some(rate),
        Point::Sessions { rate, calls } => {
            spec.rate = Some(rate);
            spec.calls_per_connection = Some(u64::from(calls));
        }
    }
    match l.stop {
        Stop::Count(n) => spec.requests = Some(n),
        Stop::Duration(d) => spec.duration_s = Some(d.as_secs_f64()),
    }
    spec.keepalive = l.connection.keepalive;
    spec.warmup_s = Some(l.warmup.as_secs_f64());
    if let Some(enc) = &l.accept_encoding {
        spec.extra.insert("accept_encoding".into(), enc.clone().into());
    }
    if !l.protocol.tls_resume && cell.stack.knobs().is_some_and(|k| k.tls.is_on()) {
        spec.extra.insert("tls_resume".into(), false.into());
    }
    // The protocol is the stack's (its http2 knob, its http3), so that HTTP/1.1, HTTP/2 and
    // HTTP/3 at the same load are one group, compared; several streams per connection make
    // another load.
    if cell.protocol().streams() > 1 {
        spec.extra.insert("streams".into(), (l.protocol.streams as u64).into());
    }
    // Poisson arrivals at a rate are another load than evenly spaced ones (their bursts
    // queue): said, so that the two are neither grouped nor compared as one. Fixed, the
    // default, is left unsaid.
    let scheduled = !matches!(l.point, Point::Closed { .. });
    if scheduled && l.schedule.arrival == loadlab_load::Arrival::Poisson {
        spec.extra.insert("arrival".into(), "poisson".into());
    }
    // A load that changes over time is its own load (its rate is the shape's mean), drawn
    // second by second in the report.
    if let Some(stages) = l.shape_label() {
        spec.extra.insert(LoadSpec::STAGES.into(), stages.into());
    }
    spec
}

/// The sampler's interval readings as the store keeps them: CPU seconds spent in the interval.
fn store_samples(s: &loadlab_lab::Sample) -> Vec<Sample> {
    let secs = s.interval_ms as f64 / 1000.0;
    let machine = s.machine.as_ref();
    s.tiers
        .iter()
        .map(|t| Sample {
            tier: t.tier.clone(),
            t_ms: s.t_ms,
            cpu_user_s: t.cpu_user_pct / 100.0 * secs,
            cpu_sys_s: t.cpu_sys_pct / 100.0 * secs,
            rss_bytes: t.rss_bytes,
            processes: t.processes as u32,
            loadavg: machine.map_or(0.0, |m| m.load1),
            machine_cpu: machine.map_or(0.0, |m| m.cpu_busy_pct / 100.0),
        })
        .collect()
}

#[cfg(test)]
mod tests {
    use std::time::SystemTime;

    use loadlab_engine::Target;

    use super::*;

    const SUITE: &str = "name = \"s\"\n[[stacks]]\nname = \"nginx\"\n[[workloads]]\n\
                         name = \"hello.txt\"\n[[loads]]\nmodel = \"open\"\nrates = [100]\n\
                         duration = \"3s\"\n[[loads]]\nmodel = \"open\"\nstages = \"3s:0..200\"\n";

    /// A staged cell is stored with its stages and every second as `seconds` judged it (the
    /// rows `bench` prints); a fixed cell with neither.
    #[test]
    fn a_staged_cell_keeps_its_stages_and_every_judged_second() {
        let suite = loadlab_suite::parse(SUITE, "s.toml").unwrap_or_else(|e| panic!("{e}"));
        let plan = loadlab_suite::plan(&suite, false);
        let mut staged = 0;
        for cell in &plan.cells {
            let target = Target::parse("http://127.0.0.1:9/hello.txt").unwrap();
            let mut config = BenchConfig::new(target);
            cell.apply(&mut config);
            let mut r = crate::fake::result(config.pacing, 300, 3.0, 1_000, 0.1);
            for s in 0..3 {
                let b = r.tally.series.at(s);
                (b.due, b.sent) = (50 + 100 * s as u64, 40 + 100 * s as u64);
            }
            let verdict = Verdict::judge(&config, &r);
            let addr = "127.0.0.1:9".parse().expect("an address");
            let report = Report::judged(&config, addr, &r, &verdict);
            let rec = record(cell, (&config, &r, &report), SystemTime::UNIX_EPOCH, &[], &verdict);
            let Some(stages) = cell.load.shape_label() else {
                assert_eq!(rec.load.stages(), None);
                assert!(rec.seconds.is_empty(), "{:?}", rec.seconds);
                continue;
            };
            staged += 1;
            assert_eq!(rec.load.stages(), Some(stages.as_str()));
            let judged: Vec<_> = crate::judge::seconds::of(&config, &r)
                .into_iter()
                .map(|s| {
                    (s.offered.unwrap_or(0), s.achieved, s.p99_us, s.connections_open, s.flags)
                })
                .collect();
            let stored: Vec<_> = rec
                .seconds
                .iter()
                .map(|s| (s.offered, s.achieved, s.p99_us, s.connections_open, s.flags.clone()))
                .collect();
            assert_eq!(stored, judged);
            let offered: Vec<u64> = rec.seconds.iter().map(|s| s.offered).collect();
            assert_eq!(offered, [50, 150, 250]);
        }
        // One staged cell in each of the suite's 3 (default) repetitions.
        assert_eq!((staged, plan.cells.len()), (3, 6));
    }

    /// A cell's record keeps the distributions its bench's report carries, ab's connection
    /// times among them, so that its stored ab block has the table `bench --format ab`
    /// prints from the same figures; and what the runner decided the cell counted.
    #[test]
    fn a_cells_record_keeps_its_reports_distributions_and_what_it_counted() {
        let suite = loadlab_suite::parse(SUITE, "s.toml").unwrap_or_else(|e| panic!("{e}"));
        let plan = loadlab_suite::plan(&suite, false);
        let cell = &plan.cells[0];
        let target = Target::parse("http://127.0.0.1:9/hello.txt").unwrap();
        let mut config = BenchConfig::new(target);
        cell.apply(&mut config);
        let r = crate::fake::result(config.pacing, 300, 3.0, 1_000, 0.1);
        let verdict = Verdict::judge(&config, &r);
        let report = Report::judged(&config, "127.0.0.1:9".parse().unwrap(), &r, &verdict);
        let rec = record(cell, (&config, &r, &report), SystemTime::UNIX_EPOCH, &[], &verdict);

        assert_eq!(rec.counted, Some(loadlab_store::Counted::Requests));
        let h = &rec.histograms;
        let summary = |r: &Option<loadlab_stats::Recorder>| r.as_ref().map(|r| r.summary());
        let t = &report.timings_us;
        assert_eq!(summary(&h.connect), Some(t.connect));
        assert_eq!(summary(&h.waiting), Some(t.waiting));
        assert_eq!(summary(&h.processing), Some(t.processing));
        assert_eq!(h.request_times().map(|r| r.summary()), Some(t.total));
        assert_eq!(summary(&h.latency), Some(report.latency_us));
        assert_eq!(summary(&h.tls), None, "no handshake over http://");
        use loadlab_report::layout::{ab, httperf, to_text, Figures};
        let ab = to_text(ab, &Figures::of_cell(&rec));
        assert!(ab.contains("Connection Times (ms)"), "{ab}");
        let keepalive = format!("Keep-Alive requests:    {}\n", report.requests.keepalive);
        assert_eq!(ab.contains(&keepalive), report.config.keepalive, "{ab}");
        // httperf's lines of what was sent, the connections' lifetimes, the statuses and the
        // client's CPU, as `bench --format httperf` prints them from the same report.
        let h = to_text(httperf, &Figures::of_cell(&rec));
        let c = &report.client;
        let life = &report.connections.lifetime_us;
        for line in [
            format!("Request size [B]: {:.1}\n", report.bytes.sent as f64 / 300.0),
            format!("Connection time [ms]: min {:.1}", life.min as f64 / 1000.0),
            format!("Reply status: 1xx=0 2xx={} 3xx=0", report.status_class["2xx"]),
            format!("CPU time [s]: user {:.2} system {:.2}", c.cpu_user_s, c.cpu_sys_s),
        ] {
            assert!(h.contains(&line), "{line:?} in {h}");
        }
    }
}
