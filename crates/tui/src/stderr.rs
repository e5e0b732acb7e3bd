//! The process's stderr while the view is up. Whatever writes straight to descriptor 2 (a
//! child that inherited it, as an ssh session or a server does, or code that knows no view)
//! would land on the view's screen wherever the cursor is, and vanish with the alternate
//! screen. So while the view is open, descriptor 2 is the write end of a pipe whose lines a
//! thread of [`Held`] hands to the view (shown there, given back when it closes, to be
//! printed then on the real stderr in their order). [`give_back`] puts the real stderr back
//! on descriptor 2; every path that gives the terminal back calls it first ([`crate::terminal`]),
//! so a panic's message reaches the terminal. A child that outlives the view keeps the pipe
//! as its stderr: what it writes later is passed on to the real stderr as it comes.

use std::io::{self, Write};
use std::os::fd::{AsRawFd, FromRawFd, OwnedFd, RawFd};
use std::sync::{Arc, Mutex, MutexGuard, PoisonError};

/// Where a held line goes: the view's lines, told on the reading thread.
pub type Sink = Box<dyn FnMut(String) + Send>;

/// Lines held at most (a child that floods its stderr must not grow the view without end);
/// those past it are counted and said when the view closes.
pub const HELD_LINES: usize = 10_000;

/// The descriptor redirected and a copy of what it was, while one is.
static REDIRECTED: Mutex<Option<(RawFd, OwnedFd)>> = Mutex::new(None);

/// The pipe's reading end and what became of the bytes read from it so far.
struct Reading {
    pipe: OwnedFd,
    /// The descriptor held: where bytes are passed on once it is given back.
    target: RawFd,
    /// A line begun and not yet ended.
    partial: Vec<u8>,
    /// The view's lines while it is open; `None` once it has closed: passed on as they come.
    sink: Option<Sink>,
    held: usize,
    dropped: usize,
}

/// Descriptor `target`'s writes, held while this lives ([`Held::close`]).
pub struct Held {
    reading: Arc<Mutex<Reading>>,
}

impl Held {
    /// Points `target` (2: the process's stderr) at a new pipe whose lines go to `sink`.
    pub fn start(target: RawFd, sink: Sink) -> io::Result<Held> {
        let mut fds = [0; 2];
        // SAFETY: pipe2(2) fills the two descriptors of the array.
        if unsafe { libc::pipe2(fds.as_mut_ptr(), libc::O_CLOEXEC | libc::O_NONBLOCK) } != 0 {
            return Err(io::Error::last_os_error());
        }
        // SAFETY: the two descriptors pipe2(2) just made, each owned here once.
        let (read, write) = unsafe { (OwnedFd::from_raw_fd(fds[0]), OwnedFd::from_raw_fd(fds[1])) };
        // The write end blocks as a terminal would when full: a writer waits for the thread
        // rather than losing its line to EAGAIN.
        // SAFETY: fcntl(2) on a descriptor owned here.
        unsafe { libc::fcntl(write.as_raw_fd(), libc::F_SETFL, 0) };
        // SAFETY: fcntl(2) F_DUPFD_CLOEXEC of a descriptor number; the copy is owned below.
        let saved = unsafe { libc::fcntl(target, libc::F_DUPFD_CLOEXEC, 3) };
        if saved < 0 {
            return Err(io::Error::last_os_error());
        }
        // SAFETY: the copy fcntl(2) just made, owned here alone.
        let saved = unsafe { OwnedFd::from_raw_fd(saved) };
        let mut redirected = lock(&REDIRECTED);
        // dup2(2) leaves the new descriptor without close-on-exec: children inherit it.
        // SAFETY: dup2(2) between descriptors that are open.
        if unsafe { libc::dup2(write.as_raw_fd(), target) } < 0 {
            return Err(io::Error::last_os_error());
        }
        *redirected = Some((target, saved));
        drop(redirected);
        let reading = Arc::new(Mutex::new(Reading {
            pipe: read,
            target,
            partial: Vec::new(),
            sink: Some(sink),
            held: 0,
            dropped: 0,
        }));
        let read = reading.clone();
        std::thread::Builder::new().name("view-stderr".into()).spawn(move || follow(&read))?;
        Ok(Held { reading })
    }

