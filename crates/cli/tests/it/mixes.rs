//! `--urls FILE`: a URL list's requests picked by weight (seeded) or in order, counted by the
//! server that received them; each request's own figures in JSON and CSV; HEAD and HTTP/2
//! entries against nginx; and every wrong list refused in one line naming the file and line.

use std::collections::HashMap;

use serde_json::Value;

use super::cli_errors::fails;
use super::{assert_accounted, at, bench, uint};
use crate::support::{
    loadlab, output_within, require_nginx, Behaviour, Listen, TestServer, RUN_LIMIT,
};

/// A file `name` holding `text`, in a temporary directory of the test's own.
pub fn file(name: &str, text: &str) -> (tempfile::TempDir, String) {
    let dir = tempfile::tempdir().expect("temp dir");
    let path = dir.path().join(name);
    std::fs::write(&path, text).expect("write the file");
    (dir, path.to_str().expect("a UTF-8 path").to_string())
}

/// The report's `urls` array.
fn urls(report: &Value) -> &Vec<Value> {
    at(report, "urls").as_array().unwrap_or_else(|| panic!("urls is not an array:\n{report:#}"))
}

/// Each entry's `completed`, by path.
fn completed_by_path(report: &Value) -> HashMap<String, u64> {
    urls(report)
        .iter()
        .map(|u| (u["path"].as_str().unwrap().to_string(), u["completed"].as_u64().unwrap()))
        .collect()
}

#[test]
fn a_weighted_list_is_picked_by_weight_as_the_server_counts_and_the_seed_repeats_it() {
    let server = TestServer::start(Behaviour::ok("mixed"));
    let (_dir, list) =
        file("urls.txt", "# three requests\n/a\n\nweight=3 /b?x=1\nPOST /c X-Mix: yes, really\n");
    let args = ["--urls", &list, "-n", "5000", "-c", "4", "-t", "1", "--seed", "3"];
    let report = bench(&server.url("/"), &args, 0);
    assert_accounted(&report, 5000);
    let seen = server.targets();
    // Weights 1:3:1 over 5,000 picks: 1,000, 3,000 and 1,000 expected. The binomial's
    // standard deviation is 28 for /a and 35 for /b; 200 is more than 5 of them.
    for (path, expected) in [("/a", 1_000), ("/b?x=1", 3_000), ("/c", 1_000)] {
        let n = seen[path] as i64;
        assert!((n - expected).abs() < 200, "{path}: {n} of 5,000, {expected} expected: {seen:?}");
    }
    // Each entry's own figures are what the server saw, in the file's order.
    assert_eq!(completed_by_path(&report), seen, "{report:#}");
    let u = urls(&report);
    let lines: Vec<u64> = u.iter().map(|e| e["line"].as_u64().unwrap()).collect();
    assert_eq!(lines, [2, 4, 5], "{report:#}");
    assert_eq!(u[1]["weight"], 3);
    assert_eq!(u[2]["method"], "POST");
    for e in u {
        let completed = e["completed"].as_u64().unwrap();
        assert_eq!(e["latency_us"]["count"].as_u64(), Some(completed), "{e:#}");
        assert_eq!(e["status_class"]["2xx"].as_u64(), Some(completed), "{e:#}");
        assert_eq!(e["failed"], 0);
    }
    let shares: f64 = u.iter().map(|e| e["share"].as_f64().unwrap()).sum();
    assert!((shares - 1.0).abs() < 1e-9, "{shares}");
    let post = server.received().into_iter().find(|(_, r)| r.target == "/c").expect("a /c").1;
    assert_eq!((post.method.as_str(), post.header("x-mix")), ("POST", Some("yes, really")));
    assert_eq!(at(&report, "config.urls").as_str(), Some(list.as_str()));

    // The same seed and thread count pick the same sequence; another seed does not.
    let again = TestServer::start(Behaviour::ok("mixed"));
    let repeat = bench(&again.url("/"), &args, 0);
    assert_eq!(completed_by_path(&repeat), completed_by_path(&report));
    let other = TestServer::start(Behaviour::ok("mixed"));
    let mut args = args.to_vec();
    let last = args.len() - 1;
    args[last] = "4";
    let reseeded = bench(&other.url("/"), &args, 0);
    assert_ne!(completed_by_path(&reseeded), completed_by_path(&report));
}

#[test]
fn sequential_order_walks_the_list_each_entry_weight_times() {
    let server = TestServer::start(Behaviour::ok("in order"));
    let (_dir, list) = file("urls.txt", "weight=2 /1\n/2\n/3\n");
    let args = ["--urls", &list, "--urls-order", "sequential", "-n", "9", "-c", "1", "-t", "1"];
    let report = bench(&server.url("/"), &args, 0);
    assert_accounted(&report, 9);
    let order: Vec<String> = server.received().into_iter().map(|(_, r)| r.target).collect();
    assert_eq!(order, ["/1", "/1", "/2", "/3", "/1", "/1", "/2", "/3", "/1"]);
    assert_eq!(at(&report, "config.urls_order"), "sequential");
}

