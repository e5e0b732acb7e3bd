//! Hand-made cells for unit tests: only the fields a test names are set, the rest is empty.

use std::sync::atomic::{AtomicU32, Ordering};
use std::time::{Duration, UNIX_EPOCH};

use loadlab_store::{
    metric, CellRecord, Environment, Flag, LoadModel, LoadSpec, Run, RunId, RunStatus, TrustFlag,
};

static ORDINAL: AtomicU32 = AtomicU32::new(0);

/// A closed-loop cell of `stack` on `workload` at `connections`, measuring `rps` req/s.
pub fn cell(
    stack: &str,
    workload: &str,
    connections: u64,
    repetition: u32,
    rps: f64,
) -> CellRecord {
    let mut load = LoadSpec::new(LoadModel::Closed);
    load.connections = Some(connections);
    load.duration_s = Some(10.0);
    with_load(stack, workload, load, repetition, &[(metric::RPS, rps)])
}

/// An open-loop cell at `rate` req/s measuring `p99_us`.
pub fn open_cell(stack: &str, workload: &str, rate: f64, repetition: u32, p99: f64) -> CellRecord {
    let mut load = LoadSpec::new(LoadModel::Open);
    load.rate = Some(rate);
    with_load(stack, workload, load, repetition, &[(metric::RPS, rate), (metric::P99_US, p99)])
}

/// A cell with `load` and exactly `metrics`.
pub fn with_load(
    stack: &str,
    workload: &str,
    load: LoadSpec,
    repetition: u32,
    metrics: &[(&str, f64)],
) -> CellRecord {
    let ordinal = ORDINAL.fetch_add(1, Ordering::Relaxed);
    CellRecord {
        ordinal,
        repetition,
        started_at: UNIX_EPOCH + Duration::from_secs(1_750_000_000 + u64::from(ordinal) * 15),
        ..CellRecord::for_test(stack, workload, load).with_metrics(metrics)
    }
}

/// `cells` of `stack` with one repetition per value.
pub fn reps(stack: &str, workload: &str, connections: u64, rps: &[f64]) -> Vec<CellRecord> {
    rps.iter().enumerate().map(|(i, &v)| cell(stack, workload, connections, i as u32, v)).collect()
}

/// Raises `flag` on `c`.
pub fn flagged(mut c: CellRecord, flag: Flag, detail: &str) -> CellRecord {
    c.flags.push(TrustFlag { flag, detail: detail.to_owned() });
    c
}

/// A finished run of the `classic` suite on a 2-CPU machine, for the cells above.
pub fn run() -> Run {
    Run {
        id: RunId(7),
        suite: "classic".into(),
        started_at: UNIX_EPOCH + Duration::from_secs(1_750_000_000),
        finished_at: Some(UNIX_EPOCH + Duration::from_secs(1_750_000_300)),
        status: RunStatus::Finished,
        reason: None,
        environment: Environment {
            hostname: "lab1".into(),
            cpu_count: 2,
            loadlab_version: "0.1.0".into(),
            ..Environment::default()
        },
    }
}
