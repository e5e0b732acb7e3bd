//! The report of a realistic suite: read back from SQLite, within size, complete.

use loadlab_report::{compare_table, verdicts};
use tempfile::TempDir;

use crate::support::{report_from_store, synthetic};

/// The bound: a report of a suite of about 100 cells stays under 2 MB.
const MAX_REPORT_BYTES: usize = 2 * 1024 * 1024;

#[test]
fn a_hundred_cell_report_is_under_two_megabytes() {
    let dir = TempDir::new().unwrap();
    let html = report_from_store(&dir.path().join("loadlab.db"));
    assert_eq!(synthetic::cells().len(), 99);
    assert!(html.len() < MAX_REPORT_BYTES, "the report is {} bytes", html.len());
    // Everything a reader looks for is there.
    for section in [
        "id=\"verdict\"",
        "id=\"throughput\"",
        "id=\"sweeps\"",
        "id=\"resources\"",
        "id=\"cells\"",
        "id=\"environment\"",
    ] {
        assert!(html.contains(section), "no {section}");
    }
    assert_eq!(html.matches("<details><summary>#").count(), 99, "one detail per cell");
    assert!(html.contains("nginx.conf"));
    assert!(!html.contains("<p class=\"chart-error\">"));
}

#[test]
fn the_synthetic_suite_has_the_verdicts_it_was_built_for() {
    let cells = synthetic::cells();
    let v = verdicts(&cells);
    let wp = v.iter().find(|g| g.workload == "wordpress-front").unwrap();
    assert_eq!(wp.winner.as_deref(), Some("varnish"));
    let h = wp.headline().unwrap();
    assert_eq!(h.worse, "nginx-php-fpm");
    assert!(h.ratio.unwrap().has_ci && h.significant);
    // Three repetitions per stack in the static ladder: never significant, and said so.
    let ladder = v.iter().find(|g| g.workload == "static-20k").unwrap();
    assert!(ladder.winner.is_none() && ladder.headline().unwrap().underpowered);
    assert!(v.iter().any(|g| g.flagged()));
}

#[test]
fn compare_two_runs_of_the_suite() {
    let old = synthetic::cells();
    let mut new = synthetic::cells();
    for c in new.iter_mut().filter(|c| c.stack == "nginx-php-fpm") {
        *c.metrics.get_mut("rps").unwrap() *= 1.3;
    }
    let table = compare_table("run 1", &old, "run 2", &new);
    let line = table
        .lines()
        .find(|l| {
            l.starts_with("wordpress-front · closed, 20 conn, keep-alive, 10 s · nginx-php-fpm")
        })
        .unwrap_or_else(|| panic!("{table}"));
    assert!(line.contains("+30.0% (p=0.001 n=7+7)"), "{line}");
    let same = table.lines().find(|l| l.contains("· varnish")).unwrap();
    assert!(same.contains("~ (p=1.000 n=7+7)"), "{same}");
}
