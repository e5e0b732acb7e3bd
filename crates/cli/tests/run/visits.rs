//! A suite's visit workloads for real, on the lab's WordPress stack with OPcache:
//! the built-in `wordpress:search` under an open load (the rate counts visits) and a closed
//! one (the concurrency counts visitors), and a visit file of the suite's own whose second
//! step's check cannot pass. The store keeps each cell's visit figures and its steps, the
//! failed step by its class; the terminal verdict marks that step. The built-in login too,
//! open and closed, each visitor as its own user: verified by one whole visit before the cells,
//! and no password of the stack's in the store, the report or the output. Skips visibly
//! without the WordPress packages (a failure in CI).

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

[[workloads]]
name = "logins"
visits = "wordpress:login"

[[loads]]
model = "open"
rates = [3]
requests = 9

[[loads]]
model = "closed"
workloads = ["searches", "search then miss", "logins"]
concurrency = [2]
requests = 9
"#;

/// Two steps: a search the lab's posts answer, then a search of the visitor's own whose page
/// only visitor 1's passes (the search form echoes the term): the suite's verify, one visit of
/// visitor 1, passes; visitor 2 of a closed population fails at step 2 in the cells.
const MISS: &str = r#"name = "search then miss"

[[step]]
path = "/?s=osprey"
status = 200

[[step]]
path = "/?s=miss-{visitor}"
status = 200
contains = 'value="miss-1"'
"#;

/// A second step that no visitor passes: the suite's verify, one whole visit, stops the run
/// there (exit 5), naming the step and its check.
const NEVER: &str = r#"name = "never"

[[step]]
path = "/?s=osprey"
status = 200

[[step]]
path = "/"
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
    assert_eq!(miss.len(), 2, "an open and a closed cell");
    for c in &miss {
        let (first, second) = (&c.steps[0], &c.steps[1]);
        assert!(first.completed > 0 && first.failed_total() == 0, "{first:?}");
        // Every search that completed went on to the second, which only visitor 1 passes.
        assert!(second.started > 0 && second.started <= first.completed, "{second:?}");
        let body = second.failed.get("body").copied().unwrap_or(0);
        assert_eq!(body, second.failed_total(), "{second:?}");
        let failed = c.metrics.get(metric::VISITS_FAILED).copied();
        assert_eq!(failed, Some(body as f64), "{:?}", c.metrics);
    }
    // In the closed population visitor 2 is always there, and always fails.
    let closed = miss.iter().find(|c| c.metrics.get(metric::VISITS_FAILED) > Some(&0.0));
    assert!(closed.is_some(), "visitor 2 failed nowhere: {:?}", miss[1].steps);

    // Logins at once, each visitor as its own user: none lost (as one user, 8 of 20 were).
    let logins: Vec<_> = cells.iter().filter(|c| c.workload == "logins").collect();
    assert_eq!(logins.len(), 2, "an open and a closed cell");
    for c in logins {
        assert_eq!(c.metrics.get(metric::VISITS_FAILED), Some(&0.0), "{:?}", c.metrics);
        assert_eq!(c.metrics.get(metric::VISITS), Some(&9.0), "{:?}", c.metrics);
    }
    // The lab's passwords are in the stack's configs, which a run captures: none may reach
    // the store or anything made of it.
    let mut made = vec![("stdout".to_string(), stdout)];
    made.push((
        "the store".into(),
        String::from_utf8_lossy(&std::fs::read(scratch.db()).unwrap()).into(),
    ));
    for entry in std::fs::read_dir(scratch.out()).unwrap().flatten() {
        let text =
            String::from_utf8_lossy(&std::fs::read(entry.path()).unwrap_or_default()).into_owned();
        made.push((entry.path().display().to_string(), text));
    }
    let json = scratch.ok(&["report", "1", "--db", &scratch.db(), "--format", "json"]);
    made.push(("report --format json".into(), json));
    for (what, text) in &made {
        assert_eq!(password_in(text), None, "a password in {what}");
    }
    assert!(password_in("log=loadlab-1&pwd=Ab3dEf6hIj9kLm2oPq5sTu8w-1&x").is_some());

    // A step that fails for every visitor stops the run at verify, named with its check.
    scratch.write("never.toml", NEVER);
    let never = SUITE.replace("visits = \"miss.toml\"", "visits = \"never.toml\"");
    let suite = scratch.write("never-suite.toml", &never);
    let out = scratch.dir.path().join("never").display().to_string();
    let output = scratch.run(&["run", "--suite", &suite, "--quick", "--out", &out]);
    let said = String::from_utf8_lossy(&output.stderr);
    assert_eq!(output.status.code(), Some(5), "{said}");
    assert!(said.contains("never.toml: step 2 GET /: its body check failed"), "{said}");
}

/// A password of the lab's WordPress in `text`: a login body's filled `pwd=`, `stack show`'s
/// `password: ` line, or a visitor's (24 letters and digits, `-`, its number).
fn password_in(text: &str) -> Option<String> {
    if let Some(at) = text.match_indices("pwd=").find(|(i, _)| !text[i + 4..].starts_with('{')) {
        return Some(text[at.0..].chars().take(40).collect());
    }
    let bytes = text.as_bytes();
    let mut run = 0;
    for (i, b) in bytes.iter().enumerate() {
        if b.is_ascii_alphanumeric() {
            run += 1;
            continue;
        }
        // A run of ASCII letters and digits starts at a character boundary.
        if run == 24 {
            let next_digit = bytes.get(i + 1).is_some_and(u8::is_ascii_digit);
            if (*b == b'-' && next_digit) || text[..i - run].ends_with("password: ") {
                return Some(text[i - run..i].to_string());
            }
        }
        run = 0;
    }
    None
}
