//! `compare A B --fail-on-regression`: the CI gate between two stored runs. A significant
//! change for the worse exits 99 and names the cell; a better one, or one the repetitions
//! cannot tell from noise, exits 0.

use std::time::{Duration, UNIX_EPOCH};

use loadlab_store::{
    metric, CellRecord, Environment, LoadModel, LoadSpec, RunInfo, RunStatus, Store,
};

use super::Scratch;

fn cell(ordinal: u32, repetition: u32, rps: f64) -> CellRecord {
    let mut load = LoadSpec::new(LoadModel::Closed);
    load.connections = Some(50);
    CellRecord {
        ordinal,
        repetition,
        started_at: UNIX_EPOCH + Duration::from_secs(1_750_000_000),
        ..CellRecord::for_test("nginx", "hello.txt", load).with_metrics(&[(metric::RPS, rps)])
    }
}

/// Stores one run of `rps` repetitions.
fn store_run(store: &mut Store, rps: &[f64]) {
    let cells: Vec<CellRecord> =
        rps.iter().enumerate().map(|(i, &v)| cell(i as u32, i as u32, v)).collect();
    store_cells(store, &cells);
}

fn store_cells(store: &mut Store, cells: &[CellRecord]) {
    let info = RunInfo {
        suite: "gate".into(),
        started_at: UNIX_EPOCH + Duration::from_secs(1_750_000_000),
        environment: Environment::default(),
    };
    let run = store.begin_run(&info).expect("begin a run");
    for c in cells {
        store.record_cell(run, c).expect("record a cell");
    }
    store.finish_run(run, RunStatus::Finished, UNIX_EPOCH).expect("finish the run");
}

/// Repetitions of page views at 3 views/s, each completing `views` views/s: their requests'
/// rate (60 req/s) the same whatever the views'.
fn view_cells(views: f64) -> Vec<CellRecord> {
    (0..7)
        .map(|i| {
            let mut c = cell(i, i, 60.0);
            c.workload = "front page".into();
            c.load = LoadSpec::new(LoadModel::Open);
            c.load.rate = Some(3.0);
            c.metrics.insert(metric::VIEWS_RPS.into(), views + f64::from(i) * 0.01);
            c.metrics.insert(metric::VIEW_P99_US.into(), 40_000.0);
            c
        })
        .collect()
}

#[test]
fn a_significantly_slower_run_fails_the_gate_and_a_faster_or_noisy_one_does_not() {
    let scratch = Scratch::new();
    let db = scratch.db();
    std::fs::create_dir_all(scratch.out()).unwrap();
    let mut store = Store::open(&db).expect("a store");
    let fast = [1_210.0, 1_190.0, 1_205.0, 1_220.0, 1_200.0, 1_195.0, 1_215.0];
    let slow = [1_010.0, 990.0, 1_005.0, 1_020.0, 1_000.0, 995.0, 1_015.0];
    store_run(&mut store, &fast); // run 1
    store_run(&mut store, &slow); // run 2
                                  // Run 3: a little slower than run 1 (median 1,203 against 1,205), within its noise.
    store_run(&mut store, &[1_208.0, 1_192.0, 1_203.0, 1_218.0, 1_198.0, 1_196.0, 1_213.0]);
    drop(store);

    let gate =
        |a: &str, b: &str| scratch.run(&["compare", a, b, "--db", &db, "--fail-on-regression"]);
    let out = gate("1", "2");
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(99), "{stderr}");
    assert!(stderr.contains("loadlab: regression: nginx hello.txt closed, 50 conn"), "{stderr}");
    assert!(stderr.contains("req/s: -16.6% (p=0.001)"), "{stderr}");
    // The table is printed as without the flag.
    assert!(String::from_utf8_lossy(&out.stdout).starts_with("req/s"));

    let out = gate("2", "1");
    assert_eq!(out.status.code(), Some(0), "{}", String::from_utf8_lossy(&out.stderr));
    assert!(String::from_utf8_lossy(&out.stderr).contains("no significant regression"));
    let out = gate("1", "3");
    assert_eq!(out.status.code(), Some(0), "{}", String::from_utf8_lossy(&out.stderr));
}

