//! Checks of the statistics in `loadlab_stats::{ci, mann_whitney, outliers}` against reference
//! values computed once outside Rust: scipy's `mannwhitneyu` (methods `'exact'`, `'asymptotic'` and
//! an exhaustive `PermutationMethod`, which is the exact test given ties), a direct Python
//! reimplementation of the median-interval rule on scipy's binomial CDF, and scipy's
//! `median_abs_deviation` for the modified Z-scores.
//!
//! The tables below are the verbatim output of this script (`python3 gen.py`); rerun it and paste
//! its output to change them:
//!
//! ```python
//! # Reference values for crates/stats/tests/scipy_reference.rs (scipy 1.17.1, numpy 2.4.6).
//! import numpy as np
//! from math import comb, sqrt
//! from scipy import stats
//! from scipy.stats import binom
//!
//! def f(v): return repr(float(v))
//! def arr(xs): return "&[" + ", ".join(f(v) for v in xs) + "]"
//!
//! # Mann-Whitney U: exact (no ties), asymptotic, and exhaustive permutation (exact with ties).
//! rng = np.random.default_rng(20240601)
//! samples = [
//!  ('scipy_doc', [19,22,16,29,24], [20,11,17,12]),
//!  ('disjoint_3v3', [1,2,3], [4,5,6]),
//!  ('disjoint_4v4', [4.1,4.2,4.3,4.4], [1.1,1.2,1.3,1.4]),
//!  ('interleaved_5v5', [1,3,5,7,9], [2,4,6,8,10]),
//!  ('rps_8v10', np.round(rng.normal(10000, 300, 8), 1), np.round(rng.normal(10350, 300, 10), 1)),
//!  ('rps_20v20', np.round(rng.normal(5000, 100, 20), 2), np.round(rng.normal(5060, 100, 20), 2)),
//!  ('skewed_12v15', np.round(rng.lognormal(0, 0.5, 12), 3), np.round(rng.lognormal(0.4, 0.5, 15), 3)),
//!  ('ties_small', [1,1,2,3], [2,3,3,4,4]),
//!  ('ties_all_groups_3v3', [1,1,1], [2,2,2]),
//!  ('ties_p50_ms_7v7', [1.023,1.023,1.031,1.019,1.023,1.027,1.031], [1.031,1.035,1.031,1.039,1.027,1.035,1.043]),
//!  ('ties_10v10', rng.integers(0, 6, 10), rng.integers(1, 7, 10)),
//!  ('large_ties_25v30', rng.integers(0, 12, 25), rng.integers(2, 14, 30)),
//!  ('large_30v40', np.round(rng.normal(0, 1, 30), 4), np.round(rng.normal(0.5, 1, 40), 4)),
//!  ('identical_6v6', [3.1,2.7,3.3,2.9,3.0,3.2], [3.1,2.7,3.3,2.9,3.0,3.2]),
//!  ('all_equal_4v6', [5,5,5,5], [5,5,5,5,5,5]),
//!  ('one_v_one', [1], [2]),
//! ]
//! print("// name, x, y, U, p exact (no ties; None with ties), p permutation (None if too many splits), p asymptotic")
//! for name, x, y in samples:
//!     x = [float(v) for v in x]; y = [float(v) for v in y]
//!     mwu = lambda m: stats.mannwhitneyu(x, y, alternative='two-sided', method=m)
//!     ties = len(set(x + y)) < len(x + y)
//!     exact = None if ties else f(mwu('exact').pvalue)
//!     perm = None
//!     if min(len(x), len(y)) >= 2 and comb(len(x) + len(y), len(x)) <= 200_000:
//!         perm = f(mwu(stats.PermutationMethod(n_resamples=np.inf)).pvalue)
//!     print(f'MwCase {{ name: "{name}", x: {arr(x)}, y: {arr(y)}, u: {f(mwu("asymptotic").statistic)}, '
//!           f'exact: {"Some(" + exact + ")" if exact else "None"}, '
//!           f'permutation: {"Some(" + perm + ")" if perm else "None"}, asymptotic: {f(mwu("asymptotic").pvalue)} }},')
//!
//! # Smallest p-value: fully separated samples, exact within 20 vs 20, asymptotic beyond.
//! print("// n1, n2, min p")
//! for n1, n2 in [(1,1),(2,2),(3,3),(3,4),(3,5),(4,4),(5,5),(9,9),(6,11),(20,20),(21,21),(10,30),(50,50)]:
//!     x, y = list(range(n1)), list(range(n1, n1 + n2))
//!     m = 'exact' if n1 <= 20 and n2 <= 20 else 'asymptotic'
//!     print(f"({n1}, {n2}, {f(stats.mannwhitneyu(x, y, alternative='two-sided', method=m).pvalue)}),")
//!
//! # Median CI: equal-tailed order-statistic rule, reimplemented with scipy's binomial CDF.
//! def ranks(n, c):
//!     ks = [k for k in range(1, n // 2 + 1) if binom.cdf(k - 1, n, 0.5) <= (1 - c) / 2]
//!     if not ks:
//!         return 1, n, 1 - 2 * binom.cdf(0, n, 0.5), False
//!     k = max(ks)
//!     return k, n + 1 - k, 1 - 2 * binom.cdf(k - 1, n, 0.5), True
//! print("// confidence, n, lo rank, hi rank, coverage, has_ci")
//! for c, ns in [(0.95, list(range(1, 41)) + [50, 64, 100, 257, 1000]),
//!               (sqrt(0.95), list(range(1, 11)) + [16, 25, 50, 100, 257, 1000]),
//!               (0.99, list(range(1, 11)) + [16, 25, 50, 100, 257, 1000])]:
//!     for n in ns:
//!         lo, hi, cov, ok = ranks(n, c)
//!         print(f"({f(c)}, {n}, {lo}, {hi}, {f(cov)}, {str(ok).lower()}),")
//!
//! def median_ci(xs, c):
//!     xs = sorted(xs); lo, hi, cov, ok = ranks(len(xs), c)
//!     return float(np.median(xs)), xs[lo - 1], xs[hi - 1], cov, ok
//! print("// name, median, lo, hi, coverage, has_ci (95%) of each sample above")
//! for name, x, y in samples:
//!     for tag, xs in (('x', x), ('y', y)):
//!         m, lo, hi, cov, ok = median_ci([float(v) for v in xs], 0.95)
//!         print(f'("{name}", "{tag}", {f(m)}, {f(lo)}, {f(hi)}, {f(cov)}, {str(ok).lower()}),')
//!
//! # Ratio of medians: each median's interval at sqrt(0.95); [lo_y/hi_x, hi_y/lo_x]; coverage product.
//! print("// name, ratio median(y)/median(x), lo, hi, confidence, has_ci")
//! for name, x, y in samples:
//!     x = [float(v) for v in x]; y = [float(v) for v in y]
//!     if min(x + y) <= 0: continue
//!     mx, lx, hx, cx, okx = median_ci(x, sqrt(0.95)); my, ly, hy, cy, oky = median_ci(y, sqrt(0.95))
//!     print(f'("{name}", {f(my / mx)}, {f(ly / hx)}, {f(hy / lx)}, {f(cy * cx)}, {str(okx and oky).lower()}),')
//!
//! # Outliers: modified Z-score 0.6745 (x - median) / MAD, MAD from scipy (scale=1).
//! print("// values, modified z-scores, outlier indices at 3.5")
//! for xs in [[2.33269488, 1.42195907, -0.57527698, -0.31293437, 2.2948158, 0.75813273, -1.0712388, -0.96394741, -1.15897446, 1.10976285, 20.0, -500.0],
//!            [0.5, 0.30, 0.29, 0.31, 0.30],
//!            [10412.3, 10388.0, 10450.9, 9120.4, 10401.7, 10433.2, 10397.5, 11890.0, 10420.1],
//!            [1.02, 0.98, 1.01, 0.99, 1.00, 1.05, 0.95],
//!            list(np.round(rng.lognormal(0, 0.3, 15), 3))]:
//!     xs = [float(v) for v in xs]
//!     mad = stats.median_abs_deviation(xs)
//!     z = 0.6745 * (np.array(xs) - np.median(xs)) / mad
//!     print(f"({arr(xs)}, {arr(z)}, &{[int(i) for i in np.flatnonzero(np.abs(z) > 3.5)]}),")
//! ```

