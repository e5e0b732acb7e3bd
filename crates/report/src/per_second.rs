//! The charts of a load that changes over time (a ramp, stages): for each such cell, the
//! offered and achieved requests of every second and that second's p50 and p99, as the runner
//! judged and stored them ([`loadlab_store::SecondRecord`]). A second with a trust flag is
//! ringed in orange on both panels, and the note names the flags and their seconds: a client
//! starved at second 40 marks second 40, not the whole ramp.
//!
//! These charts read only what was stored: the report never judges a second again.

use std::collections::BTreeMap;

use loadlab_store::{CellRecord, LoadModel, SecondRecord};

use crate::charts::{wants_log, Chart, Line, Panel, Ticks, XAxis, FLAG_RING, REFERENCE};
use crate::group::stack_labels;
use crate::plots::{LegendEntry, Palette, Plot};

const WIDTH: u32 = 640;

/// One plot per cell whose load changed over time and kept its seconds, in run order. The
/// cells of one workload and shape share their latency scale (log or linear), so that its
/// repetitions and stacks read side by side.
pub fn plots(cells: &[CellRecord], palette: &Palette) -> Vec<Plot> {
    let mut spans: BTreeMap<(&str, &str), (f64, f64)> = BTreeMap::new();
    for c in cells {
        let Some(stages) = c.load.stages() else { continue };
        let span = spans.entry((&c.workload, stages)).or_insert((f64::INFINITY, 0.0));
        let latencies = c.seconds.iter().flat_map(|r| [r.p50_us, r.p99_us]).flatten();
        for v in latencies.filter(|v| *v > 0).map(ms) {
            *span = (span.0.min(v), span.1.max(v));
        }
    }
    cells
        .iter()
        .zip(stack_labels(cells))
        .filter_map(|(c, stack)| {
            let stages = c.load.stages()?;
            let (lo, hi) = spans[&(c.workload.as_str(), stages)];
            Some(plot(c, stages, &stack, palette, wants_log(lo, hi)))
        })
        .collect()
}

fn plot(c: &CellRecord, stages: &str, stack: &str, palette: &Palette, y_log: bool) -> Plot {
    let color = palette.stack(stack);
    let at = |f: fn(&SecondRecord) -> Option<f64>| -> Vec<(f64, f64)> {
        c.seconds.iter().enumerate().filter_map(|(s, r)| Some((s as f64, f(r)?))).collect()
    };
    let flagged = |points: &[(f64, f64)]| -> Vec<(f64, f64)> {
        points.iter().copied().filter(|p| !c.seconds[p.0 as usize].flags.is_empty()).collect()
    };

    let achieved = at(|r| Some(r.achieved as f64));
    let p50 = at(|r| r.p50_us.map(ms));
    let p99 = at(|r| r.p99_us.map(ms));
    let achieved_line =
        Line { markers: false, flagged: flagged(&achieved), ..Line::new(color, achieved.clone()) };
    let p50_line = Line { dashed: true, markers: false, ..Line::new(color, p50.clone()) };
    let p99_line = Line { markers: false, flagged: flagged(&p99), ..Line::new(color, p99.clone()) };

    let (mut panels, reference) = load_panels(c, achieved_line);
    panels.push(Panel {
        y_desc: "latency (ms)".into(),
        y_log,
        from_zero: true,
        lines: vec![p50_line, p99_line],
    });
    let mut legend = vec![
        reference,
        LegendEntry { label: format!("{stack}: achieved, p99"), color, dashed: false },
        LegendEntry { label: "p50".into(), color, dashed: true },
    ];
    let flags = flag_seconds(&c.seconds);
    if !flags.is_empty() {
        legend.push(LegendEntry {
            label: "ringed: a second with a trust flag (named below)".into(),
            color: FLAG_RING,
            dashed: false,
        });
    }
    Plot {
        title: format!(
            "{stack} · {} · repetition {}: every second of {stages}",
            c.workload,
            c.repetition + 1
        ),
        note: note(c.load.model, &flags),
        legend,
        chart: Chart {
            title: format!("{stack} {}", c.workload),
            x_desc: "second of the run".into(),
            x: XAxis::Numbers { ticks: Ticks::Number, log: false },
            panels,
            width: WIDTH,
            panel_height: 200,
        },
    }
}

