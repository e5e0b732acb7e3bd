//! A cell stopped at once when its stack goes out of reach mid-load (a lab host whose session
//! went silent), instead of loading a path that no longer answers until every connection
//! times out: a watcher polls the sampler's [`Lost`] while the engine runs and stops it
//! through the measure's [`Control`].

use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;
use std::time::Duration;

use loadlab_engine::Control;

/// Why the stack went out of reach, once it has; `None` while it is there.
pub type Lost = Arc<dyn Fn() -> Option<String> + Send + Sync>;

/// How often the watcher asks: a tenth of the 1 Hz samples' period.
const POLL: Duration = Duration::from_millis(100);

/// Runs `measure` (the engine, stopped by `control`), stopped as soon as `lost` says why:
/// its outcome, and that reason. The stop is taken back after, so that it does not read as a
/// Ctrl-C to what follows. Without a control the cell runs its course and `lost` is asked
/// after.
pub fn watched<T>(
    control: Option<Arc<Control>>,
    lost: Option<&Lost>,
    measure: impl FnOnce() -> T,
) -> (T, Option<String>) {
    let (Some(lost), Some(control)) = (lost, control) else {
        let outcome = measure();
        return (outcome, lost.and_then(|l| l()));
    };
    let done = AtomicBool::new(false);
    let mut why = None;
    let outcome = std::thread::scope(|scope| {
        let watcher = scope.spawn(|| watch(lost, &control, &done));
        let outcome = measure();
        done.store(true, Ordering::Relaxed);
        why = watcher.join().unwrap_or(None);
        outcome
    });
    if why.is_some() {
        // Ours, not the user's: the next cell's `stopped()` must not see it.
        control.stop.store(false, Ordering::Relaxed);
    }
    (outcome, why.or_else(|| lost()))
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

    /// What the engine does: runs until stopped, at most `limit`; whether it was stopped.
    fn engine(control: &Control, limit: Duration) -> bool {
        let started = Instant::now();
        while !control.stop.load(Ordering::Relaxed) && started.elapsed() < limit {
            std::thread::sleep(Duration::from_millis(10));
        }
        control.stop.load(Ordering::Relaxed)
    }

    #[test]
    fn a_lost_stack_stops_the_cell_at_once_and_the_stop_is_not_left_for_the_next() {
        let control = Arc::new(Control::default());
        let since = Instant::now();
        let lost: Lost = Arc::new(move || {
            (since.elapsed() > Duration::from_millis(300)).then(|| "the path is cut".to_string())
        });
        let c = control.clone();
        let (stopped, why) =
            watched(Some(control.clone()), Some(&lost), || engine(&c, Duration::from_secs(20)));
        assert!(since.elapsed() < Duration::from_secs(5), "stopped after {:?}", since.elapsed());
        assert!(stopped, "the engine was not stopped");
        assert_eq!(why.as_deref(), Some("the path is cut"));
        assert!(!control.stop.load(Ordering::Relaxed), "the lost host's stop reads as a Ctrl-C");

        // Nothing lost: the cell runs its course and nothing is said.
        let never: Lost = Arc::new(|| None);
        let c = control.clone();
        let (stopped, why) =
            watched(Some(control), Some(&never), || engine(&c, Duration::from_millis(200)));
        assert!(!stopped);
        assert_eq!(why, None);
    }
}