use loadlab_stats::ci::{median_ci, median_ci_ranks, median_ratio_ci};
use loadlab_stats::mann_whitney::{
    mann_whitney_u, mann_whitney_u_with, min_p_value, Method, EXACT_LIMIT,
};
use loadlab_stats::outliers::{modified_z_scores, outlier_indices};

/// `a` and `b` agree to `rel` relative to the larger (exact equality for zeros and infinities).
fn close(a: f64, b: f64, rel: f64) -> bool {
    a == b || (a - b).abs() <= rel * a.abs().max(b.abs())
}

struct MwCase {
    name: &'static str,
    x: &'static [f64],
    y: &'static [f64],
    /// scipy's `statistic`: U of `x`.
    u: f64,
    /// `method='exact'`, only where there are no ties (scipy's exact ignores ties).
    exact: Option<f64>,
    /// Exhaustive permutation test, where C(n1+n2, n1) ≤ 200 000 and both sizes ≥ 2.
    permutation: Option<f64>,
    /// `method='asymptotic'` (tie and continuity corrections).
    asymptotic: f64,
}

// name, x, y, U, p exact (no ties; None with ties), p permutation (None if too many splits), p asymptotic
#[rustfmt::skip]
const MW_CASES: &[MwCase] = &[
    MwCase { name: "scipy_doc", x: &[19.0, 22.0, 16.0, 29.0, 24.0], y: &[20.0, 11.0, 17.0, 12.0], u: 17.0, exact: Some(0.1111111111111111), permutation: Some(0.1111111111111111), asymptotic: 0.11134688653314041 },
    MwCase { name: "disjoint_3v3", x: &[1.0, 2.0, 3.0], y: &[4.0, 5.0, 6.0], u: 0.0, exact: Some(0.1), permutation: Some(0.1), asymptotic: 0.08085559837005224 },
    MwCase { name: "disjoint_4v4", x: &[4.1, 4.2, 4.3, 4.4], y: &[1.1, 1.2, 1.3, 1.4], u: 16.0, exact: Some(0.02857142857142857), permutation: Some(0.02857142857142857), asymptotic: 0.03038282197657749 },
    MwCase { name: "interleaved_5v5", x: &[1.0, 3.0, 5.0, 7.0, 9.0], y: &[2.0, 4.0, 6.0, 8.0, 10.0], u: 10.0, exact: Some(0.6904761904761905), permutation: Some(0.6904761904761905), asymptotic: 0.6761033140231469 },
    MwCase { name: "rps_8v10", x: &[10194.4, 10140.8, 9807.1, 9646.5, 9956.6, 10361.0, 10400.1, 10272.5], y: &[10454.0, 10830.0, 10719.9, 10283.9, 10031.4, 10240.6, 10224.0, 10556.3, 9780.3, 10292.6], u: 22.0, exact: Some(0.12198912198912198), permutation: Some(0.12198912198912198), asymptotic: 0.11996612290584208 },
    MwCase { name: "rps_20v20", x: &[5167.12, 4907.97, 4924.15, 4991.57, 4858.22, 4987.04, 4998.43, 4999.53, 4901.15, 4963.42, 5065.38, 4928.54, 5054.72, 5065.55, 4857.3, 4935.47, 5065.53, 5049.35, 5017.94, 4965.14], y: &[5070.86, 5247.48, 5037.85, 5117.96, 5018.33, 5040.17, 5124.8, 4967.1, 5035.76, 4998.97, 4974.13, 5077.58, 5183.98, 5082.14, 5021.82, 4914.89, 5141.9, 5081.05, 4996.87, 5146.14], u: 93.0, exact: Some(0.0032109306327036164), permutation: None, asymptotic: 0.003966238640223918 },
    MwCase { name: "skewed_12v15", x: &[2.197, 0.442, 1.343, 1.526, 1.337, 2.228, 1.367, 0.637, 6.686, 1.076, 2.098, 2.673], y: &[2.318, 0.607, 0.636, 1.063, 1.517, 0.745, 0.934, 1.194, 1.176, 1.639, 1.547, 1.463, 1.095, 0.984, 0.574], u: 124.0, exact: Some(0.10280029866784478), permutation: None, asymptotic: 0.10212608473203719 },
    MwCase { name: "ties_small", x: &[1.0, 1.0, 2.0, 3.0], y: &[2.0, 3.0, 3.0, 4.0, 4.0], u: 2.5, exact: None, permutation: Some(0.1111111111111111), asymptotic: 0.07723605293697135 },
    MwCase { name: "ties_all_groups_3v3", x: &[1.0, 1.0, 1.0], y: &[2.0, 2.0, 2.0], u: 0.0, exact: None, permutation: Some(0.1), asymptotic: 0.04685417760387376 },
    MwCase { name: "ties_p50_ms_7v7", x: &[1.023, 1.023, 1.031, 1.019, 1.023, 1.027, 1.031], y: &[1.031, 1.035, 1.031, 1.039, 1.027, 1.035, 1.043], u: 4.5, exact: None, permutation: Some(0.01048951048951049), asymptotic: 0.01119291391881899 },
    MwCase { name: "ties_10v10", x: &[3.0, 5.0, 5.0, 3.0, 5.0, 4.0, 5.0, 5.0, 2.0, 3.0], y: &[3.0, 4.0, 1.0, 2.0, 2.0, 3.0, 4.0, 6.0, 6.0, 5.0], u: 57.5, exact: None, permutation: Some(0.5680032042261144), asymptotic: 0.5875702446792748 },
    MwCase { name: "large_ties_25v30", x: &[6.0, 6.0, 3.0, 10.0, 8.0, 8.0, 4.0, 3.0, 2.0, 11.0, 9.0, 9.0, 1.0, 6.0, 10.0, 8.0, 0.0, 4.0, 4.0, 0.0, 11.0, 10.0, 6.0, 8.0, 11.0], y: &[10.0, 12.0, 12.0, 2.0, 3.0, 13.0, 9.0, 6.0, 7.0, 7.0, 2.0, 8.0, 6.0, 2.0, 5.0, 8.0, 2.0, 12.0, 7.0, 5.0, 4.0, 10.0, 2.0, 12.0, 9.0, 9.0, 10.0, 8.0, 9.0, 7.0], u: 324.5, exact: None, permutation: None, asymptotic: 0.39600645380324573 },
    MwCase { name: "large_30v40", x: &[-0.3697, -1.7399, 1.0165, 0.1052, 0.5855, 1.1731, -0.0331, -0.0173, 0.4473, 2.3887, -0.2086, -0.4167, 0.1282, 0.7555, -0.2219, -0.2799, 0.8337, 2.0486, 1.3577, -1.7099, -0.0632, 1.3603, -1.0188, 0.2396, 0.7429, -1.0811, -1.3536, -0.7879, 1.3429, -0.1356], y: &[0.7493, -0.1482, 0.47, -1.4765, 0.0622, 0.8434, -1.0937, 0.4977, 0.3448, 1.3224, -2.104, 0.3593, 0.8283, 0.3933, 0.8332, -0.7325, 2.3308, 1.5193, 0.8724, 1.7289, 0.1396, 1.5262, -0.559, 2.101, 1.5058, -0.39, -0.3661, 1.1299, 0.521, 1.6348, 0.4899, 0.7141, 0.468, 0.5557, -0.2554, -0.6655, 1.0811, 0.8048, -1.0651, 0.0542], u: 499.0, exact: Some(0.2346392384000282), permutation: None, asymptotic: 0.23298078708775727 },
    MwCase { name: "identical_6v6", x: &[3.1, 2.7, 3.3, 2.9, 3.0, 3.2], y: &[3.1, 2.7, 3.3, 2.9, 3.0, 3.2], u: 18.0, exact: None, permutation: Some(1.0), asymptotic: 1.0 },
    MwCase { name: "all_equal_4v6", x: &[5.0, 5.0, 5.0, 5.0], y: &[5.0, 5.0, 5.0, 5.0, 5.0, 5.0], u: 12.0, exact: None, permutation: Some(1.0), asymptotic: 1.0 },
    MwCase { name: "one_v_one", x: &[1.0], y: &[2.0], u: 0.0, exact: Some(1.0), permutation: None, asymptotic: 1.0 },
];

