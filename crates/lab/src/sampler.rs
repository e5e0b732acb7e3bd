//! The sampler: a thread that, every interval, reads each tier's processes from /proc (CPU
//! user and system, RSS, process count) and the machine's CPU use and load average, and keeps
//! the time series until it is stopped (what seed 003 got from sar, per tier). A lab tier is
//! its leader's process group; a server the lab did not start is the processes the user named
//! and their descendants ([`Members`]).

use std::sync::{mpsc, Arc, OnceLock};
use std::thread;
use std::time::{Duration, Instant, SystemTime, UNIX_EPOCH};

use serde::{Deserialize, Serialize};

use crate::procfs::{self, CpuTimes, MachineStat, ProcId, ProcStat};
use crate::profiler::{Profiler, Profiles, Tools};

/// A tier to sample: its name, the leader of its process group, and where its worker pool
/// reports, if it has one.
#[derive(Clone, Debug)]
pub struct Target {
    pub tier: String,
    pub leader: ProcId,
    pub pool: Option<crate::pools::PoolStatus>,
}

/// Which processes make up a tier.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Members {
    /// A lab tier: the process group its leader leads ([`procfs::group`]).
    Group(ProcId),
    /// Processes the user named (an external target's), each with its descendants
    /// ([`procfs::trees`]): their process group may well be a shell's or a test runner's.
    Trees(Vec<ProcId>),
}

/// A tier to sample, however its processes are found.
#[derive(Clone, Debug)]
pub struct Watched {
    pub tier: String,
    pub members: Members,
    pub pool: Option<crate::pools::PoolStatus>,
}

impl From<Target> for Watched {
    fn from(t: Target) -> Watched {
        Watched { tier: t.tier, members: Members::Group(t.leader), pool: t.pool }
    }
}

impl Members {
    fn of(&self, procs: &[ProcStat]) -> Vec<ProcStat> {
        match self {
            Members::Group(leader) => procfs::group(*leader, procs),
            Members::Trees(roots) => procfs::trees(roots, procs),
        }
    }

    /// The pid a worker pool's status is read for.
    fn leader_pid(&self) -> Option<i32> {
        match self {
            Members::Group(leader) => Some(leader.pid),
            Members::Trees(_) => None,
        }
    }
}

/// One tier over one interval.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct TierSample {
    pub tier: String,
    /// CPU time over the interval as a percentage of one CPU (200 = two CPUs busy), user
    /// and system, including processes that exited and were reaped within the group.
    pub cpu_user_pct: f64,
    pub cpu_sys_pct: f64,
    /// Sum of the processes' resident sets at the end of the interval (pages shared between
    /// processes count once per process, as in ps and sar).
    pub rss_bytes: u64,
    pub processes: usize,
    /// The tier's worker pool at the end of the interval, for tiers that report one.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub pool: Option<crate::pools::PoolReading>,
}

/// The machine over one interval.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct MachineSample {
    /// Busy share of all CPUs (100 = every CPU busy), from /proc/stat.
    pub cpu_busy_pct: f64,
    pub load1: f64,
    pub load5: f64,
    pub load15: f64,
}

/// One interval: its end, as milliseconds since the sampler started and since the epoch (to
/// align with load windows), and what each tier and the machine did in it.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct Sample {
    pub t_ms: u64,
    pub unix_ms: u64,
    pub interval_ms: u64,
    pub tiers: Vec<TierSample>,
    pub machine: Option<MachineSample>,
}

/// Where the sampler reads processes and machine counters: /proc, or a fake in tests.
pub trait ProcSource: Send + 'static {
    fn processes(&mut self) -> Vec<ProcStat>;
    fn machine(&mut self) -> Option<MachineStat>;
    /// The exact run time of a live process's threads, ns ([`procfs::run_ns`]); `None` to
    /// count its clock ticks instead.
    fn run_ns(&mut self, _pid: i32) -> Option<u64> {
        None
    }
}

