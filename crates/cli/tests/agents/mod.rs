//! `bench --agents N`: one test from several processes on 127.0.0.1, each the same command
//! with its own `--agent I`, against a server the test starts. The shares add up exactly,
//! agent 0's JSON is the merged test, a wrong secret, a differing load and a late agent are
//! refused with their own exit codes, and kill -9 of one agent ends the test within 3 s.

use std::net::TcpListener;
use std::process::{Child, Command, Output, Stdio};
use std::thread::{self, JoinHandle};
use std::time::{Duration, Instant};

use hdrhistogram::Histogram;
use serde_json::Value;

use crate::support::{drain, loadlab, output_within, Behaviour, TestServer};

mod metrics;
mod netns;
mod ssh;
mod sweep;
mod visits;

const TOKEN: &str = "a-test-secret-of-some-length";
/// Every agent of a test must be done within this.
const LIMIT: Duration = Duration::from_secs(60);

/// A port that was free a moment ago, for agent 0 to listen on.
fn rendezvous() -> String {
    let l = TcpListener::bind("127.0.0.1:0").expect("bind");
    format!("127.0.0.1:{}", l.local_addr().unwrap().port())
}

/// `loadlab bench URL ARGS --agents N --agent I --rendezvous AT`, the secret in its
/// environment, JSON on stdout.
fn agent(url: &str, args: &[&str], i: usize, n: usize, at: &str, token: &str) -> Command {
    let mut c = loadlab();
    c.args(["bench", url]).args(args);
    c.args(["--agents", &n.to_string(), "--agent", &i.to_string(), "--rendezvous", at]);
    c.args(["--format", "json", "--quiet"]).env("LOADLAB_TOKEN", token);
    c
}

/// Runs the commands at once; their outputs in the same order.
fn all(commands: Vec<Command>) -> Vec<Output> {
    let runs: Vec<JoinHandle<Output>> =
        commands.into_iter().map(|c| thread::spawn(move || output_within(c, LIMIT))).collect();
    runs.into_iter().map(|r| r.join().expect("an agent's run")).collect()
}

fn json(o: &Output) -> Value {
    serde_json::from_slice(&o.stdout).unwrap_or_else(|e| {
        panic!("not JSON ({e}): {}\n{}", o.status, String::from_utf8_lossy(&o.stderr))
    })
}

fn stderr(o: &Output) -> String {
    String::from_utf8_lossy(&o.stderr).into_owned()
}

fn sent(v: &Value) -> u64 {
    v["requests"]["sent"].as_u64().expect("requests.sent")
}

#[test]
fn closed_loop_shares_add_up_to_the_count_and_agent_0_reports_the_whole() {
    let server = TestServer::start(Behaviour::ok("hello"));
    let (url, at) = (server.url("/"), rendezvous());
    let args = ["-c", "5", "-n", "301"];
    let outs = all((0..3).map(|i| agent(&url, &args, i, 3, &at, TOKEN)).collect());
    for o in &outs {
        assert_eq!(o.status.code(), Some(0), "{}", stderr(o));
    }
    // Agent 0 prints the merged test; the others their own parts.
    let merged = json(&outs[0]);
    assert_eq!(sent(&merged), 301);
    let parts: Vec<u64> = outs[1..].iter().map(|o| sent(&json(o))).collect();
    // floor((I+1)301/3) - floor(301 I/3): 100, 100, 101.
    assert_eq!(parts, [100, 101]);
    assert_eq!(server.requests(), 301, "the server saw the single-host count");
    assert_eq!(merged["requests"]["completed"], 301);
    let rows = merged["agents"].as_array().expect("agents in agent 0's JSON");
    let completed: Vec<u64> = rows.iter().map(|r| r["completed"].as_u64().unwrap()).collect();
    assert_eq!(completed, [100, 100, 101]);
    assert!(rows.iter().all(|r| r["p99_us"].as_u64().unwrap() > 0), "{rows:?}");
    assert!(merged["start_skew_us"].as_f64().is_some());
    assert!(json(&outs[1]).get("agents").is_none(), "only agent 0 reports the test");
    let validator = crate::schema::validator();
    crate::schema::assert_valid(&validator, &merged);
    crate::schema::assert_valid(&validator, &json(&outs[1]));
}

