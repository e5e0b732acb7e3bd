//! Every error class the open loop and httperf's sessions count, each produced by a real cause
//! on loopback: a port that stops listening, a server that resets, one that never answers, a
//! client short of file descriptors, a source address that is not local, and a listener whose
//! accept queue is full. Nothing leaves the machine.

use std::net::{SocketAddr, TcpListener};
use std::thread;
use std::time::{Duration, Instant};

use serde_json::Value;

use super::{assert_accounted, assert_exit, at, bench, strings, uint};
use crate::support::{
    closed_port, loadlab, output_within, run_json, with_fd_limit, Behaviour, Skip, TestServer,
    RUN_LIMIT,
};

/// Every failure of the run is in `class`, and nothing completed.
fn assert_only_failures_of(report: &Value, class: &str) {
    let failed = uint(report, "requests.failed");
    assert!(failed > 0, "no failure at all:\n{report:#}");
    assert_eq!(uint(report, &format!("errors.{class}")), failed, "{report:#}");
    assert_eq!(uint(report, "requests.completed"), 0, "{report:#}");
}

/// A listener that passes loadlab's pre-flight connect, then closes: the connections of the run
/// itself are refused. The warm-up covers the moment between the two, in which a connection
/// could still reach the closing listener; failures in the warm-up are not counted.
#[test]
fn port_that_stops_listening_is_connrefused() {
    let listener = TcpListener::bind("127.0.0.1:0").expect("bind");
    let addr = listener.local_addr().expect("local_addr");
    listener.set_nonblocking(true).expect("nonblocking");
    let closer = thread::spawn(move || {
        let deadline = Instant::now() + Duration::from_secs(30);
        while Instant::now() < deadline {
            if listener.accept().is_ok() {
                return true;
            }
            thread::sleep(Duration::from_millis(1));
        }
        false
    });
    let url = format!("http://{addr}/");
    let (report, output) =
        run_json(&["bench", &url, "--rate", "200", "-d", "500ms", "--warmup", "300ms"]);
    assert!(closer.join().expect("closer thread"), "the pre-flight connect never arrived");
    // Nothing reached a server: loadlab reports, then exits 3.
    assert_exit(&output, 3);
    assert_only_failures_of(&report, "connrefused");
    // 200 req/s for 0.5 s.
    assert!((90..=101).contains(&uint(&report, "requests.failed")), "{report:#}");
    // Connections were attempted (`connections.opened` counts connects started, as httperf's
    // total does), but none was established: no connect time, no byte.
    assert_eq!(uint(&report, "timings_us.connect.count"), 0, "{report:#}");
    assert_eq!(uint(&report, "bytes.total"), 0, "{report:#}");
    let stderr = String::from_utf8_lossy(&output.stderr);
    assert!(stderr.contains("no request reached"), "{stderr}");
}

/// A port nobody listens on fails the pre-flight check: exit 3 at once, whatever the load model.
#[test]
fn closed_port_exits_3_before_any_load() {
    let url = format!("http://127.0.0.1:{}/", closed_port());
    for args in [
        vec!["bench", &url, "--rate", "1000", "-d", "10s"],
        vec!["bench", &url, "--conn-rate", "100", "--conns", "100"],
        vec!["sweep", &url, "--rates", "100,200", "--step-duration", "10s"],
    ] {
        let mut command = loadlab();
        command.args(&args);
        let started = Instant::now();
        let output = output_within(command, RUN_LIMIT);
        assert!(
            started.elapsed() < Duration::from_secs(5),
            "{args:?} took {:?}",
            started.elapsed()
        );
        assert_exit(&output, 3);
        assert!(output.stdout.is_empty(), "{args:?} printed a report for a run that never was");
        let stderr = String::from_utf8_lossy(&output.stderr);
        assert!(stderr.contains("Connection refused"), "{args:?}: {stderr}");
    }
}

