//! The engine's system calls: every `unsafe` call into libc lives here, behind a safe wrapper
//! that states what the kernel promises and what the caller must hold. What std does not give:
//! a thread's own CPU time and the time it waited for a CPU, CPU affinity, the open-file limit,
//! socket options and arrival stamps, TCP_INFO, the timerfd and absolute sleeps of the open
//! loop's schedule, and the machine's interface addresses.
//!
//! Wrappers that the workers call per request or per wake-up (`recv_stamped`,
//! `arm_timerfd_at`, `sleep_until`, `bind_address_no_port`) are `#[inline]` and make exactly
//! the one system call they wrap, without allocating.

use std::ffi::CStr;
use std::io;
use std::net::{IpAddr, Ipv4Addr, Ipv6Addr};
use std::os::fd::{AsRawFd, BorrowedFd, FromRawFd, OwnedFd};
use std::time::Duration;

/// CPU time spent by the calling thread, split into user and system time.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct CpuTime {
    pub user: Duration,
    pub sys: Duration,
}

impl CpuTime {
    /// The calling thread's CPU time so far (getrusage(RUSAGE_THREAD), Linux only).
    pub fn thread() -> CpuTime {
        thread_rusage().map_or_else(CpuTime::default, |ru| CpuTime::from_rusage(&ru))
    }

    fn from_rusage(ru: &libc::rusage) -> CpuTime {
        let tv = |t: libc::timeval| {
            Duration::from_secs(t.tv_sec as u64) + Duration::from_micros(t.tv_usec as u64)
        };
        CpuTime { user: tv(ru.ru_utime), sys: tv(ru.ru_stime) }
    }

    pub fn total(&self) -> Duration {
        self.user + self.sys
    }

    pub fn since(&self, earlier: &CpuTime) -> CpuTime {
        CpuTime {
            user: self.user.saturating_sub(earlier.user),
            sys: self.sys.saturating_sub(earlier.sys),
        }
    }
}

/// A thread's account with the scheduler: the CPU it used, how long it waited for a CPU while
/// it was runnable, and how often it was taken off a CPU it still wanted. Read at the start and
/// the end of the measured window, never per request.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct ThreadAccount {
    pub cpu: CpuTime,
    /// Time spent runnable but not running (the scheduler's run delay, schedstat's second
    /// field): other work held the CPUs this thread may use.
    pub cpu_wait: Duration,
    /// Involuntary context switches (preemptions): a busy thread taken off its CPU.
    pub involuntary_switches: u64,
}

impl ThreadAccount {
    /// The calling thread's account so far. The run delay comes from
    /// /proc/thread-self/schedstat (kernel 3.17+, CONFIG_SCHED_INFO); where it cannot be read
    /// it stays zero and only the switch count remains.
    pub fn thread() -> ThreadAccount {
        let (cpu, involuntary_switches) = match thread_rusage() {
            Some(ru) => (CpuTime::from_rusage(&ru), ru.ru_nivcsw.max(0) as u64),
            None => (CpuTime::default(), 0),
        };
        let cpu_wait = std::fs::read_to_string("/proc/thread-self/schedstat")
            .ok()
            .and_then(|s| parse_run_delay(&s))
            .unwrap_or_default();
        ThreadAccount { cpu, cpu_wait, involuntary_switches }
    }

    pub fn since(&self, earlier: &ThreadAccount) -> ThreadAccount {
        ThreadAccount {
            cpu: self.cpu.since(&earlier.cpu),
            cpu_wait: self.cpu_wait.saturating_sub(earlier.cpu_wait),
            involuntary_switches: self
                .involuntary_switches
                .saturating_sub(earlier.involuntary_switches),
        }
    }
}

/// getrusage(RUSAGE_THREAD) of the calling thread (Linux 2.6.26+); `None` if it fails.
fn thread_rusage() -> Option<libc::rusage> {
    // SAFETY: rusage is plain integers and timevals, for which all-zero bytes are a valid
    // value.
    let mut ru: libc::rusage = unsafe { std::mem::zeroed() };
    // SAFETY: `ru` is a live, writable rusage; the kernel writes exactly one rusage into it
    // and keeps no pointer to it after the call.
    let rc = unsafe { libc::getrusage(libc::RUSAGE_THREAD, &mut ru) };
    (rc == 0).then_some(ru)
}

