//! The report as one self-contained HTML file: inline CSS and SVG, no script, no external URL,
//! so it opens offline, from a mail attachment, years later.
//!
//! Every piece of text that came from outside loadlab (stack and workload names, knobs, flag
//! details, server versions, captured configs) goes through [`Esc`]; the only markup written
//! raw is loadlab's own and the SVG that plotters produced (which escapes its text itself).

use std::fmt::{self, Write};

use loadlab_store::{CellRecord, ConfigRecord, Run};

use crate::charts;
use crate::counted::Counted;
use crate::detail;
use crate::format;
use crate::group::{knobs_label, load_label_as, stack_labels};
use crate::plots::{plots, Palette, Plot};
use crate::verdict::{verdicts, warning_lines, CellFlag, Figure, GroupVerdict, Measure, Warning};

const CSS: &str = include_str!("../assets/report.css");

/// A captured config longer than this is cut in the report (the store keeps it whole): one
/// distribution php.ini would otherwise outweigh every chart.
const MAX_CONFIG_BYTES: usize = 64 * 1024;

/// Text made safe for HTML element content and quoted attribute values.
pub struct Esc<'a>(pub &'a str);

impl fmt::Display for Esc<'_> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let mut rest = self.0;
        while let Some(i) = rest.find(['&', '<', '>', '"', '\'']) {
            f.write_str(&rest[..i])?;
            f.write_str(match rest.as_bytes()[i] {
                b'&' => "&amp;",
                b'<' => "&lt;",
                b'>' => "&gt;",
                b'"' => "&quot;",
                _ => "&#39;",
            })?;
            rest = &rest[i + 1..];
        }
        f.write_str(rest)
    }
}

/// The whole report of `run`: verdict, charts, per-cell detail, environment and configs.
pub fn render_html(run: &Run, cells: &[CellRecord], configs: &[ConfigRecord]) -> String {
    let verdicts = verdicts(cells);
    let palette = Palette::new(cells);
    let plots = plots(run, cells, &palette);
    let seconds = crate::per_second::plots(cells, &palette);
    let mut out = String::with_capacity(256 * 1024);
    // Writing into a String cannot fail: the fmt::Results below are always Ok.
    let o = &mut out;
    let _ = write!(
        o,
        "<!DOCTYPE html>\n<html lang=\"en\">\n<head>\n<meta charset=\"utf-8\">\n\
         <meta name=\"viewport\" content=\"width=device-width, initial-scale=1\">\n\
         <title>loadlab · {} · run {}</title>\n<style>\n{CSS}</style>\n</head>\n<body>\n<main>\n",
        Esc(&run.suite),
        run.id
    );
    header(o, run, cells);
    let _ = writeln!(o, "<section id=\"verdict\">\n<h2>Verdict</h2>");
    verdict_table(o, &verdicts, &palette);
    let _ = writeln!(o, "</section>");
    let throughput: Vec<&Plot> = plots.throughput.iter().chain(&plots.latency).collect();
    let sections: [(&str, &str, &str, Vec<&Plot>); 4] = [
        (
            "throughput",
            "Throughput and latency",
            "Requests per second and latency as connections grow, and each stack's whole \
             latency distribution from the merged HDR histograms; a view or visit workload's \
             views or visits per second and page-load time or visit duration.",
            throughput,
        ),
        (
            "sweeps",
            "Rate sweeps",
            "Offered against achieved rate, with p99 latency and errors: where each stack stops \
             keeping up.",
            plots.sweeps.iter().collect(),
        ),
        (
            "seconds",
            "Load over time",
            "Cells whose load changed over time (a ramp, stages), second by second: offered \
             against achieved requests, and p50 and p99 latency.",
            seconds.iter().collect(),
        ),
        (
            "resources",
            "Server CPU and memory",
            "What each tier of each stack used while it was measured, from the lab's sampler.",
            plots.resources.iter().collect(),
        ),
    ];
    let unsampled = unsampled_externals(cells);
    for (id, title, lead, section) in sections {
        let notes: &[String] = if id == "resources" { &unsampled } else { &[] };
        plot_section(o, [id, title, lead], &section, notes);
    }
    cells_section(o, cells);
    environment(o, run, cells, configs);
    let _ = writeln!(
        o,
        "<footer>Written by loadlab {}. Medians over repetitions with 95% confidence intervals \
         from order statistics; differences tested with the two-sided Mann-Whitney U test at \
         α = 0.05.</footer>\n</main>\n</body>\n</html>",
        Esc(&run.environment.loadlab_version)
    );
    out
}