/// Validation applies to every entry, and each entry counts its own failures and statuses.
#[test]
fn each_entry_counts_its_own_failures_and_status_classes() {
    // One connection walking /ok, /bad in turn meets 200, 404, 200, 404...
    let server = TestServer::start(Behaviour::StatusCycle(vec![200, 404]));
    let (_dir, list) = file("urls.txt", "/ok\n/bad\n");
    let args = [
        "--urls",
        &list,
        "--urls-order",
        "sequential",
        "-n",
        "100",
        "-c",
        "1",
        "-t",
        "1",
        "--expect-status",
        "200",
    ];
    let report = bench(&server.url("/"), &args, 0);
    assert_accounted(&report, 100);
    let u = urls(&report);
    assert_eq!((u[0]["completed"].as_u64(), u[0]["failed"].as_u64()), (Some(50), Some(0)));
    assert_eq!((u[1]["completed"].as_u64(), u[1]["failed"].as_u64()), (Some(0), Some(50)));
    assert_eq!(u[1]["status_class"]["4xx"], 50, "{report:#}");
    assert_eq!(u[1]["latency_us"]["count"], 0, "failed requests are not timed");
    assert_eq!(uint(&report, "errors.validation"), 50, "{report:#}");
}

#[test]
fn nginx_serves_a_mix_with_head_over_http1_and_http2_and_csv_has_its_columns() {
    const FILES: &[(&str, &[u8])] = &[("small.txt", b"small"), ("large.txt", &[b'x'; 20_000])];
    let (_dir, list) = file("urls.txt", "weight=2 /small.txt\n/large.txt\nHEAD /large.txt\n");
    for h2 in [false, true] {
        // nginx's http2 listener without TLS speaks h2c only: one nginx for each.
        let nginx = require_nginx!(FILES, Listen { http2: h2, ..Listen::default() });
        let mut args = vec!["--urls", &list, "-n", "800", "-c", "4", "--expect-status", "200"];
        if h2 {
            args.extend(["--http2", "--streams", "4"]);
        }
        let report = bench(&nginx.url("/"), &args, 0);
        assert_accounted(&report, 800);
        assert_eq!(uint(&report, "requests.failed"), 0, "h2 {h2}: {report:#}");
        let u = urls(&report);
        let done = |i: usize| u[i]["completed"].as_u64().unwrap();
        assert_eq!(done(0) + done(1) + done(2), 800);
        // A HEAD's response has no body whatever its Content-Length says: the bytes of the
        // bodies are those of the GETs only.
        assert_eq!(uint(&report, "bytes.body"), done(0) * 5 + done(1) * 20_000, "{report:#}");
        assert!(done(2) > 100, "HEAD was picked: {report:#}");
    }
    let nginx = require_nginx!(FILES);
    let mut cmd = loadlab();
    cmd.args(["bench", &nginx.url("/"), "--urls", &list, "-n", "300", "--format", "csv", "-q"]);
    let out = output_within(cmd, RUN_LIMIT);
    super::assert_exit(&out, 0);
    let text = String::from_utf8_lossy(&out.stdout);
    let mut lines = text.lines();
    let (header, row) = (lines.next().unwrap(), lines.next().unwrap());
    assert_eq!(lines.next(), None, "one row: {text}");
    let cell = |name: &str| {
        let i =
            header.split(',').position(|h| h == name).unwrap_or_else(|| panic!("{name}: {header}"));
        row.split(',').nth(i).unwrap().to_string()
    };
    assert_eq!(cell("url3"), "HEAD /large.txt");
    let sum: u64 =
        (1..=3).map(|k| cell(&format!("url{k}_completed")).parse::<u64>().unwrap()).sum();
    assert_eq!(sum, 300);
    assert_eq!(cell("url1_weight"), "2");
}

#[test]
fn a_wrong_list_is_refused_in_one_line_naming_the_file_and_line() {
    let server = TestServer::start(Behaviour::ok("never asked"));
    let url = server.url("/");
    let cases = [
        ("/a\n\nweight=0 /b\n", ":3: weight=0: a weight is a whole number from 1 to"),
        ("/a\nGET /b Host\n", ":2: \"Host\" after the path: only header fields may follow"),
        ("http://example.com/x\n", ":1: http://example.com/x is not on the target"),
        ("# nothing\n", ": no request in the file"),
    ];
    for (text, want) in cases {
        let (_dir, list) = file("urls.txt", text);
        let stderr = fails(&["bench", &url, "--urls", &list, "-n", "1"], 2);
        assert_eq!(stderr.lines().count(), 1, "{stderr}");
        assert!(stderr.starts_with(&format!("loadlab: error: {list}{want}")), "{text:?}: {stderr}");
    }
    let stderr = fails(&["bench", &url, "--urls", "/nonexistent/urls.txt", "-n", "1"], 2);
    assert!(stderr.starts_with("loadlab: error: /nonexistent/urls.txt: cannot read:"), "{stderr}");
    // An entry HTTP/2 cannot carry is named by its line too.
    let (_dir, list) = file("urls.txt", "/a\n/b Connection: close\n");
    let stderr = fails(&["bench", &url, "--urls", &list, "-n", "1", "--http2"], 2);
    assert!(stderr.contains(&format!("{list}:2: header connection is not allowed")), "{stderr}");
    assert_eq!(server.requests(), 0, "nothing was sent");
}

/// The text header counts a one-URL list in the singular: "the 1 request of", not "requests".
#[test]
fn a_list_of_one_url_is_one_request_in_the_header() {
    let server = TestServer::start(Behaviour::ok("one"));
    let (_dir, list) = file("urls.txt", "/only\n");
    let mut cmd = loadlab();
    cmd.args(["bench", &server.url("/"), "--urls", &list, "-n", "2", "-c", "1", "-t", "1"]);
    let out = output_within(cmd, RUN_LIMIT);
    let text = String::from_utf8_lossy(&out.stdout);
    assert!(text.contains(": the 1 request of "), "{text}");
}
