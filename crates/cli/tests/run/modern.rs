//! The built-in `modern` suite's wan group for real, on its Caddy stacks over HTTP/2 and
//! HTTP/3 (`--quick`, one repetition, `hello.txt`): every cell completes its requests, the h3
//! stack's requests reach Caddy as HTTP/3.0 (its access log, read while the run lasts, since
//! the run directory goes with the stack) and the h2 stack's as HTTP/2.0, the stored cells say
//! which, and the report holds the two side by side. Needs root (the wan link), Caddy and
//! php-fpm: a visible skip without them, a failure in CI.

use std::collections::BTreeMap;
use std::path::Path;
use std::time::{Duration, Instant};

use loadlab_store::{metric, RunId, Store};

use super::Scratch;
use crate::support::skip::{self, servers_required, Skip};

const KEEP: [&str; 2] = ["caddy-fpm-h2-wan", "caddy-fpm-h3-wan"];
/// Two stack starts behind the link and six cells of at most 200 requests: about 30 s here.
const WHOLE_RUN: Duration = Duration::from_secs(300);
/// Requests that may end after the last reading of a log (every 20 ms) before its stack's
/// run directory is removed: at the link's 250 requests a second, about five.
const UNREAD: f64 = 10.0;

/// The built-in suite's file with only the stacks of `KEEP` (their access logs on) and the
/// workload `hello.txt`.
fn modern_wan_caddy() -> String {
    let path = concat!(env!("CARGO_MANIFEST_DIR"), "/../suite/suites/modern.toml");
    let text = std::fs::read_to_string(path).expect("the built-in suite's file");
    let kept: Vec<String> = text
        .split("\n\n")
        .filter(|part| {
            let stack = part.starts_with("[[stacks]]");
            let workload = part.contains("[[workloads]]");
            (!stack || KEEP.iter().any(|k| part.contains(&format!("\"{k}\""))))
                && (!workload || part.contains("name = \"hello.txt\""))
        })
        .map(|part| {
            let stack = part.starts_with("[[stacks]]");
            if stack {
                format!("{part}\naccess_log = true")
            } else {
                part.to_string()
            }
        })
        .collect();
    assert_eq!(kept.iter().filter(|p| p.starts_with("[[stacks]]")).count(), 2, "{text}");
    kept.join("\n\n").replace("name = \"modern\"", "name = \"modern-wan-caddy\"")
}

/// Each Caddy access log under `run_root` as it is now, kept in `logs` when longer. A log is
/// known by its first line (its first request's time and ids), as the second stack may reuse
/// the first one's instance id once that is down.
fn read_logs(run_root: &Path, logs: &mut BTreeMap<String, String>) {
    let Ok(instances) = std::fs::read_dir(run_root) else { return };
    for instance in instances.flatten() {
        let log = instance.path().join("logs/caddy-access.log");
        let Ok(text) = std::fs::read_to_string(&log) else { continue };
        let Some((first, _)) = text.split_once('\n') else { continue };
        let kept = logs.entry(first.to_string()).or_default();
        if text.len() > kept.len() {
            *kept = text;
        }
    }
}

/// How many of a log's requests each protocol carried (`request.proto`).
fn protocols(log: &str) -> BTreeMap<String, f64> {
    let mut counts = BTreeMap::new();
    for line in log.lines() {
        let Ok(entry) = serde_json::from_str::<serde_json::Value>(line) else { continue };
        let proto = entry["request"]["proto"].as_str().unwrap_or("?").to_string();
        *counts.entry(proto).or_insert(0.0) += 1.0;
    }
    counts
}

