//! `--hdr-log FILE`: the per-second histograms in HdrHistogram's interval-log format, read back
//! with the `hdrhistogram` crate's own `IntervalLogIterator`: every completed request is in
//! exactly one second of each latency, and the warm-up in none.

use std::collections::BTreeMap;

use base64::Engine as _;
use hdrhistogram::serialization::interval_log::{IntervalLogIterator, LogEntry};
use hdrhistogram::serialization::Deserializer;
use hdrhistogram::Histogram;

use super::cli_errors::fails;
use super::{assert_accounted, at, bench, uint};
use crate::support::{Behaviour, TestServer};

/// Per tag (`""` for untagged), the count of each interval in the log, by its start second.
fn read_back(path: &std::path::Path) -> BTreeMap<String, Vec<(u64, u64)>> {
    let bytes = std::fs::read(path).expect("the interval log was written");
    let mut decoder = Deserializer::new();
    let mut out: BTreeMap<String, Vec<(u64, u64)>> = BTreeMap::new();
    for entry in IntervalLogIterator::new(&bytes) {
        let entry = entry.unwrap_or_else(|e| panic!("an entry HdrHistogram cannot read: {e:?}"));
        if let LogEntry::Interval(i) = entry {
            let raw = base64::engine::general_purpose::STANDARD
                .decode(i.encoded_histogram())
                .expect("base64");
            let h: Histogram<u64> = decoder.deserialize(&mut &raw[..]).expect("a V2 histogram");
            assert_eq!(i.duration().as_secs(), 1, "one interval a second");
            let tag = i.tag().map_or(String::new(), |t| t.as_str().to_string());
            out.entry(tag).or_default().push((i.start_timestamp().as_secs(), h.len()));
        }
    }
    out
}

fn total(intervals: &[(u64, u64)]) -> u64 {
    intervals.iter().map(|(_, n)| n).sum()
}

#[test]
fn a_closed_loop_writes_one_untagged_latency_whose_seconds_add_up_to_completed() {
    let server = TestServer::start(Behaviour::Slow {
        delay: std::time::Duration::from_millis(5),
        body: b"x".to_vec(),
    });
    let dir = tempfile::tempdir().expect("temp dir");
    let path = dir.path().join("run.hlog");
    let args = ["-c", "4", "-d", "2s", "--hdr-log", path.to_str().unwrap()];
    let report = bench(&server.url("/"), &args, 0);
    assert_eq!(at(&report, "config.hdr_log"), true);
    let log = read_back(&path);
    assert_eq!(log.keys().collect::<Vec<_>>(), [""], "closed loop: untagged only");
    let seconds: Vec<u64> = log[""].iter().map(|(s, _)| *s).collect();
    assert_eq!(seconds, [0, 1], "{log:?}");
    assert_eq!(total(&log[""]), uint(&report, "requests.completed"), "{log:?}\n{report:#}");
    let text = std::fs::read_to_string(&path).unwrap();
    assert!(text.starts_with("#loadlab "), "{text}");
}

#[test]
fn an_open_loop_writes_corrected_and_uncorrected_without_the_warm_up() {
    let server = TestServer::start(Behaviour::ok("x"));
    let dir = tempfile::tempdir().expect("temp dir");
    let path = dir.path().join("run.hlog");
    let args =
        ["--rate", "300", "-n", "600", "--warmup", "1s", "--hdr-log", path.to_str().unwrap()];
    let report = bench(&server.url("/"), &args, 0);
    assert_accounted(&report, 600);
    let log = read_back(&path);
    assert_eq!(log.keys().collect::<Vec<_>>(), ["corrected", "uncorrected"], "{log:?}");
    for tag in ["corrected", "uncorrected"] {
        assert_eq!(total(&log[tag]), 600, "{tag}: the warm-up's 300 are not in it: {log:?}");
        assert!(log[tag].iter().all(|(s, _)| *s <= 3), "{log:?}");
    }
}

#[test]
fn an_interval_log_that_cannot_be_written_is_refused_before_the_run() {
    let server = TestServer::start(Behaviour::ok("never asked"));
    let stderr =
        fails(&["bench", &server.url("/"), "-n", "5", "--hdr-log", "/nonexistent/x.hlog"], 2);
    assert!(stderr.contains("--hdr-log /nonexistent/x.hlog: cannot create it"), "{stderr}");
    assert_eq!(server.requests(), 0);
}
