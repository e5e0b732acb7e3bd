//! The JSON report against its published schema, docs/bench.schema.json: real runs of the binary
//! (clean, failing, timed; closed loop, open loop and sessions) must validate, and documents that
//! break the schema must not, so that the schema, the docs that point to it and the `Report`
//! struct cannot drift apart unnoticed.

use std::path::PathBuf;

use jsonschema::Validator;
use serde_json::{json, Value};

use crate::support::{run_json, Behaviour, TestServer};

fn schema_path() -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("../../docs/bench.schema.json")
}

/// The schema, itself checked against the draft 2020-12 meta-schema.
pub(crate) fn validator() -> Validator {
    let path = schema_path();
    let text = std::fs::read_to_string(&path)
        .unwrap_or_else(|e| panic!("reading {}: {e}", path.display()));
    let schema: Value = serde_json::from_str(&text)
        .unwrap_or_else(|e| panic!("{} is not JSON: {e}", path.display()));
    assert_eq!(
        schema["$schema"], "https://json-schema.org/draft/2020-12/schema",
        "the schema must declare draft 2020-12"
    );
    if let Err(e) = jsonschema::meta::validate(&schema) {
        panic!("{} is not a valid JSON Schema: {e} at {}", path.display(), e.instance_path());
    }
    jsonschema::draft202012::new(&schema)
        .unwrap_or_else(|e| panic!("{} does not compile: {e}", path.display()))
}

/// Every violation, one per line with where it is; empty when `doc` is valid.
fn violations(validator: &Validator, doc: &Value) -> Vec<String> {
    validator
        .iter_errors(doc)
        .map(|e| format!("{}: {e} (schema {})", e.instance_path(), e.schema_path()))
        .collect()
}

#[track_caller]
pub(crate) fn assert_valid(validator: &Validator, doc: &Value) {
    let errors = violations(validator, doc);
    assert!(
        errors.is_empty(),
        "the report does not match docs/bench.schema.json:\n{}\n--- report ---\n{}",
        errors.join("\n"),
        serde_json::to_string_pretty(doc).unwrap()
    );
}

/// `loadlab bench ARGS URL` in JSON; the run must succeed and its report must validate.
fn bench(validator: &Validator, server: &TestServer, args: &[&str]) -> Value {
    let url = server.url("/");
    let mut all = vec!["bench"];
    all.extend_from_slice(args);
    all.push(&url);
    let (doc, output) = run_json(&all);
    assert!(
        output.status.success(),
        "loadlab {all:?}: {}\n--- stderr ---\n{}",
        output.status,
        String::from_utf8_lossy(&output.stderr)
    );
    assert_valid(validator, &doc);
    assert_invariants(&doc);
    doc
}

