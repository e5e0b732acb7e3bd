//! The client's cgroup CPU quota and how often it throttled the client: read at the start and
//! the end of a run, as the workers read their own CPU account ([`crate::sys::ThreadAccount`]).
//!
//! Why: a client whose cgroup has a CPU quota (a container's `--cpus`, systemd's `CPUQuota=`)
//! is taken off its CPUs when the cgroup has used its quota for the period, however idle the
//! machine is. Its threads then wait while runnable, so the scheduler's run delay makes the
//! client look starved "while other work held its CPUs", which is not what happened: the quota
//! held it. The CFS bandwidth controller counts this in `cpu.stat` (cgroup v2: `nr_throttled`,
//! `throttled_usec`; v1: `nr_throttled`, `throttled_time` in ns), and the quota is `cpu.max`
//! (v2: "QUOTA PERIOD" in µs, "max" for none) or `cpu.cfs_quota_us` / `cpu.cfs_period_us` (v1,
//! -1 for none). A quota on an ancestor throttles its descendants and is counted in the
//! ancestor's `cpu.stat`, so every level from the client's cgroup up to the hierarchy's root is
//! read. The parsers are pure and tested on sample text; the reading is best-effort: where the
//! files cannot be read there is simply no evidence.

use std::path::{Path, PathBuf};
use std::time::Duration;

/// A CPU quota: `quota` of CPU time per `period`.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct CpuQuota {
    pub quota: Duration,
    pub period: Duration,
}

impl CpuQuota {
    /// The quota in CPUs (0.5: half of one CPU).
    pub fn cpus(&self) -> f64 {
        self.quota.as_micros() as f64 / self.period.as_micros().max(1) as f64
    }
}

/// The bandwidth controller's counters of one cgroup.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct Throttling {
    /// Enforcement periods that elapsed with the cgroup runnable.
    pub periods: u64,
    /// Periods in which the cgroup used its quota and was throttled.
    pub throttled_periods: u64,
    /// Time the cgroup's threads spent throttled, in all.
    pub throttled: Duration,
}

impl Throttling {
    fn since(&self, earlier: &Throttling) -> Throttling {
        Throttling {
            periods: self.periods.saturating_sub(earlier.periods),
            throttled_periods: self.throttled_periods.saturating_sub(earlier.throttled_periods),
            throttled: self.throttled.saturating_sub(earlier.throttled),
        }
    }
}

/// One cgroup level with a quota: where it is, its quota and its counters.
#[derive(Debug, Clone, PartialEq, Eq)]
struct Level {
    dir: PathBuf,
    quota: CpuQuota,
    counters: Throttling,
}

/// The quota-bearing cgroups of the calling process, from its own cgroup up to the root, with
/// their counters at one moment.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct CgroupCpu {
    levels: Vec<Level>,
}

/// What a cgroup CPU quota did to the client over a run's window: the level that throttled it
/// most.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct CgroupThrottle {
    /// The cgroup's directory (e.g. /sys/fs/cgroup/system.slice/loadlab.service).
    pub cgroup: PathBuf,
    pub quota: CpuQuota,
    pub throttling: Throttling,
}

impl CgroupCpu {
    /// The calling process's quota-bearing cgroups and their counters now; empty where
    /// /proc/self/cgroup, /proc/self/mountinfo or the cgroup files cannot be read.
    pub fn now() -> CgroupCpu {
        CgroupCpu::of(Path::new("/proc/self"))
    }

