//! Process supervision: starting a tier's server in the foreground as the leader of its own
//! session and process group, and stopping whole groups, so that every worker a server forks
//! is found, signalled and waited for.

use std::fs::{File, OpenOptions};
use std::path::Path;
use std::process::{Command, ExitStatus, Stdio};
use std::thread;
use std::time::{Duration, Instant};

use crate::error::{Error, IoContext, Result};
use crate::knobs::CpuList;
use crate::procfs::{self, ProcId};
use crate::sys::{self, AtExec};

/// How long a group gets to exit after SIGTERM before SIGKILL; MariaDB's clean shutdown is
/// the slowest we wait for, well under this.
pub const STOP_GRACE: Duration = Duration::from_secs(10);
/// How long after SIGKILL before remaining processes are reported as survivors.
const KILL_WAIT: Duration = Duration::from_secs(3);
const POLL: Duration = Duration::from_millis(10);

/// Starts `command` with stdout and stderr appended to `log`, stdin closed, as the leader of a
/// new session (so the terminal's Ctrl-C and hang-up do not reach it, and its process group
/// holds every process it forks), pinned to `cpus` if given (inherited by its children).
/// Returns its identity at once; the child is reaped by [`stop_groups`] or, once loadlab has
/// exited, by init.
pub fn spawn(
    mut command: Command,
    log: &Path,
    cpus: Option<&CpuList>,
    netns: Option<&Path>,
) -> Result<ProcId> {
    let out = open_log(log)?;
    let err = out.try_clone().context(|| format!("duplicating {}", log.display()))?;
    command.stdin(Stdio::null()).stdout(out).stderr(err);
    // A network profile's namespace, opened before the fork (and open until the spawn): the
    // child joins it with one call.
    let ns = netns
        .map(|p| std::fs::File::open(p).context(|| format!("opening {}", p.display())))
        .transpose()?;
    let at = AtExec { new_session: true, netns: ns.as_ref(), cpus: cpus.map(|c| c.0.as_slice()) };
    sys::at_exec(&mut command, at);
    let program = command.get_program().to_string_lossy().into_owned();
    let child = command.spawn().context(|| format!("starting {program}"))?;
    let pid = child.id() as i32;
    // The child is not waited for through `child`: dropping it neither kills nor reaps.
    drop(child);
    procfs::identify(pid).ok_or_else(|| Error::Start {
        tier: program,
        reason: "exited at once".into(),
        log: tail(log),
    })
}

fn open_log(path: &Path) -> Result<File> {
    OpenOptions::new()
        .create(true)
        .append(true)
        .open(path)
        .context(|| format!("opening {}", path.display()))
}

/// The last lines of a log file, for error messages.
pub fn tail(path: &Path) -> String {
    let text = std::fs::read_to_string(path).unwrap_or_default();
    let lines: Vec<&str> = text.lines().collect();
    lines[lines.len().saturating_sub(20)..].join("\n")
}

/// Whether the group led by `leader` still has a live process.
pub fn group_alive(leader: ProcId) -> bool {
    !procfs::group(leader, &procfs::all()).is_empty()
}

/// The live processes of these groups.
pub fn members(leaders: &[ProcId]) -> Vec<i32> {
    let procs = procfs::all();
    leaders.iter().flat_map(|l| procfs::group(*l, &procs)).map(|p| p.pid).collect()
}

/// Stops these process groups: SIGTERM to every member at once, then SIGKILL to what is left
/// after `grace`, then waits until none is left. `id` names them in the error that lists
/// survivors.
pub fn stop_groups(id: &str, leaders: &[ProcId], grace: Duration) -> Result<()> {
    signal_groups(leaders, libc::SIGTERM);
    if wait_gone(leaders, grace) {
        return Ok(());
    }
    signal_groups(leaders, libc::SIGKILL);
    if wait_gone(leaders, KILL_WAIT) {
        return Ok(());
    }
    Err(Error::Survivors { id: id.to_string(), pids: members(leaders) })
}

/// Signals every live member of each group. While the leader lives its group id cannot be
/// reused, so the whole group is signalled at once, racing no fork; once it is gone, only
/// the members that started after it are signalled, one by one.
fn signal_groups(leaders: &[ProcId], signal: i32) {
    let procs = procfs::all();
    for leader in leaders {
        let members = procfs::group(*leader, &procs);
        if members.iter().any(|p| p.id() == *leader) {
            // -pid names our leader's group.
            sys::signal(-leader.pid, signal);
        } else {
            for p in members {
                // A member of our group, read just now.
                sys::signal(p.pid, signal);
            }
        }
    }
}

