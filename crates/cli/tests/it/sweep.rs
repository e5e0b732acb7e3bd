//! `loadlab sweep`: the knee found within one step against an in-process server of known
//! capacity, `--stop-after-knee` and `--find-knee`, `--compare` running both targets at every
//! step, and the CSV columns pinned by a snapshot (`tests/snapshots/sweep_csv_columns.txt`;
//! `UPDATE_SNAPSHOTS=1` rewrites it).

use std::fs;
use std::path::PathBuf;
use std::time::Duration;

use serde_json::Value;

use super::{assert_exit, at, float, uint};
use crate::support::{run_json, timing_lock, wait_until, Behaviour, TestServer};

/// The in-process server's capacity, in responses per second.
const CAPACITY: f64 = 600.0;

/// Long enough that a latency spike at a step's end, on a machine busy with other work, does
/// not cost the 1% of the step's requests that would fail it: loadlab counts only what
/// completes within the step (see `knee_is_not_lowered_by_latency` below), so requests in
/// flight at the end count against the achieved rate. With 1 s steps the bisection test
/// failed once in about a dozen runs here, at a load average of 4.5: its 400 req/s step
/// failed, leaving nothing to bisect.
const STEP: &str = "2s";

fn capacity_server() -> TestServer {
    TestServer::start(Behaviour::Capacity { per_second: CAPACITY, body: b"served".to_vec() })
}

/// `loadlab sweep URL ARGS --format json --quiet`, which must exit 0.
fn sweep(url: &str, args: &[&str]) -> Value {
    let all: Vec<&str> = ["sweep", url].into_iter().chain(args.iter().copied()).collect();
    let (report, output) = run_json(&all);
    assert_exit(&output, 0);
    report
}

fn steps(report: &Value) -> &Vec<Value> {
    at(report, "steps").as_array().expect("steps is an array")
}

/// One line per step, for assertion messages: what decided each step's verdict.
fn table(report: &Value) -> String {
    let mut out = String::from("offered achieved completed failed not_sent p99_us trusted flags\n");
    for s in steps(report) {
        out.push_str(&format!(
            "{} {} {} {} {} {} {} {}\n",
            s["offered_rps"],
            s["achieved_rps"],
            s["completed"],
            s["failed"],
            s["not_sent"],
            s["p99_us"],
            s["trusted"],
            s["flags"]
        ));
    }
    out.push_str(&format!("knee {}", report["knee"]));
    out
}

/// The offered rate of each step, in the order they ran.
fn offered(report: &Value) -> Vec<f64> {
    steps(report).iter().map(|s| float(s, "offered_rps")).collect()
}

/// The server answers 600 a second whatever it is offered: 200 and 400 pass (achieved ≥ 99%
/// of offered), 800 cannot, and 600 sits on the edge, so the knee is 400 or 600 and the step
/// after it broke throughput. With `--stop-after-knee 1` the sweep runs exactly one step past
/// the first failing one and no further, though the list goes up to 1,400.
#[test]
fn knee_is_found_within_one_step_of_capacity_and_the_sweep_stops_after_it() {
    let server = capacity_server();
    let _timing = timing_lock();
    let report = sweep(
        &server.url("/"),
        &[
            "--rates",
            "200..1400:200",
            "--step-duration",
            STEP,
            "--max-connections",
            "50",
            "--stop-after-knee",
            "1",
        ],
    );
    let knee = at(&report, "knee");
    let knee_rate = float(knee, "offered_rps");
    assert!(knee_rate == 400.0 || knee_rate == 600.0, "knee at {knee_rate}:\n{}", table(&report));
    assert_eq!(at(knee, "reason"), "throughput", "{report:#}");
    let next = float(knee, "next_offered_rps");
    assert_eq!(next, knee_rate + 200.0, "{report:#}");
    assert!(float(knee, "achieved_rps") >= 0.99 * knee_rate, "{report:#}");
    assert_eq!(at(&report, "knees").as_array().map(Vec::len), Some(1));
    assert_eq!(at(&report, "interrupted"), false);

    // The steps ran in order up to one past the first failing step, and stopped.
    let expected: Vec<f64> = (1..=(next as u32 / 200 + 1)).map(|i| f64::from(i * 200)).collect();
    assert_eq!(offered(&report), expected, "{report:#}");
    for step in steps(&report) {
        let rate = float(step, "offered_rps");
        let achieved = float(step, "achieved_rps");
        // Never more than the server can give, give or take a second's rounding.
        assert!(achieved <= CAPACITY * 1.02, "{rate}: achieved {achieved}:\n{step:#}");
        if rate > CAPACITY {
            assert!(achieved < 0.99 * rate, "{rate}: achieved {achieved}:\n{step:#}");
            // Requests queue behind the server, so the corrected tail grows.
            assert!(uint(step, "p99_us") > 10_000, "{step:#}");
        }
        // An overloaded server is the server's limit, not the client's: every step counts.
        assert_eq!(at(step, "trusted"), true, "{step:#}");
        assert_eq!(uint(step, "failed"), 0, "{step:#}");
        assert_eq!(at(step, "bisect"), false, "{step:#}");
        assert_eq!(uint(step, "host"), 1, "{step:#}");
    }
}