#[test]
fn modern_behind_wan_loads_caddy_over_h2_and_h3_side_by_side() {
    if !crate::support::sys::is_root() {
        assert!(!servers_required(), "CI must run the wan suite test as root");
        Skip("network profiles need root".into()).report();
        return;
    }
    let scratch = Scratch::new();
    let list = scratch.json(&["stack", "list", "--json"]);
    let stacks = list["stacks"].as_array().expect("stacks");
    let caddy = stacks.iter().find(|s| s["name"] == "caddy-fpm").expect("the caddy-fpm stack");
    let missing: Vec<&str> =
        caddy["missing"].as_array().expect("missing").iter().filter_map(|p| p.as_str()).collect();
    if !missing.is_empty() {
        skip::missing("caddy-fpm", &missing.join(" ")).report();
        return;
    }
    // Others may reach the state directory, so its run root is inside it (lab::state).
    use std::os::unix::fs::PermissionsExt;
    let top = scratch.state().parent().expect("the scratch directory").to_path_buf();
    std::fs::set_permissions(&top, std::fs::Permissions::from_mode(0o755)).expect("chmod");
    let run_root = scratch.state().join("run");

    let suite = scratch.write("modern-wan-caddy.toml", &modern_wan_caddy());
    let out = scratch.out().display().to_string();
    let args = ["run", "--suite", &suite, "--quick", "--repetitions", "1", "--out", &out];
    let mut child = scratch
        .command(&args)
        .stdout(std::process::Stdio::piped())
        .stderr(std::process::Stdio::piped())
        .spawn()
        .expect("loadlab run");
    let (started, mut logs) = (Instant::now(), BTreeMap::new());
    while child.try_wait().expect("the run's status").is_none() {
        if started.elapsed() > WHOLE_RUN {
            let _ = child.kill();
            panic!("the run took over {WHOLE_RUN:?}");
        }
        read_logs(&run_root, &mut logs);
        std::thread::sleep(Duration::from_millis(20));
    }
    let ran = child.wait_with_output().expect("the run's output");
    let stdout = String::from_utf8_lossy(&ran.stdout).into_owned();
    let stderr = String::from_utf8_lossy(&ran.stderr);
    assert!(ran.status.success(), "{:?}\n{stdout}\n{stderr}", ran.status);

    let store = Store::open(scratch.db()).expect("the run's store");
    let cells = store.cells(RunId(1)).expect("cells");
    assert_eq!(cells.len(), 6, "2 stacks x 3 loads of hello.txt");
    let mut completed: BTreeMap<&str, f64> = BTreeMap::new();
    for c in &cells {
        assert_eq!(c.figure(metric::FAILED), Some(0.0), "{}: {:?}", c.stack, c.metrics);
        let done = c.figure(metric::COMPLETED).unwrap_or(0.0);
        assert!(done > 0.0, "{}: {:?}", c.stack, c.metrics);
        *completed.entry(c.stack.as_str()).or_default() += done;
        let h3 = c.stack.ends_with("-h3-wan");
        assert_eq!(c.knobs.contains_key("http3"), h3, "{}: {:?}", c.stack, c.knobs);
        assert_eq!(c.knobs.contains_key("http2"), !h3, "{}: {:?}", c.stack, c.knobs);
        assert_eq!(c.knobs.get("net"), Some(&serde_json::json!("wan")), "{:?}", c.knobs);
    }

    // The h3 stack offers no h2 (http2 is off): its log is the one without HTTP/2.0.
    assert_eq!(logs.len(), 2, "one log per stack: {logs:?}");
    let counts: Vec<BTreeMap<String, f64>> = logs.values().map(|l| protocols(l)).collect();
    let (h3, h2) = match counts.iter().position(|c| !c.contains_key("HTTP/2.0")) {
        Some(0) => (&counts[0], &counts[1]),
        Some(1) => (&counts[1], &counts[0]),
        _ => panic!("no log without HTTP/2.0: {counts:?}"),
    };
    let n = |c: &BTreeMap<String, f64>, p: &str| c.get(p).copied().unwrap_or(0.0);
    let (h3_done, h2_done) = (completed["caddy-fpm-h3-wan"], completed["caddy-fpm-h2-wan"]);
    assert!(n(h3, "HTTP/3.0") >= h3_done - UNREAD, "{h3_done} completed over h3: {h3:?}");
    assert!(n(h2, "HTTP/2.0") >= h2_done - UNREAD, "{h2_done} completed over h2: {h2:?}");
    // Verify's one GET over QUIC is all the h2 stack saw of HTTP/3.
    assert!(n(h2, "HTTP/3.0") <= 1.0, "{h2:?}");

    // The report holds the two stacks side by side.
    assert!(KEEP.iter().all(|k| stdout.contains(k)), "both stacks in the report:\n{stdout}");
    let html = std::fs::read_to_string(scratch.out().join("report.html")).expect("report.html");
    assert!(KEEP.iter().all(|k| html.contains(k)), "both stacks in report.html");
}
