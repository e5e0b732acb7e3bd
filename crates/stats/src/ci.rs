//! Medians of repetitions with distribution-free confidence intervals from order statistics, and
//! the ratio of two such medians with its interval (the "1.8x, 95% CI 1.6–2.0" of an A/B verdict).
//!
//! # The median's interval
//!
//! Benchmark repetitions are not normal (they are skewed and have long tails), so, like
//! benchstat's default `AssumeNothing` (golang.org/x/perf `benchmath/anone.go`, which calls
//! `QuantileCI` in github.com/aclements/go-moremath `stats/quantileci.go`), the interval makes no
//! assumption about the distribution. If `S` counts the sample values below the population median
//! `m`, then `S ~ B(n, 1/2)` whatever the distribution (for a continuous one), and with
//! `x(1) ≤ … ≤ x(n)` the sorted sample:
//!
//! ```text
//!     x(k) < m  ⇔  S ≥ k        m < x(n+1-k)  ⇔  S ≤ n-k
//!     P(x(k) < m < x(n+1-k)) = P(k ≤ S ≤ n-k) = 1 - 2·P(S ≤ k-1)
//! ```
//!
//! **Rule used here**: the interval is `[x(k), x(n+1-k)]` for the *largest* `k ≥ 1` such that
//! `P(S ≤ k-1) ≤ (1 - confidence)/2`, i.e. the shortest *equal-tailed* interval: each tail
//! has probability at most 2.5% for a 95% interval, so "the median is at least `lo`" is itself
//! a 97.5% statement. Its exact coverage, `1 - 2·P(S ≤ k-1)`, is reported and is never below the
//! requested level (it is the textbook interval, e.g. Conover, *Practical Nonparametric
//! Statistics*, 3rd ed., §3.2; Hollander, Wolfe & Chicken, *Nonparametric Statistical Methods*).
//! The binomial probabilities are computed exactly (in log space) for every `n`.
//!
//! This differs from benchstat in two details, both written down so that numbers can be compared:
//! benchstat grows its interval greedily from the mode of `B(n, 1/2)` and breaks ties to the left,
//! so for some `n` (8, 11, 14, 16, 19, …) its interval is one rank shorter on one side (and
//! asymmetric) with coverage still ≥ 95%; and above `n = 30` it uses a normal approximation.
//! For `n` = 6, 7, 9, 10, 12, 13, 15, 17, 18, 20, … the two rules pick the same order statistics.
//!
//! **Too few repetitions**: even `[x(1), x(n)]` covers the median only with probability
//! `1 - 2^(1-n)`, which reaches 95% first at `n = 6` (96.9%). Below that no 95% interval exists;
//! benchstat then prints `±∞` and "need >= 6 samples". Here the result carries `has_ci = false`,
//! `lo`/`hi` are the minimum and maximum, and `confidence` is their (insufficient) coverage, so a
//! report can show the spread while saying it is not a confidence interval.
//!
//! # The ratio's interval
//!
//! benchstat prints the change between two medians, but no interval for it. Here the ratio
//! `median(a) / median(b)` gets a deterministic, distribution-free interval built from the two
//! medians' intervals: each is computed at level `√confidence`, and the ratio's interval is
//! `[lo_a / hi_b, hi_a / lo_b]`. If both intervals cover their medians, the ratio interval covers
//! the ratio of medians (all values positive); the samples are independent, so that happens with
//! probability `c_a · c_b ≥ √confidence² = confidence`. The reported `confidence` is that product
//! of exact coverages. The price of making no assumption is width and sample size: at 95% each
//! median needs a 97.47% interval, which takes at least 7 repetitions per side
//! ([`min_samples_for_ratio_ci`]). (A Hodges–Lehmann/Moses interval from the Mann-Whitney
//! statistic would be narrower, but estimates a shift rather than the ratio of medians, and is
//! exact only if the two distributions differ by a pure scale factor.)

use std::f64::consts::LN_2;

use serde::Serialize;

use crate::summary::median;

