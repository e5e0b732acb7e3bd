//! A stack behind a network profile: `stack up nginx --net lan-100mbit` puts nginx in a
//! namespace of its own behind a veth shaped to 100 Mbit/s; it verifies, a bench of 100 KB
//! responses is flagged network-bound at the link's rate (the seeds' trap, named), and `stack
//! down` leaves no namespace and no veth. Needs root and iproute2 (skipped visibly without,
//! a failure in CI).

use super::TestLab;
use crate::support::{assert_success, loadlab, output_within, skip::servers_required, Skip};

/// loadlab's veths on this machine (`llvh*`).
fn veths() -> Vec<String> {
    let mut v: Vec<String> = std::fs::read_dir("/sys/class/net")
        .unwrap()
        .flatten()
        .map(|e| e.file_name().to_string_lossy().into_owned())
        .filter(|n| n.starts_with("llvh"))
        .collect();
    v.sort();
    v
}

fn namespaces() -> String {
    let out = std::process::Command::new("ip").args(["netns", "list"]).output();
    out.map(|o| String::from_utf8_lossy(&o.stdout).into_owned()).unwrap_or_default()
}

#[test]
fn a_stack_behind_lan_100mbit_is_network_bound_and_leaves_nothing() {
    // SAFETY: geteuid has no preconditions and cannot fail.
    if unsafe { libc::geteuid() } != 0 {
        assert!(!servers_required(), "CI must run the network profile test as root");
        Skip("network profiles need root".into()).report();
        return;
    }
    let lab = TestLab::new();
    let refused = lab.run(&["stack", "up", "nginx", "--net", "wan"]);
    assert_eq!(refused.status.code(), Some(2), "{refused:?}");
    assert!(String::from_utf8_lossy(&refused.stderr).contains("delay, jitter and loss"));

    let before = veths();
    let up = lab.up("nginx", &["--net", "lan-100mbit"]);
    assert_eq!(veths().len(), before.len() + 1, "one veth for the stack's link");
    let (id, url) = (up["id"].as_str().unwrap(), up["url"].as_str().unwrap().to_string());
    assert!(url.starts_with("http://10.214."), "the stack is behind its link: {url}");
    let ns = format!("loadlab-net-{id}-");
    assert!(namespaces().contains(&ns), "{}", namespaces());

    let mut bench = loadlab();
    bench.args(["bench", &format!("{url}100k.bin"), "-c", "10", "-d", "2s"]);
    bench.args(["--expect-status", "200", "--format", "json", "--quiet"]);
    let out = output_within(bench, std::time::Duration::from_secs(60));
    assert_success(&out, &["bench"]);
    let report: serde_json::Value = serde_json::from_slice(&out.stdout).unwrap();
    assert_eq!(report["client"]["network_bound"], true, "{report:#}");
    let carried = report["client"]["path"]["achieved_mbps"].as_f64().unwrap();
    assert!(carried > 60.0 && carried <= 100.0, "{carried} Mbit/s through 100: {report:#}");
    assert_eq!(report["requests"]["failed"], 0, "{report:#}");

    lab.down(id);
    assert!(!namespaces().contains(&ns), "the namespace is left: {}", namespaces());
    assert_eq!(veths(), before, "the stack's veth is left");
}
