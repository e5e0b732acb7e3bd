//! One request at a time, blocking, outside any run: what a verifier or a status-page reader
//! needs (the lab's verify, its worker-pool sampler), with the same HTTP/1.1 framing, TLS and
//! HTTP/2 framing as the load. A GET goes out on a connection of its own (`Connection:
//! close` unless asked otherwise) and its whole answer is read: status, headers and body,
//! the body bounded. The response is parsed by the engine's parser ([`crate::http`]), TLS
//! configured by [`crate::tls`] (trusting the given CA only), and an HTTP/2 server is told
//! apart by its SETTINGS (RFC 9113 section 3.4), read with [`crate::h2`]'s framing.
//!
//! Not for load: every step blocks, and nothing here is timed.

use std::io::{self, Read, Write};
use std::net::{SocketAddr, TcpStream};
use std::path::Path;
use std::sync::Arc;
use std::time::{Duration, Instant};

use rustls::pki_types::ServerName;
use rustls::{ClientConfig, ClientConnection, StreamOwned};

use crate::check::{BodyCheck, Validation};
use crate::exchange::Exchange;
use crate::h2::{frame, Outcome, Session, PREFACE};
use crate::http::{Limits, Parser, Progress};
use crate::tls::{self, Negotiated, TlsOptions};

/// How long each step (connect, handshake, a read or a write) may take unless said otherwise.
pub const TIMEOUT: Duration = Duration::from_secs(10);
/// The largest body read, as the load keeps it for a verify.
pub const MAX_BODY: usize = crate::check::MAX_BODY;

/// One response.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Response {
    pub status: u16,
    /// Header names lower-cased, in the order received.
    pub headers: Vec<(String, String)>,
    pub body: Vec<u8>,
}

impl Response {
    /// The first value of the header `name` (lower-case).
    pub fn header(&self, name: &str) -> Option<&str> {
        self.headers.iter().find(|(n, _)| n == name).map(|(_, v)| v.as_str())
    }
}

/// Where a request goes: an address, and how to speak TLS there when the server does.
#[derive(Clone, Debug)]
pub struct Endpoint {
    pub addr: SocketAddr,
    pub tls: Option<Tls>,
}

impl Endpoint {
    /// Plain HTTP at `addr`.
    pub fn plain(addr: SocketAddr) -> Endpoint {
        Endpoint { addr, tls: None }
    }
}

/// TLS towards one server: one CA as the only root, and the name its certificate must carry
/// (the address the client reaches it at).
#[derive(Clone)]
pub struct Tls {
    name: ServerName<'static>,
    /// The name as given: what the certificate was checked for.
    pub host: String,
    /// The configuration every other one is made from (the CA read once).
    base: Arc<ClientConfig>,
    /// HTTP/1.1 only (ALPN `http/1.1`), shared by the plain GETs, which so resume one
    /// another's sessions (a sampler reads a status page every second).
    http1: Arc<ClientConfig>,
}

impl std::fmt::Debug for Tls {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Tls").field("host", &self.host).finish_non_exhaustive()
    }
}

impl Tls {
    /// Trusting only the certificates in `ca` (PEM), for the server name `name` (an IP
    /// address or a DNS name), TLS 1.2 and 1.3 as a run offers them.
    pub fn new(ca: &Path, name: &str) -> Result<Tls, String> {
        let opts =
            TlsOptions { cacert: Some(ca.to_path_buf()), resume: true, ..Default::default() };
        // The run's configuration names the flag its CA came from; here it came from a file.
        Tls::trusting(&opts, name)
            .map_err(|e| e.strip_prefix("--cacert ").map_or(e.clone(), str::to_string))
    }

    /// As a run trusts its target (`--cacert`, `--insecure`, else the system's roots), for the
    /// server name `name`: what a run's own blocking GETs (a page view's discovery) use.
    pub fn trusting(opts: &TlsOptions, name: &str) -> Result<Tls, String> {
        let base = tls::client_config(opts, false)?;
        let host = name.to_string();
        let name = tls::server_name(name)?;
        let http1 = with_alpn(&base, &["http/1.1"]);
        Ok(Tls { name, host, base, http1 })
    }