    /// The same for the process whose /proc directory is `proc`.
    pub fn of(proc: &Path) -> CgroupCpu {
        let (Ok(cgroups), Ok(mounts)) = (
            std::fs::read_to_string(proc.join("cgroup")),
            std::fs::read_to_string(proc.join("mountinfo")),
        ) else {
            return CgroupCpu::default();
        };
        let Some((hierarchy, leaf)) = cpu_cgroup_dir(&cgroups, &mounts) else {
            return CgroupCpu::default();
        };
        let read = |dir: &Path, name: &str| std::fs::read_to_string(dir.join(name)).ok();
        let levels = leaf
            .ancestors()
            .take_while(|d| d.starts_with(&hierarchy.mount))
            .filter_map(|dir| {
                let quota = match hierarchy.version {
                    Version::V2 => parse_cpu_max(&read(dir, "cpu.max")?)?,
                    Version::V1 => parse_cfs_quota(
                        &read(dir, "cpu.cfs_quota_us")?,
                        &read(dir, "cpu.cfs_period_us")?,
                    )?,
                };
                let counters = parse_cpu_stat(&read(dir, "cpu.stat")?)?;
                Some(Level { dir: dir.to_owned(), quota, counters })
            })
            .collect();
        CgroupCpu { levels }
    }

    /// The level whose quota throttled the client longest since `earlier`; `None` when no
    /// quota throttled it (or there is none).
    pub fn throttled_since(&self, earlier: &CgroupCpu) -> Option<CgroupThrottle> {
        self.levels
            .iter()
            .filter_map(|now| {
                let before = earlier.levels.iter().find(|l| l.dir == now.dir)?;
                let throttling = now.counters.since(&before.counters);
                (throttling.throttled_periods > 0).then(|| CgroupThrottle {
                    cgroup: now.dir.clone(),
                    quota: now.quota,
                    throttling,
                })
            })
            .max_by_key(|t| t.throttling.throttled)
    }
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Version {
    V1,
    V2,
}

/// Where the hierarchy that holds the cpu controller is mounted.
#[derive(Debug, Clone, PartialEq, Eq)]
struct Hierarchy {
    version: Version,
    mount: PathBuf,
}

/// The cpu controller's hierarchy and the process's cgroup directory in it, from
/// /proc/self/cgroup ("ID:CONTROLLERS:PATH"; v2's line is "0::PATH") and
/// /proc/self/mountinfo. A v1 hierarchy with the cpu controller wins (the controller is in one
/// hierarchy only; a hybrid system's cgroup2 mount then has none).
fn cpu_cgroup_dir(cgroups: &str, mountinfo: &str) -> Option<(Hierarchy, PathBuf)> {
    let mounts: Vec<Mount> = mountinfo.lines().filter_map(parse_mount).collect();
    let v1 = cgroups.lines().find_map(|l| {
        let mut f = l.splitn(3, ':');
        let (_, controllers, path) = (f.next()?, f.next()?, f.next()?);
        controllers.split(',').any(|c| c == "cpu").then_some(path)?;
        let m = mounts.iter().find(|m| m.fs == "cgroup" && m.options.iter().any(|o| o == "cpu"))?;
        Some((Version::V1, m, path))
    });
    let (version, mount, path) = v1.or_else(|| {
        let path = cgroups.lines().find_map(|l| l.strip_prefix("0::"))?;
        let m = mounts.iter().find(|m| m.fs == "cgroup2")?;
        Some((Version::V2, m, path))
    })?;
    // The mount shows the hierarchy from `root` on (a container sees its own cgroup as /).
    let inside = Path::new(path).strip_prefix(&mount.root).ok()?;
    let dir = mount.point.join(inside);
    Some((Hierarchy { version, mount: mount.point.clone() }, dir))
}

/// One line of /proc/self/mountinfo, as far as cgroups need it.
struct Mount {
    root: PathBuf,
    point: PathBuf,
    fs: String,
    options: Vec<String>,
}

/// "36 25 0:31 / /sys/fs/cgroup/cpu,cpuacct rw,relatime shared:15 - cgroup cgroup rw,cpu,cpuacct":
/// the fourth and fifth fields are the root and the mount point; after " - ", the file system
/// type, the source and the super options.
fn parse_mount(line: &str) -> Option<Mount> {
    let (head, tail) = line.split_once(" - ")?;
    let mut h = head.split_whitespace().skip(3);
    let (root, point) = (h.next()?, h.next()?);
    let mut t = tail.split_whitespace();
    let (fs, _source, options) = (t.next()?, t.next()?, t.next().unwrap_or(""));
    Some(Mount {
        root: PathBuf::from(root),
        point: PathBuf::from(point),
        fs: fs.to_owned(),
        options: options.split(',').map(str::to_owned).collect(),
    })
}

/// cgroup v2's cpu.max: "QUOTA PERIOD" in µs; `None` for "max" (no quota).
pub fn parse_cpu_max(text: &str) -> Option<CpuQuota> {
    let mut f = text.split_whitespace();
    let quota: u64 = f.next()?.parse().ok()?;
    let period: u64 = f.next().unwrap_or("100000").parse().ok()?;
    Some(CpuQuota { quota: Duration::from_micros(quota), period: Duration::from_micros(period) })
}

/// cgroup v1's cpu.cfs_quota_us and cpu.cfs_period_us, in µs; `None` for a quota of -1 (none).
pub fn parse_cfs_quota(quota: &str, period: &str) -> Option<CpuQuota> {
    let quota: i64 = quota.trim().parse().ok()?;
    let period: u64 = period.trim().parse().ok()?;
    let quota = u64::try_from(quota).ok()?;
    Some(CpuQuota { quota: Duration::from_micros(quota), period: Duration::from_micros(period) })
}

/// cpu.stat's bandwidth counters: v2's `throttled_usec` or v1's `throttled_time` (ns); `None`
/// when it has no `nr_throttled` (v2 without the cpu controller enabled).
pub fn parse_cpu_stat(text: &str) -> Option<Throttling> {
    let mut t = Throttling::default();
    let mut seen = false;
    for line in text.lines() {
        let Some((key, value)) = line.split_once(' ') else { continue };
        let Ok(n) = value.trim().parse::<u64>() else { continue };
        match key {
            "nr_periods" => t.periods = n,
            "nr_throttled" => (t.throttled_periods, seen) = (n, true),
            "throttled_usec" => t.throttled = Duration::from_micros(n),
            "throttled_time" => t.throttled = Duration::from_nanos(n),
            _ => {}
        }
    }
    seen.then_some(t)
}

#[cfg(test)]
mod tests {
    use super::*;

