//! The traps of the trust verdict, each beside a control that must not be flagged: a client
//! that shares its CPU with a busy loop (`client.starved`), and a server behind a veth shaped
//! to a slower rate than the 10000 Mbit/s the veth reports (`network_bound` from the path's
//! RTT). They run alone (.config/nextest.toml): a neighbour's load is not theirs to measure.

use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;
use std::time::{Duration, Instant};

use super::link::Netns;
use super::{at, bench, float, strings, uint};
use crate::support::nginx::require_nginx;
use crate::support::{loadlab, output_within, Behaviour, Skip, RUN_LIMIT};

/// Pins process `pid` (all of its threads that exist now) to `cpu`.
fn pin_process(pid: i32, cpu: usize) {
    for task in std::fs::read_dir(format!("/proc/{pid}/task")).expect("the process's tasks") {
        let tid: i32 = task.unwrap().file_name().to_string_lossy().parse().unwrap();
        let pinned = crate::support::sys::pin_thread(tid, cpu);
        pinned.unwrap_or_else(|e| panic!("pinning {tid} to CPU {cpu}: {e}"));
    }
}

/// A busy loop pinned to `cpu` until dropped (and at most a minute): another process's work
/// on the client's CPU, as `taskset -c CPU` would run it.
struct Hog {
    stop: Arc<AtomicBool>,
    thread: Option<std::thread::JoinHandle<()>>,
}

impl Hog {
    fn on(cpu: usize) -> Hog {
        let stop = Arc::new(AtomicBool::new(false));
        let flag = stop.clone();
        let thread = std::thread::spawn(move || {
            crate::support::sys::pin_thread(0, cpu).expect("pinning the hog");
            let start = Instant::now();
            let mut x = 0u64;
            while !flag.load(Ordering::Relaxed) && start.elapsed() < Duration::from_secs(60) {
                x = std::hint::black_box(x.wrapping_add(1));
            }
        });
        Hog { stop, thread: Some(thread) }
    }
}

impl Drop for Hog {
    fn drop(&mut self) {
        self.stop.store(true, Ordering::Relaxed);
        if let Some(t) = self.thread.take() {
            let _ = t.join();
        }
    }
}

#[test]
fn a_client_sharing_its_cpu_with_a_busy_loop_is_starved_and_an_unshared_one_is_not() {
    if std::thread::available_parallelism().map_or(1, |n| n.get()) < 2 {
        Skip("needs 2 CPUs: nginx on one, the client on the other".into()).report();
        return;
    }
    let nginx = require_nginx!(&[("hello.txt", b"hello, world!")]);
    for pid in nginx.pids() {
        pin_process(pid, 1);
    }
    let url = nginx.url("/hello.txt");
    let args = ["-c", "50", "-d", "3s", "--pin", "0"];

    let control = bench(&url, &args, 0);
    assert_eq!(at(&control, "client.starved"), &serde_json::json!(false), "{control:#}");
    assert!(!strings(&control, "warnings").iter().any(|w| w.contains("starved")), "{control:#}");
    let quiet_rps = float(&control, "rps");

    let hog = Hog::on(0);
    let starved = bench(&url, &args, 0);
    let text = {
        let mut command = loadlab();
        command.args(["bench", &url, "-c", "50", "-d", "2s", "--pin", "0", "--quiet"]);
        let output = output_within(command, RUN_LIMIT);
        String::from_utf8(output.stdout).expect("UTF-8 report")
    };
    drop(hog);
    assert_eq!(at(&starved, "client.starved"), &serde_json::json!(true), "{starved:#}");
    assert_eq!(at(&starved, "client.saturated"), &serde_json::json!(false), "{starved:#}");
    assert!(float(&starved, "client.cpu_wait_s") > 0.3, "{starved:#}");
    let warning = strings(&starved, "warnings")
        .into_iter()
        .find(|w| w.starts_with("client starved"))
        .unwrap_or_else(|| panic!("no starvation warning in {starved:#}"));
    assert!(warning.contains("the request rate is the client's"), "{warning}");
    assert!(float(&starved, "rps") < quiet_rps, "the busy loop cost the client its rate");
    let line = text.lines().find(|l| l.starts_with("  Throughput")).expect("a throughput line");
    assert!(line.contains("CLIENT STARVED"), "{text}");
    // Whose rate it is, as the runner decided it once (limited_by: the client, no tier measured).
    assert_eq!(at(&starved, "limited_by.kind"), "client", "{starved:#}");
    assert!(line.contains("CLIENT STARVED: the client's limit (a lower bound)"), "{text}");
}

