//! loadlab's live terminal view: while a `bench`, a `sweep` or a suite runs, one screen that
//! shows what it does now, drawn with ratatui over crossterm on the alternate screen. The
//! figures are the runner's live ones (its [`Show`] of each run: the tally every 250 ms and
//! each second the workers close); the command adds its own lines ([`View::line`]: a sweep's
//! steps, a suite's cells), which the view holds and gives back when it closes, to be
//! printed then as they would have been without it, and so does whatever else writes to
//! the process's stderr meanwhile ([`stderr`]: a child's notes would garble the screen). `q` and Ctrl-C stop the run as Ctrl-C's
//! signal does (the command's `stop`); the terminal is always given back ([`terminal`]).
//!
//! - [`model`]: what is shown; [`draw`]: how; [`terminal`]: the terminal's modes; [`keys`]:
//!   what is typed (and a terminal that hangs up, which stops the run and the view);
//!   [`stderr`]: descriptor 2 held while the view is up.

pub mod draw;
pub mod keys;
pub mod model;
pub mod stderr;
pub mod terminal;

use std::os::fd::AsRawFd;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex, MutexGuard};
use std::thread::JoinHandle;
use std::time::Duration;

use loadlab_runner::commands::bench::following::Second;
use loadlab_runner::commands::bench::live::{Show, Shows, Tally};
use loadlab_runner::judge::trust::Flag;

pub use model::Model;
pub use terminal::restore;

/// Which of the command's streams a held line belongs to.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Out {
    Stdout,
    Stderr,
}

/// How often the screen is drawn and the keys read.
const FRAME: Duration = Duration::from_millis(200);

/// The view on the terminal, until [`View::close`].
pub struct View {
    model: Arc<Mutex<Model>>,
    done: Arc<AtomicBool>,
    drawing: Option<JoinHandle<std::io::Result<()>>>,
    stderr: Option<stderr::Held>,
}

impl View {
    /// Takes the terminal and draws `title`'s view on it; `stop` is what `q` and Ctrl-C do.
    pub fn open(title: &str, stop: Box<dyn Fn() + Send>) -> std::io::Result<View> {
        let mut screen = terminal::Screen::enter()?;
        let model = Arc::new(Mutex::new(Model::new(title)));
        let into = model.clone();
        let held = stderr::Held::start(
            libc::STDERR_FILENO,
            Box::new(move |line| lock(&into).lines.push((Out::Stderr, line))),
        )?;
        let done = Arc::new(AtomicBool::new(false));
        let (shown, ended) = (model.clone(), done.clone());
        let keyboard = keys::terminal();
        // Named, so that its CPU can be told from the workers' (bench/watch-cost.sh).
        let drawing = std::thread::Builder::new().name("view".into()).spawn(move || {
            while !ended.load(Ordering::Relaxed) {
                screen.terminal.draw(|f| draw::draw(f, &lock(&shown)))?;
                let Some(fd) = keyboard.as_ref().map(AsRawFd::as_raw_fd) else {
                    std::thread::sleep(FRAME);
                    continue;
                };
                match keys::wait(fd, FRAME) {
                    keys::Input::Nothing => {}
                    keys::Input::Stop => stop(),
                    keys::Input::Gone => {
                        stop();
                        break;
                    }
                }
            }
            Ok::<(), std::io::Error>(())
        })?;
        Ok(View { model, done, drawing: Some(drawing), stderr: Some(held) })
    }

    /// A [`Show`] for each run the command measures, into this view.
    pub fn shows(&self) -> Shows {
        let model = self.model.clone();
        Box::new(move || Box::new(Into { model: model.clone() }) as Box<dyn Show>)
    }

    /// One of the command's lines for `to`, shown now and given back by [`View::close`].
    pub fn line(&self, to: Out, line: &str) {
        lock(&self.model).lines.push((to, line.to_string()));
    }

    /// A suite's plan expects to end at `at`: the view says how long is left by it.
    pub fn plan_ends(&self, at: std::time::Instant) {
        lock(&self.model).plan_ends = Some(at);
    }

    /// A sweep's step: its offered and achieved rates.
    pub fn step(&self, offered: f64, achieved: f64) {
        lock(&self.model).steps.push((offered, achieved));
    }

    /// What the command has concluded so far (`title`, then its lines), in place of what it
    /// had: a suite's verdict as its cells end, a sweep's knee once found. Only shown: the
    /// command prints its conclusion itself once the view has closed.
    pub fn so_far(&self, title: &str, lines: Vec<String>) {
        lock(&self.model).so_far = Some((title.to_string(), lines));
    }

    /// Gives the terminal back; returns the command's lines, and those written to stderr
    /// meanwhile, to be printed now.
    pub fn close(mut self) -> std::io::Result<Vec<(Out, String)>> {
        self.done.store(true, Ordering::Relaxed);
        let drawn = self.drawing.take().map(JoinHandle::join);
        terminal::restore();
        if let Some(held) = self.stderr.take() {
            held.close();
        }
        if let Some(Ok(Err(e))) = drawn {
            return Err(e);
        }
        Ok(std::mem::take(&mut lock(&self.model).lines))
    }
}

impl Drop for View {
    fn drop(&mut self) {
        self.done.store(true, Ordering::Relaxed);
        if let Some(d) = self.drawing.take() {
            let _ = d.join();
        }
        terminal::restore();
    }
}

/// The model, whoever panicked while holding it.
fn lock(model: &Mutex<Model>) -> MutexGuard<'_, Model> {
    model.lock().unwrap_or_else(std::sync::PoisonError::into_inner)
}

/// A run's figures into the view's model.
struct Into {
    model: Arc<Mutex<Model>>,
}

impl Show for Into {
    fn show(&mut self, label: &str, tally: &Tally) {
        lock(&self.model).tally(label, tally);
    }

    fn clear(&mut self) {
        lock(&self.model).run_ended();
    }

    fn follows_seconds(&self) -> bool {
        true
    }

    fn second(&mut self, second: &Second, raised: &[Flag]) {
        lock(&self.model).second(second, raised);
    }

    fn tiers(&mut self, tiers: &[loadlab_lab::sampler::TierSample]) {
        tiers.clone_into(&mut lock(&self.model).tiers);
    }
}