#[test]
fn open_loop_agents_send_exactly_the_single_host_arrivals() {
    let server = TestServer::start(Behaviour::ok("hello"));
    let (url, at) = (server.url("/"), rendezvous());
    let args = ["-R", "400", "-n", "201"];
    let outs = all((0..2).map(|i| agent(&url, &args, i, 2, &at, TOKEN)).collect());
    for o in &outs {
        assert_eq!(o.status.code(), Some(0), "{}", stderr(o));
    }
    // Arrivals k < 201 with k mod 2 = I: 101 and 100; agent 0 prints the sum.
    let parts: Vec<u64> = outs.iter().map(|o| sent(&json(o))).collect();
    assert_eq!(parts, [201, 100]);
    let rows = json(&outs[0])["agents"].clone();
    assert_eq!(rows[0]["completed"], 101, "{rows:#}");
    assert_eq!(server.requests(), 201);
    assert_eq!(json(&outs[0])["rate"]["offered_rps"], 400.0);
    // Agent 1's own report is its share, said so: offered its half of the schedule, judged
    // against that half, beside the whole test's rate.
    let own = json(&outs[1]);
    assert_eq!(own["rate"]["offered_rps"], 200.0, "{:#}", own["rate"]);
    assert_eq!(own["share"]["agent"], "agent 1 of 2", "{own:#}");
    assert_eq!(own["share"]["test_offered_rps"], 400.0);
    assert!(json(&outs[0]).get("share").is_none(), "agent 0 reports the whole");
    // Every agent keeps its intervals for agent 0's merge: no --hdr-log was asked for.
    for o in &outs {
        assert_eq!(json(o)["config"]["hdr_log"], false, "{:#}", json(o)["config"]);
    }
    let warned = own["warnings"].as_array().expect("warnings");
    assert!(
        !warned.iter().any(|w| w.as_str().unwrap().contains("below the offered")),
        "{warned:?}"
    );
    crate::schema::assert_valid(&crate::schema::validator(), &own);
}

#[test]
fn a_wrong_secret_is_dropped_and_nothing_is_sent() {
    let server = TestServer::start(Behaviour::ok("hello"));
    let (url, at) = (server.url("/"), rendezvous());
    let args = ["-c", "2", "-n", "10", "--rendezvous-timeout", "2s"];
    let outs = all(vec![
        agent(&url, &args, 0, 2, &at, TOKEN),
        agent(&url, &args, 1, 2, &at, "another-secret-entirely"),
    ]);
    assert_eq!(outs[1].status.code(), Some(10), "{}", stderr(&outs[1]));
    assert!(stderr(&outs[1]).contains("secret"), "{}", stderr(&outs[1]));
    assert_eq!(outs[0].status.code(), Some(8), "{}", stderr(&outs[0]));
    assert!(stderr(&outs[0]).contains("agent 1"), "names the missing: {}", stderr(&outs[0]));
    assert_eq!(server.requests(), 0, "no load without every agent");
}

#[test]
fn a_differing_load_is_refused_naming_the_option() {
    let server = TestServer::start(Behaviour::ok("hello"));
    let (url, at) = (server.url("/"), rendezvous());
    let outs = all(vec![
        agent(&url, &["-c", "4", "-n", "10"], 0, 2, &at, TOKEN),
        agent(&url, &["-c", "6", "-n", "10"], 1, 2, &at, TOKEN),
    ]);
    assert_eq!(outs[0].status.code(), Some(2), "{}", stderr(&outs[0]));
    assert!(stderr(&outs[0]).contains("--connections"), "{}", stderr(&outs[0]));
    assert_eq!(outs[1].status.code(), Some(10), "{}", stderr(&outs[1]));
    assert!(stderr(&outs[1]).contains("--connections"), "{}", stderr(&outs[1]));
    assert_eq!(server.requests(), 0);
}

