//! A view workload's own figures (a suite's `view = true`): views per second and page-load
//! time (from a view's due time to its last resource's last byte), as its cells stored them
//! (`metric::VIEWS_RPS`, `VIEW_P50_US`, `VIEW_P99_US`), the median over a stack's repetitions,
//! beside the requests' figures of the same cells.

use loadlab_stats::format::micros;
use loadlab_stats::summary::median;
use loadlab_store::{metric, CellRecord};
use serde::Serialize;

/// One stack's views: each figure the median over its repetitions.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct ViewFigures {
    pub views_per_s: f64,
    pub p50_us: f64,
    pub p99_us: f64,
}

impl ViewFigures {
    /// The medians of `cells` (one stack's repetitions); `None` for a workload of requests.
    pub fn of(cells: &[&CellRecord]) -> Option<ViewFigures> {
        let values = |name: &str| -> Vec<f64> {
            cells.iter().filter_map(|c| c.metrics.get(name).copied()).collect()
        };
        let rps = values(metric::VIEWS_RPS);
        Some(ViewFigures {
            views_per_s: median(&rps)?,
            // NaN (shown "—") when no repetition completed a view.
            p50_us: median(&values(metric::VIEW_P50_US)).unwrap_or(f64::NAN),
            p99_us: median(&values(metric::VIEW_P99_US)).unwrap_or(f64::NAN),
        })
    }

    /// `12.3 views/s, page load p50 45.1ms p99 80.2ms`.
    pub fn line(&self) -> String {
        format!(
            "{:.1} views/s, page load p50 {} p99 {}",
            self.views_per_s,
            micros(self.p50_us),
            micros(self.p99_us)
        )
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn medians_over_the_repetitions_and_none_for_requests_alone() {
        let cells: Vec<CellRecord> = [(10.0, 40_000.0), (12.0, 50_000.0), (30.0, 45_000.0)]
            .into_iter()
            .map(|(rps, p50)| {
                let mut c = crate::testcell::open_cell("wp", "front page", 10.0, 0, 1.0);
                c.metrics.insert(metric::VIEWS_RPS.into(), rps);
                c.metrics.insert(metric::VIEW_P50_US.into(), p50);
                c.metrics.insert(metric::VIEW_P99_US.into(), 2.0 * p50);
                c
            })
            .collect();
        let refs: Vec<&CellRecord> = cells.iter().collect();
        let v = ViewFigures::of(&refs).unwrap();
        assert_eq!((v.views_per_s, v.p50_us, v.p99_us), (12.0, 45_000.0, 90_000.0));
        assert!(v.line().starts_with("12.0 views/s, page load p50 "), "{}", v.line());
        let plain = crate::testcell::open_cell("wp", "front page", 10.0, 0, 1.0);
        assert_eq!(ViewFigures::of(&[&plain]), None);
        // No view completed: a rate of 0 and no page-load time, not one of 0 µs.
        let mut none = plain.clone();
        none.metrics.insert(metric::VIEWS_RPS.into(), 0.0);
        let v = ViewFigures::of(&[&none]).expect("a view workload's figures");
        assert!(v.line().contains("0.0 views/s, page load p50 — p99 —"), "{}", v.line());
    }
}
