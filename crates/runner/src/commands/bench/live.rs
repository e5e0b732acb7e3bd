//! The engine as bench, sweep and suites measure with it: one [`Control`] for every run of the
//! command (what stops them: Ctrl-C, or agent 0 for `--agents`), and the live counters of the
//! run in progress: completed, failed and the current rate since it began, the other agents'
//! added on agent 0 so that the figures are the whole test's. How they are shown (a progress
//! line on a terminal) is the caller's [`Show`]. With `--metrics-listen`, the engine's
//! snapshots, each cell's labels and its verdict go to the metrics board as well
//! ([`EngineMeasure::publish_to`]). A lab cell's tiers, as its sampler reads them each second,
//! go to both ([`Measure::tiers_live`]).

use std::net::SocketAddr;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex, PoisonError};
use std::time::{Duration, Instant};

use loadlab_agents::coordinator::Counters;
use loadlab_engine::{BenchConfig, BenchResult, Control, EngineError, Pacing};
use loadlab_lab::sampler::{Live, Sample, TierSample};
use loadlab_metrics::{Board, Labels, Tier};
use loadlab_store::{Counted, Flag};

use crate::commands::bench::following::{Following, Second};
use crate::commands::run::executor::Measure;
use crate::judge::trust::raised_in;

/// How often the live figures are taken.
pub const EVERY: Duration = Duration::from_millis(250);

/// The live figures of the run in progress.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Tally {
    pub elapsed: Duration,
    /// Still within the run's warm-up.
    pub warming: bool,
    pub completed: u64,
    pub failed: u64,
    /// Completed per second since the last tally.
    pub rate: f64,
    /// What is counted: requests, or a run of visits' views, visits or sessions.
    pub unit: Counted,
}

impl Tally {
    /// The rate with its unit: `1234 req/s`, `3 views/s`.
    pub fn rate_text(&self) -> String {
        format!("{:.0} {}", self.rate, self.unit.rate_unit())
    }
}

/// Counts one run from its start: the control's counters may carry earlier runs of the same
/// process (a sweep's steps), so they count from where they stood.
pub struct Counting {
    control: Arc<Control>,
    others: Option<Arc<Counters>>,
    unit: Counted,
    warmup: Duration,
    start: Instant,
    base: (u64, u64),
    last: (Instant, u64),
}

impl Counting {
    /// Counts `unit`: requests, or a run of visits' visits, the other agents' (`others`, agent
    /// 0 of `--agents`) of the same unit added.
    pub fn of(
        control: Arc<Control>,
        others: Option<Arc<Counters>>,
        warmup: Duration,
        unit: Counted,
    ) -> Self {
        let start = Instant::now();
        let mut counting =
            Counting { control, others, unit, warmup, start, base: (0, 0), last: (start, 0) };
        counting.base = counting.counters();
        counting
    }

    /// This process's counters of what is counted, completed and failed.
    fn counters(&self) -> (u64, u64) {
        let c = &self.control;
        let (done, failed) = match self.unit {
            Counted::Requests => (&c.completed, &c.failed),
            _ => (&c.visits_completed, &c.visits_failed),
        };
        (done.load(Ordering::Relaxed), failed.load(Ordering::Relaxed))
    }

    /// The other agents' counters of what is counted, as their heartbeats tell them.
    fn others(&self) -> (u64, u64) {
        let Some(o) = &self.others else { return (0, 0) };
        let (done, failed) = match self.unit {
            Counted::Requests => (&o.completed, &o.failed),
            _ => (&o.visits_completed, &o.visits_failed),
        };
        (done.load(Ordering::Relaxed), failed.load(Ordering::Relaxed))
    }