/// The relations between figures that docs/json-schema.md promises (section "Invariants").
#[track_caller]
fn assert_invariants(doc: &Value) {
    let sum =
        |v: &Value| -> u64 { v.as_object().unwrap().values().map(|n| n.as_u64().unwrap()).sum() };
    let series = |key: &str| -> u64 {
        doc["throughput"]["series"]
            .as_array()
            .unwrap()
            .iter()
            .map(|b| b[key].as_u64().unwrap())
            .sum()
    };
    let (completed, failed) = (n(doc, "/requests/completed"), n(doc, "/requests/failed"));
    assert_eq!(sum(&doc["errors"]), failed, "errors vs requests.failed: {doc}");
    assert_eq!(
        sum(&doc["status"]),
        completed + n(doc, "/errors/validation"),
        "status vs completed + validation failures: {doc}"
    );
    assert_eq!(n(doc, "/latency_us/count"), completed, "{doc}");
    assert_eq!(series("completed"), completed, "series vs completed: {doc}");
    assert_eq!(series("failed"), failed, "series vs failed: {doc}");
    assert_eq!(doc["connections"]["opened"], doc["requests"]["connections_opened"], "{doc}");
    assert_eq!(doc["connections"]["peak"], doc["client"]["peak_connections"], "{doc}");
    assert_eq!(doc["connections"]["limit"], doc["config"]["connections"], "{doc}");
    let counted = doc["config"]["requests"]
        .as_u64()
        .or(doc["config"]["conns"].as_u64())
        .filter(|_| doc["interrupted"] == json!(false));
    let calls = doc["config"]["calls_per_connection"].as_u64();
    match doc["mode"].as_str() {
        Some("closed") => assert_eq!(doc["latency_us"], doc["timings_us"]["total"], "{doc}"),
        Some("open" | "sessions") => {
            // Latency counts from the due time; the service time, from the actual start.
            assert_eq!(doc["service_time_us"], doc["timings_us"]["total"], "{doc}");
            assert_eq!(n(doc, "/service_time_us/count"), completed, "{doc}");
            assert_eq!(doc["rate"]["achieved_rps"], doc["rps"], "{doc}");
            let rate = doc["config"]["rate"].as_f64().expect("config.rate");
            let offered = rate * calls.unwrap_or(1) as f64;
            assert_eq!(doc["rate"]["offered_rps"].as_f64(), Some(offered), "{doc}");
            if counted.is_some() {
                // A counted run waits for its last arrival: nothing is left unsent.
                assert_eq!(n(doc, "/rate/not_sent"), 0, "{doc}");
            }
        }
        other => panic!("unknown mode {other:?}: {doc}"),
    }
    if let Some(urls) = doc["urls"].as_array() {
        // Each request of a URL list counts its own: together they are the run's.
        let total = |key: &str| urls.iter().map(|u| u[key].as_u64().unwrap()).sum::<u64>();
        assert_eq!(total("completed"), completed, "urls vs completed: {doc}");
        assert_eq!(total("failed"), failed, "urls vs failed: {doc}");
    }
    if let Some(replay) = doc["replay"].as_object() {
        let skipped: u64 =
            replay["skipped"].as_object().unwrap().values().map(|n| n.as_u64().unwrap()).sum();
        let usable = replay["lines"].as_u64().unwrap() - skipped;
        assert!(replay["replayed"].as_u64().unwrap() <= usable, "{doc}");
    }
    if let Some(asked) = counted {
        match calls {
            // Sessions count connections; a session ends early when one of its calls fails.
            Some(calls) => assert!(completed + failed <= asked * calls, "{doc}"),
            None => {
                assert_eq!(completed + failed, asked, "a counted run ends every request: {doc}")
            }
        }
        assert_eq!(n(doc, "/requests/unfinished"), 0, "{doc}");
    }
}

fn n(doc: &Value, pointer: &str) -> u64 {
    doc.pointer(pointer).and_then(Value::as_u64).unwrap_or_else(|| panic!("{pointer} in {doc}"))
}

#[test]
fn schema_accepts_a_clean_counted_run() {
    let v = validator();
    let server = TestServer::start(Behaviour::ok("hello, schema\n"));
    let doc = bench(&v, &server, &["-n", "200", "-c", "4"]);
    assert_eq!(n(&doc, "/requests/completed"), 200);
    assert_eq!(n(&doc, "/requests/failed"), 0);
    assert_eq!(n(&doc, "/config/requests"), 200);
    assert!(doc["config"]["duration_s"].is_null());
    assert_eq!(n(&doc, "/body_length/first"), 14);
    assert_eq!(n(&doc, "/status/200"), 200);
    // Loopback: the link is lo, whose speed the kernel does not report, so never network-bound.
    assert_eq!(doc["client"]["link"], json!({"interface": "lo", "speed_mbps": null}));
    assert_eq!(doc["client"]["network_bound"], json!(false));
}

