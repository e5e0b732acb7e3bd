//! HdrHistogram interval logs (`--hdr-log FILE`): a latency histogram per second of the run, in
//! the format HdrHistogram's own tools read (`HistogramLogProcessor`, HdrHistogramVisualizer,
//! the `hdrhistogram` crate's `IntervalLogIterator`), so that runs can be plotted over time and
//! logs of several clients merged exactly.
//!
//! Memory is the reason for the shape: a full histogram (three significant digits up to an
//! hour, in µs) holds ~22,500 counters, 180 KB; a second's worth of them per worker for an hour
//! would be gigabytes. So each worker keeps one histogram for the second in progress and, when
//! the second turns, encodes it in HdrHistogram's V2 form (zig-zag varints, runs of zeros
//! folded: a few hundred bytes) and clears it. At the end, the workers' seconds are decoded
//! and added one second at a time while the log is written.

use std::io;
use std::time::{Duration, SystemTime};

use hdrhistogram::serialization::interval_log::{IntervalLogWriter, IntervalLogWriterBuilder, Tag};
use hdrhistogram::serialization::{Deserializer, Serializer, V2DeflateSerializer, V2Serializer};
use hdrhistogram::Histogram;

use crate::recorder::{MAX_TRACKABLE_US, SIGNIFICANT_DIGITS};

/// One worker's per-second histograms of one latency.
#[derive(Clone)]
pub struct Intervals {
    current: Histogram<u64>,
    /// The second `current` holds, counted from the start of measurement.
    second: u32,
    /// Finished seconds, V2-encoded, in order.
    done: Vec<(u32, Vec<u8>)>,
}

impl std::fmt::Debug for Intervals {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Intervals")
            .field("second", &self.second)
            .field("done", &self.done.len())
            .finish()
    }
}

impl Default for Intervals {
    fn default() -> Self {
        Self::new()
    }
}

impl Intervals {
    pub fn new() -> Intervals {
        let current = Histogram::new_with_bounds(1, MAX_TRACKABLE_US, SIGNIFICANT_DIGITS)
            .expect("valid histogram bounds");
        Intervals { current, second: 0, done: Vec::new() }
    }

    /// Records `us` in second `second` (a value ending in an earlier second than the one in
    /// progress, which a worker's clock never gives, counts in the one in progress).
    #[inline]
    pub fn record(&mut self, second: u32, us: u64) {
        if second > self.second {
            self.roll(second);
        }
        self.current.saturating_record(us.min(MAX_TRACKABLE_US));
    }

    /// Closes the second in progress (encoded if it recorded anything) and starts `next`.
    fn roll(&mut self, next: u32) {
        if !self.current.is_empty() {
            let mut bytes = Vec::new();
            // Encoding into a Vec cannot fail but for a histogram V2 cannot express, which a
            // u64 histogram with these bounds is not.
            if V2Serializer::new().serialize(&self.current, &mut bytes).is_ok() {
                self.done.push((self.second, bytes));
            }
            self.current.reset();
        }
        self.second = next;
    }

    /// Closes the second in progress if `second` is later: time has moved on even when no
    /// value came (a live reader, [`Intervals::done`], then sees the seconds before it).
    pub fn advance(&mut self, second: u32) {
        if second > self.second {
            self.roll(second);
        }
    }

    /// The seconds closed so far, in order: (second, V2 encoding).
    pub fn done(&self) -> &[(u32, Vec<u8>)] {
        &self.done
    }

    /// Every second recorded, the one in progress included.
    pub fn finish(mut self) -> Vec<(u32, Vec<u8>)> {
        let last = self.second + 1;
        self.roll(last);
        self.done
    }

    /// Forgets everything recorded (the warm-up ended: measurement starts at second 0).
    pub fn clear(&mut self) {
        self.current.reset();
        self.second = 0;
        self.done.clear();
    }
}

/// One latency's seconds from every worker, and the tag it gets in the log (`None`: untagged).
#[derive(Debug, Clone)]
pub struct Tagged {
    pub tag: Option<&'static str>,
    pub workers: Vec<Vec<(u32, Vec<u8>)>>,
}