/// The run delay of a schedstat line: "time on CPU (ns) time waiting to run (ns) slices".
fn parse_run_delay(line: &str) -> Option<Duration> {
    let ns: u64 = line.split_whitespace().nth(1)?.parse().ok()?;
    Some(Duration::from_nanos(ns))
}

/// The machine's CPU counters (first line of /proc/stat), in clock ticks: busy and total.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct MachineCpu {
    pub busy: u64,
    pub total: u64,
}

impl MachineCpu {
    /// The counters now; `None` when /proc/stat cannot be read.
    pub fn now() -> Option<MachineCpu> {
        parse_machine_cpu(&std::fs::read_to_string("/proc/stat").ok()?)
    }

    /// The busy share of every CPU of the machine since `earlier` (1.0 = all busy).
    pub fn busy_since(&self, earlier: &MachineCpu) -> Option<f64> {
        let total = self.total.checked_sub(earlier.total).filter(|&t| t > 0)?;
        Some(self.busy.saturating_sub(earlier.busy) as f64 / total as f64)
    }
}

/// "cpu user nice system idle iowait irq softirq steal ...": idle and iowait are not busy;
/// guest time is already inside user.
fn parse_machine_cpu(text: &str) -> Option<MachineCpu> {
    let line = text.lines().find(|l| l.starts_with("cpu "))?;
    let fields: Vec<u64> = line.split_whitespace().skip(1).filter_map(|f| f.parse().ok()).collect();
    let total: u64 = fields.iter().take(8).sum();
    let idle = fields.get(3)? + fields.get(4).unwrap_or(&0);
    Some(MachineCpu { busy: total.saturating_sub(idle), total })
}

/// The CPUs this process may run on (its affinity mask), in ascending order.
pub fn allowed_cpus() -> Vec<usize> {
    let mut set = empty_cpu_set();
    // SAFETY: the kernel writes at most the size we pass (that of `set`, a live local) into
    // `set`; pid 0 is the calling thread.
    let rc =
        unsafe { libc::sched_getaffinity(0, std::mem::size_of::<libc::cpu_set_t>(), &mut set) };
    if rc != 0 {
        let n = std::thread::available_parallelism().map_or(1, |n| n.get());
        return (0..n).collect();
    }
    // SAFETY: CPU_ISSET only reads the bit of `c` in `set`, and every `c` is below
    // CPU_SETSIZE, the number of bits a cpu_set_t holds.
    (0..libc::CPU_SETSIZE as usize).filter(|&c| unsafe { libc::CPU_ISSET(c, &set) }).collect()
}

/// A cpu_set_t with no CPU in it.
fn empty_cpu_set() -> libc::cpu_set_t {
    // SAFETY: cpu_set_t is a plain bitmask; all-zero bytes are the empty set (what CPU_ZERO
    // makes).
    unsafe { std::mem::zeroed() }
}

/// Pins the calling thread to one CPU.
pub fn pin_current_thread(cpu: usize) -> io::Result<()> {
    if cpu >= libc::CPU_SETSIZE as usize {
        return Err(io::Error::from_raw_os_error(libc::EINVAL));
    }
    let mut set = empty_cpu_set();
    // SAFETY: CPU_SET writes only the bit of `cpu` in `set`, and `cpu` was checked to be below
    // CPU_SETSIZE above.
    unsafe { libc::CPU_SET(cpu, &mut set) };
    // SAFETY: the kernel reads at most the size we pass (that of `set`, a live local); pid 0
    // is the calling thread.
    let rc = unsafe { libc::sched_setaffinity(0, std::mem::size_of::<libc::cpu_set_t>(), &set) };
    if rc != 0 {
        return Err(io::Error::last_os_error());
    }
    Ok(())
}