    /// A client configuration offering `alpn`, with a session cache of its own: connections
    /// made with one configuration resume each other's sessions, and only those.
    pub fn config(&self, alpn: &[&str]) -> Arc<ClientConfig> {
        with_alpn(&self.base, alpn)
    }
}

fn with_alpn(base: &ClientConfig, alpn: &[&str]) -> Arc<ClientConfig> {
    let mut config = base.clone();
    config.alpn_protocols = alpn.iter().map(|p| p.as_bytes().to_vec()).collect();
    config.resumption = rustls::client::Resumption::default();
    Arc::new(config)
}

/// What a TLS handshake settled (see [`Negotiated`]), and whether it resumed a session.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Handshake {
    pub negotiated: Negotiated,
    /// The session was resumed, not made anew.
    pub resumed: bool,
}

/// A connection: TCP, or TLS over it.
pub enum Stream {
    Plain(TcpStream),
    Tls(Box<StreamOwned<ClientConnection, TcpStream>>),
}

impl std::fmt::Debug for Stream {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(match self {
            Stream::Plain(_) => "Stream::Plain",
            Stream::Tls(_) => "Stream::Tls",
        })
    }
}

impl Read for Stream {
    fn read(&mut self, buf: &mut [u8]) -> io::Result<usize> {
        match self {
            Stream::Plain(s) => s.read(buf),
            Stream::Tls(s) => s.read(buf),
        }
    }
}

impl Write for Stream {
    fn write(&mut self, buf: &[u8]) -> io::Result<usize> {
        match self {
            Stream::Plain(s) => s.write(buf),
            Stream::Tls(s) => s.write(buf),
        }
    }

    fn flush(&mut self) -> io::Result<()> {
        match self {
            Stream::Plain(s) => s.flush(),
            Stream::Tls(s) => s.flush(),
        }
    }
}

/// GETs `path` from `endpoint` with `headers` added to the request, each step bounded by
/// [`TIMEOUT`].
pub fn get(endpoint: &Endpoint, path: &str, headers: &[(&str, &str)]) -> Result<Response, String> {
    let mut stream = connect(endpoint, TIMEOUT)?;
    exchange(&mut stream, endpoint.addr, path, headers)
}

/// GETs `path` with every step (connect, handshake, each write and read) bounded by `timeout`.
pub fn get_within(endpoint: &Endpoint, path: &str, timeout: Duration) -> Result<Response, String> {
    let mut stream = connect(endpoint, timeout)?;
    exchange(&mut stream, endpoint.addr, path, &[])
}

/// GETs `path` on a connection already open (its handshake done), with `Connection: close`,
/// and reads the whole answer.
pub fn exchange(
    stream: &mut Stream,
    addr: SocketAddr,
    path: &str,
    headers: &[(&str, &str)],
) -> Result<Response, String> {
    send(stream, addr, path, headers, true)?;
    read_response(stream, false)
}

/// GETs `path` without `Connection: close` and returns as soon as the head is in (the body
/// left unread): what the server says about keeping the connection open.
pub fn get_head_keepalive(endpoint: &Endpoint, path: &str) -> Result<Response, String> {
    let mut stream = connect(endpoint, TIMEOUT)?;
    send(&mut stream, endpoint.addr, path, &[], false)?;
    read_response(&mut stream, true)
}

fn send(
    stream: &mut Stream,
    addr: SocketAddr,
    path: &str,
    headers: &[(&str, &str)],
    close: bool,
) -> Result<(), String> {
    let mut request = format!("GET {path} HTTP/1.1\r\nHost: {addr}\r\n");
    if close {
        request.push_str("Connection: close\r\n");
    }
    for (name, value) in headers {
        request.push_str(&format!("{name}: {value}\r\n"));
    }
    request.push_str("\r\n");
    stream.write_all(request.as_bytes()).map_err(|e| format!("send: {e}"))
}