/// The real /proc.
#[derive(Debug)]
pub struct Proc;

impl ProcSource for Proc {
    fn processes(&mut self) -> Vec<ProcStat> {
        procfs::all()
    }

    fn machine(&mut self) -> Option<MachineStat> {
        procfs::machine()
    }

    fn run_ns(&mut self, pid: i32) -> Option<u64> {
        procfs::run_ns(pid)
    }
}

/// Turns successive readings into samples: counters are cumulative, samples are deltas.
pub struct Tracker {
    targets: Vec<Watched>,
    ticks_per_sec: f64,
    page_size: u64,
    last: Option<Reading>,
}

struct Reading {
    at: Duration,
    /// Per target: (user, system) clock ticks.
    cpu: Vec<(u64, u64)>,
    machine: Option<CpuTimes>,
}

impl Tracker {
    pub fn new(targets: Vec<Target>, ticks_per_sec: u64, page_size: u64) -> Tracker {
        Tracker::watching(
            targets.into_iter().map(Watched::from).collect(),
            ticks_per_sec,
            page_size,
        )
    }

    pub fn watching(targets: Vec<Watched>, ticks_per_sec: u64, page_size: u64) -> Tracker {
        Tracker { targets, ticks_per_sec: ticks_per_sec as f64, page_size, last: None }
    }

    /// Records a reading taken `at` after the start; a sample from the previous reading to
    /// this one, or `None` for the first reading.
    pub fn observe(
        &mut self,
        at: Duration,
        procs: &[ProcStat],
        machine: Option<MachineStat>,
    ) -> Option<Sample> {
        let groups: Vec<Vec<ProcStat>> = self.targets.iter().map(|t| t.members.of(procs)).collect();
        // A group's CPU is its live processes' own time plus what they collected from
        // children they reaped, so a worker that exits within the interval still counts.
        let cpu: Vec<(u64, u64)> = groups
            .iter()
            .map(|g| {
                g.iter().fold((0, 0), |(u, s), p| (u + p.utime + p.cutime, s + p.stime + p.cstime))
            })
            .collect();
        let reading = Reading { at, cpu, machine: machine.map(|m| m.cpu) };
        let last = self.last.replace(reading)?;
        let now = self.last.as_ref().expect("just stored");
        let span = now.at.saturating_sub(last.at).as_secs_f64().max(1e-9);
        let pct = |ticks: u64| ticks as f64 / self.ticks_per_sec / span * 100.0;
        let tiers = self
            .targets
            .iter()
            .zip(&groups)
            .zip(now.cpu.iter().zip(&last.cpu))
            .map(|((target, group), (&(u, s), &(u0, s0)))| TierSample {
                tier: target.tier.clone(),
                // A process that exits unreaped takes its time with it: never below zero.
                cpu_user_pct: pct(u.saturating_sub(u0)),
                cpu_sys_pct: pct(s.saturating_sub(s0)),
                rss_bytes: group.iter().map(|p| p.rss_pages * self.page_size).sum(),
                processes: group.len(),
                pool: target.pool.as_ref().map(|p| p.read(target.members.leader_pid())),
            })
            .collect();
        let machine = match (machine, now.machine, last.machine) {
            (Some(m), Some(cpu), Some(cpu0)) => {
                let total = cpu.total.saturating_sub(cpu0.total).max(1) as f64;
                Some(MachineSample {
                    cpu_busy_pct: cpu.busy.saturating_sub(cpu0.busy) as f64 / total * 100.0,
                    load1: m.load[0],
                    load5: m.load[1],
                    load15: m.load[2],
                })
            }
            _ => None,
        };
        Some(Sample {
            t_ms: at.as_millis() as u64,
            unix_ms: unix_ms(),
            interval_ms: (span * 1000.0).round() as u64,
            tiers,
            machine,
        })
    }
}

