//! What limited a figure: the client, the network, a server tier's CPU, a worker pool that was
//! full, the database, the machine's CPUs, or the offered load itself; or "not determined",
//! said as such. Decided once, here ([`decide`]), from the trust verdict (the client's and the
//! network's limits) and what was measured of the stack during the cell ([`StackEvidence`]:
//! each tier's CPU from its cumulative counters at the cell's start and end, the machine's
//! CPUs, the 1 Hz samples for the pools); stored with a lab cell and given with a bench or a
//! sweep step, which have no stack ([`StackEvidence::none`]). The rules, in order, are
//! docs/trust.md's "What limited a figure".

use loadlab_engine::BenchResult;
use loadlab_stats::format;

/// The one limit type, shared with the store (which keeps it with the cell) and the report.
pub use loadlab_store::{Limit, LimitedBy};

use crate::judge::trust::{Flag, Verdict};

/// A tier whose processes used this share of the CPUs they could run on limited the cell.
pub const TIER_CPU_FULL: f64 = 0.90;
/// The machine's CPUs this busy (client and servers together) limited the cell.
pub const MACHINE_CPU_FULL: f64 = 0.95;
/// An open-loop cell that achieved this share of its offered rate was limited by the offer.
pub const KEPT_UP: f64 = 0.99;

/// One tier's mean CPU over the cell, in CPUs, and how many CPUs it could use.
#[derive(Debug, Clone, PartialEq)]
pub struct TierCpu {
    pub tier: String,
    pub cpus_used: f64,
    pub cpus: f64,
}

/// The tiers' CPU over the cell from the sampler's readings; `cpus` is how many CPUs each
/// tier could run on (its `cpus` knob, else the machine's).
pub fn tier_cpu(samples: &[loadlab_lab::Sample], cpus: usize) -> Vec<TierCpu> {
    let mut out: Vec<TierCpu> = Vec::new();
    let span: f64 = samples.iter().map(|s| s.interval_ms as f64).sum();
    if span <= 0.0 {
        return out;
    }
    for s in samples {
        for t in &s.tiers {
            // Weighted by the interval, so a short last interval counts for what it lasted.
            let used = (t.cpu_user_pct + t.cpu_sys_pct) / 100.0 * s.interval_ms as f64 / span;
            match out.iter_mut().find(|x| x.tier == t.tier) {
                Some(x) => x.cpus_used += used,
                None => {
                    out.push(TierCpu { tier: t.tier.clone(), cpus_used: used, cpus: cpus as f64 })
                }
            }
        }
    }
    out
}

fn sampled_machine_busy(samples: &[loadlab_lab::Sample]) -> Option<f64> {
    let busy: Vec<(f64, f64)> = samples
        .iter()
        .filter_map(|s| s.machine.as_ref().map(|m| (m.cpu_busy_pct / 100.0, s.interval_ms as f64)))
        .collect();
    let span: f64 = busy.iter().map(|(_, w)| w).sum();
    (span > 0.0).then(|| busy.iter().map(|(b, w)| b * w).sum::<f64>() / span)
}

/// A pool full in at least this share of the cell's samples that read it limited the cell.
pub const POOL_FULL_SHARE: f64 = 0.5;

/// What the samples say of one tier's pool.
#[derive(Debug, Clone, PartialEq)]
pub struct PoolSeen {
    pub tier: String,
    /// Samples whose status page answered, and those of them that found the pool full.
    pub answered: usize,
    pub full: usize,
    /// The largest pool size and busy count seen, and the longest listen queue.
    pub max: u32,
    pub busy: u32,
    pub queue: Option<u64>,
    /// Samples whose status page waited behind the load (Apache: every worker busy).
    pub waited: usize,
}