/// A section of charts (`[id, title, lead]`), with the notes on stacks it has no chart of;
/// nothing when it has neither.
fn plot_section(o: &mut String, [id, title, lead]: [&str; 3], plots: &[&Plot], notes: &[String]) {
    if plots.is_empty() && notes.is_empty() {
        return;
    }
    let _ = writeln!(
        o,
        "<section id=\"{id}\">\n<h2>{title}</h2>\n<p class=\"lead\">{lead}</p>\n\
         <div class=\"grid\">"
    );
    for p in plots {
        chart(o, p);
    }
    let _ = writeln!(o, "</div>");
    for stack in notes {
        let _ = writeln!(
            o,
            "<p class=\"note\">{}: not sampled: external target (loadlab samples a server it \
             did not start only when the suite names its processes: pids, pidfile or unit).</p>",
            Esc(stack)
        );
    }
    let _ = writeln!(o, "</section>");
}

fn header(o: &mut String, run: &Run, cells: &[CellRecord]) {
    let took = run
        .finished_at
        .and_then(|f| f.duration_since(run.started_at).ok())
        .map_or(String::new(), |d| format!(" · took {}", format::seconds(d.as_secs_f64())));
    let _ = writeln!(
        o,
        "<header>\n<h1><span class=\"brand\">loadlab ·</span> {}</h1>\n\
         <p class=\"meta\">run {} · {} · started {}{took} · {} cells · {} ({} CPUs)</p>",
        Esc(&run.suite),
        run.id,
        run.status,
        format::utc(run.started_at),
        cells.len(),
        Esc(&run.environment.hostname),
        run.environment.cpu_count
    );
    // A failed run's report is partial (often empty): why comes first.
    if let Some(why) = &run.reason {
        let _ = writeln!(
            o,
            "<p class=\"banner\"><span class=\"flag\">✗</span> This run failed: {}. The {} \
             cells it finished are shown.</p>",
            Esc(why),
            cells.len()
        );
    }
    let flagged = cells.iter().filter(|c| !c.flags.is_empty()).count();
    if flagged > 0 {
        let _ = writeln!(
            o,
            "<p class=\"banner\"><span class=\"flag\">⚠</span> {flagged} of {} cells carry a trust \
             flag; every figure they touch is marked ⚠ (hover for why) and ringed in the charts.</p>",
            cells.len()
        );
    }
    let _ = writeln!(
        o,
        "<nav><a href=\"#verdict\">Verdict</a><a href=\"#throughput\">Throughput &amp; latency</a>\
         <a href=\"#sweeps\">Sweeps</a>\
         <a href=\"#resources\">CPU &amp; memory</a><a href=\"#cells\">Cells</a>\
         <a href=\"#environment\">Environment &amp; configs</a></nav>\n</header>"
    );
}

