//! The store end to end on real SQLite files, each test in its own temp directory.

use std::collections::BTreeMap;
use std::path::Path;
use std::process::Command;
use std::time::{Duration, Instant, SystemTime, UNIX_EPOCH};

use loadlab_stats::{Recorder, Series};
use loadlab_store::{
    metric, CellRecord, ConfigRecord, Counted, Environment, Flag, Histograms, Limit, LimitedBy,
    LoadModel, LoadSpec, ProfileRecord, RunInfo, RunStatus, Sample, SecondRecord, StepRecord,
    Store, StoreError, TrustFlag,
};
use serde_json::json;
use tempfile::TempDir;

/// A time with whole milliseconds, the store's precision.
fn at(ms: u64) -> SystemTime {
    UNIX_EPOCH + Duration::from_millis(ms)
}

fn run_info(suite: &str) -> RunInfo {
    RunInfo {
        suite: suite.to_owned(),
        started_at: at(1_750_000_000_000),
        environment: Environment {
            hostname: "lab1".into(),
            kernel: "6.1.0-18-amd64".into(),
            cpu_model: "AMD EPYC 7B13".into(),
            cpu_count: 2,
            loadlab_version: "0.1.0".into(),
            packages: BTreeMap::from([
                ("nginx".into(), "1.22.1-9".into()),
                ("php8.2-fpm".into(), "8.2.20-1~deb12u1".into()),
            ]),
        },
    }
}

/// A deterministic spread of latencies from ~50 µs to ~1 s (an LCG, so no rand dependency).
fn latencies(seed: u64, n: usize) -> Recorder {
    let mut r = Recorder::new();
    let mut x = seed;
    for _ in 0..n {
        x = x.wrapping_mul(6364136223846793005).wrapping_add(1442695040888963407);
        let u = (x >> 11) as f64 / (1u64 << 53) as f64;
        // Log-uniform: exercises many HDR buckets, as a real tail does.
        r.record((50.0 * (20_000.0f64).powf(u)) as u64);
    }
    r
}

/// A cell as a realistic 10-minute measurement produces it: 6 histograms, `seconds` series
/// rows and `seconds` samples for each of `tiers` tiers.
fn cell(ordinal: u32, seconds: usize, tiers: usize) -> CellRecord {
    let mut series = Series::with_capacity(seconds);
    for s in 0..seconds {
        let b = series.at(s);
        b.completed = 1_000 + s as u64;
        b.failed = (s % 7) as u64;
        b.bytes = 20_480 * b.completed;
    }
    let tier_names = ["nginx", "php-fpm", "mariadb", "varnish"];
    let samples = (0..tiers)
        .flat_map(|t| {
            (0..seconds).map(move |s| Sample {
                tier: tier_names[t % tier_names.len()].to_owned(),
                t_ms: s as u64 * 1_000,
                cpu_user_s: s as f64 * 0.25,
                cpu_sys_s: s as f64 * 0.125,
                rss_bytes: 50_000_000 + s as u64,
                processes: 5,
                loadavg: 1.5,
                machine_cpu: 0.75,
            })
        })
        .collect();
    let mut load = LoadSpec::new(LoadModel::Open);
    load.rate = Some(2_000.0);
    load.duration_s = Some(seconds as f64);
    load.connections = Some(64);
    load.keepalive = true;
    load.extra.insert("arrival".into(), json!("poisson"));
    CellRecord {
        ordinal,
        stack: "nginx-php-fpm".into(),
        knobs: BTreeMap::from([("pm".into(), json!("static")), ("workers".into(), json!(4))]),
        workload: "wordpress-front".into(),
        load,
        repetition: ordinal % 3,
        started_at: at(1_750_000_001_000 + u64::from(ordinal) * 700_000),
        duration_s: seconds as f64,
        metrics: BTreeMap::from([
            (metric::RPS.into(), 1_987.25),
            (metric::P50_US.into(), 812.0),
            (metric::P99_US.into(), 45_311.0),
            (metric::ERRORS.into(), 3.0),
            (metric::CPU_US_PER_REQUEST.into(), 41.5),
        ]),
        histograms: Histograms {
            latency: Some(latencies(1 + u64::from(ordinal), 100_000)),
            uncorrected: Some(latencies(2, 100_000)),
            connect: Some(latencies(3, 5_000)),
            tls: None,
            waiting: Some(latencies(4, 100_000)),
            processing: Some(latencies(5, 100_000)),
            lifetime: Some(latencies(6, 1_000_000)),
        },
        series,
        seconds: judged_seconds(seconds),
        steps: visit_steps(ordinal),
        samples,
        flags: vec![
            TrustFlag { flag: Flag::Errors, detail: "3 connreset of 1 192 350".into() },
            TrustFlag { flag: Flag::Other("warm_cache".into()), detail: String::new() },
        ],
        // An odd cell is a visit workload's (its steps), as the runner decided.
        counted: Some(if ordinal.is_multiple_of(2) { Counted::Requests } else { Counted::Visits }),
        limited_by: ordinal.is_multiple_of(2).then(|| LimitedBy {
            limit: Limit::WorkerPool("php-fpm".into()),
            evidence: "5 of 5 children busy, listen queue 37".into(),
        }),
        slo: ordinal.is_multiple_of(2).then(|| "p99<50ms,errors<0.1%".into()),
    }
}

