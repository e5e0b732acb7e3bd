//! `loadlab agents k8s`: the printed manifests checked against the Kubernetes API's schemas by
//! kubernetes-validate (PyPI; `make test` installs it under target/kubernetes-validate), which
//! rejects unknown fields with `--strict`; and a bench command line with a typo refused here.

use std::path::{Path, PathBuf};
use std::process::Command;

use super::assert_exit;
use crate::support::skip::{find_program, missing};
use crate::support::{loadlab, output_within, RUN_LIMIT};

/// The Kubernetes version the manifests are checked against.
const VERSION: &str = "1.30.0";

fn validator() -> Option<PathBuf> {
    let venv = Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("../../target/kubernetes-validate/bin/kubernetes-validate");
    let found = find_program("kubernetes-validate", &[venv.to_str().unwrap()]);
    if found.is_none() {
        missing("kubernetes-validate", "(pip) kubernetes-validate: make deps-test").report();
    }
    found
}

fn agents_k8s(args: &[&str]) -> std::process::Output {
    let mut cmd = loadlab();
    cmd.args(["agents", "k8s"]).args(args);
    output_within(cmd, RUN_LIMIT)
}

fn validate(program: &Path, file: &Path) -> std::process::Output {
    let mut cmd = Command::new(program);
    cmd.args(["--strict", "-k", VERSION]).arg(file);
    output_within(cmd, RUN_LIMIT)
}

#[test]
fn the_printed_job_service_and_secret_pass_the_api_schema_strictly() {
    let Some(program) = validator() else { return };
    let dir = tempfile::tempdir().expect("temp dir");
    let token = dir.path().join("token");
    std::fs::write(&token, "s3cret-s3cret-s3cret\n").unwrap();
    let output = agents_k8s(&[
        "--image",
        "registry.example/loadlab:1",
        "--agents",
        "4",
        "--name",
        "shop-test",
        "--namespace",
        "load",
        "--token-file",
        token.to_str().unwrap(),
        "--",
        "bench",
        "http://shop.example/",
        "--rate",
        "20000",
        "-d",
        "10s",
    ]);
    assert_exit(&output, 0);
    let yaml = String::from_utf8(output.stdout).unwrap();
    let file = dir.path().join("agents.yaml");
    std::fs::write(&file, &yaml).unwrap();
    let checked = validate(&program, &file);
    let said = String::from_utf8_lossy(&checked.stdout).into_owned()
        + &String::from_utf8_lossy(&checked.stderr);
    assert!(checked.status.success(), "{said}\n{yaml}");
    for resource in ["secret/shop-test-token", "service/shop-test", "job/shop-test"] {
        assert!(said.contains(&format!("passed for resource {resource}")), "{said}");
    }
    // The check can fail: a field the API does not have is refused under --strict.
    let wrong = yaml.replacen("backoffLimit: 0", "backoffLimit: 0\n  backofLimit: 0", 1);
    assert_ne!(wrong, yaml);
    std::fs::write(&file, &wrong).unwrap();
    assert!(!validate(&program, &file).status.success(), "{wrong}");
}

#[test]
fn a_secret_the_agents_would_refuse_is_refused_before_any_manifest() {
    let dir = tempfile::tempdir().expect("temp dir");
    let token = dir.path().join("token");
    std::fs::write(&token, "s3cret\n").unwrap();
    let file = token.to_str().unwrap();
    let output = agents_k8s(&[
        "--image",
        "i:1",
        "--agents",
        "2",
        "--token-file",
        file,
        "--",
        "bench",
        "http://a/",
    ]);
    assert_exit(&output, 2);
    let stderr = String::from_utf8_lossy(&output.stderr);
    assert!(stderr.contains("fewer than 16"), "{stderr}");
    assert!(output.stdout.is_empty(), "no manifest printed");
}

#[test]
fn without_a_token_file_the_secret_is_referenced_with_a_note() {
    let output = agents_k8s(&["--image", "i", "--agents", "2", "--", "bench", "http://x.example/"]);
    assert_exit(&output, 0);
    let (yaml, stderr) =
        (String::from_utf8_lossy(&output.stdout), String::from_utf8_lossy(&output.stderr));
    assert!(!yaml.contains("kind: Secret"), "{yaml}");
    assert!(yaml.contains("name: loadlab-token"), "{yaml}");
    assert!(stderr.contains("kubectl create secret generic loadlab-token"), "{stderr}");
}

#[test]
fn a_typo_in_the_agents_bench_command_is_refused_here_not_in_the_pods() {
    for (command, says) in [
        (&["bench", "http://x.example/", "--rat", "100"][..], "--rat"),
        (&["bench"][..], "URL"),
        (&["stack", "up", "nginx"][..], "stack"),
        (&["bench", "http://x.example/", "--agent", "1"][..], "--agent"),
    ] {
        let mut args = vec!["--image", "i", "--agents", "2", "--"];
        args.extend_from_slice(command);
        let output = agents_k8s(&args);
        assert_exit(&output, 2);
        let stderr = String::from_utf8_lossy(&output.stderr);
        assert!(stderr.contains(says), "{command:?}: {stderr}");
        assert_eq!(stderr.lines().count(), 1, "one line: {stderr}");
        assert!(output.stdout.is_empty(), "no manifest printed");
    }
}
