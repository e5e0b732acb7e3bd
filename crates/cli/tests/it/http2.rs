//! `--http2`: against the lab's real nginx over h2c (prior knowledge) and over TLS (ALPN h2),
//! in each load model, and against in-process servers that break HTTP/2 in each way loadlab
//! tells apart: every request is accounted for, in the right class with its reason, and a
//! run against a server that never answers ends by its timeouts, not a hang.

use std::time::{Duration, Instant};

use serde_json::Value;

use super::{assert_accounted, assert_all_failed_as, at, bench, refused, uint};
use crate::support::{require_nginx, H2Behaviour, H2Peer, Listen};

const FILES: &[(&str, &[u8])] = &[("hello.txt", b"hello, world!")];

fn h2(tls: bool) -> Listen {
    Listen { http2: true, tls, ..Listen::default() }
}

/// The reasons kept for HTTP/2 failures.
fn h2_reasons(report: &Value) -> Vec<(String, u64)> {
    let reasons = at(report, "errors_h2").as_object().expect("errors_h2 is an object");
    reasons.iter().map(|(k, v)| (k.clone(), v.as_u64().expect("a count"))).collect()
}

#[test]
fn nginx_over_h2c_carries_connections_times_streams() {
    let nginx = require_nginx!(FILES, h2(false));
    let args = ["--http2", "--streams", "10", "-c", "2", "-t", "1", "-n", "2000"];
    let report = bench(&nginx.url("/hello.txt"), &args, 0);
    assert_accounted(&report, 2000);
    assert_eq!(uint(&report, "status.200"), 2000, "{report:#}");
    assert_eq!(uint(&report, "bytes.body"), 2000 * 13, "{report:#}");
    assert_eq!(at(&report, "protocol"), "h2", "{report:#}");
    assert_eq!(uint(&report, "config.streams"), 10, "{report:#}");
    assert_eq!(uint(&report, "requests.connections_opened"), 2, "{report:#}");
    assert_eq!(uint(&report, "requests.sent"), 2000, "{report:#}");
    assert!(at(&report, "server.software").as_str().unwrap_or("").starts_with("nginx"));
    // Frames are counted: each response is a HEADERS and a DATA frame, 9-byte headers each.
    assert!(uint(&report, "bytes.total") >= 2000 * (13 + 2 * 9), "{report:#}");
}

#[test]
fn nginx_over_tls_speaks_h2_chosen_by_alpn_and_times_each_handshake() {
    let nginx = require_nginx!(FILES, h2(true));
    let args = ["--http2", "--streams", "4", "-c", "3", "-t", "1", "-n", "600", "--insecure"];
    let report = bench(&nginx.url("/hello.txt"), &args, 0);
    assert_accounted(&report, 600);
    assert_eq!(uint(&report, "status.200"), 600, "{report:#}");
    assert_eq!(at(&report, "protocol"), "h2", "{report:#}");
    assert_eq!(uint(&report, "timings_us.tls.count"), 3, "one handshake per connection");
    assert_eq!(uint(&report, "requests.connections_opened"), 3, "{report:#}");
}

#[test]
fn nginx_over_h2_in_the_open_loop_and_in_sessions() {
    let nginx = require_nginx!(FILES, h2(false));
    let url = nginx.url("/hello.txt");
    let open = bench(&url, &["--http2", "--streams", "4", "--rate", "400", "-d", "1s"], 0);
    // 400 are due; a loaded machine may leave a few in flight or unsent at the end.
    let completed = uint(&open, "requests.completed");
    assert!((300..=400).contains(&completed), "{open:#}");
    assert_eq!(uint(&open, "requests.failed"), 0, "{open:#}");
    // A few connections carry it all: each takes four streams before another opens.
    assert!(uint(&open, "requests.connections_opened") <= 8, "{open:#}");

    let args = ["--http2", "--streams", "2", "--conn-rate", "50", "--calls-per-conn", "5"];
    let sessions = bench(&url, &[&args[..], &["--conns", "20"]].concat(), 0);
    assert_accounted(&sessions, 100);
    assert_eq!(uint(&sessions, "status.200"), 100, "{sessions:#}");
    assert_eq!(uint(&sessions, "requests.connections_opened"), 20, "{sessions:#}");
}

