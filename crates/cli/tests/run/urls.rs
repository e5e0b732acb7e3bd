//! A URL list as a suite's workload (`urls = FILE`): its requests verified one by one before
//! any cell, sent by weight in the cells, each stored with figures of its own; a list whose
//! request answers wrongly stops the run at verify (exit 5) naming its line; a wrong line in
//! the list is refused at the suite's `urls` key (exit 2).

use loadlab_store::{RunId, Store};

use super::Scratch;
use crate::support::{Behaviour, TestServer};

/// A suite loading `url` with the list `urls.txt` in 2 repetitions of 300 requests.
fn suite(url: &str, extra: &str) -> String {
    format!(
        "name = \"urls\"\nrepetitions = 2\nwarmup = \"0s\"\n[[stacks]]\nurl = \"{url}\"\n\
         label = \"mine\"\n[[workloads]]\nname = \"shop\"\nurls = \"urls.txt\"\n{extra}\n\
         [[loads]]\nmodel = \"closed\"\nconcurrency = [2]\nrequests = 300\n"
    )
}

#[test]
fn a_url_list_workload_is_verified_sent_by_weight_and_stored_per_request() {
    let server = TestServer::start(Behaviour::ok("ok"));
    let scratch = Scratch::new();
    scratch.write("urls.txt", "# the shop\nPOST /c X-Order: 1\n/a\nweight=3 /b\n");
    let file = scratch.write("urls.toml", &suite(&server.url("/"), ""));
    let out = scratch.out().display().to_string();
    let stdout = scratch.ok(&["run", "--suite", &file, "--out", &out]);

    // Verify sent each request once before each repetition; the cells 600 by weight 1:3:1
    // (expected 120, 360, 120).
    let targets = server.targets();
    let (a, b, c) = (targets["/a"], targets["/b"], targets["/c"]);
    assert_eq!(a + b + c, 2 * 3 + 600, "{targets:?}");
    assert!((300..=420).contains(&b) && a >= 60 && c >= 60, "{targets:?}");

    let store = Store::open(scratch.db()).expect("the run's store");
    let cells = store.cells(RunId(1)).expect("cells");
    assert_eq!(cells.len(), 2);
    for cell in &cells {
        let m = |k: &str| cell.metrics.get(k).copied().unwrap_or_else(|| panic!("{k}: {cell:?}"));
        let per: f64 = ["url.GET /a", "url.GET /b", "url.POST /c"]
            .iter()
            .map(|u| m(&format!("{u}.completed")))
            .sum();
        assert_eq!(per, m("completed"), "{:?}", cell.metrics);
        assert_eq!(m("url.POST /c.failed"), 0.0);
        assert!(m("url.GET /b.p99_us") > 0.0);
    }

    // Each request's medians over the repetitions in every report, not only the CSV.
    let db = scratch.db();
    let json = scratch.json(&["report", "--db", &db, "--format", "json"]);
    let requests = json[0]["stacks"][0]["requests"].as_array().expect("requests").clone();
    let names: Vec<String> = requests
        .iter()
        .map(|r| format!("{} {}", r["method"], r["path"]).replace('"', ""))
        .collect();
    // In the list's order, which is not the paths': each request with its line.
    assert_eq!(names, ["POST /c", "GET /a", "GET /b"], "{json:#}");
    let lines: Vec<u64> = requests.iter().map(|r| r["line"].as_u64().unwrap()).collect();
    assert_eq!(lines, [2, 3, 4], "{json:#}");
    let completed: f64 = requests.iter().map(|r| r["completed"].as_f64().unwrap()).sum();
    // Two repetitions of 300: each median is the mean of two, so they add up to 300.
    assert_eq!(completed, 300.0, "{json:#}");
    assert!(requests.iter().all(|r| r["failed"] == 0.0 && r["p99_us"].as_f64() > Some(0.0)));
    let text = scratch.ok(&["report", "--db", &db, "--format", "text"]);
    let header =
        text.lines().find(|l| l.starts_with("  request")).unwrap_or_else(|| panic!("{text}"));
    for column in ["stack", "completed", "failed", "non-2xx", "p50", "p99"] {
        assert!(header.contains(column), "{header}");
    }
    let b = text.lines().find(|l| l.starts_with("  GET /b ")).unwrap_or_else(|| panic!("{text}"));
    assert!(b.contains(" mine ") && b.contains(" µs"), "{b}");
    let at =
        |request: &str| text.find(&format!("  {request} ")).unwrap_or_else(|| panic!("{text}"));
    assert!(at("POST /c") < at("GET /a") && at("GET /a") < at("GET /b"), "{text}");
    assert!(stdout.contains(&text), "run prints the same verdict:\n{stdout}\n---\n{text}");
    let html = scratch.out().join("report.html");
    let page = std::fs::read_to_string(&html).expect("the run's report");
    assert!(page.contains("<table class=\"requests\">"), "{page}");
    assert!(page.contains("<td title=\"POST /c\">POST /c</td><td>mine</td>"), "{page}");
}

