//! `--format text`'s section for page views (`--view`): which question ran (first view, or
//! first and repeat view), views per second, page-load percentiles (for the repeat view
//! apart), and what a view fetched.

use std::io::{self, Write};

use loadlab_runner::commands::bench::views::{ViewFigures, Views};
use loadlab_stats::format::{count, micros as us};
use loadlab_stats::RecorderSummary;

/// The views' lines, before the visits'; nothing for other runs.
pub fn write(v: Option<&Views>, out: &mut dyn Write) -> io::Result<()> {
    let Some(v) = v else { return Ok(()) };
    writeln!(
        out,
        "  Views        {} completed, {} failed; {:.2} views/s ({} of {})",
        count(v.completed as f64),
        count(v.failed as f64),
        v.rps,
        v.cache,
        v.page
    )?;
    let rows: Vec<(&str, &ViewFigures)> = match &v.repeat {
        Some(repeat) => vec![("first view", &v.first), ("repeat view", repeat)],
        None => vec![("page load", &v.first)],
    };
    for (name, f) in rows {
        if f.completed > 0 {
            writeln!(out, "  {:<12} {}", name, percentiles(&f.load_time_us))?;
        }
    }
    writeln!(
        out,
        "               (page load: from a view's due time to its last resource's last byte)"
    )?;
    let list: Vec<String> = v
        .resources
        .iter()
        .map(|r| match r.repeat_view {
            Some(reuse) => format!("{} ({reuse})", r.path),
            None => r.path.clone(),
        })
        .collect();
    writeln!(out, "  Resources    {}: {}", list.len(), list.join(" "))?;
    if !v.skipped.is_empty() {
        writeln!(out, "  Skipped      {}: {}", v.skipped.len(), v.skipped.join(" "))?;
    }
    writeln!(out)
}

fn percentiles(l: &RecorderSummary) -> String {
    format!(
        "p50 {} p90 {} p99 {} max {} over {} views",
        us(l.p50 as f64),
        us(l.p90 as f64),
        us(l.p99 as f64),
        us(l.max as f64),
        count(l.count as f64)
    )
}
