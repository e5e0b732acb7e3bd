//! `loadlab run` end to end: a tiny suite (nginx and nginx + php-fpm, hello.txt and hello.php,
//! two repetitions of 300 ms cells) against real stacks, into a temporary store, then what
//! `runs`, `report` and `compare` make of it, and that no server of the suite is left. Also
//! the suite errors that must stop a run before anything starts. The stacks need nginx and
//! php-fpm: skipped with a visible line locally when one is missing, a failure in CI.

use std::path::{Path, PathBuf};
use std::process::{Command, Output};
use std::time::Duration;

use serde_json::Value;
use tempfile::TempDir;

use crate::support::{assert_success, loadlab, output_within, skip, wait_until};

mod crash;
mod external;
mod full_disk;
mod live_view;
mod metrics;
mod modern;
mod own;
mod pools;
mod profile;
mod regression;
mod seams;
mod slo;
mod stages;
mod urls;
mod view_hosts;
mod views;
mod visits;

/// A run of the tiny suite takes about 3 s; this bounds a hung one (as the lab tests' limit
/// does, with room for a two-CPU machine starting other tests' stacks at the same time).
const LIMIT: Duration = Duration::from_secs(120);

/// The tiny suite. Per repetition: hello.txt on both stacks, hello.php on nginx-fpm only
/// (nginx runs no PHP, which the plan skips), so 3 cells, times 2 repetitions.
const TINY: &str = r#"name = "tiny-e2e"
description = "nginx against nginx + php-fpm, briefly"
repetitions = 2
warmup = "0s"

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
concurrency = [2]
duration = "300ms"
"#;
const TINY_CELLS: usize = 6;
const STACKS: &[&str] = &["nginx", "nginx-fpm"];

/// A suite of nginx alone serving hello.txt: `repetitions` of each closed-loop concurrency of
/// `concurrency` (`[1, 2]`), each cell `duration` long, without a warm-up.
pub(crate) fn nginx_hello(concurrency: &str, duration: &str, repetitions: u32) -> String {
    format!(
        "name = \"nginx-hello\"\nrepetitions = {repetitions}\nwarmup = \"0s\"\n\n\
         [[stacks]]\nname = \"nginx\"\n\n[[workloads]]\nname = \"hello.txt\"\n\n\
         [[loads]]\nmodel = \"closed\"\nconcurrency = {concurrency}\nduration = \"{duration}\"\n"
    )
}

/// One test's files: a state directory for the lab (LOADLAB_STATE_DIR), the suite file, and
/// the run's output directory.
struct Scratch {
    dir: TempDir,
}

impl Scratch {
    fn new() -> Scratch {
        let dir = tempfile::Builder::new().prefix("loadlab-run-").tempdir().expect("temp dir");
        std::fs::create_dir(dir.path().join("state")).expect("create the state directory");
        Scratch { dir }
    }

    fn state(&self) -> PathBuf {
        self.dir.path().join("state")
    }

    fn out(&self) -> PathBuf {
        self.dir.path().join("out")
    }

    fn db(&self) -> String {
        self.out().join("loadlab.db").display().to_string()
    }

    fn write(&self, name: &str, text: &str) -> String {
        let path = self.dir.path().join(name);
        std::fs::write(&path, text).expect("write the suite file");
        path.display().to_string()
    }

    fn command(&self, args: &[&str]) -> Command {
        let mut command = loadlab();
        command.args(args).env("LOADLAB_STATE_DIR", self.state());
        command
    }

    fn run(&self, args: &[&str]) -> Output {
        output_within(self.command(args), LIMIT)
    }

    /// `loadlab ARGS`, which must exit 0; its stdout.
    fn ok(&self, args: &[&str]) -> String {
        let output = self.run(args);
        assert_success(&output, args);
        String::from_utf8(output.stdout).expect("UTF-8 stdout")
    }

    fn json(&self, args: &[&str]) -> Value {
        let stdout = self.ok(args);
        serde_json::from_str(&stdout)
            .unwrap_or_else(|e| panic!("loadlab {args:?} printed no JSON ({e}):\n{stdout}"))
    }

    /// Server processes started from this state directory (their masters name their config
    /// there) that still run.
    fn servers_left(&self) -> Vec<String> {
        let state = self.state().display().to_string();
        let Ok(entries) = std::fs::read_dir("/proc") else { return Vec::new() };
        entries
            .flatten()
            .filter(|e| e.file_name().to_string_lossy().bytes().all(|b| b.is_ascii_digit()))
            .filter_map(|e| std::fs::read(e.path().join("cmdline")).ok())
            .map(|c| String::from_utf8_lossy(&c).replace('\0', " ").trim().to_string())
            .filter(|c| c.contains(&state))
            .collect()
    }
}