    /// The figures now.
    pub fn tally(&mut self, now: Instant) -> Tally {
        let (more, more_failed) = self.others();
        let (done, failed) = self.counters();
        let completed = done - self.base.0 + more;
        let failed = failed - self.base.1 + more_failed;
        let dt = now.duration_since(self.last.0).as_secs_f64();
        let rate = if dt > 0.0 { completed.saturating_sub(self.last.1) as f64 / dt } else { 0.0 };
        self.last = (now, completed);
        let elapsed = now.duration_since(self.start);
        Tally { elapsed, warming: elapsed < self.warmup, completed, failed, rate, unit: self.unit }
    }
}

/// Shows the live figures, on a thread of their own while a run lasts.
pub trait Show: Send {
    /// Every [`EVERY`]; `label` names the run (`loadlab run` names the cell there).
    fn show(&mut self, label: &str, tally: &Tally);
    /// The run has ended.
    fn clear(&mut self);
    /// Whether it shows each second ([`Show::second`]): the workers then publish their
    /// seconds ([`loadlab_engine::live`]), once a second each.
    fn follows_seconds(&self) -> bool {
        false
    }
    /// A second every worker has closed, with the flags it raised, before the next
    /// [`Show::show`].
    fn second(&mut self, _second: &Second, _raised: &[Flag]) {}
    /// The tiers of the stack under load as its sampler last read them (a lab cell's), before
    /// the next [`Show::show`].
    fn tiers(&mut self, _tiers: &[TierSample]) {}
}

/// Makes a [`Show`] for each run.
pub type Shows = Box<dyn Fn() -> Box<dyn Show>>;

/// The engine behind [`Measure`], with its one control and, when `shows`, the live figures.
pub struct EngineMeasure {
    control: Arc<Control>,
    shows: Option<Shows>,
    /// `bench --agents` on agent 0: the other agents' counters.
    others: Option<Arc<Counters>>,
    /// `--metrics-listen`: the board, and the labels of the next measurement when the
    /// caller named it ([`Measure::cell`]).
    board: Option<(Arc<Board>, Option<Labels>)>,
    /// The tiers' last sample, until the show of the run in progress takes it.
    tiers: Arc<Mutex<Option<Vec<TierSample>>>>,
}

impl EngineMeasure {
    pub fn new(control: Arc<Control>, shows: Option<Shows>) -> EngineMeasure {
        EngineMeasure { control, shows, others: None, board: None, tiers: Arc::default() }
    }

    /// Tells `board` of every measurement from now on: the engine's snapshots as they are
    /// published, each one's labels, its verdict.
    pub fn publish_to(&mut self, board: Arc<Board>) {
        self.control.live.watch(board.clone());
        self.board = Some((board, None));
    }

    /// What stops the runs of this measure, and their counters.
    pub fn control(&self) -> Arc<Control> {
        self.control.clone()
    }

    /// Adds the other agents' counters to the live figures (agent 0 of `bench --agents`), and
    /// with `--metrics-listen` their streamed seconds to the board: it serves the merge.
    pub fn show_others(&mut self, others: Arc<Counters>) {
        self.merge_agents(&others);
        self.others = Some(others);
    }
}

impl Measure for EngineMeasure {
    fn measure(
        &mut self,
        config: &BenchConfig,
        addr: SocketAddr,
        label: &str,
    ) -> Result<BenchResult, EngineError> {
        let Some((board, named)) = &mut self.board else { return self.run(config, addr, label) };
        let board = board.clone();
        let offered = config.shape.is_none().then(|| config.pacing.offered_rps()).flatten();
        board.begin(named.take().unwrap_or_else(|| labels(config)), offered);
        let result = self.run(config, addr, label);
        board.end();
        result
    }

    fn cell(&mut self, labels: Labels) {
        if let Some((_, named)) = &mut self.board {
            *named = Some(labels);
        }
    }

    fn tiers_live(&self) -> Option<Live> {
        if self.board.is_none() && self.shows.is_none() {
            return None;
        }
        let board = self.board.as_ref().map(|(b, _)| b.clone());
        let shown = self.shows.is_some().then(|| self.tiers.clone());
        Some(Arc::new(move |sample: &Sample| {
            if let Some(board) = &board {
                board.tiers_sampled(&tiers(sample));
            }
            if let Some(shown) = &shown {
                *shown.lock().unwrap_or_else(PoisonError::into_inner) = Some(sample.tiers.clone());
            }
        }))
    }