/// Each tier's cumulative CPU and the machine's CPU counters at one moment. Read at a cell's
/// start and end, their difference is what each tier used over the cell however short it was
/// (as the client's own CPU is read from its threads at the window's start and end), where the
/// 1 Hz samples of a cell of 11 ms are one interval of whole clock ticks.
#[derive(Clone, Debug, PartialEq)]
pub struct CpuCounters {
    pub at: Instant,
    /// Per tier: its live processes' run time (exact where the kernel keeps schedstat, else
    /// user + system ticks) plus the CPU of the children they reaped (cutime + cstime), ns.
    pub tiers: Vec<(String, u64)>,
    pub machine: Option<CpuTimes>,
}

/// One tier's CPU between two [`CpuCounters`].
#[derive(Clone, Debug, PartialEq)]
pub struct TierCpuUse {
    pub tier: String,
    pub cpu: Duration,
}

/// What the tiers and the machine used between two [`CpuCounters`].
#[derive(Clone, Debug, PartialEq)]
pub struct CpuUse {
    pub wall: Duration,
    pub tiers: Vec<TierCpuUse>,
    /// Busy share of all CPUs, 0.0 to 1.0 (from /proc/stat, in clock ticks).
    pub machine_busy: Option<f64>,
}

impl CpuCounters {
    /// Reads `targets`' counters now from `source`.
    pub fn read(targets: &[Watched], source: &mut impl ProcSource, ticks_per_sec: u64) -> Self {
        let at = Instant::now();
        let machine = source.machine().map(|m| m.cpu);
        let procs = source.processes();
        let tick_ns = 1_000_000_000 / ticks_per_sec.max(1);
        let tiers = targets
            .iter()
            .map(|t| {
                let ns: u64 = t
                    .members
                    .of(&procs)
                    .iter()
                    .map(|p| {
                        let own = source.run_ns(p.pid).unwrap_or((p.utime + p.stime) * tick_ns);
                        own + (p.cutime + p.cstime) * tick_ns
                    })
                    .sum();
                (t.tier.clone(), ns)
            })
            .collect();
        CpuCounters { at, tiers, machine }
    }

    /// What was used from `start` to these counters. A process that exited unreaped takes its
    /// time with it: a tier's CPU is never below zero.
    pub fn since(&self, start: &CpuCounters) -> CpuUse {
        let tiers = self
            .tiers
            .iter()
            .map(|(tier, ns)| {
                let before = start.tiers.iter().find(|(t, _)| t == tier).map_or(0, |(_, n)| *n);
                TierCpuUse {
                    tier: tier.clone(),
                    cpu: Duration::from_nanos(ns.saturating_sub(before)),
                }
            })
            .collect();
        let machine_busy = match (self.machine, start.machine) {
            (Some(now), Some(then)) if now.total > then.total => {
                Some(now.busy.saturating_sub(then.busy) as f64 / (now.total - then.total) as f64)
            }
            _ => None,
        };
        CpuUse { wall: self.at.saturating_duration_since(start.at), tiers, machine_busy }
    }
}

/// What a stopped sampler gives: its 1 Hz series (charts, pools) and the CPU counted from its
/// start to its stop.
#[derive(Clone, Debug, PartialEq)]
pub struct Sampled {
    pub samples: Vec<Sample>,
    pub cpu: Option<CpuUse>,
    /// Each tier's on-CPU stacks over the same span, when it was profiled.
    pub profiles: Option<Profiles>,
}

pub fn unix_ms() -> u64 {
    SystemTime::now().duration_since(UNIX_EPOCH).map_or(0, |d| d.as_millis() as u64)
}

/// Told of each sample as the sampler takes it, on the sampler's thread, while the run lasts
/// (the live view's and the metrics endpoint's tiers): once a second, never per request.
pub type Live = Arc<dyn Fn(&Sample) + Send + Sync>;

