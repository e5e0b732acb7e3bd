//! A stack behind a network profile: `stack up nginx --net lan-100mbit` puts nginx in a
//! namespace of its own behind a veth shaped to 100 Mbit/s; it verifies, a bench of 100 KB
//! responses is flagged network-bound at the link's rate (the seeds' trap, named), and `stack
//! down` leaves no namespace and no veth. Behind `wan` the link is a TUN pair with loadlab's
//! delay stage: the round trip is the profile's. Needs root and iproute2 (skipped visibly
//! without, a failure in CI).

use super::TestLab;
use std::time::Duration;

use crate::support::{
    assert_success, loadlab, output_within, skip::servers_required, wait_until, Skip,
};

/// loadlab's devices on this machine whose names start with `prefix` (`llvh`: veths, `llth`:
/// the delay stage's TUNs).
fn devices(prefix: &str) -> Vec<String> {
    let mut v: Vec<String> = std::fs::read_dir("/sys/class/net")
        .unwrap()
        .flatten()
        .map(|e| e.file_name().to_string_lossy().into_owned())
        .filter(|n| n.starts_with(prefix))
        .collect();
    v.sort();
    v
}

/// Delay stages running on this machine (`loadlab net-stage ...`), by pid.
fn stages() -> Vec<u32> {
    let mut found = Vec::new();
    for entry in std::fs::read_dir("/proc").unwrap().flatten() {
        let Ok(pid) = entry.file_name().to_string_lossy().parse::<u32>() else { continue };
        let cmdline = std::fs::read(entry.path().join("cmdline")).unwrap_or_default();
        if cmdline.split(|b| *b == 0).any(|a| a == b"net-stage") {
            found.push(pid);
        }
    }
    found
}

fn namespaces() -> String {
    let out = std::process::Command::new("ip").args(["netns", "list"]).output();
    out.map(|o| String::from_utf8_lossy(&o.stdout).into_owned()).unwrap_or_default()
}

/// `loadlab bench URL ARGS --expect-status 200 --format json`, which must succeed.
fn bench_json(url: &str, args: &[&str]) -> serde_json::Value {
    let mut bench = loadlab();
    bench.args(["bench", url]).args(args);
    bench.args(["--expect-status", "200", "--format", "json", "--quiet"]);
    let out = output_within(bench, std::time::Duration::from_secs(60));
    assert_success(&out, &["bench"]);
    serde_json::from_slice(&out.stdout).unwrap()
}

/// Whether this test runs as root, as network profiles need; a visible skip otherwise, and a
/// failure in CI.
fn as_root() -> bool {
    // SAFETY: geteuid has no preconditions and cannot fail.
    if unsafe { libc::geteuid() } != 0 {
        assert!(!servers_required(), "CI must run the network profile test as root");
        Skip("network profiles need root".into()).report();
        return false;
    }
    true
}

#[test]
fn a_stack_behind_lan_100mbit_is_network_bound_and_leaves_nothing() {
    if !as_root() {
        return;
    }
    let lab = TestLab::new();
    let up = lab.up("nginx", &["--net", "lan-100mbit"]);
    let veth = up["net"]["host_if"].as_str().unwrap().to_string();
    assert!(devices("llvh").contains(&veth), "a veth for the stack's link: {up:#}");
    let (id, url) = (up["id"].as_str().unwrap(), up["url"].as_str().unwrap().to_string());
    assert!(url.starts_with("http://10.214."), "the stack is behind its link: {url}");
    let ns = up["net"]["namespace"].as_str().unwrap().to_string();
    assert!(namespaces().contains(&ns), "{}", namespaces());

    let report = bench_json(&format!("{url}100k.bin"), &["-c", "10", "-d", "2s"]);
    assert_eq!(report["client"]["network_bound"], true, "{report:#}");
    let carried = report["client"]["path"]["achieved_mbps"].as_f64().unwrap();
    assert!(carried > 60.0 && carried <= 100.0, "{carried} Mbit/s through 100: {report:#}");
    assert_eq!(report["requests"]["failed"], 0, "{report:#}");

    // The round-trip rule's control: small responses over the same link without delay take
    // tens of microseconds of path in a median of hundreds, so the server set the rate.
    let report = bench_json(&format!("{url}hello.txt"), &["-c", "8", "-d", "1s"]);
    assert_eq!(report["client"]["network_bound"], false, "{report:#}");

    lab.down(id);
    assert!(!namespaces().contains(&ns), "the namespace is left: {}", namespaces());
    // The veth went with its namespace end (its name may already be another test's link).
}

