//! The SLO gate over a stored run (`loadlab run --slo`, a suite's `slo`): each stack in each
//! (workload, load) group judged over its repetitions by the SLO stored with its cells, every
//! figure the median of theirs.
//!
//! The judgement is made once, by [`judge`], into the verdict's [`StackSummary::slo`]; `run`'s
//! exit code, the text table, the JSON and the HTML report all read it from there, so no two
//! of them can disagree.
//!
//! [`StackSummary::slo`]: crate::verdict::StackSummary::slo

use loadlab_stats::slo::{Figures, Outcome, Slo, SloVerdict};
use loadlab_store::{metric, CellRecord};

use crate::verdict::GroupVerdict;

/// One stack's verdict under one workload and load.
#[derive(Debug, Clone)]
pub struct CellGate {
    pub workload: String,
    pub load_label: String,
    pub stack: String,
    pub verdict: SloVerdict,
}

/// The verdict on a stack's repetitions (`cells`) of the SLO stored with them, `None` when
/// they have none (cells stored without one, or before cells kept it). A run stores one SLO
/// per workload, so the first cell's that has one stands for all. A stored SLO this build
/// cannot read (written by another version) fails, saying why: a gate nobody can judge must
/// not pass.
pub fn judge(cells: &[&CellRecord]) -> Option<SloVerdict> {
    let text = cells.iter().find_map(|c| c.slo.as_deref())?;
    let slo = match text.parse::<Slo>() {
        Ok(slo) => slo,
        Err(e) => {
            let detail = format!("not an SLO this loadlab reads: {e}");
            let term = Outcome { term: text.to_string(), observed: None, passed: false, detail };
            return Some(SloVerdict { slo: text.to_string(), passed: false, terms: vec![term] });
        }
    };
    // A cell without a latency histogram judges as one that measured nothing.
    let empty = loadlab_stats::Recorder::new();
    let reps: Vec<Figures<'_>> = cells.iter().map(|c| figures(c, &empty)).collect();
    Some(slo.judge_repetitions(&reps))
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
