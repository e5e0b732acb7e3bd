//! Conversions between Rust values and what SQLite keeps: times as Unix milliseconds, u64 as
//! checked i64, NaN as NULL, JSON text, and recorders as HDR V2 histograms plus exact totals.

use std::time::{Duration, SystemTime, UNIX_EPOCH};

use hdrhistogram::serialization::{Deserializer, Serializer, V2Serializer};
use hdrhistogram::Histogram;
use loadlab_stats::recorder::Totals;
use loadlab_stats::Recorder;
use serde::de::DeserializeOwned;
use serde::Serialize;

use crate::error::{Result, StoreError};

/// The `histograms.encoding` of what this build writes: HdrHistogram's V2 format, uncompressed.
/// Deflate would shrink the blob but cost more time per cell than it saves on one run's file.
pub(crate) const HDR_V2: &str = "hdr-v2";

/// Milliseconds since the Unix epoch, negative before it; saturates far beyond any real date.
pub(crate) fn to_ms(t: SystemTime) -> i64 {
    match t.duration_since(UNIX_EPOCH) {
        Ok(d) => i64::try_from(d.as_millis()).unwrap_or(i64::MAX),
        Err(before) => i64::try_from(before.duration().as_millis()).map_or(i64::MIN, |ms| -ms),
    }
}

pub(crate) fn from_ms(ms: i64) -> SystemTime {
    let d = Duration::from_millis(ms.unsigned_abs());
    if ms >= 0 {
        UNIX_EPOCH + d
    } else {
        UNIX_EPOCH - d
    }
}

/// A u64 as SQLite's signed INTEGER. Counters never get near 2^63; failing loudly beats
/// storing a negative count if one ever did.
pub(crate) fn int(value: u64, what: &'static str) -> Result<i64> {
    i64::try_from(value).map_err(|_| StoreError::OutOfRange { what, value: u128::from(value) })
}

/// A stored INTEGER back as u64.
pub(crate) fn uint(value: i64, what: &str) -> Result<u64> {
    u64::try_from(value).map_err(|_| StoreError::Corrupt(format!("{what} is negative: {value}")))
}

/// SQLite keeps NaN as NULL (see the schema); this reads it back as NaN.
pub(crate) fn real(value: Option<f64>) -> f64 {
    value.unwrap_or(f64::NAN)
}

pub(crate) fn to_json<T: Serialize>(value: &T, what: &'static str) -> Result<String> {
    serde_json::to_string(value).map_err(|source| StoreError::Json { what, source })
}

pub(crate) fn from_json<T: DeserializeOwned>(text: &str, what: &str) -> Result<T> {
    serde_json::from_str(text).map_err(|e| StoreError::Corrupt(format!("{what}: {e}")))
}

/// A recorder ready for the `histograms` table.
pub(crate) struct EncodedHistogram<'a> {
    pub name: &'a str,
    pub data: Vec<u8>,
    pub totals: Totals,
}

pub(crate) fn encode_histogram<'a>(
    serializer: &mut V2Serializer,
    name: &'a str,
    recorder: &Recorder,
) -> Result<EncodedHistogram<'a>> {
    let mut data = Vec::new();
    serializer
        .serialize(recorder.histogram(), &mut data)
        .map_err(|source| StoreError::Histogram { name: name.to_owned(), source })?;
    Ok(EncodedHistogram { name, data, totals: recorder.totals() })
}

/// Rebuilds a recorder from a stored row; `what` names it in errors.
pub(crate) fn decode_histogram(
    deserializer: &mut Deserializer,
    encoding: &str,
    data: &[u8],
    totals: Totals,
    what: &str,
) -> Result<Recorder> {
    if encoding != HDR_V2 {
        return Err(StoreError::Corrupt(format!("{what}: unknown encoding {encoding:?}")));
    }
    let hist: Histogram<u64> = deserializer
        .deserialize(&mut &data[..])
        .map_err(|e| StoreError::Corrupt(format!("{what}: {e}")))?;
    if hist.len() != totals.count {
        return Err(StoreError::Corrupt(format!(
            "{what}: histogram holds {} values, its totals say {}",
            hist.len(),
            totals.count
        )));
    }
    Recorder::from_histogram(&hist, totals).map_err(|e| StoreError::Corrupt(format!("{what}: {e}")))
}

/// Reads a u128 sum stored as decimal TEXT (SQLite's INTEGER is only 64 bits).
pub(crate) fn parse_u128(text: &str, what: &str) -> Result<u128> {
    text.parse().map_err(|_| StoreError::Corrupt(format!("{what}: not a number: {text:?}")))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn times_round_trip_to_the_millisecond_on_both_sides_of_the_epoch() {
        for ms in [0i64, 1, 1_750_000_000_123, -86_400_000] {
            assert_eq!(to_ms(from_ms(ms)), ms);
        }
        let t = UNIX_EPOCH + Duration::from_micros(1_500_999);
        assert_eq!(to_ms(t), 1_500);
    }

    #[test]
    fn u64_beyond_i64_is_refused_not_wrapped() {
        assert_eq!(int(42, "x").unwrap(), 42);
        assert!(matches!(int(u64::MAX, "x"), Err(StoreError::OutOfRange { .. })));
        assert!(uint(-1, "x").is_err());
    }

    #[test]
    fn unknown_encoding_is_corrupt_data() {
        let r = Recorder::new();
        let mut d = Deserializer::new();
        let err = decode_histogram(&mut d, "hdr-v9", &[], r.totals(), "h").unwrap_err();
        assert!(matches!(err, StoreError::Corrupt(_)), "{err}");
    }
}
