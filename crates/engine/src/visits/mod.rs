//! Visits: a visitor's requests in bursts with think times between them, on that visitor's own
//! connections: httperf's `--wsesslog` sessions, `--view`'s page views, and visit
//! files' steps (`--visits`, `steps`), whose visitors carry a cookie jar and captured values
//! from one answer to the next request (`carry`). Visitors arrive on the run's schedule
//! (`Pacing::Sessions`: `--rate` counts visits) or as a closed population
//! (`Pacing::Closed`: `-c` visitors, each starting its next visit when one ends); the budget
//! counts visits.
//!
//! The plan ([`Plan`]) is fixed before the run: every distinct request of the visits becomes
//! an entry of a URL list ([`Mix`]), encoded once into the run's table like any list, so each
//! path has its own figures and a call is only an index. The visits are one source of the
//! worker's requests (`worker::visits`): the worker's loop, slots and connection paths carry
//! their calls, and a visit's state (its burst, the calls in flight, its think time) is kept
//! beside the worker's slots. What it records goes into the same
//! [`Tally`](crate::Tally), plus the visits' own figures ([`SessionTally`], a visit file's
//! steps among them). A visit file's request is rendered per visitor (its own bytes); the
//! table's entry is then only where its figures go.
//!
//! Latency: a burst's first call counts from when it was due: the visit's arrival for the
//! first burst (corrected for coordinated omission), the end of the think time for the others;
//! the burst's other calls from the first call's answer. Think time is never latency.

pub(crate) mod carry;
mod steps;
mod view;
mod weighted;
mod wsesslog;

use std::collections::HashMap;
use std::sync::Arc;

pub use crate::session_tally::{SessionTally, StepFailure, StepTally};
pub use view::{View, ViewPlan, ViewResource, ViewTimes};
pub use wsesslog::Wsesslog;

use std::time::Duration;

pub use carry::Render;
pub use steps::VisitFile;
pub use weighted::{parse_visits, parse_weight, parse_weights, Weighted, WeightedFile};

use loadlab_visit::{Call, Template, Think, Visit};

use crate::mix::{Entry, Mix, Order};
use crate::EngineError;

/// The most connections one visitor opens when not told (httperf's `--max-connections` with
/// sessions says it there; a browser's six per host is for page views).
pub const PER_VISITOR: usize = 4;

/// The visits of a run, as indices into its table.
#[derive(Debug, Clone)]
pub struct Plan {
    /// The file the visits came from, for messages.
    pub file: String,
    pub visits: Vec<PlannedVisit>,
    /// Connections one visitor may hold at once (a burst's calls spread over them).
    pub per_visitor: usize,
    /// A visit file's: how each visitor renders its own requests; `None`, the table's bytes.
    pub render: Option<Render>,
    /// A visit file's steps, named for their figures (`1 GET /login`; in a weighted mix of
    /// files, after their file: `a.toml: 1 GET /login`), and a page view's (`first view`,
    /// `repeat view`); empty otherwise. Each visit's steps are its bursts, in order.
    pub steps: Vec<String>,
    /// Where each visit's steps begin in `steps`.
    pub step_starts: Vec<usize>,
    /// Page views (`--view`): what each view fetches; `None` for other visits.
    pub view: Option<ViewPlan>,
    /// Where each request goes: the target's origin unless a page view's resource is on an
    /// allowed host's (`--view-hosts`).
    pub origins: OriginTable,
    /// The users the target has for visitor numbers, one each (a lab's built-in login visit:
    /// the users it made); a visitor whose number is above them shares one, and its logins
    /// may fail. `None`: no such bound.
    pub users: Option<u64>,
}

/// The origins of a run's requests beyond the target's: a visitor holds its own connections
/// to each, up to `Plan::per_visitor` per origin, as a browser holds up to six per host.
#[derive(Debug, Clone, Default)]
pub struct OriginTable {
    /// Each entry's origin: 0 the target's, `i` the origin `others[i - 1]`; empty, all 0.
    pub of_entry: Vec<usize>,
    /// The other origins, resolved before the run.
    pub others: Vec<Origin>,
}

