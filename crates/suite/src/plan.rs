//! The plan: a suite unrolled into the [`Cell`]s a run executes, in order, and the
//! stack/workload combinations it leaves out with the reason.
//!
//! The order is fixed by the method, not by convenience: for each repetition, each stack in
//! turn is brought up once and runs all its workloads at all their load points. Stacks thus
//! alternate A B A B, so slow drift of the machine (heat, background jobs, a filling page
//! cache) spreads over all of them instead of landing on whichever ran last.

use std::sync::Arc;
use std::time::Duration;

use loadlab_engine::{
    BenchConfig, Level, Pacing, Protocol, RequestSpec, Shape, Stage, Stop, Validation,
};
use loadlab_lab::knobs::CpuList;
use loadlab_lab::workloads::{Expect, Workload};

use crate::suite::{
    builtin_workload, selected, why_not, Points, Profiling, StackSpec, Suite, WorkloadSpec,
};

/// A suite's cells in execution order, and what was left out.
#[derive(Debug, Clone)]
pub struct Plan {
    pub suite: String,
    pub quick: bool,
    pub repetitions: u32,
    pub client_cpus: Option<CpuList>,
    pub cells: Vec<Cell>,
    /// Stack/workload pairs that cannot run (a static-only stack and a PHP page), once each.
    pub skipped: Vec<Skipped>,
}

/// One measurement: one workload, at one load point, on one stack instance, in one repetition.
#[derive(Debug, Clone)]
pub struct Cell {
    /// Position in the plan, from 0.
    pub ordinal: u32,
    /// From 0.
    pub repetition: u32,
    /// Index of the stack in the suite; with `repetition` it names the stack instance.
    pub stack_index: usize,
    pub stack: StackSpec,
    pub workload: CellWorkload,
    pub load: LoadPoint,
    /// Whether its tiers' on-CPU stacks are recorded while it is measured.
    pub profiled: bool,
}

/// What a cell requests and how its answers are checked: the suite's workload, and what it
/// is on the cell's stack.
#[derive(Debug, Clone)]
pub struct CellWorkload {
    /// The workload as the suite gives it (its label, its SLO, views, visits and what they
    /// are given), shared by its cells.
    pub spec: Arc<WorkloadSpec>,
    /// URL path on the stack's front tier (or after an external target's URL).
    pub path: String,
    /// Method, headers and body: GET and nothing more for a built-in workload. Shared by the
    /// cells of every repetition (a body may be a large file).
    pub request: Arc<RequestSpec>,
    pub check: Check,
}

impl CellWorkload {
    /// The lab's name of a built-in workload, or a custom request's label.
    pub fn name(&self) -> &str {
        &self.spec.name
    }
}

/// How each response of a cell is checked.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Check {
    /// The lab's expectation for the workload (what verify checked before the load), with
    /// status 200.
    Lab(Expect),
    /// The suite file's `expect_*`.
    Suite(Validation),
    /// A custom request without `expect_*`: any 2xx status.
    Custom(Validation),
}

impl Check {
    /// The engine's per-response check; a lab workload's is the one its verify judged by.
    pub fn validation(&self) -> Validation {
        match self {
            Check::Suite(v) | Check::Custom(v) => v.clone(),
            Check::Lab(expect) => expect.validation(),
        }
    }
}

/// One point of one load: everything the engine needs but the target.
#[derive(Debug, Clone, PartialEq)]
pub struct LoadPoint {
    /// Index of the `[[loads]]` entry this point comes from.
    pub load_index: usize,
    pub point: Point,
    pub stop: Stop,
    pub connection: loadlab_load::Connection,
    pub warmup: Duration,
    pub schedule: loadlab_load::Schedule,
    pub accept_encoding: Option<String>,
    /// HTTP/2 streams per connection (a stack with `http2` on), TLS session resumption (one
    /// with `tls` on).
    pub protocol: loadlab_load::Protocol,
    /// A load that changes over time, its ramp laid over the point's duration (and under
    /// `--quick` its stages shortened alike): the engine paces the cell by it, keeps every
    /// second's figures, and runs no warm-up (the shape starts where it says).
    pub shape: Option<Arc<Shape>>,
}

/// The x of a cell: one concurrency or one rate.
#[derive(Debug, Clone, Copy, PartialEq)]
pub enum Point {
    Closed { concurrency: usize },
    Open { rate: f64 },
    Sessions { rate: f64, calls: u32 },
}

