//! `sweep --agents N`: every step of a sweep started on every agent together, agent 0 judging
//! each step's merged result; a sweep whose load differs between agents refused, naming it;
//! an agent killed mid-step ends the sweep for all, that step shown but not judged, or with
//! `--on-agent-loss continue` the sweep goes on, the steps without it partial; `--find-knee`
//! and `--stop-after-knee` decided by agent 0 from the merged steps, the others running the
//! steps it names; `--merged-hdr-log` one log of every step's merged intervals.

use std::process::Command;
use std::time::{Duration, Instant};

use serde_json::Value;

use super::{all, json, log_histograms, rendezvous, spawn, stderr, wait, Running, LIMIT, TOKEN};
use crate::support::{loadlab, timing_lock, Behaviour, TestServer};

/// `loadlab sweep URL ARGS --agents N --agent I --rendezvous AT`, JSON on stdout.
pub(super) fn sweeper(url: &str, args: &[&str], i: usize, n: usize, at: &str) -> Command {
    let mut c = loadlab();
    c.args(["sweep", url]).args(args);
    c.args(["--agents", &n.to_string(), "--agent", &i.to_string(), "--rendezvous", at]);
    c.args(["--format", "json", "--quiet"]).env("LOADLAB_TOKEN", TOKEN);
    c
}

/// Each step's (offered, completed, sent within the step) of a sweep's JSON.
fn steps(v: &Value) -> Vec<(f64, u64, u64)> {
    let steps = v["steps"].as_array().unwrap_or_else(|| panic!("no steps: {v:#}"));
    let n = |s: &Value, k: &str| s[k].as_u64().unwrap_or_else(|| panic!("{k} in {s}"));
    steps
        .iter()
        .map(|s| {
            let completed = n(s, "completed");
            let sent = completed + n(s, "failed") + n(s, "unfinished");
            (s["offered_rps"].as_f64().expect("offered_rps"), completed, sent)
        })
        .collect()
}

#[test]
fn every_step_of_a_sweep_starts_on_every_agent_and_is_judged_merged() {
    let server = TestServer::start(Behaviour::ok("hello"));
    let (url, at) = (server.url("/"), rendezvous());
    let args = ["--rates", "100,200,300", "--step-duration", "1s"];
    let outs = all((0..2).map(|i| sweeper(&url, &args, i, 2, &at)).collect());
    for o in &outs {
        assert_eq!(o.status.code(), Some(0), "{}", stderr(o));
    }
    let (merged, theirs) = (steps(&json(&outs[0])), steps(&json(&outs[1])));
    assert_eq!(merged.len(), 3, "{merged:?}");
    assert_eq!(theirs.len(), 3, "agent 1 ran the same steps: {theirs:?}");
    let mut sent = 0;
    for ((rate, m), a) in [100.0, 200.0, 300.0].iter().zip(&merged).zip(&theirs) {
        // Agent 1's step is its share of the schedule, and said to be.
        assert_eq!((m.0, a.0), (*rate, rate / 2.0), "the whole step's rate, and its half");
        // Arrivals k mod 2: agent 0's own part (the merged less agent 1's) and agent 1's
        // differ by one at most, and together they are the step's schedule.
        let own = m.1 - a.1;
        assert!(own.abs_diff(a.1) <= 1, "step {rate}: agent 0 {own}, agent 1 {}", a.1);
        // Requests of the warm-up still in flight as the step began end inside it: a few.
        assert!(m.2.abs_diff(*rate as u64) <= 5, "step {rate}: {m:?}");
        sent += m.2;
    }
    // Each step's 1 s warm-up (at its rate) and its measured second reached the server.
    let warmups = 100 + 200 + 300;
    assert!(server.requests().abs_diff(sent + warmups) <= 12, "{} vs {sent}", server.requests());
    let knee = &json(&outs[0])["knees"][0];
    assert_eq!(knee["steps_judged"], 3, "{knee:#}");
    // The knee is agent 0's, of the merged steps: agent 1 judges no knee of its share.
    let own = json(&outs[1]);
    assert_eq!(own["share"], "agent 1 of 2", "{own:#}");
    assert!(own["knee"].is_null() && own["knees"] == serde_json::json!([]), "{own:#}");
}

