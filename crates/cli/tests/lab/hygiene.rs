//! Nothing is left behind: after Ctrl-C or SIGTERM of a foreground stack, after `kill -9`
//! of the loadlab that owned one (the next start cleans it), and over repeated up/down.

use std::io::{BufRead, BufReader};
use std::process::{Child, Stdio};
use std::time::Duration;

use serde_json::Value;

use super::{assert_success, pids, running, TestLab};
use crate::support::{skip, wait_until};

/// `stack up nginx-fpm --foreground --json KNOBS` in the background: the child and its first
/// line (the JSON answer), or `None` when nginx or php-fpm is missing.
fn foreground(lab: &TestLab, knobs: &[&str]) -> Option<(Child, Value)> {
    let mut args = vec!["stack", "up", "nginx-fpm", "--foreground", "--json"];
    args.extend_from_slice(knobs);
    let mut command = lab.command(&args);
    command.stdout(Stdio::piped()).stderr(Stdio::piped());
    let mut child = command.spawn().expect("spawn stack up --foreground");
    let mut line = String::new();
    BufReader::new(child.stdout.take().unwrap()).read_line(&mut line).expect("read stdout");
    if line.is_empty() {
        let status = child.wait().expect("wait");
        let mut err = String::new();
        let _ = std::io::Read::read_to_string(&mut child.stderr.take().unwrap(), &mut err);
        if status.code() == Some(4) {
            skip::missing("nginx-fpm", "nginx php-fpm").report();
            return None;
        }
        panic!("stack up --foreground: {status}\n{err}");
    }
    Some((child, serde_json::from_str(&line).expect("JSON line")))
}

fn signal(child: &Child, signal: i32) {
    crate::support::sys::signal_child(child, signal).expect("signal to loadlab");
}

#[test]
fn ctrl_c_and_sigterm_take_a_foreground_stack_down() {
    for sig in [libc::SIGINT, libc::SIGTERM] {
        let lab = TestLab::new();
        let Some((mut child, up)) = foreground(&lab, &[]) else { return };
        let pids = pids(&up);
        assert!(running(&pids).len() == pids.len(), "{up:#}");
        signal(&child, sig);
        let status = child.wait().expect("wait");
        assert!(status.success(), "signal {sig}: {status}");
        assert!(running(&pids).is_empty(), "signal {sig} left {:?}", running(&pids));
    }
}

/// Behind the `wan` profile through loadlab's delay stage (as root; the link and its stage are
/// part of what a killed loadlab leaves and the next start removes), on loopback otherwise.
#[test]
fn a_killed_loadlabs_stack_is_cleaned_by_the_next_start() {
    let lab = TestLab::new();
    let root = crate::support::sys::is_root();
    let knobs: &[&str] = if root { &["--net", "wan,via=stage"] } else { &[] };
    let Some((mut child, up)) = foreground(&lab, knobs) else { return };
    let pids = pids(&up);
    let link = up["net"].clone();
    assert_eq!(link.is_object(), root, "{up:#}");
    let stage = link["stage"].as_i64().map(|p| p as i32);
    signal(&child, libc::SIGKILL);
    child.wait().expect("wait");
    // The servers outlive their owner (they lead their own sessions)...
    assert_eq!(running(&pids).len(), pids.len());
    let list = lab.json(&["stack", "list", "--json"]);
    assert_eq!(list["instances"][0]["health"], "stale", "{list:#}");
    let doctor = lab.json(&["doctor", "--json"]);
    assert_eq!(doctor["stale"], serde_json::json!([up["id"]]), "{doctor:#}");
    if let Some(ns) = link["namespace"].as_str() {
        // Its namespace goes with it at the next start: stale, not a leftover to delete.
        let all = doctor["network_profiles"]["namespaces"].as_array().unwrap();
        let entry = all.iter().find(|n| n["name"] == ns).expect("doctor lists its namespace");
        assert_eq!((&entry["state"], &entry["instance"]), (&"stale".into(), &up["id"]));
    }
    // ...until the next start of any stack.
    if let Some(stage) = stage {
        assert_eq!(running(&[stage]), [stage], "the delay stage outlives its owner too");
    }
    let next = lab.up("nginx", &[]);
    assert!(running(&pids).is_empty(), "left: {:?}", running(&pids));
    if let Some(link) = link.as_object() {
        // By its namespace (this lab's alone) and its stage: the device's name may already be
        // another test's link.
        let ns = link["namespace"].as_str().unwrap();
        assert!(!std::path::Path::new("/run/netns").join(ns).exists(), "{ns} left");
        let stage = stage.expect("wan has a delay stage");
        assert!(
            wait_until(Duration::from_secs(5), || running(&[stage]).is_empty()),
            "the delay stage outlived the cleanup"
        );
    }
    let list = lab.json(&["stack", "list", "--json"]);
    let ids: Vec<&Value> = list["instances"].as_array().unwrap().iter().map(|i| &i["id"]).collect();
    assert_eq!(ids, vec![&next["id"]], "{list:#}");
    lab.down(next["id"].as_str().unwrap());
}