impl LoadPoint {
    pub fn pacing(&self) -> Pacing {
        match self.point {
            Point::Closed { .. } => Pacing::Closed,
            Point::Open { rate } => self.schedule.pacing(rate, None),
            Point::Sessions { rate, calls } => self.schedule.pacing(rate, Some(calls)),
        }
    }

    /// Sets `config`'s load model, stop condition and request options from this point; the
    /// caller has set the target, the threads and their pinning.
    pub fn apply(&self, config: &mut BenchConfig) {
        config.pacing = self.pacing();
        if let Point::Closed { concurrency } = self.point {
            config.connections = concurrency;
            // Each closed-loop thread needs a connection of its own (`BenchConfig::check`).
            config.threads = config.threads.min(concurrency).max(1);
        }
        config.stop = self.stop;
        self.connection.apply(config);
        self.protocol.apply(config);
        config.warmup = self.warmup;
        if let Some(enc) = &self.accept_encoding {
            config.request.headers.retain(|(n, _)| !n.eq_ignore_ascii_case("accept-encoding"));
            config.request.headers.push(("Accept-Encoding".to_string(), enc.clone()));
        }
        if let Some(shape) = &self.shape {
            config.shaped(Shape::clone(shape));
        }
    }

    /// The shape as `bench --stages` spells it (`30s:0..1000,120s:1000`), for the plan and
    /// the stored load; `None` for a fixed point.
    pub fn shape_label(&self) -> Option<String> {
        self.shape.as_ref().map(|shape| shape.to_string())
    }
}

/// A load's shape for one of its points: a ramp over the point's duration; stages as written,
/// or under `--quick` each stage shortened by the suite's factor (the rates, being the
/// question, stay), the whole no shorter than `quick.min_duration`.
fn shape_of(level: &Level, stop: Stop, quick: Option<&crate::suite::Quick>) -> Option<Arc<Shape>> {
    let Stop::Duration(duration) = stop else { return None };
    let shape = match (level, quick) {
        (Level::Stages(s), Some(q)) => {
            let whole = s.duration();
            let Stop::Duration(short) = q.stop(Stop::Duration(whole), false) else { return None };
            let factor = short.as_secs_f64() / whole.as_secs_f64();
            let stages = s.stages().iter().map(|st| Stage { secs: st.secs * factor, ..*st });
            // Shortening keeps every stage above zero and the levels as they were.
            Shape::new(stages.collect()).ok()?
        }
        _ => level.shape(duration)?.ok()?,
    };
    Some(Arc::new(shape))
}

impl Cell {
    /// The protocol the cell loads its stack over, with the load's streams: HTTP/2 on a lab
    /// stack with `http2` on, HTTP/3 on one with `http3`; HTTP/1.1 otherwise (an external
    /// target too).
    pub fn protocol(&self) -> Protocol {
        let streams = self.load.protocol.streams;
        match self.stack.lab_stack() {
            Some(lab) if lab.http3 => Protocol::Http3 { streams },
            Some(lab) if lab.knobs.http2.is_on() => Protocol::Http2 { streams },
            _ => Protocol::Http1,
        }
    }

    /// Sets the workload's request, `apply`s the load point (whose `accept_encoding` is a
    /// header over the request's own), the stack's [`Cell::protocol`] and the workload's
    /// validation.
    pub fn apply(&self, config: &mut BenchConfig) {
        config.request = (*self.workload.request).clone();
        if let Some(mix) = self.workload.spec.urls() {
            config.traffic = loadlab_engine::Traffic::Mix(mix.clone());
        }
        self.load.apply(config);
        config.protocol = self.protocol();
        config.validation = self.workload.check.validation();
        if self.workload.spec.view {
            // A view's checks fall on each of its requests, the resources too: a status a
            // browser takes (a 304 answers a repeat view's revalidation); the page's content
            // was checked at verify.
            let status = vec![(200, 299), (304, 304)];
            config.validation = Validation { status, ..Validation::default() };
        }
        if self.workload.spec.visits.is_some() {
            // A visit's steps carry their own checks (a login answers 302); a step that fails
            // one ends its visit, counted by step and class.
            config.validation = Validation::default();
        }
    }
}

/// A stack/workload pair the plan leaves out.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Skipped {
    /// The stack's label.
    pub stack: String,
    pub workload: String,
    pub reason: String,
}