/// Reads one response with the engine's parser, its body kept up to [`MAX_BODY`]; with
/// `head_only`, returns once the head is in.
fn read_response(stream: &mut Stream, head_only: bool) -> Result<Response, String> {
    let mut parser = Parser::new(Limits::default());
    parser.reset(false);
    parser.capture_headers();
    let mut body = Vec::new();
    let mut too_long = false;
    let mut buf = vec![0u8; 64 << 10];
    let bad = |e: crate::http::ParseError| format!("bad response: {e}");
    loop {
        let n = read_some(stream, &mut buf)?;
        if n == 0 {
            parser.on_eof().map_err(bad)?;
            break;
        }
        let progress = parser
            .feed(&buf[..n], &mut |b| {
                if body.len() + b.len() <= MAX_BODY {
                    body.extend_from_slice(b);
                } else {
                    too_long = true;
                }
            })
            .map_err(bad)?;
        if too_long {
            return Err(format!("answer longer than {MAX_BODY} bytes"));
        }
        if matches!(progress, Progress::Complete { .. }) || (head_only && parser.status() != 0) {
            break;
        }
    }
    if head_only {
        body.clear();
    }
    Ok(Response { status: parser.status(), headers: parser.take_headers(), body })
}

/// What `stream` has, 0 at its end. A TLS peer that closes without close_notify (RFC 8446
/// section 6.1) ends it too: what came is kept, and the framing says whether it is whole.
fn read_some(stream: &mut Stream, buf: &mut [u8]) -> Result<usize, String> {
    match stream.read(buf) {
        Ok(n) => Ok(n),
        Err(e) if e.kind() == io::ErrorKind::UnexpectedEof && matches!(stream, Stream::Tls(_)) => {
            Ok(0)
        }
        Err(e) => Err(format!("read: {e}")),
    }
}

/// A connection to `endpoint` whose connect, handshake, reads and writes time out; over TLS,
/// HTTP/1.1 by ALPN.
fn connect(endpoint: &Endpoint, timeout: Duration) -> Result<Stream, String> {
    match &endpoint.tls {
        None => Ok(Stream::Plain(tcp(endpoint.addr, timeout)?)),
        Some(tls) => Ok(handshake(endpoint.addr, tls, &tls.http1, timeout)?.0),
    }
}

fn tcp(addr: SocketAddr, timeout: Duration) -> Result<TcpStream, String> {
    let stream = TcpStream::connect_timeout(&addr, timeout).map_err(|e| format!("connect: {e}"))?;
    stream.set_read_timeout(Some(timeout)).map_err(|e| e.to_string())?;
    stream.set_write_timeout(Some(timeout)).map_err(|e| e.to_string())?;
    Ok(stream)
}

/// Connects to `addr` and completes a TLS handshake with `config`: the certificate verified
/// against the CA of `tls` for its name, or the reason it was not.
pub fn handshake(
    addr: SocketAddr,
    tls: &Tls,
    config: &Arc<ClientConfig>,
    timeout: Duration,
) -> Result<(Stream, Handshake), String> {
    let mut tcp = tcp(addr, timeout)?;
    let mut conn =
        ClientConnection::new(config.clone(), tls.name.clone()).map_err(|e| format!("TLS: {e}"))?;
    while conn.is_handshaking() {
        // rustls's own errors (a refused certificate, an alert) come as InvalidData with the
        // reason; a read timeout as WouldBlock ("temporarily unavailable").
        conn.complete_io(&mut tcp).map_err(|e| format!("TLS handshake: {e}"))?;
    }
    let negotiated =
        Negotiated::of(&conn).ok_or("TLS: no version or cipher after the handshake")?;
    let done = Handshake {
        negotiated,
        resumed: conn.handshake_kind() == Some(rustls::HandshakeKind::Resumed),
    };
    Ok((Stream::Tls(Box::new(StreamOwned::new(conn, tcp))), done))
}