impl Drop for Scratch {
    /// A failed test must not leave servers behind for the rest of the suite.
    fn drop(&mut self) {
        let _ = output_within(self.command(&["stack", "down", "--all"]), LIMIT);
    }
}

/// `Err(Skip)` (a panic in CI) when a package of `STACKS` is missing, as `stack list` says.
/// The skip names nginx-fpm, whose packages (nginx, php-fpm) include nginx's.
fn require_stacks(scratch: &Scratch) -> Result<(), skip::Skip> {
    require(scratch, STACKS)
}

/// `Err(Skip)` (a panic in CI) when a package of the stacks `names` is missing.
fn require(scratch: &Scratch, names: &[&str]) -> Result<(), skip::Skip> {
    let list = scratch.json(&["stack", "list", "--json"]);
    let mut missing: Vec<String> = Vec::new();
    for name in names {
        let stack = list["stacks"]
            .as_array()
            .expect("stacks")
            .iter()
            .find(|s| s["name"] == *name)
            .unwrap_or_else(|| panic!("no stack {name} in {list:#}"));
        for p in stack["missing"].as_array().expect("missing") {
            let p = p.as_str().expect("package").to_string();
            if !missing.contains(&p) {
                missing.push(p);
            }
        }
    }
    if missing.is_empty() {
        Ok(())
    } else {
        Err(skip::missing(names.last().copied().unwrap_or("a stack"), &missing.join(" ")))
    }
}

#[test]
fn a_tiny_suite_runs_end_to_end_into_the_store_and_the_report() {
    let scratch = Scratch::new();
    if let Err(skip) = require_stacks(&scratch) {
        skip.report();
        return;
    }
    let suite = scratch.write("tiny.toml", TINY);
    let out = scratch.out().display().to_string();
    let stdout = scratch.ok(&["run", "--suite", &suite, "--out", &out]);

    // The terminal summary: the plan with the pair it skips, the verdict, the report's path.
    assert!(stdout.contains(&format!("{TINY_CELLS} cells")), "{stdout}");
    assert!(stdout.contains("nginx runs no PHP"), "{stdout}");
    assert!(stdout.contains("hello.txt") && stdout.contains("hello.php"), "{stdout}");
    let report = scratch.out().join("report.html");
    assert!(stdout.contains(&format!("report: {}", report.display())), "{stdout}");

    check_report(&report);
    check_runs(&scratch);
    check_verdicts(&scratch);
    check_csv(&scratch);

    // The store `run --out DIR` wrote is found with --out DIR; a run it does not hold is named
    // with the store's file and what it holds.
    let by_dir = scratch.json(&["runs", "--out", &out, "--json"]);
    assert_eq!(by_dir.as_array().map(Vec::len), Some(1), "{by_dir:#}");
    let missing = scratch.run(&["report", "9", "--out", &out, "--format", "text"]);
    assert_eq!(missing.status.code(), Some(2), "{missing:?}");
    let said = String::from_utf8_lossy(&missing.stderr);
    assert!(
        said.contains(&format!("run 9 is not in {}, which holds runs 1 to 1", scratch.db())),
        "{said}"
    );
    let nowhere = scratch.run(&["runs", "--out", &scratch.state().display().to_string()]);
    assert_eq!(nowhere.status.code(), Some(2), "{nowhere:?}");
    assert!(String::from_utf8_lossy(&nowhere.stderr).contains("no store at "), "{nowhere:?}");

    let compare = scratch.ok(&["compare", "1", "1", "--db", &scratch.db()]);
    assert!(compare.lines().next().is_some_and(|l| l.starts_with("req/s")), "{compare}");
    for (stack, workload) in
        [("nginx", "hello.txt"), ("nginx-fpm", "hello.txt"), ("nginx-fpm", "hello.php")]
    {
        assert!(
            compare.lines().any(|l| l.contains(workload) && l.contains(&format!("· {stack} "))),
            "no row for {workload} on {stack}:\n{compare}"
        );
    }

    // Every stack went down with its run: no instance, no run directory, no process.
    let list = scratch.json(&["stack", "list", "--json"]);
    assert_eq!(list["instances"], serde_json::json!([]), "{list:#}");
    for dir in ["instances", "run"] {
        let left: Vec<_> = std::fs::read_dir(scratch.state().join(dir))
            .map(|d| d.flatten().map(|e| e.file_name()).collect())
            .unwrap_or_default();
        assert!(left.is_empty(), "left in the state directory's {dir}/: {left:?}");
    }
    assert!(
        wait_until(Duration::from_secs(30), || scratch.servers_left().is_empty()),
        "servers left: {:#?}",
        scratch.servers_left()
    );
}

