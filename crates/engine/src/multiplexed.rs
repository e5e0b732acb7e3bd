//! An HTTP/2 connection on an event loop: its connect, its reads frame by frame, its writes,
//! its TLS handshake, its end and its failure, and its streams' deadlines, apart from what a
//! stream's outcome means to the worker's load (its pacing, or its visits), which
//! [`Multiplexed`]'s required methods say; the provided ones are the connection machinery,
//! compiled into the worker, so that no call on the hot path goes through a vtable.

use std::io::{self, Read, Write};
use std::time::Instant;

use mio::event::Event;

use crate::conn::{State, Stream, BACKOFF};
use crate::exchange::Recording;
use crate::h2::{Outcome, Reason, StreamState};
use crate::slots::Slots;
use crate::ErrorClass;

/// Why a stream failed: its class, with the errno its connection's socket reported or the
/// HTTP/2 reason (a stream reset, a connection error).
#[derive(Debug, Clone, Copy)]
pub(crate) struct Failure {
    pub class: ErrorClass,
    pub errno: Option<i32>,
    pub reason: Option<Reason>,
}

impl Failure {
    pub fn of(class: ErrorClass) -> Failure {
        Failure { class, errno: None, reason: None }
    }
}

/// A loop whose connection slots may speak HTTP/2: what it provides, and what its load does
/// with a stream's outcome.
pub(crate) trait Multiplexed: Slots {
    /// Opens slot `idx`'s connection for its waiting streams (the loop's own connect: its
    /// origin, its source address, whether it is measured), over TCP or QUIC.
    fn open_h2(&mut self, idx: usize, now: Instant) -> io::Result<()>;

    /// Slot `idx`'s session queued output: the loop writes it now or at the end of its turn.
    fn queued(&mut self, idx: usize, now: Instant);

    /// Stream `s` of slot `idx` was answered whole (see [`Multiplexed::record_stream`]).
    fn stream_completed(&mut self, idx: usize, s: usize, now: Instant);

    /// Stream `s` of slot `idx` failed (see [`Multiplexed::record_stream_failure`]).
    fn stream_failed(&mut self, idx: usize, s: usize, failure: Failure, now: Instant);

    /// Slot `idx`'s connection ended in good order (a GOAWAY drained, the server's close)
    /// with no request failed by it: what the load does next.
    fn reopen(&mut self, idx: usize, now: Instant);

    /// The streams of slot `idx` that ended are settled.
    fn settled(&mut self, _idx: usize, _now: Instant) {}

    /// Gets slot `idx`'s waiting requests moving: sends them if its connection is open, or
    /// opens one (not while it rests after the client ran out of descriptors).
    fn pump(&mut self, idx: usize, now: Instant) {
        let p = self.parts(idx);
        let conn = p.conn;
        let Some(session) = conn.h2.as_mut() else { return };
        if conn.stream.is_none() {
            if session.pending() && !matches!(conn.state, State::Backoff(_)) {
                if let Err(e) = self.open_h2(idx, now) {
                    self.fail_h2_io(idx, &e, now);
                }
            }
            return;
        }
        if conn.state != State::Reading {
            return;
        }
        let (sent, bytes) = session.send(p.spec.table.h2s(), now);
        let queued = !session.output().is_empty();
        self.count_sent(idx, sent, bytes, now);
        if queued {
            self.queued(idx, now);
        }
    }

    /// Writes slot `idx`'s queued frames as far as the socket takes them; the rest waits for
    /// the next writable event.
    fn flush(&mut self, idx: usize, now: Instant) {
        let conn = self.conn(idx);
        let (Some(stream), Some(session)) = (conn.stream.as_mut(), conn.h2.as_mut()) else {
            return;
        };
        while !session.output().is_empty() {
            match stream.write(session.output()) {
                Ok(0) => return self.fail_h2_io(idx, &io::ErrorKind::WriteZero.into(), now),
                Ok(n) => session.wrote(n),
                Err(e) if e.kind() == io::ErrorKind::WouldBlock => return,
                Err(e) if e.kind() == io::ErrorKind::Interrupted => {}
                Err(e) => return self.fail_h2_io(idx, &e, now),
            }
        }
    }

