//! External targets and custom workloads through `loadlab run`: a private nginx the test
//! starts itself (not the lab's) run through a suite with two requests of the user's, sampled
//! by its pids, stored and reported; a wrong answer stops the run with exit 5 before any
//! cell; an https:// target trusted through the suite's `cacert`; a systemd unit sampled
//! through `systemctl show`; a custom request with a header on the lab's nginx, plain and over
//! its TLS; suite mistakes refused at their line and column. The nginx tests skip visibly
//! without nginx (a failure in CI).

use loadlab_store::{ConfigRecord, RunId, Store};
use serde_json::Value;

use super::Scratch;
use crate::support::{require_nginx, Nginx};

const ROBOTS: &[u8] = b"User-agent: *\nDisallow:\n";

/// nginx, started by the test, serving robots.txt and hello.txt.
fn files() -> [(&'static str, &'static [u8]); 2] {
    [("robots.txt", ROBOTS), ("hello.txt", b"hello, world!")]
}

/// A suite of `stacks` (TOML) running two custom workloads, each at 2 connections for
/// 300 ms, in two repetitions.
fn suite(stacks: &str, robots_check: &str) -> String {
    format!(
        r#"name = "external-e2e"
repetitions = 2
warmup = "0s"

{stacks}

[[workloads]]
name = "robots with a header"
path = "/robots.txt"
headers = ["X-Loadlab-Test: 1"]
{robots_check}

[[workloads]]
name = "hello head"
path = "/hello.txt"
method = "HEAD"

[[loads]]
model = "closed"
concurrency = [2]
duration = "300ms"
"#
    )
}

fn external(nginx: &Nginx, sampling: &str) -> String {
    format!("[[stacks]]\nurl = \"{}\"\nlabel = \"mine\"\n{sampling}\n", nginx.url("/"))
}

fn stored(scratch: &Scratch) -> (Vec<loadlab_store::CellRecord>, Vec<ConfigRecord>) {
    let store = Store::open(scratch.db()).expect("the run's store");
    (store.cells(RunId(1)).expect("cells"), store.configs(RunId(1)).expect("configs"))
}

#[test]
fn an_external_nginx_runs_two_custom_workloads_sampled_by_its_pids_stored_and_reported() {
    let nginx = require_nginx!(&files());
    let scratch = Scratch::new();
    let stacks = external(&nginx, &format!("pids = [{}]", nginx.master_pid()));
    let file = scratch.write("external.toml", &suite(&stacks, "expect_contains = \"Disallow\""));
    let out = scratch.out().display().to_string();
    let stdout = scratch.ok(&["run", "--suite", &file, "--out", &out]);
    let url = nginx.url("/");
    let base = url.trim_end_matches('/');
    assert!(stdout.contains(&format!("mine (external, {base}) verified in ")), "{stdout}");
    assert!(stdout.contains("(2 checks), repetition 2\n"), "{stdout}");

    let (cells, configs) = stored(&scratch);
    let mut seen: Vec<(String, u32)> =
        cells.iter().map(|c| (c.workload.clone(), c.repetition)).collect();
    seen.sort();
    let want = |w: &str, r| (w.to_string(), r);
    assert_eq!(
        seen,
        [
            want("hello head", 0),
            want("hello head", 1),
            want("robots with a header", 0),
            want("robots with a header", 1)
        ]
    );
    for c in &cells {
        assert_eq!(c.stack, "mine");
        assert_eq!(c.knobs["url"], base, "the URL is the stack's setting");
        assert!(c.metrics[loadlab_store::metric::COMPLETED] > 0.0, "{}", c.workload);
        assert_eq!(c.metrics[loadlab_store::metric::FAILED], 0.0, "{}", c.workload);
        // The named master and its worker, sampled as one tier.
        assert!(!c.samples.is_empty(), "{}: no samples", c.workload);
        assert!(
            c.samples.iter().all(|s| s.tier == "external" && s.processes == 2),
            "{:?}",
            c.samples
        );
    }
    // nginx's worker served thousands of requests: the tier's CPU shows it.
    let cpu: f64 = cells.iter().flat_map(|c| &c.samples).map(|s| s.cpu_user_s + s.cpu_sys_s).sum();
    assert!(cpu > 0.0, "no CPU sampled for nginx's processes");
    // HEAD answers carry no body; GET ones robots.txt's 24 bytes.
    let head = cells.iter().find(|c| c.workload == "hello head").unwrap();
    assert_eq!(head.metrics[loadlab_store::metric::BYTES_BODY], 0.0);

    let identity = configs.iter().find(|c| c.kind == ConfigRecord::IDENTITY).expect("identity");
    assert_eq!((identity.stack.as_str(), identity.tier.as_str()), ("mine", "external"));
    let id = identity.identity().expect("an identity");
    assert_eq!(
        (id.url, id.address, id.tls.as_str()),
        (base.to_string(), nginx.addr().to_string(), "no")
    );
    assert!(id.server.starts_with("nginx/"), "{}", id.server);
    let pids = format!("pids {} (1 process now, with their descendants)", nginx.master_pid());
    assert_eq!(id.sampling, pids);
    let robots = "robots with a header: status 200, 24 body bytes";
    assert!(id.verified.iter().any(|d| d.starts_with(robots)), "{:?}", id.verified);
    let html = std::fs::read_to_string(scratch.out().join("report.html")).expect("the report");
    let env = format!("<dt>external</dt><dd>mine: {base} at {}, Server nginx/", nginx.addr());
    assert!(html.contains(&env), "the report's environment lacks {env:?}");
    assert!(!html.contains("not sampled"));
    assert!(html.contains("mine: server CPU and memory per tier"));
    // Each cell's ab and httperf blocks have the tables `bench --format ab` and `httperf`
    // print from the same figures: the connection times, what was sent, the client's CPU.
    for line in ["Connection Times (ms)", "Request size [B]: ", "CPU time [s]: user "] {
        assert_eq!(html.matches(line).count(), cells.len(), "{line:?} in each cell's block");
    }
    assert!(cells.iter().all(|c| c.counted == Some(loadlab_store::Counted::Requests)));
    // The server is the test's: loadlab never stops it.
    assert!(crate::support::nginx::process_exists(nginx.master_pid()));
}

