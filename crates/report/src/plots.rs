//! What the report plots, from the cells: throughput and latency by concurrency, latency
//! percentiles, a rate sweep's offered against achieved rate with latency and errors, and each
//! stack's server CPU and memory per tier over the run. `charts.rs` draws them.
//!
//! A view or visit workload is plotted on its own figures, as its verdict compares it
//! ([`crate::counted`], decided once per group): views/s or visits/s, page-load time or visit
//! duration, and every axis says so. Their percentiles are the stored p50 and p99 (no
//! histogram of page loads or visits is kept), the requests' stay in the cells' detail.
//!
//! A stack has one colour in every chart (its order of first appearance in the run), a tier
//! one colour in every resource chart. A point that a trust flag touches is ringed in orange,
//! so the warning sits on the number it concerns, as in the verdict table.

use std::collections::BTreeMap;

use loadlab_stats::knee::{self, Breach, Criteria, StepPoint};
use loadlab_stats::summary::median;
use loadlab_stats::Recorder;
use loadlab_store::{metric, CellRecord, Limit, LoadModel, Run};

use crate::charts::{
    wants_log, Chart, Color, Line, Panel, Ticks, XAxis, REFERENCE, STACK_COLORS, TIER_COLORS,
};
use crate::counted::{Counted, Measured};
use crate::format;
use crate::group::{families, groups, stack_labels, Family, Group, StackCells};
use crate::verdict::{summarize, Measure, StackSummary};

/// A chart with what the page shows around it.
#[derive(Debug, Clone)]
pub struct Plot {
    pub title: String,
    /// One or two sentences on how to read it.
    pub note: String,
    pub legend: Vec<LegendEntry>,
    pub chart: Chart,
}

/// A legend item, drawn in HTML beside the chart (the page wraps it, the SVG never overlaps it).
#[derive(Debug, Clone, PartialEq)]
pub struct LegendEntry {
    pub label: String,
    pub color: Color,
    pub dashed: bool,
}

/// Colours by stack and by tier, fixed for the whole report.
#[derive(Debug, Clone)]
pub struct Palette {
    stacks: Vec<String>,
    tiers: Vec<String>,
}

impl Palette {
    pub fn new(cells: &[CellRecord]) -> Palette {
        let mut stacks: Vec<String> = Vec::new();
        for label in stack_labels(cells) {
            if !stacks.contains(&label) {
                stacks.push(label);
            }
        }
        let mut tiers: Vec<String> =
            cells.iter().flat_map(|c| c.samples.iter().map(|s| s.tier.clone())).collect();
        tiers.sort();
        tiers.dedup();
        Palette { stacks, tiers }
    }

    pub fn stack(&self, stack: &str) -> Color {
        let i = self.stacks.iter().position(|s| s == stack).unwrap_or(0);
        STACK_COLORS[i % STACK_COLORS.len()]
    }

    pub fn tier(&self, tier: &str) -> Color {
        let i = self.tiers.iter().position(|t| t == tier).unwrap_or(0);
        TIER_COLORS[i % TIER_COLORS.len()]
    }

    /// Stacks in report order.
    pub fn stacks(&self) -> &[String] {
        &self.stacks
    }
}

/// Every plot of a run, by section.
#[derive(Debug, Clone, Default)]
pub struct Plots {
    pub throughput: Vec<Plot>,
    pub latency: Vec<Plot>,
    pub sweeps: Vec<Plot>,
    pub resources: Vec<Plot>,
}

const WIDTH: u32 = 640;

pub fn plots(run: &Run, cells: &[CellRecord], palette: &Palette) -> Plots {
    let groups = groups(cells);
    let mut out = Plots::default();
    for f in families(&groups) {
        let multi = f.points.len() > 1;
        match f.model {
            LoadModel::Closed if multi => {
                out.throughput.push(by_concurrency(&f, palette));
                out.latency.push(spectrum(f.points[f.points.len() - 1].1, palette));
            }
            LoadModel::Open | LoadModel::Session if multi => out.sweeps.push(sweep(&f, palette)),
            _ => out.latency.extend(f.points.iter().map(|(_, g)| spectrum(g, palette))),
        }
    }
    let labels = stack_labels(cells);
    for stack in palette.stacks() {
        let mine: Vec<&CellRecord> =
            cells.iter().zip(&labels).filter(|(_, l)| *l == stack).map(|(c, _)| c).collect();
        out.resources.extend(resources(run, stack, &mine, palette));
    }
    out
}

