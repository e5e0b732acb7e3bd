//! The executor, the sweep and the verdict, in process: fake engine, fake lab, a real store in
//! a temporary file.

use std::time::Duration;

use loadlab_engine::{Arrival, BenchConfig, ErrorClass, Pacing, Protocol, Target};
use loadlab_stats::knee::Criteria;
use loadlab_store::{RunInfo, Store};
use loadlab_suite::Cell;

use crate::commands::run::executor::{CellDone, Events, Instance, RunContext, RunError};
use crate::commands::sweep::{run_sweep, SweepPlan, SweepTarget};
use crate::fake::{result, FakeEngine, FakeLab};
use crate::judge::trust::{Flag, Verdict};

pub(crate) const TWO_STACKS: &str = r#"name = "two"
repetitions = 2
warmup = "0s"

[[stacks]]
name = "nginx"

[[stacks]]
name = "nginx-fpm"

[[workloads]]
name = "hello.txt"

[[loads]]
model = "closed"
concurrency = [2, 4]
duration = "1s"
"#;

#[derive(Default)]
pub(crate) struct Told(pub Vec<String>);

impl Events for Told {
    fn stack_up(&mut self, cell: &Cell, up: &Instance) -> std::io::Result<()> {
        self.0.push(format!("up {} rep {}", up.id, cell.repetition));
        Ok(())
    }

    fn cell_done(&mut self, d: &CellDone<'_>) -> std::io::Result<()> {
        self.0.push(format!("cell {} {}", d.cell.ordinal, d.record.stack));
        Ok(())
    }

    fn cell_interrupted(&mut self, label: &str) -> std::io::Result<()> {
        self.0.push(format!("interrupted {}", label.trim()));
        Ok(())
    }
}

/// A plan run on the fakes into a fresh store: the store, what the events said, and how it
/// ended.
pub(crate) struct Ran {
    _dir: tempfile::TempDir,
    pub store: Store,
    pub run_id: loadlab_store::RunId,
    pub told: Told,
    pub outcome: Result<(), RunError>,
}

impl Ran {
    pub fn cells(&self) -> Vec<loadlab_store::CellRecord> {
        self.store.cells(self.run_id).expect("the cells")
    }
}

/// Runs `plan` with `lab` and `engine`, the client on `threads` threads.
pub(crate) fn run_on_fakes(
    plan: &loadlab_suite::Plan,
    lab: &FakeLab,
    engine: &mut FakeEngine,
    threads: usize,
) -> Ran {
    let (_dir, mut store) = store();
    let run_id = begin(&mut store);
    let mut told = Told::default();
    let mut cx = RunContext { store: &mut store, run_id, client_cpus: None, threads };
    let outcome = crate::run_plan(plan, lab, engine, &mut told, &mut cx);
    Ran { _dir, store, run_id, told, outcome }
}

fn store() -> (tempfile::TempDir, Store) {
    let dir = tempfile::tempdir().expect("a temp dir");
    let store = Store::open(dir.path().join("t.db")).expect("a store");
    (dir, store)
}

fn plan() -> loadlab_suite::Plan {
    let suite = loadlab_suite::parse(TWO_STACKS, "two.toml").expect("the suite parses");
    loadlab_suite::plan(&suite, false)
}

fn begin(store: &mut Store) -> loadlab_store::RunId {
    let info = RunInfo {
        suite: "two".into(),
        started_at: std::time::SystemTime::now(),
        environment: Default::default(),
    };
    store.begin_run(&info).expect("a run")
}

