//! Open-loop arrival schedules: when each request (or session) is due.
//!
//! A schedule is a generator, not a queue: requests that are due but could not be sent yet
//! (every connection busy) are simply the generator not advanced yet. So a server that falls
//! behind costs no memory, and each late request keeps its own due time, from which its
//! latency is measured (the correction for coordinated omission that wrk2 introduced).

use std::time::{Duration, Instant};

use rand::rngs::SmallRng;
use rand::{Rng, SeedableRng};

/// How arrivals are spaced.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Arrival {
    /// Evenly: one every 1/rate seconds.
    Fixed,
    /// A Poisson process: exponentially distributed gaps with mean 1/rate, as independent users
    /// arrive.
    Poisson,
}

/// The due times of one worker's share of the load.
#[derive(Debug)]
pub(crate) struct Schedule {
    origin: Instant,
    /// Mean gap between arrivals for this worker, in nanoseconds.
    gap_ns: f64,
    arrival: Arrival,
    rng: SmallRng,
    /// Arrivals popped so far.
    popped: u64,
    /// The first due time, in nanoseconds after `origin`.
    first_ns: f64,
    /// The next due time, in nanoseconds after `origin`.
    next_ns: f64,
}

impl Schedule {
    /// Worker `index` of `workers` sharing `rate` arrivals per second from `origin`. With fixed
    /// spacing the workers' arrivals interleave (worker i takes arrivals i, i+W, i+2W, ...), so
    /// the merged stream is as even as one worker's would be.
    pub fn new(
        rate: f64,
        arrival: Arrival,
        origin: Instant,
        index: usize,
        workers: usize,
        seed: u64,
    ) -> Schedule {
        let total_gap_ns = 1e9 / rate;
        let gap_ns = total_gap_ns * workers as f64;
        let mut rng =
            SmallRng::seed_from_u64(seed ^ (index as u64).wrapping_mul(0x9E37_79B9_7F4A_7C15));
        let first_ns = match arrival {
            Arrival::Fixed => total_gap_ns * index as f64,
            Arrival::Poisson => exponential(&mut rng, gap_ns),
        };
        Schedule { origin, gap_ns, arrival, rng, popped: 0, first_ns, next_ns: first_ns }
    }

    /// When the next arrival is due.
    #[inline]
    pub fn peek(&self) -> Instant {
        self.origin + Duration::from_nanos(self.next_ns as u64)
    }

    /// Takes the next arrival and returns its due time.
    #[inline]
    pub fn pop(&mut self) -> Instant {
        let due = self.peek();
        self.popped += 1;
        match self.arrival {
            // From the count, not by adding gaps, so rounding never accumulates.
            Arrival::Fixed => self.next_ns = self.first_ns + self.gap_ns * self.popped as f64,
            Arrival::Poisson => self.next_ns += exponential(&mut self.rng, self.gap_ns),
        }
        due
    }

    /// Counts (and takes) the arrivals due in `[from, end)`: at the end of a run these are the
    /// requests that were due but never sent.
    pub fn drain_before(&mut self, from: Instant, end: Instant) -> u64 {
        let mut n = 0;
        // Bounded: a schedule has at most rate x duration arrivals before its end.
        while self.peek() < end {
            n += u64::from(self.pop() >= from);
        }
        n
    }
}

/// An exponential variate with the given mean, by inversion: -ln(U) * mean.
fn exponential(rng: &mut SmallRng, mean: f64) -> f64 {
    // 1 - U lies in (0, 1], so the logarithm is finite.
    let u: f64 = 1.0 - rng.random::<f64>();
    -u.ln() * mean
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn fixed_schedule_is_exact_and_workers_interleave() {
        let t0 = Instant::now();
        let mut a = Schedule::new(1000.0, Arrival::Fixed, t0, 0, 2, 1);
        let mut b = Schedule::new(1000.0, Arrival::Fixed, t0, 1, 2, 1);
        let mut all: Vec<Duration> = Vec::new();
        for _ in 0..500 {
            all.push(a.pop() - t0);
            all.push(b.pop() - t0);
        }
        all.sort();
        for (k, d) in all.iter().enumerate() {
            assert_eq!(d.as_micros(), k as u128 * 1000, "arrival {k}");
        }
    }

    #[test]
    fn poisson_mean_rate_and_determinism() {
        let t0 = Instant::now();
        let mut s = Schedule::new(10_000.0, Arrival::Poisson, t0, 0, 1, 42);
        let n = 100_000;
        let mut last = t0;
        for _ in 0..n {
            last = s.pop();
        }
        // 100,000 arrivals at 10,000/s take 10 s; the sum of exponentials has a relative
        // standard deviation of 1/sqrt(n) = 0.3%, so 2% is far outside chance.
        let secs = (last - t0).as_secs_f64();
        assert!((secs - 10.0).abs() < 0.2, "{secs}");
        let mut again = Schedule::new(10_000.0, Arrival::Poisson, t0, 0, 1, 42);
        let mut first = Schedule::new(10_000.0, Arrival::Poisson, t0, 0, 1, 42);
        assert!((0..100).all(|_| again.pop() == first.pop()));
    }

    #[test]
    fn drain_counts_the_arrivals_left() {
        let t0 = Instant::now();
        let mut s = Schedule::new(100.0, Arrival::Fixed, t0, 0, 1, 0);
        s.pop();
        // Arrivals at 10 ms, 20 ms, ... 990 ms are before the 1 s end.
        assert_eq!(s.drain_before(t0, t0 + Duration::from_secs(1)), 99);
        let mut s = Schedule::new(100.0, Arrival::Fixed, t0, 0, 1, 0);
        let from = t0 + Duration::from_millis(500);
        assert_eq!(s.drain_before(from, t0 + Duration::from_secs(1)), 50);
    }
}
