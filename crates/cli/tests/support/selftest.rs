//! Tests of the test support itself, with raw std::net clients: each server behaves as its
//! `Behaviour` promises, and nginx starts, serves and leaves no process behind.

use std::io::{ErrorKind, Read, Write};
use std::net::TcpStream;
use std::time::{Duration, Instant};

use super::servers::{NO_BODY_ADVERTISED_LEN, VARYING_LENGTHS};
use super::*;

/// How long a read or a drop may take before the test fails: far beyond what either takes
/// (milliseconds), so that only a hang fails, not a busy machine.
const READ_LIMIT: Duration = Duration::from_secs(30);

/// A raw client that keeps unread bytes, so responses can be taken apart piece by piece.
struct Client {
    stream: TcpStream,
    buf: Vec<u8>,
}

impl Client {
    fn connect(server: &TestServer) -> Client {
        let stream = TcpStream::connect(server.addr()).expect("connect");
        // A server that misbehaves must fail the test, not hang it; generous, since a loaded
        // machine may not run the server's thread for a while.
        stream.set_read_timeout(Some(READ_LIMIT)).unwrap();
        Client { stream, buf: Vec::new() }
    }

    fn send(&mut self, request: &str) {
        self.stream.write_all(request.as_bytes()).expect("send request");
    }

    fn get(&mut self, path: &str) {
        self.send(&format!("GET {path} HTTP/1.1\r\nHost: test\r\n\r\n"));
    }

    fn fill(&mut self) -> usize {
        let mut chunk = [0u8; 16384];
        let n = self.stream.read(&mut chunk).expect("read");
        self.buf.extend_from_slice(&chunk[..n]);
        n
    }

    /// Everything up to and including `delimiter`.
    fn until(&mut self, delimiter: &[u8]) -> Vec<u8> {
        loop {
            if let Some(at) = self.buf.windows(delimiter.len()).position(|w| w == delimiter) {
                return self.buf.drain(..at + delimiter.len()).collect();
            }
            assert!(self.fill() > 0, "EOF before {delimiter:?}; got {:?}", self.text());
        }
    }

    fn head(&mut self) -> String {
        String::from_utf8(self.until(b"\r\n\r\n")).expect("UTF-8 head")
    }

    fn exactly(&mut self, n: usize) -> Vec<u8> {
        while self.buf.len() < n {
            assert!(self.fill() > 0, "EOF after {} of {n} bytes", self.buf.len());
        }
        self.buf.drain(..n).collect()
    }

    fn rest(&mut self) -> Vec<u8> {
        while self.fill() > 0 {}
        std::mem::take(&mut self.buf)
    }

    fn text(&self) -> String {
        String::from_utf8_lossy(&self.buf).into_owned()
    }

    /// A Content-Length response: (head, body).
    fn response(&mut self) -> (String, Vec<u8>) {
        let head = self.head();
        let len = header(&head, "content-length").map_or(0, |v| v.parse().unwrap());
        (head, self.exactly(len))
    }

    /// A chunked body: (chunks, chunk-size lines, trailer section).
    fn chunked(&mut self) -> (Vec<Vec<u8>>, Vec<String>, String) {
        let (mut chunks, mut lines) = (Vec::new(), Vec::new());
        loop {
            let line = String::from_utf8(self.until(b"\r\n")).unwrap();
            let size = usize::from_str_radix(line.trim_end().split(';').next().unwrap(), 16)
                .unwrap_or_else(|_| panic!("bad chunk-size line {line:?}"));
            lines.push(line.trim_end().to_string());
            if size == 0 {
                break;
            }
            chunks.push(self.exactly(size));
            assert_eq!(self.exactly(2), b"\r\n");
        }
        let trailer = String::from_utf8(self.until(b"\r\n")).unwrap();
        let trailer = if trailer == "\r\n" { String::new() } else { trailer + &self.head() };
        (chunks, lines, trailer)
    }
}

fn status_of(head: &str) -> u16 {
    head.split(' ').nth(1).unwrap().parse().unwrap()
}

fn header<'h>(head: &'h str, name: &str) -> Option<&'h str> {
    head.lines()
        .filter_map(|l| l.split_once(':'))
        .find(|(n, _)| n.eq_ignore_ascii_case(name))
        .map(|(_, v)| v.trim())
}

