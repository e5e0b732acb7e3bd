//! Clocks across hosts: each agent's offset from agent 0's wall clock and the round trip to
//! it, from ping samples, and the start time agent 0 announces.
//!
//! A sample is agent 0's send time t0, the agent's clock t1 when it answered, agent 0's receive
//! time t2. With a symmetric path the agent answered at t0 + rtt/2 by agent 0's clock, so its
//! offset is t1 - (t0 + t2)/2, wrong by at most half the asymmetry. Of several samples the one
//! with the shortest round trip is kept (as NTP's clock filter does): the least queueing, so
//! the least room for asymmetry; its error is at most rtt/2.

use std::time::{Duration, SystemTime, UNIX_EPOCH};

/// One ping's three timestamps, ns since the epoch.
#[derive(Debug, Clone, Copy)]
pub struct Sample {
    pub t0: u64,
    pub t1: u64,
    pub t2: u64,
}

/// An agent's clock against agent 0's.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct Offset {
    /// The agent's clock minus agent 0's, ns.
    pub offset_ns: i64,
    /// The round trip of the sample it came from, ns; half of it bounds the offset's error.
    pub rtt_ns: u64,
}

/// The offset from the sample of shortest round trip; `None` without samples.
pub fn estimate(samples: &[Sample]) -> Option<Offset> {
    let best = samples.iter().min_by_key(|s| s.t2.saturating_sub(s.t0))?;
    let mid = (i128::from(best.t0) + i128::from(best.t2)) / 2;
    Some(Offset { offset_ns: (i128::from(best.t1) - mid) as i64, rtt_ns: best.t2 - best.t0 })
}

/// The start time: far enough ahead of `now` that the start message reaches the slowest agent
/// (half its round trip) and it wakes in time, with room for a scheduler's delay.
pub fn start_at(now_ns: u64, slowest_rtt_ns: u64) -> u64 {
    let margin = Duration::from_millis(250).as_nanos() as u64;
    now_ns + margin + slowest_rtt_ns.saturating_mul(4)
}

/// The wall clock, ns since the epoch.
pub fn now_ns() -> u64 {
    SystemTime::now().duration_since(UNIX_EPOCH).map_or(0, |d| d.as_nanos() as u64)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_shortest_round_trip_gives_the_offset() {
        // The agent's clock is 1 ms ahead; the path takes 100 µs each way, but one sample
        // queued 5 ms on the way back (and so would say the offset is -1.5 ms).
        let ahead = 1_000_000u64;
        let clean = Sample { t0: 0, t1: 100_000 + ahead, t2: 200_000 };
        let queued = Sample { t0: 1_000_000, t1: 1_100_000 + ahead, t2: 6_200_000 };
        let o = estimate(&[queued, clean]).unwrap();
        assert_eq!(o, Offset { offset_ns: ahead as i64, rtt_ns: 200_000 });
        assert_eq!(estimate(&[]), None);
    }

    #[test]
    fn the_start_leaves_room_for_the_slowest_round_trip() {
        assert!(start_at(0, 0) >= 100_000_000);
        assert!(start_at(0, 1_000_000_000) > 4_000_000_000);
    }
}
