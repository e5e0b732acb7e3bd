//! The seam matrix: every load shape (closed `-c`/`-n`, closed `-d`, a closed ramp, a fixed
//! rate, Poisson, a ramp `A..B`, stages, httperf sessions, a visit file, page views,
//! `--wsesslog`) against every kind of target (a lab stack's built-in workload, a lab stack's
//! `path =` workload, an external `url =`), in `bench` and as a suite cell: each completes,
//! says its shape (bench: its header and its JSON `config`; a cell: its line in `run` and its
//! stored load), and its per-second rows add up to its totals.
//!
//! `bench` runs against a server the test starts: to `bench` a lab stack's workload is a URL
//! like any other, so the lab's kinds are the suite's. The suite runs once per kind of target:
//! the external one against that server (no package needed), the lab's two kinds on one nginx
//! stack (skipped visibly without nginx, a failure in CI). Per-second rows: `seconds` in the
//! JSON under a shape, else the `--hdr-log` intervals (the same histograms); a cell's stored
//! seconds (its `series`). Visits, page views and `--wsesslog` are driven by a loop of their
//! own, which keeps no per-second figures: their rows are checked in a test of their own.

use std::path::Path;

use loadlab_store::{metric, CellRecord, LoadModel, RunId, Store};
use serde_json::Value;

use super::{require, Scratch};
use crate::it::ramp::intervals;
use crate::it::{at, uint};
use crate::support::{run_json, Behaviour, TestServer};

/// A load shape: its `bench` flags (`FILES` stands for the scratch directory), its `[[loads]]`
/// in a suite (`None`: a suite has no such load), and the words that state it in `bench`'s
/// header and in `run`'s line for its cell.
struct Shape {
    name: &'static str,
    bench: &'static [&'static str],
    load: Option<&'static str>,
    /// Parts of the header's second line (the threads, which depend on the machine, left out).
    header: &'static [&'static str],
    cell: &'static str,
    /// `config.shape` in the JSON, the stored load's `stages` in a suite.
    stages: Option<&'static str>,
    /// Other keys of the JSON `config` that say the shape, with their values as JSON.
    config: &'static [(&'static str, &'static str)],
    /// Driven by the visits' loop: a workload of its own in a suite.
    visits: bool,
}

const SHAPES: &[Shape] = &[
    Shape {
        name: "closed -n",
        bench: &["-c", "2", "-n", "40"],
        load: Some("model = \"closed\"\nconcurrency = [2]\nrequests = 40"),
        header: &["  2 connections, ", ", keep-alive, 40 requests"],
        cell: "closed c=2 n=40",
        stages: None,
        config: &[("connections", "2"), ("requests", "40"), ("rate", "null")],
        visits: false,
    },
    Shape {
        name: "closed -d",
        bench: &["-c", "2", "-d", "1s"],
        load: Some("model = \"closed\"\nconcurrency = [2]\nduration = \"1s\""),
        header: &["  2 connections, ", ", keep-alive, 1s"],
        cell: "closed c=2 1s",
        stages: None,
        config: &[("connections", "2"), ("duration_s", "1.0"), ("rate", "null")],
        visits: false,
    },
    Shape {
        name: "closed ramp",
        bench: &["-c", "1..4", "-d", "2s"],
        load: Some("model = \"closed\"\nstages = \"2s:1..4\""),
        header: &["connections in stages 2s:1..4 (at most 4)", ", 2s"],
        cell: "closed connections stages 2s:1..4",
        stages: Some("2s:1..4"),
        config: &[("connections", "4"), ("duration_s", "2.0"), ("rate", "null")],
        visits: false,
    },
    Shape {
        name: "fixed rate",
        bench: &["--rate", "40", "-d", "1s"],
        load: Some("model = \"open\"\nrates = [40]\nduration = \"1s\""),
        header: &["open loop at 40 req/s (fixed)", ", 1s"],
        cell: "open 40/s 1s",
        stages: None,
        config: &[("rate", "40.0"), ("arrival", "\"fixed\"")],
        visits: false,
    },
    Shape {
        name: "poisson",
        bench: &["--rate", "40", "--arrival", "poisson", "-d", "1s"],
        load: Some("model = \"open\"\nrates = [40]\narrival = \"poisson\"\nduration = \"1s\""),
        header: &["open loop at 40 req/s (poisson)", ", 1s"],
        cell: "open 40/s poisson 1s",
        stages: None,
        config: &[("rate", "40.0"), ("arrival", "\"poisson\"")],
        visits: false,
    },
    Shape {
        name: "ramp",
        bench: &["--rate", "10..50", "-d", "2s"],
        load: Some("model = \"open\"\nrates = [\"10..50\"]\nduration = \"2s\""),
        header: &["open loop in stages 2s:10..50 req/s (fixed, mean 30.0)"],
        cell: "open stages 2s:10..50",
        stages: Some("2s:10..50"),
        config: &[("rate", "30.0"), ("duration_s", "2.0")],
        visits: false,
    },
    Shape {
        name: "stages",
        bench: &["--stages", "1s:1..10,1s:10"],
        load: Some("model = \"open\"\nstages = \"1s:1..10,1s:10\""),
        header: &["open loop in stages 1s:1..10,1s:10 req/s (fixed, mean 7.8)"],
        cell: "open stages 1s:1..10,1s:10",
        stages: Some("1s:1..10,1s:10"),
        config: &[("rate", "7.75"), ("duration_s", "2.0")],
        visits: false,
    },
    Shape {
        name: "sessions",
        bench: &["--conn-rate", "10", "--calls-per-conn", "2", "-d", "1s"],
        load: Some("model = \"sessions\"\nrates = [10]\ncalls_per_conn = 2\nduration = \"1s\""),
        header: &["sessions: 10 new connections/s (fixed) x 2 calls", ", 1s"],
        cell: "sessions 10/s x2 1s",
        stages: None,
        config: &[("rate", "10.0"), ("calls_per_connection", "2")],
        visits: false,
    },
    Shape {
        name: "visit file",
        bench: &["--visits", "FILES/visit.toml", "--rate", "5", "-n", "4"],
        load: Some("model = \"open\"\nrates = [5]\nrequests = 4\nworkloads = [\"visit\"]"),
        header: &["visits: 5 visits/s (fixed), about 2 requests each", ", 4 visits"],
        cell: "open 5/s n=4",
        stages: None,
        config: &[("rate", "5.0")],
        visits: true,
    },
    Shape {
        name: "page views",
        bench: &["--view", "--rate", "5", "-n", "4"],
        load: Some("model = \"open\"\nrates = [5]\nrequests = 4\nworkloads = [\"view\"]"),
        header: &["page views: 5 views/s (fixed), about 1 request each", ", 4 views"],
        cell: "open 5/s n=4",
        stages: None,
        config: &[("rate", "5.0")],
        visits: true,
    },
    // A suite has no httperf session log: its visits are visit files.
    Shape {
        name: "wsesslog",
        bench: &["--wsesslog", "4,0,FILES/sessions.log", "--rate", "5"],
        load: None,
        header: &["visits: 5 sessions/s (fixed), about 3 requests each", ", 4 sessions"],
        cell: "",
        stages: None,
        config: &[("rate", "5.0")],
        visits: true,
    },
];

