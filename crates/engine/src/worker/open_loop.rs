//! The open loop's and the sessions' side of the worker: the schedule's arrivals dispatched
//! as they fall due, each on an idle keep-alive connection, a free slot or a new one (within
//! the connection bound), and slots given back when their request or session ends. Latency
//! counts from each arrival's due time, so an arrival that waits for a slot keeps counting.

use std::time::Instant;

use super::{Worker, HARVEST};
use crate::conn::State;
use crate::pacing::Pacing;
use crate::slots::Slots;

/// Connects one worker may have in progress while it catches up on a schedule it fell behind.
/// Starting every overdue arrival at once would open thousands of sockets in one burst, and the
/// kernel's search for free local ports then costs more than the requests (measured: 6.9k
/// new connections/s achieved with the burst, 13.8k without). Late arrivals wait here and keep
/// their due times, so their latency still counts from when they were due.
const MAX_CONNECTING: usize = 64;

impl Worker {
    /// Sends the scheduled arrivals due by `until` (and, grouping sends, those due within the
    /// window after it: [`crate::Sends::send_by`]), as far as connections allow, and arms the
    /// timer for the next one.
    pub(super) fn dispatch(&mut self, now: Instant, until: Instant) {
        let Some(schedule) = self.schedule.as_ref() else { return };
        if self.budget_spent || self.visits.is_some() {
            return;
        }
        let Some(mut due) = schedule.peek() else {
            // A replay sent its last line: the run ends when what is in flight does.
            self.budget_spent = true;
            return;
        };
        let until = self.spec.sends.send_by(until, self.spec.end);
        while due <= until {
            if self.idle.is_empty() && self.connecting >= MAX_CONNECTING {
                // The next arrival needs a new connection and enough are being made: wait for
                // one of them (its event wakes the loop).
                return;
            }
            let Some(idx) = self.take_slot() else {
                // Every connection is busy and no more may be opened: the arrival waits, and
                // its latency keeps counting from its due time. A completion wakes us.
                return;
            };
            if due >= self.spec.measure_start && !self.budget.take() {
                self.budget_spent = true;
                self.schedule_end = Some(due);
                self.release(idx);
                return;
            }
            let schedule = self.schedule.as_mut().expect("dispatch has a schedule");
            let (this, entry) = schedule.pop();
            let next = schedule.peek();
            self.books.arrival_due(self.spec.measure_start, this);
            if let Pacing::Sessions { calls, .. } = self.spec.pacing {
                self.conns[idx].calls_left = calls;
                self.conns[idx].calls_unstarted = calls;
            }
            self.start_scheduled(idx, now, this, entry);
            match next {
                Some(next) => due = next,
                None => {
                    self.budget_spent = true;
                    return;
                }
            }
        }
        if let Some(timer) = self.timer.as_mut() {
            // Should arming ever fail, the sweep tick still dispatches, only later; the
            // lateness is then measured and reported like any other.
            let after = match self.spec.sends {
                crate::Sends::Grouped(_) => self.schedule.as_ref().and_then(|s| s.peek_after()),
                crate::Sends::Exact | crate::Sends::Grid(_) => None,
            };
            let at = self.spec.sends.wake_at(due, after, self.spec.measure_start);
            if self.stamped && at.saturating_duration_since(now) <= HARVEST {
                // The loop will sleep until it (see `run`): no timerfd to set.
                timer.expect(at);
            } else {
                let _ = timer.arm(at);
            }
        }
    }

    /// A slot for the next arrival: an idle keep-alive connection, a free slot, or a new one.
    pub(super) fn take_slot(&mut self) -> Option<usize> {
        if self.spec.protocol != crate::Protocol::Http1 {
            return self.take_stream_slot();
        }
        if let Some(idx) = self.idle.pop() {
            return Some(idx);
        }
        if let Some(idx) = self.free.pop() {
            return Some(idx);
        }
        (self.conns.len() < self.spec.connections).then(|| self.add_slot())
    }

    /// Gives a slot back after its request or session ended (open loop and sessions).
    pub(super) fn release(&mut self, idx: usize) {
        if self.conns[idx].multiplexed() {
            return self.release_connection(idx);
        }
        let conn = &mut self.conns[idx];
        conn.state = State::Idle;
        if conn.stream.is_some() && matches!(self.spec.pacing, Pacing::Open { .. }) {
            self.idle.push(idx);
        } else {
            self.close(idx);
            self.free.push(idx);
        }
    }

    /// Starts a scheduled arrival: its lateness (send time minus due time) is recorded. A
    /// replay's schedule says which request it is (`entry`); otherwise the picker does.
    pub(super) fn start_scheduled(
        &mut self,
        idx: usize,
        now: Instant,
        due: Instant,
        entry: Option<u32>,
    ) {
        self.start(idx, now, due, true, entry)
    }
}
