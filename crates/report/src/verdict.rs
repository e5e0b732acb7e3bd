//! The verdict: per workload and load, each stack's medians over repetitions with their 95%
//! confidence intervals, the winner with the ratio of medians and its interval, whether the
//! difference is significant (Mann-Whitney U, α = 0.05), and every warning a reader needs
//! before acting on a number: too few repetitions, outlying repetitions, and trust flags.
//!
//! Everything here is a pure function of the cells, so it is tested with hand-made ones.
//!
//! Which measure crowns the winner depends on the load model. Under a closed load (ab, wrk)
//! the server sets the pace, so the stack with more requests per second wins. Under an open
//! load or httperf's sessions the client sets the rate, so every stack that keeps up shows the
//! same throughput; the one that answers faster at the tail (p99) wins, and one that falls
//! behind shows it there too, since latency is counted from when each request was due.

use loadlab_stats::ci::{median_ci, median_ratio_ci, MedianCi, RatioCi};
use loadlab_stats::mann_whitney::{mann_whitney_u, min_p_value, MannWhitney};
use loadlab_stats::outliers::outlier_indices;
use loadlab_stats::slo::SloVerdict;
use loadlab_stats::summary::median;
use loadlab_store::{CellRecord, Flag, Limit, LoadModel, LoadSpec, RunProfiles};
use serde::Serialize;

use crate::counted::{Counted, Measured};
use crate::format;
use crate::group::{groups, StackCells};
use crate::requests::RequestFigures;
use crate::slo;

/// The level of every confidence interval in the report.
pub const CONFIDENCE: f64 = 0.95;
/// The significance level of every test in the report.
pub const ALPHA: f64 = 0.05;

/// How far from the median an outlying repetition must also be to be reported. The modified
/// Z-score alone flags tiny differences whenever the other repetitions agree closely (a MAD of
/// almost nothing, or of exactly nothing when HDR-rounded percentiles tie), and a repetition
/// 2% off its siblings changes no decision; one 10% off is worth a look at what else ran.
pub const OUTLIER_MIN_DEVIATION: f64 = 0.10;
/// And, for latencies, at least this many microseconds: on loopback a p50 of 10 µs is one HDR
/// bucket from 9 µs and one context switch from 15 µs, so a few microseconds' difference is
/// the scheduler's, not the server's, however large in relative terms.
pub const OUTLIER_MIN_LATENCY_US: f64 = 10.0;

pub use crate::measure::Measure;

/// The measure that decides the winner under `model` (module docs say why).
pub fn primary_measure(model: LoadModel) -> Measure {
    match model {
        LoadModel::Closed => Measure::Rps,
        LoadModel::Open | LoadModel::Session => Measure::P99,
    }
}

/// A trust flag raised on one cell, with where it came from.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct CellFlag {
    pub stack: String,
    pub repetition: u32,
    /// The cell's position in the plan.
    pub ordinal: u32,
    pub flag: Flag,
    pub detail: String,
}

/// A repetition unlike the others: modified Z-score beyond 3.5 and at least
/// [`OUTLIER_MIN_DEVIATION`] from the median.
#[derive(Debug, Clone, Copy, PartialEq, Serialize)]
pub struct Outlier {
    pub repetition: u32,
    pub value: f64,
}

/// One measure of one stack in one group: the values of its repetitions and their median.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct Figure {
    pub measure: Measure,
    /// One value per repetition that has it, in repetition order.
    pub values: Vec<f64>,
    /// The median with its 95% interval; `None` when no repetition has the measure. With fewer
    /// than 6 values `has_ci` is false and the bounds are the range.
    pub ci: Option<MedianCi>,
    pub outliers: Vec<Outlier>,
    /// Every flag of the cells the values come from: each touches this figure.
    pub flags: Vec<CellFlag>,
}

impl Figure {
    pub fn median(&self) -> Option<f64> {
        self.ci.map(|c| c.median)
    }

    /// Whether no flag casts doubt on this figure.
    pub fn trusted(&self) -> bool {
        self.flags.is_empty()
    }
}

