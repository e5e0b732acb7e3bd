//! `loadlab merge`: two real `--hdr-log` files, written by two `loadlab bench` runs against a
//! local test server, merged; the reference is the `hdrhistogram` crate's own interval-log
//! reader adding the two files' histograms in the test.

use std::path::Path;

use base64::Engine as _;
use hdrhistogram::serialization::interval_log::{IntervalLogIterator, LogEntry};
use hdrhistogram::serialization::Deserializer;
use hdrhistogram::Histogram;

use super::{assert_exit, bench, uint};
use crate::support::{loadlab, output_within, Behaviour, TestServer, RUN_LIMIT};

/// Every interval of `tag` in the log at `path`, added, by HdrHistogram's own reader.
fn added(paths: &[&Path], tag: &str) -> Histogram<u64> {
    let mut total: Option<Histogram<u64>> = None;
    let mut decoder = Deserializer::new();
    for path in paths {
        let bytes = std::fs::read(path).expect("the interval log was written");
        for entry in IntervalLogIterator::new(&bytes) {
            let LogEntry::Interval(i) = entry.expect("a log entry") else { continue };
            if i.tag().map(|t| t.as_str()) != Some(tag) {
                continue;
            }
            let raw = base64::engine::general_purpose::STANDARD
                .decode(i.encoded_histogram())
                .expect("base64");
            let h: Histogram<u64> = decoder.deserialize(&mut &raw[..]).expect("a V2 histogram");
            match &mut total {
                Some(t) => t.add(&h).expect("same settings"),
                None => total = Some(h),
            }
        }
    }
    total.expect("intervals of the tag")
}

fn merge(args: &[&str]) -> std::process::Output {
    let mut cmd = loadlab();
    cmd.arg("merge").args(args);
    output_within(cmd, RUN_LIMIT)
}

#[test]
fn two_agents_logs_merge_into_the_sum_of_counts_and_the_p99_of_the_added_histograms() {
    let server = TestServer::start(Behaviour::Slow {
        delay: std::time::Duration::from_millis(2),
        body: b"x".to_vec(),
    });
    let dir = tempfile::tempdir().expect("temp dir");
    let (a, b, out) =
        (dir.path().join("a.hlog"), dir.path().join("b.hlog"), dir.path().join("all.hlog"));
    // The two "agents" run at the same time, as agents do: logs started seconds apart would
    // not line up (the next test).
    let url = server.url("/");
    let completed: u64 = std::thread::scope(|s| {
        let runs: Vec<_> = [(&a, "400"), (&b, "300")]
            .map(|(path, n)| {
                let url = &url;
                s.spawn(move || {
                    let args = ["--rate", "200", "-n", n, "--hdr-log", path.to_str().unwrap()];
                    uint(&bench(url, &args, 0), "requests.completed")
                })
            })
            .into_iter()
            .collect();
        runs.into_iter().map(|r| r.join().expect("a bench run")).sum()
    });
    assert!(completed > 0);
    let (a_s, b_s, out_s) = (a.to_str().unwrap(), b.to_str().unwrap(), out.to_str().unwrap());
    let output = merge(&[a_s, b_s, "--format", "json", "--hdr-log", out_s]);
    assert_exit(&output, 0);
    let merged: serde_json::Value = serde_json::from_slice(&output.stdout).expect("JSON");
    let reference = added(&[&a, &b], "corrected");
    assert_eq!(reference.len(), completed, "the reference holds every completed request");
    assert_eq!(uint(&merged, "latency_us.count"), completed, "{merged:#}");
    assert_eq!(uint(&merged, "latency_us.p99"), reference.value_at_quantile(0.99), "{merged:#}");
    assert_eq!(uint(&merged, "latency_us.p50"), reference.value_at_quantile(0.50), "{merged:#}");
    let service = added(&[&a, &b], "uncorrected");
    assert_eq!(uint(&merged, "service_time_us.p99"), service.value_at_quantile(0.99));
    // The merged log, read back by the same reader, holds the same distribution.
    let again = added(&[&out], "corrected");
    assert_eq!(again.len(), completed);
    assert_eq!(again.value_at_quantile(0.99), reference.value_at_quantile(0.99));

    let text = merge(&[a_s, b_s]);
    assert_exit(&text, 0);
    let text = String::from_utf8_lossy(&text.stdout);
    assert!(text.contains(&format!("{completed} timed")) && text.contains("from due"), "{text}");
}

#[test]
fn logs_whose_seconds_do_not_line_up_are_refused_with_their_own_exit_code() {
    let dir = tempfile::tempdir().expect("temp dir");
    let log = |name: &str, base: &str| {
        let path = dir.path().join(name);
        let h = Histogram::<u64>::new_with_bounds(1, 3_600_000_000, 3).unwrap();
        let mut h = h;
        h.record(100).unwrap();
        let mut bytes = Vec::new();
        hdrhistogram::serialization::Serializer::serialize(
            &mut hdrhistogram::serialization::V2Serializer::new(),
            &h,
            &mut bytes,
        )
        .unwrap();
        let encoded = base64::engine::general_purpose::STANDARD.encode(&bytes);
        let text =
            format!("#[BaseTime: {base} (seconds since epoch)]\n0.000,1.000,0.100,{encoded}\n");
        std::fs::write(&path, text).unwrap();
        path
    };
    let (a, late) = (log("a.hlog", "1700000000.000"), log("late.hlog", "1700000005.000"));
    let output = merge(&[a.to_str().unwrap(), late.to_str().unwrap()]);
    assert_exit(&output, 11);
    let stderr = String::from_utf8_lossy(&output.stderr);
    assert!(stderr.contains("late.hlog") && stderr.contains("5.000 s apart"), "{stderr}");
    assert_eq!(stderr.lines().count(), 1, "{stderr}");

    let missing = merge(&[dir.path().join("none.hlog").to_str().unwrap()]);
    assert_exit(&missing, 2);
}
