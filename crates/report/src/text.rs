//! Plain-text tables for the terminal: the verdict at the end of `loadlab run`, and
//! `loadlab compare RUN_A RUN_B`, which reads like benchstat: per workload, load and stack, the
//! old and new median ± the CI's half-width in percent, the change, and the p-value, or `~`
//! when the difference is not significant at α = 0.05.

use std::collections::HashMap;
use std::fmt::Write;

use loadlab_stats::ci::MedianCi;
use loadlab_stats::mann_whitney::{mann_whitney_u, min_p_value, MannWhitney};
use loadlab_store::CellRecord;
use serde::Serialize;

use crate::counted::{Counted, Measured};
use crate::format;
use crate::group::{groups, load_key};
use crate::verdict::{
    summarize, warning_lines, CellFlag, GroupVerdict, Measure, StackSummary, Warning, ALPHA,
};

/// One stack's figure in two runs.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct RunDelta {
    pub workload: String,
    pub load_label: String,
    pub stack: String,
    pub measure: Measure,
    /// What the group counts, which names the measure (`views/s`, `visit p99`): the old
    /// run's group's, or the new run's when only it has the group.
    pub counted: Counted,
    /// `None` when the run has no such cell or no value of the measure.
    pub old: Option<MedianCi>,
    pub new: Option<MedianCi>,
    /// new / old - 1.
    pub change: Option<f64>,
    pub test: Option<MannWhitney>,
    pub significant: bool,
    /// No outcome of these repetition counts could be significant.
    pub underpowered: bool,
    pub old_flags: Vec<CellFlag>,
    pub new_flags: Vec<CellFlag>,
}

impl RunDelta {
    /// The measure as its group names it: `req/s`, `views/s`, `load p99`, `visit p50`.
    pub fn measure_name(&self) -> &'static str {
        self.counted.name(self.measure)
    }

    /// `nginx hello.txt closed, 50 conn req/s: -8.4% (p=0.001)`: the line `compare
    /// --fail-on-regression` prints for a regression.
    pub fn regression_line(&self) -> String {
        format!(
            "{} {} {} {}: {:+.1}% (p={:.3})",
            self.stack,
            self.workload,
            self.load_label,
            self.measure_name(),
            self.change.unwrap_or(0.0) * 100.0,
            self.test.map_or(f64::NAN, |t| t.p_value)
        )
    }

    /// A significant change for the worse (Mann-Whitney at α = 0.05): a lower rate (req/s,
    /// views/s or visits/s), or a higher p50 or p99. Not significant (`~`) is never a
    /// regression, whatever the medians.
    pub fn regressed(&self) -> bool {
        let worse = self.change.is_some_and(|c| {
            if self.measure.higher_is_better() {
                c < 0.0
            } else {
                c > 0.0
            }
        });
        self.significant && worse
    }

    /// Neither run's flags (the runner's stored verdict, read here and never judged again)
    /// say that the figure measures the client rather than the server.
    pub fn trusted(&self) -> bool {
        self.old_flags.iter().chain(&self.new_flags).all(|f| !f.flag.clients_figure())
    }
}

/// What `compare --fail-on-regression` decides: it fails on a regression of a trusted figure
/// only, since a figure whose client missed its schedule or ran out of CPU, descriptors or
/// link measures the client as much as the server, unless told otherwise (`--gate-untrusted`:
/// those fail it too). Every regression is told with the flags that mark its figure (`!` in
/// the table); one the gate leaves out says so, one it gates although untrusted says why.
#[derive(Debug, Clone, PartialEq)]
pub struct Gate {
    /// A trusted figure regressed: the gate fails.
    pub failed: bool,
    /// The lines for stderr, one per regression, then the outcome when nothing failed.
    pub lines: Vec<String>,
}