fn stack_entries(stacks: &[&str], palette: &Palette) -> Vec<LegendEntry> {
    stacks
        .iter()
        .map(|s| LegendEntry { label: (*s).to_owned(), color: palette.stack(s), dashed: false })
        .collect()
}

/// Stack labels of a family, in order of first appearance.
fn family_stacks<'f>(f: &'f Family<'_, '_>) -> Vec<&'f str> {
    let mut out: Vec<&str> = Vec::new();
    for (_, g) in &f.points {
        for s in &g.stacks {
            if !out.contains(&s.stack.as_str()) {
                out.push(&s.stack);
            }
        }
    }
    out
}

/// Each level's summary of `stack`, where it ran: (x, summary).
fn level_summaries(
    f: &Family<'_, '_>,
    stack: &str,
    x: impl Fn(usize) -> f64,
) -> Vec<(f64, StackSummary)> {
    f.points
        .iter()
        .enumerate()
        .filter_map(|(i, (_, g))| {
            g.stacks.iter().find(|s| s.stack == stack).map(|s| (x(i), summarize(s, f.counted)))
        })
        .collect()
}

/// A line of `measure`'s medians, with intervals and flag rings; values scaled by `scale`.
fn median_line(color: Color, points: &[(f64, StackSummary)], measure: Measure, scale: f64) -> Line {
    let mut line = Line::new(color, Vec::new());
    for (x, s) in points {
        let f = s.figure(measure);
        let Some(ci) = f.ci else { continue };
        line.pieces[0].push((*x, ci.median * scale));
        if ci.lo < ci.hi {
            line.intervals.push((*x, ci.lo * scale, ci.hi * scale));
        }
        if !f.trusted() {
            line.flagged.push((*x, ci.median * scale));
        }
    }
    line
}

fn latency_panel(lines: Vec<Line>, desc: &str) -> Panel {
    let ys = lines.iter().flat_map(|l| l.pieces.iter().flatten().map(|p| p.1));
    let (lo, hi) = ys.fold((f64::INFINITY, 0.0f64), |(lo, hi), y| (lo.min(y), hi.max(y)));
    Panel { y_desc: desc.to_owned(), y_log: wants_log(lo, hi), from_zero: true, lines }
}

fn by_concurrency(f: &Family<'_, '_>, palette: &Palette) -> Plot {
    let stacks = family_stacks(f);
    let labels = f.points.iter().map(|(level, _)| format::count(*level)).collect();
    let (mut rps, mut lat) = (Vec::new(), Vec::new());
    for stack in &stacks {
        let color = palette.stack(stack);
        let points = level_summaries(f, stack, |i| i as f64);
        rps.push(median_line(color, &points, Measure::Rps, 1.0));
        lat.push(median_line(color, &points, Measure::P99, 1e-3));
        let mut p50 = median_line(color, &points, Measure::P50, 1e-3);
        p50.dashed = true;
        p50.intervals.clear();
        lat.push(p50);
    }
    let mut legend = stack_entries(&stacks, palette);
    legend.push(LegendEntry { label: "p50 (dashed)".into(), color: REFERENCE, dashed: true });
    let what = match f.counted {
        Counted::Requests => "throughput and latency by concurrency".to_owned(),
        c => format!("{} and {} by {}", c.rate_unit(), c.latency_name(), f.level_name()),
    };
    Plot {
        title: format!("{} · {}: {what}", f.workload, f.label),
        note: "Medians over repetitions; whiskers are the 95% CI of the median (the range when \
               fewer than 6 repetitions). Lower panel: p99 solid, p50 dashed."
            .into(),
        legend,
        chart: Chart {
            title: f.workload.clone(),
            x_desc: f.level_name().into(),
            x: XAxis::Categories(labels),
            panels: vec![
                Panel { y_desc: rate_desc(f.counted), y_log: false, from_zero: true, lines: rps },
                latency_panel(lat, &format!("{} (ms)", f.counted.latency_name())),
            ],
            width: WIDTH,
            panel_height: 230,
        },
    }
}

