//! Reading /proc: a process's identity, group and CPU times, and the machine's CPU and load,
//! for supervision (which processes are ours) and sampling (what they cost).

use std::fs;

use serde::{Deserialize, Serialize};

/// A process as of one read of `/proc/<pid>/stat` (proc(5)).
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct ProcStat {
    pub pid: i32,
    pub comm: String,
    /// R, S, D, Z, ...; a zombie has exited and only waits to be reaped.
    pub state: char,
    pub ppid: i32,
    pub pgid: i32,
    /// CPU time in clock ticks: user, system, and those of reaped children.
    pub utime: u64,
    pub stime: u64,
    pub cutime: u64,
    pub cstime: u64,
    /// Clock ticks after boot at which the process started: with the pid, its identity,
    /// since pids are reused (pid_max is often only 32768).
    pub start: u64,
    /// Resident pages.
    pub rss_pages: u64,
}

/// A pid together with its start time, so a reused pid is never mistaken for ours.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct ProcId {
    pub pid: i32,
    pub start: u64,
}

impl ProcStat {
    pub fn id(&self) -> ProcId {
        ProcId { pid: self.pid, start: self.start }
    }

    pub fn is_zombie(&self) -> bool {
        self.state == 'Z' || self.state == 'X'
    }
}

/// Parses one `/proc/<pid>/stat` line. The command name may hold spaces and `)`, so the
/// fields are counted from the last `)`.
pub fn parse_stat(pid: i32, text: &str) -> Option<ProcStat> {
    let open = text.find('(')?;
    let close = text.rfind(')')?;
    let comm = text.get(open + 1..close)?.to_string();
    let rest: Vec<&str> = text.get(close + 1..)?.split_whitespace().collect();
    let num = |i: usize| rest.get(i)?.parse::<u64>().ok();
    let int = |i: usize| rest.get(i)?.parse::<i32>().ok();
    Some(ProcStat {
        pid,
        comm,
        state: rest.first()?.chars().next()?,
        ppid: int(1)?,
        pgid: int(2)?,
        utime: num(11)?,
        stime: num(12)?,
        cutime: num(13)?,
        cstime: num(14)?,
        start: num(19)?,
        rss_pages: num(21)?,
    })
}

pub fn read_stat(pid: i32) -> Option<ProcStat> {
    parse_stat(pid, &fs::read_to_string(format!("/proc/{pid}/stat")).ok()?)
}

/// Every process now: one read of each `/proc/<pid>/stat`.
pub fn all() -> Vec<ProcStat> {
    let Ok(entries) = fs::read_dir("/proc") else { return Vec::new() };
    entries
        .filter_map(|e| e.ok()?.file_name().to_str()?.parse::<i32>().ok())
        .filter_map(read_stat)
        .collect()
}

/// Whether this exact process (pid and start time) still runs (a zombie does not).
pub fn alive(id: ProcId) -> bool {
    read_stat(id.pid).is_some_and(|s| s.start == id.start && !s.is_zombie())
}

/// The identity of a process that exists now.
pub fn identify(pid: i32) -> Option<ProcId> {
    read_stat(pid).map(|s| s.id())
}

/// The processes of the group led by `leader`: those in its process group that started no
/// earlier than it did (a process in a group numbered like a dead leader's, but older, is
/// not ours). Zombies are left out: they have exited.
pub fn group(leader: ProcId, procs: &[ProcStat]) -> Vec<ProcStat> {
    procs
        .iter()
        .filter(|p| p.pgid == leader.pid && p.start >= leader.start && !p.is_zombie())
        .cloned()
        .collect()
}

/// The processes `roots` name and every descendant of theirs (by parent pid), whatever their
/// process group. A root is matched by pid and start time, so a reused pid is not taken for
/// it; zombies are left out.
pub fn trees(roots: &[ProcId], procs: &[ProcStat]) -> Vec<ProcStat> {
    let by_pid: std::collections::HashMap<i32, &ProcStat> =
        procs.iter().map(|p| (p.pid, p)).collect();
    let is_root = |p: &ProcStat| roots.iter().any(|r| r.pid == p.pid && r.start == p.start);
    procs
        .iter()
        .filter(|p| !p.is_zombie())
        .filter(|p| {
            let mut at = *p;
            // A parent is never younger than its child; the bound stops a cycle of reused
            // pids read at different moments.
            for _ in 0..64 {
                if is_root(at) {
                    return true;
                }
                match by_pid.get(&at.ppid) {
                    Some(parent) if parent.start <= at.start && parent.pid != at.pid => at = parent,
                    _ => return false,
                }
            }
            false
        })
        .cloned()
        .collect()
}

/// The CPU time the live threads of process `pid` have run, in nanoseconds: the first field
/// of each `/proc/<pid>/task/<tid>/schedstat` (the scheduler's `sum_exec_runtime`, user and
/// system together). `/proc/<pid>/stat` gives the same in clock ticks (10 ms at USER_HZ 100),
/// which over a cell of 11 ms is nothing or a whole CPU; the scheduler's count is exact.
/// Threads that already exited are not in it. `None` where the kernel keeps no schedstat.
pub fn run_ns(pid: i32) -> Option<u64> {
    let mut total = None;
    for task in fs::read_dir(format!("/proc/{pid}/task")).ok()?.flatten() {
        let path = task.path().join("schedstat");
        let Ok(text) = fs::read_to_string(path) else { continue };
        let Some(ns) = parse_schedstat(&text) else { continue };
        total = Some(total.unwrap_or(0) + ns);
    }
    total
}