/// The report is one self-contained file: small, and loading nothing from elsewhere.
fn check_report(path: &Path) {
    let html =
        std::fs::read_to_string(path).unwrap_or_else(|e| panic!("reading {}: {e}", path.display()));
    assert!(html.len() < 2 * 1024 * 1024, "report is {} bytes", html.len());
    assert!(html.trim_start().to_ascii_lowercase().starts_with("<!doctype html"));
    for text in ["tiny-e2e", "nginx-fpm", "hello.txt", "hello.php"] {
        assert!(html.contains(text), "the report does not mention {text}");
    }
    let lower = html.to_ascii_lowercase();
    for external in [
        "src=\"http",
        "src='http",
        "href=\"http",
        "href='http",
        "src=\"//",
        "href=\"//",
        "url(http",
        "url(\"http",
        "url('http",
        "url(//",
        "@import",
        "<link ",
    ] {
        if let Some(at) = lower.find(external) {
            let context = &html[at.saturating_sub(80)..(at + 80).min(html.len())];
            panic!("the report refers to an external resource ({external}): …{context}…");
        }
    }
    // Every attribute that names a resource points inside the file.
    for attr in ["src=\"", "href=\""] {
        for (at, _) in lower.match_indices(attr) {
            let value = &lower[at + attr.len()..];
            assert!(
                value.starts_with('#') || value.starts_with("data:"),
                "{attr}…: {}",
                &html[at..(at + 100).min(html.len())]
            );
        }
    }
}

/// `loadlab runs --json` lists the run, finished, with every cell.
fn check_runs(scratch: &Scratch) {
    let runs = scratch.json(&["runs", "--db", &scratch.db(), "--json"]);
    let runs = runs.as_array().unwrap_or_else(|| panic!("not an array: {runs:#}"));
    assert_eq!(runs.len(), 1, "{runs:#?}");
    let run = &runs[0];
    assert_eq!(run["id"], 1, "{run:#}");
    assert_eq!(run["suite"], "tiny-e2e", "{run:#}");
    assert_eq!(run["status"], "finished", "{run:#}");
    assert_eq!(run["cells"], TINY_CELLS, "{run:#}");
    assert!(!run["finished_at"].is_null(), "{run:#}");
}

/// `loadlab report --format json`: a verdict for each workload, with each stack that served
/// it and its two repetitions.
fn check_verdicts(scratch: &Scratch) {
    let verdicts = scratch.json(&["report", "1", "--db", &scratch.db(), "--format", "json"]);
    let verdicts = verdicts.as_array().unwrap_or_else(|| panic!("not an array: {verdicts:#}"));
    let mut workloads: Vec<&str> =
        verdicts.iter().map(|v| v["workload"].as_str().expect("workload")).collect();
    workloads.sort_unstable();
    assert_eq!(workloads, ["hello.php", "hello.txt"], "{verdicts:#?}");
    for v in verdicts {
        let stacks: Vec<&str> = v["stacks"]
            .as_array()
            .expect("stacks")
            .iter()
            .map(|s| s["stack"].as_str().expect("stack"))
            .collect();
        let expected: &[&str] =
            if v["workload"] == "hello.txt" { &["nginx", "nginx-fpm"] } else { &["nginx-fpm"] };
        assert_eq!(stacks, expected, "{v:#}");
        for s in v["stacks"].as_array().unwrap() {
            assert_eq!(s["repetitions"], 2, "{s:#}");
            let rps = s["figures"]
                .as_array()
                .expect("figures")
                .iter()
                .find(|f| f["measure"] == "rps")
                .unwrap_or_else(|| panic!("no rps figure: {s:#}"));
            assert!(rps["ci"]["median"].as_f64().is_some_and(|m| m > 0.0), "{rps:#}");
        }
        // Two stacks on hello.txt are compared; hello.php has no second stack to compare with.
        let comparisons = v["comparisons"].as_array().expect("comparisons").len();
        assert_eq!(comparisons > 0, expected.len() == 2, "{v:#}");
    }
}