/// One stack in one group.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct StackSummary {
    pub stack: String,
    /// What its cells counted: its figures are of requests, views or visits.
    pub counted: Counted,
    pub repetitions: usize,
    /// One per [`Measure::ALL`], in that order.
    pub figures: Vec<Figure>,
    pub flags: Vec<CellFlag>,
    /// What limited the stack's cells, most frequent first; empty for cells stored before
    /// loadlab judged it.
    pub limits: Vec<LimitShare>,
    /// The verdict of the SLO its cells were stored with, over its repetitions
    /// ([`crate::slo::judge`]); `None` without one.
    pub slo: Option<SloVerdict>,
    /// Each request of a URL list workload (`urls = FILE`) with its figures, medians over the
    /// repetitions ([`crate::requests::requests`]); empty for other workloads.
    pub requests: Vec<RequestFigures>,
    /// A view workload's (`view = true`) views/s and page-load percentiles, medians over the
    /// repetitions; `None` for other workloads.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub views: Option<crate::views::ViewFigures>,
    /// A visit workload's (`visits = ...`) visits/s, visit duration and steps ([`crate::visits`]);
    /// `None` for other workloads.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub visits: Option<crate::visits::VisitFigures>,
}

/// One limit and the repetitions it limited.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct LimitShare {
    #[serde(skip)]
    pub limit: Limit,
    /// `php-fpm pool`, `client`, `not determined`...
    pub name: String,
    /// `worker_pool`, `client`, `not_determined`...
    pub kind: String,
    /// The repetitions (from 0) it limited.
    pub repetitions: Vec<u32>,
    /// The evidence of its first repetition.
    pub evidence: String,
}

impl LimitShare {
    /// `limited by php-fpm pool in 5 of 5 repetitions: 2 of 2 children busy`.
    pub fn sentence(&self, of: usize) -> String {
        let what = match self.limit {
            Limit::NotDetermined => "limit not determined".to_owned(),
            Limit::Offered => "kept up with the offered load".to_owned(),
            _ => format!("limited by {}", self.name),
        };
        format!("{what} in {} of {of} repetitions: {}", self.repetitions.len(), self.evidence)
    }
}

/// The limits of `cells`, most frequent first (ties: first seen).
fn limits(cells: &[&CellRecord]) -> Vec<LimitShare> {
    let mut out: Vec<LimitShare> = Vec::new();
    for c in cells {
        let Some(l) = &c.limited_by else { continue };
        match out.iter_mut().find(|s| s.limit == l.limit) {
            Some(s) => s.repetitions.push(c.repetition),
            None => out.push(LimitShare {
                limit: l.limit.clone(),
                name: l.limit.name(),
                kind: l.limit.kind().to_owned(),
                repetitions: vec![c.repetition],
                evidence: l.evidence.clone(),
            }),
        }
    }
    // Stable: equal counts keep their first-seen order.
    out.sort_by_key(|s| std::cmp::Reverse(s.repetitions.len()));
    out
}

impl StackSummary {
    pub fn figure(&self, measure: Measure) -> &Figure {
        // `figures` is built from Measure::ALL, so every measure is there.
        self.figures.iter().find(|f| f.measure == measure).expect("every measure has a figure")
    }
}

/// One stack against another on one measure.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct Comparison {
    pub measure: Measure,
    /// The stack with the better median.
    pub better: String,
    pub worse: String,
    /// How many times better, always ≥ 1 for the medians: better/worse for req/s, worse/better
    /// for latency ("2× lower p99"), with its interval.
    pub ratio: Option<RatioCi>,
    pub test: Option<MannWhitney>,
    /// p ≤ α: the difference is not plausibly noise. A report prints `~` otherwise.
    pub significant: bool,
    /// The smallest p-value these repetition counts can give is above α: no outcome could have
    /// been significant, so `~` here says nothing about the stacks.
    pub underpowered: bool,
    /// The flags of both sides' cells.
    pub flags: Vec<CellFlag>,
}

