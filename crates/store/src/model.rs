//! The plain data the store keeps and gives back: runs, cells and what was measured in them.
//!
//! These types know nothing of the engine or the lab: the runner turns a cell's judged bench
//! report into a [`CellRecord`], and the report reads the same type back. Everything that is not a number
//! table (environment, knobs, load) is kept as JSON, so adding a field needs no migration.

use std::collections::BTreeMap;
use std::fmt;
use std::time::SystemTime;

use loadlab_stats::Series;
use serde::{Deserialize, Serialize};
use serde_json::Value;

use crate::histograms::Histograms;
pub use crate::trust::{Flag, LimitedBy, TrustFlag};

/// A stored run's id.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash, Serialize, Deserialize)]
#[serde(transparent)]
pub struct RunId(pub i64);

impl fmt::Display for RunId {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        self.0.fmt(f)
    }
}

/// A stored cell's id.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash, Serialize, Deserialize)]
#[serde(transparent)]
pub struct CellId(pub i64);

impl fmt::Display for CellId {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        self.0.fmt(f)
    }
}

/// Where a run stands. A run still `Running` in a store that no process is writing was killed
/// before it could say so; its committed cells are complete all the same.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum RunStatus {
    Running,
    Finished,
    /// Ctrl-C (or SIGTERM) stopped it: the user's choice, never an error's.
    Interrupted,
    /// An error stopped it (a target that failed verify, a stack that did not start): the
    /// run's `reason` says which.
    Failed,
    /// Left `running` by a process that is gone (killed, crashed, the machine rebooted): its
    /// committed cells are kept. Never written: read from the run's process.
    Crashed,
}

impl RunStatus {
    /// The spelling kept in the `runs.status` column and in JSON.
    pub fn as_str(self) -> &'static str {
        match self {
            RunStatus::Running => "running",
            RunStatus::Finished => "finished",
            RunStatus::Interrupted => "interrupted",
            RunStatus::Failed => "failed",
            RunStatus::Crashed => "crashed",
        }
    }

    pub(crate) fn parse(s: &str) -> Option<RunStatus> {
        match s {
            "running" => Some(RunStatus::Running),
            "finished" => Some(RunStatus::Finished),
            "interrupted" => Some(RunStatus::Interrupted),
            "failed" => Some(RunStatus::Failed),
            "crashed" => Some(RunStatus::Crashed),
            _ => None,
        }
    }
}

impl fmt::Display for RunStatus {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.as_str())
    }
}

/// What identifies the process that runs a run: its pid, and so that a reused pid or a reboot
/// is not taken for it, the boot it ran in and its start time (clock ticks after boot).
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct RunProcess {
    pub pid: i32,
    pub boot_id: String,
    pub start_ticks: u64,
}

impl RunProcess {
    /// The calling process; `None` where /proc does not say.
    pub fn current() -> Option<RunProcess> {
        RunProcess::of(std::process::id() as i32)
    }

    /// Process `pid` as it is now.
    pub fn of(pid: i32) -> Option<RunProcess> {
        let stat = std::fs::read_to_string(format!("/proc/{pid}/stat")).ok()?;
        Some(RunProcess { pid, boot_id: boot_id()?, start_ticks: start_ticks(&stat)? })
    }

    /// Whether this very process still exists: same boot, same pid, same start time. A zombie
    /// counts as gone: it will never commit another cell.
    pub fn alive(&self) -> bool {
        RunProcess::of(self.pid).is_some_and(|now| now == *self)
            && !std::fs::read_to_string(format!("/proc/{}/stat", self.pid)).is_ok_and(|s| {
                s.rsplit_once(')').is_some_and(|(_, r)| r.trim_start().starts_with('Z'))
            })
    }
}

fn boot_id() -> Option<String> {
    let id = std::fs::read_to_string("/proc/sys/kernel/random/boot_id").ok()?;
    Some(id.trim().to_string())
}

/// Field 22 of /proc/PID/stat, counted after the command name (which may hold spaces and
/// parentheses, so the fields start after the last ')').
fn start_ticks(stat: &str) -> Option<u64> {
    stat.rsplit_once(')')?.1.split_whitespace().nth(19)?.parse().ok()
}

/// The machine and software a run measured on, so two runs can be told apart later.
///
/// Every field defaults when missing, so environments written by an older loadlab still read.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(default)]
pub struct Environment {
    pub hostname: String,
    /// `uname -r`, e.g. "6.1.0-18-amd64".
    pub kernel: String,
    pub cpu_model: String,
    /// Logical CPUs online.
    pub cpu_count: u32,
    pub loadlab_version: String,
    /// Package name to installed version, for every package a stack of the run used.
    pub packages: BTreeMap<String, String>,
}

