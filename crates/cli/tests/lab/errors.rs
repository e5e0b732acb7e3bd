//! The lab's errors reach the user with their exit codes: a missing package names the
//! apt-get command (4), a stack that cannot start or verify says which tier or workload
//! (5), bad names and knobs are usage errors (2).

use std::net::TcpListener;

use super::{pids, running, TestLab};
use crate::support::skip;

fn stderr(output: &std::process::Output) -> String {
    String::from_utf8_lossy(&output.stderr).into_owned()
}

#[test]
fn a_missing_package_is_named_with_its_apt_get_command() {
    let lab = TestLab::new();
    let empty = tempfile::tempdir().unwrap();
    let output = lab
        .command(&["stack", "up", "nginx"])
        .env("LOADLAB_SEARCH_PATH", empty.path())
        .output()
        .expect("run loadlab");
    assert_eq!(output.status.code(), Some(4), "{}", stderr(&output));
    assert!(stderr(&output).contains("apt-get install nginx"), "{}", stderr(&output));
}

#[test]
fn unknown_stacks_ids_and_knobs_are_usage_errors() {
    let lab = TestLab::new();
    for args in [
        &["stack", "up", "no-such-stack"][..],
        &["stack", "verify", "nginx-9"],
        &["stack", "down", "nginx-9"],
        &["stack", "up", "nginx", "--opcache", "off"],
        &["stack", "up", "nginx", "--db", "on"],
        &["stack", "up", "nginx", "--cpus", "3-1"],
    ] {
        let output = lab.run(args);
        assert_eq!(output.status.code(), Some(2), "{args:?}: {}", stderr(&output));
        assert!(
            stderr(&output).starts_with("loadlab: error:") || stderr(&output).contains("error:"),
            "{args:?}"
        );
    }
}

#[test]
fn a_taken_port_fails_the_start_naming_the_tier_and_leaves_nothing() {
    let lab = TestLab::new();
    let taken = TcpListener::bind("127.0.0.1:0").unwrap();
    let port = taken.local_addr().unwrap().port().to_string();
    let output = lab.run(&["stack", "up", "nginx", "--port", &port]);
    if output.status.code() == Some(4) {
        skip::missing("nginx", "nginx").report();
        return;
    }
    assert_eq!(output.status.code(), Some(5), "{}", stderr(&output));
    assert!(stderr(&output).contains("nginx did not start"), "{}", stderr(&output));
    assert!(stderr(&output).contains("in use"), "{}", stderr(&output));
    assert_eq!(stderr(&output).lines().count(), 1, "{}", stderr(&output));
    let list = lab.json(&["stack", "list", "--json"]);
    assert_eq!(list["instances"], serde_json::json!([]), "{list:#}");
}

/// `stack up nginx --port P` twice: the second start names the instance that holds the port,
/// in one line, instead of a page of nginx's bind retries.
#[test]
fn a_port_held_by_an_instance_is_refused_naming_it() {
    let (lab, up) = match super::TestLab::up_or_skip("nginx", &[]) {
        Ok(up) => up,
        Err(skip) => return skip.report(),
    };
    let id = up["id"].as_str().expect("an id");
    let port = up["url"].as_str().and_then(|u| u.rsplit(':').next()).expect("a url");
    let port = port.trim_end_matches('/');
    let output = lab.run(&["stack", "up", "nginx", "--port", port]);
    assert_eq!(output.status.code(), Some(5), "{}", stderr(&output));
    let message = stderr(&output);
    assert_eq!(message.lines().count(), 1, "{message}");
    assert!(message.contains(&format!("127.0.0.1:{port} is already in use by {id}")), "{message}");
    let list = lab.json(&["stack", "list", "--json"]);
    assert_eq!(list["instances"].as_array().map(Vec::len), Some(1), "{list:#}");
}

#[test]
fn a_failed_verify_names_the_workload_and_the_reason() {
    let lab = TestLab::new();
    let output = lab.run(&["stack", "up", "nginx", "--json"]);
    if output.status.code() == Some(4) {
        skip::missing("nginx", "nginx").report();
        return;
    }
    let up: serde_json::Value = serde_json::from_slice(&output.stdout).unwrap();
    let run_dir = std::path::PathBuf::from(up["run_dir"].as_str().unwrap());
    std::fs::write(run_dir.join("www/20k.bin"), b"not the right bytes").unwrap();
    let output = lab.run(&["stack", "verify", "nginx-1"]);
    assert_eq!(output.status.code(), Some(5), "{}", stderr(&output));
    assert!(
        stderr(&output)
            .contains("verify failed for 20k.bin: the body (19 bytes, status 200) has SHA-256"),
        "{}",
        stderr(&output)
    );
    lab.down("nginx-1");
    assert!(running(&pids(&up)).is_empty());
}
