//! Page views (`--view`): the target's page and the resources its HTML names, fetched as a
//! browser fetches them: the page first, then its resources over up to
//! `--browser-connections` connections of that visitor. The resources are found once, before
//! the run (a blocking GET of the page and of its stylesheets, for the fonts and images they
//! name), and fixed for it; each view is a burst of a visit, so its figures are the visits'
//! (a view is a step: its page-load time runs from its due time to its last answer,
//! `SessionTally::steps`).
//!
//! A repeat view (`--repeat-view`) is the question of a returning visitor: each visitor views
//! the page twice, the second time with a browser's cache of the first (`loadlab_visit::cache`:
//! fresh resources are not asked for, stale ones with validators are asked conditionally).
//! What the cache does with each resource is decided once, from its answer at discovery, for
//! a repeat view that comes at most `2 x timeout` after the first view's answer.
//!
//! Only the target's own host and port are fetched: the visitor's connections go to the
//! target's address, so another host's resources (a CDN) are left out: the list of what is
//! fetched (`ViewPlan::resources`) shows what a view is.

use loadlab_visit::cache::{self, Reuse};
use loadlab_visit::discover::{self, Allow};
use loadlab_visit::{Burst, Call, Template, Think, Visit};
use url::Url;

use super::Plan;
use crate::client::{self, Endpoint};
use crate::{Arrival, BenchConfig, EngineError};

/// A page's view, found. Cloned, it runs again without being found again (a suite's cells of
/// one stack instance share theirs).
#[derive(Debug, Clone)]
pub struct View {
    plan: Plan,
    mix: crate::mix::Mix,
}

/// What each view of a run fetches, for the output.
#[derive(Debug, Clone, PartialEq)]
pub struct ViewPlan {
    /// The page's path.
    pub page: String,
    /// The resources fetched with each (first) view, in the order found.
    pub resources: Vec<ViewResource>,
    /// Each visitor views the page twice, the second time with the first's cache.
    pub repeat: bool,
}

#[derive(Debug, Clone, PartialEq)]
pub struct ViewResource {
    /// Path and query, as requested.
    pub path: String,
    /// With a repeat view: what the second view does with it; `None` without one.
    pub repeat: Option<Reuse>,
}

impl View {
    /// Fetches the page of `config`'s target and its stylesheets once (with `repeat`, every
    /// resource, for its cache headers) and plans its view on up to `connections` connections.
    pub fn discover(
        config: &mut BenchConfig,
        connections: usize,
        repeat: bool,
    ) -> Result<View, EngineError> {
        config.target.resolve()?;
        let mut endpoint = Endpoint::plain(config.target.addrs[0]);
        if config.target.tls {
            // Found as the run will fetch it: the same trust, the same server name.
            let tls = client::Tls::trusting(&config.tls, &config.target.host)
                .map_err(EngineError::Config)?;
            endpoint.tls = Some(tls);
        }
        let found = resources(config, &endpoint)?;
        let within = config.timeout * 2;
        let mut listed = Vec::with_capacity(found.len());
        for (path, fields) in found {
            let reuse = match (repeat, fields) {
                (false, _) => None,
                (true, Some(fields)) => Some(cache::reuse(&fields, within)),
                (true, None) => {
                    let answer = fetch(&endpoint, &path, config).map_err(|reason| {
                        EngineError::Unreachable { target: config.target.authority.clone(), reason }
                    })?;
                    Some(cache::reuse(&answer.headers, within))
                }
            };
            listed.push(ViewResource { path, repeat: reuse });
        }
        let page = config.target.path.clone();
        let mut first = vec![Call::get(&page)];
        first.extend(listed.iter().map(|r| Call::get(&r.path)));
        let mut bursts = vec![Burst { calls: first, think: None }];
        if repeat {
            let mut again = vec![Call::get(&page)];
            for r in &listed {
                match &r.repeat {
                    Some(Reuse::Fresh) => {}
                    Some(Reuse::Revalidate(ask)) => {
                        let mut call = Call::get(&r.path);
                        call.headers =
                            ask.iter().map(|(n, v)| (n.clone(), Template::literal(v))).collect();
                        again.push(call);
                    }
                    _ => again.push(Call::get(&r.path)),
                }
            }
            bursts.push(Burst { calls: again, think: None });
        }
        let visit = Visit { name: format!("view of {page}"), bursts };
        let no_think = Think::Fixed(Default::default());
        let (mut plan, mix) = Plan::new(&config.target.url, &[visit], no_think, connections)?;
        // Each view is a step of the visit, timed from its due time (`SessionTally::steps`).
        plan.steps = ["first view", "repeat view"][..1 + usize::from(repeat)]
            .iter()
            .map(|s| s.to_string())
            .collect();
        plan.view = Some(ViewPlan { page, resources: listed, repeat });
        Ok(View { plan, mix })
    }

