//! Load that changes over time: a [`Shape`] is a rate (arrivals per second, or connections in
//! the closed loop) given piece by piece, each stage linear from one level to another over its
//! duration (`--rate 100..5000` over `-d`, `--stages '30s:0..1000,2m:1000,30s:1000..0'`).
//!
//! Arrival times come from the shape's integral Λ(t), the number of arrivals due by t: the
//! k-th arrival is due when Λ reaches k (fixed spacing), or, for Poisson arrivals, a unit-rate
//! Poisson process is run in Λ's time and mapped back through Λ⁻¹ (a time change, the
//! standard construction of an inhomogeneous Poisson process). Either way there is one global
//! schedule, so lateness, `not_sent` and latency from the due time keep their meaning, and the
//! k mod N split between workers and agents is the fixed rate's.

use std::fmt;
use std::time::Duration;

/// A stage: from `from` to `to`, linearly, over `secs` seconds.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Stage {
    pub secs: f64,
    pub from: f64,
    pub to: f64,
}

impl Stage {
    /// The integral of the stage's rate over its first `s` seconds.
    fn integral(&self, s: f64) -> f64 {
        self.from * s + self.slope() * s * s / 2.0
    }

    fn slope(&self) -> f64 {
        (self.to - self.from) / self.secs
    }

    /// The time into the stage at which its integral reaches `d` (0 <= d <= its whole), by the
    /// root of from*s + slope*s^2/2 = d written as 2d / (from + sqrt(from^2 + 2 slope d)), which
    /// keeps its precision when the slope is small or zero (no cancellation).
    fn time_of(&self, d: f64) -> f64 {
        let root = (self.from * self.from + 2.0 * self.slope() * d).max(0.0).sqrt();
        let denominator = self.from + root;
        if denominator <= 0.0 {
            return 0.0;
        }
        (2.0 * d / denominator).min(self.secs)
    }
}

/// A rate over time, stage after stage; after the last stage its final level holds.
#[derive(Debug, Clone, PartialEq)]
pub struct Shape {
    stages: Vec<Stage>,
    /// Each stage's start time and the integral before it.
    starts: Vec<(f64, f64)>,
}

/// Why a shape could not be read: the message names the part at fault.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ShapeError(pub String);

impl fmt::Display for ShapeError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.0)
    }
}

impl std::error::Error for ShapeError {}

/// The shape as `--stages` spells it (`30s:0..1000,120s:1000`), which parses back to it: each
/// stage's seconds and levels to a thousandth, `FROM..TO` written out except for a level that
/// holds where the stage before it ended (k6's `DURATION:TARGET` then reads as the hold it is).
impl fmt::Display for Shape {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let thousandths = |v: f64| (v * 1000.0).round() / 1000.0;
        let mut before = None;
        for (i, s) in self.stages.iter().enumerate() {
            let comma = if i == 0 { "" } else { "," };
            write!(f, "{comma}{}s:", thousandths(s.secs))?;
            if s.from == s.to && before == Some(s.from) {
                write!(f, "{}", thousandths(s.to))?;
            } else {
                write!(f, "{}..{}", thousandths(s.from), thousandths(s.to))?;
            }
            before = Some(s.to);
        }
        Ok(())
    }
}

/// What `--rate` (or `--conn-rate`) was given: one level, a ramp over the run, or stages.
#[derive(Debug, Clone, PartialEq)]
pub enum Level {
    Fixed(f64),
    Ramp(f64, f64),
    Stages(Shape),
}

impl Level {
    /// `5000` or `5k`; a ramp `100..5000`; stages `30s:0..1000,2m:1000` (anything with a
    /// colon). Levels are numbers >= 0, a fixed one above 0.
    pub fn parse(s: &str) -> Result<Level, ShapeError> {
        if s.contains(':') {
            return Shape::parse_stages(s).map(Level::Stages);
        }
        match s.split_once("..") {
            Some((a, b)) => Ok(Level::Ramp(level(a, s)?, level(b, s)?)),
            None => match level(s, s)? {
                r if r > 0.0 => Ok(Level::Fixed(r)),
                _ => Err(ShapeError(format!("{s:?}: a fixed level must be above zero"))),
            },
        }
    }

    /// The level when it does not change.
    pub fn fixed(&self) -> Option<f64> {
        match self {
            Level::Fixed(r) => Some(*r),
            _ => None,
        }
    }

