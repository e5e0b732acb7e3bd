//! Load that changes over time (`--rate A..B`, `--stages`): the first must-reach at a
//! bounded scale (a ramp 0..2,000 req/s over 5 s against a server the test starts: each second
//! not limited by the client achieves its offered rate within 1%, the total sent is the
//! integral of the shape within one request, and every per-second row is the `--hdr-log`
//! interval of that second, read back with HdrHistogram's own reader), and bad shapes refused
//! with exit 2.

use std::collections::BTreeMap;

use base64::Engine as _;
use hdrhistogram::serialization::interval_log::{IntervalLogIterator, LogEntry};
use hdrhistogram::serialization::Deserializer;
use hdrhistogram::Histogram;
use serde_json::Value;

use super::cli_errors::fails;
use super::{at, bench, uint};
use crate::support::{timing_lock, Behaviour, TestServer};

/// The intervals of an interval log tagged `tag` (`corrected` under a schedule, untagged in
/// the closed loop): second -> (count, p50, p90, p99).
pub(crate) fn intervals(
    path: &std::path::Path,
    tag: Option<&str>,
) -> BTreeMap<u64, (u64, u64, u64, u64)> {
    let bytes = std::fs::read(path).expect("the interval log was written");
    let mut decoder = Deserializer::new();
    let mut out = BTreeMap::new();
    for entry in IntervalLogIterator::new(&bytes) {
        let Ok(LogEntry::Interval(i)) = entry else { continue };
        if i.tag().map(|t| t.as_str()) != tag {
            continue;
        }
        let raw = base64::engine::general_purpose::STANDARD
            .decode(i.encoded_histogram())
            .expect("base64");
        let h: Histogram<u64> = decoder.deserialize(&mut &raw[..]).expect("a V2 histogram");
        let q = |q: f64| h.value_at_quantile(q);
        out.insert(i.start_timestamp().as_secs(), (h.len(), q(0.5), q(0.9), q(0.99)));
    }
    out
}

fn seconds(report: &Value) -> &Vec<Value> {
    at(report, "seconds").as_array().expect("seconds is an array")
}

/// Whether a second's flags say the client, not the server, set its pace.
fn client_limited(row: &Value) -> bool {
    let flags = row["flags"].as_array().expect("flags");
    flags
        .iter()
        .any(|f| matches!(f.as_str(), Some("client_saturated" | "client_starved" | "fd_exhausted")))
}

#[test]
fn a_ramp_offers_its_integral_second_by_second_and_its_rows_are_the_hdr_log() {
    let server = TestServer::start(Behaviour::ok("x"));
    let dir = tempfile::tempdir().expect("temp dir");
    let log = dir.path().join("ramp.hlog");
    let _timing = timing_lock();
    let args = ["--rate", "0..2000", "-d", "5s", "--hdr-log", log.to_str().unwrap()];
    let report = bench(&server.url("/"), &args, 0);
    let rows = seconds(&report);
    assert_eq!(rows.len(), 5, "{report:#}");
    // Rate 400 t: the integral over second s is 200((s+1)^2 - s^2), 5,000 in all.
    let offered: Vec<u64> = rows.iter().map(|r| uint(r, "offered")).collect();
    assert_eq!(offered, [200, 600, 1000, 1400, 1800], "{report:#}");
    let sent = uint(&report, "requests.sent");
    assert!(sent.abs_diff(5000) <= 1, "sent {sent}, the integral is 5,000");
    let mut checked = 0;
    for row in rows.iter().filter(|r| !client_limited(r)) {
        let (offered, achieved) = (uint(row, "offered"), uint(row, "achieved"));
        assert!(achieved.abs_diff(offered) * 100 <= offered, "{row:#}");
        checked += 1;
    }
    // On a machine so busy that every second was the client's, nothing above was checked.
    assert!(checked > 0, "every second client-limited:\n{report:#}");

    let log = intervals(&log, Some("corrected"));
    for row in rows {
        let s = uint(row, "second");
        let (count, p50, p90, p99) = log[&s];
        assert_eq!(count, uint(row, "completed"), "second {s}: {row:#}");
        let row_p = |k: &str| uint(row, k);
        assert_eq!((row_p("p50_us"), row_p("p90_us"), row_p("p99_us")), (p50, p90, p99), "{s}");
    }
    let total: u64 = rows.iter().map(|r| uint(r, "completed")).sum();
    assert_eq!(total, uint(&report, "requests.completed"), "{report:#}");
}

