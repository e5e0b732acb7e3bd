//! Drawing: a small chart model (panels of lines over one shared x axis) rendered to SVG with
//! plotters, so that what to plot (`plots.rs`) stays apart from how it is drawn.
//!
//! plotters is built without its font features: it then estimates text widths itself and writes
//! text as SVG `<text>`, leaving glyphs to the browser, so nothing here needs fontconfig or a
//! system font. Logarithmic axes are drawn as linear axes over log10 of the values, labelled
//! at the powers of ten: one coordinate type for every chart keeps the drawing code single.

use std::ops::Range;

use plotters::coord::types::RangedCoordf64;
use plotters::prelude::*;
// The trait behind `.filled()` and `.stroke_width()`; its name is taken by our own `Color`.
use plotters::style::Color as _;
use thiserror::Error;

/// A chart could not be drawn; the report shows this message in the chart's place.
#[derive(Debug, Error)]
#[error("cannot draw the chart {title:?}: {message}")]
pub struct ChartError {
    pub title: String,
    pub message: String,
}

/// An sRGB colour.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Color(pub u8, pub u8, pub u8);

impl Color {
    /// `#4e79a7`, for the HTML legend.
    pub fn hex(self) -> String {
        format!("#{:02x}{:02x}{:02x}", self.0, self.1, self.2)
    }

    fn rgb(self) -> RGBColor {
        RGBColor(self.0, self.1, self.2)
    }
}

/// Tableau 10: distinct hues of similar weight, readable on white and by most colour-blind
/// readers in the first six. A stack keeps its colour in every chart of a report.
pub const STACK_COLORS: [Color; 10] = [
    Color(0x4e, 0x79, 0xa7),
    Color(0xf2, 0x8e, 0x2b),
    Color(0x59, 0xa1, 0x4f),
    Color(0xe1, 0x57, 0x59),
    Color(0x76, 0xb7, 0xb2),
    Color(0xb0, 0x7a, 0xa1),
    Color(0xed, 0xc9, 0x48),
    Color(0x9c, 0x75, 0x5f),
    Color(0xff, 0x9d, 0xa7),
    Color(0xba, 0xb0, 0xac),
];

/// ColorBrewer Dark2, for a stack's tiers, so a tier never looks like another stack.
pub const TIER_COLORS: [Color; 8] = [
    Color(0x1b, 0x9e, 0x77),
    Color(0xd9, 0x5f, 0x02),
    Color(0x75, 0x70, 0xb3),
    Color(0xe7, 0x29, 0x8a),
    Color(0x66, 0xa6, 0x1e),
    Color(0xe6, 0xab, 0x02),
    Color(0xa6, 0x76, 0x1d),
    Color(0x66, 0x66, 0x66),
];

/// The grey of reference lines (the "achieved = offered" diagonal, the whole machine's CPU).
pub const REFERENCE: Color = Color(0x88, 0x88, 0x88);
/// The ring drawn around a point that a trust flag touches.
pub const FLAG_RING: Color = Color(0xd9, 0x48, 0x01);

/// How tick values are written.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Ticks {
    /// 12,000 or 0.5.
    Number,
    /// Values are nines of a percentile, -log10(1 - p): 1 is "90%", 3 is "99.9%".
    Nines,
}

/// The x axis shared by a chart's panels.
#[derive(Debug, Clone, PartialEq)]
pub enum XAxis {
    /// Evenly spaced categories (concurrency levels): x values are indices into the labels.
    Categories(Vec<String>),
    /// Numbers, optionally on a log scale.
    Numbers { ticks: Ticks, log: bool },
}

/// One line of a panel: a stack, a tier, a percentile.
#[derive(Debug, Clone, PartialEq)]
pub struct Line {
    pub color: Color,
    pub dashed: bool,
    pub markers: bool,
    /// Pieces drawn unconnected (a stack's cells, with gaps between them). Points are (x, y).
    pub pieces: Vec<Vec<(f64, f64)>>,
    /// Vertical intervals (x, lo, hi): the 95% CI of each point.
    pub intervals: Vec<(f64, f64, f64)>,
    /// Points to ring because a trust flag touches them.
    pub flagged: Vec<(f64, f64)>,
    /// Points to ring in the line's colour: the knee of a sweep.
    pub marked: Vec<(f64, f64)>,
}