/// The judged figures of `n` seconds of a ramp: rising offered rate, a second with no
/// completion (no percentiles), a flagged one.
fn judged_seconds(n: usize) -> Vec<SecondRecord> {
    (0..n)
        .map(|s| SecondRecord {
            offered: 100 * s as u64,
            achieved: 100 * s as u64 - (s as u64 % 3),
            p50_us: (s > 0).then_some(800 + s as u64),
            p90_us: (s > 0).then_some(2_000 + s as u64),
            p99_us: (s > 0).then_some(9_000 + s as u64),
            connections_open: 4 + s as u64,
            flags: match s % 4 {
                3 => vec![Flag::ClientStarved, Flag::Errors],
                1 => vec![Flag::Other("from_a_newer_loadlab".into())],
                _ => Vec::new(),
            },
        })
        .collect()
}

/// An odd cell is a visit workload's: a step completed by every visit, then one that some
/// failed (two classes) and none completed (no latency).
fn visit_steps(ordinal: u32) -> Vec<StepRecord> {
    if ordinal.is_multiple_of(2) {
        return Vec::new();
    }
    vec![
        StepRecord {
            label: "1 GET /".into(),
            started: 40,
            completed: 40,
            failed: BTreeMap::new(),
            p50_us: Some(12_000),
            p99_us: Some(90_000 + u64::from(ordinal)),
        },
        StepRecord {
            label: "2 GET /?s={word}".into(),
            started: 40,
            completed: 0,
            failed: BTreeMap::from([("status".into(), 37), ("timeout".into(), 3)]),
            p50_us: None,
            p99_us: None,
        },
    ]
}

fn assert_same_cell(got: &CellRecord, want: &CellRecord) {
    assert_eq!(got.ordinal, want.ordinal);
    assert_eq!(got.stack, want.stack);
    assert_eq!(got.knobs, want.knobs);
    assert_eq!(got.workload, want.workload);
    assert_eq!(got.load, want.load);
    assert_eq!(got.repetition, want.repetition);
    assert_eq!(got.counted, want.counted);
    assert_eq!(got.limited_by, want.limited_by);
    assert_eq!(got.slo, want.slo);
    assert_eq!(got.started_at, want.started_at);
    assert_eq!(got.duration_s, want.duration_s);
    assert_eq!(got.metrics, want.metrics);
    assert_eq!(got.series, want.series);
    assert_eq!(got.seconds, want.seconds);
    assert_eq!(got.steps, want.steps);
    assert_eq!(got.samples, want.samples);
    assert_eq!(got.flags, want.flags);
    let names = |c: &CellRecord| c.histograms.named().map(|(n, _)| n).collect::<Vec<_>>();
    assert_eq!(names(got), names(want));
    for ((name, g), (_, w)) in got.histograms.named().zip(want.histograms.named()) {
        // Every percentile and the exact moments, not just a few points.
        assert_eq!(g.summary(), w.summary(), "{name}");
        assert_eq!(g.spectrum(5), w.spectrum(5), "{name}");
    }
}

fn open(dir: &TempDir) -> Store {
    Store::open(dir.path().join("results.db")).unwrap()
}

#[test]
fn a_full_cell_round_trips() {
    let dir = TempDir::new().unwrap();
    let mut store = open(&dir);
    let run = store.begin_run(&run_info("wordpress-cache-layers")).unwrap();
    let want = cell(0, 60, 3);
    store.record_cell(run, &want).unwrap();
    drop(store);

    let store = open(&dir);
    let got = store.cells(run).unwrap();
    assert_eq!(got.len(), 1);
    assert_same_cell(&got[0], &want);
    let p99 = got[0].histograms.latency.as_ref().unwrap().percentile(99.0);
    assert_eq!(p99, want.histograms.latency.as_ref().unwrap().percentile(99.0));
    assert!(p99 > 0);
}

#[test]
fn cells_come_back_in_plan_order_with_their_own_children() {
    let dir = TempDir::new().unwrap();
    let mut store = open(&dir);
    let run = store.begin_run(&run_info("classic")).unwrap();
    let other = store.begin_run(&run_info("other")).unwrap();
    let cells: Vec<_> = [2, 0, 1].into_iter().map(|o| cell(o, 5, 2)).collect();
    for c in &cells {
        store.record_cell(run, c).unwrap();
    }
    store.record_cell(other, &cell(7, 3, 1)).unwrap();

    let got = store.cells(run).unwrap();
    assert_eq!(got.iter().map(|c| c.ordinal).collect::<Vec<_>>(), [0, 1, 2]);
    for g in &got {
        let want = cells.iter().find(|c| c.ordinal == g.ordinal).unwrap();
        assert_same_cell(g, want);
    }
    assert_eq!(store.cells(other).unwrap().len(), 1);
}

