//! The open loop's and the sessions' side of the worker: the schedule's arrivals dispatched
//! as they fall due, each on an idle keep-alive connection, a free slot or a new one (within
//! the connection bound), and slots given back when their request or session ends. Latency
//! counts from each arrival's due time, so an arrival that waits for a slot keeps counting.

use std::time::{Duration, Instant};

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
    /// Sends the scheduled arrivals due by `until`, as far as connections allow, and arms the
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
            let at = on_grid(due, self.spec.measure_start, self.spec.coalesce);
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
        if self.spec.protocol.is_h2() {
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
        if self.conns[idx].h2.is_some() {
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

/// The first point at or after `due` of the grid of `step` through `origin` (`due` itself
/// when `step` is zero): when a wake-up that coalesces sends may come.
fn on_grid(due: Instant, origin: Instant, step: Duration) -> Instant {
    if step.is_zero() {
        return due;
    }
    let step_ns = step.as_nanos();
    let past = match due.checked_duration_since(origin) {
        Some(d) => d.as_nanos(),
        // Before the grid's origin (the warm-up): on the same grid, counted backwards.
        None => {
            let before = origin.duration_since(due).as_nanos();
            return origin - Duration::from_nanos(((before / step_ns) * step_ns) as u64);
        }
    };
    let steps = past.div_ceil(step_ns);
    origin + Duration::from_nanos((steps * step_ns) as u64)
}

#[cfg(test)]
mod tests {
    use super::on_grid;
    use std::time::{Duration, Instant};

    #[test]
    fn send_wake_ups_fall_on_the_grid_and_never_before_the_due_time() {
        let origin = Instant::now() + Duration::from_secs(1);
        let ms = Duration::from_millis(1);
        let at = |us: u64| origin + Duration::from_micros(us);
        assert_eq!(on_grid(at(1), origin, ms), at(1_000));
        assert_eq!(on_grid(at(1_000), origin, ms), at(1_000), "a due time on the grid stays");
        assert_eq!(on_grid(at(2_001), origin, ms), at(3_000));
        assert_eq!(on_grid(at(2_001), origin, Duration::ZERO), at(2_001), "no grid");
        // In the warm-up, before the grid's origin: the grid extends backwards.
        let before = origin - Duration::from_micros(1_500);
        assert_eq!(on_grid(before, origin, ms), origin - ms);
        assert!(on_grid(before, origin, ms) >= before);
    }
}
