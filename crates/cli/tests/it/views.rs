//! Page views (`bench --view`): a view is the page and the resources its HTML
//! names, counted as views with their page-load time beside the requests' own figures; with
//! `--repeat-view` a visitor's second view honours the cache headers of its first.

use std::collections::HashMap;
use std::time::Duration;

use serde_json::Value;

use super::{assert_accounted, assert_exit, at, bench, uint};
use crate::support::{loadlab, output_within, Behaviour, SitePath, TestServer, RUN_LIMIT};

/// A page naming a stylesheet, a script and an image, and the three of them with `headers`.
pub(super) fn site(headers: &[(&str, &str)], slow_image: Duration) -> Vec<SitePath> {
    let page = r#"<html><head><link rel="stylesheet" href="/s.css"><script src="/a.js"></script>
        </head><body><img src="/i.png"></body></html>"#;
    let mut image = SitePath::new("/i.png", headers, "png");
    image.delay = slow_image;
    vec![
        SitePath::new("/", &[], page),
        SitePath::new("/s.css", headers, "body { color: black }"),
        SitePath::new("/a.js", headers, "var a;"),
        image,
    ]
}

fn resources(report: &Value) -> Vec<(String, Value)> {
    let all = at(report, "views.resources").as_array().expect("an array");
    all.iter()
        .map(|r| (r["path"].as_str().unwrap().to_string(), r["repeat_view"].clone()))
        .collect()
}

fn counts(pairs: &[(&str, u64)]) -> HashMap<String, u64> {
    pairs.iter().map(|(p, n)| (p.to_string(), *n)).collect()
}

#[test]
fn a_view_of_a_page_naming_three_resources_is_four_requests() {
    let server = TestServer::start(Behaviour::Site(site(&[], Duration::ZERO)));
    let args = ["--view", "--rate", "20", "-n", "10"];
    let report = bench(&server.url("/"), &args, 0);
    assert_accounted(&report, 40);
    assert_eq!(uint(&report, "views.completed"), 10, "{report:#}");
    assert_eq!(uint(&report, "views.failed"), 0, "{report:#}");
    assert_eq!(uint(&report, "requests.completed"), 4 * uint(&report, "views.completed"));
    assert_eq!(uint(&report, "views.load_time_us.count"), 10, "{report:#}");
    assert!(at(&report, "views.rps").as_f64().unwrap() > 0.0, "{report:#}");
    assert_eq!(at(&report, "views.cache"), "first view");
    assert!(at(&report, "views.repeat").is_null(), "{report:#}");
    let listed: Vec<String> = resources(&report).into_iter().map(|(p, _)| p).collect();
    assert_eq!(listed, ["/s.css", "/a.js", "/i.png"], "{report:#}");
    // The page and the stylesheet once more each: read before the run to find the resources.
    let expected = counts(&[("/", 11), ("/s.css", 11), ("/a.js", 10), ("/i.png", 10)]);
    assert_eq!(server.targets(), expected);
}

#[test]
fn a_repeat_view_skips_fresh_resources_and_revalidates_the_others() {
    // The stylesheet and script are fresh for an hour; the image carries only an ETag.
    let fresh: &[(&str, &str)] = &[("Cache-Control", "max-age=3600")];
    let mut paths = site(fresh, Duration::ZERO);
    paths[3].headers = vec![("ETag".to_string(), "\"v1\"".to_string())];
    let server = TestServer::start(Behaviour::Site(paths));
    let visitors = 6;
    let n = visitors.to_string();
    let report = bench(&server.url("/"), &["--view", "--repeat-view", "--rate", "20", "-n", &n], 0);
    assert_eq!(at(&report, "views.cache"), "first and repeat view");
    assert_eq!(uint(&report, "views.completed"), 2 * visitors, "{report:#}");
    assert_eq!(uint(&report, "views.first.completed"), visitors, "{report:#}");
    assert_eq!(uint(&report, "views.repeat.completed"), visitors, "{report:#}");
    let said: Vec<(String, Value)> = resources(&report);
    let said: Vec<(&str, &str)> =
        said.iter().map(|(p, r)| (p.as_str(), r.as_str().unwrap_or("null"))).collect();
    assert_eq!(said, [("/s.css", "fresh"), ("/a.js", "fresh"), ("/i.png", "revalidated")]);
    // Discovery read the page and every resource once; then each visitor fetched the fresh
    // resources once, the page twice, and the image twice: whole, then revalidated (a 304).
    let v = visitors;
    let expected =
        counts(&[("/", 2 * v + 1), ("/s.css", v + 1), ("/a.js", v + 1), ("/i.png", 2 * v + 1)]);
    assert_eq!(server.targets(), expected);
    let conditional = server
        .received()
        .iter()
        .filter(|(_, r)| r.target == "/i.png" && r.header("if-none-match") == Some("\"v1\""))
        .count() as u64;
    assert_eq!(conditional, v, "one revalidation per visitor");
    assert_eq!(uint(&report, "status.304"), v, "{report:#}");
}

