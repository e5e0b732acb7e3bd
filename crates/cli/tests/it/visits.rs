//! Visits from httperf's session logs (`--wsesslog N,X,FILE`): every request of every
//! session sent once and counted, think time outside every latency, a failing check ending its
//! visit counted by step and class, and a bad file refused by line and column.

use serde_json::Value;

use super::mixes::file;
use super::{assert_accounted, assert_exit, at, bench, float, uint};
use crate::support::{loadlab, output_within, timing_lock, Behaviour, TestServer, RUN_LIMIT};

/// Sessions of three bursts: a page, then its five resources once the page is in; `think` is
/// the attribute the bursts carry (`think=0.2`, or nothing for the run's X).
fn three_pages(think: &str) -> String {
    let mut log = String::from("# three pages of five resources\n");
    for page in ["home", "post", "about"] {
        log.push_str(&format!("/{page}.html {think}\n"));
        for r in ["site.css", "app.js", "logo.png", "a.jpg", "font.woff2"] {
            log.push_str(&format!("    /{page}/{r}\n"));
        }
    }
    log
}

/// The report's `sessions.failures`.
fn failures(report: &Value) -> Vec<(u64, u64, String, u64)> {
    let all = at(report, "sessions.failures").as_array().expect("an array");
    all.iter()
        .map(|f| {
            let n = |k: &str| f[k].as_u64().expect("a count");
            (n("step"), n("call"), f["class"].as_str().unwrap().to_string(), n("count"))
        })
        .collect()
}

#[test]
fn every_request_of_every_session_goes_once_and_is_counted() {
    let server = TestServer::start(Behaviour::ok("visit"));
    let (_dir, log) = file("three.log", &three_pages(""));
    let spec = format!("12,0,{log}");
    let report = bench(&server.url("/"), &["--wsesslog", &spec, "--rate", "40"], 0);
    // 12 sessions x 3 bursts x (1 page + 5 resources).
    assert_accounted(&report, 216);
    assert_eq!(uint(&report, "requests.completed"), 216, "{report:#}");
    assert_eq!(at(&report, "mode"), "sessions");
    for (key, n) in [("started", 12), ("completed", 12), ("failed", 0), ("unfinished", 0)] {
        assert_eq!(uint(&report, &format!("sessions.{key}")), n, "{key}:\n{report:#}");
    }
    assert_eq!(uint(&report, "sessions.lifetime_us.count"), 12, "{report:#}");
    // Each session received 18 replies.
    let histogram = at(&report, "sessions.length_histogram").as_array().unwrap();
    assert_eq!(histogram.len(), 19, "{report:#}");
    assert_eq!(histogram[18], 12, "{report:#}");
    // The server's side, path by path: each of the 18 paths 12 times, nothing else.
    let targets = server.targets();
    assert_eq!(targets.len(), 18, "{targets:?}");
    assert!(targets.values().all(|n| *n == 12), "{targets:?}");
    // And each path has its figures in the report, as a URL list's do.
    let urls = at(&report, "urls").as_array().unwrap();
    assert_eq!(urls.len(), 18, "{report:#}");
}

#[test]
fn think_time_is_never_latency() {
    let _quiet = timing_lock();
    let server = TestServer::start(Behaviour::ok("fast"));
    let (_dir, log) = file("think.log", &three_pages("think=0.2"));
    let spec = format!("5,0,{log}");
    let report = bench(&server.url("/"), &["--wsesslog", &spec, "--rate", "20"], 0);
    assert_accounted(&report, 90);
    // Two thinks of 200 ms lie inside each session (none after its last burst), so a session
    // lives at least 400 ms: the think was kept...
    let shortest = uint(&report, "sessions.lifetime_us.min");
    assert!(shortest >= 400_000, "a session shorter than its think times:\n{report:#}");
    assert!((float(&report, "sessions.think_s") - 5.0 * 0.4).abs() < 1e-6, "{report:#}");
    // ...and no request's latency holds any of it: on loopback a request takes well under a
    // millisecond, so even a busy machine's p99 stays far below one think.
    let p99 = uint(&report, "latency_us.p99");
    assert!(p99 < 100_000, "p99 {p99} us holds think time:\n{report:#}");
}

