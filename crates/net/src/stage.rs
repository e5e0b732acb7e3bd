//! loadlab's own delay-and-loss stage, for kernels without netem (this machine's and CI's):
//! a link behind a profile with delay, jitter or loss is a pair of TUN devices, one in the
//! client's namespace and one in the stack's, and this stage carries every packet from one to
//! the other, holding it for its delay and dropping it by the loss rate (the design of
//! mahimahi's DelayShell and LossShell). Bandwidth stays with `tc` (tbf on each TUN's egress),
//! so a packet queues at the bottleneck first and then travels: a link, then its propagation.
//!
//! The stage is a process of its own (`loadlab net-stage ...`), started by [`crate::Link`] and
//! ending by itself when either device goes away.

use std::collections::VecDeque;
use std::ffi::CString;
use std::fs::File;
use std::io;
use std::os::fd::{AsFd, BorrowedFd, OwnedFd};
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::OnceLock;
use std::time::{Duration, Instant};

use rand::rngs::SmallRng;
use rand::{Rng, SeedableRng};

use crate::sys;
use crate::Profile;
/// virtio_net_hdr in front of every packet when offloads are on.
const VNET_HDR: usize = 10;
/// Bytes a direction may hold in flight before it drops at the tail: far above what any
/// profile's rate times its delay needs (1 Gbit/s x 200 ms = 25 MB).
const QUEUE_BYTES: usize = 64 << 20;
/// Packets read from one device before the other gets its turn.
const BATCH: usize = 64;

/// The program that carries the stage: the `loadlab` binary, set by its `main`.
static PROGRAM: OnceLock<PathBuf> = OnceLock::new();

/// Names the executable whose `net-stage` subcommand runs [`main`].
pub fn set_program(path: PathBuf) {
    let _ = PROGRAM.set(path);
}

pub(crate) fn program() -> Option<&'static Path> {
    PROGRAM.get().map(PathBuf::as_path)
}

/// What one stage did, one direction each.
#[derive(Clone, Copy, Debug, Default, PartialEq)]
pub struct Counts {
    pub forwarded: u64,
    /// Dropped by the loss rate.
    pub lost: u64,
    /// Dropped because a queue was full: the stage's own, or the far device's.
    pub overflowed: u64,
}

/// How the stage treats each packet.
#[derive(Clone, Copy, Debug)]
pub struct Shape {
    pub delay: Duration,
    pub jitter: Duration,
    pub loss: f64,
}

impl From<&Profile> for Shape {
    fn from(p: &Profile) -> Shape {
        Shape { delay: p.delay, jitter: p.jitter, loss: p.loss }
    }
}

/// Whether the devices carry GSO packets (up to 64 KB, one syscall each way) or wire-sized ones.
/// Loss is drawn per packet the stage sees, so a lossy profile keeps packets wire-sized to
/// lose what a real link would; a loss-free one takes offloads, which lets the stage keep up
/// with 1 Gbit/s on one core.
pub fn offloads(shape: &Shape) -> bool {
    shape.loss == 0.0
}

/// Starts the stage for `link` as a process of its own session (it outlives the `stack up`
/// that made it), and waits for it to say it is attached. Returns its pid.
pub(crate) fn spawn(program: &Path, link: &crate::Link, shape: &Shape) -> Result<u32, String> {
    use std::io::Read as _;
    use std::process::{Command, Stdio};
    let mut command = Command::new(program);
    command
        .args(["net-stage", &link.host_if, &link.namespace, &link.ns_if])
        .arg(shape.delay.as_micros().to_string())
        .arg(shape.jitter.as_micros().to_string())
        .arg(shape.loss.to_string())
        .stdin(Stdio::null())
        .stdout(Stdio::piped())
        .stderr(Stdio::null());
    sys::new_session_at_exec(&mut command);
    let mut child = command
        .spawn()
        .map_err(|e| format!("starting the delay stage ({}): {e}", program.display()))?;
    // It writes one line and closes its stdout, or exits: either ends this read.
    let mut said = String::new();
    let _ = child.stdout.take().expect("piped").read_to_string(&mut said);
    if said.trim() == "ready" {
        // Reaped by whoever outlives it; the stage is not this process's child for long.
        let pid = child.id();
        std::thread::spawn(move || child.wait());
        Ok(pid)
    } else {
        let _ = child.kill();
        let _ = child.wait();
        Err(format!("the delay stage did not start: {}", said.trim()))
    }
}

/// Stops the stage `pid` if it is still one (its devices' deletion normally ended it).
pub(crate) fn stop(pid: u32) {
    let cmdline = std::fs::read(format!("/proc/{pid}/cmdline")).unwrap_or_default();
    if cmdline.split(|b| *b == 0).any(|arg| arg == b"net-stage") {
        sys::terminate(pid);
    }
}