/// The panels of what the load did each second, with the legend of its grey line: requests
/// achieved against offered; a closed loop offers no schedule, so its achieved requests stand
/// alone over the connections it held open (what its stages change).
fn load_panels(c: &CellRecord, achieved: Line) -> (Vec<Panel>, LegendEntry) {
    let points = |f: fn(&SecondRecord) -> u64| -> Vec<(f64, f64)> {
        c.seconds.iter().enumerate().map(|(s, r)| (s as f64, f(r) as f64)).collect()
    };
    let panel =
        |y_desc: &str, lines| Panel { y_desc: y_desc.into(), y_log: false, from_zero: true, lines };
    if c.load.model == LoadModel::Closed {
        let open = Line { markers: false, ..Line::new(REFERENCE, points(|r| r.connections_open)) };
        let legend =
            LegendEntry { label: "connections open".into(), color: REFERENCE, dashed: false };
        return (
            vec![
                panel("requests per second", vec![achieved]),
                panel("connections open", vec![open]),
            ],
            legend,
        );
    }
    let offered =
        Line { dashed: true, markers: false, ..Line::new(REFERENCE, points(|r| r.offered)) };
    let legend = LegendEntry { label: "offered".into(), color: REFERENCE, dashed: true };
    // Offered last, so that its dashes show where achieved keeps up with it.
    (vec![panel("requests per second", vec![achieved, offered])], legend)
}

/// Microseconds as milliseconds.
fn ms(us: u64) -> f64 {
    us as f64 / 1e3
}

/// Each flag raised in some second, with the seconds it was raised in.
fn flag_seconds(seconds: &[SecondRecord]) -> BTreeMap<String, Vec<usize>> {
    let mut out: BTreeMap<String, Vec<usize>> = BTreeMap::new();
    for (s, r) in seconds.iter().enumerate() {
        for f in &r.flags {
            out.entry(f.as_str().to_owned()).or_default().push(s);
        }
    }
    out
}

/// How to read the chart, and which seconds are flagged for what. A closed loop schedules
/// nothing, so its note speaks of the connections its stages held open, not of an offer.
fn note(model: LoadModel, flags: &BTreeMap<String, Vec<usize>>) -> String {
    let load = if model == LoadModel::Closed {
        "Achieved: the requests completed in each second by the connections the stages held \
         open (a closed loop offers no rate of its own)."
    } else {
        "Offered: the requests the shape scheduled in each second; achieved: those sent."
    };
    let mut note = format!(
        "{load} Latency from each second's own histogram. A ramp's seconds are not \
         repetitions: it shows where to look, a sweep of steps confirms."
    );
    if flags.is_empty() {
        note.push_str(" No second was flagged.");
        return note;
    }
    let parts: Vec<String> =
        flags.iter().map(|(flag, secs)| format!("{flag} at {}", ranges(secs))).collect();
    note.push_str(&format!(" Flagged seconds (ringed): {}.", parts.join("; ")));
    note
}

/// `3-5, 9`: runs of consecutive seconds written as ranges.
fn ranges(secs: &[usize]) -> String {
    let mut parts: Vec<String> = Vec::new();
    let mut i = 0;
    while i < secs.len() {
        let mut j = i;
        while j + 1 < secs.len() && secs[j + 1] == secs[j] + 1 {
            j += 1;
        }
        parts.push(if i == j {
            format!("second {}", secs[i])
        } else {
            format!("seconds {}-{}", secs[i], secs[j])
        });
        i = j + 1;
    }
    parts.join(", ")
}

#[cfg(test)]
mod tests {
    use loadlab_store::{Flag, LoadModel, LoadSpec};

    use super::*;
    use crate::testcell::{open_cell, run, with_load};

    /// A ramp 0..500 req/s over 6 s whose client starved in seconds 4 and 5.
    fn staged_cell() -> CellRecord {
        let mut load = LoadSpec::new(LoadModel::Open);
        load.rate = Some(250.0);
        load.duration_s = Some(6.0);
        load.extra.insert(LoadSpec::STAGES.into(), "6s:0..500".into());
        let mut c = with_load("nginx", "hello.txt", load, 0, &[]);
        c.seconds = (0..6u64)
            .map(|s| SecondRecord {
                offered: 42 + 83 * s,
                achieved: 42 + 80 * s,
                p50_us: (s > 0).then_some(400 + 10 * s),
                p90_us: (s > 0).then_some(900 + 10 * s),
                p99_us: (s > 0).then_some(2_000 + 1_000 * s),
                connections_open: 2 + s,
                flags: if s >= 4 { vec![Flag::ClientStarved] } else { Vec::new() },
            })
            .collect();
        c
    }