    /// The mean level (a ramp's is the mean of its ends): what stands for the load where one
    /// number is asked.
    pub fn mean(&self) -> f64 {
        match self {
            Level::Fixed(r) => *r,
            Level::Ramp(a, b) => (a + b) / 2.0,
            Level::Stages(s) => s.mean(),
        }
    }

    /// The highest level it reaches.
    pub fn peak(&self) -> f64 {
        match self {
            Level::Fixed(r) => *r,
            Level::Ramp(a, b) => a.max(*b),
            Level::Stages(s) => s.peak(),
        }
    }

    /// The shape: a ramp over `duration`, the stages as given; `None` for a fixed level.
    pub fn shape(&self, duration: Duration) -> Option<Result<Shape, ShapeError>> {
        match self {
            Level::Fixed(_) => None,
            Level::Ramp(from, to) => {
                Some(Shape::new(vec![Stage { secs: duration.as_secs_f64(), from: *from, to: *to }]))
            }
            Level::Stages(s) => Some(Ok(s.clone())),
        }
    }
}

/// One level of a shape: a number with an optional k (thousands) suffix, >= 0 and finite.
fn level(s: &str, whole: &str) -> Result<f64, ShapeError> {
    let t = s.trim();
    let (digits, scale) = match t.strip_suffix(['k', 'K']) {
        Some(d) => (d, 1000.0),
        None => (t, 1.0),
    };
    match digits.parse::<f64>() {
        Ok(v) if v.is_finite() && v >= 0.0 => Ok(v * scale),
        _ => Err(ShapeError(format!(
            "{whole:?}: {t:?} is not a level (a number >= 0, e.g. 500 or 2k)"
        ))),
    }
}

/// A stage's duration: `30s`, `2m`, `1h`, `500ms` or plain seconds.
fn stage_duration(s: &str, whole: &str) -> Result<f64, ShapeError> {
    let t = s.trim();
    let split = t.find(|c: char| !(c.is_ascii_digit() || c == '.')).unwrap_or(t.len());
    let (number, unit) = t.split_at(split);
    let scale = match unit {
        "" | "s" => 1.0,
        "ms" => 1e-3,
        "m" => 60.0,
        "h" => 3600.0,
        _ => return Err(ShapeError(format!("{whole:?}: {t:?} has no known unit (ms, s, m, h)"))),
    };
    match number.parse::<f64>() {
        Ok(v) if v > 0.0 && v.is_finite() => Ok(v * scale),
        _ => {
            Err(ShapeError(format!("{whole:?}: a stage's duration must be above zero, not {t:?}")))
        }
    }
}

impl Shape {
    /// A shape of these stages: at least one, each of a positive duration.
    pub fn new(stages: Vec<Stage>) -> Result<Shape, ShapeError> {
        if stages.is_empty() {
            return Err(ShapeError("a shape needs at least one stage".into()));
        }
        if let Some(s) = stages.iter().find(|s| !(s.secs > 0.0 && s.secs.is_finite())) {
            return Err(ShapeError(format!(
                "a stage lasts more than zero seconds, not {}",
                s.secs
            )));
        }
        if stages.iter().all(|s| s.from == 0.0 && s.to == 0.0) {
            return Err(ShapeError("a shape that is zero throughout has nothing to send".into()));
        }
        let mut starts = Vec::with_capacity(stages.len());
        let (mut t, mut sum) = (0.0, 0.0);
        for s in &stages {
            starts.push((t, sum));
            t += s.secs;
            sum += s.integral(s.secs);
        }
        Ok(Shape { stages, starts })
    }

    /// `--stages '30s:0..1000,2m:1000,30s:1000..0'`: comma-separated `DURATION:LEVEL` or
    /// `DURATION:FROM..TO`. `DURATION:LEVEL` is k6's `--stage` to the letter and means what it
    /// means there: a linear ramp from where the stage before it ended (the first from 0, as
    /// k6's ramping arrival rate starts from its `startRate` of 0) to LEVEL; it holds a level
    /// only after a stage that ended at that level.
    pub fn parse_stages(s: &str) -> Result<Shape, ShapeError> {
        let mut stages: Vec<Stage> = Vec::new();
        for part in s.split(',') {
            let Some((d, l)) = part.split_once(':') else {
                return Err(ShapeError(format!(
                    "{part:?}: a stage is DURATION:LEVEL or DURATION:FROM..TO (e.g. 30s:0..1000)"
                )));
            };
            let secs = stage_duration(d, part)?;
            let (from, to) = match l.split_once("..") {
                Some((a, b)) => (level(a, part)?, level(b, part)?),
                None => (stages.last().map_or(0.0, |s| s.to), level(l, part)?),
            };
            stages.push(Stage { secs, from, to });
        }
        Shape::new(stages)
    }

