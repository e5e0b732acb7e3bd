//! `loadlab merge`'s text: the agents' interval logs added, as bench prints its latency.

use std::io::{self, Write};

use loadlab_stats::log_merge::Figures;

use super::text::{latency_header, percentiles as latency_row};

/// The merged test's intervals, requests and latency table.
pub fn write_merged(out: &mut dyn Write, f: &Figures) -> io::Result<()> {
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
    latency_header(out)?;
    match (&f.latency_us, &f.service_time_us) {
        (Some(latency), Some(service)) => {
            latency_row(out, "from due", latency)?;
            latency_row(out, "service", service)?;
        }
        (Some(latency), None) => latency_row(out, "", latency)?,
        (None, Some(service)) => latency_row(out, "service", service)?,
        (None, None) => {}
    }
    writeln!(out, "               (percentiles of the added histograms, never averaged)")
}
