//! A QUIC server for the tests (quinn-proto's own, ALPN h3, an rcgen certificate, one
//! connection at a time), answering each request stream as a [`Peer`] says: well, with a
//! reset, or not at all past the first bytes.

use std::net::{SocketAddr, UdpSocket};
use std::sync::Arc;
use std::time::{Duration, Instant};

use quinn_proto::{Connection, ConnectionHandle, DatagramEvent, Dir, EndpointConfig, VarInt};

use super::{frame, headers_frame};

/// What the hostile QUIC server does with a request.
#[derive(Clone, Copy)]
pub enum Peer {
    /// Resets the request's stream with this HTTP/3 code.
    Reset(u32),
    /// Answers 200 with this body, its Content-Length said, and a Server header.
    Answer(&'static [u8]),
    /// Sends the head of a 100-byte answer and 10 bytes of it, then answers nothing more,
    /// its socket still open.
    Stall,
}

/// A QUIC server on 127.0.0.1 (ALPN h3, a self-signed certificate) that treats each
/// request as `peer` says, until `until`.
pub fn serve(peer: Peer, until: Instant) -> SocketAddr {
    use quinn_proto::crypto::rustls::QuicServerConfig;
    let cert = rcgen::generate_simple_self_signed(vec!["127.0.0.1".into()]).unwrap();
    let key = rustls::pki_types::PrivateKeyDer::Pkcs8(cert.key_pair.serialize_der().into());
    let provider = Arc::new(rustls::crypto::ring::default_provider());
    let mut tls = rustls::ServerConfig::builder_with_provider(provider)
        .with_protocol_versions(&[&rustls::version::TLS13])
        .unwrap()
        .with_no_client_auth()
        .with_single_cert(vec![cert.cert.der().clone()], key)
        .unwrap();
    tls.alpn_protocols = vec![b"h3".to_vec()];
    let crypto = QuicServerConfig::try_from(Arc::new(tls)).unwrap();
    let config = Arc::new(quinn_proto::ServerConfig::with_crypto(Arc::new(crypto)));
    let socket = UdpSocket::bind("127.0.0.1:0").unwrap();
    let addr = socket.local_addr().unwrap();
    std::thread::spawn(move || {
        let mut endpoint = quinn_proto::Endpoint::new(
            Arc::new(EndpointConfig::default()),
            Some(config),
            false,
            None,
        );
        let mut conn: Option<(ConnectionHandle, Connection, SocketAddr)> = None;
        let (mut buf, mut out) = (vec![0u8; 65_536], Vec::new());
        let mut stalled = false;
        socket.set_read_timeout(Some(Duration::from_millis(5))).unwrap();
        while Instant::now() < until {
            if let Ok((n, from)) = socket.recv_from(&mut buf) {
                if stalled {
                    continue;
                }
                let data = bytes::BytesMut::from(&buf[..n]);
                match endpoint.handle(Instant::now(), from, None, None, data, &mut out) {
                    Some(DatagramEvent::NewConnection(incoming)) => {
                        let accepted = endpoint.accept(incoming, Instant::now(), &mut out, None);
                        if let Ok((h, c)) = accepted {
                            conn = Some((h, c, from));
                        }
                    }
                    Some(DatagramEvent::ConnectionEvent(_, event)) => {
                        if let Some((_, c, _)) = conn.as_mut() {
                            c.handle_event(event);
                        }
                    }
                    Some(DatagramEvent::Response(t)) => {
                        let _ = socket.send_to(&out[..t.size], from);
                    }
                    None => {}
                }
            }
            let Some((h, c, from)) = conn.as_mut() else { continue };
            if stalled {
                continue;
            }
            if c.poll_timeout().is_some_and(|t| t <= Instant::now()) {
                c.handle_timeout(Instant::now());
            }
            while let Some(event) = c.poll_endpoint_events() {
                if let Some(back) = endpoint.handle_event(*h, event) {
                    c.handle_event(back);
                }
            }
            drain_readable(c);
            while let Some(id) = c.streams().accept(Dir::Bi) {
                drain(c, id);
                stalled |= answer(c, id, peer);
            }
            loop {
                out.clear();
                let Some(t) = c.poll_transmit(Instant::now(), 1, &mut out) else { break };
                let _ = socket.send_to(&out[..t.size], *from);
            }
        }
    });
    addr
}

/// Reads what request stream `id` has and drops it: a stream read to its end frees its place
/// in the client's stream limit (MAX_STREAMS, RFC 9000 section 4.6) once answered.
fn drain(c: &mut Connection, id: quinn_proto::StreamId) {
    if let Ok(mut chunks) = c.recv_stream(id).read(true) {
        while let Ok(Some(_)) = chunks.next(usize::MAX) {}
        let _ = chunks.finalize();
    }
}

/// Handles the connection's events: each request stream that became readable is drained.
fn drain_readable(c: &mut Connection) {
    while let Some(event) = c.poll() {
        if let quinn_proto::Event::Stream(quinn_proto::StreamEvent::Readable { id }) = event {
            drain(c, id);
        }
    }
}

/// Answers request stream `id` as `peer` says; whether the server stalls from now on.
fn answer(c: &mut Connection, id: quinn_proto::StreamId, peer: Peer) -> bool {
    match peer {
        Peer::Reset(code) => {
            let _ = c.send_stream(id).reset(VarInt::from_u32(code));
            false
        }
        Peer::Answer(body) => {
            let length = body.len().to_string();
            let mut answer = headers_frame(&[
                (b":status", b"200"),
                (b"content-length", length.as_bytes()),
                (b"server", b"peer"),
            ]);
            frame::put_header(&mut answer, frame::DATA, body.len());
            answer.extend_from_slice(body);
            let mut stream = c.send_stream(id);
            let _ = stream.write(&answer);
            let _ = stream.finish();
            false
        }
        Peer::Stall => {
            let mut answer = headers_frame(&[(b":status", b"200"), (b"content-length", b"100")]);
            frame::put_header(&mut answer, frame::DATA, 10);
            answer.extend_from_slice(&[b'x'; 10]);
            let _ = c.send_stream(id).write(&answer);
            true
        }
    }
}

/// A UDP peer on 127.0.0.1 answering each datagram, until `until`, with bytes of every kind:
/// short, long-header-like, and as long as the client's Initial. Its thread is returned to be
/// joined.
pub fn garbage(until: Instant) -> (SocketAddr, std::thread::JoinHandle<()>) {
    let peer = UdpSocket::bind("127.0.0.1:0").unwrap();
    let addr = peer.local_addr().unwrap();
    peer.set_read_timeout(Some(Duration::from_millis(50))).unwrap();
    let answering = std::thread::spawn(move || {
        let mut buf = [0u8; 2048];
        let mut x: u32 = 0x1234_5678;
        while Instant::now() < until {
            let Ok((n, from)) = peer.recv_from(&mut buf) else { continue };
            for len in [1, 20, n] {
                let reply: Vec<u8> = (0..len)
                    .map(|i| {
                        x ^= x << 13;
                        x ^= x >> 17;
                        x ^= x << 5;
                        // Keep the first byte a long header's now and then.
                        if i == 0 && len > 1 {
                            0xc0 | x as u8
                        } else {
                            x as u8
                        }
                    })
                    .collect();
                let _ = peer.send_to(&reply, from);
            }
        }
    });
    (addr, answering)
}