/// The rate axis of what a group counts: `requests/s`, `views/s`, `visits/s`.
fn rate_desc(counted: Counted) -> String {
    match counted {
        Counted::Requests => "requests/s".to_owned(),
        c => c.rate_unit().to_owned(),
    }
}

/// The stored percentiles of what a group counts (percentile, metric), for a curve without a
/// histogram: a request's p50, p90 and p99; a view's or visit's p50 and p99, all it stores.
fn stored_percentiles(counted: Counted) -> Vec<(f64, &'static str)> {
    match counted {
        Counted::Requests => {
            vec![(50.0, metric::P50_US), (90.0, metric::P90_US), (99.0, metric::P99_US)]
        }
        c => vec![(50.0, c.metric(Measure::P50)), (99.0, c.metric(Measure::P99))],
    }
}

/// The distribution of each stack's latency at one load: all repetitions' histograms merged
/// (HDR histograms merge exactly), plotted against the percentile on a scale of nines. A view
/// or visit group's page-load time or visit duration, of which only p50 and p99 are stored.
fn spectrum(g: &Group<'_>, palette: &Palette) -> Plot {
    let stacks: Vec<&str> = g.stacks.iter().map(|s| s.stack.as_str()).collect();
    let mut lines = Vec::new();
    for s in &g.stacks {
        let mut merged = Recorder::new();
        // The "latency" histogram is the requests'; a view's or visit's figures are not in it.
        for c in s.cells.iter().filter(|_| g.counted == Counted::Requests) {
            if let Some(r) = c.histograms.latency.as_ref() {
                merged.merge(r);
            }
        }
        let color = palette.stack(&s.stack);
        let mut line = if merged.is_empty() {
            // No histogram stored: the summary percentiles are drawn as points, each its own
            // piece. Nothing is known between them, and a line from p50 to p99 would read as
            // a distribution that rises evenly.
            let pieces = stored_percentiles(g.counted)
                .iter()
                .filter_map(|(p, name)| {
                    let vs: Vec<f64> =
                        s.cells.iter().filter_map(|c| c.metrics.get(*name).copied()).collect();
                    median(&vs).map(|v| vec![(nines(*p), v / 1e3)])
                })
                .collect();
            Line { pieces, ..Line::new(color, Vec::new()) }
        } else {
            // Up to the percentile the sample can resolve: with n values, 1 - 1/n.
            let top = (merged.count() as f64).log10().clamp(1.0, 5.0);
            let steps = (top / 0.05).ceil() as usize;
            let points = (0..=steps)
                .map(|i| {
                    let x = (i as f64 * 0.05).min(top);
                    let p = 100.0 * (1.0 - 10f64.powf(-x));
                    (x, merged.percentile(p) as f64 / 1e3)
                })
                .collect();
            let mut line = Line::new(color, points);
            line.markers = false;
            line
        };
        if s.cells.iter().any(|c| !c.flags.is_empty()) {
            line.flagged = line.pieces.iter().flatten().last().copied().into_iter().collect();
        }
        lines.push(line);
    }
    let latency = g.counted.latency_name();
    let note = match g.counted {
        Counted::Requests => "All repetitions merged.".to_owned(),
        _ => format!(
            "The medians over repetitions of the {latency}'s stored p50 and p99: points, not \
             a curve, as nothing between them is stored."
        ),
    };
    Plot {
        title: format!("{} · {}: {latency} percentiles", g.workload, g.load_label()),
        note: format!("{note} The x axis stretches the tail: each step is one more nine."),
        legend: stack_entries(&stacks, palette),
        chart: Chart {
            title: g.workload.clone(),
            x_desc: "percentile".into(),
            x: XAxis::Numbers { ticks: Ticks::Nines, log: false },
            panels: vec![latency_panel(lines, &format!("{latency} (ms)"))],
            width: WIDTH,
            panel_height: 300,
        },
    }
}