#[test]
fn a_plan_runs_instance_by_instance_each_cell_judged_and_stored() {
    let plan = plan();
    assert_eq!(plan.cells.len(), 8);
    let lab = FakeLab::default();
    let mut engine = FakeEngine::new(5_000.0);
    let ran = run_on_fakes(&plan, &lab, &mut engine, 2);
    ran.outcome.as_ref().expect("the plan runs");

    // A B A B, each instance down before the next comes up.
    let log = lab.log.borrow().clone();
    assert_eq!(
        log,
        [
            "up nginx-0",
            "down nginx-0",
            "up nginx-fpm-1",
            "down nginx-fpm-1",
            "up nginx-2",
            "down nginx-2",
            "up nginx-fpm-3",
            "down nginx-fpm-3"
        ]
    );
    let cells = ran.cells();
    assert_eq!(cells.len(), 8);
    assert_eq!(ran.told.0.iter().filter(|l| l.starts_with("cell")).count(), 8);
    // The engine got each cell's load: closed loop at 2 and 4 connections, 2 threads at most.
    let measured = engine.measured.borrow();
    let conns: Vec<usize> = measured.iter().map(|c| c.connections).collect();
    assert_eq!(conns, [2, 4, 2, 4, 2, 4, 2, 4]);
    assert!(measured.iter().all(|c| c.threads == 2 && c.pacing == Pacing::Closed));
    // Every stored cell carries the verdict's flags: the fake's 10 connections open at once
    // fall short of none, so nothing is flagged.
    assert!(cells.iter().all(|c| c.flags.is_empty()), "{:?}", cells[0].flags);
}

#[test]
fn ctrl_c_ends_the_run_with_the_finished_cells_stored_and_the_stack_down() {
    let lab = FakeLab::default();
    let mut engine = FakeEngine::new(5_000.0);
    engine.stop_after = Some(3);
    engine.interrupt_in_measure = true;
    let ran = run_on_fakes(&plan(), &lab, &mut engine, 1);
    ran.outcome.as_ref().expect("an interrupted run");
    assert_eq!(ran.cells().len(), 2, "the interrupted cell is not kept");
    assert_eq!(
        lab.log.borrow().as_slice(),
        ["up nginx-0", "down nginx-0", "up nginx-fpm-1", "down nginx-fpm-1"]
    );
    let told = &ran.told.0;
    assert!(told.last().expect("told").starts_with("interrupted [  3/8]"), "{told:?}");
}

#[test]
fn a_stack_that_does_not_verify_ends_the_run_after_the_others_went_down() {
    let lab = FakeLab { broken: Some("nginx-fpm"), ..FakeLab::default() };
    let ran = run_on_fakes(&plan(), &lab, &mut FakeEngine::new(5_000.0), 1);
    let err = ran.outcome.as_ref().expect_err("the broken stack stops the run");
    assert!(matches!(err, RunError::Lab(loadlab_lab::Error::Verify { .. })), "{err}");
    assert_eq!(lab.log.borrow().as_slice(), ["up nginx-0", "down nginx-0"]);
    assert_eq!(ran.cells().len(), 2);
}

/// `TWO_STACKS` with `key = true` on its nginx stack.
fn plan_with(key: &str) -> loadlab_suite::Plan {
    let text =
        TWO_STACKS.replacen("name = \"nginx\"\n", &format!("name = \"nginx\"\n{key} = true\n"), 1);
    let suite = loadlab_suite::parse(&text, "two.toml").expect("the suite parses");
    loadlab_suite::plan(&suite, false)
}

#[test]
fn a_stack_with_tls_is_loaded_at_https_trusting_its_own_ca() {
    let (_dir, mut store) = store();
    let run_id = begin(&mut store);
    let lab = FakeLab::default();
    let mut engine = FakeEngine::new(5_000.0);
    let mut cx = RunContext { store: &mut store, run_id, client_cpus: None, threads: 1 };
    crate::run_plan(&plan_with("tls"), &lab, &mut engine, &mut Told::default(), &mut cx)
        .expect("the plan runs");
    let measured = engine.measured.borrow();
    let tls: Vec<(bool, Option<String>)> = measured
        .iter()
        .map(|c| (c.target.tls, c.tls.cacert.as_ref().map(|p| p.display().to_string())))
        .collect();
    let ca = |id: &str| Some(format!("/fake/{id}/tls/ca.pem"));
    // nginx (tls) and nginx-fpm (plain), A B A B, two loads each; never --insecure.
    assert_eq!(
        tls,
        [
            (true, ca("nginx-0")),
            (true, ca("nginx-0")),
            (false, None),
            (false, None),
            (true, ca("nginx-2")),
            (true, ca("nginx-2")),
            (false, None),
            (false, None)
        ]
    );
    assert!(measured.iter().all(|c| !c.tls.insecure));
}