#[test]
fn empty_recorders_series_and_nan_metrics_survive() {
    let dir = TempDir::new().unwrap();
    let mut store = open(&dir);
    let run = store.begin_run(&run_info("edge")).unwrap();
    let mut c = cell(0, 0, 0);
    c.histograms = Histograms { latency: Some(Recorder::new()), ..Histograms::default() };
    c.metrics =
        BTreeMap::from([("cpu_us_per_request".into(), f64::NAN), ("inf".into(), f64::INFINITY)]);
    c.samples = vec![Sample {
        tier: "nginx".into(),
        t_ms: 0,
        cpu_user_s: f64::NAN,
        cpu_sys_s: 0.0,
        rss_bytes: 0,
        processes: 0,
        loadavg: 0.0,
        machine_cpu: 0.0,
    }];
    c.flags.clear();
    store.record_cell(run, &c).unwrap();

    let got = &store.cells(run).unwrap()[0];
    assert!(got.series.buckets().is_empty());
    assert_eq!(got.histograms.latency.as_ref().unwrap().summary(), Recorder::new().summary());
    assert!(got.metrics["cpu_us_per_request"].is_nan());
    assert_eq!(got.metrics["inf"], f64::INFINITY);
    assert!(got.samples[0].cpu_user_s.is_nan());
    assert!(got.flags.is_empty());
}

/// A store of the latest schema in `dir` holding one run of one cell, left with `status`, for
/// tests that take it back to an older schema: its path, its schema version and the run.
fn a_store_with_one_cell(
    dir: &TempDir,
    status: RunStatus,
) -> (std::path::PathBuf, i64, loadlab_store::RunId) {
    let path = dir.path().join("results.db");
    let mut store = Store::open(&path).unwrap();
    let latest = store.schema_version().unwrap();
    let run = store.begin_run(&run_info("classic")).unwrap();
    store.record_cell(run, &cell(0, 2, 1)).unwrap();
    if status != RunStatus::Running {
        store.finish_run(run, status, at(1_750_000_300_000)).unwrap();
    }
    (path, latest, run)
}

/// Takes the series table back to migration 1's (completed, failed and bytes only), as every
/// loadlab before schema 6 left it, keeping its rows (and drops schema 7's steps and schema
/// 8's `counted`).
fn series_before_judged_seconds(conn: &rusqlite::Connection) {
    conn.execute_batch(
        "BEGIN;
         DROP TABLE steps;
         ALTER TABLE cells DROP COLUMN counted;
         CREATE TABLE old_series (
             cell_id   INTEGER NOT NULL REFERENCES cells (id) ON DELETE CASCADE,
             second    INTEGER NOT NULL,
             completed INTEGER NOT NULL,
             failed    INTEGER NOT NULL,
             bytes     INTEGER NOT NULL,
             PRIMARY KEY (cell_id, second)
         ) WITHOUT ROWID;
         INSERT INTO old_series SELECT cell_id, second, completed, failed, bytes FROM series;
         DROP TABLE series;
         ALTER TABLE old_series RENAME TO series;
         COMMIT;",
    )
    .unwrap();
}

/// A store written before cells kept their SLO (schema 3) opens, is brought up to date, and
/// its cells read back with none: their report shows no gate rather than failing.
#[test]
fn a_store_from_before_cells_kept_their_slo_opens_with_none() {
    let dir = TempDir::new().unwrap();
    let (path, latest, run) = a_store_with_one_cell(&dir, RunStatus::Running);
    // Back to schema 3 as an older loadlab left it: no slo column.
    let conn = rusqlite::Connection::open(&path).unwrap();
    series_before_judged_seconds(&conn);
    conn.execute_batch(
        "DROP TABLE profiles; ALTER TABLE cells DROP COLUMN slo; PRAGMA user_version = 3;",
    )
    .unwrap();
    drop(conn);

    let store = Store::open(&path).unwrap();
    assert_eq!(store.schema_version().unwrap(), latest);
    let cells = store.cells(run).unwrap();
    assert_eq!(cells.len(), 1);
    assert_eq!(cells[0].slo, None);
    assert_eq!(cells[0].metrics, cell(0, 2, 1).metrics);
}

/// A store written before the series kept judged seconds (schema 5: completed, failed and
/// bytes only) opens, is brought up to date, and reads its cells back with the same series and
/// no judged seconds; a staged cell stored after the migration reads back whole beside them.
#[test]
fn a_store_from_before_judged_seconds_opens_with_its_series() {
    let dir = TempDir::new().unwrap();
    let (path, latest, run) = a_store_with_one_cell(&dir, RunStatus::Finished);
    // Back to schema 5 as an older loadlab left it: the series table of migration 1.
    let conn = rusqlite::Connection::open(&path).unwrap();
    series_before_judged_seconds(&conn);
    conn.execute_batch("DROP TABLE profiles; PRAGMA user_version = 5;").unwrap();
    let columns: i64 = conn
        .query_row("SELECT count(*) FROM pragma_table_info('series')", [], |r| r.get(0))
        .unwrap();
    assert_eq!(columns, 5, "the old schema's series table");
    drop(conn);

    let mut store = Store::open(&path).unwrap();
    assert_eq!(store.schema_version().unwrap(), latest);
    let old = store.cells(run).unwrap();
    assert_eq!(old[0].series, cell(0, 2, 1).series);
    assert!(old[0].seconds.is_empty(), "{:?}", old[0].seconds);
    let next = store.begin_run(&run_info("ramp")).unwrap();
    let staged = cell(0, 9, 1);
    store.record_cell(next, &staged).unwrap();
    assert_same_cell(&store.cells(next).unwrap()[0], &staged);
}

