//! What the lab's sampler gives the runner's commands: the grid a stack's tiers are sampled
//! on, and a profiler's stacks as the store keeps them (a cell's, `stack sample`'s and
//! `bench --profile`'s alike).

use std::time::Duration;

use loadlab_lab::profiler::{Profiles, TierProfile};
use loadlab_store::ProfileRecord;

/// How often the sampler reads the stack's tiers.
pub const SAMPLE_INTERVAL: Duration = Duration::from_secs(1);

/// Each tier's profile as the store keeps it.
pub fn profile_records(tiers: &[TierProfile]) -> Vec<ProfileRecord> {
    tiers
        .iter()
        .map(|t| ProfileRecord {
            tier: t.tier.clone(),
            folded: t.folded.clone(),
            samples: t.samples,
            lost: t.lost,
            interval_us: t.interval_us,
        })
        .collect()
}

/// A profiler's stacks as the store keeps them, or perf's refusal in its own words.
pub fn taken(profiles: Profiles) -> Result<Vec<ProfileRecord>, String> {
    match profiles.refused {
        Some(why) => Err(why),
        None => Ok(profile_records(&profiles.tiers)),
    }
}
