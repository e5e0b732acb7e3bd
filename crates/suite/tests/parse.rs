//! Suite files, good and bad: every mistake is refused with the file, line and column of the
//! value to fix, and the documented example parses.

use std::time::Duration;

use loadlab_engine::{Arrival, Stop};
use loadlab_suite::{parse, plan, Location, Points, SuiteError};

const GOOD: &str = r#"name = "good"
description = "two stacks"
repetitions = 4
warmup = "500ms"
interleave = true
client_cpus = "1"
stack_cpus = "0"

[[stacks]]
name = "nginx"

[[stacks]]
name = "nginx-fpm"
label = "fpm-2"
workers = 2
cpus = "0-1"

[[workloads]]
name = "hello.txt"
expect_status = 200
expect_contains = "hello"

[[loads]]
model = "open"
sweep = "100..300:100"
duration = "2s"
arrival = "poisson"
accept_encoding = "gzip"
"#;

/// The error `text` gives, with its position.
fn error(text: &str) -> (Location, String) {
    match parse(text, "bad.toml") {
        Err(e @ SuiteError::Invalid { at: Some(at), .. }) => {
            let message = e.to_string();
            assert!(
                message.starts_with(&format!("bad.toml:{}:{}: ", at.line, at.column)),
                "{message}"
            );
            (at, message)
        }
        Err(other) => panic!("expected a located error, got {other}"),
        Ok(_) => panic!("accepted:\n{text}"),
    }
}

/// Asserts that `text` fails with a message holding `needle`, at the first occurrence of
/// `at` in the text (the snippet the user must fix).
#[track_caller]
fn fails_on(text: &str, at: &str, needle: &str) {
    let offset = text.find(at).unwrap_or_else(|| panic!("{at:?} is not in the text"));
    let before = &text[..offset];
    let line = before.matches('\n').count() + 1;
    let column = before[before.rfind('\n').map_or(0, |i| i + 1)..].chars().count() + 1;
    let (got, message) = error(text);
    assert_eq!((got.line, got.column), (line, column), "{message} (expected at {at:?})");
    assert!(message.contains(needle), "{message:?} lacks {needle:?}");
}

#[test]
fn a_good_file_parses_into_what_it_says() {
    let suite = parse(GOOD, "good.toml").unwrap_or_else(|e| panic!("{e}"));
    assert_eq!(suite.repetitions, 4);
    assert_eq!(suite.warmup, Duration::from_millis(500));
    assert_eq!(suite.client_cpus.as_ref().unwrap().0, vec![1]);
    assert_eq!(
        suite.stacks[0].knobs().unwrap().cpus.as_ref().unwrap().0,
        vec![0],
        "stack_cpus fills in"
    );
    assert_eq!(
        suite.stacks[1].knobs().unwrap().cpus.as_ref().unwrap().0,
        vec![0, 1],
        "cpus overrides"
    );
    assert_eq!(suite.stacks[1].label, "fpm-2");
    assert_eq!(suite.stacks[1].knobs().unwrap().workers, Some(2));
    let v = suite.workloads[0].expect.as_ref().unwrap();
    assert_eq!(v.status, vec![(200, 200)]);
    let load = &suite.loads[0];
    assert_eq!(load.points, Points::Open { rates: vec![100.0, 200.0, 300.0] });
    assert_eq!(load.stop, Stop::Duration(Duration::from_secs(2)));
    assert_eq!(Arrival::from(load.schedule.arrival), Arrival::Poisson);
    assert_eq!(load.accept_encoding.as_deref(), Some("gzip"));
    assert_eq!(plan(&suite, false).cells.len(), 4 * 2 * 3);
}

#[test]
fn the_documented_example_parses() {
    let doc = include_str!("../../../docs/suites.md");
    let start = doc.find("```toml\n").expect("docs/suites.md has a TOML example") + 8;
    let end = start + doc[start..].find("```").unwrap();
    let suite = parse(&doc[start..end], "docs/suites.md").unwrap_or_else(|e| panic!("{e}"));
    // As the text under the example counts them.
    assert_eq!(plan(&suite, false).cells.len(), 42 * 4);
    assert_eq!(plan(&suite, true).cells.len(), 42 * 4);
}

#[test]
fn toml_syntax_errors_have_a_position() {
    let (at, message) = error("name = \"x\"\nrepetitions = = 3\n");
    assert_eq!(at.line, 2, "{message}");
}

