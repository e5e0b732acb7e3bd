//! The process's one answer to Ctrl-C and SIGTERM. The first asks whatever runs to stop: a
//! load ends and still reports, a sweep skips its remaining steps, a suite keeps its finished
//! cells, stacks go down. A second exits at once, unless a [`Finishing`] guard is alive: servers
//! left running would hold ports and CPU after loadlab is gone, and a run's record left open
//! would stay "running" forever, so their teardown (bounded: the lab's SIGTERM-then-SIGKILL
//! grace, a store commit, a report) is not cut short.

use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::{Arc, OnceLock};

use anyhow::Context;
use loadlab_engine::Control;

/// How many [`Finishing`] guards are alive.
static FINISHING: AtomicUsize = AtomicUsize::new(0);

/// The process's one Control, wired to Ctrl-C and SIGTERM. The handler can be installed only
/// once, and one command may run many loads (a sweep's steps, a suite's cells): all share it.
pub fn control() -> anyhow::Result<Arc<Control>> {
    static CONTROL: OnceLock<Arc<Control>> = OnceLock::new();
    if let Some(c) = CONTROL.get() {
        return Ok(c.clone());
    }
    let control = Arc::new(Control::default());
    let handler = control.clone();
    // ctrlc runs this on its own thread, not in signal context, so it may print.
    ctrlc::set_handler(move || interrupt(&handler)).context("installing the Ctrl-C handler")?;
    Ok(CONTROL.get_or_init(|| control).clone())
}

/// What Ctrl-C does, and `q` or Ctrl-C in the live view (whose raw mode takes Ctrl-C as a
/// key, not as the signal): the first asks to stop, a second exits, the terminal given back
/// first.
pub fn interrupt(control: &Control) {
    if !control.stop_now() {
        return;
    }
    if FINISHING.load(Ordering::Relaxed) == 0 {
        loadlab_tui::restore();
        std::process::exit(crate::exit::INTERRUPTED.into());
    }
    eprintln!("loadlab: stopping: stacks go down and what was measured is kept first");
}

/// Whether Ctrl-C or SIGTERM arrived during this process's life.
pub fn interrupted(control: &Control) -> bool {
    control.stop.load(Ordering::Relaxed)
}

/// While alive, a second Ctrl-C does not exit: stacks may be up, or a record is being closed.
#[must_use = "the guard protects the teardown only while it is alive"]
pub struct Finishing(());

impl Finishing {
    pub fn hold() -> Finishing {
        FINISHING.fetch_add(1, Ordering::Relaxed);
        Finishing(())
    }
}

impl Drop for Finishing {
    fn drop(&mut self) {
        FINISHING.fetch_sub(1, Ordering::Relaxed);
    }
}