/// Another origin of a page view's resources (an allowed host's, `--view-hosts`).
#[derive(Clone)]
pub struct Origin {
    /// `http://host:port` or `https://host:port`: what its requests' figures are named after.
    pub name: String,
    pub addr: std::net::SocketAddr,
    /// Over TLS: the client configuration the run's connections to other origins share (its
    /// trust, ALPN `http/1.1`, its session cache) and this origin's server name.
    pub tls: Option<(std::sync::Arc<rustls::ClientConfig>, rustls::pki_types::ServerName<'static>)>,
}

/// Its name and address: what makes it the same origin on every agent (`Plan::identity`),
/// not the session cache of its TLS configuration.
impl std::fmt::Debug for Origin {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "{} at {}", self.name, self.addr)
    }
}

impl OriginTable {
    /// The origin entry `entry` of the table goes to.
    pub(crate) fn of(&self, entry: u32) -> usize {
        self.of_entry.get(entry as usize).copied().unwrap_or(0)
    }

    /// Origin `origin`; `None` for the target's (the run's own address and TLS).
    pub(crate) fn get(&self, origin: usize) -> Option<&Origin> {
        origin.checked_sub(1).map(|i| &self.others[i])
    }

    /// The name of entry `entry`'s request for its own figures: its path on the target's
    /// origin, its whole URL on another (two origins may both serve `/s.css`).
    pub fn entry_name(&self, entry: usize, path: &str) -> String {
        match self.get(self.of(entry as u32)) {
            Some(origin) => format!("{}{path}", origin.name),
            None => path.to_string(),
        }
    }

    /// Whether any request goes to another origin than the target's.
    pub fn speaks_other(&self) -> bool {
        !self.others.is_empty()
    }

    /// Whether any other origin is an `https` one: the run makes TLS handshakes with it.
    pub fn speaks_tls(&self) -> bool {
        self.others.iter().any(|o| o.tls.is_some())
    }

    /// A new session cache for the other origins' TLS connections, shared by all of them:
    /// each run's first handshakes are full ones, as its target's are. `resume` off
    /// (`--no-tls-resume`) keeps the configuration's none.
    pub(crate) fn fresh_sessions(&mut self, resume: bool) {
        let Some((client, _)) = self.others.iter().find_map(|o| o.tls.as_ref()) else { return };
        if !resume {
            return;
        }
        let mut fresh = (**client).clone();
        fresh.resumption = rustls::client::Resumption::default();
        let fresh = std::sync::Arc::new(fresh);
        for (client, _) in self.others.iter_mut().filter_map(|o| o.tls.as_mut()) {
            *client = fresh.clone();
        }
    }
}

#[derive(Debug, Clone)]
pub struct PlannedVisit {
    pub name: String,
    /// The visit file it came from (the plan's file, but for a weighted mix of files).
    pub file: String,
    /// Its weight in a weighted mix of visit files: the share of arriving visits that pick
    /// it (1 otherwise).
    pub weight: u32,
    pub bursts: Vec<PlannedBurst>,
}

#[derive(Debug, Clone)]
pub struct PlannedBurst {
    /// The calls, as entries of the run's table; the first goes alone.
    pub entries: Vec<u32>,
    /// The calls themselves: their checks, captures and templates.
    pub calls: Vec<Call>,
    /// The pause after the burst's last answer.
    pub think: Think,
}

impl Plan {
    /// The plan of `visits` and the URL list of their distinct requests. `default_think` is
    /// for bursts that name none (httperf's X). Their requests are the same bytes for every
    /// visitor: a visit that captures values is a visit file's ([`Plan::carrying`]).
    pub fn new(
        file: &str,
        visits: &[Visit],
        default_think: Think,
        per_visitor: usize,
    ) -> Result<(Plan, Mix), EngineError> {
        if let Some(v) = visits.iter().find(|v| v.calls().any(|c| !c.is_static())) {
            let what =
                format!("{}: {{name}} is a visit file's (--visits), not this file's", v.name);
            return Err(EngineError::Input { file: file.to_string(), line: None, what });
        }
        Plan::build(file, visits, default_think, per_visitor)
    }

