//! Reads: the list of runs, one run, a run's cells with everything measured, its configs.
//!
//! A run's cells are read with one query per table for the whole run, not per cell, and inside
//! one read transaction, so a report of a run still being written sees a consistent snapshot.

use std::collections::{BTreeMap, HashMap};

use hdrhistogram::serialization::Deserializer;
use loadlab_stats::recorder::Totals;
use loadlab_stats::{Bucket, Series};
use rusqlite::{Connection, OptionalExtension, Row};

use crate::codec::{decode_histogram, from_json, from_ms, parse_u128, real, uint};
use crate::error::{Result, StoreError};
use crate::model::{
    CellRecord, ConfigRecord, Flag, Run, RunId, RunStatus, RunSummary, Sample, SecondRecord,
    StepRecord, TrustFlag,
};
use crate::profile::{ProfileRecord, RunProfiles};
use crate::store::Store;
use crate::Counted;

impl Store {
    /// Every stored run, oldest first, with its number of committed cells.
    pub fn runs(&self) -> Result<Vec<RunSummary>> {
        let sql = format!(
            "SELECT {RUN_COLUMNS}, (SELECT count(*) FROM cells c WHERE c.run_id = runs.id) \
             FROM runs ORDER BY id"
        );
        let mut stmt = self.conn.prepare(&sql)?;
        let mut rows = stmt.query([])?;
        let mut runs = Vec::new();
        while let Some(row) = rows.next()? {
            runs.push(RunSummary { run: run_of(row)?, cells: uint(row.get(9)?, "cell count")? });
        }
        Ok(runs)
    }

    /// The most recent run, which `loadlab report` shows when given none.
    pub fn latest_run(&self) -> Result<Option<RunId>> {
        let id: Option<i64> = self.conn.query_row("SELECT max(id) FROM runs", [], |r| r.get(0))?;
        Ok(id.map(RunId))
    }

    /// One run with its environment.
    pub fn run(&self, id: RunId) -> Result<Run> {
        let sql = format!("SELECT {RUN_COLUMNS} FROM runs WHERE id = ?1");
        let mut stmt = self.conn.prepare(&sql)?;
        let mut rows = stmt.query([id.0])?;
        match rows.next()? {
            Some(row) => run_of(row),
            None => Err(StoreError::UnknownRun(id)),
        }
    }

    /// Every committed cell of a run in plan order, with its metrics, histograms (as recorders
    /// again), series, samples and flags: all a report needs.
    /// The tiers' profiles of the cell at `ordinal` of `run`, by tier name; empty for a cell
    /// that was not profiled.
    pub fn profiles(&self, run: RunId, ordinal: u32) -> Result<Vec<ProfileRecord>> {
        crate::profile::read(&self.conn, run, ordinal)
    }

    /// Every profiled cell's profiles of `run`, by ordinal: what the report draws.
    pub fn run_profiles(&self, run: RunId) -> Result<RunProfiles> {
        crate::profile::read_run(&self.conn, run)
    }

    pub fn cells(&self, run: RunId) -> Result<Vec<CellRecord>> {
        let tx = self.conn.unchecked_transaction()?;
        ensure_run(&tx, run)?;
        let mut cells = RunCells::default();
        read_cells(&tx, run, &mut cells)?;
        read_metrics(&tx, run, &mut cells)?;
        read_histograms(&tx, run, &mut cells)?;
        read_series(&tx, run, &mut cells)?;
        read_samples(&tx, run, &mut cells)?;
        read_flags(&tx, run, &mut cells)?;
        read_steps(&tx, run, &mut cells)?;

        // Nothing was written; ending the read transaction either way is the same.
        tx.commit()?;
        Ok(cells.list)
    }

    /// The captured configs of a run, in the order they were first captured.
    pub fn configs(&self, run: RunId) -> Result<Vec<ConfigRecord>> {
        ensure_run(&self.conn, run)?;
        let mut stmt = self.conn.prepare(
            "SELECT stack, tier, kind, name, content FROM configs WHERE run_id = ?1 ORDER BY id",
        )?;
        let rows = stmt.query_map([run.0], |row| {
            Ok(ConfigRecord {
                stack: row.get(0)?,
                tier: row.get(1)?,
                kind: row.get(2)?,
                name: row.get(3)?,
                content: row.get(4)?,
            })
        })?;
        Ok(rows.collect::<rusqlite::Result<Vec<_>>>()?)
    }
}