    const V2_STAT: &str = "usage_usec 2510000\nuser_usec 2300000\nsystem_usec 210000\n\
        core_sched.force_idle_usec 0\nnr_periods 31\nnr_throttled 27\nthrottled_usec 1480213\n\
        nr_bursts 0\nburst_usec 0\n";
    const V1_STAT: &str =
        "nr_periods 40\nnr_throttled 38\nthrottled_time 3012345678\nnr_bursts 0\nburst_time 0\n";

    #[test]
    fn cpu_stat_of_either_version_gives_the_throttling() {
        assert_eq!(
            parse_cpu_stat(V2_STAT),
            Some(Throttling {
                periods: 31,
                throttled_periods: 27,
                throttled: Duration::from_micros(1_480_213)
            })
        );
        assert_eq!(
            parse_cpu_stat(V1_STAT),
            Some(Throttling {
                periods: 40,
                throttled_periods: 38,
                throttled: Duration::from_nanos(3_012_345_678)
            })
        );
        // v2 without the cpu controller enabled: usage only, no bandwidth counters.
        assert_eq!(parse_cpu_stat("usage_usec 5\nuser_usec 4\nsystem_usec 1\n"), None);
    }

    #[test]
    fn quotas_of_either_version_and_none() {
        let half =
            CpuQuota { quota: Duration::from_millis(50), period: Duration::from_millis(100) };
        assert_eq!(parse_cpu_max("50000 100000\n"), Some(half));
        assert_eq!(parse_cpu_max("max 100000\n"), None);
        assert_eq!(parse_cfs_quota("50000\n", "100000\n"), Some(half));
        assert_eq!(parse_cfs_quota("-1\n", "100000\n"), None);
        assert_eq!(parse_cpu_max("150000 100000").map(|q| q.cpus()), Some(1.5));
    }

