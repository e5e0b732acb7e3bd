//! The checked suite: [`Suite`] and its stacks, workloads, loads and `--quick` scaling, as
//! [`crate::parse`] makes them from a suite file (the format is in docs/suites.md).

use std::sync::OnceLock;
use std::time::Duration;

use loadlab_engine::{RequestSpec, Stop, TlsOptions, Validation};
use loadlab_lab::catalog::{self, Db, Stack};
use loadlab_lab::knobs::{CpuList, Knobs, OnOff};
use loadlab_lab::named::Processes;
use loadlab_lab::workloads::{self, Workload};

/// A suite: which stacks, workloads and loads, how often, and how `--quick` shrinks it.
#[derive(Debug, Clone)]
pub struct Suite {
    pub name: String,
    pub description: String,
    /// Where it was read from: a file's path, or `built-in:NAME`.
    pub origin: String,
    /// In the order each repetition brings them up.
    pub stacks: Vec<StackSpec>,
    pub workloads: Vec<WorkloadSpec>,
    pub loads: Vec<Load>,
    pub repetitions: u32,
    /// Load applied before each cell's measurement, not counted.
    pub warmup: Duration,
    /// CPUs the client's worker threads are pinned to.
    pub client_cpus: Option<CpuList>,
    pub quick: Quick,
    /// Which cells have their tiers' on-CPU stacks recorded (`profile = "knee"`).
    pub profile: Profiling,
}

/// Which cells of a run are profiled (`--profile`, a suite's `profile`): perf on every tier's
/// processes while the cell is measured.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub enum Profiling {
    #[default]
    None,
    /// The highest load of each stack and workload, in the first repetition: where a stack
    /// saturates, which is the profile a person reads, at the cost of one cell in many.
    Knee,
    All,
}

impl std::str::FromStr for Profiling {
    type Err = String;

    fn from_str(s: &str) -> Result<Profiling, String> {
        match s {
            "none" => Ok(Profiling::None),
            "knee" => Ok(Profiling::Knee),
            "all" => Ok(Profiling::All),
            _ => Err(format!("{s:?} is not one of all, knee, none")),
        }
    }
}

/// One stack instance of a suite: a built-in stack the lab brings up, or a server of the
/// user's that is already running.
#[derive(Debug, Clone)]
pub struct StackSpec {
    /// Unique in the suite: the stack's name unless the file gave a `label` (an external
    /// target always has one).
    pub label: String,
    pub source: StackSource,
    /// Names of the built-in workloads it serves, worked out once: the lab computes every
    /// static file's digest each time it is asked.
    served: Vec<&'static str>,
}

/// Where a stack instance comes from.
#[derive(Debug, Clone)]
pub enum StackSource {
    /// A built-in stack, brought up, verified and torn down by the lab.
    Lab(LabStack),
    /// A server at a URL, neither started nor stopped by loadlab: verified by its answers.
    External(External),
}

/// A built-in stack and its knobs.
#[derive(Debug, Clone)]
pub struct LabStack {
    pub stack: &'static Stack,
    /// With the suite's `stack_cpus` already filled in where the stack gave no `cpus`.
    pub knobs: Knobs,
    /// Loaded over HTTP/3 (the file's `http3`): a client's choice, not a knob, as Caddy serves
    /// h3 whenever it speaks TLS; the parser has checked that the stack does.
    pub http3: bool,
    /// The lab host it runs on (`ssh://...`, as [`loadlab_remote::Host`] writes it); `None`:
    /// this machine.
    pub host: Option<String>,
}

/// A server of the user's (`url = "http://..."`): loadlab loads it, verifies its answers
/// before its cells, records who answered, and samples its processes only when named.
#[derive(Debug, Clone, PartialEq)]
pub struct External {
    /// The base URL as written, without a trailing `/`: a workload's path is appended.
    pub url: String,
    /// `https://`: the file's `cacert` or `insecure`; sessions resume as in `bench`.
    pub tls: TlsOptions,
    /// The processes to sample as the tier `external`; `None`: not sampled.
    pub processes: Option<Processes>,
}