#[test]
fn a_wrong_answer_from_an_external_target_exits_5_before_any_stack_or_cell() {
    let nginx = require_nginx!(&files());
    let scratch = Scratch::new();
    // The lab's nginx first: had the external target not been verified up front, it would
    // have come up and run its cells.
    let stacks = format!("[[stacks]]\nname = \"nginx\"\n\n{}", external(&nginx, ""));
    let text = suite(&stacks, "expect_contains = \"Allow: /secret\"");
    let file = scratch.write("wrong.toml", &text);
    let out = scratch.out().display().to_string();
    let output = scratch.run(&["run", "--suite", &file, "--out", &out]);
    let stderr = String::from_utf8_lossy(&output.stderr);
    let stdout = String::from_utf8_lossy(&output.stdout);
    assert_eq!(output.status.code(), Some(5), "{stdout}\n{stderr}");
    assert_eq!(
        stderr.trim(),
        format!(
            "loadlab: error: verify failed for robots with a header on mine ({}): the body (24 \
             bytes, status 200) lacks \"Allow: /secret\"",
            nginx.url("/robots.txt")
        )
    );
    assert!(!stdout.contains("up and verified"), "{stdout}");
    let (cells, _) = stored(&scratch);
    assert!(cells.is_empty(), "{} cells stored", cells.len());
    assert!(scratch.servers_left().is_empty(), "{:?}", scratch.servers_left());
}