/// What is known when a run begins.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct RunInfo {
    /// The suite's name (a built-in one or the file's).
    pub suite: String,
    /// Kept to the millisecond, as every time in the store.
    pub started_at: SystemTime,
    pub environment: Environment,
}

/// One stored run, as `Store::run` gives it.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Run {
    pub id: RunId,
    pub suite: String,
    pub started_at: SystemTime,
    /// `None` while the run is (or was left) running.
    pub finished_at: Option<SystemTime>,
    pub status: RunStatus,
    /// Why a `Failed` run stopped (the error, as the command line said it); `None` otherwise.
    #[serde(default)]
    pub reason: Option<String>,
    pub environment: Environment,
}

/// One line of `loadlab runs`: a run and its committed cells.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct RunSummary {
    #[serde(flatten)]
    pub run: Run,
    /// Cells committed so far.
    pub cells: u64,
}

/// How load was offered to a cell.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum LoadModel {
    /// A fixed number of connections, each sending its next request when the last one ended.
    Closed,
    /// Requests due at scheduled times, whatever the server's speed.
    Open,
    /// httperf's sessions: new connections at a rate, a fixed number of calls on each.
    Session,
}

/// The load of a cell, as planned. Fields that do not apply to the model stay `None`; anything
/// the planner adds later (arrival distribution, gzip...) lands in `extra`, so it round-trips
/// without a migration.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct LoadSpec {
    pub model: LoadModel,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub connections: Option<u64>,
    /// Offered rate per second: requests for the open model, new connections for sessions.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub rate: Option<f64>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub duration_s: Option<f64>,
    /// A request count stop condition (ab's `-n`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub requests: Option<u64>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub calls_per_connection: Option<u64>,
    #[serde(default)]
    pub keepalive: bool,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub warmup_s: Option<f64>,
    #[serde(flatten)]
    pub extra: BTreeMap<String, Value>,
}

impl LoadSpec {
    /// The `extra` key of a load that changes over time: its stages as `bench --stages`
    /// spells them (`30s:0..1000,120s:1000`).
    pub const STAGES: &'static str = "stages";

    /// The stages of a load that changes over time; `None` for a fixed load.
    pub fn stages(&self) -> Option<&str> {
        self.extra.get(Self::STAGES).and_then(|v| v.as_str())
    }

    /// A load of `model` with every optional field unset.
    pub fn new(model: LoadModel) -> LoadSpec {
        LoadSpec {
            model,
            connections: None,
            rate: None,
            duration_s: None,
            requests: None,
            calls_per_connection: None,
            keepalive: false,
            warmup_s: None,
            extra: BTreeMap::new(),
        }
    }
}

/// What a run counts: its requests, or for a run of visits its page views, the visits of a
/// visit file or httperf's sessions ([`crate::counted`] reads and names it).
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum Counted {
    #[default]
    Requests,
    /// Page views: a page and its resources.
    Views,
    /// Visits of several steps.
    Visits,
    /// httperf's sessions (`--wsesslog`): bursts of calls with think times between. A suite
    /// runs no session log, so a stored cell is never counted in sessions.
    Sessions,
}

impl Counted {
    /// The spelling kept in the `cells.counted` column.
    pub fn as_str(self) -> &'static str {
        match self {
            Counted::Requests => "requests",
            Counted::Views => "views",
            Counted::Visits => "visits",
            Counted::Sessions => "sessions",
        }
    }

    pub(crate) fn parse(s: &str) -> Option<Counted> {
        [Counted::Requests, Counted::Views, Counted::Visits, Counted::Sessions]
            .into_iter()
            .find(|c| c.as_str() == s)
    }
}

/// One resource sample of one tier of a stack (nginx, php-fpm, mariadb...) during a cell.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Sample {
    pub tier: String,
    /// Milliseconds since the cell started.
    pub t_ms: u64,
    /// User CPU time the tier's processes used in this sample's interval, in seconds: since the
    /// cell's previous sample, or for the first since the cell started (t_ms = 0).
    pub cpu_user_s: f64,
    /// System CPU time, likewise.
    pub cpu_sys_s: f64,
    /// Resident memory of the tier's processes, summed.
    pub rss_bytes: u64,
    pub processes: u32,
    /// The machine's 1-minute load average.
    pub loadavg: f64,
    /// The machine's busy CPU share over the last interval, 0.0 to 1.0.
    pub machine_cpu: f64,
}