fn nines(percentile: f64) -> f64 {
    -(1.0 - percentile / 100.0).log10()
}

/// The median over `cells` of what `f` reads from each.
fn median_of(cells: &[&CellRecord], f: impl Fn(&CellRecord) -> Option<f64>) -> Option<f64> {
    let vs: Vec<f64> = cells.iter().filter_map(|c| f(c)).filter(|v| v.is_finite()).collect();
    median(&vs)
}

/// The share of what `counted` counts that failed: failed visits of a visit workload; the
/// requests' otherwise (a view's failures are its requests', which its cells count).
fn failed_share(counted: Counted, c: &CellRecord) -> Option<f64> {
    if counted != Counted::Visits {
        return error_share(c);
    }
    let failed = c.metrics.get(metric::VISITS_FAILED).copied()?;
    let total = c.metrics.get(metric::VISITS).copied().unwrap_or(0.0) + failed;
    Some(if total > 0.0 { failed / total } else { 0.0 })
}

fn error_share(c: &CellRecord) -> Option<f64> {
    let failed = c.metrics.get(metric::FAILED).or_else(|| c.metrics.get(metric::ERRORS))?;
    let done = c.metrics.get(metric::COMPLETED).copied().unwrap_or(0.0);
    let total = done + failed;
    Some(if total > 0.0 { failed / total } else { 0.0 })
}

/// autobench's picture: offered rate on x, achieved rate against the diagonal, then p99 latency
/// and errors; the knee (the last rate sustained, `loadlab_stats::knee`) is ringed.
/// The offered request rate at each level of a sweep family: what the cells measured, else
/// the plan's rate (times calls per connection for sessions). A view or visit family's is its
/// level: its rate counts views or visits.
fn offered_rates(f: &Family<'_, '_>) -> Vec<f64> {
    if f.counted != Counted::Requests {
        return f.points.iter().map(|(level, _)| *level).collect();
    }
    f.points
        .iter()
        .map(|(level, g)| {
            let cells: Vec<&CellRecord> =
                g.stacks.iter().flat_map(|s| s.cells.iter().copied()).collect();
            let planned = level * g.load.calls_per_connection.unwrap_or(1) as f64;
            median_of(&cells, |c| c.metrics.get(metric::OFFERED_RPS).copied()).unwrap_or(planned)
        })
        .collect()
}

/// One stack at one offered rate `x` of what `counted` counts: medians over its repetitions,
/// and the step the knee is found from. Its client and network limits are the runner's stored
/// ones (crate::limit), not re-judged from the flags.
fn sweep_step(
    s: &StackCells<'_>,
    x: f64,
    counted: Counted,
) -> (Option<f64>, Option<f64>, bool, StepPoint) {
    let got = median_of(&s.cells, |c| match counted {
        Counted::Requests => {
            c.metrics.get(metric::ACHIEVED_RPS).or_else(|| c.metrics.get(metric::RPS)).copied()
        }
        _ => counted.value(Measure::Rps, c),
    });
    let lat = median_of(&s.cells, |c| counted.value(Measure::P99, c));
    let err = median_of(&s.cells, |c| failed_share(counted, c)).unwrap_or(0.0);
    let flagged = s.cells.iter().any(|c| !c.flags.is_empty());
    let limit_was =
        |l: Limit| s.cells.iter().any(|c| crate::limit::of(c).is_some_and(|x| x.limit == l));
    let point = StepPoint {
        offered_rps: x,
        achieved_rps: got.unwrap_or(0.0),
        error_ratio: err,
        p99_us: lat.unwrap_or(0.0) as u64,
        client_limited: limit_was(Limit::Client),
        network_bound: limit_was(Limit::Network),
        slo_breach: None,
    };
    (got, lat, flagged, point)
}

