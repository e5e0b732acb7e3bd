//! The knobs the seeds' experiments set, observed from outside the servers: access logs that
//! gain a line per request (and none when off), keep-alive connections closed after N
//! requests or after their idle timeout, and PHP's process count apart from the web tier's.

use std::io::{Read, Write};
use std::net::TcpStream;
use std::path::{Path, PathBuf};
use std::time::{Duration, Instant};

use serde_json::Value;

use super::{require_stack, TestLab};
use crate::support::{run_json, wait_until};

/// The leader pid of `tier` in an `up --json` answer.
fn tier_pid(up: &Value, tier: &str) -> i32 {
    let tiers = up["tiers"].as_array().expect("tiers");
    let found = tiers.iter().find(|t| t["name"] == tier);
    found.and_then(|t| t["pid"].as_i64()).unwrap_or_else(|| panic!("no {tier} in {up:#}")) as i32
}

/// The live children of `pid`: a pool's workers under its master.
fn children(pid: i32) -> usize {
    loadlab_lab::procfs::all().iter().filter(|p| p.ppid == pid && !p.is_zombie()).count()
}

/// The text `stack show` captured as `what` (`apache2.conf`, `php-fpm -tt`).
fn captured(lab: &TestLab, up: &Value, what: &str) -> String {
    let show = lab.json(&["stack", "show", up["id"].as_str().expect("id"), "--json"]);
    let found = show["captured"].as_array().expect("captured").iter().find(|c| c["what"] == what);
    found.and_then(|c| c["text"].as_str()).unwrap_or_else(|| panic!("no {what}: {show:#}")).into()
}

fn url(up: &Value, path: &str) -> String {
    format!("{}{path}", up["url"].as_str().expect("url").trim_end_matches('/'))
}

fn port(up: &Value) -> u16 {
    let url = up["url"].as_str().expect("url");
    url.trim_end_matches('/').rsplit(':').next().and_then(|p| p.parse().ok()).expect("port")
}

/// `loadlab bench URL -n N -c 1` with keep-alive; its JSON report, all answers 200.
fn bench(url: &str, n: u32) -> Value {
    let n = n.to_string();
    let (report, output) = run_json(&["bench", url, "-n", &n, "-c", "1", "--expect-status", "200"]);
    assert_eq!(output.status.code(), Some(0), "{report:#}");
    assert_eq!(report["requests"]["failed"], 0, "{report:#}");
    report
}

fn connections_opened(report: &Value) -> u64 {
    report["connections"]["opened"].as_u64().expect("connections.opened")
}

/// The instance's access log of `tier`, where the lab writes it.
fn access_log(up: &Value, tier: &str) -> PathBuf {
    Path::new(up["run_dir"].as_str().expect("run_dir")).join(format!("logs/{tier}-access.log"))
}

fn lines(path: &Path) -> usize {
    std::fs::read_to_string(path).map_or(0, |text| text.lines().count())
}

/// Waits for `log` to hold `expected` lines: a server writes a request's line just after its
/// response, so the client may see the answer a moment before the line lands.
#[track_caller]
fn assert_lines(log: &Path, expected: usize) {
    wait_until(Duration::from_secs(5), || lines(log) >= expected);
    // A little longer, so that a line too many would show.
    std::thread::sleep(Duration::from_millis(100));
    assert_eq!(lines(log), expected, "{}:\n{}", log.display(), read(log));
}

fn read(path: &Path) -> String {
    std::fs::read_to_string(path).unwrap_or_default()
}

