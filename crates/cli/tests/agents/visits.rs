//! Visits over `--agents`: the visitors split as requests do, a closed population
//! by `Share::part` (of `-c` and of `-n`), an open loop's visits k of the one schedule by
//! k mod N; agent 0's visits, steps and views are every agent's added, and a visit file that
//! differs between agents is refused naming `--visits`.

use serde_json::Value;

use super::{agent, all, json, rendezvous, stderr, TOKEN};
use crate::it::visit_files::{login_visit, TOKEN as TOKEN_RE};
use crate::support::{Behaviour, SitePath, TestServer};

/// The login visit of `it::visit_files` (log in capturing the token, a page after `think`,
/// the private page with `header` as its `X-Token`): passes only when the token and the
/// cookie are carried.
fn login(header: &str, think: &str) -> String {
    login_visit(TOKEN_RE, think, &format!("X-Token = \"{header}\""))
}

fn visit_file(dir: &tempfile::TempDir, name: &str, text: &str) -> String {
    let path = dir.path().join(name);
    std::fs::write(&path, text).unwrap();
    path.display().to_string()
}

fn count(v: &Value, path: &str) -> u64 {
    path.split('.')
        .fold(v, |v, k| match k.parse::<usize>() {
            Ok(i) => &v[i],
            Err(_) => &v[k],
        })
        .as_u64()
        .unwrap_or_else(|| panic!("{path} is not a count in {v:#}"))
}

/// Each step's (started, completed) in a report's `visits.steps`.
fn steps(v: &Value) -> Vec<(u64, u64)> {
    let all = v["visits"]["steps"].as_array().expect("visits.steps");
    all.iter().map(|s| (s["started"].as_u64().unwrap(), s["completed"].as_u64().unwrap())).collect()
}

/// Runs `args` on two agents; both must succeed. Agent 0's (merged) report, agent 1's own.
fn two(url: &str, args: &[&str]) -> (Value, Value) {
    let at = rendezvous();
    let outs = all((0..2).map(|i| agent(url, args, i, 2, &at, TOKEN)).collect());
    for o in &outs {
        assert_eq!(o.status.code(), Some(0), "{}", stderr(o));
    }
    (json(&outs[0]), json(&outs[1]))
}

#[test]
fn a_closed_population_of_visitors_splits_by_share_and_merges_exactly() {
    let server = TestServer::start(Behaviour::Login);
    let dir = tempfile::tempdir().unwrap();
    let visits = visit_file(&dir, "login.toml", &login("{token}", "0s"));
    // -c 3 -n 13 over 2 agents: agent 1 has floor(2x3/2) - floor(3/2) = 2 visitors and
    // floor(2x13/2) - floor(13/2) = 7 visits; agent 0 the other visitor and 6 visits.
    let (merged, one) = two(&server.url("/"), &["--visits", &visits, "-c", "3", "-n", "13"]);
    assert_eq!(one["config"]["connections"], 2, "{one:#}");
    assert_eq!(count(&one, "visits.completed"), 7, "{one:#}");
    assert_eq!(count(&merged, "visits.completed"), 13, "{merged:#}");
    assert_eq!(count(&merged, "visits.failed"), 0, "{merged:#}");
    assert_eq!(steps(&merged), [(13, 13); 3], "{merged:#}");
    // The steps' latencies are the agents' histograms added: a sample per completed step.
    assert_eq!(count(&merged, "visits.steps.2.latency_us.count"), 13, "{merged:#}");
    assert_eq!(count(&merged, "visits.duration_us.count"), 13, "{merged:#}");
    let rows = merged["agents"].as_array().expect("agents");
    let requests: Vec<u64> = rows.iter().map(|r| r["completed"].as_u64().unwrap()).collect();
    assert_eq!(requests, [18, 21], "{rows:#?}");
    assert_eq!(server.requests(), 39);
}