/// `--find-knee` bisects between the last good and the first bad planned step: the steps it
/// adds are marked, lie strictly between the two, and place the knee nearer the capacity.
#[test]
fn find_knee_bisects_between_last_good_and_first_bad() {
    let server = capacity_server();
    let _timing = timing_lock();
    let report = sweep(
        &server.url("/"),
        &["--rates", "400,800", "--step-duration", STEP, "--max-connections", "50", "--find-knee"],
    );
    let all = steps(&report);
    assert_eq!(offered(&report)[..2], [400.0, 800.0], "{report:#}");
    let bisect: Vec<f64> = all[2..].iter().map(|s| float(s, "offered_rps")).collect();
    // At most four bisection steps, each halving the interval: 600 first.
    assert!((1..=4).contains(&bisect.len()), "{}", table(&report));
    assert_eq!(bisect[0], 600.0, "{report:#}");
    for step in &all[2..] {
        assert_eq!(at(step, "bisect"), true, "{step:#}");
        let rate = float(step, "offered_rps");
        assert!(rate > 400.0 && rate < 800.0, "{step:#}");
    }
    for step in &all[..2] {
        assert_eq!(at(step, "bisect"), false, "{step:#}");
    }
    // From 400-800, three or four halvings leave the knee within 50 req/s of the capacity.
    let knee = float(at(&report, "knee"), "offered_rps");
    assert!((CAPACITY - 50.0..=CAPACITY).contains(&knee), "knee at {knee}:\n{report:#}");
    assert_eq!(at(&report, "knee.reason"), "throughput", "{report:#}");
    let next = float(at(&report, "knee"), "next_offered_rps");
    assert!(next > knee && next <= CAPACITY + 100.0, "{report:#}");
}

/// A server with ample capacity (a thread per connection) and 50 ms of latency, offered
/// 100 req/s: it keeps up, so every step passes and the knee lies above the rates tried.
///
/// A timed run counts what ends inside its window, and every sweep step warms up first:
/// counting only the responses to requests due inside the step would make the ~5 requests
/// (rate x latency) still in flight at its end a 5% shortfall, and the step would fail on
/// throughput.
#[test]
fn knee_is_not_lowered_by_latency() {
    let slow = Behaviour::Slow { delay: Duration::from_millis(50), body: b"slow".to_vec() };
    let server = TestServer::start(slow);
    let _timing = timing_lock();
    // STEP, not 1 s: a stall at the step's end leaves its requests in flight, and at 100 req/s
    // over 1 s a 20 ms one would cost the 1% that fails the step.
    let report = sweep(&server.url("/"), &["--rates", "100", "--step-duration", STEP]);
    assert_eq!(at(&report, "knee.reason"), "none", "{}", table(&report));
    assert_eq!(float(at(&report, "knee"), "offered_rps"), 100.0, "{}", table(&report));
}

fn snapshot_path() -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("tests/snapshots/sweep_csv_columns.txt")
}