/// The gate over `compare_runs`' deltas between the runs named `old_name` and `new_name`;
/// `untrusted_too`: regressions of untrusted figures fail it as well (`--gate-untrusted`).
pub fn regression_gate(
    deltas: &[RunDelta],
    old_name: &str,
    new_name: &str,
    untrusted_too: bool,
) -> Gate {
    let mut lines = Vec::new();
    let (mut trusted, mut untrusted) = (0, 0);
    for d in deltas.iter().filter(|d| d.regressed()) {
        let marks: Vec<String> = [(old_name, &d.old_flags), (new_name, &d.new_flags)]
            .into_iter()
            .flat_map(|(run, flags)| flag_counts(flags).map(move |f| format!("{run}: {f}")))
            .collect();
        let marked =
            if marks.is_empty() { String::new() } else { format!(" (! {})", marks.join("; ")) };
        if d.trusted() {
            trusted += 1;
            lines.push(format!("regression: {}{marked}", d.regression_line()));
        } else if untrusted_too {
            trusted += 1;
            let line = d.regression_line();
            lines.push(format!(
                "regression of an untrusted figure, gated (--gate-untrusted): {line}{marked}"
            ));
        } else {
            untrusted += 1;
            let line = d.regression_line();
            lines.push(format!("regression of an untrusted figure, not gated: {line}{marked}"));
        }
    }
    if trusted == 0 {
        let also = match untrusted {
            0 => String::new(),
            1 => " (1 untrusted figure regressed, above)".to_owned(),
            n => format!(" ({n} untrusted figures regressed, above)"),
        };
        lines.push(format!(
            "no significant regression of a trusted figure from {old_name} to {new_name}{also}"
        ));
    }
    Gate { failed: trusted > 0, lines }
}

/// Each flag of a figure once, with the repetitions it marks: "schedule_missed in 3 repetitions".
fn flag_counts(flags: &[CellFlag]) -> impl Iterator<Item = String> + '_ {
    let mut names: Vec<&str> = flags.iter().map(|f| f.flag.as_str()).collect();
    names.sort_unstable();
    names.dedup();
    names.into_iter().map(move |name| {
        let n = flags.iter().filter(|f| f.flag.as_str() == name).count();
        format!("{name} in {n} {}", if n == 1 { "repetition" } else { "repetitions" })
    })
}

/// Every (workload, load, stack, measure) of either run, old against new: the old run's order
/// first, then what only the new run has.
pub fn compare_runs(old: &[CellRecord], new: &[CellRecord]) -> Vec<RunDelta> {
    type Key = (String, String, String);
    // Each stack of each group, summarized on what its group counts (the group's one
    // decision, `Group::counted`), with its load named in those units.
    let summaries = |cells: &[CellRecord]| -> Vec<(Key, String, Counted, StackSummary)> {
        groups(cells)
            .iter()
            .flat_map(|g| {
                g.stacks.iter().map(|s| {
                    let key = (g.workload.clone(), load_key(&g.load), s.stack.clone());
                    (key, g.load_label(), g.counted, summarize(s, g.counted))
                })
            })
            .collect()
    };
    let old = summaries(old);
    let new = summaries(new);
    let new_at: HashMap<&Key, usize> = new.iter().enumerate().map(|(i, n)| (&n.0, i)).collect();
    let old_keys: HashMap<&Key, ()> = old.iter().map(|o| (&o.0, ())).collect();

    type Pair<'s> = (&'s Key, &'s str, Counted, Option<&'s StackSummary>, Option<&'s StackSummary>);
    let mut pairs: Vec<Pair<'_>> = old
        .iter()
        .map(|(k, label, counted, s)| {
            (k, label.as_str(), *counted, Some(s), new_at.get(k).map(|&i| &new[i].3))
        })
        .collect();
    pairs.extend(
        new.iter()
            .filter(|(k, ..)| !old_keys.contains_key(k))
            .map(|(k, label, counted, s)| (k, label.as_str(), *counted, None, Some(s))),
    );
    let mut out = Vec::new();
    for (key, label, counted, a, b) in pairs {
        for measure in Measure::ALL {
            let values = |s: Option<&StackSummary>| {
                s.map(|s| s.figure(measure).values.clone()).unwrap_or_default()
            };
            let (va, vb) = (values(a), values(b));
            let ci = |s: Option<&StackSummary>| s.and_then(|s| s.figure(measure).ci);
            let (old_ci, new_ci) = (ci(a), ci(b));
            let test = mann_whitney_u(&va, &vb);
            let change = match (old_ci, new_ci) {
                (Some(o), Some(n)) if o.median != 0.0 => Some(n.median / o.median - 1.0),
                _ => None,
            };
            let flags = |s: Option<&StackSummary>| s.map(|s| s.flags.clone()).unwrap_or_default();
            out.push(RunDelta {
                workload: key.0.clone(),
                load_label: label.to_owned(),
                stack: key.2.clone(),
                measure,
                counted,
                old: old_ci,
                new: new_ci,
                change,
                significant: test.is_some_and(|t| t.significant(ALPHA)),
                underpowered: !va.is_empty()
                    && !vb.is_empty()
                    && min_p_value(va.len(), vb.len()) > ALPHA,
                test,
                old_flags: flags(a),
                new_flags: flags(b),
            });
        }
    }
    out
}