/// "nginx sustains 2,000 req/s (above it, errors appear)", the knee ringed on `achieved`;
/// the rate in what `counted` counts.
fn knee_sentence(
    stack: &str,
    steps: &[(f64, Option<f64>, StepPoint)],
    achieved: &mut Line,
    counted: Counted,
) -> String {
    let points: Vec<StepPoint> = steps.iter().map(|s| s.2).collect();
    let k = knee::find(&points, &Criteria::default());
    let Some(i) = k.last_good else { return format!("{stack} sustains none of the rates") };
    if let Some(v) = steps[i].1 {
        achieved.marked.push((steps[i].0, v));
    }
    let then =
        k.first_bad.map_or(String::new(), |(_, b)| format!(" (above it, {})", breach_name(b)));
    format!("{stack} sustains {} {}{then}", format::count(steps[i].0), counted.rate_unit())
}

fn sweep(f: &Family<'_, '_>, palette: &Palette) -> Plot {
    let stacks = family_stacks(f);
    let offered = offered_rates(f);
    let (mut achieved, mut p99, mut errors, mut knees) =
        (Vec::new(), Vec::new(), Vec::new(), Vec::new());
    let diagonal = Line {
        markers: false,
        dashed: true,
        ..Line::new(
            REFERENCE,
            vec![
                (offered[0], offered[0]),
                (offered[offered.len() - 1], offered[offered.len() - 1]),
            ],
        )
    };
    for stack in &stacks {
        let color = palette.stack(stack);
        let (mut a, mut l, mut e) =
            (Line::new(color, vec![]), Line::new(color, vec![]), Line::new(color, vec![]));
        let mut steps = Vec::new();
        for (i, (_, g)) in f.points.iter().enumerate() {
            let Some(s) = g.stacks.iter().find(|s| s.stack == *stack) else { continue };
            let x = offered[i];
            let (got, lat, flagged, point) = sweep_step(s, x, f.counted);
            if let Some(v) = got {
                a.pieces[0].push((x, v));
                if flagged {
                    a.flagged.push((x, v));
                }
            }
            if let Some(v) = lat {
                l.pieces[0].push((x, v / 1e3));
            }
            e.pieces[0].push((x, point.error_ratio * 100.0));
            steps.push((x, got, point));
        }
        knees.push(knee_sentence(stack, &steps, &mut a, f.counted));
        achieved.push(a);
        p99.push(l);
        errors.push(e);
    }
    // The diagonal last, over the stacks: where one keeps up, its line lies on the diagonal,
    // which drawn first would vanish under it; on top its dashes still show.
    achieved.push(diagonal);
    let mut legend = stack_entries(&stacks, palette);
    legend.push(LegendEntry { label: "achieved = offered".into(), color: REFERENCE, dashed: true });
    let [x_desc, achieved_desc, p99_desc, errors_desc] = sweep_axes(f);
    Plot {
        title: format!("{} · {}: offered against achieved rate", f.workload, f.label),
        note: format!(
            "Medians over repetitions; a large ring marks the knee, the highest rate sustained \
             (achieved ≥ 99% of offered, no errors): {}.",
            knees.join("; ")
        ),
        legend,
        chart: Chart {
            title: f.workload.clone(),
            x_desc,
            x: XAxis::Numbers { ticks: Ticks::Number, log: false },
            panels: vec![
                Panel { y_desc: achieved_desc, y_log: false, from_zero: true, lines: achieved },
                latency_panel(p99, &p99_desc),
                Panel { y_desc: errors_desc, y_log: false, from_zero: true, lines: errors },
            ],
            width: WIDTH,
            panel_height: 190,
        },
    }
}

/// A sweep's axes, in what its family counts: offered, achieved, p99 and failures.
fn sweep_axes(f: &Family<'_, '_>) -> [String; 4] {
    let c = f.counted;
    let unit = c.rate_unit();
    // A request sweep's x is requests even for sessions (offered_rates counts their calls).
    let x = if c == Counted::Requests { "offered rate (req/s)" } else { f.level_name() };
    let failed = match c {
        Counted::Requests => "errors (%)",
        Counted::Views => "request errors (%)",
        Counted::Visits => "failed visits (%)",
        Counted::Sessions => "failed sessions (%)",
    };
    let p99 = format!("p99 {} (ms)", c.latency_name());
    [x.to_owned(), format!("achieved ({unit})"), p99, failed.to_owned()]
}

