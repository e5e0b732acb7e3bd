//! The few operating-system facts the engine needs that std does not give: a thread's own CPU
//! time and the time it waited for a CPU, CPU affinity, and the open-file limit.

use std::io;
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
        // SAFETY: getrusage only writes into the zeroed struct we pass.
        let mut ru: libc::rusage = unsafe { std::mem::zeroed() };
        let rc = unsafe { libc::getrusage(libc::RUSAGE_THREAD, &mut ru) };
        if rc != 0 {
            return CpuTime::default();
        }
        CpuTime::from_rusage(&ru)
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
        // SAFETY: getrusage only writes into the zeroed struct we pass.
        let mut ru: libc::rusage = unsafe { std::mem::zeroed() };
        let rc = unsafe { libc::getrusage(libc::RUSAGE_THREAD, &mut ru) };
        let (cpu, involuntary_switches) = if rc == 0 {
            (CpuTime::from_rusage(&ru), ru.ru_nivcsw.max(0) as u64)
        } else {
            (CpuTime::default(), 0)
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
    // SAFETY: sched_getaffinity writes at most size_of::<cpu_set_t>() bytes into the set.
    let mut set: libc::cpu_set_t = unsafe { std::mem::zeroed() };
    let rc =
        unsafe { libc::sched_getaffinity(0, std::mem::size_of::<libc::cpu_set_t>(), &mut set) };
    if rc != 0 {
        let n = std::thread::available_parallelism().map_or(1, |n| n.get());
        return (0..n).collect();
    }
    (0..libc::CPU_SETSIZE as usize).filter(|&c| unsafe { libc::CPU_ISSET(c, &set) }).collect()
}

/// Pins the calling thread to one CPU.
pub fn pin_current_thread(cpu: usize) -> io::Result<()> {
    if cpu >= libc::CPU_SETSIZE as usize {
        return Err(io::Error::from_raw_os_error(libc::EINVAL));
    }
    // SAFETY: the set is a plain bitmask on our stack; cpu is below CPU_SETSIZE.
    let mut set: libc::cpu_set_t = unsafe { std::mem::zeroed() };
    unsafe { libc::CPU_SET(cpu, &mut set) };
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
    // SAFETY: getrlimit/setrlimit read and write the struct we own.
    let mut lim = libc::rlimit { rlim_cur: 0, rlim_max: 0 };
    if unsafe { libc::getrlimit(libc::RLIMIT_NOFILE, &mut lim) } != 0 {
        return (0, 0);
    }
    if lim.rlim_cur < lim.rlim_max {
        let want = libc::rlimit { rlim_cur: lim.rlim_max, rlim_max: lim.rlim_max };
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
    i64::from(unsafe { libc::sysconf(libc::_SC_NPROCESSORS_ONLN) } as i32)
}

/// Asks the kernel to stamp what `fd` (a TCP socket) receives with the time it arrived
/// (SO_TIMESTAMPNS), read back by [`recv_stamped`].
pub fn stamp_arrivals(fd: std::os::fd::RawFd) -> io::Result<()> {
    let one: libc::c_int = 1;
    // SAFETY: a plain integer option on a socket the caller owns.
    let rc = unsafe {
        libc::setsockopt(
            fd,
            libc::SOL_SOCKET,
            libc::SO_TIMESTAMPNS,
            &one as *const libc::c_int as *const libc::c_void,
            std::mem::size_of::<libc::c_int>() as libc::socklen_t,
        )
    };
    if rc != 0 {
        return Err(io::Error::last_os_error());
    }
    Ok(())
}

/// `recv` that also returns when the last segment read arrived (CLOCK_REALTIME), when the
/// socket stamps arrivals ([`stamp_arrivals`]).
pub fn recv_stamped(
    fd: std::os::fd::RawFd,
    buf: &mut [u8],
) -> io::Result<(usize, Option<std::time::SystemTime>)> {
    let mut iov = libc::iovec { iov_base: buf.as_mut_ptr().cast(), iov_len: buf.len() };
    // Room for one cmsghdr and a timespec, aligned as cmsg wants.
    let mut control = [0u64; 8];
    // SAFETY: msghdr is plain data; every pointer in it refers to a live local buffer.
    let mut msg: libc::msghdr = unsafe { std::mem::zeroed() };
    msg.msg_iov = &mut iov;
    msg.msg_iovlen = 1;
    msg.msg_control = control.as_mut_ptr().cast();
    msg.msg_controllen = std::mem::size_of_val(&control);
    // SAFETY: recvmsg writes at most iov_len bytes into buf and msg_controllen into control.
    let n = unsafe { libc::recvmsg(fd, &mut msg, 0) };
    if n < 0 {
        return Err(io::Error::last_os_error());
    }
    let mut stamp = None;
    // SAFETY: the CMSG walk stays inside the control buffer the kernel filled in.
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
    fn allowed_cpus_is_not_empty_and_pinning_works() {
        let cpus = allowed_cpus();
        assert!(!cpus.is_empty());
        let cpu = cpus[0];
        std::thread::spawn(move || pin_current_thread(cpu).unwrap()).join().unwrap();
        assert!(pin_current_thread(usize::MAX).is_err());
    }
}