// n1, n2, min p
#[rustfmt::skip]
const MIN_P: &[(usize, usize, f64)] = &[
    (1, 1, 1.0),
    (2, 2, 0.3333333333333333),
    (3, 3, 0.1),
    (3, 4, 0.05714285714285714),
    (3, 5, 0.03571428571428571),
    (4, 4, 0.02857142857142857),
    (5, 5, 0.007936507936507936),
    (9, 9, 4.113533525298231e-05),
    (6, 11, 0.00016160310277957336),
    (20, 20, 1.4508889103849684e-11),
    (21, 21, 3.125399998400872e-08),
    (10, 30, 3.01793408604098e-06),
    (50, 50, 7.066071930388932e-18),
];

// confidence, n, lo rank, hi rank, coverage, has_ci
#[rustfmt::skip]
const RANKS: &[(f64, usize, usize, usize, f64, bool)] = &[
    (0.95, 1, 1, 1, 0.0, false),
    (0.95, 2, 1, 2, 0.5, false),
    (0.95, 3, 1, 3, 0.75, false),
    (0.95, 4, 1, 4, 0.875, false),
    (0.95, 5, 1, 5, 0.9375, false),
    (0.95, 6, 1, 6, 0.96875, true),
    (0.95, 7, 1, 7, 0.984375, true),
    (0.95, 8, 1, 8, 0.9921875, true),
    (0.95, 9, 2, 8, 0.9609375, true),
    (0.95, 10, 2, 9, 0.978515625, true),
    (0.95, 11, 2, 10, 0.98828125, true),
    (0.95, 12, 3, 10, 0.96142578125, true),
    (0.95, 13, 3, 11, 0.9775390625, true),
    (0.95, 14, 3, 12, 0.987060546875, true),
    (0.95, 15, 4, 12, 0.96484375, true),
    (0.95, 16, 4, 13, 0.978729248046875, true),
    (0.95, 17, 5, 13, 0.950958251953125, true),
    (0.95, 18, 5, 14, 0.9691162109375, true),
    (0.95, 19, 5, 15, 0.9807891845703125, true),
    (0.95, 20, 6, 15, 0.9586105346679688, true),
    (0.95, 21, 6, 16, 0.9733963012695312, true),
    (0.95, 22, 6, 17, 0.9830994606018066, true),
    (0.95, 23, 7, 17, 0.9653103351593018, true),
    (0.95, 24, 7, 18, 0.9773441553115845, true),
    (0.95, 25, 8, 18, 0.9567147493362427, true),
    (0.95, 26, 8, 19, 0.9710407257080078, true),
    (0.95, 27, 8, 20, 0.9808427095413208, true),
    (0.95, 28, 9, 20, 0.9643018618226051, true),
    (0.95, 29, 9, 21, 0.9758804552257061, true),
    (0.95, 30, 10, 21, 0.9572260547429323, true),
    (0.95, 31, 10, 22, 0.9705506265163422, true),
    (0.95, 32, 10, 23, 0.9799383929930627, true),
    (0.95, 33, 11, 23, 0.9649179666303098, true),
    (0.95, 34, 11, 24, 0.9756934898905456, true),
    (0.95, 35, 12, 24, 0.959040408488363, true),
    (0.95, 36, 12, 25, 0.9711832803441212, true),
    (0.95, 37, 13, 25, 0.952968972560484, true),
    (0.95, 38, 13, 26, 0.9664475603203755, true),
    (0.95, 39, 13, 27, 0.976297297529527, true),
    (0.95, 40, 14, 27, 0.9615226917157997, true),
    (0.95, 50, 18, 33, 0.9671608624357315, true),
    (0.95, 64, 24, 41, 0.9672342409011768, true),
    (0.95, 100, 40, 61, 0.9647997997822951, true),
    (0.95, 257, 113, 145, 0.9542882462527713, true),
    (0.95, 1000, 469, 532, 0.9537088026395019, true),
    (0.9746794344808963, 1, 1, 1, 0.0, false),
    (0.9746794344808963, 2, 1, 2, 0.5, false),
    (0.9746794344808963, 3, 1, 3, 0.75, false),
    (0.9746794344808963, 4, 1, 4, 0.875, false),
    (0.9746794344808963, 5, 1, 5, 0.9375, false),
    (0.9746794344808963, 6, 1, 6, 0.96875, false),
    (0.9746794344808963, 7, 1, 7, 0.984375, true),
    (0.9746794344808963, 8, 1, 8, 0.9921875, true),
    (0.9746794344808963, 9, 1, 9, 0.99609375, true),
    (0.9746794344808963, 10, 2, 9, 0.978515625, true),
    (0.9746794344808963, 16, 4, 13, 0.978729248046875, true),
    (0.9746794344808963, 25, 7, 19, 0.985366702079773, true),
    (0.9746794344808963, 50, 17, 34, 0.9846533221673699, true),
    (0.9746794344808963, 100, 39, 62, 0.9790212643221483, true),
    (0.9746794344808963, 257, 111, 147, 0.9754608125256736, true),
    (0.9746794344808963, 1000, 465, 536, 0.9752943545484305, true),
    (0.99, 1, 1, 1, 0.0, false),
    (0.99, 2, 1, 2, 0.5, false),
    (0.99, 3, 1, 3, 0.75, false),
    (0.99, 4, 1, 4, 0.875, false),
    (0.99, 5, 1, 5, 0.9375, false),
    (0.99, 6, 1, 6, 0.96875, false),
    (0.99, 7, 1, 7, 0.984375, false),
    (0.99, 8, 1, 8, 0.9921875, true),
    (0.99, 9, 1, 9, 0.99609375, true),
    (0.99, 10, 1, 10, 0.998046875, true),
    (0.99, 16, 3, 14, 0.995819091796875, true),
    (0.99, 25, 6, 20, 0.9959226846694946, true),
    (0.99, 50, 16, 35, 0.9933995520331891, true),
    (0.99, 100, 37, 64, 0.9933628794840739, true),
    (0.99, 257, 108, 150, 0.9913329592442925, true),
    (0.99, 1000, 459, 542, 0.9913600509977395, true),
];

