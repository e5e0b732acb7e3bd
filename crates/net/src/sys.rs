//! The network crate's system calls, each behind a safe wrapper whose `// SAFETY:` comment
//! says why the call is sound: the rest of the crate calls these and holds no `unsafe`.
//! Descriptors are taken as [`BorrowedFd`], so a wrapper never acts on one that is closed.

use std::fs::File;
use std::io;
use std::os::fd::{AsRawFd, BorrowedFd};
use std::os::unix::process::CommandExt;
use std::process::Command;
use std::time::Duration;

/// `_IOW('T', 202, int)` and `_IOW('T', 208, unsigned int)` from linux/if_tun.h.
const TUNSETIFF: libc::c_ulong = 0x4004_54ca;
const TUNSETOFFLOAD: libc::c_ulong = 0x4004_54d0;

/// Whether this process runs as root (effective uid 0).
pub fn is_root() -> bool {
    // SAFETY: geteuid has no preconditions and cannot fail.
    unsafe { libc::geteuid() == 0 }
}

/// The CPUs online, at least 1.
pub fn online_cpus() -> usize {
    // SAFETY: sysconf has no preconditions; an unknown name gives -1, clamped below.
    let n = unsafe { libc::sysconf(libc::_SC_NPROCESSORS_ONLN) };
    n.max(1) as usize
}

/// Takes an exclusive lock on `file`, blocking until its holder closes its file.
pub fn lock_exclusive(file: &File) -> io::Result<()> {
    // SAFETY: flock on a descriptor `file` keeps open for the call; no memory is passed.
    if unsafe { libc::flock(file.as_raw_fd(), libc::LOCK_EX) } != 0 {
        return Err(io::Error::last_os_error());
    }
    Ok(())
}

/// Makes `command`'s process the leader of a new session, so that it outlives the terminal
/// and the process group of the one that starts it.
pub fn new_session_at_exec(command: &mut Command) {
    // SAFETY: the closure runs in the child between fork and exec; setsid is
    // async-signal-safe and touches no memory of the parent's.
    unsafe {
        command.pre_exec(|| {
            libc::setsid();
            Ok(())
        });
    }
}

/// Sends SIGTERM to `pid`.
pub fn terminate(pid: u32) {
    // SAFETY: kill has no memory-safety preconditions; a pid that is gone gives ESRCH.
    unsafe { libc::kill(pid as libc::pid_t, libc::SIGTERM) };
}

/// Closes this process's standard output (descriptor 1), so that a reader of it sees its end.
pub fn close_stdout() {
    // SAFETY: descriptor 1 is not owned by any Rust object; std's stdout writes to it by
    // number and gets EBADF afterwards, which it reports as an error, never as UB.
    unsafe { libc::close(1) };
}

/// Attaches `fd` (an open `/dev/net/tun`) to the device of the `ifreq` in `req` (its name,
/// then its flags), as TUNSETIFF does.
pub fn tun_set_iff(fd: BorrowedFd<'_>, req: &mut [u8; 40]) -> io::Result<()> {
    // SAFETY: TUNSETIFF reads and writes a `struct ifreq` (40 bytes on Linux), which `req`
    // holds for the whole call.
    if unsafe { libc::ioctl(fd.as_raw_fd(), TUNSETIFF, req.as_mut_ptr()) } < 0 {
        return Err(io::Error::last_os_error());
    }
    Ok(())
}

/// Sets the offloads (`TUN_F_*`) the TUN device of `fd` accepts.
pub fn tun_set_offload(fd: BorrowedFd<'_>, features: libc::c_uint) -> io::Result<()> {
    // SAFETY: TUNSETOFFLOAD takes its argument by value: no memory is passed.
    if unsafe { libc::ioctl(fd.as_raw_fd(), TUNSETOFFLOAD, features as libc::c_ulong) } < 0 {
        return Err(io::Error::last_os_error());
    }
    Ok(())
}