    /// An event on slot `idx`'s connection: its connect ends, rustls sends what it held, the
    /// frames that came are read, and what waits is written.
    fn on_h2_event(&mut self, idx: usize, event: &Event, now: Instant) {
        let conn = self.conn(idx);
        match conn.state {
            State::Connecting => match conn.finish_connect() {
                Ok(true) => {
                    conn.state = State::Reading;
                    conn.ex.connected = now;
                    let session = conn.h2.as_mut().expect("an HTTP/2 connection");
                    session.connected();
                    let pending =
                        session.slots.iter_mut().filter(|s| s.state == StreamState::Pending);
                    for slot in pending {
                        slot.ex.connected = now;
                    }
                    self.connect_ended();
                    self.pump(idx, now);
                }
                Ok(false) => return,
                Err(e) => return self.fail_h2_io(idx, &e, now),
            },
            State::Reading => {}
            // No connection: an event left over from a socket already closed.
            _ => return,
        }
        if event.is_writable() {
            if let Err(e) = self.conn(idx).flush_tls() {
                return self.fail_h2_io(idx, &e, now);
            }
        }
        if event.is_readable() || event.is_read_closed() || event.is_error() {
            self.read_frames(idx, now);
        }
        if self.conn(idx).state == State::Reading {
            self.note_h2_handshake(idx, now);
        }
        if self.conn(idx).state == State::Reading {
            self.flush(idx, now);
        }
    }

    /// Over TLS, once the handshake is seen over: its time, and whether the server chose h2
    /// by ALPN (a server that did not cannot carry these requests).
    fn note_h2_handshake(&mut self, idx: usize, now: Instant) {
        if !self.note_handshake(idx, now) {
            return;
        }
        let p = self.parts(idx);
        let h2 = matches!(p.conn.stream.as_ref(), Some(Stream::Tls(t)) if t.alpn_h2());
        if !h2 {
            let reason = Reason { what: "the server did not select h2 by ALPN", code: None };
            let failure = Failure { reason: Some(reason), ..Failure::of(ErrorClass::H2Conn) };
            return self.fail_h2(idx, failure, true, now);
        }
        if let Some(session) = p.conn.h2.as_mut() {
            session.sent_with_handshake(now);
        }
    }

    /// Reads what slot `idx`'s connection has, frame by frame, and settles the streams that
    /// ended.
    fn read_frames(&mut self, idx: usize, now: Instant) {
        loop {
            let p = self.parts(idx);
            let conn = p.conn;
            let (Some(stream), Some(session)) = (conn.stream.as_mut(), conn.h2.as_mut()) else {
                return;
            };
            let n = match stream.read(&mut p.books.buf) {
                Ok(n) => n,
                Err(e) if e.kind() == io::ErrorKind::WouldBlock => break,
                Err(e) if e.kind() == io::ErrorKind::Interrupted => continue,
                Err(e) => return self.fail_h2_io(idx, &e, now),
            };
            if n == 0 {
                // The server closed it: open streams fail (`on_eof`); waiting ones go on a
                // new connection.
                session.on_eof();
                self.close(idx);
                self.conn(idx).state = State::Idle;
                self.settle(idx, None, now);
                return self.reopen(idx, now);
            }
            if conn.tls_done.is_none() && matches!(stream, Stream::Tls(_)) {
                // Plaintext came, so the handshake is over: its time is noted before any
                // response it carried is recorded.
                self.note_h2_handshake(idx, now);
                if self.conn(idx).state != State::Reading {
                    return;
                }
            }
            let p = self.parts(idx);
            // A short read drained the socket, over TLS as over TCP (`TlsStream::read`),
            // unless TLS holds the data's end behind it (a close_notify brings no event).
            let again = p.conn.read_again(n, p.books.buf.len(), false);
            let session = p.conn.h2.as_mut().expect("an HTTP/2 connection");
            if let Err(e) = session.feed(&p.books.buf[..n], now) {
                // Our GOAWAY goes out if it can before the connection closes.
                self.flush(idx, now);
                let reason = Some(e.reason());
                let failure = Failure { reason, ..Failure::of(ErrorClass::H2Conn) };
                return self.fail_h2(idx, failure, false, now);
            }
            self.settle(idx, None, now);
            if !again {
                break;
            }
        }
        if self.conn(idx).h2.as_ref().is_some_and(|h| h.drained()) {
            // The server's GOAWAY let nothing more through and what it did let through is
            // answered: the connection is done; its refused requests go on a new one.
            self.close(idx);
            self.conn(idx).state = State::Idle;
            self.reopen(idx, now);
        }
    }

    /// Records the streams of slot `idx` that ended, and hands each to the load; `errno` is
    /// that of failures the connection's socket reported.
    fn settle(&mut self, idx: usize, errno: Option<i32>, now: Instant) {
        loop {
            let p = self.parts(idx);
            let Some(mut mux) = p.conn.mux() else { return };
            let Some((s, outcome)) = mux.next_done() else { break };
            match outcome {
                Outcome::Complete => self.stream_completed(idx, s, now),
                Outcome::Failed(class, reason) => {
                    let failure = Failure { class, errno, reason: Some(reason) };
                    self.stream_failed(idx, s, failure, now)
                }
                Outcome::Refused => {
                    // It never reached the server's processing: its sending did not count.
                    let wire = mux.wire(s);
                    if mux.slot(s).1.measured {
                        p.books.tally.sent = p.books.tally.sent.saturating_sub(1);
                        p.books.tally.bytes_sent = p.books.tally.bytes_sent.saturating_sub(wire);
                    }
                }
            }
        }
        self.settled(idx, now);
    }

