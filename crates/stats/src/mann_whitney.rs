//! The two-sided Mann-Whitney U test between two samples of repetitions (stack A vs stack B on
//! the same workload and load), and the smallest p-value a pair of sample sizes can ever give.
//!
//! Like benchstat (golang.org/x/perf `benchmath/anone.go` → go-moremath `stats/utest.go`), this
//! makes no assumption about the distribution of repetitions: under the null hypothesis that both
//! samples come from one distribution, every way of splitting the pooled, ranked values into
//! groups of `n1` and `n2` is equally likely, and `U` (the number of pairs `(x, y)` with `x > y`,
//! ties counting one half) is compared with its distribution under that hypothesis.
//!
//! # How the p-value is computed
//!
//! - **Exact** (both samples of at most [`EXACT_LIMIT`] values): the null distribution of `U`,
//!   *conditional on the observed ties*, is counted by dynamic programming over the groups of
//!   tied values (Klotz 1966, "The Wilcoxon, Ties, and the Computer", JASA 61:772–787; the method
//!   go-moremath uses). Without ties this is the classic Mann–Whitney (1947) distribution and
//!   agrees with `scipy.stats.mannwhitneyu(method='exact')`; with ties it agrees with scipy's
//!   exhaustive permutation test (`method=PermutationMethod(n_resamples=np.inf)`). The two-sided
//!   p-value is `2·min(P(U ≤ u), P(U ≥ u))`, capped at 1 (scipy's convention; without ties it
//!   equals `2·P(U ≥ max(U1, U2))`, which is what go-moremath and scipy's `'exact'` compute).
//!
//!   Ties go through the exact path too, not the normal approximation, because repetitions are
//!   often tied here (percentiles come from an HDR histogram with three significant digits) and
//!   the approximation is anti-conservative on small tied samples: `[1, 1, 1]` vs `[2, 2, 2]`
//!   gets p = 0.047 from it, "significant" at α = 0.05, when no split of 3 vs 3 can go below
//!   p = 0.1. benchstat avoids that the same way (exact with ties up to 9 values per sample).
//! - **Asymptotic** (either sample larger): the normal approximation with the tie correction of
//!   the variance and a continuity correction of ½, exactly as scipy's `method='asymptotic'`:
//!   `z = (max(U1, U2) - n1·n2/2 - ½) / σ`, `σ² = n1·n2/12 · ((N+1) - Σ(t³-t)/(N(N-1)))`,
//!   `p = 2·(1 - Φ(z))`.
//!
//! If every value is equal the test has nothing to rank: `U = n1·n2/2` and p = 1.

use serde::Serialize;

/// Largest sample size (each side) for which [`mann_whitney_u`] computes the exact distribution.
/// Counting it takes about `groups · n1 · N²` steps (about 2 ms at 20 vs 20 in a release build,
/// once per compared pair, off the hot path), and the counts stay below 2^53 (C(40, 20) ≈
/// 1.4·10^11), so the f64 arithmetic is exact.
pub const EXACT_LIMIT: usize = 20;

/// How the p-value was obtained.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum Method {
    /// The exact null distribution of `U` given the observed ties.
    Exact,
    /// The normal approximation with tie and continuity corrections.
    Asymptotic,
}

/// The result of a two-sided Mann-Whitney U test.
#[derive(Debug, Clone, Copy, PartialEq, Serialize)]
pub struct MannWhitney {
    pub n1: usize,
    pub n2: usize,
    /// `U` of the first sample: pairs with the first sample's value greater, plus half the tied
    /// pairs (scipy's `statistic`). The second sample's is `n1·n2 - u`.
    pub u: f64,
    /// Two-sided p-value.
    pub p_value: f64,
    pub method: Method,
    /// Whether any value occurs more than once in the pooled sample.
    pub ties: bool,
}