/// A run stopped by a target that failed verify exits 5 and is `failed`, with why, in `run`'s
/// end, `runs` and `report`, not `interrupted` (Ctrl-C's status); each run has its
/// `report-RUN.html`, and `report.html` stays on the latest finished run, so an empty report
/// never hides the last full one.
#[test]
fn a_run_stopped_by_a_failed_verify_is_failed_and_report_html_stays_on_the_finished_run() {
    let nginx = require_nginx!(&files());
    let scratch = Scratch::new();
    let out = scratch.out().display().to_string();
    let good = scratch.write("good.toml", &suite(&external(&nginx, ""), ""));
    let stdout = scratch.ok(&["run", "--suite", &good, "--out", &out]);
    let latest = scratch.out().join("report.html");
    let first = scratch.out().join("report-1.html");
    let said =
        format!("report: {} (this run's, also kept as {})", latest.display(), first.display());
    assert!(stdout.contains(&said), "{stdout}");

    let wrong = suite(&external(&nginx, ""), "expect_contains = \"Allow: /secret\"");
    let wrong = scratch.write("wrong.toml", &wrong);
    let output = scratch.run(&["run", "--suite", &wrong, "--out", &out]);
    let (stdout, stderr) =
        (String::from_utf8_lossy(&output.stdout), String::from_utf8_lossy(&output.stderr));
    assert_eq!(output.status.code(), Some(5), "{stdout}\n{stderr}");
    let why = format!(
        "verify failed for robots with a header on mine ({}): the body (24 bytes, status 200) \
         lacks \"Allow: /secret\"",
        nginx.url("/robots.txt")
    );
    // The reason once: stderr's last line, the end line pointing at it.
    assert!(stdout.contains("run 2 failed: 0 of 4 cells finished and stored; the error"));
    assert!(!stdout.contains(&why), "{stdout}");
    assert!(stderr.trim_end().ends_with(&format!("loadlab: error: {why}")), "{stderr}");
    assert!(!stdout.contains("interrupted"), "{stdout}");
    let second = scratch.out().join("report-2.html");
    let kept = format!(
        "report: {} (partial; {} still shows report-1.html)",
        second.display(),
        latest.display()
    );
    assert!(stdout.contains(&kept), "{stdout}");

    let runs = scratch.json(&["runs", "--out", &out, "--json"]);
    let seen: Vec<_> =
        runs.as_array().unwrap().iter().map(|r| (&r["status"], &r["reason"])).collect();
    assert_eq!(seen, [(&"finished".into(), &Value::Null), (&"failed".into(), &why.clone().into())]);
    let table = scratch.ok(&["runs", "--out", &out]);
    assert!(table.lines().any(|l| l.ends_with(&format!("failed: {why}"))), "{table}");
    let report = scratch.run(&["report", "2", "--out", &out, "--format", "text"]);
    let said = String::from_utf8_lossy(&report.stderr);
    assert!(said.contains(&format!("run 2 failed: {why}; its 0 finished cells")), "{said}");

    let page = |p: &std::path::Path| std::fs::read_to_string(p).expect("a report");
    assert_eq!(page(&latest), page(&first), "report.html shows the finished run");
    assert!(page(&second).contains(&why.replace('"', "&quot;")), "the failed run's says why");
}

#[test]
fn an_https_target_is_trusted_through_the_suites_cacert() {
    let certs = crate::it::tls::certs();
    let addr = crate::it::tls::serve(&certs);
    let scratch = Scratch::new();
    scratch.write("ca.pem", &certs.ca_pem);
    let text = format!(
        r#"name = "https-e2e"
repetitions = 1
[[stacks]]
url = "https://localhost:{}"
label = "tls-server"
cacert = "ca.pem"
[[workloads]]
name = "hello"
path = "/"
expect_contains = "hello tls"
[[loads]]
model = "closed"
concurrency = [2]
requests = 200
"#,
        addr.port()
    );
    let file = scratch.write("https.toml", &text);
    let out = scratch.out().display().to_string();
    scratch.ok(&["run", "--suite", &file, "--out", &out]);
    let (cells, configs) = stored(&scratch);
    assert_eq!(cells.len(), 1);
    assert_eq!(cells[0].metrics[loadlab_store::metric::COMPLETED], 200.0);
    let identity = configs.iter().find(|c| c.kind == ConfigRecord::IDENTITY).expect("identity");
    let ca = scratch.dir.path().join("ca.pem");
    let id = identity.identity().expect("an identity");
    assert_eq!(id.tls, format!("yes, trusting {}", ca.display()));
    assert!(id.sampling.starts_with("not sampled: external target"), "{}", id.sampling);
    let html = std::fs::read_to_string(scratch.out().join("report.html")).expect("the report");
    assert!(html.contains("tls-server: not sampled: external target"), "no note in the report");

    // Without the CA the certificate is not trusted: the verify says so, exit 5.
    let file = scratch.write("untrusted.toml", &text.replace("cacert = \"ca.pem\"\n", ""));
    let output = scratch.run(&["run", "--suite", &file, "--out", &out]);
    let stderr = String::from_utf8_lossy(&output.stderr);
    assert_eq!(output.status.code(), Some(5), "{stderr}");
    assert!(stderr.contains("verify failed for hello on tls-server"), "{stderr}");
    assert!(
        stderr.contains("TLS: reached the server, but its certificate is not trusted"),
        "{stderr}"
    );
    assert!(!stderr.contains("not reachable"), "{stderr}");
}