/// Spawns an agent whose pid the test needs.
/// A running agent and the threads draining its stdout and stderr.
type Running = (Child, JoinHandle<Vec<u8>>, JoinHandle<Vec<u8>>);

fn spawn(mut c: Command) -> Running {
    c.stdin(Stdio::null()).stdout(Stdio::piped()).stderr(Stdio::piped());
    let mut child = c.spawn().expect("spawn an agent");
    let (out, err) = (drain(child.stdout.take().unwrap()), drain(child.stderr.take().unwrap()));
    (child, out, err)
}

/// Waits for `child` at most `limit`; kills it and fails the test past that.
fn wait(
    mut child: Child,
    out: JoinHandle<Vec<u8>>,
    err: JoinHandle<Vec<u8>>,
    limit: Duration,
) -> (Output, Duration) {
    let t0 = Instant::now();
    let status = loop {
        if let Some(s) = child.try_wait().expect("wait") {
            break s;
        }
        if t0.elapsed() > limit {
            let _ = child.kill();
            let _ = child.wait();
            panic!("an agent did not end within {limit:?}");
        }
        thread::sleep(Duration::from_millis(10));
    };
    let o = Output { status, stdout: out.join().unwrap(), stderr: err.join().unwrap() };
    (o, t0.elapsed())
}

#[test]
fn a_late_agent_refuses_to_run() {
    let server = TestServer::start(Behaviour::ok("hello"));
    let (url, at) = (server.url("/"), rendezvous());
    let args = ["-c", "2", "-d", "3s"];
    let (c0, o0, e0) = spawn(agent(&url, &args, 0, 2, &at, TOKEN));
    let (c1, o1, e1) = spawn(agent(&url, &args, 1, 2, &at, TOKEN));
    // Bounded: the test has started once the server has seen requests.
    let started = Instant::now();
    while server.requests() == 0 && started.elapsed() < Duration::from_secs(20) {
        thread::sleep(Duration::from_millis(20));
    }
    let late = output_within(agent(&url, &args, 1, 2, &at, TOKEN), LIMIT);
    assert_eq!(late.status.code(), Some(10), "{}", stderr(&late));
    assert!(stderr(&late).contains("late"), "{}", stderr(&late));
    let (a0, _) = wait(c0, o0, e0, LIMIT);
    let (a1, _) = wait(c1, o1, e1, LIMIT);
    assert_eq!(a0.status.code(), Some(0), "{}", stderr(&a0));
    assert_eq!(a1.status.code(), Some(0), "{}", stderr(&a1));
}

/// Starts `n` agents with `args`, waits until the server has seen `seen` requests and agent
/// `victim` has streamed at least one whole second, then kill -9s it.
fn run_and_kill(server: &TestServer, args: &[&str], n: usize, victim: usize) -> Vec<Running> {
    let (url, at) = (server.url("/"), rendezvous());
    let mut agents: Vec<_> = (0..n).map(|i| spawn(agent(&url, args, i, n, &at, TOKEN))).collect();
    let started = Instant::now();
    while server.requests() < 100 && started.elapsed() < Duration::from_secs(20) {
        thread::sleep(Duration::from_millis(20));
    }
    // Two seconds more: the victim has streamed its first second (and its heartbeat).
    thread::sleep(Duration::from_millis(2200));
    let (mut child, out, err) = agents.remove(victim);
    child.kill().expect("kill -9 the agent");
    let _ = child.wait();
    let _ = (out.join(), err.join());
    agents
}

/// The lost agent's row and its share of the merged counts: what it streamed until its loss
/// is in the merged figures, which are the rows' sum.
fn assert_lost_seconds_merged(merged: &Value, lost: usize) {
    let rows = merged["agents"].as_array().expect("agents");
    let row = &rows[lost];
    assert!(row["p99_us"].is_null() && row["flags"][0] == "lost", "{row:#}");
    let streamed = row["completed"].as_u64().unwrap();
    assert!(streamed > 0, "the lost agent's seconds before its loss: {row:#}");
    let sum: u64 = rows.iter().map(|r| r["completed"].as_u64().unwrap()).sum();
    assert_eq!(merged["requests"]["completed"].as_u64().unwrap(), sum, "{rows:#?}");
    assert_eq!(merged["partial"]["lost"][0]["index"], lost, "{merged:#}");
}

