//! A wake-up with microsecond precision for the open-loop schedule: a timerfd in the worker's
//! epoll set. epoll_wait's own timeout counts in whole milliseconds, which would make every
//! request up to a millisecond late at any rate; a timerfd armed at an absolute time does not.

use std::io;
use std::os::fd::{AsFd, AsRawFd, OwnedFd};
use std::time::Instant;

use mio::unix::SourceFd;
use mio::{Interest, Registry, Token};

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
}