    /// With `--metrics-listen`, the other agents' seconds as they stream in go to the board,
    /// so that it serves the whole test's figures: their counts added exactly and their
    /// interval histograms into its buckets, as the merged result adds them.
    fn merge_agents(&mut self, others: &Counters) {
        let Some((board, _)) = &self.board else { return };
        let board = board.clone();
        others.tell_seconds(Arc::new(move |agent, seconds| {
            for s in seconds {
                let mut f =
                    loadlab_metrics::Figures { counts: s.counts.clone(), ..Default::default() };
                for v2 in &s.latency {
                    // One that does not decode is left out of the live buckets only: the
                    // merged result is made from the agents' parts, not from these.
                    if let Ok(h) = loadlab_agents::part::decode(v2) {
                        f.add_latency(&h);
                    }
                }
                board.streamed(agent, &f);
            }
        }));
    }

    fn judged(&mut self, verdict: &crate::judge::trust::Verdict) {
        if let Some((board, _)) = &self.board {
            let raised = |name: &str| verdict.findings.iter().any(|f| f.flag.name() == name);
            board.judged(Flag::names().map(|n| (n.to_string(), raised(n))).collect());
        }
    }

    fn stopped(&self) -> bool {
        self.control.stop.load(Ordering::Relaxed)
    }

    fn control(&self) -> Option<Arc<Control>> {
        Some(self.control.clone())
    }
}

/// A sample's tiers for the board: the CPU of its interval in seconds.
fn tiers(sample: &Sample) -> Vec<Tier> {
    let seconds = |pct: f64| pct / 100.0 * sample.interval_ms as f64 / 1000.0;
    sample
        .tiers
        .iter()
        .map(|t| Tier {
            tier: t.tier.clone(),
            cpu_user_s: seconds(t.cpu_user_pct),
            cpu_sys_s: seconds(t.cpu_sys_pct),
            rss_bytes: t.rss_bytes,
            processes: t.processes as u64,
        })
        .collect()
}

/// The labels of a measurement nobody named (`bench`, a sweep's step): its URL and its load.
fn labels(config: &BenchConfig) -> Labels {
    let load = match config.pacing {
        _ if config.shape.is_some() => "shaped".to_string(),
        Pacing::Closed => format!("c={}", config.connections),
        Pacing::Open { rate, .. } => format!("rate={rate}/s"),
        Pacing::Sessions { rate, calls, .. } => format!("sessions={rate}/s calls={calls}"),
    };
    Labels { workload: config.target.url.clone(), load, ..Labels::default() }
}

