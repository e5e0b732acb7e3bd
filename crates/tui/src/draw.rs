//! The view's one screen, drawn from a [`Model`]: what the run does now (its rate against the
//! offered one, p50 and p99, connections, the client's CPU), its last seconds as sparklines
//! and rows, its failures by class and each flag as it is raised, then the command's own
//! lines (a sweep's steps and their chart, a suite's place and verdict rows) and what it has
//! concluded so far (a suite's verdict, a sweep's knee). Figures are
//! written by loadlab-stats' formatters, as every other output writes them.

use loadlab_runner::commands::bench::following::Second;
use loadlab_stats::format::{bytes, count, micros, seconds};
use ratatui::layout::{Constraint, Layout, Rect};
use ratatui::style::{Modifier, Style};
use ratatui::symbols::Marker;
use ratatui::text::Line;
use ratatui::widgets::{Axis, Block, Chart, Dataset, GraphType, Paragraph, Sparkline};
use ratatui::Frame;

use crate::model::Model;

/// Rows of the last seconds shown at least.
const SECOND_ROWS: usize = 6;
/// Rows of what the command concluded so far shown at most (a suite's verdict, its first
/// groups: the whole of it is printed when the view closes).
const SO_FAR_ROWS: usize = 14;

/// Draws the whole screen.
pub fn draw(frame: &mut Frame, m: &Model) {
    let lines_height = if m.lines.is_empty() { 0 } else { 12 };
    let chart_height = if m.steps.is_empty() { 0 } else { 10 };
    let so_far_height = m.so_far.as_ref().map_or(0, |(_, l)| l.len().min(SO_FAR_ROWS) as u16 + 2);
    let [head, rate, offered, rows, steps, so_far, lines] = Layout::vertical([
        Constraint::Length(4),
        Constraint::Length(5),
        Constraint::Length(if m.seconds.iter().any(|s| s.due > 0) { 4 } else { 0 }),
        Constraint::Min(SECOND_ROWS as u16 + 2),
        Constraint::Length(chart_height),
        Constraint::Length(so_far_height),
        Constraint::Length(lines_height),
    ])
    .areas(frame.area());
    frame.render_widget(Paragraph::new(head_lines(m)), head);
    sparkline(frame, rate, m, "req/s", |s| s.completed);
    sparkline(frame, offered, m, "offered req/s", |s| s.due);
    let [seconds, side] =
        Layout::horizontal([Constraint::Min(60), Constraint::Length(40)]).areas(rows);
    let block = Block::bordered().title(" last seconds ");
    let fit = usize::from(seconds.height.saturating_sub(3));
    frame.render_widget(Paragraph::new(second_rows(m, fit)).block(block), seconds);
    let block = Block::bordered().title(" errors and flags ");
    frame.render_widget(Paragraph::new(side_lines(m)).block(block), side);
    if chart_height > 0 {
        step_chart(frame, steps, &m.steps);
    }
    if let Some((title, text)) = &m.so_far {
        let text: Vec<Line> = text.iter().take(SO_FAR_ROWS).map(|l| l.as_str().into()).collect();
        let block = Block::bordered().title(format!(" {title} "));
        frame.render_widget(Paragraph::new(text).block(block), so_far);
    }
    if lines_height > 0 {
        let keep = usize::from(lines_height - 2);
        let from = m.lines.len().saturating_sub(keep);
        let text: Vec<Line> = m.lines[from..].iter().map(|(_, l)| printable(l).into()).collect();
        frame.render_widget(Paragraph::new(text).block(Block::bordered()), lines);
    }
}

/// A held line as the screen can show it: a child's stderr may carry colours and other
/// control bytes, which written as they are would move the cursor off the panel.
fn printable(line: &str) -> String {
    line.chars().map(|c| if c.is_control() { ' ' } else { c }).collect()
}

fn bold() -> Style {
    Style::default().add_modifier(Modifier::BOLD)
}