    /// Gives the real stderr back and hands the view what was written until now (a line
    /// begun and not ended included, and a count of those past [`HELD_LINES`]); what is
    /// written to the pipe after this is passed on to the real stderr.
    pub fn close(self) {
        give_back();
        let mut r = lock(&self.reading);
        // The writes made before the descriptor was given back are all in the pipe now.
        r.read_all();
        let partial = std::mem::take(&mut r.partial);
        if !partial.is_empty() {
            r.hold(&partial);
        }
        let dropped = r.dropped;
        if let Some(mut sink) = r.sink.take() {
            if dropped > 0 {
                sink(format!(
                    "loadlab: note: {dropped} more lines written to stderr while the live view \
                     was open were not kept"
                ));
            }
        }
    }
}

impl Drop for Held {
    fn drop(&mut self) {
        give_back();
        lock(&self.reading).sink = None;
    }
}

/// Puts the real stderr back on its descriptor if it is held; nothing otherwise, so any exit
/// path may call it (a panic's hook included: no allocation, two system calls).
pub fn give_back() {
    let mut redirected = lock(&REDIRECTED);
    if let Some((target, saved)) = redirected.take() {
        // SAFETY: dup2(2) between descriptors that are open; `saved` closes on drop.
        unsafe { libc::dup2(saved.as_raw_fd(), target) };
    }
}

fn lock<T>(m: &Mutex<T>) -> MutexGuard<'_, T> {
    m.lock().unwrap_or_else(PoisonError::into_inner)
}

/// The reading thread: waits for the pipe, reads what came, and ends at end-of-file (every
/// writer gone: the descriptor given back, and the children that inherited it ended).
fn follow(reading: &Mutex<Reading>) {
    let fd = lock(reading).pipe.as_raw_fd();
    loop {
        let mut p = libc::pollfd { fd, events: libc::POLLIN, revents: 0 };
        // SAFETY: poll(2) on one pollfd that lives across the call; the descriptor stays
        // open as long as `reading`, which this thread holds.
        if unsafe { libc::poll(&mut p, 1, -1) } < 0 {
            if io::Error::last_os_error().kind() == io::ErrorKind::Interrupted {
                continue;
            }
            return;
        }
        if !lock(reading).read_all() {
            return;
        }
    }
}

impl Reading {
    /// Reads until the pipe is empty, holding or passing on what it read: false at
    /// end-of-file or on an error.
    fn read_all(&mut self) -> bool {
        let mut buf = [0u8; 4096];
        loop {
            // SAFETY: read(2) into a buffer of the length given, from a descriptor owned here.
            let got =
                unsafe { libc::read(self.pipe.as_raw_fd(), buf.as_mut_ptr().cast(), buf.len()) };
            match usize::try_from(got) {
                Ok(0) => return false,
                Ok(n) => self.took(&buf[..n]),
                Err(_) => {
                    return match io::Error::last_os_error().kind() {
                        io::ErrorKind::WouldBlock => true,
                        io::ErrorKind::Interrupted => continue,
                        _ => false,
                    }
                }
            }
        }
    }

    /// Bytes from the pipe: whole lines to the view while it is open, all to the real stderr
    /// after.
    fn took(&mut self, bytes: &[u8]) {
        if self.sink.is_none() {
            // SAFETY: the descriptor held stays open for the process's life (stderr).
            let mut real =
                std::mem::ManuallyDrop::new(unsafe { std::fs::File::from_raw_fd(self.target) });
            let _ = real.write_all(bytes);
            return;
        }
        self.partial.extend_from_slice(bytes);
        while let Some(end) = self.partial.iter().position(|b| *b == b'\n') {
            let line: Vec<u8> = self.partial.drain(..=end).collect();
            self.hold(&line[..end]);
        }
    }