/// Which order statistics bound a median's confidence interval for a sample of size `n`.
#[derive(Debug, Clone, Copy, PartialEq, Serialize)]
pub struct CiRanks {
    /// 1-based rank of the lower bound in the sorted sample.
    pub lo: usize,
    /// 1-based rank of the upper bound in the sorted sample (`n + 1 - lo`).
    pub hi: usize,
    /// Exact probability that `[x(lo), x(hi)]` covers the population median.
    pub coverage: f64,
    /// Whether `coverage` reaches the requested level; if not, `lo = 1` and `hi = n`.
    pub has_ci: bool,
}

/// The order-statistic ranks of the equal-tailed interval for the median (rule in the module
/// docs); `None` for `n = 0`.
///
/// # Panics
/// If `confidence` is not strictly between 0 and 1.
pub fn median_ci_ranks(n: usize, confidence: f64) -> Option<CiRanks> {
    assert_confidence(confidence);
    if n == 0 {
        return None;
    }
    let half_alpha = (1.0 - confidence) / 2.0;
    // Walk up the lower tail of B(n, 1/2), P(S ≤ j) = Σ_{i ≤ j} C(n, i) / 2^n, adding the small
    // terms first. ln C(n, i) is built incrementally so that no factorial overflows and no 2^-n
    // underflows before it is combined with its binomial coefficient.
    let ln_2n = n as f64 * LN_2;
    let mut ln_choose = 0.0;
    let mut tail = 0.0;
    let mut found = None;
    for j in 0..=n / 2 {
        if j > 0 {
            ln_choose += ((n - j + 1) as f64 / j as f64).ln();
        }
        tail += (ln_choose - ln_2n).exp();
        if tail > half_alpha {
            break;
        }
        found = Some((j + 1, tail));
    }
    // Without a fitting k not even [min, max] is enough: report its coverage, 1 - 2·P(S = 0).
    let (lo, tail, has_ci) = match found {
        Some((k, tail)) => (k, tail, true),
        None => (1, 0.5f64.powi(n as i32), false),
    };
    Some(CiRanks { lo, hi: n + 1 - lo, coverage: 1.0 - 2.0 * tail, has_ci })
}

/// The smallest sample size for which a median interval at `confidence` exists (6 at 95%).
pub fn min_samples_for_median_ci(confidence: f64) -> usize {
    // Coverage of [min, max] is 1 - 2^(1-n), which tends to 1, so this terminates for c < 1.
    (1..).find(|&n| median_ci_ranks(n, confidence).is_some_and(|r| r.has_ci)).unwrap_or(usize::MAX)
}

/// The smallest size of *each* sample for which [`median_ratio_ci`] forms an interval
/// (7 at 95%, since each median then needs a √0.95 ≈ 97.47% interval).
pub fn min_samples_for_ratio_ci(confidence: f64) -> usize {
    min_samples_for_median_ci(confidence.sqrt())
}

/// A sample's median with its confidence interval.
#[derive(Debug, Clone, Copy, PartialEq, Serialize)]
pub struct MedianCi {
    pub n: usize,
    /// The sample median (mean of the two middle values for an even `n`).
    pub median: f64,
    /// Lower bound: the order statistic `x(lo_rank)`.
    pub lo: f64,
    /// Upper bound: the order statistic `x(hi_rank)`.
    pub hi: f64,
    pub lo_rank: usize,
    pub hi_rank: usize,
    /// Exact coverage of `[lo, hi]`; at least the requested level when `has_ci`.
    pub confidence: f64,
    /// `false` when the sample is too small for the requested level: `lo`/`hi` are then the
    /// minimum and maximum, not a confidence interval, and must be presented as such.
    pub has_ci: bool,
}

impl MedianCi {
    /// benchstat's "± x%": the larger distance from the median to a bound, relative to the
    /// median. `None` without an interval, for a zero median, or when a bound has the other
    /// sign (benchstat prints `∞` and `?` for those).
    pub fn relative_half_width(&self) -> Option<f64> {
        let same_sign = |v: f64| v.signum() == self.median.signum() || v == 0.0;
        if !self.has_ci || self.median == 0.0 || !same_sign(self.lo) || !same_sign(self.hi) {
            return None;
        }
        Some((self.hi / self.median - 1.0).max(1.0 - self.lo / self.median))
    }
}