/// `loadlab compare`'s table: one section per measure and per what groups count (the req/s
/// of request workloads, the views/s of view workloads...: as benchstat gives each unit its
/// own table), benchstat's columns, a `!` beside a figure a trust flag touches and `*` beside
/// a median whose ± is the range because there were too few repetitions for an interval. The
/// flags follow the tables, as benchstat's notes do: one block per run and workload (at its
/// load), each flag once, however many of the tables' figures it touches.
pub fn compare_table(
    old_name: &str,
    old: &[CellRecord],
    new_name: &str,
    new: &[CellRecord],
) -> String {
    let deltas = compare_runs(old, new);
    let mut out = String::new();
    let mut notes = Notes::default();
    // What the groups count, in the order the runs first name them.
    let mut kinds: Vec<Counted> = Vec::new();
    for d in &deltas {
        if !kinds.contains(&d.counted) {
            kinds.push(d.counted);
        }
    }
    // A kind's three tables together, as its verdict's columns are.
    let sections = kinds.iter().flat_map(|&c| Measure::ALL.into_iter().map(move |m| (m, c)));
    for (measure, counted) in sections {
        let mut t = Table::new(vec![
            counted.name(measure).to_owned(),
            old_name.to_owned(),
            new_name.to_owned(),
            "vs base".to_owned(),
        ]);
        for d in deltas.iter().filter(|d| d.measure == measure && d.counted == counted) {
            let name = format!("{} · {} · {}", d.workload, d.load_label, d.stack);
            let old = median_pm(measure, d.old, &d.old_flags, &mut notes);
            let new = median_pm(measure, d.new, &d.new_flags, &mut notes);
            let n = |ci: Option<MedianCi>| ci.map_or(0, |c| c.n);
            let change = match (d.change, d.test) {
                (Some(c), Some(t)) => {
                    let p = format!("({} n={}+{})", format::p_value(t.p_value), t.n1, t.n2);
                    if d.significant {
                        format!("{} {p}", format::delta(c))
                    } else {
                        if d.underpowered {
                            notes.underpowered = true;
                        }
                        format!("~ {p}")
                    }
                }
                _ => format!("(n={}+{})", n(d.old), n(d.new)),
            };
            t.row(vec![name, old, new, change]);
        }
        if !out.is_empty() {
            out.push('\n');
        }
        out.push_str(&t.render());
    }
    notes.append(&mut out);
    // Every table marked the same flags: they are listed once, here, by run and workload.
    flag_blocks(&mut out, old_name, &deltas, |d| &d.old_flags);
    flag_blocks(&mut out, new_name, &deltas, |d| &d.new_flags);
    out
}

