//! The SLO gate's figures from a run's result (a stored cell's are the report's:
//! `loadlab_report::gate`). The thresholds and their verdict are [`loadlab_stats::slo`]'s.

use loadlab_engine::{BenchConfig, BenchResult};

pub use loadlab_stats::slo::{Figures, Outcome, Slo, SloError, SloVerdict, Term};

/// The figures of one `bench` run or sweep step of `config`.
pub fn figures<'a>(config: &BenchConfig, r: &'a BenchResult) -> Figures<'a> {
    Figures {
        rps: r.rps(),
        completed: r.tally.completed,
        failed: r.tally.failed,
        // An answer a visit's step asked for (a login's 302) is no error.
        non_2xx: crate::judge::trust::unasked_not_2xx(&r.tally),
        latency: r.latency(),
        requests_of: crate::judge::trust::counted(config).own_latency(),
    }
}