/// Why a figure of a group needs a second look.
#[derive(Debug, Clone, PartialEq, Serialize)]
#[serde(tag = "kind", rename_all = "snake_case")]
pub enum Warning {
    /// A cell's trust flag, on the figures of its stack and the comparisons it is part of.
    Trust(CellFlag),
    /// So few repetitions that the test could never reach significance.
    Underpowered { better: String, worse: String, n_better: usize, n_worse: usize, min_p: f64 },
    /// Fewer repetitions than a 95% interval of the median needs: the range is shown instead.
    NoMedianCi { stack: String, n: usize },
    Outlier {
        stack: String,
        measure: Measure,
        repetition: u32,
        value: f64,
        median: f64,
        /// What the stack's cells counted, which names the measure (`load p99`).
        #[serde(skip)]
        counted: Counted,
    },
    /// Some repetitions of a stack lack the measure that the others have.
    Missing {
        stack: String,
        measure: Measure,
        missing: usize,
        /// What the stack's cells counted, which names the measure (`visit p50`).
        #[serde(skip)]
        counted: Counted,
    },
}

impl Warning {
    /// Whether the warning is about the method rather than about a figure: too few repetitions
    /// for an interval or for significance. A table says these once, in a footnote, and marks
    /// the figures (`*`, `~`); the others belong beside the group they concern.
    pub fn is_footnote(&self) -> bool {
        matches!(self, Warning::Underpowered { .. } | Warning::NoMedianCi { .. })
    }
}

impl std::fmt::Display for Warning {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            Warning::Trust(c) if c.detail.is_empty() => {
                write!(
                    f,
                    "{}, repetition {}: {}",
                    c.stack,
                    format::repetition(c.repetition),
                    c.flag
                )
            }
            Warning::Trust(c) => {
                write!(
                    f,
                    "{}, repetition {}: {} ({})",
                    c.stack,
                    format::repetition(c.repetition),
                    c.flag,
                    c.detail
                )
            }
            Warning::Underpowered { better, worse, n_better, n_worse, min_p } => write!(
                f,
                "{better} vs {worse}: {n_better}+{n_worse} repetitions can never reach \
                 significance (smallest possible p = {min_p:.3} > {ALPHA}); run more"
            ),
            Warning::NoMedianCi { stack, n } => write!(
                f,
                "{stack}: {n} repetition(s) give no 95% interval of the median (6 needed); \
                 the range is shown"
            ),
            Warning::Outlier { stack, measure, repetition, value, median, counted } => write!(
                f,
                "{stack}, repetition {}: {} {} is an outlier (median {})",
                format::repetition(*repetition),
                counted.name(*measure),
                counted.show(*measure, *value),
                counted.show(*measure, *median)
            ),
            Warning::Missing { stack, measure, missing, counted } => {
                write!(f, "{stack}: {missing} repetition(s) have no {}", counted.name(*measure))
            }
        }
    }
}

/// One line of a group's warnings, as the terminal and the HTML show them.
#[derive(Debug, Clone, PartialEq)]
pub struct WarningLine {
    /// A trust flag (the figures it touches are marked), rather than an observation.
    pub trust: bool,
    pub text: String,
}

