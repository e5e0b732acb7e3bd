//! One latency distribution: an HDR histogram for percentiles plus exact moments.

use hdrhistogram::errors::AdditionError;
use hdrhistogram::Histogram;
use serde::Serialize;

/// Highest value a recorder tracks, in microseconds: one hour. Larger values are clamped (and
/// still counted), so a pathological server can never make recording fail.
pub const MAX_TRACKABLE_US: u64 = 3_600 * 1_000_000;

/// Significant decimal digits kept by the histogram: 3 means a recorded value is within 0.1% of
/// the true one, which is far below the noise of any latency measurement.
pub(crate) const SIGNIFICANT_DIGITS: u8 = 3;

/// A latency distribution in microseconds.
///
/// Recording is allocation-free: the histogram's counts array is sized once, at construction.
#[derive(Clone)]
pub struct Recorder {
    hist: Histogram<u64>,
    count: u64,
    sum: u128,
    sum_sq: u128,
    min: u64,
    max: u64,
}

impl std::fmt::Debug for Recorder {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Recorder")
            .field("count", &self.count)
            .field("min", &self.min)
            .field("max", &self.max)
            .finish()
    }
}

impl Default for Recorder {
    fn default() -> Self {
        Self::new()
    }
}

impl Recorder {
    pub fn new() -> Self {
        Recorder::with_digits(SIGNIFICANT_DIGITS)
    }

    /// A recorder that keeps values to `digits` significant digits (1 to 5) rather than 3:
    /// two keep 1% (a p99 of 12.3 ms is known to 0.1 ms) in ~26 KB instead of ~180 KB, for
    /// figures kept many times over, such as each request of a mix. The moments stay exact.
    pub fn with_digits(digits: u8) -> Self {
        // Bounds are constants that hdrhistogram accepts; failure here is a programming error.
        let hist = Histogram::new_with_bounds(1, MAX_TRACKABLE_US, digits.clamp(1, 5))
            .expect("valid histogram bounds");
        Recorder { hist, count: 0, sum: 0, sum_sq: 0, min: u64::MAX, max: 0 }
    }

    /// Records one value in microseconds.
    #[inline]
    pub fn record(&mut self, us: u64) {
        let v = us.min(MAX_TRACKABLE_US);
        self.hist.saturating_record(v);
        self.count += 1;
        self.sum += u128::from(v);
        self.sum_sq += u128::from(v) * u128::from(v);
        self.min = self.min.min(v);
        self.max = self.max.max(v);
    }

    /// Adds every value of `other` to this recorder. Exact: HDR histograms with the same bounds
    /// merge bucket by bucket, and the moments add.
    pub fn merge(&mut self, other: &Recorder) {
        // Same bounds on both sides, so `add` cannot fail for lack of range.
        let _ = self.hist.add(&other.hist);
        self.count += other.count;
        self.sum += other.sum;
        self.sum_sq += other.sum_sq;
        self.min = self.min.min(other.min);
        self.max = self.max.max(other.max);
    }

    /// Forgets everything recorded so far (used when a warm-up ends).
    pub fn clear(&mut self) {
        self.hist.reset();
        self.count = 0;
        self.sum = 0;
        self.sum_sq = 0;
        self.min = u64::MAX;
        self.max = 0;
    }

    pub fn count(&self) -> u64 {
        self.count
    }

    pub fn is_empty(&self) -> bool {
        self.count == 0
    }

    /// The exact smallest value, or 0 when empty.
    pub fn min(&self) -> u64 {
        if self.count == 0 {
            0
        } else {
            self.min
        }
    }

    /// The exact largest value, or 0 when empty.
    pub fn max(&self) -> u64 {
        self.max
    }

    /// The exact mean, or 0 when empty.
    pub fn mean(&self) -> f64 {
        if self.count == 0 {
            return 0.0;
        }
        self.sum as f64 / self.count as f64
    }