    #[test]
    fn the_cpu_cgroup_is_found_in_v1_hybrid_and_v2_layouts() {
        // This machine's layout: v1 controllers, an empty cgroup2 beside them.
        let hybrid_mounts = "31 23 0:28 / /sys/fs/cgroup rw,relatime - tmpfs tmpfs rw,mode=755\n\
            32 31 0:29 / /sys/fs/cgroup/cpu rw,relatime - cgroup cgroup rw,cpu\n\
            33 31 0:30 / /sys/fs/cgroup/cpuacct rw,relatime - cgroup cgroup rw,cpuacct\n\
            41 31 0:38 / /sys/fs/cgroup/unified rw,relatime - cgroup2 cgroup2 rw\n";
        let hybrid = "2:cpuacct:/\n1:cpu:/ci/job-7\n0::/\n";
        let (h, dir) = cpu_cgroup_dir(hybrid, hybrid_mounts).unwrap();
        assert_eq!(h.version, Version::V1);
        assert_eq!(dir, Path::new("/sys/fs/cgroup/cpu/ci/job-7"));
        // Debian's v1 layout: cpu and cpuacct co-mounted.
        let v1_mounts = "36 25 0:31 / /sys/fs/cgroup/cpu,cpuacct rw,nosuid shared:15 - cgroup \
            cgroup rw,cpu,cpuacct\n";
        let (_, dir) = cpu_cgroup_dir("4:cpu,cpuacct:/user.slice\n", v1_mounts).unwrap();
        assert_eq!(dir, Path::new("/sys/fs/cgroup/cpu,cpuacct/user.slice"));
        // Pure v2, in a container whose own cgroup is the mount's root.
        let v2_mounts = "29 22 0:26 /docker/abc /sys/fs/cgroup ro,nosuid - cgroup2 cgroup2 rw\n";
        let (h, dir) = cpu_cgroup_dir("0::/docker/abc/sub\n", v2_mounts).unwrap();
        assert_eq!((h.version, h.mount.as_path()), (Version::V2, Path::new("/sys/fs/cgroup")));
        assert_eq!(dir, Path::new("/sys/fs/cgroup/sub"));
        // No cgroup file system mounted: nothing to read.
        assert_eq!(cpu_cgroup_dir("0::/\n", "22 1 8:1 / / rw - ext4 /dev/sda1 rw\n"), None);
    }