/// Raises the soft RLIMIT_NOFILE to the hard limit, as far as the kernel allows, and returns
/// the (soft, hard) limits now in force. Every connection costs a descriptor; the default
/// soft limit of 1024 would otherwise cap a run far below what the machine can do.
pub fn raise_fd_limit() -> (u64, u64) {
    let mut lim = libc::rlimit { rlim_cur: 0, rlim_max: 0 };
    // SAFETY: the kernel writes one rlimit into `lim`, a live local, and keeps no pointer.
    if unsafe { libc::getrlimit(libc::RLIMIT_NOFILE, &mut lim) } != 0 {
        return (0, 0);
    }
    if lim.rlim_cur < lim.rlim_max {
        let want = libc::rlimit { rlim_cur: lim.rlim_max, rlim_max: lim.rlim_max };
        // SAFETY: the kernel only reads the rlimit `want` points to, during the call.
        if unsafe { libc::setrlimit(libc::RLIMIT_NOFILE, &want) } == 0 {
            lim.rlim_cur = lim.rlim_max;
        }
    }
    (lim.rlim_cur, lim.rlim_max)
}

/// The (soft, hard) RLIMIT_NOFILE in force, as the process was started with it (before
/// [`raise_fd_limit`]); (0, 0) when it cannot be read.
pub fn fd_limit() -> (u64, u64) {
    let mut lim = libc::rlimit { rlim_cur: 0, rlim_max: 0 };
    // SAFETY: getrlimit writes into the struct we pass and has no other effect.
    if unsafe { libc::getrlimit(libc::RLIMIT_NOFILE, &mut lim) } != 0 {
        return (0, 0);
    }
    (lim.rlim_cur, lim.rlim_max)
}

/// CPUs online in the machine (not only those this process may use: [`allowed_cpus`]).
pub fn online_cpus() -> i64 {
    // SAFETY: sysconf has no preconditions.
    let n = unsafe { libc::sysconf(libc::_SC_NPROCESSORS_ONLN) };
    n as i64
}

/// Sets an integer socket option on `fd`.
#[inline]
fn set_int_option(
    fd: BorrowedFd<'_>,
    level: libc::c_int,
    name: libc::c_int,
    value: libc::c_int,
) -> io::Result<()> {
    // SAFETY: `fd` is an open descriptor for the borrow's lifetime (BorrowedFd's promise), and
    // the kernel reads exactly `optlen` bytes, the size of `value`, a live local, during the
    // call. An option the socket does not know fails with an error, not undefined behaviour.
    let rc = unsafe {
        libc::setsockopt(
            fd.as_raw_fd(),
            level,
            name,
            (&value as *const libc::c_int).cast(),
            std::mem::size_of::<libc::c_int>() as libc::socklen_t,
        )
    };
    if rc != 0 {
        return Err(io::Error::last_os_error());
    }
    Ok(())
}

/// Asks the kernel to stamp what `fd` (a TCP socket) receives with the time it arrived
/// (SO_TIMESTAMPNS), read back by [`recv_stamped`].
pub fn stamp_arrivals(fd: BorrowedFd<'_>) -> io::Result<()> {
    set_int_option(fd, libc::SOL_SOCKET, libc::SO_TIMESTAMPNS, 1)
}

/// Lets a socket bound to a source address with port 0 leave the port to connect()
/// (IP_BIND_ADDRESS_NO_PORT, Linux 4.2), so that many connections can share one source port
/// toward different destinations; without it, bind() would reserve a port for each socket and
/// exhaust them early. Called once per new connection, before bind().
#[inline]
pub(crate) fn bind_address_no_port(fd: BorrowedFd<'_>) -> io::Result<()> {
    set_int_option(fd, libc::IPPROTO_IP, libc::IP_BIND_ADDRESS_NO_PORT, 1)
}

