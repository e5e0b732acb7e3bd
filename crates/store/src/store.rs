//! [`Store`]: opening the file, and every write (runs, cells, configs).
//!
//! Writes follow the run's life: `begin_run`, then `record_cell` once per finished cell, each in
//! its own transaction, then `finish_run`. Whatever stops the process in between, the cells
//! committed so far are whole and readable.

use std::path::{Path, PathBuf};
use std::time::{Duration, SystemTime};

use hdrhistogram::serialization::V2Serializer;
use rusqlite::{params, Connection, OptionalExtension, Transaction, TransactionBehavior};

use crate::codec::{encode_histogram, int, to_json, to_ms, EncodedHistogram, HDR_V2};
use crate::error::{Result, StoreError};
use crate::model::{CellId, CellRecord, ConfigRecord, RunId, RunInfo, RunStatus};
use crate::profile::ProfileRecord;
use crate::schema;
use crate::Counted;

/// How long a statement waits for another process's write lock (a `loadlab runs` while a run
/// commits a cell) before failing with "database is locked". A cell commits in milliseconds.
const BUSY_TIMEOUT: Duration = Duration::from_secs(10);

/// A loadlab result store: one SQLite file.
pub struct Store {
    pub(crate) conn: Connection,
    path: PathBuf,
    // Kept between cells so its buffer is reused.
    serializer: V2Serializer,
}

impl std::fmt::Debug for Store {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Store").field("path", &self.path).finish()
    }
}

impl Store {
    /// Opens the store at `path`, creating the file or migrating its schema as needed.
    pub fn open(path: impl AsRef<Path>) -> Result<Store> {
        let path = path.as_ref();
        let open_err = |source| StoreError::Open { path: path.to_owned(), source };
        let conn = Connection::open(path).map_err(open_err)?;
        Self::setup(conn, path)
    }

    /// A store that lives in memory only, for tests of the crates that read and write it.
    pub fn open_in_memory() -> Result<Store> {
        let path = Path::new(":memory:");
        let conn = Connection::open_in_memory()
            .map_err(|source| StoreError::Open { path: path.to_owned(), source })?;
        Self::setup(conn, path)
    }

    fn setup(mut conn: Connection, path: &Path) -> Result<Store> {
        let open_err = |source| StoreError::Open { path: path.to_owned(), source };
        conn.busy_timeout(BUSY_TIMEOUT).map_err(open_err)?;
        // WAL lets readers (`loadlab runs`, `loadlab report`) work while a run writes, and makes
        // a commit one append to the log. It is a property of the file, so this also serves as
        // the first read: a file that is not SQLite fails here. A file system without shared
        // memory keeps the old journal mode, which is slower but still correct.
        let _mode: String = conn
            .pragma_update_and_check(None, "journal_mode", "WAL", |row| row.get(0))
            .map_err(open_err)?;
        // In WAL mode NORMAL syncs at checkpoints, not at every commit: a committed cell
        // survives the process being killed, and only a power cut could lose the last few.
        conn.pragma_update(None, "synchronous", "NORMAL").map_err(open_err)?;
        // Off by default in SQLite, per connection; the schema's references rely on it.
        conn.pragma_update(None, "foreign_keys", true).map_err(open_err)?;
        schema::migrate(&mut conn, path)?;
        Ok(Store { conn, path: path.to_owned(), serializer: V2Serializer::new() })
    }

    /// The file this store was opened from.
    pub fn path(&self) -> &Path {
        &self.path
    }

    /// The schema version of the open file (the latest this build knows, once opened).
    pub fn schema_version(&self) -> Result<i64> {
        Ok(schema::version(&self.conn)?)
    }

