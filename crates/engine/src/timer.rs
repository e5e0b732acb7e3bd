//! A wake-up with microsecond precision for the open-loop schedule: a timerfd in the worker's
//! epoll set. epoll_wait's own timeout counts in whole milliseconds, which would make every
//! request up to a millisecond late at any rate; a timerfd armed at an absolute time does not.
//! Also what a wake-up on this path costs ([`Calibration`]), which sets how finely a run's
//! sends are grouped (`crate::sends`).

use std::io;
use std::os::fd::{AsFd, AsRawFd, OwnedFd};
use std::time::{Duration, Instant};

use mio::unix::SourceFd;
use mio::{Events, Interest, Poll, Registry, Token};

use crate::sends::WakeCost;
use crate::sys;

#[derive(Debug)]
pub(crate) struct Timer {
    fd: OwnedFd,
    /// One instant and the same moment on CLOCK_MONOTONIC (which `Instant` reads on Linux),
    /// to translate instants into the timespecs timerfd wants.
    base: Instant,
    base_ns: u128,
    armed: Option<Instant>,
}

impl Timer {
    pub fn new(registry: &Registry, token: Token) -> io::Result<Timer> {
        let fd = sys::monotonic_timerfd()?;
        registry.register(&mut SourceFd(&fd.as_raw_fd()), token, Interest::READABLE)?;
        // The kernel may delay a timer by the thread's slack (50 µs by default) to batch
        // wake-ups; an open-loop sender wants its due times, so ask for 1 µs.
        sys::set_timer_slack(1000);
        let base = Instant::now();
        Ok(Timer { fd, base, base_ns: sys::monotonic_ns(), armed: None })
    }

    /// Makes the timer fire at `at` (at once if `at` has passed). Re-arming resets the
    /// timerfd's expiry count, so the edge-triggered epoll entry fires again at the new time.
    pub fn arm(&mut self, at: Instant) -> io::Result<()> {
        if self.armed == Some(at) {
            return Ok(());
        }
        sys::arm_timerfd_at(self.fd.as_fd(), self.monotonic_ns(at))?;
        self.armed = Some(at);
        Ok(())
    }

    /// Records `at` as the next wake-up without setting the timerfd: for a caller that will
    /// sleep until it itself ([`Timer::sleep_until`]).
    pub fn expect(&mut self, at: Instant) {
        self.armed = Some(at);
    }

    /// When the timer will fire, if it is armed.
    pub fn armed(&self) -> Option<Instant> {
        self.armed
    }

    /// Sleeps until `at` without a wake-up for anything else (what became ready meanwhile is
    /// found by the next poll).
    pub fn sleep_until(&self, at: Instant) {
        sys::sleep_until(self.monotonic_ns(at));
    }

    /// `at` on CLOCK_MONOTONIC, in nanoseconds (an instant before the base is the base).
    #[inline]
    fn monotonic_ns(&self, at: Instant) -> u128 {
        self.base_ns + at.saturating_duration_since(self.base).as_nanos()
    }

    /// Called when the timer's event arrives: it is no longer armed.
    pub fn fired(&mut self) {
        self.armed = None;
    }
}

/// What one wake-up costs on the worker's timer path, measured on the calling thread as
/// bench/wake-cost.c does: [`ROUNDS`] rounds of [`WAKES`] sleeps of [`GAP`] each (about 6 ms
/// in all), the median round's CPU time per wake-up. The thread's own CPU account, not the
/// wall clock: other work on the machine delays a wake-up but does not add to what it costs
/// this thread; the median drops a round an interrupt or a migration disturbed.
pub(crate) struct Calibration {
    /// The worker sleeps until its sends (`clock_nanosleep`, see `worker::HARVEST`); otherwise
    /// it waits for the timerfd in epoll.
    pub sleeps: bool,
}

const ROUNDS: usize = 5;
const WAKES: u32 = 12;
/// Each sleep's length, from when the last one ended (so a late wake-up never leaves the next
/// due time passed, which would not sleep at all); long enough for an idle CPU to halt, as
/// it does between sends at 10,000 a second.
const GAP: Duration = Duration::from_micros(100);

impl WakeCost for Calibration {
    fn per_wake_up(&mut self) -> Duration {
        let Ok(mut poll) = Poll::new() else { return Duration::ZERO };
        let Ok(mut timer) = Timer::new(poll.registry(), Token(0)) else { return Duration::ZERO };
        let mut events = Events::with_capacity(2);
        let mut rounds = [Duration::ZERO; ROUNDS];
        for round in &mut rounds {
            let start = sys::CpuTime::thread();
            for _ in 0..WAKES {
                let at = Instant::now() + GAP;
                if self.sleeps {
                    timer.sleep_until(at);
                } else if timer.arm(at).is_ok() {
                    // Bounded: a timer that never fires costs this wait, not a hang.
                    let _ = poll.poll(&mut events, Some(GAP * 100));
                    timer.fired();
                }
            }
            *round = sys::CpuTime::thread().since(&start).total() / WAKES;
        }
        rounds.sort();
        rounds[ROUNDS / 2]
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use mio::{Events, Poll};
    use std::time::Duration;

    #[test]
    fn fires_at_the_armed_time_not_before() {
        let mut poll = Poll::new().unwrap();
        let mut timer = Timer::new(poll.registry(), Token(7)).unwrap();
        let mut events = Events::with_capacity(4);
        let start = Instant::now();
        let at = start + Duration::from_millis(20);
        timer.arm(at).unwrap();
        let mut fired = false;
        // Generous: a loaded machine may not schedule this thread for a while; only a timer
        // that never fires must fail, and early firing is checked below.
        while start.elapsed() < Duration::from_secs(30) && !fired {
            poll.poll(&mut events, Some(Duration::from_millis(100))).unwrap();
            fired = events.iter().any(|e| e.token() == Token(7));
        }
        assert!(fired, "timer never fired");
        assert!(Instant::now() >= at, "fired early");
    }

    /// A real wake-up costs something on either path, and far less than the sleep itself
    /// (generous bounds: the figure is the machine's, a loaded one's included).
    #[test]
    fn a_wake_up_costs_some_cpu_on_both_paths() {
        for sleeps in [true, false] {
            let cost = Calibration { sleeps }.per_wake_up();
            assert!(cost > Duration::ZERO && cost < Duration::from_millis(5), "{sleeps}: {cost:?}");
        }
    }
}