#[test]
fn reset_in_open_loop_is_connreset() {
    let server = TestServer::start(Behaviour::Reset);
    let report = bench(&server.url("/"), &["--rate", "100", "-d", "500ms"], 0);
    assert_only_failures_of(&report, "connreset");
    // A reset connection is never reused: each request came on a connection of its own.
    // 50 were due (51 when the one due at the run's very end went out too); those sent in
    // its last moments may still have been waiting for their reset when it ended.
    let (failed, unfinished) =
        (uint(&report, "requests.failed"), uint(&report, "requests.unfinished"));
    assert_eq!(uint(&report, "connections.opened"), failed + unfinished, "{report:#}");
    assert!((50..=51).contains(&(failed + unfinished)), "{report:#}");
    assert!(failed >= 40, "{report:#}");
    // The server read each request before it reset (the pre-flight connect sent none).
    assert!(server.requests() >= failed, "{} < {failed}", server.requests());
}

/// In httperf's sessions a failed call ends its session: against a server that never answers,
/// each session sends its first call, times out, and sends no other.
#[test]
fn silent_server_is_client_timeout_and_ends_each_session() {
    let server = TestServer::start(Behaviour::Silent);
    let started = Instant::now();
    let report = bench(
        &server.url("/"),
        &["--conn-rate", "20", "--calls-per-conn", "3", "--conns", "5", "--timeout", "300ms"],
        0,
    );
    // 5 sessions 50 ms apart, each ending 300 ms after its first call.
    assert!(started.elapsed() < Duration::from_secs(5), "took {:?}", started.elapsed());
    assert_eq!(at(&report, "mode"), "sessions", "{report:#}");
    assert_accounted(&report, 5);
    assert_only_failures_of(&report, "client_timeout");
    assert_eq!(uint(&report, "connections.opened"), 5, "{report:#}");
    assert_eq!(server.requests(), 5, "only the first call of each session was sent");
}

/// The open loop's timed variant: what timed out within the run is client_timeout; what was
/// still waiting when it ended is unfinished, never counted as either.
#[test]
fn silent_server_in_open_loop_is_client_timeout() {
    let server = TestServer::start(Behaviour::Silent);
    let report = bench(&server.url("/"), &["--rate", "50", "-d", "1s", "--timeout", "300ms"], 0);
    assert_only_failures_of(&report, "client_timeout");
    let (failed, unfinished) =
        (uint(&report, "requests.failed"), uint(&report, "requests.unfinished"));
    // 50 sent (51 when the arrival due at the run's very end went out too); those sent in
    // the last 300 ms of the second had not timed out at its end.
    assert!((30..=40).contains(&failed), "{report:#}");
    assert!((50..=51).contains(&(failed + unfinished)), "{report:#}");
}

/// Soft and hard limit alike: loadlab cannot raise the soft limit past it.
const NOFILE: u64 = 40;

/// 2,000 req/s at a server that holds each request 200 ms needs ~400 connections; with 40
/// descriptors the client runs out. loadlab says so before the run (on stderr) and after it
/// (in the report), and counts the failures as fd_unavail: the client's limit, not the
/// server's.
#[test]
fn lowered_fd_limit_is_fd_unavail_with_a_warning_before_the_run() {
    let slow = Behaviour::Slow { delay: Duration::from_millis(200), body: b"slow".to_vec() };
    let server = TestServer::start(slow);
    let mut command = loadlab();
    command.args(["bench", &server.url("/"), "--rate", "2000", "--max-connections", "500"]);
    command.args(["-d", "1s", "-t", "2", "--format", "json", "--quiet"]);
    let output = output_within(with_fd_limit(command, NOFILE), RUN_LIMIT);
    assert_exit(&output, 0);
    let stderr = String::from_utf8_lossy(&output.stderr);
    let report: Value = serde_json::from_slice(&output.stdout)
        .unwrap_or_else(|e| panic!("no JSON report ({e}); stderr:\n{stderr}"));

    // The pre-run warning: 500 connections + 2 per thread + margin against a limit of 40.
    assert!(
        stderr.contains("warning: this run may need 536 file descriptors")
            && stderr.contains("open-file limit is 40"),
        "{stderr}"
    );
    let fd_unavail = uint(&report, "errors.fd_unavail");
    assert!(fd_unavail > 1_000, "{report:#}");
    assert_eq!(uint(&report, "requests.failed"), fd_unavail, "{report:#}");
    // The connections that did open served their requests.
    assert!(uint(&report, "requests.completed") > 0, "{report:#}");
    assert!(uint(&report, "connections.peak") < NOFILE, "{report:#}");
    assert_eq!(uint(&report, "client.fd_limit"), NOFILE, "{report:#}");
    let warnings = strings(&report, "warnings");
    assert!(warnings.iter().any(|w| w.contains("ran out of file descriptors")), "{warnings:?}");
}

