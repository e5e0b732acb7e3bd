//! The figures of every second of a load that changes over time, as text and CSV rows: both
//! read the runner's [`Second`]s, so they say what the JSON `seconds` says.

use std::io::{self, Write};

use loadlab_engine::ErrorClass;
use loadlab_runner::seconds::Second;
use loadlab_stats::format::micros;

/// The text table: one line a second, its flags at the end of the line.
pub fn text(seconds: &[Second], out: &mut dyn Write) -> io::Result<()> {
    writeln!(out, "  Every second (latency from the due time; flags of that second)")?;
    writeln!(
        out,
        "  {:>5} {:>8} {:>8} {:>9} {:>6} {:>9} {:>9} {:>9} {:>6} {:>5}  flags",
        "sec", "offered", "achieved", "completed", "failed", "p50", "p90", "p99", "open", "cpu"
    )?;
    let time = |v: Option<u64>| v.map_or("-".to_string(), |v| micros(v as f64));
    for s in seconds {
        let mut flags: Vec<String> = s.flags.iter().map(|f| f.name().to_string()).collect();
        flags.extend(s.failed_by.iter().map(|(class, n)| format!("{class} {n}")));
        writeln!(
            out,
            "  {:>5} {:>8} {:>8} {:>9} {:>6} {:>9} {:>9} {:>9} {:>6} {:>4.0}%  {}",
            s.second,
            s.offered,
            s.achieved,
            s.completed,
            s.failed,
            time(s.p50_us),
            time(s.p90_us),
            time(s.p99_us),
            s.connections_open,
            s.client_cpu * 100.0,
            flags.join(", ")
        )?;
    }
    writeln!(out)
}

/// The CSV table: a header, then one row a second; every failure class has its column, so
/// the header is the same for every run; flags are `;`-separated in one column.
pub fn csv(seconds: &[Second], out: &mut dyn Write) -> io::Result<()> {
    let mut header = vec!["second", "offered", "achieved", "completed", "failed"];
    header.extend(ErrorClass::ALL.iter().map(|c| c.name()));
    header.extend(["p50_us", "p90_us", "p99_us", "connections_open", "client_cpu", "flags"]);
    writeln!(out, "{}", header.join(","))?;
    let opt = |v: Option<u64>| v.map_or(String::new(), |v| v.to_string());
    for s in seconds {
        let mut row = vec![
            s.second.to_string(),
            s.offered.to_string(),
            s.achieved.to_string(),
            s.completed.to_string(),
            s.failed.to_string(),
        ];
        row.extend(
            ErrorClass::ALL
                .iter()
                .map(|c| s.failed_by.get(c.name()).copied().unwrap_or(0).to_string()),
        );
        let flags: Vec<&str> = s.flags.iter().map(|f| f.name()).collect();
        row.extend([
            opt(s.p50_us),
            opt(s.p90_us),
            opt(s.p99_us),
            s.connections_open.to_string(),
            format!("{:.3}", s.client_cpu),
            flags.join(";"),
        ]);
        writeln!(out, "{}", row.join(","))?;
    }
    Ok(())
}
