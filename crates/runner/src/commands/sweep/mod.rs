//! The sweep driver: one open-loop (or sessions) step per offered rate, from low to high, for
//! one target or two interleaved step by step (autobench's --host1/--host2); every step judged
//! by the trust verdict, the knee found over the trusted steps, optionally placed more
//! precisely by bisection. What measures is a [`Measure`], so the driver is tested with a fake.

pub mod plan;
pub mod ramp;

use std::net::SocketAddr;
use std::time::Duration;

use loadlab_engine::{Arrival, BenchConfig, BenchResult, Pacing};
use loadlab_stats::knee::{self, Breach, Criteria, StepPoint};
use loadlab_stats::Moments;
use serde::Serialize;

use crate::commands::run::executor::Measure;
use crate::hosts::across::Partial;
use crate::judge::limit::Limit;
use crate::judge::slo::{Figures, Slo, SloVerdict};
use crate::judge::trust::{Flag, Verdict};

/// The least warm-up of a step: the server's queue reaches its steady state for this rate,
/// and what the previous (perhaps overloaded) step left behind drains before anything counts.
pub const STEP_WARMUP: Duration = Duration::from_secs(1);

/// At most this many bisection steps per target with `find_knee`.
pub const BISECT_STEPS: usize = 4;

/// One target of a sweep: its configuration (all but the pacing), its address and URL.
#[derive(Debug, Clone)]
pub struct SweepTarget {
    pub config: BenchConfig,
    pub addr: SocketAddr,
    pub url: String,
}

/// What a sweep runs.
#[derive(Debug, Clone)]
pub struct SweepPlan {
    /// Offered request rates, ascending.
    pub rates: Vec<f64>,
    /// One or two targets.
    pub targets: Vec<SweepTarget>,
    /// Sessions of this many calls per connection (httperf's --num-calls), or single requests.
    pub calls: Option<u32>,
    pub arrival: Arrival,
    pub max_connections: usize,
    pub criteria: Criteria,
    /// Stop this many steps after every target's first failing step.
    pub stop_after_knee: Option<usize>,
    /// Bisect between the last good and the first bad step.
    pub find_knee: bool,
    /// `--slo`: its latency and error thresholds judge each step (a step that breaks one is
    /// past the knee); its `rps` thresholds judge the capacity found: the knee's achieved rate.
    pub slo: Option<Slo>,
}

/// One step of one target, with the figures autobench prints and the trust flags.
#[derive(Debug, Clone, Serialize)]
pub struct Step {
    pub target: String,
    /// 1 for the URL, 2 for --compare.
    pub host: usize,
    pub offered_rps: f64,
    /// The step's rate as planned: `offered_rps` on one host and agent 0; on another agent
    /// its share is offered, and this names the step among those its command line allows.
    #[serde(skip)]
    pub rate: f64,
    /// New connections opened per second (httperf's connection rate).
    pub conn_rate: f64,
    pub achieved_rps: f64,
    pub reply_rate: Option<Moments>,
    /// Mean time to first byte, in ms (autobench's resp_time).
    pub resp_time_ms: f64,
    /// Received and sent, KB/s (autobench's net_io, from httperf's Net I/O).
    pub net_io_kbs: f64,
    pub completed: u64,
    pub failed: u64,
    /// Requests still in flight when the step ended (neither completed nor failed).
    pub unfinished: u64,
    /// Requests sent per second (httperf's request rate, autobench's req_rate).
    pub sent_rps: f64,
    pub error_ratio: f64,
    /// Latency from due time.
    pub p50_us: u64,
    pub p99_us: u64,
    pub service_p99_us: u64,
    pub late_p99_us: u64,
    pub not_sent: u64,
    /// Responses whose status was not 2xx (completed ones, and validation failures when
    /// --expect-status is given).
    pub non_2xx: u64,
    pub flags: Flags,
    /// The verdict's findings, with their evidence.
    pub findings: Vec<crate::judge::trust::Finding>,
    /// False when the client or the network limited the step: it says nothing about the
    /// server.
    pub trusted: bool,
    /// What limited the step, decided once by [`crate::judge::limit`] from its verdict (a sweep
    /// takes no samples of the server), in the stored shape: `kind`, `tier`, `name`,
    /// `evidence`.
    pub limited_by: crate::judge::limit::LimitedBy,
    /// Added by bisection between two planned steps.
    pub bisect: bool,
    /// Ctrl-C stopped the step before its end: its figures cover part of a step (or only its
    /// warm-up), so it is shown but never judged: no knee comes from it.
    pub interrupted: bool,
    /// `--slo`: the step's latency and error thresholds; null without them.
    pub slo: Option<SloVerdict>,
    /// `sweep --agents`, `--on-agent-loss continue`: agents were lost in this step or before
    /// it, so part of its schedule was due and never sent (the shortfall per second). Shown,
    /// never judged: the server was not offered the step's rate. Null otherwise.
    pub partial: Option<Partial>,
}