/// `loadlab net-stage HOST_IF NAMESPACE NS_IF DELAY_US JITTER_US LOSS`: attaches to both
/// devices, says `ready` on stdout, and forwards until a device goes away. Returns the
/// process's exit code.
pub fn main(args: &[String]) -> i32 {
    let usage = "loadlab net-stage: HOST_IF NAMESPACE NS_IF DELAY_US JITTER_US LOSS";
    let [host_if, namespace, ns_if, delay, jitter, loss] = args else {
        eprintln!("{usage}");
        return 2;
    };
    let (Ok(delay), Ok(jitter), Ok(loss)) =
        (delay.parse::<u64>(), jitter.parse::<u64>(), loss.parse::<f64>())
    else {
        eprintln!("{usage}");
        return 2;
    };
    let shape =
        Shape { delay: Duration::from_micros(delay), jitter: Duration::from_micros(jitter), loss };
    let offload = offloads(&shape);
    let attached = attach(host_if, offload).and_then(|host| {
        enter_namespace(namespace)?;
        Ok((host, attach(ns_if, offload)?))
    });
    let (host, inner) = match attached {
        Ok(fds) => fds,
        Err(e) => {
            println!("error: {e}");
            return 1;
        }
    };
    println!("ready");
    // Closes stdout so that whoever waits for `ready` sees the end of it.
    sys::close_stdout();
    let stop = AtomicBool::new(false);
    match forward(&host, &inner, &shape, offload, &stop) {
        Ok(_) => 0,
        Err(_) => 1,
    }
}

/// Opens `/dev/net/tun` and attaches to the persistent device `name` of the current namespace.
fn attach(name: &str, offload: bool) -> io::Result<OwnedFd> {
    let file = File::options().read(true).write(true).open("/dev/net/tun")?;
    let fd = OwnedFd::from(file);
    let mut req = [0u8; 40]; // struct ifreq: the name, then the flags
    let cname = CString::new(name).map_err(|_| io::Error::other("bad device name"))?;
    let bytes = cname.as_bytes();
    if bytes.len() >= 16 {
        return Err(io::Error::other(format!("device name {name} is too long")));
    }
    req[..bytes.len()].copy_from_slice(bytes);
    let mut flags = (libc::IFF_TUN | libc::IFF_NO_PI) as u16;
    if offload {
        flags |= libc::IFF_VNET_HDR as u16;
    }
    req[16..18].copy_from_slice(&flags.to_ne_bytes());
    sys::tun_set_iff(fd.as_fd(), &mut req)
        .map_err(|e| io::Error::other(format!("attaching to {name}: {e}")))?;
    if offload {
        let features = libc::TUN_F_CSUM | libc::TUN_F_TSO4 | libc::TUN_F_TSO6;
        sys::tun_set_offload(fd.as_fd(), features)?;
    }
    sys::set_nonblocking(fd.as_fd())?;
    Ok(fd)
}

fn enter_namespace(name: &str) -> io::Result<()> {
    let ns = File::open(Path::new("/run/netns").join(name))?;
    sys::enter_net_namespace(&ns)
}

/// Packets on their way one way, each with the instant it may leave.
struct Direction {
    /// Each packet's due instant, its buffer and its length (buffers keep their full size, so
    /// that reuse never clears or grows one).
    queue: VecDeque<(Instant, Vec<u8>, usize)>,
    bytes: usize,
    /// The last due instant given (see [`Direction::take`]).
    last_due: Instant,
    counts: Counts,
}

impl Direction {
    fn new() -> Direction {
        Direction {
            queue: VecDeque::new(),
            bytes: 0,
            last_due: Instant::now(),
            counts: Counts::default(),
        }
    }

    /// Writes to `to`, in order, every packet due by `now`; its buffer goes back to `spare`.
    fn release(&mut self, to: BorrowedFd<'_>, now: Instant, spare: &mut Vec<Vec<u8>>) {
        while self.queue.front().is_some_and(|(due, _, _)| *due <= now) {
            let (_, packet, len) = self.queue.pop_front().expect("a front");
            self.bytes -= len;
            // A full device queue on the far side drops the packet, as a link would.
            let wrote = sys::write(to, &packet[..len]);
            if wrote.is_ok_and(|n| n == len) {
                self.counts.forwarded += 1;
            } else {
                self.counts.overflowed += 1;
            }
            spare.push(packet);
        }
    }

    /// How long until the next packet is due, if one is held.
    fn next_due(&self, now: Instant) -> Option<Duration> {
        self.queue.front().map(|(due, _, _)| due.saturating_duration_since(now))
    }

