//! When requests start and when they stop: the load model ([`Pacing`]), the stop condition
//! ([`Stop`]) and its budget, shared by all workers.
//!
//! Pacing, stop condition and protocol are independent: the worker asks the pacing what to do
//! when a connection becomes free, and the budget whether another arrival is allowed.
//!
//! The budget of a counted run (`-n N`, `--conns N`) is shared by all workers and taken in
//! small chunks: a fast worker takes more of it than a slow one (no worker idles while another
//! still has a queue), and the shared counter is touched once per chunk, not once per request.

use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::Arc;
use std::time::Duration;

use crate::schedule::Arrival;

/// When a run stops.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Stop {
    /// After exactly this many measured arrivals have ended: requests (closed and open loop)
    /// or sessions (the session model).
    Count(u64),
    /// After this much measured time; requests still in flight then are reported as
    /// unfinished.
    Duration(Duration),
}

/// The load model.
#[derive(Debug, Clone, Copy, PartialEq)]
pub enum Pacing {
    /// A fixed set of connections, each sending its next request as soon as the last one
    /// ended (ab, wrk). The budget counts requests.
    Closed,
    /// Requests due on a schedule at `rate` per second, whatever the server's speed (wrk2);
    /// each goes out on an idle keep-alive connection, or a new one while fewer than
    /// `max_connections` are open. The budget counts requests.
    Open { rate: f64, arrival: Arrival, max_connections: usize },
    /// httperf's sessions: new connections due at `rate` per second, each carrying `calls`
    /// requests one after the other, then closed. The budget counts sessions.
    Sessions { rate: f64, arrival: Arrival, calls: u32, max_connections: usize },
}

impl Pacing {
    /// The arrival rate for schedule-driven pacing.
    pub fn rate(&self) -> Option<f64> {
        match self {
            Pacing::Closed => None,
            Pacing::Open { rate, .. } | Pacing::Sessions { rate, .. } => Some(*rate),
        }
    }

    /// How scheduled arrivals are spaced (`Fixed` for the closed loop, which has none).
    pub fn arrival(&self) -> Arrival {
        match self {
            Pacing::Closed => Arrival::Fixed,
            Pacing::Open { arrival, .. } | Pacing::Sessions { arrival, .. } => *arrival,
        }
    }

    /// The offered request rate: for sessions, connections per second times calls.
    pub fn offered_rps(&self) -> Option<f64> {
        match self {
            Pacing::Closed => None,
            Pacing::Open { rate, .. } => Some(*rate),
            Pacing::Sessions { rate, calls, .. } => Some(rate * f64::from(*calls)),
        }
    }
}

/// One agent's part of a test spread over several hosts (`--agents N --agent I`): agent
/// `index` of `of`. A single host is agent 0 of 1.
///
/// The split is exact, so that the agents together send what one host would: an open loop's
/// arrivals are dealt out from the one global schedule (agent I takes arrivals k with
/// k mod N = I, see [`Share::stream`]); a closed loop's connections and a count are split by
/// [`Share::part`], whose parts add up to the whole whatever N.
///
/// With weights (`--agent-weight`, [`Weighted`]) the agent holds `weight` consecutive slots of
/// `total`, as if it were that many agents of equal weight: arrivals k with k mod total in its
/// slots, and its slots' parts of the connections and the count.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Share {
    pub index: usize,
    pub of: usize,
    /// `None`: every agent weighs 1.
    pub weighted: Option<Weighted>,
}

/// An agent's slots: `offset..offset + weight` of `total` (the sum of every agent's weight).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Weighted {
    pub offset: u64,
    pub weight: u64,
    pub total: u64,
}

impl Default for Share {
    fn default() -> Self {
        Share::new(0, 1)
    }
}

impl Share {
    /// Agent `index` of `of`, every agent of weight 1.
    pub fn new(index: usize, of: usize) -> Share {
        Share { index, of, weighted: None }
    }

    /// Agent `index` whose weight is `weights[index]`, of `weights.len()` agents.
    pub fn weighted(index: usize, weights: &[u64]) -> Share {
        let offset = weights[..index].iter().sum();
        let (weight, total) = (weights[index], weights.iter().sum());
        Share { index, of: weights.len(), weighted: Some(Weighted { offset, weight, total }) }
    }

    /// (first slot, slots, all slots).
    fn slots(&self) -> (u64, u64, u64) {
        self.weighted.map_or((self.index as u64, 1, self.of.max(1) as u64), |w| {
            (w.offset, w.weight, w.total.max(1))
        })
    }

    /// This agent's part of `total`: floor((o+w)T/W) - floor(oT/W) for its slots o..o+w of
    /// W (unweighted: floor((I+1)T/N) - floor(IT/N)). The parts telescope to T; unweighted
    /// they differ by at most one.
    pub fn part(&self, total: u64) -> u64 {
        let (o, w, n) = self.slots();
        let (o, w, n, t) = (u128::from(o), u128::from(w), u128::from(n), u128::from(total));
        ((o + w) * t / n - o * t / n) as u64
    }

    /// The arrivals k < `total` whose k mod W is one of this agent's slots (unweighted:
    /// k mod N = I): this agent's share of a counted open loop.
    pub fn arrivals(&self, total: u64) -> u64 {
        let (o, w, n) = self.slots();
        (o..o + w).map(|slot| total.saturating_sub(slot).div_ceil(n)).sum()
    }

    /// The fewest workers this agent may run: one per slot, so that every slot's arrivals
    /// have a worker.
    pub fn min_workers(&self) -> usize {
        self.slots().1 as usize
    }

