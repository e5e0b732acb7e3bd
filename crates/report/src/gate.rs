//! The SLO gate over a stored run (`loadlab run --slo`, a suite's `slo`): each stack in each
//! (workload, load) group judged over its repetitions, every figure the median of theirs.

use loadlab_stats::slo::{Figures, Slo, SloVerdict};
use loadlab_store::{metric, CellRecord};

use crate::group::groups;

/// One stack's verdict under one workload and load.
#[derive(Debug, Clone)]
pub struct CellGate {
    pub workload: String,
    pub load_label: String,
    pub stack: String,
    pub verdict: SloVerdict,
}

/// The verdict of every (workload, load, stack) whose workload has an SLO (`slo_of`), in the
/// run's order.
pub fn gates(cells: &[CellRecord], slo_of: &dyn Fn(&str) -> Option<Slo>) -> Vec<CellGate> {
    let mut out = Vec::new();
    for g in groups(cells) {
        let Some(slo) = slo_of(&g.workload) else { continue };
        for s in &g.stacks {
            // A cell without a latency histogram judges as one that measured nothing.
            let empty = loadlab_stats::Recorder::new();
            let reps: Vec<Figures<'_>> = s.cells.iter().map(|c| figures(c, &empty)).collect();
            out.push(CellGate {
                workload: g.workload.clone(),
                load_label: g.load_label(),
                stack: s.stack.clone(),
                verdict: slo.judge_repetitions(&reps),
            });
        }
    }
    out
}

/// A stored cell's figures (`non_2xx` is 0 for cells stored before it was kept).
pub fn figures<'a>(c: &'a CellRecord, empty: &'a loadlab_stats::Recorder) -> Figures<'a> {
    let get = |k: &str| c.metrics.get(k).copied().filter(|v| v.is_finite()).unwrap_or(0.0);
    Figures {
        rps: get(metric::RPS),
        completed: get(metric::COMPLETED) as u64,
        failed: get(metric::FAILED) as u64,
        non_2xx: get(metric::NON_2XX) as u64,
        latency: c.histograms.get("latency").unwrap_or(empty),
    }
}
