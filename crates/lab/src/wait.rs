//! Polling for a condition that another process reaches eventually (a port that accepts, a
//! group that has exited), instead of sleeping for a guessed time.

use std::thread;
use std::time::{Duration, Instant};

const POLL: Duration = Duration::from_millis(10);

/// Polls `condition` until it holds or `limit` passes; whether it held.
pub fn until(limit: Duration, mut condition: impl FnMut() -> bool) -> bool {
    let deadline = Instant::now() + limit;
    loop {
        if condition() {
            return true;
        }
        if Instant::now() >= deadline {
            return false;
        }
        thread::sleep(POLL);
    }
}
