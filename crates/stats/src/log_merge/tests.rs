//! Merging logs against the log of all samples, and the refusals.

use std::time::{Duration, SystemTime, UNIX_EPOCH};

use hdrhistogram::Histogram;

use super::*;
use crate::interval_log::{write_log, Intervals, Tagged};

const START: u64 = 1_700_000_000;

/// A deterministic spread of values over three seconds, different per `seed`.
fn recorded(seed: u64, n: u64) -> (Intervals, Intervals) {
    let (mut latency, mut service) = (Intervals::new(), Intervals::new());
    for k in 0..n {
        let second = (k * 3 / n) as u32;
        let us = 50 + (k * 7919 + seed * 104_729) % 250_000;
        latency.record(second, us);
        service.record(second, us / 2 + 1);
    }
    (latency, service)
}

fn log_of(workers: Vec<(Intervals, Intervals)>, start: SystemTime) -> Vec<u8> {
    let (latency, service): (Vec<_>, Vec<_>) =
        workers.into_iter().map(|(l, s)| (l.finish(), s.finish())).unzip();
    let latencies = [
        Tagged { tag: Some("corrected"), workers: latency },
        Tagged { tag: Some("uncorrected"), workers: service },
    ];
    let mut out = Vec::new();
    write_log(&mut out, start, "test", &latencies).unwrap();
    out
}

fn buckets(h: &Histogram<u64>) -> Vec<(u64, u64)> {
    h.iter_recorded().map(|v| (v.value_iterated_to(), v.count_at_value())).collect()
}

fn at(secs: f64) -> SystemTime {
    UNIX_EPOCH + Duration::from_secs_f64(START as f64 + secs)
}

#[test]
fn merging_two_agents_logs_equals_the_log_of_all_samples_bucket_by_bucket() {
    let a = log_of(vec![recorded(1, 5_000)], at(0.0));
    // The second agent started 0.4 s later: within one interval, its seconds line up.
    let b = log_of(vec![recorded(2, 3_000)], at(0.4));
    let all = log_of(vec![recorded(1, 5_000), recorded(2, 3_000)], at(0.0));
    let logs =
        vec![("a".to_string(), read("a", &a).unwrap()), ("b".into(), read("b", &b).unwrap())];
    let merged = merge(&logs).unwrap();
    let reference = merge(&[("all".to_string(), read("all", &all).unwrap())]).unwrap();
    assert_eq!(merged.intervals.len(), 6, "3 seconds x 2 tags");
    let keys: Vec<_> = merged.intervals.keys().collect();
    assert_eq!(keys, reference.intervals.keys().collect::<Vec<_>>());
    for (key, h) in &merged.intervals {
        assert_eq!(buckets(h), buckets(&reference.intervals[key]), "interval {key:?}");
    }
    let total = merged.total(Some("corrected")).unwrap();
    assert_eq!(total.len(), 8_000);
    let reference_total = reference.total(Some("corrected")).unwrap();
    assert_eq!(summary(&total), summary(&reference_total));
    assert_eq!(summary(&total).p99, reference_total.value_at_quantile(0.99));
    assert_eq!(merged.start(), at(0.0));
}

#[test]
fn the_merged_log_reads_back_as_it_was_merged() {
    let a = read("a", &log_of(vec![recorded(3, 2_000)], at(0.0))).unwrap();
    let b = read("b", &log_of(vec![recorded(4, 2_000)], at(0.0))).unwrap();
    let merged = merge(&[("a".into(), a), ("b".into(), b)]).unwrap();
    let mut out = Vec::new();
    merged.write(&mut out, "merged").unwrap();
    let again = merge(&[("m".into(), read("m", &out).unwrap())]).unwrap();
    assert_eq!(again.base, merged.base);
    assert_eq!(again.intervals.len(), merged.intervals.len());
    for (key, h) in &merged.intervals {
        assert_eq!(buckets(h), buckets(&again.intervals[key]), "interval {key:?}");
    }
}

#[test]
fn logs_more_than_one_interval_apart_are_refused_naming_the_file() {
    let a = read("a.hlog", &log_of(vec![recorded(1, 100)], at(0.0))).unwrap();
    let b = read("b.hlog", &log_of(vec![recorded(2, 100)], at(1.5))).unwrap();
    let err = merge(&[("a.hlog".into(), a), ("b.hlog".into(), b)]).unwrap_err();
    let text = err.to_string();
    assert!(matches!(err, MergeError::Misaligned { .. }), "{err:?}");
    assert!(text.starts_with("b.hlog:") && text.contains("1.500 s apart"), "{text}");
}

#[test]
fn intervals_of_different_length_are_refused() {
    let a = read("a", &log_of(vec![recorded(1, 100)], at(0.0))).unwrap();
    let mut b = read("b", &log_of(vec![recorded(2, 100)], at(0.0))).unwrap();
    b.intervals[0].length = Duration::from_secs(2);
    let err = merge(&[("a".into(), a), ("b".into(), b)]).unwrap_err();
    assert!(matches!(err, MergeError::Misaligned { .. }), "{err:?}");
    assert!(err.to_string().contains("intervals of 2.000 s and 1.000 s"), "{err}");
}

#[test]
fn histograms_of_other_settings_are_refused_naming_the_setting() {
    let a = read("a", &log_of(vec![recorded(1, 100)], at(0.0))).unwrap();
    let mut b = read("b", &log_of(vec![recorded(2, 100)], at(0.0))).unwrap();
    let mut other = Histogram::<u64>::new_with_bounds(1, 3_600_000_000, 2).unwrap();
    other.record(10).unwrap();
    b.intervals[1].hist = other;
    let err = merge(&[("a".into(), a), ("b".into(), b)]).unwrap_err();
    assert_eq!(
        err,
        MergeError::Settings {
            file: "b".into(),
            other: "a".into(),
            what: "significant figures 2 and 3".into()
        }
    );
}

#[test]
fn text_that_is_not_a_log_is_refused() {
    let err = read("x.txt", b"Tag=a,0.0,1.0,1.0,@@@\n").unwrap_err();
    assert!(matches!(err, MergeError::Unreadable { .. }), "{err:?}");
    assert!(err.to_string().starts_with("x.txt: not an HdrHistogram interval log"), "{err}");
    assert_eq!(merge(&[]).unwrap_err(), MergeError::Empty);
}

/// A file that is not an interval log is told by its line, not by the parser's Rust value.
#[test]
fn a_file_that_is_not_an_interval_log_names_its_line() {
    let e = read("notes.txt", b"#[BaseTime: 0.000 (seconds since epoch)]\nhello\n").unwrap_err();
    assert_eq!(
        e.to_string(),
        "notes.txt: not an HdrHistogram interval log: line 2 is neither a comment, a header nor \
         an interval (as --hdr-log writes)"
    );
}
