//! The live progress line on a terminal: elapsed time, completed, current rate, errors.

use std::io::{IsTerminal, Write};
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;
use std::thread::JoinHandle;
use std::time::{Duration, Instant};

use loadlab_agents::coordinator::Counters;
use loadlab_engine::{BenchConfig, Control};

use loadlab_stats::format::count;

pub struct Progress {
    done: Arc<AtomicBool>,
    handle: JoinHandle<()>,
}

impl Progress {
    /// Starts the display on stderr, or returns `None` when stderr is not a terminal.
    /// `label` goes before the figures (`loadlab run` names the cell there).
    /// `others`: `bench --agents` on agent 0, the other agents' counters, added so that the
    /// line is the whole test's.
    pub fn start(
        control: Arc<Control>,
        others: Option<Arc<Counters>>,
        config: &BenchConfig,
        label: &str,
    ) -> Option<Progress> {
        if !std::io::stderr().is_terminal() {
            return None;
        }
        let warmup = config.warmup;
        let label = label.to_string();
        let done = Arc::new(AtomicBool::new(false));
        let flag = done.clone();
        let handle = std::thread::spawn(move || {
            let start = Instant::now();
            // The counters may carry earlier runs of the same process (a sweep's steps).
            let base =
                (control.completed.load(Ordering::Relaxed), control.failed.load(Ordering::Relaxed));
            let mut last = (start, 0u64);
            while !flag.load(Ordering::Relaxed) {
                std::thread::sleep(Duration::from_millis(250));
                let now = Instant::now();
                let (more, more_failed) = others.as_ref().map_or((0, 0), |o| {
                    (o.completed.load(Ordering::Relaxed), o.failed.load(Ordering::Relaxed))
                });
                let completed = control.completed.load(Ordering::Relaxed) - base.0 + more;
                let failed = control.failed.load(Ordering::Relaxed) - base.1 + more_failed;
                let dt = now.duration_since(last.0).as_secs_f64();
                let rate = if dt > 0.0 { (completed - last.1) as f64 / dt } else { 0.0 };
                last = (now, completed);
                let elapsed = now.duration_since(start);
                let phase = if elapsed < warmup { " (warm-up)" } else { "" };
                eprint!(
                    "\r\x1b[2K{label}{:6.1}s{phase}  completed {}  {:.0} req/s  errors {}",
                    elapsed.as_secs_f64(),
                    count(completed as f64),
                    rate,
                    count(failed as f64)
                );
                let _ = std::io::stderr().flush();
            }
            eprint!("\r\x1b[2K");
        });
        Some(Progress { done, handle })
    }

    pub fn finish(self) {
        self.done.store(true, Ordering::Relaxed);
        let _ = self.handle.join();
    }
}