/// The command, the run, and its figures now.
fn head_lines(m: &Model) -> Vec<Line<'static>> {
    let left = m.plan_ends.map_or(String::new(), |end| {
        let left = end.saturating_duration_since(std::time::Instant::now());
        format!("   about {} left by the plan", seconds(left.as_secs_f64().round()))
    });
    let title = format!("loadlab {}{left}   (q or Ctrl-C stops)", m.title);
    let mut out = vec![Line::from(title).style(bold())];
    let Some(t) = &m.tally else {
        out.push(Line::from("starting"));
        return out;
    };
    let phase = if t.warming { " (warm-up)" } else { "" };
    out.push(Line::from(format!(
        "{}{:.1} s{phase}   completed {}   failed {}",
        if m.label.is_empty() { String::new() } else { format!("{}  ", m.label) },
        t.elapsed.as_secs_f64(),
        count(t.completed as f64),
        count(t.failed as f64)
    )));
    let latency = |us: Option<u64>| us.map_or("-".to_string(), |us| micros(us as f64));
    let last = m.last();
    out.push(
        Line::from(format!(
            "now {}   p50 {}   p99 {}",
            t.rate_text(),
            latency(last.and_then(|s| s.p50_us)),
            latency(last.and_then(|s| s.p99_us)),
        ))
        .style(bold()),
    );
    if let Some(s) = last {
        let offered =
            if s.due > 0 { format!("offered {}/s   ", count(s.due as f64)) } else { String::new() };
        out.push(Line::from(format!(
            "{offered}open connections {}   client CPU {}",
            s.open,
            cpu(s)
        )));
    }
    out
}

/// A second's client CPU in CPUs (1.00 is one CPU busy all the second).
fn cpu(s: &Second) -> String {
    format!("{:.2} CPU", s.cpu_us as f64 / 1e6)
}

fn sparkline(frame: &mut Frame, area: Rect, m: &Model, title: &str, of: fn(&Second) -> u64) {
    if area.height == 0 {
        return;
    }
    let width = usize::from(area.width.saturating_sub(2));
    let data: Vec<u64> =
        m.seconds.iter().skip(m.seconds.len().saturating_sub(width)).map(of).collect();
    let block = Block::bordered().title(format!(" {title} "));
    frame.render_widget(Sparkline::default().block(block).data(&data), area);
}

/// The last `fit` seconds, newest last.
fn second_rows(m: &Model, fit: usize) -> Vec<Line<'static>> {
    let mut out = vec![Line::from(format!(
        "{:>6} {:>10} {:>10} {:>10} {:>10} {:>7} {:>6} {:>9}",
        "second", "completed", "offered", "p50", "p99", "failed", "open", "CPU"
    ))
    .style(bold())];
    let latency = |us: Option<u64>| us.map_or("-".to_string(), |us| micros(us as f64));
    let from = m.seconds.len().saturating_sub(fit);
    for s in m.seconds.iter().skip(from) {
        out.push(Line::from(format!(
            "{:>6} {:>10} {:>10} {:>10} {:>10} {:>7} {:>6} {:>9}",
            s.second + 1,
            count(s.completed as f64),
            if s.due > 0 { count(s.due as f64) } else { "-".into() },
            latency(s.p50_us),
            latency(s.p99_us),
            count(s.failed as f64),
            s.open,
            cpu(s)
        )));
    }
    out
}

/// Failures by class, each flag with the second it was raised in, then the stack's tiers
/// (their CPU over the last second, as a share of one CPU, and their memory).
fn side_lines(m: &Model) -> Vec<Line<'static>> {
    let mut out: Vec<Line> = Vec::new();
    if m.errors.is_empty() {
        out.push("no failures".into());
    }
    for (class, n) in &m.errors {
        out.push(format!("{:<16} {}", class.name(), count(*n as f64)).into());
    }
    out.push("".into());
    if m.flags.is_empty() {
        out.push("no flag raised".into());
    }
    for (flag, second) in &m.flags {
        out.push(Line::from(format!("{} (second {})", flag.name(), second + 1)).style(bold()));
    }
    if !m.tiers.is_empty() {
        out.push("".into());
        out.push(Line::from(format!("{:<10} {:>5} {:>10}", "tier", "CPU", "memory")).style(bold()));
    }
    for t in &m.tiers {
        let cpu = format!("{:.0}%", t.cpu_user_pct + t.cpu_sys_pct);
        out.push(format!("{:<10} {cpu:>5} {:>10}", t.tier, bytes(t.rss_bytes as f64)).into());
    }
    out
}