/// `recv` that also returns when the last segment read arrived (CLOCK_REALTIME), when the
/// socket stamps arrivals ([`stamp_arrivals`]). One recvmsg, no allocation: the control
/// message lands in a buffer on the stack.
#[inline]
pub fn recv_stamped(
    fd: BorrowedFd<'_>,
    buf: &mut [u8],
) -> io::Result<(usize, Option<std::time::SystemTime>)> {
    let mut iov = libc::iovec { iov_base: buf.as_mut_ptr().cast(), iov_len: buf.len() };
    // Room for one cmsghdr and a timespec, aligned as cmsg wants (u64 is at least as aligned
    // as cmsghdr's size_t on Linux).
    let mut control = [0u64; 8];
    // SAFETY: msghdr is plain integers and pointers, for which all-zero bytes (null pointers,
    // zero lengths) are a valid value.
    let mut msg: libc::msghdr = unsafe { std::mem::zeroed() };
    msg.msg_iov = &mut iov;
    msg.msg_iovlen = 1;
    msg.msg_control = control.as_mut_ptr().cast();
    msg.msg_controllen = std::mem::size_of_val(&control);
    // SAFETY: `fd` is open for the borrow; `msg` points to one iovec covering exactly `buf`
    // (writable, borrowed mutably for the call) and to `control` with its true length. The
    // kernel writes at most iov_len bytes into `buf` and msg_controllen into `control`, and
    // keeps none of these pointers after the call.
    let n = unsafe { libc::recvmsg(fd.as_raw_fd(), &mut msg, 0) };
    if n < 0 {
        return Err(io::Error::last_os_error());
    }
    let mut stamp = None;
    // SAFETY: recvmsg set msg_controllen to what it wrote into `control`, which is still
    // alive; CMSG_FIRSTHDR/CMSG_NXTHDR return either null or a header lying wholly inside
    // those bytes, and a SCM_TIMESTAMPNS message's data is one timespec, read unaligned
    // because CMSG_DATA promises no alignment for it.
    unsafe {
        let mut c = libc::CMSG_FIRSTHDR(&msg);
        while !c.is_null() {
            if (*c).cmsg_level == libc::SOL_SOCKET && (*c).cmsg_type == libc::SCM_TIMESTAMPNS {
                let ts = std::ptr::read_unaligned(libc::CMSG_DATA(c) as *const libc::timespec);
                stamp = Some(
                    std::time::UNIX_EPOCH + Duration::new(ts.tv_sec as u64, ts.tv_nsec as u32),
                );
            }
            c = libc::CMSG_NXTHDR(&msg, c);
        }
    }
    Ok((n as usize, stamp))
}

/// TCP_INFO of a connected TCP socket: the kernel's view of the connection (its RTT estimate
/// among others); `None` when the kernel refuses.
pub fn tcp_info(fd: BorrowedFd<'_>) -> Option<libc::tcp_info> {
    // SAFETY: tcp_info is plain integers, for which all-zero bytes are a valid value.
    let mut info: libc::tcp_info = unsafe { std::mem::zeroed() };
    let mut len = std::mem::size_of::<libc::tcp_info>() as libc::socklen_t;
    // SAFETY: `fd` is open for the borrow; the kernel writes at most `len` bytes (the size of
    // `info`, a live local) into `info` and the length it wrote into `len`. A kernel whose
    // tcp_info is shorter leaves the rest zero.
    let rc = unsafe {
        libc::getsockopt(
            fd.as_raw_fd(),
            libc::IPPROTO_TCP,
            libc::TCP_INFO,
            (&mut info as *mut libc::tcp_info).cast(),
            &mut len,
        )
    };
    (rc == 0).then_some(info)
}

/// Now on CLOCK_MONOTONIC, the clock `Instant` reads on Linux, in nanoseconds.
pub(crate) fn monotonic_ns() -> u128 {
    let mut ts = libc::timespec { tv_sec: 0, tv_nsec: 0 };
    // SAFETY: the kernel (or the vDSO) writes one timespec into `ts`, a live local.
    // CLOCK_MONOTONIC always exists on Linux, so the call cannot fail.
    unsafe { libc::clock_gettime(libc::CLOCK_MONOTONIC, &mut ts) };
    ts.tv_sec as u128 * 1_000_000_000 + ts.tv_nsec as u128
}

/// A moment on CLOCK_MONOTONIC, in nanoseconds, as the timespec the kernel wants.
#[inline]
fn timespec(ns: u128) -> libc::timespec {
    libc::timespec {
        tv_sec: (ns / 1_000_000_000) as libc::time_t,
        tv_nsec: (ns % 1_000_000_000) as libc::c_long,
    }
}

