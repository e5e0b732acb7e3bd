//! The tests' system calls, each behind a safe function that says why it is sound: signals to
//! processes the tests started, whether they run as root, a thread's CPU affinity, entering a
//! network namespace, a child's open-file limit, a pseudo-terminal and a session without one.
//! No test holds an `unsafe` block of its own.

use std::io;
use std::os::fd::{AsFd, AsRawFd, FromRawFd};
use std::os::unix::process::CommandExt;
use std::process::{Child, Command};

/// Whether the tests run as root (effective uid 0).
pub fn is_root() -> bool {
    // SAFETY: geteuid takes no arguments, touches no memory of ours and cannot fail.
    unsafe { libc::geteuid() == 0 }
}

/// Sends `signal` to process `pid`. Signal 0 sends nothing and only asks whether the pid
/// exists.
///
/// Only processes a test started (its children, and theirs, read from /proc just before)
/// are signalled. A pid is reused only after its process has been reaped, and a test's child
/// is reaped by that test alone, so the signal cannot reach a stranger while the child's
/// `Child` is not yet waited for.
pub fn kill(pid: i32, signal: i32) -> io::Result<()> {
    // SAFETY: kill takes two integers and touches no memory of ours; a pid that is gone
    // fails with ESRCH.
    if unsafe { libc::kill(pid, signal) } != 0 {
        return Err(io::Error::last_os_error());
    }
    Ok(())
}

/// Sends `signal` to the test's own child, which is not yet reaped (see [`kill`]).
pub fn signal_child(child: &Child, signal: i32) -> io::Result<()> {
    kill(child.id() as libc::pid_t, signal)
}

/// Pins thread `tid` (0: the calling thread) to `cpu`.
pub fn pin_thread(tid: i32, cpu: usize) -> io::Result<()> {
    if cpu >= libc::CPU_SETSIZE as usize {
        return Err(io::Error::from_raw_os_error(libc::EINVAL));
    }
    // SAFETY: cpu_set_t is a plain bitmask; all-zero bytes are the empty set.
    let mut set: libc::cpu_set_t = unsafe { std::mem::zeroed() };
    // SAFETY: CPU_SET writes only the bit of `cpu` in `set`, and `cpu` is below CPU_SETSIZE,
    // the number of bits the set holds (checked above).
    unsafe { libc::CPU_SET(cpu, &mut set) };
    // SAFETY: the kernel reads at most the size we pass, that of `set`, a live local, during
    // the call.
    if unsafe { libc::sched_setaffinity(tid, std::mem::size_of_val(&set), &set) } != 0 {
        return Err(io::Error::last_os_error());
    }
    Ok(())
}

/// Moves the calling thread into the network namespace `ns` (a namespace file held open,
/// such as /run/netns/NAME): only this thread's network namespace changes.
pub fn enter_netns(ns: &impl AsFd) -> io::Result<()> {
    // SAFETY: the descriptor is open for the borrow (AsFd's promise); setns reads no memory
    // of ours, and CLONE_NEWNET makes a descriptor of another kind fail with EINVAL.
    if unsafe { libc::setns(ns.as_fd().as_raw_fd(), libc::CLONE_NEWNET) } != 0 {
        return Err(io::Error::last_os_error());
    }
    Ok(())
}

/// `command` with RLIMIT_NOFILE set to `limit`, soft and hard alike (so that loadlab cannot
/// raise the soft limit to escape it), in the child only.
pub fn with_fd_limit(mut command: Command, limit: u64) -> Command {
    // SAFETY: the closure runs in the child between fork and exec, where only
    // async-signal-safe functions may be called; setrlimit is a plain system call that reads
    // the rlimit on the child's stack, and the closure neither allocates nor takes locks.
    unsafe {
        command.pre_exec(move || {
            // rlim_t is u64 on the 64-bit Linux targets loadlab runs on, as sys.rs assumes too.
            let rlimit = libc::rlimit { rlim_cur: limit, rlim_max: limit };
            if libc::setrlimit(libc::RLIMIT_NOFILE, &rlimit) != 0 {
                return Err(std::io::Error::last_os_error());
            }
            Ok(())
        });
    }
    command
}

/// A pseudo-terminal: its controller and the terminal end (what a program's stdout and stderr
/// are on a person's terminal), neither the controlling terminal of this process.
pub fn pty() -> io::Result<(std::fs::File, std::fs::File)> {
    let (mut controller, mut terminal) = (-1, -1);
    let size = libc::winsize { ws_row: 40, ws_col: 120, ws_xpixel: 0, ws_ypixel: 0 };
    // SAFETY: openpty(3) writes the two descriptors it opens into the two ints given; the name
    // and termios pointers may be null; the window size is read from the stack.
    let made = unsafe {
        libc::openpty(&mut controller, &mut terminal, std::ptr::null_mut(), std::ptr::null(), &size)
    };
    if made != 0 {
        return Err(io::Error::last_os_error());
    }
    // SAFETY: the two descriptors openpty(3) just opened, each owned here once.
    Ok(unsafe { (std::fs::File::from_raw_fd(controller), std::fs::File::from_raw_fd(terminal)) })
}

/// `command` in a session of its own (setsid(2)), so without a controlling terminal: whatever
/// its stdout and stderr are, `/dev/tty` cannot be opened in it (ENXIO).
pub fn without_terminal(mut command: Command) -> Command {
    // SAFETY: the closure runs in the child between fork and exec, where only
    // async-signal-safe functions may be called; setsid is one, and nothing else is called.
    unsafe {
        command.pre_exec(|| {
            if libc::setsid() < 0 {
                return Err(std::io::Error::last_os_error());
            }
            Ok(())
        });
    }
    command
}