// name, median, lo, hi, coverage, has_ci (95%) of each sample above
#[rustfmt::skip]
const SAMPLE_CIS: &[(&str, &str, f64, f64, f64, f64, bool)] = &[
    ("scipy_doc", "x", 22.0, 16.0, 29.0, 0.9375, false),
    ("scipy_doc", "y", 14.5, 11.0, 20.0, 0.875, false),
    ("disjoint_3v3", "x", 2.0, 1.0, 3.0, 0.75, false),
    ("disjoint_3v3", "y", 5.0, 4.0, 6.0, 0.75, false),
    ("disjoint_4v4", "x", 4.25, 4.1, 4.4, 0.875, false),
    ("disjoint_4v4", "y", 1.25, 1.1, 1.4, 0.875, false),
    ("interleaved_5v5", "x", 5.0, 1.0, 9.0, 0.9375, false),
    ("interleaved_5v5", "y", 6.0, 2.0, 10.0, 0.9375, false),
    ("rps_8v10", "x", 10167.599999999999, 9646.5, 10400.1, 0.9921875, true),
    ("rps_8v10", "y", 10288.25, 10031.4, 10719.9, 0.978515625, true),
    ("rps_20v20", "x", 4989.305, 4928.54, 5049.35, 0.9586105346679688, true),
    ("rps_20v20", "y", 5055.514999999999, 5018.33, 5117.96, 0.9586105346679688, true),
    ("skewed_12v15", "x", 1.4465, 1.076, 2.228, 0.96142578125, true),
    ("skewed_12v15", "y", 1.095, 0.745, 1.517, 0.96484375, true),
    ("ties_small", "x", 1.5, 1.0, 3.0, 0.875, false),
    ("ties_small", "y", 3.0, 2.0, 4.0, 0.9375, false),
    ("ties_all_groups_3v3", "x", 1.0, 1.0, 1.0, 0.75, false),
    ("ties_all_groups_3v3", "y", 2.0, 2.0, 2.0, 0.75, false),
    ("ties_p50_ms_7v7", "x", 1.023, 1.019, 1.031, 0.984375, true),
    ("ties_p50_ms_7v7", "y", 1.035, 1.027, 1.043, 0.984375, true),
    ("ties_10v10", "x", 4.5, 3.0, 5.0, 0.978515625, true),
    ("ties_10v10", "y", 3.5, 2.0, 6.0, 0.978515625, true),
    ("large_ties_25v30", "x", 6.0, 4.0, 9.0, 0.9567147493362427, true),
    ("large_ties_25v30", "y", 7.5, 6.0, 9.0, 0.9572260547429323, true),
    ("large_30v40", "x", 0.04395, -0.2219, 0.7429, 0.9572260547429323, true),
    ("large_30v40", "y", 0.4938, 0.1396, 0.8283, 0.9615226917157997, true),
    ("identical_6v6", "x", 3.05, 2.7, 3.3, 0.96875, true),
    ("identical_6v6", "y", 3.05, 2.7, 3.3, 0.96875, true),
    ("all_equal_4v6", "x", 5.0, 5.0, 5.0, 0.875, false),
    ("all_equal_4v6", "y", 5.0, 5.0, 5.0, 0.96875, true),
    ("one_v_one", "x", 1.0, 1.0, 1.0, 0.0, false),
    ("one_v_one", "y", 2.0, 2.0, 2.0, 0.0, false),
];

