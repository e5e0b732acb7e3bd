//! `--expect-status`, `--expect-contains` and `--expect-body-sha256` against in-process
//! servers: matching responses complete, the others fail as `validation`, counted exactly.

use serde_json::Value;

use super::{assert_accounted, bench, uint};
use crate::support::{Behaviour, TestServer};

const BODY: &[u8] = b"hello, world!";
/// `printf 'hello, world!' | sha256sum`
const BODY_SHA256: &str = "68e656b251e67e8358bef8483ab0d51c6619f3e7a1a9f0e75838d41ff368f728";
/// `printf 'hello, chunked world!' | sha256sum`: the decoded body of [`chunked`].
const CHUNKED_SHA256: &str = "bcdbc9744b8040d1c00c8e06a9c78b9fecefe4617fd6e7c884148f6da373f209";

const N: u64 = 10;

fn run(server: &TestServer, args: &[&str]) -> Value {
    let mut all = vec!["-n", "10", "-c", "2"];
    all.extend_from_slice(args);
    let report = bench(&server.url("/"), &all, 0);
    assert_accounted(&report, N);
    assert_eq!(server.requests(), N, "each request is sent once, and failures are not retried");
    report
}

fn assert_all_valid(report: &Value) {
    assert_eq!(uint(report, "requests.completed"), N, "{report:#}");
    assert_eq!(uint(report, "errors.validation"), 0, "{report:#}");
}

fn assert_all_invalid(report: &Value) {
    assert_eq!(uint(report, "errors.validation"), N, "{report:#}");
    assert_eq!(uint(report, "requests.completed"), 0, "{report:#}");
    // The responses themselves were fine: their status is still counted.
    assert_eq!(uint(report, "status.200"), N, "{report:#}");
}

fn chunked() -> Behaviour {
    let chunks = ["hello, ", "chunked ", "world!"].map(|c| c.as_bytes().to_vec()).to_vec();
    Behaviour::Chunked { chunks, extensions: true, trailers: true }
}

#[test]
fn expect_status_fails_exactly_the_other_statuses() {
    let server = TestServer::start(Behaviour::StatusCycle(vec![200, 500]));
    let report = run(&server, &["--expect-status", "200"]);
    assert_eq!(uint(&report, "errors.validation"), N / 2, "{report:#}");
    assert_eq!(uint(&report, "requests.completed"), N / 2, "{report:#}");
    assert_eq!(uint(&report, "status.200"), N / 2, "{report:#}");
    assert_eq!(uint(&report, "status.500"), N / 2, "{report:#}");
    assert_eq!(uint(&report, "status_class.5xx"), N / 2, "{report:#}");
}

#[test]
fn expect_status_accepts_classes_and_lists() {
    let server = TestServer::start(Behaviour::StatusCycle(vec![200, 500]));
    let report = run(&server, &["--expect-status", "2xx,500"]);
    assert_all_valid(&report);
}

#[test]
fn expect_contains_match() {
    let server = TestServer::start(Behaviour::ok(BODY));
    assert_all_valid(&run(&server, &["--expect-contains", "world"]));
}

#[test]
fn expect_contains_mismatch() {
    let server = TestServer::start(Behaviour::ok(BODY));
    assert_all_invalid(&run(&server, &["--expect-contains", "planet"]));
}

#[test]
fn expect_sha256_match() {
    let server = TestServer::start(Behaviour::ok(BODY));
    assert_all_valid(&run(&server, &["--expect-body-sha256", BODY_SHA256]));
}

#[test]
fn expect_sha256_mismatch() {
    let server = TestServer::start(Behaviour::ok(b"hello, world?".to_vec()));
    assert_all_invalid(&run(&server, &["--expect-body-sha256", BODY_SHA256]));
}

/// Validation sees the decoded body, not the chunk framing, and a match can span chunks.
#[test]
fn expectations_apply_to_the_decoded_chunked_body() {
    let server = TestServer::start(chunked());
    let report = run(
        &server,
        &["--expect-body-sha256", CHUNKED_SHA256, "--expect-contains", ", chunked wor"],
    );
    assert_all_valid(&report);
}

/// A run of 404s is not a rate of the page asked for: without --expect-status the responses
/// count as completed, and every format says, beside the throughput, that they were not 2xx;
/// with --expect-status they are failures and nothing else needs saying.
#[test]
fn an_all_404_run_is_marked_beside_its_throughput() {
    let server = TestServer::start(Behaviour::StatusCycle(vec![404]));
    let text = |extra: &[&str]| {
        let mut command = crate::support::loadlab();
        command.args(["bench", &server.url("/"), "-n", "200", "-c", "2", "--quiet"]).args(extra);
        let output = crate::support::output_within(command, crate::support::RUN_LIMIT);
        super::assert_exit(&output, 0);
        String::from_utf8(output.stdout).expect("UTF-8")
    };
    let plain = text(&[]);
    let line = plain.lines().find(|l| l.starts_with("  Throughput")).expect("throughput line");
    assert!(
        line.contains("<< 100% OF RESPONSES NOT 2xx (200 of 200, counted as completed)"),
        "{plain}"
    );
    let csv = text(&["--format", "csv"]);
    let (header, row) = csv.split_once('\n').expect("two lines");
    let i = header.split(',').position(|h| h == "non_2xx").expect("a non_2xx column");
    assert_eq!(row.trim().split(',').nth(i), Some("200"), "{csv}");
    let report = bench(&server.url("/"), &["-n", "50", "-c", "2"], 0);
    assert!(
        super::strings(&report, "warnings").iter().any(|w| w.contains("were not 2xx")),
        "{report:#}"
    );
    let validated = text(&["--expect-status", "200"]);
    assert!(!validated.contains("NOT 2xx"), "{validated}");
}
