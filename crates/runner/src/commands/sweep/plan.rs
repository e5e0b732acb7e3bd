//! `sweep`'s flags as clap parses them, turned into what runs: each target's configuration with the
//! steps' stop and schedule, fitted to the client and reached once, and the plan of steps or
//! of one ramp around them.

use std::path::PathBuf;
use std::time::Duration;

use loadlab_engine::{Pacing, Stop};
use loadlab_load::parse_duration;
use loadlab_stats::knee::Criteria;

use crate::commands::bench::flags::{FlagError, RequestFlags};
use crate::commands::bench::BenchError;
use crate::commands::run::executor::Measure;
use crate::commands::sweep::ramp::RampPlan;
use crate::commands::sweep::{SweepPlan, SweepTarget};
use crate::judge::slo::Slo;
use crate::values::RateList;

/// A step's measured time when neither `--step-duration` nor `--conns-per-step` is given.
const STEP: Duration = Duration::from_secs(10);

/// How `sweep` prints its outcome (command line only).
#[derive(Debug, Clone, Copy, PartialEq, Eq, clap::ValueEnum)]
pub enum SweepFormat {
    /// The table, then the knee.
    Text,
    /// `steps` (one object per step and target) and `knee`; the table goes to stderr.
    Json,
}

/// `sweep`'s flags beyond the URL and the request's, as clap parses them.
#[derive(Debug, Clone, clap::Args)]
pub struct SweepFlags {
    /// Offered request rates: a range `LOW..HIGH:STEP` or a list `100,200,400`.
    #[arg(long = "rates", value_parser = crate::values::rates, required_unless_present = "ramp")]
    pub rates: Option<RateList>,
    /// Instead of steps, one run whose rate rises from FROM to TO over --ramp-duration, its
    /// knee found second by second by the same rule (known to within the ramp's slope: a
    /// sweep of steps around it confirms).
    #[arg(
        long = "ramp",
        value_name = "FROM..TO",
        value_parser = crate::values::ramp,
        conflicts_with_all = ["rates", "compare", "find_knee", "conns_per_step", "stop_after_knee", "slo", "csv"]
    )]
    pub ramp: Option<(f64, f64)>,
    /// How long the ramp lasts [default: 10s].
    #[arg(long = "ramp-duration", value_parser = parse_duration, requires = "ramp")]
    pub ramp_duration: Option<Duration>,
    /// How long each step is measured, after its warm-up of at least 1s [default: 10s].
    #[arg(long = "step-duration", value_parser = parse_duration, allow_hyphen_values = true, conflicts_with = "conns_per_step")]
    pub step_duration: Option<Duration>,
    /// Connections per step instead of a duration (httperf's --num-conns; implies sessions).
    #[arg(long = "conns-per-step", value_name = "N")]
    pub conns_per_step: Option<u64>,
    /// Requests per connection: the step's rate is then reached with new connections at
    /// rate/K per second, K calls each (httperf's --num-calls, as autobench drives it).
    #[arg(long = "calls-per-conn", value_name = "K")]
    pub calls_per_conn: Option<u32>,
    /// A second target, run at every step right next to the first (autobench's --host2).
    #[arg(long = "compare", value_name = "URL2")]
    pub compare: Option<String>,
    /// Write autobench's columns (plus p50/p99 from due time) to FILE as CSV.
    #[arg(long = "csv", value_name = "FILE")]
    pub csv: Option<PathBuf>,
    /// Output format.
    // Command line only, as --csv: how the cli prints the outcome.
    #[arg(long = "format", value_enum, default_value_t = SweepFormat::Text)]
    pub format: SweepFormat,
    /// Largest error ratio a step may have and still count below the knee (0.01 = 1%).
    #[arg(long = "max-errors", default_value_t = 0.0)]
    pub max_errors: f64,
    /// Thresholds each step must hold to count below the knee ('p99<10ms,errors<0.1%'; a bare
    /// duration is a p99 bound); rps terms are a gate on the knee's achieved rate ('...,rps>=3000'),
    /// exit 99 when it is lower.
    #[arg(long = "slo", value_name = "THRESHOLDS", value_parser = crate::values::sweep_slo)]
    pub slo: Option<Slo>,
    /// Stop N steps after every target's first failing step.
    #[arg(long = "stop-after-knee", value_name = "N")]
    pub stop_after_knee: Option<usize>,
    /// Bisect between the last good and the first bad step to place the knee more precisely.
    #[arg(long = "find-knee")]
    pub find_knee: bool,
    #[command(flatten)]
    pub schedule: loadlab_load::Schedule,
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
        url: &str,
        request: &RequestFlags,
        measure: &mut dyn Measure,
        warn: &mut dyn FnMut(&str),
    ) -> Result<Vec<SweepTarget>, SweepFlagError> {
        let mut targets = Vec::new();
        for url in std::iter::once(url).chain(self.compare.as_deref()) {
            let mut config = request.config(url)?;
            config.stop = match (self.conns_per_step, self.step_duration) {
                (Some(n), _) => Stop::Count(n),
                (None, d) => Stop::Duration(d.unwrap_or(STEP)),
            };
            config.pacing = self.schedule.pacing(1.0, None);
            config.coalesce = self.schedule.coalesce;
            let (addr, capped) =
                crate::commands::bench::prepare(&mut config, request.over_capacity, measure)
                    .map_err(crate::advice::bench_with_lab_ca)?;
            if let Some(w) = capped {
                warn(&w);
            }
            targets.push(SweepTarget { config, addr, url: url.to_string() });
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
            rates: self.rates.as_ref().map_or_else(Vec::new, |r| r.0.clone()),
            targets,
            calls: (self.calls_per_conn.is_some() || self.conns_per_step.is_some()).then(|| {
                self.calls_per_conn.unwrap_or(loadlab_load::defaults::CALLS_PER_CONN).max(1)
            }),
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