/// A store written before cells kept what they counted (schema 7) opens, is brought up to
/// date, and its cells read back with no decision: what they counted is then told from the
/// figures only views and visits store. A cell stored after it reads its decision back.
#[test]
fn a_store_from_before_cells_kept_what_they_counted_opens_without_it() {
    let dir = TempDir::new().unwrap();
    let path = dir.path().join("results.db");
    let mut store = Store::open(&path).unwrap();
    let latest = store.schema_version().unwrap();
    let run = store.begin_run(&run_info("views")).unwrap();
    let mut view = cell(0, 2, 1);
    view.metrics.insert(metric::VIEWS_RPS.into(), 12.5);
    store.record_cell(run, &view).unwrap();
    drop(store);
    let conn = rusqlite::Connection::open(&path).unwrap();
    conn.execute_batch(
        "DROP TABLE profiles; ALTER TABLE cells DROP COLUMN counted; PRAGMA user_version = 7;",
    )
    .unwrap();
    drop(conn);

    let mut store = Store::open(&path).unwrap();
    assert_eq!(store.schema_version().unwrap(), latest);
    let old = store.cells(run).unwrap();
    assert_eq!(old[0].counted, None);
    assert_eq!(Counted::of(&old[0]), Counted::Views, "told from its figures");
    let next = store.begin_run(&run_info("visits")).unwrap();
    let visit = CellRecord { metrics: BTreeMap::new(), ..cell(1, 3, 1) };
    store.record_cell(next, &visit).unwrap();
    let got = &store.cells(next).unwrap()[0];
    assert_eq!(Counted::of(got), Counted::Visits, "the decision kept, no figure needed");
}

/// A store written before visit steps were kept (schema 6) opens, is brought up to date, and
/// reads its cells back with no steps; a visit cell stored after it reads back whole.
#[test]
fn a_store_from_before_visit_steps_opens_without_them() {
    let dir = TempDir::new().unwrap();
    let (path, latest, run) = a_store_with_one_cell(&dir, RunStatus::Finished);
    let conn = rusqlite::Connection::open(&path).unwrap();
    conn.execute_batch(
        "DROP TABLE profiles; DROP TABLE steps; ALTER TABLE cells DROP COLUMN counted; \
         PRAGMA user_version = 6;",
    )
    .unwrap();
    drop(conn);

    let mut store = Store::open(&path).unwrap();
    assert_eq!(store.schema_version().unwrap(), latest);
    let old = store.cells(run).unwrap();
    assert!(old[0].steps.is_empty(), "{:?}", old[0].steps);
    assert_eq!(old[0].metrics, cell(0, 2, 1).metrics);
    let next = store.begin_run(&run_info("visits")).unwrap();
    let visit = cell(1, 3, 1);
    assert_eq!(visit.steps.len(), 2);
    store.record_cell(next, &visit).unwrap();
    assert_same_cell(&store.cells(next).unwrap()[0], &visit);
}

/// A ramp down to zero leaves its last seconds without a bucket: their judged rows are kept.
#[test]
fn judged_seconds_past_the_series_are_kept() {
    let dir = TempDir::new().unwrap();
    let mut store = open(&dir);
    let run = store.begin_run(&run_info("ramp")).unwrap();
    let mut c = cell(0, 3, 0);
    c.seconds = judged_seconds(5);
    store.record_cell(run, &c).unwrap();
    let got = &store.cells(run).unwrap()[0];
    assert_eq!(got.seconds, c.seconds);
    assert_eq!(got.series.buckets().len(), 5);
    assert_eq!(got.series.buckets()[..3], c.series.buckets()[..]);
}

#[test]
fn a_new_file_is_migrated_and_reopening_changes_nothing() {
    let dir = TempDir::new().unwrap();
    let path = dir.path().join("results.db");
    let mut store = Store::open(&path).unwrap();
    let version = store.schema_version().unwrap();
    assert!(version >= 1);
    let run = store.begin_run(&run_info("classic")).unwrap();
    drop(store);

    for _ in 0..3 {
        let store = Store::open(&path).unwrap();
        assert_eq!(store.schema_version().unwrap(), version);
        let runs = store.runs().unwrap();
        assert_eq!(runs.len(), 1);
        assert_eq!(runs[0].run.id, run);
    }
    let conn = rusqlite::Connection::open(&path).unwrap();
    let tables: i64 = conn
        .query_row("SELECT count(*) FROM sqlite_master WHERE type = 'table'", [], |r| r.get(0))
        .unwrap();
    assert_eq!(
        tables, 10,
        "runs cells metrics histograms series samples configs flags steps profiles"
    );
    let mode: String = conn.query_row("PRAGMA journal_mode", [], |r| r.get(0)).unwrap();
    assert_eq!(mode, "wal");
}