impl External {
    /// The URL of `path` (which starts with `/`) on this target.
    pub fn url_of(&self, path: &str) -> String {
        format!("{}{path}", self.url)
    }
}

impl StackSpec {
    pub(crate) fn lab(
        label: String,
        stack: &'static Stack,
        knobs: Knobs,
        http3: bool,
        host: Option<String>,
    ) -> StackSpec {
        let served = workloads::for_stack(stack, &knobs).iter().map(|w| w.name).collect();
        let lab = LabStack { stack, knobs, http3, host };
        StackSpec { label, source: StackSource::Lab(lab), served }
    }

    pub(crate) fn external(label: String, external: External) -> StackSpec {
        // Any built-in path may be served by the user's server (a copy of the lab's files):
        // verify, not the plan, finds out.
        let served = all_workload_names().to_vec();
        StackSpec { label, source: StackSource::External(external), served }
    }

    /// The built-in stack and knobs, unless this is an external target.
    pub fn lab_stack(&self) -> Option<&LabStack> {
        match &self.source {
            StackSource::Lab(lab) => Some(lab),
            StackSource::External(_) => None,
        }
    }

    pub fn external_target(&self) -> Option<&External> {
        match &self.source {
            StackSource::External(e) => Some(e),
            StackSource::Lab(_) => None,
        }
    }

    /// The lab's knobs; `None` on an external target.
    pub fn knobs(&self) -> Option<&Knobs> {
        self.lab_stack().map(|l| &l.knobs)
    }

    /// Whether this instance serves the built-in workload `name`.
    pub fn serves(&self, name: &str) -> bool {
        self.served.contains(&name)
    }

    /// Whether `workload` can run here: a built-in one where the stack serves it, a custom
    /// request on every stack that speaks HTTP (named like a built-in one, where that one is
    /// served, since the path is the same).
    pub fn runs(&self, workload: &WorkloadSpec) -> bool {
        match &self.source {
            StackSource::External(_) => true,
            StackSource::Lab(lab) if workload.request.is_some() => {
                !lab.stack.http_tiers.is_empty()
                    && (!is_builtin(&workload.name) || self.serves(&workload.name))
            }
            StackSource::Lab(_) => self.serves(&workload.name),
        }
    }
}

/// One workload of a suite.
#[derive(Debug, Clone)]
pub struct WorkloadSpec {
    /// The lab's name for a built-in workload (`hello.txt`, `wordpress`...), or a custom
    /// request's label.
    pub name: String,
    /// A custom request (`path = ...`); `None` for a built-in workload, requested with GET.
    pub request: Option<CustomRequest>,
    /// Labels of the stacks it runs on; `None`: every stack that serves it.
    pub stacks: Option<Vec<String>>,
    /// The suite's own check of every response; `None` inherits the lab's (verify's) for a
    /// built-in workload, any 2xx status for a custom one.
    pub expect: Option<Validation>,
    /// Thresholds its cells must hold, over their repetitions (the workload's `slo`, or the
    /// suite's); `loadlab run` exits 99 when one fails.
    pub slo: Option<loadlab_stats::slo::Slo>,
    /// `view = true`: each cell makes page views (the page and its resources, as `bench
    /// --view`), at the load's rate.
    pub view: bool,
    /// `view_hosts = [...]`: other hosts (`HOST` or `HOST:PORT`) whose resources a view
    /// fetches too, as `bench --view-hosts`.
    pub view_hosts: Vec<String>,
    /// `visits = ...`: each cell runs visits of these files (absolute) or built-in visits
    /// (`wordpress:search`) by weight, as `bench --visits`: an open load's rate counts
    /// visits, a closed load's concurrency visitors.
    pub visits: Option<loadlab_engine::visits::Weighted>,
    /// `given = { NAME = "VALUE" }`: values the visit's steps use as `{NAME}`.
    pub given: Vec<(String, String)>,
}

impl WorkloadSpec {
    /// A request of the user's (`path = ...`, a URL list, a visit's base), which the lab's
    /// verify does not know.
    pub fn custom(&self) -> bool {
        self.request.is_some()
    }