// name, ratio median(y)/median(x), lo, hi, confidence, has_ci
#[rustfmt::skip]
const RATIOS: &[(&str, f64, f64, f64, f64, bool)] = &[
    ("scipy_doc", 0.6590909090909091, 0.3793103448275862, 1.25, 0.8203125, false),
    ("disjoint_3v3", 2.5, 1.3333333333333333, 6.0, 0.5625, false),
    ("disjoint_4v4", 0.29411764705882354, 0.25, 0.34146341463414637, 0.765625, false),
    ("interleaved_5v5", 1.2, 0.2222222222222222, 10.0, 0.87890625, false),
    ("rps_8v10", 1.0118661237656872, 0.964548417803675, 1.1112735188928626, 0.9708709716796875, true),
    ("rps_20v20", 1.0132703853542726, 0.9889707046087617, 1.0407481494268047, 0.9765037992619909, true),
    ("skewed_12v15", 0.7569996543380574, 0.23793490460157127, 2.4285714285714284, 0.9863139688968658, true),
    ("ties_small", 2.0, 0.6666666666666666, 4.0, 0.8203125, false),
    ("ties_all_groups_3v3", 2.0, 2.0, 2.0, 0.5625, false),
    ("ties_p50_ms_7v7", 1.0117302052785924, 0.9961202715809894, 1.0235525024533858, 0.968994140625, true),
    ("ties_10v10", 0.7777777777777778, 0.4, 2.0, 0.9574928283691406, true),
    ("identical_6v6", 1.0, 0.8181818181818182, 1.222222222222222, 0.9384765625, false),
    ("all_equal_4v6", 1.0, 1.0, 1.0, 0.84765625, false),
    ("one_v_one", 2.0, 2.0, 2.0, 0.0, false),
];

