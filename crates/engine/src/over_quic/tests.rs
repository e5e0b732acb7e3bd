//! The worker's loop over HTTP/3 against quinn-proto servers of the tests' own: answers read
//! whole on every stream, and each hostile peer's requests ended, each with a class, within
//! the run's bounds.

use std::net::{SocketAddr, UdpSocket};
use std::sync::Arc;
use std::time::{Duration, Instant};

use crate::h3::peer::{garbage, serve, Peer};
use crate::{BenchConfig, BenchResult, Control, ErrorClass, Protocol, Stop, Target};

/// `n` requests over HTTP/3 to `addr` on `connections` connections of `streams` streams,
/// trusting any certificate, with `timeout` for each request and its connect; the run, and
/// how long it took.
fn bench(
    addr: SocketAddr,
    n: u64,
    connections: usize,
    streams: usize,
    timeout: Duration,
) -> (BenchResult, Duration) {
    let target = Target::parse(&format!("https://{addr}/")).unwrap();
    let mut config = BenchConfig::new(target);
    config.protocol = Protocol::Http3 { streams };
    (config.connections, config.threads) = (connections, 1);
    config.stop = Stop::Count(n);
    config.tls.insecure = true;
    (config.timeout, config.connect_timeout) = (timeout, timeout);
    let started = Instant::now();
    let result = crate::run(&config, addr, Arc::new(Control::default())).unwrap();
    (result, started.elapsed())
}

/// A closed loop over HTTP/3 toward `addr`, trusting any certificate.
fn config(addr: SocketAddr, connections: usize, streams: usize, timeout: Duration) -> BenchConfig {
    let target = Target::parse(&format!("https://{addr}/")).unwrap();
    let mut config = BenchConfig::new(target);
    config.protocol = Protocol::Http3 { streams };
    (config.connections, config.threads) = (connections, 1);
    config.tls.insecure = true;
    (config.timeout, config.connect_timeout) = (timeout, timeout);
    config
}

/// Every request budgeted ended, in `class` when it failed: none left unfinished.
fn all_failed_as(result: &BenchResult, n: u64, class: ErrorClass) {
    let t = &result.tally;
    assert_eq!((t.completed, t.failed, t.unfinished), (0, n, 0), "{:?}", t.errors);
    assert_eq!(t.errors.get(class), n, "{:?}", t.errors);
}

#[test]
fn requests_go_as_streams_of_quic_connections_and_each_answer_is_read_whole() {
    let addr = serve(Peer::Answer(b"hello"), Instant::now() + Duration::from_secs(10));
    // The peer serves one connection at a time: one connection, three streams on it.
    let (result, _) = bench(addr, 40, 1, 3, Duration::from_secs(5));
    let t = &result.tally;
    assert_eq!((t.completed, t.failed, t.unfinished), (40, 0, 0), "{:?}", t.errors);
    assert_eq!((t.status[200], t.bytes_body, t.sent), (40, 200, 40));
    assert_eq!(result.server.as_deref(), Some("peer"));
    // Each connection's handshake is timed with its first answer, as TLS's is.
    assert_eq!(t.timings.tls.count(), t.connections_opened);
    assert_eq!(t.connections_opened, 1);
}

#[test]
fn the_open_loop_places_its_arrivals_on_the_streams_of_its_connection() {
    let addr = serve(Peer::Answer(b"hello"), Instant::now() + Duration::from_secs(10));
    let mut config = config(addr, 1, 4, Duration::from_secs(5));
    let arrival = crate::Arrival::Fixed;
    config.pacing = crate::Pacing::Open { rate: 200.0, arrival, max_connections: 1 };
    config.stop = Stop::Duration(Duration::from_secs(1));
    let result = crate::run(&config, addr, Arc::new(Control::default())).unwrap();
    let t = &result.tally;
    // One connection carries them all, each stream taking the next arrival as it frees: at
    // most the few in flight at the end are left, and none is failed.
    assert_eq!((t.failed, t.connections_opened), (0, 1), "{:?}", t.errors);
    assert!(t.completed >= 150, "{} completed, {} never sent", t.completed, t.not_sent);
}

#[test]
fn a_reset_stream_ends_each_request_with_a_class() {
    let addr = serve(Peer::Reset(0x10b), Instant::now() + Duration::from_secs(10));
    let (result, took) = bench(addr, 6, 1, 2, Duration::from_secs(5));
    all_failed_as(&result, 6, ErrorClass::H3StreamReset);
    assert!(took < Duration::from_secs(4), "{took:?}");
    let reasons = &result.tally.errors.h2_reasons;
    assert_eq!(reasons.values().sum::<u64>(), 6, "{reasons:?}");
}

#[test]
fn a_server_that_stops_answering_mid_stream_ends_each_request_at_its_timeout() {
    // The connection's idle timeout (the connect timeout, 5 s) is far off: each request ends
    // at its own.
    let addr = serve(Peer::Stall, Instant::now() + Duration::from_secs(10));
    let mut config = config(addr, 1, 2, Duration::from_millis(400));
    (config.connect_timeout, config.stop) = (Duration::from_secs(5), Stop::Count(4));
    let started = Instant::now();
    let result = crate::run(&config, addr, Arc::new(Control::default())).unwrap();
    let took = started.elapsed();
    all_failed_as(&result, 4, ErrorClass::ClientTimeout);
    // Two rounds of two streams, 400 ms each, and the sweep's tick.
    assert!(took < Duration::from_secs(3), "{took:?}");
}

#[test]
fn a_server_that_goes_silent_ends_its_connections_requests_at_the_idle_timeout() {
    // The stalling peer then ignores every datagram: no acknowledgement of the client's
    // PINGs comes, and the connection is given up after the connect timeout, before the
    // requests' own timeout.
    let addr = serve(Peer::Stall, Instant::now() + Duration::from_secs(10));
    let mut config = config(addr, 1, 2, Duration::from_secs(20));
    config.connect_timeout = Duration::from_millis(400);
    config.stop = Stop::Count(2);
    let started = Instant::now();
    let result = crate::run(&config, addr, Arc::new(Control::default())).unwrap();
    all_failed_as(&result, 2, ErrorClass::QuicIdleTimeout);
    assert!(started.elapsed() < Duration::from_secs(5), "{:?}", started.elapsed());
    let reasons = &result.tally.errors.h2_reasons;
    assert_eq!(reasons.get("QUIC: the connection went idle"), Some(&2), "{reasons:?}");
}

#[test]
fn garbage_datagrams_end_each_request_at_the_connect_timeout_never_a_panic() {
    let (addr, answering) = garbage(Instant::now() + Duration::from_secs(2));
    let (result, took) = bench(addr, 3, 1, 1, Duration::from_millis(300));
    all_failed_as(&result, 3, ErrorClass::ConnectTimeout);
    assert!(took < Duration::from_secs(3), "{took:?}");
    answering.join().unwrap();
}

#[test]
fn nothing_on_the_udp_port_is_a_refused_connection() {
    // A port just bound and released: loopback answers with ICMP port unreachable.
    let addr = UdpSocket::bind("127.0.0.1:0").unwrap().local_addr().unwrap();
    let (result, took) = bench(addr, 3, 1, 1, Duration::from_secs(2));
    all_failed_as(&result, 3, ErrorClass::Connrefused);
    assert!(took < Duration::from_secs(2), "{took:?}");
}