/// Opens a connection to `endpoint` for HTTP/2: over TLS offering only `h2` by ALPN (a server
/// that does not select it fails), in the clear as h2c with prior knowledge (RFC 9113 section
/// 3.3).
pub fn connect_h2(endpoint: &Endpoint) -> Result<Stream, String> {
    connect_h2_within(endpoint, TIMEOUT)
}

fn connect_h2_within(endpoint: &Endpoint, timeout: Duration) -> Result<Stream, String> {
    match &endpoint.tls {
        None => Ok(Stream::Plain(tcp(endpoint.addr, timeout)?)),
        Some(tls) => {
            let (stream, done) = handshake(endpoint.addr, tls, &tls.config(&["h2"]), timeout)?;
            match done.negotiated.alpn.as_deref() {
                Some("h2") => Ok(stream),
                other => Err(format!("ALPN selected {other:?} when only h2 was offered")),
            }
        }
    }
}

/// GETs `path` over HTTP/2 on a connection of its own ([`connect_h2`]: h2c with prior
/// knowledge in the clear), every step bounded by `timeout`, and reads the whole answer: what
/// a run over HTTP/2 reads before its load (a page view's discovery), from a server that may
/// speak nothing else on its port. The request loop's own [`Session`] frames the request and
/// reads the answer (SETTINGS, flow control, HPACK); only its I/O is here, blocking.
pub fn get_h2_within(
    endpoint: &Endpoint,
    path: &str,
    timeout: Duration,
) -> Result<Response, String> {
    let mut stream = connect_h2_within(endpoint, timeout)?;
    let now = Instant::now();
    let keep = Validation { keep_answer: true, ..Validation::default() };
    let mut session =
        Session::new(1, &Limits::default(), || Exchange::new(BodyCheck::new(&keep), now));
    session.capture_headers();
    session.connected();
    session.slots[0].ex.begin(now, now, timeout, false, 0);
    let scheme = if endpoint.tls.is_some() { "https" } else { "http" };
    let authority = endpoint.addr.to_string();
    let mut block = Vec::new();
    for (name, value) in
        [(":method", "GET"), (":scheme", scheme), (":authority", &authority), (":path", path)]
    {
        crate::h2::hpack::put_field(&mut block, name.as_bytes(), value.as_bytes());
    }
    session.place_own(0, false, block, Vec::new());
    // The request is its own block: the run's table of requests is empty.
    let requests = crate::h2::Requests::default();
    let mut buf = vec![0u8; 64 << 10];
    loop {
        session.send(&requests, Instant::now());
        while !session.output().is_empty() {
            let n = stream.write(session.output()).map_err(|e| format!("send: {e}"))?;
            session.wrote(n);
        }
        if let Some((s, outcome)) = session.done.pop_front() {
            let slot = &mut session.slots[s];
            return match outcome {
                Outcome::Complete => Ok(Response {
                    status: slot.status,
                    headers: std::mem::take(&mut slot.headers),
                    body: slot.ex.check.kept().unwrap_or_default().to_vec(),
                }),
                Outcome::Failed(class, reason) => {
                    Err(format!("HTTP/2: {} {reason}", class.name()).trim_end().to_string())
                }
                Outcome::Refused => Err("HTTP/2: the request was refused by a GOAWAY".into()),
            };
        }
        let n = read_some(&mut stream, &mut buf)?;
        if n == 0 {
            // The open stream fails (`on_eof`); a request never sent has no outcome to give.
            session.on_eof();
            if session.done.is_empty() {
                return Err("HTTP/2: the connection closed before the request went".into());
            }
            continue;
        }
        session.feed(&buf[..n], Instant::now()).map_err(|e| format!("HTTP/2: {}", e.reason()))?;
    }
}

