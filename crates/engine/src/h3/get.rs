//! One HTTP/3 GET, blocking, outside any run: what the lab's verify asks of a server that
//! offers HTTP/3. The QUIC connection is quinn-proto's state machine (RFC 9000, 9001, 9002)
//! over a UDP socket of its own, its TLS 1.3 the rustls configuration of [`Tls`] offering ALPN
//! `h3` alone (RFC 9114 section 3.1); the streams carry [`super`]'s framing: the control
//! stream and its SETTINGS, the request's HEADERS, and the response read by [`Response`].
//!
//! Not for load: every step blocks, and nothing here is timed.

use std::net::SocketAddr;
use std::time::{Duration, Instant};

use quinn_proto::{Connection, Dir, Event, ReadError, StreamEvent, StreamId};

use super::quic::{Quic, DATAGRAM};

use super::qpack::Decoder;
use super::{frame, headers_frame, Part, Response as Reader};
use crate::client::{Endpoint, Response, Tls, MAX_BODY};

/// The largest field section taken (SETTINGS_MAX_FIELD_SECTION_SIZE).
const MAX_FIELD_SECTION: usize = 64 << 10;

/// GETs `path` over HTTP/3 from `endpoint` (which must speak TLS), within `timeout` in all,
/// and reads the whole answer.
pub fn get_within(endpoint: &Endpoint, path: &str, timeout: Duration) -> Result<Response, String> {
    let tls = endpoint.tls.as_ref().ok_or("HTTP/3 needs TLS: the endpoint speaks plain HTTP")?;
    // QUIC's idle timeout twice the GET's budget: the budget is what ends a GET, and an idle
    // timer due a few milliseconds after it would otherwise win whenever the thread wakes late.
    let mut quic = Blocking::connect(endpoint.addr, tls, timeout * 2)?;
    let deadline = Instant::now() + timeout;
    let mut exchange = Get::new(endpoint, path);
    let outcome = loop {
        if let Some(done) = quic.step(&mut exchange)? {
            break done;
        }
        if Instant::now() >= deadline {
            break Err(format!("HTTP/3: no whole answer within {timeout:?}{}", exchange.so_far()));
        }
        quic.transmit()?;
        quic.wait(deadline)?;
    };
    quic.close();
    outcome
}

/// Why a server is not asked over HTTP/3: which of the two things a client needs it lacks.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum NoH3 {
    #[error("HTTP/3 needs an https:// URL: QUIC carries TLS 1.3 only")]
    Plain,
    /// Its answer over TCP could not be had.
    #[error("HTTP/3: the server's answer over TCP, for its Alt-Svc: {0}")]
    Tcp(String),
    /// It answered over TCP, but its Alt-Svc names no h3 on the port.
    #[error("the server offers no HTTP/3: Alt-Svc {alt_svc:?} names no h3=\":{port}\"")]
    NotOffered { alt_svc: String, port: u16 },
    /// It offers h3, but its UDP port gave no answer over QUIC.
    #[error("the server offers h3 in Alt-Svc, but no answer came over QUIC: {0}")]
    NoQuic(String),
}

/// Whether the server at `endpoint` serves HTTP/3, as a client learns it (RFC 9114 section
/// 3.1.1): its answer for `path` over TCP offers h3 on the same port in Alt-Svc, and a GET of
/// `path` over QUIC there answers, within `timeout` each. That answer, or which step failed.
pub fn offered(endpoint: &Endpoint, path: &str, timeout: Duration) -> Result<Response, NoH3> {
    if endpoint.tls.is_none() {
        return Err(NoH3::Plain);
    }
    let answer = crate::client::get_within(endpoint, path, timeout).map_err(NoH3::Tcp)?;
    let alt_svc = answer.header("alt-svc").unwrap_or_default();
    let port = endpoint.addr.port();
    if !super::alt_svc_offers(alt_svc, port) {
        return Err(NoH3::NotOffered { alt_svc: alt_svc.to_string(), port });
    }
    get_within(endpoint, path, timeout).map_err(NoH3::NoQuic)
}