/// A sweep's steps: achieved against offered, beside the line where they are equal.
fn step_chart(frame: &mut Frame, area: Rect, steps: &[(f64, f64)]) {
    let top = steps.iter().map(|(o, a)| o.max(*a)).fold(1.0, f64::max);
    let equal = [(0.0, 0.0), (top, top)];
    let datasets = vec![
        Dataset::default()
            .name("offered")
            .graph_type(GraphType::Line)
            .marker(Marker::Braille)
            .data(&equal),
        Dataset::default()
            .name("achieved")
            .graph_type(GraphType::Line)
            .marker(Marker::Dot)
            .data(steps),
    ];
    let labels = || vec![Line::from("0"), Line::from(count(top))];
    let chart = Chart::new(datasets)
        .block(Block::bordered().title(" steps: achieved against offered (req/s) "))
        .x_axis(Axis::default().bounds([0.0, top]).labels(labels()))
        .y_axis(Axis::default().bounds([0.0, top]).labels(labels()));
    frame.render_widget(chart, area);
}

#[cfg(test)]
mod tests {
    use super::*;
    use loadlab_runner::commands::bench::live::Tally;
    use loadlab_runner::judge::trust::Flag;
    use ratatui::backend::TestBackend;
    use ratatui::Terminal;

    fn screen(m: &Model) -> String {
        let mut terminal = Terminal::new(TestBackend::new(110, 40)).unwrap();
        terminal.draw(|f| draw(f, m)).unwrap();
        terminal.backend().buffer().content().iter().map(|c| c.symbol()).collect()
    }

    #[test]
    fn a_suite_shows_its_cell_the_time_left_by_its_plan_and_its_lines() {
        let mut m = Model::new("run --suite mine");
        m.plan_ends = Some(std::time::Instant::now() + std::time::Duration::from_secs(150));
        let tally = Tally {
            elapsed: std::time::Duration::from_secs(1),
            warming: true,
            completed: 10,
            failed: 0,
            rate: 10.0,
            unit: Default::default(),
        };
        m.tally("[  2/4] nginx  hello  c=8 2s ", &tally);
        m.lines.push((crate::Out::Stdout, "[  1/4] nginx  hello  c=4 2s  1,234 req/s".into()));
        m.tiers = vec![loadlab_lab::sampler::TierSample {
            tier: "php-fpm".into(),
            cpu_user_pct: 30.2,
            cpu_sys_pct: 12.0,
            rss_bytes: 8 << 20,
            processes: 3,
            pool: None,
        }];
        m.so_far = Some(("verdict so far".into(), vec!["hello · closed c=4".into()]));
        let shown = screen(&m);
        for said in [
            "about 2 min",
            "left by the plan",
            "[  2/4] nginx",
            "(warm-up)",
            "[  1/4] nginx",
            "php-fpm      42%    8.0 MiB",
            " verdict so far ",
            "hello · closed c=4",
        ] {
            assert!(shown.contains(said), "{said:?} not on the screen");
        }
    }

    #[test]
    fn the_screen_shows_the_rate_the_percentiles_and_each_flag() {
        let mut m = Model::new("bench http://127.0.0.1:1/");
        let tally = Tally {
            elapsed: std::time::Duration::from_millis(2500),
            warming: false,
            completed: 4000,
            failed: 1,
            rate: 1999.6,
            unit: Default::default(),
        };
        m.tally("", &tally);
        let errors = vec![(loadlab_engine::ErrorClass::Connreset, 1)];
        let s = Second {
            completed: 2000,
            failed: 1,
            errors,
            p50_us: Some(812),
            p99_us: Some(45_300),
            open: 8,
            cpu_us: 450_000,
            ..Default::default()
        };
        m.second(&s, &[Flag::Errors]);
        let mut terminal = Terminal::new(TestBackend::new(110, 30)).unwrap();
        terminal.draw(|f| draw(f, &m)).unwrap();
        let screen: String =
            terminal.backend().buffer().content().iter().map(|c| c.symbol()).collect();
        for said in [
            "now 2000 req/s",
            "p50 812 µs",
            "p99 45.3 ms",
            "open connections 8",
            "0.45 CPU",
            "connreset",
            "errors (second 1)",
        ] {
            assert!(screen.contains(said), "{said:?} not on the screen");
        }
    }
}