#[test]
fn runs_list_status_and_environment() {
    let dir = TempDir::new().unwrap();
    let mut store = open(&dir);
    assert_eq!(store.latest_run().unwrap(), None);
    let a = store.begin_run(&run_info("classic")).unwrap();
    store.record_cell(a, &cell(0, 2, 1)).unwrap();
    store.record_cell(a, &cell(1, 2, 1)).unwrap();
    store.finish_run(a, RunStatus::Finished, at(1_750_000_300_000)).unwrap();
    let b = store.begin_run(&run_info("robots-autobench")).unwrap();
    store.finish_run(b, RunStatus::Interrupted, at(1_750_000_400_000)).unwrap();

    let runs = store.runs().unwrap();
    assert_eq!(
        runs.iter().map(|r| (r.run.id, r.run.status, r.cells)).collect::<Vec<_>>(),
        [(a, RunStatus::Finished, 2), (b, RunStatus::Interrupted, 0)]
    );
    assert_eq!(runs[0].run.finished_at, Some(at(1_750_000_300_000)));
    assert_eq!(store.latest_run().unwrap(), Some(b));

    let run = store.run(a).unwrap();
    let info = run_info("classic");
    assert_eq!((run.suite.as_str(), run.started_at), ("classic", info.started_at));
    assert_eq!(run.environment, info.environment);
}

/// A run stopped by a failed verify is `failed`, with why, in the list and in the run, not
/// `interrupted`, the status the README keeps for Ctrl-C; a run that finished or was
/// interrupted has no reason.
#[test]
fn a_run_stopped_by_a_failure_is_stored_as_failed_with_its_reason() {
    let dir = TempDir::new().unwrap();
    let mut store = open(&dir);
    let ok = store.begin_run(&run_info("classic")).unwrap();
    store.finish_run(ok, RunStatus::Finished, at(1_750_000_100_000)).unwrap();
    let bad = store.begin_run(&run_info("external")).unwrap();
    store.record_cell(bad, &cell(0, 2, 1)).unwrap();
    let why = "verify failed for hello on mine (http://127.0.0.1:9/): connection refused";
    store.fail_run(bad, why, at(1_750_000_200_000)).unwrap();

    let runs = store.runs().unwrap();
    let seen: Vec<_> =
        runs.iter().map(|r| (r.run.status, r.run.reason.as_deref(), r.cells)).collect();
    assert_eq!(seen, [(RunStatus::Finished, None, 0), (RunStatus::Failed, Some(why), 1)]);
    let run = store.run(bad).unwrap();
    assert_eq!((run.status, run.reason.as_deref()), (RunStatus::Failed, Some(why)));
    assert_eq!(run.finished_at, Some(at(1_750_000_200_000)));
    assert_eq!(RunStatus::Failed.to_string(), "failed");
    assert!(matches!(
        store.fail_run(loadlab_store::RunId(99), why, at(0)),
        Err(StoreError::UnknownRun(_))
    ));
}

/// A store written before runs could fail (schema 4: no `failed` status, no reason) opens and
/// is brought up to date keeping every run and cell (rebuilding `runs` must not cascade to its
/// cells), and then takes a failed run.
#[test]
fn a_store_from_before_runs_could_fail_opens_with_its_runs_and_cells() {
    let dir = TempDir::new().unwrap();
    let (path, latest, run) = a_store_with_one_cell(&dir, RunStatus::Interrupted);
    // Back to schema 4 as an older loadlab left it: its `runs` table, same rows.
    let conn = rusqlite::Connection::open(&path).unwrap();
    series_before_judged_seconds(&conn);
    conn.execute_batch(
        "PRAGMA foreign_keys = OFF;
         BEGIN;
         CREATE TABLE old_runs (
             id          INTEGER PRIMARY KEY,
             suite       TEXT    NOT NULL,
             started_at  INTEGER NOT NULL,
             finished_at INTEGER,
             status      TEXT    NOT NULL CHECK (status IN ('running', 'finished', 'interrupted')),
             environment TEXT    NOT NULL CHECK (json_valid(environment)),
             process TEXT CHECK (process IS NULL OR json_valid(process)),
             crash_noticed_at INTEGER
         );
         INSERT INTO old_runs SELECT id, suite, started_at, finished_at, status, environment,
             process, crash_noticed_at FROM runs;
         DROP TABLE runs;
         ALTER TABLE old_runs RENAME TO runs;
         DROP TABLE profiles;
         PRAGMA user_version = 4;
         COMMIT;",
    )
    .unwrap();
    drop(conn);

    let mut store = Store::open(&path).unwrap();
    assert_eq!(store.schema_version().unwrap(), latest);
    let runs = store.runs().unwrap();
    let seen: Vec<_> =
        runs.iter().map(|r| (r.run.id, r.run.status, r.run.reason.clone(), r.cells)).collect();
    assert_eq!(seen, [(run, RunStatus::Interrupted, None, 1)]);
    assert_eq!(store.cells(run).unwrap()[0].metrics, cell(0, 2, 1).metrics);
    let next = store.begin_run(&run_info("classic")).unwrap();
    store.fail_run(next, "the stack did not start", at(1_750_000_400_000)).unwrap();
    assert_eq!(store.run(next).unwrap().status, RunStatus::Failed);
    // The references from cells and configs still hold: deleting a run takes its cells.
    let conn = rusqlite::Connection::open(&path).unwrap();
    let broken: i64 =
        conn.query_row("SELECT count(*) FROM pragma_foreign_key_check", [], |r| r.get(0)).unwrap();
    assert_eq!(broken, 0);
    conn.execute_batch("PRAGMA foreign_keys = ON; DELETE FROM runs WHERE id = 1;").unwrap();
    let cells: i64 = conn.query_row("SELECT count(*) FROM cells", [], |r| r.get(0)).unwrap();
    assert_eq!(cells, 0, "cells still reference runs");
}