impl Line {
    pub fn new(color: Color, points: Vec<(f64, f64)>) -> Line {
        Line {
            color,
            dashed: false,
            markers: true,
            pieces: vec![points],
            intervals: Vec::new(),
            flagged: Vec::new(),
            marked: Vec::new(),
        }
    }
}

/// One plot area with its own y axis.
#[derive(Debug, Clone, PartialEq)]
pub struct Panel {
    /// The y axis description with its unit, e.g. "p99 latency (ms)".
    pub y_desc: String,
    /// Log scale, used when values span more than two decades (latency past a knee).
    pub y_log: bool,
    /// Start the axis at zero (rates, CPU, memory) rather than at the data's minimum.
    pub from_zero: bool,
    pub lines: Vec<Line>,
}

/// A chart: panels stacked over one x axis.
#[derive(Debug, Clone, PartialEq)]
pub struct Chart {
    pub title: String,
    pub x_desc: String,
    pub x: XAxis,
    pub panels: Vec<Panel>,
    pub width: u32,
    pub panel_height: u32,
}

/// Whether values spanning `lo..=hi` (all positive) read better on a log axis.
pub fn wants_log(lo: f64, hi: f64) -> bool {
    lo > 0.0 && hi / lo > 100.0
}

/// The chart as an SVG element, ready to inline in HTML.
pub fn svg(chart: &Chart) -> Result<String, ChartError> {
    let err = |e: &dyn std::fmt::Display| ChartError {
        title: chart.title.clone(),
        message: e.to_string(),
    };
    let height = chart.panel_height * chart.panels.len() as u32 + 30;
    let mut out = String::new();
    {
        let root = SVGBackend::with_string(&mut out, (chart.width, height)).into_drawing_area();
        root.fill(&WHITE).map_err(|e| err(&e))?;
        let areas = root.margin(8, 4, 0, 12).split_by_breakpoints(
            Vec::<u32>::new(),
            (1..chart.panels.len()).map(|i| i as u32 * chart.panel_height).collect::<Vec<_>>(),
        );
        let x_range = x_range(chart);
        for (i, (panel, area)) in chart.panels.iter().zip(&areas).enumerate() {
            let last = i + 1 == chart.panels.len();
            draw_panel(chart, panel, area, x_range.clone(), last).map_err(|e| err(&e))?;
        }
        root.present().map_err(|e| err(&e))?;
    }
    // In HTML the parser puts <svg> in the SVG namespace by itself; dropping the attribute
    // keeps the report free of any URL, even one that is never fetched.
    Ok(out.replacen(r#" xmlns="http://www.w3.org/2000/svg""#, "", 1))
}

fn x_range(chart: &Chart) -> Range<f64> {
    match &chart.x {
        XAxis::Categories(labels) => -0.5..(labels.len() as f64 - 0.5),
        XAxis::Numbers { log, .. } => {
            let xs = chart.panels.iter().flat_map(|p| &p.lines).flat_map(|l| &l.pieces).flatten();
            let (lo, hi) = bounds(xs.map(|p| p.0), *log);
            let pad = if *log { 0.05 } else { (hi - lo) * 0.03 };
            (lo - pad)..(hi + pad)
        }
    }
}

/// Min and max of `values` (log10 of them for a log axis), widened when they are equal.
fn bounds(values: impl Iterator<Item = f64>, log: bool) -> (f64, f64) {
    let (lo, hi) = values
        .map(|v| if log { v.log10() } else { v })
        .filter(|v| v.is_finite())
        .fold((f64::INFINITY, f64::NEG_INFINITY), |(lo, hi), v| (lo.min(v), hi.max(v)));
    if lo > hi {
        return (0.0, 1.0);
    }
    if lo == hi {
        return (lo - 0.5, hi + 0.5);
    }
    (lo, hi)
}

type DrawResult = Result<(), Box<dyn std::error::Error>>;

fn draw_panel<DB: DrawingBackend>(
    chart: &Chart,
    panel: &Panel,
    area: &DrawingArea<DB, plotters::coord::Shift>,
    x_range: Range<f64>,
    last: bool,
) -> DrawResult
where
    DB::ErrorType: 'static,
{
    let y = |v: f64| if panel.y_log { v.log10() } else { v };
    let ys = panel.lines.iter().flat_map(|l| {
        let points = l.pieces.iter().flatten().map(|p| p.1);
        points.chain(l.intervals.iter().flat_map(|i| [i.1, i.2]))
    });
    let (lo, hi) = bounds(ys.clone(), panel.y_log);
    let y_range = if panel.from_zero && !panel.y_log && ys.fold(0.0, f64::min) >= 0.0 {
        // Rates, CPU and memory read against zero; all zeros (no errors) still get an axis.
        let top = if hi > 0.0 { hi * 1.06 } else { 1.0 };
        0.0..top
    } else {
        let pad = (hi - lo) * 0.06;
        (lo - pad)..(hi + pad)
    };
    // On a log axis only powers of ten are labelled, so ask for one label per decade: plotters
    // then steps by whole decades instead of leaving unlabelled half-decade ticks.
    let y_labels =
        if panel.y_log { (y_range.end.floor() - y_range.start.ceil()) as usize + 1 } else { 6 };

    let mut builder = ChartBuilder::on(area);
    builder
        .margin_top(6)
        .margin_right(14)
        .x_label_area_size(if last { 40 } else { 8 })
        .y_label_area_size(66);
    let mut cc = builder.build_cartesian_2d(x_range, y_range)?;

    let x_fmt = |v: &f64| x_tick(&chart.x, *v);
    let y_fmt = |v: &f64| y_tick(*v, panel.y_log);
    let text = ("sans-serif", 13).into_font().color(&RGBColor(0x55, 0x55, 0x55));
    let desc = ("sans-serif", 14).into_font().color(&RGBColor(0x33, 0x33, 0x33));
    let mut mesh = cc.configure_mesh();
    mesh.light_line_style(RGBColor(0xf0, 0xf0, 0xf0))
        .bold_line_style(RGBColor(0xe2, 0xe2, 0xe2))
        .axis_style(RGBColor(0xaa, 0xaa, 0xaa))
        .label_style(text)
        .axis_desc_style(desc)
        .y_desc(panel.y_desc.as_str())
        .y_labels(y_labels)
        .x_max_light_lines(1)
        .y_max_light_lines(if panel.y_log { 0 } else { 1 })
        .y_label_formatter(&y_fmt)
        .x_label_formatter(&x_fmt);
    match &chart.x {
        XAxis::Categories(labels) => mesh.x_labels(labels.len() + 1).disable_x_mesh(),
        XAxis::Numbers { .. } => mesh.x_labels(8),
    };
    if last {
        mesh.x_desc(chart.x_desc.as_str());
    } else {
        mesh.x_label_formatter(&|_| String::new());
    }
    mesh.draw()?;

    for (i, line) in panel.lines.iter().enumerate() {
        draw_line(&mut cc, line, &y, covered_by(panel, i))?;
    }
    Ok(())
}

/// How many later lines of the panel lie on every point of line `i` (two stacks with the same
/// sweep, both sustaining every rate): drawn over it, each would hide it, so it is drawn wider
/// by that many steps and shows as a band around them, its rings (a shared knee) larger.
fn covered_by(panel: &Panel, i: usize) -> u32 {
    let points = |l: &Line| l.pieces.concat();
    let mine = points(&panel.lines[i]);
    let near = |a: f64, b: f64| (a - b).abs() <= 0.01 * a.abs().max(b.abs()) + 1e-9;
    let same = |other: &[(f64, f64)]| {
        !mine.is_empty()
            && other.len() == mine.len()
            && mine.iter().zip(other).all(|(p, q)| p.0 == q.0 && near(p.1, q.1))
    };
    panel.lines[i + 1..].iter().filter(|l| !l.dashed && same(&points(l))).count() as u32
}

/// One line of a panel: its pieces (dashed or not, a lone point marked), its 95% whiskers,
/// the rings of its marked and flagged points; `y` maps a value onto the panel's axis, and
/// `covered` (see [`covered_by`]) widens the line, its markers and its rings.
fn draw_line<DB: DrawingBackend>(
    cc: &mut ChartContext<'_, DB, Cartesian2d<RangedCoordf64, RangedCoordf64>>,
    line: &Line,
    y: &impl Fn(f64) -> f64,
    covered: u32,
) -> DrawResult
where
    DB::ErrorType: 'static,
{
    let color = line.color.rgb();
    let style = color.stroke_width(2 + 4 * covered);
    let grow = 3 * covered as i32;
    for piece in &line.pieces {
        // A zero on a log axis has no place: leave it out rather than draw to -infinity.
        let pts: Vec<(f64, f64)> = piece
            .iter()
            .map(|&(px, py)| (px, y(py)))
            .filter(|p| p.0.is_finite() && p.1.is_finite())
            .collect();
        if line.dashed {
            cc.draw_series(DashedLineSeries::new(pts.clone(), 6, 4, style))?;
        } else {
            cc.draw_series(LineSeries::new(pts.clone(), style))?;
        }
        // A piece of one point (a short cell sampled once) draws no line: mark it, or it
        // would not show at all.
        if line.markers || pts.len() == 1 {
            cc.draw_series(pts.iter().map(|&p| Circle::new(p, 3 + grow, color.filled())))?;
        }
    }
    // A 95% interval as a whisker with short caps; the cap width is in pixels so that it
    // looks the same whatever the x scale.
    let intervals: Vec<(f64, f64, f64)> = line
        .intervals
        .iter()
        .map(|&(px, l, h)| (px, y(l), y(h)))
        .filter(|i| i.1.is_finite() && i.2.is_finite())
        .collect();
    cc.draw_series(intervals.iter().map(|&(px, l, h)| {
        PathElement::new(vec![(px, l), (px, h)], color.mix(0.7).stroke_width(1))
    }))?;
    for &(px, l, h) in &intervals {
        for v in [l, h] {
            let at = (px, v);
            cc.draw_series(std::iter::once(
                EmptyElement::at(at)
                    + PathElement::new(vec![(-4, 0), (4, 0)], color.mix(0.7).stroke_width(1)),
            ))?;
        }
    }
    let ring =
        |p: &(f64, f64), c: RGBColor, r: i32| Circle::new((p.0, y(p.1)), r, c.stroke_width(2));
    cc.draw_series(line.marked.iter().map(|p| ring(p, color, 8 + grow)))?;
    cc.draw_series(line.flagged.iter().map(|p| ring(p, FLAG_RING.rgb(), 6)))?;
    Ok(())
}

fn x_tick(axis: &XAxis, v: f64) -> String {
    match axis {
        XAxis::Categories(labels) => {
            let i = v.round();
            if (v - i).abs() > 1e-6 || i < 0.0 {
                return String::new();
            }
            labels.get(i as usize).cloned().unwrap_or_default()
        }
        XAxis::Numbers { ticks: Ticks::Nines, .. } => {
            if v < 0.0 || (v - v.round()).abs() > 1e-6 {
                return String::new();
            }
            let p = 100.0 * (1.0 - 10f64.powf(-v.round()));
            let decimals = (v.round() as usize).saturating_sub(2);
            format!("{p:.decimals$}%")
        }
        XAxis::Numbers { log: true, .. } => y_tick(v, true),
        XAxis::Numbers { log: false, .. } => tick_number(v),
    }
}

/// A y tick: a plain number, or on a log axis the power of ten (only whole powers are labelled,
/// the lines between them stay unlabelled).
fn y_tick(v: f64, log: bool) -> String {
    if !log {
        return tick_number(v);
    }
    if (v - v.round()).abs() > 1e-6 {
        return String::new();
    }
    tick_number(10f64.powf(v.round()))
}

fn tick_number(v: f64) -> String {
    // Ticks are nice numbers already; print them without float noise such as 0.30000000000004.
    let v = (v * 1e6).round() / 1e6;
    let s = crate::format::count(v);
    if s.contains('.') {
        s.trim_end_matches('0').trim_end_matches('.').to_owned()
    } else {
        s
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn chart(panels: Vec<Panel>) -> Chart {
        Chart {
            title: "t".into(),
            x_desc: "concurrent connections".into(),
            x: XAxis::Categories(vec!["1".into(), "10".into(), "100".into()]),
            panels,
            width: 600,
            panel_height: 200,
        }
    }

    #[test]
    fn draws_lines_markers_and_labels_without_any_url() {
        let mut line = Line::new(STACK_COLORS[0], vec![(0.0, 100.0), (1.0, 900.0), (2.0, 1_200.0)]);
        line.intervals = vec![(1.0, 850.0, 950.0)];
        line.flagged = vec![(2.0, 1_200.0)];
        let panel =
            Panel { y_desc: "req/s".into(), y_log: false, from_zero: true, lines: vec![line] };
        let svg = svg(&chart(vec![panel])).unwrap();
        assert!(svg.starts_with("<svg "), "{svg}");
        assert!(svg.contains("<polyline"), "{svg}");
        assert!(svg.contains("<circle"), "{svg}");
        assert!(svg.contains(">\nreq/s\n</text>") || svg.contains("req/s"), "{svg}");
        assert!(svg.contains("concurrent connections"));
        assert!(!svg.contains("http"), "no URL at all: {svg}");
    }

    /// Two stacks with the same sweep and the same knee: the one drawn first is drawn wider,
    /// its knee ring larger, so the second does not hide it.
    #[test]
    fn a_line_under_an_identical_one_is_drawn_wider_with_a_larger_ring() {
        let points = vec![(0.0, 100.0), (1.0, 200.0), (2.0, 300.0)];
        let lines: Vec<Line> = STACK_COLORS[..2]
            .iter()
            .map(|&c| Line { marked: vec![(1.0, 200.0)], ..Line::new(c, points.clone()) })
            .collect();
        let panel = Panel { y_desc: "req/s".into(), y_log: false, from_zero: true, lines };
        assert_eq!((covered_by(&panel, 0), covered_by(&panel, 1)), (1, 0));
        let svg = svg(&chart(vec![panel])).unwrap().to_lowercase();
        let stroke = |c: Color| {
            let at =
                svg.find(&format!("<polyline fill=\"none\" opacity=\"1\" stroke=\"{}\"", c.hex()));
            let tail = &svg[at.unwrap_or_else(|| panic!("{svg}"))..];
            let w = &tail[tail.find("stroke-width=\"").unwrap() + 14..];
            w[..w.find('"').unwrap()].to_owned()
        };
        assert_eq!((stroke(STACK_COLORS[0]), stroke(STACK_COLORS[1])), ("6".into(), "2".into()));
        assert!(svg.contains("r=\"11\""), "the first knee's ring is larger: {svg}");
    }

    #[test]
    fn ticks_read_as_values() {
        let cats = XAxis::Categories(vec!["1".into(), "50".into()]);
        assert_eq!(x_tick(&cats, 1.0), "50");
        assert_eq!(x_tick(&cats, 0.5), "");
        let nines = XAxis::Numbers { ticks: Ticks::Nines, log: false };
        assert_eq!(x_tick(&nines, 0.0), "0%");
        assert_eq!(x_tick(&nines, 2.0), "99%");
        assert_eq!(x_tick(&nines, 3.0), "99.9%");
        assert_eq!(y_tick(3.0, true), "1,000");
        assert_eq!(y_tick(2.5, true), "");
        assert_eq!(y_tick(0.30000000000004, false), "0.3");
        assert!(wants_log(1.0, 1_000.0) && !wants_log(1.0, 50.0) && !wants_log(0.0, 10.0));
    }
}