#[test]
fn kill_9_of_one_agent_ends_the_test_within_3_s_with_a_partial_result() {
    let server = TestServer::start(Behaviour::ok("hello"));
    let mut agents = run_and_kill(&server, &["-c", "3", "-d", "30s"], 3, 2).into_iter();
    let killed = Instant::now();
    let (zero, one) = (agents.next().unwrap(), agents.next().unwrap());
    let (a0, _) = wait(zero.0, zero.1, zero.2, Duration::from_secs(10));
    let (a1, _) = wait(one.0, one.1, one.2, Duration::from_secs(10));
    let took = killed.elapsed();
    assert!(took < Duration::from_secs(3), "the agents took {took:?} after the kill");
    assert_eq!(a0.status.code(), Some(9), "{}", stderr(&a0));
    let merged = json(&a0);
    assert_eq!(merged["agent_lost"]["index"], 2, "{merged:#}");
    crate::schema::assert_valid(&crate::schema::validator(), &merged);
    assert_lost_seconds_merged(&merged, 2);
    assert_eq!(merged["partial"]["continued"], false);
    assert_eq!(a1.status.code(), Some(9), "agent 1 was stopped: {}", stderr(&a1));
    // All three processes were waited for above: none is left.
}

#[test]
fn on_agent_loss_continue_goes_on_and_reports_the_shortfall_per_second() {
    let server = TestServer::start(Behaviour::ok("hello"));
    let args = ["-R", "300", "-d", "6s", "--on-agent-loss", "continue"];
    let mut agents = run_and_kill(&server, &args, 3, 2).into_iter();
    let (zero, one) = (agents.next().unwrap(), agents.next().unwrap());
    let (a0, _) = wait(zero.0, zero.1, zero.2, LIMIT);
    let (a1, _) = wait(one.0, one.1, one.2, LIMIT);
    // Agent 1 was not stopped: it ran its part to the end.
    assert_eq!(a1.status.code(), Some(0), "{}", stderr(&a1));
    assert_eq!(json(&a1)["interrupted"], false);
    assert_eq!(a0.status.code(), Some(9), "{}", stderr(&a0));
    let merged = json(&a0);
    crate::schema::assert_valid(&crate::schema::validator(), &merged);
    assert_eq!(merged["interrupted"], false, "agent 0 went on to its end");
    assert_lost_seconds_merged(&merged, 2);
    let partial = &merged["partial"];
    assert_eq!(partial["continued"], true);
    let lost_in = partial["lost"][0]["second"].as_u64().unwrap();
    let seconds = partial["shortfall"].as_array().expect("shortfall");
    assert_eq!(seconds.len(), 6, "{partial:#}");
    for s in seconds {
        let (second, due, sent) = (
            s["second"].as_u64().unwrap(),
            s["due"].as_u64().unwrap(),
            s["sent"].as_u64().unwrap(),
        );
        assert_eq!(s["not_sent"].as_u64().unwrap(), due.saturating_sub(sent), "{s}");
        // After the loss, agent 2's share (100 a second) was due and never sent.
        if second > lost_in {
            assert!(s["not_sent"].as_u64().unwrap() >= 90, "{partial:#}");
        }
    }
    // The whole schedule was due, the lost agent's share from the first second it did not
    // stream (the one it was killed in included), and the schedule's line counts what was
    // never sent as the shortfall does.
    let (due, sent) = seconds.iter().fold((0, 0), |(d, s), x| {
        (d + x["due"].as_u64().unwrap(), s + x["sent"].as_u64().unwrap())
    });
    assert!(due.abs_diff(1800) <= 6, "300 req/s for 6 s were due: {partial:#}");
    assert_eq!(merged["rate"]["not_sent"].as_u64().unwrap(), due - sent, "{:#}", merged["rate"]);
    let warned = merged["warnings"].as_array().expect("warnings");
    assert!(warned.iter().any(|w| w.as_str().unwrap().contains("agent 2 was lost")), "{warned:?}");
}

