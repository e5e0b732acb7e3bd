//! One HTTP/3 connection's requests as the QUIC connection's streams, for a connection slot of
//! the worker: stream slots as HTTP/2's (`h2::Slot`'s states and outcomes, each slot's
//! [`Exchange`]), a request placed on a slot goes out on a bidirectional stream of its own
//! once the connection is up and the server's stream limit lets it (RFC 9114 section 4.1), and
//! each response is read by the slot's bounded [`Response`] reader.
//!
//! Allocation stays per slot: each slot's reader keeps its buffer, the request bytes are the
//! run's, encoded once, and finding a stream's slot is a scan of the slots (as few as the
//! streams per connection).

use std::collections::VecDeque;
use std::time::Instant;

use quinn_proto::{Connection, Dir, Event, ReadError, StreamEvent, StreamId};

use super::qpack::Decoder;
use super::{frame, Part, Response};
use crate::exchange::Exchange;
use crate::h2::{self, Outcome, Reason, StreamSlot, StreamState};
use crate::ErrorClass;

/// One stream slot: its request and its response so far.
#[derive(Debug)]
pub(crate) struct Slot {
    pub ex: Exchange,
    pub state: StreamState,
    id: Option<StreamId>,
    reader: Response,
    pub status: u16,
    pub body_len: u64,
    head: bool,
}

impl StreamSlot for Slot {
    fn state(&self) -> StreamState {
        self.state
    }

    fn measured(&self) -> bool {
        self.ex.measured
    }
}

/// A worker's HTTP/3 connection slot: its QUIC connection while one is open, and its
/// requests' stream slots, which outlive it.
#[derive(Debug)]
pub(crate) struct H3 {
    pub quic: Option<super::quic::Quic>,
    pub streams: Streams,
}

/// The HTTP/3 side of one connection: its stream slots and the streams' outcomes.
#[derive(Debug)]
pub(crate) struct Streams {
    pub slots: Vec<Slot>,
    /// Streams that ended since the worker last looked, with how.
    pub done: VecDeque<(usize, Outcome)>,
    decoder: Decoder,
    max_field_section: usize,
    /// The connection is established and its control stream open: requests may go.
    ready: bool,
    /// The first Server header seen.
    pub server: Option<String>,
}

fn wanted(name: &[u8]) -> bool {
    name == b"server"
}

impl Streams {
    pub fn new(
        streams: usize,
        max_field_section: usize,
        mut exchange: impl FnMut() -> Exchange,
    ) -> Streams {
        let slot = |ex| Slot {
            ex,
            state: StreamState::Free,
            id: None,
            reader: Response::new(max_field_section, wanted),
            status: 0,
            body_len: 0,
            head: false,
        };
        Streams {
            slots: (0..streams.max(1)).map(|_| slot(exchange())).collect(),
            done: VecDeque::new(),
            decoder: Decoder::new(max_field_section),
            max_field_section,
            ready: false,
            server: None,
        }
    }

    pub fn free_slot(&self) -> Option<usize> {
        self.slots.iter().position(|s| s.state == StreamState::Free)
    }

    pub fn in_flight(&self) -> usize {
        h2::in_flight(&self.slots)
    }

    pub fn measured_in_flight(&self) -> u64 {
        h2::measured_in_flight(&self.slots)
    }

    pub fn pending(&self) -> bool {
        h2::pending(&self.slots)
    }

    /// The connection is gone: the next one opens its control stream again.
    pub fn disconnected(&mut self) {
        self.ready = false;
    }

    /// Ends the request on slot `s` without its response (a timeout): an open stream is reset
    /// and its reading stopped with H3_REQUEST_CANCELLED (RFC 9114 section 4.1.1), and the
    /// slot freed.
    pub fn cancel(&mut self, conn: Option<&mut Connection>, s: usize) {
        let slot = &mut self.slots[s];
        if let (StreamState::Open, Some(id), Some(conn)) = (slot.state, slot.id, conn) {
            let code = quinn_proto::VarInt::from_u32(super::H3_REQUEST_CANCELLED);
            let _ = conn.send_stream(id).reset(code);
            let _ = conn.recv_stream(id).stop(code);
        }
        slot.state = StreamState::Free;
    }

    /// Slot `s` takes a request (`head`: a HEAD, whose response has no body); it goes out
    /// with the next [`Streams::send`].
    pub fn place(&mut self, s: usize, head: bool) {
        let slot = &mut self.slots[s];
        slot.state = StreamState::Pending;
        slot.id = None;
        slot.status = 0;
        slot.body_len = 0;
        slot.head = head;
    }

    pub fn release(&mut self, s: usize) {
        self.slots[s].state = StreamState::Free;
    }

    /// Ends every request that is open (and, `pending`, those waiting to go) in `class`.
    pub fn fail_all(&mut self, class: ErrorClass, reason: Reason, pending: bool) {
        for (i, slot) in self.slots.iter_mut().enumerate() {
            if slot.state.fails_with_connection(pending) {
                slot.state = StreamState::Ended;
                self.done.push_back((i, Outcome::Failed(class, reason)));
            }
        }
    }