/// `loadlab report --format csv`: a header and one row per cell, every cell with completed
/// requests and no errors (the lab's own check of every response body included).
fn check_csv(scratch: &Scratch) {
    let csv = scratch.ok(&["report", "--db", &scratch.db(), "--format", "csv"]);
    let mut lines = csv.lines();
    let header = fields(lines.next().expect("a header"));
    let rows: Vec<Vec<String>> = lines.map(fields).collect();
    assert_eq!(rows.len(), TINY_CELLS, "{csv}");
    let column = |name: &str| {
        header.iter().position(|h| h == name).unwrap_or_else(|| panic!("no {name} in {header:?}"))
    };
    let (ordinal, completed, errors) = (column("ordinal"), column("completed"), column("errors"));
    let mut ordinals: Vec<usize> = Vec::new();
    for row in &rows {
        assert_eq!(row.len(), header.len(), "{row:?}");
        ordinals.push(row[ordinal].parse().expect("ordinal"));
        assert!(row[completed].parse::<f64>().expect("completed") > 0.0, "{row:?}");
        assert_eq!(row[errors].parse::<f64>().expect("errors"), 0.0, "{row:?}");
    }
    assert_eq!(ordinals, (0..TINY_CELLS).collect::<Vec<_>>(), "{csv}");
}

/// The fields of one CSV line (RFC 4180 quoting; no field here spans lines).
pub(crate) fn fields(line: &str) -> Vec<String> {
    let mut out = vec![String::new()];
    let mut quoted = false;
    let mut chars = line.chars().peekable();
    while let Some(c) = chars.next() {
        match (c, quoted) {
            ('"', true) if chars.peek() == Some(&'"') => {
                chars.next();
                out.last_mut().unwrap().push('"');
            }
            ('"', _) => quoted = !quoted,
            (',', false) => out.push(String::new()),
            (c, _) => out.last_mut().unwrap().push(c),
        }
    }
    out
}

/// A suite with `tls = true`: each cell loads its stack at https://, the engine trusting the
/// instance's own CA (never --insecure), and every answer is 2xx; 100k.bin takes several TLS
/// records per response.
#[test]
fn a_suite_over_tls_loads_each_stack_at_https_with_its_own_ca() {
    let scratch = Scratch::new();
    if let Err(skip) = require_stacks(&scratch) {
        skip.report();
        return;
    }
    let text = TINY
        .replace("name = \"nginx\"\n", "name = \"nginx\"\ntls = true\n")
        .replace("name = \"nginx-fpm\"\n", "name = \"nginx-fpm\"\ntls = true\n")
        .replace("name = \"hello.php\"", "name = \"100k.bin\"");
    let suite = scratch.write("tls.toml", &text);
    let out = scratch.out().display().to_string();
    scratch.ok(&["run", "--suite", &suite, "--out", &out]);
    let csv = scratch.ok(&["report", "--db", &scratch.db(), "--format", "csv"]);
    let mut lines = csv.lines();
    let header = fields(lines.next().expect("a header"));
    let rows: Vec<Vec<String>> = lines.map(fields).collect();
    assert_eq!(rows.len(), 8, "2 stacks x 2 workloads x 2 repetitions:\n{csv}");
    let column = |name: &str| header.iter().position(|h| h == name).expect(name);
    // The lab's workloads are validated (status 200 and their bytes): a response that was
    // not is an error.
    let (completed, errors) = (column("completed"), column("errors"));
    for row in &rows {
        assert!(row[completed].parse::<f64>().expect("completed") > 0.0, "{row:?}");
        assert_eq!(row[errors].parse::<f64>().expect("errors"), 0.0, "{row:?}");
    }
    assert!(scratch.servers_left().is_empty(), "{:?}", scratch.servers_left());
}

