//! HTTP/2 connections on the worker's loop: a slot is a connection whose requests are the
//! streams of its [`Session`](crate::h2::Session). The load models apply per stream: the
//! closed loop keeps every stream of every connection busy (connections x streams), the open
//! loop places each due request on a free stream of an open connection or opens a new one,
//! and a session's calls go out as streams of its own connection (a visitor's calls, see
//! `visits::streams`). The connection itself (reads, writes, handshake, failure) is
//! [`Multiplexed`]'s.
//!
//! Requests queued while the loop handles a batch of events are written together once the
//! batch is done (`flush_dirty`): one write for the HEADERS of every stream a read completed.

use std::io;
use std::time::Instant;

use super::Worker;
use crate::conn::State;
use crate::h2::StreamState;
use crate::multiplexed::{Failure, Multiplexed};
use crate::over_quic::OverQuic;
use crate::pacing::Pacing;
use crate::slots::Slots;

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
            let Some(free) = conn.mux().map(|m| m.free_slot()) else { return };
            let Some(s) = free else { break };
            match self.spec.pacing {
                Pacing::Closed if measured && !self.budget.take() => {
                    self.budget_spent = true;
                    break;
                }
                Pacing::Sessions { .. } if conn.calls_unstarted == 0 => break,
                Pacing::Sessions { .. } => conn.calls_unstarted -= 1,
                _ => {}
            }
            let mut mux = conn.mux().expect("a multiplexed slot");
            let request = entry.take().unwrap_or_else(|| self.spec.picker.next());
            mux.slot(s).1.begin(now, due, self.spec.timeout, measured, request);
            mux.place(s, self.spec.table.is_head(request));
            if measured && scheduled {
                self.record_late(now, due);
            }
            if matches!(self.spec.pacing, Pacing::Open { .. }) {
                break;
            }
        }
        if self.budget_spent && self.conns[idx].streams_in_flight() == Some(0) {
            // The closed loop's budget is spent and this connection has nothing left to do.
            self.close(idx);
            self.conns[idx].state = State::Idle;
            return;
        }
        if self.conns[idx].h3.is_some() {
            self.pump_h3(idx, now);
        } else {
            self.pump(idx, now);
        }
    }

    /// Writes what the connections touched in this loop turn have queued.
    pub(super) fn flush_dirty(&mut self, now: Instant) {
        while let Some(idx) = self.dirty.pop() {
            if self.conns[idx].h3.is_some() {
                self.transmit(idx, now);
            } else {
                self.flush(idx, now);
            }
        }
    }

    /// A stream of slot `idx` is free again: what the load model does next.
    fn next_after_stream(&mut self, idx: usize, now: Instant) {
        match self.spec.pacing {
            // A failure starts its replacement on the next loop turn, never inside the code
            // that saw it fail (a dead connection would otherwise reconnect in a loop).
            Pacing::Closed if !self.conns[idx].has_connection() => {
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
                } else if conn.streams_in_flight() == Some(0) {
                    self.release_connection(idx);
                }
            }
        }
    }

    /// Stream `s` of slot `idx` ended after the window: unfinished, as an HTTP/1.1 request
    /// still in flight.
    fn unfinished_at_end(&mut self, idx: usize, s: usize) {
        let mut mux = self.conns[idx].mux().expect("a multiplexed slot");
        mux.release(s);
        self.refused_at_end += u64::from(mux.slot(s).1.measured);
    }

    /// A timed run counts what ends inside its window (see `count_by_end`), streams too.
    fn count_stream_by_end(&mut self, idx: usize, s: usize, now: Instant) {
        if self.spec.end.is_some() {
            let mut mux = self.conns[idx].mux().expect("a multiplexed slot");
            mux.slot(s).1.measured = now >= self.spec.measure_start;
        }
    }

    /// Open loop: a slot for the next arrival, one with a free stream on a connection that
    /// takes new streams (or will once it connects), else a new connection. Sessions: a
    /// connection of their own.
    pub(super) fn take_stream_slot(&mut self) -> Option<usize> {
        if matches!(self.spec.pacing, Pacing::Open { .. }) {
            // The pool is pruned lazily: a slot whose streams filled up leaves it here.
            while let Some(&idx) = self.idle.last() {
                if self.conns[idx].mux().is_some_and(|m| m.free_slot().is_some()) {
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
        if !conn.in_idle && conn.mux().is_some_and(|m| m.free_slot().is_some()) {
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
            let Some(mut mux) = conn.mux() else { continue };
            for s in 0..mux.len() {
                let (state, ex) = mux.slot(s);
                if state == StreamState::Free || ex.measured {
                    continue;
                }
                if !self.budget.take() {
                    self.budget_spent = true;
                    return;
                }
                ex.measured = true;
                self.books.tally.sent += u64::from(state == StreamState::Open);
            }
        }
    }
}

/// What a stream's outcome means is the load's: the visits' (`visits::streams`) or the
/// request loop's pacing.
impl Multiplexed for Worker {
    fn open_h2(&mut self, idx: usize, now: Instant) -> io::Result<()> {
        if self.visits.is_some() {
            return self.open_visit_h2(idx, now);
        }
        self.conns[idx].ex.measured = now >= self.spec.measure_start;
        self.open_connection(idx, now)
    }

    /// Written with the other connections' at the end of the loop turn (`flush_dirty`).
    fn queued(&mut self, idx: usize, _now: Instant) {
        if !self.dirty.contains(&idx) {
            self.dirty.push(idx);
        }
    }

    fn settled(&mut self, idx: usize, now: Instant) {
        if self.visits.is_some() {
            self.visit_streams_settled(idx, now);
        }
    }

    fn stream_completed(&mut self, idx: usize, s: usize, now: Instant) {
        if self.visits.is_some() {
            return self.visit_stream_completed(idx, s, now);
        }
        if self.past_end(now) {
            return self.unfinished_at_end(idx, s);
        }
        self.count_stream_by_end(idx, s, now);
        self.record_stream(idx, s, self.schedule.is_some(), now);
        self.next_after_stream(idx, now);
    }

    fn stream_failed(&mut self, idx: usize, s: usize, failure: Failure, now: Instant) {
        if self.visits.is_some() {
            return self.visit_stream_failed(idx, s, failure, now);
        }
        if self.past_end(now) {
            return self.unfinished_at_end(idx, s);
        }
        self.count_stream_by_end(idx, s, now);
        self.record_stream_failure(idx, s, failure, now);
        if let Pacing::Sessions { .. } = self.spec.pacing {
            // A failed call ends its session, as in httperf: no more of its calls start.
            self.conns[idx].calls_unstarted = 0;
        }
        self.next_after_stream(idx, now);
    }

    /// The requests a GOAWAY sent back go on a new connection, and the load model goes on as
    /// if a stream had freed (a closed loop whose streams all ended would otherwise wait for
    /// nothing).
    fn reopen(&mut self, idx: usize, now: Instant) {
        if self.visits.is_some() {
            return self.reopen_visit(idx, now);
        }
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
}