#[test]
fn repeated_up_and_down_leave_nothing() {
    let lab = TestLab::new();
    let mut all = Vec::new();
    for _ in 0..5 {
        let output = lab.run(&["stack", "up", "nginx-fpm", "--json"]);
        if output.status.code() == Some(4) {
            skip::missing("nginx-fpm", "nginx php-fpm").report();
            return;
        }
        assert_success(&output, &["stack", "up", "nginx-fpm"]);
        let up: Value = serde_json::from_slice(&output.stdout).unwrap();
        // The id is free again after each down.
        assert_eq!(up["id"], "nginx-fpm-1");
        all.extend(pids(&up));
        lab.down("nginx-fpm-1");
        assert!(running(&all).is_empty(), "left: {:?}", running(&all));
    }
}

#[test]
fn down_all_stops_every_instance() {
    let lab = TestLab::new();
    let output = lab.run(&["stack", "up", "nginx", "--json"]);
    if output.status.code() == Some(4) {
        skip::missing("nginx", "nginx").report();
        return;
    }
    let a: Value = serde_json::from_slice(&output.stdout).unwrap();
    let b = lab.up("nginx", &["--workers", "1"]);
    assert_eq!((a["id"].as_str(), b["id"].as_str()), (Some("nginx-1"), Some("nginx-2")));
    let out = lab.run(&["stack", "down", "--all"]);
    assert_success(&out, &["stack", "down", "--all"]);
    let both: Vec<i32> = pids(&a).into_iter().chain(pids(&b)).collect();
    assert!(wait_until(Duration::from_secs(30), || running(&both).is_empty()));
    assert_eq!(String::from_utf8_lossy(&out.stdout), "nginx-1 down\nnginx-2 down\n");
}

#[test]
fn ctrl_c_while_starting_tears_down_what_had_started() {
    let lab = TestLab::new();
    let run_root = lab.json(&["doctor", "--json"])["run_dir"].as_str().unwrap().to_string();
    // A database stack takes long enough to start that the signal lands midway: after
    // MariaDB, before the front tier.
    let mut command = lab.command(&["stack", "up", "wordpress-nginx-fpm", "--json"]);
    command.stdout(Stdio::piped()).stderr(Stdio::piped());
    let mut child = command.spawn().expect("spawn stack up");
    let started = wait_until(Duration::from_secs(60), || {
        !in_run_root(&run_root).is_empty() || child.try_wait().ok().flatten().is_some()
    });
    assert!(started);
    signal(&child, libc::SIGINT);
    let status = child.wait().expect("wait");
    match status.code() {
        Some(130) => {}
        // Too late: it had come up and verified before the signal.
        Some(0) => assert_success(&lab.run(&["stack", "down", "--all"]), &["stack", "down"]),
        Some(4) => {
            skip::missing("wordpress-nginx-fpm", "the lab's packages").report();
            return;
        }
        other => panic!("stack up ended with {other:?}"),
    }
    assert!(
        wait_until(Duration::from_secs(30), || in_run_root(&run_root).is_empty()),
        "left: {:?}",
        in_run_root(&run_root)
    );
    let list = lab.json(&["stack", "list", "--json"]);
    assert_eq!(list["instances"], serde_json::json!([]), "{list:#}");
}

/// Live processes whose command line names a directory under `run_root`.
fn in_run_root(run_root: &str) -> Vec<i32> {
    let needle = format!("{run_root}/");
    let pids: Vec<i32> = std::fs::read_dir("/proc")
        .unwrap()
        .filter_map(|e| e.ok()?.file_name().to_str()?.parse().ok())
        .filter(|pid| {
            std::fs::read(format!("/proc/{pid}/cmdline"))
                .is_ok_and(|c| String::from_utf8_lossy(&c).contains(&needle))
        })
        .collect();
    running(&pids)
}