/// A running sampler; [`Sampler::stop`] ends it and returns the series.
pub struct Sampler {
    stop: mpsc::Sender<()>,
    /// Who is told of each sample from now on ([`Sampler::live`]).
    live: Arc<OnceLock<Live>>,
    /// The series, and the counters read when the stop came.
    thread: thread::JoinHandle<(Vec<Sample>, CpuCounters)>,
    /// The counters read at the start.
    start: CpuCounters,
    /// The tiers' stacks, when profiling.
    profiler: Option<TiersProfiler>,
}

/// The last, partial interval is kept only if it is at least this long (or is the only
/// one): shorter, its CPU percentages are mostly rounding of whole clock ticks.
const MIN_FINAL: Duration = Duration::from_millis(100);

impl Sampler {
    /// Samples these tiers from /proc every `interval`.
    pub fn start(targets: Vec<Target>, interval: Duration) -> Sampler {
        Sampler::start_with(targets, interval, Proc)
    }

    /// Samples these tiers, however their processes are found, from /proc every `interval`.
    pub fn watch(targets: Vec<Watched>, interval: Duration) -> Sampler {
        Sampler::watch_with(targets, interval, Proc)
    }

    pub fn start_with(
        targets: Vec<Target>,
        interval: Duration,
        source: impl ProcSource,
    ) -> Sampler {
        Sampler::watch_with(targets.into_iter().map(Watched::from).collect(), interval, source)
    }

    pub fn watch_with(
        targets: Vec<Watched>,
        interval: Duration,
        source: impl ProcSource,
    ) -> Sampler {
        Sampler::spawn(targets, interval, source, None)
    }

    /// Samples these tiers from /proc every `interval`, and profiles their processes with
    /// `tools` until the stop ([`TiersProfiler`]).
    pub fn profiled(targets: Vec<Target>, interval: Duration, tools: &Tools) -> Sampler {
        let targets = targets.into_iter().map(Watched::from).collect();
        Sampler::spawn(targets, interval, Proc, Some(tools))
    }

    fn spawn(
        targets: Vec<Watched>,
        interval: Duration,
        mut source: impl ProcSource,
        tools: Option<&Tools>,
    ) -> Sampler {
        let (stop, stopped) = mpsc::channel();
        let ticks = procfs::clock_ticks();
        let counted = targets.clone();
        // The first reading is taken before returning, so that whatever the caller starts
        // next is inside the first interval.
        let mut tracker = Tracker::watching(targets, ticks, procfs::page_size());
        let started = CpuCounters::read(&counted, &mut source, ticks);
        let start = Instant::now();
        let procs = source.processes();
        let profiler = tools.map(|tools| TiersProfiler::start(counted.clone(), &procs, tools));
        tracker.observe(Duration::ZERO, &procs, source.machine());
        let live = Arc::new(OnceLock::<Live>::new());
        let told = live.clone();
        let thread = thread::spawn(move || {
            let mut samples = Vec::new();
            let mut last = Duration::ZERO;
            let keep = |samples: &mut Vec<Sample>, sample: Option<Sample>| {
                if let (Some(s), Some(to)) = (&sample, told.get()) {
                    to(s);
                }
                samples.extend(sample);
            };
            for k in 1u32.. {
                // Deadlines on a fixed grid, so the series does not drift by the time each
                // reading takes.
                let due = interval * k;
                let wait = due.saturating_sub(start.elapsed());
                let stopping =
                    !matches!(stopped.recv_timeout(wait), Err(mpsc::RecvTimeoutError::Timeout));
                if stopping {
                    // First, as close to the cell's end as the start's were to its start.
                    let end = CpuCounters::read(&counted, &mut source, ticks);
                    let at = start.elapsed();
                    if samples.is_empty() || at.saturating_sub(last) >= MIN_FINAL {
                        let sample = tracker.observe(at, &source.processes(), source.machine());
                        keep(&mut samples, sample);
                    }
                    return (samples, end);
                }
                let at = start.elapsed();
                let sample = tracker.observe(at, &source.processes(), source.machine());
                keep(&mut samples, sample);
                last = at;
            }
            unreachable!("the loop ends only by a stop")
        });
        Sampler { stop, live, thread, start: started, profiler }
    }