    /// Records a new run as `running`, run by this process, and returns its id.
    pub fn begin_run(&mut self, info: &RunInfo) -> Result<RunId> {
        let environment = to_json(&info.environment, "the environment")?;
        let process = crate::model::RunProcess::current()
            .map(|p| to_json(&p, "the run's process"))
            .transpose()?;
        self.conn.execute(
            "INSERT INTO runs (suite, started_at, status, environment, process) \
             VALUES (?1, ?2, ?3, ?4, ?5)",
            params![
                info.suite,
                to_ms(info.started_at),
                RunStatus::Running.as_str(),
                environment,
                process
            ],
        )?;
        Ok(RunId(self.conn.last_insert_rowid()))
    }

    /// Runs that crashed (their process is gone, see [`RunStatus::Crashed`]) and that no later
    /// run has said so of yet, oldest first.
    pub fn unnoticed_crashes(&self) -> Result<Vec<crate::model::RunSummary>> {
        let noticed = self.crash_noticed()?;
        Ok(self
            .runs()?
            .into_iter()
            .filter(|r| r.run.status == RunStatus::Crashed && !noticed.contains(&r.run.id))
            .collect())
    }

    /// Records that a run's crash was said, so it is said once.
    pub fn notice_crash(&mut self, run: RunId, at: std::time::SystemTime) -> Result<()> {
        let changed = self.conn.execute(
            "UPDATE runs SET crash_noticed_at = ?2 WHERE id = ?1",
            params![run.0, to_ms(at)],
        )?;
        if changed == 0 {
            return Err(StoreError::UnknownRun(run));
        }
        Ok(())
    }

    fn crash_noticed(&self) -> Result<Vec<RunId>> {
        let mut stmt =
            self.conn.prepare("SELECT id FROM runs WHERE crash_noticed_at IS NOT NULL")?;
        let ids = stmt.query_map([], |row| row.get(0))?;
        Ok(ids.collect::<rusqlite::Result<Vec<i64>>>()?.into_iter().map(RunId).collect())
    }

    /// Closes a run that an error stopped: status `failed`, with `reason` (the error as the
    /// user was told it).
    pub fn fail_run(&mut self, run: RunId, reason: &str, finished_at: SystemTime) -> Result<()> {
        let changed = self.conn.execute(
            "UPDATE runs SET status = ?2, finished_at = ?3, reason = ?4 WHERE id = ?1",
            params![run.0, RunStatus::Failed.as_str(), to_ms(finished_at), reason],
        )?;
        if changed == 0 {
            return Err(StoreError::UnknownRun(run));
        }
        Ok(())
    }

    /// Sets a run's final status (a failed one's: [`Store::fail_run`], which says why).
    /// `finished_at` is kept unless the status is `Running`.
    pub fn finish_run(
        &mut self,
        run: RunId,
        status: RunStatus,
        finished_at: SystemTime,
    ) -> Result<()> {
        let finished_at = (status != RunStatus::Running).then(|| to_ms(finished_at));
        let changed = self.conn.execute(
            "UPDATE runs SET status = ?2, finished_at = ?3 WHERE id = ?1",
            params![run.0, status.as_str(), finished_at],
        )?;
        if changed == 0 {
            return Err(StoreError::UnknownRun(run));
        }
        Ok(())
    }

    /// Stores one finished cell with its metrics, histograms, series, samples and flags, in one
    /// transaction: after this returns the cell is on disk whole, and if anything fails none of
    /// it is.
    pub fn record_cell(&mut self, run: RunId, cell: &CellRecord) -> Result<CellId> {
        self.record_profiled_cell(run, cell, &[])
    }

