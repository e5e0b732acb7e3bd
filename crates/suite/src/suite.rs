//! The checked suite: [`Suite`] and its stacks, workloads, loads and `--quick` scaling, as
//! [`crate::parse`] makes them from a suite file (the format is in docs/suites.md).

use std::sync::OnceLock;
use std::time::Duration;

use loadlab_engine::{Arrival, Stop, Validation};
use loadlab_lab::catalog::{self, Db, Stack};
use loadlab_lab::knobs::{CpuList, Knobs, OnOff};
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
}

/// One stack instance of a suite.
#[derive(Debug, Clone)]
pub struct StackSpec {
    /// Unique in the suite: the stack's name unless the file gave a `label`.
    pub label: String,
    pub stack: &'static Stack,
    /// With the suite's `stack_cpus` already filled in where the stack gave no `cpus`.
    pub knobs: Knobs,
    /// Names of the workloads it serves with these knobs, worked out once: the lab computes
    /// every static file's digest each time it is asked.
    served: Vec<&'static str>,
}

impl StackSpec {
    pub(crate) fn new(label: String, stack: &'static Stack, knobs: Knobs) -> StackSpec {
        let served = workloads::for_stack(stack, &knobs).iter().map(|w| w.name).collect();
        StackSpec { label, stack, knobs, served }
    }

    /// The lab's workloads that this instance serves.
    pub fn workloads(&self) -> Vec<Workload> {
        workloads::for_stack(self.stack, &self.knobs)
    }

    /// Whether this instance serves the workload `name`.
    pub fn serves(&self, name: &str) -> bool {
        self.served.contains(&name)
    }
}

/// One workload of a suite.
#[derive(Debug, Clone)]
pub struct WorkloadSpec {
    /// The lab's name for it (`hello.txt`, `wordpress`...).
    pub name: String,
    /// Labels of the stacks it runs on; `None`: every stack that serves it.
    pub stacks: Option<Vec<String>>,
    /// The suite's own check of every response; `None` inherits the lab's (verify's).
    pub expect: Option<Validation>,
    /// Thresholds its cells must hold, over their repetitions (the workload's `slo`, or the
    /// suite's); `loadlab run` exits 99 when one fails.
    pub slo: Option<loadlab_stats::slo::Slo>,
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
    pub keepalive: bool,
    /// Sent as the Accept-Encoding header, so that a stack's gzip knob has an effect.
    pub accept_encoding: Option<String>,
    pub timeout: Duration,
    pub arrival: Arrival,
    /// Open loop and sessions: the most connections open at once.
    pub max_connections: usize,
    /// On a stack with `http2` on: requests in flight on each connection (h2load's `-m`);
    /// 1 otherwise.
    pub streams: usize,
    /// On a stack with `tls` on: resume TLS sessions across the cell's connections (the
    /// default), or a full handshake for every new connection.
    pub tls_resume: bool,
    /// Names of the workloads it applies to; `None`: all of the suite's.
    pub workloads: Option<Vec<String>>,
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

/// As `loadlab bench --max-connections`: enough that a slow server shows as latency and
/// errors rather than as a silently lower rate.
pub const DEFAULT_MAX_CONNECTIONS: usize = 10_000;
/// As the engine's: long enough that ordinary slowness is measured, not counted as errors.
pub const DEFAULT_TIMEOUT: Duration = Duration::from_secs(30);
/// Three is the fewest repetitions that give a median with a spread.
pub const DEFAULT_REPETITIONS: u32 = 3;

/// Whether `workload`'s stack filter lets it run on `stack`.
pub(crate) fn selected(workload: &WorkloadSpec, stack: &StackSpec) -> bool {
    workload.stacks.as_ref().is_none_or(|labels| labels.contains(&stack.label))
}

/// Every workload name some built-in stack serves, in the lab's order.
pub fn all_workload_names() -> &'static [&'static str] {
    static NAMES: OnceLock<Vec<&'static str>> = OnceLock::new();
    NAMES.get_or_init(names_served_anywhere)
}

fn names_served_anywhere() -> Vec<&'static str> {
    let mut names: Vec<&'static str> = Vec::new();
    for stack in catalog::STACKS {
        // With the database where it is optional, so that country.php and complex.php count.
        let db = (stack.db == Db::Optional).then_some(OnOff::On);
        for w in workloads::for_stack(stack, &Knobs { db, ..Knobs::default() }) {
            if !names.contains(&w.name) {
                names.push(w.name);
            }
        }
    }
    names
}

/// Why `stack` does not serve `workload`, in words the report can show beside the skip.
pub(crate) fn why_not(stack: &StackSpec, workload: &str) -> String {
    let s = stack.stack;
    if s.http_tiers.is_empty() {
        return format!("{} serves no HTTP", s.name);
    }
    if !s.has_php() {
        return format!("{} runs no PHP", s.name);
    }
    let with_db = Knobs { db: Some(OnOff::On), ..stack.knobs.clone() };
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
