//! The SLO gate's figures from a run's result (a stored cell's are the report's:
//! `loadlab_report::gate`). The thresholds and their verdict are [`loadlab_stats::slo`]'s.

use loadlab_engine::BenchResult;

pub use loadlab_stats::slo::{Figures, Outcome, Slo, SloError, SloVerdict, Term};

/// The figures of one `bench` run or sweep step.
pub fn figures(r: &BenchResult) -> Figures<'_> {
    Figures {
        rps: r.rps(),
        completed: r.tally.completed,
        failed: r.tally.failed,
        non_2xx: crate::judge::trust::not_2xx(&r.tally),
        latency: r.latency(),
    }
}
