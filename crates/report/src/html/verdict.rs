//! The report's verdict table: per workload and load, each stack's medians with their
//! intervals, what limited it and the winner, with the rows a group carries under it (SLO
//! verdicts, warnings, a URL list's requests, a view workload's views, a visit workload's
//! steps) and the method's footnotes.

use std::fmt::Write;

use crate::counted::Measured;
use crate::format;
use crate::plots::Palette;
use crate::verdict::{warning_lines, CellFlag, Figure, GroupVerdict, Measure, Warning};

use super::Esc;

pub(super) fn verdict_table(o: &mut String, verdicts: &[GroupVerdict], palette: &Palette) {
    if verdicts.is_empty() {
        let _ = writeln!(o, "<p>No cell of this run has finished yet.</p>");
        return;
    }
    let _ = writeln!(
        o,
        "<p class=\"lead\">Per workload and load: each stack's median over repetitions (± the \
         95% CI's half-width), and the winner on the deciding measure with the ratio of medians, \
         its 95% CI and the Mann-Whitney p-value. <span class=\"tilde\">~</span> means the \
         difference could be noise.</p>\n<table class=\"verdict\">\n<thead><tr><th>workload</th>\
         <th>load</th><th>stack</th><th class=\"num\">req/s</th><th class=\"num\">p50</th>\
         <th class=\"num\">p99</th><th>limited by</th><th>verdict</th></tr></thead>\n<tbody>"
    );
    for g in verdicts {
        counted_head(o, g);
        stack_rows(o, g, palette);
        group_notes(o, g);
        requests_table(o, g);
        views_rows(o, g);
        for (s, v) in g.stacks.iter().filter_map(|s| Some((s, s.visits.as_ref()?))) {
            visits_rows(o, &s.stack, v);
        }
    }
    let _ = writeln!(o, "</tbody>\n</table>");
    footnotes(o, verdicts);
}

/// Before a view or visit workload's rows, the heading of its own figures (`views/s`, `load
/// p50`...), which its columns hold instead of the requests'.
fn counted_head(o: &mut String, g: &GroupVerdict) {
    if g.counted == crate::counted::Counted::Requests {
        return;
    }
    let _ = write!(o, "<tr class=\"counted-head\"><td colspan=\"3\"></td>");
    for m in Measure::ALL {
        let _ = write!(o, "<th class=\"num\">{}</th>", Esc(g.counted.name(m)));
    }
    let _ = writeln!(o, "<td colspan=\"2\"></td></tr>");
}

/// A group's rows of the verdict table: one per stack, the workload, load and verdict cells
/// spanning them.
fn stack_rows(o: &mut String, g: &GroupVerdict, palette: &Palette) {
    let rows = g.stacks.len().max(1);
    for (i, s) in g.stacks.iter().enumerate() {
        let _ = write!(o, "<tr{}>", if i == 0 { " class=\"group-start\"" } else { "" });
        if i == 0 {
            let _ = write!(
                o,
                "<td rowspan=\"{rows}\"><strong>{}</strong></td><td rowspan=\"{rows}\">{}</td>",
                Esc(&g.workload),
                Esc(&g.load_label)
            );
        }
        let color = palette.stack(&s.stack).hex();
        // The name stays on one line with its swatch; the knobs that tell two instances of
        // one stack apart (`nginx {gzip=on, workers=4}`) wrap, so the table fits the page.
        let (name, knobs) = s.stack.split_at(s.stack.find(" {").unwrap_or(s.stack.len()));
        let _ = write!(
            o,
            "<td class=\"stack\"><span class=\"name\"><span class=\"swatch-inline\" \
             style=\"background:{color}\"></span>{}</span>{}</td>",
            Esc(name),
            Esc(knobs)
        );
        for m in Measure::ALL {
            let _ =
                write!(o, "<td class=\"num\">{}</td>", figure_cell(s.figure(m), m == g.primary));
        }
        let _ = write!(o, "<td class=\"limit\">{}</td>", limit_cell(s));
        if i == 0 {
            let _ = write!(o, "<td class=\"verdict\" rowspan=\"{rows}\">{}</td>", verdict_cell(g));
        }
        let _ = writeln!(o, "</tr>");
    }
}

/// Under a group's rows: each stack's SLO verdict, then the group's warnings.
fn group_notes(o: &mut String, g: &GroupVerdict) {
    let judged: Vec<_> = g.stacks.iter().filter_map(|s| Some((s, s.slo.as_ref()?))).collect();
    if !judged.is_empty() {
        let _ = write!(o, "<tr class=\"slo-row\"><td colspan=\"8\"><ul class=\"slo\">");
        for (s, v) in judged {
            let (class, mark) = if v.passed { ("pass", "✓") } else { ("fail", "✗") };
            let _ = write!(
                o,
                "<li class=\"{class}\">{mark} {}: {}</li>",
                Esc(&s.stack),
                Esc(&v.line())
            );
        }
        let _ = writeln!(o, "</ul></td></tr>");
    }
    let lines = warning_lines(&g.warnings);
    if !lines.is_empty() {
        let _ = write!(o, "<tr class=\"warn-row\"><td colspan=\"8\"><ul class=\"warnings\">");
        for w in lines {
            let mark = if w.trust { "⚠ " } else { "" };
            let _ = write!(o, "<li>{mark}{}</li>", Esc(&w.text));
        }
        let _ = writeln!(o, "</ul></td></tr>");
    }
}

