//! Service-level objectives as a pass/fail gate (`--slo 'p99<50ms,errors<0.1%,rps>1000'`): the
//! thresholds, parsed once, and their verdict on a measurement or on the repetitions of a cell.
//!
//! A term compares one figure with a threshold:
//! - latency: `p50`, `p90`, `p99`, `p99.9` (any `pNN`), `mean`, `max`, against a duration
//!   (`50ms`, `800us`, `1.5s`); the latency is the one every output shows, from the due time in
//!   the open loop (coordinated omission corrected), from the start otherwise;
//! - `errors`: failed requests and answers that were not 2xx, as a share of every request that
//!   ended, against a percentage (`0.1%`);
//! - `rps`: completed requests per second, against a number.
//!
//! A latency or an error share is gated from above only (`<`, `<=`): `p99>50ms` would pass a
//! server the slower it is, so it is refused with what to write instead; a share above 100%
//! is refused as a slip for something else.
//!
//! Over repetitions each figure is the median of the repetitions' figures, as everywhere else
//! in loadlab's statistics. A figure that does not exist (a latency when nothing completed)
//! fails its term: a gate that nothing could measure must not pass.

use std::fmt;
use std::str::FromStr;

use crate::Recorder;
use serde::Serialize;

/// The figure a term reads.
#[derive(Clone, Copy, Debug, PartialEq)]
pub enum Figure {
    /// A latency percentile, 0 < q <= 100.
    Percentile(f64),
    Mean,
    Max,
    /// Failed requests plus non-2xx answers, percent of the requests that ended.
    Errors,
    Rps,
}

impl Figure {
    fn is_latency(self) -> bool {
        matches!(self, Figure::Percentile(_) | Figure::Mean | Figure::Max)
    }
}

impl fmt::Display for Figure {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Figure::Percentile(q) => write!(f, "p{q}"),
            Figure::Mean => f.write_str("mean"),
            Figure::Max => f.write_str("max"),
            Figure::Errors => f.write_str("errors"),
            Figure::Rps => f.write_str("rps"),
        }
    }
}

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Op {
    Lt,
    Le,
    Gt,
    Ge,
}

impl Op {
    fn holds(self, observed: f64, threshold: f64) -> bool {
        match self {
            Op::Lt => observed < threshold,
            Op::Le => observed <= threshold,
            Op::Gt => observed > threshold,
            Op::Ge => observed >= threshold,
        }
    }

    fn symbol(self) -> &'static str {
        match self {
            Op::Lt => "<",
            Op::Le => "<=",
            Op::Gt => ">",
            Op::Ge => ">=",
        }
    }

    /// The symbol that says a failed comparison the other way round (`73 ms > 50 ms`).
    fn negated(self) -> &'static str {
        match self {
            Op::Lt => ">=",
            Op::Le => ">",
            Op::Gt => "<=",
            Op::Ge => "<",
        }
    }
}

/// One threshold. Latencies are held in microseconds, errors in percent.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct Term {
    pub figure: Figure,
    pub op: Op,
    pub threshold: f64,
}

impl fmt::Display for Term {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{}{}{}", self.figure, self.op.symbol(), show(self.figure, self.threshold))
    }
}

/// A set of thresholds, all of which must hold.
#[derive(Clone, Debug, PartialEq)]
pub struct Slo {
    pub terms: Vec<Term>,
    /// The text it was parsed from, to echo back.
    pub text: String,
}

/// What is wrong with an SLO's text: one line, naming the term and what to write instead.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("{term:?}: {why}")]
pub struct SloError {
    pub term: String,
    pub why: String,
}

impl FromStr for Slo {
    type Err = SloError;