/// The QUIC connection of [`Quic`], driven by a poll of its own until the answer or the
/// deadline.
struct Blocking {
    quic: Quic,
    poll: mio::Poll,
    events: mio::Events,
    datagram: Vec<u8>,
}

/// What an unreachable UDP port (ICMP port unreachable) is told as.
fn udp_error(remote: SocketAddr, e: std::io::Error) -> String {
    match e.kind() {
        std::io::ErrorKind::ConnectionRefused => {
            format!("UDP {remote}: no QUIC server (port unreachable)")
        }
        _ => format!("UDP {remote}: {e}"),
    }
}

impl Blocking {
    fn connect(remote: SocketAddr, tls: &Tls, idle: Duration) -> Result<Blocking, String> {
        let mut quic = Quic::connect(remote, tls.config(&["h3"]), &tls.host, idle, Instant::now())
            .map_err(|e| e.to_string())?;
        let poll = mio::Poll::new().map_err(|e| format!("poll: {e}"))?;
        quic.register(poll.registry(), mio::Token(0)).map_err(|e| format!("poll: {e}"))?;
        Ok(Blocking {
            quic,
            poll,
            events: mio::Events::with_capacity(4),
            datagram: vec![0; DATAGRAM],
        })
    }

    /// Handles what the connection has to say to the exchange; its outcome once it has one.
    fn step(&mut self, get: &mut Get) -> Result<Option<Result<Response, String>>, String> {
        let conn = &mut self.quic.conn;
        while let Some(event) = conn.poll() {
            match event {
                Event::Connected => get.send(conn)?,
                Event::ConnectionLost { reason } => {
                    return Ok(Some(Err(format!("QUIC: the connection was lost: {reason}"))))
                }
                Event::Stream(StreamEvent::Readable { id }) => {
                    if let Some(done) = get.read(conn, id) {
                        return Ok(Some(done));
                    }
                }
                Event::Stream(StreamEvent::Opened { dir: Dir::Uni }) => {
                    // The server's control and QPACK streams: read (and passed over) as they
                    // become readable; with no dynamic table they carry nothing we need.
                    while conn.streams().accept(Dir::Uni).is_some() {}
                }
                _ => {}
            }
        }
        Ok(None)
    }

    fn transmit(&mut self) -> Result<(), String> {
        let remote = self.quic.remote();
        self.quic.transmit(Instant::now()).map(|_| ()).map_err(|e| udp_error(remote, e))
    }

    /// Waits for datagrams until the connection's next timer (or `deadline`), and hands them
    /// or the timer to the connection.
    fn wait(&mut self, deadline: Instant) -> Result<(), String> {
        let wake = self.quic.timeout().map_or(deadline, |t| t.min(deadline));
        let wait = wake.saturating_duration_since(Instant::now()).max(Duration::from_millis(1));
        match self.poll.poll(&mut self.events, Some(wait)) {
            Ok(()) => {}
            Err(e) if e.kind() == std::io::ErrorKind::Interrupted => {}
            Err(e) => return Err(format!("poll: {e}")),
        }
        let remote = self.quic.remote();
        self.quic.receive(&mut self.datagram, Instant::now()).map_err(|e| udp_error(remote, e))?;
        self.quic.on_timeout(Instant::now());
        Ok(())
    }

    /// Closes the connection as done (H3_NO_ERROR).
    fn close(&mut self) {
        self.quic.close(super::H3_NO_ERROR, Instant::now());
    }
}

/// The one request: its bytes, its stream once open, and the response read so far.
struct Get {
    request: Vec<u8>,
    stream: Option<StreamId>,
    reader: Reader,
    decoder: Decoder,
    response: Response,
}