#[test]
fn a_bad_suite_file_exits_2_naming_its_line_and_column() {
    let scratch = Scratch::new();
    let text = TINY.replace("name = \"nginx\"\n", "name = \"ngnix\"\n");
    assert_ne!(text, TINY);
    let suite = scratch.write("bad.toml", &text);
    // Where the misspelt value starts, 1-based, as an editor shows it.
    let (line, column) = text
        .lines()
        .enumerate()
        .find_map(|(i, l)| l.find("\"ngnix\"").map(|c| (i + 1, c + 1)))
        .unwrap();
    let out = scratch.out().display().to_string();
    let output = scratch.run(&["run", "--suite", &suite, "--out", &out]);
    let stderr = String::from_utf8_lossy(&output.stderr);
    assert_eq!(output.status.code(), Some(2), "{stderr}");
    assert!(stderr.contains(&format!("{suite}:{line}:{column}:")), "{stderr}");
    assert!(stderr.contains("ngnix"), "{stderr}");
    // Refused before anything started or was stored.
    assert!(!scratch.out().join("loadlab.db").exists());
    assert!(scratch.servers_left().is_empty());
}

#[test]
fn an_unknown_suite_name_exits_2_listing_the_built_in_ones() {
    let scratch = Scratch::new();
    let out = scratch.out().display().to_string();
    let output = scratch.run(&["run", "--suite", "no-such-suite", "--out", &out]);
    let stderr = String::from_utf8_lossy(&output.stderr);
    assert_eq!(output.status.code(), Some(2), "{stderr}");
    assert!(stderr.contains("no-such-suite"), "{stderr}");
    assert!(stderr.contains("classic"), "{stderr}");
    assert!(!scratch.out().join("loadlab.db").exists());
}

/// Ctrl-C twice during a run, as an impatient user presses it: the first stops the cell
/// under way, the second must not cut the teardown short. The run ends with 130, its
/// finished cell is stored, its record says interrupted, its report is written (beside, not
/// as, report.html, the latest finished run's), and no server of it is left running.
#[test]
fn ctrl_c_twice_stops_a_run_keeping_its_finished_cells_and_leaving_no_server() {
    use std::io::{BufRead, BufReader, Read};
    use std::process::Stdio;

    let scratch = Scratch::new();
    if let Err(skip) = require_stacks(&scratch) {
        skip.report();
        return;
    }
    let suite = scratch.write(
        "four.toml",
        "name = \"four\"\nrepetitions = 4\nwarmup = \"0s\"\n[[stacks]]\nname = \"nginx-fpm\"\n\
         [[workloads]]\nname = \"hello.php\"\n[[loads]]\nmodel = \"closed\"\n\
         concurrency = [2]\nduration = \"2s\"\n",
    );
    let out = scratch.out().display().to_string();
    let mut command = scratch.command(&["run", "--suite", &suite, "--out", &out]);
    command.stdin(Stdio::null()).stdout(Stdio::piped()).stderr(Stdio::piped());
    let mut child = command.spawn().expect("spawn loadlab run");
    let mut stdout = BufReader::new(child.stdout.take().expect("piped stdout"));
    let mut seen = String::new();
    // The first cell's line: it is stored; the second cell is then under way.
    while !seen.lines().any(|l| l.starts_with("[  1/4]")) {
        let mut line = String::new();
        if stdout.read_line(&mut line).expect("read stdout") == 0 {
            panic!("loadlab run ended before its first cell:\n{seen}");
        }
        seen.push_str(&line);
    }
    for _ in 0..2 {
        crate::support::sys::signal_child(&child, libc::SIGINT).expect("SIGINT");
        std::thread::sleep(Duration::from_millis(20));
    }
    stdout.read_to_string(&mut seen).expect("read stdout");
    if !wait_until(LIMIT, || child.try_wait().expect("try_wait").is_some()) {
        let _ = child.kill();
        panic!("loadlab run did not end within {LIMIT:?} of Ctrl-C:\n{seen}");
    }
    let status = child.wait().expect("wait");
    let mut stderr = String::new();
    let _ = child.stderr.take().expect("piped stderr").read_to_string(&mut stderr);
    assert_eq!(status.code(), Some(130), "{status}\n{seen}\n{stderr}");
    let said = seen.lines().find(|l| l.starts_with("run 1 interrupted: ")).unwrap_or_else(|| {
        panic!("no line saying the run was interrupted:\n{seen}");
    });
    // Its own report; report.html is the latest finished run's, and none has finished.
    assert!(scratch.out().join("report-1.html").is_file(), "no report:\n{seen}\n{stderr}");
    assert!(!scratch.out().join("report.html").exists(), "{seen}");
    assert!(seen.contains("(partial; no run here has finished)"), "{seen}");

    let runs = scratch.json(&["runs", "--db", &scratch.db(), "--json"]);
    let run = &runs[0];
    assert_eq!(run["status"], "interrupted", "{runs:#}");
    let cells = run["cells"].as_u64().expect("cells");
    assert!((1..4).contains(&cells), "{run:#}");
    assert_eq!(said, format!("run 1 interrupted: {cells} of 4 cells finished and stored"));

    let list = scratch.json(&["stack", "list", "--json"]);
    assert_eq!(list["instances"], serde_json::json!([]), "{list:#}");
    assert!(
        wait_until(Duration::from_secs(30), || scratch.servers_left().is_empty()),
        "servers left: {:#?}",
        scratch.servers_left()
    );
}

