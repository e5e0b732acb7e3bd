//! Open-loop arrival schedules: when each request (or session) is due, and for a replay which
//! of the log's requests it is.
//!
//! A schedule is a generator, not a queue: requests that are due but could not be sent yet
//! (every connection busy) are simply the generator not advanced yet. So a server that falls
//! behind costs no memory, and each late request keeps its own due time, from which its
//! latency is measured (the correction for coordinated omission that wrk2 introduced).

use std::sync::Arc;
use std::time::{Duration, Instant};

use rand::rngs::SmallRng;
use rand::{Rng, SeedableRng};

use crate::replay::Replay;
use crate::shape::Shape;

/// Due times beyond this (in ns after the origin, ~31 years) stand for "never": a shape that
/// ends at zero has no arrival after its end.
const NEVER_NS: f64 = 1e18;

/// How arrivals are spaced.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Arrival {
    /// Evenly: one every 1/rate seconds.
    Fixed,
    /// A Poisson process: exponentially distributed gaps with mean 1/rate, as independent users
    /// arrive.
    Poisson,
    /// As a replayed log says: each line due at its time after the first line's, scaled by the
    /// replay's speed (the rate is then the log's mean rate, for the report).
    Log,
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
    /// A replay: the lines this worker sends.
    lines: Option<Lines>,
    /// A rate that changes over time: arrivals are placed in the shape's integrated time.
    shaped: Option<Shaped>,
}

/// One stream of a shaped schedule: where it stands in the shape's integral Λ (arrivals due
/// so far), and how its arrivals step through Λ.
#[derive(Debug)]
struct Shaped {
    shape: Arc<Shape>,
    /// This stream's index and the number of streams: fixed arrivals at Λ = index + k x
    /// streams (the global arrival k x streams + index), Poisson gaps of mean `streams` in Λ.
    index: f64,
    streams: f64,
    lambda: f64,
}