impl Step {
    /// The sweep table's trust column, decided here so that every text output says the same:
    /// "ok"; else the flags that make the step someone else's limit with whose limit it is
    /// ("NETWORK-BOUND: the network's limit, not the server's"), then the other findings
    /// ("errors, 3 non-2xx"), then the SLO and bisection marks, each group after a "; ". An
    /// interrupted step is never judged. Whose limit it is follows its flag, so that it is not
    /// read as one more flag of the list.
    pub fn trust_column(&self) -> String {
        let f = &self.flags;
        let mut groups: Vec<String> = Vec::new();
        if self.interrupted {
            // What a step stopped part-way shows is no finding about anyone.
            groups.push("INTERRUPTED: not judged".to_owned());
        } else if let Some(p) = &self.partial {
            let lost: Vec<String> = p.lost.iter().map(|l| l.index.to_string()).collect();
            let not_sent = p.not_sent();
            groups.push(format!(
                "PARTIAL: agent {} lost, {not_sent} due not sent; not judged",
                lost.join(", ")
            ));
        } else {
            let client = [
                (f.client_saturated, "CLIENT SATURATED"),
                (f.client_starved, "CLIENT STARVED"),
                (f.fd_or_port_exhausted, "FD/PORTS EXHAUSTED"),
            ];
            let mut limits: Vec<&str> = client.iter().filter(|c| c.0).map(|c| c.1).collect();
            let client_limited = !limits.is_empty();
            if f.network_bound {
                limits.push("NETWORK-BOUND");
            }
            let whose = match (client_limited, f.network_bound) {
                (true, true) => Some("the client's and the network's limit"),
                (true, false) => Some("the client's limit"),
                (false, true) => Some("the network's limit"),
                // Another untrusted finding, should one be added: still said.
                (false, false) => (!self.trusted).then_some("not the server's limit"),
            };
            match whose {
                Some(w) if limits.is_empty() => groups.push(w.to_owned()),
                Some(w) => groups.push(format!("{}: {w}, not the server's", limits.join(", "))),
                None => {}
            }
            let non_2xx = format!("{} non-2xx", self.non_2xx);
            let others = [
                (f.schedule_missed, "schedule missed"),
                (f.errors, "errors"),
                (self.non_2xx > 0, non_2xx.as_str()),
            ];
            let others: Vec<&str> = others.iter().filter(|o| o.0).map(|o| o.1).collect();
            if !others.is_empty() {
                groups.push(others.join(", "));
            }
        }
        if self.slo.as_ref().is_some_and(|v| !v.passed) {
            groups.push("SLO broken".to_owned());
        }
        if self.bisect {
            groups.push("(bisect)".to_owned());
        }
        if groups.is_empty() {
            return "ok".to_owned();
        }
        groups.join("; ")
    }
}

/// The step's flags as booleans (the JSON keys of docs/sweep.md), read from the verdict.
#[derive(Debug, Clone, Serialize)]
pub struct Flags {
    pub client_saturated: bool,
    pub client_starved: bool,
    pub fd_or_port_exhausted: bool,
    pub network_bound: bool,
    pub schedule_missed: bool,
    pub errors: bool,
}

