//! What a run counts: its requests, or for a run of visits its page views (a suite's
//! `view = true`, `bench --view`), visits of a visit file (`visits = ...`) or httperf sessions
//! (`--wsesslog`). The runner decides it from the load it ran and the store keeps the decision
//! with the cell ([`Counted::of`] reads it back), so that the live line, the trust findings
//! and the report name the same thing: a view or visit workload is shown in views/s or
//! visits/s, never req/s.

use loadlab_stats::format;

pub use crate::model::Counted;
use crate::{metric, CellRecord, LoadModel, LoadSpec};

impl Counted {
    /// What `cell` counted, as the runner decided and the store kept it; for a cell stored
    /// before the decision was kept, read from the figures only views and visits store.
    pub fn of(cell: &CellRecord) -> Counted {
        if let Some(counted) = cell.counted {
            counted
        } else if cell.metrics.contains_key(metric::VISITS_RPS) {
            Counted::Visits
        } else if cell.metrics.contains_key(metric::VIEWS_RPS) {
            Counted::Views
        } else {
            Counted::Requests
        }
    }

    /// What the cells of one workload counted (a cell that stored no figures of its own, such
    /// as one stored before loadlab kept them, does not decide).
    pub fn of_cells<'a>(cells: impl IntoIterator<Item = &'a CellRecord>) -> Counted {
        cells.into_iter().map(Counted::of).find(|c| *c != Counted::Requests).unwrap_or_default()
    }

    /// Whether it has a latency of its own (a view's load time, a visit's duration) that its
    /// rows show instead of its requests' latency.
    pub fn own_latency(self) -> bool {
        matches!(self, Counted::Views | Counted::Visits)
    }

    /// One of what it counts: `request`, `view`, `visit`, `session`.
    pub fn noun(self) -> &'static str {
        match self {
            Counted::Requests => "request",
            Counted::Views => "view",
            Counted::Visits => "visit",
            Counted::Sessions => "session",
        }
    }

    /// Its rate's unit: `req/s`, `views/s`, `visits/s`, `sessions/s`.
    pub fn rate_unit(self) -> &'static str {
        match self {
            Counted::Requests => "req/s",
            Counted::Views => "views/s",
            Counted::Visits => "visits/s",
            Counted::Sessions => "sessions/s",
        }
    }

    /// What its latency is, as a chart's axis names it: `latency` (a request's), `page load`,
    /// `visit duration`, `session lifetime`.
    pub fn latency_name(self) -> &'static str {
        match self {
            Counted::Requests => "latency",
            Counted::Views => "page load",
            Counted::Visits => "visit duration",
            Counted::Sessions => "session lifetime",
        }
    }

    /// What a load's level counts: a rate of views, visits or sessions; a closed load of
    /// visits is a population of visitors (`2 visitors`).
    pub fn level(self, load: &LoadSpec) -> Option<String> {
        match (self, load.model) {
            (Counted::Requests, _) | (Counted::Views | Counted::Sessions, LoadModel::Closed) => {
                None
            }
            (Counted::Visits, LoadModel::Closed) => {
                load.connections.map(|c| format!("{c} visitor{}", if c == 1 { "" } else { "s" }))
            }
            (c, LoadModel::Open | LoadModel::Session) => {
                load.rate.map(|r| format!("{} {}", format::count(r), c.rate_unit()))
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn told_from_the_stored_figures_and_its_level_said_in_them() {
        let mut open = LoadSpec::new(LoadModel::Open);
        open.rate = Some(3.0);
        let plain = CellRecord::for_test("wp", "page", open);
        let mut view = plain.clone();
        view.metrics.insert(metric::VIEWS_RPS.into(), 2.5);
        let mut closed = LoadSpec::new(LoadModel::Closed);
        closed.connections = Some(2);
        let mut visit = CellRecord::for_test("wp", "search", closed);
        visit.metrics.insert(metric::VISITS_RPS.into(), 1.5);
        assert_eq!(Counted::of(&plain), Counted::Requests);
        assert_eq!(Counted::of_cells([&plain, &view]), Counted::Views);
        assert_eq!(Counted::of(&visit), Counted::Visits);
        assert_eq!(Counted::Views.level(&view.load).as_deref(), Some("3 views/s"));
        assert_eq!(Counted::Visits.level(&visit.load).as_deref(), Some("2 visitors"));
        assert_eq!(Counted::Requests.level(&plain.load), None);
        assert_eq!(
            (Counted::Sessions.noun(), Counted::Sessions.rate_unit()),
            ("session", "sessions/s")
        );
    }
}