/// Unrolls `suite` into cells; `quick` applies the suite's `[quick]` scaling.
pub fn plan(suite: &Suite, quick: bool) -> Plan {
    let repetitions = match (quick, suite.quick.repetitions) {
        (true, Some(r)) => r,
        _ => suite.repetitions,
    };
    let warmup = if quick { suite.warmup.mul_f64(suite.quick.factor) } else { suite.warmup };

    // What runs on each stack is the same in every repetition: work it out once.
    let specs: Vec<Arc<WorkloadSpec>> = suite.workloads.iter().cloned().map(Arc::new).collect();
    let mut skipped = Vec::new();
    let mut per_stack: Vec<Vec<(CellWorkload, Vec<LoadPoint>)>> = Vec::new();
    for stack in &suite.stacks {
        // The lab computes every file's digest each time it is asked: once per stack.
        let served =
            stack.lab_stack().map(|l| loadlab_lab::workloads::for_stack(l.stack, &l.knobs));
        let mut runs = Vec::new();
        for w in specs.iter().filter(|w| selected(w, stack)) {
            let Some(workload) = cell_workload(stack, served.as_deref(), w) else {
                // Only an unfiltered workload gets here: the parser refuses a filter naming
                // a stack that cannot serve it.
                skipped.push(Skipped {
                    stack: stack.label.clone(),
                    workload: w.name.clone(),
                    reason: why_not(stack, &w.name),
                });
                continue;
            };
            let points = load_points(suite, &w.name, quick, warmup);
            runs.push((workload, points));
        }
        per_stack.push(runs);
    }

    let mut cells = Vec::new();
    for repetition in 0..repetitions {
        for (stack_index, stack) in suite.stacks.iter().enumerate() {
            for (workload, points) in &per_stack[stack_index] {
                for (i, load) in points.iter().enumerate() {
                    let profiled = match suite.profile {
                        Profiling::None => false,
                        Profiling::All => true,
                        Profiling::Knee => repetition == 0 && i + 1 == points.len(),
                    };
                    cells.push(Cell {
                        ordinal: cells.len() as u32,
                        repetition,
                        stack_index,
                        stack: stack.clone(),
                        workload: workload.clone(),
                        load: load.clone(),
                        profiled,
                    });
                }
            }
        }
    }
    Plan {
        suite: suite.name.clone(),
        quick,
        repetitions,
        client_cpus: suite.client_cpus.clone(),
        cells,
        skipped,
    }
}

/// The load points of every load that applies to `workload`, in the suite's order; `quick`
/// scales their stops, `warmup` is the suite's (scaled).
fn load_points(suite: &Suite, workload: &str, quick: bool, warmup: Duration) -> Vec<LoadPoint> {
    suite
        .loads
        .iter()
        .enumerate()
        .filter(|(_, l)| l.applies_to(workload))
        .flat_map(|(load_index, l)| {
            let sessions = matches!(l.points, Points::Sessions { .. });
            let stop = if quick { suite.quick.stop(l.stop, sessions) } else { l.stop };
            let shape = l
                .shape
                .as_ref()
                .and_then(|level| shape_of(level, stop, quick.then_some(&suite.quick)));
            // A shape sets the duration, and starts where it says: no warm-up.
            let stop = shape.as_ref().map_or(stop, |s| Stop::Duration(s.duration()));
            let warmup = if shape.is_some() { Duration::ZERO } else { warmup };
            points_of(&l.points).into_iter().map(move |point| LoadPoint {
                load_index,
                point,
                stop,
                connection: l.connection,
                warmup,
                schedule: l.schedule,
                accept_encoding: l.accept_encoding.clone(),
                protocol: l.protocol.clone(),
                shape: shape.clone(),
            })
        })
        .collect()
}

/// What `w` requests on `stack` and how its answers are checked; `None` when the stack cannot
/// run it. A built-in workload is the lab's path with the lab's expectation (on a lab stack,
/// the instance's own from `served`: a file's digest, a page's markers); a custom one is the
/// user's request with its `expect_*`, or any 2xx.
fn cell_workload(
    stack: &StackSpec,
    served: Option<&[Workload]>,
    w: &Arc<WorkloadSpec>,
) -> Option<CellWorkload> {
    if !stack.runs(w) {
        return None;
    }
    let (path, request, default_check) = match &w.request {
        Some(custom) => (
            custom.path.clone(),
            custom.spec.clone(),
            Check::Custom(Validation { status: vec![(200, 299)], ..Validation::default() }),
        ),
        None => {
            let lab = match served {
                Some(served) => served.iter().find(|l| l.name == w.name)?,
                None => builtin_workload(&w.name)?,
            };
            (lab.path.to_string(), RequestSpec::default(), Check::Lab(lab.expect.clone()))
        }
    };
    let check = match &w.expect {
        Some(v) => Check::Suite(v.clone()),
        None => default_check,
    };
    Some(CellWorkload { spec: w.clone(), path, request: Arc::new(request), check })
}