#[test]
fn bad_agent_flags_are_refused_with_one_line_and_exit_2() {
    let url = "http://127.0.0.1:9/";
    let cases: [(&[&str], &str); 3] = [
        (&["--agents", "3", "--agent", "5", "--rendezvous", "127.0.0.1:9"], "--agent 5"),
        (
            &["-c", "1", "--agents", "2", "--agent", "0", "--rendezvous", "127.0.0.1:9"],
            "--connections 1",
        ),
        (&["--agents", "2", "--rendezvous", "127.0.0.1:9"], "JOB_COMPLETION_INDEX"),
    ];
    for (args, names) in cases {
        let mut c = loadlab();
        c.args(["bench", url])
            .args(args)
            .env("LOADLAB_TOKEN", TOKEN)
            .env_remove("JOB_COMPLETION_INDEX");
        let o = output_within(c, LIMIT);
        assert_eq!(o.status.code(), Some(2), "{args:?}: {}", stderr(&o));
        assert!(stderr(&o).contains(names), "{args:?}: {}", stderr(&o));
        assert_eq!(stderr(&o).trim().lines().count(), 1, "{}", stderr(&o));
    }
    let mut c = loadlab();
    c.args(["bench", url, "--agents", "2", "--agent", "1", "--rendezvous", "127.0.0.1:9"]);
    c.env_remove("LOADLAB_TOKEN");
    let o = output_within(c, LIMIT);
    assert_eq!(o.status.code(), Some(2), "{}", stderr(&o));
    assert!(stderr(&o).contains("LOADLAB_TOKEN"), "{}", stderr(&o));
}

#[test]
fn ctrl_c_on_agent_0_stops_every_agent_with_what_was_measured() {
    let server = TestServer::start(Behaviour::ok("hello"));
    let (url, at) = (server.url("/"), rendezvous());
    let args = ["-c", "2", "-d", "30s"];
    let (c0, o0, e0) = spawn(agent(&url, &args, 0, 2, &at, TOKEN));
    let (c1, o1, e1) = spawn(agent(&url, &args, 1, 2, &at, TOKEN));
    let started = Instant::now();
    while server.requests() < 50 && started.elapsed() < Duration::from_secs(20) {
        thread::sleep(Duration::from_millis(20));
    }
    // SAFETY: kill(2) on the pid of a child this test spawned and has not reaped.
    let sent = unsafe { libc::kill(c0.id() as i32, libc::SIGINT) };
    assert_eq!(sent, 0, "SIGINT to agent 0");
    let (a0, took) = wait(c0, o0, e0, Duration::from_secs(10));
    let (a1, _) = wait(c1, o1, e1, Duration::from_secs(10));
    assert!(took < Duration::from_secs(5), "agent 0 took {took:?} after Ctrl-C");
    assert_eq!(a0.status.code(), Some(0), "{}", stderr(&a0));
    let merged = json(&a0);
    assert_eq!(merged["interrupted"], true);
    let rows = merged["agents"].as_array().expect("agents");
    assert!(rows.iter().all(|r| r["completed"].as_u64().unwrap() > 0), "{rows:?}");
    assert!(stderr(&a1).contains("interrupted"), "{}", stderr(&a1));
    // Stopped on purpose, not lost: exit 12, not 9.
    assert_eq!(a1.status.code(), Some(12), "{}", stderr(&a1));
}