    fn from_str(s: &str) -> Result<Slo, SloError> {
        let mut terms = Vec::new();
        for raw in s.split(',') {
            let text = raw.trim();
            let err = |why: &str| SloError { term: text.to_string(), why: why.to_string() };
            if text.is_empty() {
                return Err(SloError {
                    term: s.to_string(),
                    why: "an empty term: write terms like p99<50ms,errors<0.1%,rps>1000".into(),
                });
            }
            let at = text.find(['<', '>']).ok_or_else(|| {
                err("no comparison: write a figure, < <= > or >=, and a value (p99<50ms)")
            })?;
            let (name, rest) = (text[..at].trim(), &text[at..]);
            let (op, value) = if let Some(v) = rest.strip_prefix("<=") {
                (Op::Le, v)
            } else if let Some(v) = rest.strip_prefix(">=") {
                (Op::Ge, v)
            } else if let Some(v) = rest.strip_prefix('<') {
                (Op::Lt, v)
            } else {
                (Op::Gt, &rest[1..])
            };
            let figure = figure(name).map_err(|why| err(&why))?;
            let threshold = threshold(figure, value.trim()).map_err(|why| err(&why))?;
            if matches!(op, Op::Gt | Op::Ge) && figure != Figure::Rps {
                // A floor on a latency or an error share passes the worse a server does.
                let what = if figure == Figure::Errors { "an error share" } else { "a latency" };
                return Err(err(&format!(
                    "{what} gate is an upper bound: write {figure}<{} (or <=)",
                    value.trim()
                )));
            }
            terms.push(Term { figure, op, threshold });
        }
        Ok(Slo { terms, text: s.trim().to_string() })
    }
}

fn figure(name: &str) -> Result<Figure, String> {
    match name {
        "mean" => return Ok(Figure::Mean),
        "max" => return Ok(Figure::Max),
        "errors" => return Ok(Figure::Errors),
        "rps" => return Ok(Figure::Rps),
        _ => {}
    }
    let q = name.strip_prefix('p').and_then(|q| q.parse::<f64>().ok());
    match q {
        Some(q) if q > 0.0 && q <= 100.0 => Ok(Figure::Percentile(q)),
        Some(_) => Err(format!("{name} is not a percentile between p0 and p100")),
        None => Err(format!(
            "unknown figure {name:?}: use p50, p90, p99, p99.9 (any pNN), mean, max, errors or rps"
        )),
    }
}

fn threshold(figure: Figure, value: &str) -> Result<f64, String> {
    let number = |v: &str| {
        v.trim().parse::<f64>().ok().filter(|x| x.is_finite() && *x >= 0.0).ok_or_else(|| {
            format!("{value:?} is not a number of {}", if figure.is_latency() { "ms" } else { "" })
        })
    };
    if figure.is_latency() {
        // Longest suffix first: "ms" and "us" end in "s".
        for (unit, us) in [("ms", 1e3), ("us", 1.0), ("µs", 1.0), ("s", 1e6)] {
            if let Some(v) = value.strip_suffix(unit) {
                return number(v)
                    .map(|x| x * us)
                    .map_err(|_| format!("{value:?} is not a duration (50ms, 800us, 1.5s)"));
            }
        }
        return Err(format!("{value:?} needs a unit: 50ms, 800us or 1.5s"));
    }
    match figure {
        Figure::Errors => match value.strip_suffix('%') {
            Some(v) => match number(v) {
                Ok(p) if p > 100.0 => Err(format!(
                    "{value:?} is more than every request: errors is a share, 0% to 100%"
                )),
                Ok(p) => Ok(p),
                Err(_) => Err(format!("{value:?} is not a percentage (0.1%)")),
            },
            None => Err(format!("{value:?} needs a % sign: errors is a share (errors<0.1%)")),
        },
        _ => number(value).map_err(|_| format!("{value:?} is not a number of requests/s")),
    }
}

