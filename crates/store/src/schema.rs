//! The schema as an ordered list of migrations, and the code that brings a file up to date.
//!
//! The file's version is SQLite's `PRAGMA user_version`: migration `i` (0-based) takes it from
//! `i` to `i + 1`. A migration is never edited once released; a change is a new entry.

use std::path::Path;

use rusqlite::{Connection, TransactionBehavior};

use crate::error::{Result, StoreError};

/// Marks the file as loadlab's in the SQLite header ("LLAB"), so `open` refuses to add its
/// tables to some other program's database.
pub(crate) const APPLICATION_ID: i64 = 0x4C4C_4142;

/// Every migration, oldest first.
///
/// Conventions: times are Unix milliseconds (INTEGER); JSON columns are TEXT checked with
/// `json_valid`; REAL columns accept NULL because SQLite stores a NaN as NULL, and a NaN in one
/// sample must not lose a whole cell. Child rows go with their cell (`ON DELETE CASCADE`).
pub(crate) const MIGRATIONS: &[&str] = &[
    // 1: the first schema.
    "
    PRAGMA application_id = 1280065858;

    CREATE TABLE runs (
        id          INTEGER PRIMARY KEY,
        suite       TEXT    NOT NULL,
        started_at  INTEGER NOT NULL,
        finished_at INTEGER,
        status      TEXT    NOT NULL CHECK (status IN ('running', 'finished', 'interrupted')),
        environment TEXT    NOT NULL CHECK (json_valid(environment))
    );

    CREATE TABLE cells (
        id          INTEGER PRIMARY KEY,
        run_id      INTEGER NOT NULL REFERENCES runs (id) ON DELETE CASCADE,
        ordinal     INTEGER NOT NULL,
        stack       TEXT    NOT NULL,
        knobs       TEXT    NOT NULL CHECK (json_valid(knobs)),
        workload    TEXT    NOT NULL,
        load        TEXT    NOT NULL CHECK (json_valid(load)),
        repetition  INTEGER NOT NULL,
        started_at  INTEGER NOT NULL,
        duration_s  REAL
    );
    CREATE INDEX cells_by_run ON cells (run_id, ordinal);

    CREATE TABLE metrics (
        cell_id INTEGER NOT NULL REFERENCES cells (id) ON DELETE CASCADE,
        name    TEXT    NOT NULL,
        value   REAL,
        PRIMARY KEY (cell_id, name)
    ) WITHOUT ROWID;

    -- data is the histogram in HdrHistogram's V2 format (readable by every HdrHistogram
    -- implementation); count..sum_sq are the recorder's exact totals, which the histogram only
    -- approximates. The sums are decimal TEXT because they are u128 and INTEGER is i64.
    CREATE TABLE histograms (
        cell_id  INTEGER NOT NULL REFERENCES cells (id) ON DELETE CASCADE,
        name     TEXT    NOT NULL,
        encoding TEXT    NOT NULL,
        data     BLOB    NOT NULL,
        count    INTEGER NOT NULL,
        min      INTEGER NOT NULL,
        max      INTEGER NOT NULL,
        sum      TEXT    NOT NULL,
        sum_sq   TEXT    NOT NULL,
        PRIMARY KEY (cell_id, name)
    );

    -- Every second is a row, empty ones too, so a series reads back with its length.
    CREATE TABLE series (
        cell_id   INTEGER NOT NULL REFERENCES cells (id) ON DELETE CASCADE,
        second    INTEGER NOT NULL,
        completed INTEGER NOT NULL,
        failed    INTEGER NOT NULL,
        bytes     INTEGER NOT NULL,
        PRIMARY KEY (cell_id, second)
    ) WITHOUT ROWID;

    -- No natural key: a sampler may repeat a timestamp. Rows read back in insertion order.
    CREATE TABLE samples (
        cell_id     INTEGER NOT NULL REFERENCES cells (id) ON DELETE CASCADE,
        tier        TEXT    NOT NULL,
        t_ms        INTEGER NOT NULL,
        cpu_user_s  REAL,
        cpu_sys_s   REAL,
        rss_bytes   INTEGER NOT NULL,
        processes   INTEGER NOT NULL,
        loadavg     REAL,
        machine_cpu REAL
    );
    CREATE INDEX samples_by_cell ON samples (cell_id);

    -- One row per captured item; capturing it again (the stack came up for another cell)
    -- replaces it.
    CREATE TABLE configs (
        id      INTEGER PRIMARY KEY,
        run_id  INTEGER NOT NULL REFERENCES runs (id) ON DELETE CASCADE,
        stack   TEXT    NOT NULL,
        tier    TEXT    NOT NULL,
        kind    TEXT    NOT NULL,
        name    TEXT    NOT NULL,
        content TEXT    NOT NULL,
        UNIQUE (run_id, stack, tier, kind, name)
    );

    CREATE TABLE flags (
        cell_id INTEGER NOT NULL REFERENCES cells (id) ON DELETE CASCADE,
        flag    TEXT    NOT NULL,
        detail  TEXT    NOT NULL
    );
    CREATE INDEX flags_by_cell ON flags (cell_id);
    ",
    // 2: what limited each cell (JSON: kind, tier, evidence), NULL for cells stored before.
    "
    ALTER TABLE cells ADD COLUMN limited_by TEXT
        CHECK (limited_by IS NULL OR json_valid(limited_by));
    ",
    // 3: the process that runs a run (JSON: pid, boot id, start time), to tell a run still
    // going from one whose process is gone; and when a later run said it had crashed. A
    // crashed run keeps status 'running' in the table: 'crashed' is what the process tells.
    "
    ALTER TABLE runs ADD COLUMN process TEXT CHECK (process IS NULL OR json_valid(process));
    ALTER TABLE runs ADD COLUMN crash_noticed_at INTEGER;
    ",
    // 4: the SLO the cell's workload was judged by (`run --slo`, a suite's `slo`), as written
    // (`p99<50ms,errors<0.1%`); NULL when it had none, and for cells stored before.
    "
    ALTER TABLE cells ADD COLUMN slo TEXT;
    ",
    // 5: a run stopped by an error (a target that failed verify, a stack that did not start)
    // is 'failed', with the error as its reason; 'interrupted' is Ctrl-C's alone. SQLite
    // cannot change a CHECK in place: the table is rebuilt as its documentation says (a new
    // table, the rows copied, the old one dropped, the new one renamed), with foreign keys off
    // (see `migrate`) so that dropping the old table does not cascade to the cells.
    "
    CREATE TABLE runs_new (
        id          INTEGER PRIMARY KEY,
        suite       TEXT    NOT NULL,
        started_at  INTEGER NOT NULL,
        finished_at INTEGER,
        status      TEXT    NOT NULL
                    CHECK (status IN ('running', 'finished', 'interrupted', 'failed')),
        environment TEXT    NOT NULL CHECK (json_valid(environment)),
        process     TEXT    CHECK (process IS NULL OR json_valid(process)),
        crash_noticed_at INTEGER,
        reason      TEXT
    );
    INSERT INTO runs_new (id, suite, started_at, finished_at, status, environment, process,
                          crash_noticed_at)
        SELECT id, suite, started_at, finished_at, status, environment, process,
               crash_noticed_at
        FROM runs;
    DROP TABLE runs;
    ALTER TABLE runs_new RENAME TO runs;
    ",
    // 6: the figures of every second of a cell whose load changes over time (a ramp, stages),
    // as the runner judged them: offered and achieved requests, p50/p90/p99 from that
    // second's histogram (NULL with no completion), the most connections open, and the trust
    // flags raised in that second (a JSON array of flag names). NULL in every row of a fixed
    // load's cell and of cells stored before.
    "
    ALTER TABLE series ADD COLUMN offered INTEGER;
    ALTER TABLE series ADD COLUMN achieved INTEGER;
    ALTER TABLE series ADD COLUMN p50_us INTEGER;
    ALTER TABLE series ADD COLUMN p90_us INTEGER;
    ALTER TABLE series ADD COLUMN p99_us INTEGER;
    ALTER TABLE series ADD COLUMN connections_open INTEGER;
    ALTER TABLE series ADD COLUMN flags TEXT CHECK (flags IS NULL OR json_valid(flags));
    ",
    // 7: the steps of a visit workload's cell (a suite's `visits = ...`), in the visit's
    // order: its label (`2 GET /?s=hello`), the measured visits that began, completed and
    // failed it (failed: a JSON object of counts by class), and its latency p50/p99 (NULL with
    // no completion). Other cells, and cells stored before, have none.
    "
    CREATE TABLE steps (
        cell_id   INTEGER NOT NULL REFERENCES cells (id) ON DELETE CASCADE,
        step      INTEGER NOT NULL,
        label     TEXT    NOT NULL,
        started   INTEGER NOT NULL,
        completed INTEGER NOT NULL,
        failed    TEXT    NOT NULL CHECK (json_valid(failed)),
        p50_us    INTEGER,
        p99_us    INTEGER,
        PRIMARY KEY (cell_id, step)
    ) WITHOUT ROWID;
    ",
    // 8: what the cell counted (requests, views, visits, sessions), as the runner decided it
    // from the load it ran; NULL for cells stored before, which the reader tells from the
    // figures only views and visits store.
    "
    ALTER TABLE cells ADD COLUMN counted TEXT
        CHECK (counted IS NULL OR counted IN ('requests', 'views', 'visits', 'sessions'));
    ",
    // 9: a profiled cell's on-CPU stacks, one row per tier: folded stacks deflated (zlib),
    // the samples in them, the samples perf lost and the interval between two samples.
    // Cells not profiled, and cells stored before, have none.
    "
    CREATE TABLE profiles (
        cell_id     INTEGER NOT NULL REFERENCES cells (id) ON DELETE CASCADE,
        tier        TEXT    NOT NULL,
        samples     INTEGER NOT NULL,
        lost        INTEGER NOT NULL,
        interval_us INTEGER NOT NULL,
        folded      BLOB    NOT NULL,
        PRIMARY KEY (cell_id, tier)
    ) WITHOUT ROWID;
    ",
];

