//! The closed loop's side of the worker: its slots started at once, the requests a warm-up
//! left in flight counted as the window opens, and stages (k6's ramping VUs) opening and
//! resting slots to follow the level over time.

use std::time::Instant;

use super::Worker;
use crate::conn::State;
use crate::pacing::Pacing;
use crate::slots::Slots;

impl Worker {
    /// The closed loop's slots start at once (under stages, every slot starts parked and the
    /// level opens what it asks for).
    pub(super) fn start_closed_loop(&mut self, now: Instant) {
        if self.spec.pacing != Pacing::Closed || self.visits.is_some() {
            return;
        }
        let start = if self.spec.levels.is_some() { 0 } else { self.conns.len() };
        self.parked.extend((start..self.conns.len()).rev());
        for idx in 0..start {
            self.start_request(idx, now, now);
        }
    }

    /// A counted closed loop, as its window opens: the requests the warm-up left in flight
    /// finish inside the window, using the server and the link there, so they count (from the
    /// budget) as what ends inside the window counts in a timed run. Left uncounted, they made
    /// the rate low by their share of the budget: 100 connections of 80 KB pages behind
    /// 100 Mbit/s gave 139 req/s over 1,000 requests with a 1 s warm-up, 147 without one.
    pub(super) fn adopt_warm_up(&mut self) {
        if self.spec.protocol != crate::Protocol::Http1 {
            return self.adopt_warm_up_streams();
        }
        for conn in self.conns.iter_mut().filter(|c| c.in_flight() && !c.ex.measured) {
            if !self.budget.take() {
                self.budget_spent = true;
                return;
            }
            conn.ex.measured = true;
            if conn.state == State::Reading {
                self.books.tally.sent += 1;
            }
        }
    }

    /// Closed-loop stages: opens parked slots up to the level at `now`, or marks slots to park
    /// when their request ends (a request in flight is never cut short). Each loop turn, which
    /// is at least every sweep tick.
    pub(super) fn follow_levels(&mut self, now: Instant) {
        let Some(levels) = &self.spec.levels else { return };
        let t = now.saturating_duration_since(self.spec.measure_start).as_secs_f64();
        let want = levels.at(t).min(self.conns.len());
        let active = self.conns.len() - self.parked.len() - self.to_park;
        if want > active {
            let mut more = want - active;
            // Slots marked to park but still busy stay on first: they need no new connection.
            let kept = more.min(self.to_park);
            self.to_park -= kept;
            more -= kept;
            for _ in 0..more {
                let Some(idx) = self.parked.pop() else { break };
                self.start_request(idx, now, now);
            }
        } else {
            self.to_park += active - want;
        }
    }

    /// A closed-loop slot above the level rests: its connection closes and it waits parked.
    pub(super) fn park(&mut self, idx: usize) {
        self.to_park -= 1;
        self.close(idx);
        self.conns[idx].state = State::Idle;
        self.parked.push(idx);
    }
}