#[test]
fn a_sweep_whose_rates_differ_between_agents_is_refused_naming_them() {
    let server = TestServer::start(Behaviour::ok("hello"));
    let (url, at) = (server.url("/"), rendezvous());
    let outs = all(vec![
        sweeper(&url, &["--rates", "100,200", "--step-duration", "1s"], 0, 2, &at),
        sweeper(&url, &["--rates", "100,300", "--step-duration", "1s"], 1, 2, &at),
    ]);
    assert_eq!(outs[0].status.code(), Some(2), "{}", stderr(&outs[0]));
    let said = "in --rates: 100,300 there, 100,200 on agent 0";
    assert!(stderr(&outs[0]).contains(said), "{}", stderr(&outs[0]));
    assert_eq!(outs[1].status.code(), Some(10), "{}", stderr(&outs[1]));
    assert_eq!(server.requests(), 0);
}

/// Three agents sweeping with `args`; once the server has seen `seen` requests (bounded in
/// time) and `then` more has passed, agent `victim` is killed -9. The other two, running.
fn sweep_and_kill(
    server: &TestServer,
    args: &[&str],
    (seen, then): (u64, Duration),
    victim: usize,
) -> (Running, Running) {
    let (url, at) = (server.url("/"), rendezvous());
    let mut agents: Vec<_> = (0..3).map(|i| spawn(sweeper(&url, args, i, 3, &at))).collect();
    let started = Instant::now();
    while server.requests() < seen && started.elapsed() < Duration::from_secs(30) {
        std::thread::sleep(Duration::from_millis(20));
    }
    std::thread::sleep(then);
    let (mut victim, out, err) = agents.remove(victim);
    victim.kill().expect("kill -9 the agent");
    let _ = victim.wait();
    let _ = (out.join(), err.join());
    let mut left = agents.into_iter();
    (left.next().unwrap(), left.next().unwrap())
}

#[test]
fn kill_9_of_an_agent_mid_step_ends_the_sweep_within_3_s_that_step_not_judged() {
    let server = TestServer::start(Behaviour::ok("hello"));
    let args = ["--rates", "100,200", "--step-duration", "20s"];
    // Into the first step's measured part (its warm-up is 1 s), then the kill.
    let (zero, one) = sweep_and_kill(&server, &args, (150, Duration::from_millis(1500)), 2);
    let killed = Instant::now();
    let (a0, _) = wait(zero.0, zero.1, zero.2, Duration::from_secs(10));
    let (a1, _) = wait(one.0, one.1, one.2, Duration::from_secs(10));
    let took = killed.elapsed();
    assert!(took < Duration::from_secs(3), "the agents took {took:?} after the kill");
    assert_eq!(a0.status.code(), Some(9), "{}", stderr(&a0));
    assert!(stderr(&a0).contains("agent 2 was lost in step 1"), "{}", stderr(&a0));
    let merged = json(&a0);
    assert_eq!(merged["interrupted"], true, "{merged:#}");
    let steps = merged["steps"].as_array().expect("steps");
    assert_eq!(steps.len(), 1, "no step after the loss: {merged:#}");
    assert_eq!(steps[0]["interrupted"], true, "the step of the loss is not judged");
    assert_eq!(merged["knee"]["steps_judged"], 0);
    assert_eq!(a1.status.code(), Some(9), "agent 1 was stopped: {}", stderr(&a1));
}

