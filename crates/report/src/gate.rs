//! The SLO gate over a stored run (`loadlab run --slo`, a suite's `slo`): each stack in each
//! (workload, load) group judged over its repetitions by the SLO stored with its cells, every
//! figure the median of theirs.
//!
//! The judgement is made once, by [`crate::slo::judge`], into the verdict's
//! [`StackSummary::slo`]; `run`'s exit code, the text table, the JSON and the HTML report all
//! read it from there, so no two of them can disagree.
//!
//! [`StackSummary::slo`]: crate::verdict::StackSummary::slo

use loadlab_stats::slo::SloVerdict;

use crate::verdict::GroupVerdict;

/// One stack's verdict under one workload and load.
#[derive(Debug, Clone)]
pub struct CellGate {
    pub workload: String,
    pub load_label: String,
    pub stack: String,
    pub verdict: SloVerdict,
}

/// The verdict of every (workload, load, stack) judged by an SLO, in the run's order.
pub fn gates(verdicts: &[GroupVerdict]) -> Vec<CellGate> {
    verdicts
        .iter()
        .flat_map(|g| {
            g.stacks.iter().filter_map(|s| {
                Some(CellGate {
                    workload: g.workload.clone(),
                    load_label: g.load_label.clone(),
                    stack: s.stack.clone(),
                    verdict: s.slo.clone()?,
                })
            })
        })
        .collect()
}

/// The gate of the whole run in one line, `None` when nothing was judged: `SLO gate: pass (4
/// of 4)`, or `SLO gate: FAIL (1 of 4 failed: nginx · hello.txt · closed, 2 conn)`.
pub fn summary(gates: &[CellGate]) -> Option<String> {
    if gates.is_empty() {
        return None;
    }
    let failed: Vec<String> = gates
        .iter()
        .filter(|g| !g.verdict.passed)
        .map(|g| format!("{} · {} · {}", g.stack, g.workload, g.load_label))
        .collect();
    Some(if failed.is_empty() {
        format!("SLO gate: pass ({} of {})", gates.len(), gates.len())
    } else {
        format!(
            "SLO gate: FAIL ({} of {} failed: {})",
            failed.len(),
            gates.len(),
            failed.join("; ")
        )
    })
}
