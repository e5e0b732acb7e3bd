//! A small blocking HTTP/1.1 GET for verify and the pool status pages: one request per
//! connection (`Connection: close`), the whole answer read (bounded), the head parsed by
//! httparse, chunked bodies decoded; over TLS (rustls, trusting only the instance's own CA)
//! when the stack's front speaks it, with what the handshake settled. Not for load: that is
//! the engine's.

use std::io::{self, Read, Write};
use std::net::{SocketAddr, TcpStream};
use std::path::Path;
use std::sync::Arc;
use std::time::Duration;

use rustls::pki_types::pem::PemObject;
use rustls::pki_types::{CertificateDer, ServerName};
use rustls::{ClientConfig, ClientConnection, StreamOwned};

/// One response.
#[derive(Debug)]
pub struct Response {
    pub status: u16,
    /// Header names lower-cased, in the order received.
    pub headers: Vec<(String, String)>,
    pub body: Vec<u8>,
}

impl Response {
    pub fn header(&self, name: &str) -> Option<&str> {
        self.headers.iter().find(|(n, _)| n == name).map(|(_, v)| v.as_str())
    }
}

const TIMEOUT: Duration = Duration::from_secs(10);
/// The largest answer read (the biggest workload verify fetches whole is a few MB).
const MAX_RESPONSE: usize = 64 << 20;
/// Headers beyond this count make the answer unreadable to verify.
const MAX_HEADERS: usize = 64;

/// Where the lab's client reaches a server: its address, and how to speak TLS there when the
/// server does.
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

/// TLS towards one instance: its CA as the only root, and the name its certificate must
/// carry (the address the client reaches it at).
#[derive(Clone)]
pub struct Tls {
    roots: Arc<rustls::RootCertStore>,
    name: ServerName<'static>,
    /// The name as given: what the certificate was checked for.
    pub host: String,
    /// HTTP/1.1 only (ALPN `http/1.1`), shared by the plain GETs, which so resume one
    /// another's sessions (the sampler reads a status page every second).
    http1: Arc<ClientConfig>,
}

impl std::fmt::Debug for Tls {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Tls").field("host", &self.host).finish_non_exhaustive()
    }
}

impl Tls {
    /// Trusting only the certificates in `ca` (PEM), for the server name `name` (an IP
    /// address or a DNS name).
    pub fn new(ca: &Path, name: &str) -> Result<Tls, String> {
        let mut roots = rustls::RootCertStore::empty();
        let certs =
            CertificateDer::pem_file_iter(ca).map_err(|e| format!("{}: {e}", ca.display()))?;
        for cert in certs {
            let cert = cert.map_err(|e| format!("{}: {e}", ca.display()))?;
            roots.add(cert).map_err(|e| format!("{}: {e}", ca.display()))?;
        }
        let host = name.to_string();
        let name = ServerName::try_from(host.clone())
            .map_err(|e| format!("{host}: not a TLS server name: {e}"))?;
        let roots = Arc::new(roots);
        let http1 = config(&roots, &["http/1.1"]);
        Ok(Tls { roots, name, host, http1 })
    }

    /// A client configuration offering `alpn`; connections made with one configuration
    /// resume each other's sessions.
    pub fn config(&self, alpn: &[&str]) -> Arc<ClientConfig> {
        config(&self.roots, alpn)
    }
}

fn config(roots: &Arc<rustls::RootCertStore>, alpn: &[&str]) -> Arc<ClientConfig> {
    let provider = Arc::new(rustls::crypto::ring::default_provider());
    let mut config = ClientConfig::builder_with_provider(provider)
        .with_safe_default_protocol_versions()
        .expect("ring supports the default versions")
        .with_root_certificates(roots.clone())
        .with_no_client_auth();
    config.alpn_protocols = alpn.iter().map(|p| p.as_bytes().to_vec()).collect();
    Arc::new(config)
}

/// What a TLS handshake settled.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Handshake {
    /// `TLSv1_3`, as rustls names it.
    pub version: String,
    /// The protocol the server selected by ALPN, if it selected one.
    pub alpn: Option<String>,
    pub cipher: String,
    /// The session was resumed, not made anew.
    pub resumed: bool,
}