    /// Stream `s` of slot `idx` was answered whole: its slot freed, its connection's reply
    /// counted (the TLS handshake with the first), the server named, and, when measured, its
    /// outcome recorded (`scheduled`: its latency counts from its due time). Whether the
    /// recording failed it (`--expect-*`).
    fn record_stream(&mut self, idx: usize, s: usize, scheduled: bool, now: Instant) -> bool {
        let p = self.parts(idx);
        let tls = p.conn.count_reply();
        let mut mux = p.conn.mux().expect("a multiplexed connection");
        mux.release(s);
        if p.books.server.is_none() {
            p.books.server = mux.take_server();
        }
        let (status, body_len) = mux.answer(s);
        let ex = mux.slot(s).1;
        if !ex.measured {
            return false;
        }
        let recording = Recording {
            measure_start: p.spec.measure_start,
            validation: &p.spec.validation,
            scheduled,
        };
        let failed = p.books.tally.failed;
        ex.record_completion(&mut p.books.tally, &recording, status, body_len, tls, now);
        p.books.tally.keepalive += 1;
        p.books.last_event = now;
        p.books.tally.failed > failed
    }

    /// Stream `s` of slot `idx` failed: its slot freed and, when measured, the failure
    /// recorded with its errno or HTTP/2 reason.
    fn record_stream_failure(&mut self, idx: usize, s: usize, failure: Failure, now: Instant) {
        let p = self.parts(idx);
        let mut mux = p.conn.mux().expect("a multiplexed connection");
        mux.release(s);
        let ex = mux.slot(s).1;
        if !ex.measured {
            return;
        }
        ex.record_failure(
            &mut p.books.tally,
            p.spec.measure_start,
            failure.class,
            failure.errno,
            now,
        );
        if let Some(reason) = failure.reason.filter(|r| !r.what.is_empty()) {
            *p.books.tally.errors.h2_reasons.entry(reason.to_string()).or_insert(0) += 1;
        }
        p.books.last_event = now;
    }

    /// A read, write, connect or TLS failure of slot `idx`'s connection: every request on
    /// it fails, each counted under the TLS reason when there is one.
    fn fail_h2_io(&mut self, idx: usize, e: &io::Error, now: Instant) {
        let p = self.parts(idx);
        if let (Some(reason), true) = (crate::tls::reason(e), now >= p.spec.measure_start) {
            let open = p.conn.streams_in_flight().unwrap_or(0) as u64;
            *p.books.tally.errors.tls_reasons.entry(reason.to_string()).or_insert(0) += open;
        }
        let failure = Failure { errno: e.raw_os_error(), ..Failure::of(ErrorClass::from_io(e)) };
        self.fail_h2(idx, failure, true, now)
    }

    /// Slot `idx`'s connection failed: its open streams fail (and `pending` ones, which were
    /// waiting for it), it closes, and each failure is settled by the load; requests not
    /// failed (refused by a GOAWAY) wait for a new connection.
    fn fail_h2(&mut self, idx: usize, failure: Failure, pending: bool, now: Instant) {
        let Failure { class, errno, reason } = failure;
        if self.conn(idx).state == State::Connecting {
            self.connect_ended();
        }
        let mut mux = self.conn(idx).mux().expect("a multiplexed connection");
        mux.fail_all(class, reason, pending);
        self.close(idx);
        self.conn(idx).state = match class {
            // The client ran out of descriptors or ports: rest before trying again.
            ErrorClass::FdUnavail | ErrorClass::AddrUnavail => State::Backoff(now + BACKOFF),
            _ => State::Idle,
        };
        self.settle(idx, errno, now);
        if !pending {
            self.pump(idx, now);
        }
    }

    /// Fails what slot `idx` holds past its deadline: its connect, or its streams (an open
    /// one is reset with CANCEL, RFC 9113 section 8.7).
    fn sweep_h2(&mut self, idx: usize, now: Instant) {
        let conn = self.conn(idx);
        if conn.state == State::Connecting && now >= conn.ex.deadline {
            return self.fail_h2(idx, Failure::of(ErrorClass::ConnectTimeout), true, now);
        }
        let Some(session) = conn.h2.as_ref() else { return };
        for s in 0..session.slots.len() {
            let session = self.conn(idx).h2.as_mut().expect("an HTTP/2 connection");
            let slot = &session.slots[s];
            if matches!(slot.state, StreamState::Free | StreamState::Ended)
                || now < slot.ex.deadline
            {
                continue;
            }
            session.cancel(s);
            self.stream_failed(idx, s, Failure::of(ErrorClass::ClientTimeout), now);
            let conn = self.conn(idx);
            if conn.stream.is_some() && conn.h2.as_ref().is_some_and(|h| !h.output().is_empty()) {
                self.queued(idx, now);
            }
        }
    }
}