    /// The exact population standard deviation (as ab and wrk print it), or 0 when empty.
    pub fn stdev(&self) -> f64 {
        if self.count == 0 {
            return 0.0;
        }
        let n = self.count as f64;
        let mean = self.sum as f64 / n;
        let var = (self.sum_sq as f64 / n - mean * mean).max(0.0);
        var.sqrt()
    }

    /// The value at `percentile` (0..=100) from the histogram: the highest value equivalent to
    /// the recorded one at that rank, clamped to the exact maximum.
    pub fn percentile(&self, percentile: f64) -> u64 {
        if self.count == 0 {
            return 0;
        }
        if percentile >= 100.0 {
            return self.max;
        }
        self.hist.value_at_quantile(percentile / 100.0).min(self.max)
    }

    /// Iterates the percentile spectrum as HdrHistogram's `outputPercentileDistribution` does:
    /// (value_us, percentile, cumulative count), with `ticks` steps per halving of the remaining
    /// distance to 100%.
    pub fn spectrum(&self, ticks: u32) -> Vec<(u64, f64, u64)> {
        if self.count == 0 {
            return Vec::new();
        }
        self.hist
            .iter_quantiles(ticks)
            .map(|v| {
                (
                    v.value_iterated_to().min(self.max),
                    v.quantile_iterated_to() * 100.0,
                    v.count_since_last_iteration(),
                )
            })
            .scan(0u64, |acc, (value, pct, since)| {
                *acc += since;
                Some((value, pct, *acc))
            })
            .collect()
    }

    /// The histogram behind the percentiles, for serializing it (the store keeps it in HDR V2).
    pub fn histogram(&self) -> &Histogram<u64> {
        &self.hist
    }

    /// The exact totals kept beside the histogram, which it only approximates: stored with the
    /// histogram, they bring a recorder back with the same mean, stdev, min and max.
    pub fn totals(&self) -> Totals {
        Totals {
            count: self.count,
            sum: self.sum,
            sum_sq: self.sum_sq,
            min: self.min(),
            max: self.max,
        }
    }

    /// Rebuilds a recorder from what [`histogram`](Self::histogram) and [`totals`](Self::totals)
    /// gave. The histogram is added into one with loadlab's bounds, so the result merges exactly
    /// with any other recorder; that fails only if its values do not fit those bounds.
    pub fn from_histogram(
        hist: &Histogram<u64>,
        totals: Totals,
    ) -> Result<Recorder, AdditionError> {
        let mut r = Recorder::new();
        r.hist.add(hist)?;
        r.count = totals.count;
        r.sum = totals.sum;
        r.sum_sq = totals.sum_sq;
        // An empty recorder keeps u64::MAX as its running minimum (see `new`).
        r.min = if totals.count == 0 { u64::MAX } else { totals.min };
        r.max = totals.max;
        Ok(r)
    }

    /// The fixed set of figures loadlab reports for a distribution.
    pub fn summary(&self) -> RecorderSummary {
        RecorderSummary {
            count: self.count,
            min: self.min(),
            mean: self.mean(),
            stdev: self.stdev(),
            max: self.max(),
            p50: self.percentile(50.0),
            p75: self.percentile(75.0),
            p90: self.percentile(90.0),
            p95: self.percentile(95.0),
            p99: self.percentile(99.0),
            p999: self.percentile(99.9),
            p9999: self.percentile(99.99),
        }
    }
}

/// A recorder's exact count, sums and extremes, in its unit (microseconds for latencies).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Totals {
    pub count: u64,
    pub sum: u128,
    pub sum_sq: u128,
    /// 0 when empty, as [`Recorder::min`] reports it.
    pub min: u64,
    pub max: u64,
}

