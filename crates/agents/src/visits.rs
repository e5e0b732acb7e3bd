//! An agent's visits (`--visits`, `--wsesslog`, `--view`) as it sends them to agent 0 inside
//! its [`Part`](crate::part::Part): the engine's [`SessionTally`] with every recorder in the
//! part's encoding (`H`: HdrHistogram V2 with exact sums), so that agent 0 adds visits, steps
//! and failures as counts and the visits' durations, the steps' latencies and the views' load
//! times bucket by bucket (a merged percentile is the percentile of every agent's samples).
//! The recorders' encoding is the part's own, given to [`Visits::of`] and [`Visits::tally`].

use loadlab_engine::visits::{SessionTally, StepFailure, StepTally};
use loadlab_stats::Recorder;
use serde::{Deserialize, Serialize};

/// A [`SessionTally`] on the wire, its recorders encoded as `H`.
#[derive(Debug, Clone, Serialize, Deserialize)]
pub struct Visits<H> {
    /// started, completed, failed, unfinished, think_us, abandoned, not_issued, connections:
    /// in that order.
    counters: [u64; 8],
    lifetime: H,
    failtime: H,
    replies: Vec<u64>,
    per_second: Vec<u64>,
    /// (step, call, class, count): a list, as a map's structured keys do not survive JSON.
    failures: Vec<(u32, u32, String, u64)>,
    steps: Vec<Step<H>>,
    /// A weighted mix of visit files: each file's visit durations.
    #[serde(default = "Vec::new")]
    by_visit: Vec<H>,
    /// The highest visitor number a visit held.
    #[serde(default)]
    top_visitor: u64,
}

/// One step of a visit file.
#[derive(Debug, Clone, Serialize, Deserialize)]
struct Step<H> {
    started: u64,
    completed: u64,
    /// Failures by class.
    failed: Vec<(String, u64)>,
    latency: H,
}

impl<H> Visits<H> {
    /// `s`, its recorders encoded by `encode`.
    pub(crate) fn of(s: &SessionTally, encode: impl Fn(&Recorder) -> H) -> Visits<H> {
        Visits {
            counters: [
                s.started,
                s.completed,
                s.failed,
                s.unfinished,
                s.think_us,
                s.abandoned,
                s.not_issued,
                s.connections,
            ],
            lifetime: encode(&s.lifetime),
            failtime: encode(&s.failtime),
            replies: s.replies.clone(),
            per_second: s.per_second.clone(),
            failures: s
                .failures
                .iter()
                .map(|(f, n)| (f.step, f.call, f.class.clone(), *n))
                .collect(),
            steps: s
                .steps
                .iter()
                .map(|t| Step {
                    started: t.started,
                    completed: t.completed,
                    failed: t.failed.iter().map(|(k, n)| (k.clone(), *n)).collect(),
                    latency: encode(&t.latency),
                })
                .collect(),
            by_visit: s.by_visit.iter().map(&encode).collect(),
            top_visitor: s.top_visitor,
        }
    }

    /// Completed and failed visits, as the engine counts them live
    /// (`Control::visits_completed`).
    pub(crate) fn completed_failed(&self) -> (u64, u64) {
        (self.counters[1], self.counters[2])
    }

    /// The agent's visits, rebuilt (each recorder by `decode`); added into agent 0's by
    /// [`SessionTally::merge`].
    pub(crate) fn tally(
        &self,
        decode: impl Fn(&H) -> Result<Recorder, String>,
    ) -> Result<SessionTally, String> {
        let c = self.counters;
        let mut s = SessionTally {
            started: c[0],
            completed: c[1],
            failed: c[2],
            unfinished: c[3],
            think_us: c[4],
            abandoned: c[5],
            not_issued: c[6],
            connections: c[7],
            lifetime: decode(&self.lifetime)?,
            failtime: decode(&self.failtime)?,
            replies: self.replies.clone(),
            per_second: self.per_second.clone(),
            top_visitor: self.top_visitor,
            ..SessionTally::default()
        };
        for (step, call, class, n) in &self.failures {
            let at = StepFailure { step: *step, call: *call, class: class.clone() };
            s.failures.insert(at, *n);
        }
        for t in &self.steps {
            let mut step = StepTally {
                started: t.started,
                completed: t.completed,
                failed: t.failed.iter().cloned().collect(),
                ..StepTally::default()
            };
            // Into the step's own recorder, as the engine's merge of workers does.
            step.latency.merge(&decode(&t.latency)?);
            s.steps.push(step);
        }
        s.by_visit = self.by_visit.iter().map(&decode).collect::<Result<_, _>>()?;
        Ok(s)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn visits_through_the_wire_add_up_as_one_hosts_would() {
        let mut a = SessionTally { started: 5, completed: 4, failed: 1, ..Default::default() };
        a.steps.resize_with(2, StepTally::default);
        a.steps[0].latency.record(1_000);
        a.steps[1].failed.insert("status".into(), 1);
        a.lifetime.record(2_500);
        a.failures.insert(StepFailure { step: 2, call: 1, class: "status".into() }, 1);
        let mut b = SessionTally { started: 3, completed: 3, top_visitor: 9, ..Default::default() };
        b.steps.resize_with(2, StepTally::default);
        b.steps[0].latency.record(9_000);
        b.lifetime.record(7_000);
        b.by_visit = vec![Recorder::default(), b.lifetime.clone()];
        // Through JSON, each recorder as the part encodes it.
        let text = serde_json::to_string(&Visits::of(&b, crate::part::Hist::of)).unwrap();
        let sent: Visits<crate::part::Hist> = serde_json::from_str(&text).unwrap();
        let mut merged = a.clone();
        merged.merge(&sent.tally(crate::part::Hist::recorder).unwrap());
        let mut whole = a;
        whole.merge(&b);
        assert_eq!((merged.started, merged.completed, merged.failed), (8, 7, 1));
        assert_eq!(merged.top_visitor, 9, "the highest of the agents'");
        assert_eq!(merged.lifetime.totals(), whole.lifetime.totals());
        assert_eq!(merged.steps[0].latency.totals(), whole.steps[0].latency.totals());
        assert_eq!(
            merged.steps[0].latency.percentile(99.0),
            whole.steps[0].latency.percentile(99.0)
        );
        assert_eq!(merged.steps[1].failed.get("status"), Some(&1));
        assert_eq!(merged.failures.len(), 1);
        assert_eq!(merged.by_visit[1].totals(), b.lifetime.totals());
    }
}
