//! The lab as an ordinary user. CI runs as root, where the lab has workers switch to
//! www-data; this runs the same binary as uid and gid 65534 (nobody), which can switch to no
//! one, owns nothing but its state directory, and has no home the servers could lean on. Run
//! by an ordinary user, every other lab test covers this already, so then it only says so.

use std::os::unix::fs::PermissionsExt;
use std::path::{Path, PathBuf};
use std::process::Command;

use serde_json::Value;
use tempfile::TempDir;

use super::{assert_success, pids, running, LIMIT};
use crate::support::{output_within, skip, wait_until};

const NOBODY: u32 = 65534;

/// A copy of loadlab that nobody may run (the build directory may sit under a private home)
/// and a state directory that nobody owns; every stack in it goes down on drop.
struct NobodyLab {
    dir: TempDir,
}

impl NobodyLab {
    fn new() -> NobodyLab {
        let dir = tempfile::Builder::new().prefix("loadlab-nobody-").tempdir().expect("temp dir");
        let set_mode = |path: &Path, mode: u32| {
            std::fs::set_permissions(path, std::fs::Permissions::from_mode(mode))
                .unwrap_or_else(|e| panic!("chmod {}: {e}", path.display()))
        };
        set_mode(dir.path(), 0o755);
        let bin = dir.path().join("loadlab");
        std::fs::copy(env!("CARGO_BIN_EXE_loadlab"), &bin).expect("copy loadlab");
        set_mode(&bin, 0o755);
        let state = dir.path().join("state");
        std::fs::create_dir(&state).expect("create the state directory");
        std::os::unix::fs::chown(&state, Some(NOBODY), Some(NOBODY)).expect("chown the state");
        NobodyLab { dir }
    }

    fn state(&self) -> PathBuf {
        self.dir.path().join("state")
    }

    /// `loadlab ARGS` as nobody, with no supplementary groups and HOME in the state directory.
    fn command(&self, args: &[&str]) -> Command {
        let mut command = Command::new("setpriv");
        command
            .args(["--reuid", &NOBODY.to_string(), "--regid", &NOBODY.to_string()])
            .arg("--clear-groups")
            .arg(self.dir.path().join("loadlab"))
            .args(args)
            .env("LOADLAB_STATE_DIR", self.state())
            .env("HOME", self.state());
        command
    }
}

impl Drop for NobodyLab {
    fn drop(&mut self) {
        let _ = output_within(self.command(&["stack", "down", "--all"]), LIMIT);
    }
}

/// The real uid of process `pid`, from /proc.
fn uid_of(pid: i32) -> Option<u32> {
    let status = std::fs::read_to_string(format!("/proc/{pid}/status")).ok()?;
    let line = status.lines().find(|l| l.starts_with("Uid:"))?;
    line.split_whitespace().nth(1)?.parse().ok()
}

/// nginx, php-fpm and MariaDB (a datadir initialised by nobody) come up and verify as an
/// ordinary user, every process of theirs runs as that user, and all go down.
#[test]
fn an_ordinary_user_runs_a_php_stack_with_its_database() {
    if !crate::support::sys::is_root() {
        eprintln!("lab::user: not root, so the other lab tests ran as an ordinary user already");
        return;
    }
    let lab = NobodyLab::new();
    let args = ["stack", "up", "nginx-fpm", "--db", "on", "--json"];
    let output = output_within(lab.command(&args), LIMIT);
    if output.status.code() == Some(4) {
        skip::missing("nginx-fpm", "nginx php-fpm mariadb-server").report();
        return;
    }
    assert_success(&output, &args);
    let up: Value = serde_json::from_slice(&output.stdout).expect("stack up --json");
    let checks = up["checks"].as_array().expect("checks");
    assert!(checks.iter().all(|c| c["ok"] == true), "{up:#}");
    for needed in ["country.php", "database", "php"] {
        assert!(checks.iter().any(|c| c["workload"] == needed), "no {needed} check: {up:#}");
    }

    // Every process of the stack (`pids`: the tiers' leaders and the workers they forked),
    // which includes every process whose command line names this state directory.
    let all = pids(&up);
    let state = lab.state().display().to_string();
    let named: Vec<i32> = std::fs::read_dir("/proc")
        .expect("/proc")
        .flatten()
        .filter_map(|e| e.file_name().to_str()?.parse::<i32>().ok())
        .filter(|pid| {
            std::fs::read(format!("/proc/{pid}/cmdline"))
                .is_ok_and(|c| String::from_utf8_lossy(&c).contains(&state))
        })
        .collect();
    assert!(!named.is_empty() && named.iter().all(|p| all.contains(p)), "{named:?} in {all:?}");
    for pid in &all {
        assert_eq!(uid_of(*pid), Some(NOBODY), "process {pid} does not run as nobody");
    }

    let id = up["id"].as_str().expect("id");
    let down = output_within(lab.command(&["stack", "down", id]), LIMIT);
    assert_success(&down, &["stack", "down", id]);
    assert!(
        wait_until(std::time::Duration::from_secs(30), || running(&all).is_empty()),
        "left: {:?}",
        running(&all)
    );
}

/// A network profile needs root: as nobody, `stack up --net` fails at once with exit 6 and
/// says why, and leaves no namespace.
#[test]
fn a_network_profile_without_root_fails_at_once_with_exit_6() {
    if !crate::support::sys::is_root() {
        eprintln!("lab::user: not root; run as root to test the refusal as nobody");
        return;
    }
    let lab = NobodyLab::new();
    let out = output_within(lab.command(&["stack", "up", "nginx", "--net", "lan-100mbit"]), LIMIT);
    assert_eq!(out.status.code(), Some(6), "{out:?}");
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(stderr.contains("--net lan-100mbit: network profiles need root"), "{stderr}");
    let list = output_within(lab.command(&["stack", "list"]), LIMIT);
    assert!(!String::from_utf8_lossy(&list.stdout).contains("nginx-1"), "{list:?}");
}