/// Moves this thread into the network namespace `ns` (a `/run/netns/NAME` file).
pub fn enter_net_namespace(ns: &File) -> io::Result<()> {
    // SAFETY: setns on a descriptor `ns` keeps open; no memory is passed.
    if unsafe { libc::setns(ns.as_raw_fd(), libc::CLONE_NEWNET) } < 0 {
        return Err(io::Error::last_os_error());
    }
    Ok(())
}

/// Puts `fd` in non-blocking mode.
pub fn set_nonblocking(fd: BorrowedFd<'_>) -> io::Result<()> {
    let fd = fd.as_raw_fd();
    // SAFETY: F_GETFL and F_SETFL take no pointer; `fd` is open for the borrow's life.
    let flags = unsafe { libc::fcntl(fd, libc::F_GETFL) };
    // SAFETY: as above.
    if flags < 0 || unsafe { libc::fcntl(fd, libc::F_SETFL, flags | libc::O_NONBLOCK) } < 0 {
        return Err(io::Error::last_os_error());
    }
    Ok(())
}

/// Writes `packet` to `fd` in one call (one packet on a TUN device or a packet socket).
pub fn write(fd: BorrowedFd<'_>, packet: &[u8]) -> io::Result<usize> {
    // SAFETY: `packet` is valid for reads of its length for the whole call.
    let n = unsafe { libc::write(fd.as_raw_fd(), packet.as_ptr().cast(), packet.len()) };
    if n < 0 {
        return Err(io::Error::last_os_error());
    }
    Ok(n as usize)
}

/// Reads one packet from `fd` into `buf`; 0 is the end.
pub fn read(fd: BorrowedFd<'_>, buf: &mut [u8]) -> io::Result<usize> {
    // SAFETY: `buf` is valid for writes of its length for the whole call.
    let n = unsafe { libc::read(fd.as_raw_fd(), buf.as_mut_ptr().cast(), buf.len()) };
    if n < 0 {
        return Err(io::Error::last_os_error());
    }
    Ok(n as usize)
}

/// Waits up to `wait` for any of `fds` to be readable: each one's `revents` (POLLIN,
/// POLLERR, POLLHUP, POLLNVAL), all zero at the timeout. ppoll rather than poll for a
/// timeout finer than a millisecond (a packet's delay is due to the microsecond).
pub fn wait_readable<const N: usize>(
    fds: [BorrowedFd<'_>; N],
    wait: Duration,
) -> io::Result<[libc::c_short; N]> {
    let mut polls =
        fds.map(|fd| libc::pollfd { fd: fd.as_raw_fd(), events: libc::POLLIN, revents: 0 });
    let ts = libc::timespec {
        tv_sec: wait.as_secs() as libc::time_t,
        tv_nsec: wait.subsec_nanos() as libc::c_long,
    };
    // SAFETY: `polls` holds N pollfds and `ts` a timespec, both valid for the call; the
    // signal mask pointer may be null (the mask is left as it is).
    let n = unsafe { libc::ppoll(polls.as_mut_ptr(), N as libc::nfds_t, &ts, std::ptr::null()) };
    if n < 0 {
        return Err(io::Error::last_os_error());
    }
    Ok(polls.map(|p| p.revents))
}

/// A pair of connected packet sockets (they keep message boundaries, as TUN devices do).
#[cfg(test)]
pub fn packet_pair() -> io::Result<(std::os::fd::OwnedFd, std::os::fd::OwnedFd)> {
    use std::os::fd::{FromRawFd, OwnedFd};
    let mut fds = [0; 2];
    // SAFETY: `fds` has room for the two descriptors socketpair writes.
    let rc = unsafe { libc::socketpair(libc::AF_UNIX, libc::SOCK_SEQPACKET, 0, fds.as_mut_ptr()) };
    if rc != 0 {
        return Err(io::Error::last_os_error());
    }
    // SAFETY: socketpair succeeded: both descriptors are open and owned by nothing else.
    Ok(unsafe { (OwnedFd::from_raw_fd(fds[0]), OwnedFd::from_raw_fd(fds[1])) })
}
