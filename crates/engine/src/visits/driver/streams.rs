//! Visits over HTTP/2: a visitor holds one connection per origin, as a browser does (RFC 9113
//! section 9.1: "clients SHOULD NOT open more than one HTTP/2 connection to a given host and
//! port pair"), and a burst's calls go out as concurrent streams of it. The connection's
//! [`Session`](crate::h2::Session) frames them and decodes the answers (the request loop's own
//! HTTP/2, `worker/multiplex.rs`); this module only ties its streams to the visitor's calls.
//!
//! How many streams run at once is the server's SETTINGS_MAX_CONCURRENT_STREAMS: a session has
//! a slot for each call of the plan's largest burst, and the ones beyond the server's limit wait
//! in it until a stream ends. Every call is accounted for as over HTTP/1.1: a stream reset or a
//! connection lost (an EOF, a GOAWAY that refused a request twice, a protocol error) fails its
//! call with a class, and the visit ends with it; a request a GOAWAY refused once is sent
//! again on a new connection (RFC 9113 section 6.8 says it was not processed).

use std::io::{self, Read, Write};
use std::time::Instant;

use mio::event::Event;

use super::{judge, Slot, VisitWorker};
use crate::conn::{State, Stream};
use crate::exchange::{Exchange, Recording};
use crate::h2::{Outcome, Reason, Session, StreamState};
use crate::ErrorClass;

use loadlab_visit::Response;

/// A visitor's own request over HTTP/2: its header block, its body, and its path.
type Own = (Vec<u8>, Vec<u8>, String);

impl VisitWorker {
    /// A session for a visitor's connection: a stream slot for each call of the largest burst,
    /// each with an exchange made by `exchange` (kept bodies for the checks that read them).
    pub(super) fn session(&self, exchange: impl FnMut() -> Exchange) -> Box<Session> {
        let bursts = self.plan.visits.iter().flat_map(|v| &v.bursts);
        let widest = bursts.map(|b| b.entries.len()).max().unwrap_or(1).max(1);
        let mut session = Session::new(widest, &self.spec.limits, exchange);
        if self.plan.render.is_some() {
            session.capture_headers();
        }
        Box::new(session)
    }

    /// Issues visitor `v`'s next call (request `entry`, toward `origin`) as a stream of its
    /// connection there, opened if it holds none. False when that connection's streams are all
    /// taken: the call waits for one to end.
    pub(super) fn issue_stream(
        &mut self,
        v: usize,
        origin: usize,
        entry: u32,
        now: Instant,
    ) -> bool {
        let visitor = self.visitors[v].as_ref().expect("a live visitor");
        let held = visitor.slots.iter().copied().find(|s| self.slots[*s].origin == origin);
        let idx = match held {
            Some(idx) => idx,
            None => self.new_slot(v, origin),
        };
        let Some(s) = self.slots[idx].conn.h2.as_ref().and_then(|h| h.free_slot()) else {
            return false;
        };
        let own = match self.render_h2(v, now) {
            Ok(own) => own,
            Err(class) => {
                let visitor = self.visitors[v].as_ref().expect("a live visitor");
                let call = (visitor.burst, visitor.next);
                self.end_visit(v, now, Some((call, class.to_string())));
                return false;
            }
        };
        let (call, due, measured) = self.take_call(v);
        if measured && call == (0, 0) && self.schedule.is_some() {
            self.tally.timings.late.record(crate::exchange::us(now.saturating_duration_since(due)));
        }
        let head = self.spec.table.is_head(entry);
        let slot: &mut Slot = &mut self.slots[idx];
        if slot.calls.len() <= s {
            slot.calls.resize(s + 1, (0, 0));
            slot.paths.resize(s + 1, String::new());
        }
        slot.calls[s] = call;
        let session = slot.conn.h2.as_mut().expect("an HTTP/2 connection");
        session.slots[s].ex.begin(now, due, self.spec.timeout, measured, entry);
        match own {
            Some((block, body, path)) => {
                session.place_own(s, head, block, body);
                slot.paths[s] = path;
            }
            None => session.place(s, head),
        }
        self.pump(idx, now);
        true
    }

