//! What the view shows, kept apart from how it is drawn ([`crate::draw`]) so that both can be
//! tested without a terminal: the run in progress as the runner's live figures give it
//! (its tally every 250 ms, each second as every worker closed it, each flag a second
//! raised), the command's own lines held until the view closes (a sweep's table, a suite's
//! cells and verdict rows), a sweep's steps against their offered rate, a suite's place
//! in its plan, and the tiers of the stack under load (their CPU and memory each second).

use std::collections::VecDeque;

use loadlab_engine::ErrorClass;
use loadlab_lab::sampler::TierSample;
use loadlab_runner::commands::bench::following::Second;
use loadlab_runner::commands::bench::live::Tally;
use loadlab_runner::judge::trust::Flag;

/// Seconds kept for the charts: a few minutes, whatever the run's length.
pub const KEPT_SECONDS: usize = 300;

/// Everything the view shows.
#[derive(Debug, Default)]
pub struct Model {
    /// The command: `bench http://127.0.0.1:8080/`.
    pub title: String,
    /// The run in progress, as its measure names it (a suite's cell).
    pub label: String,
    pub tally: Option<Tally>,
    /// The run's last seconds, oldest first.
    pub seconds: VecDeque<Second>,
    /// The run's failures so far, by class.
    pub errors: Vec<(ErrorClass, u64)>,
    /// Each flag raised in this run, with the second it first was.
    pub flags: Vec<(Flag, u32)>,
    /// The command's lines, as it would have printed them by now, each with where it goes
    /// when the view closes.
    pub lines: Vec<(crate::Out, String)>,
    /// A sweep's steps so far: (offered, achieved) per second.
    pub steps: Vec<(f64, f64)>,
    /// The stack's tiers under this run's load, as its sampler last read them (a lab cell's).
    pub tiers: Vec<TierSample>,
    /// What the command has concluded so far, titled: a suite's verdict over the cells that
    /// ended, a sweep's knee once a step broke. Replaced, not added to, as it changes.
    pub so_far: Option<(String, Vec<String>)>,
    /// When a suite's plan expects to end (its estimate from the start).
    pub plan_ends: Option<std::time::Instant>,
    /// A run ended, so the next tally starts another.
    ended: bool,
}

impl Model {
    /// Nothing shown yet of `title`'s command.
    pub fn new(title: &str) -> Model {
        Model { title: title.into(), ..Default::default() }
    }

    /// The live figures of the run in progress.
    pub fn tally(&mut self, label: &str, tally: &Tally) {
        if self.ended {
            self.seconds.clear();
            self.errors.clear();
            self.flags.clear();
            self.tiers.clear();
            self.ended = false;
        }
        label.clone_into(&mut self.label);
        self.tally = Some(*tally);
    }

    /// A second every worker closed, and the flags it raised.
    pub fn second(&mut self, second: &Second, raised: &[Flag]) {
        for (class, n) in &second.errors {
            match self.errors.iter_mut().find(|(c, _)| c == class) {
                Some((_, m)) => *m += n,
                None => self.errors.push((*class, *n)),
            }
        }
        for flag in raised {
            if !self.flags.iter().any(|(f, _)| f == flag) {
                self.flags.push((flag.clone(), second.second));
            }
        }
        if self.seconds.len() == KEPT_SECONDS {
            self.seconds.pop_front();
        }
        self.seconds.push_back(second.clone());
    }

    /// The run in progress has ended.
    pub fn run_ended(&mut self) {
        self.ended = true;
    }

    /// The last second closed.
    pub fn last(&self) -> Option<&Second> {
        self.seconds.back()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn flags_are_kept_once_with_their_first_second_and_errors_add_up() {
        let mut m = Model::default();
        let s = |second, n| Second {
            second,
            failed: n,
            errors: vec![(ErrorClass::Connreset, n)],
            ..Default::default()
        };
        m.second(&s(0, 2), &[Flag::Errors]);
        m.second(&s(1, 3), &[Flag::Errors]);
        assert_eq!(m.flags, [(Flag::Errors, 0)]);
        assert_eq!(m.errors, [(ErrorClass::Connreset, 5)]);
        // The next run (a sweep's next step) starts from nothing.
        m.run_ended();
        let tally = Tally {
            elapsed: std::time::Duration::ZERO,
            warming: false,
            completed: 0,
            failed: 0,
            rate: 0.0,
            unit: Default::default(),
        };
        m.tally("step 2", &tally);
        assert!(m.flags.is_empty() && m.errors.is_empty() && m.seconds.is_empty());
    }
}