    /// Stores one finished cell as [`Store::record_cell`] does, with its tiers' profiles in
    /// the same transaction.
    pub fn record_profiled_cell(
        &mut self,
        run: RunId,
        cell: &CellRecord,
        profiles: &[ProfileRecord],
    ) -> Result<CellId> {
        // Encode before the transaction so the write lock is held for inserts only.
        let knobs = to_json(&cell.knobs, "the cell's knobs")?;
        let load = to_json(&cell.load, "the cell's load")?;
        let limited_by =
            cell.limited_by.as_ref().map(|l| to_json(l, "what limited the cell")).transpose()?;
        let histograms = cell
            .histograms
            .named()
            .map(|(name, r)| encode_histogram(&mut self.serializer, name, r))
            .collect::<Result<Vec<_>>>()?;

        // IMMEDIATE: the transaction starts with a read (does the run exist?), and upgrading a
        // WAL read transaction to a write fails at once if another writer committed meanwhile.
        let tx = self.conn.transaction_with_behavior(TransactionBehavior::Immediate)?;
        let exists = tx
            .query_row("SELECT 1 FROM runs WHERE id = ?1", [run.0], |_| Ok(()))
            .optional()?
            .is_some();
        if !exists {
            return Err(StoreError::UnknownRun(run));
        }
        tx.execute(
            "INSERT INTO cells (run_id, ordinal, stack, knobs, workload, load, repetition, \
             started_at, duration_s, limited_by, slo, counted) VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7, \
             ?8, ?9, ?10, ?11, ?12)",
            params![
                run.0,
                cell.ordinal,
                cell.stack,
                knobs,
                cell.workload,
                load,
                cell.repetition,
                to_ms(cell.started_at),
                cell.duration_s,
                limited_by,
                cell.slo,
                cell.counted.map(Counted::as_str),
            ],
        )?;
        let id = tx.last_insert_rowid();
        insert_metrics(&tx, id, cell)?;
        insert_histograms(&tx, id, &histograms)?;
        insert_series(&tx, id, cell)?;
        insert_samples(&tx, id, cell)?;
        insert_flags(&tx, id, cell)?;
        insert_steps(&tx, id, cell)?;
        crate::profile::insert(&tx, id, profiles)?;
        tx.commit()?;
        Ok(CellId(id))
    }

    /// Stores a captured config item of a run. Capturing the same (stack, tier, kind, name)
    /// again replaces the content, so it is safe to capture each time a stack comes up.
    pub fn record_config(&mut self, run: RunId, config: &ConfigRecord) -> Result<()> {
        let result = self.conn.execute(
            "INSERT INTO configs (run_id, stack, tier, kind, name, content) \
             VALUES (?1, ?2, ?3, ?4, ?5, ?6) \
             ON CONFLICT (run_id, stack, tier, kind, name) DO UPDATE SET content = excluded.content",
            params![run.0, config.stack, config.tier, config.kind, config.name, config.content],
        );
        match result {
            Ok(_) => Ok(()),
            Err(e) if is_foreign_key_violation(&e) => Err(StoreError::UnknownRun(run)),
            Err(e) => Err(e.into()),
        }
    }
}

fn is_foreign_key_violation(e: &rusqlite::Error) -> bool {
    matches!(
        e,
        rusqlite::Error::SqliteFailure(f, _)
            if f.extended_code == rusqlite::ffi::SQLITE_CONSTRAINT_FOREIGNKEY
    )
}

fn insert_metrics(tx: &Transaction<'_>, id: i64, cell: &CellRecord) -> Result<()> {
    let mut stmt =
        tx.prepare_cached("INSERT INTO metrics (cell_id, name, value) VALUES (?1, ?2, ?3)")?;
    for (name, value) in &cell.metrics {
        stmt.execute(params![id, name, value])?;
    }
    Ok(())
}