/// Whether the server on `stream` speaks HTTP/2: after the client's preface (and an empty
/// SETTINGS) its first frame must be a SETTINGS frame on stream 0 (RFC 9113 section 3.4); an
/// HTTP/1.1 server answers the preface with a 400 or closes. The frame's parameters, by
/// identifier (section 6.5.1).
pub fn h2_settings(stream: &mut (impl Read + Write)) -> Result<Vec<(u16, u32)>, String> {
    let mut hello = PREFACE.to_vec();
    frame::put_settings(&mut hello, &[]);
    stream.write_all(&hello).map_err(|e| format!("send the HTTP/2 preface: {e}"))?;
    let mut head = [0u8; frame::HEAD_LEN];
    stream.read_exact(&mut head).map_err(|e| format!("no HTTP/2 frame after the preface: {e}"))?;
    if head.starts_with(b"HTTP/1.") {
        return Err("the server answered the HTTP/2 preface in HTTP/1.x".into());
    }
    // A frame header: 24-bit length, type, flags, 31-bit stream id (section 4.1).
    let len = u32::from_be_bytes([0, head[0], head[1], head[2]]) as usize;
    let stream_id = u32::from_be_bytes([head[5], head[6], head[7], head[8]]) & 0x7fff_ffff;
    let settings = head[3] == frame::SETTINGS && head[4] & frame::ACK == 0;
    if !settings || stream_id != 0 || !len.is_multiple_of(6) || len > frame::MAX_FRAME {
        return Err(format!(
            "the first HTTP/2 frame is not SETTINGS on stream 0 (type {:#x}, stream {stream_id}, \
             {len} bytes)",
            head[3]
        ));
    }
    let mut payload = vec![0u8; len];
    stream.read_exact(&mut payload).map_err(|e| format!("read the SETTINGS frame: {e}"))?;
    // Each parameter is a 16-bit identifier and a 32-bit value (section 6.5.1).
    Ok(payload
        .chunks_exact(6)
        .map(|p| (u16::from_be_bytes([p[0], p[1]]), u32::from_be_bytes([p[2], p[3], p[4], p[5]])))
        .collect())
}

/// SETTINGS parameters as a person reads them: `SETTINGS MAX_CONCURRENT_STREAMS=128 ...`.
pub fn describe_settings(params: &[(u16, u32)]) -> String {
    let params: Vec<String> =
        params.iter().map(|(id, value)| format!("{}={value}", setting_name(*id))).collect();
    format!("SETTINGS {}", params.join(" ")).trim_end().to_string()
}