/// One finished cell: where it ran, the load, and everything measured.
#[derive(Debug, Clone)]
pub struct CellRecord {
    /// Position in the run's plan; cells come back in this order.
    pub ordinal: u32,
    pub stack: String,
    /// The stack's settings for this cell (workers, pm mode, keep-alive...).
    pub knobs: BTreeMap<String, Value>,
    pub workload: String,
    pub load: LoadSpec,
    pub repetition: u32,
    pub started_at: SystemTime,
    /// Measured duration, warm-up excluded.
    pub duration_s: f64,
    /// Named figures, see [`metric`](crate::metric) for the usual names. A NaN is kept as SQL
    /// NULL and comes back as NaN.
    pub metrics: BTreeMap<String, f64>,
    /// Its distributions, kept exactly.
    pub histograms: Histograms,
    /// Completed, failed and bytes per second of the cell.
    pub series: Series,
    /// Under a load that changes over time: the judged figures of every whole measured second,
    /// from second 0 (at most as many as `series` has; a stopped cell's partial last second is
    /// not kept). Empty for a fixed load, and for cells
    /// stored before loadlab kept them.
    pub seconds: Vec<SecondRecord>,
    /// A visit workload's steps, in the visit's order; empty for other cells, and for cells
    /// stored before loadlab kept them.
    pub steps: Vec<StepRecord>,
    pub samples: Vec<Sample>,
    pub flags: Vec<TrustFlag>,
    /// What the cell counted, as the runner decided it; `None` for cells stored before loadlab
    /// kept the decision (read it with [`crate::Counted::of`]).
    pub counted: Option<Counted>,
    /// What limited the cell's figures; `None` for cells stored before loadlab judged it.
    pub limited_by: Option<LimitedBy>,
    /// The SLO its workload was to hold, as written (`p99<50ms,errors<0.1%`): the report
    /// judges the cell's stack by it. `None` without one, and for cells stored before it was
    /// kept.
    pub slo: Option<String>,
}

impl CellRecord {
    /// The figure kept under `name` (a [`metric`](crate::metric) name); `None` when the cell
    /// has none, or kept it as NaN (not measured).
    pub fn figure(&self, name: &str) -> Option<f64> {
        self.metrics.get(name).copied().filter(|v| v.is_finite())
    }
}

/// One second of a cell whose load changes over time, as the runner judged it (its
/// `seconds` module): what the report draws per second, read back exactly as judged.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct SecondRecord {
    /// Requests the shape offered in this second (due, sent or not).
    pub offered: u64,
    /// Requests sent in full in this second.
    pub achieved: u64,
    /// Latency of the requests that completed in this second; `None` with none.
    pub p50_us: Option<u64>,
    pub p90_us: Option<u64>,
    pub p99_us: Option<u64>,
    /// The most connections open at once in this second.
    pub connections_open: u64,
    /// The trust flags raised in this second (the run's rules on its counters).
    pub flags: Vec<Flag>,
}

/// One step of a visit workload's cell, as the engine counted it over the measured visits.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct StepRecord {
    /// Its number (from 1), method and path as the visit writes it (`2 POST /login`).
    pub label: String,
    pub started: u64,
    pub completed: u64,
    /// Visits that failed at this step, by class (`status`, `capture`, `timeout`...).
    pub failed: BTreeMap<String, u64>,
    /// From the step's due time to its last answer, completed steps only; `None` with none.
    pub p50_us: Option<u64>,
    pub p99_us: Option<u64>,
}

impl StepRecord {
    /// Visits that failed at this step, whatever the class.
    pub fn failed_total(&self) -> u64 {
        self.failed.values().sum()
    }
}

/// A captured piece of a stack's configuration: an effective config file, a version string, a
/// module list; for an external target, who answered at its URL. Stored per run, since the
/// same stack comes up for many cells.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct ConfigRecord {
    pub stack: String,
    pub tier: String,
    /// What the content is: "capture", or [`ConfigRecord::IDENTITY`].
    pub kind: String,
    /// Which one among several of a kind, e.g. the config file's name; may be empty.
    pub name: String,
    pub content: String,
}

impl ConfigRecord {
    /// The kind of an external target's record: who answered at its URL, a
    /// [`crate::host::Identity`] as JSON ([`ConfigRecord::identity`]).
    pub const IDENTITY: &'static str = "identity";

    /// The kind of a lab host's record (a stack run on another machine over ssh): its
    /// machine and the path to it, a [`crate::HostFacts`] as JSON
    /// ([`ConfigRecord::host_facts`]). `stack` lists the stacks it ran, `name` is its
    /// `ssh://` URL.
    pub const HOST: &'static str = "host";
}
