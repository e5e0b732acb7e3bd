//! An HTTP/1.1 connection on an event loop (over TCP, TLS or a unix socket), one request at a
//! time: its connect, its request's write, its answer's reads, its failure and its deadline,
//! apart from what an answer or a failure means to the worker's load (its pacing, or its
//! visits), which [`Plain`]'s required methods say; the provided ones are compiled into the
//! worker, so that no call on the hot path goes through a vtable.

use std::io::{self, Read};
use std::time::{Duration, Instant};

use mio::event::Event;

use crate::conn::{Fed, State, Stream};
use crate::exchange::Recording;
use crate::slots::Slots;
use crate::ErrorClass;

/// A loop whose connection slots may speak HTTP/1.1: what its load does with an answer.
pub(crate) trait Plain: Slots {
    /// A full answer arrived on slot `idx` at `at`; `must_close` when the connection's
    /// framing can no longer be trusted (see [`Plain::record_answer`]).
    fn complete(&mut self, idx: usize, at: Instant, must_close: bool);

    /// The request on slot `idx` failed in `class` (see [`Plain::record_failure`]).
    fn fail(&mut self, idx: usize, class: ErrorClass, errno: Option<i32>, now: Instant);

    /// An event on slot `idx`'s connection: an idle one closed by the server, a connect
    /// ended, the request written, rustls's held bytes sent, the answer read.
    fn on_h1_event(&mut self, idx: usize, event: &Event, now: Instant) {
        let readable = event.is_readable() || event.is_read_closed() || event.is_error();
        let p = self.parts(idx);
        let conn = p.conn;
        if conn.state == State::Idle {
            // An idle keep-alive connection became readable: the server closed it (its
            // keep-alive timeout) or sent what nobody asked for, unless TLS session tickets
            // came. Either way it cannot carry the next request; close it now rather than
            // fail that request later. The slot reconnects when it is next taken.
            if readable && !conn.idle_usable(event.is_error()) {
                self.close(idx);
            }
            return;
        }
        if conn.state == State::Connecting {
            match conn.finish_connect() {
                Ok(true) => {
                    conn.ex.connected = now;
                    conn.ex.deadline = conn.ex.started + p.spec.timeout;
                    conn.state = State::Writing { sent: 0 };
                    self.connect_ended();
                }
                Ok(false) => return,
                Err(e) => return self.fail_io(idx, &e, now),
            }
        }
        if matches!(self.conn(idx).state, State::Writing { .. }) {
            self.write(idx, now);
        }
        if event.is_writable() {
            // What rustls could not send when it had it (handshake, the request): now.
            if let Err(e) = self.conn(idx).flush_tls() {
                return self.fail_io(idx, &e, now);
            }
        }
        if self.conn(idx).state == State::Reading && readable {
            // A short read drains the socket unless the peer also closed or failed: the
            // edge-triggered event for a FIN or RST that came with the data is already
            // consumed, so keep reading until EOF or the error shows.
            self.read(idx, now, event.is_read_closed() || event.is_error());
        }
        self.note_handshake(idx, now);
    }

    /// Writes slot `idx`'s request (the table's entry, or the visitor's own bytes) as far as
    /// the socket takes it; once all is written the answer is awaited.
    fn write(&mut self, idx: usize, now: Instant) {
        let p = self.parts(idx);
        let conn = p.conn;
        let request = p.own.unwrap_or_else(|| p.spec.table.h1(conn.ex.entry));
        match conn.write_request(request) {
            Ok(true) => {
                conn.ex.written = now;
                conn.state = State::Reading;
                if conn.ex.measured {
                    let bytes = request.len() as u64;
                    self.count_sent(idx, 1, bytes, now);
                }
            }
            Ok(false) => {}
            Err(e) => self.fail_io(idx, &e, now),
        }
    }

    /// A failed connect, read or write: its class, and for TLS its reason, kept with the
    /// counts.
    fn fail_io(&mut self, idx: usize, e: &io::Error, now: Instant) {
        let p = self.parts(idx);
        if let (Some(reason), true) = (crate::tls::reason(e), p.conn.ex.measured) {
            *p.books.tally.errors.tls_reasons.entry(reason.to_string()).or_insert(0) += 1;
        }
        self.fail(idx, ErrorClass::from_io(e), e.raw_os_error(), now)
    }

