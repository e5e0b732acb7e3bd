//! Caddy on the lab's real server: static files and php-fpm behind it, with a certificate from
//! the instance's CA, HTTP/1.1, HTTP/2 and HTTP/3 (announced by Alt-Svc) on one port; verify
//! proves each (a GET over QUIC for HTTP/3), the engine loads it over h1 and h2, Caddy's
//! access log names the protocol of every request, and the keep-alive knobs Go's server has no
//! setting for are refused.

use serde_json::Value;

use super::stacks::{exercise, ASPECTS, PHP, PHPINFO, STATIC};
use super::tls::{bench_over_h2, passed, stderr};
use super::{require_stack, TestLab};
use crate::support::{run_json, skip::servers_required, Skip};

/// The `request.proto` of every line of Caddy's JSON access log.
fn logged_protocols(up: &Value) -> Vec<String> {
    let run = up["run_dir"].as_str().expect("run_dir");
    let log = std::fs::read_to_string(format!("{run}/logs/caddy-access.log")).expect("access log");
    log.lines()
        .map(|line| {
            let entry: Value = serde_json::from_str(line).expect("a JSON line");
            entry["request"]["proto"].as_str().expect("proto").to_string()
        })
        .collect()
}

#[test]
fn caddy_fpm_serves_h1_h2_and_offers_h3_on_one_port() {
    let knobs = ["--tls", "on", "--http2", "on", "--access-log", "on"];
    let (lab, up) = require_stack!("caddy-fpm", &knobs);
    let url = up["url"].as_str().expect("url").to_string();
    let port = url.rsplit(':').next().unwrap().trim_end_matches('/').to_string();
    assert!(passed(&up, "tls").contains("ALPN h2,"), "{up:#}");
    assert!(passed(&up, "http2").starts_with("h2 by ALPN: SETTINGS"), "{up:#}");
    assert_eq!(
        passed(&up, "http3"),
        format!(
            "Alt-Svc offers h3=\":{port}\"; /hello.txt over HTTP/3: status 200, 13 body bytes, \
             Server Caddy"
        )
    );
    assert!(passed(&up, "hello.txt").ends_with("Server Caddy"), "{up:#}");
    assert!(passed(&up, "php").contains("as fpm-fcgi"), "{up:#}");

    // Verify's own GET over QUIC is in Caddy's log as HTTP/3.
    let verified = logged_protocols(&up);
    assert!(verified.iter().any(|p| p == "HTTP/3.0"), "{verified:?}");
    let before = verified.len();
    bench_over_h2(&up);
    let ca = up["cacert"].as_str().expect("the instance's CA");
    let args = ["bench", &format!("{url}hello.txt"), "-n", "30", "-c", "2", "--cacert", ca];
    let (report, output) = run_json(&args);
    assert_eq!(output.status.code(), Some(0), "{report:#}");
    assert_eq!(report["protocol"], "http/1.1", "{report:#}");
    assert_eq!(report["requests"]["completed"], 30, "{report:#}");
    // Two h2 benches of 50 requests, then 30 over HTTP/1.1, each logged as it ended.
    let after = logged_protocols(&up);
    let new = &after[before..];
    assert_eq!(new.len(), 130, "{new:?}");
    assert!(new[..100].iter().all(|p| p == "HTTP/2.0"), "{new:?}");
    assert!(new[100..].iter().all(|p| p == "HTTP/1.1"), "{new:?}");

    let id = up["id"].as_str().unwrap().to_string();
    let show = lab.json(&["stack", "show", &id, "--json"]);
    assert_eq!(show["tls"]["terminator"], "caddy", "{show:#}");
    assert_eq!(show["tls"]["protocols"], serde_json::json!(["h3", "h2", "http/1.1"]), "{show:#}");
    exercise(lab, up, &[STATIC, PHP, ASPECTS, &["php", "tls", "http2", "http3"]], Some(PHPINFO));
}