#[test]
fn stages_set_the_duration_and_sessions_take_a_ramp() {
    let server = TestServer::start(Behaviour::ok("x"));
    let report = bench(&server.url("/"), &["--stages", "1s:100..100,1s:100..300"], 0);
    let offered: Vec<u64> = seconds(&report).iter().map(|r| uint(r, "offered")).collect();
    assert_eq!(offered, [100, 200], "{report:#}");
    assert_eq!(at(&report, "duration_s").as_f64(), Some(2.0));
    let args = ["--conn-rate", "0..200", "--calls-per-conn", "2", "-d", "2s"];
    let report = bench(&server.url("/"), &args, 0);
    // 50 then 150 sessions of 2 calls.
    let offered: Vec<u64> = seconds(&report).iter().map(|r| uint(r, "offered")).collect();
    assert_eq!(offered, [100, 300], "{report:#}");
    // A fixed rate has no rows of every second.
    let report = bench(&server.url("/"), &["--rate", "100", "-d", "1s"], 0);
    assert!(report.get("seconds").is_none(), "{report:#}");
}

/// A shape that ends within a second (1.5 s here) has its partial last second as a row too,
/// marked with its length, so that its rows add up to its totals.
#[test]
fn a_partial_last_second_is_a_row_and_the_rows_add_up_to_the_totals() {
    let server = TestServer::start(Behaviour::ok("x"));
    let report = bench(&server.url("/"), &["--stages", "1500ms:100..100"], 0);
    crate::schema::assert_valid(&crate::schema::validator(), &report);
    let rows = seconds(&report);
    assert_eq!(rows.len(), 2, "{report:#}");
    assert!(rows[0].get("partial_s").is_none(), "{report:#}");
    assert_eq!(rows[1]["partial_s"].as_f64(), Some(0.5), "{report:#}");
    let offered: Vec<u64> = rows.iter().map(|r| uint(r, "offered")).collect();
    assert_eq!(offered, [100, 50], "{report:#}");
    for key in ["completed", "failed"] {
        let total: u64 = rows.iter().map(|r| uint(r, key)).sum();
        assert_eq!(total, uint(&report, &format!("requests.{key}")), "{key}: {report:#}");
    }
}

#[test]
fn bad_shapes_are_refused_with_exit_2_before_any_load() {
    let server = TestServer::start(Behaviour::ok("never asked"));
    let url = server.url("/");
    for (args, says) in [
        (vec!["--rate", "0..x"], "not a level"),
        (vec!["--stages", "30s:10,5q:20"], "no known unit"),
        (vec!["--stages", "10s:0..0"], "nothing to send"),
        (vec!["--rate", "0..100", "-n", "10"], "needs a duration"),
        (vec!["--rate", "0..100", "--warmup", "1s"], "no warm-up"),
    ] {
        let all: Vec<&str> = ["bench", url.as_str()].into_iter().chain(args.clone()).collect();
        let stderr = fails(&all, 2);
        assert!(stderr.contains(says), "{args:?}: {stderr}");
        assert_eq!(stderr.trim().lines().count(), 1, "one line: {stderr}");
    }
    assert_eq!(server.requests(), 0);
}

