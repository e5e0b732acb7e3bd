//! The open loop (`--rate`): latency counted from each request's due time, so that a server
//! that stalls cannot hide its stalls by making the client wait (coordinated omission); and
//! the offered rate kept against a real nginx, with fixed and Poisson arrivals.

use std::time::Duration;

use serde_json::Value;

use super::{at, bench, float, strings, uint};
use crate::support::{require_nginx, timing_lock, Behaviour, TestServer};

/// Every error class in a report is zero.
pub fn assert_no_errors(report: &Value) {
    let errors = at(report, "errors").as_object().expect("errors is an object");
    assert!(errors.values().all(|n| n.as_u64() == Some(0)), "{report:#}");
    assert_eq!(uint(report, "requests.failed"), 0, "{report:#}");
}

/// The longest any arrival was sent after its due time, in seconds.
fn late_max_s(report: &Value) -> f64 {
    uint(report, "rate.late_max_us") as f64 / 1e6
}

/// A request's latency from its due time includes its service time, so the corrected
/// distribution lies above the service-time one at every percentile.
fn assert_corrected_dominates(report: &Value) {
    for p in ["p50", "p90", "p99", "max"] {
        let corrected = uint(report, &format!("latency_us.{p}"));
        let service = uint(report, &format!("service_time_us.{p}"));
        assert!(corrected >= service, "{p}: corrected {corrected} < service {service}");
    }
}

/// The scenario: a server that freezes for 200 ms once a second, offered 1,000 req/s
/// through at most 10 connections. During a freeze the 10 connections each hold a request the
/// server sits on, and the ~200 requests due meanwhile wait in the client, unsent. Counted from
/// their due time they waited up to 200 ms: about 20% of all requests, spread evenly over
/// 0-200 ms, so the corrected p99 is near 190 ms. Counted from when they were sent (what a
/// closed-loop tool reports) they look fast: only the 10 caught in the server per freeze, 1%
/// of the requests, took long.
///
/// That 1% sits exactly at the service time's p99, which may land on either side of it; so the
/// service time is judged at p95 (and its mean), where the stalled requests are far out of
/// reach, and the corrected figures at p95 and p99, where they must show.
#[test]
fn freezing_server_shows_in_corrected_latency_not_in_service_time() {
    let _timing = timing_lock();
    let freeze = Behaviour::Freeze {
        period: Duration::from_secs(1),
        pause: Duration::from_millis(200),
        body: b"thawed".to_vec(),
    };
    let server = TestServer::start(freeze);
    let report = bench(
        &server.url("/"),
        &["--rate", "1000", "--max-connections", "10", "-d", "3s", "--timeout", "5s"],
        0,
    );
    assert_eq!(at(&report, "mode"), "open", "{report:#}");
    assert_no_errors(&report);
    // The run covers three whole freezes (each sits mid-second of the server's clock).
    assert!(uint(&report, "requests.completed") > 2_500, "{report:#}");
    assert_eq!(uint(&report, "connections.limit"), 10, "{report:#}");
    assert!(uint(&report, "connections.peak") <= 10, "{report:#}");

    let corrected_p99 = uint(&report, "latency_us.p99");
    let corrected_p95 = uint(&report, "latency_us.p95");
    let service_p95 = uint(&report, "service_time_us.p95");
    let (corrected_mean, service_mean) =
        (float(&report, "latency_us.mean"), float(&report, "service_time_us.mean"));
    assert!(corrected_p99 >= 150_000, "corrected p99 {corrected_p99} us:\n{report:#}");
    // 20% of requests wait 0-200 ms: the 95th percentile is near 150 ms.
    assert!(corrected_p95 >= 100_000, "corrected p95 {corrected_p95} us:\n{report:#}");
    assert!(
        service_p95 * 10 < corrected_p99,
        "service p95 {service_p95} us is not far below corrected p99 {corrected_p99} us"
    );
    // The means: ~20 ms from due time (20% waiting 100 ms on average), ~2 ms from sending
    // (1% waiting 100 ms on average, plus loopback time).
    assert!(
        service_mean * 4.0 < corrected_mean,
        "service mean {service_mean} us, corrected mean {corrected_mean} us"
    );
    assert_corrected_dominates(&report);

    // The client saw that it could not keep its schedule and says so, beside the figures.
    assert!(!at(&report, "rate.schedule_kept").as_bool().expect("bool"), "{report:#}");
    assert!(uint(&report, "rate.late_max_us") >= 150_000, "{report:#}");
    let warnings = strings(&report, "warnings");
    assert!(warnings.iter().any(|w| w.contains("schedule was not kept")), "{warnings:?}");
    assert!(warnings.iter().any(|w| w.contains("allowed connections were busy")), "{warnings:?}");
}

