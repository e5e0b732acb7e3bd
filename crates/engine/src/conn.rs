//! One client connection slot: its socket, where its current request stands, and the parser
//! and validator for its response.
//!
//! A slot outlives its sockets: when a connection closes (by choice, `Connection: close`, or
//! failure) the slot opens a new one for its next request and keeps its buffers.

use std::io::{self, Write};
use std::net::SocketAddr;
use std::os::fd::{AsFd, BorrowedFd};
use std::time::Instant;

use mio::net::TcpStream;
use mio::{Interest, Registry, Token};
use socket2::{Domain, Protocol, Socket, Type};

use crate::exchange::Exchange;
use crate::h2::{Outcome, Session, StreamState};
use crate::h3::streams::H3;
use crate::http::{Parser, Progress};
use crate::ErrorClass;

/// How long a slot rests after the client itself ran out of descriptors or ports
/// ([`State::Backoff`]), so that an exhausted client does not spin.
pub(crate) const BACKOFF: std::time::Duration = std::time::Duration::from_millis(10);

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum State {
    /// No request outstanding (budget spent, or waiting for the run to end).
    Idle,
    /// TCP handshake in progress.
    Connecting,
    /// Request bytes `[..sent]` are written.
    Writing { sent: usize },
    /// Waiting for or reading the response.
    Reading,
    /// Resting after the client itself ran out of descriptors or ports, so that an exhausted
    /// client does not spin; retried at the given time.
    Backoff(Instant),
}

#[derive(Debug)]
pub(crate) struct Conn {
    pub stream: Option<Stream>,
    /// HTTP/1.1: where the one request stands. HTTP/2: where the connection stands
    /// (`Connecting`, then `Reading` while it is open; `Idle` without one).
    pub state: State,
    /// HTTP/1.1: the current request. HTTP/2: the connection's own timeline (its connect
    /// deadline, whether it counts); its requests are the session's streams.
    pub ex: Exchange,
    /// When this connection's TLS handshake ended, until the first request on it records it.
    pub tls_done: Option<Instant>,
    /// That handshake resumed a session.
    pub tls_resumed: bool,
    /// Calls left in the current session (session model).
    pub calls_left: u32,
    /// HTTP/2 sessions: calls not yet placed on a stream.
    pub calls_unstarted: u32,
    /// HTTP/2 open loop: the slot is in the worker's idle pool (it may hold more streams).
    pub in_idle: bool,
    /// When the current socket was opened, and the replies it has carried.
    pub opened: Instant,
    pub replies_on_socket: u64,
    pub parser: Parser,
    /// HTTP/2: the connection's framing, its streams and their requests.
    pub h2: Option<Box<Session>>,
    /// HTTP/3: the QUIC connection (in place of `stream`), its streams and their requests.
    pub h3: Option<Box<H3>>,
}

/// A multiplexed connection's stream slots, HTTP/2's or HTTP/3's: what the loop's accounting
/// asks of either (which slot is free, each slot's exchange and answer), so that a stream's
/// outcome is placed, recorded and freed by one piece of code whatever carried it.
pub(crate) enum Mux<'a> {
    H2(&'a mut Session),
    H3(&'a mut crate::h3::streams::Streams),
}

impl Mux<'_> {
    pub fn free_slot(&self) -> Option<usize> {
        match self {
            Mux::H2(s) => s.free_slot(),
            Mux::H3(s) => s.free_slot(),
        }
    }

    pub fn place(&mut self, s: usize, head: bool) {
        match self {
            Mux::H2(h) => h.place(s, head),
            Mux::H3(h) => h.place(s, head),
        }
    }

    pub fn release(&mut self, s: usize) {
        match self {
            Mux::H2(h) => h.release(s),
            Mux::H3(h) => h.release(s),
        }
    }

    pub fn len(&self) -> usize {
        match self {
            Mux::H2(h) => h.slots.len(),
            Mux::H3(h) => h.slots.len(),
        }
    }

    /// Slot `s`'s state and exchange.
    pub fn slot(&mut self, s: usize) -> (StreamState, &mut Exchange) {
        match self {
            Mux::H2(h) => (h.slots[s].state, &mut h.slots[s].ex),
            Mux::H3(h) => (h.slots[s].state, &mut h.slots[s].ex),
        }
    }

    /// Slot `s`'s answer: its status and body length.
    pub fn answer(&self, s: usize) -> (u16, u64) {
        match self {
            Mux::H2(h) => (h.slots[s].status, h.slots[s].body_len),
            Mux::H3(h) => (h.slots[s].status, h.slots[s].body_len),
        }
    }

    /// What slot `s`'s request put on the wire (HTTP/2's refused streams give it back).
    pub fn wire(&self, s: usize) -> u64 {
        match self {
            Mux::H2(h) => h.slots[s].wire,
            Mux::H3(_) => 0,
        }
    }

    /// The next stream that ended, with how.
    pub fn next_done(&mut self) -> Option<(usize, Outcome)> {
        match self {
            Mux::H2(h) => h.done.pop_front(),
            Mux::H3(h) => h.done.pop_front(),
        }
    }

    /// The first Server header the connection's answers carried.
    pub fn take_server(&mut self) -> Option<String> {
        match self {
            Mux::H2(h) => h.server.take(),
            Mux::H3(h) => h.server.take(),
        }
    }

    /// Fails the open requests (`pending`: and the waiting ones), each with `class`.
    pub fn fail_all(
        &mut self,
        class: ErrorClass,
        reason: Option<crate::h2::Reason>,
        pending: bool,
    ) {
        match self {
            Mux::H2(h) => h.fail_all(class, reason, pending),
            Mux::H3(h) => {
                let reason = reason.unwrap_or(crate::h2::Reason { what: "", code: None });
                h.fail_all(class, reason, pending)
            }
        }
    }
}

