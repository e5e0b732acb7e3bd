//! HTTP/2 connections on the worker's loop: a slot is a connection whose requests are the
//! streams of its [`Session`](crate::h2::Session). The load models apply per stream: the
//! closed loop keeps every stream of every connection busy (connections x streams), the open
//! loop places each due request on a free stream of an open connection or opens a new one,
//! and a session's calls go out as streams of its own connection.
//!
//! Requests queued while the loop handles a batch of events are written together once the
//! batch is done (`flush_dirty`): one write for the HEADERS of every stream a read completed.

use std::io::{self, Read, Write};
use std::time::Instant;

use mio::event::Event;

use super::{Worker, BACKOFF};
use crate::conn::{State, Stream};
use crate::exchange::{second_of, Recording};
use crate::h2::{Outcome, Reason, StreamState};
use crate::pacing::Pacing;
use crate::ErrorClass;

impl Worker {
    /// Places requests on slot `idx`'s free streams: every free one in the closed loop (each
    /// taking from the budget), one for an open-loop arrival (`entry` when a replay's schedule
    /// names its request), and for a session its calls not yet started; then sends what the
    /// connection allows, or connects.
    pub(super) fn start_streams(
        &mut self,
        idx: usize,
        now: Instant,
        due: Instant,
        scheduled: bool,
        mut entry: Option<u32>,
    ) {
        let measured = due >= self.spec.measure_start;
        loop {
            let conn = &mut self.conns[idx];
            let Some(session) = conn.h2.as_mut() else { return };
            let Some(s) = session.free_slot() else { break };
            match self.spec.pacing {
                Pacing::Closed if measured && !self.budget.take() => {
                    self.budget_spent = true;
                    break;
                }
                Pacing::Sessions { .. } if conn.calls_unstarted == 0 => break,
                Pacing::Sessions { .. } => conn.calls_unstarted -= 1,
                _ => {}
            }
            let slot = &mut session.slots[s];
            let request = entry.take().unwrap_or_else(|| self.spec.picker.next());
            slot.ex.begin(now, due, self.spec.timeout, measured, request);
            session.place(s, self.spec.table.is_head(request));
            if measured && scheduled {
                self.record_late(now, due);
            }
            if matches!(self.spec.pacing, Pacing::Open { .. }) {
                break;
            }
        }
        let conn = &mut self.conns[idx];
        if self.budget_spent && conn.h2.as_ref().is_some_and(|h| h.in_flight() == 0) {
            // The closed loop's budget is spent and this connection has nothing left to do.
            self.close(idx);
            self.conns[idx].state = State::Idle;
            return;
        }
        self.pump(idx, now);
    }

