//! When the open loop's and the sessions' sends go out against their due times: what a run
//! asks for ([`Coalesce`]), what it settles before its clock starts ([`Sends`], from the
//! machine's own wake-up cost, [`WakeCost`]), and the two things a worker asks of it: how far
//! past a wake-up it sends ([`Sends::send_by`]) and when it wakes next ([`Sends::wake_at`]).
//!
//! Why a window at all: each wake-up of a sleeping thread costs it CPU (on a VM whose idle
//! CPUs halt, tens of microseconds: bench/wake-cost.sh), so a send per wake-up costs that much
//! per request. Waking once for two sends due closer together than that cost buys nothing the
//! machine could deliver anyway: the second wake-up would still be under way when its send is
//! due. So a run groups what falls within one wake-up's cost, and no coarser.

use std::time::{Duration, Instant};

/// What `--coalesce` asks of the sends.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum Coalesce {
    /// Measure the wake-up cost before the run and group the sends due within it.
    #[default]
    Auto,
    /// Each arrival at its own due time, one wake-up each (`--coalesce 0`).
    Exact,
    /// Wake-ups on a grid of this step, each sending all that is due by then, up to a step
    /// late (wrk2's 1 ms timer: `--coalesce 1ms`).
    Grid(Duration),
}

impl Coalesce {
    /// `--coalesce D`: a grid, or exact sends for zero.
    pub fn step(step: Duration) -> Coalesce {
        if step.is_zero() {
            Coalesce::Exact
        } else {
            Coalesce::Grid(step)
        }
    }

    /// The grid's step, if one was asked for.
    pub fn grid(&self) -> Option<Duration> {
        match *self {
            Coalesce::Grid(step) => Some(step),
            Coalesce::Auto | Coalesce::Exact => None,
        }
    }

    /// The sends a run settles on: automatic grouping measures `cost` (a few milliseconds);
    /// the others take what they were told.
    pub fn settle(self, cost: &mut dyn WakeCost) -> Sends {
        match self {
            Coalesce::Exact => Sends::Exact,
            Coalesce::Grid(step) => Sends::Grid(step),
            Coalesce::Auto => {
                // Whole microseconds, as the window is reported; below one, nothing to group.
                let cost = Duration::from_micros(cost.per_wake_up().as_micros() as u64);
                match cost.min(MAX_WINDOW) {
                    w if w.is_zero() => Sends::Exact,
                    w => Sends::Grouped(w),
                }
            }
        }
    }
}

/// The widest window automatic grouping takes, whatever a wake-up measured: a calibration
/// disturbed by the machine's other work (an interrupt storm, a neighbour's burst) must not
/// turn the grid coarse. 100 µs is a tenth of the lateness a kept schedule allows (1 ms), and
/// what this project holds the grouped p99 to against exact sends.
pub const MAX_WINDOW: Duration = Duration::from_micros(100);

/// How a run's sends went out, as settled before its clock started.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Sends {
    /// Each arrival at its own due time.
    Exact,
    /// On a grid of this step: up to a step late.
    Grid(Duration),
    /// Sends within this window either side of a wake-up go with it: the machine's wake-up
    /// cost, measured at start.
    Grouped(Duration),
}

impl Sends {
    /// A run's name for it, as its report says it (`exact`, `grid`, `grouped`).
    pub fn name(&self) -> &'static str {
        match self {
            Sends::Exact => "exact",
            Sends::Grid(_) => "grid",
            Sends::Grouped(_) => "grouped",
        }
    }

    /// How far off its due time a send may go by this choice (the grid's step late, the
    /// window late or early); zero for exact sends. The machine's own lateness comes on top and is
    /// measured (`late`).
    pub fn window(&self) -> Duration {
        match *self {
            Sends::Exact => Duration::ZERO,
            Sends::Grid(d) | Sends::Grouped(d) => d,
        }
    }

    /// A wake-up at `now` sends what is due by this time: what falls within the window goes
    /// early, with it, but never past a timed run's `end` (what is due after it is not the
    /// run's).
    ///
    /// Early and late: a wake-up comes halfway between two arrivals that fit in the window
    /// either side of it ([`Sends::wake_at`]), so one wake-up serves a span of twice the
    /// window, and a lone arrival still goes at its own due time (always waking a window
    /// late instead would add that to every lone arrival's latency for nothing). A late send
    /// counts its latency from its due time, its wait included, as always. An early send
    /// must not make latency look better than it is, so its latency counts from its send,
    /// not from its due time (the exchange's `begin`): for it the corrected and the
    /// uncorrected latency are one, the server's own, and its lateness is zero. Over any span longer than the window the server sees the
    /// offered rate; within one it may see a group at once, as it would from that many
    /// clients.
    #[inline]
    pub(crate) fn send_by(&self, now: Instant, end: Option<Instant>) -> Instant {
        match *self {
            Sends::Grouped(w) => {
                let by = now + w;
                end.map_or(by, |end| by.min(end - Duration::from_nanos(1)))
            }
            Sends::Exact | Sends::Grid(_) => now,
        }
    }

    /// When to wake for the next arrival, due at `due` (and the one after it at `after`, when
    /// known): at it (exact), at the grid's next point through `origin`, or, grouping, halfway
    /// to the one after when both fit in the window either side of a wake-up, each then off
    /// its due time by at most the window (the first late, its latency counting from its due
    /// time; the second early, counting from its send).
    #[inline]
    pub(crate) fn wake_at(&self, due: Instant, after: Option<Instant>, origin: Instant) -> Instant {
        match *self {
            Sends::Grid(step) => on_grid(due, origin, step),
            Sends::Grouped(w) => match after.map(|a| a.saturating_duration_since(due)) {
                Some(gap) if gap <= 2 * w => due + gap / 2,
                _ => due,
            },
            Sends::Exact => due,
        }
    }
}

