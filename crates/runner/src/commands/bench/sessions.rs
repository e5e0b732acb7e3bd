//! The visits' own figures in a bench report (`--wsesslog`, `--view`, `--visits`): how many
//! visits began, completed and failed, at what rate, how long they lived, and where the failed
//! ones failed; for a visit file ([`Visits`]) each step's figures too. The requests' figures
//! stay where they are.

use loadlab_engine::visits::SessionTally;
use loadlab_engine::BenchResult;
use loadlab_stats::RecorderSummary;
use serde::Serialize;

/// httperf samples the session rate every 5 seconds for its min/avg/max/stddev.
const SAMPLE_S: usize = 5;

#[derive(Debug, Serialize)]
pub struct Sessions {
    /// Measured visits that began.
    pub started: u64,
    pub completed: u64,
    pub failed: u64,
    /// Visits still going when a timed or interrupted run ended.
    pub unfinished: u64,
    /// Completed visits per second of the run.
    pub rate_per_s: f64,
    /// Completed visits per second in 5-second samples (httperf's session rate line); null
    /// for a run shorter than one sample.
    pub rate_samples: Option<RateSamples>,
    /// Completed visits, from when each was due to its last answer, think times included
    /// (httperf's session lifetime).
    pub lifetime_us: RecorderSummary,
    /// Failed visits, from when each was due to its failure.
    pub failtime_us: RecorderSummary,
    /// Think time of the ended visits, in total (never part of any latency).
    pub think_s: f64,
    /// Connections the visits opened, per visit begun.
    pub connections_per_session: f64,
    /// Calls of failed visits in flight on the visitor's other connections when it failed
    /// (sent, then abandoned with the visit), and calls they never issued.
    pub abandoned: u64,
    pub not_issued: u64,
    /// Visits by the replies they received: entry i is the visits that received i.
    pub length_histogram: Vec<u64>,
    /// Failed visits by step (burst, 1-based), call in it (1-based) and class.
    pub failures: Vec<StepFailures>,
}

#[derive(Debug, Serialize)]
pub struct RateSamples {
    pub min: f64,
    pub avg: f64,
    pub max: f64,
    pub stddev: f64,
    pub samples: usize,
}

#[derive(Debug, Serialize)]
pub struct StepFailures {
    pub step: u32,
    pub call: u32,
    pub class: String,
    pub count: u64,
}

impl Sessions {
    /// The figures of a run of visits; `None` for any other run.
    pub fn of(r: &BenchResult) -> Option<Sessions> {
        let s: &SessionTally = r.tally.sessions.as_deref()?;
        let secs = r.duration.as_secs_f64();
        Some(Sessions {
            started: s.started,
            completed: s.completed,
            failed: s.failed,
            unfinished: s.unfinished,
            rate_per_s: if secs > 0.0 { s.completed as f64 / secs } else { 0.0 },
            rate_samples: samples(&s.per_second, r.duration.as_secs() as usize),
            lifetime_us: s.lifetime.summary(),
            failtime_us: s.failtime.summary(),
            think_s: s.think_us as f64 / 1e6,
            connections_per_session: if s.started > 0 {
                s.connections as f64 / s.started as f64
            } else {
                0.0
            },
            abandoned: s.abandoned,
            not_issued: s.not_issued,
            length_histogram: s.replies.clone(),
            failures: s
                .failures
                .iter()
                .map(|(f, n)| StepFailures {
                    step: f.step,
                    call: f.call,
                    class: f.class.clone(),
                    count: *n,
                })
                .collect(),
        })
    }
}

/// A visit file's visits (`--visits`): JSON `visits`.
#[derive(Debug, Serialize)]
pub struct Visits {
    pub completed: u64,
    pub failed: u64,
    /// Visits still going when a timed or interrupted run ended.
    pub unfinished: u64,
    /// Completed visits per second of the run.
    pub rate_per_s: f64,
    /// Completed visits, from when each was due to its last answer, think times included.
    pub duration_us: RecorderSummary,
    pub steps: Vec<Step>,
    /// A weighted mix of visit files (`--visits a.toml:3,b.toml:1`): each file's visits and
    /// its own steps (named without the file); absent for one file.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub files: Option<Vec<FileVisits>>,
}

/// One visit file of a weighted mix.
#[derive(Debug, Serialize)]
pub struct FileVisits {
    /// As `--visits` named it.
    pub file: String,
    pub weight: u32,
    /// Measured visits of this file that began (its first step's), completed (its last
    /// step's) and failed (at any of its steps).
    pub started: u64,
    pub completed: u64,
    pub failed: u64,
    /// Completed visits of this file per second of the run.
    pub rate_per_s: f64,
    /// Its completed visits, from when each was due to its last answer, think included.
    pub duration_us: RecorderSummary,
    pub steps: Vec<Step>,
}

