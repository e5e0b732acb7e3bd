//! The SLO stored with a stack's cells, judged over its repetitions (every figure the median
//! of theirs): what the verdict keeps as each stack's [`StackSummary::slo`] and the gate
//! ([`crate::gate`]) reads.
//!
//! [`StackSummary::slo`]: crate::verdict::StackSummary::slo

use loadlab_stats::slo::{Figures, Outcome, Slo, SloVerdict};
use loadlab_store::{metric, CellRecord};

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

/// A stored cell's figures (`non_2xx` is 0 for cells stored before it was kept).
pub fn figures<'a>(c: &'a CellRecord, empty: &'a loadlab_stats::Recorder) -> Figures<'a> {
    let get = |k: &str| c.figure(k).unwrap_or(0.0);
    Figures {
        rps: get(metric::RPS),
        completed: get(metric::COMPLETED) as u64,
        failed: get(metric::FAILED) as u64,
        // An answer a visit's step asked for (a login's 302) is no error.
        non_2xx: (get(metric::NON_2XX) - get(metric::NON_2XX_ASKED)).max(0.0) as u64,
        latency: c.histograms.latency.as_ref().unwrap_or(empty),
        requests_of: loadlab_store::Counted::of(c).own_latency(),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use loadlab_store::{LoadModel, LoadSpec};

    #[test]
    fn answers_a_visits_step_asked_for_are_no_errors_to_a_stored_cells_slo() {
        let metrics = |asked: f64| {
            let mut m = vec![(metric::COMPLETED, 20.0), (metric::NON_2XX, 10.0)];
            m.extend((asked > 0.0).then_some((metric::NON_2XX_ASKED, asked)));
            m
        };
        let load = || LoadSpec::new(LoadModel::Closed);
        let mut login = crate::testcell::with_load("a", "login", load(), 0, &metrics(10.0));
        login.slo = Some("errors<1%".into());
        assert!(judge(&[&login]).expect("an SLO").passed, "the login's 302s were asked for");
        // Stored without the count (nothing asked for, or an older cell): every one counts.
        let mut plain = crate::testcell::with_load("a", "plain", load(), 0, &metrics(0.0));
        plain.slo = Some("errors<1%".into());
        assert!(!judge(&[&plain]).expect("an SLO").passed);
    }
}