/// Two short steps of one target, then of two, written with `--csv`: the header lines, one
/// for each case, must match the snapshot, and each row has a value for every column.
#[test]
fn csv_columns_match_the_snapshot_and_compare_runs_both_targets() {
    let first = TestServer::start(Behaviour::ok("first"));
    let second = TestServer::start(Behaviour::ok("second"));
    let dir = tempfile::tempdir().expect("temp dir");
    let single_csv = dir.path().join("single.csv");
    let compare_csv = dir.path().join("compare.csv");
    let common = ["--rates", "100,200", "--step-duration", "300ms"];

    let single = single_csv.to_str().expect("UTF-8 path");
    let mut args = common.to_vec();
    args.extend(["--csv", single]);
    let report = sweep(&first.url("/"), &args);
    assert_eq!(offered(&report), [100.0, 200.0], "{report:#}");

    let compare_path = compare_csv.to_str().expect("UTF-8 path");
    let second_url = second.url("/");
    let mut args = common.to_vec();
    args.extend(["--compare", &second_url, "--csv", compare_path]);
    let before = (first.requests(), second.requests());
    let report = sweep(&first.url("/"), &args);

    // Both targets at every step, the first target first at even steps and second at odd
    // ones, so neither always runs on a machine the other just warmed.
    let order: Vec<(f64, u64)> =
        steps(&report).iter().map(|s| (float(s, "offered_rps"), uint(s, "host"))).collect();
    assert_eq!(order, [(100.0, 1), (100.0, 2), (200.0, 2), (200.0, 1)], "{report:#}");
    for step in steps(&report) {
        let url = if uint(step, "host") == 1 { first.url("/") } else { second.url("/") };
        assert_eq!(at(step, "target"), url.as_str(), "{step:#}");
        // 300 ms at the offered rate: every arrival due in it completed, or was still in
        // flight at its end (more of them after a stall of the machine there), or was never
        // sent; give or take the one due at the very end and one from the warm-up answered
        // inside the step. None failed.
        let expected = (float(step, "offered_rps") * 0.3) as u64;
        let completed = uint(step, "completed");
        let ended =
            completed + uint(step, "failed") + uint(step, "unfinished") + uint(step, "not_sent");
        assert!((expected..=expected + 2).contains(&ended), "{step:#}");
        assert!(completed > 0 && completed <= expected + 2, "{step:#}");
        assert_eq!(uint(step, "failed"), 0, "{step:#}");
    }
    // 100 and 200 req/s for 0.3 s each, after each step's 1 s warm-up: 390 requests reached
    // each server. The last of them may still be on their way to the server's threads when
    // loadlab exits, so the count is awaited, not read at once.
    let after = || (first.requests() - before.0, second.requests() - before.1);
    wait_until(Duration::from_secs(30), || after().0 >= 386 && after().1 >= 386);
    let after = after();
    assert!((386..=394).contains(&after.0) && (386..=394).contains(&after.1), "{after:?}");
    let knees = at(&report, "knees").as_array().expect("knees is an array");
    assert_eq!(knees.len(), 2, "{report:#}");
    assert_eq!(at(&knees[1], "target"), second_url.as_str(), "{report:#}");

    let single = fs::read_to_string(&single_csv).expect("single CSV");
    let compare = fs::read_to_string(&compare_csv).expect("compare CSV");
    for (csv, columns) in [(&single, 12), (&compare, 23)] {
        let lines: Vec<&str> = csv.lines().collect();
        assert_eq!(lines.len(), 3, "a header and one row per rate:\n{csv}");
        for row in &lines[1..] {
            let cells: Vec<&str> = row.split(',').collect();
            assert_eq!(cells.len(), columns, "{csv}");
            // 0.3 s steps have no whole second for the reply-rate moments, and only those
            // are left empty.
            let empty: Vec<usize> =
                cells.iter().enumerate().filter(|(_, c)| c.is_empty()).map(|(i, _)| i).collect();
            let moments: Vec<usize> =
                (0..columns / 11).flat_map(|h| (3..=6).map(move |i| i + 11 * h)).collect();
            assert!(empty.iter().all(|i| moments.contains(i)), "{csv}");
        }
        assert!(lines[1].starts_with("100,") && lines[2].starts_with("200,"), "{csv}");
    }

    let headers = format!(
        "{}\n{}\n",
        single.lines().next().unwrap_or_default(),
        compare.lines().next().unwrap_or_default()
    );
    let path = snapshot_path();
    if std::env::var_os("UPDATE_SNAPSHOTS").is_some() {
        fs::write(&path, &headers).expect("write snapshot");
        return;
    }
    let expected = fs::read_to_string(&path).unwrap_or_else(|e| {
        panic!("{}: {e}; run with UPDATE_SNAPSHOTS=1 to create it", path.display())
    });
    assert!(
        headers == expected,
        "the sweep's CSV columns no longer match {} (UPDATE_SNAPSHOTS=1 rewrites it)\n\
         --- expected ---\n{expected}--- got ---\n{headers}",
        path.display()
    );
}

/// With `--compare`, the table's host column says 1 and 2, so a legend before the table names
/// the URL each is.
#[test]
fn compare_names_host_1_and_host_2_before_the_table() {
    let first = TestServer::start(Behaviour::ok("first"));
    let second = TestServer::start(Behaviour::ok("second"));
    let mut command = crate::support::loadlab();
    command.args(["sweep", &first.url("/a"), "--compare", &second.url("/b")]);
    command.args(["--rates", "50", "--step-duration", "200ms"]);
    let output = crate::support::output_within(command, crate::support::RUN_LIMIT);
    assert_exit(&output, 0);
    let stdout = String::from_utf8_lossy(&output.stdout);
    let header = stdout.lines().position(|l| l.contains(" offered ")).expect("the header");
    let legend: Vec<&str> = stdout.lines().take(header).collect();
    for (host, url) in [(1, first.url("/a")), (2, second.url("/b"))] {
        let line = format!("host {host}: {url}");
        assert!(legend.iter().any(|l| l.trim() == line), "no {line:?} before the table:\n{stdout}");
    }
}