impl Get {
    fn new(endpoint: &Endpoint, path: &str) -> Get {
        let authority = endpoint.addr.to_string();
        let request = headers_frame(&[
            (b":method", b"GET"),
            (b":scheme", b"https"),
            (b":authority", authority.as_bytes()),
            (b":path", path.as_bytes()),
            (b"user-agent", concat!("loadlab/", env!("CARGO_PKG_VERSION")).as_bytes()),
        ]);
        let mut reader = Reader::new(MAX_FIELD_SECTION, |_| true);
        reader.begin(false);
        Get {
            request,
            stream: None,
            reader,
            decoder: Decoder::new(MAX_FIELD_SECTION),
            response: Response { status: 0, headers: Vec::new(), body: Vec::new() },
        }
    }

    /// Once connected: the control stream (left open, as RFC 9114 section 6.2.1 requires),
    /// then the request on a stream of its own, finished at once (a GET has no body).
    fn send(&mut self, conn: &mut Connection) -> Result<(), String> {
        let control = conn.streams().open(Dir::Uni).ok_or("QUIC: no unidirectional stream")?;
        write_all(conn, control, &frame::control_stream(MAX_FIELD_SECTION))?;
        let id = conn.streams().open(Dir::Bi).ok_or("QUIC: no bidirectional stream allowed")?;
        write_all(conn, id, &self.request)?;
        conn.send_stream(id).finish().map_err(|e| format!("QUIC: {e}"))?;
        self.stream = Some(id);
        Ok(())
    }

    /// Reads what stream `id` has: the response's, or another stream's passed over. The
    /// outcome once the response ended, whole or not.
    fn read(&mut self, conn: &mut Connection, id: StreamId) -> Option<Result<Response, String>> {
        let mine = self.stream == Some(id);
        let mut recv = conn.recv_stream(id);
        let Ok(mut chunks) = recv.read(true) else { return None };
        let outcome = loop {
            match chunks.next(usize::MAX) {
                Ok(Some(chunk)) if mine => {
                    let response = &mut self.response;
                    let mut on = |part: Part<'_>| match part {
                        Part::Status(s) => response.status = s,
                        Part::Field(n, v) => response.headers.push((
                            String::from_utf8_lossy(n).into_owned(),
                            String::from_utf8_lossy(v).into_owned(),
                        )),
                        Part::Body(b) => {
                            let room = MAX_BODY.saturating_sub(response.body.len());
                            response.body.extend_from_slice(&b[..b.len().min(room)]);
                        }
                    };
                    if let Err(e) = self.reader.feed(&chunk.bytes, &mut self.decoder, &mut on) {
                        break Some(Err(format!("HTTP/3: {e}")));
                    }
                }
                Ok(Some(_)) => {}
                Ok(None) if mine => {
                    break Some(
                        self.reader
                            .finish()
                            .map(|()| self.take())
                            .map_err(|e| format!("HTTP/3: {e}")),
                    )
                }
                Ok(None) | Err(ReadError::Blocked) => break None,
                Err(ReadError::Reset(code)) if mine => {
                    let code = code.into_inner();
                    let name = super::code_name(code).unwrap_or("unknown");
                    break Some(Err(format!(
                        "HTTP/3: the server reset the request's stream ({name}, {code:#x})"
                    )));
                }
                Err(ReadError::Reset(_)) => break None,
            }
        };
        let _ = chunks.finalize();
        outcome
    }

    /// What had arrived of the response, for a request that timed out.
    fn so_far(&self) -> String {
        match self.response.status {
            0 => String::new(),
            status => format!(" (status {status}, {} body bytes so far)", self.response.body.len()),
        }
    }

    fn take(&mut self) -> Response {
        std::mem::replace(
            &mut self.response,
            Response { status: 0, headers: Vec::new(), body: Vec::new() },
        )
    }
}