/// Per tag, the histograms of an interval log added over all its seconds, read with
/// HdrHistogram's own reader.
fn log_histograms(path: &std::path::Path) -> std::collections::BTreeMap<String, Histogram<u64>> {
    use base64::Engine as _;
    use hdrhistogram::serialization::interval_log::{IntervalLogIterator, LogEntry};
    let bytes = std::fs::read(path).expect("the interval log was written");
    let mut decoder = hdrhistogram::serialization::Deserializer::new();
    let mut out = std::collections::BTreeMap::new();
    for entry in IntervalLogIterator::new(&bytes) {
        if let LogEntry::Interval(i) = entry.expect("an entry HdrHistogram reads") {
            let raw =
                base64::engine::general_purpose::STANDARD.decode(i.encoded_histogram()).unwrap();
            let h: Histogram<u64> = decoder.deserialize(&mut &raw[..]).expect("a V2 histogram");
            let tag = i.tag().map_or(String::new(), |t| t.as_str().to_string());
            let sum = out.entry(tag).or_insert_with(|| Histogram::new(3).unwrap());
            sum.add(&h).unwrap();
        }
    }
    out
}

#[test]
fn the_merged_interval_log_is_the_agents_own_logs_added() {
    let server = TestServer::start(Behaviour::ok("hello"));
    let (url, at) = (server.url("/"), rendezvous());
    let dir = tempfile::tempdir().unwrap();
    let log = |name: &str| dir.path().join(name).to_string_lossy().into_owned();
    let (own0, own1, merged) = (log("own0.hlog"), log("own1.hlog"), log("merged.hlog"));
    let args = ["-R", "300", "-n", "300"];
    let mut a0 = agent(&url, &args, 0, 2, &at, TOKEN);
    a0.args(["--hdr-log", &own0, "--merged-hdr-log", &merged]);
    let mut a1 = agent(&url, &args, 1, 2, &at, TOKEN);
    a1.args(["--hdr-log", &own1]);
    let outs = all(vec![a0, a1]);
    for o in &outs {
        assert_eq!(o.status.code(), Some(0), "{}", stderr(o));
    }
    let (m, x, y) = (
        log_histograms(merged.as_ref()),
        log_histograms(own0.as_ref()),
        log_histograms(own1.as_ref()),
    );
    assert_eq!(
        m.keys().collect::<Vec<_>>(),
        ["corrected", "uncorrected"],
        "open loop: both latencies"
    );
    for (tag, merged) in &m {
        let mut added = x[tag].clone();
        added.add(&y[tag]).unwrap();
        assert_eq!(merged.len(), 300, "{tag}: every request once");
        let buckets = |h: &Histogram<u64>| -> Vec<(u64, u64)> {
            h.iter_recorded().map(|v| (v.value_iterated_to(), v.count_at_value())).collect()
        };
        assert_eq!(buckets(merged), buckets(&added), "{tag}: bucket by bucket");
        assert_eq!(merged.value_at_quantile(0.99), added.value_at_quantile(0.99));
    }
    // The merged JSON's p99 is the one of the added histograms (µs, as the log).
    let p99 = json(&outs[0])["latency_us"]["p99"].as_u64().unwrap();
    let from_log = m["corrected"].value_at_quantile(0.99);
    assert!(m["corrected"].equivalent(p99, from_log), "JSON {p99} against the log's {from_log}");
}

#[test]
fn a_url_lists_per_entry_figures_are_merged_as_the_server_counts() {
    let server = TestServer::start(Behaviour::ok("mixed"));
    let (url, at) = (server.url("/"), rendezvous());
    let dir = tempfile::tempdir().unwrap();
    let list = dir.path().join("urls.txt");
    std::fs::write(&list, "/a\nweight=3 /b\n").unwrap();
    let list = list.to_string_lossy().into_owned();
    let args = ["--urls", &list, "-n", "400", "-c", "4", "--seed", "3"];
    let outs = all((0..2).map(|i| agent(&url, &args, i, 2, &at, TOKEN)).collect());
    for o in &outs {
        assert_eq!(o.status.code(), Some(0), "{}", stderr(o));
    }
    let merged = json(&outs[0]);
    let seen = server.targets();
    for entry in merged["urls"].as_array().expect("urls") {
        let path = entry["path"].as_str().unwrap();
        assert_eq!(entry["completed"].as_u64(), Some(seen[path]), "{path}: {seen:?}");
        assert_eq!(entry["latency_us"]["count"], entry["completed"], "{entry:#}");
    }
    assert_eq!(seen.values().sum::<u64>(), 400);
}