/// A group's warnings as lines a person reads once: one per (stack, flag) listing the
/// repetitions it was raised in, and one per (stack, repetition) listing the measures on which
/// that repetition is an outlier. Five repetitions each flagged, or one repetition outlying on
/// all three measures, then read as one line, not five or three. The method's footnotes (too
/// few repetitions for an interval or for significance) are left to the caller, which says
/// them once under the table.
pub fn warning_lines(warnings: &[Warning]) -> Vec<WarningLine> {
    // (stack, flag) -> repetitions with their details, in order of first appearance.
    let mut flags: Vec<((&str, String), Vec<String>)> = Vec::new();
    // (stack, repetition) -> "req/s 3,356 (median 2,960)", ...
    let mut outliers: Vec<((&str, u32), Vec<String>)> = Vec::new();
    let mut others = Vec::new();
    fn add<K: PartialEq>(groups: &mut Vec<(K, Vec<String>)>, key: K, item: String) {
        match groups.iter_mut().find(|(k, _)| *k == key) {
            Some((_, items)) => items.push(item),
            None => groups.push((key, vec![item])),
        }
    }
    for w in warnings {
        match w {
            Warning::Trust(c) => {
                let item = if c.detail.is_empty() {
                    format::repetition(c.repetition).to_string()
                } else {
                    format!("{}: {}", format::repetition(c.repetition), c.detail)
                };
                add(&mut flags, (c.stack.as_str(), c.flag.to_string()), item);
            }
            Warning::Outlier { stack, measure, repetition, value, median, counted } => {
                // "req/s 1,000 (median 3,000)", "p99 9.00 ms (median 3.00 ms)": the name
                // already says req/s.
                let show = |v: f64| match measure {
                    Measure::Rps => format::count(v),
                    _ => measure.show(v),
                };
                let name = counted.name(*measure);
                let item = format!("{name} {} (median {})", show(*value), show(*median));
                add(&mut outliers, (stack.as_str(), format::repetition(*repetition)), item);
            }
            w if w.is_footnote() => {}
            other => others.push(other.to_string()),
        }
    }
    let flags = flags.into_iter().map(|((stack, flag), reps)| WarningLine {
        trust: true,
        text: format!("{stack}: {flag} in repetition {}", reps.join("; ")),
    });
    let outliers = outliers.into_iter().map(|((stack, rep), items)| WarningLine {
        trust: false,
        text: format!("{stack}, repetition {rep} is an outlier: {}", items.join(", ")),
    });
    let others = others.into_iter().map(|text| WarningLine { trust: false, text });
    flags.chain(outliers).chain(others).collect()
}

/// The verdict on one workload under one load.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct GroupVerdict {
    pub workload: String,
    pub load: LoadSpec,
    pub load_label: String,
    /// What its cells count; a view or visit workload's measures are its views' or visits'
    /// (views/s and page-load time, visits/s and visit duration).
    pub counted: Counted,
    /// The measure that decides the winner.
    pub primary: Measure,
    pub stacks: Vec<StackSummary>,
    /// For each measure, the stack best on it against each of the others, measure by measure
    /// in [`Measure::ALL`] order.
    pub comparisons: Vec<Comparison>,
    /// The stack best on the primary measure, if it is significantly better than every other;
    /// `None` with a single stack, when any difference could be noise, or when the figures are
    /// not the servers' (see `not_the_servers`).
    pub winner: Option<String>,
    /// Why no winner is named although the figures differ: a repetition of some stack was
    /// limited by the network or the client (its stored `limited_by`; for a cell stored
    /// without one, its flags, said as such), so the comparison would credit a server with the
    /// link's or the load generator's limit. Names the first such repetition (stack,
    /// repetition) and its evidence.
    pub not_the_servers: Option<String>,
    pub warnings: Vec<Warning>,
    /// The group's profiles and the differences between its stacks
    /// ([`profiled_verdicts`]); absent when none of its cells was to be profiled.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub profiles: Option<crate::profile::GroupProfiles>,
}

impl GroupVerdict {
    /// The comparisons on `measure`, best stack first against each other.
    pub fn comparisons_on(&self, measure: Measure) -> impl Iterator<Item = &Comparison> {
        self.comparisons.iter().filter(move |c| c.measure == measure)
    }

    /// The primary measure's comparison of the best stack with the runner-up: the one the
    /// verdict table shows.
    pub fn headline(&self) -> Option<&Comparison> {
        // The runner-up is the worse side with the smallest ratio, i.e. the closest contender.
        self.comparisons_on(self.primary).min_by(|a, b| {
            let r = |c: &Comparison| c.ratio.map_or(f64::INFINITY, |r| r.ratio);
            r(a).total_cmp(&r(b))
        })
    }

    /// Every stack's requests of a URL list workload, request by request: the rows of the
    /// report's table of them ([`crate::requests::rows`]).
    pub fn request_rows(&self) -> Vec<(&str, &RequestFigures)> {
        crate::requests::rows(self.stacks.iter().map(|s| (s.stack.as_str(), &s.requests[..])))
    }