    /// Sends the waiting requests that the server's stream limit allows, each the bytes
    /// `request(entry)` gives (its HEADERS frame), its stream finished at once (no body), and
    /// says how many went and their bytes. Before the connection is up, nothing goes.
    pub fn send<'r>(
        &mut self,
        conn: &mut Connection,
        request: impl Fn(u32) -> &'r [u8],
        now: Instant,
    ) -> (u64, u64) {
        if !self.ready {
            if conn.is_handshaking() || conn.is_closed() {
                return (0, 0);
            }
            // The control stream and its SETTINGS, left open for the connection's life
            // (RFC 9114 section 6.2.1).
            let Some(control) = conn.streams().open(Dir::Uni) else { return (0, 0) };
            let settings = frame::control_stream(self.max_field_section);
            let _ = conn.send_stream(control).write(&settings);
            self.ready = true;
        }
        let (mut sent, mut bytes) = (0, 0);
        for (i, slot) in self.slots.iter_mut().enumerate() {
            if slot.state != StreamState::Pending {
                continue;
            }
            // The server's MAX_STREAMS: the rest wait until it allows more.
            let Some(id) = conn.streams().open(Dir::Bi) else { break };
            let bytes_of = request(slot.ex.entry);
            let mut stream = conn.send_stream(id);
            // A request head fits a new stream's initial credit (initial_max_stream_data).
            let wrote = stream.write(bytes_of).unwrap_or(0);
            let _ = stream.finish();
            slot.id = Some(id);
            slot.state = StreamState::Open;
            slot.reader.begin(slot.head);
            slot.ex.written = now;
            if wrote < bytes_of.len() {
                slot.state = StreamState::Ended;
                let reason = Reason {
                    what: "the server's stream credit refused a request head",
                    code: None,
                };
                self.done.push_back((i, Outcome::Failed(ErrorClass::Other, reason)));
                continue;
            }
            if slot.ex.measured {
                sent += 1;
                bytes += wrote as u64;
            }
        }
        (sent, bytes)
    }

    /// Handles the connection's events at `now`: responses read as their streams become
    /// readable, the server's own streams (control, QPACK) accepted and read past, and the
    /// connection's loss failing what it carried. Whether the connection was lost.
    pub fn on_events(&mut self, conn: &mut Connection, now: Instant) -> bool {
        while let Some(event) = conn.poll() {
            match event {
                Event::Stream(StreamEvent::Readable { id }) => self.read(conn, id, now),
                Event::Stream(StreamEvent::Opened { dir: Dir::Uni }) => {
                    while let Some(id) = conn.streams().accept(Dir::Uni) {
                        self.read(conn, id, now);
                    }
                }
                Event::ConnectionLost { reason } => {
                    let (class, what) = lost(&reason);
                    self.fail_all(class, Reason { what, code: None }, true);
                    return true;
                }
                _ => {}
            }
        }
        false
    }

    /// Reads what stream `id` has: a response's, or one of the server's own streams, whose
    /// bytes (SETTINGS, with no dynamic table nothing else) are passed over.
    fn read(&mut self, conn: &mut Connection, id: StreamId, now: Instant) {
        let s = self.slots.iter().position(|s| s.id == Some(id) && s.state == StreamState::Open);
        let mut recv = conn.recv_stream(id);
        let Ok(mut chunks) = recv.read(true) else { return };
        let outcome = loop {
            match chunks.next(usize::MAX) {
                Ok(Some(chunk)) => {
                    let Some(s) = s else { continue };
                    let slot = &mut self.slots[s];
                    slot.ex.first_byte.get_or_insert(now);
                    slot.ex.resp_bytes += chunk.bytes.len() as u64;
                    let (status, body_len, check) =
                        (&mut slot.status, &mut slot.body_len, &mut slot.ex.check);
                    let server = &mut self.server;
                    let mut on = |part: Part<'_>| match part {
                        Part::Status(code) => *status = code,
                        Part::Field(_, v) if server.is_none() => {
                            *server = Some(String::from_utf8_lossy(v).into_owned())
                        }
                        Part::Field(..) => {}
                        Part::Body(b) => {
                            *body_len += b.len() as u64;
                            check.update(b);
                        }
                    };
                    if let Err(e) = slot.reader.feed(&chunk.bytes, &mut self.decoder, &mut on) {
                        let reason = Reason { what: stream_what(&e), code: Some(e.code() as u32) };
                        break Some(Outcome::Failed(ErrorClass::Parse, reason));
                    }
                }
                Ok(None) => {
                    break s.map(|s| match self.slots[s].reader.finish() {
                        Ok(()) => Outcome::Complete,
                        Err(e) => {
                            let reason =
                                Reason { what: stream_what(&e), code: Some(e.code() as u32) };
                            Outcome::Failed(ErrorClass::ShortBody, reason)
                        }
                    })
                }
                Err(ReadError::Blocked) => break None,
                Err(ReadError::Reset(code)) => {
                    let code = code.into_inner();
                    let what = super::code_name(code).unwrap_or("a stream reset");
                    let reason = Reason { what, code: u32::try_from(code).ok() };
                    break s.map(|_| Outcome::Failed(ErrorClass::H3StreamReset, reason));
                }
            }
        };
        let _ = chunks.finalize();
        if let (Some(s), Some(outcome)) = (s, outcome) {
            self.slots[s].state = StreamState::Ended;
            self.done.push_back((s, outcome));
        }
    }
}

