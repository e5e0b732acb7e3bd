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

    /// Hands over the seconds closed so far, forgetting them here: for a reader that takes
    /// each once (a live one) where nothing keeps them for a log, so that they do not add up
    /// over the run.
    pub fn take_done(&mut self) -> Vec<(u32, Vec<u8>)> {
        std::mem::take(&mut self.done)
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
    write_sections(out, comment, &[Section { name: None, start, latencies }])
}

/// One run of a log that holds several (a sweep's steps): the name its tags begin with
/// (`step2` makes `step2.corrected`, or `step2` for an untagged latency), when it began
/// measuring, and its latencies.
#[derive(Debug, Clone, Copy)]
pub struct Section<'a> {
    pub name: Option<&'a str>,
    pub start: SystemTime,
    pub latencies: &'a [Tagged],
}

/// [`write_log`] of several runs in one log, in order: the first one's start is the log's
/// BaseTime, and each run's seconds are placed at their own time after it, tagged with its
/// name, so that HdrHistogram's tools can select a run by its tags.
pub fn write_sections<W: io::Write>(
    out: &mut W,
    comment: &str,
    sections: &[Section<'_>],
) -> io::Result<()> {
    let base = sections.first().map_or(SystemTime::UNIX_EPOCH, |s| s.start);
    let mut serializer = V2DeflateSerializer::new();
    let mut log = begin(out, &mut serializer, base, comment)?;
    let mut merged = empty();
    let mut decoder = Deserializer::new();
    for section in sections {
        let offset = section.start.duration_since(base).unwrap_or_default();
        for second in seconds(section.latencies) {
            for latency in section.latencies {
                merge_second(latency, second, &mut merged, &mut decoder)?;
                if merged.is_empty() {
                    continue;
                }
                let tag = match (section.name, latency.tag) {
                    (Some(name), Some(tag)) => Some(format!("{name}.{tag}")),
                    (name, tag) => name.or(tag).map(str::to_string),
                };
                let at = offset + Duration::from_secs(u64::from(second));
                put(&mut log, &merged, at, Duration::from_secs(1), tag.as_deref())?;
            }
        }
    }
    Ok(())
}

/// An empty histogram of the recorders' bounds and precision.
fn empty() -> Histogram<u64> {
    Histogram::<u64>::new_with_bounds(1, MAX_TRACKABLE_US, SIGNIFICANT_DIGITS)
        .expect("valid histogram bounds")
}

/// Every second any worker recorded in, ascending.
fn seconds(latencies: &[Tagged]) -> Vec<u32> {
    let mut seconds: Vec<u32> =
        latencies.iter().flat_map(|l| l.workers.iter().flatten().map(|(s, _)| *s)).collect();
    seconds.sort_unstable();
    seconds.dedup();
    seconds
}

/// Sets `merged` to `second`'s histogram of `latency`, added over the workers: what the log
/// writes for that second, and what the per-second figures read.
fn merge_second(
    latency: &Tagged,
    second: u32,
    merged: &mut Histogram<u64>,
    decoder: &mut Deserializer,
) -> io::Result<()> {
    let bad = |e: String| io::Error::new(io::ErrorKind::InvalidData, e);
    merged.reset();
    for worker in &latency.workers {
        for (_, bytes) in worker.iter().filter(|(s, _)| *s == second) {
            let h: Histogram<u64> = decoder
                .deserialize(&mut &bytes[..])
                .map_err(|e| bad(format!("an interval histogram: {e}")))?;
            merged.add(&h).map_err(|e| bad(format!("merging intervals: {e}")))?;
        }
    }
    Ok(())
}

/// One second's latency figures, from the same merged histogram the interval log writes for it.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default, serde::Serialize)]
pub struct SecondLatency {
    pub second: u32,
    /// Values recorded in the second.
    pub count: u64,
    pub p50_us: u64,
    pub p90_us: u64,
    pub p99_us: u64,
    pub max_us: u64,
}

impl SecondLatency {
    /// The figures of one histogram (HdrHistogram's `value_at_quantile`, as the log's readers
    /// compute them).
    pub fn of(second: u32, h: &Histogram<u64>) -> SecondLatency {
        SecondLatency {
            second,
            count: h.len(),
            p50_us: h.value_at_quantile(0.50),
            p90_us: h.value_at_quantile(0.90),
            p99_us: h.value_at_quantile(0.99),
            max_us: h.max(),
        }
    }
}

/// `latency`'s figures for each second that recorded anything, ascending.
pub fn per_second(latency: &Tagged) -> io::Result<Vec<SecondLatency>> {
    let mut merged = empty();
    let mut decoder = Deserializer::new();
    let mut out = Vec::new();
    for second in seconds(std::slice::from_ref(latency)) {
        merge_second(latency, second, &mut merged, &mut decoder)?;
        if !merged.is_empty() {
            out.push(SecondLatency::of(second, &merged));
        }
    }
    Ok(out)
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
    fn taken_seconds_are_forgotten_and_the_next_ones_come_after_them() {
        let mut i = Intervals::new();
        i.record(0, 100);
        i.record(1, 200);
        i.advance(2);
        assert_eq!(i.take_done().iter().map(|(s, _)| *s).collect::<Vec<_>>(), [0, 1]);
        assert!(i.done().is_empty() && i.take_done().is_empty());
        i.record(2, 300);
        i.advance(3);
        assert_eq!(i.take_done().iter().map(|(s, _)| *s).collect::<Vec<_>>(), [2]);
    }

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

    /// Two runs in one log (a sweep's steps): each interval at its run's own time after the
    /// first run's start, tagged with the run's name.
    #[test]
    fn sections_are_placed_at_their_own_time_and_tagged_with_their_name() {
        let (mut a, mut b) = (Intervals::new(), Intervals::new());
        a.record(0, 100);
        b.record(1, 200);
        b.record(1, 300);
        let one = [Tagged { tag: Some("corrected"), workers: vec![a.finish()] }];
        let two = [Tagged { tag: None, workers: vec![b.finish()] }];
        let start = SystemTime::UNIX_EPOCH + Duration::from_secs(1_700_000_000);
        let later = start + Duration::from_secs(5);
        let sections = [
            Section { name: Some("step1"), start, latencies: &one },
            Section { name: Some("step2"), start: later, latencies: &two },
        ];
        let mut out = Vec::new();
        write_sections(&mut out, "two steps", &sections).unwrap();
        let mut seen = Vec::new();
        for entry in IntervalLogIterator::new(&out) {
            if let LogEntry::Interval(i) = entry.unwrap() {
                let tag = i.tag().map(|t| t.as_str().to_string());
                seen.push((i.start_timestamp().as_secs(), tag));
            }
        }
        let want = [(0, Some("step1.corrected".into())), (6, Some("step2".into()))];
        assert_eq!(seen, want);
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
