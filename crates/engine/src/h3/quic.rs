//! One QUIC client connection over a non-blocking UDP socket of its own, which a mio registry
//! can watch: quinn-proto's state machine (RFC 9000, 9001, 9002) fed the datagrams that came,
//! its timers fired when due, and what it has to send written as far as the socket takes it.
//! What the connection's streams carry is the caller's ([`super`]'s framing); this owns the
//! datagrams only, as `tls::TlsStream` owns the records under HTTP/2.
//!
//! The socket is connected to the server, so that an ICMP port unreachable (nothing listens
//! on that UDP port) comes back as ECONNREFUSED on the next send or receive, as a refused TCP
//! connect does, and is classed the same.

use std::io;
use std::net::SocketAddr;
use std::sync::Arc;
use std::time::{Duration, Instant};

use mio::net::UdpSocket;
use mio::{Interest, Registry, Token};
use quinn_proto::crypto::rustls::QuicClientConfig;
use quinn_proto::{ClientConfig, Connection, ConnectionHandle, DatagramEvent, EndpointConfig};

/// Why a QUIC connection could not even start.
#[derive(Debug, thiserror::Error)]
pub enum QuicError {
    /// The TLS configuration cannot carry QUIC (it must offer TLS 1.3).
    #[error("QUIC: {0}")]
    Config(String),
    /// quinn-proto refused the connection's parameters (the server name, the address).
    #[error("QUIC: {0}")]
    Connect(#[from] quinn_proto::ConnectError),
    #[error("UDP: {0}")]
    Io(#[from] io::Error),
}

/// The largest UDP payload read: a QUIC datagram is never larger (RFC 9000 section 14).
pub const DATAGRAM: usize = 65_527;

/// A QUIC client connection and its UDP socket.
pub struct Quic {
    socket: UdpSocket,
    remote: SocketAddr,
    endpoint: quinn_proto::Endpoint,
    handle: ConnectionHandle,
    pub conn: Connection,
    /// The datagram being sent; `held` when the socket's buffer refused it, so that it goes
    /// first once the socket is writable again.
    out: Vec<u8>,
    held: bool,
}

impl std::fmt::Debug for Quic {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Quic").field("remote", &self.remote).finish_non_exhaustive()
    }
}

impl Quic {
    /// Starts a connection to `remote` for the server name `host`, its TLS 1.3 the client
    /// configuration `tls` (whose ALPN the caller chose), at `now`, given up once nothing has
    /// come from the server for `idle` (RFC 9000 section 10.1). Nothing is sent yet:
    /// [`Quic::transmit`] sends the Initial.
    pub fn connect(
        remote: SocketAddr,
        tls: Arc<rustls::ClientConfig>,
        host: &str,
        idle: Duration,
        now: Instant,
    ) -> Result<Quic, QuicError> {
        let crypto =
            QuicClientConfig::try_from(tls).map_err(|e| QuicError::Config(e.to_string()))?;
        let mut config = ClientConfig::new(Arc::new(crypto));
        let mut transport = quinn_proto::TransportConfig::default();
        // A server that answers nothing, not even an acknowledgement, for `idle` is gone. A
        // slow one is not: PINGs at a third of it keep the connection alive (each is
        // acknowledged) while a response takes its time.
        let idle_timeout = quinn_proto::IdleTimeout::try_from(idle)
            .map_err(|e| QuicError::Config(e.to_string()))?;
        transport.max_idle_timeout(Some(idle_timeout));
        transport.keep_alive_interval(Some(idle / 3));
        config.transport_config(Arc::new(transport));
        let local: SocketAddr = match remote {
            SocketAddr::V4(_) => ([0, 0, 0, 0], 0).into(),
            SocketAddr::V6(_) => ([0u16; 8], 0).into(),
        };
        let socket = UdpSocket::bind(local)?;
        socket.connect(remote)?;
        let mut endpoint =
            quinn_proto::Endpoint::new(Arc::new(EndpointConfig::default()), None, false, None);
        let (handle, conn) = endpoint.connect(now, config, remote, host)?;
        Ok(Quic { socket, remote, endpoint, handle, conn, out: Vec::new(), held: false })
    }

    /// The server's address.
    pub fn remote(&self) -> SocketAddr {
        self.remote
    }

    /// Registers the socket for both directions, once: epoll is edge-triggered, so a
    /// datagram refused for a full buffer is sent on the next writable event.
    pub fn register(&mut self, registry: &Registry, token: Token) -> io::Result<()> {
        registry.register(&mut self.socket, token, Interest::READABLE | Interest::WRITABLE)
    }

    /// Hands every datagram the socket holds to the connection, read into `buf` (at least
    /// [`DATAGRAM`] bytes), until the socket would block; then lets the endpoint and the
    /// connection exchange what they must (new connection ids). A datagram that is not the
    /// connection's (garbage, another connection's) is dropped by quinn-proto.
    pub fn receive(&mut self, buf: &mut [u8], now: Instant) -> io::Result<()> {
        loop {
            let n = match self.socket.recv(buf) {
                Ok(n) => n,
                Err(e) if e.kind() == io::ErrorKind::WouldBlock => break,
                Err(e) if e.kind() == io::ErrorKind::Interrupted => continue,
                Err(e) => return Err(e),
            };
            let data = bytes::BytesMut::from(&buf[..n]);
            // A client endpoint never answers a datagram itself (no stateless resets to send
            // for connections it does not know): what it would write is dropped.
            let mut response = Vec::new();
            if let Some(DatagramEvent::ConnectionEvent(_, event)) =
                self.endpoint.handle(now, self.remote, None, None, data, &mut response)
            {
                self.conn.handle_event(event);
            }
        }
        self.endpoint_events();
        Ok(())
    }

    /// Fires the connection's timer when it is due at `now` (loss detection, the idle
    /// timeout, acknowledgement delay).
    pub fn on_timeout(&mut self, now: Instant) {
        if self.conn.poll_timeout().is_some_and(|t| t <= now) {
            self.conn.handle_timeout(now);
            self.endpoint_events();
        }
    }

    /// When the connection's timer is due next.
    pub fn timeout(&mut self) -> Option<Instant> {
        self.conn.poll_timeout()
    }

    fn endpoint_events(&mut self) {
        while let Some(event) = self.conn.poll_endpoint_events() {
            if let Some(back) = self.endpoint.handle_event(self.handle, event) {
                self.conn.handle_event(back);
            }
        }
    }

    /// Sends the datagrams the connection has ready, as far as the socket takes them; the
    /// rest waits for the next writable event (`Ok(false)` then).
    pub fn transmit(&mut self, now: Instant) -> io::Result<bool> {
        loop {
            if !self.held {
                self.out.clear();
                let Some(t) = self.conn.poll_transmit(now, 1, &mut self.out) else {
                    return Ok(true);
                };
                self.out.truncate(t.size);
            }
            match self.socket.send(&self.out) {
                Ok(_) => self.held = false,
                Err(e) if e.kind() == io::ErrorKind::WouldBlock => {
                    self.held = true;
                    return Ok(false);
                }
                Err(e) if e.kind() == io::ErrorKind::Interrupted => self.held = true,
                Err(e) => return Err(e),
            }
        }
    }

    /// Closes the connection with the application's `code` and sends the close at once, so
    /// that the server forgets it now rather than after its idle timeout.
    pub fn close(&mut self, code: u32, now: Instant) {
        self.conn.close(now, quinn_proto::VarInt::from_u32(code), bytes::Bytes::new());
        self.held = false;
        let _ = self.transmit(now);
    }
}
