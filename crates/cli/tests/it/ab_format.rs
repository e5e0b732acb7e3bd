//! `--format ab` against nginx, pinned by a snapshot (`tests/snapshots/ab_format.txt`) with
//! every timing, rate, port and version filtered out, so that ApacheBench's layout, which
//! scripts parse, cannot drift. `UPDATE_SNAPSHOTS=1` rewrites the snapshot.

use std::fs;
use std::path::PathBuf;

use super::assert_exit;
use super::nginx_bench::FILES;
use crate::support::{loadlab, output_within, require_nginx, RUN_LIMIT};

/// Where ab's labels end and values start: "Requests per second:    " is 24 characters.
const LABEL_WIDTH: usize = 24;

/// Lines whose value depends on timing, the port or the nginx version: the value is replaced
/// by a placeholder. Values here are left-aligned, so the placeholder hides their width too.
const VARIABLE_VALUES: [(&str, &str); 7] = [
    ("Server Port:", "[PORT]"),
    ("Time taken for tests:", "[SECONDS]"),
    // The head nginx sends holds its version, so the total changes with it.
    ("Total transferred:", "[BYTES]"),
    ("Requests per second:", "[RATE]"),
    ("Time per request:", "[MS]"),
    ("Transfer rate:", "[RATE]"),
    ("Server Software:", "[SOFTWARE]"),
];

#[test]
fn ab_layout_matches_the_snapshot() {
    let nginx = require_nginx!(FILES);
    let mut command = loadlab();
    command.args(["bench", &nginx.url("/hello.txt"), "-n", "200", "-c", "5"]);
    command.args(["--format", "ab", "--quiet"]);
    let output = output_within(command, RUN_LIMIT);
    assert_exit(&output, 0);
    let report = String::from_utf8(output.stdout).expect("UTF-8 report");

    // The labels that scripts written for ab grep for.
    for label in [
        "Complete requests:      200\n",
        "Failed requests:        0\n",
        "Keep-Alive requests:    200\n",
        "HTML transferred:       2600 bytes\n",
        "Requests per second:    ",
        "Time per request:       ",
        "Transfer rate:          ",
        "\nPercentage of the requests served within a certain time (ms)\n",
        "\nConnection Times (ms)\n",
    ] {
        assert!(report.contains(label), "no {label:?} in:\n{report}");
    }
    assert!(report.contains(&format!("Server Port:            {}\n", nginx.addr().port())));
    let total = value_of(&report, "Total transferred:").trim_end_matches(" bytes");
    let total: u64 = total.parse().expect("Total transferred is a byte count");
    assert!(total > 2600 && total.is_multiple_of(200), "200 identical responses: {total}");

    let filtered = filter(&report);
    let path = snapshot_path();
    if std::env::var_os("UPDATE_SNAPSHOTS").is_some() {
        fs::write(&path, &filtered).expect("write snapshot");
        return;
    }
    let expected = fs::read_to_string(&path).unwrap_or_else(|e| {
        panic!("{}: {e}; run with UPDATE_SNAPSHOTS=1 to create it", path.display())
    });
    assert!(
        filtered == expected,
        "--format ab no longer matches {} (UPDATE_SNAPSHOTS=1 rewrites it)\n--- expected ---\n\
         {expected}--- got ---\n{filtered}--- unfiltered ---\n{report}",
        path.display()
    );
}

#[test]
fn filter_keeps_layout_and_hides_values() {
    let report = "This is loadlab 0.1.0, printing ApacheBench's report layout\n\
                  Server Port:            43127\n\
                  Time per request:       0.191 [ms] (mean)\n\
                  Connect:        0    0   0.0      0       0\n\
                  Total:         12   13 104.5     10    1200\n  \
                  99%     17\n \
                  100%   1200 (longest request)\n\
                  WARNING: The median and mean for the total time are not within a normal \
                  deviation\n        These results are probably not that reliable.\n\
                  WARNING: client saturated: it used 95% of its CPU\n";
    let expected = "This is loadlab [VERSION], printing ApacheBench's report layout\n\
                    Server Port:            [PORT]\n\
                    Time per request:       [MS] [ms] (mean)\n\
                    Connect:        #    #     #      #       #\n\
                    Total:          #    #     #      #       #\n  \
                    99%      #\n \
                    100%      # (longest request)\n";
    assert_eq!(filter(report), expected);
}

fn snapshot_path() -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("tests/snapshots/ab_format.txt")
}

