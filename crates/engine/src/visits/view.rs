//! Page views (`--view`): the target's page and the resources its HTML names, fetched as a
//! browser fetches them: the page first, then its resources over up to
//! `--browser-connections` connections of that visitor. The resources are found once, before
//! the run (a blocking GET of the page and of its stylesheets, for the fonts and images they
//! name), and fixed for it; each view is a visit of one burst, so its figures are the
//! visits' (a view's lifetime is its page-load time, from its due time to its last answer).
//!
//! Only the target's own host and port are fetched: the visitor's connections go to the
//! target's address, so another host's resources (a CDN) are left out: the list of what is
//! fetched (each path's figures in the report's `urls`) shows what a view is.

use loadlab_visit::discover::{self, Allow};
use loadlab_visit::{Burst, Call, Think, Visit};
use url::Url;

use super::Plan;
use crate::client::{self, Endpoint};
use crate::{Arrival, BenchConfig, EngineError};

/// A page's view, found.
#[derive(Debug)]
pub struct View {
    /// The resources fetched with each view, in order (paths).
    pub resources: Vec<String>,
    plan: Plan,
    mix: crate::mix::Mix,
}

impl View {
    /// Fetches the page of `config`'s target and its stylesheets once and plans its view on
    /// up to `connections` connections.
    pub fn discover(config: &mut BenchConfig, connections: usize) -> Result<View, EngineError> {
        config.target.resolve()?;
        let addr = config.target.addrs[0];
        let unreachable = |reason: String| EngineError::Unreachable {
            target: config.target.authority.clone(),
            reason,
        };
        let page = Url::parse(&config.target.url)
            .map_err(|e| EngineError::Config(format!("{}: {e}", config.target.url)))?;
        let endpoint = Endpoint::plain(addr);
        let answer = client::get(&endpoint, &config.target.path, &[]).map_err(unreachable)?;
        if !(200..300).contains(&answer.status) {
            return Err(EngineError::Config(format!(
                "--view: the page {} answered {}, not a page to view",
                config.target.path, answer.status
            )));
        }
        let html = String::from_utf8_lossy(&answer.body);
        let allow = Allow::default();
        let mut found = discover::page_resources(&html, &page, &allow);
        let sheets: Vec<Url> =
            found.iter().filter(|u| u.path().ends_with(".css")).cloned().collect();
        for sheet in sheets {
            let path = origin_form(&sheet);
            let Ok(css) = client::get(&endpoint, &path, &[]) else { continue };
            for u in
                discover::css_resources(&String::from_utf8_lossy(&css.body), &sheet, &page, &allow)
            {
                if !found.contains(&u) {
                    found.push(u);
                }
            }
        }
        let resources: Vec<String> = found.iter().map(origin_form).collect();
        let mut calls = vec![Call::get(&config.target.path)];
        calls.extend(resources.iter().map(|p| Call::get(p)));
        let visit = Visit {
            name: format!("view of {}", config.target.path),
            bursts: vec![Burst { calls, think: None }],
        };
        let (plan, mix) =
            Plan::new(&config.target.url, &[visit], Think::Fixed(Default::default()), connections)?;
        Ok(View { resources, plan, mix })
    }

    /// Makes `config` run views at `rate` a second (its stop condition counts views).
    pub fn apply(self, config: &mut BenchConfig, rate: f64, arrival: Arrival) {
        super::wsesslog::run_plan(config, self.plan, self.mix, rate, arrival);
    }
}

/// A URL's path and query, as a request line carries them.
fn origin_form(u: &Url) -> String {
    match u.query() {
        Some(q) => format!("{}?{q}", u.path()),
        None => u.path().to_string(),
    }
}