/// Writes the interval log: a header naming the unit, then for each second (in order) and each
/// tagged latency, the histogram of that second merged over the workers. `start` is when
/// measurement began; interval timestamps are seconds since it (the log's BaseTime).
pub fn write_log<W: io::Write>(
    out: &mut W,
    start: SystemTime,
    comment: &str,
    latencies: &[Tagged],
) -> io::Result<()> {
    let mut serializer = V2DeflateSerializer::new();
    let mut log = begin(out, &mut serializer, start, comment)?;
    let mut seconds: Vec<u32> =
        latencies.iter().flat_map(|l| l.workers.iter().flatten().map(|(s, _)| *s)).collect();
    seconds.sort_unstable();
    seconds.dedup();
    let mut merged = Histogram::<u64>::new_with_bounds(1, MAX_TRACKABLE_US, SIGNIFICANT_DIGITS)
        .expect("valid histogram bounds");
    let mut decoder = Deserializer::new();
    let bad = |e: String| io::Error::new(io::ErrorKind::InvalidData, e);
    for second in seconds {
        for latency in latencies {
            merged.reset();
            for worker in &latency.workers {
                for (_, bytes) in worker.iter().filter(|(s, _)| *s == second) {
                    let h: Histogram<u64> = decoder
                        .deserialize(&mut &bytes[..])
                        .map_err(|e| bad(format!("an interval histogram: {e:?}")))?;
                    merged.add(&h).map_err(|e| bad(format!("merging intervals: {e:?}")))?;
                }
            }
            if merged.is_empty() {
                continue;
            }
            let at = Duration::from_secs(u64::from(second));
            put(&mut log, &merged, at, Duration::from_secs(1), latency.tag)?;
        }
    }
    Ok(())
}

/// The log writer every interval log of loadlab's starts with: its comment, the unit, and
/// `start` as both StartTime and BaseTime (interval timestamps count from it).
pub(crate) fn begin<'a, 'b, W: io::Write>(
    out: &'a mut W,
    serializer: &'b mut V2DeflateSerializer,
    start: SystemTime,
    comment: &str,
) -> io::Result<IntervalLogWriter<'a, 'b, W, V2DeflateSerializer>> {
    let mut builder = IntervalLogWriterBuilder::new();
    builder
        .add_comment(comment)
        .add_comment("values in microseconds; the max column in milliseconds")
        .with_start_time(start)
        .with_base_time(start)
        .with_max_value_divisor(1000.0);
    builder.begin_log_with(out, serializer)
}

/// Writes one interval: `hist`, from `at` after the log's BaseTime, `length` long.
pub(crate) fn put<W: io::Write>(
    log: &mut IntervalLogWriter<'_, '_, W, V2DeflateSerializer>,
    hist: &Histogram<u64>,
    at: Duration,
    length: Duration,
    tag: Option<&str>,
) -> io::Result<()> {
    log.write_histogram(hist, at, length, tag.and_then(Tag::new))
        .map_err(|e| io::Error::other(e.to_string()))
}

#[cfg(test)]
mod tests {
    use super::*;
    use base64::Engine as _;
    use hdrhistogram::serialization::interval_log::{IntervalLogIterator, LogEntry};

    #[test]
    fn seconds_merge_across_workers_and_read_back_with_hdrhistograms_own_reader() {
        let (mut a, mut b) = (Intervals::new(), Intervals::new());
        for us in [100, 200, 300] {
            a.record(0, us);
        }
        b.record(0, 1_000);
        a.record(2, 5_000); // second 1 recorded nothing: no interval for it
        b.record(2, 7_000);
        let latencies = [Tagged { tag: Some("corrected"), workers: vec![a.finish(), b.finish()] }];
        let mut out = Vec::new();
        let start = SystemTime::UNIX_EPOCH + Duration::from_secs(1_700_000_000);
        write_log(&mut out, start, "loadlab test", &latencies).unwrap();
        let text = String::from_utf8(out.clone()).unwrap();
        assert!(text.starts_with("#loadlab test\n"), "{text}");
        assert!(text.contains("#[BaseTime: 1700000000.000"), "{text}");

        let mut decoder = Deserializer::new();
        let mut seen = Vec::new();
        for entry in IntervalLogIterator::new(&out) {
            if let LogEntry::Interval(i) = entry.unwrap() {
                let bytes = base64::engine::general_purpose::STANDARD
                    .decode(i.encoded_histogram())
                    .unwrap();
                let h: Histogram<u64> = decoder.deserialize(&mut &bytes[..]).unwrap();
                assert_eq!(i.tag().map(|t| t.as_str()), Some("corrected"));
                seen.push((i.start_timestamp().as_secs(), h.len(), h.max()));
            }
        }
        assert_eq!(seen.len(), 2);
        assert_eq!((seen[0].0, seen[0].1), (0, 4));
        assert!(seen[0].2 >= 1_000 && seen[0].2 < 1_002, "{seen:?}");
        assert_eq!((seen[1].0, seen[1].1), (2, 2));
    }

    #[test]
    fn clearing_forgets_the_warm_up() {
        let mut i = Intervals::new();
        i.record(3, 10);
        i.clear();
        i.record(0, 20);
        let done = i.finish();
        assert_eq!(done.len(), 1);
        assert_eq!(done[0].0, 0);
    }
}
