//! `loadlab merge`: several agents' interval logs (`--hdr-log`) added into one, interval by
//! interval and tag by tag, exactly. HdrHistograms with the same settings add bucket by bucket,
//! so the merged log is the log one client would have written had it sent every request; a
//! percentile of the merged test is read from the added histogram, never averaged from the
//! agents' percentiles (the mistake vegeta's and Locust's users make by hand).
//!
//! Adding is only exact when the logs agree, so two things are refused rather than guessed:
//! histograms of different settings (lowest or highest trackable value, significant figures:
//! their buckets are not the same ranges), and seconds that do not line up (intervals of
//! different length, or logs whose start times are more than one interval apart: their
//! "second 3" are not the same second). Within that, interval k of every log (k = its start
//! after the log's BaseTime, in intervals, rounded) is added to interval k of the others.

use std::collections::BTreeMap;
use std::io;
use std::time::{Duration, SystemTime, UNIX_EPOCH};

use base64::Engine as _;
use hdrhistogram::serialization::interval_log::{IntervalLogIterator, LogEntry, LogIteratorError};
use hdrhistogram::serialization::{Deserializer, V2DeflateSerializer};
use hdrhistogram::Histogram;
use serde::Serialize;

use crate::interval_log::{begin, put};
use crate::recorder::Totals;
use crate::{Recorder, RecorderSummary};

/// Interval lengths that differ by less than this are the same length: the log format keeps
/// timestamps to the millisecond, so 1.000 and 0.9995 s read back as one length.
const LENGTH_TOLERANCE: Duration = Duration::from_millis(1);

/// Why logs could not be merged; each names the file.
#[derive(Debug, thiserror::Error, PartialEq, Eq)]
pub enum MergeError {
    #[error("{file}: not an HdrHistogram interval log: {reason}")]
    Unreadable { file: String, reason: String },
    #[error("{file}: histogram settings differ from {other}'s: {what}")]
    Settings { file: String, other: String, what: String },
    #[error("{file}: its seconds do not line up with {other}'s: {what}")]
    Misaligned { file: String, other: String, what: String },
    #[error("no interval in any of the logs")]
    Empty,
}

impl MergeError {
    /// Logs that were read but cannot be added (their settings or seconds differ), as against
    /// input that is not a log at all.
    pub fn unmergeable(&self) -> bool {
        matches!(self, MergeError::Settings { .. } | MergeError::Misaligned { .. })
    }
}

/// The figures of a merged test, under bench's JSON names for the same figures (what
/// `loadlab merge --format json` prints).
#[derive(Debug, Serialize)]
pub struct Figures {
    pub files: Vec<String>,
    /// When the merged test's first interval began, seconds since the epoch.
    pub start_unix_s: f64,
    pub interval_s: f64,
    /// Intervals from the first to the last (with or without requests).
    pub intervals: u64,
    /// Corrected latency in the open loop (from each request's due time); the only latency of
    /// the closed loop.
    pub latency_us: Option<RecorderSummary>,
    /// Open loop only: from when each request was sent.
    pub service_time_us: Option<RecorderSummary>,
    /// Per interval and tag: its index, count, p50 and p99.
    pub per_interval: Vec<IntervalFigures>,
}

/// One interval of one tag in [`Figures`].
#[derive(Debug, Serialize)]
pub struct IntervalFigures {
    pub index: u64,
    pub tag: Option<String>,
    pub count: u64,
    pub p50_us: u64,
    pub p99_us: u64,
}

/// One interval of a log, its histogram decoded.
#[derive(Debug, Clone)]
pub struct Interval {
    /// Its start after the log's BaseTime.
    pub offset: Duration,
    pub length: Duration,
    pub tag: Option<String>,
    pub hist: Histogram<u64>,
}

/// A log as read: its BaseTime (since the epoch; 0 when the log has none) and its intervals.
#[derive(Debug, Clone)]
pub struct Log {
    pub base: Duration,
    pub intervals: Vec<Interval>,
}

/// The merged test: interval k (of `length`, from `base`) of each tag, added over the logs.
#[derive(Debug, Clone)]
pub struct Merged {
    pub base: Duration,
    pub length: Duration,
    /// (interval index, tag) to the added histogram, in order of index then tag.
    pub intervals: BTreeMap<(u64, Option<String>), Histogram<u64>>,
}

