//! Page views (`--view`): the target's page and the resources its HTML names, fetched as a
//! browser fetches them: the page first, then its resources over up to
//! `--browser-connections` connections of that visitor. The resources are found once, before
//! the run (a blocking GET of the page and of its stylesheets, for the fonts and images they
//! name; over h2c when the run speaks it), and fixed for it; each view is a burst of a visit,
//! so its figures are the visits'
//! (a view is a step: its page-load time runs from its due time to its last answer,
//! `SessionTally::steps`).
//!
//! A repeat view (`--repeat-view`) is the question of a returning visitor: each visitor views
//! the page twice, the second time with a browser's cache of the first (`loadlab_visit::cache`:
//! fresh resources are not asked for, stale ones with validators are asked conditionally).
//! What the cache does with each resource is decided once, from its answer at discovery, for
//! a repeat view that comes at most `2 x timeout` after the first view's answer.
//!
//! Only the target's own host and port are fetched unless `--view-hosts` names others: their
//! names are resolved once, before the page is read (one that does not resolve stops the run
//! before any load), and a visitor opens its own connections to each such origin, up to
//! `--browser-connections` per origin as a browser does, over TLS for an `https` origin
//! (whatever the page's own scheme): the run's trust (`--insecure`, `--cacert`), ALPN
//! `http/1.1`, and one client configuration for every other origin's connections of a run, so
//! that they resume one another's sessions as the target's do. Another host's resources not
//! named (a CDN, a tracker) are left out and listed as such (`ViewPlan::skipped`).

use loadlab_visit::cache::{self, Reuse};
use loadlab_visit::discover::{self, Allow, Links};
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
    /// The links left out: on hosts not allowed.
    pub skipped: Vec<String>,
}

#[derive(Debug, Clone, PartialEq)]
pub struct ViewResource {
    /// Path and query, as requested.
    pub path: String,
    /// Another origin (`http://host:port` or `https://host:port`, an allowed host's); `None`
    /// on the target's.
    pub origin: Option<String>,
    /// With a repeat view: what the second view does with it; `None` without one.
    pub repeat: Option<Reuse>,
}