impl Flags {
    fn of(v: &Verdict) -> Flags {
        Flags {
            client_saturated: v.has(Flag::ClientSaturated),
            client_starved: v.has(Flag::ClientStarved),
            fd_or_port_exhausted: v.has(Flag::FdExhausted),
            network_bound: v.has(Flag::NetworkBound),
            schedule_missed: v.has(Flag::ScheduleMissed),
            errors: v.has(Flag::Errors),
        }
    }
}

/// Where one target's knee lies.
#[derive(Debug, Clone, Serialize)]
pub struct KneeReport {
    pub target: String,
    /// The highest offered rate that passed, null if the first step failed.
    pub offered_rps: Option<f64>,
    pub achieved_rps: Option<f64>,
    pub p99_us: Option<u64>,
    /// Which criterion the next step broke: throughput, errors, latency, client_limited,
    /// network_bound; or `none` when every step passed (the knee lies above the highest rate
    /// tried).
    pub reason: String,
    /// The first failing step's offered rate.
    pub next_offered_rps: Option<f64>,
    /// Steps of this target that finished and were judged (interrupted ones are not).
    pub steps_judged: usize,
    /// The sweep was interrupted: the knee is that of the steps that finished, and `none`
    /// means only that none of them failed.
    pub interrupted: bool,
}

/// What a sweep found.
#[derive(Debug, Clone)]
pub struct SweepOutcome {
    /// In the order they ran.
    pub steps: Vec<Step>,
    /// One per target.
    pub knees: Vec<KneeReport>,
    pub interrupted: bool,
    /// `--slo` with `rps` thresholds: one gate per target; empty otherwise.
    pub gates: Vec<Gate>,
    /// `--agents N`, any agent but agent 0: its share in words (`agent 1 of 2`). Its steps
    /// are its share of each; the knees and gates are agent 0's, of the merged steps, so
    /// this agent's are empty. `None` otherwise.
    pub share: Option<String>,
}

/// A target's `--slo` gate over a sweep, when the SLO has `rps` thresholds: did the service
/// hold the other thresholds (and the knee's criteria) up to that rate? The knee's achieved
/// rate is judged against them. Without `rps` thresholds the SLO only places the knee: steps
/// past the knee break it by design, so they fail no gate.
#[derive(Debug, Clone, Serialize)]
pub struct Gate {
    pub target: String,
    pub passed: bool,
    /// e.g. `held p99<10ms up to 2970 req/s, rps>=3000 wanted`.
    pub detail: String,
}

impl SweepOutcome {
    /// Every target's gate held (true without `--slo`).
    pub fn gates_passed(&self) -> bool {
        self.gates.iter().all(|g| g.passed)
    }
}

/// One step a sweep runs: its target (0 for the URL, 1 for `--compare`'s), its offered rate,
/// and whether bisection added it.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct NextStep {
    pub target: usize,
    pub rate: f64,
    pub bisect: bool,
}

/// What runs a sweep's steps, and who chooses each. On one host (and on agent 0) the steps'
/// results choose; every other agent of `sweep --agents` runs the step agent 0 names, once
/// it has checked that its own command line allows it.
pub trait Conduct {
    /// What measures the steps.
    fn measurer(&mut self) -> &mut dyn Measure;
    /// The next step, or `None` to end: `chosen` is what this host's results choose, and
    /// `allowed` every step the command line allows now (`chosen` among them).
    fn next_step(
        &mut self,
        chosen: Option<NextStep>,
        _allowed: &[NextStep],
    ) -> Result<Option<NextStep>, loadlab_engine::EngineError> {
        Ok(chosen)
    }
    /// The agents missing from the last step, if any were (its [`Step::partial`]).
    fn partial(&self) -> Option<Partial> {
        None
    }
}

/// One host: the results choose.
struct Alone<'a>(&'a mut dyn Measure);

impl Conduct for Alone<'_> {
    fn measurer(&mut self) -> &mut dyn Measure {
        self.0
    }
}

/// Each target's knee among `steps`: the sweep's at its end, or as it stands after the steps
/// so far (the live view's, which shows one once a step broke).
pub fn knees(plan: &SweepPlan, steps: &[Step], interrupted: bool) -> Vec<KneeReport> {
    plan.targets
        .iter()
        .enumerate()
        .map(|(t, target)| {
            let mut k = knee_report(&sorted_steps(steps, t + 1), &plan.criteria, &target.url);
            k.interrupted = interrupted;
            k
        })
        .collect()
}