/// Where the interval log stops being one, as a person reads it: the line at the parser's
/// offset, which is the first line that is neither a comment, a header nor an interval.
fn unparsed_line(text: &[u8], e: &LogIteratorError) -> String {
    let LogIteratorError::ParseError { offset } = e;
    let line = text[..(*offset).min(text.len())].iter().filter(|&&b| b == b'\n').count() + 1;
    format!("line {line} is neither a comment, a header nor an interval (as --hdr-log writes)")
}

/// Reads an interval log's text. `file` names it in the error.
pub fn read(file: &str, text: &[u8]) -> Result<Log, MergeError> {
    let bad = |reason: String| MergeError::Unreadable { file: file.to_string(), reason };
    let mut decoder = Deserializer::new();
    let (mut base, mut start) = (None, None);
    let mut intervals = Vec::new();
    for entry in IntervalLogIterator::new(text) {
        match entry.map_err(|e| bad(unparsed_line(text, &e)))? {
            LogEntry::BaseTime(t) => base = Some(t),
            LogEntry::StartTime(t) => start = Some(t),
            LogEntry::Interval(i) => {
                let bytes = base64::engine::general_purpose::STANDARD
                    .decode(i.encoded_histogram())
                    .map_err(|e| bad(format!("an interval's histogram: {e}")))?;
                let hist: Histogram<u64> = decoder
                    .deserialize(&mut &bytes[..])
                    .map_err(|e| bad(format!("an interval's histogram: {e}")))?;
                intervals.push(Interval {
                    offset: i.start_timestamp(),
                    length: i.duration(),
                    tag: i.tag().map(|t| t.as_str().to_string()),
                    hist,
                });
            }
        }
    }
    // A log without BaseTime has timestamps since StartTime, or absolute ones (HdrHistogram's
    // own convention); either way the base is what they count from.
    let base = base.or(start).unwrap_or_default();
    Ok(Log { base, intervals })
}

