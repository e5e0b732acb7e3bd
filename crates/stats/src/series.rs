//! Per-second time series: one bucket of counters per elapsed second of a run.

use serde::Serialize;

/// Failure classes a bucket counts apart: the engine's `ErrorClass::ALL`, in its order (the
/// engine checks the two agree when it compiles).
pub const FAILURE_CLASSES: usize = 17;

/// Counters for one second of a run.
///
/// The JSON `throughput.series` carries the first three (docs/json-schema.md); the rest feed
/// the figures of every second that a run whose load changes over time reports (`seconds`).
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Serialize)]
pub struct Bucket {
    pub completed: u64,
    pub failed: u64,
    pub bytes: u64,
    /// Scheduled arrivals due in this second (sent or not): the offered load.
    #[serde(skip)]
    pub due: u64,
    /// Requests whose last byte was written in this second: the achieved load.
    #[serde(skip)]
    pub sent: u64,
    /// Arrivals due in this second that went out more than the engine's lateness bound late.
    #[serde(skip)]
    pub late: u64,
    /// The most connections open at once in this second (added over workers).
    #[serde(skip)]
    pub open: u64,
    /// CPU time the client's workers used in this second, and waited for a CPU, in µs.
    #[serde(skip)]
    pub cpu_us: u64,
    #[serde(skip)]
    pub cpu_wait_us: u64,
    /// `failed` by class, in the engine's `ErrorClass::ALL` order.
    #[serde(skip)]
    pub failed_by: [u64; FAILURE_CLASSES],
}

impl Bucket {
    /// Adds `other`'s counts to this bucket's (`open` too: a sum over workers).
    pub fn add(&mut self, other: &Bucket) {
        self.completed += other.completed;
        self.failed += other.failed;
        self.bytes += other.bytes;
        self.due += other.due;
        self.sent += other.sent;
        self.late += other.late;
        self.open += other.open;
        self.cpu_us += other.cpu_us;
        self.cpu_wait_us += other.cpu_wait_us;
        for (a, b) in self.failed_by.iter_mut().zip(other.failed_by) {
            *a += b;
        }
    }
}

/// A series of per-second buckets, indexed by whole seconds since the series' origin.
///
/// Memory grows by one bucket per second of run time; writing into an existing second never
/// allocates. Buckets are reserved ahead for the planned duration so the hot path does not grow
/// the vector either when the duration is known.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize)]
pub struct Series {
    buckets: Vec<Bucket>,
}

impl Series {
    pub fn with_capacity(seconds: usize) -> Self {
        Series { buckets: Vec::with_capacity(seconds) }
    }

    /// The bucket for `second`, creating empty buckets up to it.
    #[inline]
    pub fn at(&mut self, second: usize) -> &mut Bucket {
        if second >= self.buckets.len() {
            self.buckets.resize(second + 1, Bucket::default());
        }
        &mut self.buckets[second]
    }

    pub fn buckets(&self) -> &[Bucket] {
        &self.buckets
    }

    pub fn clear(&mut self) {
        self.buckets.clear();
    }

    /// Adds `other` bucket by bucket (both series must share one origin).
    pub fn merge(&mut self, other: &Series) {
        for (i, b) in other.buckets.iter().enumerate() {
            self.at(i).add(b);
        }
    }

    /// Completed requests per second over the first `full_seconds` buckets, i.e. the seconds
    /// that were measured in full (a partial last second would read as a false dip).
    pub fn completed_per_second(&self, full_seconds: usize) -> Vec<f64> {
        (0..full_seconds).map(|i| self.buckets.get(i).map_or(0.0, |b| b.completed as f64)).collect()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn merge_aligns_by_second() {
        let mut a = Series::default();
        a.at(0).completed = 5;
        a.at(2).completed = 7;
        let mut b = Series::default();
        b.at(1).completed = 1;
        b.at(2).failed = 2;
        b.at(3).bytes = 9;
        a.merge(&b);
        let c: Vec<_> = a.buckets().iter().map(|b| (b.completed, b.failed, b.bytes)).collect();
        assert_eq!(c, vec![(5, 0, 0), (1, 0, 0), (7, 2, 0), (0, 0, 9)]);
        assert_eq!(a.completed_per_second(2), vec![5.0, 1.0]);
        assert_eq!(a.completed_per_second(5), vec![5.0, 1.0, 7.0, 0.0, 0.0]);
    }
}