/// What one wake-up of a sleeping thread costs it in CPU time on this machine: measured
/// (`timer::Calibration`) or, in tests, told.
pub trait WakeCost {
    fn per_wake_up(&mut self) -> Duration;
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
    use super::*;

    /// A wake-up cost as told, counting how often it was asked.
    struct Told(Duration, u32);

    impl WakeCost for Told {
        fn per_wake_up(&mut self) -> Duration {
            self.1 += 1;
            self.0
        }
    }

    #[test]
    fn automatic_sends_group_within_the_measured_cost_and_the_others_measure_nothing() {
        let us = Duration::from_micros;
        let mut cost = Told(Duration::from_nanos(38_400), 0);
        assert_eq!(Coalesce::Auto.settle(&mut cost), Sends::Grouped(us(38)));
        assert_eq!(Coalesce::step(Duration::ZERO).settle(&mut cost), Sends::Exact);
        let grid = Coalesce::step(Duration::from_millis(1)).settle(&mut cost);
        assert_eq!((grid, grid.window()), (Sends::Grid(us(1_000)), us(1_000)));
        assert_eq!(cost.1, 1, "only the automatic choice measures");
        // A disturbed calibration does not make the grid coarse; none below 1 µs.
        assert_eq!(Coalesce::Auto.settle(&mut Told(us(900), 0)), Sends::Grouped(MAX_WINDOW));
        assert_eq!(Coalesce::Auto.settle(&mut Told(Duration::from_nanos(400), 0)), Sends::Exact);
    }

    /// The worker's dispatch, simulated on a wake-up that comes exactly when asked: each
    /// wake-up sends what `send_by` allows, then sleeps until `wake_at` of the next arrival.
    /// Returns each arrival's send time minus its due time (ns, negative: early) and the
    /// wake-ups taken.
    fn simulate(sends: Sends, due: &[Instant], end: Option<Instant>) -> (Vec<i128>, usize) {
        let origin = due[0];
        let (mut off, mut wakes, mut next) = (Vec::new(), 0, 0);
        while next < due.len() {
            let now = sends.wake_at(due[next], due.get(next + 1).copied(), origin);
            wakes += 1;
            let by = sends.send_by(now, end);
            while next < due.len() && due[next] <= by.max(now) {
                let signed = now.saturating_duration_since(due[next]).as_nanos() as i128
                    - due[next].saturating_duration_since(now).as_nanos() as i128;
                off.push(signed);
                next += 1;
            }
        }
        (off, wakes)
    }

    /// Arrivals with gaps of 5 to 95 µs, in a fixed irregular pattern (a Poisson process's
    /// spread, repeatably).
    fn arrivals(n: usize) -> Vec<Instant> {
        let t0 = Instant::now() + Duration::from_secs(1);
        let mut at = t0;
        (0..n)
            .map(|k| {
                at += Duration::from_micros(5 + (k as u64 * 37) % 91);
                at
            })
            .collect()
    }

    #[test]
    fn grouping_never_sends_more_than_the_window_off_its_due_time() {
        let due = arrivals(2_000);
        let window = Duration::from_micros(38);
        let (off, wakes) = simulate(Sends::Grouped(window), &due, None);
        assert_eq!(off.len(), due.len());
        let w = window.as_nanos() as i128;
        assert!(off.iter().all(|&o| (-w..=w).contains(&o)), "within the window either side");
        assert!(off.iter().any(|&o| o < 0) && off.iter().any(|&o| o > 0), "early and late");
        assert!(wakes < due.len() * 3 / 5, "{wakes} wake-ups for {} sends", due.len());
        // Arrivals further apart than twice the window go each at its own due time.
        let sparse: Vec<Instant> = (1..100).map(|k| due[0] + window * 3 * k).collect();
        let (off, wakes) = simulate(Sends::Grouped(window), &sparse, None);
        assert!(off.iter().all(|&o| o == 0) && wakes == sparse.len());
        // Exact sends: one wake-up each, at its due time.
        let (off, wakes) = simulate(Sends::Exact, &due, None);
        assert!(off.iter().all(|&o| o == 0));
        assert_eq!(wakes, due.len());
        // A grid is late only, by up to its step.
        let step = Duration::from_micros(200);
        let (off, _) = simulate(Sends::Grid(step), &due, None);
        assert!(off.iter().all(|&o| (0..=step.as_nanos() as i128).contains(&o)));
    }

    #[test]
    fn nothing_due_after_a_timed_runs_end_goes_early() {
        let due = arrivals(10);
        let end = due[5] + Duration::from_nanos(1);
        let sends = Sends::Grouped(Duration::from_millis(1));
        assert!(sends.send_by(due[4], Some(end)) < end);
        assert_eq!(sends.send_by(due[4], None), due[4] + Duration::from_millis(1));
        assert_eq!(Sends::Exact.send_by(due[4], Some(end)), due[4]);
    }

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
