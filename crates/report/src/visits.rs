//! A visit workload's own figures (a suite's `visits = ...`): visits per second and visit
//! duration (from a visit's due time to its last answer, think times included), the medians
//! over a stack's repetitions of what its cells stored (`metric::VISITS_RPS`, `VISIT_P50_US`,
//! `VISIT_P99_US`), and a table of its steps. A step's counts are totals over the repetitions,
//! so that a step that failed once in any repetition shows, marked `✗`; its latencies are the
//! medians of the repetitions that completed it.

use std::collections::BTreeMap;

use loadlab_stats::format::micros;
use loadlab_stats::summary::median;
use loadlab_store::{metric, CellRecord};
use serde::Serialize;

/// One stack's visits: the rates and durations medians over its repetitions.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct VisitFigures {
    pub visits_per_s: f64,
    /// NaN (shown "—", JSON null) when no repetition completed a visit.
    pub p50_us: f64,
    pub p99_us: f64,
    /// Failed visits over all the repetitions.
    pub failed: u64,
    pub steps: Vec<StepFigures>,
}

/// One step of the visit over a stack's repetitions.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct StepFigures {
    /// `2 GET /?s=osprey`, as the visit names it.
    pub step: String,
    /// Totals over the repetitions.
    pub started: u64,
    pub completed: u64,
    pub failed: BTreeMap<String, u64>,
    /// Medians over the repetitions that completed the step; `None` when none did.
    pub p50_us: Option<f64>,
    pub p99_us: Option<f64>,
}

/// The step table's columns after the step's label.
pub const COLUMNS: [&str; 4] = ["completed", "failed", "p50", "p99"];

impl VisitFigures {
    /// The figures of `cells` (one stack's repetitions); `None` for a workload without visits.
    pub fn of(cells: &[&CellRecord]) -> Option<VisitFigures> {
        let values = |name: &str| -> Vec<f64> {
            cells.iter().filter_map(|c| c.metrics.get(name).copied()).collect()
        };
        let failed = values(metric::VISITS_FAILED).iter().sum::<f64>() as u64;
        Some(VisitFigures {
            visits_per_s: median(&values(metric::VISITS_RPS))?,
            // None when no repetition completed a visit: "—".
            p50_us: median(&values(metric::VISIT_P50_US)).unwrap_or(f64::NAN),
            p99_us: median(&values(metric::VISIT_P99_US)).unwrap_or(f64::NAN),
            failed,
            steps: steps(cells),
        })
    }

    /// `4.0 visits/s, visit p50 45.1ms p99 80.2ms, 3 failed`.
    pub fn line(&self) -> String {
        let failed = match self.failed {
            0 => String::new(),
            n => format!(", {n} failed"),
        };
        format!(
            "{:.1} visits/s, visit p50 {} p99 {}{failed}",
            self.visits_per_s,
            micros(self.p50_us),
            micros(self.p99_us)
        )
    }
}

/// The steps of the repetitions, in the visit's order (a repetition's step `i` is the
/// visit's step `i`: every cell of a workload ran the same visit).
fn steps(cells: &[&CellRecord]) -> Vec<StepFigures> {
    let n = cells.iter().map(|c| c.steps.len()).max().unwrap_or(0);
    (0..n)
        .map(|i| {
            let each: Vec<_> = cells.iter().filter_map(|c| c.steps.get(i)).collect();
            let mut failed = BTreeMap::new();
            for (class, k) in each.iter().flat_map(|s| &s.failed) {
                *failed.entry(class.clone()).or_insert(0) += k;
            }
            let latency = |f: fn(&loadlab_store::StepRecord) -> Option<u64>| {
                median(&each.iter().filter_map(|s| f(s)).map(|v| v as f64).collect::<Vec<_>>())
            };
            StepFigures {
                step: each[0].label.clone(),
                started: each.iter().map(|s| s.started).sum(),
                completed: each.iter().map(|s| s.completed).sum(),
                failed,
                p50_us: latency(|s| s.p50_us),
                p99_us: latency(|s| s.p99_us),
            }
        })
        .collect()
}

impl StepFigures {
    /// Visits that failed at this step, whatever the class.
    pub fn failed_total(&self) -> u64 {
        self.failed.values().sum()
    }

    /// The step as a row starts: its label, `✗ ` before it when a visit failed there.
    pub fn label(&self) -> String {
        match self.failed_total() {
            0 => self.step.clone(),
            _ => format!("✗ {}", self.step),
        }
    }

    /// Its [`COLUMNS`]: `0`, or the count and its classes (`40 (status 37, timeout 3)`).
    pub fn shown(&self) -> [String; 4] {
        let failed = match self.failed_total() {
            0 => "0".to_owned(),
            n => {
                let classes: Vec<String> =
                    self.failed.iter().map(|(c, k)| format!("{c} {k}")).collect();
                format!("{n} ({})", classes.join(", "))
            }
        };
        let us = |v: Option<f64>| v.map_or("—".to_owned(), micros);
        [self.completed.to_string(), failed, us(self.p50_us), us(self.p99_us)]
    }
}

#[cfg(test)]
mod tests {
    use loadlab_store::StepRecord;

    use super::*;

    fn step(label: &str, completed: u64, failed: &[(&str, u64)], p50: Option<u64>) -> StepRecord {
        StepRecord {
            label: label.into(),
            started: completed + failed.iter().map(|f| f.1).sum::<u64>(),
            completed,
            failed: failed.iter().map(|(c, k)| ((*c).to_owned(), *k)).collect(),
            p50_us: p50,
            p99_us: p50.map(|v| 3 * v),
        }
    }

