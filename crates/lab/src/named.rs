//! Processes the user names for sampling a server loadlab did not start (an external target
//! of a suite): pids, a pidfile or a systemd unit, resolved to the processes the sampler
//! watches as one tier, with their descendants (an nginx master's workers, php-fpm's children).

use std::path::{Path, PathBuf};
use std::process::Command;
use std::time::Duration;

use crate::error::{Error, Result};
use crate::procfs::{self, ProcId};
use crate::supervise;

/// How long `systemctl show` may take.
const SYSTEMCTL_LIMIT: Duration = Duration::from_secs(10);

/// Processes named by the user, as a suite's external target gives them.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Processes {
    /// `pids = [..]`.
    Pids(Vec<i32>),
    /// `pidfile = "..."`: the pid it holds when the target is verified.
    Pidfile(PathBuf),
    /// `unit = "nginx.service"`: its main process and every process of its control group.
    Unit(String),
}

impl Processes {
    /// The processes as they are now; an error names what is not running.
    pub fn resolve(&self) -> Result<Vec<ProcId>> {
        match self {
            Processes::Pids(pids) => pids.iter().map(|&pid| running(pid, "")).collect(),
            Processes::Pidfile(path) => {
                let pid = read_pidfile(path)?;
                Ok(vec![running(pid, &format!(" (from {})", path.display()))?])
            }
            Processes::Unit(unit) => resolve_unit(unit),
        }
    }

    /// How the processes were named, for the run's record: `pids 41, 42`, `unit nginx.service`.
    pub fn describe(&self) -> String {
        match self {
            Processes::Pids(pids) => {
                let list: Vec<String> = pids.iter().map(i32::to_string).collect();
                format!("pids {}", list.join(", "))
            }
            Processes::Pidfile(path) => format!("pidfile {}", path.display()),
            Processes::Unit(unit) => format!("unit {unit}"),
        }
    }
}

fn running(pid: i32, from: &str) -> Result<ProcId> {
    match procfs::read_stat(pid) {
        Some(stat) if !stat.is_zombie() => Ok(stat.id()),
        _ => Err(Error::Processes(format!("pid {pid}{from} is not running"))),
    }
}

fn read_pidfile(path: &Path) -> Result<i32> {
    let text = std::fs::read_to_string(path)
        .map_err(|e| Error::Processes(format!("pidfile {}: {e}", path.display())))?;
    text.split_whitespace()
        .next()
        .and_then(|p| p.parse::<i32>().ok())
        .filter(|&p| p > 0)
        .ok_or_else(|| {
            Error::Processes(format!("pidfile {} holds no pid ({:?})", path.display(), text.trim()))
        })
}

/// A unit's main process and the processes of its control group. `systemctl show` prints
/// `MainPID=` (0 when the unit is not running) and `ControlGroup=` (the cgroup's path under
/// the cgroup mount); a control group lists its processes in `cgroup.procs`.
fn resolve_unit(unit: &str) -> Result<Vec<ProcId>> {
    let mut command = Command::new("systemctl");
    command.args(["show", "--property=MainPID", "--property=ControlGroup", "--", unit]);
    let out = supervise::run(command, SYSTEMCTL_LIMIT)
        .map_err(|e| Error::Processes(format!("unit {unit}: {e}")))?;
    let shown = UnitShow::parse(&out);
    let mut pids: Vec<i32> = shown.main_pid.into_iter().collect();
    if let Some(group) = &shown.control_group {
        pids.extend(cgroup_procs(group));
    }
    pids.sort_unstable();
    pids.dedup();
    let ids: Vec<ProcId> = pids.into_iter().filter_map(procfs::identify).collect();
    if ids.is_empty() {
        return Err(Error::Processes(format!(
            "unit {unit} has no running process (systemctl show: {})",
            out.split_whitespace().collect::<Vec<_>>().join(" ")
        )));
    }
    Ok(ids)
}

/// What `systemctl show --property=MainPID --property=ControlGroup` says.
#[derive(Debug, Default, PartialEq, Eq)]
struct UnitShow {
    /// `None` when 0: the unit runs no main process.
    main_pid: Option<i32>,
    control_group: Option<String>,
}

impl UnitShow {
    fn parse(text: &str) -> UnitShow {
        let mut shown = UnitShow::default();
        for line in text.lines() {
            match line.split_once('=') {
                Some(("MainPID", v)) => {
                    shown.main_pid = v.trim().parse().ok().filter(|&p: &i32| p > 0)
                }
                Some(("ControlGroup", v)) if !v.trim().is_empty() => {
                    shown.control_group = Some(v.trim().to_string())
                }
                _ => {}
            }
        }
        shown
    }
}

/// The pids in a control group: under the unified hierarchy (cgroup v2), else under the
/// legacy `systemd` one. Empty when neither can be read.
fn cgroup_procs(group: &str) -> Vec<i32> {
    let relative = group.trim_start_matches('/');
    ["/sys/fs/cgroup", "/sys/fs/cgroup/systemd"]
        .iter()
        .find_map(|mount| {
            std::fs::read_to_string(Path::new(mount).join(relative).join("cgroup.procs")).ok()
        })
        .map(|text| text.lines().filter_map(|l| l.trim().parse().ok()).collect())
        .unwrap_or_default()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn systemctl_show_gives_the_main_pid_and_the_group() {
        let shown = UnitShow::parse("MainPID=812\nControlGroup=/system.slice/nginx.service\n");
        assert_eq!(shown.main_pid, Some(812));
        assert_eq!(shown.control_group.as_deref(), Some("/system.slice/nginx.service"));
        // A unit that is not running.
        assert_eq!(UnitShow::parse("MainPID=0\nControlGroup=\n"), UnitShow::default());
    }

    #[test]
    fn pids_resolve_while_running_and_name_what_is_not() {
        let me = std::process::id() as i32;
        let ids = Processes::Pids(vec![me]).resolve().unwrap();
        assert_eq!(ids, vec![procfs::identify(me).unwrap()]);
        // Above the largest pid_max Linux allows (2^22): never a process.
        let e = Processes::Pids(vec![me, 5_000_000]).resolve().unwrap_err();
        assert_eq!(e.to_string(), "pid 5000000 is not running");
    }

    #[test]
    fn a_pidfile_is_read_when_resolved() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("server.pid");
        let named = Processes::Pidfile(path.clone());
        let e = named.resolve().unwrap_err().to_string();
        assert!(e.starts_with(&format!("pidfile {}: ", path.display())), "{e}");
        std::fs::write(&path, "\n").unwrap();
        assert!(named.resolve().unwrap_err().to_string().contains("holds no pid"));
        std::fs::write(&path, format!("{}\n", std::process::id())).unwrap();
        assert_eq!(named.resolve().unwrap().len(), 1);
        assert_eq!(named.describe(), format!("pidfile {}", path.display()));
    }
}