#[test]
fn a_custom_request_with_a_header_runs_on_the_lab_s_nginx() {
    let scratch = Scratch::new();
    // A Range header turns nginx's answer into 206 with 4 bytes: the check passes only if
    // the header was sent. The HEAD request has no check of its own: any 2xx.
    let text = r#"name = "lab-custom-e2e"
repetitions = 1
[[stacks]]
name = "nginx"
[[stacks]]
name = "nginx"
label = "nginx-tls"
tls = true
[[workloads]]
name = "robots range"
path = "/robots.txt"
headers = ["Range: bytes=0-3"]
expect_status = 206
[[workloads]]
name = "hello head"
path = "/hello.txt"
method = "HEAD"
[[loads]]
model = "closed"
concurrency = [2]
requests = 300
"#;
    let file = scratch.write("lab.toml", text);
    let out = scratch.out().display().to_string();
    let output = scratch.run(&["run", "--suite", &file, "--out", &out]);
    if output.status.code() == Some(4) {
        crate::support::skip::missing("nginx", "nginx").report();
        return;
    }
    crate::support::assert_success(&output, &["run"]);
    let stdout = String::from_utf8_lossy(&output.stdout);
    // The lab's own checks and the two requests of the suite, over TLS too (trusting the
    // instance's CA).
    assert!(stdout.contains("nginx up and verified in "), "{stdout}");
    assert!(stdout.contains("nginx-tls up and verified in "), "{stdout}");
    let (cells, _) = stored(&scratch);
    assert_eq!(cells.len(), 4);
    for stack in ["nginx", "nginx-tls"] {
        let cell =
            |w: &str| cells.iter().find(|c| c.stack == stack && c.workload == w).expect("the cell");
        let range = cell("robots range");
        assert_eq!(range.metrics[loadlab_store::metric::COMPLETED], 300.0, "{stack}");
        assert_eq!(range.metrics[loadlab_store::metric::BYTES_BODY], 300.0 * 4.0, "{stack}");
        let head = cell("hello head");
        assert_eq!(head.metrics[loadlab_store::metric::COMPLETED], 300.0, "{stack}");
        assert_eq!(head.metrics[loadlab_store::metric::BYTES_BODY], 0.0, "{stack}");
    }
    // The report and the dry run name them by their labels.
    let dry = scratch.ok(&["run", "--suite", &file, "--dry-run"]);
    assert!(dry.contains("robots range") && dry.contains("hello head"), "{dry}");
    assert!(scratch.servers_left().is_empty(), "{:?}", scratch.servers_left());
}