/// A plan that cannot answer its question says so before it runs: 3 repetitions of a
/// comparison; the built-in suites, full and quick, can.
#[test]
fn a_plan_that_cannot_reach_significance_says_so_before_it_runs() {
    let scratch = Scratch::new();
    let note = "note: with 3 repetitions per stack no difference between stacks can reach \
                significance";
    let three = scratch.ok(&[
        "run",
        "--suite",
        "php-modphp-vs-fastcgi",
        "--quick",
        "--repetitions",
        "3",
        "--dry-run",
    ]);
    assert!(three.contains(note), "{three}");
    for suite in [
        "classic",
        "php-modphp-vs-fastcgi",
        "static-dynamic-rate-sweep",
        "modphp-vs-fpm-keepalive",
        "robots-autobench",
        "wordpress-cache-layers",
        "wordpress-visits",
    ] {
        for quick in [false, true] {
            let mut args = vec!["run", "--suite", suite, "--dry-run"];
            if quick {
                args.push("--quick");
            }
            let plan = scratch.ok(&args);
            assert!(!plan.contains("note: with"), "{suite} quick={quick}:\n{plan}");
        }
    }
}

/// A suite's `slo` gates the run: each stack's cells judged over their repetitions, a line
/// per stack under its group in the verdict and the run's gate last, exit 99 when one fails;
/// `run --slo` stands in for the suite's.
#[test]
fn a_suites_slo_gates_the_run_and_run_slo_replaces_it() {
    let scratch = Scratch::new();
    if let Err(skip) = require_stacks(&scratch) {
        skip.report();
        return;
    }
    let text = "name = \"gated\"\nrepetitions = 2\nwarmup = \"0s\"\nslo = \"p99<10s,errors<1%\"\n\
                [[stacks]]\nname = \"nginx\"\n[[workloads]]\nname = \"hello.txt\"\n\
                [[loads]]\nmodel = \"closed\"\nconcurrency = [2]\nduration = \"300ms\"\n";
    let suite = scratch.write("gated.toml", text);
    let out = scratch.out().display().to_string();
    let stdout = scratch.ok(&["run", "--suite", &suite, "--out", &out]);
    let line = stdout.lines().find(|l| l.contains("SLO ")).unwrap_or_else(|| panic!("{stdout}"));
    assert!(line.starts_with("  ✓ nginx: SLO p99<10s,errors<1%: pass (p99 "), "{line}");
    assert!(stdout.contains("\nSLO gate: pass (1 of 1)\n"), "{stdout}");

    let output = scratch.run(&["run", "--suite", &suite, "--out", &out, "--slo", "rps>1000000000"]);
    let stdout = String::from_utf8_lossy(&output.stdout);
    assert_eq!(
        output.status.code(),
        Some(99),
        "{stdout}\n{}",
        String::from_utf8_lossy(&output.stderr)
    );
    assert!(stdout.contains("✗ nginx: SLO rps>1000000000: FAIL (rps "), "{stdout}");
    assert!(
        stdout.contains("SLO gate: FAIL (1 of 1 failed: nginx · hello.txt · closed"),
        "{stdout}"
    );
}

#[test]
fn a_malformed_slo_in_a_suite_names_its_line_and_column() {
    let scratch = Scratch::new();
    let text = TINY.replace("name = \"hello.php\"\n", "name = \"hello.php\"\nslo = \"p99<50\"\n");
    let suite = scratch.write("bad-slo.toml", &text);
    let out = scratch.out().display().to_string();
    let output = scratch.run(&["run", "--suite", &suite, "--out", &out]);
    let stderr = String::from_utf8_lossy(&output.stderr);
    assert_eq!(output.status.code(), Some(2), "{stderr}");
    let line = text.lines().position(|l| l.starts_with("slo =")).unwrap() + 1;
    assert!(stderr.contains(&format!("{suite}:{line}:7: slo: ")), "{stderr}");
    assert!(stderr.contains("needs a unit"), "{stderr}");
}