#[test]
fn lines_of_one_method_and_path_keep_their_own_figures() {
    let server = TestServer::start(Behaviour::ok("ok"));
    let scratch = Scratch::new();
    scratch.write("urls.txt", "/a\n/a X-Mine: 1\n/b\n");
    let file = scratch.write("urls.toml", &suite(&server.url("/"), "urls_order = \"sequential\""));
    let out = scratch.out().display().to_string();
    scratch.ok(&["run", "--suite", &file, "--out", &out]);
    let store = Store::open(scratch.db()).expect("the run's store");
    for cell in store.cells(RunId(1)).expect("cells") {
        let m = |k: &str| cell.metrics.get(k).copied().unwrap_or_else(|| panic!("{k}: {cell:?}"));
        // In order, each line about a third of 300, and the two /a lines are not one: their
        // figures add up to what the cell completed.
        let names = ["url.GET /a (line 1)", "url.GET /a (line 2)", "url.GET /b"];
        let each: Vec<f64> = names.iter().map(|n| m(&format!("{n}.completed"))).collect();
        assert!(each.iter().all(|&n| (90.0..=110.0).contains(&n)), "{:?}", cell.metrics);
        assert_eq!(each.iter().sum::<f64>(), m("completed"), "{:?}", cell.metrics);
    }
}

#[test]
fn a_request_of_the_list_that_answers_wrongly_stops_the_run_at_verify() {
    // Every other answer is a 500: one of the three requests of the list gets one.
    let server = TestServer::start(Behaviour::StatusCycle(vec![200, 500]));
    let scratch = Scratch::new();
    scratch.write("urls.txt", "/a\n/b\n/c\n");
    let file = scratch.write("bad.toml", &suite(&server.url("/"), ""));
    let out = scratch.out().display().to_string();
    let output = scratch.run(&["run", "--suite", &file, "--out", &out]);
    let stderr = String::from_utf8_lossy(&output.stderr);
    assert_eq!(output.status.code(), Some(5), "{stderr}");
    assert!(stderr.contains("line 2 (GET /b): no answer passed its check (1 5xx)"), "{stderr}");
}

#[test]
fn a_wrong_line_in_the_list_is_refused_at_the_suites_urls_key() {
    let scratch = Scratch::new();
    scratch.write("urls.txt", "/a\nweight=zero /b\n");
    let text = suite("http://127.0.0.1:9/", "urls_order = \"sequential\"");
    let file = scratch.write("wrong.toml", &text);
    let out = scratch.out().display().to_string();
    let output = scratch.run(&["run", "--suite", &file, "--out", &out]);
    let stderr = String::from_utf8_lossy(&output.stderr);
    assert_eq!(output.status.code(), Some(2), "{stderr}");
    let line = text.lines().position(|l| l.starts_with("urls =")).unwrap() + 1;
    assert!(stderr.contains(&format!("{file}:{line}:8: urls: ")), "{stderr}");
    assert!(stderr.contains("urls.txt:2: weight=zero"), "{stderr}");
    let output = scratch.run(&[
        "run",
        "--suite",
        &scratch.write("o.toml", &suite("http://127.0.0.1:9/", "urls_order = \"random\"")),
        "--out",
        &out,
    ]);
    assert_eq!(output.status.code(), Some(2));
    assert!(String::from_utf8_lossy(&output.stderr).contains("urls_order: weighted or sequential"));
}
