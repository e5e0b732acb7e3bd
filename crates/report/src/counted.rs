//! What a workload's cells count ([`Counted`], the store's: requests, page views, visits) as
//! the verdict's measures read it: a view or visit workload is compared on its own figures,
//! its rate views/s or visits/s, its latencies the page-load time or the visit's duration, and
//! every heading, table and progress line of it says so instead of req/s.

use loadlab_store::{metric, CellRecord};

pub use loadlab_store::Counted;

use crate::measure::Measure;

/// Each [`Measure`] of what the cells count: where it is stored, how it is named and shown.
pub trait Measured {
    /// The metric `measure` is stored under for what these cells count.
    fn metric(self, measure: Measure) -> &'static str;
    /// `measure`'s name in a table header: `req/s`, `p99`; `views/s`, `load p99`; `visits/s`,
    /// `visit p99`.
    fn name(self, measure: Measure) -> &'static str;
    /// A value of `measure` with its unit (`12 views/s`, `45.3ms`).
    fn show(self, measure: Measure, v: f64) -> String;
    /// `cell`'s value of `measure`: for requests [`Measure::value`], else the stored figure of
    /// the views or visits (`None` when none completed).
    fn value(self, measure: Measure, cell: &CellRecord) -> Option<f64>;
}

impl Measured for Counted {
    fn metric(self, measure: Measure) -> &'static str {
        match (self, measure) {
            // No cell stores figures of sessions: theirs are the requests'.
            (Counted::Requests | Counted::Sessions, m) => m.metric(),
            (Counted::Views, Measure::Rps) => metric::VIEWS_RPS,
            (Counted::Views, Measure::P50) => metric::VIEW_P50_US,
            (Counted::Views, Measure::P99) => metric::VIEW_P99_US,
            (Counted::Visits, Measure::Rps) => metric::VISITS_RPS,
            (Counted::Visits, Measure::P50) => metric::VISIT_P50_US,
            (Counted::Visits, Measure::P99) => metric::VISIT_P99_US,
        }
    }

    fn name(self, measure: Measure) -> &'static str {
        match (self, measure) {
            (Counted::Requests | Counted::Sessions, m) => m.name(),
            (c, Measure::Rps) => c.rate_unit(),
            (Counted::Views, Measure::P50) => "load p50",
            (Counted::Views, Measure::P99) => "load p99",
            (Counted::Visits, Measure::P50) => "visit p50",
            (Counted::Visits, Measure::P99) => "visit p99",
        }
    }

    fn show(self, measure: Measure, v: f64) -> String {
        match measure {
            Measure::Rps => format!("{} {}", crate::format::count(v), self.rate_unit()),
            Measure::P50 | Measure::P99 => measure.show(v),
        }
    }

    fn value(self, measure: Measure, cell: &CellRecord) -> Option<f64> {
        match self {
            Counted::Requests | Counted::Sessions => measure.value(cell),
            _ => cell.figure(self.metric(measure)),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::testcell::{cell, open_cell, view_cells, visit_cells};

    #[test]
    fn told_from_the_stored_figures_and_named_by_them() {
        let plain = open_cell("wp", "page", 3.0, 0, 9.0);
        let mut view = plain.clone();
        view.metrics.insert(metric::VIEWS_RPS.into(), 2.5);
        view.metrics.insert(metric::VIEW_P99_US.into(), 80_000.0);
        let mut visit = cell("wp", "search", 2, 0, 9.0);
        visit.metrics.insert(metric::VISITS_RPS.into(), 1.5);
        assert_eq!(Counted::of_cells([&plain, &view]), Counted::Views);

        let views = Counted::Views;
        assert_eq!((views.name(Measure::Rps), views.name(Measure::P99)), ("views/s", "load p99"));
        assert_eq!(views.value(Measure::Rps, &view), Some(2.5));
        assert_eq!(views.value(Measure::P99, &view), Some(80_000.0));
        assert_eq!(views.value(Measure::P50, &view), None, "no view figure, no value");
        assert_eq!(Counted::Requests.value(Measure::Rps, &view), Some(3.0), "the requests' own");
        assert_eq!(views.show(Measure::Rps, 2.5), "2.50 views/s");
        assert_eq!(Counted::Visits.name(Measure::P50), "visit p50");
        assert_eq!(Counted::Visits.value(Measure::Rps, &visit), Some(1.5));
    }

    #[test]
    fn the_text_verdict_heads_and_fills_view_and_visit_groups_with_their_own_figures() {
        let text = crate::text::verdict_table(&crate::verdict::verdicts(&view_cells(3, &[3.0])));
        assert!(text.contains("front page views · open, 3 views/s\n"), "{text}");
        assert!(!text.contains("req/s"), "no req/s heading or figure: {text}");
        let header = text.lines().find(|l| l.trim_start().starts_with("stack")).unwrap();
        let columns: Vec<&str> =
            header.split("  ").map(str::trim).filter(|c| !c.is_empty()).collect();
        assert_eq!(columns[..4], ["stack", "views/s", "load p50", "load p99"], "{header}");
        // The figures are the views': 3 and 2.5 views/s, 40 ms and 450 ms at p99.
        let row = |stack: &str| text.lines().find(|l| l.trim_start().starts_with(stack)).unwrap();
        assert!(row("varnish").contains("3 ± ") && row("varnish").contains("40.0 ms"), "{text}");
        assert!(row("opcache").contains("2.50 ± ") && row("opcache").contains("450 ms"), "{text}");
        // Under an open load the tail decides: the page-load time's.
        assert!(text.contains("lower load p99 than opcache"), "{text}");

        let text = crate::text::verdict_table(&crate::verdict::verdicts(&visit_cells(3)));
        assert!(text.contains("search · closed, 2 visitors"), "{text}");
        assert!(text.contains("hello.txt · closed, 2 conn"), "{text}");
        let (search, hello) = text.split_at(text.find("hello.txt ·").unwrap());
        assert!(search.contains("visits/s") && search.contains("visit p99"), "{search}");
        assert!(search.contains("1.50 ±") && search.contains("2.90 s"), "{search}");
        assert!(hello.contains("req/s") && !hello.contains("visit"), "{hello}");
    }

    #[test]
    fn the_html_report_heads_a_view_group_with_its_own_figures() {
        let html = crate::render_html(
            &crate::testcell::run(),
            &view_cells(3, &[3.0]),
            &[],
            &Default::default(),
        );
        let head = "<tr class=\"counted-head\"><td colspan=\"3\"></td><th class=\"num\">views/s\
                    </th><th class=\"num\">load p50</th><th class=\"num\">load p99</th>";
        assert_eq!(html.matches(head).count(), 1, "one heading for the one group");
        assert!(html.contains(">open, 3 views/s<"));
        assert!(!html.contains("3 req/s"), "the load is said in views");
        assert!(html.contains("lower load p99 than"));
        // Each cell's summary line too.
        assert!(html.contains("— 3 views/s · load p50 20.0 ms · load p99 40.0 ms"), "{html}");
        let plain = crate::render_html(
            &crate::testcell::run(),
            &crate::testcell::reps("nginx", "hello.txt", 10, &[1_000.0]),
            &[],
            &Default::default(),
        );
        assert!(!plain.contains("counted-head"));
    }

    #[test]
    fn a_visit_groups_warnings_name_its_own_measures() {
        let mut cells = visit_cells(3);
        // One repetition completed no search: it has a rate but no visit duration.
        let first = cells.iter_mut().find(|c| c.workload == "search").unwrap();
        first.metrics.remove(metric::VISIT_P50_US);
        let text = crate::text::verdict_table(&crate::verdict::verdicts(&cells));
        assert!(text.contains("opcache: 1 repetition(s) have no visit p50"), "{text}");
        assert!(!text.contains("have no p50"), "{text}");
    }
}