    pub fn stages(&self) -> &[Stage] {
        &self.stages
    }

    /// The shape's length: the sum of its stages.
    pub fn duration(&self) -> Duration {
        Duration::from_secs_f64(self.secs())
    }

    fn secs(&self) -> f64 {
        self.stages.iter().map(|s| s.secs).sum()
    }

    /// The final level, which holds after the last stage.
    fn last(&self) -> f64 {
        self.stages.last().map_or(0.0, |s| s.to)
    }

    /// The stage holding time `t` (seconds), its start and the integral before it.
    fn stage_at(&self, t: f64) -> Option<(Stage, f64, f64)> {
        let i = self.starts.partition_point(|(start, _)| *start <= t).checked_sub(1)?;
        let (start, before) = self.starts[i];
        (t - start < self.stages[i].secs).then(|| (self.stages[i], start, before))
    }

    /// The level at `t` seconds (before 0: the first stage's start).
    pub fn at(&self, t: f64) -> f64 {
        match self.stage_at(t.max(0.0)) {
            Some((s, start, _)) => s.from + s.slope() * (t.max(0.0) - start),
            None => self.last(),
        }
    }

    /// Λ(t): the arrivals due in [0, t).
    pub fn integral(&self, t: f64) -> f64 {
        let t = t.max(0.0);
        match self.stage_at(t) {
            Some((s, start, before)) => before + s.integral(t - start),
            None => {
                let (total, end) = (self.total(), self.secs());
                total + self.last() * (t - end)
            }
        }
    }

    /// The arrivals due over the whole shape: Λ at its end.
    pub fn total(&self) -> f64 {
        let before = self.starts.last().expect("a shape has a stage").1;
        let last = self.stages.last().expect("a shape has a stage");
        before + last.integral(last.secs)
    }

    /// The mean level over the shape.
    pub fn mean(&self) -> f64 {
        self.total() / self.secs()
    }

    /// The highest level the shape reaches.
    pub fn peak(&self) -> f64 {
        self.stages.iter().map(|s| s.from.max(s.to)).fold(0.0, f64::max)
    }

    /// Λ⁻¹(λ): when the integral reaches `lambda`, in seconds; infinite when it never does (the
    /// shape ends at zero below it). Stages of zero rate are passed over: nothing is due in them.
    pub fn time_of(&self, lambda: f64) -> f64 {
        let i = self.starts.partition_point(|(_, before)| *before <= lambda);
        // The last stage whose integral before it is <= lambda (stage 0 has 0 before it).
        let i = i.saturating_sub(1);
        for (s, (start, before)) in self.stages[i..].iter().zip(&self.starts[i..]) {
            let whole = s.integral(s.secs);
            if lambda - before < whole {
                return start + s.time_of(lambda - before);
            }
        }
        let (total, end, last) = (self.total(), self.secs(), self.last());
        if last > 0.0 {
            end + (lambda - total) / last
        } else {
            f64::INFINITY
        }
    }

