//! A run whose disk fills up: the cell the store could not keep ends it, and the end line
//! names the store, the cells kept and the cell lost once, even when the report cannot be
//! written after it either. The disk is a small tmpfs the test mounts (root only).

use std::path::{Path, PathBuf};
use std::process::Command;

use super::Scratch;
use crate::support::{Behaviour, TestServer};

/// A tmpfs of `size` mounted at `at`, unmounted when dropped (a failing test included).
struct Mounted(PathBuf);

impl Mounted {
    fn tmpfs(at: &Path, size: &str) -> Mounted {
        std::fs::create_dir_all(at).expect("the mount point");
        let opts = format!("size={size}");
        let status = Command::new("mount")
            .args(["-t", "tmpfs", "-o", &opts, "tmpfs"])
            .arg(at)
            .status()
            .expect("run mount");
        assert!(status.success(), "mount -t tmpfs at {}", at.display());
        Mounted(at.to_path_buf())
    }
}

impl Drop for Mounted {
    fn drop(&mut self) {
        let _ = Command::new("umount").arg(&self.0).status();
    }
}

#[test]
fn a_full_disk_names_the_store_the_cells_kept_and_the_cell_lost_once() {
    if !crate::support::sys::is_root() {
        assert!(!crate::support::skip::servers_required(), "CI must run this test as root");
        crate::support::Skip("a tmpfs of the test's own needs root".into()).report();
        return;
    }
    let server = TestServer::start(Behaviour::ok("hello"));
    let scratch = Scratch::new();
    // Room for the store and a few cells, not for every cell nor for the report after.
    let disk = scratch.dir.path().join("disk");
    let _mounted = Mounted::tmpfs(&disk, "400k");
    let suite = scratch.write(
        "many.toml",
        &format!(
            "name = \"many\"\nrepetitions = 40\nwarmup = \"0s\"\n[[stacks]]\nurl = \"{}\"\n\
             label = \"mine\"\n[[workloads]]\nname = \"root\"\npath = \"/\"\n[[loads]]\n\
             model = \"closed\"\nconcurrency = [1]\nduration = \"100ms\"\n",
            server.url("/")
        ),
    );
    let out = disk.join("out");
    let output = scratch.run(&["run", "--suite", &suite, "--out", &out.display().to_string()]);
    let (stdout, stderr) =
        (String::from_utf8_lossy(&output.stdout), String::from_utf8_lossy(&output.stderr));
    assert_eq!(output.status.code(), Some(1), "{stdout}\n{stderr}");
    let db = out.join("loadlab.db");
    let end = stdout
        .lines()
        .find(|l| l.starts_with("run 1 failed: "))
        .unwrap_or_else(|| panic!("no end line:\n{stdout}\n{stderr}"));
    let kept: usize = end["run 1 failed: ".len()..]
        .split(' ')
        .next()
        .and_then(|n| n.parse().ok())
        .unwrap_or_else(|| panic!("{end}"));
    assert!(end.starts_with(&format!("run 1 failed: {kept} of 40 cells finished")), "{end}");
    // The cell lost, in the store named, on stderr's last line, once.
    let said = format!(
        "loadlab: error: the result store {} could not keep cell {} (",
        db.display(),
        kept + 1
    );
    let last = stderr.trim_end().lines().last().unwrap_or_default();
    assert!(last.starts_with(&said), "{stderr}");
    assert!(last.ends_with("SQLite failed: database or disk is full"), "{stderr}");
    let both = format!("{stdout}{stderr}");
    assert_eq!(both.matches("could not keep").count(), 1, "the reason once:\n{both}");
    // What could not be written after it either: said beside it, its OS error once.
    assert!(both.matches("No space left on device").count() <= 1, "{both}");
    assert!(stdout.contains("report: none written"), "{stdout}");
}
