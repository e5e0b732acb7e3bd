//! `--metrics-listen`: a bench scraped by Debian's real `prometheus` (on 127.0.0.1, a generated
//! config, its own storage in a temp dir, a 1 s scrape interval), after which PromQL over
//! Prometheus' HTTP API gives the same totals of requests and of errors by class as the run's
//! JSON, the final figures reaching Prometheus because the run lingers for one last scrape; a
//! sweep's steps each a cell with its verdict's flags; an address in use refused.

use std::net::{SocketAddr, TcpListener};
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

use serde_json::Value;

use super::{bench, uint};
use crate::support::scrape::{free_port, get};
use crate::support::{skip, timing_lock, Behaviour, TestServer};

/// Prometheus on `port`, killed when dropped.
struct Prometheus(Child, SocketAddr);

impl Drop for Prometheus {
    fn drop(&mut self) {
        let _ = self.0.kill();
        let _ = self.0.wait();
    }
}

impl Prometheus {
    /// Scraping `target` every second, ready to be queried.
    fn start(binary: &std::path::Path, dir: &std::path::Path, target: u16) -> Prometheus {
        let config = dir.join("prometheus.yml");
        std::fs::write(
            &config,
            format!(
                "global:\n  scrape_interval: 1s\n  scrape_timeout: 1s\nscrape_configs:\n  \
                 - job_name: loadlab\n    static_configs:\n      - targets: ['127.0.0.1:{target}']\n"
            ),
        )
        .unwrap();
        let addr: SocketAddr = format!("127.0.0.1:{}", free_port()).parse().unwrap();
        let child = Command::new(binary)
            .arg(format!("--config.file={}", config.display()))
            .arg(format!("--storage.tsdb.path={}", dir.join("data").display()))
            .arg(format!("--web.listen-address={addr}"))
            .stdout(Stdio::null())
            .stderr(std::fs::File::create(dir.join("prometheus.log")).unwrap())
            .spawn()
            .expect("start prometheus");
        let prometheus = Prometheus(child, addr);
        let deadline = Instant::now() + Duration::from_secs(60);
        while get(addr, "/-/ready").is_none() {
            assert!(Instant::now() < deadline, "prometheus not ready in 60 s");
            std::thread::sleep(Duration::from_millis(200));
        }
        prometheus
    }

    /// The value of the one series a PromQL `query` gives now.
    fn value(&self, query: &str) -> Option<f64> {
        let encoded: String = query
            .bytes()
            .map(|b| match b {
                b'a'..=b'z' | b'A'..=b'Z' | b'0'..=b'9' | b'_' => (b as char).to_string(),
                b => format!("%{b:02X}"),
            })
            .collect();
        let body = get(self.1, &format!("/api/v1/query?query={encoded}"))?;
        let json: Value = serde_json::from_str(&body).ok()?;
        let result = json["data"]["result"].as_array()?;
        assert!(result.len() <= 1, "{query}: more than one series: {json}");
        result.first()?["value"][1].as_str()?.parse().ok()
    }
}

