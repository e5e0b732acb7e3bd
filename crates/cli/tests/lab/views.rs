//! Page views of the lab's WordPress front page, counted at the server: nginx's
//! access log holds each stylesheet and script the page names once per view (plus discovery's
//! reads), so what `views.completed` says is what the server served.

use std::collections::HashMap;
use std::path::Path;
use std::time::Duration;

use super::require_stack;
use crate::support::{run_json, wait_until};

/// Requests per path in an nginx `combined` access log: `... "GET /path HTTP/1.1" ...`.
fn per_path(log: &Path) -> HashMap<String, u64> {
    let text = std::fs::read_to_string(log).unwrap_or_default();
    let mut counts = HashMap::new();
    for line in text.lines() {
        let Some(request) = line.split('"').nth(1) else { continue };
        if let Some(path) = request.split(' ').nth(1) {
            *counts.entry(path.to_string()).or_insert(0) += 1;
        }
    }
    counts
}

#[test]
fn wordpress_views_fetch_each_resource_once_per_view_at_the_server() {
    let (_lab, up) = require_stack!("wordpress-nginx-fpm", &["--access-log", "on"]);
    let url = up["url"].as_str().expect("url").to_string();
    let log = Path::new(up["run_dir"].as_str().expect("run_dir")).join("logs/nginx-access.log");
    let before = per_path(&log);
    let (report, output) = run_json(&["bench", &url, "--view", "--rate", "3", "-n", "6"]);
    assert_eq!(output.status.code(), Some(0), "{report:#}");
    let views = report["views"]["completed"].as_u64().expect("views.completed");
    assert_eq!(views, 6, "{report:#}");
    assert_eq!(report["views"]["failed"], 0, "{report:#}");
    let resources: Vec<String> = report["views"]["resources"]
        .as_array()
        .expect("resources")
        .iter()
        .map(|r| r["path"].as_str().unwrap().to_string())
        .collect();
    assert!(resources.iter().any(|p| p.contains(".css")), "{resources:?}");
    assert!(resources.iter().any(|p| p.contains(".js")), "{resources:?}");
    // nginx writes a line just after its answer: wait for the last view's lines.
    let expected =
        |p: &str| views + u64::from(p.contains(".css")) + before.get(p).copied().unwrap_or(0);
    let settled = || {
        let now = per_path(&log);
        resources.iter().all(|p| now.get(p).copied().unwrap_or(0) >= expected(p))
    };
    wait_until(Duration::from_secs(5), settled);
    std::thread::sleep(Duration::from_millis(100));
    let after = per_path(&log);
    for p in &resources {
        // Each view fetched it once; discovery read each stylesheet once more for what it names.
        assert_eq!(after.get(p).copied().unwrap_or(0), expected(p), "{p} in {}", log.display());
    }
}