impl View {
    /// Fetches the page of `config`'s target and its stylesheets once (with `repeat`, every
    /// resource, for its cache headers) and plans its view on up to `connections` connections
    /// per origin: the target's, and those of `hosts` (`HOST[:PORT]`) its page names.
    pub fn discover(
        config: &mut BenchConfig,
        connections: usize,
        repeat: bool,
        hosts: &[String],
    ) -> Result<View, EngineError> {
        config.target.resolve()?;
        let mut origins = Origins::resolve(hosts, &config.tls)?;
        let mut endpoint = Endpoint::plain(config.target.addrs[0]);
        if config.target.tls {
            // Found as the run will fetch it: the same trust, the same server name.
            let tls = client::Tls::trusting(&config.tls, &config.target.host)
                .map_err(EngineError::Config)?;
            endpoint.tls = Some(tls);
        }
        let (found, skipped) = resources(config, &endpoint, &mut origins)?;
        origins.preflight(config)?;
        let within = config.timeout * 2;
        let mut listed = Vec::with_capacity(found.len());
        for (url, fields) in found {
            let (path, origin) = (origin_form(&url), origins.name(&url));
            let reuse = match (repeat, fields) {
                (false, _) => None,
                (true, Some(fields)) => Some(cache::reuse(&fields, within)),
                (true, None) => {
                    let at = origins.endpoint(&url)?.unwrap_or_else(|| endpoint.clone());
                    let answer = fetch(&at, &path, config).map_err(|reason| {
                        EngineError::Unreachable { target: config.target.authority.clone(), reason }
                    })?;
                    Some(cache::reuse(&answer.headers, within))
                }
            };
            listed.push(ViewResource { path, origin, repeat: reuse });
        }
        let page = config.target.path.clone();
        let mut first = vec![Call::get(&page)];
        first.extend(listed.iter().map(ViewResource::call));
        let mut bursts = vec![Burst { calls: first, think: None }];
        if repeat {
            let mut again = vec![Call::get(&page)];
            for r in &listed {
                match &r.repeat {
                    Some(Reuse::Fresh) => {}
                    Some(Reuse::Revalidate(ask)) => {
                        let mut call = r.call();
                        call.headers
                            .extend(ask.iter().map(|(n, v)| (n.clone(), Template::literal(v))));
                        again.push(call);
                    }
                    _ => again.push(r.call()),
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
        let h2 = matches!(config.protocol, crate::Protocol::Http2 { .. });
        plan.origins = origins.table(&mix, &config.tls, h2)?;
        plan.view = Some(ViewPlan { page, resources: listed, repeat, skipped });
        Ok(View { plan, mix })
    }

    /// What each view fetches.
    pub fn plan(&self) -> &ViewPlan {
        self.plan.view.as_ref().expect("a view's plan")
    }

    /// Makes `config` run views at `rate` a second or, without a rate, by a closed population
    /// of `config.connections` viewers, each starting its next view when one ends (with a
    /// repeat view, visitors: each makes two views); its stop condition counts visitors.
    pub fn apply(mut self, config: &mut BenchConfig, rate: Option<f64>, arrival: Arrival) {
        // Each run's handshakes start anew, as its target's do: a suite's cells share the view,
        // not the sessions an earlier cell resumed.
        self.plan.origins.fresh_sessions(config.tls.resume);
        super::wsesslog::run_plan(config, self.plan, self.mix, rate, arrival);
    }
}

impl ViewResource {
    /// Its request: another origin's carries that origin's `Host` (RFC 9110 section 7.2),
    /// which also tells the driver which of the visitor's connections it goes on.
    fn call(&self) -> Call {
        let mut call = Call::get(&self.path);
        if let Some(origin) = &self.origin {
            call.headers.push(("Host".to_string(), Template::literal(authority_of(origin))));
        }
        call
    }

    /// As listed: the path on the target's origin, the whole URL on another.
    pub fn shown(&self) -> String {
        match &self.origin {
            Some(origin) => format!("{origin}{}", self.path),
            None => self.path.clone(),
        }
    }
}

/// The allowed hosts, resolved once, and the other origins a page's resources are on.
struct Origins {
    allow: Allow,
    /// Each allowed host (lower case, as `Url::host_str` gives it) and its address.
    resolved: Vec<(String, std::net::IpAddr)>,
    /// Other origins met, in the order found: origin `i + 1` of the plan.
    used: Vec<Used>,
    /// The page's URL, once read: its own origin is the target's, whatever the allow-list.
    page: Option<Url>,
    /// The run's trust, for an `https` origin's discovery and connections.
    tls: crate::TlsOptions,
}

/// Another origin a view fetches from.
struct Used {
    /// `host:port`, as its requests' `Host` field carries it.
    authority: String,
    addr: std::net::SocketAddr,
    /// Its host, as named (a TLS server name), when it speaks `https`.
    tls: Option<String>,
}

impl Used {
    /// `http://host:port` or `https://host:port`.
    fn name(&self) -> String {
        let scheme = if self.tls.is_some() { "https" } else { "http" };
        format!("{scheme}://{}", self.authority)
    }
}

impl Origins {
    /// Resolves every allowed host before anything is sent: one that does not resolve is the
    /// user's mistake, told by name.
    fn resolve(hosts: &[String], tls: &crate::TlsOptions) -> Result<Origins, EngineError> {
        use std::net::ToSocketAddrs;
        let mut resolved = Vec::with_capacity(hosts.len());
        for entry in hosts {
            let (host, port) = discover::split_port(entry);
            let bare = host.trim_start_matches('[').trim_end_matches(']');
            let refuse = |why: String| {
                EngineError::Config(format!("--view-hosts: {entry} does not resolve: {why}"))
            };
            let mut addrs =
                (bare, port.unwrap_or(80)).to_socket_addrs().map_err(|e| refuse(e.to_string()))?;
            let addr = addrs.next().ok_or_else(|| refuse("no address".to_string()))?;
            resolved.push((host.to_ascii_lowercase(), addr.ip()));
        }
        Ok(Origins {
            allow: Allow { hosts: hosts.to_vec() },
            resolved,
            used: Vec::new(),
            page: None,
            tls: tls.clone(),
        })
    }

    /// `u`'s origin when it is an allowed host's, over `http` or `https`, and not the page's
    /// own.
    fn other(&self, u: &Url) -> Option<Used> {
        if self.page.as_ref().is_some_and(|page| Allow::same_origin(page, u)) {
            return None;
        }
        let host = u.host_str()?.to_ascii_lowercase();
        let ip = self.resolved.iter().find(|(h, _)| *h == host)?.1;
        let port = u.port_or_known_default()?;
        let tls = match u.scheme() {
            "http" => None,
            "https" => Some(host.clone()),
            _ => return None,
        };
        let addr = std::net::SocketAddr::new(ip, port);
        Some(Used { authority: format!("{}:{port}", u.host_str()?), addr, tls })
    }

    /// Where discovery reads `u` when it is on another origin: over TLS for an `https` one,
    /// trusting as the run does.
    fn endpoint(&self, u: &Url) -> Result<Option<Endpoint>, EngineError> {
        let Some(other) = self.other(u) else { return Ok(None) };
        let mut endpoint = Endpoint::plain(other.addr);
        if let Some(host) = &other.tls {
            let tls = client::Tls::trusting(&self.tls, host).map_err(EngineError::Config)?;
            endpoint.tls = Some(tls);
        }
        Ok(Some(endpoint))
    }

    /// `u`'s origin (`https://host:port`) when it is another than the page's.
    fn name(&self, u: &Url) -> Option<String> {
        self.other(u).map(|o| o.name())
    }

    /// One handshake with each `https` origin a view fetches from, before any load: a
    /// certificate the run does not trust is said once, naming that origin, instead of
    /// failing every view.
    fn preflight(&self, config: &BenchConfig) -> Result<(), EngineError> {
        let h2 = matches!(config.protocol, crate::Protocol::Http2 { .. });
        for used in &self.used {
            let Some(host) = &used.tls else { continue };
            let tls_config =
                crate::tls::client_config(&self.tls, h2).map_err(EngineError::Config)?;
            let name = crate::tls::server_name(host).map_err(EngineError::Config)?;
            crate::tls::preflight(used.addr, name, tls_config, config.connect_timeout, h2)
                .map_err(|reason| EngineError::Unreachable { target: used.name(), reason })?;
        }
        Ok(())
    }

    /// Sorts a page's other-origin links: an allowed host's over `http` or `https` is kept (its
    /// origin noted), any other left out.
    fn sort(&mut self, page: &Url, links: Links, found: &mut Vec<Url>, skipped: &mut Vec<String>) {
        for u in links.kept {
            match (Allow::same_origin(page, &u), self.other(&u)) {
                (true, _) => {}
                (false, Some(other)) => {
                    if !self.used.iter().any(|o| o.authority == other.authority) {
                        self.used.push(other);
                    }
                }
                (false, None) => {
                    note(skipped, u.to_string());
                    continue;
                }
            }
            if !found.contains(&u) {
                found.push(u);
            }
        }
        links.skipped.iter().for_each(|u| note(skipped, u.to_string()));
    }

    /// The run's table of origins: each entry's (by its `Host` field, 0 for the target's) and
    /// each other origin, an `https` one with the client configuration its connections share.
    fn table(
        &self,
        mix: &crate::mix::Mix,
        tls: &crate::TlsOptions,
        h2: bool,
    ) -> Result<super::OriginTable, EngineError> {
        let of = |e: &crate::mix::Entry| {
            let host = e.headers.iter().find(|(n, _)| n.eq_ignore_ascii_case("host"));
            host.and_then(|(_, v)| self.used.iter().position(|o| o.authority == *v))
                .map_or(0, |i| i + 1)
        };
        let client = match self.used.iter().any(|o| o.tls.is_some()) {
            // The run's protocol on every other origin: with --http2 a visitor's slot opens an
            // HTTP/2 session on each connection, so an https origin is offered h2 by ALPN (and
            // one that does not take it is refused at the preflight above, naming it).
            true => Some(crate::tls::client_config(tls, h2).map_err(EngineError::Config)?),
            false => None,
        };
        let mut others = Vec::with_capacity(self.used.len());
        for used in &self.used {
            let tls = match (&used.tls, &client) {
                (Some(host), Some(client)) => Some((
                    client.clone(),
                    crate::tls::server_name(host).map_err(EngineError::Config)?,
                )),
                _ => None,
            };
            others.push(super::Origin { name: used.name(), addr: used.addr, tls });
        }
        Ok(super::OriginTable { of_entry: mix.entries.iter().map(of).collect(), others })
    }
}

/// `host:port` of an origin named `scheme://host:port`.
fn authority_of(origin: &str) -> &str {
    origin.split_once("://").map_or(origin, |(_, a)| a)
}

/// The resources the page at `config`'s target names, and those its stylesheets name, on the
/// target's own origin or an allowed one; a stylesheet's with the header fields of its answer
/// (read here for what it names, not asked again for its cache headers). Then what was left
/// out.
fn resources(
    config: &BenchConfig,
    endpoint: &Endpoint,
    origins: &mut Origins,
) -> Result<(Vec<Found>, Vec<String>), EngineError> {
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
    origins.page = Some(page.clone());
    let allow = origins.allow.clone();
    let (mut found, mut skipped) = (Vec::new(), Vec::new());
    let links = discover::page_resources(&html, &page, &allow);
    origins.sort(&page, links, &mut found, &mut skipped);
    let sheets: Vec<Url> = found.iter().filter(|u| u.path().ends_with(".css")).cloned().collect();
    let mut fields = std::collections::HashMap::new();
    for sheet in sheets {
        let at = origins.endpoint(&sheet)?.unwrap_or_else(|| endpoint.clone());
        let Ok(answer) = fetch(&at, &origin_form(&sheet), config) else { continue };
        let css = String::from_utf8_lossy(&answer.body);
        let links = discover::css_resources(&css, &sheet, &page, &allow);
        origins.sort(&page, links, &mut found, &mut skipped);
        fields.insert(sheet, answer.headers);
    }
    let found = found.into_iter().map(|u| {
        let f = fields.remove(&u);
        (u, f)
    });
    Ok((found.collect(), skipped))
}

fn note(skipped: &mut Vec<String>, url: String) {
    if !skipped.contains(&url) {
        skipped.push(url);
    }
}

/// A resource, and the header fields of its answer when discovery read it.
type Found = (Url, Option<Vec<(String, String)>>);

/// One GET of discovery, as patient as the run's requests (at least 10 s): in a suite it may
/// follow a cell that left the server a backlog, and a page that answers late is still one
/// to view. Over h2c (`--http2` to an `http` origin) it speaks HTTP/2 with prior knowledge as
/// the run will, since a server may speak nothing else on that port (nginx before 1.25 with
/// `listen ... http2`); over TLS it offers HTTP/1.1 by ALPN: there the server chooses, and a
/// server that cannot speak it refuses the handshake, which is said.
fn fetch(
    endpoint: &Endpoint,
    path: &str,
    config: &BenchConfig,
) -> Result<client::Response, String> {
    let within = config.timeout.max(std::time::Duration::from_secs(10));
    match config.protocol.is_h2() && endpoint.tls.is_none() {
        true => client::get_h2_within(endpoint, path, within),
        false => client::get_within(endpoint, path, within),
    }
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
    pub fn of(s: &crate::session_tally::SessionTally, plan: &ViewPlan) -> ViewTimes {
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

#[cfg(test)]
mod tests {
    use super::*;

    fn origins(page: &str) -> Origins {
        let mut o = Origins::resolve(&["127.0.0.1".to_string()], &Default::default()).unwrap();
        o.page = Some(Url::parse(page).unwrap());
        o
    }

    fn other(o: &Origins, u: &str) -> Option<(String, Option<String>)> {
        o.other(&Url::parse(u).unwrap()).map(|used| (used.name(), used.tls))
    }

    #[test]
    fn an_allowed_hosts_origin_is_spoken_to_in_its_own_scheme() {
        let plain_page = origins("http://127.0.0.1:8080/");
        let tls = Some("127.0.0.1".to_string());
        let https = other(&plain_page, "https://127.0.0.1:8443/s.css");
        assert_eq!(https, Some(("https://127.0.0.1:8443".into(), tls.clone())));
        // The default port of the scheme, named in full so that two origins stay apart.
        let https = other(&plain_page, "https://127.0.0.1/s.css");
        assert_eq!(https, Some(("https://127.0.0.1:443".into(), tls)));
        let http = other(&plain_page, "http://127.0.0.1:9090/s.css");
        assert_eq!(http, Some(("http://127.0.0.1:9090".into(), None)));
        // The page's own origin is the target's; another scheme than http(s) is none.
        assert_eq!(other(&plain_page, "http://127.0.0.1:8080/s.css"), None);
        assert_eq!(other(&plain_page, "ftp://127.0.0.1/s.css"), None);
        // An https page's plain resources on an allowed host: in the clear.
        let tls_page = origins("https://127.0.0.1:8443/");
        let http = other(&tls_page, "http://127.0.0.1:8443/s.css");
        assert_eq!(http, Some(("http://127.0.0.1:8443".into(), None)));
    }

    #[test]
    fn per_url_figures_name_another_origins_requests_by_their_whole_url() {
        let addr = "127.0.0.1:8443".parse().unwrap();
        let table = super::super::OriginTable {
            of_entry: vec![0, 0, 1],
            others: vec![super::super::Origin { name: "https://a:8443".into(), addr, tls: None }],
        };
        let names: Vec<String> = (0..3).map(|i| table.entry_name(i, "/s.css")).collect();
        assert_eq!(names, ["/s.css", "/s.css", "https://a:8443/s.css"]);
        assert!(table.speaks_other() && !table.speaks_tls());
        assert!(!super::super::OriginTable::default().speaks_other());
    }
}
