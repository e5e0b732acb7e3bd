//! The few operating-system facts the engine needs that std does not give: a thread's own CPU
//! time, CPU affinity, and the open-file limit.

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
    fn allowed_cpus_is_not_empty_and_pinning_works() {
        let cpus = allowed_cpus();
        assert!(!cpus.is_empty());
        let cpu = cpus[0];
        std::thread::spawn(move || pin_current_thread(cpu).unwrap()).join().unwrap();
        assert!(pin_current_thread(usize::MAX).is_err());
    }
}