/// One worker's lines of a replay: every `stride`-th line from its index, up to `limit`.
#[derive(Debug)]
struct Lines {
    replay: Arc<Replay>,
    next: usize,
    stride: usize,
    limit: usize,
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
            Arrival::Fixed | Arrival::Log => total_gap_ns * index as f64,
            Arrival::Poisson => exponential(&mut rng, gap_ns),
        };
        Schedule {
            origin,
            gap_ns,
            arrival,
            rng,
            popped: 0,
            first_ns,
            next_ns: first_ns,
            lines: None,
            shaped: None,
        }
    }

    /// The same stream under a rate that changes over time: the global arrival k is due when
    /// the shape's integral reaches k (fixed), or a unit-rate Poisson process in the
    /// integral's time is mapped back to real time (Poisson), so that the streams together are
    /// one schedule, dealt k mod streams as at a fixed rate.
    pub fn shaped(mut self, shape: Arc<Shape>, index: usize, workers: usize) -> Self {
        let streams = workers.max(1) as f64;
        let lambda = match self.arrival {
            Arrival::Poisson => exponential(&mut self.rng, streams),
            Arrival::Fixed | Arrival::Log => index as f64,
        };
        self.next_ns = shape_ns(&shape, lambda);
        self.shaped = Some(Shaped { shape, index: index as f64, streams, lambda });
        self
    }

    /// The same worker's share of a replay's first `limit` lines: lines index, index+W, ...,
    /// each due at its log time (`Arrival::Log`) or on the rate's schedule, in the log's order.
    /// Interleaved, the workers' lines make the log's sequence again.
    pub fn replaying(
        mut self,
        replay: Arc<Replay>,
        index: usize,
        workers: usize,
        limit: usize,
    ) -> Self {
        let limit = limit.min(replay.len());
        if self.arrival == Arrival::Log && index < limit {
            self.next_ns = replay.offset(index).as_nanos() as f64;
        }
        self.lines = Some(Lines { replay, next: index, stride: workers.max(1), limit });
        self
    }

    /// When the next arrival is due; `None` when a replay has no line left.
    #[inline]
    pub fn peek(&self) -> Option<Instant> {
        if let Some(l) = &self.lines {
            if l.next >= l.limit {
                return None;
            }
        }
        Some(self.origin + Duration::from_nanos(self.next_ns as u64))
    }

    /// When the arrival after the next one is due, without taking either: what [`Schedule::pop`]
    /// will make of it (a Poisson gap drawn from a copy of the generator, the same draw).
    /// `None` when there is none, and under a shape, whose next point costs more to find
    /// than grouping saves.
    pub fn peek_after(&self) -> Option<Instant> {
        if self.shaped.is_some() {
            return None;
        }
        let line = match &self.lines {
            Some(l) if l.next + l.stride >= l.limit => return None,
            Some(l) => Some((&l.replay, l.next + l.stride)),
            None => None,
        };
        let ns = match self.arrival {
            Arrival::Fixed => self.first_ns + self.gap_ns * (self.popped + 1) as f64,
            Arrival::Poisson => self.next_ns + exponential(&mut self.rng.clone(), self.gap_ns),
            Arrival::Log => line?.0.offset(line?.1).as_nanos() as f64,
        };
        Some(self.origin + Duration::from_nanos(ns as u64))
    }

    /// Takes the next arrival: its due time, and for a replay its request. Call only after
    /// [`Schedule::peek`] gave a time.
    #[inline]
    pub fn pop(&mut self) -> (Instant, Option<u32>) {
        let due = self.origin + Duration::from_nanos(self.next_ns as u64);
        self.popped += 1;
        let mut entry = None;
        if let Some(l) = self.lines.as_mut() {
            entry = Some(l.replay.requests[l.next]);
            l.next += l.stride;
        }
        if let Some(s) = self.shaped.as_mut() {
            // Only a shaped schedule pays for the shape, once per arrival.
            s.lambda = match self.arrival {
                Arrival::Poisson => s.lambda + exponential(&mut self.rng, s.streams),
                Arrival::Fixed | Arrival::Log => s.index + s.streams * self.popped as f64,
            };
            self.next_ns = shape_ns(&s.shape, s.lambda);
            return (due, entry);
        }
        match self.arrival {
            // From the count, not by adding gaps, so rounding never accumulates.
            Arrival::Fixed => self.next_ns = self.first_ns + self.gap_ns * self.popped as f64,
            Arrival::Poisson => self.next_ns += exponential(&mut self.rng, self.gap_ns),
            Arrival::Log => {
                if let Some(l) = self.lines.as_ref().filter(|l| l.next < l.limit) {
                    self.next_ns = l.replay.offset(l.next).as_nanos() as f64;
                }
            }
        }
        (due, entry)
    }

    /// Arrivals taken so far.
    pub fn popped(&self) -> u64 {
        self.popped
    }

    /// Counts (and takes) the arrivals due in `[from, end)`: at the end of a run these are the
    /// requests that were due but never sent. Each is shown to `each` with its due time.
    pub fn drain_before(
        &mut self,
        from: Instant,
        end: Instant,
        mut each: impl FnMut(Instant),
    ) -> u64 {
        let mut n = 0;
        // Bounded: a schedule has at most rate x duration arrivals before its end, a replay
        // its lines.
        while self.peek().is_some_and(|at| at < end) {
            let due = self.pop().0;
            if due >= from {
                n += 1;
                each(due);
            }
        }
        n
    }
}

