//! `--wsesslog N,X,FILE`: httperf's session log read into the run's plan and list, and the
//! configuration that runs it.

use std::sync::Arc;

use super::Plan;
use crate::mix::Mix;
use crate::EngineError;

/// `--wsesslog N,X,FILE` read: httperf's N sessions, X default think time in seconds, and the
/// visits of FILE, as the run's plan and the list of its distinct requests.
#[derive(Debug)]
pub struct Wsesslog {
    pub sessions: u64,
    pub plan: Plan,
    pub mix: Mix,
}

impl Wsesslog {
    /// Reads the argument and its file; every error says which part is wrong (the file's by
    /// line and column).
    pub fn read(arg: &str, per_visitor: usize) -> Result<Wsesslog, EngineError> {
        let bad = |m: String| EngineError::Config(format!("--wsesslog {arg}: {m}"));
        let mut parts = arg.splitn(3, ',');
        let (Some(n), Some(x), Some(file)) = (parts.next(), parts.next(), parts.next()) else {
            return Err(bad("expected N,X,FILE (sessions, think time in seconds, file)".into()));
        };
        let sessions: u64 = match n.trim().parse() {
            Ok(n) if n > 0 => n,
            _ => return Err(bad(format!("N must be a number of sessions above 0, not '{n}'"))),
        };
        let think = x
            .trim()
            .parse::<f64>()
            .ok()
            .and_then(loadlab_visit::wsesslog::default_think)
            .ok_or_else(|| bad(format!("X must be a think time in seconds, not '{x}'")))?;
        let text = std::fs::read_to_string(file).map_err(|e| EngineError::Input {
            file: file.to_string(),
            line: None,
            what: e.to_string(),
        })?;
        let visits = loadlab_visit::wsesslog::parse(&text, file)
            .map_err(|e| EngineError::Config(e.to_string()))?;
        let (plan, mix) = Plan::new(file, &visits, think, per_visitor)?;
        Ok(Wsesslog { sessions, plan, mix })
    }

    /// Makes `config` run these visits: `rate` sessions a second arriving as `arrival` says,
    /// or, without a rate, by a closed population of `config.connections` visitors; N of them,
    /// each visitor on up to `plan.per_visitor` connections. Under a shape (a rate that changes
    /// over time) the shape still sets the run's length: N is then the most sessions it starts.
    pub fn apply(
        self,
        config: &mut crate::BenchConfig,
        rate: Option<f64>,
        arrival: crate::Arrival,
    ) {
        config.stop = crate::Stop::Count(self.sessions);
        run_plan(config, self.plan, self.mix, rate, arrival);
    }
}

/// Makes `config` run `plan`'s visits (its requests `mix`) at `rate` visits a second, or,
/// without a rate, by a closed population of `config.connections` visitors.
pub(super) fn run_plan(
    config: &mut crate::BenchConfig,
    plan: Plan,
    mix: Mix,
    rate: Option<f64>,
    arrival: crate::Arrival,
) {
    config.traffic = crate::Traffic::Mix(Arc::new(mix));
    let Some(rate) = rate else {
        config.pacing = crate::Pacing::Closed;
        config.visits = Some(Arc::new(plan));
        return;
    };
    let (requests, visits) = (plan.requests(), plan.visits.len());
    // For the offered request rate: sessions a second times their mean requests.
    let calls = (requests as f64 / visits as f64).round().max(1.0) as u32;
    let max_connections = match config.pacing {
        crate::Pacing::Open { max_connections, .. }
        | crate::Pacing::Sessions { max_connections, .. } => max_connections,
        crate::Pacing::Closed => 10_000,
    };
    config.pacing = crate::Pacing::Sessions { rate, arrival, calls, max_connections };
    config.visits = Some(Arc::new(plan));
}