    /// A URL list's requests (`urls = ...`), sent instead of the request alone.
    pub fn urls(&self) -> Option<&std::sync::Arc<loadlab_engine::Mix>> {
        self.request.as_ref().and_then(|r| r.urls.as_ref())
    }
}

/// A custom workload's request: its path on the stack, method, headers and body.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct CustomRequest {
    /// Starts with `/`; may hold a query. With `urls`, the list's first path.
    pub path: String,
    pub spec: RequestSpec,
    /// A URL list (`urls = FILE`): the requests its cells send, picked as it says, each with
    /// figures of its own; `spec` is then the base its lines leave out parts of.
    pub urls: Option<std::sync::Arc<loadlab_engine::Mix>>,
}

/// The points of one load: the x-axis of its chart.
#[derive(Debug, Clone, PartialEq)]
pub enum Points {
    /// Closed loop at each concurrency (ab's `-c`).
    Closed { concurrency: Vec<usize> },
    /// Open loop at each request rate (wrk2's `-R`).
    Open { rates: Vec<f64> },
    /// httperf's sessions at each new-connection rate, `calls` requests on each connection.
    Sessions { rates: Vec<f64>, calls: u32 },
}

impl Points {
    /// How many cells one workload on one stack gets from this load.
    pub fn len(&self) -> usize {
        match self {
            Points::Closed { concurrency } => concurrency.len(),
            Points::Open { rates } | Points::Sessions { rates, .. } => rates.len(),
        }
    }

    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }
}

/// One `[[loads]]` entry.
#[derive(Debug, Clone, PartialEq)]
pub struct Load {
    pub points: Points,
    /// Requests (closed, open), sessions (sessions) or time, at each point.
    pub stop: Stop,
    /// `keepalive` and `timeout`, as `bench` takes them (`--no-keepalive`, `-s`).
    pub connection: loadlab_load::Connection,
    /// Sent as the Accept-Encoding header, so that a stack's gzip knob has an effect. Suite
    /// only: `bench` sends it with `-H 'Accept-Encoding: ...'`.
    pub accept_encoding: Option<String>,
    /// Open loop and sessions: `arrival` and `max_connections`, as `bench` takes them.
    pub schedule: loadlab_load::Schedule,
    /// `streams` (on a stack with `http2` on) and `tls_resume` (with `tls` on), as `bench`
    /// takes them; the stack's knob, not the load, says whether it speaks HTTP/2.
    pub protocol: loadlab_load::Protocol,
    /// Names of the workloads it applies to; `None`: all of the suite's.
    pub workloads: Option<Vec<String>>,
    /// A load that changes over time (`stages`, or a ramp in `rates`): its one point is the
    /// shape's mean rate (the closed loop's: its peak connections). `None`: fixed points.
    pub shape: Option<loadlab_engine::Level>,
}

impl Load {
    pub fn applies_to(&self, workload: &str) -> bool {
        self.workloads.as_ref().is_none_or(|names| names.iter().any(|n| n == workload))
    }
}

/// How `--quick` shrinks a suite: counts and durations times `factor`, never below the
/// minimums (nor above what the suite asked). Concurrencies and rates stay as they are: they
/// are what the experiment compares, so shrinking them would change the question.
#[derive(Debug, Clone, PartialEq)]
pub struct Quick {
    pub factor: f64,
    pub min_requests: u64,
    pub min_conns: u64,
    pub min_duration: Duration,
    /// Replaces the suite's repetitions under `--quick`.
    pub repetitions: Option<u32>,
}

impl Default for Quick {
    fn default() -> Self {
        Quick {
            factor: 0.1,
            min_requests: 100,
            min_conns: 20,
            min_duration: Duration::from_secs(1),
            repetitions: None,
        }
    }
}

impl Quick {
    /// `n` scaled, at least `min`, at most `n`.
    pub fn count(&self, n: u64, min: u64) -> u64 {
        ((n as f64 * self.factor).round() as u64).max(min).min(n)
    }