/// Runs `plan`; `on_step` sees each step as it ends (the CLI prints its row).
pub fn run_sweep(
    plan: &SweepPlan,
    measure: &mut dyn Measure,
    on_step: &mut dyn FnMut(&Step) -> std::io::Result<()>,
) -> Result<SweepOutcome, crate::commands::run::executor::RunError> {
    drive(plan, &mut Alone(measure), on_step)
}

/// [`run_sweep`] with `conduct` choosing each step: the one driver of one host and of agents.
pub fn drive(
    plan: &SweepPlan,
    conduct: &mut dyn Conduct,
    on_step: &mut dyn FnMut(&Step) -> std::io::Result<()>,
) -> Result<SweepOutcome, crate::commands::run::executor::RunError> {
    let mut steps: Vec<Step> = Vec::new();
    let mut interrupted = false;
    while let Some(next) = conduct.next_step(choose(plan, &steps), &allowed(plan, &steps))? {
        let (step, stop) = run_step(plan, conduct, next)?;
        on_step(&step)?;
        steps.push(step);
        if stop {
            interrupted = true;
            break;
        }
    }
    let knees = knees(plan, &steps, interrupted);
    let gates = match plan.slo.as_ref().map(Slo::split_rate) {
        Some((per_step, Some(rate))) => {
            knees.iter().map(|k| gate(&rate, per_step.as_ref(), k)).collect()
        }
        _ => Vec::new(),
    };
    Ok(SweepOutcome { steps, knees, interrupted, gates, share: None })
}

/// The `k`th planned step: rate by rate, from low to high, each rate's targets in turn. The
/// order of the targets alternates, so that neither always runs on a machine the other just
/// warmed (or heated).
fn planned(plan: &SweepPlan, k: usize) -> Option<NextStep> {
    let n = plan.targets.len();
    let (i, j) = (k / n, k % n);
    let rate = *plan.rates.get(i)?;
    let target = if i % 2 == 0 { j } else { n - 1 - j };
    Some(NextStep { target, rate, bisect: false })
}

/// The steps the command line allows after `steps`, read from their targets, rates and
/// marks only (never their results, so that every agent of a sweep finds the same): the
/// next planned step while no bisection has begun; with `--find-knee`, the midpoint of any
/// two rates run on a target bisected fewer than [`BISECT_STEPS`] times (any two, not only
/// neighbours: the judged steps agent 0 bisects between skip the partial ones).
pub fn allowed(plan: &SweepPlan, steps: &[Step]) -> Vec<NextStep> {
    let mut out = Vec::new();
    if !steps.iter().any(|s| s.bisect) {
        out.extend(planned(plan, steps.len()));
    }
    if !plan.find_knee {
        return out;
    }
    for t in 0..plan.targets.len() {
        let mine: Vec<&Step> = steps.iter().filter(|s| s.host == t + 1).collect();
        if mine.iter().filter(|s| s.bisect).count() >= BISECT_STEPS {
            continue;
        }
        let mut rates: Vec<f64> = mine.iter().map(|s| s.rate).collect();
        rates.sort_by(f64::total_cmp);
        rates.dedup();
        for (i, lo) in rates.iter().enumerate() {
            let between = rates[i + 1..].iter().map(|hi| (lo + hi) / 2.0);
            out.extend(between.map(|rate| NextStep { target: t, rate, bisect: true }));
        }
    }
    out
}

