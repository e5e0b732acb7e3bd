//! `bench --profile`: a bench against a lab instance whose tiers are profiled while the bench
//! measures, by the sampler and profiler a profiled cell uses ([`loadlab_lab::Lab::sampler`]);
//! which instance is the one the URL reaches, found among those the lab lists.

use std::sync::mpsc::{self, RecvTimeoutError};
use std::time::Duration;

use loadlab_lab::{Lab, Record};
use loadlab_store::ProfileRecord;

use crate::commands::sampled::{taken, SAMPLE_INTERVAL};

/// Why a bench cannot be profiled; said before any load.
#[derive(Debug, thiserror::Error)]
pub enum ProfileError {
    /// The URL is not a lab instance's: only the lab knows which processes serve it.
    #[error(
        "--profile: {0} is not a lab instance's address: profiling needs a stack started by \
         `loadlab stack up` (see `loadlab stack list`)"
    )]
    NotAnInstance(String),
    /// perf, or a package the instance's profiling needs (php-excimer), is missing; or the
    /// lab's state could not be read.
    #[error(transparent)]
    Lab(#[from] loadlab_lab::Error),
}

/// The lab instance a bench profiles.
#[derive(Debug, Clone)]
pub struct Profiled {
    lab: Lab,
    pub instance: Record,
}

/// What a bench's profiling gave: the instance and its stack, and each tier's stacks or
/// perf's refusal in its own words.
#[derive(Debug, Clone)]
pub struct BenchProfiles {
    pub instance: String,
    pub stack: String,
    pub tiers: Result<Vec<ProfileRecord>, String>,
}

impl BenchProfiles {
    /// What became of the profiling, as a profiled cell's `profile` knob says it.
    pub fn said(&self) -> String {
        match &self.tiers {
            Ok(_) => "perf".to_string(),
            Err(why) => format!("refused: {why}"),
        }
    }
}

impl Profiled {
    /// The instance of `lab` at `authority` (`host:port`, the bench's target), ready to be
    /// profiled here: perf installed, and what its PHP tiers' own stacks need when it was
    /// brought up for them (`stack up --profile`: php-excimer).
    pub fn at(lab: Lab, authority: &str) -> Result<Profiled, ProfileError> {
        let instance = lab
            .instances()?
            .into_iter()
            .map(|(record, _)| record)
            .find(|r| same_authority(&r.url, authority))
            .ok_or_else(|| ProfileError::NotAnInstance(authority.to_string()))?;
        let stack = loadlab_lab::stack(&instance.stack)?;
        let php = stack.has_php() && instance.knobs.excimer.is_on();
        let needs =
            [Some(loadlab_lab::programs::PERF), php.then_some(loadlab_lab::programs::EXCIMER)];
        for need in needs.into_iter().flatten() {
            need.find().map_err(loadlab_lab::Error::from)?;
        }
        Ok(Profiled { lab, instance })
    }

    /// What to tell the user before the load: an instance with PHP tiers brought up without
    /// `--profile` gives perf's stacks of them, not PHP's own.
    pub fn note(&self) -> Option<String> {
        let stack = loadlab_lab::stack(&self.instance.stack).ok()?;
        (stack.has_php() && !self.instance.knobs.excimer.is_on()).then(|| {
            format!(
                "{} was brought up without --profile: its PHP tiers give perf's stacks, not \
                 PHP's own (`loadlab stack up {} --profile` readies them)",
                self.instance.id, self.instance.stack
            )
        })
    }

    /// Runs `measure` while the instance's tiers are profiled from the end of `warmup` (the
    /// bench's figures start there) to the end of `measure`. Without a warm-up the
    /// profiler is recording before `measure` starts, as a profiled cell's is. A bench that
    /// ends within its warm-up profiles nothing (`None`); one whose instance could not be
    /// sampled says why in [`BenchProfiles::tiers`].
    pub fn during<T>(
        &self,
        warmup: Duration,
        measure: impl FnOnce() -> T,
    ) -> (T, Option<BenchProfiles>) {
        let (end, ended) = mpsc::channel::<()>();
        let (started, recording) = mpsc::channel::<()>();
        std::thread::scope(|s| {
            let profiling = s.spawn(move || {
                if !matches!(ended.recv_timeout(warmup), Err(RecvTimeoutError::Timeout)) {
                    return None;
                }
                let sampler = self.lab.sampler(&self.instance.id, SAMPLE_INTERVAL, true);
                let _ = started.send(());
                let profiles = match sampler {
                    Ok(sampler) => {
                        let _ = ended.recv();
                        sampler.finish().profiles.map_or_else(|| Err(NONE.to_string()), taken)
                    }
                    Err(e) => Err(e.to_string()),
                };
                Some(self.profiles(profiles))
            });
            if warmup.is_zero() {
                let _ = recording.recv();
            }
            let out = measure();
            let _ = end.send(());
            (out, profiling.join().unwrap_or(None))
        })
    }

    fn profiles(&self, tiers: Result<Vec<ProfileRecord>, String>) -> BenchProfiles {
        let (instance, stack) = (self.instance.id.clone(), self.instance.stack.clone());
        BenchProfiles { instance, stack, tiers }
    }
}

/// Whether the URL `url` is at `authority` (`host:port`), `localhost` and `127.0.0.1` being
/// one host.
pub(crate) fn same_authority(url: &str, authority: &str) -> bool {
    let rest = url.split_once("://").map_or(url, |(_, r)| r);
    let at = rest.split('/').next().unwrap_or_default();
    let norm = |a: &str| a.replacen("localhost:", "127.0.0.1:", 1);
    norm(at) == norm(authority)
}

/// A profiled sampler that gave no profiles: it always does, so this is said, not hidden.
const NONE: &str = "the sampler gave no profiles";

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn authorities() {
        assert!(same_authority("https://127.0.0.1:8443/", "127.0.0.1:8443"));
        assert!(same_authority("https://127.0.0.1:8443/", "localhost:8443"));
        assert!(!same_authority("https://127.0.0.1:8443/", "127.0.0.1:8444"));
        assert!(!same_authority("https://10.214.0.2:8443/", "127.0.0.1:8443"));
    }
}