#[test]
fn schema_accepts_a_run_whose_connections_are_reset() {
    let v = validator();
    let server = TestServer::start(Behaviour::Reset);
    let doc = bench(&v, &server, &["-n", "200", "-c", "4"]);
    // Every nullable figure of a run where nothing completed is null here: the schema must
    // allow that, not only the happy path.
    assert_eq!(n(&doc, "/requests/completed") + n(&doc, "/requests/failed"), 200);
    assert!(n(&doc, "/errors/connreset") > 0, "{doc}");
    assert!(doc["body_length"]["first"].is_null(), "{doc}");
    assert!(!doc["warnings"].as_array().unwrap().is_empty(), "{doc}");
}

#[test]
fn schema_accepts_validation_failures_and_many_status_codes() {
    let v = validator();
    let server = TestServer::start(Behaviour::StatusCycle(vec![200, 404, 500, 302]));
    let doc = bench(&v, &server, &["-n", "200", "-c", "4", "--expect-status", "200"]);
    assert_eq!(n(&doc, "/requests/completed") + n(&doc, "/requests/failed"), 200);
    assert_eq!(n(&doc, "/errors/validation"), n(&doc, "/requests/failed"));
    assert!(n(&doc, "/requests/failed") > 0, "{doc}");
    assert!(doc["status"].as_object().unwrap().len() > 1, "{doc}");
    assert_eq!(doc["config"]["expect_status"], json!(["200"]));
}

#[test]
fn schema_accepts_a_timed_run() {
    let v = validator();
    let server = TestServer::start(Behaviour::ok("hello, schema\n"));
    let doc = bench(&v, &server, &["-d", "1s", "-c", "4"]);
    assert!(doc["config"]["requests"].is_null(), "{doc}");
    assert_eq!(doc["config"]["duration_s"], json!(1.0));
    assert!(n(&doc, "/requests/completed") > 0, "{doc}");
    // A run of one whole second has one per-second sample: the non-null branch is exercised.
    assert_eq!(n(&doc, "/throughput/per_second/samples"), 1, "{doc}");
}

#[test]
fn schema_accepts_a_gated_run() {
    let v = validator();
    let server = TestServer::start(Behaviour::ok("hello, schema\n"));
    let doc = bench(&v, &server, &["-n", "50", "--slo", "p99<10s,errors<=0%,rps>0"]);
    assert_eq!(doc["slo"]["passed"], json!(true), "{doc}");
    assert_eq!(doc["slo"]["terms"].as_array().map(Vec::len), Some(3), "{doc}");
    let doc = bench(&v, &server, &["-n", "5"]);
    assert!(doc["slo"].is_null(), "{doc}");
}

#[test]
fn schema_accepts_an_open_loop_run() {
    let v = validator();
    let server = TestServer::start(Behaviour::ok("hello, schema\n"));
    let doc = bench(&v, &server, &["--rate", "500", "-d", "1s"]);
    assert_eq!(doc["mode"], "open", "{doc}");
    assert_eq!(doc["config"]["rate"], json!(500.0), "{doc}");
    assert_eq!(doc["config"]["arrival"], "fixed", "{doc}");
    assert!(doc["config"]["calls_per_connection"].is_null(), "{doc}");
    assert_eq!(doc["config"]["source_ips"], json!([]), "{doc}");
    // The pool may grow to --max-connections (default 10,000); -c plays no part.
    assert_eq!(n(&doc, "/config/connections"), 10_000, "{doc}");
    assert_eq!(doc["rate"]["offered_rps"], json!(500.0), "{doc}");
    assert!(n(&doc, "/requests/completed") > 0, "{doc}");
    // Every arrival due in the measured second is accounted for exactly once: started (and
    // then completed, failed or unfinished) or never sent. Fixed arrivals at 500/s over 1 s
    // are 500, and each worker may also start the one due at the very end. This is a count,
    // not a timing: it holds however slow the machine.
    let accounted = ["/requests/completed", "/requests/failed", "/requests/unfinished"]
        .iter()
        .map(|p| n(&doc, p))
        .sum::<u64>()
        + n(&doc, "/rate/not_sent");
    let threads = n(&doc, "/config/threads");
    assert!((500..=500 + threads).contains(&accounted), "{accounted} arrivals: {doc}");
}