/// The median of `xs` with its interval at `confidence` (e.g. 0.95). `None` if `xs` is empty or
/// holds a NaN: there is nothing honest to report.
///
/// # Panics
/// If `confidence` is not strictly between 0 and 1.
pub fn median_ci(xs: &[f64], confidence: f64) -> Option<MedianCi> {
    let ranks = median_ci_ranks(xs.len(), confidence)?;
    if xs.iter().any(|x| x.is_nan()) {
        return None;
    }
    let mut sorted = xs.to_vec();
    sorted.sort_by(f64::total_cmp);
    Some(MedianCi {
        n: xs.len(),
        median: median(&sorted)?,
        lo: sorted[ranks.lo - 1],
        hi: sorted[ranks.hi - 1],
        lo_rank: ranks.lo,
        hi_rank: ranks.hi,
        confidence: ranks.coverage,
        has_ci: ranks.has_ci,
    })
}

/// The ratio `median(numerator) / median(denominator)` with its interval.
#[derive(Debug, Clone, Copy, PartialEq, Serialize)]
pub struct RatioCi {
    pub ratio: f64,
    pub lo: f64,
    pub hi: f64,
    /// Lower bound on the probability that `[lo, hi]` covers the ratio of the population medians:
    /// the product of the two medians' exact coverages.
    pub confidence: f64,
    /// `false` when either sample is too small: `lo`/`hi` then come from the samples' minima and
    /// maxima and are a range, not a confidence interval.
    pub has_ci: bool,
    pub numerator: MedianCi,
    pub denominator: MedianCi,
}

/// The ratio of the medians of two independent samples with a `confidence` interval (rule in the
/// module docs), e.g. req/s of stack A over stack B. `None` if either sample is empty or holds a
/// value that is not finite and strictly positive (a ratio of rates or latencies has no meaning
/// otherwise, and a zero bound would make the interval infinite).
///
/// # Panics
/// If `confidence` is not strictly between 0 and 1.
pub fn median_ratio_ci(numerator: &[f64], denominator: &[f64], confidence: f64) -> Option<RatioCi> {
    assert_confidence(confidence);
    let positive = |xs: &[f64]| xs.iter().all(|&x| x.is_finite() && x > 0.0);
    if !positive(numerator) || !positive(denominator) {
        return None;
    }
    // Each side at √c so that, the samples being independent, both cover with probability ≥ c.
    let per_side = confidence.sqrt();
    let a = median_ci(numerator, per_side)?;
    let b = median_ci(denominator, per_side)?;
    Some(RatioCi {
        ratio: a.median / b.median,
        lo: a.lo / b.hi,
        hi: a.hi / b.lo,
        confidence: a.confidence * b.confidence,
        has_ci: a.has_ci && b.has_ci,
        numerator: a,
        denominator: b,
    })
}