/// nginx ends an HTTP/2 connection after keepalive_requests with a GOAWAY: the requests it
/// refused go again on a new connection, and none is lost or failed.
#[test]
fn nginx_goaway_after_keepalive_requests_loses_no_request() {
    let listen = Listen { keepalive_requests: 50, ..h2(false) };
    let nginx = require_nginx!(FILES, listen);
    let args = ["--http2", "--streams", "8", "-c", "2", "-t", "1", "-n", "1000"];
    let report = bench(&nginx.url("/hello.txt"), &args, 0);
    assert_accounted(&report, 1000);
    assert_eq!(uint(&report, "status.200"), 1000, "{report:#}");
    assert!(uint(&report, "requests.connections_opened") >= 20, "{report:#}");
    assert_eq!(uint(&report, "requests.sent"), 1000, "refused requests are sent once more");
}

#[test]
fn a_server_without_h2_is_one_clear_error() {
    let plain = require_nginx!(FILES);
    let stderr = refused(&["--http2", "-n", "10", &plain.url("/hello.txt")]);
    assert!(stderr.contains("does not speak h2c"), "{stderr}");
    let tls_http1 = require_nginx!(FILES, Listen { tls: true, ..Listen::default() });
    let url = tls_http1.url("/hello.txt");
    let stderr = refused(&["--http2", "-n", "10", "--insecure", &url]);
    assert!(stderr.contains("ALPN"), "{stderr}");
    let silent = H2Peer::start(H2Behaviour::NoSettings);
    let args = ["--http2", "-n", "1", "--connect-timeout", "500ms", &silent.url("/")];
    let stderr = refused(&args);
    assert!(stderr.contains("no SETTINGS within"), "{stderr}");
}

#[test]
fn goaway_mid_run_sends_the_refused_requests_again() {
    let peer = H2Peer::start(H2Behaviour::GoawayAfter { per_conn: 5 });
    let args = ["--http2", "--streams", "4", "-c", "2", "-t", "1", "-n", "200"];
    let report = bench(&peer.url("/"), &args, 0);
    assert_accounted(&report, 200);
    assert_eq!(uint(&report, "status.200"), 200, "{report:#}");
    assert!(uint(&report, "requests.connections_opened") >= 40, "{report:#}");
    assert!(peer.requests() > 200, "some requests were refused and sent again");
}

#[test]
fn rst_stream_fails_each_request_as_h2_stream_with_its_code() {
    let peer = H2Peer::start(H2Behaviour::Reset);
    let report = bench(&peer.url("/"), &["--http2", "--streams", "3", "-c", "2", "-n", "30"], 0);
    assert_all_failed_as(&report, 30, "h2_stream");
    assert_eq!(h2_reasons(&report), [("RST_STREAM REFUSED_STREAM".to_string(), 30)]);
    // The connection outlives its streams' resets.
    assert!(uint(&report, "requests.connections_opened") <= 2, "{report:#}");
}

#[test]
fn an_oversized_header_list_is_a_connection_error() {
    let peer = H2Peer::start(H2Behaviour::HugeHeaderList);
    let report = bench(&peer.url("/"), &["--http2", "-c", "1", "-n", "5"], 0);
    assert_all_failed_as(&report, 5, "h2_conn");
    let reasons = h2_reasons(&report);
    assert_eq!(reasons.len(), 1, "{report:#}");
    assert!(reasons[0].0.contains("SETTINGS_MAX_HEADER_LIST_SIZE"), "{reasons:?}");
}

#[test]
fn garbage_frames_are_a_connection_error() {
    let peer = H2Peer::start(H2Behaviour::Garbage);
    let report = bench(&peer.url("/"), &["--http2", "--streams", "2", "-c", "1", "-n", "6"], 0);
    assert_all_failed_as(&report, 6, "h2_conn");
    assert_eq!(h2_reasons(&report), [("a stream frame on stream 0".to_string(), 6)]);
}

/// A server that never opens its flow-control window: the request body cannot go, and each
/// request ends at its timeout.
#[test]
fn a_window_never_opened_ends_as_a_timeout_not_a_hang() {
    let peer = H2Peer::start(H2Behaviour::WindowNeverOpened);
    let args =
        ["--http2", "--streams", "2", "-c", "1", "-n", "4", "-m", "POST", "--body-string", "x"];
    let started = Instant::now();
    let report = bench(&peer.url("/"), &[&args[..], &["--timeout", "300ms"]].concat(), 0);
    assert_all_failed_as(&report, 4, "client_timeout");
    assert!(started.elapsed() < Duration::from_secs(20), "took {:?}", started.elapsed());
    assert_eq!(peer.requests(), 4, "the HEADERS went, the bodies did not");
}
