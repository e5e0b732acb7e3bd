//! Outlier detection among repetitions with modified Z-scores (distance from the median in units
//! of the median absolute deviation), so a report can warn that a repetition is unlike the others.
//!
//! The rule is Iglewicz and Hoaglin's (1993, *How to Detect and Handle Outliers*, ASQC Basic
//! References in Quality Control vol. 16, §3.2), the reference hyperfine's
//! `src/outlier_detection.rs` cites:
//!
//! ```text
//!     M_i = 0.6745 · (x_i - median) / MAD,   MAD = median(|x_i - median|)
//! ```
//!
//! and `x_i` is an outlier when `|M_i| > 3.5`. The median and the MAD are themselves insensitive
//! to the outliers, unlike the mean and standard deviation of an ordinary Z-score, which one wild
//! value inflates enough to hide itself in a small sample. 0.6745 is the 75th percentile of the
//! standard normal (1/1.4826), so for normal data `M_i` is on the scale of an ordinary Z-score.
//!
//! hyperfine computes the same score but warns only far out: its `OUTLIER_THRESHOLD` is
//! `1.4826 · 10` on `(x - median)/MAD`, i.e. about 10 on this scale ([`HYPERFINE_THRESHOLD`]).
//! [`THRESHOLD`] (3.5) flags more; callers that want hyperfine's quieter warnings pass the other.
//!
//! When more than half of the values are equal the MAD is 0. hyperfine then divides by
//! `f64::EPSILON`, making every value off the median an outlier (stats.stackexchange.com/q/339932);
//! here such values score ±∞ and are flagged, which is the same decision without the magic
//! constant, and values on the median score 0.

use crate::summary::median;

/// Converts MAD units to standard-deviation units for normal data (Iglewicz & Hoaglin).
pub const MODIFIED_Z_FACTOR: f64 = 0.6745;

/// Iglewicz & Hoaglin's recommended cut-off on `|modified Z-score|`.
pub const THRESHOLD: f64 = 3.5;

/// hyperfine's cut-off (`1.4826 · 10` on `(x - median)/MAD`) expressed on the modified Z-score
/// scale of this module: about 10.
pub const HYPERFINE_THRESHOLD: f64 = MODIFIED_Z_FACTOR * 1.4826 * 10.0;

/// The modified Z-score of each value, in input order. NaN values are left out of the median and
/// the MAD and score NaN (never an outlier). Empty input gives an empty vector.
pub fn modified_z_scores(xs: &[f64]) -> Vec<f64> {
    let values: Vec<f64> = xs.iter().copied().filter(|x| !x.is_nan()).collect();
    let Some(center) = median(&values) else {
        return vec![f64::NAN; xs.len()];
    };
    let deviations: Vec<f64> = values.iter().map(|x| (x - center).abs()).collect();
    let mad = median(&deviations).unwrap_or(0.0);
    xs.iter()
        .map(|&x| {
            let d = x - center;
            if mad > 0.0 {
                MODIFIED_Z_FACTOR * d / mad
            } else if d == 0.0 {
                0.0
            } else {
                // NaN stays NaN; anything else off the median is infinitely far in MAD units.
                d.signum() * f64::INFINITY
            }
        })
        .collect()
}

/// Indices (ascending) of the values whose `|modified Z-score|` exceeds [`THRESHOLD`].
pub fn outlier_indices(xs: &[f64]) -> Vec<usize> {
    outlier_indices_above(xs, THRESHOLD)
}

/// Indices (ascending) of the values whose `|modified Z-score|` exceeds `threshold`.
pub fn outlier_indices_above(xs: &[f64], threshold: f64) -> Vec<usize> {
    modified_z_scores(xs)
        .iter()
        .enumerate()
        .filter(|(_, z)| z.abs() > threshold)
        .map(|(i, _)| i)
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn tiny_samples_have_no_outliers() {
        assert!(modified_z_scores(&[]).is_empty());
        assert!(outlier_indices(&[]).is_empty());
        assert_eq!(modified_z_scores(&[50.0]), vec![0.0]);
        assert!(outlier_indices(&[50.0]).is_empty());
        // Two values are each one MAD from their mean-of-two median.
        assert_eq!(modified_z_scores(&[1000.0, 0.0]), vec![MODIFIED_Z_FACTOR, -MODIFIED_Z_FACTOR]);
        assert!(outlier_indices(&[1000.0, 0.0]).is_empty());
    }

    #[test]
    fn all_equal_values_have_no_outliers() {
        assert_eq!(modified_z_scores(&[4.0; 5]), vec![0.0; 5]);
        assert!(outlier_indices(&[4.0; 5]).is_empty());
    }

    #[test]
    fn zero_mad_flags_every_value_off_the_median() {
        // hyperfine's test_detect_outliers_if_mad_becomes_0.
        assert_eq!(outlier_indices(&[10.0, 10.0, 10.0, 10.0, 10.0, 10.0, 10.0, 100.0]), vec![7]);
        let xs = [10.0, 100.0, 10.0, 10.0, 10.0, 10.0, 10.0, 10.0, 100.0];
        assert_eq!(outlier_indices(&xs), vec![1, 8]);
        assert_eq!(modified_z_scores(&[1.0, 1.0, 0.0])[2], f64::NEG_INFINITY);
    }

    #[test]
    fn nan_is_ignored_and_never_an_outlier() {
        let z = modified_z_scores(&[1.0, f64::NAN, 2.0, 3.0, 100.0]);
        assert!(z[1].is_nan());
        assert_eq!(outlier_indices(&[1.0, f64::NAN, 2.0, 3.0, 100.0]), vec![4]);
        assert!(modified_z_scores(&[f64::NAN])[0].is_nan());
    }

    #[test]
    fn hyperfine_threshold_is_about_ten() {
        assert!((HYPERFINE_THRESHOLD - 10.0).abs() < 1e-3);
        // hyperfine's own cases: [-0.2, 0, 0.2, 4] has one outlier at either threshold.
        assert_eq!(outlier_indices_above(&[-0.2, 0.0, 0.2, 4.0], HYPERFINE_THRESHOLD), vec![3]);
        assert_eq!(outlier_indices(&[-0.2, 0.0, 0.2, 4.0]), vec![3]);
        // A value 6 MADs out (score 4.05) is an outlier at 3.5 but not at hyperfine's 10.
        let xs = [9.0, 10.0, 11.0, 10.0, 16.0];
        assert_eq!(outlier_indices(&xs), vec![4]);
        assert!(outlier_indices_above(&xs, HYPERFINE_THRESHOLD).is_empty());
    }
}
