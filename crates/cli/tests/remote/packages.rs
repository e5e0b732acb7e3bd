//! Packages a suite's stacks on a lab host need are checked there before the run starts, by
//! that host's loadlab (`doctor --json`), as `run` checks its own: missing ones are named with
//! the host and the install command, exit 4, and nothing starts. B is made to lack everything
//! by an empty `LOADLAB_SEARCH_PATH` in its loadlab's environment (sent by ssh's `SetEnv`).
//! Needs root, iproute2, openssh and nginx.

use std::time::Duration;

use super::{lab_hosts, left_in_b};
use crate::support::{output_within, wait_until};

#[test]
fn packages_a_lab_host_lacks_are_named_before_the_run_starts_with_exit_4() {
    let Some((hosts, sshd)) = lab_hosts() else { return };
    let empty = sshd.dir.path().join("empty-path");
    std::fs::create_dir_all(&empty).unwrap();
    let out = sshd.dir.path().join("out");
    let (out_arg, url) = (out.display().to_string(), sshd.url());
    let args =
        ["run", "--suite", "php-modphp-vs-fastcgi", "--quick", "--host", &url, "--out", &out_arg];
    let mut command = sshd.loadlab_in(&hosts.a, &args);
    let setting = format!("LOADLAB_SEARCH_PATH={}", empty.display());
    command.env("LOADLAB_SSH_COMMAND", sshd.ssh_command_setting(&setting));
    let ran = output_within(command, Duration::from_secs(120));
    let said = String::from_utf8_lossy(&ran.stderr);
    assert_eq!(ran.status.code(), Some(4), "{said}");
    let line = said.lines().find(|l| l.contains("lacks")).unwrap_or_else(|| panic!("{said}"));
    for part in
        [url.as_str(), "apache2", "nginx", "spawn-fcgi", "apt-get install -y", "--install-packages"]
    {
        assert!(line.contains(part), "{part:?} not in {line}");
    }
    // Nothing started: no run was recorded, nothing runs in B.
    assert!(!out.join("loadlab.db").exists(), "a run began");
    assert!(wait_until(Duration::from_secs(5), || left_in_b(&hosts, &sshd).is_empty()));

    // With B's own search path the check passes: every other `run --host` test.
}
