//! `bench`: one load test, from a parsed request (target, load model, flags: an engine
//! configuration) to the judged result: the figures, the trust verdict, what limited the
//! throughput, the SLO verdict and how the run ended. The command line calls [`run`] and
//! prints what it returns; a remote agent can call the same function.

pub mod flags;
pub mod following;
pub mod habits;
pub mod live;
pub mod outcome;
pub mod profiled;
pub mod sessions;
pub mod traffic;
pub mod views;

use std::net::SocketAddr;

use loadlab_engine::{BenchConfig, BenchResult, EngineError};

use crate::commands::run::executor::Measure;
use crate::judge::capacity::{self, Policy};
use crate::judge::slo::{self, Slo};
use crate::judge::trust::Verdict;
pub use outcome::Report;

/// What `bench` was asked to do, its flags already parsed.
#[derive(Debug, Clone)]
pub struct Request {
    /// Everything the engine needs: target, load model, stop condition, request, validation.
    pub config: BenchConfig,
    /// When the connections do not fit what the client has (`--over-capacity`).
    pub over_capacity: Policy,
    /// `--slo`: thresholds the run must hold.
    pub slo: Option<Slo>,
    /// `--profile`: the lab instance whose tiers are profiled while the bench measures.
    pub profile: Option<profiled::Profiled>,
}

/// How a finished run ends, for the exit code.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Disposition {
    /// The run finished; request failures, if any, are in the report.
    Finished,
    /// No request reached the target (every one failed before a connection existed).
    Unreachable,
    /// The run finished but an `--slo` threshold failed.
    SloFailed,
}

/// A judged run: the report every output reads, the engine's raw result (for the interval
/// logs, written second by second), the configuration as run (its connections fitted to the
/// client) and how it ended.
#[derive(Debug)]
pub struct Judged {
    pub report: Report,
    pub result: BenchResult,
    pub config: BenchConfig,
    pub disposition: Disposition,
}

/// Why a bench did not run.
#[derive(Debug, thiserror::Error)]
pub enum BenchError {
    /// The connections asked for do not fit what the client has, and the policy refuses.
    #[error("{0}")]
    Capacity(String),
    #[error(transparent)]
    Engine(#[from] EngineError),
}

/// Runs `request`: [`prepare`], the measured load (its target's tiers profiled meanwhile with
/// `--profile`), then the judgement. `warn` is told, before the load, what the capacity check
/// changed or doubts.
pub fn run(
    mut request: Request,
    measure: &mut dyn Measure,
    warn: &mut dyn FnMut(&str),
) -> Result<Judged, BenchError> {
    let (address, capped) = prepare(&mut request.config, request.over_capacity, measure)?;
    if let Some(w) = &capped {
        warn(w);
    }
    let (result, profiles) = match &request.profile {
        Some(p) => {
            p.during(request.config.warmup, || measure.measure(&request.config, address, ""))
        }
        None => (measure.measure(&request.config, address, ""), None),
    };
    let mut judged = judge(measure, request, address, result?, capped);
    judged.report.profiles = profiles;
    Ok(judged)
}

/// The judgement of a measured run: the report (trust verdict, limit, SLO) and how it ends;
/// the verdict told to `measure` too (its metrics endpoint shows the flags).
pub fn judge(
    measure: &mut dyn Measure,
    request: Request,
    address: SocketAddr,
    result: BenchResult,
    capped: Option<String>,
) -> Judged {
    let verdict = Verdict::judge(&request.config, &result);
    measure.judged(&verdict);
    judged(request, address, result, capped, &verdict)
}

/// What every run against a URL does before its load (`bench`, each `sweep` target): its
/// connections against what this machine has ([`capacity::fit`]: refused, or capped with the
/// warning returned), then the engine's pre-flight, which gives the address to load.
pub fn prepare(
    config: &mut BenchConfig,
    policy: Policy,
    measure: &mut dyn Measure,
) -> Result<(SocketAddr, Option<String>), BenchError> {
    let has = capacity::Has::for_config(config);
    let capped = capacity::fit(config, policy, &has).map_err(BenchError::Capacity)?;
    Ok((measure.reach(config)?, capped))
}

/// [`judge`] with the verdict already made of `result`.
fn judged(
    request: Request,
    address: SocketAddr,
    result: BenchResult,
    capped: Option<String>,
    verdict: &Verdict,
) -> Judged {
    let mut report = Report::judged(&request.config, address, &result, verdict);
    report.warnings.extend(capped);
    report.slo = request.slo.as_ref().map(|s| s.judge(&slo::figures(&request.config, &result)));
    let disposition = if report.target_unreachable() {
        Disposition::Unreachable
    } else if report.slo.as_ref().is_some_and(|v| !v.passed) {
        Disposition::SloFailed
    } else {
        Disposition::Finished
    };
    Judged { report, result, config: request.config, disposition }
}

#[cfg(test)]
mod tests {
    use loadlab_engine::{BenchConfig, ErrorClass, Target};