    /// The plan of a visit file's visit: each visitor renders its own requests (captured
    /// values, its cookies) through `render`, and each step has figures of its own. The URL
    /// list holds each distinct request as written (`{name}` unfilled), for its figures.
    pub fn carrying(
        file: &str,
        visit: &Visit,
        per_visitor: usize,
        render: Render,
    ) -> Result<(Plan, Mix), EngineError> {
        Plan::carrying_all(file, &[(file.to_string(), visit.clone(), 1)], per_visitor, render)
    }

    /// The plan of visit files' visits, each `(file, visit, weight)`: an arriving visitor
    /// picks one by weight. One file's steps are named as [`Plan::carrying`]'s; several
    /// files' after their file.
    pub fn carrying_all(
        file: &str,
        visits: &[(String, Visit, u32)],
        per_visitor: usize,
        render: Render,
    ) -> Result<(Plan, Mix), EngineError> {
        let only: Vec<Visit> = visits.iter().map(|(_, v, _)| v.clone()).collect();
        let (mut plan, mix) = Plan::build(file, &only, Think::Fixed(Duration::ZERO), per_visitor)?;
        let named = visits.len() > 1;
        for ((f, visit, weight), planned) in visits.iter().zip(plan.visits.iter_mut()) {
            (planned.file, planned.weight) = (f.clone(), *weight);
            for (i, b) in visit.bursts.iter().enumerate() {
                let (method, path) = (&b.calls[0].method, b.calls[0].path.text());
                let step = format!("{} {method} {path}", i + 1);
                plan.steps.push(if named { format!("{f}: {step}") } else { step });
            }
        }
        plan.render = Some(render);
        Ok((plan, mix))
    }

    fn build(
        file: &str,
        visits: &[Visit],
        default_think: Think,
        per_visitor: usize,
    ) -> Result<(Plan, Mix), EngineError> {
        // A request is its method, path, body and header fields: a repeat view's conditional
        // GET of a resource is another request than its first fetch.
        type Key = (String, String, Option<String>, Vec<(String, String)>);
        let mut index: HashMap<Key, u32> = HashMap::new();
        let mut entries: Vec<Entry> = Vec::new();
        let mut planned = Vec::with_capacity(visits.len());
        for visit in visits {
            let mut bursts = Vec::with_capacity(visit.bursts.len());
            for burst in &visit.bursts {
                let mut ids = Vec::with_capacity(burst.calls.len());
                for call in &burst.calls {
                    let path = call.path.text();
                    let body = call.body.as_ref().map(Template::text);
                    let headers: Vec<(String, String)> =
                        call.headers.iter().map(|(n, v)| (n.clone(), v.text())).collect();
                    let key = (call.method.clone(), path.clone(), body.clone(), headers.clone());
                    let id = *index.entry(key).or_insert_with(|| {
                        let mut e = Entry::new(path, entries.len() + 1);
                        e.method = Some(call.method.clone());
                        e.headers = headers;
                        e.body = body.map(String::into_bytes);
                        entries.push(e);
                        (entries.len() - 1) as u32
                    });
                    ids.push(id);
                }
                bursts.push(PlannedBurst {
                    entries: ids,
                    calls: burst.calls.clone(),
                    think: burst.think.unwrap_or(default_think),
                });
            }
            let (name, file) = (visit.name.clone(), file.to_string());
            planned.push(PlannedVisit { name, file, weight: 1, bursts });
        }
        if entries.len() > crate::mix::MAX_ENTRIES {
            return Err(EngineError::Input {
                file: file.to_string(),
                line: None,
                what: format!(
                    "{} distinct requests; at most {} (each has figures of its own)",
                    entries.len(),
                    crate::mix::MAX_ENTRIES
                ),
            });
        }
        let mix = Mix { file: file.to_string(), entries, order: Order::Sequential };
        // Each visit's steps (when it has figures by step) are its bursts.
        let step_starts = planned
            .iter()
            .scan(0, |at, v: &PlannedVisit| {
                let start = *at;
                *at += v.bursts.len();
                Some(start)
            })
            .collect();
        let plan = Plan {
            file: file.to_string(),
            visits: planned,
            per_visitor: per_visitor.max(1),
            render: None,
            steps: Vec::new(),
            step_starts,
            view: None,
            origins: OriginTable::default(),
            users: None,
        };
        Ok((plan, mix))
    }