    /// Whether any flag touches this group's figures.
    pub fn flagged(&self) -> bool {
        self.stacks.iter().any(|s| !s.flags.is_empty())
    }
}

/// The verdict on every group of `cells`, in plan order.
pub fn verdicts(cells: &[CellRecord]) -> Vec<GroupVerdict> {
    groups(cells)
        .iter()
        .map(|g| {
            let stacks: Vec<StackSummary> =
                g.stacks.iter().map(|s| summarize(s, g.counted)).collect();
            let primary = primary_measure(g.load.model);
            let comparisons = Measure::ALL
                .iter()
                .flat_map(|&m| best_against_others(&stacks, m))
                .collect::<Vec<_>>();
            let contenders: Vec<&Comparison> =
                comparisons.iter().filter(|c| c.measure == primary).collect();
            // Read from each repetition's stored limit (crate::limit), never from its flags.
            let limited = crate::limit::not_the_servers(
                g.stacks.iter().map(|s| (s.stack.as_str(), s.cells.as_slice())),
            );
            let not_the_servers = limited.first().map(|n| n.sentence(limited.len() - 1));
            let winner = match contenders.first() {
                Some(first)
                    if contenders.iter().all(|c| c.significant) && not_the_servers.is_none() =>
                {
                    Some(first.better.clone())
                }
                _ => None,
            };
            let warnings = warnings(&stacks, &contenders);
            GroupVerdict {
                workload: g.workload.clone(),
                load: g.load.clone(),
                load_label: g.load_label(),
                counted: g.counted,
                primary,
                stacks,
                comparisons,
                winner,
                not_the_servers,
                warnings,
                profiles: None,
            }
        })
        .collect()
}

/// The verdict on every group of `cells` ([`verdicts`]), each with its profiles
/// ([`crate::profile::of_group`]): what `report --format json` writes.
pub fn profiled_verdicts(cells: &[CellRecord], profiles: &RunProfiles) -> Vec<GroupVerdict> {
    let mut verdicts = verdicts(cells);
    // Both in the groups' order.
    for (v, g) in verdicts.iter_mut().zip(groups(cells)) {
        v.profiles = crate::profile::of_group(&g, profiles);
    }
    verdicts
}

/// Repetitions below which outliers are not judged.
const MIN_FOR_OUTLIERS: usize = 5;

/// Medians, intervals, outliers and flags of one stack's repetitions, on what its group
/// counted (requests, views or visits: [`crate::counted`], decided once for the group by
/// [`crate::group::groups`], so that every stack of a group is compared on the same figures).
pub fn summarize(stack: &StackCells<'_>, counted: Counted) -> StackSummary {
    let flags: Vec<CellFlag> = stack
        .cells
        .iter()
        .flat_map(|c| {
            c.flags.iter().map(|f| CellFlag {
                stack: stack.stack.clone(),
                repetition: c.repetition,
                ordinal: c.ordinal,
                flag: f.flag.clone(),
                detail: f.detail.clone(),
            })
        })
        .collect();
    let figures = Measure::ALL
        .iter()
        .map(|&measure| {
            let (reps, values): (Vec<u32>, Vec<f64>) = stack
                .cells
                .iter()
                .filter_map(|c| counted.value(measure, c).map(|v| (c.repetition, v)))
                .unzip();
            let center = median(&values).unwrap_or(f64::NAN);
            // With fewer than five repetitions the median absolute deviation rests on two or
            // three values, so the score flags ordinary spread: no outlier is named then.
            let candidates = if values.len() >= MIN_FOR_OUTLIERS {
                outlier_indices(&values)
            } else {
                Vec::new()
            };
            let outliers = candidates
                .into_iter()
                .filter(|&i| {
                    let off = (values[i] - center).abs();
                    let floor = match measure {
                        Measure::Rps => 0.0,
                        Measure::P50 | Measure::P99 => OUTLIER_MIN_LATENCY_US,
                    };
                    off / center >= OUTLIER_MIN_DEVIATION && off >= floor
                })
                .map(|i| Outlier { repetition: reps[i], value: values[i] })
                .collect();
            Figure {
                measure,
                ci: median_ci(&values, CONFIDENCE),
                values,
                outliers,
                flags: flags.clone(),
            }
        })
        .collect();
    StackSummary {
        stack: stack.stack.clone(),
        counted,
        repetitions: stack.cells.len(),
        figures,
        flags,
        limits: limits(&stack.cells),
        slo: slo::judge(&stack.cells),
        requests: crate::requests::requests(&stack.cells),
        views: crate::views::ViewFigures::of(&stack.cells),
        visits: crate::visits::VisitFigures::of(&stack.cells),
    }
}