/// What a read's bytes made of the HTTP/1.1 answer in progress ([`Conn::feed`]).
pub(crate) enum Fed {
    /// More is to come.
    Partial,
    /// The answer is whole; `spoiled` when bytes came after it or the peer closed, so that
    /// the connection's framing can no longer be trusted and it is not reused.
    Complete {
        spoiled: bool,
    },
    Failed(ErrorClass),
}

impl Conn {
    /// Feeds `bytes`, read at `at`, to the answer in progress (no bytes: the peer closed),
    /// counting them and checking the body as it streams by. One step for every loop that
    /// reads HTTP/1.1 answers (requests, visits), so that they count and judge alike.
    pub fn feed(&mut self, bytes: &[u8], at: Instant) -> Fed {
        if bytes.is_empty() {
            return match self.parser.on_eof() {
                Ok(()) => Fed::Complete { spoiled: true },
                Err(e) => Fed::Failed(e.class()),
            };
        }
        self.ex.first_byte.get_or_insert(at);
        let check = &mut self.ex.check;
        match self.parser.feed(bytes, &mut |b| check.update(b)) {
            Ok(Progress::Partial) => {
                self.ex.resp_bytes += bytes.len() as u64;
                Fed::Partial
            }
            Ok(Progress::Complete { consumed }) => {
                self.ex.resp_bytes += consumed as u64;
                Fed::Complete { spoiled: consumed < bytes.len() }
            }
            Err(e) => {
                self.ex.resp_bytes += bytes.len() as u64;
                Fed::Failed(e.class())
            }
        }
    }

    pub fn new(
        parser: Parser,
        ex: Exchange,
        h2: Option<Box<Session>>,
        h3: Option<Box<H3>>,
        now: Instant,
    ) -> Conn {
        Conn {
            stream: None,
            state: State::Idle,
            ex,
            tls_done: None,
            tls_resumed: false,
            calls_left: 0,
            calls_unstarted: 0,
            in_idle: false,
            opened: now,
            replies_on_socket: 0,
            parser,
            h2,
            h3,
        }
    }

