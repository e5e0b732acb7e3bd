//! `bench`'s output formats. Each one is a struct behind the one-method [`Render`] trait and
//! reads only the [`Report`], whose distributions it carries whole for the formats that read
//! one.

mod csv;
mod json;
mod layouts;
mod merged;
pub mod seconds;
mod sessions_text;
mod text;
mod views_text;

/// `loadlab merge`'s text, bench's latency table of the added logs.
pub use merged::write_merged;

use std::io::{self, Write};
use std::path::Path;

use loadlab_stats::Recorder;

use loadlab_runner::commands::bench::Report;

#[derive(Debug, Clone, Copy, PartialEq, Eq, clap::ValueEnum)]
pub enum Format {
    /// Aligned, readable, with warnings beside the figures they touch.
    Text,
    /// Every figure, for scripts (schema: docs/json-schema.md).
    Json,
    /// ApacheBench's report layout, field for field.
    Ab,
    /// httperf's report layout, with its error names.
    Httperf,
    /// One header line and one row.
    Csv,
}

/// One output format.
pub trait Render {
    fn render(&self, report: &Report, out: &mut dyn Write) -> io::Result<()>;
}

/// Writes the report to `out` in `format`.
pub fn render(format: Format, report: &Report, out: &mut dyn Write) -> io::Result<()> {
    let renderer: &dyn Render = match format {
        Format::Text => &text::Text,
        Format::Json => &json::Json,
        Format::Ab => &layouts::Ab,
        Format::Httperf => &layouts::Httperf,
        Format::Csv => &csv::Csv,
    };
    renderer.render(report, out)
}

/// What another tool's layout (ab's, httperf's, CSV) has no place for, to be said on stderr
/// beside it so that stdout stays that tool's layout: the per-URL figures of `--urls`, the
/// replay's skipped lines, `--profile`'s tiers, and the `--slo` gate's verdict (when a request reached the target).
pub fn beside(format: Format, report: &Report, reached: bool) -> Vec<String> {
    let mut lines = Vec::new();
    if matches!(format, Format::Ab | Format::Httperf) {
        // A session log's requests are a list too; its session figures have their lines.
        if report.urls.is_some() && report.sessions.is_none() {
            lines.push(
                "note: the per-URL figures of --urls have no place in this layout; --format \
                 text, json or csv shows them"
                    .to_string(),
            );
        }
        if let Some(note) = report.replay.as_ref().and_then(|r| r.skipped_sentence()) {
            lines.push(format!("note: {note}"));
        }
    }
    let own_layout = matches!(format, Format::Ab | Format::Httperf | Format::Csv);
    if own_layout && report.profiles.as_ref().is_some_and(|p| p.tiers.is_ok()) {
        lines.push(
            "note: --profile's tiers have no place in this layout; --format text or json shows \
             them"
                .to_string(),
        );
    }
    if let (Some(v), true, true) = (&report.slo, own_layout, reached) {
        lines.push(v.line());
    }
    lines
}

/// `--hdr-log`: the run's per-second histograms in HdrHistogram's interval-log format, merged
/// over the workers second by second.
pub fn write_hdr_log(
    file: std::fs::File,
    log: &loadlab_engine::HdrLog,
    comment: &str,
) -> io::Result<()> {
    let mut out = io::BufWriter::new(file);
    loadlab_stats::interval_log::write_log(&mut out, log.start, comment, &log.latencies)?;
    out.flush()
}

/// The latency percentile spectrum as CSV, HdrHistogram's `outputPercentileDistribution`
/// columns: value, percentile, total count, 1/(1-percentile).
pub fn write_latency_csv(path: &Path, rec: &Recorder) -> io::Result<()> {
    let mut out = io::BufWriter::new(std::fs::File::create(path)?);
    writeln!(out, "value_us,percentile,total_count,one_over_one_minus_percentile")?;
    for (value, pct, total) in rec.spectrum(5) {
        let q = pct / 100.0;
        let inv = if q < 1.0 { format!("{:.2}", 1.0 / (1.0 - q)) } else { "inf".into() };
        writeln!(out, "{value},{:.6},{total},{inv}", q)?;
    }
    out.flush()
}