/// TWO_STACKS with its first stack replaced by `first` (the stack's lines) and `streams` for
/// the load, run on fakes: the store (with its directory), the run, each measured cell's
/// protocol and the plan.
fn run_first_stack_as(
    first: &str,
    streams: usize,
) -> (tempfile::TempDir, Store, loadlab_store::RunId, Vec<Protocol>, loadlab_suite::Plan) {
    let (dir, mut store) = store();
    let run_id = begin(&mut store);
    let lab = FakeLab::default();
    let mut engine = FakeEngine::new(5_000.0);
    let mut cx = RunContext { store: &mut store, run_id, client_cpus: None, threads: 1 };
    let mut plan_text = TWO_STACKS.replacen("name = \"nginx\"\n", first, 1);
    plan_text.push_str(&format!("streams = {streams}\n"));
    let suite = loadlab_suite::parse(&plan_text, "two.toml").expect("the suite parses");
    let plan = loadlab_suite::plan(&suite, false);
    crate::run_plan(&plan, &lab, &mut engine, &mut Told::default(), &mut cx)
        .expect("the plan runs");
    let protocols = engine.measured.borrow().iter().map(|c| c.protocol).collect();
    (dir, store, run_id, protocols, plan)
}

/// A stack with http2 on is loaded over HTTP/2 with the load's streams; the other stack of
/// the suite stays on HTTP/1.1, and the stored load says which.
#[test]
fn a_stack_with_http2_is_loaded_over_http2_with_the_loads_streams() {
    let (_dir, store, run_id, protocols, _) =
        run_first_stack_as("name = \"nginx\"\ntls = true\nhttp2 = true\n", 10);
    let h2 = Protocol::Http2 { streams: 10 };
    assert_eq!(protocols[..4], [h2, h2, Protocol::Http1, Protocol::Http1]);
    let cells = store.cells(run_id).expect("cells");
    assert_eq!(cells[0].load.extra.get("streams"), Some(&serde_json::json!(10)));
    assert!(!cells[2].load.extra.contains_key("streams"));
    assert_eq!(cells[0].knobs.get("http2"), Some(&serde_json::json!("on")));
}

/// A Caddy stack with http3 is loaded over HTTP/3 with the load's streams, set up as without it
/// (its knobs hold no http3), and its stored cells say `http3`; the suite's other stack stays
/// on HTTP/1.1 and stores none.
#[test]
fn a_stack_with_http3_is_loaded_over_http3_and_its_cells_say_so() {
    let (_dir, store, run_id, protocols, plan) =
        run_first_stack_as("name = \"caddy\"\ntls = true\nhttp3 = true\n", 4);
    let h3 = Protocol::Http3 { streams: 4 };
    assert_eq!(protocols[..4], [h3, h3, Protocol::Http1, Protocol::Http1]);
    let cells = store.cells(run_id).expect("cells");
    assert_eq!(cells[0].knobs.get("http3"), Some(&serde_json::json!("on")));
    assert_eq!(cells[0].load.extra.get("streams"), Some(&serde_json::json!(4)));
    assert!(!cells[2].knobs.contains_key("http3") && !cells[2].load.extra.contains_key("streams"));
    assert!(plan.cells[0].stack.knobs().is_some_and(|k| !k.http2.is_on()));
}

/// HTTP/2 has no connection per request: a load without keep-alive on an http2 stack is
/// refused before any stack starts, with what to use instead.
#[test]
fn a_load_without_keepalive_on_an_http2_stack_is_refused_before_anything_starts() {
    let (_dir, mut store) = store();
    let run_id = begin(&mut store);
    let lab = FakeLab::default();
    let mut engine = FakeEngine::new(5_000.0);
    let mut cx = RunContext { store: &mut store, run_id, client_cpus: None, threads: 1 };
    let text = TWO_STACKS
        .replacen("name = \"nginx\"\n", "name = \"nginx\"\ntls = true\nhttp2 = true\n", 1)
        .replace("duration = \"1s\"", "duration = \"1s\"\nkeepalive = false");
    let suite = loadlab_suite::parse(&text, "two.toml").expect("the suite parses");
    let plan = loadlab_suite::plan(&suite, false);
    let err = crate::run_plan(&plan, &lab, &mut engine, &mut Told::default(), &mut cx)
        .expect_err("refused");
    let RunError::Unsupported(why) = &err else { panic!("{err}") };
    assert!(why.contains("cell 0 (nginx): keepalive = false has no meaning over HTTP/2"), "{why}");
    assert!(lab.log.borrow().is_empty(), "no stack started");
    assert!(engine.measured.borrow().is_empty());
}