/// A run's cells as they are read, with their row ids to place the rows of the child tables.
#[derive(Default)]
struct RunCells {
    list: Vec<CellRecord>,
    index: HashMap<i64, usize>,
}

impl RunCells {
    fn push(&mut self, id: i64, cell: CellRecord) {
        self.index.insert(id, self.list.len());
        self.list.push(cell);
    }

    fn get(&mut self, id: i64) -> Result<&mut CellRecord> {
        // The child queries join on this run's cells, read in the same transaction, so a miss
        // means the database contradicts itself.
        let at = *self
            .index
            .get(&id)
            .ok_or_else(|| StoreError::Corrupt(format!("row of unknown cell {id}")))?;
        Ok(&mut self.list[at])
    }
}

/// Runs `sql` (with the run id as `?1`) and hands each row to `f`.
fn each_row(
    conn: &Connection,
    sql: &str,
    run: RunId,
    mut f: impl FnMut(&Row<'_>) -> Result<()>,
) -> Result<()> {
    let mut stmt = conn.prepare(sql)?;
    let mut rows = stmt.query([run.0])?;
    while let Some(row) = rows.next()? {
        f(row)?;
    }
    Ok(())
}

/// `UnknownRun` unless `run` exists, so an empty answer always means "no rows yet".
fn ensure_run(conn: &Connection, run: RunId) -> Result<()> {
    conn.query_row("SELECT 1 FROM runs WHERE id = ?1", [run.0], |_| Ok(()))
        .optional()?
        .ok_or(StoreError::UnknownRun(run))
}

/// A run stored as `running` whose process is gone (or whose crash a later run noticed) has
/// crashed. Runs stored before the process was recorded stay as stored.
/// The columns of `runs` that [`run_of`] reads, in its order.
const RUN_COLUMNS: &str =
    "id, suite, started_at, finished_at, status, environment, process, crash_noticed_at, reason";

/// A row that starts with [`RUN_COLUMNS`], as the run it is.
fn run_of(row: &Row<'_>) -> Result<Run> {
    let id = RunId(row.get(0)?);
    let environment: String = row.get(5)?;
    Ok(Run {
        id,
        suite: row.get(1)?,
        started_at: from_ms(row.get(2)?),
        finished_at: row.get::<_, Option<i64>>(3)?.map(from_ms),
        status: effective(status(&row.get::<_, String>(4)?, id)?, row.get(6)?, row.get(7)?),
        reason: row.get(8)?,
        environment: from_json(&environment, &format!("environment of run {id}"))?,
    })
}

fn effective(stored: RunStatus, process: Option<String>, noticed: Option<i64>) -> RunStatus {
    if stored != RunStatus::Running {
        return stored;
    }
    let gone = process
        .and_then(|p| serde_json::from_str::<crate::model::RunProcess>(&p).ok())
        .is_some_and(|p| !p.alive());
    if gone || noticed.is_some() {
        RunStatus::Crashed
    } else {
        stored
    }
}

fn status(text: &str, run: RunId) -> Result<RunStatus> {
    RunStatus::parse(text)
        .ok_or_else(|| StoreError::Corrupt(format!("run {run} has status {text:?}")))
}

/// The cells' own rows, in plan order.
fn read_cells(tx: &Connection, run: RunId, cells: &mut RunCells) -> Result<()> {
    each_row(
        tx,
        "SELECT id, ordinal, stack, knobs, workload, load, repetition, started_at, duration_s, \
         limited_by, slo, counted FROM cells WHERE run_id = ?1 ORDER BY ordinal, id",
        run,
        |row| {
            let id: i64 = row.get(0)?;
            let what = |part: &str| format!("{part} of cell {id}");
            let cell = CellRecord {
                ordinal: row.get(1)?,
                stack: row.get(2)?,
                knobs: from_json(&row.get::<_, String>(3)?, &what("knobs"))?,
                workload: row.get(4)?,
                load: from_json(&row.get::<_, String>(5)?, &what("load"))?,
                repetition: row.get(6)?,
                started_at: from_ms(row.get(7)?),
                duration_s: real(row.get(8)?),
                metrics: BTreeMap::new(),
                histograms: Default::default(),
                series: Series::default(),
                seconds: Vec::new(),
                steps: Vec::new(),
                samples: Vec::new(),
                flags: Vec::new(),
                limited_by: row
                    .get::<_, Option<String>>(9)?
                    .map(|j| from_json(&j, &what("limit")))
                    .transpose()?,
                slo: row.get(10)?,
                counted: row
                    .get::<_, Option<String>>(11)?
                    .map(|s| {
                        Counted::parse(&s).ok_or_else(|| {
                            StoreError::Corrupt(format!("{} is {s:?}", what("what counted")))
                        })
                    })
                    .transpose()?,
            };
            cells.push(id, cell);
            Ok(())
        },
    )
}

/// Their metrics.
fn read_metrics(tx: &Connection, run: RunId, cells: &mut RunCells) -> Result<()> {
    each_row(
        tx,
        "SELECT m.cell_id, m.name, m.value FROM metrics m \
         JOIN cells c ON c.id = m.cell_id WHERE c.run_id = ?1",
        run,
        |row| {
            cells.get(row.get(0)?)?.metrics.insert(row.get(1)?, real(row.get(2)?));
            Ok(())
        },
    )
}

/// Their histograms, recorders again.
fn read_histograms(tx: &Connection, run: RunId, cells: &mut RunCells) -> Result<()> {
    let mut deserializer = Deserializer::new();
    each_row(
        tx,
        "SELECT h.cell_id, h.name, h.encoding, h.data, h.count, h.min, h.max, h.sum, \
         h.sum_sq FROM histograms h JOIN cells c ON c.id = h.cell_id WHERE c.run_id = ?1",
        run,
        |row| {
            let id: i64 = row.get(0)?;
            let name: String = row.get(1)?;
            let what = format!("histogram {name:?} of cell {id}");
            let totals = Totals {
                count: uint(row.get(4)?, &what)?,
                min: uint(row.get(5)?, &what)?,
                max: uint(row.get(6)?, &what)?,
                sum: parse_u128(&row.get::<_, String>(7)?, &what)?,
                sum_sq: parse_u128(&row.get::<_, String>(8)?, &what)?,
            };
            let encoding: String = row.get(2)?;
            let data: Vec<u8> = row.get(3)?;
            let recorder = decode_histogram(&mut deserializer, &encoding, &data, totals, &what)?;
            // A name no build of loadlab keeps is not a figure anything reads.
            cells.get(id)?.histograms.set(&name, recorder);
            Ok(())
        },
    )
}

/// Their per-second series, and a changing load's judged seconds (the rows with `offered`).
fn read_series(tx: &Connection, run: RunId, cells: &mut RunCells) -> Result<()> {
    each_row(
        tx,
        "SELECT s.cell_id, s.second, s.completed, s.failed, s.bytes, s.offered, s.achieved, \
         s.p50_us, s.p90_us, s.p99_us, s.connections_open, s.flags FROM series s \
         JOIN cells c ON c.id = s.cell_id WHERE c.run_id = ?1 ORDER BY s.cell_id, s.second",
        run,
        |row| {
            let second = uint(row.get(1)?, "series second")?;
            let second = usize::try_from(second)
                .map_err(|_| StoreError::Corrupt(format!("series second {second}")))?;
            let bucket = Bucket {
                completed: uint(row.get(2)?, "series completed")?,
                failed: uint(row.get(3)?, "series failed")?,
                bytes: uint(row.get(4)?, "series bytes")?,
                ..Bucket::default()
            };
            let judged = judged_second(row)?;
            let cell = cells.get(row.get(0)?)?;
            *cell.series.at(second) = bucket;
            if let Some(judged) = judged {
                // Rows come in order of second, each judged one after the last.
                if cell.seconds.len() != second {
                    return Err(StoreError::Corrupt(format!(
                        "judged second {second} out of order"
                    )));
                }
                cell.seconds.push(judged);
            }
            Ok(())
        },
    )
}

/// A series row's judged figures (columns 5 to 11); `None` where the cell kept none.
fn judged_second(row: &Row<'_>) -> Result<Option<SecondRecord>> {
    let Some(offered) = row.get::<_, Option<i64>>(5)? else { return Ok(None) };
    let opt = |i: usize, what: &str| -> Result<Option<u64>> {
        row.get::<_, Option<i64>>(i)?.map(|v| uint(v, what)).transpose()
    };
    let flags: Vec<String> = match row.get::<_, Option<String>>(11)? {
        Some(j) => from_json(&j, "flags of a second")?,
        None => Vec::new(),
    };
    Ok(Some(SecondRecord {
        offered: uint(offered, "offered per second")?,
        achieved: opt(6, "achieved per second")?.unwrap_or(0),
        p50_us: opt(7, "p50 of a second")?,
        p90_us: opt(8, "p90 of a second")?,
        p99_us: opt(9, "p99 of a second")?,
        connections_open: opt(10, "connections open per second")?.unwrap_or(0),
        flags: flags.into_iter().map(Flag::from).collect(),
    }))
}

/// Their resource samples, in the order written.
fn read_samples(tx: &Connection, run: RunId, cells: &mut RunCells) -> Result<()> {
    each_row(
        tx,
        "SELECT s.cell_id, s.tier, s.t_ms, s.cpu_user_s, s.cpu_sys_s, s.rss_bytes, \
         s.processes, s.loadavg, s.machine_cpu FROM samples s \
         JOIN cells c ON c.id = s.cell_id WHERE c.run_id = ?1 ORDER BY s.rowid",
        run,
        |row| {
            let sample = Sample {
                tier: row.get(1)?,
                t_ms: uint(row.get(2)?, "sample time")?,
                cpu_user_s: real(row.get(3)?),
                cpu_sys_s: real(row.get(4)?),
                rss_bytes: uint(row.get(5)?, "sample rss")?,
                processes: row.get(6)?,
                loadavg: real(row.get(7)?),
                machine_cpu: real(row.get(8)?),
            };
            cells.get(row.get(0)?)?.samples.push(sample);
            Ok(())
        },
    )
}

/// Their trust flags, in the order written.
fn read_flags(tx: &Connection, run: RunId, cells: &mut RunCells) -> Result<()> {
    each_row(
        tx,
        "SELECT f.cell_id, f.flag, f.detail FROM flags f \
         JOIN cells c ON c.id = f.cell_id WHERE c.run_id = ?1 ORDER BY f.rowid",
        run,
        |row| {
            let flag = Flag::from(row.get::<_, String>(1)?);
            cells.get(row.get(0)?)?.flags.push(TrustFlag { flag, detail: row.get(2)? });
            Ok(())
        },
    )
}

/// A visit workload's steps, in the visit's order.
fn read_steps(tx: &Connection, run: RunId, cells: &mut RunCells) -> Result<()> {
    each_row(
        tx,
        "SELECT s.cell_id, s.label, s.started, s.completed, s.failed, s.p50_us, s.p99_us \
         FROM steps s JOIN cells c ON c.id = s.cell_id WHERE c.run_id = ?1 \
         ORDER BY s.cell_id, s.step",
        run,
        |row| {
            let opt = |i: usize, what: &str| -> Result<Option<u64>> {
                row.get::<_, Option<i64>>(i)?.map(|v| uint(v, what)).transpose()
            };
            let step = StepRecord {
                label: row.get(1)?,
                started: uint(row.get(2)?, "step started")?,
                completed: uint(row.get(3)?, "step completed")?,
                failed: from_json(&row.get::<_, String>(4)?, "failed of a step")?,
                p50_us: opt(5, "p50 of a step")?,
                p99_us: opt(6, "p99 of a step")?,
            };
            cells.get(row.get(0)?)?.steps.push(step);
            Ok(())
        },
    )
}