// values, modified z-scores, outlier indices at 3.5
#[rustfmt::skip]
const OUTLIERS: &[(&[f64], &[f64], &[usize])] = &[
    (&[2.33269488, 1.42195907, -0.57527698, -0.31293437, 2.2948158, 0.75813273, -1.0712388, -0.96394741, -1.15897446, 1.10976285, 20.0, -500.0], &[1.1417140747436945, 0.6489402670675312, -0.43170859111956483, -0.28976230392415664, 1.1212187584533753, 0.28976230392415664, -0.7000597329324687, -0.6420073469379306, -0.7475310575169071, 0.48001957856237065, 10.70100132332457, -270.6565308808883], &[10, 11]),
    (&[0.5, 0.3, 0.29, 0.31, 0.3], &[13.489999999999988, 0.0, -0.6745, 0.6745, 0.0], &[0]),
    (&[10412.3, 10388.0, 10450.9, 9120.4, 10401.7, 10433.2, 10397.5, 11890.0, 10420.1], &[0.0, -0.7842272727271946, 1.2457272727271977, -41.69313636363345, -0.34209090909083834, 0.6745, -0.4776363636363069, 47.68940909090579, 0.25172727272729045], &[3, 7]),
    (&[1.02, 0.98, 1.01, 0.99, 1.0, 1.05, 0.95], &[0.6745, -0.6745, 0.33725, -0.33725, 0.0, 1.6862500000000002, -1.6862500000000002], &[]),
    (&[1.375, 1.002, 0.718, 1.094, 0.763, 0.895, 1.46, 0.602, 1.097, 1.543, 1.096, 1.281, 0.564, 0.848, 0.789], &[1.052671548117155, 0.0, -0.8014979079497908, 0.25964016736401696, -0.6745, -0.30197280334728027, 1.2925564853556484, -1.1288702928870293, 0.2681066945606694, 1.526797071129707, 0.2652845188284521, 0.7873870292887027, -1.2361129707112974, -0.43461506276150635, -0.601123430962343], &[]),
];