    /// A real quota: a busy loop in a child cgroup of our own limited to a tenth of a CPU is
    /// throttled, and [`CgroupCpu`] reads that back with the quota. Needs a cpu controller
    /// this process may create a cgroup in, as root (v1's cpu hierarchy, or v2's root with
    /// cpu in its subtree_control); skipped visibly without. The cgroup is removed after.
    #[test]
    fn a_real_quota_throttles_a_busy_loop_and_is_read_back() {
        let (Ok(cgroups), Ok(mounts)) = (
            std::fs::read_to_string("/proc/self/cgroup"),
            std::fs::read_to_string("/proc/self/mountinfo"),
        ) else {
            eprintln!("SKIP: /proc/self/cgroup or mountinfo unreadable");
            return;
        };
        let Some((h, _)) = cpu_cgroup_dir(&cgroups, &mounts) else {
            eprintln!("SKIP: no cgroup hierarchy with the cpu controller");
            return;
        };
        let controllers = std::fs::read_to_string(h.mount.join("cgroup.subtree_control"));
        if h.version == Version::V2
            && !controllers.is_ok_and(|c| c.split_whitespace().any(|c| c == "cpu"))
        {
            eprintln!("SKIP: cgroup v2 without the cpu controller delegated at its root");
            return;
        }
        let dir = h.mount.join(format!("loadlab-test-quota-{}", std::process::id()));
        // Creating it is the test of the right to (root, or a delegated hierarchy).
        let cg = match TestCgroup::create(dir.clone()) {
            Ok(cg) => cg,
            Err(e) => {
                eprintln!("SKIP: no cgroup of our own at {}: {e}", dir.display());
                return;
            }
        };
        match h.version {
            Version::V2 => std::fs::write(dir.join("cpu.max"), "10000 100000"),
            Version::V1 => std::fs::write(dir.join("cpu.cfs_quota_us"), "10000"),
        }
        .expect("a quota of a tenth of a CPU");
        let child = std::process::Command::new("sh")
            .args(["-c", "while :; do :; done"])
            .spawn()
            .expect("a busy loop");
        let pid = child.id();
        let cg = cg.with(child);
        std::fs::write(dir.join("cgroup.procs"), pid.to_string()).expect("moved into the cgroup");
        let proc = PathBuf::from(format!("/proc/{pid}"));
        let before = CgroupCpu::of(&proc);
        assert!(!before.levels.is_empty(), "the quota's level is read: {before:?}");
        // A busy loop uses a tenth of a CPU in its first period and is throttled for the rest;
        // polled, with a bound far beyond that, so a loaded machine does not fail the test.
        let deadline = std::time::Instant::now() + Duration::from_secs(20);
        let t = loop {
            if let Some(t) = CgroupCpu::of(&proc).throttled_since(&before) {
                break t;
            }
            assert!(std::time::Instant::now() < deadline, "never throttled: {before:?}");
            std::thread::sleep(Duration::from_millis(50));
        };
        assert_eq!(t.cgroup, dir);
        assert_eq!(t.quota.cpus(), 0.1);
        assert!(
            t.throttling.throttled_periods > 0 && t.throttling.throttled > Duration::ZERO,
            "{t:?}"
        );
        drop(cg);
        assert!(!dir.exists(), "the test's cgroup is removed");
    }

    /// A cgroup of the test's own and the process in it: killed and removed on drop.
    struct TestCgroup {
        dir: PathBuf,
        child: Option<std::process::Child>,
    }

    impl TestCgroup {
        fn create(dir: PathBuf) -> std::io::Result<TestCgroup> {
            std::fs::create_dir(&dir)?;
            Ok(TestCgroup { dir, child: None })
        }

        fn with(mut self, child: std::process::Child) -> TestCgroup {
            self.child = Some(child);
            self
        }
    }

    impl Drop for TestCgroup {
        fn drop(&mut self) {
            if let Some(mut c) = self.child.take() {
                let _ = c.kill();
                let _ = c.wait();
            }
            // A cgroup is removed with rmdir once no process is left in it.
            let _ = std::fs::remove_dir(&self.dir);
        }
    }

    #[test]
    fn the_level_that_throttled_longest_is_the_evidence() {
        let level = |dir: &str, cpus_ms: u64, throttled_periods: u64, throttled_ms: u64| Level {
            dir: PathBuf::from(dir),
            quota: CpuQuota {
                quota: Duration::from_millis(cpus_ms),
                period: Duration::from_millis(100),
            },
            counters: Throttling {
                periods: 100,
                throttled_periods,
                throttled: Duration::from_millis(throttled_ms),
            },
        };
        let before =
            CgroupCpu { levels: vec![level("/cg/a/b", 50, 3, 10), level("/cg/a", 150, 0, 0)] };
        // Nothing new throttled: no evidence, however much was throttled before the run.
        assert_eq!(before.throttled_since(&before), None);
        let after =
            CgroupCpu { levels: vec![level("/cg/a/b", 50, 13, 410), level("/cg/a", 150, 2, 30)] };
        let t = after.throttled_since(&before).unwrap();
        assert_eq!(t.cgroup, Path::new("/cg/a/b"));
        assert_eq!(t.quota.cpus(), 0.5);
        assert_eq!(
            (t.throttling.throttled_periods, t.throttling.throttled),
            (10, Duration::from_millis(400))
        );
    }
}
