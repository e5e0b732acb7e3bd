//! A run's stored profiles as the report reads them: each stack's on-CPU stacks in a group,
//! tier by tier, merged over its profiled repetitions; where their samples went, function by
//! function ([`functions`]); what became of a cell whose profile was asked for and is not
//! there (its `profile` knob, as the runner stored it); and the difference between two
//! stacks of a group ([`difference`]).

pub mod difference;

use std::collections::{BTreeMap, HashMap};

use loadlab_store::{CellRecord, ProfileRecord, RunProfiles};
use serde::Serialize;

use crate::group::Group;
pub use difference::{Difference, FunctionDelta};

/// A profile with fewer samples than this says too little to draw (a flame graph of a few
/// hundred stacks is mostly noise): it is said so instead.
pub const ENOUGH_SAMPLES: u64 = 500;

/// The knob in which the runner says what became of a cell's profiling: `perf`, or why there
/// is none (`refused: ...`, `not recorded: ...`).
const KNOB: &str = "profile";

/// What the knob says when perf recorded the cell.
const RECORDED: &str = "perf";

/// A function's share of a profile: the samples in which it was on the CPU itself (the leaf)
/// and those in which it was anywhere on the stack (counted once per stack, however deep its
/// recursion).
#[derive(Clone, Debug, PartialEq, Eq, Serialize)]
pub struct FunctionShare {
    pub function: String,
    pub self_samples: u64,
    pub total_samples: u64,
}

/// The functions of folded stacks, the most samples on the CPU themselves first (ties by
/// total, then name); the process name at each stack's root is not a function.
pub fn functions(folded: &str) -> Vec<FunctionShare> {
    let mut by: HashMap<&str, (u64, u64)> = HashMap::new();
    for (stack, n) in lines(folded) {
        let frames: Vec<&str> = stack.split(';').skip(1).collect();
        let mut seen: Vec<&str> = Vec::with_capacity(frames.len());
        for f in &frames {
            if !seen.contains(f) {
                seen.push(f);
                by.entry(f).or_default().1 += n;
            }
        }
        if let Some(leaf) = frames.last() {
            by.entry(leaf).or_default().0 += n;
        }
    }
    let mut shares: Vec<FunctionShare> = by
        .into_iter()
        .map(|(f, (s, t))| FunctionShare {
            function: f.to_string(),
            self_samples: s,
            total_samples: t,
        })
        .collect();
    shares.sort_by(|a, b| {
        (b.self_samples, b.total_samples)
            .cmp(&(a.self_samples, a.total_samples))
            .then_with(|| a.function.cmp(&b.function))
    });
    shares
}

/// Folded lines as (stack, count); a line without a count is skipped.
fn lines(folded: &str) -> impl Iterator<Item = (&str, u64)> {
    folded.lines().filter_map(|line| {
        let (stack, n) = line.rsplit_once(' ')?;
        Some((stack, n.trim().parse::<u64>().ok()?))
    })
}

/// Folded stacks summed: the same stack in several profiles counted once with their total.
fn merged<'a>(profiles: impl IntoIterator<Item = &'a str>) -> String {
    summed(profiles.into_iter().flat_map(lines))
}

/// Folded lines from (stack, count) pairs, each stack once with the sum of its counts.
fn summed<'a>(stacks: impl Iterator<Item = (&'a str, u64)>) -> String {
    let mut by: BTreeMap<&str, u64> = BTreeMap::new();
    for (stack, n) in stacks {
        *by.entry(stack).or_default() += n;
    }
    by.into_iter().map(|(stack, n)| format!("{stack} {n}\n")).collect()
}

/// Folded stacks without the process at their root, merged: what two stacks whose tiers are
/// different programs (Apache with mod_php, nginx and php-cgi) have in common lines up (the
/// kernel's, libc's, PHP's code). A sample of the process alone is dropped.
pub fn code_only(folded: &str) -> String {
    summed(lines(folded).filter_map(|(stack, n)| Some((stack.split_once(';')?.1, n))))
}