#[test]
fn page_load_time_holds_the_slowest_resource() {
    let slow = Duration::from_millis(80);
    let server = TestServer::start(Behaviour::Site(site(&[], slow)));
    let report = bench(&server.url("/"), &["--view", "--rate", "10", "-n", "5"], 0);
    assert_eq!(uint(&report, "views.completed"), 5, "{report:#}");
    // From the view's due time to its last resource's last byte: never shorter than the image
    // alone takes to come, while the page's own request is far quicker.
    let shortest = uint(&report, "views.load_time_us.min");
    assert!(shortest >= slow.as_micros() as u64, "a view shorter than its image:\n{report:#}");
    let page = at(&report, "urls").as_array().unwrap().iter().find(|u| u["path"] == "/");
    let page = page.unwrap_or_else(|| panic!("the page's figures:\n{report:#}"));
    assert!(page["latency_us"]["p50"].as_u64().unwrap() < slow.as_micros() as u64, "{report:#}");
}

#[test]
fn the_text_output_says_what_a_view_fetched_and_which_view_ran() {
    let server = TestServer::start(Behaviour::Site(site(&[("ETag", "\"e\"")], Duration::ZERO)));
    let mut cmd = loadlab();
    let url = server.url("/");
    cmd.args(["bench", &url, "--view", "--repeat-view", "--rate", "20", "-n", "3"]);
    let out = output_within(cmd, RUN_LIMIT);
    assert_exit(&out, 0);
    let text = String::from_utf8_lossy(&out.stdout);
    assert!(text.contains("6 completed, 0 failed"), "{text}");
    assert!(text.contains("(first and repeat view of /)"), "{text}");
    assert!(text.contains("repeat view  p50"), "{text}");
    assert!(
        text.contains(
            "Resources    3: /s.css (revalidated) /a.js (revalidated) /i.png (revalidated)"
        ),
        "{text}"
    );
}

/// A page on `page`'s server naming a stylesheet on `other` (by its whole URL) and a script
/// on its own host; `other` serves the stylesheet.
fn two_origins() -> (TestServer, TestServer) {
    let other = TestServer::start(Behaviour::Site(vec![SitePath::new(
        "/s.css",
        &[],
        "body { color: black }",
    )]));
    let sheet = other.url("/s.css");
    let page = format!(
        r#"<html><head><link rel="stylesheet" href="{sheet}"><script src="/a.js"></script>
        </head><body></body></html>"#
    );
    let page = TestServer::start(Behaviour::Site(vec![
        SitePath::new("/", &[], &page),
        SitePath::new("/a.js", &[], "var a;"),
    ]));
    (page, other)
}

#[test]
fn another_hosts_stylesheet_is_skipped_unless_view_hosts_names_it() {
    let (page, other) = two_origins();
    let sheet = other.url("/s.css");
    let report = bench(&page.url("/"), &["--view", "--rate", "20", "-n", "5"], 0);
    assert_eq!(uint(&report, "views.completed"), 5, "{report:#}");
    assert_eq!(at(&report, "views.skipped"), &serde_json::json!([sheet]), "{report:#}");
    assert_eq!(other.requests(), 0, "a host not allowed is never asked");
    let mut cmd = loadlab();
    cmd.args(["bench", &page.url("/"), "--view", "--rate", "20", "-n", "2"]);
    let out = output_within(cmd, RUN_LIMIT);
    assert_exit(&out, 0);
    let (text, said) = (String::from_utf8_lossy(&out.stdout), String::from_utf8_lossy(&out.stderr));
    assert!(text.contains(&format!("Skipped      1: {sheet}")), "{text}");
    assert!(said.contains(&format!("1 skipped (not in --view-hosts): {sheet}")), "{said}");
    assert_eq!(other.requests(), 0, "a host not allowed is never asked");

    let views = 8;
    let n = views.to_string();
    let authority = other.addr().to_string();
    let args = ["--view", "--view-hosts", &authority, "--rate", "20", "-n", &n];
    let report = bench(&page.url("/"), &args, 0);
    assert_eq!(uint(&report, "views.completed"), views, "{report:#}");
    assert_eq!(uint(&report, "views.failed"), 0, "{report:#}");
    assert!(at(&report, "views.skipped").as_array().unwrap().is_empty(), "{report:#}");
    let listed: Vec<String> = resources(&report).into_iter().map(|(p, _)| p).collect();
    assert_eq!(listed, [sheet.as_str(), "/a.js"], "{report:#}");
    // One fetch of the stylesheet per view, and one read at discovery for what it names.
    assert_eq!(other.targets(), counts(&[("/s.css", views + 1)]));
    // On the visitor's own connection to that origin, with that origin's Host.
    let hosts: Vec<Option<String>> =
        other.received().iter().map(|(_, r)| r.header("host").map(str::to_string)).collect();
    assert!(hosts.iter().skip(1).all(|h| h.as_deref() == Some(authority.as_str())), "{hosts:?}");
    assert_eq!(other.connections(), views + 1, "one connection of each viewer, and discovery's");
    // The three runs on the page's own host: 5 views, 2 and 8, each reading the page once before.
    assert_eq!(page.targets(), counts(&[("/", 6 + 3 + views + 1), ("/a.js", 5 + 2 + views)]));
    assert_accounted(&report, 3 * views);
}