#[test]
fn fixed_keeps_alive_pipelines_and_records_requests() {
    let server = TestServer::start(Behaviour::Fixed {
        status: 201,
        headers: vec![("X-Test".into(), "yes".into())],
        body: b"hello".to_vec(),
    });
    assert!(server.url("a").ends_with(&format!("{}/a", server.addr())));
    let mut client = Client::connect(&server);
    client.get("/one");
    let (head, body) = client.response();
    assert!(head.starts_with("HTTP/1.1 201 Created\r\n"), "{head}");
    assert_eq!((header(&head, "x-test"), body.as_slice()), (Some("yes"), &b"hello"[..]));
    // Two requests in one write: both are answered, in order, on the same connection.
    client.send(
        "POST /two HTTP/1.1\r\nHost: t\r\nContent-Length: 3\r\n\r\nabcHEAD /three HTTP/1.1\r\n\r\n",
    );
    assert_eq!(client.response().1, b"hello");
    let head = client.head();
    assert_eq!(header(&head, "content-length"), Some("5"), "HEAD keeps the length");
    client.get("/four");
    assert_eq!(client.response().1, b"hello", "HEAD sent no body");
    assert_eq!((server.requests(), server.connections()), (4, 1));
    let last = server.last_request().unwrap();
    assert_eq!((last.method.as_str(), last.target.as_str()), ("GET", "/four"));
    assert_eq!(last.header("HOST"), Some("test"));
}

#[test]
fn fixed_closes_when_the_client_asks() {
    let server = TestServer::start(Behaviour::ok("x"));
    let mut client = Client::connect(&server);
    client.send("GET / HTTP/1.1\r\nConnection: close\r\n\r\n");
    assert_eq!(client.response().1, b"x");
    assert!(client.rest().is_empty());
}

#[test]
fn chunked_decodes_to_the_chunks_with_extensions_and_trailers() {
    let chunks = vec![b"first chunk, 26 bytes long".to_vec(), vec![b'z'; 300], b"end".to_vec()];
    let server = TestServer::start(Behaviour::Chunked {
        chunks: chunks.clone(),
        extensions: true,
        trailers: true,
    });
    let mut client = Client::connect(&server);
    for _ in 0..2 {
        client.get("/");
        let head = client.head();
        assert_eq!(header(&head, "transfer-encoding"), Some("chunked"));
        assert_eq!(header(&head, "content-length"), None);
        let (got, lines, trailer) = client.chunked();
        assert_eq!(got, chunks);
        assert_eq!(lines, ["1A;chunk=0", "12c;chunk=1", "3;chunk=2", "0;last=yes"]);
        assert_eq!(trailer, "X-Checksum: 329\r\nX-Chunks: 3\r\n\r\n");
    }
    let plain = TestServer::start(Behaviour::Chunked {
        chunks: vec![b"ab".to_vec()],
        extensions: false,
        trailers: false,
    });
    let mut client = Client::connect(&plain);
    client.get("/");
    client.head();
    assert_eq!(client.chunked(), (vec![b"ab".to_vec()], vec!["2".into(), "0".into()], "".into()));
}

#[test]
fn close_delimited_and_http10_close_after_the_body() {
    let server = TestServer::start(Behaviour::CloseDelimited { body: b"until close".to_vec() });
    let mut client = Client::connect(&server);
    client.get("/");
    let head = client.head();
    assert!(
        header(&head, "content-length").is_none() && header(&head, "transfer-encoding").is_none()
    );
    assert_eq!(header(&head, "connection"), Some("close"));
    assert_eq!(client.rest(), b"until close");

    let server = TestServer::start(Behaviour::Http10 { body: b"old".to_vec() });
    let mut client = Client::connect(&server);
    client.get("/");
    let (head, body) = client.response();
    assert!(head.starts_with("HTTP/1.0 200 OK\r\n"), "{head}");
    assert_eq!(body, b"old");
    assert!(client.rest().is_empty());
}

#[test]
fn slow_answers_no_earlier_than_its_delay() {
    let delay = Duration::from_millis(200);
    let server = TestServer::start(Behaviour::Slow { delay, body: b"late".to_vec() });
    let mut client = Client::connect(&server);
    let start = Instant::now();
    client.get("/");
    assert_eq!(client.response().1, b"late");
    assert!(start.elapsed() >= delay);
}

/// A request made inside a pause window is held until the window ends. (The window of a 2 s
/// period with a 1.6 s pause lies 200-1800 ms into each period of the server's clock, which
/// starts a little after `started`; the request goes out 600 ms in, which leaves a slow
/// machine 400 ms of slack in starting the server and 1.2 s in sending the request.)
#[test]
fn freeze_holds_answers_until_its_pause_window_ends() {
    let (period, pause) = (Duration::from_secs(2), Duration::from_millis(1600));
    let started = Instant::now();
    let server = TestServer::start(Behaviour::Freeze { period, pause, body: b"f".to_vec() });
    let mut client = Client::connect(&server);
    std::thread::sleep(Duration::from_millis(600).saturating_sub(started.elapsed()));
    let asked = started.elapsed();
    client.get("/");
    assert_eq!(client.response().1, b"f");
    let answered = started.elapsed();
    assert!(asked < Duration::from_millis(1800), "asked only {asked:?} after the start");
    assert!(answered >= Duration::from_millis(1800), "answered {answered:?} after the start");
}