#[test]
fn configs_are_kept_per_run_and_recapture_replaces() {
    let dir = TempDir::new().unwrap();
    let mut store = open(&dir);
    let run = store.begin_run(&run_info("classic")).unwrap();
    let mut conf = ConfigRecord {
        stack: "nginx-php-fpm".into(),
        tier: "nginx".into(),
        kind: "config".into(),
        name: "nginx.conf".into(),
        content: "worker_processes 2;".into(),
    };
    store.record_config(run, &conf).unwrap();
    let version = ConfigRecord {
        kind: "version".into(),
        name: String::new(),
        content: "nginx/1.22.1".into(),
        ..conf.clone()
    };
    store.record_config(run, &version).unwrap();
    conf.content = "worker_processes 4;".into();
    store.record_config(run, &conf).unwrap();

    assert_eq!(store.configs(run).unwrap(), [conf, version]);
}

#[test]
fn unknown_runs_are_user_errors() {
    let dir = TempDir::new().unwrap();
    let mut store = open(&dir);
    let real = store.begin_run(&run_info("classic")).unwrap();
    let ghost = loadlab_store::RunId(real.0 + 41);
    let conf = ConfigRecord {
        stack: "s".into(),
        tier: "t".into(),
        kind: "config".into(),
        name: String::new(),
        content: String::new(),
    };
    let errors = [
        store.record_cell(ghost, &cell(0, 1, 1)).unwrap_err(),
        store.record_config(ghost, &conf).unwrap_err(),
        store.finish_run(ghost, RunStatus::Finished, at(0)).unwrap_err(),
        store.run(ghost).unwrap_err(),
        store.cells(ghost).unwrap_err(),
        store.configs(ghost).unwrap_err(),
    ];
    for e in errors {
        assert!(matches!(e, StoreError::UnknownRun(r) if r == ghost), "{e}");
        assert!(e.is_user_error());
    }
    assert!(store.cells(real).unwrap().is_empty());
}

#[test]
fn a_cell_that_fails_to_store_leaves_nothing_behind() {
    let dir = TempDir::new().unwrap();
    let mut store = open(&dir);
    let run = store.begin_run(&run_info("classic")).unwrap();
    store.record_cell(run, &cell(0, 3, 1)).unwrap();
    // A counter beyond SQLite's i64 fails late, after the cell row and some children are in.
    let mut bad = cell(1, 3, 1);
    bad.samples.last_mut().unwrap().rss_bytes = u64::MAX;
    let err = store.record_cell(run, &bad).unwrap_err();
    assert!(matches!(err, StoreError::OutOfRange { .. }), "{err}");

    let cells = store.cells(run).unwrap();
    assert_eq!(cells.iter().map(|c| c.ordinal).collect::<Vec<_>>(), [0]);
    let conn = rusqlite::Connection::open(dir.path().join("results.db")).unwrap();
    for table in ["metrics", "histograms", "series", "flags"] {
        let n: i64 =
            conn.query_row(&format!("SELECT count(*) FROM {table}"), [], |r| r.get(0)).unwrap();
        assert!(n > 0, "{table}");
        let orphans: i64 = conn
            .query_row(
                &format!(
                    "SELECT count(*) FROM {table} WHERE cell_id NOT IN (SELECT id FROM cells)"
                ),
                [],
                |r| r.get(0),
            )
            .unwrap();
        assert_eq!(orphans, 0, "{table}");
    }
    let samples: i64 = conn.query_row("SELECT count(*) FROM samples", [], |r| r.get(0)).unwrap();
    assert_eq!(samples, 3, "only the first cell's samples");
}

#[test]
fn an_interrupted_run_keeps_its_committed_cells() {
    let dir = TempDir::new().unwrap();
    let mut store = open(&dir);
    let run = store.begin_run(&run_info("classic")).unwrap();
    let done = [cell(0, 10, 2), cell(1, 10, 2)];
    for c in &done {
        store.record_cell(run, c).unwrap();
    }
    // Dropped mid-run: no finish_run, as when Ctrl-C handling itself fails.
    drop(store);

    let store = open(&dir);
    let runs = store.runs().unwrap();
    assert_eq!(
        (runs[0].run.status, runs[0].cells, runs[0].run.finished_at),
        (RunStatus::Running, 2, None)
    );
    let got = store.cells(run).unwrap();
    assert_eq!(got.len(), 2);
    for (g, w) in got.iter().zip(&done) {
        assert_same_cell(g, w);
    }
}