/// The reported figures of one distribution, in microseconds.
#[derive(Debug, Clone, Copy, PartialEq, Serialize)]
pub struct RecorderSummary {
    pub count: u64,
    pub min: u64,
    pub mean: f64,
    pub stdev: f64,
    pub max: u64,
    pub p50: u64,
    pub p75: u64,
    pub p90: u64,
    pub p95: u64,
    pub p99: u64,
    pub p999: u64,
    pub p9999: u64,
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn exact_moments_and_histogram_percentiles() {
        let mut r = Recorder::new();
        for v in 1..=1000u64 {
            r.record(v);
        }
        assert_eq!(r.count(), 1000);
        assert_eq!(r.min(), 1);
        assert_eq!(r.max(), 1000);
        assert!((r.mean() - 500.5).abs() < 1e-9);
        // Population stdev of 1..=1000 is sqrt((1000^2 - 1) / 12).
        let expected = ((1000.0f64 * 1000.0 - 1.0) / 12.0).sqrt();
        assert!((r.stdev() - expected).abs() < 1e-6, "{}", r.stdev());
        assert_eq!(r.percentile(50.0), 500);
        assert_eq!(r.percentile(99.0), 990);
        assert_eq!(r.percentile(100.0), 1000);
    }

    #[test]
    fn merge_equals_recording_everything_in_one() {
        let mut a = Recorder::new();
        let mut b = Recorder::new();
        let mut all = Recorder::new();
        for v in 0..5000u64 {
            let x = (v * 7919) % 100_000;
            if v % 3 == 0 {
                a.record(x);
            } else {
                b.record(x);
            }
            all.record(x);
        }
        a.merge(&b);
        assert_eq!(a.summary(), all.summary());
    }

    #[test]
    fn from_histogram_and_totals_rebuilds_the_same_recorder() {
        let mut r = Recorder::new();
        for v in [3u64, 70, 70, 1_500, 2_000_000] {
            r.record(v);
        }
        let back = Recorder::from_histogram(r.histogram(), r.totals()).unwrap();
        assert_eq!(back.summary(), r.summary());
        let empty = Recorder::from_histogram(Recorder::new().histogram(), Recorder::new().totals());
        assert_eq!(empty.unwrap().summary(), Recorder::new().summary());
    }

    #[test]
    fn two_digits_keep_one_percent_in_a_seventh_of_the_memory() {
        let (mut small, mut full) = (Recorder::with_digits(2), Recorder::new());
        for v in 1..=100_000u64 {
            small.record(v);
            full.record(v);
        }
        for p in [50.0, 99.0, 99.9] {
            let (a, b) = (small.percentile(p) as f64, full.percentile(p) as f64);
            assert!((a - b).abs() / b < 0.01, "p{p}: {a} against {b}");
        }
        assert_eq!(small.mean(), full.mean(), "the moments are exact");
        let len = |r: &Recorder| r.histogram().distinct_values();
        assert!(len(&small) * 6 < len(&full), "{} against {}", len(&small), len(&full));
        full.merge(&small);
        assert_eq!(full.count(), 200_000, "a coarse recorder merges into a full one");
    }

    #[test]
    fn huge_values_are_clamped_not_lost() {
        let mut r = Recorder::new();
        r.record(u64::MAX);
        assert_eq!(r.count(), 1);
        assert_eq!(r.max(), MAX_TRACKABLE_US);
    }

    #[test]
    fn empty_recorder_reports_zeroes() {
        let r = Recorder::new();
        let s = r.summary();
        assert_eq!((s.count, s.min, s.max, s.p99), (0, 0, 0, 0));
        assert_eq!(s.mean, 0.0);
        assert!(r.spectrum(5).is_empty());
    }

    #[test]
    fn clear_forgets_warmup() {
        let mut r = Recorder::new();
        r.record(10);
        r.clear();
        r.record(20);
        assert_eq!((r.count(), r.min(), r.max()), (1, 20, 20));
    }

    #[test]
    fn spectrum_ends_at_max_with_full_count() {
        let mut r = Recorder::new();
        for v in 1..=100u64 {
            r.record(v * 10);
        }
        let s = r.spectrum(5);
        let last = s.last().unwrap();
        assert_eq!(last.0, 1000);
        assert_eq!(last.2, 100);
        assert!(s.windows(2).all(|w| w[0].0 <= w[1].0 && w[0].1 <= w[1].1));
    }
}