/// The step the results of `steps` choose next, or `None` when the sweep is over: the next
/// planned one, unless `--stop-after-knee`'s steps past every target's knee have run; then,
/// with `--find-knee`, each target in turn bisected between its last good and first bad step
/// until they are within 1% of each other or [`BISECT_STEPS`] were added.
pub fn choose(plan: &SweepPlan, steps: &[Step]) -> Option<NextStep> {
    let n = plan.targets.len();
    let k = steps.len();
    let planning = !steps.iter().any(|s| s.bisect);
    // --stop-after-knee is judged once a rate has run on every target.
    let past = |host: usize| {
        let points = points(&sorted_steps(steps, host));
        let first_bad = knee::find(&points, &plan.criteria).first_bad;
        plan.stop_after_knee
            .is_some_and(|n| first_bad.is_some_and(|(bad, _)| points.len() > bad + n))
    };
    let stopped = k > 0 && k.is_multiple_of(n) && (1..=n).all(past);
    if let Some(next) = planned(plan, k).filter(|_| planning && !stopped) {
        return Some(next);
    }
    if !plan.find_knee {
        return None;
    }
    (0..n).find_map(|t| {
        let mine = sorted_steps(steps, t + 1);
        if mine.iter().filter(|s| s.bisect).count() >= BISECT_STEPS {
            return None;
        }
        let k = knee::find(&points(&mine), &plan.criteria);
        let (good, (bad, _)) = (k.last_good?, k.first_bad?);
        let (lo, hi) = (mine[good].rate, mine[bad].rate);
        // Closer than 1% apart is below what one run of this length can tell apart.
        (hi - lo > lo * 0.01).then_some(NextStep { target: t, rate: (lo + hi) / 2.0, bisect: true })
    })
}

/// One target's gate: the knee's achieved rate against the `rps` thresholds (see [`Gate`]).
fn gate(rate: &Slo, per_step: Option<&Slo>, knee: &KneeReport) -> Gate {
    let capacity = knee.achieved_rps.unwrap_or(0.0);
    let latency = loadlab_stats::Recorder::new();
    let figures = Figures {
        rps: capacity,
        completed: 0,
        failed: 0,
        non_2xx: 0,
        latency: &latency,
        requests_of: false,
    };
    let verdict = rate.judge(&figures);
    let held = per_step.map_or("the knee's criteria", |s| s.text.as_str());
    let detail = match knee.offered_rps {
        Some(offered) => format!(
            "held {held} up to {offered} req/s offered ({capacity:.1} achieved): {}",
            verdict.terms.iter().map(|o| o.detail.as_str()).collect::<Vec<_>>().join(", ")
        ),
        None => format!("{held} broke at the lowest rate swept: {} wanted", rate.text),
    };
    Gate { target: knee.target.clone(), passed: verdict.passed, detail }
}

/// Runs one step; returns it and whether the user asked the sweep to stop.
fn run_step(
    plan: &SweepPlan,
    conduct: &mut dyn Conduct,
    next: NextStep,
) -> Result<(Step, bool), crate::commands::run::executor::RunError> {
    let measure = conduct.measurer();
    let NextStep { target: t, rate, bisect } = next;
    let target = &plan.targets[t];
    let mut config = target.config.clone();
    config.warmup = config.warmup.max(STEP_WARMUP);
    let (arrival, max_connections) = (plan.arrival, plan.max_connections);
    config.pacing = match plan.calls {
        Some(calls) => {
            let calls = calls.max(1);
            Pacing::Sessions { rate: rate / f64::from(calls), arrival, calls, max_connections }
        }
        None => Pacing::Open { rate, arrival, max_connections },
    };
    config.check()?;
    let request_len =
        config.request.encode(&config.target, config.keepalive).map_or(0, |b| b.len());
    let result = measure.measure(&config, target.addr, "")?;
    let verdict = Verdict::judge(&config, &result);
    measure.judged(&verdict);
    let mut step = step_of(&result, &verdict, &target.url, t + 1, bisect, request_len as u64);
    step.rate = rate;
    if let Some(limit) = measure.limit_elsewhere().filter(|l| l.limit.not_the_servers()) {
        // Another host's part was its client's or link's figure: so is the sum.
        (step.trusted, step.limited_by) = (false, limit);
    }
    step.slo = plan
        .slo
        .as_ref()
        .and_then(|s| s.split_rate().0)
        .map(|s| s.judge(&crate::judge::slo::figures(&config, &result)));
    let stopped = measure.stopped();
    step.partial = conduct.partial();
    // One account of what was never sent: the lost agents' share counts, as in the shortfall.
    if let Some(p) = step.partial.as_ref().filter(|_| plan.calls.is_none()) {
        step.not_sent = p.not_sent();
    }
    Ok((step, stopped))
}