/// One tier's stacks in one stack's profiled cells of a group.
#[derive(Clone, Debug, PartialEq, Serialize)]
pub struct TierStacks {
    pub tier: String,
    pub samples: u64,
    pub lost: u64,
    /// Between two samples of a task on a CPU, µs.
    pub interval_us: u64,
    /// At least [`ENOUGH_SAMPLES`]: drawn, and compared.
    pub enough: bool,
    /// Folded, merged over the cells.
    #[serde(skip)]
    pub folded: String,
}

/// One stack's profiles in a group.
#[derive(Clone, Debug, PartialEq, Serialize)]
pub struct StackProfile {
    pub stack: String,
    /// The profiled cells, numbered as `loadlab profile CELL` takes them (from 1).
    pub cells: Vec<u32>,
    /// What the runner said of its profiling: `perf`, or why none was recorded.
    pub profile: String,
    pub tiers: Vec<TierStacks>,
}

impl StackProfile {
    /// Whether perf recorded its cells (else `profile` says why not).
    pub fn recorded(&self) -> bool {
        self.profile == RECORDED
    }

    /// Every tier's stacks together, each under its tier's name: the stack's whole CPU.
    pub fn folded(&self) -> String {
        merged(self.tiers.iter().map(|t| t.folded.as_str()))
    }

    pub fn samples(&self) -> u64 {
        self.tiers.iter().map(|t| t.samples).sum()
    }
}

/// A group's profiles: each profiled stack's, and the first one's difference with each other.
#[derive(Clone, Debug, PartialEq, Serialize)]
pub struct GroupProfiles {
    pub stacks: Vec<StackProfile>,
    pub differences: Vec<Difference>,
}

/// The profiles of `group`, `None` when none of its cells was to be profiled.
pub fn of_group(group: &Group<'_>, profiles: &RunProfiles) -> Option<GroupProfiles> {
    let stacks: Vec<StackProfile> =
        group.stacks.iter().filter_map(|s| stack_profile(&s.stack, &s.cells, profiles)).collect();
    let (first, others) = stacks.split_first()?;
    let differences = others.iter().map(|o| difference::between(first, o)).collect();
    Some(GroupProfiles { stacks, differences })
}

/// A stack's profiled cells, merged tier by tier; `None` when none was to be profiled. Cells
/// that perf did not record (refused, another host) say why in the stack's `profile`.
fn stack_profile(
    stack: &str,
    cells: &[&CellRecord],
    profiles: &RunProfiles,
) -> Option<StackProfile> {
    let asked: Vec<&CellRecord> =
        cells.iter().copied().filter(|c| c.knobs.contains_key(KNOB)).collect();
    let said = |c: &CellRecord| c.knobs[KNOB].as_str().unwrap_or_default().to_string();
    let recorded: Vec<&CellRecord> =
        asked.iter().copied().filter(|c| said(c) == RECORDED).collect();
    let profile = match (recorded.is_empty(), asked.first()) {
        (_, None) => return None,
        (false, _) => RECORDED.to_string(),
        (true, Some(c)) => said(c),
    };
    let mut by_tier: BTreeMap<&str, Vec<&ProfileRecord>> = BTreeMap::new();
    for c in &recorded {
        for p in profiles.get(&c.ordinal).into_iter().flatten() {
            by_tier.entry(&p.tier).or_default().push(p);
        }
    }
    let tiers = by_tier
        .into_iter()
        .map(|(tier, ps)| {
            let samples = ps.iter().map(|p| p.samples).sum();
            TierStacks {
                tier: tier.to_string(),
                samples,
                lost: ps.iter().map(|p| p.lost).sum(),
                interval_us: ps[0].interval_us,
                enough: samples >= ENOUGH_SAMPLES,
                folded: merged(ps.iter().map(|p| p.folded.as_str())),
            }
        })
        .collect();
    let cells = recorded.iter().map(|c| c.ordinal + 1).collect();
    Some(StackProfile { stack: stack.to_string(), cells, profile, tiers })
}

#[cfg(test)]
mod tests;