    /// One line for the view, without its end (`\r\n` as `\n`).
    fn hold(&mut self, line: &[u8]) {
        let line = line.strip_suffix(b"\r").unwrap_or(line);
        let Some(sink) = &mut self.sink else { return };
        if self.held == HELD_LINES {
            self.dropped += 1;
            return;
        }
        self.held += 1;
        sink(String::from_utf8_lossy(line).into_owned());
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::io::Read;
    use std::process::Command;
    use std::time::{Duration, Instant};

    /// A pipe of the test's own, its write end as the descriptor held (so the process's
    /// stderr is left alone) and its read end to see what reaches "the real stderr".
    fn pipe() -> (std::fs::File, OwnedFd) {
        let mut fds = [0; 2];
        // SAFETY: pipe2(2) fills the two descriptors of the array.
        assert_eq!(unsafe { libc::pipe2(fds.as_mut_ptr(), libc::O_CLOEXEC) }, 0);
        // SAFETY: the two descriptors pipe2(2) just made, each owned here once.
        unsafe { (std::fs::File::from_raw_fd(fds[0]), OwnedFd::from_raw_fd(fds[1])) }
    }

    /// One test at a time holds a descriptor: [`give_back`] restores the one held.
    static ONE_AT_A_TIME: Mutex<()> = Mutex::new(());

    fn write(fd: RawFd, bytes: &[u8]) {
        // SAFETY: write(2) of a buffer of the length given.
        let n = unsafe { libc::write(fd, bytes.as_ptr().cast(), bytes.len()) };
        assert_eq!(n, bytes.len() as isize);
    }

    #[test]
    fn writes_while_held_come_back_as_lines_in_order_and_later_ones_pass_through() {
        let _alone = lock(&ONE_AT_A_TIME);
        let (mut real, target) = pipe();
        let fd = target.as_raw_fd();
        let lines = Arc::new(Mutex::new(Vec::new()));
        let into = lines.clone();
        let held = Held::start(fd, Box::new(move |l| lock(&into).push(l))).unwrap();
        write(fd, b"one\r\ntwo\nthree, ");
        // A child that inherited the descriptor writes while held and after.
        let mut child = Command::new("sh")
            .args(["-c", &format!("echo from a child >&{fd}; sleep 0.5; echo later >&{fd}")])
            .spawn()
            .unwrap();
        let started = Instant::now();
        while lock(&lines).len() < 3 && started.elapsed() < Duration::from_secs(10) {
            std::thread::sleep(Duration::from_millis(10));
        }
        write(fd, b"unended");
        held.close();
        assert_eq!(*lock(&lines), ["one", "two", "three, from a child", "unended"]);
        // Given back: this process's writes go to the real one at once, the child's through
        // the pipe as they come.
        write(fd, b"mine\n");
        child.wait().unwrap();
        let (mut seen, mut buf) = (Vec::new(), [0u8; 64]);
        let started = Instant::now();
        while seen.len() < b"mine\nlater\n".len() && started.elapsed() < Duration::from_secs(10) {
            let mut p = libc::pollfd { fd: real.as_raw_fd(), events: libc::POLLIN, revents: 0 };
            // SAFETY: poll(2) on one pollfd that lives across the call.
            if unsafe { libc::poll(&mut p, 1, 100) } == 1 {
                let n = real.read(&mut buf).unwrap();
                seen.extend_from_slice(&buf[..n]);
            }
        }
        assert_eq!(String::from_utf8_lossy(&seen), "mine\nlater\n");
    }

    #[test]
    fn a_flood_is_held_up_to_the_bound_and_the_rest_counted() {
        let _alone = lock(&ONE_AT_A_TIME);
        let (_real, target) = pipe();
        let fd = target.as_raw_fd();
        let lines = Arc::new(Mutex::new(Vec::new()));
        let into = lines.clone();
        let held = Held::start(fd, Box::new(move |l| lock(&into).push(l))).unwrap();
        let flood: String = (0..HELD_LINES + 5).map(|i| format!("{i}\n")).collect();
        write(fd, flood.as_bytes());
        held.close();
        let lines = lock(&lines);
        assert_eq!(lines.len(), HELD_LINES + 1);
        assert_eq!(lines[HELD_LINES - 1], (HELD_LINES - 1).to_string());
        assert!(
            lines[HELD_LINES].contains("5 more lines written to stderr"),
            "{}",
            lines[HELD_LINES]
        );
    }
}