fn step_of(
    r: &BenchResult,
    verdict: &Verdict,
    url: &str,
    host: usize,
    bisect: bool,
    request_len: u64,
) -> Step {
    let t = &r.tally;
    let done = t.completed + t.failed;
    let secs = r.duration.as_secs_f64().max(f64::MIN_POSITIVE);
    let classes = t.status_classes();
    let limited_by = crate::judge::limit::of_bench(r, verdict);
    Step {
        target: url.to_string(),
        host,
        offered_rps: r.offered_rps().unwrap_or(0.0),
        rate: r.offered_rps().unwrap_or(0.0),
        conn_rate: t.connections_opened as f64 / secs,
        achieved_rps: r.rps(),
        reply_rate: Moments::of(&r.per_second_completed()),
        resp_time_ms: t.timings.waiting.mean() / 1000.0,
        net_io_kbs: (t.bytes_total + t.sent * request_len) as f64 / 1024.0 / secs,
        completed: t.completed,
        failed: t.failed,
        unfinished: t.unfinished,
        sent_rps: t.sent as f64 / secs,
        error_ratio: if done > 0 { t.failed as f64 / done as f64 } else { 0.0 },
        p50_us: t.timings.corrected.percentile(50.0),
        p99_us: t.timings.corrected.percentile(99.0),
        service_p99_us: t.timings.total.percentile(99.0),
        late_p99_us: t.timings.late.percentile(99.0),
        not_sent: t.not_sent,
        non_2xx: crate::judge::trust::not_2xx_of(&classes),
        flags: Flags::of(verdict),
        findings: verdict.findings.clone(),
        // Trusted unless the one limit decision names the client or the network.
        trusted: !limited_by.limit.not_the_servers(),
        limited_by,
        bisect,
        interrupted: r.interrupted,
        slo: None,
        partial: None,
    }
}

fn point(s: &Step) -> StepPoint {
    StepPoint {
        offered_rps: s.offered_rps,
        achieved_rps: s.achieved_rps,
        error_ratio: s.error_ratio,
        p99_us: s.p99_us,
        // The knee reads the step's one limit decision, not its flags again.
        client_limited: s.limited_by.limit == Limit::Client,
        network_bound: s.limited_by.limit == Limit::Network,
        slo_breach: s.slo.as_ref().and_then(SloVerdict::breach),
    }
}

fn points(steps: &[&Step]) -> Vec<StepPoint> {
    steps.iter().map(|s| point(s)).collect()
}

/// One target's finished steps in ascending order of offered rate: an interrupted or partial
/// step is never judged (it would read as a server that broke).
pub fn sorted_steps(steps: &[Step], host: usize) -> Vec<&Step> {
    let judged = |s: &&Step| s.host == host && !s.interrupted && s.partial.is_none();
    let mut mine: Vec<&Step> = steps.iter().filter(judged).collect();
    mine.sort_by(|a, b| a.offered_rps.total_cmp(&b.offered_rps));
    mine
}

fn knee_report(steps: &[&Step], criteria: &Criteria, url: &str) -> KneeReport {
    let k = knee::find(&points(steps), criteria);
    let good = k.last_good.map(|i| steps[i]);
    KneeReport {
        target: url.to_string(),
        offered_rps: good.map(|s| s.offered_rps),
        achieved_rps: good.map(|s| s.achieved_rps),
        p99_us: good.map(|s| s.p99_us),
        reason: match k.first_bad {
            None => "none".into(),
            Some((_, b)) => breach_name(b).into(),
        },
        next_offered_rps: k.first_bad.map(|(i, _)| steps[i].offered_rps),
        steps_judged: steps.len(),
        interrupted: false,
    }
}