/// Set in the child process of `a_killed_run_keeps_its_committed_cells`: the store path.
const CRASH_CHILD: &str = "LOADLAB_STORE_CRASH_CHILD";

/// Does nothing in a normal test run; as the child, records two cells and aborts, so the
/// connection is never closed and the WAL is never checkpointed, as with `kill -9`.
#[test]
fn crash_child() {
    let Some(path) = std::env::var_os(CRASH_CHILD) else { return };
    let mut store = Store::open(Path::new(&path)).unwrap();
    let run = store.begin_run(&run_info("classic")).unwrap();
    store.record_cell(run, &cell(0, 10, 2)).unwrap();
    store.record_cell(run, &cell(1, 10, 2)).unwrap();
    std::process::abort();
}

#[test]
fn a_killed_run_keeps_its_committed_cells() {
    let dir = TempDir::new().unwrap();
    let path = dir.path().join("results.db");
    let status = Command::new(std::env::current_exe().unwrap())
        .args(["--exact", "crash_child", "--nocapture", "--test-threads=1"])
        .env(CRASH_CHILD, &path)
        .output()
        .unwrap()
        .status;
    assert!(!status.success(), "the child should have aborted");

    // Its process is gone: the run crashed, and its committed cells are kept.
    let mut store = Store::open(&path).unwrap();
    let runs = store.runs().unwrap();
    assert_eq!((runs.len(), runs[0].run.status, runs[0].cells), (1, RunStatus::Crashed, 2));
    assert_eq!(store.run(runs[0].run.id).unwrap().status, RunStatus::Crashed);
    let got = store.cells(runs[0].run.id).unwrap();
    assert_same_cell(&got[1], &cell(1, 10, 2));

    // The next run is told once: noticed, it is no longer new, and still crashed.
    let crashed = store.unnoticed_crashes().unwrap();
    assert_eq!(
        crashed.iter().map(|r| (r.run.id, r.cells)).collect::<Vec<_>>(),
        [(runs[0].run.id, 2)]
    );
    store.notice_crash(runs[0].run.id, at(1_750_000_500_000)).unwrap();
    assert!(store.unnoticed_crashes().unwrap().is_empty());
    assert_eq!(store.runs().unwrap()[0].run.status, RunStatus::Crashed);
    // A run of this live process is running, not crashed, and not among the crashes.
    let live = store.begin_run(&run_info("classic")).unwrap();
    assert_eq!(store.run(live).unwrap().status, RunStatus::Running);
    assert!(store.unnoticed_crashes().unwrap().is_empty());
}

#[test]
fn a_runs_process_is_itself_and_not_a_reused_pid_or_another_boot() {
    use loadlab_store::RunProcess;
    let me = RunProcess::current().expect("this process in /proc");
    assert_eq!(me.pid, std::process::id() as i32);
    assert!(me.alive());
    // The same pid started at another time (a reused pid), or in another boot: gone.
    assert!(!RunProcess { start_ticks: me.start_ticks + 1, ..me.clone() }.alive());
    assert!(!RunProcess { boot_id: "another-boot".into(), ..me.clone() }.alive());
    // A pid that no process has (above the kernel's pid_max).
    assert!(!RunProcess { pid: i32::MAX, ..me.clone() }.alive());
    // A child that exited and was reaped is gone.
    let mut child = Command::new("true").spawn().unwrap();
    let proc = RunProcess::of(child.id() as i32);
    child.wait().unwrap();
    if let Some(p) = proc {
        assert!(!p.alive(), "{p:?}");
    }
}

#[test]
fn files_that_are_not_stores_are_refused() {
    let dir = TempDir::new().unwrap();

    let text = dir.path().join("notes.txt");
    std::fs::write(&text, "this is not a database, just some text that is long enough ".repeat(20))
        .unwrap();
    let err = Store::open(&text).unwrap_err();
    assert!(matches!(err, StoreError::Open { .. }), "{err}");
    assert!(err.is_user_error());

    let other = dir.path().join("other.db");
    rusqlite::Connection::open(&other).unwrap().execute_batch("CREATE TABLE t (x)").unwrap();
    let err = Store::open(&other).unwrap_err();
    assert!(matches!(err, StoreError::NotAStore { .. }), "{err}");

    let missing_dir = dir.path().join("no/such/dir/results.db");
    assert!(Store::open(missing_dir).unwrap_err().is_user_error());
}

#[test]
fn a_store_from_a_newer_loadlab_is_refused() {
    let dir = TempDir::new().unwrap();
    let path = dir.path().join("results.db");
    let version = Store::open(&path).unwrap().schema_version().unwrap();
    rusqlite::Connection::open(&path)
        .unwrap()
        .pragma_update(None, "user_version", version + 1)
        .unwrap();
    let err = Store::open(&path).unwrap_err();
    assert!(matches!(err, StoreError::TooNew { found, .. } if found == version + 1), "{err}");
}

