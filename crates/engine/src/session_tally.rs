//! The visits' own figures, kept in a worker's [`Tally`](crate::Tally) beside its requests':
//! started, completed and failed visits, how long they lived, and where the failed ones failed.

use std::collections::BTreeMap;

use loadlab_stats::Recorder;

/// What one worker's visits did; merged by addition.
#[derive(Debug, Clone, Default)]
pub struct SessionTally {
    /// Measured visits that began (their first call was issued).
    pub started: u64,
    pub completed: u64,
    pub failed: u64,
    /// Visits still going when a timed run ended.
    pub unfinished: u64,
    /// Completed visits: from the visit's due time to its last answer, think times included
    /// (httperf's session lifetime), microseconds.
    pub lifetime: Recorder,
    /// Failed visits: from the due time to the failure.
    pub failtime: Recorder,
    /// Think time the completed and failed visits spent, microseconds, in total.
    pub think_us: u64,
    /// Calls of failed visits that were in flight on the visitor's other connections when it
    /// failed: sent, then abandoned with the visit (not counted as requests).
    pub abandoned: u64,
    /// Calls that failed visits never issued.
    pub not_issued: u64,
    /// Connections the visits opened.
    pub connections: u64,
    /// Visits by the number of replies they received (httperf's session length histogram).
    pub replies: Vec<u64>,
    /// Completed visits by the second (since measuring began) in which they completed.
    pub per_second: Vec<u64>,
    /// Failed visits by where (burst, 1-based, and the call in it) and why.
    pub failures: BTreeMap<StepFailure, u64>,
    /// A visit file's steps, each with its own figures (empty for other visits).
    pub steps: Vec<StepTally>,
    /// A weighted mix of visit files: each file's completed visits' durations (as
    /// `lifetime`), by the plan's visit; empty otherwise.
    pub by_visit: Vec<Recorder>,
    /// The highest visitor number (`{visitor}`) a visit held, warm-up's included: in the
    /// open loop it grows with the visits in flight at once ([`Plan::users`](crate::visits::Plan::users)).
    pub top_visitor: u64,
    /// Measured answers that were not 2xx and that their step's status check asked for (a
    /// login's 302): the visit knows them for right answers, not a server's failure.
    pub expected_not_2xx: u64,
}

/// One step of a visit file: how often it began, completed and failed (by class), and its
/// latency: from the step's due time to the last answer of its request and resources.
#[derive(Debug, Clone, Default)]
pub struct StepTally {
    pub started: u64,
    pub completed: u64,
    pub failed: BTreeMap<String, u64>,
    pub latency: Recorder,
}

impl StepTally {
    fn merge(&mut self, o: &StepTally) {
        self.started += o.started;
        self.completed += o.completed;
        for (k, v) in &o.failed {
            *self.failed.entry(k.clone()).or_insert(0) += v;
        }
        self.latency.merge(&o.latency);
    }
}

/// Where and why a visit failed.
#[derive(Debug, Clone, PartialEq, Eq, PartialOrd, Ord)]
pub struct StepFailure {
    /// The burst (1-based): httperf's burst, a visit file's step.
    pub step: u32,
    /// The call within it (1-based: 1 is the burst's first request).
    pub call: u32,
    /// The request's error class, or `status` for a broken check.
    pub class: String,
}

impl SessionTally {
    pub fn merge(&mut self, o: &SessionTally) {
        self.started += o.started;
        self.completed += o.completed;
        self.failed += o.failed;
        self.unfinished += o.unfinished;
        self.lifetime.merge(&o.lifetime);
        self.failtime.merge(&o.failtime);
        self.think_us += o.think_us;
        self.abandoned += o.abandoned;
        self.not_issued += o.not_issued;
        self.connections += o.connections;
        self.top_visitor = self.top_visitor.max(o.top_visitor);
        self.expected_not_2xx += o.expected_not_2xx;
        add(&mut self.replies, &o.replies);
        add(&mut self.per_second, &o.per_second);
        for (k, v) in &o.failures {
            *self.failures.entry(k.clone()).or_insert(0) += v;
        }
        if self.steps.len() < o.steps.len() {
            self.steps.resize_with(o.steps.len(), StepTally::default);
        }
        for (a, b) in self.steps.iter_mut().zip(&o.steps) {
            a.merge(b);
        }
        if self.by_visit.len() < o.by_visit.len() {
            self.by_visit.resize_with(o.by_visit.len(), Recorder::default);
        }
        for (a, b) in self.by_visit.iter_mut().zip(&o.by_visit) {
            a.merge(b);
        }
    }

    pub(crate) fn count_replies(&mut self, replies: u32) {
        bump(&mut self.replies, replies as usize);
    }

    pub(crate) fn count_completed_at(&mut self, second: usize) {
        bump(&mut self.per_second, second);
    }
}

fn bump(v: &mut Vec<u64>, i: usize) {
    if v.len() <= i {
        v.resize(i + 1, 0);
    }
    v[i] += 1;
}

fn add(a: &mut Vec<u64>, b: &[u64]) {
    if a.len() < b.len() {
        a.resize(b.len(), 0);
    }
    for (x, y) in a.iter_mut().zip(b) {
        *x += y;
    }
}