pub(crate) fn sweep_plan(rates: &[f64]) -> SweepPlan {
    let config = BenchConfig::new(Target::parse("http://127.0.0.1:9/").expect("a URL"));
    SweepPlan {
        rates: rates.to_vec(),
        targets: vec![SweepTarget {
            config,
            addr: "127.0.0.1:9".parse().expect("an address"),
            url: "http://127.0.0.1:9/".into(),
        }],
        calls: None,
        arrival: Arrival::Fixed,
        max_connections: 1_000,
        criteria: Criteria::default(),
        stop_after_knee: None,
        find_knee: false,
        slo: None,
    }
}

fn gated_sweep(capacity: f64, rates: &[f64], slo: &str) -> crate::commands::sweep::SweepOutcome {
    let mut plan = sweep_plan(rates);
    plan.slo = Some(slo.parse().expect("an SLO"));
    run_sweep(&plan, &mut FakeEngine::new(capacity), &mut |_| Ok(())).expect("the sweep runs")
}

#[test]
fn a_sweeps_rps_threshold_judges_the_capacity_its_other_thresholds_held_to() {
    // The fake answers in 1 ms up to 1,000/s, in 200 ms above.
    let rates = [200.0, 600.0, 1000.0, 1400.0];
    let out = gated_sweep(1_000.0, &rates, "p99<50ms,rps>=900");
    assert!(out.gates_passed(), "{:?}", out.gates);
    assert!(out.gates[0].detail.contains("held p99<50ms up to 1000 req/s"), "{:?}", out.gates);
    // Each step was judged on the latency alone: a low step's low rate breaks nothing.
    let broken: Vec<f64> = out
        .steps
        .iter()
        .filter(|s| !s.slo.as_ref().expect("judged").passed)
        .map(|s| s.offered_rps)
        .collect();
    assert_eq!(broken, [1400.0]);
    let out = gated_sweep(1_000.0, &rates, "p99<50ms,rps>=1200");
    assert!(!out.gates_passed());
    assert!(out.gates[0].detail.contains("rps 1000 < 1200"), "{:?}", out.gates);
}

#[test]
fn without_an_rps_threshold_the_slo_places_the_knee_and_gates_nothing() {
    let out = gated_sweep(1_000.0, &[200.0, 600.0, 1400.0], "p99<50ms,errors<1%");
    assert!(out.gates.is_empty() && out.gates_passed());
    assert_eq!(out.knees[0].offered_rps, Some(600.0));
    // A latency the server never meets breaks the first step, for the latency's reason.
    let out = gated_sweep(1_000.0, &[200.0, 600.0], "p99<500us");
    assert_eq!((out.knees[0].offered_rps, out.knees[0].reason.as_str()), (None, "latency"));
}

#[test]
fn the_knee_is_the_last_rate_the_server_kept_up_with() {
    let mut engine = FakeEngine::new(1_000.0);
    let mut rows = 0;
    let out =
        run_sweep(&sweep_plan(&[200.0, 600.0, 1000.0, 1400.0, 1800.0]), &mut engine, &mut |_| {
            rows += 1;
            Ok(())
        })
        .expect("the sweep runs");
    assert_eq!(rows, 5);
    assert!(!out.interrupted);
    let k = &out.knees[0];
    assert_eq!((k.offered_rps, k.next_offered_rps), (Some(1000.0), Some(1400.0)));
    assert_eq!(k.reason, "throughput");
    assert!(out.steps.iter().all(|s| s.trusted));
    // Every step warmed up at least a second, on the open loop at its rate.
    for (c, rate) in engine.measured.borrow().iter().zip([200.0, 600.0, 1000.0, 1400.0, 1800.0]) {
        assert!(c.warmup >= Duration::from_secs(1));
        assert_eq!(c.pacing.offered_rps(), Some(rate));
    }
}