impl PoolSeen {
    /// "2 of 2 children busy in 3 of 3 samples, listen queue up to 18".
    pub fn evidence(&self) -> String {
        let who = match self.tier.as_str() {
            "php-fpm" => "children",
            "nginx" => "connections",
            _ => "workers",
        };
        let queue = match self.queue {
            Some(q) if q > 0 => format!(", listen queue up to {q}"),
            Some(_) => ", listen queue empty".to_string(),
            None => String::new(),
        };
        let waited = match self.waited {
            0 => String::new(),
            n => format!(" (in {n}, its status page waited over 300 ms behind the load)"),
        };
        format!(
            "{} of {} {who} busy in {} of {} samples{waited}{queue}",
            self.busy, self.max, self.full, self.answered
        )
    }
}

/// Each sampled pool over the cell.
pub fn pools(samples: &[loadlab_lab::Sample]) -> Vec<PoolSeen> {
    let mut seen: Vec<PoolSeen> = Vec::new();
    for t in samples.iter().flat_map(|s| &s.tiers) {
        let Some(r) = t.pool.as_ref().filter(|r| r.answered) else { continue };
        let i = match seen.iter().position(|p| p.tier == t.tier) {
            Some(i) => i,
            None => {
                seen.push(PoolSeen {
                    tier: t.tier.clone(),
                    answered: 0,
                    full: 0,
                    max: 0,
                    busy: 0,
                    queue: None,
                    waited: 0,
                });
                seen.len() - 1
            }
        };
        let p = &mut seen[i];
        p.answered += 1;
        p.full += usize::from(r.full());
        p.max = p.max.max(r.max);
        p.busy = p.busy.max(r.busy);
        p.queue = p.queue.max(r.listen_queue);
        p.waited += usize::from(r.waited);
    }
    seen
}

/// The pool that was full most of the cell, if one was.
fn full_pool(samples: &[loadlab_lab::Sample]) -> Option<PoolSeen> {
    pools(samples)
        .into_iter()
        .filter(|p| p.answered > 0 && p.full as f64 >= POOL_FULL_SHARE * p.answered as f64)
        .max_by_key(|p| p.full)
}

/// CPUs of the machine busy with something other than the stack's tiers and the client, below
/// which a starved client is taken to have waited for the stack itself.
pub const OTHER_WORK_CPUS: f64 = 0.25;

/// What was measured of the stack during a cell. Empty ([`StackEvidence::none`]) for a bench,
/// a sweep step, or an external target whose processes the suite did not name.
#[derive(Debug, Clone, Default)]
pub struct StackEvidence<'a> {
    /// Each tier's CPU over the cell.
    pub tiers: Vec<TierCpu>,
    /// The machine's busy share over the cell, 0.0 to 1.0.
    pub machine_busy: Option<f64>,
    /// The 1 Hz samples: what the pools were.
    pub samples: &'a [loadlab_lab::Sample],
    /// The stack ran on another host than the client: its machine's busy CPUs are not the
    /// client's to share, nor can they explain a wait of the client's.
    pub elsewhere: bool,
}

impl<'a> StackEvidence<'a> {
    /// Nothing measured of a stack.
    pub fn none() -> StackEvidence<'static> {
        StackEvidence::default()
    }

    /// From the 1 Hz samples alone (a cell shorter than the interval has one sample of whole
    /// clock ticks): what a sampler without counters gives. `tier_cpus` is how many CPUs each
    /// tier could run on.
    pub fn sampled(samples: &'a [loadlab_lab::Sample], tier_cpus: usize) -> StackEvidence<'a> {
        StackEvidence {
            tiers: tier_cpu(samples, tier_cpus),
            machine_busy: sampled_machine_busy(samples),
            samples,
            elsewhere: false,
        }
    }

    /// From the tiers' cumulative CPU counters read at the cell's start and end, and the
    /// samples for the pools.
    pub fn counted(
        cpu: &loadlab_lab::sampler::CpuUse,
        samples: &'a [loadlab_lab::Sample],
        tier_cpus: usize,
    ) -> StackEvidence<'a> {
        let wall = cpu.wall.as_secs_f64();
        let tiers = cpu
            .tiers
            .iter()
            .map(|t| TierCpu {
                tier: t.tier.clone(),
                cpus_used: if wall > 0.0 { t.cpu.as_secs_f64() / wall } else { 0.0 },
                cpus: tier_cpus as f64,
            })
            .collect();
        StackEvidence { tiers, machine_busy: cpu.machine_busy, samples, elsewhere: false }
    }

    fn measured(&self) -> bool {
        !self.tiers.is_empty()
    }
}

