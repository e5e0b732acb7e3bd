//! A stored cell as [`Figures`]: built from what the store kept (metrics, its distributions,
//! the per-second series). What the store does not keep of a bench (its target, its
//! warnings: the report states the cell's flags beside it), and what a cell stored by an
//! older loadlab lacks (the connection times, what was sent, the client's CPU), is `None`.

use std::collections::BTreeMap;

use loadlab_stats::{Moments, Recorder};
use loadlab_store::{metric, CellRecord, LoadModel};

use super::{Figures, Lifetimes, Schedule, Timings};

/// A count the store kept as a number.
fn count(c: &CellRecord, name: &str) -> Option<u64> {
    c.figure(name).map(|v| v.max(0.0) as u64)
}

impl<'c> Figures<'c> {
    /// What `c` measured, as far as the store kept it.
    pub fn of_cell(c: &'c CellRecord) -> Figures<'c> {
        let h = &c.histograms;
        let latency = h.latency();
        let prefix = format!("{}.", metric::ERRORS);
        let errors = c
            .metrics
            .iter()
            .filter_map(|(name, v)| Some((name.strip_prefix(&prefix)?, *v)))
            .filter(|(_, v)| v.is_finite())
            .map(|(class, v)| (class, v.max(0.0) as u64))
            .collect();
        // Whole seconds only: a partial last second would read as a false dip.
        let per_second = c.series.completed_per_second(c.duration_s.floor() as usize);
        Figures {
            target: None,
            model: c.load.model,
            duration_s: c.duration_s,
            connections: c.load.connections,
            peak_connections: count(c, metric::PEAK_CONNECTIONS),
            connections_opened: count(c, metric::CONNECTIONS_OPENED),
            completed: count(c, metric::COMPLETED).unwrap_or(0),
            failed: count(c, metric::FAILED).or_else(|| count(c, metric::ERRORS)).unwrap_or(0),
            errors,
            status_class: status_class(c),
            non_2xx: count(c, metric::NON_2XX),
            sent: count(c, metric::SENT),
            keepalive: count(c, metric::KEEPALIVE),
            bytes_total: count(c, metric::BYTES),
            bytes_body: count(c, metric::BYTES_BODY),
            bytes_sent: count(c, metric::BYTES_SENT),
            request_body: false,
            latency_mean_us: c.figure(metric::MEAN_US).or_else(|| latency.map(Recorder::mean)),
            percentiles: h.request_times(),
            timings: Timings::of(h),
            waiting_mean_us: h.waiting().map(Recorder::mean),
            connect_mean_us: h.connect().map(Recorder::mean),
            lifetimes: h.lifetime.as_ref().map(|l| Lifetimes {
                lifetime_us: l.summary(),
                replies_per_connection: c.figure(metric::REPLIES_PER_CONNECTION).unwrap_or(0.0),
            }),
            per_second: Moments::of(&per_second),
            cpu_s: c.figure(metric::CPU_USER_S).zip(c.figure(metric::CPU_SYS_S)),
            schedule: schedule(c, latency),
            sessions: None,
            warnings: &[],
        }
    }
}

/// The completed responses by status class, when the cell kept them.
fn status_class(c: &CellRecord) -> Option<BTreeMap<&'static str, u64>> {
    let classes =
        metric::STATUS_CLASSES.map(|class| (class, count(c, &metric::status_class(class))));
    classes
        .iter()
        .any(|(_, n)| n.is_some())
        .then(|| classes.into_iter().map(|(class, n)| (class, n.unwrap_or(0))).collect())
}