/// The figures of one measurement that a term can read (loadlab_runner::judge::slo builds them from
/// a run's result or a stored cell).
#[derive(Clone, Copy, Debug)]
pub struct Figures<'a> {
    pub rps: f64,
    pub completed: u64,
    pub failed: u64,
    /// Completed answers that were not 2xx.
    pub non_2xx: u64,
    /// The requests' latency every output shows (corrected in the open loop).
    pub latency: &'a Recorder,
    /// A workload whose rows show a latency of its own (a view's load time, a visit's
    /// duration): its latency terms still judge the requests', and their detail says so
    /// (`request p99 2.4ms < 50ms`), lest it be read as the figure beside it.
    pub requests_of: bool,
}

impl Figures<'_> {
    fn read(&self, figure: Figure) -> Option<f64> {
        let latency =
            |f: &dyn Fn(&Recorder) -> f64| (!self.latency.is_empty()).then(|| f(self.latency));
        match figure {
            Figure::Percentile(q) => latency(&|r| r.percentile(q) as f64),
            Figure::Mean => latency(&|r| r.mean()),
            Figure::Max => latency(&|r| r.max() as f64),
            Figure::Errors => {
                let ended = self.completed + self.failed;
                (ended > 0).then(|| 100.0 * (self.failed + self.non_2xx) as f64 / ended as f64)
            }
            Figure::Rps => Some(self.rps),
        }
    }
}

/// One term's outcome.
#[derive(Clone, Debug, PartialEq, Serialize)]
pub struct Outcome {
    /// The term as written back (`p99<50ms`).
    pub term: String,
    /// The figure measured (latency in microseconds, errors in percent); `None` when nothing
    /// measured it.
    pub observed: Option<f64>,
    pub passed: bool,
    /// e.g. `p99 73.2ms >= 50ms`, `errors 0.00% < 0.1%`.
    pub detail: String,
}

/// The verdict of an SLO on a measurement.
#[derive(Clone, Debug, PartialEq, Serialize)]
pub struct SloVerdict {
    pub slo: String,
    pub passed: bool,
    pub terms: Vec<Outcome>,
}

impl Slo {
    /// For a sweep: the thresholds each step must hold (latency and errors), and the `rps`
    /// ones, which judge the capacity the sweep found rather than any one step (a low step's
    /// rate is low by design).
    pub fn split_rate(&self) -> (Option<Slo>, Option<Slo>) {
        let part = |rate: bool| {
            let terms: Vec<Term> =
                self.terms.iter().filter(|t| (t.figure == Figure::Rps) == rate).copied().collect();
            let text = terms.iter().map(Term::to_string).collect::<Vec<_>>().join(",");
            (!terms.is_empty()).then_some(Slo { terms, text })
        };
        (part(false), part(true))
    }

    /// Judges one measurement.
    pub fn judge(&self, figures: &Figures<'_>) -> SloVerdict {
        self.judge_repetitions(std::slice::from_ref(figures))
    }

    /// Judges repetitions of one measurement: each figure is the median of the repetitions'.
    pub fn judge_repetitions(&self, reps: &[Figures<'_>]) -> SloVerdict {
        let named = reps.iter().any(|r| r.requests_of);
        let terms: Vec<Outcome> = self
            .terms
            .iter()
            .map(|t| {
                let values: Vec<f64> = reps.iter().filter_map(|r| r.read(t.figure)).collect();
                // A repetition that could not measure the figure makes the figure unknown.
                let observed =
                    (values.len() == reps.len()).then(|| crate::summary::median(&values)).flatten();
                let passed = observed.is_some_and(|o| t.op.holds(o, t.threshold));
                let detail = match observed {
                    None => format!("{}: not measured (nothing completed)", t.figure),
                    Some(o) => format!(
                        "{}{} {} {} {}",
                        if named && t.figure.is_latency() { "request " } else { "" },
                        t.figure,
                        show(t.figure, o),
                        if passed { t.op.symbol() } else { t.op.negated() },
                        show(t.figure, t.threshold)
                    ),
                };
                Outcome { term: t.to_string(), observed, passed, detail }
            })
            .collect();
        SloVerdict { slo: self.text.clone(), passed: terms.iter().all(|o| o.passed), terms }
    }
}

impl SloVerdict {
    /// For a sweep's knee: the kind of the first threshold broken (`Latency` or `Errors`).
    pub fn breach(&self) -> Option<crate::knee::Breach> {
        use crate::knee::Breach;
        let first = self.terms.iter().find(|o| !o.passed)?;
        Some(if first.term.starts_with("errors") { Breach::Errors } else { Breach::Latency })
    }