/// Sends one kept-alive GET of `/hello.txt` (13 bytes), reads the answer, then waits for the
/// server to close the idle connection: how long it waited, or `None` if it did not within
/// `limit`.
fn idle_close(port: u16, limit: Duration) -> Option<Duration> {
    let mut stream = TcpStream::connect(("127.0.0.1", port)).expect("connect");
    stream.set_read_timeout(Some(limit)).unwrap();
    let request = format!("GET /hello.txt HTTP/1.1\r\nHost: 127.0.0.1:{port}\r\n\r\n");
    stream.write_all(request.as_bytes()).unwrap();
    let mut answer = Vec::new();
    let mut buf = [0u8; 4096];
    while !answer.ends_with(b"\r\n\r\nhello, world!") {
        let n = stream.read(&mut buf).expect("read the answer");
        assert!(n > 0, "closed before the answer: {}", String::from_utf8_lossy(&answer));
        answer.extend_from_slice(&buf[..n]);
    }
    let idle = Instant::now();
    match stream.read(&mut buf) {
        // EOF, or a reset: either way the server ended the connection.
        Ok(0) => Some(idle.elapsed()),
        Err(e) if e.kind() == std::io::ErrorKind::ConnectionReset => Some(idle.elapsed()),
        Ok(n) => panic!("unexpected bytes after the answer: {:?}", &buf[..n]),
        Err(_) => None,
    }
}

/// Closed after about `timeout`: the servers check idle connections on timers, so allow a
/// little early and a lot late, but nowhere near the 15 s default.
#[track_caller]
fn assert_closes_after(port: u16, timeout: Duration) {
    let waited = idle_close(port, Duration::from_secs(8)).expect("still open after 8 s");
    assert!(waited >= timeout.mul_f64(0.8) && waited < Duration::from_secs(6), "{waited:?}");
}

#[test]
fn access_logs_of_nginx_and_apache_gain_a_line_per_request() {
    let (_lab, up) = require_stack!("nginx-proxy-apache", &["--access-log", "on"]);
    assert_eq!(up["knobs"]["access_log"], "on", "{up:#}");
    let (nginx, apache) = (access_log(&up, "nginx"), access_log(&up, "apache"));
    // Verify's own requests are logged too: count from here.
    let (n0, a0) = (lines(&nginx), lines(&apache));
    assert!(n0 > 0 && a0 > 0, "verify's requests were not logged");
    // nginx serves static files itself and hands .php to Apache: both log the PHP requests.
    bench(&url(&up, "/hello.txt"), 10);
    assert_lines(&nginx, n0 + 10);
    assert_lines(&apache, a0);
    bench(&url(&up, "/hello.php"), 4);
    assert_lines(&nginx, n0 + 14);
    assert_lines(&apache, a0 + 4);
    assert!(read(&nginx).lines().last().unwrap().contains("\"GET /hello.php HTTP/1.1\" 200"));
    assert!(read(&apache).lines().last().unwrap().contains("\"GET /hello.php HTTP/1.1\" 200"));
}

#[test]
fn by_default_no_access_log_and_every_request_on_one_connection() {
    let (_lab, up) = require_stack!("apache-prefork-modphp", &[]);
    assert_eq!(up["knobs"]["access_log"], "off", "{up:#}");
    let report = bench(&url(&up, "/hello.txt"), 10);
    assert_eq!(connections_opened(&report), 1, "{report:#}");
    let logs = Path::new(up["run_dir"].as_str().unwrap()).join("logs");
    let names: Vec<String> = std::fs::read_dir(&logs)
        .expect("the logs directory")
        .map(|e| e.unwrap().file_name().to_string_lossy().into_owned())
        .collect();
    assert!(names.iter().all(|n| !n.contains("access")), "{names:?}");
}

#[test]
fn behind_varnish_nginx_logs_only_the_misses_and_idle_clients_are_closed() {
    let knobs = ["--access-log", "on", "--keepalive-timeout", "1s"];
    let (_lab, up) = require_stack!("varnish-nginx-fpm", &knobs);
    let nginx = access_log(&up, "nginx");
    let before = lines(&nginx);
    // Verify left /hello.txt in the cache: Varnish answers all of these itself.
    bench(&url(&up, "/hello.txt"), 10);
    assert_lines(&nginx, before);
    // Varnish's timeout_idle, not nginx's, ends an idle client connection.
    assert_closes_after(port(&up), Duration::from_secs(1));
}

