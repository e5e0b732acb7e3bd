//! A suite load that changes over time, end to end: the built-in `ramp` suite under `--quick`
//! against the lab's real nginx, into a store whose per-second rows are the run's own (the
//! offered requests of each second are the shape's integral over that second, the seconds'
//! completions add up to the cell's), and a report that draws every cell's seconds. Needs
//! nginx (skipped locally without it, a failure in CI).

use loadlab_engine::Shape;
use loadlab_store::{metric, Store};

use super::{require, Scratch};

/// The arrivals due in second `s` of `shape` under fixed arrivals: arrival k is due when the
/// integral reaches k, so second s holds those with Λ(s) <= k < Λ(s+1).
fn due_in_second(shape: &Shape, s: u32) -> u64 {
    let due_before = |t: f64| shape.integral(t).ceil() as u64;
    due_before(f64::from(s) + 1.0) - due_before(f64::from(s))
}

#[test]
fn the_ramp_suite_stores_each_second_as_the_run_measured_it() {
    let scratch = Scratch::new();
    if let Err(skip) = require(&scratch, &["nginx"]) {
        skip.report();
        return;
    }
    let out = scratch.out().display().to_string();
    let stdout = scratch.ok(&["run", "--suite", "ramp", "--quick", "--out", &out]);
    assert!(stdout.contains("open stages "), "the plan names the stages:\n{stdout}");

    let store = Store::open(scratch.db()).expect("the run's store");
    let run = store.latest_run().expect("runs").expect("a run");
    let cells = store.cells(run).expect("its cells");
    assert!(!cells.is_empty(), "{stdout}");
    for c in &cells {
        let stages = c.load.stages().unwrap_or_else(|| panic!("no stages in {:?}", c.load));
        let shape = Shape::parse_stages(stages).expect("the stored stages parse");
        let secs = shape.duration().as_secs() as usize;
        assert_eq!(c.seconds.len(), secs, "cell {}: {:?}", c.ordinal, c.seconds);
        assert!(c.duration_s >= secs as f64, "cell {}: {}", c.ordinal, c.duration_s);
        for (s, row) in c.seconds.iter().enumerate() {
            let due = due_in_second(&shape, s as u32);
            // One arrival may fall either side of a second's edge by rounding.
            assert!(
                row.offered.abs_diff(due) <= 1,
                "cell {} second {s}: {row:?} due {due}",
                c.ordinal
            );
            if let (Some(p50), Some(p99)) = (row.p50_us, row.p99_us) {
                assert!(p50 <= p99 && p99 > 0, "cell {} second {s}: {row:?}", c.ordinal);
            }
        }
        // Every second together offers the whole shape (±1 for its last arrival).
        let offered: u64 = c.seconds.iter().map(|r| r.offered).sum();
        let whole = shape.total().ceil() as u64;
        assert!(offered.abs_diff(whole) <= 1, "cell {}: {offered} of {whole}", c.ordinal);
        // A late second may send more than it offered, catching up: never more in all.
        let achieved: u64 = c.seconds.iter().map(|r| r.achieved).sum();
        assert!(achieved <= offered, "cell {}: {achieved} sent of {offered}", c.ordinal);
        // The seconds' completions are the cell's.
        let completed: u64 = c.series.buckets().iter().map(|b| b.completed).sum();
        assert_eq!(completed as f64, c.metrics[metric::COMPLETED], "cell {}", c.ordinal);
        // A second with completions has its percentiles, from its own histogram.
        for (b, row) in c.series.buckets().iter().zip(&c.seconds) {
            assert_eq!(b.completed > 0, row.p99_us.is_some(), "cell {}: {row:?}", c.ordinal);
        }
    }

    let page = std::fs::read_to_string(scratch.out().join("report.html")).expect("the report");
    assert!(page.contains("<section id=\"seconds\">"), "no section of seconds");
    assert_eq!(page.matches("every second of ").count(), cells.len(), "a chart per cell");
}

/// A bad shape in a suite file stops `run` before anything starts: one line naming the file,
/// line, column and key, exit 2.
#[test]
fn a_bad_shape_in_a_suite_is_refused_in_one_line_with_exit_2() {
    let scratch = Scratch::new();
    let text =
        "name = \"bad\"\n[[stacks]]\nname = \"nginx\"\n[[workloads]]\nname = \"hello.txt\"\n\
                [[loads]]\nmodel = \"open\"\nstages = \"10s:0..100,5x:100\"\n";
    let file = scratch.write("bad.toml", text);
    let output = scratch.run(&["run", "--suite", &file, "--dry-run"]);
    assert_eq!(output.status.code(), Some(2), "{output:?}");
    let stderr = String::from_utf8_lossy(&output.stderr);
    assert_eq!(stderr.trim_end().lines().count(), 1, "{stderr}");
    let want = format!("{file}:8:10: stages: \"5x:100\": \"5x\" has no known unit");
    assert!(stderr.contains(&want), "{want}\n{stderr}");
}
