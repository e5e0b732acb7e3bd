//! What limited a lab cell's figure: the client, the network, a server tier's CPU, a worker
//! pool that was full, the database, the machine's CPUs, or the offered load itself; or "not
//! determined", said as such. Read from the trust verdict (the client's and the network's
//! limits) and the sampler's readings of the stack's tiers during the cell.

use loadlab_engine::BenchResult;
use loadlab_stats::format;

/// The one limit type, shared with the store (which keeps it with the cell) and the report.
pub use loadlab_store::{Limit, LimitedBy};

use crate::trust::{Flag, Verdict};

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

fn machine_busy(samples: &[loadlab_lab::Sample]) -> Option<f64> {
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

/// Whether the stack's tiers and the client account for the machine's busy CPUs (within
/// [`OTHER_WORK_CPUS`]): then the client's wait was for the stack, not for other work.
fn starved_by_stack(r: &BenchResult, tiers: &[TierCpu], samples: &[loadlab_lab::Sample]) -> bool {
    let Some(busy) = machine_busy(samples) else {
        return false;
    };
    let cpus = std::thread::available_parallelism().map_or(1, |n| n.get()) as f64;
    let wall = r.duration.as_secs_f64();
    let client = if wall > 0.0 { r.cpu().total().as_secs_f64() / wall } else { 0.0 };
    let stack: f64 = tiers.iter().map(|t| t.cpus_used).sum();
    busy * cpus - stack - client < OTHER_WORK_CPUS
}

/// Judges what limited a cell measured as `r` with `verdict`, from `samples` of a stack whose
/// tiers could each use `tier_cpus` CPUs.
pub fn limited_by(
    r: &BenchResult,
    verdict: &Verdict,
    samples: &[loadlab_lab::Sample],
    tier_cpus: usize,
) -> LimitedBy {
    let tiers = tier_cpu(samples, tier_cpus);
    // A client that waited for CPUs the stack's own tiers held did not lose them to other
    // work: on a shared machine that is the machine's limit, judged below.
    // Nor did a client that waited while the link carried what it could (seen at 475 of a
    // 500 Mbit/s shaper: the kernel's packet work held the CPUs): the link set the pace.
    let wait_explained = starved_by_stack(r, &tiers, samples) || verdict.has(Flag::NetworkBound);
    let client =
        [Flag::ClientSaturated, Flag::ClientStarved, Flag::FdExhausted, Flag::ConnectionsExhausted];
    if let Some(f) = verdict
        .findings
        .iter()
        .find(|f| client.contains(&f.flag) && !(f.flag == Flag::ClientStarved && wait_explained))
    {
        return LimitedBy { limit: Limit::Client, evidence: f.evidence.clone() };
    }
    if let Some(f) = verdict.findings.iter().find(|f| f.flag == Flag::NetworkBound) {
        return LimitedBy { limit: Limit::Network, evidence: f.evidence.clone() };
    }
    let busiest = tiers
        .iter()
        .filter(|t| t.cpus_used >= TIER_CPU_FULL * t.cpus)
        .max_by(|a, b| (a.cpus_used / a.cpus).total_cmp(&(b.cpus_used / b.cpus)));
    if let Some(t) = busiest {
        let evidence = format!(
            "{} used {} of its {} CPU{}",
            t.tier,
            format::significant(t.cpus_used, 2),
            t.cpus,
            if t.cpus == 1.0 { "" } else { "s" }
        );
        let limit =
            if t.tier == "mariadb" { Limit::Database } else { Limit::TierCpu(t.tier.clone()) };
        return LimitedBy { limit, evidence };
    }
    // After the tiers' CPU: a pool whose busy children used every CPU they had would not go
    // faster with more children; a full pool with CPU to spare is the limit itself.
    if let Some(p) = full_pool(samples) {
        return LimitedBy { limit: Limit::WorkerPool(p.tier.clone()), evidence: p.evidence() };
    }
    if let Some(busy) = machine_busy(samples).filter(|b| *b >= MACHINE_CPU_FULL) {
        let mut shares: Vec<String> = tiers
            .iter()
            .filter(|t| t.cpus_used >= 0.05)
            .map(|t| format!("{} {}", t.tier, format::significant(t.cpus_used, 2)))
            .collect();
        let client_cpus = r.cpu().total().as_secs_f64() / r.duration.as_secs_f64().max(1e-9);
        shares.push(format!("the client {}", format::significant(client_cpus, 2)));
        return LimitedBy {
            limit: Limit::MachineCpu,
            evidence: format!(
                "the machine's CPUs were {} busy; CPUs used: {}",
                format::percent(busy),
                shares.join(", ")
            ),
        };
    }
    if let Some(offered) = r.offered_rps() {
        if !verdict.has(Flag::ScheduleMissed) && r.rps() >= KEPT_UP * offered {
            return LimitedBy {
                limit: Limit::Offered,
                evidence: format!(
                    "{} req/s achieved of {} offered",
                    format::count(r.rps()),
                    format::count(offered)
                ),
            };
        }
    }
    let evidence = if samples.is_empty() {
        "no sample of the server's tiers in this cell (it lasted under the sampling interval)"
            .to_string()
    } else {
        let list: Vec<String> = tiers
            .iter()
            .map(|t| format!("{} {}", t.tier, format::significant(t.cpus_used, 2)))
            .collect();
        let pools: Vec<String> =
            pools(samples).iter().map(|p| format!("{}: {}", p.tier, p.evidence())).collect();
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