#[test]
fn a_shaped_veth_is_network_bound_by_its_rtt_and_the_same_veth_unshaped_is_not() {
    let ns = match Netns::create() {
        Ok(ns) => ns,
        Err(skip) => {
            skip.report();
            return;
        }
    };
    // 100 KB responses: the shaped link, not the in-process server, sets the pace.
    let server = ns.serve(Behaviour::ok(vec![b'x'; 100_000]));
    let url = server.url("/");
    let args = ["-c", "10", "-d", "3s"];

    let control = bench(&url, &args, 0);
    assert_eq!(at(&control, "client.network_bound"), &serde_json::json!(false), "{control:#}");
    assert!(uint(&control, "client.path.probes") >= 3, "{control:#}");
    assert!(at(&control, "client.path.idle_rtt_us").is_u64(), "{control:#}");

    for (rate, mbit) in [("50mbit", 50.0), ("20mbit", 20.0)] {
        ns.shape(Some(rate));
        let shaped = bench(&url, &args, 0);
        assert_eq!(at(&shaped, "client.network_bound"), &serde_json::json!(true), "{shaped:#}");
        assert_eq!(at(&shaped, "client.link.speed_mbps"), &serde_json::json!(10000));
        let achieved = float(&shaped, "client.path.achieved_mbps");
        assert!(achieved > 0.6 * mbit && achieved <= mbit, "{achieved} Mbit/s through {rate}");
        let warning = strings(&shaped, "warnings")
            .into_iter()
            .find(|w| w.starts_with("network-bound"))
            .unwrap_or_else(|| panic!("no network warning in {shaped:#}"));
        assert!(warning.contains("the path's RTT rose from"), "{warning}");
        assert!(
            uint(&shaped, "client.path.load_rtt_median_us")
                > 3 * uint(&shaped, "client.path.idle_rtt_us"),
            "{shaped:#}"
        );
    }
    ns.shape(None);
    let again = bench(&url, &args, 0);
    assert_eq!(at(&again, "client.network_bound"), &serde_json::json!(false), "{again:#}");
}

/// A counted closed loop with a warm-up: the requests the warm-up left in flight end inside
/// the window and count, as in a timed run what ends inside the window counts, so the window
/// holds no stretch of uncounted work. 20 connections to a server that answers each request
/// after 100 ms, a 250 ms warm-up: the rounds that began at 200 ms end at 300 ms, inside the
/// window. Counted, the 40 requests are those 20 and the round from 300 to 400 ms: 40 in
/// 150 ms, 267 req/s. Uncounted, the window paid 50 ms for nothing and needed the rounds to
/// 400 and 500 ms: 40 in 250 ms, 160 req/s.
#[test]
fn a_counted_runs_warm_up_does_not_lower_its_rate() {
    let slow = Behaviour::Slow { delay: Duration::from_millis(100), body: b"slow".to_vec() };
    let server = crate::support::TestServer::start(slow);
    let report = bench(&server.url("/"), &["-c", "20", "-n", "40", "--warmup", "250ms"], 0);
    assert_eq!(uint(&report, "requests.completed"), 40, "{report:#}");
    assert_eq!(uint(&report, "requests.failed"), 0, "{report:#}");
    let rps = float(&report, "rps");
    assert!(rps > 213.0, "{rps} req/s: the warm-up's requests cost the window its rate");
}

/// The text's header says "1 thread" and "1 connection", not "1 threads".
#[test]
fn the_text_header_counts_one_thread_and_one_connection_in_the_singular() {
    let server = crate::support::TestServer::start(Behaviour::ok("ok"));
    let mut command = loadlab();
    command.args(["bench", &server.url("/"), "-t", "1", "-c", "1", "-n", "5", "--quiet"]);
    let output = output_within(command, RUN_LIMIT);
    assert_eq!(output.status.code(), Some(0), "{output:?}");
    let stdout = String::from_utf8_lossy(&output.stdout);
    assert!(stdout.contains("  1 connection, 1 thread, "), "{stdout}");
}