fn breach_name(b: Breach) -> &'static str {
    match b {
        Breach::Throughput => "the achieved rate falls behind",
        Breach::Errors => "errors appear",
        Breach::Latency => "p99 exceeds the objective",
        Breach::ClientLimited => "the client was the limit",
        Breach::NetworkBound => "the network link was full",
    }
}

/// A tier's CPU as points (x from `at(t_ms)`, percent of one core). Each sample holds the CPU
/// time used since the one before (the first: since the cell started), so every sample is a
/// point, even a short cell's only one.
fn cpu_points(samples: &[&loadlab_store::Sample], at: impl Fn(u64) -> f64) -> Vec<(f64, f64)> {
    let mut points = Vec::new();
    let mut since = 0;
    for s in samples {
        let dt = s.t_ms.saturating_sub(since) as f64 / 1e3;
        if dt > 0.0 {
            points.push((at(s.t_ms), 100.0 * (s.cpu_user_s + s.cpu_sys_s) / dt));
        }
        since = s.t_ms;
    }
    points
}

/// The tiers' colours, and the whole machine's dashed reference.
fn tier_legend<'a>(tiers: impl Iterator<Item = &'a str>, palette: &Palette) -> Vec<LegendEntry> {
    let mut legend: Vec<LegendEntry> = tiers
        .map(|t| LegendEntry { label: t.to_owned(), color: palette.tier(t), dashed: false })
        .collect();
    legend.push(LegendEntry { label: "whole machine".into(), color: REFERENCE, dashed: true });
    legend
}

/// One stack's tiers over the run: CPU (percent of one core: each sample's CPU time over its
/// interval) and resident memory, with the whole machine's busy CPU for context.
/// `None` when the stack has no samples.
/// The cores a stack's tiers ran on, and where: its lab host's (the executor stores them with
/// each cell), else this machine's.
fn cores_of(run: &Run, cells: &[&CellRecord]) -> (u32, String) {
    let knob = |k: &str| cells.first().and_then(|c| c.knobs.get(k));
    match (knob("host_cpus").and_then(|v| v.as_u64()), knob("host")) {
        (Some(n), Some(host)) => (n as u32, format!("on {}", host.as_str().unwrap_or("its host"))),
        _ => (run.environment.cpu_count, "on this machine".to_string()),
    }
}