/// The value after `label` in an ab report.
fn value_of<'a>(report: &'a str, label: &str) -> &'a str {
    let line = report.lines().find(|l| l.starts_with(label)).expect("label present");
    line[LABEL_WIDTH..].trim_end()
}

/// The report with everything that changes from run to run replaced; what stays is ab's
/// layout: labels, units, blank lines and the column widths of both tables.
fn filter(report: &str) -> String {
    let mut out = String::new();
    let mut lines = report.lines();
    while let Some(line) = lines.next() {
        // ab's own skew warning depends on the latencies measured; its second line goes too.
        if line.starts_with("WARNING: The median and mean") {
            lines.next();
            continue;
        }
        // Whether the client saturates depends on the machine; any other warning is kept, as
        // none belongs in this run's report.
        if line.starts_with("WARNING: client saturated") {
            continue;
        }
        let filtered = if let Some(rest) = line.strip_prefix("This is loadlab ") {
            let (_, after) = rest.split_once(',').expect("version, then a comma");
            format!("This is loadlab [VERSION],{after}")
        } else if let Some((_, placeholder)) =
            VARIABLE_VALUES.iter().find(|(label, _)| line.starts_with(label))
        {
            let (label, value) = line.split_at(LABEL_WIDTH.min(line.len()));
            let unit = value.find(' ').map_or("", |i| &value[i..]);
            format!("{label}{placeholder}{unit}")
        } else if is_table_row(line) {
            mask_table_numbers(line)
        } else {
            line.to_string()
        };
        out.push_str(&filtered);
        out.push('\n');
    }
    out
}

/// Rows of "Connection Times (ms)" and of the percentile table, whose numbers are all timings.
fn is_table_row(line: &str) -> bool {
    ["Connect:", "Processing:", "Waiting:", "Total:"].iter().any(|l| line.starts_with(l))
        || line.trim_start().split_once('%').is_some_and(|(p, _)| p.parse::<u32>().is_ok())
}

/// Replaces each right-aligned number by `#` at the same end column (`   12` becomes
/// `    #`), so a column that moves shows while the values do not. The percentage labels
/// (`99%`) are kept.
fn mask_table_numbers(line: &str) -> String {
    let bytes = line.as_bytes();
    let mut out = String::new();
    let mut i = 0;
    while i < bytes.len() {
        let start = i;
        while i < bytes.len() && bytes[i] == b' ' {
            i += 1;
        }
        let digits = i;
        while i < bytes.len() && (bytes[i].is_ascii_digit() || bytes[i] == b'.') {
            i += 1;
        }
        let is_number = i > digits && bytes[digits].is_ascii_digit();
        if is_number && bytes.get(i) != Some(&b'%') {
            out.push_str(&" ".repeat(i - start - 1));
            out.push('#');
        } else {
            // Not a number (a label, "%", "(longest request)"): copy up to the next space.
            i = i.max(start + 1);
            while i < bytes.len() && bytes[i] != b' ' {
                i += 1;
            }
            out.push_str(&line[start..i]);
        }
    }
    out
}

/// Under an open loop ab's "Concurrency Level" is the most connections open at once and "Time
/// per request (mean)" the mean latency: at most the cap, at most the longest request; not the
/// connection cap (`--max-connections`) and that cap times the run's length over the requests
/// (20 s for latencies of microseconds).
#[test]
fn ab_layout_under_an_open_loop_says_the_peak_and_the_mean_latency() {
    use crate::support::{Behaviour, TestServer};
    let server = TestServer::start(Behaviour::ok("ok"));
    let mut command = loadlab();
    command.args(["bench", &server.url("/"), "--rate", "200", "-d", "500ms"]);
    command.args(["--max-connections", "3000", "--format", "ab", "--quiet"]);
    let output = output_within(command, RUN_LIMIT);
    assert_exit(&output, 0);
    let report = String::from_utf8(output.stdout).expect("UTF-8 report");
    let concurrency: usize =
        value_of(&report, "Concurrency Level:").parse().expect("Concurrency Level is a count");
    assert!((1..3000).contains(&concurrency), "{report}");
    let mean: f64 = value_of(&report, "Time per request:")
        .split_whitespace()
        .next()
        .and_then(|v| v.parse().ok())
        .expect("Time per request in ms");
    let longest: f64 = report
        .lines()
        .find(|l| l.contains("(longest request)"))
        .and_then(|l| l.split_whitespace().nth(1))
        .and_then(|v| v.parse().ok())
        .expect("the longest request");
    // ab rounds the longest to whole ms, half up.
    assert!(mean <= longest + 0.5, "mean {mean} ms, longest {longest} ms:\n{report}");
}
