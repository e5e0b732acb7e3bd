//! The knee from one rising ramp (`sweep --ramp A..B`): one run whose offered rate rises
//! linearly, judged second by second with the rule a sweep judges its steps by
//! ([`knee::find`], docs/sweep.md), each second standing for a step.
//!
//! A ramp's seconds are not independent repetitions: each runs on the queue the one before
//! left, and the rate moves within each by the ramp's slope. So the knee is stated as "at about
//! N req/s offered (second S)", known to within the slope (the rate changes that much between
//! the last second that passed and the first that did not); it says where to look, and a sweep
//! of steps around it confirms. A second whose client was limited (its CPU, its descriptors)
//! ends the search with that reason, as a client-limited step ends a sweep's: it is never taken
//! for the server's knee.

use std::net::SocketAddr;
use std::time::Duration;

use loadlab_engine::{BenchConfig, Shape, Stage};
use loadlab_stats::knee::{self, Criteria, StepPoint};
use serde::Serialize;

use crate::commands::run::executor::{Measure, RunError};
use crate::judge::seconds::Second;

/// What a ramp sweep runs.
#[derive(Debug, Clone)]
pub struct RampPlan {
    /// The target's configuration (its pacing open loop or sessions), address and URL.
    pub config: BenchConfig,
    pub addr: SocketAddr,
    pub url: String,
    /// Rising: from < to.
    pub from: f64,
    pub to: f64,
    pub duration: Duration,
    pub criteria: Criteria,
}

/// Where the ramp's knee lies.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct RampKnee {
    /// The last second that passed, before the first that did not; null if the first failed.
    pub second: Option<u32>,
    /// The ramp's rate at the end of that second: the highest rate it kept up with, the "about
    /// N" of the sentence (a second's offered is its mean, half a slope lower; and the second
    /// after it fails as soon as part of it is over the knee, so the mean would sit up to a
    /// slope and a half below).
    pub knee_rps: Option<f64>,
    /// That second's offered and achieved (completed) rate.
    pub offered_rps: Option<f64>,
    pub achieved_rps: Option<f64>,
    /// What the next second broke (`throughput`, `errors`, `latency`, `client_limited`,
    /// `network_bound`), or `none` when every second passed.
    pub reason: String,
    /// The first failing second's offered rate.
    pub next_offered_rps: Option<f64>,
    /// How much the offered rate rises each second: the knee is known to within this.
    pub slope_rps_per_s: f64,
    /// Seconds judged.
    pub seconds_judged: usize,
}

impl RampKnee {
    /// The knee in a sentence, with its confidence.
    pub fn sentence(&self) -> String {
        let within = format!(
            "the ramp rose {:.0} req/s each second, so the knee is known to within that; a \
             sweep of steps around it confirms",
            self.slope_rps_per_s
        );
        match (self.second, self.knee_rps, self.reason.as_str()) {
            (_, _, "none") => format!(
                "no knee: every one of {} seconds passed, up to {:.0} req/s offered",
                self.seconds_judged,
                self.next_offered_rps.or(self.offered_rps).unwrap_or(0.0)
            ),
            (Some(s), Some(offered), reason) => format!(
                "knee at about {offered:.0} req/s offered (second {s}); the next second, at \
                 {:.0} req/s, broke {reason}: {within}",
                self.next_offered_rps.unwrap_or(0.0)
            ),
            (_, _, reason) => format!(
                "no knee found: the first second, at {:.0} req/s, already broke {reason}",
                self.next_offered_rps.unwrap_or(0.0)
            ),
        }
    }
}

/// The seconds as the sweep's steps: the offered rate, the rate completed, the error ratio,
/// the p99, and whether the client limited the second.
pub fn points(seconds: &[Second]) -> Vec<StepPoint> {
    seconds
        .iter()
        .map(|s| {
            let ended = (s.completed + s.failed).max(1) as f64;
            StepPoint {
                offered_rps: s.offered.unwrap_or(0) as f64,
                achieved_rps: s.completed as f64,
                error_ratio: s.failed as f64 / ended,
                p99_us: s.p99_us.unwrap_or(0),
                client_limited: s.client_limited(),
                network_bound: false,
                slo_breach: None,
            }
        })
        .collect()
}

/// The knee over `seconds` of a ramp rising from `from` by `slope` req/s each second, by
/// `criteria`.
/// A partial last second is not judged: its counts are of less than a second.
pub fn knee(seconds: &[Second], from: f64, slope: f64, criteria: &Criteria) -> RampKnee {
    let seconds = crate::judge::seconds::whole(seconds);
    let points = points(seconds);
    let k = knee::find(&points, criteria);
    let good = k.last_good.map(|i| &points[i]);
    RampKnee {
        second: k.last_good.map(|i| seconds[i].second),
        knee_rps: k.last_good.map(|i| from + slope * f64::from(seconds[i].second + 1)),
        offered_rps: good.map(|p| p.offered_rps),
        achieved_rps: good.map(|p| p.achieved_rps),
        reason: k.first_bad.map_or("none".to_string(), |(_, b)| {
            crate::commands::sweep::breach_name(b).to_string()
        }),
        next_offered_rps: k.first_bad.map(|(i, _)| points[i].offered_rps),
        slope_rps_per_s: slope,
        seconds_judged: points.len(),
    }
}

