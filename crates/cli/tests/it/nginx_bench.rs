//! `loadlab bench` against a real nginx serving a 13-byte file: exact counts and byte totals,
//! keep-alive and not, timed runs, warm-up, validation, methods nginx refuses, threads, and
//! the CSV outputs. Needs nginx (skipped locally without it, required in CI).

use std::fs;

use super::{assert_accounted, at, bench, float, strings, uint};
use crate::support::require_nginx;

pub const HELLO: &[u8] = b"hello, world!";
pub const FILES: &[(&str, &[u8])] = &[("hello.txt", HELLO)];
/// `printf 'hello, world!' | sha256sum`
const HELLO_SHA256: &str = "68e656b251e67e8358bef8483ab0d51c6619f3e7a1a9f0e75838d41ff368f728";

#[test]
fn keepalive_counts_and_bytes_are_exact() {
    let nginx = require_nginx!(FILES);
    let report = bench(&nginx.url("/hello.txt"), &["-n", "1000", "-c", "10"], 0);
    assert_accounted(&report, 1000);
    assert_eq!(uint(&report, "requests.completed"), 1000, "{report:#}");
    assert_eq!(uint(&report, "bytes.body"), 13_000, "{report:#}");
    assert_eq!(uint(&report, "status.200"), 1000, "{report:#}");
    assert_eq!(uint(&report, "status_class.2xx"), 1000, "{report:#}");
    assert_eq!(uint(&report, "body_length.first"), 13, "{report:#}");
    assert_eq!(report["body_length"]["varied"], false, "{report:#}");
    let software = at(&report, "server.software").as_str().unwrap_or_default();
    assert!(software.starts_with("nginx"), "{report:#}");
    // Keep-alive: every response left its connection open, and no connection was opened
    // twice. (How many of the 10 opened at all depends on when the second thread started.)
    assert_eq!(uint(&report, "requests.keepalive"), 1000, "{report:#}");
    assert!(uint(&report, "requests.connections_opened") <= 10, "{report:#}");
    assert_eq!(uint(&report, "latency_us.count"), 1000, "{report:#}");
    let (min, p50, max) = (
        uint(&report, "latency_us.min"),
        uint(&report, "latency_us.p50"),
        uint(&report, "latency_us.max"),
    );
    assert!(min <= p50 && p50 <= max && max > 0, "{report:#}");
    // nginx's heads are identical in length, so every response is the same size.
    let total = uint(&report, "bytes.total");
    assert!(total > 13_000 && total.is_multiple_of(1000), "{report:#}");
}

#[test]
fn no_keepalive_opens_a_connection_per_request() {
    let nginx = require_nginx!(FILES);
    let report = bench(&nginx.url("/hello.txt"), &["-n", "200", "-c", "4", "--no-keepalive"], 0);
    assert_accounted(&report, 200);
    assert_eq!(uint(&report, "requests.completed"), 200, "{report:#}");
    assert_eq!(uint(&report, "requests.connections_opened"), 200, "{report:#}");
    assert_eq!(uint(&report, "requests.keepalive"), 0, "{report:#}");
    assert_eq!(uint(&report, "bytes.body"), 2600, "{report:#}");
    assert_eq!(uint(&report, "timings_us.connect.count"), 200, "{report:#}");
}

#[test]
fn timed_run_lasts_its_duration() {
    let nginx = require_nginx!(FILES);
    let report = bench(&nginx.url("/hello.txt"), &["-d", "1s", "-c", "2"], 0);
    let duration = float(&report, "duration_s");
    assert!((0.9..1.5).contains(&duration), "{report:#}");
    assert!(float(&report, "rps") > 0.0, "{report:#}");
    assert!(uint(&report, "throughput.per_second.samples") >= 1, "{report:#}");
    assert_eq!(report["interrupted"], false, "{report:#}");
    assert_eq!(uint(&report, "requests.failed"), 0, "{report:#}");
    // The per-second series holds every completed request, and nothing else.
    let series = at(&report, "throughput.series").as_array().expect("series array");
    let in_series: u64 = series.iter().map(|b| b["completed"].as_u64().expect("count")).sum();
    assert_eq!(in_series, uint(&report, "requests.completed"), "{report:#}");
}

#[test]
fn warmup_requests_are_not_counted() {
    let nginx = require_nginx!(FILES);
    let report = bench(&nginx.url("/hello.txt"), &["-n", "500", "-c", "4", "--warmup", "300ms"], 0);
    assert_accounted(&report, 500);
    assert_eq!(uint(&report, "requests.completed"), 500, "{report:#}");
    assert_eq!(uint(&report, "bytes.body"), 500 * 13, "{report:#}");
    assert_eq!(uint(&report, "status.200"), 500, "{report:#}");
    assert_eq!(float(&report, "config.warmup_s"), 0.3, "{report:#}");
}

#[test]
fn expect_body_sha256_of_the_file() {
    let nginx = require_nginx!(FILES);
    let url = nginx.url("/hello.txt");
    let report = bench(&url, &["-n", "100", "-c", "4", "--expect-body-sha256", HELLO_SHA256], 0);
    assert_accounted(&report, 100);
    assert_eq!(uint(&report, "requests.failed"), 0, "{report:#}");

    let wrong = HELLO_SHA256.replace('6', "7");
    let report = bench(&url, &["-n", "100", "-c", "4", "--expect-body-sha256", &wrong], 0);
    assert_accounted(&report, 100);
    assert_eq!(uint(&report, "errors.validation"), 100, "{report:#}");
    // Failed validation is still an answer from the server, so not "unreachable" (exit 3).
    assert_eq!(uint(&report, "status.200"), 100, "{report:#}");
}