/// 192.0.2.1 (TEST-NET-1, RFC 5737) is on no interface here, so binding a socket to it fails
/// locally with EADDRNOTAVAIL before any packet is built.
#[test]
fn unusable_source_address_is_addr_unavail() {
    let nonlocal_bind = std::fs::read_to_string("/proc/sys/net/ipv4/ip_nonlocal_bind")
        .is_ok_and(|v| v.trim() != "0");
    if nonlocal_bind {
        // The kernel would let the bind succeed; there is no local cause to test.
        Skip("net.ipv4.ip_nonlocal_bind is set".into()).report();
        return;
    }
    let server = TestServer::start(Behaviour::ok("unreached"));
    let (report, output) = run_json(&[
        "bench",
        &server.url("/"),
        "--rate",
        "100",
        "-d",
        "300ms",
        "--source-ips",
        "192.0.2.1",
    ]);
    // The pre-flight check connects without a source address, so the run starts; then not
    // one request gets a connection, and loadlab exits 3.
    assert_exit(&output, 3);
    assert_only_failures_of(&report, "addr_unavail");
    assert!((25..=31).contains(&uint(&report, "requests.failed")), "{report:#}");
    assert_eq!(at(&report, "config.source_ips"), &serde_json::json!(["192.0.2.1"]));
    // The server saw only the pre-flight connection.
    assert_eq!(server.connections(), 1);
    assert_eq!(server.requests(), 0);
    let warnings = strings(&report, "warnings");
    assert!(warnings.iter().any(|w| w.contains("local ports")), "{warnings:?}");
}

/// A listener that never accepts, with a backlog of 0, holds one connection in its accept
/// queue: the pre-flight check's. From then on Linux drops every SYN to it (tcp_conn_request:
/// accept queue full), so the run's connects get no answer and time out. The warm-up absorbs
/// any connect that raced the pre-flight one into the queue.
#[test]
fn full_accept_queue_is_connect_timeout() {
    let socket =
        socket2::Socket::new(socket2::Domain::IPV4, socket2::Type::STREAM, None).expect("socket");
    let addr: SocketAddr = "127.0.0.1:0".parse().expect("address");
    socket.bind(&addr.into()).expect("bind");
    socket.listen(0).expect("listen");
    let addr = socket.local_addr().expect("local_addr").as_socket().expect("inet");
    let url = format!("http://{addr}/");
    let (report, output) = run_json(&[
        "bench",
        &url,
        "--rate",
        "50",
        "-d",
        "600ms",
        "--warmup",
        "300ms",
        "--connect-timeout",
        "100ms",
        "--timeout",
        "5s",
    ]);
    drop(socket);
    assert_exit(&output, 3);
    assert_only_failures_of(&report, "connect_timeout");
    // A timed run counts what ends inside its window: the connects due from 200 ms (timing
    // out from 300 ms, the end of the warm-up) to 800 ms, 30 of them; those due in the last
    // 100 ms were still connecting when the run ended (unfinished).
    let (failed, unfinished) =
        (uint(&report, "requests.failed"), uint(&report, "requests.unfinished"));
    assert!((25..=31).contains(&failed), "{report:#}");
    assert!((3..=7).contains(&unfinished), "{report:#}");
    assert_eq!(uint(&report, "bytes.total"), 0, "{report:#}");
}