#[test]
fn u_statistic_matches_scipy() {
    for c in MW_CASES {
        for method in [Method::Exact, Method::Asymptotic] {
            let r = mann_whitney_u_with(c.x, c.y, method).unwrap();
            assert_eq!((r.u, r.n1, r.n2), (c.u, c.x.len(), c.y.len()), "{}", c.name);
        }
    }
}

#[test]
fn exact_p_matches_scipy_exact_without_ties() {
    let mut checked = 0;
    for c in MW_CASES {
        let Some(want) = c.exact else { continue };
        let r = mann_whitney_u_with(c.x, c.y, Method::Exact).unwrap();
        assert!(!r.ties, "{}", c.name);
        assert!(close(r.p_value, want, 1e-12), "{}: {} vs scipy {want}", c.name, r.p_value);
        checked += 1;
    }
    assert!(checked >= 9);
}

#[test]
fn exact_p_matches_scipy_permutation_test_with_and_without_ties() {
    let mut tied = 0;
    for c in MW_CASES {
        let Some(want) = c.permutation else { continue };
        let r = mann_whitney_u_with(c.x, c.y, Method::Exact).unwrap();
        assert!(close(r.p_value, want, 1e-12), "{}: {} vs scipy {want}", c.name, r.p_value);
        tied += usize::from(r.ties);
    }
    assert!(tied >= 5);
}

#[test]
fn asymptotic_p_matches_scipy() {
    for c in MW_CASES {
        let r = mann_whitney_u_with(c.x, c.y, Method::Asymptotic).unwrap();
        assert!(
            close(r.p_value, c.asymptotic, 1e-12),
            "{}: {} vs {}",
            c.name,
            r.p_value,
            c.asymptotic
        );
    }
}