#[test]
fn a_failed_check_ends_the_visit_counted_by_step_and_class() {
    // One visitor on one connection, so the server's status cycle meets the calls in order:
    // the fourth request (the page's third resource) gets a 500.
    let server = TestServer::start(Behaviour::StatusCycle(vec![200, 200, 200, 500, 200]));
    let (_dir, log) = file("fail.log", &three_pages(""));
    let spec = format!("1,0,{log}");
    let args = ["--wsesslog", &spec, "--rate", "1", "--visitor-connections", "1"];
    let args = [&args[..], &["--expect-status", "200"]].concat();
    let report = bench(&server.url("/"), &args, 0);
    assert_eq!(uint(&report, "sessions.failed"), 1, "{report:#}");
    assert_eq!(uint(&report, "sessions.completed"), 0, "{report:#}");
    assert_eq!(failures(&report), [(1, 4, "validation".to_string(), 1)], "{report:#}");
    // Every request of the session is accounted for: three answered, one failed, and the
    // 14 the visit never issued.
    assert_accounted(&report, 4);
    assert_eq!(uint(&report, "sessions.not_issued"), 14, "{report:#}");
    assert_eq!(server.requests(), 4);
}

#[test]
fn a_bad_session_log_is_refused_by_line_and_column() {
    let (_dir, log) = file("bad.log", "/a.html\n    /b.css think=soon\n");
    let spec = format!("3,0,{log}");
    let mut cmd = loadlab();
    cmd.args(["bench", "http://127.0.0.1:9/", "--wsesslog", &spec, "--rate", "1"]);
    let out = output_within(cmd, RUN_LIMIT);
    assert_exit(&out, 2);
    let stderr = String::from_utf8_lossy(&out.stderr);
    let expected = format!("{log}:2:18: think=soon is not a number of seconds");
    assert!(stderr.contains(&expected), "{stderr}");
    assert_eq!(stderr.trim().lines().count(), 1, "one line:\n{stderr}");
}

#[test]
fn a_view_fetches_the_page_then_its_resources_on_its_host() {
    // Every path answers this page, so the stylesheet, read once to find what it names, names
    // nothing more; the CDN's image is another host's and never fetched.
    let page = r#"<html><head><link rel="stylesheet" href="/s.css"><script src="/a.js"></script>
        </head><body><img src="/i.png"><img src="http://cdn.example.com/x.png"><a href="/next">
        </a></body></html>"#;
    let server = TestServer::start(Behaviour::ok(page));
    let args = ["--view", "--rate", "20", "-n", "10", "--browser-connections", "2"];
    let report = bench(&server.url("/"), &args, 0);
    // 10 views of the page and its 3 resources.
    assert_accounted(&report, 40);
    assert_eq!(uint(&report, "sessions.completed"), 10, "{report:#}");
    assert_eq!(uint(&report, "sessions.lifetime_us.count"), 10, "{report:#}");
    assert!(float(&report, "sessions.connections_per_session") <= 2.0, "{report:#}");
    let targets = server.targets();
    // The page and the stylesheet once more each: read before the run to find the resources.
    let expected = [("/", 11), ("/s.css", 11), ("/a.js", 10), ("/i.png", 10)];
    let expected: std::collections::HashMap<String, u64> =
        expected.into_iter().map(|(p, n)| (p.to_string(), n)).collect();
    assert_eq!(targets, expected);
}

/// The text's first line says what ran: a visit file's visits, a session log's sessions, a
/// page's views, not "the 1 request of FILE" (the table of distinct requests under it).
#[test]
fn the_header_of_visits_sessions_and_views_says_what_ran() {
    let server = TestServer::start(Behaviour::ok("visit"));
    let url = server.url("/");
    let (_dir, visit) = file("visit.toml", "[[step]]\npath = \"/\"\n");
    let (_log_dir, log) = file("one.log", "/a\n/b\n");
    let sessions = format!("2,0,{log}");
    for (args, first) in [
        (
            vec!["--visits", visit.as_str(), "-c", "1", "-n", "2"],
            format!("loadlab bench {url}: visits of {visit} (1 distinct request)"),
        ),
        (
            vec!["--wsesslog", sessions.as_str(), "--rate", "20"],
            format!("loadlab bench {url}: httperf's sessions of {log} (2 distinct requests)"),
        ),
        (
            vec!["--view", "--rate", "20", "-n", "2"],
            format!("loadlab bench {url}: page views of / (it names no resource)"),
        ),
    ] {
        let mut command = loadlab();
        command.args(["bench", "-q", &url]).args(&args);
        let output = output_within(command, RUN_LIMIT);
        assert_exit(&output, 0);
        let text = String::from_utf8_lossy(&output.stdout);
        assert_eq!(text.lines().next(), Some(first.as_str()), "{args:?}: {text}");
    }
}