/// A new non-blocking, close-on-exec timerfd on CLOCK_MONOTONIC, disarmed.
pub(crate) fn monotonic_timerfd() -> io::Result<OwnedFd> {
    // SAFETY: timerfd_create takes no pointers; it returns a new descriptor or -1.
    let raw = unsafe {
        libc::timerfd_create(libc::CLOCK_MONOTONIC, libc::TFD_NONBLOCK | libc::TFD_CLOEXEC)
    };
    if raw < 0 {
        return Err(io::Error::last_os_error());
    }
    // SAFETY: `raw` is a descriptor the kernel just opened for us and nothing else owns, so
    // the OwnedFd is its only owner and closes it once.
    Ok(unsafe { OwnedFd::from_raw_fd(raw) })
}

/// Arms a timerfd to fire once at `ns` on CLOCK_MONOTONIC (an absolute time: a moment already
/// past fires at once). Zero would disarm it, so it is raised to one nanosecond after boot.
#[inline]
pub(crate) fn arm_timerfd_at(fd: BorrowedFd<'_>, ns: u128) -> io::Result<()> {
    let spec = libc::itimerspec {
        it_interval: libc::timespec { tv_sec: 0, tv_nsec: 0 },
        it_value: timespec(ns.max(1)),
    };
    // SAFETY: `fd` is open for the borrow (a timerfd, or the call fails with EINVAL); the
    // kernel reads `spec`, a live local, during the call, and a null old_value asks it to
    // write nothing back.
    let rc = unsafe {
        libc::timerfd_settime(fd.as_raw_fd(), libc::TFD_TIMER_ABSTIME, &spec, std::ptr::null_mut())
    };
    if rc != 0 {
        return Err(io::Error::last_os_error());
    }
    Ok(())
}

/// Sleeps until `ns` on CLOCK_MONOTONIC. A signal ends the sleep early; the caller's next
/// poll finds whatever became ready meanwhile.
#[inline]
pub(crate) fn sleep_until(ns: u128) {
    let ts = timespec(ns);
    // SAFETY: the kernel reads `ts`, a live local, during the call; with TIMER_ABSTIME the
    // remaining-time pointer is unused, and null asks for nothing back.
    unsafe {
        libc::clock_nanosleep(libc::CLOCK_MONOTONIC, libc::TIMER_ABSTIME, &ts, std::ptr::null_mut())
    };
}

/// Sets the calling thread's timer slack, the delay the kernel may add to its timers to batch
/// wake-ups (50 µs by default). Best effort: a kernel that refuses leaves the default.
pub(crate) fn set_timer_slack(ns: u64) {
    // SAFETY: PR_SET_TIMERSLACK reads its one integer argument and touches no memory of ours.
    unsafe { libc::prctl(libc::PR_SET_TIMERSLACK, ns as libc::c_ulong) };
}

