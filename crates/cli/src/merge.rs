//! `loadlab merge FILE...`: agents' interval logs (`--hdr-log`) added into one result, printed
//! as bench prints its latency (text or JSON), and optionally written as one interval log. The
//! adding and the refusals are the stats crate's (`log_merge`); this file reads, and prints.

use std::io::Write as _;
use std::path::PathBuf;

use anyhow::Context as _;
use clap::{Args, ValueEnum};
use loadlab_output::bench as output;
use loadlab_stats::log_merge::{self, MergeError, Merged};
use loadlab_stats::RecorderSummary;
use serde::Serialize;

use crate::exit::Failure;

#[derive(Debug, Args)]
pub struct MergeArgs {
    /// The interval logs to add (each written by `bench --hdr-log` on one agent)
    #[arg(value_name = "FILE", required = true)]
    pub files: Vec<PathBuf>,
    /// Output format
    #[arg(long, value_enum, default_value_t = MergeFormat::Text)]
    pub format: MergeFormat,
    /// Also write the merged interval log to FILE (the form --hdr-log writes)
    #[arg(long = "hdr-log", value_name = "FILE")]
    pub hdr_log: Option<PathBuf>,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq, ValueEnum)]
pub enum MergeFormat {
    /// The latency table bench prints
    Text,
    /// The merged figures, for scripts
    Json,
}

/// What `--format json` prints: bench's JSON names for the same figures.
#[derive(Debug, Serialize)]
struct MergedJson {
    files: Vec<String>,
    /// When the merged test's first interval began, seconds since the epoch.
    start_unix_s: f64,
    interval_s: f64,
    /// Intervals from the first to the last (with or without requests).
    intervals: u64,
    /// Corrected latency in the open loop (from each request's due time); the only latency of
    /// the closed loop.
    latency_us: Option<RecorderSummary>,
    /// Open loop only: from when each request was sent.
    service_time_us: Option<RecorderSummary>,
    /// Per interval and tag: its index, count, p50 and p99.
    per_interval: Vec<IntervalJson>,
}

#[derive(Debug, Serialize)]
struct IntervalJson {
    index: u64,
    tag: Option<String>,
    count: u64,
    p50_us: u64,
    p99_us: u64,
}

pub fn run(args: MergeArgs) -> anyhow::Result<u8> {
    let mut logs = Vec::new();
    for path in &args.files {
        let name = path.display().to_string();
        let text = std::fs::read(path)
            .map_err(|e| Failure::Usage(format!("{name}: cannot read it: {e}")))?;
        logs.push((name.clone(), log_merge::read(&name, &text).map_err(refused)?));
    }
    let merged = log_merge::merge(&logs).map_err(refused)?;
    if let Some(path) = &args.hdr_log {
        let file = std::fs::File::create(path).map_err(|e| {
            Failure::Usage(format!("--hdr-log {}: cannot create it: {e}", path.display()))
        })?;
        let mut out = std::io::BufWriter::new(file);
        let names: Vec<&str> = logs.iter().map(|(n, _)| n.as_str()).collect();
        let comment = format!("loadlab {} merge {}", env!("CARGO_PKG_VERSION"), names.join(" "));
        merged.write(&mut out, &comment).with_context(|| format!("writing {}", path.display()))?;
        out.flush().with_context(|| format!("writing {}", path.display()))?;
    }
    let files = logs.into_iter().map(|(n, _)| n).collect();
    let figures = figures(&merged, files);
    match args.format {
        MergeFormat::Json => outln!("{}", serde_json::to_string_pretty(&figures)?)?,
        MergeFormat::Text => text(&figures)?,
    }
    Ok(crate::exit::OK)
}

/// A refusal: unreadable logs are bad input; logs that cannot be added have their own code.
fn refused(e: MergeError) -> anyhow::Error {
    match e {
        MergeError::Unreadable { .. } | MergeError::Empty => Failure::Usage(e.to_string()).into(),
        MergeError::Settings { .. } | MergeError::Misaligned { .. } => {
            Failure::Unmergeable(e.to_string()).into()
        }
    }
}

/// The figures of the merged test: each tag's intervals added, and each interval's own.
fn figures(merged: &Merged, files: Vec<String>) -> MergedJson {
    let total = |tag: Option<&str>| merged.total(tag).map(|h| log_merge::summary(&h));
    // bench's tags: the open loop writes "corrected" and "uncorrected", the closed loop one
    // untagged latency.
    let latency = total(Some("corrected")).or_else(|| total(None));
    let per_interval = merged
        .intervals
        .iter()
        .map(|((index, tag), h)| IntervalJson {
            index: *index,
            tag: tag.clone(),
            count: h.len(),
            p50_us: h.value_at_quantile(0.5),
            p99_us: h.value_at_quantile(0.99),
        })
        .collect();
    MergedJson {
        files,
        start_unix_s: merged.base.as_secs_f64(),
        interval_s: merged.length.as_secs_f64(),
        intervals: merged.span(),
        latency_us: latency,
        service_time_us: total(Some("uncorrected")),
        per_interval,
    }
}

fn text(f: &MergedJson) -> anyhow::Result<()> {
    let mut out = std::io::BufWriter::new(std::io::stdout().lock());
    writeln!(
        out,
        "Merged {} interval logs: {} intervals of {} s",
        f.files.len(),
        f.intervals,
        f.interval_s
    )?;
    let timed = f.latency_us.as_ref().map_or(0, |l| l.count);
    writeln!(out, "  Requests     {timed} timed (completed requests, summed over the logs)")?;
    writeln!(out)?;
    output::latency_header(&mut out)?;
    match (&f.latency_us, &f.service_time_us) {
        (Some(latency), Some(service)) => {
            output::latency_row(&mut out, "from due", latency)?;
            output::latency_row(&mut out, "service", service)?;
        }
        (Some(latency), None) => output::latency_row(&mut out, "", latency)?,
        (None, Some(service)) => output::latency_row(&mut out, "service", service)?,
        (None, None) => {}
    }
    writeln!(out, "               (percentiles of the added histograms, never averaged)")?;
    out.flush()?;
    Ok(())
}