#[test]
fn unknown_keys_are_errors() {
    let text = GOOD.replace("repetitions = 4", "repetitons = 4");
    fails_on(&text, "repetitons", "unknown field `repetitons`");
    let text = GOOD.replace("workers = 2", "worker = 2");
    fails_on(&text, "worker = 2", "unknown field `worker`");
    let text = GOOD.replace("arrival = ", "arival = ");
    fails_on(&text, "arival", "unknown field `arival`");
    let text = format!("{GOOD}\n[quick]\nfactr = 0.5\n");
    fails_on(&text, "factr", "unknown field `factr`");
}

#[test]
fn wrong_types_and_missing_keys_are_errors() {
    let text = GOOD.replace("repetitions = 4", "repetitions = \"4\"");
    fails_on(&text, "\"4\"", "expected u32");
    let text = GOOD.replace("model = \"open\"", "model = \"ramp\"");
    fails_on(&text, "\"ramp\"", "unknown variant");
    let (_, message) = error(&GOOD.replace("name = \"good\"\n", ""));
    assert!(message.contains("missing field `name`"), "{message}");
}

#[test]
fn stacks_are_checked_against_the_lab() {
    let text = GOOD.replace("\"nginx\"\n", "\"ngnix\"\n");
    fails_on(&text, "\"ngnix\"", "unknown stack \"ngnix\"; the stacks are: nginx,");
    let text = GOOD.replace("name = \"nginx\"\n", "name = \"nginx\"\nopcache = false\n");
    fails_on(&text, "false", "opcache: nginx runs no PHP");
    let text = GOOD.replace("name = \"nginx\"\n", "name = \"nginx\"\ndb = true\n");
    fails_on(&text, "true\n\n[[stacks]]", "db: nginx has no database tier");
    let text = GOOD.replace("label = \"fpm-2\"", "label = \"nginx\"");
    fails_on(&text, "\"nginx\"\nworkers", "appears twice");
    let text = GOOD.replace("label = \"fpm-2\"", "label = \"a b\"");
    fails_on(&text, "\"a b\"", "label: use letters");
    let text = GOOD.replace("cpus = \"0-1\"", "cpus = \"1-0\"");
    fails_on(&text, "\"1-0\"", "bad CPU list");
    let text = GOOD.replace("workers = 2", "workers = 0");
    fails_on(&text, "0\ncpus", "workers must be at least 1");
}

#[test]
fn the_same_stack_twice_needs_labels() {
    let text = GOOD.replace("label = \"fpm-2\"\n", "").replace("\"nginx-fpm\"", "\"nginx\"");
    fails_on(&text, "\"nginx\"\nworkers", "give each a distinct label");
}

#[test]
fn workloads_are_checked_against_the_stacks() {
    let text = GOOD.replace("\"hello.txt\"", "\"hello.html\"");
    fails_on(&text, "\"hello.html\"", "unknown workload \"hello.html\"; the workloads are:");
    // Filtered onto a stack that cannot serve it: an error, not a silent skip.
    let text =
        GOOD.replace("name = \"hello.txt\"\n", "name = \"hello.php\"\nstacks = [\"nginx\"]\n");
    fails_on(&text, "\"nginx\"]", "hello.php cannot run on nginx: nginx runs no PHP");
    let text = GOOD.replace("name = \"hello.txt\"\n", "name = \"hello.txt\"\nstacks = [\"fpm\"]\n");
    fails_on(&text, "\"fpm\"", "no stack labelled \"fpm\"");
    let text = GOOD.replace("\"hello.txt\"", "\"country.php\"");
    fails_on(&text, "\"country.php\"", "no stack of the suite serves country.php");
    let text = GOOD.replace("expect_status = 200", "expect_status = \"2zz\"");
    fails_on(&text, "\"2zz\"", "expect_status: invalid status code");
    let text = GOOD.replace("expect_contains = \"hello\"", "expect_sha256 = \"abc\"");
    fails_on(&text, "\"abc\"", "expect_sha256: \"abc\" is not a SHA-256");
    let text = GOOD.replace("expect_contains = \"hello\"", "expect_contains = \"\"");
    fails_on(&text, "\"\"", "must not be empty");
}

/// GOOD's load made closed.
fn closed() -> String {
    GOOD.replace("model = \"open\"", "model = \"closed\"\nconcurrency = [1, 10]")
        .replace("sweep = \"100..300:100\"\n", "")
        .replace("arrival = \"poisson\"\n", "")
}

/// GOOD's load made into sessions.
fn sessions() -> String {
    GOOD.replace("model = \"open\"", "model = \"sessions\"\ncalls_per_conn = 10")
        .replace("duration = \"2s\"", "conns = 500")
}

