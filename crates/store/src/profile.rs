//! Profiles stored with their cell: each tier's folded stacks, deflated (folded text repeats
//! its long frame names on every line and shrinks about tenfold), with the samples, the
//! samples lost and the interval between two samples.

use std::collections::BTreeMap;
use std::io::{Read, Write};

use rusqlite::{params, Connection, Transaction};
use serde::{Deserialize, Serialize};

use crate::error::{Result, StoreError};
use crate::model::RunId;

/// A run's profiles: each profiled cell's, by tier, under the cell's ordinal.
pub type RunProfiles = BTreeMap<u32, Vec<ProfileRecord>>;

/// One tier's on-CPU stacks over one cell.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct ProfileRecord {
    /// The tier's name (`nginx`, `php-fpm`), or a profiler's own view of one
    /// (`php (excimer)`).
    pub tier: String,
    /// Folded stacks, `root;caller;callee COUNT` per line.
    pub folded: String,
    pub samples: u64,
    pub lost: u64,
    /// Between two samples of a task on a CPU, µs.
    pub interval_us: u64,
}

pub(crate) fn insert(tx: &Transaction<'_>, cell: i64, profiles: &[ProfileRecord]) -> Result<()> {
    let mut stmt = tx.prepare_cached(
        "INSERT INTO profiles (cell_id, tier, samples, lost, interval_us, folded) \
         VALUES (?1, ?2, ?3, ?4, ?5, ?6)",
    )?;
    for p in profiles {
        let folded = deflate(&p.folded)?;
        stmt.execute(params![cell, p.tier, p.samples, p.lost, p.interval_us, folded])?;
    }
    Ok(())
}

/// The profiles of the cell at `ordinal` of `run`, by tier; none for a cell not profiled
/// (and for every cell stored before loadlab kept them).
pub(crate) fn read(conn: &Connection, run: RunId, ordinal: u32) -> Result<Vec<ProfileRecord>> {
    Ok(read_where(conn, run, Some(ordinal))?.remove(&ordinal).unwrap_or_default())
}

/// Every profiled cell's profiles of `run`, by the cell's ordinal, each cell's by tier.
pub(crate) fn read_run(conn: &Connection, run: RunId) -> Result<RunProfiles> {
    read_where(conn, run, None)
}

/// The profiles of `run`'s cells (of the one at `ordinal` only, when given).
fn read_where(conn: &Connection, run: RunId, ordinal: Option<u32>) -> Result<RunProfiles> {
    let mut stmt = conn.prepare(
        "SELECT c.ordinal, p.tier, p.samples, p.lost, p.interval_us, p.folded \
         FROM profiles p JOIN cells c ON c.id = p.cell_id \
         WHERE c.run_id = ?1 AND (?2 IS NULL OR c.ordinal = ?2) ORDER BY c.ordinal, p.tier",
    )?;
    let rows = stmt.query_map(params![run.0, ordinal], |row| {
        let at: (u32, String) = (row.get(0)?, row.get(1)?);
        let counts: (u64, u64, u64) = (row.get(2)?, row.get(3)?, row.get(4)?);
        Ok((at, counts, row.get::<_, Vec<u8>>(5)?))
    })?;
    let mut profiles = RunProfiles::new();
    for row in rows {
        let ((at, tier), (samples, lost, interval_us), folded) = row?;
        let folded = inflate(&folded, &tier)?;
        let record = ProfileRecord { tier, folded, samples, lost, interval_us };
        profiles.entry(at).or_default().push(record);
    }
    Ok(profiles)
}

fn deflate(text: &str) -> Result<Vec<u8>> {
    let mut e = flate2::write::ZlibEncoder::new(Vec::new(), flate2::Compression::default());
    e.write_all(text.as_bytes())
        .and_then(|()| e.finish())
        .map_err(|e| StoreError::Corrupt(format!("deflating a profile: {e}")))
}

fn inflate(bytes: &[u8], tier: &str) -> Result<String> {
    let mut text = String::new();
    flate2::read::ZlibDecoder::new(bytes)
        .read_to_string(&mut text)
        .map_err(|e| StoreError::Corrupt(format!("the profile of {tier}: {e}")))?;
    Ok(text)
}