fn insert_histograms(
    tx: &Transaction<'_>,
    id: i64,
    histograms: &[EncodedHistogram<'_>],
) -> Result<()> {
    let mut stmt = tx.prepare_cached(
        "INSERT INTO histograms (cell_id, name, encoding, data, count, min, max, sum, sum_sq) \
         VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7, ?8, ?9)",
    )?;
    for h in histograms {
        let t = h.totals;
        stmt.execute(params![
            id,
            h.name,
            HDR_V2,
            h.data,
            int(t.count, "histogram count")?,
            int(t.min, "histogram min")?,
            int(t.max, "histogram max")?,
            t.sum.to_string(),
            t.sum_sq.to_string(),
        ])?;
    }
    Ok(())
}

fn insert_series(tx: &Transaction<'_>, id: i64, cell: &CellRecord) -> Result<()> {
    let mut stmt = tx.prepare_cached(
        "INSERT INTO series (cell_id, second, completed, failed, bytes, offered, achieved, \
         p50_us, p90_us, p99_us, connections_open, flags) \
         VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7, ?8, ?9, ?10, ?11, ?12)",
    )?;
    let buckets = cell.series.buckets();
    // A ramp down to zero may leave its last seconds without a bucket: their judged rows are
    // kept all the same, with zero counts.
    for second in 0..buckets.len().max(cell.seconds.len()) {
        let b = buckets.get(second).copied().unwrap_or_default();
        let judged = cell.seconds.get(second);
        let opt = |v: Option<u64>, what| v.map(|v| int(v, what)).transpose();
        let flags = judged
            .map(|j| {
                let names: Vec<&str> = j.flags.iter().map(|f| f.as_str()).collect();
                to_json(&names, "flags of a second")
            })
            .transpose()?;
        stmt.execute(params![
            id,
            int(second as u64, "series second")?,
            int(b.completed, "completed per second")?,
            int(b.failed, "failed per second")?,
            int(b.bytes, "bytes per second")?,
            opt(judged.map(|j| j.offered), "offered per second")?,
            opt(judged.map(|j| j.achieved), "achieved per second")?,
            opt(judged.and_then(|j| j.p50_us), "p50 of a second")?,
            opt(judged.and_then(|j| j.p90_us), "p90 of a second")?,
            opt(judged.and_then(|j| j.p99_us), "p99 of a second")?,
            opt(judged.map(|j| j.connections_open), "connections open per second")?,
            flags,
        ])?;
    }
    Ok(())
}

fn insert_samples(tx: &Transaction<'_>, id: i64, cell: &CellRecord) -> Result<()> {
    let mut stmt = tx.prepare_cached(
        "INSERT INTO samples (cell_id, tier, t_ms, cpu_user_s, cpu_sys_s, rss_bytes, \
         processes, loadavg, machine_cpu) VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7, ?8, ?9)",
    )?;
    for s in &cell.samples {
        stmt.execute(params![
            id,
            s.tier,
            int(s.t_ms, "sample time")?,
            s.cpu_user_s,
            s.cpu_sys_s,
            int(s.rss_bytes, "sample rss")?,
            s.processes,
            s.loadavg,
            s.machine_cpu,
        ])?;
    }
    Ok(())
}

fn insert_flags(tx: &Transaction<'_>, id: i64, cell: &CellRecord) -> Result<()> {
    let mut stmt =
        tx.prepare_cached("INSERT INTO flags (cell_id, flag, detail) VALUES (?1, ?2, ?3)")?;
    for f in &cell.flags {
        stmt.execute(params![id, f.flag.as_str(), f.detail])?;
    }
    Ok(())
}

fn insert_steps(tx: &Transaction<'_>, id: i64, cell: &CellRecord) -> Result<()> {
    let mut stmt = tx.prepare_cached(
        "INSERT INTO steps (cell_id, step, label, started, completed, failed, p50_us, p99_us) \
         VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7, ?8)",
    )?;
    for (i, s) in cell.steps.iter().enumerate() {
        let opt = |v: Option<u64>, what| v.map(|v| int(v, what)).transpose();
        stmt.execute(params![
            id,
            int(i as u64, "step number")?,
            s.label,
            int(s.started, "step started")?,
            int(s.completed, "step completed")?,
            to_json(&s.failed, "failed of a step")?,
            opt(s.p50_us, "p50 of a step")?,
            opt(s.p99_us, "p99 of a step")?,
        ])?;
    }
    Ok(())
}
