//! `run --host B --metrics-listen` from A: the endpoint serves the tiers of the stack on B as
//! a run here serves its own (each tier's CPU and memory under the cell's labels), from the
//! samples B takes and sends back over the ssh session. Needs root, iproute2, openssh and
//! nginx.

use std::net::SocketAddr;
use std::process::Stdio;
use std::time::Duration;

use super::{lab_hosts, LIMIT};
use crate::support::scrape::{free_port, scraped_until_it_exits, tiers_served, values};

#[test]
fn a_host_runs_endpoint_serves_the_tiers_sampled_on_b() {
    let Some((hosts, sshd)) = lab_hosts() else { return };
    // One cell, long enough for several of B's samples.
    let suite = sshd.dir.path().join("tiers.toml");
    std::fs::write(&suite, crate::run::nginx_hello("[2]", "4s", 1)).expect("write the suite");
    let out = sshd.dir.path().join("out");
    // A's loopback is its own: any free port is free there.
    let port = free_port().to_string();
    let (suite, out, url) = (suite.display().to_string(), out.display().to_string(), sshd.url());
    let args = ["run", "--suite", &suite, "--host", &url, "--out", &out, "--metrics-listen", &port];
    let mut cmd = sshd.loadlab_in(&hosts.a, &args);
    cmd.args(["--metrics-linger", "60s"]).stdout(Stdio::null()).stderr(Stdio::null());
    let mut child = cmd.spawn().expect("start loadlab run in A");
    let addr: SocketAddr = format!("127.0.0.1:{port}").parse().unwrap();
    // The endpoint listens on A's loopback: scraped from a thread inside A.
    std::thread::scope(|scope| {
        scope
            .spawn(|| {
                hosts.a.enter();
                let cell = ["run=\"1\"", "stack=\"nginx\"", "workload=\"hello.txt\"", "tier=\""];
                let seen = tiers_served(&mut child, addr, &cell, LIMIT);
                let processes = values(&seen, "loadlab_tier_processes", &cell);
                assert!(processes.iter().all(|n| *n >= 1.0), "{seen}");
                scraped_until_it_exits(&mut child, addr, Duration::from_secs(30));
            })
            .join()
            .unwrap_or_else(|e| std::panic::resume_unwind(e));
    });
}