#[test]
fn a_ramp_sweep_over_agents_offers_the_whole_shape_each_second() {
    let server = TestServer::start(Behaviour::ok("hello"));
    let (url, at) = (server.url("/"), rendezvous());
    let args = ["--ramp", "0..400", "--ramp-duration", "4s"];
    let dir = tempfile::tempdir().expect("temp dir");
    let log = dir.path().join("ramp.hlog");
    let mut a0 = sweeper(&url, &args, 0, 2, &at);
    a0.args(["--merged-hdr-log".as_ref(), log.as_os_str()]);
    let outs = all(vec![a0, sweeper(&url, &args, 1, 2, &at)]);
    for o in &outs {
        assert_eq!(o.status.code(), Some(0), "{}", stderr(o));
    }
    // One run: its merged log as bench's, every completed request of every agent in it.
    let h = log_histograms(&log);
    assert_eq!(h.keys().collect::<Vec<_>>(), ["corrected", "uncorrected"]);
    let rows = json(&outs[0])["seconds"].as_array().cloned().unwrap_or_default();
    let completed: u64 = rows.iter().map(|r| r["completed"].as_u64().unwrap()).sum();
    assert_eq!(h["corrected"].len(), completed, "{rows:#?}");
    let offered = |v: &Value| -> Vec<u64> {
        let rows = v["seconds"].as_array().unwrap_or_else(|| panic!("no seconds: {v:#}"));
        rows.iter().map(|r| r["offered"].as_u64().expect("offered")).collect()
    };
    let (merged, theirs) = (offered(&json(&outs[0])), offered(&json(&outs[1])));
    assert_eq!(merged.len(), 4, "{merged:?}");
    // 100 t req/s over 4 s: 50, 150, 250, 350 due each second, agent 1 about half of each.
    for (s, (m, a)) in merged.iter().zip(&theirs).enumerate() {
        let want = 50 + 100 * s as u64;
        assert!(m.abs_diff(want) <= 1, "second {s}: {m} offered, {want} wanted: {merged:?}");
        assert!((2 * a).abs_diff(*m) <= 2, "second {s}: agent 1 {a} of {m}");
    }
    // Agent 1's seconds are its share: it announces no knee of them, agent 0 does.
    let own = json(&outs[1]);
    assert!(own["knee"].is_null(), "{:#}", own["knee"]);
    assert_eq!(own["share"], "agent 1 of 2");
    assert!(own["sentence"].as_str().unwrap().contains("agent 0"), "{}", own["sentence"]);
    assert!(json(&outs[0])["knee"]["reason"].is_string(), "agent 0 judges the whole ramp");
}

/// One line per step (what decided its verdict), then the knee: for assertion messages.
fn table(v: &Value) -> String {
    let mut out = String::from("offered achieved completed p99_us limited_by flags\n");
    for s in v["steps"].as_array().into_iter().flatten() {
        let (o, a, c, p) = (&s["offered_rps"], &s["achieved_rps"], &s["completed"], &s["p99_us"]);
        let l = &s["limited_by"]["kind"];
        out.push_str(&format!("{o} {a} {c} {p} {l} {}\n", s["flags"]));
    }
    out + &format!("knee {}", v["knee"])
}

/// Each step's offered rate and whether bisection added it, in the order they ran.
fn rates(v: &Value) -> Vec<(f64, bool)> {
    let steps = v["steps"].as_array().unwrap_or_else(|| panic!("no steps: {v:#}"));
    steps.iter().map(|s| (s["offered_rps"].as_f64().unwrap(), s["bisect"] == true)).collect()
}

/// As the single host's `it::sweep::find_knee_bisects_between_last_good_and_first_bad`, from
/// two agents: a server of 600 req/s, the planned steps stopped at the first failing one
/// (`--stop-after-knee 0`: 1200 and 1600 never run), then bisection between 400 and 800 from
/// the merged steps, which agent 1 follows step by step; the knee within the single host's
/// tolerance, 50 req/s under the capacity.
#[test]
fn find_knee_over_agents_bisects_the_merged_steps_and_every_agent_runs_them() {
    const CAPACITY: f64 = 600.0;
    let server =
        TestServer::start(Behaviour::Capacity { per_second: CAPACITY, body: b"x".to_vec() });
    let (url, at) = (server.url("/"), rendezvous());
    let _timing = timing_lock();
    let args = [
        "--rates",
        "400,800,1200,1600",
        "--step-duration",
        "2s",
        "--max-connections",
        "50",
        "--find-knee",
        "--stop-after-knee",
        "0",
    ];
    let outs = all((0..2).map(|i| sweeper(&url, &args, i, 2, &at)).collect());
    for o in &outs {
        assert_eq!(o.status.code(), Some(0), "{}", stderr(o));
    }
    let (merged, theirs) = (json(&outs[0]), json(&outs[1]));
    let ran = rates(&merged);
    assert_eq!(ran.get(..2), Some(&[(400.0, false), (800.0, false)][..]), "{merged:#}");
    // At most four bisection steps, each halving the interval: 600 first.
    assert!((3..=6).contains(&ran.len()), "{ran:?}");
    assert_eq!(ran[2], (600.0, true), "{ran:?}");
    assert!(ran[2..].iter().all(|(r, b)| *b && *r > 400.0 && *r < 800.0), "{ran:?}");
    // Each offered its half of the step: agent 1's rows are its share.
    let halves: Vec<(f64, bool)> = ran.iter().map(|(r, b)| (r / 2.0, *b)).collect();
    assert_eq!(rates(&theirs), halves, "agent 1 ran the steps agent 0 named");
    let knee = &merged["knee"];
    let found = knee["offered_rps"].as_f64().unwrap_or_else(|| panic!("{merged:#}"));
    let table = table(&merged);
    assert!((CAPACITY - 50.0..=CAPACITY).contains(&found), "knee at {found}:\n{table}");
    assert_eq!(knee["reason"], "throughput", "{table}");
}