    /// The stream slots of a multiplexed connection (HTTP/2, HTTP/3); `None` over HTTP/1.1.
    pub fn mux(&mut self) -> Option<Mux<'_>> {
        if let Some(h2) = self.h2.as_deref_mut() {
            return Some(Mux::H2(h2));
        }
        self.h3.as_deref_mut().map(|h3| Mux::H3(&mut h3.streams))
    }

    pub fn multiplexed(&self) -> bool {
        self.h2.is_some() || self.h3.is_some()
    }

    /// Whether a connection is open: a socket, or a QUIC connection.
    pub fn has_connection(&self) -> bool {
        self.stream.is_some() || self.h3.as_ref().is_some_and(|h| h.quic.is_some())
    }

    /// A multiplexed connection's requests waiting or open; `None` over HTTP/1.1.
    pub fn streams_in_flight(&self) -> Option<usize> {
        match (&self.h2, &self.h3) {
            (Some(h2), _) => Some(h2.in_flight()),
            (_, Some(h3)) => Some(h3.streams.in_flight()),
            _ => None,
        }
    }

    /// Measured requests in flight: the one of an HTTP/1.1 connection, or an HTTP/2
    /// connection's streams.
    pub fn measured_in_flight(&self) -> u64 {
        match (&self.h2, &self.h3) {
            (Some(h2), _) => h2.measured_in_flight(),
            (_, Some(h3)) => h3.streams.measured_in_flight(),
            _ => u64::from(self.ex.measured && self.in_flight()),
        }
    }

    /// Counts a reply on the current socket; for its first one, the connection's TLS
    /// handshake (its time from the TCP connection, and whether it resumed), which that reply
    /// records.
    pub fn count_reply(&mut self) -> Option<(std::time::Duration, bool)> {
        self.replies_on_socket += 1;
        let connected = self.ex.connected;
        self.tls_done
            .filter(|_| self.replies_on_socket == 1)
            .map(|done| (done.saturating_duration_since(connected), self.tls_resumed))
    }

    /// Whether a request is between its start and its end.
    pub fn in_flight(&self) -> bool {
        if let Some(n) = self.streams_in_flight() {
            return n > 0;
        }
        matches!(self.state, State::Connecting | State::Writing { .. } | State::Reading)
    }

    /// Starts a non-blocking connect and registers the socket for both directions, once:
    /// epoll is edge-triggered here, so a connection never needs `epoll_ctl` again until it
    /// closes. That saves the two `epoll_ctl` calls per request that re-arming costs.
    pub fn connect(
        &mut self,
        registry: &Registry,
        token: Token,
        to: To<'_>,
        source: Option<SocketAddr>,
        stamped: bool,
    ) -> io::Result<()> {
        self.tls_done = None;
        if let Some(path) = to.unix {
            return self.connect_unix(registry, token, path);
        }
        let addr = to.addr;
        let socket = Socket::new(
            Domain::for_address(addr),
            Type::STREAM.nonblocking().cloexec(),
            Some(Protocol::TCP),
        )?;
        // Requests are written whole; Nagle's algorithm could only delay them.
        socket.set_nodelay(true)?;
        if stamped {
            crate::sys::stamp_arrivals(socket.as_fd())?;
        }
        if let Some(src) = source {
            // The port is left to connect(), so that connections share source ports; an old
            // kernel without the option only reserves a port per socket, as it always did.
            let _ = crate::sys::bind_address_no_port(socket.as_fd());
            socket.bind(&src.into())?;
        }
        match socket.connect(&addr.into()) {
            Ok(()) => {}
            Err(e) if e.raw_os_error() == Some(libc::EINPROGRESS) => {}
            Err(e) => return Err(e),
        }
        let tcp = TcpStream::from_std(socket.into());
        let mut stream = match to.tls {
            Some((config, name)) => Stream::Tls(Box::new(crate::tls::TlsStream::new(
                tcp,
                config.clone(),
                name.clone(),
            )?)),
            None => Stream::Tcp(tcp),
        };
        registry.register(&mut stream, token, Interest::READABLE | Interest::WRITABLE)?;
        self.stream = Some(stream);
        self.state = State::Connecting;
        Ok(())
    }

    /// The same toward a unix-domain socket. A listener whose backlog is full refuses at once
    /// (EAGAIN) where TCP would wait: that is a failed connect, as ECONNREFUSED.
    fn connect_unix(
        &mut self,
        registry: &Registry,
        token: Token,
        path: &std::path::Path,
    ) -> io::Result<()> {
        let socket = Socket::new(Domain::UNIX, Type::STREAM.nonblocking().cloexec(), None)?;
        match socket.connect(&socket2::SockAddr::unix(path)?) {
            Ok(()) => {}
            Err(e) if e.raw_os_error() == Some(libc::EINPROGRESS) => {}
            Err(e) if e.raw_os_error() == Some(libc::EAGAIN) => {
                return Err(io::Error::from_raw_os_error(libc::ECONNREFUSED))
            }
            Err(e) => return Err(e),
        }
        let std: std::os::unix::net::UnixStream = socket.into();
        let mut stream = Stream::Unix(mio::net::UnixStream::from_std(std));
        registry.register(&mut stream, token, Interest::READABLE | Interest::WRITABLE)?;
        self.stream = Some(stream);
        self.state = State::Connecting;
        Ok(())
    }

    /// Starts a QUIC connection to `addr` (its Initial goes with the next transmit), given up
    /// when the server is silent for `idle`, and registers its UDP socket for both
    /// directions, once, as a TCP socket is.
    pub fn connect_quic(
        &mut self,
        registry: &Registry,
        token: Token,
        addr: SocketAddr,
        tls: &(std::sync::Arc<rustls::ClientConfig>, rustls::pki_types::ServerName<'static>),
        idle: std::time::Duration,
        now: Instant,
    ) -> io::Result<()> {
        self.tls_done = None;
        let h3 = self.h3.as_deref_mut().ok_or_else(|| io::Error::other("not an HTTP/3 slot"))?;
        let host = tls.1.to_str();
        let mut quic = crate::h3::quic::Quic::connect(addr, tls.0.clone(), &host, idle, now)
            .map_err(|e| match e {
                crate::h3::quic::QuicError::Io(e) => e,
                e => io::Error::other(e.to_string()),
            })?;
        quic.register(registry, token)?;
        h3.quic = Some(quic);
        self.state = State::Connecting;
        // The handshake is timed from here: QUIC has no connect of its own before it.
        self.ex.connected = now;
        Ok(())
    }

    /// After a writable or error event while connecting: `Ok(true)` once connected,
    /// `Ok(false)` when the handshake is still under way (a spurious wakeup).
    pub fn finish_connect(&mut self) -> io::Result<bool> {
        let stream =
            self.stream.as_ref().ok_or_else(|| io::Error::from(io::ErrorKind::NotConnected))?;
        if let Some(err) = stream.take_error()? {
            return Err(err);
        }
        match stream.peer() {
            Ok(()) => Ok(true),
            Err(e) if e.kind() == io::ErrorKind::NotConnected => Ok(false),
            Err(e) if e.raw_os_error() == Some(libc::EINPROGRESS) => Ok(false),
            Err(e) => Err(e),
        }
    }

    /// Writes as much of `request[sent..]` as the socket takes. `Ok(true)` when all is sent.
    pub fn write_request(&mut self, request: &[u8]) -> io::Result<bool> {
        let State::Writing { mut sent } = self.state else { return Ok(true) };
        let stream =
            self.stream.as_mut().ok_or_else(|| io::Error::from(io::ErrorKind::NotConnected))?;
        while sent < request.len() {
            match stream.write(&request[sent..]) {
                Ok(0) => return Err(io::Error::from(io::ErrorKind::WriteZero)),
                Ok(n) => sent += n,
                // The send buffer is full; the edge-triggered writable event resumes us.
                Err(e) if e.kind() == io::ErrorKind::WouldBlock => {
                    self.state = State::Writing { sent };
                    return Ok(false);
                }
                Err(e) if e.kind() == io::ErrorKind::Interrupted => {}
                Err(e) => return Err(e),
            }
        }
        Ok(true)
    }

    /// An idle keep-alive connection became readable (`error`: with an error): whether it can
    /// still carry the next request. Over TLS what came may be session tickets (TLS 1.3 sends
    /// them after the handshake, RFC 8446 section 4.6.1), which leave it usable; otherwise it
    /// is the server's close (its keep-alive timeout) or bytes nobody asked for.
    pub fn idle_usable(&mut self, error: bool) -> bool {
        match self.stream.as_mut() {
            Some(Stream::Tls(t)) => !error && t.idle_ok(),
            _ => false,
        }
    }

    /// Sends what rustls holds for the peer (the handshake, a request held until it ended) as
    /// far as the socket now takes it; nothing to do without TLS.
    pub fn flush_tls(&mut self) -> io::Result<()> {
        match self.stream.as_mut() {
            Some(Stream::Tls(t)) => t.flush_tls(),
            _ => Ok(()),
        }
    }

    /// The first time this connection's TLS handshake is seen over (`true` then): its end is
    /// the handshake's time, which the first reply records ([`Conn::count_reply`]), and a
    /// request held in rustls until then went out with it.
    pub fn note_handshake(&mut self, now: Instant) -> bool {
        let (None, Some(Stream::Tls(t))) = (self.tls_done, self.stream.as_ref()) else {
            return false;
        };
        if !t.handshaken() {
            return false;
        }
        self.tls_done = Some(now);
        self.tls_resumed = t.resumed();
        if self.state == State::Reading && self.ex.written < now {
            self.ex.written = now;
        }
        true
    }

    /// What this connection's TLS handshake settled on; `None` without TLS or before its end.
    pub fn negotiated(&self) -> Option<crate::tls::Negotiated> {
        match self.stream.as_ref() {
            Some(Stream::Tls(t)) => t.negotiated(),
            _ => None,
        }
    }

    /// After a read of `n` bytes into a buffer of `len` left an answer partial: whether to
    /// read again. A short read drained the socket (the edge-triggered loop waits for the next
    /// event) unless the peer also closed or failed (`must_drain`: that event is already
    /// consumed, so read on until EOF or the error shows) or TLS holds the data's end behind
    /// what it returned (a close_notify brings no further event).
    pub fn read_again(&self, n: usize, len: usize, must_drain: bool) -> bool {
        let ended = matches!(&self.stream, Some(Stream::Tls(t)) if t.ended());
        n == len || must_drain || ended
    }

    /// Closes the socket. Closing the descriptor also removes it from the epoll set (epoll(7):
    /// a file descriptor is removed once all descriptors referring to it are closed), so no
    /// deregistration call is needed.
    /// A QUIC connection is closed with H3_NO_ERROR, its CONNECTION_CLOSE sent at once so that
    /// the server forgets it now rather than after its idle timeout (RFC 9000 section 10.2).
    pub fn close(&mut self) {
        self.stream = None;
        if let Some(h3) = self.h3.as_deref_mut() {
            if let Some(mut quic) = h3.quic.take() {
                quic.close(crate::h3::H3_NO_ERROR, Instant::now());
            }
            h3.streams.disconnected();
        }
    }

    /// Closes the socket, if there is one, recording how long it lived and how many replies it
    /// carried when its exchange is measured. Whether a socket was closed (the caller's count
    /// of open connections drops by one): every load's connections end here.
    pub fn retire(&mut self, tally: &mut crate::result::Tally) -> bool {
        if !self.has_connection() {
            return false;
        }
        if self.ex.measured {
            tally.conn_life.record(crate::exchange::us(self.opened.elapsed()));
            tally.conn_replies += self.replies_on_socket;
        }
        self.close();
        true
    }
}

