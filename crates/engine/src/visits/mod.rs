//! Visits: a visitor's requests in bursts with think times between them, on that visitor's own
//! connections (httperf's `--wsesslog` sessions, issue 25). Visitors arrive on the run's
//! schedule (`Pacing::Sessions`: `--rate` counts visits); the budget counts visits.
//!
//! The plan ([`Plan`]) is fixed before the run: every distinct request of the visits becomes
//! an entry of a URL list ([`Mix`]), encoded once into the run's table like any list, so each
//! path has its own figures and a call is only an index. The driver (`driver`) is an event
//! loop of its own beside the request loop (`worker`): a visit's state (its burst, the calls
//! in flight, its think time) has no place in that loop's slots, and keeping it out leaves the
//! plain path as it was. What it records goes into the same [`Tally`](crate::Tally), plus the
//! visits' own figures ([`SessionTally`]).
//!
//! Latency: a burst's first call counts from when it was due: the visit's arrival for the
//! first burst (corrected for coordinated omission), the end of the think time for the others;
//! the burst's other calls from the first call's answer. Think time is never latency.

mod driver;
mod tally;
mod view;
mod wsesslog;

use std::collections::HashMap;
use std::sync::Arc;

pub(crate) use driver::VisitWorker;
pub use tally::{SessionTally, StepFailure};
pub use view::{View, ViewPlan, ViewResource, ViewTimes};
pub use wsesslog::Wsesslog;

use loadlab_visit::{Think, Visit};

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
    /// Page views (`--view`): what each view fetches; `None` for other visits.
    pub view: Option<ViewPlan>,
}

#[derive(Debug, Clone)]
pub struct PlannedVisit {
    pub name: String,
    pub bursts: Vec<PlannedBurst>,
}

#[derive(Debug, Clone)]
pub struct PlannedBurst {
    /// The calls, as entries of the run's table; the first goes alone.
    pub entries: Vec<u32>,
    /// Statuses each call's answer must have (empty: any), as the visit file's checks say.
    pub status: Vec<Vec<u16>>,
    /// The pause after the burst's last answer.
    pub think: Think,
}

impl Plan {
    /// The plan of `visits` and the URL list of their distinct requests. `default_think` is
    /// for bursts that name none (httperf's X). Visits that capture values or check bodies
    /// need per-visitor request bytes, which this driver does not build yet: refused here.
    pub fn new(
        file: &str,
        visits: &[Visit],
        default_think: Think,
        per_visitor: usize,
    ) -> Result<(Plan, Mix), EngineError> {
        // A request is its method, path, body and header fields: a repeat view's conditional GET
        // of a resource is another request than its first fetch.
        type Key = (String, String, Option<String>, Vec<(String, String)>);
        let mut index: HashMap<Key, u32> = HashMap::new();
        let mut entries: Vec<Entry> = Vec::new();
        let mut planned = Vec::with_capacity(visits.len());
        let none = Default::default();
        for visit in visits {
            let mut bursts = Vec::with_capacity(visit.bursts.len());
            for burst in &visit.bursts {
                let mut ids = Vec::with_capacity(burst.calls.len());
                let mut status = Vec::with_capacity(burst.calls.len());
                for call in &burst.calls {
                    let unsupported = !call.is_static()
                        || !call.captures.is_empty()
                        || call.checks.iter().any(|c| c.needs_body());
                    if unsupported {
                        return Err(EngineError::Input {
                            file: file.to_string(),
                            line: None,
                            what: format!(
                                "{}: captures, {{name}} and body checks are not run by the \
                                 engine yet (status checks are)",
                                visit.name
                            ),
                        });
                    }
                    let path = call.path.to_string_with(&none).unwrap_or_default();
                    let body = call.body.as_ref().and_then(|b| b.to_string_with(&none).ok());
                    let headers: Vec<(String, String)> = call
                        .headers
                        .iter()
                        .map(|(n, v)| (n.clone(), v.to_string_with(&none).unwrap_or_default()))
                        .collect();
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
                    status.push(
                        call.checks
                            .iter()
                            .find_map(|c| match c {
                                loadlab_visit::Check::Status(s) => Some(s.clone()),
                                _ => None,
                            })
                            .unwrap_or_default(),
                    );
                }
                bursts.push(PlannedBurst {
                    entries: ids,
                    status,
                    think: burst.think.unwrap_or(default_think),
                });
            }
            planned.push(PlannedVisit { name: visit.name.clone(), bursts });
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
        let plan = Plan {
            file: file.to_string(),
            visits: planned,
            per_visitor: per_visitor.max(1),
            view: None,
        };
        Ok((plan, mix))
    }

    /// Requests of one pass through every visit of the plan.
    pub fn requests(&self) -> usize {
        self.visits.iter().flat_map(|v| &v.bursts).map(|b| b.entries.len()).sum()
    }
}

/// A shared plan, as the configuration carries it.
pub type SharedPlan = Arc<Plan>;

/// What a run of visits needs of its configuration: visitors arriving on a schedule, over
/// HTTP/1.1 without TLS (the driver does not run TLS handshakes or HTTP/2 streams yet), with
/// their own requests as the run's list.
pub(crate) fn check(
    pacing: &crate::Pacing,
    protocol: crate::Protocol,
    tls: bool,
    traffic: &crate::Traffic,
) -> Result<(), EngineError> {
    let refuse = |m: &str| Err(EngineError::Config(m.to_string()));
    if !matches!(pacing, crate::Pacing::Sessions { .. }) {
        return refuse("visits arrive at a rate: --wsesslog needs --rate (sessions per second)");
    }
    if protocol.is_h2() || tls {
        return refuse("visits run over HTTP/1.1 without TLS for now (no --http2, no https://)");
    }
    if !matches!(traffic, crate::Traffic::Mix(_)) {
        return refuse("visits carry their own requests: --urls and --replay have no meaning");
    }
    Ok(())
}
