//! Tests that need a real external program: finding it, and skipping with a visible line when
//! it is missing locally, but failing when `CI` or `LOADLAB_REQUIRE_SERVERS=1` is set, so that
//! CI never passes by silently running nothing.

use std::fmt;
use std::io::Write;
use std::path::{Path, PathBuf};

/// Why a test did not run. Only returned when skipping is allowed (see [`servers_required`]).
#[derive(Debug)]
pub struct Skip(pub String);

impl Skip {
    /// Prints `skipped <test>: <reason>` on the real stderr: libtest captures `eprintln!`
    /// output of passing tests, and a skip that nobody sees looks exactly like a pass.
    pub fn report(&self) {
        let thread = std::thread::current();
        let test = thread.name().unwrap_or("test");
        let _ = writeln!(std::io::stderr(), "skipped {test}: {self}");
    }
}

impl fmt::Display for Skip {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.0)
    }
}

/// Whether missing server programs are an error here rather than a reason to skip.
pub fn servers_required() -> bool {
    let set =
        |name: &str| std::env::var(name).is_ok_and(|v| !v.is_empty() && v != "0" && v != "false");
    set("LOADLAB_REQUIRE_SERVERS") || set("CI")
}

/// The program `name`: the first of `preferred` that exists, else the first on `PATH`.
/// Distributions put daemons in `sbin`, which is often not on a normal user's `PATH`.
pub fn find_program(name: &str, preferred: &[&str]) -> Option<PathBuf> {
    let on_path = std::env::var_os("PATH")
        .map(|path| std::env::split_paths(&path).map(|dir| dir.join(name)).collect::<Vec<_>>())
        .unwrap_or_default();
    preferred.iter().map(PathBuf::from).chain(on_path).find(|p| is_executable(p))
}

fn is_executable(path: &Path) -> bool {
    use std::os::unix::fs::PermissionsExt;
    path.metadata().is_ok_and(|m| m.is_file() && m.permissions().mode() & 0o111 != 0)
}

/// A program the test needs and cannot do without: `Err(Skip)` locally, a panic in CI.
pub fn missing(program: &str, package: &str) -> Skip {
    if servers_required() {
        panic!("{program} is required (apt-get install {package})");
    }
    Skip(format!(
        "{program} not installed (apt-get install {package}; \
         LOADLAB_REQUIRE_SERVERS=1 makes this a failure)"
    ))
}