#[test]
fn schema_accepts_a_sessions_run() {
    let v = validator();
    let server = TestServer::start(Behaviour::ok("hello, schema\n"));
    let doc = bench(&v, &server, &["--conn-rate", "100", "--calls-per-conn", "3", "--conns", "50"]);
    assert_eq!(doc["mode"], "sessions", "{doc}");
    assert_eq!(doc["config"]["rate"], json!(100.0), "{doc}");
    assert_eq!(n(&doc, "/config/calls_per_connection"), 3, "{doc}");
    assert_eq!(doc["config"]["arrival"], "fixed", "{doc}");
    // In sessions, the count is of connections (httperf's --num-conns).
    assert_eq!(n(&doc, "/config/conns"), 50, "{doc}");
    assert!(doc["config"]["requests"].is_null(), "{doc}");
    assert!(doc["config"]["duration_s"].is_null(), "{doc}");
    assert_eq!(doc["rate"]["offered_rps"], json!(300.0), "{doc}");
    // The test server keeps every connection open, so every session makes all its calls.
    assert_eq!(n(&doc, "/requests/completed"), 150, "{doc}");
    assert_eq!(n(&doc, "/connections/opened"), 50, "{doc}");
    // Each session's connection is closed after its last call, inside the run.
    assert_eq!(n(&doc, "/connections/lifetime_us/count"), 50, "{doc}");
    assert_eq!(doc["connections"]["replies_per_connection"], json!(3.0), "{doc}");
}

/// Damage done to a valid report.
type Breakage = fn(&mut Value);

/// The check can fail: documents that break the schema in typical ways are rejected.
#[test]
fn schema_accepts_a_url_list_and_a_replay() {
    let v = validator();
    let server = TestServer::start(Behaviour::StatusCycle(vec![200, 404]));
    let dir = tempfile::tempdir().unwrap();
    let list = dir.path().join("urls.txt");
    std::fs::write(&list, "/a\nweight=2 HEAD /b X-A: 1\n").unwrap();
    let list = list.to_str().unwrap();
    let doc = bench(&v, &server, &["--urls", list, "-n", "100", "--expect-status", "200"]);
    assert_eq!(doc["urls"].as_array().map(Vec::len), Some(2), "{doc}");
    assert_eq!(doc["config"]["urls_order"], json!("weighted"));
    assert!(doc["replay"].is_null(), "{doc}");
    let log = dir.path().join("access.log");
    let lines = "1.2.3.4 - - [01/May/2024:10:00:00 +0000] \"GET /x HTTP/1.1\" 200 1\n\
                 1.2.3.4 - - [01/May/2024:10:00:00 +0000] \"CONNECT x:443 HTTP/1.1\" 200 1\n";
    std::fs::write(&log, lines.repeat(20)).unwrap();
    let doc = bench(&v, &server, &["--replay", log.to_str().unwrap(), "--speed", "10"]);
    assert_eq!(doc["replay"]["replayed"], json!(20), "{doc}");
    assert_eq!(doc["replay"]["skipped"]["connect"], json!(20), "{doc}");
    assert!(doc["urls"].is_null(), "{doc}");
}