/// Under the table: the run's SLO gate, and the method's footnotes said once.
fn footnotes(o: &mut String, verdicts: &[GroupVerdict]) {
    let gates = crate::gate::gates(verdicts);
    if let Some(line) = crate::gate::summary(&gates) {
        let class = if gates.iter().all(|g| g.verdict.passed) { "pass" } else { "fail" };
        let _ = writeln!(o, "<p class=\"gate {class}\">{}</p>", Esc(&line));
    }
    let warnings = || verdicts.iter().flat_map(|g| &g.warnings);
    if warnings().any(|w| matches!(w, Warning::NoMedianCi { .. })) {
        let _ = writeln!(
            o,
            "<p class=\"footnote\">* Fewer than 6 repetitions: ± is the range of the \
             repetitions, not a 95% confidence interval.</p>"
        );
    }
    if warnings().any(|w| matches!(w, Warning::Underpowered { .. })) {
        let n = loadlab_stats::mann_whitney::min_samples_for_significance(crate::verdict::ALPHA);
        let _ = writeln!(
            o,
            "<p class=\"footnote\"><span class=\"tilde\">~</span> with too few repetitions no \
             difference can reach significance, however large: the test needs at least {n} \
             repetitions per stack at α = 0.05. Run the suite with more repetitions to decide.</p>"
        );
    }
}

/// A URL list workload's requests, each with its figures on each stack, in a row of the
/// verdict table under its group; nothing for other workloads.
fn requests_table(o: &mut String, g: &GroupVerdict) {
    let rows = g.request_rows();
    if rows.is_empty() {
        return;
    }
    let _ = write!(
        o,
        "<tr class=\"requests-row\"><td colspan=\"8\"><table class=\"requests\"><thead><tr>\
         <th>request</th><th>stack</th>"
    );
    for c in crate::requests::COLUMNS {
        let _ = write!(o, "<th class=\"num\">{c}</th>");
    }
    let _ = write!(o, "</tr></thead><tbody>");
    for (stack, r) in rows {
        let full = format!("{} {}", r.method, r.path);
        let _ = write!(
            o,
            "<tr><td title=\"{}\">{}</td><td>{}</td>",
            Esc(&full),
            Esc(&r.request()),
            Esc(stack)
        );
        for v in r.shown() {
            let _ = write!(o, "<td class=\"num\">{}</td>", Esc(&v));
        }
        let _ = write!(o, "</tr>");
    }
    let _ = writeln!(o, "</tbody></table></td></tr>");
}

/// A view workload's views/s and page-load percentiles, a line per stack under its group;
/// nothing for other workloads.
fn views_rows(o: &mut String, g: &GroupVerdict) {
    for (s, v) in g.stacks.iter().filter_map(|s| Some((s, s.views.as_ref()?))) {
        let _ = writeln!(
            o,
            "<tr class=\"views-row\"><td colspan=\"8\">page views on {}: {}</td></tr>",
            Esc(&s.stack),
            Esc(&v.line())
        );
    }
}

/// The HTML of one stack's visits, a row of the verdict table under its group: the line, then
/// the step table, a failed step's row marked `failed-step`.
fn visits_rows(o: &mut String, stack: &str, v: &crate::visits::VisitFigures) {
    let _ = write!(
        o,
        "<tr class=\"visits-row\"><td colspan=\"8\">visits on {}: {}<table class=\"requests \
         steps\"><thead><tr><th>step</th>",
        Esc(stack),
        Esc(&v.line())
    );
    for c in crate::visits::COLUMNS {
        let _ = write!(o, "<th class=\"num\">{c}</th>");
    }
    let _ = write!(o, "</tr></thead><tbody>");
    for s in &v.steps {
        let class = if s.failed_total() > 0 { " class=\"failed-step\"" } else { "" };
        let _ = write!(o, "<tr{class}><td>{}</td>", Esc(&s.label()));
        for c in s.shown() {
            let _ = write!(o, "<td class=\"num\">{}</td>", Esc(&c));
        }
        let _ = write!(o, "</tr>");
    }
    let _ = writeln!(o, "</tbody></table></td></tr>");
}

/// What limited a stack's cells, the evidence in a tooltip: "php-fpm pool", "client (2/5)".
fn limit_cell(s: &crate::verdict::StackSummary) -> String {
    let Some(first) = s.limits.first() else { return "—".to_owned() };
    let count = if first.repetitions.len() == s.repetitions {
        String::new()
    } else {
        format!(" ({}/{})", first.repetitions.len(), s.repetitions)
    };
    let why: Vec<String> = s.limits.iter().map(|l| l.sentence(s.repetitions)).collect();
    format!("<span title=\"{}\">{}{count}</span>", Esc(&why.join("\n")), Esc(&first.name))
}