#[test]
fn loads_take_only_their_model_s_keys() {
    let text = GOOD.replace("sweep = \"100..300:100\"", "concurrency = [1]");
    fails_on(&text, "[1]", "concurrency does not apply to an open load");
    parse(&closed(), "closed.toml").unwrap_or_else(|e| panic!("{e}"));
    let text = closed().replace("duration = \"2s\"", "conns = 10");
    fails_on(&text, "10\n", "conns does not apply to a closed load");
    let text = closed().replace("duration = \"2s\"", "requests = 10\nduration = \"2s\"");
    fails_on(&text, "\"2s\"", "give requests or duration, not both");
    let text = closed().replace("duration = \"2s\"\n", "");
    fails_on(&text, "\"closed\"", "a closed load needs requests = N or duration");
    let text = closed().replace("[1, 10]", "[]");
    fails_on(&text, "[]", "concurrency: give at least one");
    let text = closed().replace("[1, 10]", "[1, 0]");
    fails_on(&text, "0]", "concurrency must be at least 1");
}

#[test]
fn sessions_need_rates_and_keep_their_connection() {
    let suite = parse(&sessions(), "s.toml").unwrap_or_else(|e| panic!("{e}"));
    assert_eq!(suite.loads[0].stop, Stop::Count(500));
    assert_eq!(
        suite.loads[0].points,
        Points::Sessions { rates: vec![100.0, 200.0, 300.0], calls: 10 }
    );
    let text = sessions().replace("conns = 500", "requests = 500");
    fails_on(&text, "500\narrival", "requests does not apply to a sessions load");
    let text = format!("{}keepalive = false\n", sessions());
    fails_on(&text, "false", "keepalive = false does not apply to sessions");
    let text = sessions().replace("sweep = \"100..300:100\"\n", "");
    fails_on(&text, "\"sessions\"", "needs rates = [...], sweep");
    let text = sessions().replace("sweep = \"100..300:100\"", "sweep = \"300..100:10\"");
    fails_on(&text, "\"300..100:10\"", "LOW is above HIGH");
    let text = sessions().replace("sweep = \"100..300:100\"", "rates = [10, -1]");
    fails_on(&text, "-1]", "a rate must be a positive number");
    let text = sessions().replace("sweep = \"100..300:100\"", "rates = [10]\nsweep = \"1..2:1\"");
    fails_on(&text, "\"1..2:1\"", "give one of rates, sweep and stages");
}

#[test]
fn values_are_checked_where_they_are() {
    let text = GOOD.replace("warmup = \"500ms\"", "warmup = \"soon\"");
    fails_on(&text, "\"soon\"", "invalid duration \"soon\"");
    let text = GOOD.replace("duration = \"2s\"", "duration = \"0s\"");
    fails_on(&text, "\"0s\"", "the duration must be above zero");
    let text = GOOD.replace("interleave = true", "interleave = false");
    fails_on(&text, "false", "A B A B");
    let text = GOOD.replace("repetitions = 4", "repetitions = 0");
    fails_on(&text, "0\n", "repetitions must be at least 1");
    let text = GOOD.replace("accept_encoding = \"gzip\"", "accept_encoding = \" \"");
    fails_on(&text, "\" \"", "accept_encoding: give a header value");
    let text = GOOD.replace("client_cpus = \"1\"", "client_cpus = \"x\"");
    fails_on(&text, "\"x\"", "bad CPU list");
    let text = format!("{GOOD}\n[quick]\nfactor = 2.0\n");
    fails_on(&text, "2.0", "quick.factor");
    let text = GOOD.replace("name = \"good\"", "name = \"my suite\"");
    fails_on(&text, "\"my suite\"", "name: use letters");
}

#[test]
fn every_workload_and_stack_must_have_something_to_run() {
    let text =
        format!("{GOOD}workloads = [\"hello.txt\"]\n\n[[workloads]]\nname = \"robots.txt\"\n");
    fails_on(&text, "\"robots.txt\"\n", "no load applies to robots.txt");
    let text = GOOD
        .replace("name = \"hello.txt\"\n", "name = \"hello.php\"\n")
        .replace("expect_contains = \"hello\"\n", "");
    fails_on(&text, "\"nginx\"", "none of the suite's workloads runs on nginx");
    let text = GOOD.replace("expect_status = 200", "stacks = []");
    fails_on(&text, "\"hello.txt\"", "stacks = [] runs it nowhere");
    let text = format!("{GOOD}workloads = []\n");
    fails_on(&text, "\"open\"", "applies this load to nothing");
    let text = format!("{GOOD}workloads = [\"robots.txt\"]\n");
    fails_on(&text, "\"robots.txt\"", "\"robots.txt\" is not one of this suite's workloads");
    let (_, message) = error(&GOOD.replace("[[stacks]]\nname = \"nginx\"\n", "").replace(
        "[[stacks]]\nname = \"nginx-fpm\"\nlabel = \"fpm-2\"\nworkers = 2\ncpus = \"0-1\"\n",
        "stacks = []\n",
    ));
    assert!(message.contains("at least one stack"), "{message}");
}