/// The rate is kept: achieved within 1% of offered and nothing left unsent. How late sends
/// were is checked at the median, which stays in tens of microseconds. `rate.schedule_kept`
/// (99% sent within 1 ms of due) is true on a quiet machine, but on one whose two CPUs other
/// work shares, the scheduler's delays alone pass 1 ms at the 99th percentile while the rate
/// is still kept exactly (measured here: 5 runs of 5 false at a load average of 2.2, true when
/// idle); so the test checks that the flag says what the figures say, not its value.
#[test]
fn fixed_rate_of_5000_is_kept_against_nginx() {
    let nginx = require_nginx!(super::nginx_bench::FILES);
    let _timing = timing_lock();
    let report = bench(&nginx.url("/hello.txt"), &["--rate", "5000", "-d", "2s"], 0);
    assert_eq!(at(&report, "mode"), "open", "{report:#}");
    assert_eq!(float(&report, "rate.offered_rps"), 5000.0, "{report:#}");
    // Achieved counts what completes inside the 2 s window: a stall of the machine at its end
    // leaves the requests due during it in flight, which the run shows as lateness (what is
    // due before the end is sent at the end). Within 1% of offered, less those.
    let achieved = float(&report, "rate.achieved_rps");
    let stalled = 5000.0 * late_max_s(&report) / 2.0;
    assert!(achieved <= 5050.0, "achieved {achieved} req/s:\n{report:#}");
    assert!(achieved >= 4950.0 - stalled, "achieved {achieved} req/s:\n{report:#}");
    assert_eq!(uint(&report, "rate.not_sent"), 0, "{report:#}");
    assert!(uint(&report, "rate.late_p50_us") < 1_000, "{report:#}");
    let kept = uint(&report, "rate.late_p99_us") <= 1_000;
    assert_eq!(at(&report, "rate.schedule_kept"), kept, "{report:#}");
    assert_no_errors(&report);
    assert_eq!(uint(&report, "status.200"), uint(&report, "requests.completed"), "{report:#}");
    // Keep-alive connections are reused, and the pool grows only when none is idle, so it never
    // holds more connections than requests were outstanding at once. By Little's law those are
    // at most the requests due within the longest due-to-done latency, plus one per worker.
    // On a quiet machine that is a handful; after a 70 ms stall (seen in CI) a few hundred,
    // which is what an open loop must open to send overdue requests at once.
    let opened = uint(&report, "connections.opened");
    let peak = uint(&report, "connections.peak");
    let threads = uint(&report, "client.threads");
    let outstanding = 5000.0 * uint(&report, "latency_us.max") as f64 / 1e6;
    assert!(opened >= 1 && opened == peak, "{report:#}");
    assert!(peak as f64 <= outstanding + threads as f64 + 1.0, "{report:#}");
    if kept {
        assert!(opened <= 200, "{report:#}");
    }
    assert_corrected_dominates(&report);
    // Nothing else is wrong: at most the schedule warning above, and, when a loaded machine
    // kept the client off its CPU (what makes a schedule slip), the starvation that explains it.
    let warnings = strings(&report, "warnings");
    assert!(
        warnings
            .iter()
            .all(|w| w.contains("schedule was not kept") || w.starts_with("client starved")),
        "{warnings:?}"
    );
    let missed = warnings.iter().any(|w| w.contains("schedule was not kept"));
    assert_eq!(missed, !kept, "{warnings:?}");
}