fn resources(run: &Run, stack: &str, cells: &[&CellRecord], palette: &Palette) -> Option<Plot> {
    if cells.iter().all(|c| c.samples.is_empty()) {
        return None;
    }
    let minutes = |c: &CellRecord, t_ms: u64| {
        let start = c.started_at.duration_since(run.started_at).unwrap_or_default();
        (start.as_secs_f64() + t_ms as f64 / 1e3) / 60.0
    };
    let (count, machine_name) = cores_of(run, cells);
    let cores = f64::from(count.max(1));
    let mut cpu: BTreeMap<&str, Line> = BTreeMap::new();
    let mut rss: BTreeMap<&str, Line> = BTreeMap::new();
    let mut machine = Line { dashed: true, markers: false, ..Line::new(REFERENCE, Vec::new()) };
    machine.pieces.clear();
    let mut ordered: Vec<&&CellRecord> = cells.iter().collect();
    ordered.sort_by_key(|c| c.started_at);
    for c in ordered {
        let mut by_tier: BTreeMap<&str, Vec<&loadlab_store::Sample>> = BTreeMap::new();
        for s in &c.samples {
            by_tier.entry(&s.tier).or_default().push(s);
        }
        let mut busy: BTreeMap<u64, f64> = BTreeMap::new();
        for (tier, samples) in by_tier {
            let new_line = || Line {
                markers: false,
                pieces: Vec::new(),
                ..Line::new(palette.tier(tier), Vec::new())
            };
            let cpu_piece = cpu_points(&samples, |t_ms| minutes(c, t_ms));
            let rss_piece = samples
                .iter()
                .map(|s| (minutes(c, s.t_ms), s.rss_bytes as f64 / 1_048_576.0))
                .collect();
            cpu.entry(tier).or_insert_with(new_line).pieces.push(cpu_piece);
            rss.entry(tier).or_insert_with(new_line).pieces.push(rss_piece);
            for s in samples {
                busy.insert(s.t_ms, s.machine_cpu);
            }
        }
        machine
            .pieces
            .push(busy.iter().map(|(t, b)| (minutes(c, *t), b * cores * 100.0)).collect());
    }
    let legend = tier_legend(cpu.keys().copied(), palette);
    let mut cpu_lines: Vec<Line> = cpu.into_values().collect();
    cpu_lines.push(machine);
    Some(Plot {
        title: format!("{stack}: server CPU and memory per tier"),
        note: format!(
            "Each cell of the stack in the order it ran; gaps are other stacks' turns. 100% is \
             one core ({count} {machine_name}).",
        ),
        legend,
        chart: Chart {
            title: stack.to_owned(),
            x_desc: "time since the run started (min)".into(),
            x: XAxis::Numbers { ticks: Ticks::Number, log: false },
            panels: vec![
                Panel {
                    y_desc: "CPU (% of one core)".into(),
                    y_log: false,
                    from_zero: true,
                    lines: cpu_lines,
                },
                Panel {
                    y_desc: "resident memory (MiB)".into(),
                    y_log: false,
                    from_zero: true,
                    lines: rss.into_values().collect(),
                },
            ],
            width: WIDTH,
            panel_height: 200,
        },
    })
}

#[cfg(test)]
mod tests {
    use loadlab_store::Sample;

    use super::*;
    use crate::testcell::{reps, run, view_cells};

    fn sample(tier: &str, t_ms: u64, user: f64, sys: f64) -> Sample {
        Sample {
            tier: tier.into(),
            t_ms,
            cpu_user_s: user,
            cpu_sys_s: sys,
            rss_bytes: 50 << 20,
            processes: 2,
            loadavg: 0.5,
            machine_cpu: 0.5,
        }
    }

    /// Each line's points, a piece after another.
    fn points(panel: &Panel) -> Vec<Vec<(f64, f64)>> {
        panel.lines.iter().map(|l| l.pieces.concat()).collect()
    }

    /// A view group's sweep plots its views against the views offered and its page-load p99,
    /// the axes saying so, not its requests (20 a view) against the requests' offered rate.
    #[test]
    fn a_view_sweep_plots_views_against_views_offered_and_page_load() {
        let cells = view_cells(3, &[3.0, 6.0, 12.0]);
        let plots = plots(&run(), &cells, &Palette::new(&cells));
        let [sweep] = &plots.sweeps[..] else { panic!("one sweep: {:?}", plots.sweeps) };
        let c = &sweep.chart;
        assert_eq!(c.x_desc, "offered rate (views/s)");
        let descs: Vec<&str> = c.panels.iter().map(|p| p.y_desc.as_str()).collect();
        assert_eq!(descs, ["achieved (views/s)", "p99 page load (ms)", "request errors (%)"]);
        // Varnish (every view offered) and opcache (5 in 6), then the diagonal over them.
        let achieved = points(&c.panels[0]);
        assert_eq!(achieved[0], [(3.0, 3.0), (6.0, 6.0), (12.0, 12.0)]);
        assert_eq!(achieved[1], [(3.0, 2.5), (6.0, 5.0), (12.0, 10.0)]);
        let diagonal = &c.panels[0].lines[2];
        assert!(diagonal.dashed && diagonal.color == REFERENCE, "drawn last: {diagonal:?}");
        let p99 = points(&c.panels[1]);
        assert_eq!((p99[0][0], p99[1][2]), ((3.0, 40.0), (12.0, 450.0)), "page load, ms");
        assert!(sweep.note.contains("varnish sustains 12 views/s;"), "{}", sweep.note);
        assert!(sweep.note.contains("opcache sustains none of the rates"), "{}", sweep.note);
    }

