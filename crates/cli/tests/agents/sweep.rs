//! `sweep --agents N`: every step of a sweep started on every agent together, agent 0 judging
//! each step's merged result; a sweep whose load differs between agents refused, naming it;
//! an agent killed mid-step ends the sweep for all, that step shown but not judged.

use std::process::Command;
use std::time::{Duration, Instant};

use serde_json::Value;

use super::{all, json, rendezvous, spawn, stderr, wait, TOKEN};
use crate::support::{loadlab, Behaviour, TestServer};

/// `loadlab sweep URL ARGS --agents N --agent I --rendezvous AT`, JSON on stdout.
fn sweeper(url: &str, args: &[&str], i: usize, n: usize, at: &str) -> Command {
    let mut c = loadlab();
    c.args(["sweep", url]).args(args);
    c.args(["--agents", &n.to_string(), "--agent", &i.to_string(), "--rendezvous", at]);
    c.args(["--format", "json", "--quiet"]).env("LOADLAB_TOKEN", TOKEN);
    c
}

/// Each step's (offered, completed, sent within the step) of a sweep's JSON.
fn steps(v: &Value) -> Vec<(f64, u64, u64)> {
    let steps = v["steps"].as_array().unwrap_or_else(|| panic!("no steps: {v:#}"));
    let n = |s: &Value, k: &str| s[k].as_u64().unwrap_or_else(|| panic!("{k} in {s}"));
    steps
        .iter()
        .map(|s| {
            let completed = n(s, "completed");
            let sent = completed + n(s, "failed") + n(s, "unfinished");
            (s["offered_rps"].as_f64().expect("offered_rps"), completed, sent)
        })
        .collect()
}

#[test]
fn every_step_of_a_sweep_starts_on_every_agent_and_is_judged_merged() {
    let server = TestServer::start(Behaviour::ok("hello"));
    let (url, at) = (server.url("/"), rendezvous());
    let args = ["--rates", "100,200,300", "--step-duration", "1s"];
    let outs = all((0..2).map(|i| sweeper(&url, &args, i, 2, &at)).collect());
    for o in &outs {
        assert_eq!(o.status.code(), Some(0), "{}", stderr(o));
    }
    let (merged, theirs) = (steps(&json(&outs[0])), steps(&json(&outs[1])));
    assert_eq!(merged.len(), 3, "{merged:?}");
    assert_eq!(theirs.len(), 3, "agent 1 ran the same steps: {theirs:?}");
    let mut sent = 0;
    for ((rate, m), a) in [100.0, 200.0, 300.0].iter().zip(&merged).zip(&theirs) {
        assert_eq!((m.0, a.0), (*rate, *rate), "the whole step's rate on both");
        // Arrivals k mod 2: agent 0's own part (the merged less agent 1's) and agent 1's
        // differ by one at most, and together they are the step's schedule.
        let own = m.1 - a.1;
        assert!(own.abs_diff(a.1) <= 1, "step {rate}: agent 0 {own}, agent 1 {}", a.1);
        // Requests of the warm-up still in flight as the step began end inside it: a few.
        assert!(m.2.abs_diff(*rate as u64) <= 5, "step {rate}: {m:?}");
        sent += m.2;
    }
    // Each step's 1 s warm-up (at its rate) and its measured second reached the server.
    let warmups = 100 + 200 + 300;
    assert!(server.requests().abs_diff(sent + warmups) <= 12, "{} vs {sent}", server.requests());
    let knee = &json(&outs[0])["knees"][0];
    assert_eq!(knee["steps_judged"], 3, "{knee:#}");
}