/// Poisson arrivals have the offered mean rate; over 2 s (4,000 arrivals, a relative standard
/// deviation of 1.6%) the achieved rate falls within 5%. The seed is fixed, so this is one
/// schedule, not a draw per run.
#[test]
fn poisson_arrivals_average_the_offered_rate_against_nginx() {
    let nginx = require_nginx!(super::nginx_bench::FILES);
    let _timing = timing_lock();
    let report =
        bench(&nginx.url("/hello.txt"), &["--rate", "2000", "--arrival", "poisson", "-d", "2s"], 0);
    assert_eq!(at(&report, "config.arrival"), "poisson", "{report:#}");
    // Less what a stall at the window's end left in flight, as above.
    let achieved = float(&report, "rate.achieved_rps");
    let stalled = 2000.0 * late_max_s(&report) / 2.0;
    assert!(achieved <= 2100.0, "achieved {achieved} req/s:\n{report:#}");
    assert!(achieved >= 1900.0 - stalled, "achieved {achieved} req/s:\n{report:#}");
    assert_eq!(uint(&report, "rate.not_sent"), 0, "{report:#}");
    assert_no_errors(&report);
    assert_corrected_dominates(&report);
}

/// Above 1,000 arrivals a second the loop sleeps until its next send rather than wake for each
/// response, and reads the responses that came meanwhile with the kernel's arrival stamps. At
/// 2,000 req/s a send is due every 500 µs; nginx answers in tens of microseconds. Timed when
/// read, every response would look about 500 µs long; stamped, the median is nginx's time.
#[test]
fn responses_read_at_the_next_send_keep_their_arrival_time() {
    let nginx = require_nginx!(super::nginx_bench::FILES);
    let _timing = timing_lock();
    let report = bench(&nginx.url("/hello.txt"), &["--rate", "2000", "-d", "1s", "-t", "1"], 0);
    assert_no_errors(&report);
    let completed = uint(&report, "requests.completed");
    assert!((1_950..=2_050).contains(&completed), "{report:#}");
    // Service time is from send to arrival; a response read at the next send would take the
    // 500 µs gap with it at the median.
    let service_p50 = uint(&report, "service_time_us.p50");
    assert!(service_p50 < 300, "service p50 {service_p50} µs: read time, not arrival\n{report:#}");
    assert_corrected_dominates(&report);
}

/// `--coalesce`: sends wake on a grid, each wake sending what is due (a wake for a response
/// sends what is due too); due times do not move, so the lateness the grid adds is measured.
/// Without it lateness stays in tens of microseconds; with a 2 ms grid an arrival waits for
/// the next grid point or the next response, up to 2 ms (measured: p50 480 µs, p99 1.6 ms).
#[test]
fn coalesced_sends_keep_the_rate_and_report_their_lateness() {
    let nginx = require_nginx!(super::nginx_bench::FILES);
    let _timing = timing_lock();
    let args = ["--rate", "5000", "-d", "1s", "-t", "1", "--coalesce", "2ms"];
    let report = bench(&nginx.url("/hello.txt"), &args, 0);
    assert_no_errors(&report);
    assert_eq!(uint(&report, "config.coalesce_us"), 2_000, "{report:#}");
    assert_eq!(at(&report, "rate.sends"), "grid", "{report:#}");
    let achieved = float(&report, "rate.achieved_rps");
    assert!((4_900.0..=5_050.0).contains(&achieved), "{report:#}");
    let (p50, p99) = (uint(&report, "rate.late_p50_us"), uint(&report, "rate.late_p99_us"));
    assert!(p50 >= 150 && p99 >= 800, "late p50 {p50} µs, p99 {p99} µs\n{report:#}");
    assert_corrected_dominates(&report);
}