    /// Arrivals due in second `s` of the shape: Λ(s+1) - Λ(s).
    pub fn in_second(&self, s: u32) -> f64 {
        self.integral(f64::from(s) + 1.0) - self.integral(f64::from(s))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_shape_is_spelled_as_stages_that_parse_back_to_it() {
        for given in ["1s:1..10,1s:10", "30s:0..1000,120s:1000,30s:1000..0", "0.5s:2.5..2.5"] {
            let shape = Shape::parse_stages(given).unwrap();
            assert_eq!(shape.to_string(), given);
            assert_eq!(Shape::parse_stages(&shape.to_string()).unwrap(), shape);
        }
        // k6's spelling is written out as the ramps it means.
        let k6 = Shape::parse_stages("2s:100,2s:100,1s:0").unwrap();
        assert_eq!(k6.to_string(), "2s:0..100,2s:100,1s:100..0");
        assert_eq!(Shape::parse_stages(&k6.to_string()).unwrap(), k6);
        let ramp = Level::parse("100..1000").unwrap().shape(Duration::from_secs(4)).unwrap();
        assert_eq!(ramp.unwrap().to_string(), "4s:100..1000");
    }

    #[test]
    fn a_ramp_integrates_and_inverts() {
        let s = Level::parse("0..2000").unwrap().shape(Duration::from_secs(5)).unwrap().unwrap();
        // Rate 400 t, integral 200 t^2: 5,000 arrivals over 5 s.
        assert_eq!(s.total(), 5000.0);
        assert_eq!(s.integral(1.0), 200.0);
        assert_eq!(s.at(2.5), 1000.0);
        for k in [1.0, 200.0, 1234.0, 4999.0] {
            let t = s.time_of(k);
            assert!((s.integral(t) - k).abs() < 1e-6, "{k}: {t}");
        }
        assert_eq!(s.in_second(4), 5000.0 - 3200.0);
    }

    #[test]
    fn stages_ramp_hold_and_ramp_down() {
        let s = Shape::parse_stages("30s:0..1000, 2m:1000,30s:1000..0").unwrap();
        assert_eq!(s.duration(), Duration::from_secs(180));
        assert_eq!(s.total(), 15_000.0 + 120_000.0 + 15_000.0);
        for (t, want) in [(10.0, 1000.0 / 3.0), (100.0, 1000.0), (165.0, 500.0)] {
            assert!((s.at(t) - want).abs() < 1e-9, "at {t}: {}", s.at(t));
        }
        // After the ramp down nothing more is ever due.
        assert_eq!(s.time_of(150_000.5), f64::INFINITY);
        let t = s.time_of(140_000.0);
        assert!((s.integral(t) - 140_000.0).abs() < 1e-6 && t > 150.0 && t < 180.0, "{t}");
        assert_eq!(s.peak(), 1000.0);
    }

    /// k6's `--stage 2s:100,2s:200,1s:0` ramps from each target to the next, the first from
    /// 0: per second 25, 75 (0 to 100), 125, 175 (100 to 200), 100 (200 to 0), never a hold.
    #[test]
    fn a_k6_stage_ramps_from_the_previous_target() {
        let s = Shape::parse_stages("2s:100,2s:200,1s:0").unwrap();
        let seconds: Vec<f64> = (0..5).map(|i| s.in_second(i)).collect();
        assert_eq!(seconds, [25.0, 75.0, 125.0, 175.0, 100.0]);
        assert_eq!(s.stages()[1], Stage { secs: 2.0, from: 100.0, to: 200.0 });
        // A hold is the level the stage before ended at, or A..A.
        let hold = Shape::parse_stages("1s:0..100,2s:100,1s:50..50").unwrap();
        assert_eq!(hold.stages()[1], Stage { secs: 2.0, from: 100.0, to: 100.0 });
        assert_eq!(hold.stages()[2], Stage { secs: 1.0, from: 50.0, to: 50.0 });
    }

    #[test]
    fn a_zero_stage_is_passed_over() {
        let s = Shape::parse_stages("1s:100..100,2s:0..0,1s:100..100").unwrap();
        // Arrival 100 (the first of the third stage) is due at 3 s, not inside the pause.
        assert!((s.time_of(100.0) - 3.0).abs() < 1e-9, "{}", s.time_of(100.0));
        assert!((s.time_of(99.0) - 0.99).abs() < 1e-9);
    }

    #[test]
    fn a_fixed_level_is_the_fixed_rate_schedule() {
        let s = Shape::parse_stages("10s:3000..3000").unwrap();
        for k in [0u32, 1, 2999, 29_999] {
            assert!((s.time_of(f64::from(k)) - f64::from(k) / 3000.0).abs() < 1e-12);
        }
        // After the last stage its level holds.
        assert!((s.time_of(30_000.0 + 3000.0) - 11.0).abs() < 1e-9);
    }

    #[test]
    fn bad_shapes_say_what_is_wrong() {
        let err = |s: &str| Shape::parse_stages(s).unwrap_err().to_string();
        assert!(err("30s").contains("DURATION:LEVEL"), "{}", err("30s"));
        assert!(err("30x:10").contains("unit"), "{}", err("30x:10"));
        assert!(err("0s:10").contains("above zero"), "{}", err("0s:10"));
        assert!(err("5s:-3").contains("not a level"), "{}", err("5s:-3"));
        assert!(err("5s:0..0").contains("nothing to send"), "{}", err("5s:0..0"));
        assert!(Level::parse("0").is_err() && Level::parse("1..x").is_err());
        assert!(matches!(Level::parse("10s:5..50"), Ok(Level::Stages(_))));
        assert_eq!(Level::parse("2k").unwrap(), Level::Fixed(2000.0));
        assert_eq!(Level::parse("0..20k").unwrap(), Level::Ramp(0.0, 20_000.0));
    }
}