/// Three agents, a sweep of 3 steps with `--on-agent-loss continue`; agent 1 (a middle index)
/// is killed -9 in the measured part of step 2. The sweep goes on to step 3 with agents 0 and
/// 2, each with its own share (no silent rebalance: the lost agent's weight stays in the
/// split); steps 2 and 3 are partial, with the shortfall (step 3: agent 1's third of it all,
/// due and never sent), shown but not judged; agent 0 exits 9 naming the loss, agent 2 exits 0.
#[test]
fn on_agent_loss_continue_goes_on_and_marks_the_steps_without_it_partial() {
    let server = TestServer::start(Behaviour::ok("hello"));
    let args = ["--rates", "150,300,450", "--step-duration", "4s", "--on-agent-loss", "continue"];
    // Step 1 is 1 s of warm-up and 4 s at 150 (750), step 2's warm-up 300 more: past 1,350
    // and a second more, step 2 is in its measured part.
    let (zero, two) = sweep_and_kill(&server, &args, (1_350, Duration::from_secs(1)), 1);
    let (a0, _) = wait(zero.0, zero.1, zero.2, LIMIT);
    let (a2, _) = wait(two.0, two.1, two.2, LIMIT);
    assert_eq!(a2.status.code(), Some(0), "agent 2 went on: {}", stderr(&a2));
    assert_eq!(a0.status.code(), Some(9), "{}", stderr(&a0));
    assert!(stderr(&a0).contains("agent 1 was lost in step 2"), "{}", stderr(&a0));
    let merged = json(&a0);
    assert_eq!(merged["interrupted"], false, "{merged:#}");
    let steps = merged["steps"].as_array().expect("steps");
    assert_eq!(steps.len(), 3, "the sweep went on: {merged:#}");
    assert!(steps[0]["partial"].is_null(), "{:#}", steps[0]);
    let not_sent = |s: &Value| -> u64 {
        let p = &s["partial"];
        assert_eq!(
            (p["continued"].clone(), p["lost"][0]["index"].clone()),
            (true.into(), 1.into())
        );
        let seconds = p["shortfall"].as_array().unwrap_or_else(|| panic!("{s:#}"));
        assert_eq!(seconds.len(), 4, "a shortfall per second of the step: {s:#}");
        seconds.iter().map(|x| x["not_sent"].as_u64().unwrap()).sum()
    };
    assert!(not_sent(&steps[1]) > 0, "{:#}", steps[1]);
    // Step 3: 450 req/s for 4 s, agent 1's third (600) due and not sent.
    let short = not_sent(&steps[2]);
    assert!(short.abs_diff(600) <= 10, "step 3 not sent {short}: {:#}", steps[2]);
    // The step's own never sent is that shortfall too, the lost agent's share in it.
    let sent_of = |s: &Value, k: &str| -> u64 {
        s["partial"]["shortfall"].as_array().unwrap().iter().map(|x| x[k].as_u64().unwrap()).sum()
    };
    let whole = sent_of(&steps[2], "due").saturating_sub(sent_of(&steps[2], "sent"));
    assert_eq!(steps[2]["not_sent"].as_u64(), Some(whole), "{:#}", steps[2]);
    let completed = steps[2]["completed"].as_u64().unwrap();
    assert!(completed.abs_diff(1_200) <= 10, "agents 0 and 2 kept their shares: {completed}");
    assert_eq!(merged["knee"]["steps_judged"], 1, "partial steps are not judged: {merged:#}");
    assert_eq!(rates(&json(&a2)).len(), 3, "agent 2 ran every step");
}

