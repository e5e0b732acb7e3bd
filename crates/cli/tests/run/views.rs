//! The built-in `wordpress-visits` suite for real, on one of its WordPress stacks (the one
//! with OPcache; the others differ only by their tiers): views of the front page counted and
//! stored with views/s and page-load percentiles, every stylesheet and script the page names
//! fetched once per view, and the report's line of views for the stack. Skips visibly without
//! the WordPress packages (a failure in CI).

use loadlab_store::{metric, RunId, Store};

use super::Scratch;
use crate::support::skip;

/// The built-in suite's file, keeping only the stack labelled `keep`.
fn one_stack_of_wordpress_visits(keep: &str) -> String {
    let path = concat!(env!("CARGO_MANIFEST_DIR"), "/../suite/suites/wordpress-visits.toml");
    let text = std::fs::read_to_string(path).expect("the built-in suite's file");
    let kept: Vec<&str> = text
        .split("\n\n")
        .filter(|part| !part.starts_with("[[stacks]]") || part.contains(&format!("\"{keep}\"")))
        .collect();
    assert_eq!(kept.iter().filter(|p| p.starts_with("[[stacks]]")).count(), 1, "{text}");
    kept.join("\n\n").replace("name = \"wordpress-visits\"", "name = \"wordpress-visits-one\"")
}

#[test]
fn wordpress_visits_counts_views_and_fetches_each_resource_once_per_view() {
    let scratch = Scratch::new();
    let list = scratch.json(&["stack", "list", "--json"]);
    let stack = list["stacks"]
        .as_array()
        .expect("stacks")
        .iter()
        .find(|s| s["name"] == "wordpress-nginx-fpm");
    let missing: Vec<String> = stack.expect("the WordPress stack")["missing"]
        .as_array()
        .expect("missing")
        .iter()
        .map(|p| p.as_str().unwrap_or_default().to_string())
        .collect();
    if !missing.is_empty() {
        skip::missing("wordpress-nginx-fpm", &missing.join(" ")).report();
        return;
    }
    let suite =
        scratch.write("wordpress-visits.toml", &one_stack_of_wordpress_visits("wordpress-opcache"));
    let out = scratch.out().display().to_string();
    let stdout =
        scratch.ok(&["run", "--suite", &suite, "--quick", "--repetitions", "1", "--out", &out]);
    assert!(stdout.contains("views wordpress-opcache: "), "the report's views line:\n{stdout}");

    let store = Store::open(scratch.db()).expect("the run's store");
    let cells = store.cells(RunId(1)).expect("cells");
    let views: Vec<_> = cells.iter().filter(|c| c.workload == "front page views").collect();
    let alone = cells.iter().filter(|c| c.workload == "wordpress").count();
    assert_eq!((views.len(), alone), (2, 2), "two rates of each");
    for c in views {
        let m = |name: &str| c.metrics.get(name).copied().unwrap_or(f64::NAN);
        let n = m(metric::VIEWS);
        assert!(n > 0.0 && m(metric::VIEWS_RPS) > 0.0, "{:?}", c.metrics);
        assert!(m(metric::VIEW_P99_US) >= m(metric::VIEW_P50_US), "{:?}", c.metrics);
        assert_eq!(m(metric::FAILED), 0.0, "{:?}", c.metrics);
        // Each request of a view, the page and every resource, answered once per view.
        let mut paths = Vec::new();
        for (name, value) in &c.metrics {
            let Some(("GET", path, "completed")) = metric::parse_url(name) else { continue };
            assert_eq!(*value, n, "{path}: once per view of {n}");
            paths.push(path.to_string());
        }
        let css = paths.iter().filter(|p| p.contains(".css")).count();
        let js = paths.iter().filter(|p| p.contains(".js")).count();
        assert!(css >= 1 && js >= 1, "the front page's stylesheets and scripts: {paths:?}");
        assert!(paths.iter().any(|p| p == "/"), "{paths:?}");
    }
}