    /// Reads slot `idx`'s answer as far as the socket has it.
    fn read(&mut self, idx: usize, now: Instant, must_drain: bool) {
        loop {
            let p = self.parts(idx);
            let conn = p.conn;
            let Some(stream) = conn.stream.as_mut() else { return };
            let handshaking = conn.tls_done.is_none() && matches!(stream, Stream::Tls(_));
            let got = if p.stamped {
                crate::sys::recv_stamped(std::os::fd::AsFd::as_fd(stream), &mut p.books.buf)
            } else {
                stream.read(&mut p.books.buf).map(|n| (n, None))
            };
            let (n, stamp) = match got {
                Ok(got) => got,
                Err(e) if e.kind() == io::ErrorKind::WouldBlock => return,
                Err(e) if e.kind() == io::ErrorKind::Interrupted => continue,
                Err(e) => return self.fail_io(idx, &e, now),
            };
            // When these bytes arrived: the kernel's stamp where the loop may have read them
            // late, never before the request went out.
            let at = match (p.harvesting, stamp) {
                (true, Some(s)) => arrived(s, now, conn.ex.written),
                _ => now,
            };
            // The handshake can end inside this read (rustls sends its last flight and the
            // request held until then) and the answer come in a later read of this loop, on
            // loopback at once: noted before any answer, its time is recorded with the first.
            if handshaking {
                self.note_handshake(idx, now);
            }
            let p = self.parts(idx);
            let conn = p.conn;
            match conn.feed(&p.books.buf[..n], at) {
                Fed::Partial if !conn.read_again(n, p.books.buf.len(), must_drain) => return,
                Fed::Partial => {}
                // Bytes after the response were never asked for (no pipelining): the
                // connection's framing can no longer be trusted, so it is not reused.
                Fed::Complete { spoiled } => return self.complete(idx, at, spoiled),
                Fed::Failed(class) => return self.fail(idx, class, None, now),
            }
        }
    }

    /// Slot `idx`'s answer is whole: the server named, its connection's reply counted (the
    /// TLS handshake with the first), and, when measured, its outcome recorded (`scheduled`:
    /// its latency counts from its due time); then its connection is kept for the next
    /// request or closed. Whether the recording failed it (`--expect-*`).
    fn record_answer(
        &mut self,
        idx: usize,
        scheduled: bool,
        must_close: bool,
        at: Instant,
    ) -> bool {
        let p = self.parts(idx);
        let conn = p.conn;
        if p.books.server.is_none() {
            p.books.server = conn.parser.take_server();
        }
        let tls = conn.count_reply();
        let mut invalid = false;
        if conn.ex.measured {
            let (status, body_len) = (conn.parser.status(), conn.parser.body_len());
            let recording = Recording {
                measure_start: p.spec.measure_start,
                validation: &p.spec.validation,
                scheduled,
            };
            let failed = p.books.tally.failed;
            conn.ex.record_completion(&mut p.books.tally, &recording, status, body_len, tls, at);
            invalid = p.books.tally.failed > failed;
            p.books.last_event = at;
        }
        conn.state = State::Idle;
        let reusable = !must_close && p.spec.keepalive && conn.parser.keep_alive();
        if !reusable {
            self.close(idx);
        } else if conn.ex.measured {
            p.books.tally.keepalive += 1;
        }
        invalid
    }

    /// The request on slot `idx` failed in `class`: recorded when measured, and its
    /// connection closed.
    fn record_failure(&mut self, idx: usize, class: ErrorClass, errno: Option<i32>, now: Instant) {
        if self.conn(idx).state == State::Connecting {
            self.connect_ended();
        }
        let p = self.parts(idx);
        if p.conn.ex.measured {
            p.conn.ex.record_failure(&mut p.books.tally, p.spec.measure_start, class, errno, now);
            p.books.last_event = now;
        }
        self.close(idx);
    }

    /// Fails slot `idx`'s request when it is past its deadline: its connect, or its
    /// exchange.
    fn sweep_h1(&mut self, idx: usize, now: Instant) {
        let conn = self.conn(idx);
        let class = match conn.state {
            State::Connecting => ErrorClass::ConnectTimeout,
            State::Writing { .. } | State::Reading => ErrorClass::ClientTimeout,
            _ => return,
        };
        if now >= conn.ex.deadline {
            self.fail(idx, class, None, now);
        }
    }
}

/// The instant a received segment arrived, from its kernel stamp (wall clock): `now` less
/// its age, and not before `written` (a clock step cannot move a response before its request).
fn arrived(stamp: std::time::SystemTime, now: Instant, written: Instant) -> Instant {
    let age = std::time::SystemTime::now().duration_since(stamp).unwrap_or(Duration::ZERO);
    now.checked_sub(age).unwrap_or(now).clamp(written.min(now), now)
}