#[test]
fn a_step_the_client_could_not_drive_is_never_the_servers_knee() {
    // The server could take 10,000/s, but the client saturates from 900/s.
    let mut engine = FakeEngine::new(10_000.0);
    engine.client_rate_limit = 950.0;
    let out = run_sweep(&sweep_plan(&[300.0, 600.0, 900.0, 1200.0]), &mut engine, &mut |_| Ok(()))
        .expect("the sweep runs");
    let k = &out.knees[0];
    assert_eq!(k.offered_rps, Some(600.0));
    assert_eq!(k.reason, "client_limited");
    let untrusted: Vec<f64> =
        out.steps.iter().filter(|s| !s.trusted).map(|s| s.offered_rps).collect();
    assert_eq!(untrusted, [900.0, 1200.0]);
    assert!(out.steps[2].flags.client_saturated);
}

/// A step's trust column names whose limit a flag makes it, then the other findings apart,
/// never an arrow listed as if it were one more flag.
#[test]
fn a_steps_trust_column_says_whose_limit_it_was_and_lists_the_rest_apart() {
    let mut engine = FakeEngine::new(10_000.0);
    engine.client_rate_limit = 950.0;
    let out = run_sweep(&sweep_plan(&[300.0, 1200.0]), &mut engine, &mut |_| Ok(()))
        .expect("the sweep runs");
    assert_eq!(out.steps[0].trust_column(), "ok");
    let mut s = out.steps[1].clone();
    assert_eq!(s.trust_column(), "CLIENT SATURATED: the client's limit, not the server's");
    s.flags.client_saturated = false;
    s.flags.network_bound = true;
    s.flags.errors = true;
    s.non_2xx = 3;
    assert_eq!(
        s.trust_column(),
        "NETWORK-BOUND: the network's limit, not the server's; errors, 3 non-2xx"
    );
    s.flags.client_starved = true;
    s.bisect = true;
    assert_eq!(
        s.trust_column(),
        "CLIENT STARVED, NETWORK-BOUND: the client's and the network's limit, not the \
         server's; errors, 3 non-2xx; (bisect)"
    );
    s.interrupted = true;
    assert_eq!(s.trust_column(), "INTERRUPTED: not judged; (bisect)");
}

#[test]
fn bisection_places_the_knee_between_the_last_good_and_first_bad_steps() {
    let mut engine = FakeEngine::new(1_300.0);
    let mut plan = sweep_plan(&[1000.0, 2000.0]);
    plan.find_knee = true;
    let out = run_sweep(&plan, &mut engine, &mut |_| Ok(())).expect("the sweep runs");
    let bisected: Vec<f64> = out.steps.iter().filter(|s| s.bisect).map(|s| s.offered_rps).collect();
    assert_eq!(bisected, [1500.0, 1250.0, 1375.0, 1312.5]);
    // 1,312.5/s offered, 1,300/s achieved: 99.0%, within the knee's rule.
    assert_eq!(out.knees[0].offered_rps, Some(1312.5));
}

#[test]
fn an_interrupted_sweep_reports_the_knee_of_the_steps_it_finished() {
    let mut engine = FakeEngine::new(1_000.0);
    engine.stop_after = Some(2);
    let mut plan = sweep_plan(&[500.0, 800.0, 1200.0, 1600.0]);
    plan.find_knee = true;
    let out = run_sweep(&plan, &mut engine, &mut |_| Ok(())).expect("the sweep runs");
    assert!(out.interrupted);
    assert_eq!(out.steps.len(), 2);
    assert_eq!(out.knees[0].offered_rps, Some(800.0));
    assert_eq!(out.knees[0].reason, "none");
}

pub(crate) fn closed() -> BenchConfig {
    let mut c = BenchConfig::new(Target::parse("http://127.0.0.1:9/").expect("a URL"));
    c.connections = 10;
    c
}

#[test]
fn saturation_is_judged_above_nine_tenths_of_the_cpu() {
    let at = |share: f64| Verdict::judge(&closed(), &result(Pacing::Closed, 1000, 1.0, 100, share));
    assert!(!at(0.90).has(Flag::ClientSaturated));
    let v = at(0.92);
    assert!(v.has(Flag::ClientSaturated));
    assert!(!v.trusted());
    assert_eq!(v.findings[0].evidence, "client CPU 92% (busiest worker 92%)");
    assert!(at(0.5).findings.is_empty());
}