#[test]
fn default_method_is_exact_up_to_the_limit_and_asymptotic_beyond() {
    for c in MW_CASES {
        let r = mann_whitney_u(c.x, c.y).unwrap();
        let small = c.x.len() <= EXACT_LIMIT && c.y.len() <= EXACT_LIMIT;
        let want = if small { c.permutation.or(c.exact).unwrap() } else { c.asymptotic };
        assert_eq!(r.method, if small { Method::Exact } else { Method::Asymptotic }, "{}", c.name);
        assert!(close(r.p_value, want, 1e-12), "{}: {} vs {want}", c.name, r.p_value);
    }
}

#[test]
fn ties_on_small_samples_do_not_fake_significance() {
    // The reason ties take the exact path: 3 vs 3 can never reach p < 0.1, but the normal
    // approximation says 0.047 for [1, 1, 1] vs [2, 2, 2].
    let c = MW_CASES.iter().find(|c| c.name == "ties_all_groups_3v3").unwrap();
    assert!(c.asymptotic < 0.05);
    let r = mann_whitney_u(c.x, c.y).unwrap();
    assert_eq!(r.p_value, 0.1);
    assert!(!r.significant(0.05) && r.p_value >= min_p_value(3, 3));
}

#[test]
fn min_p_value_matches_scipy_and_benchstats_table() {
    for &(n1, n2, want) in MIN_P {
        assert!(close(min_p_value(n1, n2), want, 1e-12), "{n1} vs {n2}: {}", min_p_value(n1, n2));
    }
    // golang.org/x/perf benchmath/anone.go, uTestMinP[n] for n vs n ("go run mktables.go").
    let benchstat = [
        1.0,
        0.3333333333333333,
        0.1,
        0.02857142857142857,
        0.007936507936507936,
        0.0021645021645021645,
        0.0005827505827505828,
        0.0001554001554001554,
        4.113533525298231e-05,
    ];
    for (i, want) in benchstat.into_iter().enumerate() {
        assert!(close(min_p_value(i + 1, i + 1), want, 1e-12), "n = {}", i + 1);
    }
}

#[test]
fn median_ci_ranks_match_the_python_rule() {
    for &(confidence, n, lo, hi, coverage, has_ci) in RANKS {
        let r = median_ci_ranks(n, confidence).unwrap();
        assert_eq!((r.lo, r.hi, r.has_ci), (lo, hi, has_ci), "n = {n} at {confidence}");
        assert!((r.coverage - coverage).abs() < 1e-12, "n = {n}: {} vs {coverage}", r.coverage);
    }
}

#[test]
fn median_ci_of_samples_matches_python() {
    for &(name, which, median, lo, hi, coverage, has_ci) in SAMPLE_CIS {
        let c = MW_CASES.iter().find(|c| c.name == name).unwrap();
        let xs = if which == "x" { c.x } else { c.y };
        let m = median_ci(xs, 0.95).unwrap();
        assert!(close(m.median, median, 1e-15), "{name}.{which}: {} vs {median}", m.median);
        assert_eq!((m.lo, m.hi, m.has_ci), (lo, hi, has_ci), "{name}.{which}");
        assert!((m.confidence - coverage).abs() < 1e-12, "{name}.{which}");
    }
}

#[test]
fn ratio_ci_matches_python() {
    for &(name, ratio, lo, hi, confidence, has_ci) in RATIOS {
        let c = MW_CASES.iter().find(|c| c.name == name).unwrap();
        let r = median_ratio_ci(c.y, c.x, 0.95).unwrap();
        assert!(close(r.ratio, ratio, 1e-14), "{name}: {} vs {ratio}", r.ratio);
        assert!(close(r.lo, lo, 1e-14) && close(r.hi, hi, 1e-14), "{name}: {r:?}");
        assert!((r.confidence - confidence).abs() < 1e-12, "{name}: {}", r.confidence);
        assert_eq!(r.has_ci, has_ci, "{name}");
        assert!(!has_ci || r.confidence >= 0.95, "{name}");
    }
}

#[test]
fn modified_z_scores_and_outliers_match_scipy() {
    for &(xs, scores, outliers) in OUTLIERS {
        for (got, want) in modified_z_scores(xs).into_iter().zip(scores) {
            assert!((got - want).abs() <= 1e-9 * want.abs().max(1.0), "{got} vs {want} in {xs:?}");
        }
        assert_eq!(outlier_indices(xs), outliers, "{xs:?}");
    }
}
