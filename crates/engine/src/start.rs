//! The start of a run at a wall-clock time agreed with other hosts (one test from several,
//! `--agents`): the run sleeps until then after its setup, and its clock's origin is that
//! time, not the moment its thread woke.
//!
//! Why the origin and not the wake-up: on a busy machine the scheduler can run a woken thread
//! milliseconds late (a run queue of other processes; the timer slack adds up to 50 µs more
//! unless lowered). Had each host started its schedule when it woke, a late host's whole
//! schedule would be shifted against the others' for the entire run. With the origin at the
//! agreed time, every host's arrival k is due at the same instant; a late wake-up only makes
//! this host's first arrivals late, which the open loop measures and counts in their latency
//! exactly as on a single host. The lateness itself is reported ([`Started::late`]).

use std::time::{Duration, Instant, SystemTime};

use crate::sys;

/// The last stretch before the start is spun rather than slept: a sleep can overshoot by the
/// scheduler's delay, a spin only by a preemption.
const SPIN: Duration = Duration::from_micros(200);

/// The run's origin on both clocks, and how late its thread woke.
#[derive(Debug, Clone, Copy)]
pub(crate) struct Started {
    pub origin: Instant,
    pub wall: SystemTime,
    pub late: Duration,
}

/// Sleeps until the wall clock reads `at`; the origin is `at` on the monotonic clock. A time
/// already past is not waited for: the origin is still `at`, and the lateness says how far
/// back it lies.
pub(crate) fn at(at: SystemTime) -> Started {
    sys::set_timer_slack(1000);
    if let Ok(ahead) = at.duration_since(SystemTime::now()) {
        if let Some(sleep) = ahead.checked_sub(SPIN) {
            std::thread::sleep(sleep);
        }
        while SystemTime::now() < at {
            std::hint::spin_loop();
        }
    }
    // Both clocks read together: the monotonic origin is the wall clock's `at`, set back by
    // the lateness just measured.
    let (now, wall) = (Instant::now(), SystemTime::now());
    let late = wall.duration_since(at).unwrap_or_default();
    Started { origin: now.checked_sub(late).unwrap_or(now), wall: at, late }
}

/// A run started when it is set up.
pub(crate) fn now() -> Started {
    Started { origin: Instant::now(), wall: SystemTime::now(), late: Duration::ZERO }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_origin_is_the_agreed_time_even_when_it_has_passed() {
        let past = SystemTime::now() - Duration::from_millis(50);
        let s = at(past);
        assert!(s.late >= Duration::from_millis(50), "{:?}", s.late);
        assert_eq!(s.wall, past);
        // The monotonic origin lies back by the lateness (within the two clock reads).
        let back = Instant::now().duration_since(s.origin);
        assert!(back >= Duration::from_millis(50), "{back:?}");
    }

    #[test]
    fn a_future_start_is_waited_for() {
        let ahead = SystemTime::now() + Duration::from_millis(30);
        let s = at(ahead);
        assert!(SystemTime::now() >= ahead);
        assert_eq!(s.wall, ahead);
        assert!(Instant::now() >= s.origin);
    }
}
