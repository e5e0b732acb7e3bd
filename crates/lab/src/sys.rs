//! The lab's system calls, each behind a safe wrapper whose `// SAFETY:` comment says why the
//! call is sound: the rest of the lab calls these and holds no `unsafe`.

use std::fs::File;
use std::io;
use std::os::fd::AsRawFd;
use std::os::unix::process::CommandExt;
use std::process::Command;

/// Whether this process runs as root (effective uid 0).
pub fn is_root() -> bool {
    // SAFETY: geteuid has no preconditions and cannot fail.
    unsafe { libc::geteuid() == 0 }
}

/// Takes an exclusive lock on `file`, blocking until its holder closes its file.
pub fn lock_exclusive(file: &File) -> io::Result<()> {
    // SAFETY: flock on a descriptor `file` keeps open for the call; no memory is passed.
    if unsafe { libc::flock(file.as_raw_fd(), libc::LOCK_EX) } != 0 {
        return Err(io::Error::last_os_error());
    }
    Ok(())
}

/// What a child does between fork and exec.
#[derive(Debug, Default)]
pub struct AtExec<'a> {
    /// Becomes the leader of a new session (and process group).
    pub new_session: bool,
    /// Joins this network namespace (a `/run/netns/NAME` or `/proc/PID/ns/net` file, which
    /// must stay open until the command is spawned).
    pub netns: Option<&'a File>,
    /// Is pinned to these CPUs (each below `CPU_SETSIZE`), inherited by its children.
    pub cpus: Option<&'a [usize]>,
}

/// Arranges for `command`'s child to do what `at` says before it executes its program; a
/// failing step fails the spawn with its error.
pub fn at_exec(command: &mut Command, at: AtExec<'_>) {
    let new_session = at.new_session;
    let ns_fd = at.netns.map(AsRawFd::as_raw_fd);
    // The set is built here, before the fork: the child only hands it to the kernel.
    let mask = at.cpus.map(cpu_set);
    // SAFETY: the closure runs in the child between fork and exec and only makes system calls
    // that are async-signal-safe (setsid, setns, sched_setaffinity), allocating nothing; the
    // mask was made before the fork and the namespace's descriptor is the caller's, open.
    unsafe {
        command.pre_exec(move || {
            if new_session && libc::setsid() < 0 {
                return Err(io::Error::last_os_error());
            }
            if let Some(fd) = ns_fd {
                if libc::setns(fd, libc::CLONE_NEWNET) < 0 {
                    return Err(io::Error::last_os_error());
                }
            }
            if let Some(mask) = &mask {
                if libc::sched_setaffinity(0, std::mem::size_of::<libc::cpu_set_t>(), mask) < 0 {
                    return Err(io::Error::last_os_error());
                }
            }
            Ok(())
        });
    }
}

fn cpu_set(cpus: &[usize]) -> libc::cpu_set_t {
    // SAFETY: cpu_set_t is a plain bit array; all zeroes is the empty set.
    let mut set: libc::cpu_set_t = unsafe { std::mem::zeroed() };
    for &cpu in cpus.iter().filter(|&&c| c < libc::CPU_SETSIZE as usize) {
        // SAFETY: `cpu` is below CPU_SETSIZE (filtered above; CpuList parsing keeps it so).
        unsafe { libc::CPU_SET(cpu, &mut set) };
    }
    set
}

/// Sends `signal` to `pid`, or to the process group `-pid` when it is negative.
pub fn signal(pid: i32, signal: i32) {
    // SAFETY: kill has no memory-safety preconditions; a pid that is gone gives ESRCH.
    unsafe { libc::kill(pid, signal) };
}

/// Reaps `pid` if it is this process's exited child; for anyone else's pid waitpid fails with
/// ECHILD and changes nothing. Never blocks.
pub fn reap(pid: i32) {
    let mut status = 0;
    // SAFETY: WNOHANG never blocks; `status` is a valid out pointer.
    unsafe { libc::waitpid(pid, &mut status, libc::WNOHANG) };
}

/// The kernel's clock ticks per second (the unit of /proc's CPU times); 100 if unknown.
pub fn clock_ticks() -> u64 {
    // SAFETY: sysconf has no preconditions; an unknown name gives -1.
    let ticks = unsafe { libc::sysconf(libc::_SC_CLK_TCK) };
    if ticks > 0 {
        ticks as u64
    } else {
        100
    }
}

/// The memory page size in bytes (the unit of /proc's resident set); 4096 if unknown.
pub fn page_size() -> u64 {
    // SAFETY: sysconf has no preconditions; an unknown name gives -1.
    let size = unsafe { libc::sysconf(libc::_SC_PAGESIZE) };
    if size > 0 {
        size as u64
    } else {
        4096
    }
}