#[test]
fn responses_that_are_not_2xx_mark_the_throughput_unless_they_were_validated() {
    let mut r = result(Pacing::Closed, 1000, 1.0, 100, 0.3);
    r.tally.status[200] = 0;
    r.tally.status[404] = 1000;
    let v = Verdict::judge(&closed(), &r);
    assert!(v.has(Flag::Non2xx));
    assert!(v.trusted(), "a 404 is the server's answer, not the client's limit");
    let mut validated = closed();
    validated.validation.status = vec![(200, 200)];
    assert!(!Verdict::judge(&validated, &r).has(Flag::Non2xx));
}

#[test]
fn descriptors_running_out_is_the_clients_limit() {
    let mut r = result(Pacing::Closed, 1000, 1.0, 100, 0.3);
    r.tally.failed = 7;
    r.tally.errors.add(ErrorClass::FdUnavail, Some(24));
    r.tally.errors.add(ErrorClass::FdUnavail, Some(24));
    for _ in 0..5 {
        r.tally.errors.add(ErrorClass::Connrefused, Some(111));
    }
    let v = Verdict::judge(&closed(), &r);
    assert!(v.has(Flag::FdExhausted) && v.has(Flag::Errors));
    assert!(!v.trusted());
    let errors = v.findings.iter().find(|f| f.flag == Flag::Errors).expect("errors");
    assert_eq!(errors.evidence, "connrefused 5, fd_unavail 2 of 1007");
}

#[test]
fn an_open_loop_that_fell_behind_says_by_how_much() {
    let pacing = Pacing::Open { rate: 1000.0, arrival: Arrival::Fixed, max_connections: 100 };
    let mut r = result(pacing, 1000, 1.0, 100, 0.3);
    let kept = Verdict::judge(&closed(), &r);
    assert!(!kept.has(Flag::ScheduleMissed), "{:?}", kept.findings);
    r.tally.timings.late.clear();
    r.tally.timings.corrected.clear();
    for _ in 0..1000 {
        r.tally.timings.late.record(5_000);
        r.tally.timings.corrected.record(6_000);
    }
    let v = Verdict::judge(&closed(), &r);
    let f = v.findings.iter().find(|f| f.flag == Flag::ScheduleMissed).expect("missed");
    assert_eq!(f.evidence, "late p99 5.00 ms, 83% of the p99 latency");
    assert!(f.warning.contains("1% of requests went out 5.00 ms or more after their due time"));
    // The same lateness under a latency of 60 ms is under a tenth of it: not said.
    r.tally.timings.corrected.clear();
    for _ in 0..1000 {
        r.tally.timings.corrected.record(60_000);
    }
    assert!(!Verdict::judge(&closed(), &r).has(Flag::ScheduleMissed));
    // Arrivals never sent are always said, with their share.
    r.tally.not_sent = 10;
    let v = Verdict::judge(&closed(), &r);
    let f = v.findings.iter().find(|f| f.flag == Flag::ScheduleMissed).expect("missed");
    assert_eq!(f.evidence, "10 never sent (1.0% of the schedule)");
}

pub(crate) fn sample(tiers: &[(&str, f64)], machine_busy_pct: f64) -> loadlab_lab::Sample {
    loadlab_lab::Sample {
        t_ms: 1000,
        unix_ms: 0,
        interval_ms: 1000,
        tiers: tiers
            .iter()
            .map(|(tier, pct)| loadlab_lab::sampler::TierSample {
                tier: tier.to_string(),
                cpu_user_pct: pct * 0.8,
                cpu_sys_pct: pct * 0.2,
                rss_bytes: 1 << 20,
                processes: 3,
                pool: None,
            })
            .collect(),
        machine: Some(loadlab_lab::sampler::MachineSample {
            cpu_busy_pct: machine_busy_pct,
            load1: 1.0,
            load5: 1.0,
            load15: 1.0,
        }),
    }
}