/// The files the visit shapes read, in `dir`: a visit of two steps and a session log of one
/// burst of two requests, then one request.
fn visit_files(dir: &Path, path: &str) {
    let visit = format!("[[step]]\npath = \"{path}\"\n\n[[step]]\npath = \"{path}\"\n");
    std::fs::write(dir.join("visit.toml"), visit).expect("write the visit file");
    let log = format!("{path}\n  {path}\n{path}\n");
    std::fs::write(dir.join("sessions.log"), log).expect("write the session log");
}

/// `bench`'s flags of `shape`, its files in `dir`.
fn bench_args(shape: &Shape, dir: &Path) -> Vec<String> {
    let files = dir.display().to_string();
    shape.bench.iter().map(|a| a.replace("FILES", &files)).collect()
}

/// One `bench` cell of the matrix: completes, says its shape in its header and its JSON
/// `config`, and (`rows`) its per-second rows add up to its totals.
fn bench_cell(url: &str, shape: &Shape, dir: &Path, rows: bool) -> Value {
    let args = bench_args(shape, dir);
    let mut text = crate::support::loadlab();
    text.arg("bench").arg(url).args(&args);
    let output = crate::support::output_within(text, crate::support::RUN_LIMIT);
    crate::support::assert_success(&output, &[shape.name]);
    let stdout = String::from_utf8_lossy(&output.stdout);
    let head = stdout.lines().nth(1).unwrap_or_default();
    for part in shape.header {
        assert!(head.contains(part), "{}: {part:?} in {head:?}\n{stdout}", shape.name);
    }

    // Per-second rows: a shape's own; otherwise the interval log's (only when asked for).
    let log = dir.join(format!("{}.hlog", shape.name.replace(' ', "-")));
    let log_arg = log.display().to_string();
    let mut words: Vec<&str> = vec!["bench", url];
    words.extend(args.iter().map(String::as_str));
    let asked_log = shape.stages.is_none() && rows;
    if asked_log {
        words.extend(["--hdr-log", &log_arg]);
    }
    let (report, output) = run_json(&words);
    crate::support::assert_success(&output, &words);
    let config = at(&report, "config");
    assert_eq!(config["shape"].as_str(), shape.stages, "{}: {config:#}", shape.name);
    assert_eq!(config["hdr_log"], asked_log, "{}: {config:#}", shape.name);
    for (key, value) in shape.config {
        assert_eq!(config[key].to_string(), *value, "{} {key}: {config:#}", shape.name);
    }
    assert!(uint(&report, "requests.completed") > 0, "{}: {report:#}", shape.name);
    assert_eq!(uint(&report, "requests.failed"), 0, "{}: {report:#}", shape.name);
    if shape.stages.is_some() {
        rows_add_up(shape.name, &report);
    } else if asked_log {
        let tag = (report["mode"] != "closed").then_some("corrected");
        let per_second: u64 = intervals(&log, tag).values().map(|i| i.0).sum();
        assert_eq!(per_second, uint(&report, "requests.completed"), "{}", shape.name);
    }
    report
}