#[test]
fn weights_3_to_1_share_the_connections_and_the_arrivals_as_documented() {
    let server = TestServer::start(Behaviour::ok("hello"));
    // Closed loop: 8 connections and -n 400 by weight, 3/4 and 1/4.
    let at = rendezvous();
    let weighted = |args: &[&str], i: usize, w: &str, at: &str| {
        let mut c = agent(&server.url("/"), args, i, 2, at, TOKEN);
        c.args(["--agent-weight", w]);
        c
    };
    let args = ["-c", "8", "-n", "400"];
    let outs = all(vec![weighted(&args, 0, "3", &at), weighted(&args, 1, "1", &at)]);
    for o in &outs {
        assert_eq!(o.status.code(), Some(0), "{}", stderr(o));
    }
    let merged = json(&outs[0]);
    crate::schema::assert_valid(&crate::schema::validator(), &merged);
    let rows = merged["agents"].as_array().expect("agents");
    let completed: Vec<u64> = rows.iter().map(|r| r["completed"].as_u64().unwrap()).collect();
    assert_eq!(completed, [300, 100], "{rows:#?}");
    assert_eq!(rows[1]["share"], "agent 1 of 2, weight 1 of 4");
    assert_eq!(json(&outs[1])["config"]["connections"], 2, "a quarter of the 8 connections");
    // Open loop: arrivals k < 201 with k mod 4 in 0..3 are agent 0's (151), k mod 4 = 3
    // agent 1's (50); together the single-host count.
    let at = rendezvous();
    let args = ["-R", "400", "-n", "201"];
    let outs = all(vec![weighted(&args, 0, "3", &at), weighted(&args, 1, "1", &at)]);
    for o in &outs {
        assert_eq!(o.status.code(), Some(0), "{}", stderr(o));
    }
    assert_eq!(sent(&json(&outs[1])), 50);
    assert_eq!(sent(&json(&outs[0])), 201, "agent 0 reports the whole");
    assert_eq!(json(&outs[0])["agents"][0]["completed"], 151);
    assert_eq!(server.requests(), 400 + 201);
}

/// The `seconds` rows of a report: (offered, achieved, completed, connections open, CPU); a
/// closed loop's offered (null: it offers no rate) as 0.
fn rows_of(v: &Value) -> Vec<(u64, u64, u64, u64, f64)> {
    let rows = v["seconds"].as_array().unwrap_or_else(|| panic!("no seconds: {v:#}"));
    let n = |r: &Value, k: &str| r[k].as_u64().unwrap_or_else(|| panic!("{k} in {r}"));
    rows.iter()
        .map(|r| {
            let cpu = r["client_cpu"].as_f64().expect("client_cpu");
            let offered = r["offered"].as_u64().unwrap_or(0);
            (offered, n(r, "achieved"), n(r, "completed"), n(r, "connections_open"), cpu)
        })
        .collect()
}