    /// Whether the answers' bodies must be kept for a check or a capture.
    pub(crate) fn needs_body(&self) -> bool {
        let calls = self.visits.iter().flat_map(|v| &v.bursts).flat_map(|b| &b.calls);
        calls.into_iter().any(|c| {
            c.checks.iter().any(|k| k.needs_body()) || c.captures.iter().any(|k| k.needs_body())
        })
    }

    /// The step's index among [`Plan::steps`], when steps have figures of their own.
    pub(crate) fn step_index(&self, visit: usize, burst: usize) -> Option<usize> {
        (!self.steps.is_empty()).then(|| self.step_starts[visit] + burst)
    }

    /// A weighted mix of visit files: arriving visitors pick a visit by these weights (from
    /// the run's seed); `None` when visits go round-robin (httperf's sessions) or there is one.
    pub(crate) fn weights(&self) -> Option<Vec<u32>> {
        let mixed = self.render.is_some() && self.visits.len() > 1;
        mixed.then(|| self.visits.iter().map(|v| v.weight).collect())
    }

    /// What makes these visits the same on every agent of a test (`--agents` compares it): the
    /// visits' steps as read (requests, checks, captures, think times), the connections a
    /// visitor holds, a view's resources, and the values given to every visitor. The run's
    /// base request and target are compared on their own.
    pub fn identity(&self) -> String {
        let given: std::collections::BTreeMap<_, _> =
            self.render.iter().flat_map(|r| r.given.iter()).collect();
        format!(
            "{:?} per visitor {} steps {:?} view {:?} origins {:?} given {given:?}",
            self.visits, self.per_visitor, self.steps, self.view, self.origins
        )
    }

    /// The most connections one visitor holds at once, as the driver opens them: up to
    /// `per_visitor` to each origin over HTTP/1.1, one to each over HTTP/2 (`h2`), where a
    /// burst's requests are streams of it (RFC 9113 section 9.1). What a closed population's
    /// descriptors are reserved for.
    pub fn connections_per_visitor(&self, h2: bool) -> usize {
        let origins = 1 + self.origins.others.len();
        match h2 {
            true => origins,
            false => self.per_visitor * origins,
        }
    }

    /// Requests of one pass through every visit of the plan.
    pub fn requests(&self) -> usize {
        self.visits.iter().flat_map(|v| &v.bursts).map(|b| b.entries.len()).sum()
    }
}

/// A shared plan, as the configuration carries it.
pub type SharedPlan = Arc<Plan>;

/// What a run of visits needs of its configuration: visitors arriving on a schedule, or a
/// closed population of them (`-c` visitors, each starting its next visit when one ends), with
/// their own requests as the run's list. Any protocol does: HTTP/1.1 in the clear or over TLS,
/// HTTP/2 over TLS (ALPN) or in the clear (h2c).
pub(crate) fn check(
    plan: &Plan,
    pacing: &crate::Pacing,
    traffic: &crate::Traffic,
) -> Result<(), EngineError> {
    let refuse = |m: &str| Err(EngineError::Config(m.to_string()));
    if let crate::Pacing::Open { .. } = pacing {
        return refuse(&format!(
            "{}: visits arrive as sessions (Pacing::Sessions) or as a closed population",
            plan.file
        ));
    }
    if !matches!(traffic, crate::Traffic::Mix(_)) {
        return refuse("visits carry their own requests: --urls and --replay have no meaning");
    }
    Ok(())
}