    /// A visit file's call over HTTP/2: visitor `v`'s next request as its own header block,
    /// body and path; `None` for other visits, whose requests are the table's.
    fn render_h2(&mut self, v: usize, now: Instant) -> Result<Option<Own>, &'static str> {
        let Some(render) = &self.plan.render else { return Ok(None) };
        let visitor = self.visitors[v].as_ref().expect("a live visitor");
        let call = &self.plan.visits[visitor.visit].bursts[visitor.burst].calls[visitor.next];
        let carry = visitor.carry.as_ref().expect("a visit file's visitor carries");
        let (mut block, mut body) = (Vec::new(), Vec::new());
        // As over HTTP/1.1 (`render`): a name without a value is its capture's failure.
        let path =
            carry.render_h2(render, call, now, &mut block, &mut body).map_err(|_| "capture")?;
        Ok(Some((block, body, path)))
    }

    /// Gets connection `idx`'s waiting streams moving: sends them once it is open, or opens
    /// it.
    fn pump(&mut self, idx: usize, now: Instant) {
        let conn = &mut self.slots[idx].conn;
        let Some(session) = conn.h2.as_mut() else { return };
        if conn.stream.is_none() {
            if session.pending() {
                let waiting = session.slots.iter().filter(|s| s.state == StreamState::Pending);
                let measured = waiting.into_iter().any(|s| s.ex.measured);
                conn.ex.measured = measured;
                if let Err(e) = self.connect(idx, now, measured) {
                    self.fail_io_streams(idx, &e, now);
                }
            }
            return;
        }
        if conn.state != State::Reading {
            return;
        }
        let (sent, bytes) = session.send(self.spec.table.h2s(), now);
        self.tally.sent += sent;
        self.tally.bytes_sent += bytes;
        self.flush(idx, now);
    }

    /// Writes connection `idx`'s queued frames as far as the socket takes them; the rest
    /// waits for the next writable event.
    fn flush(&mut self, idx: usize, now: Instant) {
        let conn = &mut self.slots[idx].conn;
        let (Some(stream), Some(session)) = (conn.stream.as_mut(), conn.h2.as_mut()) else {
            return;
        };
        while !session.output().is_empty() {
            match stream.write(session.output()) {
                Ok(0) => return self.fail_io_streams(idx, &io::ErrorKind::WriteZero.into(), now),
                Ok(n) => session.wrote(n),
                Err(e) if e.kind() == io::ErrorKind::WouldBlock => return,
                Err(e) if e.kind() == io::ErrorKind::Interrupted => {}
                Err(e) => return self.fail_io_streams(idx, &e, now),
            }
        }
    }

    pub(super) fn on_stream_event(&mut self, idx: usize, event: &Event, now: Instant) {
        let conn = &mut self.slots[idx].conn;
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
                    self.pump(idx, now);
                }
                Ok(false) => return,
                Err(e) => return self.fail_io_streams(idx, &e, now),
            },
            State::Reading => {}
            // No connection: an event left over from a socket already closed.
            _ => return,
        }
        if event.is_writable() {
            if let Err(e) = self.slots[idx].conn.flush_tls() {
                return self.fail_io_streams(idx, &e, now);
            }
        }
        if event.is_readable() || event.is_read_closed() || event.is_error() {
            self.read_frames(idx, now);
        }
        if self.slots[idx].conn.state == State::Reading {
            self.note_h2_handshake(idx, now);
        }
        if self.slots[idx].conn.state == State::Reading {
            self.flush(idx, now);
        }
    }

    /// Over TLS, once the handshake is over: its time, and whether the server chose h2 by
    /// ALPN (a server that did not cannot carry these streams).
    fn note_h2_handshake(&mut self, idx: usize, now: Instant) {
        let conn = &mut self.slots[idx].conn;
        if !conn.note_handshake(now) {
            return;
        }
        if self.negotiated.is_none() {
            self.negotiated = conn.negotiated();
        }
        let h2 = matches!(conn.stream.as_ref(), Some(Stream::Tls(t)) if t.alpn_h2());
        if !h2 {
            let reason = Reason { what: "the server did not select h2 by ALPN", code: None };
            return self.fail_streams(idx, ErrorClass::H2Conn, None, Some(reason), now);
        }
        if let Some(session) = conn.h2.as_mut() {
            session.sent_with_handshake(now);
        }
    }

    /// Reads what connection `idx` has, frame by frame, and settles the streams that ended.
    fn read_frames(&mut self, idx: usize, now: Instant) {
        loop {
            let conn = &mut self.slots[idx].conn;
            let (Some(stream), Some(session)) = (conn.stream.as_mut(), conn.h2.as_mut()) else {
                return;
            };
            // A short read drains a TCP socket; TLS hands out what it decrypted, which says
            // nothing of what the socket still holds, so it reads until told to wait.
            let drains = !matches!(stream, Stream::Tls(_));
            let n = match stream.read(&mut self.buf) {
                Ok(n) => n,
                Err(e) if e.kind() == io::ErrorKind::WouldBlock => break,
                Err(e) if e.kind() == io::ErrorKind::Interrupted => continue,
                Err(e) => return self.fail_io_streams(idx, &e, now),
            };
            if n == 0 {
                // The server closed it: open streams fail (`on_eof`); one that was idle is
                // opened again by the visitor's next call.
                session.on_eof();
                self.close(idx);
                self.slots[idx].conn.state = State::Idle;
                self.settle(idx, None, now);
                return self.reopen(idx, now);
            }
            if conn.tls_done.is_none() && matches!(stream, Stream::Tls(_)) {
                // Plaintext came, so the handshake is over: noted before what it carried.
                self.note_h2_handshake(idx, now);
                if self.slots[idx].conn.state != State::Reading {
                    return;
                }
            }
            let session = self.slots[idx].conn.h2.as_mut().expect("an HTTP/2 connection");
            if let Err(e) = session.feed(&self.buf[..n], now) {
                // Our GOAWAY goes out if it can before the connection closes.
                self.flush(idx, now);
                return self.fail_streams(idx, ErrorClass::H2Conn, None, Some(e.reason()), now);
            }
            self.settle(idx, None, now);
            if n < self.buf.len() && drains {
                break;
            }
        }
        let conn = &mut self.slots[idx].conn;
        if conn.h2.as_ref().is_some_and(|h| h.drained()) {
            // The server's GOAWAY let nothing more through and what it let through is
            // answered: its refused requests go on a new connection.
            self.close(idx);
            self.slots[idx].conn.state = State::Idle;
            self.reopen(idx, now);
        }
    }

    /// Connection `idx` ended in good order (the server's close, a GOAWAY drained): the
    /// requests a GOAWAY refused go on a new one, and so do the visitor's calls that waited
    /// for a stream while the GOAWAY allowed none.
    fn reopen(&mut self, idx: usize, now: Instant) {
        self.pump(idx, now);
        let v = self.slots[idx].visitor;
        // Within a burst (its first call issued), not while the visitor thinks.
        let waiting = |visitor: &super::Visitor| visitor.slots.contains(&idx) && visitor.next > 0;
        if self.visitors[v].as_ref().is_some_and(waiting) {
            self.issue(v, now);
        }
    }

    /// Records the streams of connection `idx` that ended and carries their visits on;
    /// `errno` is that of failures the socket reported. A visit that ends abandons the
    /// connection's other streams (`end_visit`), which ends the loop.
    fn settle(&mut self, idx: usize, errno: Option<i32>, now: Instant) {
        loop {
            let Some(session) = self.slots[idx].conn.h2.as_mut() else { return };
            let Some((s, outcome)) = session.done.pop_front() else { break };
            match outcome {
                Outcome::Complete => self.stream_completed(idx, s, now),
                Outcome::Failed(class, reason) => {
                    self.stream_failed(idx, s, class, errno, Some(reason), now)
                }
                Outcome::Refused => {
                    // It never reached the server's processing: its sending did not count.
                    let slot = &session.slots[s];
                    if slot.ex.measured {
                        self.tally.sent = self.tally.sent.saturating_sub(1);
                        self.tally.bytes_sent = self.tally.bytes_sent.saturating_sub(slot.wire);
                    }
                }
            }
        }
        // Streams the server's limit held back may go now that others ended.
        if self.slots[idx].conn.stream.is_some() {
            self.pump(idx, now);
        }
    }

    /// Stream slot `s` of connection `idx` was answered whole: recorded, judged, and its
    /// visit goes on.
    fn stream_completed(&mut self, idx: usize, s: usize, now: Instant) {
        let (v, call) = (self.slots[idx].visitor, self.slots[idx].calls[s]);
        if self.past_end(now) || self.visitors[v].is_none() {
            return;
        }
        let slot = &mut self.slots[idx];
        let tls = slot.conn.count_reply();
        let session = slot.conn.h2.as_mut().expect("an HTTP/2 connection");
        session.release(s);
        if self.server.is_none() {
            self.server = session.server.take();
        }
        let stream = &mut session.slots[s];
        let (status, body_len) = (stream.status, stream.body_len);
        let mut invalid = false;
        if stream.ex.measured {
            let recording = Recording {
                measure_start: self.spec.measure_start,
                validation: &self.spec.validation,
                scheduled: true,
            };
            let failed = self.tally.failed;
            stream.ex.record_completion(&mut self.tally, &recording, status, body_len, tls, now);
            invalid = self.tally.failed > failed;
            self.tally.keepalive += 1;
            self.last_event = now;
        }
        let verdict = if invalid {
            Err(ErrorClass::Validation.name())
        } else {
            let headers = std::mem::take(&mut stream.headers);
            let body = stream.ex.check.kept().unwrap_or_default();
            let answer = Response { status, headers: &headers, body };
            let path = self.plan.render.as_ref().map(|_| slot.paths[s].as_str());
            let visitor = self.visitors[v].as_mut().expect("a live visitor");
            judge(&self.plan, visitor, call, path, &answer, now)
        };
        self.answered(v, call, verdict, now);
    }

    /// Stream slot `s` of connection `idx` failed in `class` (with an errno, or an HTTP/2
    /// reason): recorded as a request, and its visit ends.
    fn stream_failed(
        &mut self,
        idx: usize,
        s: usize,
        class: ErrorClass,
        errno: Option<i32>,
        reason: Option<Reason>,
        now: Instant,
    ) {
        let (v, call) = (self.slots[idx].visitor, self.slots[idx].calls[s]);
        if self.past_end(now) || self.visitors[v].is_none() {
            return;
        }
        let slot = &mut self.slots[idx];
        let session = slot.conn.h2.as_mut().expect("an HTTP/2 connection");
        session.release(s);
        let ex = &mut session.slots[s].ex;
        if ex.measured {
            ex.record_failure(&mut self.tally, self.spec.measure_start, class, errno, now);
            if let Some(reason) = reason.filter(|r| !r.what.is_empty()) {
                *self.tally.errors.h2_reasons.entry(reason.to_string()).or_insert(0) += 1;
            }
            self.last_event = now;
        }
        self.call_failed(v, call, class, now);
    }

    /// A read, write, connect or TLS failure of connection `idx`: its streams fail.
    fn fail_io_streams(&mut self, idx: usize, e: &io::Error, now: Instant) {
        if let (Some(reason), true) = (crate::tls::reason(e), self.slots[idx].conn.ex.measured) {
            *self.tally.errors.tls_reasons.entry(reason.to_string()).or_insert(0) += 1;
        }
        self.fail_streams(idx, ErrorClass::from_io(e), e.raw_os_error(), None, now)
    }

    /// Connection `idx` failed: it closes, and every request on it (those waiting for it
    /// too) fails with `class`; the first failure ends the visit.
    fn fail_streams(
        &mut self,
        idx: usize,
        class: ErrorClass,
        errno: Option<i32>,
        reason: Option<Reason>,
        now: Instant,
    ) {
        let session = self.slots[idx].conn.h2.as_mut().expect("an HTTP/2 connection");
        session.fail_all(class, reason, true);
        session.disconnected();
        self.close(idx);
        self.slots[idx].conn.state = State::Idle;
        self.settle(idx, errno, now);
    }

    /// Fails what connection `idx` holds past its deadline: its connect, or a stream (reset
    /// with CANCEL, RFC 9113 section 8.7).
    pub(super) fn sweep_streams(&mut self, idx: usize, now: Instant) {
        let conn = &self.slots[idx].conn;
        if conn.state == State::Connecting && now >= conn.ex.deadline {
            return self.fail_streams(idx, ErrorClass::ConnectTimeout, None, None, now);
        }
        let Some(session) = conn.h2.as_ref() else { return };
        let late = session.slots.iter().position(|slot| {
            matches!(slot.state, StreamState::Pending | StreamState::Open)
                && now >= slot.ex.deadline
        });
        if let Some(s) = late {
            // One late call ends its visit, and the visit the connection's other streams.
            let session = self.slots[idx].conn.h2.as_mut().expect("an HTTP/2 connection");
            session.cancel(s);
            self.stream_failed(idx, s, ErrorClass::ClientTimeout, None, None, now);
        }
    }
}