    /// A visit cell of `stack`, repetition `r`: its rate, and a search step that failed
    /// `failed` times with status.
    pub(crate) fn visit_cell(stack: &str, r: u32, rps: f64, failed: u64) -> CellRecord {
        let mut c = crate::testcell::open_cell(stack, "searches", 2.0, r, 1.0);
        for (k, v) in [
            (metric::VISITS_RPS, rps),
            (metric::VISIT_P50_US, 20_000.0 + rps),
            (metric::VISIT_P99_US, 90_000.0),
            (metric::VISITS_FAILED, failed as f64),
        ] {
            c.metrics.insert(k.into(), v);
        }
        let done = 8 - failed;
        c.steps = vec![
            step("1 GET /", 8, &[], Some(10_000 + u64::from(r))),
            step("2 GET /?s=osprey", done, &[("status", failed)], (done > 0).then_some(9_000)),
        ];
        c
    }

    #[test]
    fn medians_of_the_rates_totals_of_the_steps_and_none_without_visits() {
        let cells =
            [visit_cell("wp", 0, 2.0, 0), visit_cell("wp", 1, 4.0, 3), visit_cell("wp", 2, 3.0, 0)];
        let refs: Vec<&CellRecord> = cells.iter().collect();
        let v = VisitFigures::of(&refs).unwrap();
        assert_eq!((v.visits_per_s, v.p50_us, v.failed), (3.0, 20_003.0, 3));
        assert!(v.line().starts_with("3.0 visits/s, visit p50 "), "{}", v.line());
        assert!(v.line().ends_with(", 3 failed"), "{}", v.line());
        let search = &v.steps[1];
        assert_eq!((search.started, search.completed, search.failed_total()), (24, 21, 3));
        assert_eq!(search.label(), "✗ 2 GET /?s=osprey");
        assert_eq!(search.shown()[1], "3 (status 3)");
        assert_eq!(v.steps[0].label(), "1 GET /");
        assert_eq!(v.steps[0].p50_us, Some(10_001.0));
        let plain = crate::testcell::open_cell("wp", "front page", 10.0, 0, 1.0);
        assert_eq!(VisitFigures::of(&[&plain]), None);
    }

    #[test]
    fn a_step_no_visit_completed_has_no_latency() {
        let mut cell = visit_cell("wp", 0, 0.0, 8);
        cell.metrics.remove(metric::VISIT_P50_US);
        cell.metrics.remove(metric::VISIT_P99_US);
        let v = VisitFigures::of(&[&cell]).unwrap();
        assert!(v.line().contains("visit p50 — p99 —"), "{}", v.line());
        assert_eq!(
            v.steps[1].shown(),
            ["0".to_owned(), "8 (status 8)".into(), "—".into(), "—".into()]
        );
    }

    /// The verdict of a run with a visit workload on two stacks (one whose search step failed)
    /// and a plain workload beside it.
    fn run_cells() -> Vec<CellRecord> {
        let mut cells = Vec::new();
        for r in 0..3 {
            cells.push(visit_cell("wordpress-opcache", r, 2.0, 0));
            cells.push(visit_cell("wordpress-varnish", r, 2.0, if r == 1 { 5 } else { 0 }));
            cells.push(crate::testcell::open_cell("wordpress-opcache", "wordpress", 2.0, r, 9.0));
            cells.push(crate::testcell::open_cell("wordpress-varnish", "wordpress", 2.0, r, 9.0));
        }
        cells
    }

    #[test]
    fn the_text_verdict_has_a_step_table_for_visits_alone_and_marks_a_failed_step() {
        let text = crate::text::verdict_table(&crate::verdict::verdicts(&run_cells()));
        let (visits, plain) = text.split_at(text.find("wordpress · ").unwrap());
        let (visits, plain) =
            if visits.contains("searches") { (visits, plain) } else { (plain, visits) };
        assert!(visits.contains("visits wordpress-opcache: 2.0 visits/s, visit p50 "), "{text}");
        assert!(visits.contains("visits wordpress-varnish: 2.0 visits/s"), "{text}");
        assert!(visits.contains(", 5 failed"), "{text}");
        let failed: Vec<&str> =
            visits.lines().filter(|l| l.contains("✗ 2 GET /?s=osprey")).collect();
        assert_eq!(failed.len(), 1, "the varnish search step alone: {text}");
        assert!(failed[0].contains("5 (status 5)"), "{}", failed[0]);
        assert_eq!(visits.lines().filter(|l| l.trim_start().starts_with("step")).count(), 2);
        assert!(!plain.contains("visits") && !plain.contains("step"), "{plain}");
    }

    #[test]
    fn the_html_report_has_a_step_table_for_visits_alone_and_marks_a_failed_step() {
        let html =
            crate::render_html(&crate::testcell::run(), &run_cells(), &[], &Default::default());
        assert_eq!(html.matches("<tr class=\"visits-row\">").count(), 2, "a row per stack");
        assert_eq!(html.matches("<tr class=\"failed-step\">").count(), 1);
        let failed = &html[html.find("<tr class=\"failed-step\">").unwrap()..];
        assert!(
            failed.starts_with("<tr class=\"failed-step\"><td>✗ 2 GET /?s=osprey</td>"),
            "{}",
            &failed[..200]
        );
        assert!(failed.contains("5 (status 5)"));
        let plain = crate::render_html(
            &crate::testcell::run(),
            &crate::testcell::reps("nginx", "hello.txt", 10, &[1_000.0]),
            &[],
            &Default::default(),
        );
        assert!(!plain.contains("visits-row"));
    }
}