#[test]
fn a_sweep_whose_rates_differ_between_agents_is_refused_naming_them() {
    let server = TestServer::start(Behaviour::ok("hello"));
    let (url, at) = (server.url("/"), rendezvous());
    let outs = all(vec![
        sweeper(&url, &["--rates", "100,200", "--step-duration", "1s"], 0, 2, &at),
        sweeper(&url, &["--rates", "100,300", "--step-duration", "1s"], 1, 2, &at),
    ]);
    assert_eq!(outs[0].status.code(), Some(2), "{}", stderr(&outs[0]));
    assert!(stderr(&outs[0]).contains("--rates"), "{}", stderr(&outs[0]));
    assert_eq!(outs[1].status.code(), Some(10), "{}", stderr(&outs[1]));
    assert_eq!(server.requests(), 0);
}

#[test]
fn kill_9_of_an_agent_mid_step_ends_the_sweep_within_3_s_that_step_not_judged() {
    let server = TestServer::start(Behaviour::ok("hello"));
    let (url, at) = (server.url("/"), rendezvous());
    let args = ["--rates", "100,200", "--step-duration", "20s"];
    let mut agents: Vec<_> = (0..3).map(|i| spawn(sweeper(&url, &args, i, 3, &at))).collect();
    // Bounded: into the first step's measured part (its warm-up is 1 s), then the kill.
    let started = Instant::now();
    while server.requests() < 150 && started.elapsed() < Duration::from_secs(20) {
        std::thread::sleep(Duration::from_millis(20));
    }
    std::thread::sleep(Duration::from_millis(1500));
    let (mut victim, out, err) = agents.remove(2);
    victim.kill().expect("kill -9 the agent");
    let _ = victim.wait();
    let _ = (out.join(), err.join());
    let killed = Instant::now();
    let mut left = agents.into_iter();
    let (zero, one) = (left.next().unwrap(), left.next().unwrap());
    let (a0, _) = wait(zero.0, zero.1, zero.2, Duration::from_secs(10));
    let (a1, _) = wait(one.0, one.1, one.2, Duration::from_secs(10));
    let took = killed.elapsed();
    assert!(took < Duration::from_secs(3), "the agents took {took:?} after the kill");
    assert_eq!(a0.status.code(), Some(9), "{}", stderr(&a0));
    assert!(stderr(&a0).contains("agent 2 was lost in step 1"), "{}", stderr(&a0));
    let merged = json(&a0);
    assert_eq!(merged["interrupted"], true, "{merged:#}");
    let steps = merged["steps"].as_array().expect("steps");
    assert_eq!(steps.len(), 1, "no step after the loss: {merged:#}");
    assert_eq!(steps[0]["interrupted"], true, "the step of the loss is not judged");
    assert_eq!(merged["knee"]["steps_judged"], 0);
    assert_eq!(a1.status.code(), Some(9), "agent 1 was stopped: {}", stderr(&a1));
}

#[test]
fn a_ramp_sweep_over_agents_offers_the_whole_shape_each_second() {
    let server = TestServer::start(Behaviour::ok("hello"));
    let (url, at) = (server.url("/"), rendezvous());
    let args = ["--ramp", "0..400", "--ramp-duration", "4s"];
    let outs = all((0..2).map(|i| sweeper(&url, &args, i, 2, &at)).collect());
    for o in &outs {
        assert_eq!(o.status.code(), Some(0), "{}", stderr(o));
    }
    let offered = |v: &Value| -> Vec<u64> {
        let rows = v["seconds"].as_array().unwrap_or_else(|| panic!("no seconds: {v:#}"));
        rows.iter().map(|r| r["offered"].as_u64().expect("offered")).collect()
    };
    let (merged, theirs) = (offered(&json(&outs[0])), offered(&json(&outs[1])));
    assert_eq!(merged.len(), 4, "{merged:?}");
    // 100 t req/s over 4 s: 50, 150, 250, 350 due each second, agent 1 about half of each.
    for (s, (m, a)) in merged.iter().zip(&theirs).enumerate() {
        let want = 50 + 100 * s as u64;
        assert!(m.abs_diff(want) <= 1, "second {s}: {m} offered, {want} wanted: {merged:?}");
        assert!((2 * a).abs_diff(*m) <= 2, "second {s}: agent 1 {a} of {m}");
    }
}