/// Waits until no group has a live process, reaping leaders that are our own children (when
/// the stack was started by this process); whether they all went within `limit`.
fn wait_gone(leaders: &[ProcId], limit: Duration) -> bool {
    let deadline = Instant::now() + limit;
    loop {
        reap(leaders);
        if members(leaders).is_empty() {
            return true;
        }
        if Instant::now() >= deadline {
            return false;
        }
        thread::sleep(POLL);
    }
}

/// Reaps those leaders that are this process's exited children; for anyone else's pid
/// waitpid fails with ECHILD and changes nothing.
pub fn reap(leaders: &[ProcId]) {
    for leader in leaders {
        sys::reap(leader.pid);
    }
}

/// Runs a helper command to completion, with a time limit: its stdout, or an error with its
/// stderr. For version queries and database loading, not for servers.
pub fn run(command: Command, limit: Duration) -> Result<String> {
    run_output(command, limit).map(|(stdout, _)| stdout)
}

/// As [`run`], but both stdout and stderr of a successful run.
pub fn run_output(command: Command, limit: Duration) -> Result<(String, String)> {
    let shown = format!("{command:?}").replace('"', "");
    let (status, stdout, stderr) = run_status(command, limit)?;
    if status.success() {
        Ok((stdout, stderr))
    } else {
        Err(Error::Command {
            command: shown,
            reason: format!("{status}: {}{}", stderr.trim(), stdout.trim()),
        })
    }
}

/// Runs a command to completion, with a time limit: its exit status, stdout and stderr,
/// whatever the status. For a server's own test of its configuration (`nginx -t`), whose
/// failure is an answer to show, not an error of loadlab's.
pub fn run_status(mut command: Command, limit: Duration) -> Result<(ExitStatus, String, String)> {
    let shown = format!("{command:?}").replace('"', "");
    command.stdin(Stdio::null()).stdout(Stdio::piped()).stderr(Stdio::piped());
    let child = command.spawn().context(|| format!("starting {shown}"))?;
    let pid = child.id() as i32;
    let (tx, rx) = std::sync::mpsc::channel();
    thread::spawn(move || {
        let _ = tx.send(child.wait_with_output());
    });
    let output = match rx.recv_timeout(limit) {
        Ok(output) => output.context(|| format!("running {shown}"))?,
        Err(_) => {
            // The child has not been reaped (its waiter thread still waits), so the pid is
            // still ours.
            sys::signal(pid, libc::SIGKILL);
            return Err(Error::Command { command: shown, reason: format!("took over {limit:?}") });
        }
    };
    let stdout = String::from_utf8_lossy(&output.stdout).into_owned();
    let stderr = String::from_utf8_lossy(&output.stderr).into_owned();
    Ok((output.status, stdout, stderr))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_group_with_forked_children_is_stopped_whole() {
        let dir = tempfile::tempdir().unwrap();
        let mut command = Command::new("sh");
        // A parent that ignores SIGTERM and two children: only SIGKILL ends them all.
        command.args(["-c", "trap '' TERM; sleep 60 & sleep 60 & wait"]);
        let leader = spawn(command, &dir.path().join("log"), None, None).unwrap();
        assert!(crate::wait::until(Duration::from_secs(5), || members(&[leader]).len() == 3));
        let started = Instant::now();
        stop_groups("test", &[leader], Duration::from_millis(200)).unwrap();
        assert!(members(&[leader]).is_empty());
        assert!(started.elapsed() < Duration::from_secs(3));
        assert!(!procfs::alive(leader));
    }

    #[test]
    fn run_reports_failure_with_stderr() {
        let mut failing = Command::new("sh");
        failing.args(["-c", "echo oops >&2; exit 3"]);
        let err = run(failing, Duration::from_secs(5)).unwrap_err().to_string();
        assert!(err.contains("oops"), "{err}");
        let mut echo = Command::new("echo");
        echo.arg("hi");
        assert_eq!(run(echo, Duration::from_secs(5)).unwrap(), "hi\n");
    }
}
