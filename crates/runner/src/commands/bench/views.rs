//! The page views' own figures in a bench report (`--view`): what a view fetched, how many
//! views completed and failed, at what rate, and their page-load time (from a view's due time
//! to the last byte of its last resource); the requests' figures stay where they are, and the
//! visits' (`sessions`) beside them.

use loadlab_engine::visits::{ViewPlan, ViewTimes};
use loadlab_engine::{BenchConfig, BenchResult};
use loadlab_stats::RecorderSummary;
use serde::Serialize;

#[derive(Debug, Serialize)]
pub struct Views {
    /// Which question the run asked: `first view` (an empty cache each time) or `first and
    /// repeat view` (`--repeat-view`: each visitor views twice, the second time with a
    /// browser's cache of the first).
    pub cache: &'static str,
    /// The page's path.
    pub page: String,
    /// What each view fetched after the page, in order.
    pub resources: Vec<Resource>,
    /// What the page and its stylesheets name that no view fetched: another host's (not in
    /// `--view-hosts`).
    pub skipped: Vec<String>,
    pub completed: u64,
    pub failed: u64,
    /// Completed views per second of the run.
    pub rps: f64,
    /// Completed views, from when each was due to its last resource's last byte.
    pub load_time_us: RecorderSummary,
    /// First views alone, then repeat views alone (null without `--repeat-view`).
    pub first: ViewFigures,
    pub repeat: Option<ViewFigures>,
}

#[derive(Debug, Serialize)]
pub struct Resource {
    pub path: String,
    /// With `--repeat-view`: `fresh` (not asked for), `revalidated` (a conditional GET) or
    /// `fetched` (whole again); null without.
    pub repeat_view: Option<&'static str>,
}

#[derive(Debug, Serialize)]
pub struct ViewFigures {
    pub completed: u64,
    pub load_time_us: RecorderSummary,
}

impl Views {
    /// The figures of a run of page views; `None` for any other run.
    pub fn of(cfg: &BenchConfig, r: &BenchResult) -> Option<Views> {
        let plan = cfg.visits.as_ref()?.view.as_ref()?;
        let times = ViewTimes::of(r.tally.sessions.as_deref()?, plan);
        let figures = |rec: &loadlab_stats::Recorder| ViewFigures {
            completed: rec.count(),
            load_time_us: rec.summary(),
        };
        Some(Views {
            cache: if plan.repeat { "first and repeat view" } else { "first view" },
            page: plan.page.clone(),
            resources: plan
                .resources
                .iter()
                .map(|r| Resource {
                    path: r.shown(),
                    repeat_view: r.repeat.as_ref().map(|c| c.name()),
                })
                .collect(),
            skipped: plan.skipped.clone(),
            completed: times.completed,
            failed: times.failed,
            rps: times.per_second(r.duration),
            load_time_us: times.all.summary(),
            first: figures(&times.first),
            repeat: times.repeat.as_ref().map(figures),
        })
    }
}

/// One line on what a view fetches, said before the run.
pub fn found(plan: &ViewPlan) -> String {
    format!("--view: {}", fetches(plan))
}

/// What a view of `plan` fetches: `/ and its 2 resources: /s.css /a.js`.
pub fn fetches(plan: &ViewPlan) -> String {
    let list: Vec<String> = plan
        .resources
        .iter()
        .map(|r| match &r.repeat {
            Some(reuse) => format!("{} ({} on a repeat view)", r.shown(), reuse.name()),
            None => r.shown(),
        })
        .collect();
    let mut said = match list.len() {
        0 => format!("{} alone (it names no resource)", plan.page),
        1 => format!("{} and its 1 resource: {}", plan.page, list[0]),
        n => format!("{} and its {n} resources: {}", plan.page, list.join(" ")),
    };
    if !plan.skipped.is_empty() {
        let n = plan.skipped.len();
        said += &format!("; {n} skipped (not in --view-hosts): {}", plan.skipped.join(" "));
    }
    said
}

#[cfg(test)]
mod tests {
    use super::*;
    use loadlab_engine::visits::ViewResource;

    #[test]
    fn what_a_view_fetches_counts_its_resources_in_words() {
        let resource = |path: &str| ViewResource { path: path.into(), origin: None, repeat: None };
        let mut plan =
            ViewPlan { page: "/".into(), resources: vec![], repeat: false, skipped: vec![] };
        assert_eq!(fetches(&plan), "/ alone (it names no resource)");
        plan.resources.push(resource("/s.css"));
        assert_eq!(fetches(&plan), "/ and its 1 resource: /s.css");
        plan.resources.push(resource("/a.js"));
        assert_eq!(fetches(&plan), "/ and its 2 resources: /s.css /a.js");
    }
}