/// At 100 responses a second, 3 connections asking 4 times each get their 12 answers no
/// faster than one every 10 ms, so the last comes at least 110 ms after the first.
#[test]
fn capacity_spaces_answers_across_connections() {
    let server = TestServer::start(Behaviour::Capacity { per_second: 100.0, body: b"c".to_vec() });
    let started = Instant::now();
    let clients: Vec<_> = (0..3)
        .map(|_| {
            let mut client = Client::connect(&server);
            std::thread::spawn(move || {
                for _ in 0..4 {
                    client.get("/");
                    assert_eq!(client.response().1, b"c");
                }
            })
        })
        .collect();
    for client in clients {
        client.join().expect("client thread");
    }
    let took = started.elapsed();
    assert!(took >= Duration::from_millis(110), "12 answers in {took:?}");
    assert!(took < READ_LIMIT, "12 answers in {took:?}");
    assert_eq!(server.requests(), 12);
}

#[test]
fn truncated_sends_exactly_the_bytes_it_says_then_closes() {
    let server = TestServer::start(Behaviour::Truncated { declared: 1000, sent: 300 });
    let mut client = Client::connect(&server);
    client.get("/");
    assert_eq!(header(&client.head(), "content-length"), Some("1000"));
    assert_eq!(client.rest().len(), 300);
}

#[test]
fn reset_makes_the_client_read_econnreset() {
    let server = TestServer::start(Behaviour::Reset);
    let mut client = Client::connect(&server);
    client.get("/");
    let err = client.stream.read(&mut [0u8; 64]).expect_err("a reset, not data or EOF");
    assert_eq!(err.kind(), ErrorKind::ConnectionReset);
    assert_eq!(server.requests(), 1, "the request was read before the reset");
}

#[test]
fn garbage_answers_with_non_http_bytes() {
    let server = TestServer::start(Behaviour::Garbage);
    let mut client = Client::connect(&server);
    client.get("/");
    assert_eq!(client.rest(), b"\x00\x01garbage\r\n\r\n");
}

#[test]
fn silent_never_answers_and_drop_closes_its_connections() {
    let server = TestServer::start(Behaviour::Silent);
    let mut client = Client::connect(&server);
    client.send("GET / HTTP/1.1\r\nConnection: close\r\n\r\n");
    // Once the request is counted, an answer would have been written before the count.
    assert!(wait_until(READ_LIMIT, || server.requests() == 1));
    client.stream.set_read_timeout(Some(Duration::from_millis(100))).unwrap();
    let err = client.stream.read(&mut [0u8; 64]).expect_err("no answer");
    assert!(matches!(err.kind(), ErrorKind::WouldBlock | ErrorKind::TimedOut), "{err}");
    drop(server);
    client.stream.set_read_timeout(Some(READ_LIMIT)).unwrap();
    assert_eq!(client.stream.read(&mut [0u8; 64]).unwrap(), 0, "EOF once the server is gone");
}

#[test]
fn endless_chunked_keeps_going_and_stops_on_drop() {
    let server = TestServer::start(Behaviour::EndlessChunked);
    let mut client = Client::connect(&server);
    client.get("/");
    client.head();
    let mut received = 0;
    for _ in 0..100 {
        let line = String::from_utf8(client.until(b"\r\n")).unwrap();
        received += client.exactly(usize::from_str_radix(line.trim_end(), 16).unwrap()).len();
        client.exactly(2);
    }
    assert_eq!(received, 100 * 16 * 1024);
    // The client stops reading but stays connected: the server's write blocks on a full
    // buffer, and drop must still return.
    let start = Instant::now();
    drop(server);
    assert!(start.elapsed() < READ_LIMIT, "drop took {:?}", start.elapsed());
}

#[test]
fn no_body_statuses_and_head_carry_no_body() {
    for status in [204, 304] {
        let server = TestServer::start(Behaviour::NoBody { status });
        let mut client = Client::connect(&server);
        client.get("/");
        let head = client.head();
        assert_eq!(status_of(&head), status);
        let advertised = NO_BODY_ADVERTISED_LEN.to_string();
        let expected = (status == 304).then_some(advertised.as_str());
        assert_eq!(header(&head, "content-length"), expected);
        client.send("HEAD / HTTP/1.1\r\n\r\n");
        let head = client.head();
        assert_eq!((status_of(&head), header(&head, "content-length")), (200, Some(&*advertised)));
        // If either response had a body, these bytes would not start the next response.
        client.get("/");
        assert!(client.head().starts_with(&format!("HTTP/1.1 {status} ")));
    }
}