#[test]
fn keepalive_requests_closes_nginx_connections_after_n() {
    let (_lab, up) = require_stack!("nginx", &["--keepalive-requests", "2"]);
    assert_eq!(up["knobs"]["keepalive_requests"], 2, "{up:#}");
    let report = bench(&url(&up, "/hello.txt"), 10);
    assert_eq!(connections_opened(&report), 5, "{report:#}");
    assert_eq!(report["requests"]["completed"], 10, "{report:#}");
}

#[test]
fn keepalive_requests_and_timeout_in_apache() {
    let knobs = ["--keepalive-requests", "2", "--keepalive-timeout", "1500ms"];
    let (lab, up) = require_stack!("apache-prefork-modphp", &knobs);
    assert_eq!(up["knobs"]["keepalive_timeout"], "1500ms", "{up:#}");
    let report = bench(&url(&up, "/hello.php"), 10);
    assert_eq!(connections_opened(&report), 5, "{report:#}");
    assert_closes_after(port(&up), Duration::from_millis(1500));
    // The effective config says so too: Apache counts the requests after the first.
    let conf = captured(&lab, &up, "apache2.conf");
    assert!(conf.contains("KeepAliveTimeout 1500ms\nMaxKeepAliveRequests 1\n"), "{conf}");
}

#[test]
fn keepalive_timeout_closes_idle_nginx_connections() {
    let (_lab, up) = require_stack!("nginx", &["--keepalive-timeout", "1s"]);
    assert_closes_after(port(&up), Duration::from_secs(1));
}

#[test]
fn php_workers_size_php_fpm_apart_from_nginx_workers() {
    let (lab, up) = require_stack!("nginx-fpm", &["--workers", "2", "--php-workers", "3"]);
    assert_eq!((&up["knobs"]["workers"], &up["knobs"]["php_workers"]), (&2.into(), &3.into()));
    assert_eq!(children(tier_pid(&up, "nginx")), 2, "nginx workers");
    assert_eq!(children(tier_pid(&up, "php-fpm")), 3, "php-fpm children");
    // The effective pool settings, as php-fpm itself reports them.
    let tt = captured(&lab, &up, "php-fpm -tt");
    assert!(tt.contains("pm.max_children = 3"), "{tt}");
}

#[test]
fn php_workers_size_spawn_fcgi_apart_from_nginx_workers() {
    let (_lab, up) = require_stack!("nginx-spawn-fcgi", &["--workers", "1", "--php-workers", "4"]);
    assert_eq!(children(tier_pid(&up, "nginx")), 1, "nginx workers");
    // php-cgi forks its children after binding the socket, so they may still be coming.
    let php = tier_pid(&up, "spawn-fcgi");
    wait_until(Duration::from_secs(5), || children(php) >= 4);
    assert_eq!(children(php), 4, "php-cgi children");
}

#[test]
fn knobs_that_do_not_apply_are_usage_errors() {
    let lab = TestLab::new();
    for (args, message) in [
        (&["nginx", "--php-workers", "2"][..], "--php-workers: nginx runs no PHP"),
        (&["apache-prefork-modphp", "--php-workers", "2"], "mod_php"),
        (&["nginx", "--keepalive", "off", "--keepalive-requests", "2"], "keep-alive is off"),
        (&["nginx", "--keepalive", "off", "--keepalive-timeout", "5s"], "keep-alive is off"),
        (&["nginx", "--keepalive-requests", "0"], "must be at least 1"),
        (&["varnish-nginx-fpm", "--keepalive-requests", "2"], "no per-connection request limit"),
        (&["mariadb", "--access-log", "on"], "--access-log: mariadb serves no HTTP"),
        (&["nginx", "--keepalive-timeout", "0s"], "above zero"),
        (&["nginx", "--keepalive-timeout", "soon"], "invalid duration"),
        (&["nginx", "--access-log", "yes"], "expected on or off"),
    ] {
        let mut full = vec!["stack", "up"];
        full.extend_from_slice(args);
        let output = lab.run(&full);
        let stderr = String::from_utf8_lossy(&output.stderr);
        assert_eq!(output.status.code(), Some(2), "{args:?}: {stderr}");
        assert!(stderr.contains(message), "{args:?}: {stderr}");
    }
}