/// A plan that cannot run: the engine's configuration error, which the CLI reports as the
/// user's (exit 2).
fn usage(message: String) -> RunError {
    RunError::Engine(loadlab_engine::EngineError::Config(message))
}

/// What a ramp sweep found: every second's figures and the knee.
#[derive(Debug, Clone, Serialize)]
pub struct RampOutcome {
    pub url: String,
    pub seconds: Vec<Second>,
    /// Null on an agent other than agent 0 of `--agents`: its seconds are its share of the
    /// ramp, and the knee is agent 0's, of every agent's seconds added.
    pub knee: Option<RampKnee>,
    pub interrupted: bool,
    /// `--agents N`, any agent but agent 0: its share in words (`agent 1 of 2`); absent
    /// otherwise.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub share: Option<String>,
}

impl RampOutcome {
    /// What the ramp found, in a sentence: the knee, or on another agent than agent 0 whose
    /// the seconds are and who judges them.
    pub fn sentence(&self) -> String {
        match (&self.knee, &self.share) {
            (Some(k), _) => k.sentence(),
            (None, share) => format!(
                "{}: these seconds are this host's share of the ramp; its knee is agent 0's, \
                 judged on every agent's seconds added",
                share.as_deref().unwrap_or("this agent")
            ),
        }
    }
}

/// Runs the ramp as one shaped run, then finds its knee.
pub fn run_ramp(plan: &RampPlan, measure: &mut dyn Measure) -> Result<RampOutcome, RunError> {
    if !(plan.to > plan.from && plan.from >= 0.0) {
        return Err(usage(format!(
            "--ramp {}..{}: a ramp that finds a knee rises",
            plan.from, plan.to
        )));
    }
    let stage = Stage { secs: plan.duration.as_secs_f64(), from: plan.from, to: plan.to };
    let shape = Shape::new(vec![stage]).map_err(|e| usage(e.to_string()))?;
    let mut config = plan.config.clone();
    config.shaped(shape);
    config.check()?;
    let result = measure.measure(&config, plan.addr, "ramp").map_err(RunError::Engine)?;
    let mut seconds = crate::judge::seconds::of(&config, &result);
    measure.whole_seconds(&mut seconds);
    let slope = (plan.to - plan.from) / plan.duration.as_secs_f64();
    Ok(RampOutcome {
        url: plan.url.clone(),
        knee: Some(knee(&seconds, plan.from, slope, &plan.criteria)),
        seconds,
        interrupted: result.interrupted || measure.stopped(),
        share: None,
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use loadlab_store::Flag;

    fn second(s: u32, offered: u64, completed: u64) -> Second {
        Second {
            second: s,
            partial_s: None,
            offered: Some(offered),
            achieved: offered,
            completed,
            failed: 0,
            failed_by: Default::default(),
            p50_us: Some(100),
            p90_us: Some(200),
            p99_us: Some(300),
            connections_open: 4,
            client_cpu: 0.1,
            flags: Vec::new(),
            flagged_agents: Vec::new(),
        }
    }

    #[test]
    fn the_knee_is_the_last_second_before_throughput_falls() {
        // A server of 350/s under a ramp of 50/s each second.
        let rows: Vec<Second> = (0..10u32)
            .map(|s| {
                let offered = 25 + 50 * u64::from(s);
                second(s, offered, offered.min(350))
            })
            .collect();
        let k = knee(&rows, 0.0, 50.0, &Criteria::default());
        assert_eq!(
            (k.second, k.offered_rps, k.reason.as_str()),
            (Some(6), Some(325.0), "throughput")
        );
        assert_eq!((k.knee_rps, k.next_offered_rps), (Some(350.0), Some(375.0)));
        let sentence = k.sentence();
        assert!(sentence.contains("about 350 req/s offered (second 6)"), "{sentence}");
        assert!(sentence.contains("within"), "{sentence}");
    }

    #[test]
    fn a_second_the_client_limited_is_never_the_servers_knee() {
        let mut rows: Vec<Second> =
            (0..6u32).map(|s| second(s, 100 * u64::from(s + 1), 0)).collect();
        for r in rows.iter_mut() {
            r.completed = r.offered.unwrap_or(0);
        }
        rows[3].flags = vec![Flag::ClientStarved];
        rows[4].completed = 10;
        let k = knee(&rows, 0.0, 100.0, &Criteria::default());
        assert_eq!((k.second, k.reason.as_str()), (Some(2), "client_limited"));
        // Every second passing: no knee, said as such.
        let fine: Vec<Second> = (0..3u32).map(|s| second(s, 100, 100)).collect();
        let k = knee(&fine, 100.0, 0.0, &Criteria::default());
        assert_eq!(k.reason, "none");
        assert!(k.sentence().starts_with("no knee"), "{}", k.sentence());
    }
}
