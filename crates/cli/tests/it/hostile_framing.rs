//! Odd but legal response framing from in-process servers (chunked with extensions and
//! trailers, close-delimited, HTTP/1.0, bodiless statuses, HEAD, interim 1xx, varying
//! lengths, IPv6): every request completes and the byte counts are exact.

use serde_json::Value;

use super::{assert_accounted, bench, strings, uint};
use crate::support::servers::VARYING_LENGTHS;
use crate::support::{Behaviour, Skip, TestServer};

/// Runs `-n n -c 2 -t 1 ARGS` against `server` and checks that all `n` requests completed,
/// and that the server read exactly `n` (loadlab neither retries nor sends extra requests).
/// One thread opens both connections in its first turn; with two, the first could finish a
/// small run before the second starts, and connection counts would depend on scheduling.
fn all_complete(server: &TestServer, n: u64, args: &[&str]) -> Value {
    let n_arg = n.to_string();
    let mut all = vec!["-n", n_arg.as_str(), "-c", "2", "-t", "1"];
    all.extend_from_slice(args);
    let report = bench(&server.url("/"), &all, 0);
    assert_accounted(&report, n);
    assert_eq!(uint(&report, "requests.failed"), 0, "{report:#}");
    assert_eq!(server.requests(), n, "requests the server read");
    report
}

#[test]
fn chunked_with_extensions_and_trailers_is_decoded_and_reused() {
    let chunks: Vec<Vec<u8>> = ["hello, ", "chunked ", "world!"].map(|c| c.into()).to_vec();
    let decoded = chunks.iter().map(Vec::len).sum::<usize>() as u64;
    let server = TestServer::start(Behaviour::Chunked { chunks, extensions: true, trailers: true });
    let report = all_complete(&server, 20, &[]);
    assert_eq!(uint(&report, "bytes.body"), 20 * decoded, "{report:#}");
    assert_eq!(uint(&report, "body_length.first"), decoded);
    // Chunk framing and trailers are received bytes, but not body bytes; every response is
    // the same, so the total divides evenly.
    let total = uint(&report, "bytes.total");
    assert!(total > 20 * (decoded + 60) && total.is_multiple_of(20), "{report:#}");
    // The end of a chunked body is known without closing: both connections carry every request.
    assert_eq!(uint(&report, "requests.connections_opened"), 2, "{report:#}");
    assert_eq!(uint(&report, "requests.keepalive"), 20, "{report:#}");
    // The server also saw the preflight connection, which carries no request.
    assert_eq!(server.connections(), 3);
}

#[test]
fn close_delimited_body_completes_on_a_new_connection_each_time() {
    let body = b"ends when the connection does".to_vec();
    let len = body.len() as u64;
    let server = TestServer::start(Behaviour::CloseDelimited { body });
    let report = all_complete(&server, 10, &[]);
    assert_eq!(uint(&report, "bytes.body"), 10 * len, "{report:#}");
    assert_eq!(uint(&report, "requests.connections_opened"), 10, "{report:#}");
    assert_eq!(uint(&report, "requests.keepalive"), 0, "{report:#}");
}

#[test]
fn http10_response_completes_and_closes() {
    let server = TestServer::start(Behaviour::Http10 { body: b"old school".to_vec() });
    let report = all_complete(&server, 10, &[]);
    assert_eq!(uint(&report, "bytes.body"), 100, "{report:#}");
    assert_eq!(uint(&report, "status.200"), 10, "{report:#}");
    // HTTP/1.0 without `Connection: keep-alive` means one response per connection.
    assert_eq!(uint(&report, "requests.connections_opened"), 10, "{report:#}");
}

#[test]
fn no_content_204_completes_without_a_body() {
    let server = TestServer::start(Behaviour::NoBody { status: 204 });
    let report = all_complete(&server, 10, &["--timeout", "2s"]);
    assert_eq!(uint(&report, "status.204"), 10, "{report:#}");
    assert_eq!(uint(&report, "bytes.body"), 0, "{report:#}");
    assert_eq!(uint(&report, "requests.connections_opened"), 2, "{report:#}");
}

/// The 304 advertises a Content-Length it does not send (`NO_BODY_ADVERTISED_LEN`; RFC 9110
/// §8.6 allows it): a client that waits for those bytes times out instead of completing.
#[test]
fn not_modified_304_with_advertised_length_completes_without_a_body() {
    let server = TestServer::start(Behaviour::NoBody { status: 304 });
    let report = all_complete(&server, 10, &["--timeout", "2s"]);
    assert_eq!(uint(&report, "status.304"), 10, "{report:#}");
    assert_eq!(uint(&report, "bytes.body"), 0, "{report:#}");
    assert_eq!(uint(&report, "requests.connections_opened"), 2, "{report:#}");
}

#[test]
fn head_response_advertising_a_length_completes_without_a_body() {
    let server = TestServer::start(Behaviour::NoBody { status: 200 });
    let report = all_complete(&server, 10, &["-m", "HEAD", "--timeout", "2s"]);
    assert_eq!(server.last_request().expect("a request").method, "HEAD");
    assert_eq!(uint(&report, "status.200"), 10, "{report:#}");
    assert_eq!(uint(&report, "bytes.body"), 0, "{report:#}");
    assert_eq!(uint(&report, "requests.connections_opened"), 2, "{report:#}");
}

#[test]
fn interim_100_is_skipped_for_the_final_200() {
    let server = TestServer::start(Behaviour::Interim);
    let report = all_complete(&server, 10, &["--timeout", "2s"]);
    assert_eq!(uint(&report, "status.200"), 10, "{report:#}");
    let statuses = report["status"].as_object().expect("status object");
    assert_eq!(statuses.len(), 1, "only the final status is counted: {statuses:?}");
    assert_eq!(uint(&report, "bytes.body"), 10 * b"final".len() as u64, "{report:#}");
}

#[test]
fn varying_body_length_is_a_note_not_a_failure() {
    let server = TestServer::start(Behaviour::Varying);
    let report = all_complete(&server, 10, &[]);
    assert_eq!(report["body_length"]["varied"], true, "{report:#}");
    let (min, max) = (VARYING_LENGTHS[0] as u64, VARYING_LENGTHS[1] as u64);
    assert_eq!(uint(&report, "body_length.min"), min, "{report:#}");
    assert_eq!(uint(&report, "body_length.max"), max, "{report:#}");
    assert_eq!(uint(&report, "bytes.body"), 5 * (min + max), "{report:#}");
    let notes = strings(&report, "notes");
    assert!(notes.iter().any(|n| n.contains("body length varied")), "{notes:?}");
}

#[test]
fn ipv6_literal_target() {
    let server = match TestServer::start_on("[::1]:0", Behaviour::ok("over IPv6")) {
        Ok(server) => server,
        Err(e) => return Skip(format!("cannot bind [::1]: {e}")).report(),
    };
    let url = server.url("/");
    assert!(url.starts_with("http://[::1]:"), "{url}");
    let report = all_complete(&server, 10, &[]);
    assert_eq!(uint(&report, "bytes.body"), 90, "{report:#}");
    assert_eq!(report["server"]["host"], "[::1]", "{report:#}");
    let request = server.last_request().expect("a request");
    let host = request.header("host").expect("a Host header");
    assert_eq!(host, &url["http://".len()..url.len() - 1], "Host keeps the brackets");
}