fn points_of(points: &Points) -> Vec<Point> {
    match points {
        Points::Closed { concurrency } => {
            concurrency.iter().map(|&concurrency| Point::Closed { concurrency }).collect()
        }
        Points::Open { rates } => rates.iter().map(|&rate| Point::Open { rate }).collect(),
        Points::Sessions { rates, calls } => {
            rates.iter().map(|&rate| Point::Sessions { rate, calls: *calls }).collect()
        }
    }
}

impl Plan {
    /// The cells of each stack instance, in order: the CLI brings the stack up before the
    /// first cell of a group and down after the last.
    pub fn instances(&self) -> impl Iterator<Item = &[Cell]> {
        self.cells.chunk_by(|a, b| a.repetition == b.repetition && a.stack_index == b.stack_index)
    }
}

#[cfg(test)]
mod tests {
    use std::time::Duration;

    use loadlab_engine::{BenchConfig, Target};

    use super::*;
    use crate::parse;

    const TWO_STACKS: &str = r#"
name = "two"
repetitions = 2
warmup = "2s"

[[stacks]]
name = "nginx"

[[stacks]]
name = "nginx-fpm"

[[workloads]]
name = "hello.txt"

[[workloads]]
name = "hello.php"

[[loads]]
model = "closed"
concurrency = [1, 10]
requests = 10000

[[loads]]
model = "sessions"
workloads = ["hello.txt"]
rates = [50]
calls_per_conn = 10
conns = 5000

[quick]
factor = 0.01
min_requests = 200
min_conns = 10
repetitions = 1
"#;

    fn two() -> Suite {
        parse(TWO_STACKS, "two.toml").unwrap_or_else(|e| panic!("{e}"))
    }

    /// `profile = "knee"` profiles the last, highest load point of each stack and workload in
    /// the first repetition; `all` every cell; none by default.
    #[test]
    fn knee_profiles_each_groups_highest_load_once() {
        let mut suite = two();
        assert!(plan(&suite, false).cells.iter().all(|c| !c.profiled));
        suite.profile = Profiling::Knee;
        let p = plan(&suite, false);
        let profiled: Vec<(u32, &str, &str, u32)> = p
            .cells
            .iter()
            .filter(|c| c.profiled)
            .map(|c| (c.repetition, c.stack.label.as_str(), c.workload.name(), c.ordinal))
            .collect();
        assert_eq!(
            profiled,
            vec![
                (0, "nginx", "hello.txt", 2),
                (0, "nginx-fpm", "hello.txt", 5),
                (0, "nginx-fpm", "hello.php", 7)
            ]
        );
        suite.profile = Profiling::All;
        assert!(plan(&suite, false).cells.iter().all(|c| c.profiled));
        let bad = TWO_STACKS.replacen("repetitions", "profile = \"some\"\nrepetitions", 1);
        let e = parse(&bad, "two.toml").unwrap_err().to_string();
        assert!(e.contains("profile: \"some\" is not one of all, knee, none"), "{e}");
    }

    #[test]
    fn stacks_alternate_within_each_repetition() {
        let p = plan(&two(), false);
        let order: Vec<(u32, &str)> = p
            .instances()
            .map(|cells| (cells[0].repetition, cells[0].stack.label.as_str()))
            .collect();
        assert_eq!(order, vec![(0, "nginx"), (0, "nginx-fpm"), (1, "nginx"), (1, "nginx-fpm")]);
        // nginx: hello.txt at 2 concurrencies and 1 rate; nginx-fpm: that and hello.php at 2.
        let sizes: Vec<usize> = p.instances().map(<[Cell]>::len).collect();
        assert_eq!(sizes, vec![3, 5, 3, 5]);
        let ordinals: Vec<u32> = p.cells.iter().map(|c| c.ordinal).collect();
        assert_eq!(ordinals, (0..16).collect::<Vec<u32>>());
    }

    #[test]
    fn a_stack_runs_workloads_then_points_in_file_order() {
        let p = plan(&two(), false);
        let fpm: Vec<(&str, Point)> = p
            .instances()
            .nth(1)
            .unwrap()
            .iter()
            .map(|c| (c.workload.name(), c.load.point))
            .collect();
        let closed = |c| Point::Closed { concurrency: c };
        assert_eq!(
            fpm,
            vec![
                ("hello.txt", closed(1)),
                ("hello.txt", closed(10)),
                ("hello.txt", Point::Sessions { rate: 50.0, calls: 10 }),
                ("hello.php", closed(1)),
                ("hello.php", closed(10)),
            ]
        );
    }