    /// One line: `SLO p99<50ms,errors<0.1%: FAIL (p99 73.2ms >= 50ms)`, or `pass` with every
    /// figure.
    pub fn line(&self) -> String {
        if self.passed {
            let all: Vec<&str> = self.terms.iter().map(|o| o.detail.as_str()).collect();
            format!("SLO {}: pass ({})", self.slo, all.join(", "))
        } else {
            let failed: Vec<&str> =
                self.terms.iter().filter(|o| !o.passed).map(|o| o.detail.as_str()).collect();
            format!("SLO {}: FAIL ({})", self.slo, failed.join(", "))
        }
    }
}

/// A figure's value in the unit it was written in.
fn show(figure: Figure, value: f64) -> String {
    match figure {
        Figure::Errors => format!("{}%", trim(value, 3)),
        Figure::Rps => trim(value, 1),
        _ if value >= 1e6 => format!("{}s", trim(value / 1e6, 3)),
        _ if value >= 1e3 => format!("{}ms", trim(value / 1e3, 2)),
        _ => format!("{}us", trim(value, 0)),
    }
}

/// `value` with at most `decimals` decimals, trailing zeros dropped.
fn trim(value: f64, decimals: usize) -> String {
    let s = format!("{value:.decimals$}");
    if s.contains('.') {
        s.trim_end_matches('0').trim_end_matches('.').to_string()
    } else {
        s
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn latency(values: &[u64]) -> Recorder {
        let mut r = Recorder::new();
        for &v in values {
            r.record(v);
        }
        r
    }

    #[test]
    fn parses_every_figure_with_its_unit() {
        let slo: Slo =
            "p99<50ms, p99.9<=1.5s,mean<800us,max<2s,errors<0.1%,rps>=1000".parse().unwrap();
        let t = &slo.terms;
        assert_eq!(
            t[0],
            Term { figure: Figure::Percentile(99.0), op: Op::Lt, threshold: 50_000.0 }
        );
        assert_eq!(t[1].figure, Figure::Percentile(99.9));
        assert_eq!((t[1].op, t[1].threshold), (Op::Le, 1_500_000.0));
        assert_eq!((t[2].figure, t[2].threshold), (Figure::Mean, 800.0));
        assert_eq!((t[3].figure, t[3].threshold), (Figure::Max, 2e6));
        assert_eq!((t[4].figure, t[4].threshold), (Figure::Errors, 0.1));
        assert_eq!((t[5].figure, t[5].op, t[5].threshold), (Figure::Rps, Op::Ge, 1000.0));
        assert_eq!(slo.terms[0].to_string(), "p99<50ms");
    }

    #[test]
    fn a_malformed_term_is_named_with_what_to_write() {
        let cases = [
            ("p99<50", "needs a unit"),
            ("errors<0.1", "needs a % sign"),
            ("p99=50ms", "no comparison"),
            ("latency<5ms", "unknown figure"),
            ("p101<5ms", "between p0 and p100"),
            ("rps>many", "not a number"),
            ("p99<50ms,", "an empty term"),
            ("p99<-5ms", "not a duration"),
            ("errors<200%", "errors is a share, 0% to 100%"),
            ("p99>50ms", "a latency gate is an upper bound: write p99<50ms (or <=)"),
            ("mean>=2s", "a latency gate is an upper bound: write mean<2s"),
            ("errors>1%", "an error share gate is an upper bound: write errors<1%"),
        ];
        for (text, why) in cases {
            let e = text.parse::<Slo>().unwrap_err();
            assert!(e.to_string().contains(why), "{text}: {e}");
        }
    }

    #[test]
    fn an_error_share_of_every_request_is_the_highest_there_is() {
        let slo: Slo = "errors<=100%,rps>0".parse().unwrap();
        assert_eq!(slo.terms[0].threshold, 100.0);
        let e = "errors<100.5%".parse::<Slo>().unwrap_err();
        assert_eq!(e.term, "errors<100.5%");
        assert_eq!(e.to_string().lines().count(), 1, "{e}");
    }

    #[test]
    fn each_term_passes_or_fails_at_its_boundary() {
        let lat = latency(&[10_000; 100]); // 10 ms
        let f = Figures {
            rps: 1000.0,
            completed: 999,
            failed: 1,
            non_2xx: 0,
            latency: &lat,
            requests_of: false,
        };
        let v = |s: &str| s.parse::<Slo>().unwrap().judge(&f).passed;
        assert!(v("p99<=10ms") && !v("p99<10ms") && v("p99<10.1ms"));
        assert!(v("errors<=0.1%") && !v("errors<0.1%"));
        assert!(v("rps>=1000") && !v("rps>1000"));
        assert!(v("mean<11ms,max<=10ms"));
    }

    #[test]
    fn non_2xx_answers_are_errors() {
        let lat = latency(&[1_000]);
        let f = Figures {
            rps: 10.0,
            completed: 100,
            failed: 0,
            non_2xx: 5,
            latency: &lat,
            requests_of: false,
        };
        let verdict = "errors<1%".parse::<Slo>().unwrap().judge(&f);
        assert!(!verdict.passed);
        assert_eq!(verdict.terms[0].observed, Some(5.0));
        assert_eq!(verdict.line(), "SLO errors<1%: FAIL (errors 5% >= 1%)");
    }

    /// A visit or view workload's rows show its own latency: a latency term names the
    /// requests' that it judged, an errors term is the same as ever.
    #[test]
    fn the_requests_latency_is_named_where_the_rows_show_another() {
        let lat = latency(&[2_000]);
        let f = Figures {
            rps: 10.0,
            completed: 1,
            failed: 0,
            non_2xx: 0,
            latency: &lat,
            requests_of: true,
        };
        let verdict = "p99<50ms,errors<1%".parse::<Slo>().unwrap().judge(&f);
        assert_eq!(
            verdict.line(),
            "SLO p99<50ms,errors<1%: pass (request p99 2ms < 50ms, errors 0% < 1%)"
        );
    }

    #[test]
    fn nothing_measured_fails_a_latency_term() {
        let lat = Recorder::new();
        let f = Figures {
            rps: 0.0,
            completed: 0,
            failed: 10,
            non_2xx: 0,
            latency: &lat,
            requests_of: false,
        };
        let verdict = "p99<1s".parse::<Slo>().unwrap().judge(&f);
        assert!(!verdict.passed);
        assert_eq!(verdict.terms[0].observed, None);
        assert!(verdict.line().contains("not measured"));
    }

    #[test]
    fn repetitions_are_judged_by_their_median() {
        let (fast, slow) = (latency(&[1_000]), latency(&[100_000]));
        let rep = |l| Figures {
            rps: 10.0,
            completed: 1,
            failed: 0,
            non_2xx: 0,
            latency: l,
            requests_of: false,
        };
        let slo: Slo = "p50<10ms".parse().unwrap();
        // Two fast, one slow: the median is fast.
        assert!(slo.judge_repetitions(&[rep(&fast), rep(&slow), rep(&fast)]).passed);
        assert!(!slo.judge_repetitions(&[rep(&slow), rep(&slow), rep(&fast)]).passed);
    }
}