    /// A stop condition scaled; `sessions` picks the minimum that applies to counts.
    pub fn stop(&self, stop: Stop, sessions: bool) -> Stop {
        match stop {
            Stop::Count(n) => Stop::Count(
                self.count(n, if sessions { self.min_conns } else { self.min_requests }),
            ),
            Stop::Duration(d) => {
                Stop::Duration(d.mul_f64(self.factor).max(self.min_duration).min(d))
            }
        }
    }
}

/// Three is the fewest repetitions that give a median with a spread.
pub const DEFAULT_REPETITIONS: u32 = 3;

/// Whether `workload`'s stack filter lets it run on `stack`.
pub(crate) fn selected(workload: &WorkloadSpec, stack: &StackSpec) -> bool {
    workload.stacks.as_ref().is_none_or(|labels| labels.contains(&stack.label))
}

/// Every built-in workload, as the lab defines it, in the lab's order (each once, whichever
/// stack serves it).
pub fn builtin_workloads() -> &'static [Workload] {
    static ALL: OnceLock<Vec<Workload>> = OnceLock::new();
    ALL.get_or_init(|| {
        let mut all: Vec<Workload> = Vec::new();
        for stack in catalog::STACKS {
            // With the database where it is optional, so that country.php and complex.php count.
            let db = (stack.db == Db::Optional).then_some(OnOff::On);
            for w in workloads::for_stack(stack, &Knobs { db, ..Knobs::default() }) {
                if !all.iter().any(|a| a.name == w.name) {
                    all.push(w);
                }
            }
        }
        all
    })
}

/// The built-in workload `name`.
pub fn builtin_workload(name: &str) -> Option<&'static Workload> {
    builtin_workloads().iter().find(|w| w.name == name)
}

pub(crate) fn is_builtin(name: &str) -> bool {
    builtin_workload(name).is_some()
}

/// Every workload name some built-in stack serves, in the lab's order.
pub fn all_workload_names() -> &'static [&'static str] {
    static NAMES: OnceLock<Vec<&'static str>> = OnceLock::new();
    NAMES.get_or_init(|| builtin_workloads().iter().map(|w| w.name).collect())
}

/// Why `stack` does not run `workload`, in words the report can show beside the skip.
pub(crate) fn why_not(stack: &StackSpec, workload: &str) -> String {
    let Some(LabStack { stack: s, knobs, .. }) = stack.lab_stack() else {
        // An external target runs every workload; nothing to explain.
        return format!("{} does not serve {workload}", stack.label);
    };
    if s.http_tiers.is_empty() {
        return format!("{} serves no HTTP", s.name);
    }
    if !s.has_php() {
        return format!("{} runs no PHP", s.name);
    }
    let with_db = Knobs { db: Some(OnOff::On), ..knobs.clone() };
    if s.db == Db::Optional && workloads::for_stack(s, &with_db).iter().any(|w| w.name == workload)
    {
        return format!("{workload} needs a database: add db = true to {}", stack.label);
    }
    if workload == "wordpress" {
        return format!("{} is not a WordPress stack", s.name);
    }
    format!("{} does not serve {workload}", s.name)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn quick_scales_within_bounds() {
        let q = Quick { factor: 0.01, ..Quick::default() };
        assert_eq!(q.count(50_000, 20), 500);
        assert_eq!(q.count(5_000, 100), 100, "the minimum holds");
        assert_eq!(q.count(50, 100), 50, "never more than asked");
        let d = |s| Stop::Duration(Duration::from_secs(s));
        assert_eq!(q.stop(d(10), false), d(1), "min_duration");
        assert_eq!(q.stop(Stop::Count(5_000), true), Stop::Count(50));
    }

    #[test]
    fn every_lab_workload_has_a_name_here() {
        let names = all_workload_names();
        for expected in ["hello.txt", "robots.txt", "20k.bin", "100k.bin", "1m.bin"] {
            assert!(names.contains(&expected), "{expected}");
        }
        for expected in ["hello.php", "phpinfo.php", "country.php", "complex.php", "wordpress"] {
            assert!(names.contains(&expected), "{expected}");
        }
    }
}