#[test]
fn two_origins_stylesheets_of_one_path_have_a_row_each_named_by_origin() {
    let other = TestServer::start(Behaviour::Site(vec![SitePath::new("/s.css", &[], "b {}")]));
    let sheet = other.url("/s.css");
    let page = format!(
        r#"<html><head><link rel="stylesheet" href="/s.css">
        <link rel="stylesheet" href="{sheet}"></head><body></body></html>"#
    );
    let page = TestServer::start(Behaviour::Site(vec![
        SitePath::new("/", &[], &page),
        SitePath::new("/s.css", &[], "p {}"),
    ]));
    let authority = other.addr().to_string();
    let args = ["--view", "--view-hosts", &authority, "--rate", "20", "-n", "4"];
    let report = bench(&page.url("/"), &args, 0);
    assert_eq!(uint(&report, "views.completed"), 4, "{report:#}");
    let rows: Vec<(&str, u64)> = (at(&report, "urls").as_array().unwrap().iter())
        .map(|u| (u["path"].as_str().unwrap(), u["completed"].as_u64().unwrap()))
        .collect();
    assert_eq!(rows, [("/", 4), ("/s.css", 4), (sheet.as_str(), 4)], "{report:#}");
    // The same names in the text's table of requests.
    let mut cmd = loadlab();
    cmd.args(["bench", &page.url("/"), "--view", "--view-hosts", &authority]);
    cmd.args(["--rate", "20", "-n", "2"]);
    let out = output_within(cmd, RUN_LIMIT);
    assert_exit(&out, 0);
    let text = String::from_utf8_lossy(&out.stdout);
    let row = |name: &str| text.lines().filter(|l| l.contains(&format!(" GET {name} "))).count();
    assert_eq!((row("/s.css"), row(&sheet)), (1, 1), "{text}");
}

#[test]
fn a_view_host_that_does_not_resolve_stops_the_run_before_any_load() {
    let (page, other) = two_origins();
    let mut cmd = loadlab();
    let url = page.url("/");
    cmd.args(["bench", &url, "--view", "--rate", "20", "-n", "3"]);
    cmd.args(["--view-hosts", &format!("{},nowhere.invalid:80", other.addr())]);
    let out = output_within(cmd, RUN_LIMIT);
    assert_exit(&out, 2);
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(stderr.contains("--view-hosts: nowhere.invalid:80 does not resolve"), "{stderr}");
    assert_eq!((page.requests(), other.requests()), (0, 0), "{stderr}");
}

/// Viewers in a closed loop (`-c`, as ab's `-c` is for pages): each starts its next view as
/// soon as one ends; `-n` counts views, `-d` times them.
#[test]
fn a_closed_population_of_viewers_makes_the_views_counted_or_timed() {
    let server = TestServer::start(Behaviour::Site(site(&[], Duration::ZERO)));
    let report = bench(&server.url("/"), &["--view", "-c", "2", "-n", "10"], 0);
    assert_accounted(&report, 40);
    assert_eq!(at(&report, "mode"), "closed", "{report:#}");
    assert_eq!(uint(&report, "views.completed"), 10, "{report:#}");
    assert_eq!(uint(&report, "views.failed"), 0, "{report:#}");
    assert_eq!(uint(&report, "views.load_time_us.count"), 10, "{report:#}");
    let expected = counts(&[("/", 11), ("/s.css", 11), ("/a.js", 10), ("/i.png", 10)]);
    assert_eq!(server.targets(), expected);
    let report = bench(&server.url("/"), &["--view", "-c", "2", "-d", "1s"], 0);
    assert!(uint(&report, "views.completed") > 0, "{report:#}");
    assert_eq!(uint(&report, "views.failed"), 0, "{report:#}");
    assert_eq!(uint(&report, "requests.failed"), 0, "{report:#}");
    // The text's level is the viewers, not their connections.
    let mut cmd = loadlab();
    cmd.args(["bench", &server.url("/"), "--view", "-c", "2", "-n", "4"]);
    let out = output_within(cmd, RUN_LIMIT);
    assert_exit(&out, 0);
    let text = String::from_utf8_lossy(&out.stdout);
    let level = text.lines().nth(1).unwrap_or_default();
    assert!(level.starts_with("  2 viewers, "), "{text}");
}

/// Views under a shape: each second's row offers the views due in it times a view's
/// requests (the page and its three resources), as the request loop's rows offer requests.
#[test]
fn views_under_stages_offer_their_requests_second_by_second() {
    let server = TestServer::start(Behaviour::Site(site(&[], Duration::ZERO)));
    let report = bench(&server.url("/"), &["--view", "--stages", "1s:10..10,1s:10..30"], 0);
    let rows = super::ramp::seconds(&report);
    let offered: Vec<u64> = rows.iter().map(|r| uint(r, "offered")).collect();
    assert_eq!(offered, [40, 80], "{report:#}");
}