/// `--merged-hdr-log`: one interval log of every step, its intervals tagged `stepN.corrected`
/// and `stepN.uncorrected`; each step's intervals, added with HdrHistogram's own reader, give
/// that step's reported p99 and count.
#[test]
fn the_merged_interval_log_holds_every_steps_intervals_tagged_with_the_step() {
    let server = TestServer::start(Behaviour::ok("hello"));
    let (url, at) = (server.url("/"), rendezvous());
    let dir = tempfile::tempdir().expect("temp dir");
    let log = dir.path().join("merged.hlog");
    let args = ["--rates", "100,200", "--step-duration", "2s"];
    let mut a0 = sweeper(&url, &args, 0, 2, &at);
    a0.args(["--merged-hdr-log".as_ref(), log.as_os_str()]);
    let outs = all(vec![a0, sweeper(&url, &args, 1, 2, &at)]);
    for o in &outs {
        assert_eq!(o.status.code(), Some(0), "{}", stderr(o));
    }
    let merged = json(&outs[0]);
    let h = log_histograms(&log);
    let tags = ["step1.corrected", "step1.uncorrected", "step2.corrected", "step2.uncorrected"];
    assert_eq!(h.keys().collect::<Vec<_>>(), tags, "{merged:#}");
    for (n, step) in merged["steps"].as_array().expect("steps").iter().enumerate() {
        let corrected = &h[&format!("step{}.corrected", n + 1)];
        assert_eq!(corrected.len(), step["completed"].as_u64().unwrap(), "{step:#}");
        let p99 = step["p99_us"].as_u64().unwrap();
        let from_log = corrected.value_at_quantile(0.99);
        assert!(corrected.equivalent(p99, from_log), "step {n}: {p99} against {from_log}");
    }
    // Agent 0 refuses a path it cannot write before any load: exit 2, one line.
    let (url, at) = (server.url("/"), rendezvous());
    let mut c = sweeper(&url, &args, 0, 2, &at);
    c.args(["--merged-hdr-log", "/nonexistent/dir/merged.hlog"]);
    let o = crate::support::output_within(c, LIMIT);
    assert_eq!(o.status.code(), Some(2), "{}", stderr(&o));
    assert!(stderr(&o).contains("--merged-hdr-log /nonexistent"), "{}", stderr(&o));
    assert_eq!(stderr(&o).trim().lines().count(), 1, "{}", stderr(&o));
}

/// An agent 0 (this test, speaking the rendezvous's protocol with the right secret) that names
/// a step the agent's command line does not define: 350 req/s, neither the next of `--rates`
/// nor, without `--find-knee`, any bisection. The agent refuses it with one line and exit 2,
/// and sends nothing to the server: the rendezvous carries no load of its own.
#[test]
fn an_agent_refuses_a_step_its_command_line_does_not_define() {
    use loadlab_agents::wire::{self, Msg, SweepStep};
    use loadlab_agents::{auth, clock};
    let server = TestServer::start(Behaviour::ok("hello"));
    let listener = std::net::TcpListener::bind("127.0.0.1:0").expect("bind");
    let at = listener.local_addr().unwrap().to_string();
    let args = ["--rates", "100,200", "--step-duration", "1s"];
    let (child, out, err) = spawn(sweeper(&server.url("/"), &args, 1, 2, &at));
    let (mut stream, _) = listener.accept().expect("the agent connects");
    stream.set_read_timeout(Some(Duration::from_secs(10))).unwrap();
    let token = auth::Token::load(None, Some(TOKEN.into())).unwrap();
    assert!(auth::challenge(&mut stream, &token).expect("the challenge"), "the agent's secret");
    let Msg::Ready { .. } = wire::recv(&mut stream).expect("ready") else { panic!("not ready") };
    let step = Some(SweepStep { target: 0, rate: 350.0, bisect: false });
    let at = clock::now_ns() + 500_000_000;
    for msg in [Msg::Accepted, Msg::Start { at, offset: 0, weights: vec![1, 1], step }] {
        wire::send(&mut stream, &msg).expect("sent");
    }
    let (o, _) = wait(child, out, err, LIMIT);
    assert_eq!(o.status.code(), Some(2), "{}", stderr(&o));
    let says = "named a sweep step at 350 req/s (target 1), which this agent's command line";
    assert!(stderr(&o).contains(says), "{}", stderr(&o));
    assert!(stderr(&o).contains("does not allow now (100): refused"), "{}", stderr(&o));
    assert_eq!(stderr(&o).trim().lines().count(), 1, "{}", stderr(&o));
    assert_eq!(server.requests(), 0, "nothing sent");
}