fn assert_confidence(confidence: f64) {
    assert!(confidence > 0.0 && confidence < 1.0, "confidence must be in (0, 1), got {confidence}");
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn empty_sample_has_no_median() {
        assert_eq!(median_ci_ranks(0, 0.95), None);
        assert_eq!(median_ci(&[], 0.95), None);
        assert_eq!(median_ci(&[1.0, f64::NAN, 2.0], 0.95), None);
    }

    #[test]
    fn one_value_is_its_own_range_with_zero_coverage() {
        let m = median_ci(&[7.0], 0.95).unwrap();
        assert_eq!((m.median, m.lo, m.hi, m.has_ci), (7.0, 7.0, 7.0, false));
        assert_eq!(m.confidence, 0.0);
        assert_eq!(m.relative_half_width(), None);
    }

    #[test]
    fn five_repetitions_give_min_max_without_ci_and_six_give_a_ci() {
        let m = median_ci(&[5.0, 1.0, 4.0, 2.0, 3.0], 0.95).unwrap();
        assert_eq!((m.median, m.lo, m.hi, m.has_ci), (3.0, 1.0, 5.0, false));
        assert_eq!(m.confidence, 1.0 - 2.0 / 32.0);
        let m = median_ci(&[6.0, 5.0, 1.0, 4.0, 2.0, 3.0], 0.95).unwrap();
        assert_eq!((m.median, m.lo, m.hi, m.has_ci), (3.5, 1.0, 6.0, true));
        assert_eq!(m.confidence, 1.0 - 2.0 / 64.0);
        assert_eq!(min_samples_for_median_ci(0.95), 6);
        assert_eq!(min_samples_for_ratio_ci(0.95), 7);
    }

    #[test]
    fn all_equal_values_give_a_zero_width_interval() {
        let m = median_ci(&[3.0; 10], 0.95).unwrap();
        assert_eq!((m.median, m.lo, m.hi, m.has_ci), (3.0, 3.0, 3.0, true));
        assert_eq!(m.relative_half_width(), Some(0.0));
    }

    #[test]
    fn ranks_are_symmetric_and_coverage_is_at_least_requested() {
        for n in 1..500 {
            let r = median_ci_ranks(n, 0.95).unwrap();
            assert_eq!(r.lo + r.hi, n + 1, "n={n}");
            assert_eq!(r.has_ci, r.coverage >= 0.95, "n={n}");
            assert_eq!(r.has_ci, n >= 6, "n={n}");
        }
        // Large n does not overflow or underflow: the ranks approach n/2 ± 1.96·√n/2.
        let r = median_ci_ranks(100_000, 0.95).unwrap();
        assert!(r.has_ci && (r.coverage - 0.95).abs() < 0.001);
        assert!((r.lo as f64 - (50_000.0 - 1.96 * 158.11)).abs() < 3.0, "{r:?}");
    }

    #[test]
    fn relative_half_width_is_benchstats_plus_minus() {
        let m = median_ci(&[90.0, 95.0, 100.0, 100.0, 104.0, 110.0], 0.95).unwrap();
        assert_eq!(m.median, 100.0);
        assert!((m.relative_half_width().unwrap() - 0.10).abs() < 1e-12);
        let m = median_ci(&[-1.0, 1.0, 2.0, 3.0, 4.0, 5.0], 0.95).unwrap();
        assert_eq!(m.relative_half_width(), None);
    }

    #[test]
    fn ratio_needs_positive_finite_values() {
        assert!(median_ratio_ci(&[], &[1.0], 0.95).is_none());
        assert!(median_ratio_ci(&[1.0], &[], 0.95).is_none());
        assert!(median_ratio_ci(&[1.0, 0.0], &[1.0], 0.95).is_none());
        assert!(median_ratio_ci(&[1.0], &[1.0, f64::INFINITY], 0.95).is_none());
        assert!(median_ratio_ci(&[1.0], &[-1.0], 0.95).is_none());
    }

    #[test]
    fn ratio_of_identical_samples_is_one_and_brackets_one() {
        let xs = [10.0, 11.0, 9.0, 10.5, 9.5, 10.2, 9.8];
        let r = median_ratio_ci(&xs, &xs, 0.95).unwrap();
        assert_eq!(r.ratio, 1.0);
        assert!(r.has_ci && r.lo < 1.0 && r.hi > 1.0);
        assert_eq!((r.lo, r.hi), (9.0 / 11.0, 11.0 / 9.0));
        assert!(r.confidence >= 0.95);
    }

    #[test]
    fn ratio_with_too_few_repetitions_is_flagged() {
        let r = median_ratio_ci(&[2.0, 2.2, 1.8, 2.1, 1.9, 2.0], &[1.0; 6], 0.95).unwrap();
        assert!(!r.has_ci);
        assert_eq!((r.ratio, r.lo, r.hi), (2.0, 1.8, 2.2));
        assert!(r.confidence < 0.95);
    }

    #[test]
    #[should_panic(expected = "confidence must be in (0, 1)")]
    fn confidence_out_of_range_panics() {
        let _ = median_ci(&[1.0], 95.0);
    }
}