/// `bench --http3` against Caddy: every request over QUIC on streams of its connections, each
/// answered whole, each in Caddy's access log as HTTP/3.0; offered h3 by Alt-Svc first, which
/// one request over TCP asked.
#[test]
fn caddy_serves_bench_over_http3_and_logs_each_request_as_http3() {
    let (_lab, up) = require_stack!("caddy", &["--tls", "on", "--access-log", "on"]);
    let url = up["url"].as_str().expect("url").to_string();
    let ca = up["cacert"].as_str().expect("the instance's CA");
    let before = logged_protocols(&up).len();
    let args = [
        "bench",
        &format!("{url}hello.txt"),
        "-n",
        "60",
        "-c",
        "2",
        "--http3",
        "--streams",
        "3",
        "--cacert",
        ca,
        "--expect-status",
        "200",
    ];
    let (report, output) = run_json(&args);
    assert_eq!(output.status.code(), Some(0), "{report:#}");
    assert_eq!(report["protocol"], "h3", "{report:#}");
    assert_eq!(report["requests"]["completed"], 60, "{report:#}");
    assert_eq!(report["requests"]["failed"], 0, "{report:#}");
    assert_eq!(report["status"]["200"], 60, "{report:#}");
    assert_eq!(report["body_length"]["first"], 13, "{report:#}");
    assert_eq!(report["server"]["software"], "Caddy", "{report:#}");
    // The offer asked over TCP (HTTP/1.1) and over QUIC, then the 60 requests.
    let new = logged_protocols(&up)[before..].to_vec();
    assert_eq!(new.len(), 62, "{new:?}");
    assert_eq!(new.iter().filter(|p| *p == "HTTP/1.1").count(), 1, "{new:?}");
    assert!(new[2..].iter().all(|p| p == "HTTP/3.0"), "{new:?}");
}

/// Without TLS, Caddy serves HTTP/1.1 (and h2c beside it) and no HTTP/3, which needs TLS.
#[test]
fn caddy_without_tls_serves_h1_and_h2c_and_no_h3() {
    let (lab, up) = require_stack!("caddy", &["--http2", "on", "--gzip", "on"]);
    assert!(up["url"].as_str().unwrap().starts_with("http://"), "{up:#}");
    assert!(passed(&up, "http2").starts_with("h2c with prior knowledge: SETTINGS"), "{up:#}");
    assert_eq!(passed(&up, "gzip"), "/robots.txt is gzipped");
    exercise(lab, up, &[STATIC, ASPECTS, &["http2"]], None);
}

/// Go's server has no keep-alive off and no per-connection request limit: refused with that
/// reason as a usage error, before anything starts. With TLS, `stack up` says where HTTP/3 is.
#[test]
fn caddy_refuses_the_keepalive_knobs_it_has_no_setting_for() {
    let lab = TestLab::new();
    let output = lab.run(&["stack", "up", "caddy", "--tls", "on"]);
    if output.status.code() == Some(4) {
        assert!(!servers_required(), "CI must run caddy: {}", stderr(&output));
        return Skip(stderr(&output)).report();
    }
    let text = String::from_utf8_lossy(&output.stdout);
    assert!(text.contains("HTTP/3: QUIC on UDP port "), "{text}{}", stderr(&output));
    lab.down("caddy-1");
    for (knob, value, said) in [
        ("--keepalive", "off", "--keepalive: caddy runs Caddy, which has no keep-alive off"),
        ("--keepalive-requests", "5", "--keepalive-requests: caddy runs Caddy, which has no per"),
    ] {
        let output = lab.run(&["stack", "up", "caddy", knob, value]);
        assert_eq!(output.status.code(), Some(2), "{}", stderr(&output));
        assert!(stderr(&output).contains(said), "{}", stderr(&output));
        assert_eq!(stderr(&output).lines().count(), 1, "{}", stderr(&output));
    }
}