/// Every (interface name, address) pair of this machine, from getifaddrs(3).
pub(crate) fn interface_addresses() -> io::Result<Vec<(String, IpAddr)>> {
    let mut head: *mut libc::ifaddrs = std::ptr::null_mut();
    // SAFETY: getifaddrs allocates a list and stores its head in `head`, a live local; the
    // list is freed below, once, after the last read from it.
    if unsafe { libc::getifaddrs(&mut head) } != 0 {
        return Err(io::Error::last_os_error());
    }
    let mut out = Vec::new();
    let mut cur = head;
    while !cur.is_null() {
        // SAFETY: `cur` is a non-null node of the list getifaddrs returned, not yet freed.
        let ifa = unsafe { &*cur };
        cur = ifa.ifa_next;
        if ifa.ifa_addr.is_null() || ifa.ifa_name.is_null() {
            continue;
        }
        // SAFETY: a non-null ifa_addr points to a sockaddr that lives as long as the list,
        // and every sockaddr starts with its family.
        let family = i32::from(unsafe { (*ifa.ifa_addr).sa_family });
        let ip = match family {
            libc::AF_INET => {
                // SAFETY: its family says this sockaddr is a sockaddr_in; the C library
                // allocates it with that size and alignment.
                let sin = unsafe { &*(ifa.ifa_addr as *const libc::sockaddr_in) };
                IpAddr::V4(Ipv4Addr::from(u32::from_be(sin.sin_addr.s_addr)))
            }
            libc::AF_INET6 => {
                // SAFETY: as above, a sockaddr_in6 by its family.
                let sin6 = unsafe { &*(ifa.ifa_addr as *const libc::sockaddr_in6) };
                IpAddr::V6(Ipv6Addr::from(sin6.sin6_addr.s6_addr))
            }
            _ => continue,
        };
        // SAFETY: a non-null ifa_name is a NUL-terminated string that lives as long as the
        // list; it is copied out before the list is freed.
        let name = unsafe { CStr::from_ptr(ifa.ifa_name) }.to_string_lossy().into_owned();
        out.push((name, ip));
    }
    // SAFETY: `head` came from a successful getifaddrs, nothing borrowed from the list
    // outlives this line, and it is freed exactly once.
    unsafe { libc::freeifaddrs(head) };
    Ok(out)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn thread_cpu_time_grows_with_work() {
        // The work is measured in CPU time by a second clock (CLOCK_THREAD_CPUTIME_ID), not
        // in wall time: a thread spinning 30 ms of wall time on a machine whose CPUs other
        // processes share may run for only a fraction of it (seen: 8 ms of 30).
        let thread_clock = || {
            let mut ts = libc::timespec { tv_sec: 0, tv_nsec: 0 };
            // SAFETY: clock_gettime only writes into the timespec we pass.
            let rc = unsafe { libc::clock_gettime(libc::CLOCK_THREAD_CPUTIME_ID, &mut ts) };
            assert_eq!(rc, 0, "clock_gettime: {}", io::Error::last_os_error());
            Duration::new(ts.tv_sec as u64, ts.tv_nsec as u32)
        };
        let before = CpuTime::thread();
        let clock_before = thread_clock();
        let mut x = 0u64;
        // Bounded in wall time too, so that a thread clock that never advances fails.
        let start = std::time::Instant::now();
        while thread_clock() - clock_before < Duration::from_millis(30) {
            assert!(start.elapsed() < Duration::from_secs(60), "30 ms of CPU not had in 60 s");
            for _ in 0..1000 {
                x = x.wrapping_mul(6364136223846793005).wrapping_add(1);
            }
        }
        std::hint::black_box(x);
        let spent = CpuTime::thread().since(&before).total();
        // getrusage rounds to microseconds and may lag the thread clock slightly.
        assert!(spent >= Duration::from_millis(20), "{spent:?} of CPU for 30 ms of work");
    }

    #[test]
    fn machine_cpu_counts_idle_and_iowait_as_not_busy() {
        let a = parse_machine_cpu("cpu  10 1 5 80 4 0 0 0 0 0\ncpu0 1 2 3 4\n").unwrap();
        assert_eq!(a, MachineCpu { busy: 16, total: 100 });
        let b = MachineCpu { busy: 66, total: 200 };
        assert_eq!(b.busy_since(&a), Some(0.5));
        assert_eq!(a.busy_since(&a), None);
        assert!(MachineCpu::now().is_some());
    }

    #[test]
    fn run_delay_is_schedstats_second_field() {
        assert_eq!(parse_run_delay("123456 7890000 42\n"), Some(Duration::from_nanos(7_890_000)));
        assert_eq!(parse_run_delay("123456\n"), None);
        assert_eq!(parse_run_delay("a b c"), None);
    }

    #[test]
    fn a_thread_that_shares_its_cpu_with_a_busy_one_waits() {
        // Two threads pinned to one CPU, both spinning: each waits for the CPU about as long
        // as it runs. The schedstat file must exist on the kernels loadlab runs on.
        assert!(
            std::fs::read_to_string("/proc/thread-self/schedstat").is_ok(),
            "no /proc/thread-self/schedstat: starvation cannot be measured here"
        );
        let cpu = allowed_cpus()[0];
        let spin = move |stop: std::sync::Arc<std::sync::atomic::AtomicBool>| {
            pin_current_thread(cpu).unwrap();
            let before = ThreadAccount::thread();
            let start = std::time::Instant::now();
            let mut x = 0u64;
            while !stop.load(std::sync::atomic::Ordering::Relaxed)
                && start.elapsed() < Duration::from_millis(300)
            {
                x = std::hint::black_box(x.wrapping_add(1));
            }
            ThreadAccount::thread().since(&before)
        };
        let stop = std::sync::Arc::new(std::sync::atomic::AtomicBool::new(false));
        let (s1, s2) = (stop.clone(), stop.clone());
        let a = std::thread::spawn(move || spin(s1));
        let b = std::thread::spawn(move || spin(s2));
        let (a, b) = (a.join().unwrap(), b.join().unwrap());
        let waited = a.cpu_wait + b.cpu_wait;
        // 600 ms of wanted CPU on one CPU over 300 ms: at least ~300 ms were waited in all.
        assert!(waited >= Duration::from_millis(150), "waited {waited:?}: {a:?} {b:?}");
        assert!(a.involuntary_switches + b.involuntary_switches > 0, "{a:?} {b:?}");
    }

    #[test]
    fn a_stamping_socket_reads_its_bytes_with_their_arrival_time() {
        use std::io::Write;
        use std::os::fd::AsFd;
        let listener = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
        // Stamping asked before connecting, as a connection slot does.
        let client = socket2::Socket::new(socket2::Domain::IPV4, socket2::Type::STREAM, None);
        let client = client.unwrap();
        stamp_arrivals(client.as_fd()).unwrap();
        client.connect(&listener.local_addr().unwrap().into()).unwrap();
        let (mut server, _) = listener.accept().unwrap();
        // The first socket of the machine to ask for stamps turns them on through a deferred
        // kernel work item (net_enable_timestamp), so the first segments may come unstamped:
        // the test waits for the kernel to get there, as it does for any eventual state.
        let start = std::time::Instant::now();
        let mut buf = [0u8; 16];
        let stamp = loop {
            let before = std::time::SystemTime::now();
            server.write_all(b"hello").unwrap();
            // A blocking socket: recvmsg waits for the bytes.
            let (n, stamp) = recv_stamped(client.as_fd(), &mut buf).unwrap();
            assert_eq!(&buf[..n], b"hello");
            if let Some(stamp) = stamp {
                break (before, stamp);
            }
            assert!(start.elapsed() < Duration::from_secs(30), "SO_TIMESTAMPNS gave no stamp");
        };
        // Both read CLOCK_REALTIME; only a step of the clock in between could fail this.
        assert!(stamp.1 >= stamp.0 - Duration::from_secs(1), "{stamp:?}");
        // Without the option, no stamp.
        let other = std::net::TcpStream::connect(listener.local_addr().unwrap()).unwrap();
        let (mut peer, _) = listener.accept().unwrap();
        peer.write_all(b"x").unwrap();
        assert_eq!(recv_stamped(other.as_fd(), &mut buf).unwrap(), (1, None));
        assert!(tcp_info(other.as_fd()).is_some_and(|i| i.tcpi_rtt > 0));
    }

    #[test]
    fn a_source_bound_without_its_port_gets_one_at_connect() {
        use std::os::fd::AsFd;
        let socket = socket2::Socket::new(socket2::Domain::IPV4, socket2::Type::STREAM, None);
        let socket = socket.unwrap();
        bind_address_no_port(socket.as_fd()).unwrap();
        let src: std::net::SocketAddr = "127.0.0.1:0".parse().unwrap();
        socket.bind(&src.into()).unwrap();
        // The port is left to connect(): bind() reserved none.
        assert_eq!(socket.local_addr().unwrap().as_socket().unwrap().port(), 0);
    }

    #[test]
    fn allowed_cpus_is_not_empty_and_pinning_works() {
        let cpus = allowed_cpus();
        assert!(!cpus.is_empty());
        let cpu = cpus[0];
        std::thread::spawn(move || pin_current_thread(cpu).unwrap()).join().unwrap();
        assert!(pin_current_thread(usize::MAX).is_err());
    }
}