#[test]
fn in_memory_store_works_for_other_crates_tests() {
    let mut store = Store::open_in_memory().unwrap();
    let run = store.begin_run(&run_info("classic")).unwrap();
    store.record_cell(run, &cell(0, 2, 1)).unwrap();
    assert_eq!(store.cells(run).unwrap().len(), 1);
}

/// Prints the time to store one finished cell with a realistic payload (4 histograms of 100k
/// values, 600 series rows, 600 samples for each of 3 tiers). Asserts nothing about time: the
/// figure is for the budget (under 50 ms), read with `--nocapture`.
#[test]
fn time_to_store_a_realistic_cell() {
    let dir = TempDir::new().unwrap();
    let mut store = open(&dir);
    let run = store.begin_run(&run_info("timing")).unwrap();
    let cells: Vec<_> = (0..20).map(|o| cell(o, 600, 3)).collect();
    let mut times = Vec::new();
    for c in &cells {
        let t = Instant::now();
        store.record_cell(run, c).unwrap();
        times.push(t.elapsed());
    }
    let t = Instant::now();
    let back = store.cells(run).unwrap();
    let read = t.elapsed();
    assert_eq!(back.len(), cells.len());
    times.sort();
    let size = std::fs::metadata(dir.path().join("results.db")).map_or(0, |m| m.len())
        + std::fs::metadata(dir.path().join("results.db-wal")).map_or(0, |m| m.len());
    println!(
        "store one cell: median {:.2} ms, min {:.2} ms, max {:.2} ms over {} cells; \
         read back all {} cells in {:.1} ms; file + WAL {:.1} MiB",
        times[times.len() / 2].as_secs_f64() * 1e3,
        times[0].as_secs_f64() * 1e3,
        times[times.len() - 1].as_secs_f64() * 1e3,
        times.len(),
        back.len(),
        read.as_secs_f64() * 1e3,
        size as f64 / (1024.0 * 1024.0),
    );
}

/// A profiled cell keeps each tier's folded stacks (deflated) with its sample count, the
/// samples lost and the interval, and reads them back by run and ordinal; a cell stored
/// without profiles has none.
#[test]
fn a_profiled_cell_reads_its_tiers_profiles_back() {
    let dir = TempDir::new().unwrap();
    let mut store = open(&dir);
    let run = store.begin_run(&run_info("classic")).unwrap();
    let folded: String =
        (0..2_000).map(|i| format!("nginx;ngx_worker_process_cycle;f{} {}\n", i % 50, i)).collect();
    let nginx = ProfileRecord {
        tier: "nginx".into(),
        folded: folded.clone(),
        samples: 1_999_000,
        lost: 3,
        interval_us: 10_101,
    };
    let php = ProfileRecord {
        tier: "php-fpm".into(),
        folded: "php-fpm;execute_ex 7\n".into(),
        samples: 7,
        lost: 0,
        interval_us: 10_101,
    };
    store.record_profiled_cell(run, &cell(0, 2, 1), &[php.clone(), nginx.clone()]).unwrap();
    store.record_cell(run, &cell(1, 2, 1)).unwrap();
    assert_eq!(store.profiles(run, 0).unwrap(), vec![nginx.clone(), php.clone()]);
    assert!(store.profiles(run, 1).unwrap().is_empty());
    let all = store.run_profiles(run).unwrap();
    assert_eq!(all.keys().copied().collect::<Vec<_>>(), [0], "only cell 0 was profiled");
    assert_eq!(all[&0], vec![nginx, php]);
    let conn = rusqlite::Connection::open(dir.path().join("results.db")).unwrap();
    let stored: i64 =
        conn.query_row("SELECT sum(length(folded)) FROM profiles", [], |r| r.get(0)).unwrap();
    assert!((stored as usize) < folded.len() / 4, "{stored} bytes for {}", folded.len());
}

/// A store written before profiles were kept (schema 8) opens, is brought up to date, and its
/// cells have none; a profiled cell stored after it reads back.
#[test]
fn a_store_from_before_profiles_opens_without_them() {
    let dir = TempDir::new().unwrap();
    let (path, latest, run) = a_store_with_one_cell(&dir, RunStatus::Finished);
    let conn = rusqlite::Connection::open(&path).unwrap();
    conn.execute_batch("DROP TABLE profiles; PRAGMA user_version = 8;").unwrap();
    drop(conn);
    let mut store = Store::open(&path).unwrap();
    assert_eq!(store.schema_version().unwrap(), latest);
    assert!(store.profiles(run, 0).unwrap().is_empty());
    let next = store.begin_run(&run_info("classic")).unwrap();
    let p = ProfileRecord {
        tier: "nginx".into(),
        folded: "nginx;main 600\n".into(),
        samples: 600,
        lost: 0,
        interval_us: 10_101,
    };
    store.record_profiled_cell(next, &cell(0, 2, 1), std::slice::from_ref(&p)).unwrap();
    assert_eq!(store.profiles(next, 0).unwrap(), vec![p]);
}