#[test]
fn schema_rejects_broken_reports() {
    let v = validator();
    let server = TestServer::start(Behaviour::ok("x"));
    let good = bench(&v, &server, &["-n", "20", "-c", "2"]);

    let broken: [(&str, Breakage); 12] = [
        ("rps as a string", |d| d["rps"] = json!("1234.5")),
        ("requests missing", |d| {
            d.as_object_mut().unwrap().remove("requests");
        }),
        ("an error class missing", |d| {
            d["errors"].as_object_mut().unwrap().remove("connreset");
        }),
        ("an unknown top-level key", |d| d["extra"] = json!(1)),
        ("an unknown key in a fixed object", |d| d["client"]["cpu_total_s"] = json!(0.5)),
        ("a fractional percentile", |d| d["latency_us"]["p99"] = json!(1.5)),
        ("a negative count", |d| d["requests"]["failed"] = json!(-1)),
        ("null where never null", |d| d["duration_s"] = Value::Null),
        ("a status key that is not a code", |d| d["status"]["ok"] = json!(3)),
        ("both -n and -d echoed", |d| d["config"]["duration_s"] = json!(1.0)),
        ("a link without its speed", |d| {
            d["client"]["link"].as_object_mut().unwrap().remove("speed_mbps");
        }),
        ("a link speed as a string", |d| d["client"]["link"]["speed_mbps"] = json!("100")),
    ];
    for (what, breaks) in broken {
        let mut doc = good.clone();
        breaks(&mut doc);
        assert!(!v.is_valid(&doc), "a report with {what} passed the schema");
    }

    // What each load model leaves null, and what it fills in, is part of the schema.
    let open = bench(&v, &server, &["--rate", "200", "-n", "20"]);
    let broken: [(&str, Breakage); 8] = [
        ("an unknown mode", |d| d["mode"] = json!("burst")),
        ("an open loop without rate figures", |d| d["rate"] = Value::Null),
        ("an open loop without a service time", |d| d["service_time_us"] = Value::Null),
        ("an open loop echoing no rate", |d| d["config"]["rate"] = Value::Null),
        ("an open loop with calls per connection", |d| {
            d["config"]["calls_per_connection"] = json!(3)
        }),
        ("a closed loop with rate figures", |d| d["mode"] = json!("closed")),
        ("an unknown arrival", |d| d["config"]["arrival"] = json!("uniform")),
        ("a fractional lateness", |d| d["rate"]["late_p99_us"] = json!(1.5)),
    ];
    for (what, breaks) in broken {
        let mut doc = open.clone();
        breaks(&mut doc);
        assert!(!v.is_valid(&doc), "a report with {what} passed the schema");
    }
    let mut doc = good.clone();
    doc["mode"] = json!("open");
    assert!(!v.is_valid(&doc), "a closed-loop report labelled open passed the schema");

    // Maps stay open: more status codes or errnos are not a schema violation.
    let mut doc = good.clone();
    doc["status"]["503"] = json!(7);
    doc["errors_other_errno"]["113"] = json!(2);
    assert_valid(&v, &doc);
}

#[test]
fn schema_accepts_a_run_of_visits() {
    let v = validator();
    let server = TestServer::start(Behaviour::ok("hello, schema\n"));
    let dir = tempfile::tempdir().expect("temp dir");
    let log = dir.path().join("visits.log");
    std::fs::write(&log, "/page think=0.05\n  /a.css\n  /b.js\n/next\n").expect("write the log");
    let spec = format!("6,0,{}", log.display());
    let doc = bench(&v, &server, &["--wsesslog", &spec, "--rate", "50"]);
    assert_eq!(n(&doc, "/sessions/completed"), 6);
    assert_eq!(n(&doc, "/requests/completed"), 24);
    assert_eq!(doc["sessions"]["failures"], json!([]));
}

#[test]
fn schema_accepts_a_run_of_page_views() {
    let v = validator();
    let page = r#"<html><head><link rel="stylesheet" href="/s.css"></head><img src="/i.png">"#;
    let server = TestServer::start(Behaviour::ok(page));
    let doc = bench(&v, &server, &["--view", "--repeat-view", "--rate", "50", "-n", "4"]);
    assert_eq!(n(&doc, "/views/completed"), 8);
    assert_eq!(doc["views"]["resources"][1], json!({"path": "/i.png", "repeat_view": "fetched"}));
    let mut broken = doc.clone();
    broken["views"]["cache"] = json!("warm");
    assert!(!violations(&v, &broken).is_empty(), "a cache the schema does not name");
}