    /// What each view fetches.
    pub fn plan(&self) -> &ViewPlan {
        self.plan.view.as_ref().expect("a view's plan")
    }

    /// Makes `config` run views at `rate` a second (with a repeat view, visitors: each makes
    /// two views); its stop condition counts visitors.
    pub fn apply(self, config: &mut BenchConfig, rate: f64, arrival: Arrival) {
        super::wsesslog::run_plan(config, self.plan, self.mix, rate, arrival);
    }
}

/// The paths of the resources the page at `config`'s target names, and those its
/// stylesheets name, on the target's own host; a stylesheet's with the header fields of its
/// answer (read here for what it names, not asked again for its cache headers).
fn resources(config: &BenchConfig, endpoint: &Endpoint) -> Result<Vec<Found>, EngineError> {
    let unreachable = |reason: String| EngineError::Unreachable {
        target: config.target.authority.clone(),
        reason,
    };
    let page = Url::parse(&config.target.url)
        .map_err(|e| EngineError::Config(format!("{}: {e}", config.target.url)))?;
    let answer = fetch(endpoint, &config.target.path, config).map_err(unreachable)?;
    if !(200..300).contains(&answer.status) {
        return Err(EngineError::Config(format!(
            "--view: the page {} answered {}, not a page to view",
            config.target.path, answer.status
        )));
    }
    let html = String::from_utf8_lossy(&answer.body);
    let allow = Allow::default();
    let mut found = discover::page_resources(&html, &page, &allow);
    let sheets: Vec<Url> = found.iter().filter(|u| u.path().ends_with(".css")).cloned().collect();
    let mut fields = std::collections::HashMap::new();
    for sheet in sheets {
        let Ok(answer) = fetch(endpoint, &origin_form(&sheet), config) else { continue };
        let css = String::from_utf8_lossy(&answer.body);
        for u in discover::css_resources(&css, &sheet, &page, &allow) {
            if !found.contains(&u) {
                found.push(u);
            }
        }
        fields.insert(sheet, answer.headers);
    }
    Ok(found.iter().map(|u| (origin_form(u), fields.remove(u))).collect())
}

/// A resource's path, and the header fields of its answer when discovery read it.
type Found = (String, Option<Vec<(String, String)>>);

/// One GET of discovery, as patient as the run's requests (at least 10 s): in a suite it may
/// follow a cell that left the server a backlog, and a page that answers late is still one
/// to view.
fn fetch(
    endpoint: &Endpoint,
    path: &str,
    config: &BenchConfig,
) -> Result<client::Response, String> {
    client::get_within(endpoint, path, config.timeout.max(std::time::Duration::from_secs(10)))
}

/// A URL's path and query, as a request line carries them.
fn origin_form(u: &Url) -> String {
    match u.query() {
        Some(q) => format!("{}?{q}", u.path()),
        None => u.path().to_string(),
    }
}

/// The views of a run, from its visits' figures: each burst of a visit is one view.
#[derive(Debug, Clone, Default)]
pub struct ViewTimes {
    /// Views that ended with their last resource's answer.
    pub completed: u64,
    /// Views that failed (a failed visit fails the view it was in; later ones never ran).
    pub failed: u64,
    /// Page-load time of every completed view, microseconds.
    pub all: loadlab_stats::Recorder,
    /// First views, then repeat views (`steps` of the visits).
    pub first: loadlab_stats::Recorder,
    pub repeat: Option<loadlab_stats::Recorder>,
}

impl ViewTimes {
    pub fn of(s: &super::SessionTally, plan: &ViewPlan) -> ViewTimes {
        let mut all = loadlab_stats::Recorder::default();
        s.steps.iter().for_each(|t| all.merge(&t.latency));
        let step = |i: usize| s.steps.get(i).map(|t| t.latency.clone()).unwrap_or_default();
        ViewTimes {
            completed: all.count(),
            failed: s.failed,
            all,
            first: step(0),
            repeat: plan.repeat.then(|| step(1)),
        }
    }

    /// Completed views per second of a run that measured for `wall`.
    pub fn per_second(&self, wall: std::time::Duration) -> f64 {
        let secs = wall.as_secs_f64();
        if secs > 0.0 {
            self.completed as f64 / secs
        } else {
            0.0
        }
    }
}