/// The second must-reach: against a server that serves at most 350 req/s and queues
/// beyond (the test support's `Capacity`), one ramp finds the knee within 15% of 350 and of a
/// sweep of 25 req/s steps' knee, in under a fifth of that sweep's time.
#[test]
fn a_ramp_finds_the_knee_of_a_350_per_second_server_in_a_fifth_of_a_sweeps_time() {
    const CAPACITY: f64 = 350.0;
    let server =
        TestServer::start(Behaviour::Capacity { per_second: CAPACITY, body: b"served".to_vec() });
    let url = server.url("/");
    let _timing = timing_lock();
    let run = |args: &[&str]| {
        let started = std::time::Instant::now();
        let all: Vec<&str> =
            ["sweep", url.as_str()].into_iter().chain(args.iter().copied()).collect();
        let (report, output) = crate::support::run_json(&all);
        super::assert_exit(&output, 0);
        (report, started.elapsed())
    };
    let ramp_args = ["--ramp", "200..500", "--ramp-duration", "6s", "--max-connections", "200"];
    let (ramp, ramp_took) = run(&ramp_args);
    let sweep_args = [
        "--rates",
        "100..600:25",
        "--step-duration",
        "2s",
        "--stop-after-knee",
        "1",
        "--max-connections",
        "200",
    ];
    let (sweep, sweep_took) = run(&sweep_args);
    let knee = at(&ramp, "knee");
    let found = knee["knee_rps"].as_f64().unwrap_or_else(|| panic!("no knee:\n{ramp:#}"));
    let swept = at(&sweep, "knee.offered_rps").as_f64();
    let swept = swept.unwrap_or_else(|| panic!("the sweep found no knee:\n{sweep:#}"));
    eprintln!("ramp knee {found} in {ramp_took:?}; sweep knee {swept} in {sweep_took:?}");
    let near = |a: f64, b: f64| (a - b).abs() <= 0.15 * b;
    assert!(near(found, CAPACITY), "ramp knee {found} vs capacity 350:\n{ramp:#}");
    assert!(near(found, swept), "ramp knee {found} vs sweep knee {swept}:\n{ramp:#}");
    assert_eq!(at(knee, "reason"), "throughput", "{ramp:#}");
    let sentence = at(&ramp, "sentence").as_str().unwrap();
    assert!(sentence.contains("req/s offered (second"), "{sentence}");
    assert!(
        ramp_took * 5 < sweep_took,
        "ramp {ramp_took:?}, sweep {sweep_took:?}: not a fifth of the sweep's time"
    );
}

/// Closed-loop stages (k6's ramping VUs): `-c` with a ramp or stages opens and closes
/// connections on schedule, and each second's row says how many were open.
#[test]
fn connections_open_and_close_on_schedule() {
    let server = TestServer::start(Behaviour::ok("x"));
    let open = |report: &Value| -> Vec<u64> {
        seconds(report).iter().map(|r| uint(r, "connections_open")).collect()
    };
    // Level 2t, rounded down: at most 1, 3, 5, 7 open in seconds 0..4.
    let report = bench(&server.url("/"), &["-c", "0..8", "-d", "4s"], 0);
    let up = open(&report);
    assert_eq!(up.len(), 4, "{report:#}");
    assert!(up.windows(2).all(|w| w[0] <= w[1]), "rising: {up:?}");
    assert!(up[0] <= 1 && up[3] >= 5 && up[3] <= 7, "{up:?}");
    assert!(uint(&report, "requests.completed") > 0);
    // A closed loop offers no rate: each second says nothing of one, not 0.
    assert!(seconds(&report).iter().all(|r| r["offered"].is_null()), "{report:#}");
    crate::schema::assert_valid(&crate::schema::validator(), &report);
    // 4 held for a second, then down to 0 over two: at most 2 open in the last second.
    let report = bench(&server.url("/"), &["-c", "1s:4..4,2s:4..0"], 0);
    let down = open(&report);
    assert_eq!(down.len(), 3, "{report:#}");
    assert_eq!(down[0], 4, "{down:?}");
    assert!(down[2] <= 2, "falling: {down:?}");
    assert!(uint(&report, "connections.opened") >= 4, "{report:#}");
}