/// When the shape's integral reaches `lambda`, in ns after the origin ([`NEVER_NS`] for never).
fn shape_ns(shape: &Shape, lambda: f64) -> f64 {
    (shape.time_of(lambda) * 1e9).min(NEVER_NS)
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
            all.push(a.pop().0 - t0);
            all.push(b.pop().0 - t0);
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
            last = s.pop().0;
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
    fn the_arrival_after_the_next_is_the_one_pop_gives_then() {
        let origin = Instant::now();
        for arrival in [Arrival::Fixed, Arrival::Poisson] {
            let mut s = Schedule::new(1000.0, arrival, origin, 1, 3, 7);
            for _ in 0..50 {
                let after = s.peek_after().expect("an unending schedule");
                s.pop();
                assert_eq!(s.peek(), Some(after), "{arrival:?}");
            }
        }
        let mut s = Schedule::new(10.0, Arrival::Log, origin, 0, 2, 1).replaying(
            replay(&[0, 5, 10, 15, 20]),
            0,
            2,
            5,
        );
        let mut seen = vec![];
        while let Some(after) = s.peek_after() {
            s.pop();
            seen.push(after.duration_since(origin).as_millis());
            assert_eq!(s.peek(), Some(after));
        }
        assert_eq!(seen, [10, 20], "lines 0, 2, 4: none after the last");
    }

    #[test]
    fn drain_counts_the_arrivals_left() {
        let t0 = Instant::now();
        let mut s = Schedule::new(100.0, Arrival::Fixed, t0, 0, 1, 0);
        s.pop();
        // Arrivals at 10 ms, 20 ms, ... 990 ms are before the 1 s end.
        assert_eq!(s.drain_before(t0, t0 + Duration::from_secs(1), |_| {}), 99);
        let mut s = Schedule::new(100.0, Arrival::Fixed, t0, 0, 1, 0);
        let from = t0 + Duration::from_millis(500);
        assert_eq!(s.drain_before(from, t0 + Duration::from_secs(1), |_| {}), 50);
    }

    fn replay(offsets_ms: &[u64]) -> Arc<Replay> {
        let mut b = crate::replay::Builder::default();
        for (i, ms) in offsets_ms.iter().enumerate() {
            b.line("json", None, &format!("/{i}"), *ms as i64 * 1_000_000, false);
        }
        Arc::new(b.finish("log"))
    }

    #[test]
    fn a_replay_is_due_at_its_log_times_split_between_workers_and_ends() {
        let t0 = Instant::now();
        let log = replay(&[0, 10, 10, 40, 100]);
        let worker =
            |i| Schedule::new(50.0, Arrival::Log, t0, i, 2, 1).replaying(log.clone(), i, 2, 5);
        let (mut a, mut b) = (worker(0), worker(1));
        let mut seen = Vec::new();
        while let Some(at) = a.peek() {
            let (due, entry) = a.pop();
            assert_eq!(due, at);
            seen.push(((due - t0).as_millis(), entry.unwrap()));
        }
        while b.peek().is_some() {
            let (due, entry) = b.pop();
            seen.push(((due - t0).as_millis(), entry.unwrap()));
        }
        seen.sort();
        assert_eq!(seen, [(0, 0), (10, 1), (10, 2), (40, 3), (100, 4)]);
        assert_eq!(a.drain_before(t0, t0 + Duration::from_secs(9), |_| {}), 0, "nothing left");
    }

    #[test]
    fn a_replay_at_a_rate_keeps_the_log_order_and_its_limit() {
        let t0 = Instant::now();
        let log = replay(&[0, 500, 900]);
        let mut s = Schedule::new(1000.0, Arrival::Fixed, t0, 0, 1, 1).replaying(log, 0, 1, 2);
        assert_eq!(s.pop(), (t0, Some(0)));
        assert_eq!(s.pop(), (t0 + Duration::from_millis(1), Some(1)));
        assert_eq!(s.peek(), None, "-n 2 replays two lines");
    }

    #[test]
    fn speed_divides_the_log_times() {
        let t0 = Instant::now();
        let mut log = (*replay(&[0, 100, 300])).clone();
        log.speed = 2.0;
        let mut s = Schedule::new(1.0, Arrival::Log, t0, 0, 1, 1).replaying(Arc::new(log), 0, 1, 3);
        let dues: Vec<u128> = (0..3).map(|_| (s.pop().0 - t0).as_millis()).collect();
        assert_eq!(dues, [0, 50, 150]);
    }
}

#[cfg(test)]
mod shaped {
    use super::*;

    fn ramp() -> Arc<Shape> {
        Arc::new(Shape::parse_stages("5s:0..2000").unwrap())
    }

    /// Every due time (ns) of `streams` streams of one shaped schedule, before `secs`, sorted.
    fn union(arrival: Arrival, streams: usize, secs: u64) -> Vec<u128> {
        let t0 = Instant::now();
        let mut all = Vec::new();
        for i in 0..streams {
            let mut s = Schedule::new(1.0, arrival, t0, i, streams, 7).shaped(ramp(), i, streams);
            while s.peek().is_some_and(|at| at < t0 + Duration::from_secs(secs)) {
                all.push((s.pop().0 - t0).as_nanos());
            }
        }
        all.sort_unstable();
        all
    }