/// The run time (ns) in a `schedstat` line: `run_ns wait_ns timeslices`.
pub fn parse_schedstat(text: &str) -> Option<u64> {
    text.split_whitespace().next()?.parse().ok()
}

/// The command line of a process, arguments joined by spaces.
pub fn cmdline(pid: i32) -> Option<String> {
    let bytes = fs::read(format!("/proc/{pid}/cmdline")).ok()?;
    Some(String::from_utf8_lossy(&bytes).replace('\0', " ").trim_end().to_string())
}

/// The machine's CPU counters from the first line of /proc/stat, in clock ticks.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct CpuTimes {
    pub busy: u64,
    pub total: u64,
}

/// What the sampler reads about the machine.
#[derive(Clone, Copy, Debug, Default, PartialEq)]
pub struct MachineStat {
    pub cpu: CpuTimes,
    pub load: [f64; 3],
}

pub fn parse_cpu_line(text: &str) -> Option<CpuTimes> {
    let line = text.lines().find(|l| l.starts_with("cpu "))?;
    let fields: Vec<u64> = line.split_whitespace().skip(1).filter_map(|f| f.parse().ok()).collect();
    // user nice system idle iowait irq softirq steal (guest time is already inside user).
    let total: u64 = fields.iter().take(8).sum();
    let idle = fields.get(3)? + fields.get(4).unwrap_or(&0);
    Some(CpuTimes { busy: total - idle, total })
}

pub fn parse_loadavg(text: &str) -> Option<[f64; 3]> {
    let mut it = text.split_whitespace().map(|f| f.parse::<f64>().ok());
    Some([it.next()??, it.next()??, it.next()??])
}

pub fn machine() -> Option<MachineStat> {
    Some(MachineStat {
        cpu: parse_cpu_line(&fs::read_to_string("/proc/stat").ok()?)?,
        load: parse_loadavg(&fs::read_to_string("/proc/loadavg").ok()?)?,
    })
}

/// Clock ticks per second (USER_HZ), the unit of the CPU times in /proc, and the page size,
/// the unit of the resident set.
pub use crate::sys::{clock_ticks, page_size};

#[cfg(test)]
mod tests {
    use super::*;

    const STAT: &str = "4242 (php-fpm: pool (www)) S 1 4240 4240 0 -1 4194624 100 0 0 0 \
                        7 3 2 1 20 0 1 0 123456 100000000 2500 18446744073709551615";

    #[test]
    fn stat_fields_are_counted_from_the_last_paren() {
        let s = parse_stat(4242, STAT).unwrap();
        assert_eq!(s.comm, "php-fpm: pool (www)");
        assert_eq!((s.state, s.ppid, s.pgid), ('S', 1, 4240));
        assert_eq!((s.utime, s.stime, s.cutime, s.cstime), (7, 3, 2, 1));
        assert_eq!((s.start, s.rss_pages), (123456, 2500));
    }

    #[test]
    fn a_group_is_its_leaders_descendants_not_older_processes() {
        let leader = ProcId { pid: 4240, start: 100 };
        let at = |pid, start, state| ProcStat {
            pid,
            comm: "x".into(),
            state,
            ppid: 1,
            pgid: 4240,
            utime: 0,
            stime: 0,
            cutime: 0,
            cstime: 0,
            start,
            rss_pages: 0,
        };
        let procs = [at(4240, 100, 'S'), at(4241, 101, 'S'), at(4243, 99, 'S'), at(4244, 102, 'Z')];
        let pids: Vec<i32> = group(leader, &procs).iter().map(|p| p.pid).collect();
        assert_eq!(pids, vec![4240, 4241]);
    }

    #[test]
    fn machine_lines() {
        let cpu = parse_cpu_line("cpu  10 1 5 80 4 0 0 0 0 0\ncpu0 1 2 3 4\n").unwrap();
        assert_eq!(cpu, CpuTimes { busy: 16, total: 100 });
        assert_eq!(parse_loadavg("0.50 0.25 0.10 1/200 4242\n"), Some([0.5, 0.25, 0.1]));
    }

    #[test]
    fn run_time_is_read_from_schedstat() {
        assert_eq!(parse_schedstat("9726091 0 1\n"), Some(9_726_091));
        assert_eq!(parse_schedstat(""), None);
        // This process has run (the test is running in it), in every thread it has.
        if fs::metadata("/proc/self/schedstat").is_ok() {
            let me = std::process::id() as i32;
            assert!(run_ns(me).is_some_and(|ns| ns > 0), "{:?}", run_ns(me));
        }
    }

    #[test]
    fn this_process_is_alive_and_identified() {
        let me = identify(std::process::id() as i32).unwrap();
        assert!(alive(me));
        assert!(!alive(ProcId { start: me.start + 1, ..me }));
    }
}
