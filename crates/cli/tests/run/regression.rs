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
    let info = RunInfo {
        suite: "gate".into(),
        started_at: UNIX_EPOCH + Duration::from_secs(1_750_000_000),
        environment: Environment::default(),
    };
    let run = store.begin_run(&info).expect("begin a run");
    for (i, &v) in rps.iter().enumerate() {
        store.record_cell(run, &cell(i as u32, i as u32, v)).expect("record a cell");
    }
    store.finish_run(run, RunStatus::Finished, UNIX_EPOCH).expect("finish the run");
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