/// A shape's `seconds`: one a second, the last partial where the run ended within it; their
/// counts add up to the run's.
fn rows_add_up(name: &str, report: &Value) {
    let rows = at(report, "seconds").as_array().expect("seconds is an array");
    assert!(!rows.is_empty(), "{name}: {report:#}");
    for (row_key, total) in [
        ("completed", "requests.completed"),
        ("failed", "requests.failed"),
        ("achieved", "requests.sent"),
    ] {
        let sum: u64 = rows.iter().map(|r| uint(r, row_key)).sum();
        assert_eq!(sum, uint(report, total), "{name}: {row_key} {report:#}");
    }
}

/// What the test's own server answers: a page without resources (a view of it is one request).
const PAGE: &str = "<html><head><title>seams</title></head><body>hello</body></html>";

#[test]
fn the_seam_matrix_in_bench_against_an_external_url() {
    let server = TestServer::start(Behaviour::ok(PAGE));
    let dir = tempfile::tempdir().expect("temp dir");
    visit_files(dir.path(), "/");
    for shape in SHAPES {
        bench_cell(&server.url("/"), shape, dir.path(), !shape.visits);
    }
}

/// A target's workload loaded by the shapes of requests: a built-in one (`path: None`), the
/// lab's to verify, shared by every shape; or a request of the user's (`path = `), which the
/// runner verifies by the first cell of it, so one per shape (`NAME/SHAPE`): each shape's
/// own load is then verified.
struct Plain {
    name: &'static str,
    path: Option<&'static str>,
}

/// The workloads `shape` loads: the visit shapes the one their load names, the others each
/// of `plain` (a request of the user's, the shape's own).
fn workloads_of(shape: &Shape, plain: &[Plain]) -> Vec<String> {
    if shape.visits {
        let named = ["visit", "view"]
            .into_iter()
            .find(|w| shape.load.is_some_and(|l| l.contains(&format!("workloads = [{w:?}]"))));
        return named.map(String::from).into_iter().collect();
    }
    plain
        .iter()
        .map(|p| match p.path {
            Some(_) => format!("{}/{}", p.name, shape.name),
            None => p.name.to_string(),
        })
        .collect()
}

/// A suite of `stacks` loading `plain` by every shape of requests a suite has, a visit file
/// and page views of `view_path` by theirs.
fn suite(stacks: &str, plain: &[Plain], view_path: &str) -> String {
    let mut text = format!(
        "name = \"seams\"\nrepetitions = 1\nwarmup = \"0s\"\n\n{stacks}\n\
         [[workloads]]\nname = \"visit\"\nvisits = \"visit.toml\"\n\n\
         [[workloads]]\nname = \"view\"\npath = \"{view_path}\"\nview = true\n"
    );
    let shapes = || SHAPES.iter().filter(|s| s.load.is_some() && !s.visits);
    for p in plain {
        let names = match p.path {
            Some(_) => shapes().map(|s| format!("{}/{}", p.name, s.name)).collect(),
            None => vec![p.name.to_string()],
        };
        for name in names {
            let path = p.path.map(|path| format!("path = {path:?}\n")).unwrap_or_default();
            text.push_str(&format!("\n[[workloads]]\nname = {name:?}\n{path}"));
        }
    }
    for shape in SHAPES {
        let Some(load) = shape.load else { continue };
        text.push_str("\n[[loads]]\n");
        text.push_str(load);
        if !shape.visits {
            let names: Vec<String> =
                workloads_of(shape, plain).iter().map(|w| format!("{w:?}")).collect();
            text.push_str(&format!("\nworkloads = [{}]", names.join(", ")));
        }
        text.push('\n');
    }
    text
}