    /// Worker `worker` of `workers` on this agent as one stream of the global schedule:
    /// (its index, the number of streams). Unweighted, global arrival k goes to stream
    /// k mod (N x W); the streams I, I+N, I+2N, ... are this agent's, so it takes exactly the
    /// arrivals k mod N = I, and its workers interleave as a single host's do. Weighted, the
    /// workers are dealt to the agent's slots in turn (at least one each, see
    /// [`Share::min_workers`]); the c workers of slot v take the streams v + W m of W c
    /// (m < c), which together are the arrivals k mod W = v.
    pub fn stream(&self, worker: usize, workers: usize) -> (usize, usize) {
        let Some(w) = self.weighted else {
            return (self.index + self.of * worker, self.of * workers);
        };
        let (slots, total) = (w.weight.max(1) as usize, w.total.max(1) as usize);
        let (slot, m) = (worker % slots, worker / slots);
        let on_slot = workers / slots + usize::from(slot < workers % slots);
        (w.offset as usize + slot + total * m, total * on_slot)
    }
}

/// One worker's view of the run's request budget.
#[derive(Debug)]
pub(crate) struct Budget {
    shared: Option<Arc<AtomicU64>>,
    local: u64,
    chunk: u64,
}

impl Budget {
    /// The budgets for `workers` workers of one run.
    pub fn split(stop: Stop, workers: usize, connections: usize) -> Vec<Budget> {
        let shared = match stop {
            Stop::Count(n) => Some(Arc::new(AtomicU64::new(n))),
            Stop::Duration(_) => None,
        };
        // Small enough that the tail of the run stays balanced over all connections, large
        // enough that the shared counter is rarely contended.
        let chunk = match stop {
            Stop::Count(n) => (n / (connections as u64 * 8).max(1)).clamp(1, 256),
            Stop::Duration(_) => 0,
        };
        (0..workers).map(|_| Budget { shared: shared.clone(), local: 0, chunk }).collect()
    }

    /// Takes one request from the budget; false when the budget is spent.
    #[inline]
    pub fn take(&mut self) -> bool {
        let Some(shared) = &self.shared else { return true };
        if self.local == 0 {
            let chunk = self.chunk;
            let got = shared.fetch_update(Ordering::Relaxed, Ordering::Relaxed, |left| {
                (left > 0).then(|| left - left.min(chunk))
            });
            match got {
                Ok(left) => self.local = left.min(chunk),
                Err(_) => return false,
            }
        }
        self.local -= 1;
        true
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn shared_budget_gives_exactly_n() {
        let mut budgets = Budget::split(Stop::Count(1001), 3, 10);
        let mut taken = 0;
        // Interleave the workers as threads would.
        loop {
            let mut any = false;
            for b in budgets.iter_mut() {
                if b.take() {
                    taken += 1;
                    any = true;
                }
            }
            if !any {
                break;
            }
        }
        assert_eq!(taken, 1001);
    }

    #[test]
    fn shares_add_up_to_the_whole_and_differ_by_at_most_one() {
        for n in 1..=7usize {
            for total in [0u64, 1, 5, 10, 99, 1000, 1001] {
                let parts: Vec<u64> =
                    (0..n).map(|index| Share::new(index, n).part(total)).collect();
                assert_eq!(parts.iter().sum::<u64>(), total, "{n} agents, {total}");
                let (lo, hi) = (parts.iter().min().unwrap(), parts.iter().max().unwrap());
                assert!(hi - lo <= 1, "{parts:?}");
                let arrivals: u64 = (0..n).map(|index| Share::new(index, n).arrivals(total)).sum();
                assert_eq!(arrivals, total, "{n} agents, {total} arrivals");
            }
        }
    }

    #[test]
    fn weighted_shares_add_up_and_their_streams_are_every_arrival_once() {
        let weights = [3u64, 1, 2];
        let shares: Vec<Share> = (0..3).map(|i| Share::weighted(i, &weights)).collect();
        // 600 connections by weight: 300, 100, 200; a count's arrivals likewise.
        let parts: Vec<u64> = shares.iter().map(|s| s.part(600)).collect();
        assert_eq!(parts, [300, 100, 200]);
        let arrivals: Vec<u64> = shares.iter().map(|s| s.arrivals(601)).collect();
        assert_eq!((arrivals.iter().sum::<u64>(), arrivals[1]), (601, 100), "{arrivals:?}");
        // Every agent's workers (2, 1, 5 of them) as streams: each global arrival k < 6000
        // is in exactly one stream, of the agent whose slot k mod 6 is.
        let workers = [3usize, 1, 5];
        let mut owner = vec![None; 6000];
        for (a, share) in shares.iter().enumerate() {
            for w in 0..workers[a] {
                let (i, of) = share.stream(w, workers[a]);
                assert!(i < of, "agent {a} worker {w}: stream {i} of {of}");
                for k in (i..6000).step_by(of) {
                    assert_eq!(owner[k], None, "arrival {k} twice");
                    owner[k] = Some(a);
                }
            }
        }
        let slot_owner = [0, 0, 0, 1, 2, 2];
        assert!(owner.iter().enumerate().all(|(k, o)| *o == Some(slot_owner[k % 6])));
    }

    #[test]
    fn duration_budget_is_unlimited() {
        let mut b = Budget::split(Stop::Duration(Duration::from_secs(1)), 1, 1).remove(0);
        assert!((0..10_000).all(|_| b.take()));
    }
}