/// A `systemd` unit: systemd does not run on every test machine (not in a container), so the
/// child's PATH holds a stand-in `systemctl` that answers `show` as systemd does, naming the
/// test's nginx master as the unit's main process; any other unit is stopped (`MainPID=0`).
/// What runs for real is everything of loadlab's: the command, reading its answer, sampling
/// the master with its worker.
#[test]
fn a_systemd_unit_is_sampled_through_what_systemctl_show_says() {
    use std::os::unix::fs::PermissionsExt;
    let nginx = require_nginx!(&files());
    let scratch = Scratch::new();
    let bin = scratch.dir.path().join("bin");
    std::fs::create_dir(&bin).expect("a bin directory");
    let script = format!(
        "#!/bin/sh\ncase \"$*\" in\n  *e2e-nginx.service*) printf 'MainPID=%s\\nControlGroup=\\n' {};;\n  \
         *) printf 'MainPID=0\\nControlGroup=\\n';;\nesac\n",
        nginx.master_pid()
    );
    let systemctl = bin.join("systemctl");
    std::fs::write(&systemctl, script).expect("the stand-in systemctl");
    std::fs::set_permissions(&systemctl, std::fs::Permissions::from_mode(0o755)).unwrap();
    let path = format!("{}:{}", bin.display(), std::env::var("PATH").unwrap_or_default());
    let run = |unit: &str| {
        let text = suite(&external(&nginx, &format!("unit = \"{unit}\"")), "")
            .replace("repetitions = 2", "repetitions = 1");
        let file = scratch.write("unit.toml", &text);
        let out = scratch.out().display().to_string();
        let mut command = scratch.command(&["run", "--suite", &file, "--out", &out]);
        command.env("PATH", &path);
        crate::support::output_within(command, super::LIMIT)
    };
    let output = run("e2e-nginx.service");
    crate::support::assert_success(&output, &["run", "unit"]);
    let (cells, configs) = stored(&scratch);
    assert_eq!(cells.len(), 2);
    for c in &cells {
        assert!(!c.samples.is_empty(), "{}: no samples", c.workload);
        assert!(
            c.samples.iter().all(|s| s.tier == "external" && s.processes == 2),
            "{:?}",
            c.samples
        );
    }
    let identity = configs.iter().find(|c| c.kind == ConfigRecord::IDENTITY).expect("identity");
    let sampling = "unit e2e-nginx.service (1 process now, with their descendants)";
    assert_eq!(identity.identity().expect("an identity").sampling, sampling);

    let output = run("stopped.service");
    let stderr = String::from_utf8_lossy(&output.stderr);
    assert_eq!(output.status.code(), Some(5), "{stderr}");
    assert_eq!(
        stderr.trim(),
        "loadlab: error: unit stopped.service has no running process (systemctl show: MainPID=0 \
         ControlGroup=)"
    );
}

/// `LINE:COLUMN` of the first `snippet` in `text`, counted from 1 as editors do.
fn position(text: &str, snippet: &str) -> String {
    let before = &text[..text.find(snippet).unwrap_or_else(|| panic!("{snippet:?} not in text"))];
    let column = before[before.rfind('\n').map_or(0, |i| i + 1)..].chars().count() + 1;
    format!("{}:{column}", before.matches('\n').count() + 1)
}

#[test]
fn suite_mistakes_about_external_targets_and_requests_exit_2_at_their_line_and_column() {
    let scratch = Scratch::new();
    let mine = "[[stacks]]\nurl = \"http://127.0.0.1:1/\"\nlabel = \"mine\"\n";
    let cases = [
        (format!("{mine}gzip = true\n"), "", "true", "gzip is a knob of the lab's stacks"),
        (mine.replace("127.0.0.1:1/", ""), "", "\"http://\"", "url: invalid URL"),
        (
            mine.to_string(),
            "body_file = \"nowhere.bin\"",
            "\"nowhere.bin\"",
            "body_file: cannot read",
        ),
        (mine.to_string(), "method = \"GE T\"", "\"GE T\"", "method: invalid method"),
    ];
    for (stacks, extra, at, needle) in cases {
        let text = suite(&stacks, extra);
        let file = scratch.write("bad.toml", &text);
        let output = scratch.run(&["run", "--suite", &file, "--dry-run"]);
        let stderr = String::from_utf8_lossy(&output.stderr);
        assert_eq!(output.status.code(), Some(2), "{stderr}");
        assert_eq!(stderr.lines().count(), 1, "{stderr}");
        let start = format!("loadlab: error: {file}:{}: {needle}", position(&text, at));
        assert!(stderr.starts_with(&start), "{stderr:?} does not start {start:?}");
    }
}

/// `--dry-run` counts external targets apart from "stack instances": the lab starts none for
/// them. Two repetitions of one lab stack and one external target.
#[test]
fn a_dry_run_counts_lab_instances_and_external_targets_apart() {
    let scratch = Scratch::new();
    let stacks = "[[stacks]]\nname = \"nginx\"\n\n[[stacks]]\nurl = \"http://127.0.0.1:1/\"\n\
                  label = \"mine\"\n";
    let file = scratch.write("mixed.toml", &suite(stacks, ""));
    let dry = scratch.ok(&["run", "--suite", &file, "--dry-run"]);
    let first = dry.lines().next().unwrap_or_default();
    assert!(first.contains(" on 2 stack instances and 1 external target, "), "{dry}");
}