/// The client's mean CPU over its run, in CPUs.
fn client_cpus(r: &BenchResult) -> f64 {
    r.cpu().total().as_secs_f64() / r.duration.as_secs_f64().max(1e-9)
}

/// Why a starved client's wait is not the client's limit, if it is not: the link carried
/// what it could (seen at 475 of a 500 Mbit/s shaper: the kernel's packet work held the CPUs,
/// the link set the pace), or the stack's measured tiers and the client account for the
/// machine's busy CPUs within [`OTHER_WORK_CPUS`] (on a shared machine that is the machine's
/// limit, judged later). With no tier measured nothing accounts for the wait: the client's.
fn wait_explained(r: &BenchResult, verdict: &Verdict, stack: &StackEvidence<'_>) -> bool {
    if verdict.has(Flag::NetworkBound) {
        return true;
    }
    // The client's host ran nothing of the stack's: what it waited for is its own.
    if stack.elsewhere {
        return false;
    }
    let Some(busy) = stack.machine_busy.filter(|_| stack.measured()) else {
        return false;
    };
    let cpus = std::thread::available_parallelism().map_or(1, |n| n.get()) as f64;
    let tiers: f64 = stack.tiers.iter().map(|t| t.cpus_used).sum();
    busy * cpus - tiers - client_cpus(r) < OTHER_WORK_CPUS
}

/// The client's own limit: saturated, out of descriptors or ports, or starved by work that was
/// not the stack's nor the link's. Every allowed connection busy (`connections_exhausted`) is
/// not one: the server held them, and arrivals waited in the client with their latency counted
/// from when they were due, so the server set the pace (the sweep's knee calls that step
/// "throughput", and the trust table counts it against no figure).
fn client_limit(
    r: &BenchResult,
    verdict: &Verdict,
    stack: &StackEvidence<'_>,
) -> Option<LimitedBy> {
    const CLIENT: [Flag; 3] = [Flag::ClientSaturated, Flag::ClientStarved, Flag::FdExhausted];
    let explained = verdict.has(Flag::ClientStarved) && wait_explained(r, verdict, stack);
    let f = verdict
        .findings
        .iter()
        .find(|f| CLIENT.contains(&f.flag) && !(f.flag == Flag::ClientStarved && explained))?;
    let evidence = if f.flag == Flag::ClientStarved && !stack.measured() {
        format!("{}; no tier of the stack was measured to account for the wait", f.evidence)
    } else {
        f.evidence.clone()
    };
    Some(LimitedBy { limit: Limit::Client, evidence })
}

fn network_limit(verdict: &Verdict) -> Option<LimitedBy> {
    let f = verdict.findings.iter().find(|f| f.flag == Flag::NetworkBound)?;
    Some(LimitedBy { limit: Limit::Network, evidence: f.evidence.clone() })
}

/// The tier that used the largest share (at least [`TIER_CPU_FULL`]) of the CPUs it had.
fn tier_limit(stack: &StackEvidence<'_>) -> Option<LimitedBy> {
    let t = stack
        .tiers
        .iter()
        .filter(|t| t.cpus_used >= TIER_CPU_FULL * t.cpus)
        .max_by(|a, b| (a.cpus_used / a.cpus).total_cmp(&(b.cpus_used / b.cpus)))?;
    let evidence = format!(
        "{} used {} of its {} CPU{}",
        t.tier,
        format::significant(t.cpus_used, 2),
        t.cpus,
        if t.cpus == 1.0 { "" } else { "s" }
    );
    let limit = if t.tier == "mariadb" { Limit::Database } else { Limit::TierCpu(t.tier.clone()) };
    Some(LimitedBy { limit, evidence })
}