#[test]
fn an_open_loop_of_visits_deals_the_one_schedule_and_adds_the_failures() {
    let server = TestServer::start(Behaviour::Login);
    let dir = tempfile::tempdir().unwrap();
    // The cookie's value as the token: the private step refuses it, every visit fails there.
    let visits = visit_file(&dir, "no-token.toml", &login("{sid}", "5ms"));
    let (merged, one) = two(&server.url("/"), &["--visits", &visits, "--rate", "40", "-n", "9"]);
    // Visits k < 9 with k mod 2 = 1: 4 on agent 1, 5 on agent 0.
    assert_eq!(count(&one, "sessions.started"), 4, "{one:#}");
    assert_eq!(count(&merged, "sessions.started"), 9, "{merged:#}");
    assert_eq!(count(&merged, "visits.completed"), 0, "{merged:#}");
    assert_eq!(count(&merged, "visits.failed"), 9, "{merged:#}");
    assert_eq!(steps(&merged), [(9, 9), (9, 9), (9, 0)], "{merged:#}");
    assert_eq!(merged["visits"]["steps"][2]["failed"], serde_json::json!({ "status": 9 }));
    assert_eq!(server.requests(), 27);
}

#[test]
fn page_views_over_agents_merge_their_load_times() {
    let page = r#"<html><head><link rel="stylesheet" href="/s.css"></head>
        <body><img src="/i.png"></body></html>"#;
    let site = vec![
        SitePath::new("/", &[], page),
        SitePath::new("/s.css", &[], "body {}"),
        SitePath::new("/i.png", &[], "png"),
    ];
    let server = TestServer::start(Behaviour::Site(site));
    let (merged, one) = two(&server.url("/"), &["--view", "--rate", "20", "-n", "7"]);
    assert_eq!(count(&one, "views.completed"), 3, "{one:#}");
    assert_eq!(count(&merged, "views.completed"), 7, "{merged:#}");
    assert_eq!(count(&merged, "views.load_time_us.count"), 7, "{merged:#}");
    assert!(count(&merged, "views.load_time_us.p99") >= count(&one, "views.load_time_us.p50"));
}

#[test]
fn a_differing_visit_file_is_refused_naming_visits() {
    let server = TestServer::start(Behaviour::Login);
    let dir = tempfile::tempdir().unwrap();
    let ours = visit_file(&dir, "a.toml", &login("{token}", "0s"));
    // The same requests, another think time: the same URL list, another visit.
    let theirs = visit_file(&dir, "b.toml", &login("{token}", "1s"));
    let at = rendezvous();
    let url = server.url("/");
    let outs = all(vec![
        agent(&url, &["--visits", &ours, "-c", "2", "-n", "4"], 0, 2, &at, TOKEN),
        agent(&url, &["--visits", &theirs, "-c", "2", "-n", "4"], 1, 2, &at, TOKEN),
    ]);
    assert_eq!(outs[0].status.code(), Some(2), "{}", stderr(&outs[0]));
    assert!(stderr(&outs[0]).contains("--visits"), "{}", stderr(&outs[0]));
    assert_eq!(outs[1].status.code(), Some(10), "{}", stderr(&outs[1]));
    assert_eq!(server.requests(), 0);
}

#[test]
fn a_weighted_mix_of_visit_files_over_agents_adds_each_files_figures() {
    let server = TestServer::start(Behaviour::Login);
    let dir = tempfile::tempdir().unwrap();
    let a = visit_file(&dir, "a.toml", &login("{token}", "0s"));
    let b = visit_file(&dir, "b.toml", "[[step]]\npath = \"/other\"\n");
    let spec = format!("{a}:3,{b}:1");
    let (merged, _) =
        two(&server.url("/"), &["--visits", &spec, "--rate", "100", "-n", "30", "--seed", "5"]);
    assert_eq!(count(&merged, "visits.completed"), 30, "{merged:#}");
    let (first, second) =
        (count(&merged, "visits.files.0.completed"), count(&merged, "visits.files.1.completed"));
    assert_eq!(first + second, 30, "{merged:#}");
    // Each file's figures are every agent's added: what the server saw of it.
    let seen = server.targets();
    assert_eq!((seen["/private"], seen["/other"]), (first, second));
    // And each file's visit durations are every agent's histograms added.
    assert_eq!(count(&merged, "visits.files.1.duration_us.count"), second, "{merged:#}");
}
