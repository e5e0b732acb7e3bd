//! A load that changes over time in a suite: `stages = "30s:0..1000,2m:1000"` (any model: the
//! rate, or the closed loop's connections, stage by stage) and a ramp in `rates`
//! (`rates = ["100..5000"]` over the load's `duration`), spelt as `bench --stages` and
//! `bench --rate A..B` take them. Such a load is one point, whose cells keep every second.

use loadlab_engine::{Level, Stop};
use toml::Spanned;

use super::{Checked, Checker};
use crate::raw::{RateValue, RawLoad};

/// The load points of a model that takes rates (open, sessions): the rates, and the shape
/// when the load changes over time (then its one point is the shape's mean rate).
pub(super) type Rates = (Vec<f64>, Option<Level>);

impl Checker<'_> {
    /// `rates = [..]` (numbers, or one ramp), `sweep = "LOW..HIGH:STEP"` or `stages = "..."`:
    /// exactly one.
    pub(super) fn rate_points(&self, l: &RawLoad) -> Checked<Rates> {
        let mut given: Vec<_> = [
            &l.rates.as_ref().map(Spanned::span),
            &l.sweep.as_ref().map(Spanned::span),
            &l.stages.as_ref().map(Spanned::span),
        ]
        .into_iter()
        .flatten()
        .cloned()
        .collect();
        // The later of two in the file is the one to remove.
        given.sort_by_key(|span| span.start);
        if let Some(second) = given.get(1) {
            return self.fail(second.clone(), "give one of rates, sweep and stages");
        }
        if let Some(s) = &l.stages {
            let level = self.stages(s)?;
            return Ok((vec![level.mean()], Some(level)));
        }
        let Some(r) = &l.rates else {
            return Ok((self.rates(l)?, None));
        };
        if r.get_ref().is_empty() {
            return self.fail(r.span(), "rates: give at least one");
        }
        let mut rates = Vec::new();
        for v in r.get_ref() {
            let level = match v.get_ref() {
                RateValue::Number(x) if x.is_finite() && *x > 0.0 => Level::Fixed(*x),
                RateValue::Number(_) => {
                    return self.fail(v.span(), "a rate must be a positive number")
                }
                RateValue::Text(t) if t.contains(':') => {
                    return self.fail(
                        v.span(),
                        format!("rates: {t:?} is stages: write them as stages = {t:?}"),
                    )
                }
                RateValue::Text(t) => match Level::parse(t) {
                    Ok(level) => level,
                    Err(e) => return self.fail(v.span(), format!("rates: {e}")),
                },
            };
            if level.fixed().is_none() {
                if r.get_ref().len() > 1 {
                    return self.fail(
                        v.span(),
                        "a ramp is a load of its own: give it alone (rates = [\"100..5000\"]) \
                         in a [[loads]] entry of its own",
                    );
                }
                return Ok((vec![level.mean()], Some(level)));
            }
            rates.push(level.mean());
        }
        Ok((rates, None))
    }

    /// The closed loop's `concurrency = [..]` or `stages = "..."` (connections over time):
    /// the concurrencies, and the shape (then its one point is its peak, the pool it opens).
    pub(super) fn concurrency_points(&self, l: &RawLoad) -> Checked<(Vec<usize>, Option<Level>)> {
        match (&l.concurrency, &l.stages) {
            (Some(_), Some(s)) => self.fail(s.span(), "give concurrency or stages, not both"),
            (None, Some(s)) => {
                let level = self.stages(s)?;
                Ok((vec![(level.peak().floor() as usize).max(1)], Some(level)))
            }
            (Some(c), None) => {
                if c.get_ref().is_empty() {
                    return self.fail(c.span(), "concurrency: give at least one");
                }
                let list = c
                    .get_ref()
                    .iter()
                    .map(|n| self.at_least_one(n, "concurrency").map(|n| n as usize))
                    .collect::<Checked<Vec<usize>>>()?;
                Ok((list, None))
            }
            (None, None) => {
                self.fail(l.model.span(), "a closed load needs concurrency = [...] or stages")
            }
        }
    }

    /// `stages = "30s:0..1000,2m:1000"`, as `bench --stages` reads it.
    fn stages(&self, s: &Spanned<String>) -> Checked<Level> {
        match Level::parse(s.get_ref()) {
            Ok(level @ Level::Stages(_)) => Ok(level),
            Ok(_) => self.fail(
                s.span(),
                format!(
                    "stages: {:?} has no duration: stages are DURATION:LEVEL or \
                     DURATION:FROM..TO, comma-separated (e.g. \"30s:0..1000,2m:1000\")",
                    s.get_ref()
                ),
            ),
            Err(e) => self.fail(s.span(), format!("stages: {e}")),
        }
    }

    /// A shaped load's stop: stages set their own duration (no `duration`, no count); a ramp
    /// runs over the load's `duration` (a count has no length to ramp over). `None` for a
    /// fixed load, whose stop is checked as before.
    pub(super) fn shaped_stop(
        &self,
        l: &RawLoad,
        shape: Option<&Level>,
        count_key: &str,
        count: Option<&Spanned<u64>>,
    ) -> Checked<Option<Stop>> {
        let Some(level) = shape else { return Ok(None) };
        let stages = matches!(level, Level::Stages(_));
        if let Some(n) = count {
            let why =
                if stages { "stages set the duration" } else { "a ramp runs over a duration" };
            return self.fail(n.span(), format!("{count_key} does not apply: {why}"));
        }
        match (&l.duration, level) {
            (Some(d), Level::Stages(_)) => self.fail(
                d.span(),
                "duration does not apply: the stages set it (their durations add up to the run)",
            ),
            (None, Level::Stages(s)) => Ok(Some(Stop::Duration(s.duration()))),
            (Some(d), _) => Ok(Some(Stop::Duration(self.duration(d, false)?))),
            (None, _) => self.fail(
                l.model.span(),
                "a ramp needs duration = \"60s\": the time it rises (or falls) over",
            ),
        }
    }
}