fn verdict_table(o: &mut String, verdicts: &[GroupVerdict], palette: &Palette) {
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
        let _ = write!(
            o,
            "<td class=\"stack\"><span class=\"swatch-inline\" style=\"background:{color}\"></span>{}</td>",
            Esc(&s.stack)
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

fn chart(o: &mut String, p: &Plot) {
    let _ = write!(
        o,
        "<figure class=\"chart\" data-chart>\n<figcaption><h3>{}</h3>\n<ul class=\"legend\">",
        Esc(&p.title)
    );
    for l in &p.legend {
        let _ = write!(
            o,
            "<li><span class=\"swatch{}\" style=\"border-color:{}\"></span>{}</li>",
            if l.dashed { " dashed" } else { "" },
            l.color.hex(),
            Esc(&l.label)
        );
    }
    let _ = writeln!(o, "</ul></figcaption>");
    match charts::svg(&p.chart) {
        Ok(svg) => o.push_str(&svg),
        Err(e) => {
            let _ = write!(o, "<p class=\"chart-error\">{}</p>", Esc(&e.to_string()));
        }
    }
    let _ = writeln!(o, "<p class=\"note\">{}</p>\n</figure>", Esc(&p.note));
}

fn cells_section(o: &mut String, cells: &[CellRecord]) {
    let _ = writeln!(
        o,
        "<section id=\"cells\">\n<h2>Cells</h2>\n<p class=\"lead\">Every measurement in the order \
         it ran. Open one for its figures in ApacheBench's and httperf's layouts.</p>"
    );
    let labels = stack_labels(cells);
    let mut workloads: Vec<&str> = Vec::new();
    for c in cells {
        if !workloads.contains(&c.workload.as_str()) {
            workloads.push(&c.workload);
        }
    }
    for w in workloads {
        let mine: Vec<(&CellRecord, &String)> =
            cells.iter().zip(&labels).filter(|(c, _)| c.workload == w).collect();
        let flagged = mine.iter().filter(|(c, _)| !c.flags.is_empty()).count();
        let flagged = if flagged > 0 {
            format!(" · <span class=\"flag\">⚠</span> {flagged} flagged")
        } else {
            String::new()
        };
        let _ = writeln!(
            o,
            "<details class=\"workload\"><summary><strong>{}</strong> · {} cells{flagged}</summary>\
             <div class=\"body\">",
            Esc(w),
            mine.len()
        );
        for (c, stack) in mine {
            cell_detail(o, c, stack);
        }
        let _ = writeln!(o, "</div></details>");
    }
    let _ = writeln!(o, "</section>");
}

/// One cell: its figures in ab's and httperf's layouts, its flags and knobs.
fn cell_detail(o: &mut String, c: &CellRecord, stack: &str) {
    // A view or visit cell by its views' or visits' figures, as its group is compared.
    let counted = Counted::of(c);
    let v = |m: Measure| counted.value(m, c).map_or("—".to_owned(), |v| counted.show(m, v));
    let flag = if c.flags.is_empty() { "" } else { " <span class=\"flag\">⚠</span>" };
    let _ = writeln!(
        o,
        "<details><summary>#{} · {} · {} · rep {} — {} · {} {} · {} {}{flag}</summary>\
             \n<div class=\"body\">",
        c.ordinal,
        Esc(stack),
        Esc(&load_label_as(&c.load, counted)),
        format::repetition(c.repetition),
        v(Measure::Rps),
        counted.name(Measure::P50),
        v(Measure::P50),
        counted.name(Measure::P99),
        v(Measure::P99)
    );
    if !c.flags.is_empty() {
        let _ = write!(o, "<ul class=\"warnings\">");
        for f in &c.flags {
            let _ = write!(o, "<li>⚠ {}: {}</li>", Esc(f.flag.as_str()), Esc(&f.detail));
        }
        let _ = writeln!(o, "</ul>");
    }
    let _ = writeln!(
            o,
            "<p class=\"pm\">started {} · knobs {}</p>\n<div class=\"cols\"><div><h4>ab</h4><pre>{}</pre></div>\
             <div><h4>httperf</h4><pre>{}</pre></div></div>\n</div></details>",
            format::utc(c.started_at),
            Esc(&knobs_label(&c.knobs)),
            Esc(&detail::ab(c)),
            Esc(&detail::httperf(c))
        );
}

/// The external targets (stacks stored with a `url`, not the lab's) none of whose cells has
/// a sample, in the order they first appear.
fn unsampled_externals(cells: &[CellRecord]) -> Vec<String> {
    let mut out: Vec<String> = Vec::new();
    for c in cells.iter().filter(|c| is_external(c)) {
        let sampled = cells.iter().any(|o| o.stack == c.stack && !o.samples.is_empty());
        if !sampled && !out.contains(&c.stack) {
            out.push(c.stack.clone());
        }
    }
    out
}

/// Whether the cell measured a server of the user's (an external target): its stored
/// settings are its URL, not the lab's knobs.
fn is_external(c: &CellRecord) -> bool {
    c.knobs.contains_key("url")
}

/// Which link each lab stack was measured across: its `net` knob (with what carried its delay,
/// `net_delay`, when the lab recorded it), or loopback. One line per profile, naming the stacks
/// behind it. External targets are described by their identity.
fn networks(cells: &[CellRecord]) -> Vec<(String, Vec<String>)> {
    let mut by_profile: std::collections::BTreeMap<String, Vec<String>> = Default::default();
    for c in cells.iter().filter(|c| !is_external(c)) {
        let knob = |k: &str| c.knobs.get(k).and_then(|v| v.as_str());
        let profile = match (knob("net"), knob("net_delay"), knob("host")) {
            (None, _, None) => "loopback (no link in between)".to_string(),
            (None, _, Some(host)) => format!("the path to {host}"),
            (Some(net), None, None) => format!("--net {net}"),
            (Some(net), None, Some(host)) => format!("--net {net} to {host}"),
            (Some(net), Some(path), None) => format!("--net {net} (delay by {path})"),
            (Some(net), Some(path), Some(host)) => {
                format!("--net {net} to {host} (delay by {path})")
            }
        };
        let stacks = by_profile.entry(profile).or_default();
        if !stacks.contains(&c.stack) {
            stacks.push(c.stack.clone());
        }
    }
    by_profile.into_iter().collect()
}

/// A lab host that ran stacks of the run, and the path to it from the client.
fn server_host(o: &mut String, h: &ConfigRecord) {
    let fields = h.fields();
    let get = |k: &str| fields.iter().find(|(key, _)| *key == k).map_or("?", |(_, v)| *v);
    let _ = write!(
        o,
        "<dt>server host</dt><dd>{} ({}): kernel {}, CPU {}, memory {}; ran {}</dd>\
         <dt>path</dt><dd>client NIC {} → server NIC {}; idle RTT {}</dd>",
        Esc(&h.name),
        Esc(get("hostname")),
        Esc(get("kernel")),
        Esc(get("cpu")),
        Esc(get("memory")),
        Esc(get("runs")),
        Esc(get("client nic")),
        Esc(get("server nic")),
        Esc(get("idle rtt"))
    );
}

fn environment(o: &mut String, run: &Run, cells: &[CellRecord], configs: &[ConfigRecord]) {
    let e = &run.environment;
    let hosts: Vec<&ConfigRecord> =
        configs.iter().filter(|c| c.kind == ConfigRecord::HOST).collect();
    // With stacks on lab hosts this machine ran the client (and any stack of its own).
    let this = if hosts.is_empty() { "host" } else { "client host" };
    let _ = writeln!(
        o,
        "<section id=\"environment\">\n<h2>Environment &amp; configs</h2>\n<dl class=\"env\">\
         <dt>{this}</dt><dd>{}</dd><dt>kernel</dt><dd>{}</dd><dt>CPU</dt><dd>{} × {}</dd>\
         <dt>loadlab</dt><dd>{}</dd><dt>started</dt><dd>{}</dd>",
        Esc(&e.hostname),
        Esc(&e.kernel),
        e.cpu_count,
        Esc(&e.cpu_model),
        Esc(&e.loadlab_version),
        format::utc(run.started_at)
    );
    if let Some(f) = run.finished_at {
        let _ = write!(o, "<dt>finished</dt><dd>{} ({})</dd>", format::utc(f), run.status);
    }
    for h in &hosts {
        server_host(o, h);
    }
    for (what, stacks) in networks(cells) {
        let _ = write!(o, "<dt>network</dt><dd>{}: {}</dd>", Esc(&what), Esc(&stacks.join(", ")));
    }
    // A server of the user's: who answered at its URL, as verified before its cells.
    for c in configs.iter().filter(|c| c.kind == ConfigRecord::IDENTITY) {
        let fields = c.fields();
        let get = |k: &str| fields.iter().find(|(key, _)| *key == k).map_or("?", |(_, v)| *v);
        let _ = write!(
            o,
            "<dt>external</dt><dd>{}: {} at {}, Server {}, TLS {}; {} (not started by \
             loadlab)</dd>",
            Esc(&c.stack),
            Esc(get("url")),
            Esc(get("address")),
            Esc(get("server")),
            Esc(get("tls")),
            Esc(get("sampling"))
        );
    }
    let _ = writeln!(o, "</dl>");
    if !e.packages.is_empty() {
        let _ = write!(o, "<details><summary>{} packages</summary><div class=\"body\"><table><thead><tr><th>package</th><th>version</th></tr></thead><tbody>", e.packages.len());
        for (name, version) in &e.packages {
            let _ = write!(o, "<tr><td>{}</td><td>{}</td></tr>", Esc(name), Esc(version));
        }
        let _ = writeln!(o, "</tbody></table></div></details>");
    }
    for c in configs {
        let mut content = c.content.as_str();
        let mut cut = String::new();
        if content.len() > MAX_CONFIG_BYTES {
            let mut end = MAX_CONFIG_BYTES;
            while !content.is_char_boundary(end) {
                end -= 1;
            }
            cut = format!("\n… {} more bytes are in the store", content.len() - end);
            content = &content[..end];
        }
        let name = if c.name.is_empty() { String::new() } else { format!(" · {}", c.name) };
        let _ = writeln!(
            o,
            "<details><summary>{} · {} · {}{}</summary><div class=\"body\"><pre>{}{}</pre></div></details>",
            Esc(&c.stack),
            Esc(&c.tier),
            Esc(&c.kind),
            Esc(&name),
            Esc(content),
            Esc(&cut)
        );
    }
    let _ = writeln!(o, "</section>");
}

#[cfg(test)]
#[path = "html_tests.rs"]
mod tests;
