//! The report as one self-contained HTML file: inline CSS and SVG, no script, no external URL,
//! so it opens offline, from a mail attachment, years later.
//!
//! Every piece of text that came from outside loadlab (stack and workload names, knobs, flag
//! details, server versions, captured configs) goes through [`Esc`]; the only markup written
//! raw is loadlab's own and the SVG that plotters produced (which escapes its text itself).
//!
//! This module is the page's frame: its head, header, chart sections and footer. The sections
//! of tables are their own modules: `verdict.rs` (the verdict table), `cells.rs` (each cell's
//! detail) and `environment.rs` (the machines, links and configs).

mod cells;
mod environment;
mod profiles;
mod verdict;

use std::fmt::{self, Write};

use loadlab_store::{CellRecord, ConfigRecord, Run, RunProfiles};

use crate::charts;
use crate::format;
use crate::plots::{plots, Palette, Plot};
use crate::verdict::verdicts;

use cells::cells_section;
use environment::{environment, unsampled_externals};
use profiles::profiles_section;
use verdict::verdict_table;

const CSS: &str = include_str!("../../assets/report.css");

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

/// The whole report of `run`: verdict, charts, the profiled cells' flame graphs, per-cell
/// detail, environment and configs.
pub fn render_html(
    run: &Run,
    cells: &[CellRecord],
    configs: &[ConfigRecord],
    profiles: &RunProfiles,
) -> String {
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
    let throughput: Vec<&Plot> = plots.throughput.iter().chain(&plots.latency).collect();
    let unsampled = unsampled_externals(cells);
    let sections = [
        ChartSection {
            id: "throughput",
            nav: "Throughput &amp; latency",
            title: "Throughput and latency",
            lead: "Requests per second and latency as connections grow, and each stack's whole \
                   latency distribution from the merged HDR histograms; a view or visit \
                   workload's views or visits per second and page-load time or visit duration.",
            plots: throughput,
            notes: &[],
        },
        ChartSection {
            id: "sweeps",
            nav: "Sweeps",
            title: "Rate sweeps",
            lead: "Offered against achieved rate, with p99 latency and errors: where each stack \
                   stops keeping up.",
            plots: plots.sweeps.iter().collect(),
            notes: &[],
        },
        ChartSection {
            id: "seconds",
            nav: "Load over time",
            title: "Load over time",
            lead: "Cells whose load changed over time (a ramp, stages), second by second: the \
                   requests achieved (against those offered, under a schedule), and p50 and p99 \
                   latency.",
            plots: seconds.iter().collect(),
            notes: &[],
        },
        ChartSection {
            id: "resources",
            nav: "CPU &amp; memory",
            title: "Server CPU and memory",
            lead: "What each tier of each stack used while it was measured, from the lab's \
                   sampler.",
            plots: plots.resources.iter().collect(),
            notes: &unsampled,
        },
    ];
    let profiled = profiles_section(cells, profiles);
    header(o, run, cells, &sections, !profiled.is_empty());
    let _ = writeln!(o, "<section id=\"verdict\">\n<h2>Verdict</h2>");
    verdict_table(o, &verdicts, &palette);
    let _ = writeln!(o, "</section>");
    for section in &sections {
        plot_section(o, section);
    }
    o.push_str(&profiled);
    cells_section(o, cells);
    environment(o, run, cells, configs);
    footer(o, run);
    out
}

fn footer(o: &mut String, run: &Run) {
    let _ = writeln!(
        o,
        "<footer>Written by loadlab {}. Medians over repetitions with 95% confidence intervals \
         from order statistics; differences tested with the two-sided Mann-Whitney U test at \
         α = 0.05.</footer>\n</main>\n</body>\n</html>",
        Esc(&run.environment.loadlab_version)
    );
}

/// A section of charts, with the notes on stacks it has no chart of.
struct ChartSection<'a> {
    id: &'static str,
    /// Its link in the header's nav (HTML).
    nav: &'static str,
    title: &'static str,
    lead: &'static str,
    plots: Vec<&'a Plot>,
    notes: &'a [String],
}

impl ChartSection<'_> {
    /// A section with neither a chart nor a note is left out, and so is its link.
    fn is_empty(&self) -> bool {
        self.plots.is_empty() && self.notes.is_empty()
    }
}

fn plot_section(o: &mut String, s: &ChartSection<'_>) {
    if s.is_empty() {
        return;
    }
    let _ = writeln!(
        o,
        "<section id=\"{}\">\n<h2>{}</h2>\n<p class=\"lead\">{}</p>\n<div class=\"grid\">",
        s.id, s.title, s.lead
    );
    for p in &s.plots {
        chart(o, p);
    }
    let _ = writeln!(o, "</div>");
    for stack in s.notes {
        let _ = writeln!(
            o,
            "<p class=\"note\">{}: not sampled: external target (loadlab samples a server it \
             did not start only when the suite names its processes: pids, pidfile or unit).</p>",
            Esc(stack)
        );
    }
    let _ = writeln!(o, "</section>");
}

fn header(
    o: &mut String,
    run: &Run,
    cells: &[CellRecord],
    sections: &[ChartSection<'_>],
    profiled: bool,
) {
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
    // A link for each section the page has: one to a section left out would lead nowhere.
    let _ = write!(o, "<nav><a href=\"#verdict\">Verdict</a>");
    for s in sections.iter().filter(|s| !s.is_empty()) {
        let _ = write!(o, "<a href=\"#{}\">{}</a>", s.id, s.nav);
    }
    if profiled {
        let _ = write!(o, "<a href=\"#profiles\">Where the CPU went</a>");
    }
    let _ = writeln!(
        o,
        "<a href=\"#cells\">Cells</a><a href=\"#environment\">Environment &amp; configs</a>\
         </nav>\n</header>"
    );
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

#[cfg(test)]
mod tests;
