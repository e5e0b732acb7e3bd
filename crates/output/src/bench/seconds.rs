//! The figures of every second of a load that changes over time, as text and CSV rows: both
//! read the runner's [`Second`]s, so they say what the JSON `seconds` says.

use std::io::{self, Write};

use loadlab_engine::ErrorClass;
use loadlab_runner::judge::seconds::Second;
use loadlab_stats::format::micros;

/// The text table: one line a second, its flags at the end of the line. A closed loop's
/// seconds (`-c A..B`) have no schedule: nothing is offered (`-`), and their latency is from
/// each request's send.
pub fn text(seconds: &[Second], closed: bool, out: &mut dyn Write) -> io::Result<()> {
    let latency = if closed {
        "closed loop: nothing offered, latency from each request's send"
    } else {
        "latency from the due time"
    };
    writeln!(out, "  Every second ({latency}; flags of that second)")?;
    writeln!(
        out,
        "  {:>5} {:>8} {:>8} {:>9} {:>6} {:>9} {:>9} {:>9} {:>6} {:>5}  flags",
        "sec", "offered", "achieved", "completed", "failed", "p50", "p90", "p99", "open", "cpu"
    )?;
    let time = |v: Option<u64>| v.map_or("-".to_string(), |v| micros(v as f64));
    for s in seconds {
        // A partial last second says its length first: its counts are of that length.
        let partial = s.partial_s.map(|length| format!("partial {length:.2} s"));
        let mut flags: Vec<String> = partial.into_iter().collect();
        flags.extend(s.flags.iter().map(|f| f.name().to_string()));
        flags.extend(s.failed_by.iter().map(|(class, n)| format!("{class} {n}")));
        writeln!(
            out,
            "  {:>5} {:>8} {:>8} {:>9} {:>6} {:>9} {:>9} {:>9} {:>6} {:>4.0}%  {}",
            s.second,
            s.offered.map_or("-".to_string(), |o| o.to_string()),
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
/// the header is the same for every run; flags are `;`-separated in one column; `partial_s`
/// is the length of a partial last second, empty for a whole one.
pub fn csv(seconds: &[Second], out: &mut dyn Write) -> io::Result<()> {
    let mut header = vec!["second", "partial_s", "offered", "achieved", "completed", "failed"];
    header.extend(ErrorClass::ALL.iter().map(|c| c.name()));
    header.extend(["p50_us", "p90_us", "p99_us", "connections_open", "client_cpu", "flags"]);
    writeln!(out, "{}", header.join(","))?;
    let opt = |v: Option<u64>| v.map_or(String::new(), |v| v.to_string());
    for s in seconds {
        let mut row = vec![
            s.second.to_string(),
            s.partial_s.map_or(String::new(), |length| format!("{length:.3}")),
            opt(s.offered),
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

#[cfg(test)]
mod tests {
    use loadlab_runner::judge::seconds::Second;

    fn second(second: u32, partial_s: Option<f64>, completed: u64) -> Second {
        Second {
            second,
            partial_s,
            offered: Some(completed),
            achieved: completed,
            completed,
            failed: 0,
            failed_by: Default::default(),
            p50_us: None,
            p90_us: None,
            p99_us: None,
            connections_open: 1,
            client_cpu: 0.1,
            flags: Vec::new(),
            flagged_agents: Vec::new(),
        }
    }

    /// A stopped run's partial last second is a row like the others, marked with its length,
    /// in the text table and the CSV alike.
    #[test]
    fn a_partial_last_second_is_marked_with_its_length() {
        let rows = [second(0, None, 100), second(1, Some(0.4), 40)];
        let mut text = Vec::new();
        super::text(&rows, false, &mut text).unwrap();
        let text = String::from_utf8(text).unwrap();
        let lines: Vec<&str> = text.lines().filter(|l| !l.trim().is_empty()).collect();
        assert_eq!(lines.len(), 4, "{text}");
        assert!(!lines[2].contains("partial"), "{text}");
        assert!(lines[3].ends_with("partial 0.40 s"), "{text}");
        let mut csv = Vec::new();
        super::csv(&rows, &mut csv).unwrap();
        let csv = String::from_utf8(csv).unwrap();
        let cells: Vec<Vec<&str>> = csv.lines().map(|l| l.split(',').collect()).collect();
        let column = cells[0].iter().position(|h| *h == "partial_s").expect("a partial_s column");
        assert_eq!((cells[1][column], cells[2][column]), ("", "0.400"), "{csv}");
        assert!(cells.iter().all(|r| r.len() == cells[0].len()), "{csv}");
    }

    /// A closed loop's seconds (`-c A..B`) have no schedule: its table says so, offers
    /// nothing (`-`, not 0; an empty CSV cell) and says where its latency starts.
    #[test]
    fn a_closed_loops_seconds_say_they_are_a_closed_loops() {
        let open_rows = [second(0, None, 100)];
        let closed_rows = [Second { offered: None, ..second(0, None, 100) }];
        let table = |closed| {
            let mut text = Vec::new();
            let rows = if closed { &closed_rows } else { &open_rows };
            super::text(rows, closed, &mut text).unwrap();
            String::from_utf8(text).unwrap()
        };
        let mut csv = Vec::new();
        super::csv(&closed_rows, &mut csv).unwrap();
        let csv = String::from_utf8(csv).unwrap();
        let cells: Vec<Vec<&str>> = csv.lines().map(|l| l.split(',').collect()).collect();
        let column = cells[0].iter().position(|h| *h == "offered").expect("an offered column");
        assert_eq!(cells[1][column], "", "{csv}");
        let (closed, open) = (table(true), table(false));
        assert!(closed.contains("closed loop: nothing offered, latency from each request's send"));
        assert!(!closed.contains("due time"), "{closed}");
        let row = |t: &str| t.lines().nth(2).unwrap().split_whitespace().nth(1).unwrap().to_owned();
        assert_eq!((row(&closed), row(&open)), ("-".to_string(), "100".to_string()));
        assert!(open.contains("latency from the due time"), "{open}");
    }
}