/// A run of `suite`, checked cell by cell: each completed without a failure, its line in
/// `run` and its stored load say its shape, and its seconds add up to its totals (a visit
/// shape's with `visit_rows`).
fn suite_cells(scratch: &Scratch, text: &str, plain: &[Plain], visit_rows: bool) {
    let file = scratch.write("seams.toml", text);
    let out = scratch.out().display().to_string();
    let stdout = scratch.ok(&["run", "--suite", &file, "--out", &out]);
    let store = Store::open(scratch.db()).expect("the run's store");
    let cells = store.cells(RunId(1)).expect("its cells");
    let mut checked = 0;
    for shape in SHAPES.iter().filter(|s| s.load.is_some()) {
        for w in workloads_of(shape, plain) {
            let line = stdout
                .lines()
                .find(|l| l.contains(&format!(" {w} ")) && l.contains(shape.cell))
                .unwrap_or_else(|| {
                    panic!("{w} {}: no line {:?} in\n{stdout}", shape.name, shape.cell)
                });
            let c = cells
                .iter()
                .find(|c| c.workload == w && c.load.stages() == shape.stages && same_load(c, shape))
                .unwrap_or_else(|| panic!("{w} {}: no cell in {:#?}", shape.name, loads(&cells)));
            let completed = c.metrics[metric::COMPLETED];
            assert!(completed > 0.0, "{w} {}: {line}\n{:?}", shape.name, c.metrics);
            assert_eq!(c.metrics[metric::FAILED], 0.0, "{w} {}: {line}", shape.name);
            if !shape.visits || visit_rows {
                let per_second: u64 = c.series.buckets().iter().map(|b| b.completed).sum();
                assert_eq!(per_second as f64, completed, "{w} {}: {line}", shape.name);
            }
            // A shape's cell keeps its judged rows too, one a whole second.
            if let Some(stages) = shape.stages {
                let secs = loadlab_engine::Shape::parse_stages(stages).expect("stages");
                let secs = secs.duration().as_secs() as usize;
                assert_eq!(c.seconds.len(), secs, "{w} {}: {:?}", shape.name, c.seconds);
            }
            checked += 1;
        }
    }
    assert_eq!(checked, cells.len(), "every cell is one of the matrix's:\n{stdout}");
}

/// Whether the stored load of `c` is `shape`'s (its model, and Poisson said as such).
fn same_load(c: &CellRecord, shape: &Shape) -> bool {
    let model = match c.load.model {
        LoadModel::Closed => "\"closed\"",
        LoadModel::Open => "\"open\"",
        LoadModel::Session => "\"sessions\"",
    };
    let poisson = c.load.extra.get("arrival").and_then(Value::as_str) == Some("poisson");
    let want = shape.load.unwrap_or_default();
    want.contains(&format!("model = {model}"))
        && poisson == want.contains("poisson")
        && (c.load.requests.is_some() == want.contains("requests"))
}

fn loads(cells: &[CellRecord]) -> Vec<(String, String)> {
    cells.iter().map(|c| (c.workload.clone(), format!("{:?}", c.load))).collect()
}

#[test]
fn the_seam_matrix_as_suite_cells_against_an_external_url() {
    let server = TestServer::start(Behaviour::ok(PAGE));
    let scratch = Scratch::new();
    visit_files(scratch.dir.path(), "/");
    let stacks = format!("[[stacks]]\nurl = \"{}\"\nlabel = \"mine\"\n", server.url("/"));
    let plain = [Plain { name: "page", path: Some("/") }];
    suite_cells(&scratch, &suite(&stacks, &plain, "/"), &plain, false);
}

#[test]
fn the_seam_matrix_as_suite_cells_on_a_lab_stack() {
    let scratch = Scratch::new();
    if let Err(skip) = require(&scratch, &["nginx"]) {
        skip.report();
        return;
    }
    visit_files(scratch.dir.path(), "/hello.txt");
    let stacks = "[[stacks]]\nname = \"nginx\"\n";
    let plain =
        [Plain { name: "hello.txt", path: None }, Plain { name: "mine", path: Some("/hello.txt") }];
    suite_cells(&scratch, &suite(stacks, &plain, "/hello.txt"), &plain, false);
}

/// The visits' shapes (a visit file, page views, `--wsesslog`) have per-second rows that add
/// up to their totals, as every other shape's do: in `bench` their `--hdr-log` intervals, as
/// suite cells against an external URL their stored seconds. Their requests are driven by a
/// loop that keeps no per-second figures until the request loop drives them too.
#[test]
fn visits_views_and_wsesslog_have_per_second_rows() {
    let server = TestServer::start(Behaviour::ok(PAGE));
    let scratch = Scratch::new();
    visit_files(scratch.dir.path(), "/");
    for shape in SHAPES.iter().filter(|s| s.visits) {
        bench_cell(&server.url("/"), shape, scratch.dir.path(), true);
    }
    let stacks = format!("[[stacks]]\nurl = \"{}\"\nlabel = \"mine\"\n", server.url("/"));
    let plain = [Plain { name: "page", path: Some("/") }];
    suite_cells(&scratch, &suite(&stacks, &plain, "/"), &plain, true);
}