/// A view workload's runs are compared on their views, not their requests: the
/// table's heading, the gate's line and `--json` say views/s.
#[test]
fn a_view_workload_is_compared_on_its_views_in_the_table_the_gate_and_the_json() {
    let scratch = Scratch::new();
    let db = scratch.db();
    std::fs::create_dir_all(scratch.out()).unwrap();
    let mut store = Store::open(&db).expect("a store");
    store_cells(&mut store, &view_cells(3.0));
    store_cells(&mut store, &view_cells(2.0));
    drop(store);

    let out = scratch.run(&["compare", "1", "2", "--db", &db]);
    let table = String::from_utf8_lossy(&out.stdout);
    assert!(table.starts_with("views/s "), "{table}");
    assert!(table.contains("front page · open, 3 views/s · nginx") && !table.contains("req/s"));

    let out = scratch.run(&["compare", "1", "2", "--db", &db, "--json", "--fail-on-regression"]);
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(99), "{stderr}");
    assert!(stderr.contains("front page open, 3 views/s views/s: -33.0% (p=0.001)"), "{stderr}");
    let json: serde_json::Value = serde_json::from_slice(&out.stdout).expect("JSON");
    let rate = &json[0];
    assert_eq!((rate["counted"].as_str(), rate["measure"].as_str()), (Some("views"), Some("rps")));
    assert_eq!(rate["old"]["median"].as_f64(), Some(3.03), "{rate}");
    assert!(rate["significant"].as_bool().unwrap(), "{rate}");
}

/// A p99 that rose in a run whose client missed its schedule (the figure marked `!`) is told
/// with the flag that marks it and does not fail the gate: the gate judges trusted figures.
#[test]
fn a_regression_of_a_figure_marked_untrusted_is_named_with_its_flag_and_not_gated() {
    let scratch = Scratch::new();
    let db = scratch.db();
    std::fs::create_dir_all(scratch.out()).unwrap();
    let mut store = Store::open(&db).expect("a store");
    let p99_cells = |p99: f64, missed: bool| -> Vec<CellRecord> {
        (0..7)
            .map(|i| {
                let mut c = cell(i, i, 1_000.0 + f64::from(i));
                c.metrics.insert(metric::P99_US.into(), p99 + f64::from(i));
                if missed {
                    c.flags.push(loadlab_store::TrustFlag {
                        flag: loadlab_store::Flag::ScheduleMissed,
                        detail: "never sent 40".into(),
                    });
                }
                c
            })
            .collect()
    };
    store_cells(&mut store, &p99_cells(2_000.0, false)); // run 1
    store_cells(&mut store, &p99_cells(9_000.0, true)); // run 2: the client fell behind
    store_cells(&mut store, &p99_cells(9_000.0, false)); // run 3: the server did
    drop(store);

    let gate =
        |a: &str, b: &str| scratch.run(&["compare", a, b, "--db", &db, "--fail-on-regression"]);
    let out = gate("1", "2");
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(0), "{stderr}");
    assert!(stderr.contains("regression of an untrusted figure, not gated: nginx"), "{stderr}");
    assert!(stderr.contains("(! run 2: schedule_missed in 7 repetitions)"), "{stderr}");
    assert!(stderr.contains("no significant regression of a trusted figure"), "{stderr}");
    // Told otherwise, the gate decides on it too, and says that it is untrusted.
    let args = ["compare", "1", "2", "--db", &db, "--fail-on-regression", "--gate-untrusted"];
    let out = scratch.run(&args);
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(99), "{stderr}");
    assert!(
        stderr.contains("regression of an untrusted figure, gated (--gate-untrusted): nginx"),
        "{stderr}"
    );
    assert!(stderr.contains("(! run 2: schedule_missed in 7 repetitions)"), "{stderr}");
    let alone = scratch.run(&["compare", "1", "2", "--db", &db, "--gate-untrusted"]);
    assert_eq!(alone.status.code(), Some(2), "{}", String::from_utf8_lossy(&alone.stderr));
    let out = gate("1", "3");
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(99), "{stderr}");
    assert!(
        stderr.contains("loadlab: regression: nginx hello.txt closed, 50 conn p99"),
        "{stderr}"
    );
}