/// A SETTINGS parameter's name (RFC 9113 section 6.5.2), or its number.
fn setting_name(id: u16) -> String {
    match id {
        1 => "HEADER_TABLE_SIZE".into(),
        2 => "ENABLE_PUSH".into(),
        3 => "MAX_CONCURRENT_STREAMS".into(),
        4 => "INITIAL_WINDOW_SIZE".into(),
        5 => "MAX_FRAME_SIZE".into(),
        6 => "MAX_HEADER_LIST_SIZE".into(),
        other => format!("{other:#x}"),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::net::TcpListener;

    /// A server in this process that reads one request head, answers `answer` and closes;
    /// what it received comes back through the join handle.
    fn serve(answer: &'static [u8]) -> (SocketAddr, std::thread::JoinHandle<String>) {
        let listener = TcpListener::bind("127.0.0.1:0").unwrap();
        let addr = listener.local_addr().unwrap();
        let handle = std::thread::spawn(move || {
            let (mut tcp, _) = listener.accept().unwrap();
            let mut got = Vec::new();
            let mut byte = [0u8; 1];
            while !got.ends_with(b"\r\n\r\n") && !got.ends_with(PREFACE) {
                match tcp.read(&mut byte) {
                    Ok(1) => got.push(byte[0]),
                    _ => break,
                }
            }
            let _ = tcp.write_all(answer);
            String::from_utf8_lossy(&got).into_owned()
        });
        (addr, handle)
    }

    #[test]
    fn a_chunked_answer_is_read_whole_with_its_headers() {
        let (addr, server) = serve(
            b"HTTP/1.1 200 OK\r\nServer: test\r\nTransfer-Encoding: chunked\r\nX-Two:  a b \r\n\r\n\
              5;ext=1\r\nhello\r\n8\r\n, world!\r\n0\r\nTrailer: x\r\n\r\n",
        );
        let r = get(&Endpoint::plain(addr), "/hello.txt", &[("Accept-Encoding", "gzip")]).unwrap();
        assert_eq!((r.status, r.body.as_slice()), (200, &b"hello, world!"[..]));
        assert_eq!((r.header("server"), r.header("x-two")), (Some("test"), Some("a b")));
        let request = server.join().unwrap();
        assert!(request.starts_with("GET /hello.txt HTTP/1.1\r\n"), "{request}");
        assert!(request.contains("Connection: close\r\nAccept-Encoding: gzip\r\n"), "{request}");
    }

    #[test]
    fn a_short_body_and_garbage_are_errors_that_say_so() {
        let (addr, _) = serve(b"HTTP/1.1 200 OK\r\nContent-Length: 10\r\n\r\nhello");
        let e = get(&Endpoint::plain(addr), "/", &[]).unwrap_err();
        assert!(e.contains("before the end of the body"), "{e}");
        let (addr, _) = serve(b"SSH-2.0-OpenSSH\r\n\r\n");
        let e = get(&Endpoint::plain(addr), "/", &[]).unwrap_err();
        assert!(e.starts_with("bad response:"), "{e}");
    }

    #[test]
    fn the_keepalive_head_is_read_without_the_body() {
        let (addr, server) =
            serve(b"HTTP/1.1 200 OK\r\nContent-Length: 1000\r\nConnection: keep-alive\r\n\r\nab");
        let r = get_head_keepalive(&Endpoint::plain(addr), "/hello.txt").unwrap();
        assert_eq!((r.status, r.header("connection"), r.body.len()), (200, Some("keep-alive"), 0));
        assert!(!server.join().unwrap().contains("Connection: close"));
    }

    #[test]
    fn settings_are_read_after_the_preface_and_http1_is_told_apart() {
        // MAX_CONCURRENT_STREAMS 128, INITIAL_WINDOW_SIZE 65536, and an unknown 0x10 = 1.
        let (addr, server) =
            serve(b"\0\0\x12\x04\0\0\0\0\0\0\x03\0\0\0\x80\0\x04\0\x01\0\0\0\x10\0\0\0\x01");
        let mut stream = connect_h2(&Endpoint::plain(addr)).unwrap();
        let params = h2_settings(&mut stream).unwrap();
        assert_eq!(params, [(3, 128), (4, 65_536), (16, 1)]);
        assert_eq!(
            describe_settings(&params),
            "SETTINGS MAX_CONCURRENT_STREAMS=128 INITIAL_WINDOW_SIZE=65536 0x10=1"
        );
        assert!(server.join().unwrap().starts_with("PRI * HTTP/2.0\r\n"), "the preface first");
        let (addr, _) = serve(b"HTTP/1.1 400 Bad Request\r\n\r\n");
        let mut stream = connect_h2(&Endpoint::plain(addr)).unwrap();
        assert_eq!(
            h2_settings(&mut stream).unwrap_err(),
            "the server answered the HTTP/2 preface in HTTP/1.x"
        );
        // A PING first: not SETTINGS.
        let (addr, _) = serve(b"\0\0\x08\x06\0\0\0\0\0\0\0\0\0\0\0\0\0");
        let mut stream = connect_h2(&Endpoint::plain(addr)).unwrap();
        let e = h2_settings(&mut stream).unwrap_err();
        assert!(
            e.starts_with("the first HTTP/2 frame is not SETTINGS on stream 0 (type 0x6"),
            "{e}"
        );
    }

    /// An h2c server in this process: reads the client's preface, answers `answer` and holds
    /// the connection until the client closes it; what it received comes back.
    fn serve_h2(answer: Vec<u8>) -> (SocketAddr, std::thread::JoinHandle<Vec<u8>>) {
        let listener = TcpListener::bind("127.0.0.1:0").unwrap();
        let addr = listener.local_addr().unwrap();
        let handle = std::thread::spawn(move || {
            let (mut tcp, _) = listener.accept().unwrap();
            tcp.set_read_timeout(Some(TIMEOUT)).unwrap();
            let mut got = vec![0u8; PREFACE.len()];
            tcp.read_exact(&mut got).unwrap();
            tcp.write_all(&answer).unwrap();
            let mut rest = Vec::new();
            let _ = tcp.read_to_end(&mut rest);
            got.extend_from_slice(&rest);
            got
        });
        (addr, handle)
    }

    #[test]
    fn a_get_over_h2c_reads_the_whole_answer_with_its_headers() {
        let mut answer = Vec::new();
        frame::put_settings(&mut answer, &[]);
        // :status 200 (static index 8), then content-type (static name 31) as a literal
        // without indexing (RFC 7541 section 6.2.2); the body in two DATA frames.
        let mut block = vec![0x88, 0x0f, 0x10, 8];
        block.extend_from_slice(b"text/css");
        frame::put_head(&mut answer, block.len(), frame::HEADERS, frame::END_HEADERS, 1);
        answer.extend_from_slice(&block);
        frame::put_head(&mut answer, 5, frame::DATA, 0, 1);
        answer.extend_from_slice(b"body{");
        frame::put_head(&mut answer, 1, frame::DATA, frame::END_STREAM, 1);
        answer.extend_from_slice(b"}");
        let (addr, server) = serve_h2(answer);
        let r = get_h2_within(&Endpoint::plain(addr), "/s.css", TIMEOUT).unwrap();
        assert_eq!((r.status, r.body.as_slice()), (200, &b"body{}"[..]));
        assert_eq!(r.header("content-type"), Some("text/css"));
        let got = server.join().unwrap();
        assert!(got.starts_with(PREFACE), "the preface first");
        // Our SETTINGS and WINDOW_UPDATE, the request's HEADERS, then the ACK of the server's.
        let mut at = PREFACE.len();
        let mut kinds = Vec::new();
        while at + frame::HEAD_LEN <= got.len() {
            let len = u32::from_be_bytes([0, got[at], got[at + 1], got[at + 2]]) as usize;
            kinds.push(got[at + 3]);
            at += frame::HEAD_LEN + len;
        }
        assert!(kinds.contains(&frame::HEADERS), "{kinds:?}");
    }

    #[test]
    fn an_http1_answer_or_a_reset_stream_over_h2c_is_an_error_that_says_so() {
        let (addr, _) = serve_h2(b"HTTP/1.1 400 Bad Request\r\nContent-Length: 0\r\n\r\n".to_vec());
        let e = get_h2_within(&Endpoint::plain(addr), "/", TIMEOUT).unwrap_err();
        assert!(e.starts_with("HTTP/2: "), "{e}");
        let mut answer = Vec::new();
        frame::put_settings(&mut answer, &[]);
        frame::put_rst_stream(&mut answer, 1, crate::h2::ErrorCode::Protocol);
        let (addr, _) = serve_h2(answer);
        let e = get_h2_within(&Endpoint::plain(addr), "/", TIMEOUT).unwrap_err();
        assert_eq!(e, "HTTP/2: h2_stream RST_STREAM PROTOCOL_ERROR");
    }

    #[test]
    fn a_ca_that_cannot_be_read_is_named() {
        let e = Tls::new(Path::new("/nonexistent/ca.pem"), "127.0.0.1").unwrap_err();
        assert!(e.starts_with("/nonexistent/ca.pem: "), "{e}");
    }
}