/// A connection to a lab server: TCP, or TLS over it.
pub enum Stream {
    Plain(TcpStream),
    Tls(Box<StreamOwned<ClientConnection, TcpStream>>),
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

/// GETs `path` from `endpoint` (a lab server: 127.0.0.1, or a network profile's namespace),
/// with `headers` added to the request.
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
    let mut request = format!("GET {path} HTTP/1.1\r\nHost: {addr}\r\nConnection: close\r\n");
    for (name, value) in headers {
        request.push_str(&format!("{name}: {value}\r\n"));
    }
    request.push_str("\r\n");
    stream.write_all(request.as_bytes()).map_err(|e| format!("send: {e}"))?;
    let mut raw = Vec::new();
    // What verify fetches is bounded; a server that sends more is not answering verify.
    let read = stream.take(MAX_RESPONSE as u64 + 1).read_to_end(&mut raw);
    match read {
        Ok(_) => {}
        // A TLS peer that closes without close_notify (RFC 8446 section 6.1): what came is
        // kept, and the framing below says whether it is whole.
        Err(e) if e.kind() == io::ErrorKind::UnexpectedEof && matches!(stream, Stream::Tls(_)) => {}
        Err(e) => return Err(format!("read: {e}")),
    }
    if raw.len() > MAX_RESPONSE {
        return Err(format!("answer longer than {MAX_RESPONSE} bytes"));
    }
    parse(&raw)
}