/// One run's flags in `compare`: a block per workload and load, headed by the run's name, each
/// flag once in plan order.
fn flag_blocks(
    out: &mut String,
    run: &str,
    deltas: &[RunDelta],
    flags_of: impl Fn(&RunDelta) -> &[CellFlag],
) {
    let mut blocks: Vec<(String, Vec<&CellFlag>)> = Vec::new();
    for d in deltas {
        let flags = flags_of(d);
        if flags.is_empty() {
            continue;
        }
        let head = format!("{run} · {} · {}", d.workload, d.load_label);
        let at = match blocks.iter().position(|(h, _)| *h == head) {
            Some(i) => i,
            None => {
                blocks.push((head, Vec::new()));
                blocks.len() - 1
            }
        };
        let block = &mut blocks[at].1;
        for f in flags {
            if !block.contains(&f) {
                block.push(f);
            }
        }
    }
    for (head, mut flags) in blocks {
        flags.sort_by(|a, b| (a.ordinal, a.flag.as_str()).cmp(&(b.ordinal, b.flag.as_str())));
        let _ = writeln!(out, "\n{head}");
        for f in flags {
            let _ = writeln!(out, "  ! {}", flag_line(f));
        }
    }
}

/// "nginx, repetition 2: errors (12 connreset)".
fn flag_line(f: &CellFlag) -> String {
    let detail = if f.detail.is_empty() { String::new() } else { format!(" ({})", f.detail) };
    format!("{}, repetition {}: {}{detail}", f.stack, format::repetition(f.repetition), f.flag)
}

/// The verdict as the terminal summary of `loadlab run`: per workload and load, each stack's
/// medians, then the winner line and the warnings.
pub fn verdict_table(verdicts: &[GroupVerdict]) -> String {
    let mut out = String::new();
    let mut notes = Notes::default();
    for (i, g) in verdicts.iter().enumerate() {
        if i > 0 {
            out.push('\n');
        }
        let _ = writeln!(out, "{} · {}", g.workload, g.load_label);
        let mut header = vec!["  stack".to_owned()];
        header.extend(Measure::ALL.iter().map(|m| g.counted.name(*m).to_owned()));
        header.push("limited by".to_owned());
        let mut t = Table::new(header);
        for s in &g.stacks {
            let mut row = vec![format!("  {}", s.stack)];
            for m in Measure::ALL {
                let f = s.figure(m);
                row.push(median_pm(m, f.ci, &f.flags, &mut notes));
            }
            row.push(match s.limits.first() {
                Some(l) if l.repetitions.len() == s.repetitions => l.name.clone(),
                Some(l) => format!("{} ({}/{})", l.name, l.repetitions.len(), s.repetitions),
                None => "—".to_owned(),
            });
            t.row(row);
        }
        out.push_str(&t.render());
        for s in &g.stacks {
            for l in s.limits.iter().filter(|l| l.limit != loadlab_store::Limit::Offered) {
                let _ = writeln!(out, "  · {}: {}", s.stack, l.sentence(s.repetitions));
            }
        }
        for (s, v) in g.stacks.iter().filter_map(|s| Some((s, s.views.as_ref()?))) {
            let _ = writeln!(out, "  views {}: {}", s.stack, v.line());
        }
        for (s, v) in g.stacks.iter().filter_map(|s| Some((s, s.visits.as_ref()?))) {
            out.push_str(&visit_steps(&s.stack, v));
        }
        for (s, v) in g.stacks.iter().filter_map(|s| Some((s, s.slo.as_ref()?))) {
            let _ =
                writeln!(out, "  {} {}: {}", if v.passed { "✓" } else { "✗" }, s.stack, v.line());
        }
        if let Some(line) = headline(g) {
            let _ = writeln!(out, "  → {line}");
        }
        if g.warnings.iter().any(|w| matches!(w, Warning::Underpowered { .. })) {
            notes.underpowered = true;
        }
        for line in warning_lines(&g.warnings) {
            let _ = writeln!(out, "  ! {}", line.text);
        }
        let requests = g.request_rows();
        if !requests.is_empty() {
            let mut header = vec!["  request".to_owned(), "stack".to_owned()];
            header.extend(crate::requests::COLUMNS.map(str::to_owned));
            let mut t = Table::new(header);
            for (stack, r) in requests {
                let mut row = vec![format!("  {}", r.request()), stack.to_owned()];
                row.extend(r.shown());
                t.row(row);
            }
            out.push_str(&t.render());
        }
    }
    notes.append(&mut out);
    // Last, as the line a CI log is read for.
    if let Some(line) = crate::gate::summary(&crate::gate::gates(verdicts)) {
        let _ = writeln!(out, "\n{line}");
    }
    out
}