/// A histogram's settings as they are named in the refusal.
fn settings(h: &Histogram<u64>) -> [(&'static str, u64); 3] {
    [
        ("lowest trackable value", h.low()),
        ("highest trackable value", h.high()),
        ("significant figures", u64::from(h.sigfig())),
    ]
}

/// The first difference of settings between `h` and `reference`, said in words.
fn settings_differ(h: &Histogram<u64>, reference: &Histogram<u64>) -> Option<String> {
    let pairs = settings(h).into_iter().zip(settings(reference));
    pairs.into_iter().find(|(a, b)| a.1 != b.1).map(|(a, b)| format!("{} {} and {}", a.0, a.1, b.1))
}

/// Adds `logs` (file name, log) into one, or says which file cannot be added and why.
pub fn merge(logs: &[(String, Log)]) -> Result<Merged, MergeError> {
    let (first_file, first) = logs
        .iter()
        .find_map(|(f, l)| l.intervals.first().map(|i| (f, i)))
        .ok_or(MergeError::Empty)?;
    let length = first.length;
    let base = logs.iter().filter(|(_, l)| !l.intervals.is_empty()).map(|(_, l)| l.base).min();
    let base = base.unwrap_or_default();
    let mut intervals: BTreeMap<(u64, Option<String>), Histogram<u64>> = BTreeMap::new();
    for (file, log) in logs {
        let misaligned = |what: String| MergeError::Misaligned {
            file: file.clone(),
            other: first_file.clone(),
            what,
        };
        if !log.intervals.is_empty() && log.base.abs_diff(base) > length {
            let apart = log.base.abs_diff(base).as_secs_f64();
            return Err(misaligned(format!(
                "the logs start {apart:.3} s apart, more than one interval ({:.3} s)",
                length.as_secs_f64()
            )));
        }
        for i in &log.intervals {
            if i.length.abs_diff(length) >= LENGTH_TOLERANCE {
                return Err(misaligned(format!(
                    "intervals of {:.3} s and {:.3} s",
                    i.length.as_secs_f64(),
                    length.as_secs_f64()
                )));
            }
            if let Some(what) = settings_differ(&i.hist, &first.hist) {
                let (file, other) = (file.clone(), first_file.clone());
                return Err(MergeError::Settings { file, other, what });
            }
            let index = (i.offset.as_secs_f64() / length.as_secs_f64()).round() as u64;
            match intervals.entry((index, i.tag.clone())) {
                std::collections::btree_map::Entry::Vacant(v) => {
                    v.insert(i.hist.clone());
                }
                std::collections::btree_map::Entry::Occupied(mut o) => {
                    // Same settings (checked above): adding cannot fail.
                    o.get_mut().add(&i.hist).map_err(|e| misaligned(e.to_string()))?;
                }
            }
        }
    }
    Ok(Merged { base, length, intervals })
}

impl Merged {
    /// The tags the merged log holds (`None`: untagged), in order.
    pub fn tags(&self) -> Vec<Option<String>> {
        let mut tags: Vec<Option<String>> = self.intervals.keys().map(|k| k.1.clone()).collect();
        tags.sort();
        tags.dedup();
        tags
    }

    /// Every interval of `tag` added: the whole test's distribution.
    pub fn total(&self, tag: Option<&str>) -> Option<Histogram<u64>> {
        let mut of_tag = self.intervals.iter().filter(|(k, _)| k.1.as_deref() == tag);
        let (_, first) = of_tag.next()?;
        let mut total = first.clone();
        for (_, h) in of_tag {
            // The intervals share settings (merge checked them).
            total.add(h).ok()?;
        }
        Some(total)
    }

    /// How many intervals, first to last, the merged test spans.
    pub fn span(&self) -> u64 {
        let indices = self.intervals.keys().map(|k| k.0);
        match (indices.clone().min(), indices.max()) {
            (Some(a), Some(b)) => b - a + 1,
            _ => 0,
        }
    }

    /// Writes the merged interval log, in the form `--hdr-log` writes.
    pub fn write<W: io::Write>(&self, out: &mut W, comment: &str) -> io::Result<()> {
        let mut serializer = V2DeflateSerializer::new();
        let start = UNIX_EPOCH + self.base;
        let mut log = begin(out, &mut serializer, start, comment)?;
        for ((index, tag), hist) in &self.intervals {
            let at = self.length.saturating_mul(*index as u32);
            put(&mut log, hist, at, self.length, tag.as_deref())?;
        }
        Ok(())
    }

    /// When the merged test's first interval began.
    pub fn start(&self) -> SystemTime {
        UNIX_EPOCH + self.base
    }

    /// The figures of the merged test: each tag's intervals added, and each interval's own.
    /// bench's tags: the open loop writes "corrected" and "uncorrected", the closed loop one
    /// untagged latency.
    pub fn figures(&self, files: Vec<String>) -> Figures {
        let total = |tag: Option<&str>| self.total(tag).map(|h| summary(&h));
        let per_interval = self
            .intervals
            .iter()
            .map(|((index, tag), h)| IntervalFigures {
                index: *index,
                tag: tag.clone(),
                count: h.len(),
                p50_us: h.value_at_quantile(0.5),
                p99_us: h.value_at_quantile(0.99),
            })
            .collect();
        Figures {
            files,
            start_unix_s: self.base.as_secs_f64(),
            interval_s: self.length.as_secs_f64(),
            intervals: self.span(),
            latency_us: total(Some("corrected")).or_else(|| total(None)),
            service_time_us: total(Some("uncorrected")),
            per_interval,
        }
    }
}

/// The figures bench reports for a distribution, from a histogram alone: count, percentiles,
/// min and max exact to the histogram's resolution; the mean from each bucket's middle value
/// (a log keeps no exact sums).
pub fn summary(h: &Histogram<u64>) -> RecorderSummary {
    let (mut sum, mut sum_sq) = (0u128, 0u128);
    for v in h.iter_recorded() {
        let value = u128::from(h.median_equivalent(v.value_iterated_to()));
        let n = u128::from(v.count_at_value());
        sum += value * n;
        sum_sq += value * value * n;
    }
    let totals = Totals { count: h.len(), sum, sum_sq, min: h.min(), max: h.max() };
    match Recorder::from_histogram(h, totals) {
        Ok(r) => r.summary(),
        // A histogram wider than loadlab's own (another tool's log): its own percentiles.
        Err(_) => RecorderSummary {
            count: h.len(),
            min: h.min(),
            mean: h.mean(),
            stdev: h.stdev(),
            max: h.max(),
            p50: h.value_at_quantile(0.50),
            p75: h.value_at_quantile(0.75),
            p90: h.value_at_quantile(0.90),
            p95: h.value_at_quantile(0.95),
            p99: h.value_at_quantile(0.99),
            p999: h.value_at_quantile(0.999),
            p9999: h.value_at_quantile(0.9999),
        },
    }
}

#[cfg(test)]
mod tests;