    /// Tells `to` of every sample taken from now on, as it is taken (the first only is kept:
    /// one run has one live view and one endpoint, fed by the same hook).
    pub fn live(&self, to: Live) {
        let _ = self.live.set(to);
    }

    /// Stops sampling (taking a last sample of the partial interval) and returns the series.
    pub fn stop(self) -> Vec<Sample> {
        self.finish().samples
    }

    /// Stops sampling and returns the series with the tiers' CPU from the start to now, read
    /// from their cumulative counters ([`CpuCounters`]).
    pub fn finish(self) -> Sampled {
        let _ = self.stop.send(());
        let profiles = self.profiler.map(TiersProfiler::finish);
        match self.thread.join() {
            Ok((samples, end)) => Sampled { samples, cpu: Some(end.since(&self.start)), profiles },
            Err(_) => Sampled { samples: Vec::new(), cpu: None, profiles },
        }
    }
}

/// A recording of these tiers' on-CPU stacks ([`Profiler`]), each tier's own folded from the
/// samples of the processes it had at the start or has at the stop.
pub struct TiersProfiler {
    profiler: Profiler,
    targets: Vec<Watched>,
    pids: TierPids,
}

impl TiersProfiler {
    /// Starts recording with `tools`; `procs`: the machine's processes now. Returns once perf
    /// records.
    pub fn start(targets: Vec<Watched>, procs: &[ProcStat], tools: &Tools) -> TiersProfiler {
        let pids = tier_pids(&targets, procs);
        let profiler = Profiler::start(&tools.perf, tools.php.as_deref());
        TiersProfiler { profiler, targets, pids }
    }

    /// Stops the recording and folds each tier's stacks.
    pub fn finish(mut self) -> Profiles {
        // A tier's processes at the start and at the stop (php-fpm's and Apache's workers
        // come and go): one that both began and ended within the cell is not profiled.
        for (tier, now) in self.pids.iter_mut().zip(tier_pids(&self.targets, &Proc.processes())) {
            tier.1.extend(now.1);
            tier.1.sort_unstable();
            tier.1.dedup();
        }
        self.profiler.finish(&self.pids)
    }
}

/// Each tier's name and pids.
type TierPids = Vec<(String, Vec<i32>)>;