    #[test]
    fn skipped_pairs_are_listed_once_with_the_reason() {
        let p = plan(&two(), false);
        assert_eq!(
            p.skipped,
            vec![Skipped {
                stack: "nginx".into(),
                workload: "hello.php".into(),
                reason: "nginx runs no PHP".into(),
            }]
        );
        assert!(p
            .cells
            .iter()
            .all(|c| !(c.stack.label == "nginx" && c.workload.name() == "hello.php")));
    }

    #[test]
    fn a_missing_database_is_named_as_the_reason() {
        let text = r#"
name = "db"
[[stacks]]
name = "nginx-fpm"
[[stacks]]
name = "apache-prefork-modphp"
db = true
[[workloads]]
name = "country.php"
[[workloads]]
name = "hello.php"
[[loads]]
model = "closed"
concurrency = [10]
duration = "1s"
"#;
        let p = plan(&parse(text, "db.toml").unwrap(), false);
        assert_eq!(p.skipped.len(), 1);
        assert_eq!(p.skipped[0].stack, "nginx-fpm");
        assert!(p.skipped[0].reason.contains("db = true"), "{}", p.skipped[0].reason);
        // Per repetition: hello.php on both, country.php on Apache only.
        assert_eq!(p.cells.len(), 3 * 3);
    }

    #[test]
    fn quick_scales_counts_durations_warmup_and_repetitions() {
        let suite = two();
        let full = plan(&suite, false);
        let quick = plan(&suite, true);
        assert_eq!(full.repetitions, 2);
        assert_eq!(quick.repetitions, 1);
        assert_eq!(quick.cells.len(), full.cells.len() / 2);
        for c in &quick.cells {
            let expected = match c.load.point {
                // 10,000 requests x 0.01 = 100, raised to min_requests.
                Point::Closed { .. } => Stop::Count(200),
                // 5,000 sessions x 0.01 = 50, above min_conns.
                _ => Stop::Count(50),
            };
            assert_eq!(c.load.stop, expected);
            assert_eq!(c.load.warmup, Duration::from_millis(20));
        }
        // Concurrencies and rates are the experiment itself: never scaled.
        let points = |p: &Plan| p.cells.iter().map(|c| c.load.point).collect::<Vec<_>>();
        assert_eq!(points(&quick), points(&full)[..quick.cells.len()]);
    }

    #[test]
    fn a_cell_configures_the_engine() {
        let p = plan(&two(), false);
        let sessions = p.cells.iter().find(|c| matches!(c.load.point, Point::Sessions { .. }));
        let closed_one = &p.cells[0];
        let mut config =
            BenchConfig::new(Target::parse("http://127.0.0.1:8080/hello.txt").unwrap());
        config.threads = 2;
        closed_one.apply(&mut config);
        assert_eq!(config.connections, 1);
        assert_eq!(config.threads, 1, "a closed-loop thread needs a connection of its own");
        assert_eq!(config.stop, Stop::Count(10_000));
        assert_eq!(config.warmup, Duration::from_secs(2));
        let digest = config.validation.body_sha256.expect("hello.txt is checked by digest");
        assert_eq!(digest[0], 0x68, "the lab's SHA-256 of hello, world!");
        config.check().unwrap();

        let mut config =
            BenchConfig::new(Target::parse("http://127.0.0.1:8080/hello.txt").unwrap());
        sessions.unwrap().apply(&mut config);
        assert!(matches!(
            config.pacing,
            Pacing::Sessions { calls: 10, max_connections: 10_000, .. }
        ));
        config.check().unwrap();
    }

    #[test]
    fn accept_encoding_becomes_a_header() {
        let text = TWO_STACKS.replace("conns = 5000", "conns = 5000\naccept_encoding = \"gzip\"");
        let p = plan(&parse(&text, "t.toml").unwrap(), false);
        let c = p.cells.iter().find(|c| matches!(c.load.point, Point::Sessions { .. })).unwrap();
        let mut config = BenchConfig::new(Target::parse("http://127.0.0.1:8080/").unwrap());
        c.apply(&mut config);
        assert_eq!(config.request.headers, vec![("Accept-Encoding".into(), "gzip".into())]);
    }

    #[test]
    fn lab_markers_check_the_first_marker_and_status_200() {
        let check = Check::Lab(Expect::Markers(vec!["one".into(), "two".into()]));
        let v = check.validation();
        assert_eq!(v.status, vec![(200, 200)]);
        assert_eq!(v.body_contains.as_deref(), Some(&b"one"[..]));
    }
}
