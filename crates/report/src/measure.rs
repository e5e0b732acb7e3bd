//! The measures a verdict compares across stacks (rate, p50, p99), the metric each is stored
//! under for a workload of requests, and how each is named and shown. A view or visit
//! workload's own metrics and names are [`crate::counted`]'s.

use loadlab_store::{metric, CellRecord};
use serde::Serialize;

use crate::format;

/// A figure compared across stacks.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum Measure {
    /// Completed requests per second.
    Rps,
    /// Median latency, µs.
    P50,
    /// 99th percentile latency, µs.
    P99,
}

impl Measure {
    pub const ALL: [Measure; 3] = [Measure::Rps, Measure::P50, Measure::P99];

    /// The metric name the store keeps it under.
    pub fn metric(self) -> &'static str {
        match self {
            Measure::Rps => metric::RPS,
            Measure::P50 => metric::P50_US,
            Measure::P99 => metric::P99_US,
        }
    }

    /// Its name in table headers.
    pub fn name(self) -> &'static str {
        match self {
            Measure::Rps => "req/s",
            Measure::P50 => "p50",
            Measure::P99 => "p99",
        }
    }

    pub fn higher_is_better(self) -> bool {
        self == Measure::Rps
    }

    /// A value of this measure with its unit (`12,345 req/s`, `45.3 ms`).
    pub fn show(self, v: f64) -> String {
        match self {
            Measure::Rps => format!("{} req/s", format::count(v)),
            Measure::P50 | Measure::P99 => format::micros(v),
        }
    }

    /// The cell's value: the stored metric, or else what the cell's own data gives (the
    /// "latency" histogram, completed requests over the duration), so a cell stored without
    /// summary metrics still counts. `None` when neither is there.
    pub fn value(self, cell: &CellRecord) -> Option<f64> {
        if let Some(v) = cell.figure(self.metric()) {
            return Some(v);
        }
        let latency = cell.histograms.latency();
        match self {
            Measure::Rps => {
                let done = cell.metrics.get(metric::COMPLETED).copied()?;
                (cell.duration_s > 0.0).then(|| done / cell.duration_s)
            }
            Measure::P50 => latency.map(|r| r.percentile(50.0) as f64),
            Measure::P99 => latency.map(|r| r.percentile(99.0) as f64),
        }
    }
}