impl MannWhitney {
    /// Whether the samples differ at level `alpha` (p ≤ α, so that the test rejects a true null
    /// hypothesis with probability at most α). A report prints `~` when this is false.
    pub fn significant(&self, alpha: f64) -> bool {
        self.p_value <= alpha
    }
}

/// The test between `x` and `y`, exact when both have at most [`EXACT_LIMIT`] values and
/// asymptotic otherwise. `None` if either sample is empty or holds a NaN.
pub fn mann_whitney_u(x: &[f64], y: &[f64]) -> Option<MannWhitney> {
    let method = if x.len() <= EXACT_LIMIT && y.len() <= EXACT_LIMIT {
        Method::Exact
    } else {
        Method::Asymptotic
    };
    mann_whitney_u_with(x, y, method)
}

/// The test with a chosen method (the exact one is slow beyond a few dozen values per sample).
/// `None` if either sample is empty or holds a NaN.
pub fn mann_whitney_u_with(x: &[f64], y: &[f64], method: Method) -> Option<MannWhitney> {
    if x.is_empty() || y.is_empty() || x.iter().chain(y).any(|v| v.is_nan()) {
        return None;
    }
    let (n1, n2) = (x.len(), y.len());
    let groups = tie_groups(x, y);
    // Twice the rank sum of x, so that midranks of ties stay integers.
    let twice_rank_sum: u64 = groups.iter().map(|g| g.in_x as u64 * g.twice_midrank).sum();
    let twice_u = twice_rank_sum - (n1 * (n1 + 1)) as u64; // 2·U1 = 2·R1 - n1(n1+1)
    let ties = groups.iter().any(|g| g.size > 1);
    let p_value = match method {
        Method::Exact => exact_p(&groups, n1, twice_rank_sum),
        Method::Asymptotic => {
            let tie_term = groups.iter().map(|g| (g.size as f64).powi(3) - g.size as f64).sum();
            asymptotic_p(n1, n2, twice_u as f64 / 2.0, tie_term)
        }
    };
    Some(MannWhitney { n1, n2, u: twice_u as f64 / 2.0, p_value, method, ties })
}

/// The smallest two-sided p-value [`mann_whitney_u`] can return for sizes `n1` and `n2`, reached
/// when the samples do not overlap at all: `2 / C(n1+n2, n1)` in the exact range (3 vs 3 gives
/// 0.1, so it can never be significant at α = 0.05), and the normal approximation's value for
/// untied samples beyond it. Ties only make the exact distribution coarser, so with them the
/// exact minimum is at least this; beyond [`EXACT_LIMIT`] the minimum is far below any α anyway.
/// 1 if either size is zero.
pub fn min_p_value(n1: usize, n2: usize) -> f64 {
    if n1 == 0 || n2 == 0 {
        return 1.0;
    }
    if n1 <= EXACT_LIMIT && n2 <= EXACT_LIMIT {
        (2.0 / binomial(n1 + n2, n1)).min(1.0)
    } else {
        asymptotic_p(n1, n2, (n1 * n2) as f64, 0.0)
    }
}

/// The smallest number of repetitions per side (equal sizes) for which a difference can reach
/// significance at `alpha` (4 at α = 0.05, where 3 vs 3 bottoms out at p = 0.1), for the warning
/// benchstat prints as "need >= 4 samples to detect a difference at alpha level 0.05".
///
/// # Panics
/// If `alpha` is not positive.
pub fn min_samples_for_significance(alpha: f64) -> usize {
    assert!(alpha > 0.0, "alpha must be positive, got {alpha}");
    // min_p_value(n, n) decreases towards 0, so this terminates for any α > 0.
    (1..).find(|&n| min_p_value(n, n) <= alpha).unwrap_or(usize::MAX)
}

/// One run of equal values in the pooled, sorted sample.
struct Group {
    size: usize,
    /// How many of the group's values come from the first sample.
    in_x: usize,
    /// Twice the group's midrank: ranks `i+1 ..= i+size` average to `(2i + size + 1) / 2`.
    twice_midrank: u64,
}

