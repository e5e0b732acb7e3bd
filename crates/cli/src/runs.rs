//! `loadlab runs`: the runs a store holds.

use clap::Args;

use crate::exit::failure;
use crate::exit::OK;
use crate::report_cmd::open_existing;

#[derive(Debug, Args)]
pub struct RunsArgs {
    #[command(flatten)]
    pub store: crate::report_cmd::StoreArgs,
    /// One JSON array instead of the table.
    #[arg(long = "json")]
    pub json: bool,
}

pub fn run(args: RunsArgs) -> anyhow::Result<u8> {
    let store = open_existing(&args.store)?;
    let runs = store.runs().map_err(failure)?;
    if args.json {
        // Times as Unix seconds and as text, not serde's raw SystemTime structure.
        let unix = |t: std::time::SystemTime| {
            t.duration_since(std::time::UNIX_EPOCH).map_or(0.0, |d| d.as_secs_f64())
        };
        let rows: Vec<serde_json::Value> = runs
            .iter()
            .map(|summary| {
                let r = &summary.run;
                serde_json::json!({
                    "id": r.id,
                    "suite": r.suite,
                    "started_at": loadlab_report::format::utc(r.started_at),
                    "started_unix_s": unix(r.started_at),
                    "finished_at": r.finished_at.map(loadlab_report::format::utc),
                    "finished_unix_s": r.finished_at.map(unix),
                    "status": r.status,
                    "reason": r.reason,
                    "cells": summary.cells,
                })
            })
            .collect();
        outln!("{}", serde_json::to_string_pretty(&rows)?)?;
        return Ok(OK);
    }
    outln!(
        "{:>4}  {:<28} {:<24} {:>8} {:>6}  status",
        "id",
        "suite",
        "started",
        "minutes",
        "cells"
    )?;
    for summary in runs {
        let r = &summary.run;
        let minutes = r.finished_at.map_or("-".to_string(), |f| {
            let took = f.duration_since(r.started_at).unwrap_or_default();
            format!("{:.1}", took.as_secs_f64() / 60.0)
        });
        outln!(
            "{:>4}  {:<28} {:<24} {:>8} {:>6}  {}",
            r.id,
            r.suite,
            loadlab_report::format::utc(r.started_at),
            minutes,
            summary.cells,
            status(r)
        )?;
    }
    Ok(OK)
}

/// A run's status as the table shows it: a failed run's with why.
fn status(r: &loadlab_store::Run) -> String {
    match &r.reason {
        Some(why) => format!("{}: {why}", r.status),
        None => r.status.to_string(),
    }
}
