//! A suite of the user's own stack through `loadlab run`: the lab's nginx-fpm as it comes
//! against the same stack with the user's nginx and php-fpm snippets and php.ini, and a PHP
//! application of the user's in a docroot, requested by a custom workload. Every answer
//! checked, the user's files captured with the run, the lab's files still verified beside the
//! user's. Needs nginx and php-fpm: skipped with a visible line when missing, failed in CI.

use loadlab_store::{metric, RunId, Store};

use super::{require_stacks, Scratch};

/// The user's PHP application: a front controller that routes `?page=N`, renders from a
/// template of its own, and says which php.ini value it ran with.
const APP: &str = r#"<?php
$page = (int)($_GET['page'] ?? 1);
$template = file_get_contents(__DIR__ . '/templates/page.html');
$items = '';
for ($i = 1; $i <= 20; $i++) {
    $items .= '<li>item ' . ($page * 100 + $i) . '</li>';
}
echo strtr($template, ['{page}' => $page, '{items}' => $items,
    '{limit}' => ini_get('memory_limit')]);
"#;

const TEMPLATE: &str =
    "<html><body><h1>page {page}</h1><ul>{items}</ul><p>app:ok limit={limit}</p></body></html>\n";

fn suite() -> String {
    r#"name = "own-stack-e2e"
repetitions = 2
warmup = "0s"

[[stacks]]
name = "nginx-fpm"
label = "stock"

[[stacks]]
name = "nginx-fpm"
label = "tuned"
config = "tuned"
docroot = "site"

[[workloads]]
name = "hello.txt"

[[workloads]]
name = "app page 3"
path = "/app/?page=3"
expect_contains = "<li>item 320</li></ul><p>app:ok limit=96M</p>"
stacks = ["tuned"]

[[loads]]
model = "closed"
concurrency = [2]
duration = "300ms"
"#
    .to_string()
}

#[test]
fn a_suite_runs_the_users_config_and_php_app_beside_the_stock_stack() {
    let scratch = Scratch::new();
    if let Err(skip) = require_stacks(&scratch) {
        skip.report();
        return;
    }
    for (path, text) in [
        ("tuned/nginx-http.conf", "open_file_cache max=1000 inactive=20s;\n"),
        ("tuned/nginx-server.conf", "location /app/ {\n    index index.php;\n}\n"),
        ("tuned/php-fpm-pool.conf", "pm.max_children = 3\n"),
        ("tuned/php.ini", "memory_limit = 96M\n"),
        ("site/app/index.php", APP),
        ("site/app/templates/page.html", TEMPLATE),
    ] {
        std::fs::create_dir_all(scratch.dir.path().join(path).parent().unwrap()).unwrap();
        scratch.write(path, text);
    }
    let file = scratch.write("own.toml", &suite());
    let out = scratch.out().display().to_string();
    let stdout = scratch.ok(&["run", "--suite", &file, "--out", &out]);
    assert!(stdout.contains("6 cells"), "{stdout}");

    let store = Store::open(scratch.db()).expect("the run's store");
    let cells = store.cells(RunId(1)).expect("cells");
    let mut seen: Vec<(String, String)> =
        cells.iter().map(|c| (c.stack.clone(), c.workload.clone())).collect();
    seen.sort();
    seen.dedup();
    let pair = |s: &str, w: &str| (s.to_string(), w.to_string());
    assert_eq!(
        seen,
        [pair("stock", "hello.txt"), pair("tuned", "app page 3"), pair("tuned", "hello.txt")]
    );
    for c in &cells {
        assert!(c.metrics[metric::COMPLETED] > 0.0, "{} {}", c.stack, c.workload);
        // Every answer of the app carried its page, rendered with the user's php.ini.
        assert_eq!(c.metrics[metric::FAILED], 0.0, "{} {}", c.stack, c.workload);
        let files = c.knobs.get("config").map(|v| v["files"].clone());
        match c.stack.as_str() {
            "tuned" => assert_eq!(
                files,
                Some(serde_json::json!([
                    "nginx-http.conf",
                    "nginx-server.conf",
                    "php-fpm-pool.conf",
                    "php.ini"
                ]))
            ),
            _ => assert_eq!(files, None, "the stock stack has no config of the user's"),
        }
    }

    // The user's files are stored with the run, as each instance ran them.
    let configs = store.configs(RunId(1)).expect("configs");
    let tuned = |name: &str| {
        let found = configs.iter().find(|c| c.stack == "tuned" && c.name.starts_with(name));
        found.unwrap_or_else(|| panic!("no {name} stored for tuned")).content.clone()
    };
    assert_eq!(tuned("nginx-http.conf (yours, from "), "open_file_cache max=1000 inactive=20s;\n");
    assert!(tuned("nginx -T").contains("open_file_cache max=1000 inactive=20s;"));
    assert!(tuned("php-fpm -tt").contains("pm.max_children = 3"));
    let manifest = tuned("docroot (yours, from ");
    assert!(manifest.contains("  app/index.php\n"), "{manifest}");
    assert!(manifest.contains("  app/templates/page.html"), "{manifest}");
    assert!(!configs.iter().any(|c| c.stack == "stock" && c.name.contains("yours")));
    assert!(scratch.servers_left().is_empty(), "{:?}", scratch.servers_left());
}