/// An open loop's or sessions' schedule, from the figures kept of it.
fn schedule(c: &CellRecord, latency: Option<&Recorder>) -> Option<Schedule> {
    if c.load.model == LoadModel::Closed {
        return None;
    }
    let percentile = |p: f64, name: &str| match latency {
        Some(r) => Some(r.percentile(p)),
        None => count(c, name),
    };
    Some(Schedule {
        offered_rps: c.figure(metric::OFFERED_RPS)?,
        achieved_rps: c.figure(metric::ACHIEVED_RPS).or_else(|| c.figure(metric::RPS))?,
        late_p99_us: count(c, metric::LATE_P99_US).unwrap_or(0),
        not_sent: count(c, metric::NOT_SENT).unwrap_or(0),
        latency_p50_us: percentile(50.0, metric::P50_US)?,
        latency_p99_us: percentile(99.0, metric::P99_US)?,
        latency_max_us: latency.map_or(0, Recorder::max),
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::layout::{ab, httperf, to_text};
    use crate::testcell::{cell, open_cell};

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
        c.histograms.latency = Some(r);
        for s in 0..10 {
            c.series.at(s).completed = 1_000 + s as u64;
        }
        let ab = to_text(ab, &Figures::of_cell(&c));
        assert!(ab.contains("Concurrency Level:      50\n"), "{ab}");
        assert!(ab.contains("Complete requests:      10003\n"), "{ab}");
        assert!(ab.contains("   (Connect: 0, Receive: 3, Length: 0, Exceptions: 0)\n"), "{ab}");
        assert!(ab.contains("Requests per second:    1000.30 [#/sec] (mean)\n"), "{ab}");
        assert!(ab.contains("Time per request:       49.985 [ms] (mean)\n"), "{ab}");
        assert!(ab.contains("Transfer rate:          100.00 [Kbytes/sec] received"), "{ab}");
        // ab's nine rows, in its whole milliseconds.
        assert!(ab.contains("  50%     50\n  66%     66\n"), "{ab}");
        assert!(ab.contains("  99%     99\n 100%    100 (longest request)"), "{ab}");
        assert!(!ab.contains("Connection Times"), "no processing time kept: {ab}");

        let h = to_text(httperf, &Figures::of_cell(&c));
        assert!(h.contains("Request rate: 1000.3 req/s (1.0 ms/req)"), "{h}");
        assert!(h.contains("Reply rate [replies/s]: min 1000.0 avg 1004.5 max 1009.0"), "{h}");
        assert!(
            h.contains("Errors: total 3 client-timo 0 socket-timo 0 connrefused 0 connreset 2"),
            "{h}"
        );
        assert!(h.contains("other 1"), "{h}");
        assert!(!h.contains("Schedule:"), "a closed loop has no schedule: {h}");
    }

    #[test]
    fn an_open_loop_cell_gives_its_schedule_and_abs_table_from_each_requests_start() {
        let mut c = open_cell("nginx", "static", 100.0, 0, 9_000.0);
        for (k, v) in [
            (metric::COMPLETED, 1_000.0),
            (metric::OFFERED_RPS, 100.0),
            (metric::ACHIEVED_RPS, 99.5),
            (metric::LATE_P99_US, 2_500.0),
            (metric::NOT_SENT, 4.0),
        ] {
            c.metrics.insert(k.into(), v);
        }
        let (mut corrected, mut uncorrected) = (Recorder::new(), Recorder::new());
        for _ in 0..10 {
            corrected.record(40_000);
            uncorrected.record(8_000);
        }
        c.histograms.latency = Some(corrected);
        c.histograms.uncorrected = Some(uncorrected);
        let h = to_text(httperf, &Figures::of_cell(&c));
        assert!(
            h.contains(
                "Schedule: offered 100.0 req/s, achieved 99.5 req/s, late p99 2.5 ms, not sent 4\n"
            ),
            "{h}"
        );
        assert!(h.contains("Latency from due time [ms]: p50 40.0 p99 40.0 max 40.0"), "{h}");
        let ab = to_text(ab, &Figures::of_cell(&c));
        assert!(ab.contains("  50%      8\n"), "from each request's start: {ab}");
    }

    /// A cell that kept its connect, waiting and processing times has ab's connection times
    /// table, as `bench --format ab` prints it, and httperf's transfer time.
    #[test]
    fn a_cell_with_its_processing_times_has_abs_connection_times() {
        let mut c = cell("nginx", "static", 4, 0, 100.0);
        c.metrics.insert(metric::COMPLETED.into(), 1_000.0);
        let times = |us: u64| {
            let mut r = Recorder::new();
            for i in 0..1_000 {
                r.record(us + i % 3);
            }
            r
        };
        c.histograms = loadlab_store::Histograms {
            latency: Some(times(9_000)),
            connect: Some(times(1_000)),
            waiting: Some(times(5_000)),
            processing: Some(times(7_000)),
            ..Default::default()
        };
        let ab = to_text(ab, &Figures::of_cell(&c));
        assert!(ab.contains("Connection Times (ms)\n"), "{ab}");
        assert!(ab.contains("Connect:        1    1   0.0      1       1\n"), "{ab}");
        assert!(ab.contains("Processing:     7    7   0.0      7       7\n"), "{ab}");
        assert!(ab.contains("Waiting:        5    5   0.0      5       5\n"), "{ab}");
        assert!(ab.contains("Total:          9    9   0.0      9       9\n"), "{ab}");
        assert!(!ab.contains("TLS:"), "no handshake kept: {ab}");
        let h = to_text(httperf, &Figures::of_cell(&c));
        assert!(h.contains("Reply time [ms]: response 5.0 transfer 2.0\n"), "{h}");
    }

    /// A run that completed nothing still has its connection times rows, its total empty, as
    /// a live bench has them: httperf says the transfer time of the answers it got.
    #[test]
    fn the_rows_of_a_run_that_completed_nothing_are_kept_empty() {
        let (mut waiting, mut processing) = (Recorder::new(), Recorder::new());
        waiting.record(5_000);
        processing.record(7_000);
        let h = loadlab_store::Histograms {
            latency: Some(Recorder::new()),
            connect: Some(Recorder::new()),
            waiting: Some(waiting),
            processing: Some(processing),
            ..Default::default()
        };
        let t = Timings::of(&h).expect("the rows");
        assert_eq!((t.total.count, t.processing.count), (0, 1));
    }
}