#[test]
fn a_ramp_over_agents_has_the_single_hosts_per_second_table() {
    let server = TestServer::start(Behaviour::ok("hello"));
    let url = server.url("/");
    let args = ["--rate", "0..400", "-d", "4s"];
    let mut one = loadlab();
    one.args(["bench", &url]).args(args).args(["--format", "json", "--quiet"]);
    let one = output_within(one, LIMIT);
    assert_eq!(one.status.code(), Some(0), "{}", stderr(&one));
    let single = rows_of(&json(&one));
    let at = rendezvous();
    let outs = all((0..2).map(|i| agent(&url, &args, i, 2, &at, TOKEN)).collect());
    for o in &outs {
        assert_eq!(o.status.code(), Some(0), "{}", stderr(o));
    }
    let (merged, theirs) = (json(&outs[0]), rows_of(&json(&outs[1])));
    crate::schema::assert_valid(&crate::schema::validator(), &merged);
    let rows = rows_of(&merged);
    // The one global schedule, dealt over two agents: the same arrivals due each second.
    let offered = |r: &[(u64, u64, u64, u64, f64)]| r.iter().map(|r| r.0).collect::<Vec<_>>();
    assert_eq!(offered(&rows), offered(&single), "merged {rows:?}\nsingle {single:?}");
    assert!(offered(&rows).iter().sum::<u64>() > 0);
    for (s, (m, a)) in rows.iter().zip(&theirs).enumerate() {
        // Agent 1's own second is part of the merged one: every count is a sum.
        assert!(m.1 >= a.1 && m.2 >= a.2 && m.3 >= a.3, "second {s}: {m:?} vs agent 1 {a:?}");
        assert!(a.0 > 0 && m.0 > a.0, "second {s}: both agents had arrivals due");
    }
    // Offered sent as offered on an idle loopback: achieved, open connections and CPU came.
    let last = rows.last().unwrap();
    assert!(last.1 > 0 && last.3 > 0 && last.4 > 0.0, "{rows:?}");
    let completed: u64 = rows.iter().map(|r| r.2).sum();
    assert!(completed <= merged["requests"]["completed"].as_u64().unwrap());
}

#[test]
fn closed_loop_stages_take_the_weighted_share_of_each_level() {
    let server = TestServer::start(Behaviour::ok("hello"));
    let at = rendezvous();
    let weighted = |i: usize, w: &str| {
        let mut c = agent(&server.url("/"), &["-c", "2s:8..8"], i, 2, &at, TOKEN);
        c.args(["--agent-weight", w]);
        c
    };
    let outs = all(vec![weighted(0, "3"), weighted(1, "1")]);
    for o in &outs {
        assert_eq!(o.status.code(), Some(0), "{}", stderr(o));
    }
    // Level 8 by weights 3:1: agent 1 holds 2 connections each second, the test 8 (6 + 2).
    let open = |v: &Value| rows_of(v).iter().map(|r| r.3).collect::<Vec<_>>();
    assert_eq!(open(&json(&outs[1])), [2, 2], "{}", json(&outs[1]));
    assert_eq!(open(&json(&outs[0])), [8, 8], "{}", json(&outs[0]));
}

#[test]
fn after_a_kill_9_the_streamed_seconds_add_up_to_the_merged_totals() {
    let server = TestServer::start(Behaviour::ok("hello"));
    let mut agents = run_and_kill(&server, &["-R", "300", "-d", "30s"], 3, 2).into_iter();
    let (zero, one) = (agents.next().unwrap(), agents.next().unwrap());
    let (a0, _) = wait(zero.0, zero.1, zero.2, LIMIT);
    let (a1, _) = wait(one.0, one.1, one.2, LIMIT);
    assert_eq!((a0.status.code(), a1.status.code()), (Some(9), Some(9)), "{}", stderr(&a0));
    let merged = json(&a0);
    crate::schema::assert_valid(&crate::schema::validator(), &merged);
    let partial = &merged["partial"];
    let rows = partial["shortfall"].as_array().expect("shortfall");
    let sum = |k: &str| rows.iter().map(|r| r[k].as_u64().unwrap()).sum::<u64>();
    // Agents 0 and 1 were stopped mid-second: each streamed that partial second too, so the
    // rows hold every request of the merged totals, the lost agent's until its loss.
    let requests = &merged["requests"];
    assert_eq!(sum("sent"), requests["sent"].as_u64().unwrap(), "{partial:#}");
    assert_eq!(sum("completed"), requests["completed"].as_u64().unwrap(), "{partial:#}");
    assert!(sum("completed") > 0);
    // Every agent stopped in the second of the loss or the next: no row after.
    let lost_in = partial["lost"][0]["second"].as_u64().unwrap();
    let seconds: Vec<u64> = rows.iter().map(|r| r["second"].as_u64().unwrap()).collect();
    assert_eq!(seconds, (0..seconds.len() as u64).collect::<Vec<_>>());
    assert!(*seconds.last().unwrap() <= lost_in + 1, "lost in {lost_in}: {partial:#}");
}
