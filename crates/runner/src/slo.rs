//! The SLO gate's figures from what loadlab measured: a run's result or a stored cell. The
//! thresholds and their verdict are [`loadlab_stats::slo`]'s.

use loadlab_engine::BenchResult;
use loadlab_store::{metric, CellRecord};

pub use loadlab_stats::slo::{Figures, Outcome, Slo, SloError, SloVerdict, Term};

/// The figures of one `bench` run or sweep step.
pub fn figures(r: &BenchResult) -> Figures<'_> {
    Figures {
        rps: r.rps(),
        completed: r.tally.completed,
        failed: r.tally.failed,
        non_2xx: crate::trust::not_2xx(&r.tally),
        latency: r.latency(),
    }
}

/// The figures of a stored cell; `None` if it kept no latency histogram.
pub fn figures_of_cell(c: &CellRecord) -> Option<Figures<'_>> {
    let get = |k: &str| c.metrics.get(k).copied().filter(|v| v.is_finite()).unwrap_or(0.0);
    Some(Figures {
        rps: get(metric::RPS),
        completed: get(metric::COMPLETED) as u64,
        failed: get(metric::FAILED) as u64,
        non_2xx: get(metric::NON_2XX) as u64,
        latency: c.histograms.get("latency")?,
    })
}