/// One step of a visit file: its request and resources.
#[derive(Debug, Serialize)]
pub struct Step {
    /// Its number (from 1), method and path as the file writes it (`2 POST /login`).
    pub step: String,
    /// Measured visits that began the step, completed it, and failed at it.
    pub started: u64,
    pub completed: u64,
    /// Failed visits ended at this step, by class: a request's error class, `validation`
    /// (--expect-*), a broken check (`status`, `body`, `header`) or a capture that found
    /// nothing (`capture`).
    pub failed: std::collections::BTreeMap<String, u64>,
    /// From the step's due time (its visit's arrival, or the previous step's last answer plus
    /// the think time) to its last answer; completed steps only.
    pub latency_us: RecorderSummary,
}

impl Visits {
    /// The figures of a run of a visit file; `None` for any other run.
    pub fn of(cfg: &loadlab_engine::BenchConfig, r: &BenchResult) -> Option<Visits> {
        // A page view's steps (first and repeat view) are in its own `views` object.
        let plan = cfg.visits.as_deref().filter(|p| !p.steps.is_empty() && p.view.is_none())?;
        let s: &SessionTally = r.tally.sessions.as_deref()?;
        let secs = r.duration.as_secs_f64();
        let per_second = |n: u64| if secs > 0.0 { n as f64 / secs } else { 0.0 };
        let step = |name: &str, t: &loadlab_engine::visits::StepTally| Step {
            step: name.to_string(),
            started: t.started,
            completed: t.completed,
            failed: t.failed.clone(),
            latency_us: t.latency.summary(),
        };
        let steps = plan.steps.iter().zip(&s.steps).map(|(name, t)| step(name, t)).collect();
        let files = (plan.visits.len() > 1).then(|| {
            let starts = plan.step_starts.iter();
            let each = plan.visits.iter().zip(starts).enumerate().map(|(i, (v, start))| {
                let at = *start..start + v.bursts.len();
                let own = s.steps.get(at.clone()).unwrap_or_default();
                let prefix = format!("{}: ", v.file);
                let names = plan.steps[at].iter().map(|n| n.strip_prefix(&prefix).unwrap_or(n));
                let completed = own.last().map_or(0, |t| t.completed);
                FileVisits {
                    file: v.file.clone(),
                    weight: v.weight,
                    started: own.first().map_or(0, |t| t.started),
                    completed,
                    failed: own.iter().flat_map(|t| t.failed.values()).sum(),
                    rate_per_s: per_second(completed),
                    duration_us: s.by_visit.get(i).cloned().unwrap_or_default().summary(),
                    steps: names.zip(own).map(|(n, t)| step(n, t)).collect(),
                }
            });
            each.collect()
        });
        Some(Visits {
            completed: s.completed,
            failed: s.failed,
            unfinished: s.unfinished,
            rate_per_s: per_second(s.completed),
            duration_us: s.lifetime.summary(),
            steps,
            files,
        })
    }
}

/// Completions per second over whole 5-second samples of the run's `whole_s` seconds.
fn samples(per_second: &[u64], whole_s: usize) -> Option<RateSamples> {
    let n = whole_s / SAMPLE_S;
    if n == 0 {
        return None;
    }
    let rates: Vec<f64> = (0..n)
        .map(|i| {
            let window = per_second.iter().skip(i * SAMPLE_S).take(SAMPLE_S);
            window.sum::<u64>() as f64 / SAMPLE_S as f64
        })
        .collect();
    let avg = rates.iter().sum::<f64>() / n as f64;
    let var = rates.iter().map(|r| (r - avg).powi(2)).sum::<f64>() / n as f64;
    Some(RateSamples {
        min: rates.iter().copied().fold(f64::INFINITY, f64::min),
        avg,
        max: rates.iter().copied().fold(0.0, f64::max),
        stddev: var.sqrt(),
        samples: n,
    })
}

#[cfg(test)]
mod tests {
    use super::samples;

    #[test]
    fn five_second_samples_of_the_session_rate() {
        // 12 s: two whole samples, the last 2 s left out as httperf leaves a partial one.
        let per_second = [1, 1, 1, 1, 1, 2, 2, 2, 2, 2, 9, 9];
        let s = samples(&per_second, 12).unwrap();
        assert_eq!((s.min, s.avg, s.max, s.samples), (1.0, 1.5, 2.0, 2));
        assert!((s.stddev - 0.5).abs() < 1e-9);
        assert!(samples(&per_second, 4).is_none());
    }
}