    #[test]
    fn a_staged_cell_draws_its_seconds_with_the_flagged_ones_ringed() {
        let cells = vec![open_cell("nginx", "hello.txt", 300.0, 0, 900.0), staged_cell()];
        let plots = plots(&cells, &Palette::new(&cells));
        assert_eq!(plots.len(), 1, "the fixed cell has no chart of seconds");
        let p = &plots[0];
        let rate = &p.chart.panels[0];
        assert_eq!(rate.lines[1].pieces[0][5], (5.0, 457.0), "offered");
        assert_eq!(rate.lines[0].pieces[0][5], (5.0, 442.0), "achieved");
        assert_eq!(rate.lines[0].flagged, [(4.0, 362.0), (5.0, 442.0)]);
        let latency = &p.chart.panels[1];
        assert_eq!(latency.lines[1].pieces[0][0], (1.0, 3.0), "p99 in ms, none at second 0");
        assert_eq!(latency.lines[1].flagged, [(4.0, 6.0), (5.0, 7.0)]);
        assert!(p.note.contains("client_starved at seconds 4-5"), "{}", p.note);
        assert!(p.legend.iter().any(|l| l.color == FLAG_RING && l.label.contains("trust flag")));
        assert!(crate::charts::svg(&p.chart).is_ok());
    }

    #[test]
    fn the_report_holds_the_chart_of_a_staged_cell_only() {
        let fixed = vec![open_cell("nginx", "hello.txt", 300.0, 0, 900.0)];
        let html = crate::render_html(&run(), &fixed, &[], &Default::default());
        assert!(!html.contains("id=\"seconds\""), "no staged cell, no section");
        assert!(!html.contains("href=\"#seconds\""), "no link to it");
        let mut cells = fixed;
        cells.push(staged_cell());
        let html = crate::render_html(&run(), &cells, &[], &Default::default());
        assert!(html.contains("id=\"seconds\""));
        assert!(html.contains("<a href=\"#seconds\">Load over time</a>"), "the nav links it");
        assert!(html.contains("every second of 6s:0..500"));
        assert!(html.contains("client_starved at seconds 4-5"));
        assert_eq!(html.matches("every second of").count(), 1, "one chart: the staged cell's");
    }

    /// A closed loop's stages change its connections: they are drawn, not an offered rate it
    /// never had.
    #[test]
    fn a_closed_loop_s_seconds_show_its_connections_instead_of_an_offered_rate() {
        let mut c = staged_cell();
        c.load.model = LoadModel::Closed;
        let plots = plots(std::slice::from_ref(&c), &Palette::new(std::slice::from_ref(&c)));
        let panels = &plots[0].chart.panels;
        assert_eq!(panels.len(), 3);
        assert_eq!(panels[0].lines.len(), 1, "achieved alone");
        assert_eq!(panels[1].lines[0].pieces[0][3], (3.0, 5.0), "connections open");
        assert_eq!(plots[0].legend[0].label, "connections open");
        let note = &plots[0].note;
        assert!(!note.to_lowercase().contains("offered:"), "nothing was offered: {note}");
        assert!(note.contains("connections the stages held open"), "{note}");
    }

    /// One repetition whose p99 spans three decades and one whose p99 stays flat: both on the
    /// same (log) scale, not one log and the other linear.
    #[test]
    fn the_repetitions_of_a_staged_cell_share_their_latency_scale() {
        let wide = staged_cell();
        let mut flat = staged_cell();
        flat.repetition = 1;
        for r in &mut flat.seconds {
            r.p99_us = r.p99_us.map(|_| 2_000);
        }
        let mut steep = staged_cell();
        steep.repetition = 2;
        steep.seconds[5].p99_us = Some(900_000);
        let cells = vec![wide, flat, steep];
        let plots = plots(&cells, &Palette::new(&cells));
        let logs: Vec<bool> = plots.iter().map(|p| p.chart.panels[1].y_log).collect();
        assert_eq!(logs, [true, true, true]);
    }

    #[test]
    fn consecutive_seconds_read_as_ranges() {
        assert_eq!(ranges(&[3, 4, 5, 9, 11, 12]), "seconds 3-5, second 9, seconds 11-12");
        assert_eq!(ranges(&[0]), "second 0");
    }
}
