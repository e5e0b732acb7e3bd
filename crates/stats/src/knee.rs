//! Knee detection over a rate sweep: the highest offered rate the target sustained.
//!
//! A step passes when the achieved rate is at least 99% of the offered one, the error ratio is
//! within the allowance, and (when an objective is given) the 99th percentile latency is within
//! it. The knee is the last passing step before the first failing one: a step that passes
//! again above a failure (seed 003's "strange dip") does not move the knee up, because the
//! curve is no longer telling one story there. A step the client could not drive, or one that
//! filled the network link, says nothing about the server, so it ends the search too, with its
//! own reason.

use serde::Serialize;

/// What one sweep step measured, as knee detection needs it.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct StepPoint {
    pub offered_rps: f64,
    pub achieved_rps: f64,
    /// Failed over completed + failed.
    pub error_ratio: f64,
    pub p99_us: u64,
    /// The client was saturated or ran out of descriptors or ports.
    pub client_limited: bool,
    /// The traffic filled at least 90% of the network link's known speed.
    pub network_bound: bool,
    /// The sweep's `--slo` thresholds (judged by the caller) that the step broke: `Latency` or
    /// `Errors`, by the first failing term's kind.
    pub slo_breach: Option<Breach>,
}

/// The pass criteria.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Criteria {
    /// Achieved over offered must reach this (0.99).
    pub min_achieved_ratio: f64,
    pub max_error_ratio: f64,
    pub slo_p99_us: Option<u64>,
}

impl Default for Criteria {
    fn default() -> Self {
        Criteria { min_achieved_ratio: 0.99, max_error_ratio: 0.0, slo_p99_us: None }
    }
}

/// Which criterion a step broke.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum Breach {
    /// Achieved rate below 99% of offered: the server (or the network) could not keep up.
    Throughput,
    /// More errors than allowed.
    Errors,
    /// p99 latency above the objective, or a latency threshold of the sweep's SLO broken.
    Latency,
    /// The client was the bottleneck: the step says nothing about the server.
    ClientLimited,
    /// The network link was (nearly) full: the step says nothing about the server.
    NetworkBound,
}

impl Criteria {
    /// The first criterion `p` breaks, in the order a reader would check them.
    pub fn breach(&self, p: &StepPoint) -> Option<Breach> {
        if p.client_limited {
            return Some(Breach::ClientLimited);
        }
        if p.network_bound {
            return Some(Breach::NetworkBound);
        }
        if p.error_ratio > self.max_error_ratio {
            return Some(Breach::Errors);
        }
        if p.offered_rps > 0.0 && p.achieved_rps < self.min_achieved_ratio * p.offered_rps {
            return Some(Breach::Throughput);
        }
        if self.slo_p99_us.is_some_and(|slo| p.p99_us > slo) {
            return Some(Breach::Latency);
        }
        if let Some(b) = p.slo_breach {
            return Some(b);
        }
        None
    }
}

/// Where the knee is in a sweep ordered by offered rate.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Knee {
    /// Index of the last passing step before the first failure; `None` if the first step
    /// already failed.
    pub last_good: Option<usize>,
    /// The first failing step and what it broke; `None` if every step passed.
    pub first_bad: Option<(usize, Breach)>,
}

/// Finds the knee in `steps`, which must be in ascending order of offered rate.
pub fn find(steps: &[StepPoint], criteria: &Criteria) -> Knee {
    for (i, p) in steps.iter().enumerate() {
        if let Some(b) = criteria.breach(p) {
            return Knee { last_good: i.checked_sub(1), first_bad: Some((i, b)) };
        }
    }
    Knee { last_good: steps.len().checked_sub(1), first_bad: None }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn step(offered: f64, achieved: f64) -> StepPoint {
        StepPoint {
            offered_rps: offered,
            achieved_rps: achieved,
            error_ratio: 0.0,
            p99_us: 1_000,
            client_limited: false,
            network_bound: false,
            slo_breach: None,
        }
    }

    #[test]
    fn knee_is_last_step_before_throughput_falls() {
        let steps =
            [step(100.0, 100.0), step(200.0, 199.0), step(300.0, 250.0), step(400.0, 399.0)];
        let k = find(&steps, &Criteria::default());
        assert_eq!(k.last_good, Some(1));
        assert_eq!(k.first_bad, Some((2, Breach::Throughput)));
    }

    #[test]
    fn errors_latency_and_client_limits_break_too() {
        let c = Criteria { max_error_ratio: 0.01, slo_p99_us: Some(5_000), ..Criteria::default() };
        let mut s = step(100.0, 100.0);
        assert_eq!(c.breach(&s), None);
        s.error_ratio = 0.02;
        assert_eq!(c.breach(&s), Some(Breach::Errors));
        s.error_ratio = 0.0;
        s.p99_us = 6_000;
        assert_eq!(c.breach(&s), Some(Breach::Latency));
        s.network_bound = true;
        assert_eq!(c.breach(&s), Some(Breach::NetworkBound));
        s.client_limited = true;
        assert_eq!(c.breach(&s), Some(Breach::ClientLimited));
    }

    #[test]
    fn a_full_link_ends_the_search_even_when_the_rate_was_met() {
        // Seeds 000 and 001: a step that met its rate while filling the link already measures
        // the network; what fails above it says nothing about the server.
        let mut full = step(300.0, 299.0);
        full.network_bound = true;
        let steps = [step(100.0, 100.0), step(200.0, 200.0), full, step(400.0, 300.0)];
        let k = find(&steps, &Criteria::default());
        assert_eq!(k, Knee { last_good: Some(1), first_bad: Some((2, Breach::NetworkBound)) });
    }

    #[test]
    fn all_pass_or_first_fails() {
        let steps = [step(100.0, 100.0), step(200.0, 200.0)];
        assert_eq!(
            find(&steps, &Criteria::default()),
            Knee { last_good: Some(1), first_bad: None }
        );
        let steps = [step(100.0, 50.0)];
        let k = find(&steps, &Criteria::default());
        assert_eq!(k, Knee { last_good: None, first_bad: Some((0, Breach::Throughput)) });
        assert_eq!(find(&[], &Criteria::default()), Knee { last_good: None, first_bad: None });
    }
}
