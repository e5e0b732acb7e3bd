//! `bench --agents` with `--metrics-listen` on agent 0: its endpoint serves the merge, the
//! other agents' streamed seconds added to its own, so that after the run its totals are
//! those of the merged JSON (and more than agent 0's own part); and so do a sweep's steps and
//! a ramp's one run.

use std::net::SocketAddr;
use std::process::Output;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex};
use std::time::Duration;

use super::{agent, all, json, rendezvous, stderr, TOKEN};
use crate::support::scrape::{free_port, get, values};
use crate::support::{Behaviour, TestServer};

/// `agents` run while agent 0's endpoint on `port` is scraped every 200 ms: their outputs,
/// and the last scrape, which after the run's end (agent 0 lingers until one) has the final
/// figures.
fn scraped_until_done(port: u16, agents: impl FnOnce() -> Vec<Output>) -> (Vec<Output>, String) {
    let addr: SocketAddr = format!("127.0.0.1:{port}").parse().unwrap();
    let (last, done) = (Arc::new(Mutex::new(String::new())), Arc::new(AtomicBool::new(false)));
    let (into, ended) = (last.clone(), done.clone());
    let scraper = std::thread::spawn(move || {
        while !ended.load(Ordering::Relaxed) {
            if let Some(text) = get(addr, "/metrics") {
                *into.lock().unwrap() = text;
            }
            std::thread::sleep(Duration::from_millis(200));
        }
    });
    let outs = agents();
    done.store(true, Ordering::Relaxed);
    scraper.join().unwrap();
    let text = last.lock().unwrap().clone();
    (outs, text)
}

#[test]
fn agent_0s_endpoint_serves_the_merged_totals_of_every_agent() {
    merged_totals_served("3s");
}

#[test]
fn a_test_ending_within_a_second_serves_every_agents_latency_of_that_second_too() {
    merged_totals_served("2500ms");
}

/// Two agents `bench -c 4 -d DURATION`, agent 0's endpoint scraped until it exits: its last
/// scrape gives the merged result's counts, and a latency count of every completed request.
fn merged_totals_served(duration: &str) {
    let server = TestServer::start(Behaviour::ok("hello"));
    let (url, at) = (server.url("/"), rendezvous());
    let port = free_port();
    let args = ["-c", "4", "-d", duration];
    let mut first = agent(&url, &args, 0, 2, &at, TOKEN);
    first.args(["--metrics-listen", &port.to_string(), "--metrics-linger", "30s"]);
    let (outs, text) =
        scraped_until_done(port, || all(vec![first, agent(&url, &args, 1, 2, &at, TOKEN)]));
    for o in &outs {
        assert_eq!(o.status.code(), Some(0), "{}", stderr(o));
    }
    let (merged, own) = (json(&outs[0]), json(&outs[1]));
    let one = |family: &str, labels: &[&str]| -> f64 {
        let found = values(&text, family, labels);
        assert_eq!(found.len(), 1, "{family} {labels:?}:\n{text}");
        found[0]
    };
    let completed = merged["requests"]["completed"].as_u64().unwrap();
    let theirs = own["requests"]["completed"].as_u64().unwrap();
    assert!(theirs > 0 && theirs < completed, "{merged:#}");
    assert_eq!(one("loadlab_requests_total", &["outcome=\"completed\""]), completed as f64);
    assert_eq!(
        one("loadlab_requests_total", &["outcome=\"failed\""]),
        merged["requests"]["failed"].as_u64().unwrap() as f64
    );
    assert_eq!(
        one("loadlab_requests_sent_total", &[]),
        merged["requests"]["sent"].as_u64().unwrap() as f64
    );
    // Every completed request's latency is in the histogram, the other agent's too.
    assert_eq!(one("loadlab_latency_seconds_count", &[]), completed as f64, "{text}");
}

/// `sweep ARGS` from two agents, agent 0's endpoint scraped: both outputs (each passed)
/// and the last scrape.
fn swept(args: &[&str]) -> (Vec<Output>, String) {
    let server = TestServer::start(Behaviour::ok("hello"));
    let (url, at) = (server.url("/"), rendezvous());
    let port = free_port();
    let sweeper = |i| super::sweep::sweeper(&url, args, i, 2, &at);
    let mut first = sweeper(0);
    first.args(["--metrics-listen", &port.to_string(), "--metrics-linger", "30s"]);
    let (outs, text) = scraped_until_done(port, || all(vec![first, sweeper(1)]));
    for o in &outs {
        assert_eq!(o.status.code(), Some(0), "{}", stderr(o));
    }
    (outs, text)
}

#[test]
fn agent_0s_endpoint_serves_each_sweep_step_with_every_agents_requests() {
    let (outs, text) = swept(&["--rates", "100,200", "--step-duration", "1s"]);
    let (merged, theirs) = (json(&outs[0]), json(&outs[1]));
    for (m, t) in
        merged["steps"].as_array().unwrap().iter().zip(theirs["steps"].as_array().unwrap())
    {
        let rate = m["offered_rps"].as_f64().unwrap();
        let (completed, mine) =
            (m["completed"].as_u64().unwrap(), t["completed"].as_u64().unwrap());
        // The step's cell counts from its measurement's start, its warm-up too: at least the
        // step's merged figure, which agent 0's own part alone is well short of.
        let load = format!("load=\"rate={rate}/s\"");
        let served = values(&text, "loadlab_requests_total", &["outcome=\"completed\"", &load]);
        assert_eq!(served.len(), 1, "{load}:\n{text}");
        assert!(
            mine > 0 && served[0] >= completed as f64,
            "{rate}: {served:?} < {completed}\n{text}"
        );
    }
}

#[test]
fn agent_0s_endpoint_serves_a_ramps_requests_of_every_agent() {
    let (outs, text) = swept(&["--ramp", "0..400", "--ramp-duration", "3s"]);
    let completed = |v: &serde_json::Value| -> u64 {
        let rows = v["seconds"].as_array().unwrap_or_else(|| panic!("no seconds: {v:#}"));
        rows.iter().map(|r| r["completed"].as_u64().expect("completed")).sum()
    };
    let (merged, theirs) = (completed(&json(&outs[0])), completed(&json(&outs[1])));
    assert!(theirs > 0 && theirs < merged, "agent 1 {theirs} of {merged}");
    // The one run's counts as the merged seconds add them: agent 1's streamed seconds too.
    let served = values(&text, "loadlab_requests_total", &["outcome=\"completed\""]);
    assert_eq!(served, [merged as f64], "{text}");
}
