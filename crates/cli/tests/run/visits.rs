//! A suite's visit workloads for real (issue 25), on the lab's WordPress stack with OPcache:
//! the built-in `wordpress:search` under an open load (the rate counts visits) and a closed
//! one (the concurrency counts visitors), and a visit file of the suite's own whose second
//! step's check cannot pass. The store keeps each cell's visit figures and its steps, the
//! failed step by its class; the terminal verdict marks that step. Skips visibly without the
//! WordPress packages (a failure in CI).

use loadlab_store::{metric, RunId, Store};

use super::{require, Scratch};

const SUITE: &str = r#"name = "visits-e2e"
description = "search visits and a visit whose second step fails, on WordPress with OPcache"
repetitions = 1
warmup = "0s"

[[stacks]]
name = "wordpress-nginx-fpm"

[[workloads]]
name = "searches"
visits = "wordpress:search"

[[workloads]]
name = "search then miss"
visits = "miss.toml"

[[loads]]
model = "open"
rates = [3]
requests = 9

[[loads]]
model = "closed"
workloads = ["searches"]
concurrency = [2]
requests = 9
"#;

/// Two steps: a search the lab's posts answer, then the front page checked for a text that no
/// page of the lab holds.
const MISS: &str = r#"name = "search then miss"

[[step]]
path = "/?s=osprey"
status = 200

[[step]]
path = "/"
status = 200
contains = "no page of the lab says this"
"#;

#[test]
fn a_suites_visits_store_their_steps_and_the_failed_one_shows() {
    let scratch = Scratch::new();
    if let Err(skip) = require(&scratch, &["wordpress-nginx-fpm"]) {
        skip.report();
        return;
    }
    scratch.write("miss.toml", MISS);
    let suite = scratch.write("visits.toml", SUITE);
    let out = scratch.out().display().to_string();
    let stdout = scratch.ok(&["run", "--suite", &suite, "--quick", "--out", &out]);
    assert!(stdout.contains("visits wordpress-nginx-fpm: "), "the visits line:\n{stdout}");
    assert!(stdout.contains("✗ 2 GET /"), "the failed step marked:\n{stdout}");

    let store = Store::open(scratch.db()).expect("the run's store");
    let cells = store.cells(RunId(1)).expect("cells");
    let searches: Vec<_> = cells.iter().filter(|c| c.workload == "searches").collect();
    assert_eq!(searches.len(), 2, "an open and a closed cell");
    for c in searches {
        let m = |name: &str| c.metrics.get(name).copied().unwrap_or(f64::NAN);
        assert_eq!(c.steps.len(), 1, "{:?}", c.steps);
        let s = &c.steps[0];
        assert!(s.label.ends_with("GET /?s=osprey"), "{}", s.label);
        assert!(s.completed > 0 && s.completed <= s.started, "{s:?}");
        assert_eq!(s.failed_total(), 0, "{s:?}");
        assert!(s.p50_us.is_some() && s.p50_us <= s.p99_us, "{s:?}");
        // A visit of one step completes when its step does.
        assert_eq!(m(metric::VISITS), s.completed as f64, "{:?}", c.metrics);
        assert!(m(metric::VISITS_RPS) > 0.0, "{:?}", c.metrics);
        assert!(m(metric::VISIT_P99_US) >= m(metric::VISIT_P50_US), "{:?}", c.metrics);
    }

    let miss: Vec<_> = cells.iter().filter(|c| c.workload == "search then miss").collect();
    assert_eq!(miss.len(), 1);
    let (first, second) = (&miss[0].steps[0], &miss[0].steps[1]);
    assert!(first.completed > 0 && first.failed_total() == 0, "{first:?}");
    // Every search that completed went on to the front page, whose check no answer passes.
    assert!(second.started > 0 && second.started <= first.completed, "{second:?}");
    assert_eq!(second.completed, 0, "{second:?}");
    let body = second.failed.get("body").copied().unwrap_or(0);
    assert!(body > 0 && body == second.failed_total(), "{second:?}");
    assert_eq!((second.p50_us, second.p99_us), (None, None));
    let failed = miss[0].metrics.get(metric::VISITS_FAILED).copied();
    assert_eq!(failed, Some(body as f64), "{:?}", miss[0].metrics);
}