#[test]
fn a_tier_that_used_its_cpus_limited_the_cell_and_a_busy_database_is_named_so() {
    use crate::judge::limit::{limited_by, Limit};
    let r = result(Pacing::Closed, 1000, 1.0, 100, 0.3);
    let v = Verdict::judge(&closed(), &r);
    // php-fpm pinned to one CPU, 95% of it busy over two samples.
    let s = [
        sample(&[("nginx", 20.0), ("php-fpm", 96.0)], 60.0),
        sample(&[("nginx", 20.0), ("php-fpm", 94.0)], 60.0),
    ];
    let l = limited_by(&r, &v, &s, 1);
    assert_eq!(l.limit, Limit::TierCpu("php-fpm".into()));
    assert_eq!(l.evidence, "php-fpm used 0.95 of its 1 CPU");
    assert_eq!(l.sentence(), "limited by php-fpm CPU: php-fpm used 0.95 of its 1 CPU");
    // Just under 90% of two CPUs is not full; the machine, 96% busy, is.
    let s = [sample(&[("nginx", 178.0)], 96.0)];
    let l = limited_by(&r, &v, &s, 2);
    assert_eq!(l.limit, Limit::MachineCpu, "{l:?}");
    assert!(
        l.evidence.contains("nginx 1.8") && l.evidence.contains("the client 0.3"),
        "{}",
        l.evidence
    );
    let s = [sample(&[("nginx", 10.0), ("mariadb", 195.0)], 99.0)];
    assert_eq!(limited_by(&r, &v, &s, 2).limit, Limit::Database);
}

#[test]
fn the_clients_limit_comes_first_and_an_offer_kept_is_not_a_server_limit() {
    use crate::judge::limit::{limited_by, Limit};
    let busy = [sample(&[("nginx", 195.0)], 99.0)];
    let r = result(Pacing::Closed, 1000, 1.0, 100, 0.97);
    let l = limited_by(&r, &Verdict::judge(&closed(), &r), &busy, 2);
    assert_eq!(l.limit, Limit::Client);
    assert_eq!(l.evidence, "client CPU 97% (busiest worker 97%)");

    let pacing = Pacing::Open { rate: 1000.0, arrival: Arrival::Fixed, max_connections: 100 };
    let r = result(pacing, 1000, 1.0, 100, 0.2);
    let quiet = [sample(&[("nginx", 12.0)], 20.0)];
    let l = limited_by(&r, &Verdict::judge(&closed(), &r), &quiet, 2);
    assert_eq!(l.limit, Limit::Offered);
    assert_eq!(l.evidence, "1,000 req/s achieved of 1,000 offered");

    let r = result(Pacing::Closed, 1000, 1.0, 100, 0.2);
    let v = Verdict::judge(&closed(), &r);
    let l = limited_by(&r, &v, &quiet, 2);
    assert_eq!(l.limit, Limit::NotDetermined);
    assert_eq!(l.evidence, "no tier used 90% of its CPUs (nginx 0.12 CPUs)");
    assert_eq!(limited_by(&r, &v, &[], 2).limit, Limit::NotDetermined);
}

/// Behind a network profile the lab knows the link's speed (the veth reports 10000 Mbit/s):
/// a cell that carried the profile's rate is judged network-bound by the link rule.
#[test]
fn a_cell_behind_a_profile_is_judged_against_the_profiles_rate() {
    let run = |net: &str| {
        let text = TWO_STACKS.replacen("warmup = \"0s\"", &format!("warmup = \"0s\"\n{net}"), 1);
        let suite = loadlab_suite::parse(&text, "two.toml").expect("the suite parses");
        let plan = loadlab_suite::plan(&suite, false);
        // 60,000 responses of 200 bytes a second: 96 Mbit/s of HTTP, 102% of 100 Mbit/s on
        // the wire.
        let ran = run_on_fakes(&plan, &FakeLab::default(), &mut FakeEngine::new(60_000.0), 2);
        ran.outcome.as_ref().expect("the plan runs");
        ran.cells()
    };
    let behind = run("net = \"lan-100mbit\"");
    assert!(
        behind.iter().all(|c| c.flags.iter().any(|f| f.flag.as_str() == "network_bound")),
        "{:?}",
        behind[0].flags
    );
    let limit = behind[0].limited_by.as_ref().expect("a limit");
    assert_eq!(limit.limit, loadlab_store::Limit::Network);
    assert!(limit.evidence.ends_with("the link is --net lan-100mbit, 100 Mbit/s"), "{limit:?}");
    let loopback = run("");
    assert!(loopback.iter().all(|c| c.flags.iter().all(|f| f.flag.as_str() != "network_bound")));
    // What carried a profile's delay is stored beside the profile; bandwidth alone has none.
    assert!(behind.iter().all(|c| !c.knobs.contains_key("net_delay")), "{:?}", behind[0].knobs);
    let wan = run("net = \"wan\"");
    assert!(wan.iter().all(|c| c.knobs["net_delay"] == "stage"), "{:?}", wan[0].knobs);
}