/// A connection's socket: TCP, or a unix-domain stream (`--unix-socket`).
#[derive(Debug)]
pub(crate) enum Stream {
    Tcp(TcpStream),
    Unix(mio::net::UnixStream),
    Tls(Box<crate::tls::TlsStream>),
}

/// Where a connection goes.
#[derive(Clone, Copy)]
pub(crate) struct To<'a> {
    pub addr: SocketAddr,
    /// A unix-domain socket instead of `addr`.
    pub unix: Option<&'a std::path::Path>,
    /// TLS over the TCP connection: the run's configuration and the server's name.
    pub tls:
        Option<&'a (std::sync::Arc<rustls::ClientConfig>, rustls::pki_types::ServerName<'static>)>,
}

impl Stream {
    pub fn take_error(&self) -> io::Result<Option<io::Error>> {
        match self {
            Stream::Tcp(s) => s.take_error(),
            Stream::Unix(s) => s.take_error(),
            Stream::Tls(s) => s.tcp.take_error(),
        }
    }

    /// `Ok` once connected (the peer's address can be read).
    pub fn peer(&self) -> io::Result<()> {
        match self {
            Stream::Tcp(s) => s.peer_addr().map(drop),
            Stream::Unix(s) => s.peer_addr().map(drop),
            Stream::Tls(s) => s.tcp.peer_addr().map(drop),
        }
    }
}

