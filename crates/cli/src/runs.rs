//! `loadlab runs`: the runs a store holds.

use std::path::PathBuf;
use std::time::UNIX_EPOCH;

use clap::Args;

use crate::exit::OK;
use crate::report_cmd::open_existing;
use crate::run::store_failure;

#[derive(Debug, Args)]
pub struct RunsArgs {
    /// The SQLite store.
    #[arg(long = "db")]
    pub db: Option<PathBuf>,
    /// One JSON array instead of the table.
    #[arg(long = "json")]
    pub json: bool,
}

pub fn run(args: RunsArgs) -> anyhow::Result<u8> {
    let store = open_existing(args.db.as_deref())?;
    let runs = store.runs().map_err(store_failure)?;
    if args.json {
        outln!("{}", serde_json::to_string_pretty(&runs)?)?;
        return Ok(OK);
    }
    outln!(
        "{:>4}  {:<28} {:<20} {:>8} {:>6}  status",
        "id",
        "suite",
        "started (UTC)",
        "minutes",
        "cells"
    )?;
    for r in runs {
        let secs =
            |t: std::time::SystemTime| t.duration_since(UNIX_EPOCH).map_or(0, |d| d.as_secs());
        let minutes = r.finished_at.map_or("-".to_string(), |f| {
            format!("{:.1}", (secs(f) - secs(r.started_at)) as f64 / 60.0)
        });
        outln!(
            "{:>4}  {:<28} {:<20} {:>8} {:>6}  {}",
            r.id,
            r.suite,
            utc(secs(r.started_at)),
            minutes,
            r.cells,
            r.status
        )?;
    }
    Ok(OK)
}

/// Seconds since the epoch as `YYYY-MM-DD HH:MM:SS` (UTC), by the civil-from-days algorithm
/// (Howard Hinnant's), to avoid a date crate for one column.
fn utc(secs: u64) -> String {
    let days = (secs / 86_400) as i64;
    let rem = secs % 86_400;
    let z = days + 719_468;
    let era = z.div_euclid(146_097);
    let doe = z - era * 146_097;
    let yoe = (doe - doe / 1_460 + doe / 36_524 - doe / 146_096) / 365;
    let doy = doe - (365 * yoe + yoe / 4 - yoe / 100);
    let mp = (5 * doy + 2) / 153;
    let d = doy - (153 * mp + 2) / 5 + 1;
    let m = if mp < 10 { mp + 3 } else { mp - 9 };
    let y = yoe + era * 400 + i64::from(m <= 2);
    format!("{y:04}-{m:02}-{d:02} {:02}:{:02}:{:02}", rem / 3600, rem / 60 % 60, rem % 60)
}

#[cfg(test)]
mod tests {
    #[test]
    fn utc_dates() {
        assert_eq!(super::utc(0), "1970-01-01 00:00:00");
        assert_eq!(super::utc(1_795_219_200), "2026-11-21 00:00:00");
        assert_eq!(super::utc(951_786_061), "2000-02-29 01:01:01");
    }
}
