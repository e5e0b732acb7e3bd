//! Summary statistics over small samples (per-second rates, repetitions).

use serde::Serialize;

/// min / mean / max / population standard deviation of a sample, as httperf prints its
/// "Reply rate [replies/s]: min avg max stddev" line.
#[derive(Debug, Clone, Copy, PartialEq, Serialize)]
pub struct Moments {
    pub samples: usize,
    pub min: f64,
    pub mean: f64,
    pub max: f64,
    pub stdev: f64,
}

impl Moments {
    /// `None` for an empty sample: there is nothing honest to print.
    pub fn of(xs: &[f64]) -> Option<Moments> {
        if xs.is_empty() {
            return None;
        }
        let n = xs.len() as f64;
        let mean = xs.iter().sum::<f64>() / n;
        let var = xs.iter().map(|x| (x - mean) * (x - mean)).sum::<f64>() / n;
        Some(Moments {
            samples: xs.len(),
            min: xs.iter().copied().fold(f64::INFINITY, f64::min),
            mean,
            max: xs.iter().copied().fold(f64::NEG_INFINITY, f64::max),
            stdev: var.sqrt(),
        })
    }
}

/// The median of a sample (mean of the two middle values for an even count); `None` if empty.
pub fn median(xs: &[f64]) -> Option<f64> {
    if xs.is_empty() {
        return None;
    }
    let mut v = xs.to_vec();
    v.sort_by(f64::total_cmp);
    let m = v.len() / 2;
    Some(if v.len() % 2 == 1 { v[m] } else { (v[m - 1] + v[m]) / 2.0 })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn moments_of_known_sample() {
        let m = Moments::of(&[2.0, 4.0, 4.0, 4.0, 5.0, 5.0, 7.0, 9.0]).unwrap();
        assert_eq!((m.samples, m.min, m.mean, m.max), (8, 2.0, 5.0, 9.0));
        assert!((m.stdev - 2.0).abs() < 1e-12);
        assert!(Moments::of(&[]).is_none());
    }

    #[test]
    fn median_odd_and_even() {
        assert_eq!(median(&[3.0, 1.0, 2.0]), Some(2.0));
        assert_eq!(median(&[4.0, 1.0, 3.0, 2.0]), Some(2.5));
        assert_eq!(median(&[]), None);
    }
}