/// A visit workload's line on one stack, then its step table (a failed step marked `✗`).
fn visit_steps(stack: &str, v: &crate::visits::VisitFigures) -> String {
    let mut out = format!("  visits {stack}: {}\n", v.line());
    let mut header = vec!["    step".to_owned()];
    header.extend(crate::visits::COLUMNS.map(str::to_owned));
    let mut t = Table::new(header);
    for s in &v.steps {
        let mut row = vec![format!("    {}", s.label())];
        row.extend(s.shown());
        t.row(row);
    }
    out.push_str(&t.render());
    out
}

/// "nginx: 1.99× the req/s of apache (95% CI 1.90–2.08), p=0.001", or the `~` form.
pub fn headline(g: &GroupVerdict) -> Option<String> {
    let c = g.headline()?;
    let how = comparison_phrase(c.measure, g.counted);
    let ratio = c.ratio.map_or("?".to_owned(), |r| {
        let what = if r.has_ci { "95% CI" } else { "range" };
        let bounds = format::ratio_bounds(r.lo, r.hi);
        format!("{} {how} {} ({what} {bounds})", format::ratio(r.ratio), c.worse)
    });
    let p = c.test.map_or(String::new(), |t| format!(", {}", format::p_value(t.p_value)));
    Some(match (&g.winner, &g.not_the_servers) {
        (Some(w), _) => format!("{w} wins: {ratio}{p}"),
        (None, Some(why)) => {
            format!("~ no verdict on the servers: {why} ({} has {ratio}{p})", c.better)
        }
        (None, None) => format!("~ no significant winner: {} has {ratio}{p}", c.better),
    })
}

/// How a ratio of `measure` of what a group counted reads between two stack names: "2.0× the
/// req/s of", "3.1× lower p99 than", "1.2× the views/s of", "8.3× lower load p99 than".
pub fn comparison_phrase(measure: Measure, counted: Counted) -> String {
    match measure {
        Measure::Rps => format!("the {} of", counted.name(measure)),
        Measure::P50 | Measure::P99 => format!("lower {} than", counted.name(measure)),
    }
}

/// "1,005 ± 1%", with `*` when ± is a range and `!` when a flag touches the figure.
fn median_pm(
    measure: Measure,
    ci: Option<MedianCi>,
    flags: &[CellFlag],
    notes: &mut Notes,
) -> String {
    let Some(ci) = ci else { return "—".to_owned() };
    let value = match measure {
        Measure::Rps => format::count(ci.median),
        Measure::P50 | Measure::P99 => format::micros(ci.median),
    };
    let spread = (ci.hi / ci.median - 1.0).max(1.0 - ci.lo / ci.median);
    let mut s = match ci.relative_half_width() {
        Some(w) => format!("{value} ± {}", format::percent(w)),
        None if spread.is_finite() => format!("{value} ± {}", format::percent(spread)),
        None => format!("{value} ± ∞"),
    };
    if !ci.has_ci {
        s.push('*');
        notes.range = true;
    }
    if !flags.is_empty() {
        s.push('!');
    }
    s
}

/// Footnotes collected while a table is built.
#[derive(Default)]
struct Notes {
    range: bool,
    underpowered: bool,
}

impl Notes {
    fn append(self, out: &mut String) {
        if self.range {
            out.push_str(
                "* fewer than 6 repetitions: ± is the range, not a 95% confidence interval\n",
            );
        }
        if self.underpowered {
            let n = loadlab_stats::mann_whitney::min_samples_for_significance(ALPHA);
            let _ = writeln!(
                out,
                "~ with these repetition counts no difference can reach significance: need >= \
                 {n} repetitions per side at α = {ALPHA}"
            );
        }
    }
}