fn tie_groups(x: &[f64], y: &[f64]) -> Vec<Group> {
    let mut pooled: Vec<(f64, bool)> =
        x.iter().map(|&v| (v, true)).chain(y.iter().map(|&v| (v, false))).collect();
    pooled.sort_by(|a, b| a.0.total_cmp(&b.0));
    let mut groups = Vec::new();
    let mut start = 0;
    while start < pooled.len() {
        // `==` rather than total order, so that -0.0 and 0.0 tie (they are adjacent when sorted).
        let end = start + pooled[start..].iter().take_while(|p| p.0 == pooled[start].0).count();
        groups.push(Group {
            size: end - start,
            in_x: pooled[start..end].iter().filter(|p| p.1).count(),
            twice_midrank: (2 * start + (end - start) + 1) as u64,
        });
        start = end;
    }
    groups
}

/// Exact two-sided p-value of twice the rank sum `twice_observed` of a sample of `n1` values.
fn exact_p(groups: &[Group], n1: usize, twice_observed: u64) -> f64 {
    // Under the null hypothesis the first sample is a uniformly random n1-subset of the pooled
    // values. Taking `c` of a group's `size` values has C(size, c) ways and adds `c · twice_midrank`
    // to the doubled rank sum; counting subsets group by group gives the distribution of the rank
    // sum, hence of U, given the ties. counts[a][s] = ways to take `a` values with doubled rank
    // sum `s` from the groups seen so far.
    let max_sum: usize = groups.iter().map(|g| g.size * g.twice_midrank as usize).sum();
    let width = max_sum + 1;
    let mut counts = vec![0.0f64; (n1 + 1) * width];
    counts[0] = 1.0;
    for g in groups {
        let mut next = vec![0.0f64; (n1 + 1) * width];
        for a in 0..=n1 {
            for s in 0..width {
                let ways = counts[a * width + s];
                if ways == 0.0 {
                    continue;
                }
                for c in 0..=g.size.min(n1 - a) {
                    next[(a + c) * width + s + c * g.twice_midrank as usize] +=
                        ways * binomial(g.size, c);
                }
            }
        }
        counts = next;
    }
    let dist = &counts[n1 * width..];
    let total: f64 = dist.iter().sum();
    let observed = twice_observed as usize;
    let at_most: f64 = dist[..=observed].iter().sum();
    let at_least: f64 = dist[observed..].iter().sum();
    (2.0 * at_most.min(at_least) / total).min(1.0)
}

/// Normal-approximation two-sided p-value for `U1 = u`, with tie and continuity corrections
/// (formulas in the module docs; same as scipy's `_get_mwu_z`). `tie_term` is `Σ(t³ - t)` over
/// the groups of tied values.
fn asymptotic_p(n1: usize, n2: usize, u: f64, tie_term: f64) -> f64 {
    let (n1, n2) = (n1 as f64, n2 as f64);
    let n = n1 + n2;
    let mean = n1 * n2 / 2.0;
    let sigma = (n1 * n2 / 12.0 * ((n + 1.0) - tie_term / (n * (n - 1.0)))).sqrt();
    // All values equal: σ = 0 and U sits on its mean, so there is no evidence of a difference.
    if sigma.is_nan() || sigma <= 0.0 {
        return 1.0;
    }
    // Take the larger of U1, U2 and subtract ½: the upper tail, continuity-corrected.
    let z = (u.max(n1 * n2 - u) - mean - 0.5) / sigma;
    (2.0 * normal_sf(z)).min(1.0)
}

/// C(n, k) as f64, exact while the result is below 2^53.
fn binomial(n: usize, k: usize) -> f64 {
    let k = k.min(n - k);
    // Multiply before dividing: each partial product C(n-k+i, i) is an integer.
    (1..=k).fold(1.0, |acc, i| acc * (n - k + i) as f64 / i as f64).round()
}

