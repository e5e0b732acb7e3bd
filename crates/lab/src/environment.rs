//! The machine and software a run measures on: host name, kernel, CPU model and count, and the
//! installed version of each Debian package the run's stacks use (read with dpkg-query).

use std::collections::BTreeMap;

/// What the machine is, as a run's record keeps it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Environment {
    pub hostname: String,
    /// `uname -r`, e.g. "6.1.0-18-amd64".
    pub kernel: String,
    pub cpu_model: String,
    /// CPUs this process may run on.
    pub cpu_count: u32,
    /// Package name to installed version, for each of the packages asked about that is
    /// installed.
    pub packages: BTreeMap<String, String>,
}

/// This machine now, with the versions of `packages` (duplicates allowed).
pub fn read(packages: &[&str]) -> Environment {
    let read = |p: &str| std::fs::read_to_string(p).unwrap_or_default().trim().to_string();
    let cpu_model = std::fs::read_to_string("/proc/cpuinfo")
        .unwrap_or_default()
        .lines()
        .find_map(|l| {
            l.strip_prefix("model name").map(|v| v.trim_start_matches([' ', '\t', ':']).to_string())
        })
        .unwrap_or_default();
    Environment {
        hostname: read("/proc/sys/kernel/hostname"),
        kernel: read("/proc/sys/kernel/osrelease"),
        cpu_model,
        cpu_count: std::thread::available_parallelism().map_or(1, |n| n.get() as u32),
        packages: versions(packages),
    }
}

/// The installed version of each of `packages` that dpkg knows; empty without dpkg-query.
fn versions(packages: &[&str]) -> BTreeMap<String, String> {
    let mut versions = BTreeMap::new();
    let mut names: Vec<&str> = packages.to_vec();
    names.sort_unstable();
    names.dedup();
    if names.is_empty() {
        return versions;
    }
    if let Ok(out) = std::process::Command::new("dpkg-query")
        .args(["-W", "-f", "${Package} ${Version}\n"])
        .args(&names)
        .output()
    {
        for line in String::from_utf8_lossy(&out.stdout).lines() {
            if let Some((p, v)) = line.split_once(' ') {
                versions.insert(p.to_string(), v.to_string());
            }
        }
    }
    versions
}

#[cfg(test)]
mod tests {
    /// The kernel and CPU count are read on any Linux; a package that does not exist has no
    /// version (and asks dpkg nothing when there is no package at all).
    #[test]
    fn reads_this_machine() {
        let env = super::read(&["loadlab-no-such-package", "loadlab-no-such-package"]);
        assert!(!env.kernel.is_empty());
        assert!(env.cpu_count >= 1);
        assert!(env.packages.is_empty(), "{:?}", env.packages);
        assert!(super::read(&[]).packages.is_empty());
    }
}