/// A counted schedule spans its arrivals' intervals: N arrivals at R per second take N/R
/// seconds, each standing for the interval up to the next. Taken between the first and the
/// last arrival instead, 200 at 200/s read 201 req/s and one request at 10/s read 400 (its own
/// latency). Holds for one worker or two (whose arrivals interleave), for the open loop and
/// for sessions; the server answers in well under an interval, so the rate is the offered one.
#[test]
fn a_counted_schedule_reads_as_its_offered_rate() {
    let _timing = timing_lock();
    let server = TestServer::start(Behaviour::ok("counted"));
    let url = server.url("/");
    for (args, rate, seconds) in [
        (&["--rate", "10", "-n", "1"][..], 10.0, 0.1),
        (&["--rate", "50", "-n", "20", "-t", "1"][..], 50.0, 0.4),
        (&["--rate", "50", "-n", "20", "-t", "2"][..], 50.0, 0.4),
        (&["--conn-rate", "20", "--conns", "5", "--calls-per-conn", "2"][..], 40.0, 0.25),
    ] {
        let report = bench(&url, args, 0);
        assert_no_errors(&report);
        let duration = float(&report, "duration_s");
        // Stretched only by a response that ended after the next arrival was due: a machine
        // stall, which then shows as the last request's latency.
        let slack = uint(&report, "latency_us.max") as f64 / 1e6;
        assert!(
            duration >= seconds - 1e-6 && duration <= seconds + slack,
            "{args:?}: {duration} s for {seconds} s of arrivals\n{report:#}"
        );
        if duration <= seconds + 1e-6 {
            assert!(
                (float(&report, "rate.achieved_rps") - rate).abs() < 1e-6,
                "{args:?}\n{report:#}"
            );
        }
    }
}

/// The report says how the sends went out: by default grouped within the wake-up cost the run
/// measured at start (some microseconds, at most 100), with `--coalesce 0` each at its own due
/// time, with `--coalesce 2ms` on a grid; JSON and the text header alike. A closed loop has no
/// sends to group (`rate` is null).
#[test]
fn the_report_says_how_the_sends_went_out() {
    let _timing = timing_lock();
    let server = TestServer::start(Behaviour::ok("sends"));
    let url = server.url("/");
    let report = bench(&url, &["--rate", "2000", "-d", "300ms"], 0);
    assert_no_errors(&report);
    assert_eq!(at(&report, "rate.sends"), "grouped", "{report:#}");
    let window = uint(&report, "rate.send_window_us");
    assert!((1..=100).contains(&window), "window {window} µs\n{report:#}");
    assert_eq!(uint(&report, "config.coalesce_us"), 0, "no grid was asked for");
    for (coalesce, sends, window) in [("0", "exact", 0), ("2ms", "grid", 2_000)] {
        let report = bench(&url, &["--rate", "2000", "-d", "300ms", "--coalesce", coalesce], 0);
        assert_eq!(at(&report, "rate.sends"), sends, "{report:#}");
        assert_eq!(uint(&report, "rate.send_window_us"), window, "{report:#}");
    }
    let mut cmd = crate::support::loadlab();
    cmd.args(["bench", &url, "--rate", "500", "-d", "200ms"]);
    let out = crate::support::output_within(cmd, crate::support::RUN_LIMIT);
    let text = String::from_utf8_lossy(&out.stdout);
    let said = text.lines().find(|l| l.contains("sends grouped within "));
    assert!(said.is_some_and(|l| l.ends_with(" µs: this machine's wake-up cost")), "{text}");
    let closed = bench(&url, &["-c", "1", "-n", "5"], 0);
    assert!(at(&closed, "rate").is_null(), "{closed:#}");
}