/// After the tiers' CPU: a pool whose busy children used every CPU they had would not go
/// faster with more children; a full pool with CPU to spare is the limit itself.
fn pool_limit(stack: &StackEvidence<'_>) -> Option<LimitedBy> {
    let p = full_pool(stack.samples)?;
    Some(LimitedBy { limit: Limit::WorkerPool(p.tier.clone()), evidence: p.evidence() })
}

fn machine_limit(r: &BenchResult, stack: &StackEvidence<'_>) -> Option<LimitedBy> {
    let busy = stack.machine_busy.filter(|b| *b >= MACHINE_CPU_FULL)?;
    let mut shares: Vec<String> = stack
        .tiers
        .iter()
        .filter(|t| t.cpus_used >= 0.05)
        .map(|t| format!("{} {}", t.tier, format::significant(t.cpus_used, 2)))
        .collect();
    let machine = match stack.elsewhere {
        true => "the server host's",
        false => {
            shares.push(format!("the client {}", format::significant(client_cpus(r), 2)));
            "the machine's"
        }
    };
    let evidence = format!(
        "{machine} CPUs were {} busy; CPUs used: {}",
        format::percent(busy),
        shares.join(", ")
    );
    Some(LimitedBy { limit: Limit::MachineCpu, evidence })
}

/// An open loop that kept its schedule and achieved [`KEPT_UP`] of its offer: the figure is
/// the offer's.
fn offered_limit(r: &BenchResult, verdict: &Verdict) -> Option<LimitedBy> {
    let offered = r.offered_rps()?;
    (!verdict.has(Flag::ScheduleMissed) && r.rps() >= KEPT_UP * offered).then(|| LimitedBy {
        limit: Limit::Offered,
        evidence: format!(
            "{} req/s achieved of {} offered",
            format::count(r.rps()),
            format::count(offered)
        ),
    })
}

/// Nothing said which: what was measured, so a reader sees why.
fn not_determined(stack: &StackEvidence<'_>) -> LimitedBy {
    let evidence = if !stack.measured() {
        "no tier of the stack was measured in this cell".to_string()
    } else {
        let list: Vec<String> = stack
            .tiers
            .iter()
            .map(|t| format!("{} {}", t.tier, format::significant(t.cpus_used, 2)))
            .collect();
        let pools: Vec<String> =
            pools(stack.samples).iter().map(|p| format!("{}: {}", p.tier, p.evidence())).collect();
        let pools = if pools.is_empty() {
            String::new()
        } else {
            format!("; no pool was full most of the time ({})", pools.join("; "))
        };
        format!(
            "no tier used {} of its CPUs ({} CPUs){pools}",
            format::percent(TIER_CPU_FULL),
            list.join(", ")
        )
    };
    LimitedBy { limit: Limit::NotDetermined, evidence }
}

/// What limited a figure measured as `r` and judged `verdict`, with what was measured of the
/// stack: the first of the client, the network, a tier's CPU, a full pool, the machine's CPUs,
/// the offer kept; else not determined.
pub fn decide(r: &BenchResult, verdict: &Verdict, stack: &StackEvidence<'_>) -> LimitedBy {
    client_limit(r, verdict, stack)
        .or_else(|| network_limit(verdict))
        .or_else(|| tier_limit(stack))
        .or_else(|| pool_limit(stack))
        .or_else(|| machine_limit(r, stack))
        .or_else(|| offered_limit(r, verdict))
        .unwrap_or_else(|| not_determined(stack))
}

/// The same for a run with no stack (a bench, a sweep step): the client, the network, the
/// offer kept, or not determined.
pub fn of_bench(r: &BenchResult, verdict: &Verdict) -> LimitedBy {
    decide(r, verdict, &StackEvidence::none())
}

/// The same from a stack's 1 Hz samples alone ([`StackEvidence::sampled`]), of tiers that
/// could each use `tier_cpus` CPUs.
pub fn limited_by(
    r: &BenchResult,
    verdict: &Verdict,
    samples: &[loadlab_lab::Sample],
    tier_cpus: usize,
) -> LimitedBy {
    decide(r, verdict, &StackEvidence::sampled(samples, tier_cpus))
}

#[cfg(test)]
#[path = "limit_tests.rs"]
mod tests;