    /// Gets slot `idx`'s waiting requests moving: sends them if its connection is open, or
    /// opens one.
    fn pump(&mut self, idx: usize, now: Instant) {
        let measured = now >= self.spec.measure_start;
        let conn = &mut self.conns[idx];
        let Some(session) = conn.h2.as_mut() else { return };
        if conn.stream.is_none() {
            if session.pending() && !matches!(conn.state, State::Backoff(_)) {
                conn.ex.measured = measured;
                if let Err(e) = self.open_connection(idx, now) {
                    let class = ErrorClass::from_io(&e);
                    self.fail_connection(idx, class, e.raw_os_error(), None, true, now);
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
        self.tally.series.at(second_of(self.spec.measure_start, now)).sent += sent;
        if !session.output().is_empty() && !self.dirty.contains(&idx) {
            self.dirty.push(idx);
        }
    }

    /// Writes what the connections touched in this loop turn have queued.
    pub(super) fn flush_dirty(&mut self, now: Instant) {
        while let Some(idx) = self.dirty.pop() {
            self.flush(idx, now);
        }
    }

    /// Writes slot `idx`'s queued frames as far as the socket takes them; the rest waits for
    /// the next writable event.
    fn flush(&mut self, idx: usize, now: Instant) {
        let conn = &mut self.conns[idx];
        let (Some(stream), Some(session)) = (conn.stream.as_mut(), conn.h2.as_mut()) else {
            return;
        };
        loop {
            let out = session.output();
            if out.is_empty() {
                return;
            }
            match stream.write(out) {
                Ok(0) => {
                    return self.fail_io_connection(idx, &io::ErrorKind::WriteZero.into(), now)
                }
                Ok(n) => session.wrote(n),
                Err(e) if e.kind() == io::ErrorKind::WouldBlock => return,
                Err(e) if e.kind() == io::ErrorKind::Interrupted => {}
                Err(e) => return self.fail_io_connection(idx, &e, now),
            }
        }
    }

    pub(super) fn on_multiplexed_event(&mut self, idx: usize, event: &Event, now: Instant) {
        let conn = &mut self.conns[idx];
        match conn.state {
            State::Connecting => match conn.finish_connect() {
                Ok(true) => {
                    self.connecting -= 1;
                    conn.state = State::Reading;
                    conn.ex.connected = now;
                    let session = conn.h2.as_mut().expect("a multiplexed slot");
                    session.connected();
                    for slot in session.slots.iter_mut().filter(|s| s.state == StreamState::Pending)
                    {
                        slot.ex.connected = now;
                    }
                    self.pump(idx, now);
                }
                Ok(false) => return,
                Err(e) => {
                    let class = ErrorClass::from_io(&e);
                    return self.fail_connection(idx, class, e.raw_os_error(), None, true, now);
                }
            },
            State::Reading => {}
            // No connection: an event left over from a socket already closed.
            _ => return,
        }
        if event.is_writable() {
            if let Err(e) = self.conns[idx].flush_tls() {
                return self.fail_io_connection(idx, &e, now);
            }
        }
        if event.is_readable() || event.is_read_closed() || event.is_error() {
            self.read_frames(idx, now);
        }
        if self.conns[idx].state == State::Reading {
            self.note_h2_handshake(idx, now);
        }
        if self.conns[idx].state == State::Reading {
            self.flush(idx, now);
        }
    }

    /// Over TLS, once the handshake is seen over: its time, and whether the server chose h2
    /// by ALPN (a server that did not cannot carry these requests).
    fn note_h2_handshake(&mut self, idx: usize, now: Instant) {
        let conn = &mut self.conns[idx];
        let (None, Some(Stream::Tls(t))) = (conn.tls_done, conn.stream.as_ref()) else { return };
        if !t.handshaken() {
            return;
        }
        let h2 = t.alpn_h2();
        conn.tls_done = Some(now);
        conn.tls_resumed = t.resumed();
        if self.negotiated.is_none() {
            self.negotiated = t.negotiated();
        }
        if !h2 {
            let reason = Reason { what: "the server did not select h2 by ALPN", code: None };
            return self.fail_connection(idx, ErrorClass::H2Conn, None, Some(reason), true, now);
        }
        if let Some(session) = conn.h2.as_mut() {
            session.sent_with_handshake(now);
        }
    }

    /// Reads what slot `idx`'s connection has, frame by frame, and settles the streams that
    /// ended.
    fn read_frames(&mut self, idx: usize, now: Instant) {
        loop {
            let conn = &mut self.conns[idx];
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
                Err(e) => return self.fail_io_connection(idx, &e, now),
            };
            if n == 0 {
                session.on_eof();
                self.close(idx);
                self.conns[idx].state = State::Idle;
                self.settle(idx, None, now);
                return self.reopen(idx, now);
            }
            if conn.tls_done.is_none() && matches!(stream, Stream::Tls(_)) {
                // Plaintext came, so the handshake is over: its time is noted before any
                // response it carried is recorded.
                self.note_h2_handshake(idx, now);
                if self.conns[idx].state != State::Reading {
                    return;
                }
            }
            let session = self.conns[idx].h2.as_mut().expect("a multiplexed slot");
            if let Err(e) = session.feed(&self.buf[..n], now) {
                // Our GOAWAY goes out if it can before the connection closes.
                self.flush(idx, now);
                let reason = Some(e.reason());
                return self.fail_connection(idx, ErrorClass::H2Conn, None, reason, false, now);
            }
            self.settle(idx, None, now);
            if n < self.buf.len() && drains {
                break;
            }
        }
        let conn = &mut self.conns[idx];
        if conn.h2.as_ref().is_some_and(|h| h.drained()) {
            // The server's GOAWAY let nothing more through and what it did let through is
            // answered: the connection is done; its refused requests go on a new one.
            self.close(idx);
            self.conns[idx].state = State::Idle;
            self.reopen(idx, now);
        }
    }

    /// Slot `idx`'s connection ended in good order (a GOAWAY, the server's close) with no
    /// request failed by it: the requests a GOAWAY sent back go on a new connection, and the
    /// load model goes on as if a stream had freed (a closed loop whose streams all ended
    /// would otherwise wait for nothing).
    fn reopen(&mut self, idx: usize, now: Instant) {
        self.pump(idx, now);
        match self.spec.pacing {
            Pacing::Closed => {
                if self.conns[idx].state == State::Idle && !self.restart.contains(&idx) {
                    self.restart.push(idx);
                }
            }
            Pacing::Open { .. } => self.offer(idx),
            Pacing::Sessions { .. } => {
                if self.conns[idx].calls_unstarted > 0 {
                    self.start_streams(idx, now, now, false, None);
                } else if self.conns[idx].h2.as_ref().is_some_and(|h| h.in_flight() == 0) {
                    self.release_connection(idx);
                }
            }
        }
    }

    /// Records the streams of slot `idx` that ended, and applies the load model to each;
    /// `errno` is that of failures the connection's socket reported.
    fn settle(&mut self, idx: usize, errno: Option<i32>, now: Instant) {
        loop {
            let Some(session) = self.conns[idx].h2.as_mut() else { return };
            let Some((s, outcome)) = session.done.pop_front() else { return };
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
    }

    fn stream_completed(&mut self, idx: usize, s: usize, now: Instant) {
        let recording = Recording {
            measure_start: self.spec.measure_start,
            validation: &self.spec.validation,
            scheduled: self.schedule.is_some(),
        };
        let conn = &mut self.conns[idx];
        let past_end = self.spec.end.is_some_and(|end| now >= end);
        let tls = if past_end { None } else { conn.count_reply() };
        let session = conn.h2.as_mut().expect("a multiplexed slot");
        session.release(s);
        let slot = &mut session.slots[s];
        if past_end {
            // Ended after the window: unfinished, as an HTTP/1.1 request still in flight.
            self.refused_at_end += u64::from(slot.ex.measured);
            return;
        }
        if self.spec.end.is_some() {
            slot.ex.measured = now >= self.spec.measure_start;
        }
        if self.server.is_none() {
            self.server = session.server.take();
        }
        if slot.ex.measured {
            let (status, body_len) = (slot.status, slot.body_len);
            slot.ex.record_completion(&mut self.tally, &recording, status, body_len, tls, now);
            self.tally.keepalive += 1;
            self.last_event = now;
        }
        self.next_after_stream(idx, now);
    }

    /// A request of slot `idx` failed in `class` (with an errno, or an HTTP/2 reason).
    fn stream_failed(
        &mut self,
        idx: usize,
        s: usize,
        class: ErrorClass,
        errno: Option<i32>,
        reason: Option<Reason>,
        now: Instant,
    ) {
        let session = self.conns[idx].h2.as_mut().expect("a multiplexed slot");
        session.release(s);
        let ex = &mut session.slots[s].ex;
        if self.spec.end.is_some_and(|end| now >= end) {
            self.refused_at_end += u64::from(ex.measured);
            return;
        }
        if self.spec.end.is_some() {
            ex.measured = now >= self.spec.measure_start;
        }
        if ex.measured {
            ex.record_failure(&mut self.tally, self.spec.measure_start, class, errno, now);
            if let Some(reason) = reason.filter(|r| !r.what.is_empty()) {
                let reasons = &mut self.tally.errors.h2_reasons;
                *reasons.entry(reason.to_string()).or_insert(0) += 1;
            }
            self.last_event = now;
        }
        if let Pacing::Sessions { .. } = self.spec.pacing {
            // A failed call ends its session, as in httperf: no more of its calls start.
            self.conns[idx].calls_unstarted = 0;
        }
        self.next_after_stream(idx, now);
    }

    /// A stream of slot `idx` is free again: what the load model does next.
    fn next_after_stream(&mut self, idx: usize, now: Instant) {
        match self.spec.pacing {
            // A failure starts its replacement on the next loop turn, never inside the code
            // that saw it fail (a dead connection would otherwise reconnect in a loop).
            Pacing::Closed if self.conns[idx].stream.is_none() => {
                if self.conns[idx].state == State::Idle && !self.restart.contains(&idx) {
                    self.restart.push(idx);
                }
            }
            Pacing::Closed => self.start_streams(idx, now, now, false, None),
            Pacing::Open { .. } => self.offer(idx),
            Pacing::Sessions { .. } => {
                let conn = &mut self.conns[idx];
                conn.calls_left = conn.calls_left.saturating_sub(1);
                if conn.calls_unstarted > 0 {
                    self.start_streams(idx, now, now, false, None);
                } else if conn.h2.as_ref().is_some_and(|h| h.in_flight() == 0) {
                    self.release_connection(idx);
                }
            }
        }
    }

    /// A read, write or TLS failure of slot `idx`'s connection: every request on it fails.
    fn fail_io_connection(&mut self, idx: usize, e: &io::Error, now: Instant) {
        if let (Some(reason), true) = (crate::tls::reason(e), now >= self.spec.measure_start) {
            let open = self.conns[idx].h2.as_ref().map_or(0, |h| h.in_flight()) as u64;
            *self.tally.errors.tls_reasons.entry(reason.to_string()).or_insert(0) += open;
        }
        self.fail_connection(idx, ErrorClass::from_io(e), e.raw_os_error(), None, true, now)
    }

    /// Slot `idx`'s connection failed: its open streams fail (and `pending` ones, which were
    /// waiting for it), it closes, and each failure is settled by the load model.
    fn fail_connection(
        &mut self,
        idx: usize,
        class: ErrorClass,
        errno: Option<i32>,
        reason: Option<Reason>,
        pending: bool,
        now: Instant,
    ) {
        if self.conns[idx].state == State::Connecting {
            self.connecting -= 1;
        }
        let session = self.conns[idx].h2.as_mut().expect("a multiplexed slot");
        session.fail_all(class, reason, pending);
        self.close(idx);
        self.conns[idx].state = match class {
            // The client ran out of descriptors or ports: rest before trying again.
            ErrorClass::FdUnavail | ErrorClass::AddrUnavail => State::Backoff(now + BACKOFF),
            _ => State::Idle,
        };
        self.settle(idx, errno, now);
        // Requests that were not failed (refused by a GOAWAY) wait for a new connection.
        if !pending {
            self.pump(idx, now);
        }
    }

    /// Fails the requests of slot `idx` past their deadline (an open stream is reset), its
    /// connect when that is late, and ends its rest after the client ran out of descriptors.
    pub(super) fn sweep_streams(&mut self, idx: usize, now: Instant) {
        match self.conns[idx].state {
            State::Connecting if now >= self.conns[idx].ex.deadline => {
                let class = ErrorClass::ConnectTimeout;
                return self.fail_connection(idx, class, None, None, true, now);
            }
            State::Backoff(at) if now >= at => {
                self.conns[idx].state = State::Idle;
                self.restart.push(idx);
                return;
            }
            _ => {}
        }
        let Some(session) = self.conns[idx].h2.as_ref() else { return };
        for s in 0..session.slots.len() {
            let session = self.conns[idx].h2.as_mut().expect("a multiplexed slot");
            let slot = &session.slots[s];
            if matches!(slot.state, StreamState::Free | StreamState::Ended)
                || now < slot.ex.deadline
            {
                continue;
            }
            session.cancel(s);
            if !self.dirty.contains(&idx) {
                self.dirty.push(idx);
            }
            self.stream_failed(idx, s, ErrorClass::ClientTimeout, None, None, now);
        }
    }

    /// Open loop: a slot for the next arrival, one with a free stream on a connection that
    /// takes new streams (or will once it connects), else a new connection. Sessions: a
    /// connection of their own.
    pub(super) fn take_stream_slot(&mut self) -> Option<usize> {
        if matches!(self.spec.pacing, Pacing::Open { .. }) {
            // The pool is pruned lazily: a slot whose streams filled up leaves it here.
            while let Some(&idx) = self.idle.last() {
                let conn = &self.conns[idx];
                if conn.h2.as_ref().is_some_and(|h| h.free_slot().is_some()) {
                    return Some(idx);
                }
                self.idle.pop();
                self.conns[idx].in_idle = false;
            }
        } else if let Some(idx) = self.free.pop() {
            return Some(idx);
        }
        if self.conns.len() >= self.spec.connections {
            return None;
        }
        let idx = self.add_slot();
        if matches!(self.spec.pacing, Pacing::Open { .. }) {
            self.offer(idx);
        }
        Some(idx)
    }

    /// Open loop: slot `idx` joins the pool of connections with a free stream if it has one.
    fn offer(&mut self, idx: usize) {
        let conn = &mut self.conns[idx];
        if !conn.in_idle && conn.h2.as_ref().is_some_and(|h| h.free_slot().is_some()) {
            conn.in_idle = true;
            self.idle.push(idx);
        }
    }

    /// Gives slot `idx` back: to the open loop's pool, or closed and freed after a session.
    pub(super) fn release_connection(&mut self, idx: usize) {
        if matches!(self.spec.pacing, Pacing::Open { .. }) {
            return self.offer(idx);
        }
        self.close(idx);
        self.conns[idx].state = State::Idle;
        self.free.push(idx);
    }

    /// A counted closed loop, as its window opens: the streams the warm-up left in flight
    /// count from the budget (see `adopt_warm_up`).
    pub(super) fn adopt_warm_up_streams(&mut self) {
        for conn in self.conns.iter_mut() {
            let Some(session) = conn.h2.as_mut() else { continue };
            for slot in session.slots.iter_mut() {
                if slot.state == StreamState::Free || slot.ex.measured {
                    continue;
                }
                if !self.budget.take() {
                    self.budget_spent = true;
                    return;
                }
                slot.ex.measured = true;
                self.tally.sent += u64::from(slot.state == StreamState::Open);
            }
        }
    }
}