#[test]
fn prometheus_scraping_a_bench_gets_the_same_totals_as_its_json() {
    let _timing = timing_lock();
    let Some(binary) = skip::find_program("prometheus", &["/usr/bin/prometheus"]) else {
        skip::missing("prometheus", "prometheus").report();
        return;
    };
    let dir = tempfile::tempdir().unwrap();
    let port = free_port();
    let prometheus = Prometheus::start(&binary, dir.path(), port);
    // A server that stalls 400 ms of every second: the requests in each stall time out at
    // 100 ms (client_timeout), the others complete.
    let freeze = Behaviour::Freeze {
        period: Duration::from_secs(1),
        pause: Duration::from_millis(400),
        body: b"ok".to_vec(),
    };
    let server = TestServer::start(freeze);
    let listen = format!("127.0.0.1:{port}");
    let args = ["-c", "4", "-d", "4s", "--timeout", "100ms", "--metrics-listen", &listen];
    let report = bench(&server.url("/"), &[&args[..], &["--metrics-linger", "30s"]].concat(), 0);
    let (completed, failed) =
        (uint(&report, "requests.completed"), uint(&report, "requests.failed"));
    assert!(completed > 0 && failed > 0, "{report:#}");
    // The last scrape, after the run's end, says it ended; it may take Prometheus a moment.
    let last = |q: &str| prometheus.value(&format!("last_over_time({q}[10m])"));
    let deadline = Instant::now() + Duration::from_secs(10);
    while last("loadlab_measuring") != Some(0.0) {
        assert!(Instant::now() < deadline, "no scrape after the end reached prometheus");
        std::thread::sleep(Duration::from_millis(200));
    }
    let requests =
        |outcome: &str| last(&format!("loadlab_requests_total{{outcome=\"{outcome}\"}}"));
    assert_eq!(requests("completed"), Some(completed as f64));
    assert_eq!(requests("failed"), Some(failed as f64));
    let classes = report["errors"].as_object().expect("errors by class");
    assert!(uint(&report, "errors.client_timeout") > 0, "{report:#}");
    for (class, n) in classes {
        let got = last(&format!("loadlab_errors_total{{class=\"{class}\"}}"));
        assert_eq!(got, Some(n.as_u64().unwrap() as f64), "{class}");
    }
}

#[test]
fn a_metrics_address_in_use_is_one_line_and_exit_13_before_any_load() {
    let taken = TcpListener::bind("127.0.0.1:0").unwrap();
    let listen = taken.local_addr().unwrap().to_string();
    let server = TestServer::start(Behaviour::ok("ok"));
    let mut cmd = crate::support::loadlab();
    cmd.args(["bench", &server.url("/"), "-n", "10", "--metrics-listen", &listen]);
    let out = crate::support::output_within(cmd, crate::support::RUN_LIMIT);
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(13), "{stderr}");
    assert_eq!(
        stderr.trim_end(),
        format!(
            "loadlab: error: --metrics-listen {listen}: the address is in use (another process \
             listens there)"
        )
    );
    assert_eq!(server.requests(), 0);
}

#[test]
fn a_sweep_serves_each_step_with_its_flags_and_lingers_until_scraped() {
    let server = TestServer::start(Behaviour::ok("ok"));
    let port = free_port();
    let mut cmd = crate::support::loadlab();
    cmd.args(["sweep", &server.url("/"), "--rates", "50,100", "--step-duration", "1s"]).args([
        "--metrics-listen",
        &port.to_string(),
        "--metrics-linger",
        "60s",
    ]);
    cmd.stdout(Stdio::null()).stderr(Stdio::null());
    let mut child = cmd.spawn().unwrap();
    let addr: SocketAddr = format!("127.0.0.1:{port}").parse().unwrap();
    // Both steps judged: each has its flags, and neither is measured any more.
    let deadline = Instant::now() + Duration::from_secs(60);
    let text = loop {
        assert!(Instant::now() < deadline, "the sweep's steps were never both judged");
        std::thread::sleep(Duration::from_millis(300));
        let Some(text) = get(addr, "/metrics") else { continue };
        let judged = |load: &str| {
            text.lines().any(|l| {
                l.starts_with("loadlab_trust_flag{") && l.contains(&format!("load=\"{load}\""))
            })
        };
        let measuring =
            text.lines().any(|l| l.starts_with("loadlab_measuring{") && l.ends_with(" 1"));
        if judged("rate=50/s") && judged("rate=100/s") && !measuring {
            break text;
        }
    };
    assert!(text.contains("flag=\"schedule_missed\""), "{text}");
    // The first scrape after the sweep printed its table reads the final figures: it exits
    // then, well before its 60 s of lingering.
    crate::support::scrape::scraped_until_it_exits(&mut child, addr, Duration::from_secs(20));
}