    /// Takes a packet just read (`len` bytes of `buf`): lost by the loss rate, dropped when the
    /// queue is full, or held until its delay (with jitter) is over. A buffer not kept goes
    /// back to `spare`.
    fn take(&mut self, buf: Vec<u8>, len: usize, pace: &mut Pace<'_>, spare: &mut Vec<Vec<u8>>) {
        let shape = pace.shape;
        if shape.loss > 0.0 && pace.rng.random::<f64>() < shape.loss {
            self.counts.lost += 1;
            spare.push(buf);
            return;
        }
        if self.bytes + len > QUEUE_BYTES {
            self.counts.overflowed += 1;
            spare.push(buf);
            return;
        }
        let now = Instant::now();
        let mut due = now + shape.delay;
        if !shape.jitter.is_zero() {
            let j = shape.jitter.as_secs_f64() * pace.rng.random_range(-1.0..=1.0);
            due = if j >= 0.0 {
                due + Duration::from_secs_f64(j)
            } else {
                due.checked_sub(Duration::from_secs_f64(-j)).unwrap_or(now).max(now)
            };
        }
        // Jitter never reorders a direction (a path does not).
        due = due.max(self.last_due);
        self.last_due = due;
        self.bytes += len;
        self.queue.push_back((due, buf, len));
    }
}

/// What decides each packet's fate: the shape, and the draws of loss and jitter.
struct Pace<'a> {
    shape: &'a Shape,
    rng: SmallRng,
}

/// A device went away (or broke): the link is over.
struct Ended;

/// Carries packets between `a` and `b` (each read is one packet, each write one), delayed and
/// dropped as `shape` says, until a device fails (it was deleted) or `stop` is set. Returns
/// what went a→b and b→a.
pub fn forward(
    a: &OwnedFd,
    b: &OwnedFd,
    shape: &Shape,
    offload: bool,
    stop: &AtomicBool,
) -> io::Result<(Counts, Counts)> {
    // Loss needs no secret, only a different draw each run.
    let seed = std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map_or(0, |d| d.as_nanos() as u64)
        ^ u64::from(std::process::id());
    let mut pace = Pace { shape, rng: SmallRng::seed_from_u64(seed) };
    let mut dirs = [Direction::new(), Direction::new()];
    let fds = [a.as_fd(), b.as_fd()];
    let mut spare: Vec<Vec<u8>> = Vec::new();
    // Without offloads a device hands over nothing above its MTU (1500, as ip tuntap makes it).
    let size = if offload { VNET_HDR + 65_536 } else { 4_096 };
    while !stop.load(Ordering::Relaxed) {
        // Everything due leaves first, in order.
        let now = Instant::now();
        for (i, dir) in dirs.iter_mut().enumerate() {
            dir.release(fds[1 - i], now, &mut spare);
        }
        // Sleep until a packet arrives or the next one is due (at most 100 ms, for `stop`).
        let idle = Duration::from_millis(100);
        let wait = dirs.iter().filter_map(|d| d.next_due(now)).min().unwrap_or(idle).min(idle);
        let ready = match sys::wait_readable(fds, wait) {
            Ok(ready) => ready,
            Err(e) if e.kind() == io::ErrorKind::Interrupted => continue,
            Err(e) => return Err(e),
        };
        for (i, revents) in ready.into_iter().enumerate() {
            if revents & (libc::POLLERR | libc::POLLHUP | libc::POLLNVAL) != 0 {
                return Ok((dirs[0].counts, dirs[1].counts));
            }
            if revents & libc::POLLIN == 0 {
                continue;
            }
            if let Err(Ended) = read_batch(fds[i], &mut dirs[i], size, &mut pace, &mut spare) {
                return Ok((dirs[0].counts, dirs[1].counts));
            }
        }
    }
    Ok((dirs[0].counts, dirs[1].counts))
}