#[test]
fn conflicting_length_sends_two_different_content_lengths() {
    let server = TestServer::start(Behaviour::ConflictingLength);
    let mut client = Client::connect(&server);
    client.get("/");
    let head = client.head();
    let lengths: Vec<_> = head
        .lines()
        .filter_map(|l| l.split_once(':'))
        .filter(|(n, _)| n.eq_ignore_ascii_case("content-length"))
        .map(|(_, v)| v.trim())
        .collect();
    assert_eq!(lengths, ["5", "7"]);
    assert_eq!(client.rest(), b"hello!!");
}

#[test]
fn interim_sends_100_continue_before_the_final_response() {
    let server = TestServer::start(Behaviour::Interim);
    let mut client = Client::connect(&server);
    client.get("/");
    assert_eq!(client.head(), "HTTP/1.1 100 Continue\r\n\r\n");
    let (head, body) = client.response();
    assert_eq!((status_of(&head), body.as_slice()), (200, &b"final"[..]));
    assert_eq!(server.requests(), 1);
}

#[test]
fn varying_alternates_body_lengths() {
    let server = TestServer::start(Behaviour::Varying);
    let mut client = Client::connect(&server);
    let lengths: Vec<usize> = (0..4)
        .map(|_| {
            client.get("/");
            client.response().1.len()
        })
        .collect();
    let [a, b] = VARYING_LENGTHS;
    assert_eq!(lengths, [a, b, a, b]);
    assert_ne!(a, b);
}

#[test]
fn status_cycle_goes_round_per_request_across_connections() {
    let server = TestServer::start(Behaviour::StatusCycle(vec![200, 404, 503]));
    let statuses: Vec<u16> = (0..5)
        .map(|_| {
            let mut client = Client::connect(&server);
            client.get("/");
            status_of(&client.response().0)
        })
        .collect();
    assert_eq!(statuses, [200, 404, 503, 200, 404]);
    assert_eq!(server.connections(), 5);
}

#[test]
fn closed_port_refuses_connections() {
    let err = TcpStream::connect(("127.0.0.1", closed_port())).expect_err("nothing listens");
    assert_eq!(err.kind(), ErrorKind::ConnectionRefused);
}

#[test]
fn drop_returns_promptly_with_idle_connections_open() {
    let server = TestServer::start(Behaviour::ok("x"));
    let addr = server.addr();
    let mut clients: Vec<Client> = (0..20).map(|_| Client::connect(&server)).collect();
    for client in &mut clients[..10] {
        client.get("/");
        client.response();
    }
    // Connections still in the backlog when the listener closes are reset by the kernel;
    // only accepted ones are shut down cleanly, so wait until all are accepted.
    assert!(wait_until(READ_LIMIT, || server.connections() == 20));
    let start = Instant::now();
    drop(server);
    assert!(start.elapsed() < READ_LIMIT, "drop took {:?}", start.elapsed());
    for client in &mut clients {
        assert_eq!(client.stream.read(&mut [0u8; 8]).unwrap(), 0, "closed by drop");
    }
    assert!(TcpStream::connect(addr).is_err(), "the listener is gone");
}

#[test]
fn loadlab_points_at_the_built_binary() {
    let program = loadlab().get_program().to_owned();
    assert!(std::path::Path::new(&program).is_file(), "{program:?}");
}

#[test]
fn nginx_serves_a_file_and_leaves_no_process_behind() {
    let nginx = require_nginx!(&[("hello.txt", b"Hello, nginx!"), ("sub/dir/a.bin", &[0, 1, 2])]);
    let url = nginx.url("hello.txt");
    assert_eq!(url, format!("http://{}/hello.txt", nginx.addr()));
    let stream = TcpStream::connect(nginx.addr()).expect("connect to nginx");
    stream.set_read_timeout(Some(READ_LIMIT)).unwrap();
    let mut client = Client { stream, buf: Vec::new() };
    client.get("/hello.txt");
    let (head, body) = client.response();
    assert_eq!(status_of(&head), 200, "{head}\n{}", nginx.logs());
    assert_eq!(body, b"Hello, nginx!");
    client.get("/sub/dir/a.bin");
    assert_eq!(client.response().1, [0, 1, 2], "keep-alive, nested paths");
    client.get("/missing");
    assert_eq!(status_of(&client.response().0), 404);

    let pids = nginx.pids();
    assert!(pids.len() >= 2, "master and a worker: {pids:?}");
    assert!(pids.iter().all(|&pid| nginx::process_exists(pid)));
    let dir = nginx.dir().to_owned();
    drop(nginx);
    for pid in pids {
        assert!(!nginx::process_exists(pid), "nginx process {pid} survived drop");
    }
    assert!(!dir.exists(), "the temp dir is removed");
}