/// The stack with the best median on `measure` against each other stack that has the measure.
fn best_against_others(stacks: &[StackSummary], measure: Measure) -> Vec<Comparison> {
    let with_values: Vec<&StackSummary> =
        stacks.iter().filter(|s| s.figure(measure).median().is_some()).collect();
    let key = |s: &&StackSummary| s.figure(measure).median().unwrap_or(f64::NAN);
    let best = if measure.higher_is_better() {
        with_values.iter().max_by(|a, b| key(a).total_cmp(&key(b)))
    } else {
        with_values.iter().min_by(|a, b| key(a).total_cmp(&key(b)))
    };
    let Some(best) = best else { return Vec::new() };
    with_values
        .iter()
        .filter(|s| s.stack != best.stack)
        .map(|other| compare(best, other, measure))
        .collect()
}

/// `better` against `worse` on `measure` (the caller knows which is better by the medians).
pub fn compare(better: &StackSummary, worse: &StackSummary, measure: Measure) -> Comparison {
    let (b, w) = (&better.figure(measure).values, &worse.figure(measure).values);
    let ratio = if measure.higher_is_better() {
        median_ratio_ci(b, w, CONFIDENCE)
    } else {
        median_ratio_ci(w, b, CONFIDENCE)
    };
    let test = mann_whitney_u(b, w);
    let mut flags = better.flags.clone();
    flags.extend(worse.flags.iter().cloned());
    Comparison {
        measure,
        better: better.stack.clone(),
        worse: worse.stack.clone(),
        ratio,
        significant: test.is_some_and(|t| t.significant(ALPHA)),
        underpowered: min_p_value(b.len(), w.len()) > ALPHA,
        test,
        flags,
    }
}

fn warnings(stacks: &[StackSummary], contenders: &[&Comparison]) -> Vec<Warning> {
    let mut out: Vec<Warning> = Vec::new();
    for s in stacks {
        out.extend(s.flags.iter().cloned().map(Warning::Trust));
    }
    for c in contenders.iter().filter(|c| c.underpowered) {
        let n = |stack: &str| stacks.iter().find(|s| s.stack == stack).map_or(0, |s| s.repetitions);
        let (n_better, n_worse) = (n(&c.better), n(&c.worse));
        out.push(Warning::Underpowered {
            better: c.better.clone(),
            worse: c.worse.clone(),
            n_better,
            n_worse,
            min_p: min_p_value(n_better, n_worse),
        });
    }
    for s in stacks {
        // One interval warning per stack: every measure has the same repetitions.
        if let Some(ci) = s.figures.iter().find_map(|f| f.ci.filter(|c| !c.has_ci)) {
            out.push(Warning::NoMedianCi { stack: s.stack.clone(), n: ci.n });
        }
        for f in &s.figures {
            // A measure no repetition has was not recorded at all: nothing to warn about. One
            // that only some lack makes the median rest on fewer values than it seems to.
            let missing = s.repetitions - f.values.len();
            if missing > 0 && !f.values.is_empty() {
                out.push(Warning::Missing {
                    stack: s.stack.clone(),
                    measure: f.measure,
                    missing,
                    counted: s.counted,
                });
            }
            for o in &f.outliers {
                out.push(Warning::Outlier {
                    stack: s.stack.clone(),
                    measure: f.measure,
                    repetition: o.repetition,
                    value: o.value,
                    median: f.median().unwrap_or(f64::NAN),
                    counted: s.counted,
                });
            }
        }
    }
    out
}

#[cfg(test)]
#[path = "verdict_tests.rs"]
mod tests;