/// Reads up to [`BATCH`] packets from `from` into `dir` (buffers of `size` bytes, reused from
/// `spare`), until the device has no more for now.
fn read_batch(
    from: BorrowedFd<'_>,
    dir: &mut Direction,
    size: usize,
    pace: &mut Pace<'_>,
    spare: &mut Vec<Vec<u8>>,
) -> Result<(), Ended> {
    for _ in 0..BATCH {
        let mut buf = spare.pop().unwrap_or_else(|| vec![0; size]);
        match sys::read(from, &mut buf) {
            Ok(0) => {
                spare.push(buf);
                return Err(Ended);
            }
            Ok(len) => dir.take(buf, len, pace, spare),
            Err(e) => {
                spare.push(buf);
                if e.kind() == io::ErrorKind::WouldBlock {
                    return Ok(());
                }
                // The device is gone (EBADFD) or broken.
                return Err(Ended);
            }
        }
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::sync::Arc;

    /// Runs a stage between two socket pairs: the test writes at the outer ends and reads
    /// what comes out at the other side.
    fn staged(
        shape: Shape,
    ) -> (OwnedFd, OwnedFd, Arc<AtomicBool>, std::thread::JoinHandle<(Counts, Counts)>) {
        // Packet sockets stand in for the two TUN devices.
        let (left_outer, left_inner) = sys::packet_pair().unwrap();
        let (right_inner, right_outer) = sys::packet_pair().unwrap();
        sys::set_nonblocking(left_inner.as_fd()).unwrap();
        sys::set_nonblocking(right_inner.as_fd()).unwrap();
        let stop = Arc::new(AtomicBool::new(false));
        let s = stop.clone();
        let stage = std::thread::spawn(move || {
            forward(&left_inner, &right_inner, &shape, false, &s).unwrap()
        });
        (left_outer, right_outer, stop, stage)
    }

    fn send(fd: &OwnedFd, payload: &[u8]) {
        assert_eq!(sys::write(fd.as_fd(), payload).unwrap(), payload.len());
    }

    fn recv(fd: &OwnedFd, timeout: Duration) -> Option<Vec<u8>> {
        let [revents] = sys::wait_readable([fd.as_fd()], timeout).unwrap();
        if revents & libc::POLLIN == 0 {
            return None;
        }
        let mut buf = vec![0u8; 2048];
        let n = sys::read(fd.as_fd(), &mut buf).unwrap_or(0);
        (n > 0).then(|| {
            buf.truncate(n);
            buf
        })
    }

    #[test]
    fn packets_are_held_for_their_delay_both_ways_and_keep_their_order() {
        let delay = Duration::from_millis(30);
        let (left, right, stop, stage) =
            staged(Shape { delay, jitter: Duration::from_millis(5), loss: 0.0 });
        let sent = Instant::now();
        for i in 0..20u8 {
            send(&left, &[i; 100]);
        }
        let mut order = Vec::new();
        let mut first = None;
        for _ in 0..20 {
            let p = recv(&right, Duration::from_secs(2)).expect("a packet through the stage");
            first.get_or_insert(sent.elapsed());
            order.push(p[0]);
        }
        let (first, last) = (first.unwrap(), sent.elapsed());
        // No packet leaves before delay - jitter (25 ms). The last comes after delay + jitter
        // plus what a loaded machine adds to a wake-up: bounded loosely, as held and let go,
        // not as a measure of precision (docs/lab.md has the measured one).
        assert!(first >= Duration::from_millis(25), "{first:?}");
        assert!(last < Duration::from_secs(1), "{last:?}");
        assert_eq!(order, (0..20).collect::<Vec<_>>(), "jitter reordered packets");
        // And back.
        let back = Instant::now();
        send(&right, b"reply");
        assert_eq!(recv(&left, Duration::from_secs(2)).as_deref(), Some(&b"reply"[..]));
        assert!(back.elapsed() >= Duration::from_millis(25), "{:?}", back.elapsed());
        stop.store(true, Ordering::Relaxed);
        let (ab, ba) = stage.join().unwrap();
        assert_eq!((ab.forwarded, ba.forwarded, ab.lost), (20, 1, 0));
    }

    #[test]
    fn loss_drops_about_the_profiles_share() {
        let (left, right, stop, stage) =
            staged(Shape { delay: Duration::ZERO, jitter: Duration::ZERO, loss: 0.10 });
        let n = 4000;
        let mut received = 0;
        for i in 0..n {
            send(&left, &(i as u32).to_ne_bytes());
            // Drain as we go: a socket pair holds far fewer packets than a TUN's queue.
            while recv(&right, Duration::ZERO).is_some() {
                received += 1;
            }
        }
        while recv(&right, Duration::from_millis(200)).is_some() {
            received += 1;
        }
        stop.store(true, Ordering::Relaxed);
        let (ab, _) = stage.join().unwrap();
        // A stage kept off the CPU past the wait above wrote its last packets after it.
        while recv(&right, Duration::ZERO).is_some() {
            received += 1;
        }
        let accounted = ab.forwarded + ab.lost + ab.overflowed;
        assert_eq!(accounted, n as u64, "every packet is accounted for");
        assert_eq!(received, ab.forwarded);
        // 10% of what was not refused by a full socket: binomial sd is 19; 5 sd either side.
        assert!((305..=495).contains(&ab.lost), "lost {} of {n}", ab.lost);
    }

    #[test]
    fn the_stage_ends_when_a_side_goes_away() {
        let (left, right, _stop, stage) =
            staged(Shape { delay: Duration::ZERO, jitter: Duration::ZERO, loss: 0.0 });
        drop(left);
        let done = Instant::now();
        while !stage.is_finished() && done.elapsed() < Duration::from_secs(2) {
            std::thread::sleep(Duration::from_millis(10));
        }
        assert!(stage.is_finished(), "the stage outlived its device");
        drop(right);
    }
}