/// "1,005 ± 1%" with the interval in a tooltip, a ⚠ when a flag touches it.
fn figure_cell(f: &Figure, primary: bool) -> String {
    let Some(ci) = f.ci else { return "—".to_owned() };
    let value = match f.measure {
        Measure::Rps => format::count(ci.median),
        Measure::P50 | Measure::P99 => format::micros(ci.median),
    };
    let value = if primary { format!("<strong>{value}</strong>") } else { value };
    let (what, show) = if ci.has_ci { ("95% CI", true) } else { ("range", ci.n > 1) };
    let bounds = match f.measure {
        Measure::Rps => format!("{}–{}", format::count(ci.lo), format::count(ci.hi)),
        _ => format!("{}–{}", format::micros(ci.lo), format::micros(ci.hi)),
    };
    let pm = match ci.relative_half_width() {
        Some(w) if show => format!(" <span class=\"pm\">± {}</span>", format::percent(w)),
        _ if show && ci.median != 0.0 => {
            let spread = (ci.hi / ci.median - 1.0).max(1.0 - ci.lo / ci.median);
            format!(" <span class=\"pm\">± {}*</span>", format::percent(spread))
        }
        _ => String::new(),
    };
    let tip = format!("{what} {bounds}, n={}", ci.n);
    let flag = flag_mark(&f.flags);
    format!("<span title=\"{}\">{value}{pm}</span>{flag}", Esc(&tip))
}

/// A ⚠ whose tooltip lists the flags, or nothing.
fn flag_mark(flags: &[CellFlag]) -> String {
    if flags.is_empty() {
        return String::new();
    }
    let why: Vec<String> = flags
        .iter()
        .map(|f| {
            let detail =
                if f.detail.is_empty() { String::new() } else { format!(": {}", f.detail) };
            format!("{} rep {}: {}{detail}", f.stack, format::repetition(f.repetition), f.flag)
        })
        .collect();
    format!(" <span class=\"flag\" title=\"{}\">⚠</span>", Esc(&why.join("\n")))
}

fn verdict_cell(g: &GroupVerdict) -> String {
    let Some(c) = g.headline() else {
        return "<span class=\"pm\">one stack: nothing to compare</span>".to_owned();
    };
    let how = crate::text::comparison_phrase(c.measure, g.counted);
    let ratio = c.ratio.map_or("?".to_owned(), |r| format::ratio(r.ratio));
    let ci = c.ratio.map_or(String::new(), |r| {
        let what = if r.has_ci { "95% CI" } else { "range" };
        format!("{what} {}", format::ratio_bounds(r.lo, r.hi))
    });
    let p = c.test.map_or(String::new(), |t| format!(" · {}", format::p_value(t.p_value)));
    let flag = flag_mark(&c.flags);
    let mut cell = match &g.winner {
        Some(w) => format!(
            "<span class=\"winner\">{}</span> {ratio} {how} {}{flag}",
            Esc(w),
            Esc(&c.worse)
        ),
        None => format!(
            "<span class=\"tilde\" title=\"not significant at α = 0.05\">~</span> {} {ratio} {how} \
             {}{flag}",
            Esc(&c.better),
            Esc(&c.worse)
        ),
    };
    let _ = write!(cell, "<span class=\"ci\">{ci}{p}</span>");
    if let Some(why) = &g.not_the_servers {
        let _ = write!(cell, "<span class=\"ci\">no verdict on the servers: {}</span>", Esc(why));
    }
    if c.underpowered {
        let n =
            |stack: &str| g.stacks.iter().find(|s| s.stack == stack).map_or(0, |s| s.repetitions);
        let _ = write!(
            cell,
            "<span class=\"ci\">{}+{} repetitions can never reach p ≤ 0.05</span>",
            n(&c.better),
            n(&c.worse)
        );
    }
    // The other measures in one line each, so a req/s winner with a worse tail is visible.
    for other in Measure::ALL.into_iter().filter(|m| *m != g.primary) {
        let Some(c) = g.comparisons_on(other).min_by(|a, b| {
            let r = |c: &&crate::verdict::Comparison| c.ratio.map_or(f64::INFINITY, |r| r.ratio);
            r(a).total_cmp(&r(b))
        }) else {
            continue;
        };
        let sig = if c.significant { String::new() } else { "~ ".to_owned() };
        let ratio = c.ratio.map_or("?".to_owned(), |r| format::ratio(r.ratio));
        let how = crate::text::comparison_phrase(other, g.counted);
        let _ = write!(
            cell,
            "<span class=\"ci\">{sig}{} {ratio} {how} {}</span>",
            Esc(&c.better),
            Esc(&c.worse)
        );
    }
    cell
}