/// Each tier's pids among `procs`, as the sampler counts them.
fn tier_pids(targets: &[Watched], procs: &[ProcStat]) -> TierPids {
    targets
        .iter()
        .map(|t| (t.tier.clone(), t.members.of(procs).iter().map(|p| p.pid).collect()))
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    fn proc(pid: i32, pgid: i32, utime: u64, stime: u64, cutime: u64) -> ProcStat {
        ProcStat {
            pid,
            comm: "w".into(),
            state: 'S',
            ppid: pgid,
            pgid,
            utime,
            stime,
            cutime,
            cstime: 0,
            start: 10,
            rss_pages: 100,
        }
    }

    fn machine(busy: u64, total: u64) -> Option<MachineStat> {
        Some(MachineStat { cpu: CpuTimes { busy, total }, load: [1.0, 0.5, 0.25] })
    }

    #[test]
    fn samples_are_deltas_per_tier_and_machine() {
        let targets = vec![
            Target { tier: "nginx".into(), leader: ProcId { pid: 100, start: 10 }, pool: None },
            Target { tier: "php-fpm".into(), leader: ProcId { pid: 200, start: 10 }, pool: None },
        ];
        let mut tracker = Tracker::new(targets, 100, 4096);
        let first = [proc(100, 100, 1, 1, 0), proc(101, 100, 10, 5, 0), proc(200, 200, 0, 0, 0)];
        assert_eq!(tracker.observe(Duration::ZERO, &first, machine(0, 0)), None);
        // A second later: nginx's worker used 50 ticks user, 20 system; php-fpm's master
        // reaped a child that had used 30 ticks; an unrelated process is ignored.
        let second = [
            proc(100, 100, 1, 1, 0),
            proc(101, 100, 60, 25, 0),
            proc(200, 200, 0, 0, 30),
            proc(300, 300, 999, 999, 0),
        ];
        let s = tracker.observe(Duration::from_secs(1), &second, machine(50, 200)).unwrap();
        assert_eq!(s.t_ms, 1000);
        assert_eq!(s.interval_ms, 1000);
        let nginx = &s.tiers[0];
        assert_eq!((nginx.cpu_user_pct, nginx.cpu_sys_pct), (50.0, 20.0));
        assert_eq!((nginx.processes, nginx.rss_bytes), (2, 2 * 100 * 4096));
        assert_eq!(s.tiers[1].cpu_user_pct, 30.0);
        let m = s.machine.unwrap();
        assert_eq!((m.cpu_busy_pct, m.load1), (25.0, 1.0));
        // Half a second later the worker is gone without being reaped: no negative CPU.
        let third = [proc(100, 100, 1, 1, 0), proc(200, 200, 0, 0, 30)];
        let s = tracker.observe(Duration::from_millis(1500), &third, None).unwrap();
        assert_eq!(s.tiers[0].cpu_user_pct, 0.0);
        assert_eq!(s.tiers[0].processes, 1);
        assert_eq!(s.interval_ms, 500);
        assert_eq!(s.machine, None);
    }

    #[test]
    fn named_processes_are_sampled_with_their_descendants() {
        // A server started from a shell: its master (500) shares the shell's process group
        // (400) and has a worker (501), which has a helper (502).
        let at = |pid, ppid, utime| ProcStat { ppid, ..proc(pid, 400, utime, 0, 0) };
        let tier = Watched {
            tier: "external".into(),
            members: Members::Trees(vec![ProcId { pid: 500, start: 10 }]),
            pool: None,
        };
        let mut tracker = Tracker::watching(vec![tier], 100, 4096);
        let before = [at(400, 1, 0), at(500, 400, 0), at(501, 500, 0), at(502, 501, 0)];
        assert_eq!(tracker.observe(Duration::ZERO, &before, None), None);
        let after = [at(400, 1, 90), at(500, 400, 5), at(501, 500, 40), at(502, 501, 5)];
        let s = tracker.observe(Duration::from_secs(1), &after, None).unwrap();
        let t = &s.tiers[0];
        assert_eq!((t.tier.as_str(), t.processes, t.cpu_user_pct), ("external", 3, 50.0));
    }

    struct Fake;
    impl ProcSource for Fake {
        fn processes(&mut self) -> Vec<ProcStat> {
            vec![proc(100, 100, 0, 0, 0)]
        }
        fn machine(&mut self) -> Option<MachineStat> {
            machine(0, 0)
        }
    }

    #[test]
    fn stop_returns_the_series_with_the_partial_interval() {
        let targets =
            vec![Target { tier: "t".into(), leader: ProcId { pid: 100, start: 10 }, pool: None }];
        let sampler = Sampler::start_with(targets, Duration::from_secs(3600), Fake);
        let samples = sampler.stop();
        assert_eq!(samples.len(), 1, "{samples:?}");
        assert_eq!(samples[0].tiers[0].processes, 1);
    }

    /// Run times by pid (ns) and the processes and machine counters to go with them.
    struct Counted {
        procs: Vec<ProcStat>,
        run_ns: Vec<(i32, u64)>,
        machine: Option<MachineStat>,
    }

    impl ProcSource for Counted {
        fn processes(&mut self) -> Vec<ProcStat> {
            self.procs.clone()
        }
        fn machine(&mut self) -> Option<MachineStat> {
            self.machine
        }
        fn run_ns(&mut self, pid: i32) -> Option<u64> {
            self.run_ns.iter().find(|(p, _)| *p == pid).map(|(_, ns)| *ns)
        }
    }

    #[test]
    fn a_tiers_cpu_over_a_short_cell_is_the_difference_of_its_exact_counters() {
        let nginx = Watched {
            tier: "nginx".into(),
            members: Members::Group(ProcId { pid: 100, start: 10 }),
            pool: None,
        };
        let targets = [nginx];
        // 11 ms apart: the worker ran 9.5 ms (no whole tick in its /proc/PID/stat), and the
        // master reaped a child that had used 2 ticks (20 ms at 100 ticks a second).
        let mut before = Counted {
            procs: vec![proc(100, 100, 1, 1, 0), proc(101, 100, 7, 3, 0)],
            run_ns: vec![(100, 20_000_000), (101, 100_000_000)],
            machine: machine(1_000, 2_000),
        };
        let start = CpuCounters::read(&targets, &mut before, 100);
        let mut after = Counted {
            procs: vec![proc(100, 100, 1, 1, 2), proc(101, 100, 7, 3, 0)],
            run_ns: vec![(100, 20_000_000), (101, 109_500_000)],
            machine: machine(1_002, 2_002),
        };
        let mut end = CpuCounters::read(&targets, &mut after, 100);
        end.at = start.at + Duration::from_millis(11);
        let used = end.since(&start);
        assert_eq!(used.wall, Duration::from_millis(11));
        assert_eq!(
            used.tiers,
            [TierCpuUse { tier: "nginx".into(), cpu: Duration::from_micros(29_500) }]
        );
        assert_eq!(used.machine_busy, Some(1.0));
        // Without schedstat the ticks count instead; a worker gone unreaped is never negative.
        let mut gone =
            Counted { procs: vec![proc(100, 100, 1, 1, 0)], run_ns: vec![], machine: None };
        let used = CpuCounters::read(&targets, &mut gone, 100).since(&start);
        assert_eq!(used.tiers[0].cpu, Duration::ZERO);
        assert_eq!(used.machine_busy, None);
    }

    #[test]
    fn the_live_hook_is_told_of_every_sample_as_it_is_taken() {
        let targets =
            vec![Target { tier: "t".into(), leader: ProcId { pid: 100, start: 10 }, pool: None }];
        let sampler = Sampler::start_with(targets, Duration::from_millis(20), Fake);
        let told = Arc::new(std::sync::Mutex::new(Vec::new()));
        let into = told.clone();
        sampler.live(Arc::new(move |s: &Sample| into.lock().unwrap().push(s.t_ms)));
        let deadline = Instant::now() + Duration::from_secs(30);
        while told.lock().unwrap().len() < 2 {
            assert!(Instant::now() < deadline, "no live sample in 30 s");
            std::thread::sleep(Duration::from_millis(10));
        }
        let samples = sampler.stop();
        let told = told.lock().unwrap().clone();
        // Every sample from the hook's setting on, the last (the stop's) included; one taken
        // before it was set (20 ms in, on a loaded machine) is the series' only.
        let taken: Vec<u64> = samples.iter().map(|s| s.t_ms).collect();
        assert!(taken.ends_with(&told), "{told:?} not the end of {taken:?}");
    }

    #[test]
    fn finish_gives_the_cpu_from_start_to_stop() {
        let targets =
            vec![Target { tier: "t".into(), leader: ProcId { pid: 100, start: 10 }, pool: None }];
        let sampled = Sampler::start_with(targets, Duration::from_secs(3600), Fake).finish();
        assert_eq!(sampled.samples.len(), 1);
        let cpu = sampled.cpu.expect("counters at start and stop");
        assert_eq!(cpu.tiers, [TierCpuUse { tier: "t".into(), cpu: Duration::ZERO }]);
    }
}
