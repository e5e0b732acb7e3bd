//! `sweep`'s flags as typed, turned into what runs: each target's configuration with the
//! steps' stop and schedule, fitted to the client and reached once, and the plan of steps or
//! of one ramp around them.

use std::time::Duration;

use loadlab_engine::{Pacing, Stop};
use loadlab_stats::knee::Criteria;

use crate::bench::flags::{FlagError, RequestFlags, Schedule};
use crate::bench::BenchError;
use crate::capacity::Policy;
use crate::executor::Measure;
use crate::ramp::RampPlan;
use crate::slo::Slo;
use crate::sweep::{SweepPlan, SweepTarget};

/// A step's measured time when neither `--step-duration` nor `--conns-per-step` is given.
const STEP: Duration = Duration::from_secs(10);

/// `sweep`'s flags beyond the request's.
#[derive(Debug, Clone)]
pub struct SweepFlags {
    /// The URL, then `--compare`'s.
    pub urls: Vec<String>,
    /// `--rates`, ascending (empty with `--ramp`).
    pub rates: Vec<f64>,
    pub step_duration: Option<Duration>,
    pub conns_per_step: Option<u64>,
    pub calls_per_conn: Option<u32>,
    pub schedule: Schedule,
    pub over_capacity: Policy,
    pub max_errors: f64,
    pub stop_after_knee: Option<usize>,
    pub find_knee: bool,
    pub slo: Option<Slo>,
}

/// A flag the user has to change, or a target that cannot be run as asked.
#[derive(Debug, thiserror::Error)]
pub enum SweepFlagError {
    #[error(transparent)]
    Flags(#[from] FlagError),
    #[error(transparent)]
    Bench(#[from] BenchError),
}

impl SweepFlags {
    /// Each target's configuration, fitted to what the client has and reached once; what
    /// was capped is told to `warn`.
    pub fn targets(
        &self,
        request: &RequestFlags,
        measure: &mut dyn Measure,
        warn: &mut dyn FnMut(&str),
    ) -> Result<Vec<SweepTarget>, SweepFlagError> {
        let mut targets = Vec::new();
        for url in &self.urls {
            let mut config = request.config(url)?;
            config.stop = match (self.conns_per_step, self.step_duration) {
                (Some(n), _) => Stop::Count(n),
                (None, d) => Stop::Duration(d.unwrap_or(STEP)),
            };
            config.pacing = self.schedule.pacing(1.0, None);
            config.coalesce = self.schedule.coalesce;
            let (addr, capped) = crate::bench::prepare(&mut config, self.over_capacity, measure)
                .map_err(crate::advice::bench_with_lab_ca)?;
            if let Some(w) = capped {
                warn(&w);
            }
            targets.push(SweepTarget { config, addr, url: url.clone() });
        }
        Ok(targets)
    }

    /// The sweep of steps over `targets`.
    pub fn plan(&self, targets: Vec<SweepTarget>) -> SweepPlan {
        // As fitted to what the client has (the same machine for every target).
        let max_connections = match targets[0].config.pacing {
            Pacing::Open { max_connections, .. } | Pacing::Sessions { max_connections, .. } => {
                max_connections
            }
            Pacing::Closed => self.schedule.max_connections,
        };
        SweepPlan {
            rates: self.rates.clone(),
            targets,
            calls: (self.calls_per_conn.is_some() || self.conns_per_step.is_some())
                .then(|| self.calls_per_conn.unwrap_or(1).max(1)),
            arrival: self.schedule.arrival.into(),
            max_connections,
            criteria: self.criteria(),
            stop_after_knee: self.stop_after_knee,
            find_knee: self.find_knee,
            slo: self.slo.clone(),
        }
    }

    /// One ramp from `from` to `to` req/s over `duration` on the first target.
    pub fn ramp(&self, target: SweepTarget, from: f64, to: f64, duration: Duration) -> RampPlan {
        let SweepTarget { config, addr, url } = target;
        RampPlan { config, addr, url, from, to, duration, criteria: self.criteria() }
    }

    fn criteria(&self) -> Criteria {
        Criteria { max_error_ratio: self.max_errors, ..Criteria::default() }
    }
}