    use super::{judge, run, BenchError, Disposition, Request};
    use crate::fake::{self, FakeEngine};
    use crate::judge::capacity::Policy;
    use crate::judge::limit::Limit;

    fn request(slo: Option<&str>) -> Request {
        let mut config = BenchConfig::new(Target::parse("http://127.0.0.1:9/").unwrap());
        config.connections = 10;
        let slo = slo.map(|s| s.parse().unwrap());
        Request { config, over_capacity: Policy::Refuse, slo, profile: None }
    }

    fn bench(engine: &mut FakeEngine, slo: Option<&str>) -> super::Judged {
        let mut warnings = Vec::new();
        let judged = run(request(slo), engine, &mut |w| warnings.push(w.to_string())).unwrap();
        assert!(warnings.is_empty(), "{warnings:?}");
        judged
    }

    #[test]
    fn a_finished_run_is_judged_once_with_its_limit_in_the_report() {
        let judged = bench(&mut FakeEngine::new(1000.0), None);
        assert_eq!(judged.disposition, Disposition::Finished);
        assert_eq!(judged.report.requests.completed, 2000);
        assert!(judged.report.slo.is_none());
        // No flag and no sample of the server: nothing measured says what limited it.
        assert_eq!(judged.report.limited_by.limit, Limit::NotDetermined);
        let json = serde_json::to_value(&judged.report).unwrap();
        assert_eq!(json["limited_by"]["kind"], "not_determined", "{json:#}");
    }

    #[test]
    fn a_saturated_client_is_the_limit_the_report_carries() {
        let mut engine = FakeEngine::new(1000.0);
        engine.client_rate_limit = 1000.0;
        let judged = bench(&mut engine, None);
        assert!(judged.report.client.saturated);
        assert_eq!(judged.report.limited_by.limit, Limit::Client);
        let json = serde_json::to_value(&judged.report).unwrap();
        assert_eq!(json["limited_by"]["kind"], "client", "{json:#}");
        assert_eq!(json["limited_by"]["name"], "client", "{json:#}");
    }

    #[test]
    fn a_broken_slo_is_the_runs_disposition() {
        let broken = bench(&mut FakeEngine::new(1000.0), Some("p99<10us"));
        assert_eq!(broken.disposition, Disposition::SloFailed);
        assert!(!broken.report.slo.as_ref().unwrap().passed);
        let held = bench(&mut FakeEngine::new(1000.0), Some("p99<10ms,rps>500"));
        assert_eq!(held.disposition, Disposition::Finished);
        assert!(held.report.slo.as_ref().unwrap().passed);
    }

    #[test]
    fn a_run_whose_every_request_failed_to_connect_is_unreachable_whatever_its_slo() {
        let mut r = fake::result(loadlab_engine::Pacing::Closed, 0, 1.0, 0, 0.01);
        for _ in 0..5 {
            r.tally.errors.add(ErrorClass::Connrefused, None);
        }
        r.tally.failed = 5;
        let addr = "127.0.0.1:9".parse().unwrap();
        let judged = judge(&mut FakeEngine::new(1000.0), request(Some("p99<1ms")), addr, r, None);
        assert_eq!(judged.disposition, Disposition::Unreachable);
    }

    #[test]
    fn connections_that_do_not_fit_are_refused_before_any_load() {
        let mut engine = FakeEngine::new(1000.0);
        let mut req = request(None);
        req.config.connections = 1 << 40;
        let err = run(req, &mut engine, &mut |_| {}).unwrap_err();
        assert!(matches!(err, BenchError::Capacity(_)), "{err}");
        assert!(engine.measured.borrow().is_empty());
    }
}