/// A stream error's name, as a reason's fixed text.
fn stream_what(e: &super::StreamError) -> &'static str {
    super::code_name(e.code()).unwrap_or("H3_GENERAL_PROTOCOL_ERROR")
}

/// Why a QUIC connection was lost: its class, and words fixed enough to count by.
fn lost(reason: &quinn_proto::ConnectionError) -> (ErrorClass, &'static str) {
    use quinn_proto::ConnectionError as E;
    let transport = ErrorClass::QuicTransport;
    match reason {
        E::VersionMismatch => (transport, "QUIC: no version in common"),
        E::TransportError(_) => (transport, "QUIC: a transport error"),
        E::ConnectionClosed(_) => (transport, "QUIC: the server closed the connection"),
        E::ApplicationClosed(_) => (ErrorClass::H3Conn, "HTTP/3: the server closed the connection"),
        E::Reset => (transport, "QUIC: a stateless reset"),
        E::TimedOut => (ErrorClass::QuicIdleTimeout, "QUIC: the connection went idle"),
        E::LocallyClosed => (transport, "QUIC: closed"),
        E::CidsExhausted => (transport, "QUIC: connection ids exhausted"),
    }
}

#[cfg(test)]
mod tests {
    use std::time::Duration;

    use super::*;
    use crate::check::{BodyCheck, Validation};
    use crate::client::Tls;
    use crate::h3::peer::{serve, Peer};
    use crate::h3::quic::{Quic, DATAGRAM};
    use crate::tls::TlsOptions;

    /// Sends `n` GETs to a test server answering as `peer`, three streams at a time on one
    /// connection (a closed loop: each ended request frees its slot for the next), for at most
    /// five seconds; what became of each, and how many went out.
    fn run(peer: Peer, n: usize) -> (Vec<(Outcome, u16, u64)>, u64, Option<String>) {
        let until = Instant::now() + Duration::from_secs(5);
        let addr = serve(peer, until);
        let opts = TlsOptions { insecure: true, ..TlsOptions::default() };
        let tls = Tls::trusting(&opts, "127.0.0.1").unwrap();
        let now = Instant::now();
        let mut quic =
            Quic::connect(addr, tls.config(&["h3"]), &tls.host, Duration::from_secs(5), now)
                .unwrap();
        let mut poll = mio::Poll::new().unwrap();
        quic.register(poll.registry(), mio::Token(0)).unwrap();
        let mut events = mio::Events::with_capacity(8);
        let mut buf = vec![0; DATAGRAM];
        let request = crate::h3::headers_frame(&[
            (b":method", b"GET"),
            (b":scheme", b"https"),
            (b":authority", b"127.0.0.1"),
            (b":path", b"/"),
        ]);
        let validation = Validation::default();
        let mut streams =
            Streams::new(3, 16 << 10, || Exchange::new(BodyCheck::new(&validation), now));
        let (mut placed, mut sent, mut ended) = (0, 0, Vec::new());
        while ended.len() < n && Instant::now() < until {
            while placed < n {
                let Some(s) = streams.free_slot() else { break };
                streams.slots[s].ex.measured = true;
                streams.place(s, false);
                placed += 1;
            }
            sent += streams.send(&mut quic.conn, |_| &request, Instant::now()).0;
            quic.transmit(Instant::now()).unwrap();
            let wait = quic
                .timeout()
                .map_or(Duration::from_millis(50), |t| t.saturating_duration_since(Instant::now()))
                .min(Duration::from_millis(50));
            poll.poll(&mut events, Some(wait)).unwrap();
            quic.receive(&mut buf, Instant::now()).unwrap();
            quic.on_timeout(Instant::now());
            streams.on_events(&mut quic.conn, Instant::now());
            while let Some((s, outcome)) = streams.done.pop_front() {
                ended.push((outcome, streams.slots[s].status, streams.slots[s].body_len));
                streams.release(s);
            }
        }
        // Every request placed is accounted for: none left in flight or waiting.
        assert!(streams.slots.iter().all(|s| s.state == StreamState::Free));
        (ended, sent, streams.server.take())
    }

    #[test]
    fn requests_go_as_streams_and_each_answer_is_read_whole() {
        let (ended, sent, server) = run(Peer::Answer(b"hello"), 10);
        assert_eq!(sent, 10);
        assert_eq!(ended, vec![(Outcome::Complete, 200, 5); 10]);
        assert_eq!(server.as_deref(), Some("peer"));
    }

    #[test]
    fn a_reset_stream_ends_its_request_with_the_code_named() {
        let (ended, sent, _) = run(Peer::Reset(0x10b), 4);
        assert_eq!(sent, 4);
        let reason = Reason { what: "H3_REQUEST_REJECTED", code: Some(0x10b) };
        assert_eq!(ended, vec![(Outcome::Failed(ErrorClass::H3StreamReset, reason), 0, 0); 4]);
    }
}
