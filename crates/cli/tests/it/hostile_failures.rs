//! Servers that fail requests in each way loadlab tells apart (too slow, silent, endless,
//! truncated, reset, garbage, conflicting lengths): every request fails, in the right class,
//! the run still exits 0 with a report, and time-outs end the run in bounded time.

use std::time::{Duration, Instant};

use serde_json::Value;

use super::{assert_all_failed_as, bench, strings, uint};
use crate::support::{Behaviour, TestServer};

/// Far longer than any of these runs may take, so a time-out that does not fire fails the test.
const NEVER: Duration = Duration::from_secs(60);

/// How long a run of a few timed-out requests may take: the time-outs themselves (about a
/// second in all) plus generous slack for a loaded two-CPU machine, but far below [`NEVER`].
const BOUNDED: Duration = Duration::from_secs(20);

/// `-n n -c 2 ARGS` against a fresh server with `behaviour`; exit 0, since failed requests
/// are results, not errors. Also returns how long the run took.
fn run(behaviour: Behaviour, n: u64, args: &[&str]) -> (Value, TestServer, Duration) {
    let server = TestServer::start(behaviour);
    let n_arg = n.to_string();
    let mut all = vec!["-n", n_arg.as_str(), "-c", "2"];
    all.extend_from_slice(args);
    let started = Instant::now();
    let report = bench(&server.url("/"), &all, 0);
    (report, server, started.elapsed())
}

fn assert_failure_warning(report: &Value, class: &str) {
    let warnings = strings(report, "warnings");
    assert!(
        warnings.iter().any(|w| w.contains("requests failed") && w.contains(class)),
        "no warning naming {class}: {warnings:?}"
    );
    assert!(warnings.iter().any(|w| w.contains("no request completed")), "{warnings:?}");
}

#[test]
fn slow_server_beyond_timeout_is_client_timeout() {
    let slow = Behaviour::Slow { delay: NEVER, body: b"too late".to_vec() };
    let (report, server, took) = run(slow, 4, &["--timeout", "200ms"]);
    assert_all_failed_as(&report, 4, "client_timeout");
    assert!(took < BOUNDED, "4 requests timing out after 200ms took {took:?}");
    // Each request was sent (the server read it) and then abandoned, never retried.
    assert_eq!(server.requests(), 4);
    assert_failure_warning(&report, "client_timeout");
}

#[test]
fn silent_server_is_client_timeout() {
    let (report, server, took) = run(Behaviour::Silent, 4, &["--timeout", "300ms"]);
    assert_all_failed_as(&report, 4, "client_timeout");
    assert!(took < BOUNDED, "took {took:?}");
    assert_eq!(server.requests(), 4);
    assert_eq!(uint(&report, "bytes.total"), 0, "{report:#}");
}

/// A body that never ends must not keep a request alive past its time-out just because bytes
/// keep arriving.
#[test]
fn endless_chunked_body_is_client_timeout() {
    let (report, _server, took) = run(Behaviour::EndlessChunked, 4, &["--timeout", "300ms"]);
    assert_all_failed_as(&report, 4, "client_timeout");
    assert!(took < BOUNDED, "took {took:?}");
    // Unlike the silent server, bytes did arrive; they are counted as received.
    assert!(uint(&report, "bytes.total") > 16 * 1024, "{report:#}");
}

#[test]
fn truncated_body_is_short_body() {
    let (report, server, _) = run(Behaviour::Truncated { declared: 100, sent: 10 }, 10, &[]);
    assert_all_failed_as(&report, 10, "short_body");
    assert_eq!(server.requests(), 10);
    assert_failure_warning(&report, "short_body");
}

#[test]
fn reset_connection_is_connreset() {
    let (report, server, _) = run(Behaviour::Reset, 10, &[]);
    assert_all_failed_as(&report, 10, "connreset");
    assert_eq!(server.requests(), 10);
    // The connection was made: a reset is the server's doing, not an unreachable target.
    assert_eq!(uint(&report, "requests.connections_opened"), 10, "{report:#}");
}

#[test]
fn garbage_response_is_parse() {
    let (report, server, _) = run(Behaviour::Garbage, 10, &[]);
    assert_all_failed_as(&report, 10, "parse");
    assert_eq!(server.requests(), 10);
}

/// RFC 9112 §6.3 rule 5: differing Content-Length values are unrecoverable; picking either
/// one would let a smuggled response through.
#[test]
fn conflicting_content_length_is_parse() {
    let (report, server, _) = run(Behaviour::ConflictingLength, 10, &["--timeout", "2s"]);
    assert_all_failed_as(&report, 10, "parse");
    assert_eq!(server.requests(), 10);
    assert_eq!(uint(&report, "bytes.body"), 0, "{report:#}");
}
