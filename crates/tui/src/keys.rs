//! The keys the view answers (`q`, Ctrl-C), read from the terminal with poll(2) and read(2)
//! rather than by crossterm's event reader: a terminal that hangs up (its window closed, its
//! tmux server killed) reads as end-of-file at once and for ever, which that reader retries
//! without end: a thread at 100% of a CPU that the command, stopped by the hang-up's SIGHUP,
//! then waits for to give the terminal back. Here end-of-file is the terminal gone.

use std::io;
use std::os::fd::{FromRawFd, OwnedFd, RawFd};
use std::time::Duration;

/// What the terminal gave within one wait.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Input {
    /// Nothing, or keys the view does not answer.
    Nothing,
    /// `q`, or Ctrl-C (in raw mode the byte 0x03, not a signal).
    Stop,
    /// End-of-file, a hang-up or an error: no terminal to read or draw on any more.
    Gone,
}

/// Where the keys come from: the standard input if it is the terminal, else the process's
/// terminal (`/dev/tty`, as when the input is redirected); `None` without one (the view then
/// only draws).
pub fn terminal() -> Option<OwnedFd> {
    // SAFETY: isatty(3) on a descriptor number.
    if unsafe { libc::isatty(libc::STDIN_FILENO) } == 1 {
        // SAFETY: dup(2) of the standard input, a terminal.
        let fd = unsafe { libc::dup(libc::STDIN_FILENO) };
        // SAFETY: a descriptor dup(2) just made, owned here alone.
        return (fd >= 0).then(|| unsafe { OwnedFd::from_raw_fd(fd) });
    }
    std::fs::File::open("/dev/tty").ok().map(OwnedFd::from)
}

/// Waits up to `timeout` for keys on `fd` and reads what came.
pub fn wait(fd: RawFd, timeout: Duration) -> Input {
    let mut p = libc::pollfd { fd, events: libc::POLLIN, revents: 0 };
    let ms = i32::try_from(timeout.as_millis()).unwrap_or(i32::MAX);
    // SAFETY: poll(2) on one pollfd that lives across the call.
    let ready = unsafe { libc::poll(&mut p, 1, ms) };
    if ready < 0 {
        return interrupted_or_gone();
    }
    if ready == 0 {
        return Input::Nothing;
    }
    if p.revents & libc::POLLIN == 0 {
        return Input::Gone;
    }
    let mut buf = [0u8; 64];
    // SAFETY: read(2) into a buffer of the length given.
    let got = unsafe { libc::read(fd, buf.as_mut_ptr().cast(), buf.len()) };
    match usize::try_from(got) {
        Ok(0) => Input::Gone,
        Ok(n) if buf[..n].iter().any(|b| *b == b'q' || *b == 0x03) => Input::Stop,
        Ok(_) => Input::Nothing,
        Err(_) => interrupted_or_gone(),
    }
}

/// A failed call: a signal or a spurious wake-up is nothing; anything else, the terminal gone.
fn interrupted_or_gone() -> Input {
    match io::Error::last_os_error().kind() {
        io::ErrorKind::Interrupted | io::ErrorKind::WouldBlock => Input::Nothing,
        _ => Input::Gone,
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::io::Write;
    use std::os::fd::AsRawFd;

    fn pipe() -> (OwnedFd, std::fs::File) {
        let mut fds = [0; 2];
        // SAFETY: pipe(2) fills the two descriptors of the array.
        assert_eq!(unsafe { libc::pipe(fds.as_mut_ptr()) }, 0);
        // SAFETY: the two descriptors pipe(2) just made, each owned here once.
        unsafe { (OwnedFd::from_raw_fd(fds[0]), std::fs::File::from_raw_fd(fds[1])) }
    }

    #[test]
    fn q_and_ctrl_c_stop_other_keys_do_not_and_end_of_file_is_the_terminal_gone() {
        let (read, mut write) = pipe();
        let fd = read.as_raw_fd();
        let frame = Duration::from_millis(20);
        assert_eq!(wait(fd, frame), Input::Nothing);
        write.write_all(b"x").unwrap();
        assert_eq!(wait(fd, frame), Input::Nothing);
        write.write_all(b"q").unwrap();
        assert_eq!(wait(fd, frame), Input::Stop);
        write.write_all(&[0x03]).unwrap();
        assert_eq!(wait(fd, frame), Input::Stop);
        drop(write);
        // A hung-up terminal: end-of-file on every read, answered once and for all.
        for _ in 0..3 {
            assert_eq!(wait(fd, frame), Input::Gone);
        }
    }
}
