//! `run --metrics-listen` on a real lab stack (nginx, the cheapest): while a cell runs, the
//! endpoint serves its stack's tiers as the cell's sampler reads them (each tier's CPU and
//! memory, under the cell's labels), read by the test as a scraper would.

use std::net::SocketAddr;
use std::process::Stdio;
use std::time::Duration;

use super::{nginx_hello, require, Scratch, LIMIT};
use crate::support::scrape::{free_port, tiers_served, values};

#[test]
fn a_run_serves_each_tiers_cpu_and_memory_under_the_cells_labels() {
    let scratch = Scratch::new();
    if let Err(skip) = require(&scratch, &["nginx"]) {
        skip.report();
        return;
    }
    // One cell, long enough for several of the sampler's seconds.
    let suite = scratch.write("tiers.toml", &nginx_hello("[2]", "4s", 1));
    let out = scratch.out().display().to_string();
    let port = free_port();
    let mut cmd = scratch.command(&["run", "--suite", &suite, "--out", &out]);
    cmd.args(["--metrics-listen", &port.to_string(), "--metrics-linger", "60s"]);
    cmd.stdout(Stdio::null()).stderr(Stdio::null());
    let mut child = cmd.spawn().expect("start loadlab run");
    let addr: SocketAddr = format!("127.0.0.1:{port}").parse().unwrap();
    let cell = ["run=\"1\"", "stack=\"nginx\"", "workload=\"hello.txt\"", "tier=\""];
    let seen = tiers_served(&mut child, addr, &cell, LIMIT);
    assert!(values(&seen, "loadlab_tier_processes", &cell).iter().all(|n| *n >= 1.0), "{seen}");
    // Scraped after its end, the run exits well before its 60 s of lingering, and it passed.
    crate::support::scrape::scraped_until_it_exits(&mut child, addr, Duration::from_secs(30));
}