/// The schema version this build writes.
pub(crate) fn latest_version() -> i64 {
    MIGRATIONS.len() as i64
}

/// The file's schema version.
pub(crate) fn version(conn: &Connection) -> rusqlite::Result<i64> {
    conn.pragma_query_value(None, "user_version", |row| row.get(0))
}

/// Brings the file at `path` (already open as `conn`) to the latest schema, refusing files
/// that are not loadlab's or are newer than this build.
pub(crate) fn migrate(conn: &mut Connection, path: &Path) -> Result<()> {
    let open_err = |source| StoreError::Open { path: path.to_owned(), source };
    let found = version(conn).map_err(open_err)?;
    // Identity first: a foreign file with a high user_version is foreign, not "too new".
    check_identity(conn, path, found)?;
    if found > latest_version() {
        return Err(StoreError::TooNew {
            path: path.to_owned(),
            found,
            supported: latest_version(),
        });
    }
    // Reading the version first keeps the common case (already current) free of the write
    // lock, so `loadlab runs` does not wait for a run that is writing.
    if found == latest_version() {
        return Ok(());
    }
    // A migration may rebuild a table that others reference (5 does `runs`): with foreign
    // keys on, dropping the old table would delete the rows that reference it. The pragma is
    // a no-op inside a transaction, so it is turned off around the steps, and the references
    // are checked once it is on again (SQLite's "making other kinds of table schema changes").
    conn.pragma_update(None, "foreign_keys", false).map_err(open_err)?;
    let migrated = apply(conn);
    conn.pragma_update(None, "foreign_keys", true).map_err(open_err)?;
    migrated?;
    let broken: i64 = conn
        .query_row("SELECT count(*) FROM pragma_foreign_key_check", [], |row| row.get(0))
        .map_err(open_err)?;
    if broken > 0 {
        let why = format!("{broken} rows reference rows that are gone after migration");
        return Err(StoreError::Corrupt(format!("{}: {why}", path.display())));
    }
    Ok(())
}

