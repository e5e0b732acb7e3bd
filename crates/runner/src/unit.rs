//! What a run counts, as its live line and its report say: requests, or for a run of visits
//! the views, visits or sessions (so that trust and progress name the same thing).

use loadlab_engine::BenchConfig;

/// What a run's live line counts: its requests, or for a run of visits the visits, as its
/// report does (a page view, a visit of a visit file, a session of `--wsesslog`).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Unit {
    Requests,
    Views,
    Visits,
    Sessions,
}

impl Unit {
    pub fn of(config: &BenchConfig) -> Unit {
        match config.visits.as_deref() {
            None => Unit::Requests,
            Some(p) if p.view.is_some() => Unit::Views,
            Some(p) if !p.steps.is_empty() => Unit::Visits,
            Some(_) => Unit::Sessions,
        }
    }

    /// One of what it counts: `request`, `view`, `visit`, `session`.
    pub fn noun(self) -> &'static str {
        match self {
            Unit::Requests => "request",
            Unit::Views => "view",
            Unit::Visits => "visit",
            Unit::Sessions => "session",
        }
    }

    pub fn rate(self) -> &'static str {
        match self {
            Unit::Requests => "req/s",
            Unit::Views => "views/s",
            Unit::Visits => "visits/s",
            Unit::Sessions => "sessions/s",
        }
    }
}