/// A stack on a lab host has that host stored once with the run (its machine and the path
/// to it), and its tiers are judged against that host's CPUs, the evidence naming it; a stack
/// here is judged against its own CPUs.
#[test]
fn a_stack_on_a_lab_host_is_judged_on_that_hosts_cpus_and_the_host_is_stored_once() {
    use loadlab_store::{ConfigRecord, Limit};
    let text = TWO_STACKS
        .replace("name = \"nginx\"\n", "name = \"nginx\"\ncpus = \"0\"\n")
        .replace("name = \"nginx-fpm\"\n", "name = \"nginx-fpm\"\nhost = \"ssh://root@lab2\"\n");
    let suite = loadlab_suite::parse(&text, "hosts.toml").unwrap_or_else(|e| panic!("{e}"));
    let plan = loadlab_suite::plan(&suite, false);
    // Each tier counted 63 CPU-seconds over its second: all of 1 CPU here, 0.98 of lab2's 64.
    let lab = FakeLab {
        tier_cpu: Some(loadlab_lab::sampler::CpuUse {
            wall: Duration::from_secs(1),
            tiers: vec![loadlab_lab::sampler::TierCpuUse {
                tier: "nginx".into(),
                cpu: Duration::from_secs(63),
            }],
            machine_busy: Some(0.5),
        }),
        ..FakeLab::default()
    };
    let mut engine = FakeEngine::new(5_000.0);
    let ran = run_on_fakes(&plan, &lab, &mut engine, 2);
    ran.outcome.as_ref().expect("the plan runs");
    let cells = ran.cells();
    assert_eq!(cells.len(), 8);
    for cell in &cells {
        let l = cell.limited_by.as_ref().expect("judged");
        assert_eq!(l.limit, Limit::TierCpu("nginx".into()), "{l:?}");
        let remote = cell.stack == "nginx-fpm";
        assert_eq!(l.evidence.contains("(on ssh://root@lab2, 64 CPUs)"), remote, "{l:?}");
        assert_eq!(l.evidence.contains("of its 64 CPUs"), remote, "{l:?}");
    }
    let configs = ran.store.configs(ran.run_id).expect("configs");
    let hosts: Vec<&ConfigRecord> =
        configs.iter().filter(|c| c.kind == ConfigRecord::HOST).collect();
    assert_eq!(hosts.len(), 1, "stored once for two instances on it: {hosts:?}");
    let facts = hosts[0].host_facts().expect("a host's facts");
    assert_eq!(facts.host, "ssh://root@lab2");
    assert_eq!((facts.server_nic.as_deref(), facts.server_nic_mbps), (Some("eth0"), Some(1000)));
    assert_eq!((hosts[0].name.as_str(), hosts[0].stack.as_str()), ("ssh://root@lab2", "nginx-fpm"));
}

/// Page views arrive at a rate or by a closed population of viewers: a `view = true`
/// workload runs under either load, and its cells check a 2xx or 304 only.
#[test]
fn a_view_workload_runs_under_a_closed_or_an_open_load_and_checks_statuses_alone() {
    let text = |model: &str| {
        format!(
            "name = \"v\"\n[[stacks]]\nname = \"nginx\"\n[[workloads]]\nname = \"page\"\n\
             path = \"/\"\nview = true\nexpect_contains = \"html\"\n[[loads]]\n{model}\n\
             duration = \"1s\"\n"
        )
    };
    let planned = |model: &str| {
        let suite = loadlab_suite::parse(&text(model), "v.toml").expect("the suite parses");
        loadlab_suite::plan(&suite, false)
    };
    let closed = planned("model = \"closed\"\nconcurrency = [2]");
    assert!(closed.cells.iter().all(|c| crate::commands::run::executor::unsupported(c).is_none()));
    let open = planned("model = \"open\"\nrates = [5]");
    assert!(open.cells.iter().all(|c| crate::commands::run::executor::unsupported(c).is_none()));
    let mut config = BenchConfig::new(Target::parse("http://127.0.0.1:8080/").unwrap());
    open.cells[0].apply(&mut config);
    assert_eq!(config.validation.status, [(200, 299), (304, 304)]);
    assert!(config.validation.body_contains.is_none(), "{:?}", config.validation);
}