/// Applies the migrations the file lacks, each in its own transaction.
fn apply(conn: &mut Connection) -> Result<()> {
    for (i, sql) in MIGRATIONS.iter().enumerate() {
        let target = i as i64 + 1;
        let step = |conn: &mut Connection| -> rusqlite::Result<()> {
            // IMMEDIATE takes the write lock before the version is read again, so two processes
            // opening one new file cannot both apply a migration.
            let tx = conn.transaction_with_behavior(TransactionBehavior::Immediate)?;
            if version(&tx)? >= target {
                return Ok(());
            }
            tx.execute_batch(sql)?;
            // user_version lives in the database header, which the transaction covers: the
            // migration and its version number commit together or not at all.
            tx.pragma_update(None, "user_version", target)?;
            tx.commit()
        };
        step(conn).map_err(|source| StoreError::Migration { version: target, source })?;
    }
    Ok(())
}

/// Refuses an SQLite file some other program made: one stamped with another application id,
/// or an unversioned one that already has tables.
fn check_identity(conn: &Connection, path: &Path, version: i64) -> Result<()> {
    let open_err = |source| StoreError::Open { path: path.to_owned(), source };
    let app_id: i64 =
        conn.pragma_query_value(None, "application_id", |row| row.get(0)).map_err(open_err)?;
    let foreign = if app_id != 0 {
        app_id != APPLICATION_ID
    } else if version == 0 {
        let objects: i64 = conn
            .query_row("SELECT count(*) FROM sqlite_master", [], |row| row.get(0))
            .map_err(open_err)?;
        objects > 0
    } else {
        // Versioned but unstamped: not something migration 1 ever leaves behind.
        true
    };
    if foreign {
        return Err(StoreError::NotAStore { path: path.to_owned() });
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn first_migration_stamps_the_application_id() {
        let stamp = format!("PRAGMA application_id = {APPLICATION_ID};");
        assert!(MIGRATIONS[0].contains(&stamp), "{stamp}");
    }
}
