//! A worker pool that was full is named as the limit, with its figures: nginx + php-fpm with a
//! pool of 2 children under 20 connections of phpinfo.php, against the control, a pool of 50
//! under the same load, which must not be called full. Real stacks, a real store, and what
//! `report --format json` says of each.

use serde_json::Value;

use super::{require_stacks, Scratch};

const POOLS: &str = r#"name = "pools-e2e"
description = "a php-fpm pool of 2 against one of 50, under 20 connections"
repetitions = 1
warmup = "500ms"

[[stacks]]
name = "nginx-fpm"
label = "pool-2"
php_workers = 2

[[stacks]]
name = "nginx-fpm"
label = "pool-50"
php_workers = 50

[[workloads]]
name = "phpinfo.php"

[[loads]]
model = "closed"
concurrency = [20]
duration = "3s"
"#;

#[test]
fn a_full_php_fpm_pool_limits_its_cell_and_a_pool_of_50_does_not() {
    let scratch = Scratch::new();
    if let Err(skip) = require_stacks(&scratch) {
        skip.report();
        return;
    }
    let suite = scratch.write("pools.toml", POOLS);
    let out = scratch.out().display().to_string();
    let stdout = scratch.ok(&["run", "--suite", &suite, "--out", &out]);
    let report = scratch.json(&["report", "1", "--db", &scratch.db(), "--format", "json"]);

    let limits = |stack: &str| limits_of(&report, stack);
    let small = limits("pool-2");
    assert_eq!(small.len(), 1, "{small:#?}\n{stdout}");
    assert_eq!(small[0]["name"], "php-fpm pool", "{small:#?}\n{stdout}");
    let evidence = small[0]["evidence"].as_str().expect("evidence");
    assert!(evidence.starts_with("2 of 2 children busy in "), "{evidence}");
    assert!(evidence.contains("listen queue up to "), "the 18 waiting connections: {evidence}");
    assert!(stdout.contains("[php-fpm pool]"), "the progress line names the limit:\n{stdout}");

    let big = limits("pool-50");
    assert!(
        big.iter().all(|l| l["name"] != "php-fpm pool"),
        "a pool of 50 under 20 connections is never full: {big:#?}"
    );
}

/// What `report --format json` says limited `stack`'s cells.
fn limits_of(report: &Value, stack: &str) -> Vec<Value> {
    let found = find_stack(report, stack)
        .unwrap_or_else(|| panic!("no stack {stack} in the report: {report}"));
    found["limits"].as_array().cloned().unwrap_or_default()
}

/// The stack's summary, wherever the report keeps it.
fn find_stack<'a>(v: &'a Value, stack: &str) -> Option<&'a Value> {
    match v {
        Value::Object(map) => {
            if map.get("stack").and_then(Value::as_str) == Some(stack) && map.contains_key("limits")
            {
                return Some(v);
            }
            map.values().find_map(|x| find_stack(x, stack))
        }
        Value::Array(items) => items.iter().find_map(|x| find_stack(x, stack)),
        _ => None,
    }
}

/// Apache prefork with mod_php: 5 workers under 20 keep-alive connections are all busy (its
/// status page then waits behind the load, and 15 connections wait in the listen queue); 50
/// workers under the same load are not full.
const APACHE: &str = r#"name = "apache-pools-e2e"
description = "Apache prefork with 5 workers against 50, under 20 connections"
repetitions = 1
warmup = "500ms"

[[stacks]]
name = "apache-prefork-modphp"
label = "workers-5"
workers = 5

[[stacks]]
name = "apache-prefork-modphp"
label = "workers-50"
workers = 50

[[workloads]]
name = "hello.php"

[[loads]]
model = "closed"
concurrency = [20]
duration = "3s"
"#;

#[test]
fn a_full_apache_prefork_pool_limits_its_cell_and_one_of_50_does_not() {
    let scratch = Scratch::new();
    let list = scratch.json(&["stack", "list", "--json"]);
    let apache = list["stacks"]
        .as_array()
        .expect("stacks")
        .iter()
        .find(|s| s["name"] == "apache-prefork-modphp")
        .expect("the apache-prefork-modphp stack");
    let missing: Vec<&str> =
        apache["missing"].as_array().expect("missing").iter().filter_map(Value::as_str).collect();
    if !missing.is_empty() {
        crate::support::skip::missing("apache-prefork-modphp", &missing.join(" ")).report();
        return;
    }
    let suite = scratch.write("apache.toml", APACHE);
    let out = scratch.out().display().to_string();
    let stdout = scratch.ok(&["run", "--suite", &suite, "--out", &out]);
    let report = scratch.json(&["report", "1", "--db", &scratch.db(), "--format", "json"]);
    let limits = |stack: &str| limits_of(&report, stack);
    let small = limits("workers-5");
    assert_eq!(small.len(), 1, "{small:#?}\n{stdout}");
    assert_eq!(small[0]["name"], "apache pool", "{small:#?}\n{stdout}");
    let evidence = small[0]["evidence"].as_str().expect("evidence");
    assert!(evidence.starts_with("5 of 5 workers busy in "), "{evidence}");
    assert!(evidence.contains("listen queue up to "), "{evidence}");
    let big = limits("workers-50");
    assert!(big.iter().all(|l| l["name"] != "apache pool"), "{big:#?}\n{stdout}");
}
