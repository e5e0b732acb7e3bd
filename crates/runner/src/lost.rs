//! A cell stopped at once when its stack goes out of reach mid-load (a lab host whose session
//! went silent), instead of loading a path that no longer answers until every connection
//! times out: a watcher polls the sampler's [`Lost`] while the engine runs and stops it
//! through the measure's [`Control`].

use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;
use std::time::Duration;

use loadlab_engine::{BenchConfig, BenchResult, Control, EngineError};

use crate::executor::Measure;

/// Why the stack went out of reach, once it has; `None` while it is there.
pub type Lost = Arc<dyn Fn() -> Option<String> + Send + Sync>;

/// How often the watcher asks: a tenth of the 1 Hz samples' period.
const POLL: Duration = Duration::from_millis(100);

/// Runs `config` through `measure`, stopped as soon as `lost` says why (when the measure can
/// be stopped): the result, and that reason. The stop is taken back after, so that it does
/// not read as a Ctrl-C to what follows.
pub fn measure_watched(
    measure: &mut dyn Measure,
    config: &BenchConfig,
    addr: std::net::SocketAddr,
    label: &str,
    lost: Option<&Lost>,
) -> (Result<BenchResult, EngineError>, Option<String>) {
    let (Some(lost), Some(control)) = (lost, measure.control()) else {
        let result = measure.measure(config, addr, label);
        return (result, lost.and_then(|l| l()));
    };
    let done = AtomicBool::new(false);
    let mut why = None;
    let result = std::thread::scope(|scope| {
        let watcher = scope.spawn(|| watch(lost, &control, &done));
        let result = measure.measure(config, addr, label);
        done.store(true, Ordering::Relaxed);
        why = watcher.join().unwrap_or(None);
        result
    });
    if why.is_some() {
        // Ours, not the user's: the next command's `stopped()` must not see it.
        control.stop.store(false, Ordering::Relaxed);
    }
    (result, why.or_else(|| lost()))
}

/// Until `done`: stops `control` and returns why when `lost` says so.
fn watch(lost: &Lost, control: &Control, done: &AtomicBool) -> Option<String> {
    while !done.load(Ordering::Relaxed) {
        if let Some(why) = lost() {
            control.request_stop();
            return Some(why);
        }
        std::thread::sleep(POLL);
    }
    None
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::time::Instant;

    /// A measure that runs until stopped (at most `limit`), as the engine does.
    struct Endless {
        control: Arc<Control>,
        limit: Duration,
    }

    impl Measure for Endless {
        fn reach(&mut self, _: &mut BenchConfig) -> Result<std::net::SocketAddr, EngineError> {
            Ok("127.0.0.1:9".parse().unwrap())
        }
        fn measure(
            &mut self,
            config: &BenchConfig,
            _: std::net::SocketAddr,
            _: &str,
        ) -> Result<BenchResult, EngineError> {
            let started = Instant::now();
            while !self.control.stop.load(Ordering::Relaxed) && started.elapsed() < self.limit {
                std::thread::sleep(Duration::from_millis(10));
            }
            let mut r = crate::fake::result(config.pacing, 10, 0.5, 1_000, 0.1);
            r.interrupted = self.control.stop.load(Ordering::Relaxed);
            Ok(r)
        }
        fn stopped(&self) -> bool {
            self.control.stop.load(Ordering::Relaxed)
        }
        fn control(&self) -> Option<Arc<Control>> {
            Some(self.control.clone())
        }
    }

    fn config() -> BenchConfig {
        BenchConfig::new(loadlab_engine::Target::parse("http://127.0.0.1:9/").expect("a URL"))
    }

    #[test]
    fn a_lost_stack_stops_the_cell_at_once_and_the_stop_is_not_left_for_the_next() {
        let control = Arc::new(Control::default());
        let mut measure = Endless { control: control.clone(), limit: Duration::from_secs(20) };
        let since = Instant::now();
        let lost: Lost = Arc::new(move || {
            (since.elapsed() > Duration::from_millis(300)).then(|| "the path is cut".to_string())
        });
        let addr = "127.0.0.1:9".parse().unwrap();
        let (result, why) = measure_watched(&mut measure, &config(), addr, "c", Some(&lost));
        assert!(since.elapsed() < Duration::from_secs(5), "stopped after {:?}", since.elapsed());
        assert!(result.unwrap().interrupted);
        assert_eq!(why.as_deref(), Some("the path is cut"));
        assert!(!measure.stopped(), "the lost host's stop reads as a Ctrl-C");

        // Nothing lost: the cell runs its course and nothing is said.
        let mut measure = Endless { control, limit: Duration::from_millis(200) };
        let never: Lost = Arc::new(|| None);
        let (result, why) = measure_watched(&mut measure, &config(), addr, "c", Some(&never));
        assert!(!result.unwrap().interrupted);
        assert_eq!(why, None);
    }
}