/// Writes all of `bytes` on a stream that has just opened: its flow-control credit (the
/// server's initial_max_stream_data, RFC 9000 section 18.2) holds a request head easily.
fn write_all(conn: &mut Connection, id: StreamId, bytes: &[u8]) -> Result<(), String> {
    let n = conn.send_stream(id).write(bytes).map_err(|e| format!("QUIC: {e}"))?;
    if n < bytes.len() {
        return Err(format!("QUIC: the server's stream credit took {n} of {} bytes", bytes.len()));
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::h3::peer::{garbage, serve, Peer};
    use crate::tls::TlsOptions;
    use std::net::UdpSocket;

    /// An endpoint at `addr` over TLS accepting any certificate: these peers never get as far
    /// as showing one.
    fn endpoint(addr: SocketAddr) -> Endpoint {
        let opts = TlsOptions { insecure: true, ..TlsOptions::default() };
        Endpoint { addr, tls: Some(Tls::trusting(&opts, "127.0.0.1").unwrap()) }
    }

    const LIMIT: Duration = Duration::from_millis(800);

    /// Runs a GET with `LIMIT` and checks it ended in an error within a bound, never a hang.
    fn get_fails(addr: SocketAddr) -> String {
        let started = Instant::now();
        let err = get_within(&endpoint(addr), "/", LIMIT).unwrap_err();
        assert!(started.elapsed() < LIMIT + Duration::from_secs(2), "{err}");
        err
    }

    #[test]
    fn plain_http_is_refused_before_any_datagram() {
        let plain = Endpoint::plain(([127, 0, 0, 1], 9).into());
        let err = get_within(&plain, "/", LIMIT).unwrap_err();
        assert_eq!(err, "HTTP/3 needs TLS: the endpoint speaks plain HTTP");
    }

    #[test]
    fn an_offer_is_asked_over_tls_and_tcp_first() {
        let plain = Endpoint::plain(([127, 0, 0, 1], 9).into());
        assert_eq!(offered(&plain, "/", LIMIT).unwrap_err(), NoH3::Plain);
        // A port just bound and released: nothing answers over TCP, so no Alt-Svc is read.
        let port = std::net::TcpListener::bind("127.0.0.1:0").unwrap().local_addr().unwrap();
        let err = offered(&endpoint(port), "/", LIMIT).unwrap_err();
        assert!(matches!(err, NoH3::Tcp(_)), "{err}");
    }

    #[test]
    fn nothing_on_the_udp_port_is_told_at_once() {
        // A port just bound and released: loopback answers with ICMP port unreachable.
        let addr = UdpSocket::bind("127.0.0.1:0").unwrap().local_addr().unwrap();
        let err = get_fails(addr);
        assert!(err.contains("no QUIC server (port unreachable)"), "{err}");
    }

    #[test]
    fn a_peer_that_never_answers_ends_at_the_timeout() {
        let silent = UdpSocket::bind("127.0.0.1:0").unwrap();
        let err = get_fails(silent.local_addr().unwrap());
        assert!(err.starts_with("HTTP/3: no whole answer within"), "{err}");
    }

    #[test]
    fn garbage_datagrams_end_in_an_error_never_a_panic() {
        let (addr, answering) = garbage(Instant::now() + LIMIT + Duration::from_millis(500));
        let err = get_fails(addr);
        assert!(err.starts_with("HTTP/3: no whole answer") || err.starts_with("QUIC"), "{err}");
        answering.join().unwrap();
    }

    #[test]
    fn a_reset_stream_ends_the_request_with_its_code() {
        let addr = serve(Peer::Reset(0x10b), Instant::now() + LIMIT * 2);
        let err = get_fails(addr);
        assert_eq!(
            err,
            "HTTP/3: the server reset the request's stream (H3_REQUEST_REJECTED, 0x10b)"
        );
    }

    #[test]
    fn a_server_that_stops_answering_mid_response_ends_at_the_timeout() {
        let addr = serve(Peer::Stall, Instant::now() + LIMIT * 2);
        let err = get_fails(addr);
        assert_eq!(err, "HTTP/3: no whole answer within 800ms (status 200, 10 body bytes so far)");
    }
}