    /// At one rate, the page-load percentiles (the stored p50 and p99), not the requests'.
    #[test]
    fn a_view_groups_percentiles_are_its_page_loads() {
        let cells = view_cells(3, &[3.0]);
        let plots = plots(&run(), &cells, &Palette::new(&cells));
        let [spectrum] = &plots.latency[..] else { panic!("one chart: {:?}", plots.latency) };
        assert_eq!(spectrum.title, "front page views · open, 3 views/s: page load percentiles");
        let panel = &spectrum.chart.panels[0];
        assert_eq!(panel.y_desc, "page load (ms)");
        let at = |p: f64| -(1.0 - p / 100.0f64).log10();
        assert_eq!(points(panel)[1], [(at(50.0), 225.0), (at(99.0), 450.0)], "opcache");
        // Two stored percentiles are two points, not a straight line between them.
        for line in &panel.lines {
            assert!(line.pieces.iter().all(|p| p.len() == 1), "{:?}", line.pieces);
        }
        assert!(spectrum.note.contains("points, not a curve"), "{}", spectrum.note);
    }

    /// A visit family of 2 and 4 visitors: visits/s and visit duration by visitors.
    #[test]
    fn a_visit_familys_throughput_is_visits_by_visitors() {
        let mut cells = crate::testcell::visit_cells(3);
        for c in crate::testcell::visit_cells(3) {
            let mut c = c.clone();
            c.load.connections = Some(4);
            c.metrics.insert(metric::VISITS_RPS.into(), 2.5);
            cells.push(c);
        }
        let plots = plots(&run(), &cells, &Palette::new(&cells));
        let visits = plots.throughput.iter().find(|p| p.title.starts_with("search")).unwrap();
        assert!(
            visits.title.ends_with(": visits/s and visit duration by visitors"),
            "{}",
            visits.title
        );
        let c = &visits.chart;
        assert_eq!((c.x_desc.as_str(), c.panels[0].y_desc.as_str()), ("visitors", "visits/s"));
        assert_eq!(c.panels[1].y_desc, "visit duration (ms)");
        assert_eq!(points(&c.panels[0])[0], [(0.0, 1.5), (1.0, 2.5)]);
        assert_eq!(points(&c.panels[1])[0], [(0.0, 2_900.0), (1.0, 2_900.0)], "p99, ms");
        let hello = plots.throughput.iter().find(|p| p.title.starts_with("hello.txt")).unwrap();
        assert_eq!(hello.chart.panels[0].y_desc, "requests/s");
    }

    /// A short cell is sampled once, at its end: its CPU time over its length is one point
    /// (0.2 + 0.05 s in 0.5 s: 50% of a core), one piece per cell, which the chart marks.
    /// Differenced as running totals, one sample would draw nothing for such a cell.
    #[test]
    fn a_cell_sampled_once_is_one_cpu_point_per_tier() {
        let mut cells = reps("nginx-fpm", "hello.php", 10, &[1000.0, 1100.0]);
        for c in &mut cells {
            c.samples = vec![sample("nginx", 500, 0.2, 0.05), sample("php-fpm", 500, 0.4, 0.1)];
        }
        let refs: Vec<&CellRecord> = cells.iter().collect();
        let plot = resources(&run(), "nginx-fpm", &refs, &Palette::new(&cells)).expect("a plot");
        let cpu = &plot.chart.panels[0];
        let values = |tier: usize| -> Vec<Vec<f64>> {
            cpu.lines[tier].pieces.iter().map(|p| p.iter().map(|pt| pt.1).collect()).collect()
        };
        assert_eq!(values(0), [[50.0], [50.0]], "nginx");
        assert_eq!(values(1), [[100.0], [100.0]], "php-fpm");
        let svg = crate::charts::svg(&plot.chart).expect("svg");
        assert!(svg.matches("<circle").count() >= 4, "no marker for the single points");
    }
}