/// 1 - Φ(z), the upper tail of the standard normal distribution, to about 1e-14 relative
/// (checked against scipy's `norm.sf` below and, on a fine grid, against `scipy.special.erfc`).
fn normal_sf(z: f64) -> f64 {
    0.5 * erfc(z / std::f64::consts::SQRT_2)
}

/// The complementary error function without a dependency (std has none).
fn erfc(x: f64) -> f64 {
    if x < 0.0 {
        return 2.0 - erfc(-x);
    }
    if x < 1.0 {
        // erf(x) = 2/√π · e^(-x²) · Σ 2^n x^(2n+1) / (1·3·…·(2n+1)) (Abramowitz & Stegun 7.1.6):
        // all terms positive, so no cancellation; 1 - erf loses at most one digit below x = 1.
        let mut term = x;
        let mut sum = x;
        let mut n = 0.0;
        while term > sum * 1e-17 {
            n += 1.0;
            term *= 2.0 * x * x / (2.0 * n + 1.0);
            sum += term;
        }
        1.0 - 2.0 / std::f64::consts::PI.sqrt() * (-x * x).exp() * sum
    } else {
        // Continued fraction erfc(x) = e^(-x²)/√π · 1/(x + ½/(x + 1/(x + (3/2)/(x + …))))
        // (A&S 7.1.14), evaluated by the modified Lentz method: it keeps full relative precision
        // in the far tail and needs at most ~250 terms from x = 1 up.
        let tiny = 1e-300;
        let mut f = x;
        let mut c = x;
        let mut d = 0.0;
        for k in 1..1000 {
            let a = k as f64 / 2.0;
            d = x + a * d;
            d = if d == 0.0 { 1.0 / tiny } else { 1.0 / d };
            c = x + a / c;
            if c == 0.0 {
                c = tiny;
            }
            let delta = c * d;
            f *= delta;
            if (delta - 1.0).abs() < 1e-16 {
                break;
            }
        }
        (-x * x).exp() / (std::f64::consts::PI.sqrt() * f)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn empty_or_nan_samples_have_no_test() {
        assert_eq!(mann_whitney_u(&[], &[1.0]), None);
        assert_eq!(mann_whitney_u(&[1.0], &[]), None);
        assert_eq!(mann_whitney_u(&[1.0, f64::NAN], &[2.0]), None);
    }

    #[test]
    fn one_against_one_is_never_significant() {
        let r = mann_whitney_u(&[1.0], &[2.0]).unwrap();
        assert_eq!((r.u, r.p_value, r.method), (0.0, 1.0, Method::Exact));
        assert_eq!(min_p_value(1, 1), 1.0);
    }

    #[test]
    fn all_equal_values_give_p_one_by_both_methods() {
        for method in [Method::Exact, Method::Asymptotic] {
            let r = mann_whitney_u_with(&[5.0; 4], &[5.0; 6], method).unwrap();
            assert_eq!((r.u, r.p_value, r.ties), (12.0, 1.0, true), "{method:?}");
        }
    }

    #[test]
    fn identical_samples_give_p_one() {
        let xs = [3.1, 2.7, 3.3, 2.9, 3.0];
        for method in [Method::Exact, Method::Asymptotic] {
            let r = mann_whitney_u_with(&xs, &xs, method).unwrap();
            assert_eq!((r.u, r.p_value), (12.5, 1.0), "{method:?}");
            assert!(!r.significant(0.05));
        }
    }

    #[test]
    fn signed_zeros_tie() {
        let r = mann_whitney_u(&[-0.0, 1.0], &[0.0, 2.0]).unwrap();
        assert!(r.ties);
        assert_eq!(r.u, 1.5);
    }

    #[test]
    fn swapping_samples_mirrors_u_and_keeps_p() {
        let (x, y) = ([1.0, 4.0, 4.0, 6.0, 9.0], [2.0, 3.0, 4.0, 5.0, 5.0, 7.0, 8.0]);
        let a = mann_whitney_u(&x, &y).unwrap();
        let b = mann_whitney_u(&y, &x).unwrap();
        assert_eq!(a.u + b.u, 35.0);
        assert!((a.p_value - b.p_value).abs() < 1e-15);
    }

    #[test]
    fn exact_distribution_without_ties_sums_to_the_number_of_splits() {
        // P(U ≤ n1·n2) must be 1, i.e. the counted splits total C(N, n1).
        let x: Vec<f64> = (0..7).map(f64::from).collect();
        let y: Vec<f64> = (7..20).map(f64::from).collect();
        let r = mann_whitney_u(&x, &y).unwrap();
        assert_eq!(r.u, 0.0);
        assert_eq!(r.p_value, 2.0 / binomial(20, 7));
        assert_eq!(r.p_value, min_p_value(7, 13));
    }

    #[test]
    fn small_samples_can_never_be_significant() {
        assert_eq!(min_p_value(3, 3), 0.1);
        assert!(min_p_value(3, 3) > 0.05 && min_p_value(3, 4) > 0.05);
        assert!(min_p_value(4, 4) < 0.05 && min_p_value(3, 5) < 0.05);
        assert_eq!(min_samples_for_significance(0.05), 4);
        assert_eq!(min_samples_for_significance(0.01), 5);
        assert_eq!(min_p_value(0, 5), 1.0);
    }

    #[test]
    fn min_p_value_continues_past_the_exact_limit() {
        let (at, past) = (min_p_value(20, 20), min_p_value(21, 21));
        assert!(past > 0.0 && past < 1e-6 && at < 1e-10, "{at} {past}");
    }

    #[test]
    fn normal_tail_matches_scipy() {
        // python3 -c 'from scipy import stats  # scipy 1.17.1
        // for z in [-3.0, -1.0, 0.0, 0.5, 1.0, 1.41, 1.42, 1.6448536269514722,
        //           1.959963984540054, 2.5, 3.5, 4.0, 5.0, 6.0, 8.0, 10.0, 20.0, 37.0]:
        //     print(f"({z!r}, {float(stats.norm.sf(z))!r}),")'
        // (1.41 and 1.42 straddle z = √2, where erfc switches from series to fraction.)
        #[rustfmt::skip]
        let scipy: [(f64, f64); 18] = [
            (-3.0, 0.9986501019683699), (-1.0, 0.8413447460685429), (0.0, 0.5),
            (0.5, 0.3085375387259869), (1.0, 0.15865525393145707),
            (1.41, 0.07926984145339239), (1.42, 0.07780384052654638),
            (1.6448536269514722, 0.050000000000000044), (1.959963984540054, 0.025),
            (2.5, 0.006209665325776132), (3.5, 0.00023262907903552502),
            (4.0, 3.167124183311986e-05), (5.0, 2.866515718791933e-07),
            (6.0, 9.865876450376946e-10), (8.0, 6.22096057427174e-16),
            (10.0, 7.61985302416047e-24), (20.0, 2.7536241186061556e-89),
            (37.0, 5.7255712225239266e-300),
        ];
        for (z, want) in scipy {
            // In the far tail e^(-z²/2) turns the rounding of z² into a relative error of about
            // z²/2 · 2^-53 (2e-13 at z = 37, p = 6e-300), so the bound grows with z²/2.
            let tolerance = 1e-14 * (z * z / 2.0).max(1.0);
            let got = normal_sf(z);
            assert!((got - want).abs() <= tolerance * want, "sf({z}) = {got:e}, scipy {want:e}");
        }
    }

    #[test]
    fn binomial_is_exact() {
        assert_eq!(binomial(40, 20), 137_846_528_820.0);
        assert_eq!(binomial(5, 0), 1.0);
        assert_eq!(binomial(5, 5), 1.0);
    }
}