impl io::Read for Stream {
    fn read(&mut self, buf: &mut [u8]) -> io::Result<usize> {
        match self {
            Stream::Tcp(s) => s.read(buf),
            Stream::Unix(s) => s.read(buf),
            Stream::Tls(s) => s.read(buf),
        }
    }
}

impl io::Write for Stream {
    fn write(&mut self, buf: &[u8]) -> io::Result<usize> {
        match self {
            Stream::Tcp(s) => s.write(buf),
            Stream::Unix(s) => s.write(buf),
            Stream::Tls(s) => s.write(buf),
        }
    }

    fn flush(&mut self) -> io::Result<()> {
        Ok(())
    }
}

impl AsFd for Stream {
    fn as_fd(&self) -> BorrowedFd<'_> {
        match self {
            Stream::Tcp(s) => s.as_fd(),
            Stream::Unix(s) => s.as_fd(),
            Stream::Tls(s) => s.tcp.as_fd(),
        }
    }
}

impl mio::event::Source for Stream {
    fn register(&mut self, r: &Registry, t: Token, i: Interest) -> io::Result<()> {
        match self {
            Stream::Tcp(s) => s.register(r, t, i),
            Stream::Unix(s) => s.register(r, t, i),
            Stream::Tls(s) => s.tcp.register(r, t, i),
        }
    }

    fn reregister(&mut self, r: &Registry, t: Token, i: Interest) -> io::Result<()> {
        match self {
            Stream::Tcp(s) => s.reregister(r, t, i),
            Stream::Unix(s) => s.reregister(r, t, i),
            Stream::Tls(s) => s.tcp.reregister(r, t, i),
        }
    }

    fn deregister(&mut self, r: &Registry) -> io::Result<()> {
        match self {
            Stream::Tcp(s) => s.deregister(r),
            Stream::Unix(s) => s.deregister(r),
            Stream::Tls(s) => s.tcp.deregister(r),
        }
    }
}