impl EngineMeasure {
    /// One run of the engine, with the live figures shown when asked for.
    fn run(
        &mut self,
        config: &BenchConfig,
        addr: SocketAddr,
        label: &str,
    ) -> Result<BenchResult, EngineError> {
        let Some(shows) = &self.shows else {
            return loadlab_engine::run(config, addr, self.control.clone());
        };
        let (mut show, label) = (shows(), label.to_string());
        let (control, others) = (self.control.clone(), self.others.clone());
        let sampled = self.tiers.clone();
        // The last sample of the cell before (its sampler's stop) is not this run's.
        sampled.lock().unwrap_or_else(PoisonError::into_inner).take();
        let workers = config.threads;
        let mut following = show.follows_seconds().then(|| {
            control.live.enable();
            // What an earlier run of the process published and nobody took.
            control.live.take();
            Following::new(workers)
        });
        let mut counting = Counting::of(
            control.clone(),
            others,
            config.warmup,
            crate::judge::trust::counted(config),
        );
        let done = Arc::new(AtomicBool::new(false));
        let flag = done.clone();
        let follows = following.is_some();
        // Named, so that its CPU can be told from the workers' (bench/watch-cost.sh).
        let shown = std::thread::Builder::new().name("show".into()).spawn(move || {
            let mut seconds = |show: &mut Box<dyn Show>, end: bool| {
                let Some(f) = following.as_mut() else { return };
                let snapshots = control.live.take();
                let given = if end { f.finish(snapshots) } else { f.feed(snapshots) };
                for s in &given {
                    show.second(s, &raised_in(s, workers));
                }
            };
            while !flag.load(Ordering::Relaxed) {
                std::thread::sleep(EVERY);
                seconds(&mut show, false);
                if let Some(t) = sampled.lock().unwrap_or_else(PoisonError::into_inner).take() {
                    show.tiers(&t);
                }
                show.show(&label, &counting.tally(Instant::now()));
            }
            if follows {
                // The seconds the workers closed as they ended, and the last figures.
                seconds(&mut show, true);
                show.show(&label, &counting.tally(Instant::now()));
            }
            show.clear();
        });
        let result = loadlab_engine::run(config, addr, self.control.clone());
        done.store(true, Ordering::Relaxed);
        if let Ok(shown) = shown {
            let _ = shown.join();
        }
        result
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_run_counts_from_where_the_counters_stood_with_the_other_agents_added() {
        let control = Arc::new(Control::default());
        control.completed.store(1000, Ordering::Relaxed);
        control.failed.store(7, Ordering::Relaxed);
        let others = Arc::new(Counters::default());
        let mut counting = Counting::of(
            control.clone(),
            Some(others.clone()),
            Duration::from_secs(3600),
            Counted::Requests,
        );
        let t0 = Instant::now();
        control.completed.fetch_add(50, Ordering::Relaxed);
        control.failed.fetch_add(2, Ordering::Relaxed);
        others.completed.store(30, Ordering::Relaxed);
        others.failed.store(1, Ordering::Relaxed);
        let tally = counting.tally(t0 + Duration::from_secs(2));
        assert_eq!((tally.completed, tally.failed), (80, 3));
        assert!(tally.warming);
        control.completed.fetch_add(40, Ordering::Relaxed);
        let next = counting.tally(t0 + Duration::from_secs(4));
        // 40 more in the 2 s since the last tally.
        assert!((next.rate - 20.0).abs() < 1e-9, "{}", next.rate);
    }

    #[test]
    fn a_run_of_visits_counts_its_visits_and_says_so() {
        let control = Arc::new(Control::default());
        control.visits_completed.store(4, Ordering::Relaxed);
        let others = Arc::new(Counters::default());
        others.completed.store(30, Ordering::Relaxed);
        let mut counting =
            Counting::of(control.clone(), Some(others.clone()), Duration::ZERO, Counted::Views);
        let t0 = Instant::now();
        control.completed.fetch_add(70, Ordering::Relaxed);
        control.visits_completed.fetch_add(10, Ordering::Relaxed);
        control.visits_failed.fetch_add(1, Ordering::Relaxed);
        // The other agents' views count too (agent 0 of `--agents`), their requests do not.
        others.visits_completed.store(6, Ordering::Relaxed);
        others.visits_failed.store(2, Ordering::Relaxed);
        let tally = counting.tally(t0 + Duration::from_secs(2));
        assert_eq!((tally.completed, tally.failed), (16, 3), "views, not requests");
        assert_eq!(tally.rate_text(), "8 views/s");
        let plain = BenchConfig::new(loadlab_engine::Target::parse("http://127.0.0.1:9/").unwrap());
        assert_eq!(crate::judge::trust::counted(&plain), Counted::Requests);
    }

    #[test]
    fn the_measure_is_stopped_when_its_control_is() {
        let control = Arc::new(Control::default());
        let measure = EngineMeasure::new(control.clone(), None);
        assert!(!measure.stopped());
        control.stop.store(true, Ordering::Relaxed);
        assert!(measure.stopped());
    }
}