#[test]
fn a_stack_behind_wan_answers_after_the_profiles_round_trip_and_leaves_nothing() {
    if !as_root() {
        return;
    }
    let lab = TestLab::new();
    let stages_before = stages();
    let up = lab.up("nginx", &["--net", "wan"]);
    let tun = up["net"]["host_if"].as_str().unwrap().to_string();
    assert!(devices("llth").contains(&tun), "a TUN on this side of the link: {up:#}");
    let (id, url) = (up["id"].as_str().unwrap(), up["url"].as_str().unwrap().to_string());
    let stage = up["net"]["stage"].as_u64().expect("the link's delay stage") as u32;
    assert!(stages().contains(&stage) && !stages_before.contains(&stage), "{up:#}");
    let ns = up["net"]["namespace"].as_str().unwrap().to_string();
    assert!(url.starts_with("http://10.214."), "the stack is behind its link: {url}");

    // One connection, small responses: each request is one round trip of 40 ms (20 ms each
    // way, +-2 ms of jitter) plus nginx's few microseconds. 0.1% loss may cost a retransmit
    // (200 ms) to one request in a thousand: the p50 does not see it.
    let report = bench_json(&format!("{url}hello.txt"), &["-c", "1", "-d", "2s"]);
    let p50_ms = report["latency_us"]["p50"].as_f64().unwrap() / 1000.0;
    assert!((40.0..60.0).contains(&p50_ms), "p50 {p50_ms} ms behind a 40 ms round trip");
    let idle_ms = report["client"]["path"]["idle_rtt_us"].as_f64().unwrap() / 1000.0;
    assert!((36.0..50.0).contains(&idle_ms), "handshake RTT {idle_ms} ms: {report:#}");
    assert_eq!(report["requests"]["failed"], 0, "{report:#}");
    // One connection across 40 ms carries at most 25 requests a second: the verdict says the
    // round trip set the rate, with the arithmetic.
    assert_eq!(report["client"]["network_bound"], true, "{report:#}");
    let said = report["warnings"].to_string();
    assert!(said.contains("1 connection can carry at most"), "{said}");

    lab.down(id);
    assert!(!namespaces().contains(&ns), "{}", namespaces());
    // The TUN is gone when its stage is (the stage ends only then; the name may already be
    // another test's link).
    assert!(!stages().contains(&stage), "the delay stage outlived its link");
}

/// 50 ups and downs behind a bandwidth profile (a veth) and a delay profile (TUNs and a
/// stage), alternately: after each `down` the link's namespace and stage are gone. Device
/// names are shared with the tests running beside this one (the lowest free index is reused at
/// once), so the devices are checked through what owns them: a veth whose namespace end went
/// with its namespace is deleted whole, and a stage ends only when its TUN is deleted.
#[test]
fn fifty_cycles_behind_profiles_leave_no_namespace_device_or_stage() {
    if !as_root() {
        return;
    }
    let lab = TestLab::new();
    let mut stages_seen = 0;
    for i in 0..50 {
        let profile = if i % 2 == 0 { "lan-100mbit" } else { "wan" };
        let up = lab.up("nginx", &["--net", profile]);
        assert!(up["checks"].as_array().unwrap().iter().all(|c| c["ok"] == true), "{up:#}");
        let ns = up["net"]["namespace"].as_str().unwrap().to_string();
        let stage = up["net"]["stage"].as_u64().map(|p| p as u32);
        assert_eq!(stage.is_some(), profile == "wan", "{up:#}");
        lab.down(up["id"].as_str().unwrap());
        assert!(!namespaces().lines().any(|l| l.split_whitespace().next() == Some(&ns)), "{ns}");
        if let Some(stage) = stage {
            stages_seen += 1;
            let gone = || !stages().contains(&stage);
            assert!(wait_until(Duration::from_secs(5), gone), "cycle {i}: stage {stage} left");
        }
    }
    assert_eq!(stages_seen, 25);
}