/// GETs `path` without `Connection: close` and returns as soon as the headers are in (the
/// body is left unread): what the server says about keeping the connection open.
pub fn get_head_keepalive(endpoint: &Endpoint, path: &str) -> Result<Response, String> {
    let mut stream = connect(endpoint, TIMEOUT)?;
    let request = format!("GET {path} HTTP/1.1\r\nHost: {}\r\n\r\n", endpoint.addr);
    stream.write_all(request.as_bytes()).map_err(|e| format!("send: {e}"))?;
    let mut raw = Vec::new();
    let mut buf = [0u8; 4096];
    loop {
        if let Some((status, headers, _)) = parse_head(&raw)? {
            return Ok(Response { status, headers, body: Vec::new() });
        }
        let n = stream.read(&mut buf).map_err(|e| format!("read: {e}"))?;
        if n == 0 || raw.len() > MAX_RESPONSE {
            return Err("no end of headers".into());
        }
        raw.extend_from_slice(&buf[..n]);
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
/// against the instance's CA for `tls.name`, or the reason it was not.
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
    let done = Handshake {
        version: conn.protocol_version().map_or("?".into(), |v| format!("{v:?}")),
        alpn: conn.alpn_protocol().map(|p| String::from_utf8_lossy(p).into_owned()),
        cipher: conn.negotiated_cipher_suite().map_or("?".into(), |c| format!("{:?}", c.suite())),
        resumed: conn.handshake_kind() == Some(rustls::HandshakeKind::Resumed),
    };
    Ok((Stream::Tls(Box::new(StreamOwned::new(conn, tcp))), done))
}

/// HTTP/2's connection preface (RFC 9113 section 3.4): the fixed string, then an empty
/// SETTINGS frame (length 0, type 0x4, no flags, stream 0).
const H2_PREFACE: &[u8] = b"PRI * HTTP/2.0\r\n\r\nSM\r\n\r\n\0\0\0\x04\0\0\0\0\0";

/// Whether the server on `stream` speaks HTTP/2: after the client's preface its first frame
/// must be a SETTINGS frame on stream 0 (RFC 9113 section 3.4); an HTTP/1.1 server answers
/// the preface with a 400 or closes. The frame's parameters, as `SETTINGS n=V ...`.
pub fn h2_settings(stream: &mut Stream) -> Result<String, String> {
    stream.write_all(H2_PREFACE).map_err(|e| format!("send the HTTP/2 preface: {e}"))?;
    // A frame header: 24-bit length, type, flags, 31-bit stream id (section 4.1).
    let mut head = [0u8; 9];
    stream.read_exact(&mut head).map_err(|e| format!("no HTTP/2 frame after the preface: {e}"))?;
    if head.starts_with(b"HTTP/1.") {
        return Err("the server answered the HTTP/2 preface in HTTP/1.x".into());
    }
    let len = u32::from_be_bytes([0, head[0], head[1], head[2]]) as usize;
    let stream_id = u32::from_be_bytes([head[5], head[6], head[7], head[8]]) & 0x7fff_ffff;
    if head[3] != 0x4 || stream_id != 0 || !len.is_multiple_of(6) || len > 16_384 {
        return Err(format!(
            "the first HTTP/2 frame is not SETTINGS on stream 0 (type {:#x}, stream {stream_id}, \
             {len} bytes)",
            head[3]
        ));
    }
    let mut payload = vec![0u8; len];
    stream.read_exact(&mut payload).map_err(|e| format!("read the SETTINGS frame: {e}"))?;
    // Each parameter is a 16-bit identifier and a 32-bit value (section 6.5.1).
    let params: Vec<String> = payload
        .chunks_exact(6)
        .map(|p| {
            let id = u16::from_be_bytes([p[0], p[1]]);
            let value = u32::from_be_bytes([p[2], p[3], p[4], p[5]]);
            format!("{}={value}", setting_name(id))
        })
        .collect();
    Ok(format!("SETTINGS {}", params.join(" ")).trim_end().to_string())
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

/// Opens a plain or TLS connection to `endpoint` for an HTTP/2 check: over TLS offering only
/// `h2` by ALPN (a server that does not select it fails the check), in the clear as h2c with
/// prior knowledge (RFC 9113 section 3.3).
pub fn connect_h2(endpoint: &Endpoint) -> Result<Stream, String> {
    match &endpoint.tls {
        None => Ok(Stream::Plain(tcp(endpoint.addr, TIMEOUT)?)),
        Some(tls) => {
            let (stream, done) = handshake(endpoint.addr, tls, &tls.config(&["h2"]), TIMEOUT)?;
            match done.alpn.as_deref() {
                Some("h2") => Ok(stream),
                other => Err(format!("ALPN selected {other:?} when only h2 was offered")),
            }
        }
    }
}

/// How long each step of a lab connection (connect, handshake, a read) may take.
pub const STEP_TIMEOUT: Duration = TIMEOUT;

/// Parses a whole response read to the end of the connection.
pub fn parse(raw: &[u8]) -> Result<Response, String> {
    let (status, headers, end) = parse_head(raw)?.ok_or("no end of headers")?;
    let rest = &raw[end..];
    let chunked = headers
        .iter()
        .any(|(n, v)| n == "transfer-encoding" && v.to_ascii_lowercase().contains("chunked"));
    let body = if chunked {
        dechunk(rest)?
    } else if let Some(len) = headers
        .iter()
        .find(|(n, _)| n == "content-length")
        .and_then(|(_, v)| v.parse::<usize>().ok())
    {
        if rest.len() < len {
            return Err(format!("short body: {} of {len} bytes", rest.len()));
        }
        rest[..len].to_vec()
    } else {
        rest.to_vec()
    };
    Ok(Response { status, headers, body })
}

/// The status, the headers (names lower-cased) and the head's length in bytes.
type Head = (u16, Vec<(String, String)>, usize);

/// The head of `raw` once it is complete; `None` while it is not.
fn parse_head(raw: &[u8]) -> Result<Option<Head>, String> {
    let mut slots = [httparse::EMPTY_HEADER; MAX_HEADERS];
    let mut response = httparse::Response::new(&mut slots);
    let end = match response.parse(raw) {
        Ok(httparse::Status::Complete(end)) => end,
        Ok(httparse::Status::Partial) => return Ok(None),
        Err(e) => return Err(format!("bad response head: {e}")),
    };
    let status = response.code.ok_or("no status code")?;
    let headers = response
        .headers
        .iter()
        .map(|h| {
            let value = String::from_utf8_lossy(h.value).trim().to_string();
            (h.name.to_ascii_lowercase(), value)
        })
        .collect();
    Ok(Some((status, headers, end)))
}

/// Decodes a chunked body (RFC 9112 section 7.1); extensions and trailers are skipped.
fn dechunk(mut data: &[u8]) -> Result<Vec<u8>, String> {
    let mut body = Vec::new();
    loop {
        let line_end = find(data, b"\r\n").ok_or("truncated chunk size")?;
        let line = std::str::from_utf8(&data[..line_end]).map_err(|_| "bad chunk size")?;
        let size_text = line.split(';').next().unwrap_or_default().trim();
        let size = usize::from_str_radix(size_text, 16).map_err(|_| "bad chunk size")?;
        data = &data[line_end + 2..];
        if size == 0 {
            return Ok(body);
        }
        if data.len() < size + 2 {
            return Err("truncated chunk".into());
        }
        body.extend_from_slice(&data[..size]);
        data = &data[size + 2..];
    }
}

fn find(haystack: &[u8], needle: &[u8]) -> Option<usize> {
    haystack.windows(needle.len()).position(|w| w == needle)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn content_length_and_chunked_bodies() {
        let r =
            parse(b"HTTP/1.1 200 OK\r\nServer: nginx\r\nContent-Length: 5\r\n\r\nhello").unwrap();
        assert_eq!(
            (r.status, r.header("server"), r.body.as_slice()),
            (200, Some("nginx"), &b"hello"[..])
        );
        let r = parse(
            b"HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\n5;x=y\r\nhello\r\n2\r\n, \r\n0\r\n\r\n",
        )
        .unwrap();
        assert_eq!(r.body, b"hello, ");
        assert!(parse(b"HTTP/1.1 200 OK\r\nContent-Length: 9\r\n\r\nhello").is_err());
        let r = parse(b"HTTP/1.0 404 Not Found\r\n\r\nall of it").unwrap();
        assert_eq!((r.status, r.body.as_slice()), (404, &b"all of it"[..]));
        assert!(parse(b"HTTP/1.1 200 OK\r\nServer: nginx\r\n").is_err(), "no end of head");
        assert!(parse(b"garbage\r\n\r\n").is_err());
    }

    /// A server on 127.0.0.1 that reads the HTTP/2 preface, then writes `answer` and closes.
    fn answering(answer: &'static [u8]) -> Endpoint {
        let listener = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
        let addr = listener.local_addr().unwrap();
        std::thread::spawn(move || {
            let (mut conn, _) = listener.accept().unwrap();
            let mut preface = [0u8; H2_PREFACE.len()];
            conn.read_exact(&mut preface).unwrap();
            assert_eq!(&preface[..], H2_PREFACE);
            conn.write_all(answer).unwrap();
        });
        Endpoint::plain(addr)
    }

    #[test]
    fn an_h2_server_answers_the_preface_with_settings() {
        // SETTINGS (type 4) on stream 0: MAX_CONCURRENT_STREAMS (3) = 100.
        let settings = b"\0\0\x06\x04\0\0\0\0\0\0\x03\0\0\0\x64";
        let mut stream = connect_h2(&answering(settings)).unwrap();
        assert_eq!(h2_settings(&mut stream).unwrap(), "SETTINGS MAX_CONCURRENT_STREAMS=100");

        let http1 = b"HTTP/1.1 400 Bad Request\r\nContent-Length: 0\r\n\r\n";
        let mut stream = connect_h2(&answering(http1)).unwrap();
        let err = h2_settings(&mut stream).unwrap_err();
        assert!(err.contains("in HTTP/1.x"), "{err}");

        // A GOAWAY (type 7) where SETTINGS must come first.
        let goaway = b"\0\0\x08\x07\0\0\0\0\0\0\0\0\0\0\0\0\x01";
        let mut stream = connect_h2(&answering(goaway)).unwrap();
        let err = h2_settings(&mut stream).unwrap_err();
        assert!(err.contains("not SETTINGS"), "{err}");
    }
}