#[test]
fn post_to_a_static_file_is_405_and_warned_about() {
    let nginx = require_nginx!(FILES);
    let args = ["-n", "50", "-c", "2", "-m", "POST", "--body-string", "a=1&b=2"];
    let report = bench(&nginx.url("/hello.txt"), &args, 0);
    assert_accounted(&report, 50);
    // Without --expect-status a 405 is a completed request, with a warning beside it.
    assert_eq!(uint(&report, "requests.completed"), 50, "{report:#}");
    assert_eq!(uint(&report, "status.405"), 50, "{report:#}");
    assert_eq!(uint(&report, "status_class.4xx"), 50, "{report:#}");
    // Every request byte sent, head and body, as ab's "Total body sent" counts them.
    let host = nginx.url("/").trim_start_matches("http://").trim_end_matches('/').to_string();
    let request = format!(
        "POST /hello.txt HTTP/1.1\r\nHost: {host}\r\nUser-Agent: loadlab/{}\r\nAccept: */*\r\n\
         Content-Length: 7\r\n\r\na=1&b=2",
        env!("CARGO_PKG_VERSION")
    );
    assert_eq!(uint(&report, "bytes.sent"), 50 * request.len() as u64, "{report:#}");
    let warnings = strings(&report, "warnings");
    assert!(warnings.iter().any(|w| w.contains("not 2xx")), "{warnings:?}");
}

#[test]
fn threads_split_the_connections() {
    let nginx = require_nginx!(FILES);
    let report = bench(&nginx.url("/hello.txt"), &["-n", "400", "-t", "2", "-c", "4"], 0);
    assert_accounted(&report, 400);
    assert_eq!(uint(&report, "requests.completed"), 400, "{report:#}");
    assert_eq!(uint(&report, "config.threads"), 2, "{report:#}");
    assert_eq!(uint(&report, "client.threads"), 2, "{report:#}");
    // At most two connections per thread, each opened once (nginx keeps them alive); whether
    // the second thread starts before the first has finished is up to the scheduler.
    assert!(uint(&report, "requests.connections_opened") <= 4, "{report:#}");
    assert!(uint(&report, "client.peak_connections") <= 4, "{report:#}");
    assert_eq!(uint(&report, "requests.keepalive"), 400, "{report:#}");
}

#[test]
fn csv_format_is_a_header_and_one_matching_row() {
    let nginx = require_nginx!(FILES);
    let mut command = crate::support::loadlab();
    command.args(["bench", &nginx.url("/hello.txt"), "-n", "100", "-c", "2"]);
    command.args(["--format", "csv", "--quiet"]);
    let output = crate::support::output_within(command, crate::support::RUN_LIMIT);
    super::assert_exit(&output, 0);
    let stdout = String::from_utf8(output.stdout).expect("UTF-8 CSV");
    let lines: Vec<&str> = stdout.lines().collect();
    assert_eq!(lines.len(), 2, "{stdout}");
    let header: Vec<&str> = lines[0].split(',').collect();
    let row: Vec<&str> = lines[1].split(',').collect();
    assert_eq!(header.len(), row.len(), "{stdout}");
    let field = |name: &str| {
        let i = header.iter().position(|h| *h == name).unwrap_or_else(|| panic!("no {name}"));
        row[i]
    };
    assert_eq!(field("completed"), "100", "{stdout}");
    assert_eq!(field("failed"), "0", "{stdout}");
    assert_eq!(field("non_2xx"), "0", "{stdout}");
    assert_eq!(field("bytes_body"), "1300", "{stdout}");
    assert_eq!(field("url"), nginx.url("/hello.txt"), "{stdout}");
    assert!(field("rps").parse::<f64>().expect("rps is a number") > 0.0, "{stdout}");
}

#[test]
fn latency_csv_spectrum_covers_every_completed_request() {
    let nginx = require_nginx!(FILES);
    let dir = tempfile::tempdir().expect("temp dir");
    let path = dir.path().join("latency.csv");
    let path_arg = path.to_str().expect("UTF-8 temp path");
    let url = nginx.url("/hello.txt");
    let report = bench(&url, &["-n", "300", "-c", "3", "--latency-csv", path_arg], 0);
    assert_eq!(uint(&report, "requests.completed"), 300, "{report:#}");

    let csv = fs::read_to_string(&path).expect("latency CSV written");
    let mut lines = csv.lines();
    assert_eq!(
        lines.next(),
        Some("value_us,percentile,total_count,one_over_one_minus_percentile"),
        "{csv}"
    );
    let rows: Vec<Vec<&str>> = lines.map(|l| l.split(',').collect()).collect();
    assert!(rows.len() >= 2, "{csv}");
    let mut last = (0u64, 0.0f64, 0u64);
    for row in &rows {
        assert_eq!(row.len(), 4, "{csv}");
        let value: u64 = row[0].parse().expect("value_us");
        let pct: f64 = row[1].parse().expect("percentile");
        let count: u64 = row[2].parse().expect("total_count");
        assert!(value >= last.0 && pct >= last.1 && count >= last.2, "not monotonic:\n{csv}");
        last = (value, pct, count);
    }
    assert_eq!(last.2, 300, "the last total_count is every completed request:\n{csv}");
    assert_eq!(last.1, 1.0, "{csv}");
    assert_eq!(last.0, uint(&report, "latency_us.max"), "{csv}");
}