#[test]
fn columns_count_characters_not_bytes() {
    let text = GOOD
        .replace("description = \"two stacks\"", "description = \"deux piles été\"")
        .replace("label = \"fpm-2\"", "label = \"é\"");
    fails_on(&text, "\"é\"", "label: use letters");
}

/// `net`: a network profile for every stack (top level) or one (in `[[stacks]]`), checked as
/// `stack up --net` checks it; `loopback` is no profile.
#[test]
fn network_profiles_for_the_suite_and_per_stack() {
    let text = "name = \"n\"\nnet = \"lan-100mbit\"\n[[stacks]]\nname = \"nginx\"\n\
        [[stacks]]\nname = \"nginx-fpm\"\nnet = \"loopback\"\n[[workloads]]\nname = \"hello.txt\"\n\
        [[loads]]\nmodel = \"closed\"\nconcurrency = [2]\nduration = \"1s\"\n";
    let suite = parse(text, "n.toml").unwrap_or_else(|e| panic!("{e}"));
    assert_eq!(suite.stacks[0].knobs().unwrap().net.as_deref(), Some("lan-100mbit"));
    assert_eq!(suite.stacks[1].knobs().unwrap().net, None);
    let bad = text.replace("net = \"loopback\"", "net = \"fast\"");
    fails_on(&bad, "\"fast\"", "unknown network profile");
}

/// A duration is read as `bench -d` and `--warmup` read it, by the same parser: a bare number
/// is seconds (wrk's `-d 10`), a negative one is told so, at the value.
#[test]
fn durations_read_as_the_flags_read_them() {
    let text = GOOD.replace("warmup = \"500ms\"", "warmup = \"1.5\"");
    let suite = parse(&text, "t.toml").unwrap_or_else(|e| panic!("{e}"));
    assert_eq!(suite.warmup, Duration::from_millis(1500));
    let text = GOOD.replace("duration = \"2s\"", "duration = \"3\"");
    let suite = parse(&text, "t.toml").unwrap_or_else(|e| panic!("{e}"));
    assert_eq!(suite.loads[0].stop, Stop::Duration(Duration::from_secs(3)));
    let text = GOOD.replace("warmup = \"500ms\"", "warmup = \"-1s\"");
    fails_on(&text, "\"-1s\"", "a duration cannot be negative");
    let text = GOOD.replace("warmup = \"500ms\"", "warmup = 5");
    fails_on(&text, "5\n", "invalid type: integer `5`, expected a string");
    let text = GOOD.replace("warmup = \"500ms\"\n", "");
    let suite = parse(&text, "t.toml").unwrap_or_else(|e| panic!("{e}"));
    assert_eq!(suite.warmup, loadlab_load::Warmup::default().warmup, "--warmup's default");
}

/// The keys of `[[loads]]` that are `bench`'s flags, read into the flags' types: a wrong
/// value is refused at its key, by the type or by the suite's bound.
#[test]
fn a_loads_flag_settings_are_refused_at_their_keys() {
    let with = |line: &str| GOOD.replace("arrival = \"poisson\"", line);
    fails_on(&with("arrival = \"fast\""), "\"fast\"", "unknown variant `fast`");
    fails_on(&with("timeout = 5"), "5\naccept", "invalid type: integer `5`, expected a string");
    fails_on(&with("timeout = \"soon\""), "\"soon\"", "invalid duration \"soon\"");
    fails_on(&with("timeout = \"0s\""), "\"0s\"", "the duration must be above zero");
    fails_on(&with("max_connections = 0"), "0\naccept", "max_connections must be at least 1");
    fails_on(&with("max_connections = -1"), "-1\naccept", "invalid value: integer `-1`");
    fails_on(&with("streams = 0"), "0\naccept", "streams must be at least 1");
    fails_on(
        &with("keepalive = \"no\""),
        "\"no\"",
        "invalid type: string \"no\", expected a boolean",
    );
    fails_on(&with("tls_resume = 1"), "1\naccept", "invalid type: integer `1`, expected a boolean");
}