    #[test]
    fn the_kth_fixed_arrival_is_due_when_the_integral_reaches_k() {
        // Rate 400 t, integral 200 t^2: arrival k at sqrt(k / 200) s, whatever the streams.
        for streams in [1, 3] {
            let all = union(Arrival::Fixed, streams, 5);
            assert_eq!(all.len(), 5000, "{streams} streams: k = 0..4999 before 5 s");
            for (k, ns) in all.iter().enumerate() {
                let want = (k as f64 / 200.0).sqrt() * 1e9;
                assert!((*ns as f64 - want).abs() <= 2.0, "{k}: {ns} vs {want}");
            }
        }
    }

    #[test]
    fn poisson_arrivals_follow_the_shape_second_by_second() {
        let all = union(Arrival::Poisson, 2, 5);
        let shape = ramp();
        for s in 1..5u32 {
            let n = all.iter().filter(|&&ns| (ns / 1_000_000_000) as u32 == s).count() as f64;
            let want = shape.in_second(s);
            // A Poisson count has standard deviation sqrt(mean): 5 of them is far outside chance.
            assert!((n - want).abs() < 5.0 * want.sqrt(), "second {s}: {n} vs {want}");
        }
        assert_eq!(all, union(Arrival::Poisson, 2, 5), "the same seed, the same arrivals");
    }

    #[test]
    fn a_shape_that_ends_at_zero_has_nothing_after_it() {
        let t0 = Instant::now();
        let shape = Arc::new(Shape::parse_stages("1s:100..0").unwrap());
        let mut s = Schedule::new(1.0, Arrival::Fixed, t0, 0, 1, 1).shaped(shape, 0, 1);
        // The integral is 50: arrivals 0..=49, then never.
        assert_eq!(s.drain_before(t0, t0 + Duration::from_secs(3600), |_| {}), 50);
    }
}

#[cfg(test)]
mod agents {
    use super::*;
    use crate::Share;

    /// Every due time of `agents` agents with `threads` workers each, `per_stream` arrivals a
    /// worker, sorted: the workers' schedules as `lib.rs` makes them, through `Share::stream`.
    fn union(
        rate: f64,
        arrival: Arrival,
        agents: usize,
        threads: usize,
        per_stream: usize,
    ) -> Vec<u128> {
        let t0 = Instant::now();
        let mut all = Vec::new();
        for index in 0..agents {
            for w in 0..threads {
                let (i, of) = Share::new(index, agents).stream(w, threads);
                let mut s = Schedule::new(rate, arrival, t0, i, of, 7);
                all.extend((0..per_stream).map(|_| (s.pop().0 - t0).as_nanos()));
            }
        }
        all.sort_unstable();
        all
    }

    #[test]
    fn the_agents_arrivals_are_the_single_host_schedule() {
        // A single host with N x W workers is the same schedule as N agents of W workers: the
        // same streams. And for evenly spaced arrivals any worker count gives the one
        // schedule k / rate, so the union is exactly what one host with 2 workers sends.
        for arrival in [Arrival::Fixed, Arrival::Poisson] {
            let same = union(3000.0, arrival, 3, 2, 400) == union(3000.0, arrival, 1, 6, 400);
            assert!(same, "{arrival:?}: 3 agents x 2 workers differ from 1 host x 6");
        }
        // Within the nanosecond by which float rounding of a due time can move it.
        let close = |a: &[u128], b: &[u128]| {
            a.len() == b.len() && a.iter().zip(b).all(|(x, y)| x.abs_diff(*y) <= 1)
        };
        let agents = union(3000.0, Arrival::Fixed, 4, 3, 250);
        assert!(close(&agents, &union(3000.0, Arrival::Fixed, 1, 2, 1500)), "not one host's");
        let each: Vec<u128> = (0..3000u128).map(|k| k * 1_000_000_000 / 3000).collect();
        assert!(close(&agents, &each), "not k / rate");
    }

    #[test]
    fn agent_i_takes_the_arrivals_k_mod_n() {
        let t0 = Instant::now();
        let gap = 1_000_000_000u128 / 1000;
        for index in 0..3 {
            let (i, of) = Share::new(index, 3).stream(0, 1);
            let mut s = Schedule::new(1000.0, Arrival::Fixed, t0, i, of, 1);
            for _ in 0..50 {
                let k = ((s.pop().0 - t0).as_nanos() + gap / 2) / gap;
                assert_eq!(k as usize % 3, index);
            }
        }
    }
}