/// A breach's name in JSON and text (also a ramp's knee's reason).
pub(crate) fn breach_name(b: Breach) -> &'static str {
    match b {
        Breach::Throughput => "throughput",
        Breach::Errors => "errors",
        Breach::Latency => "latency",
        Breach::ClientLimited => "client_limited",
        Breach::NetworkBound => "network_bound",
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::fake::FakeEngine;

    fn plan(rates: &[f64], targets: usize) -> SweepPlan {
        let mut plan = crate::tests::sweep_plan(rates);
        plan.targets = vec![plan.targets[0].clone(); targets];
        plan
    }

    /// Checks that every chosen step is one the command line allows, as another agent does.
    struct Checked<'a> {
        engine: &'a mut FakeEngine,
        chosen: Vec<NextStep>,
    }

    impl Conduct for Checked<'_> {
        fn measurer(&mut self) -> &mut dyn Measure {
            self.engine
        }
        fn next_step(
            &mut self,
            chosen: Option<NextStep>,
            allowed: &[NextStep],
        ) -> Result<Option<NextStep>, loadlab_engine::EngineError> {
            if let Some(c) = chosen {
                assert!(allowed.contains(&c), "{c:?} not in {allowed:?}");
                self.chosen.push(c);
            }
            Ok(chosen)
        }
    }

    #[test]
    fn every_step_the_results_choose_is_one_the_command_line_allows() {
        let mut p = plan(&[1000.0, 2000.0, 3000.0, 4000.0], 2);
        (p.find_knee, p.stop_after_knee) = (true, Some(1));
        let mut engine = FakeEngine::new(1_300.0);
        let mut checked = Checked { engine: &mut engine, chosen: Vec::new() };
        let out = drive(&p, &mut checked, &mut |_| Ok(())).expect("the sweep runs");
        let rates: Vec<(usize, f64)> = checked.chosen.iter().map(|s| (s.target, s.rate)).collect();
        // Both targets at 1000, then 2000 (the order alternating), 3000 one step past the
        // knee, then each target bisected four times between 1000 and 2000.
        let planned = [(0, 1000.0), (1, 1000.0), (1, 2000.0), (0, 2000.0), (0, 3000.0)];
        assert_eq!(rates[..6], [planned.as_slice(), &[(1, 3000.0)]].concat(), "{rates:?}");
        let bisect = [1500.0, 1250.0, 1375.0, 1312.5];
        let want: Vec<(usize, f64)> = (0..2).flat_map(|t| bisect.map(|r| (t, r))).collect();
        assert_eq!(rates[6..], want, "{rates:?}");
        assert_eq!(out.knees[1].offered_rps, Some(1312.5));
    }

    #[test]
    fn a_partial_step_is_shown_with_its_shortfall_and_never_judged() {
        use crate::hosts::across::{AgentLost, Shortfall};
        let p = plan(&[100.0, 200.0], 1);
        let mut engine = FakeEngine::new(1_000.0);
        let mut out = run_sweep(&p, &mut engine, &mut |_| Ok(())).expect("the sweep runs");
        let short = |second, not_sent| Shortfall {
            second,
            due: 70,
            sent: 70 - not_sent,
            not_sent,
            completed: 70 - not_sent,
        };
        out.steps[1].partial = Some(Partial {
            lost: vec![AgentLost { index: 2, second: 0 }],
            continued: true,
            shortfall: vec![short(0, 33), short(1, 34)],
        });
        let column = out.steps[1].trust_column();
        assert_eq!(column, "PARTIAL: agent 2 lost, 67 due not sent; not judged");
        assert_eq!(sorted_steps(&out.steps, 1).len(), 1, "only the whole step is judged");
    }

    #[test]
    fn without_find_knee_no_midpoint_is_allowed_and_after_the_rates_nothing() {
        let p = plan(&[100.0, 200.0], 1);
        let mut engine = FakeEngine::new(1_000.0);
        let out = run_sweep(&p, &mut engine, &mut |_| Ok(())).expect("the sweep runs");
        assert!(allowed(&p, &out.steps).is_empty());
        assert_eq!(
            allowed(&p, &out.steps[..1]),
            [NextStep { target: 0, rate: 200.0, bisect: false }]
        );
        let mut p = p;
        p.find_knee = true;
        let mids: Vec<f64> = allowed(&p, &out.steps).iter().map(|s| s.rate).collect();
        assert_eq!(mids, [150.0]);
    }
}