/// Columns padded to their widest cell (counting characters, not bytes: µ and ± are two bytes).
struct Table {
    rows: Vec<Vec<String>>,
}

impl Table {
    fn new(header: Vec<String>) -> Table {
        Table { rows: vec![header] }
    }

    fn row(&mut self, row: Vec<String>) {
        self.rows.push(row);
    }

    fn render(&self) -> String {
        let cols = self.rows.iter().map(Vec::len).max().unwrap_or(0);
        let widths: Vec<usize> = (0..cols)
            .map(|i| {
                self.rows
                    .iter()
                    .filter_map(|r| r.get(i))
                    .map(|c| c.chars().count())
                    .max()
                    .unwrap_or(0)
            })
            .collect();
        let mut out = String::new();
        for r in &self.rows {
            let mut line = String::new();
            for (i, cell) in r.iter().enumerate() {
                if i > 0 {
                    line.push_str("  ");
                }
                line.push_str(cell);
                let pad = widths[i] - cell.chars().count();
                line.push_str(&" ".repeat(pad));
            }
            out.push_str(line.trim_end());
            out.push('\n');
        }
        out
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::testcell::{flagged, reps};
    use crate::verdict::verdicts;
    use loadlab_store::Flag;

    const OLD: [f64; 7] = [1_010.0, 990.0, 1_005.0, 1_020.0, 1_000.0, 995.0, 1_015.0];
    const NEW: [f64; 7] = [1_210.0, 1_190.0, 1_205.0, 1_220.0, 1_200.0, 1_195.0, 1_215.0];

    #[test]
    fn compare_reads_like_benchstat() {
        let old = reps("nginx", "static", 50, &OLD);
        let mut new = reps("nginx", "static", 50, &NEW);
        new.extend(reps("apache", "static", 50, &OLD[..3]));
        let deltas = compare_runs(&old, &new);
        let rps = &deltas[0];
        assert_eq!((rps.stack.as_str(), rps.measure), ("nginx", Measure::Rps));
        assert!((rps.change.unwrap() - (1_205.0 / 1_005.0 - 1.0)).abs() < 1e-12);
        assert!(rps.significant);
        // Only in the new run: listed after, with nothing to compare.
        let apache = deltas.iter().find(|d| d.stack == "apache").unwrap();
        assert!(apache.old.is_none() && apache.change.is_none() && !apache.significant);

        let table = compare_table("run 3", &old, "run 5", &new);
        let first = table.lines().nth(1).unwrap();
        assert!(first.starts_with("static · closed, 50 conn, 10 s · nginx"), "{table}");
        assert!(first.contains("1,005 ± 1%"), "{table}");
        assert!(first.contains("1,205 ± 1%"), "{table}");
        assert!(first.contains("+19.9% (p=0.001 n=7+7)"), "{table}");
        assert!(table.contains("—"), "{table}");
        assert!(table.contains("n=0+3"), "{table}");
    }

    #[test]
    fn a_regression_is_a_significant_change_for_the_worse() {
        let (slow, fast) = (reps("nginx", "static", 50, &OLD), reps("nginx", "static", 50, &NEW));
        let rps = |old: &[CellRecord], new: &[CellRecord]| {
            compare_runs(old, new).into_iter().find(|d| d.measure == Measure::Rps).unwrap()
        };
        // Fewer req/s, significantly: a regression; more: not one.
        assert!(rps(&fast, &slow).regressed());
        assert!(!rps(&slow, &fast).regressed());
        // Fewer req/s that three repetitions cannot tell from noise: not one either.
        let d = rps(&fast[..3], &slow[..3]);
        assert!(d.change.unwrap() < 0.0 && !d.significant && !d.regressed());
        // For latency, higher is worse.
        let p99 = |rep: u32, v: f64| {
            let mut load = loadlab_store::LoadSpec::new(loadlab_store::LoadModel::Closed);
            load.connections = Some(50);
            crate::testcell::with_load(
                "nginx",
                "static",
                load,
                rep,
                &[(loadlab_store::metric::P99_US, v)],
            )
        };
        let low: Vec<_> = OLD.iter().enumerate().map(|(i, v)| p99(i as u32, *v)).collect();
        let high: Vec<_> = NEW.iter().enumerate().map(|(i, v)| p99(i as u32, *v)).collect();
        let d = compare_runs(&low, &high).into_iter().find(|d| d.measure == Measure::P99).unwrap();
        assert!(d.regressed(), "{:?}", d.change);
    }

    #[test]
    fn compare_marks_noise_ranges_and_flags() {
        let old = reps("nginx", "static", 50, &OLD[..3]);
        let mut new = reps("nginx", "static", 50, &NEW[..3]);
        new[1] = flagged(new[1].clone(), Flag::Errors, "12 connreset");
        let table = compare_table("a", &old, "b", &new);
        assert!(table.contains("~ (p=0.100 n=3+3)"), "{table}");
        assert!(table.contains("1,205 ± 1%*!"), "{table}");
        assert!(table.contains("* fewer than 6 repetitions"), "{table}");
        assert!(table.contains("need >= 4 repetitions per side"), "{table}");
        assert!(table.ends_with("\nb · static · closed, 50 conn, 10 s\n  ! nginx, repetition 2: errors (12 connreset)\n"), "{table}");
    }

    /// After the tables, a block per run and workload lists each flag once, not once per
    /// table (req/s, p50, p99) without its run or workload.
    #[test]
    fn compare_lists_each_flag_once_under_its_run_and_workload() {
        let mut old = reps("nginx", "static", 50, &OLD[..3]);
        old.extend(reps("nginx", "php", 50, &OLD[..3]));
        old[4] = flagged(old[4].clone(), Flag::ClientStarved, "waited 40%");
        let mut new = reps("nginx", "static", 50, &NEW[..3]);
        new.extend(reps("nginx", "php", 50, &NEW[..3]));
        new[1] = flagged(new[1].clone(), Flag::Errors, "12 connreset");
        new[2] = flagged(new[2].clone(), Flag::NetworkBound, "lo at 95%");
        let table = compare_table("run 1", &old, "run 2", &new);
        for line in [
            "  ! nginx, repetition 2: errors (12 connreset)",
            "  ! nginx, repetition 3: network_bound (lo at 95%)",
            "  ! nginx, repetition 2: client_starved (waited 40%)",
        ] {
            assert_eq!(table.matches(line).count(), 1, "{line:?} once in {table}");
        }
        let blocks: Vec<&str> = table.split("\n\n").skip(3).collect();
        assert_eq!(
            blocks,
            [
                "run 1 · php · closed, 50 conn, 10 s\n  \
                 ! nginx, repetition 2: client_starved (waited 40%)",
                "run 2 · static · closed, 50 conn, 10 s\n  \
                 ! nginx, repetition 2: errors (12 connreset)\n  \
                 ! nginx, repetition 3: network_bound (lo at 95%)\n",
            ],
            "{table}"
        );
    }

    /// `compare` puts a view or visit group in tables of its own measures, named as its verdict
    /// names them, with its own figures, not under req/s, p50 and p99: here opcache's views/s
    /// double while its requests' rate stays.
    #[test]
    fn compare_heads_and_fills_view_and_visit_groups_with_their_own_figures() {
        use crate::testcell::{view_cells, visit_cells};
        use loadlab_store::metric;
        let old = view_cells(7, &[3.0]);
        let mut new = old.clone();
        for c in new.iter_mut().filter(|c| c.stack == "opcache") {
            c.metrics.insert(metric::VIEWS_RPS.into(), 5.0);
        }
        let table = compare_table("run 1", &old, "run 2", &new);
        let heads: Vec<&str> = table
            .lines()
            .filter(|l| l.ends_with("vs base"))
            .map(|l| l.split("  ").next().unwrap())
            .collect();
        assert_eq!(heads, ["views/s", "load p50", "load p99"], "{table}");
        assert!(!table.contains("req/s"), "{table}");
        let opcache = table.lines().find(|l| l.contains("· opcache")).unwrap();
        assert!(opcache.starts_with("front page views · open, 3 views/s · opcache"), "{table}");
        assert!(opcache.contains("2.50 ± 0%") && opcache.contains("5 ± 0%"), "{opcache}");
        assert!(opcache.contains("+100.0% (p=0.001 n=7+7)"), "{opcache}");
        // The gate and the JSON name the measure so too.
        let back = compare_runs(&new, &old);
        let d = back.iter().find(|d| d.regressed()).expect("fewer views/s: a regression");
        assert_eq!(
            d.regression_line(),
            "opcache front page views open, 3 views/s views/s: -50.0% (p=0.001)"
        );
        let json = serde_json::to_value(d).unwrap();
        assert_eq!(
            (json["counted"].as_str(), json["measure"].as_str()),
            (Some("views"), Some("rps"))
        );

        // Visits beside requests: each kind in its own tables.
        let cells = visit_cells(3);
        let table = compare_table("a", &cells, "b", &cells);
        let sections: Vec<&str> = table.split("\n\n").collect();
        let head = |s: &str| s.split("  ").next().unwrap().to_owned();
        let heads: Vec<String> = sections.iter().take(6).map(|s| head(s)).collect();
        assert_eq!(heads, ["visits/s", "visit p50", "visit p99", "req/s", "p50", "p99"], "{table}");
        assert!(
            sections[0].contains("search · closed, 2 visitors, 10 s · opcache  1.50 ± 0%*"),
            "{table}"
        );
        assert!(!sections[0].contains("hello.txt") && !sections[3].contains("search"), "{table}");
        assert!(sections[2].contains("2.90 s"), "{table}");
    }

    /// A URL list workload's requests: a table under the group, request by request, each
    /// stack's medians under it, worded as `bench --urls`'s table.
    #[test]
    fn a_url_lists_requests_are_a_table_under_their_group() {
        use loadlab_store::metric;
        let mut cells = reps("nginx", "shop", 2, &[1_000.0]);
        cells.extend(reps("apache", "shop", 2, &[900.0]));
        for (c, (done, p99)) in cells.iter_mut().zip([(700.0, 2_500.0), (650.0, 3_100.0)]) {
            for (path, share) in [("/b", 0.75), ("/a", 0.25)] {
                let figures = [done * share, 0.0, 1.0, 800.0, p99];
                for (what, v) in metric::URL_FIGURES.iter().zip(figures) {
                    c.metrics.insert(metric::url("GET", path, what), v);
                }
            }
        }
        let text = verdict_table(&verdicts(&cells));
        let table: Vec<&str> =
            text.lines().skip_while(|l| !l.starts_with("  request")).take(5).collect();
        assert_eq!(
            table,
            [
                "  request  stack   completed  failed  non-2xx  p50     p99",
                "  GET /a   nginx   175        0       1        800 µs  2.50 ms",
                "  GET /a   apache  163        0       1        800 µs  3.10 ms",
                "  GET /b   nginx   525        0       1        800 µs  2.50 ms",
                "  GET /b   apache  488        0       1        800 µs  3.10 ms",
            ],
            "{text}"
        );
    }

    #[test]
    fn verdict_table_names_the_winner() {
        let mut cells = reps("nginx", "static", 50, &NEW);
        cells.extend(reps("apache", "static", 50, &OLD));
        let text = verdict_table(&verdicts(&cells));
        assert!(text.starts_with("static · closed, 50 conn, 10 s\n"), "{text}");
        assert!(text.contains("nginx wins: 1.20× the req/s of apache (95% CI"), "{text}");
        assert!(text.contains("p=0.001"), "{text}");
    }
}
