//! The verdict's client-starvation and path rules at their boundaries, and what they make of a
//! lab cell's limit.

use std::time::Duration;

use loadlab_engine::{Link, Pacing, PathRtt};

use crate::fake::result;
use crate::judge::limit::{limited_by, Limit};
use crate::judge::trust::{Flag, Verdict, STARVED_DENIED, STARVED_WAIT};
use crate::tests::{closed, sample};

/// A closed-loop result whose one worker was busy `busy` and waited `wait` of its 1 s window.
fn waited(busy: f64, wait: f64) -> loadlab_engine::BenchResult {
    let mut r = result(Pacing::Closed, 1000, 1.0, 100, busy);
    r.workers[0].cpu_wait = Duration::from_secs_f64(wait);
    r.workers[0].involuntary_switches = 4_000;
    r
}

#[test]
fn a_client_that_waited_for_its_cpu_is_starved_only_past_both_shares() {
    // Waited 30% while busy 30%: denied half of what it wanted.
    let v = Verdict::judge(&closed(), &waited(0.30, 0.30));
    assert!(v.has(Flag::ClientStarved));
    assert!(!v.has(Flag::ClientSaturated), "saturated keeps its meaning");
    assert!(!v.trusted());
    let f = v.findings.iter().find(|f| f.flag == Flag::ClientStarved).unwrap();
    assert_eq!(
        f.evidence,
        "a worker waited for a CPU 30% of the run, 50% of the CPU time it wanted"
    );
    assert!(f.warning.contains("4,000 preemptions"), "{}", f.warning);
    // Just under the wait share: a material part of the run is needed.
    assert!(!Verdict::judge(&closed(), &waited(0.10, STARVED_WAIT - 0.01)).has(Flag::ClientStarved));
    // Waited a fifth of the run but got most of what it wanted: a busy client on a busy
    // machine, not a starved one.
    let denied = |busy: f64, wait: f64| wait / (busy + wait);
    assert!(denied(0.5, 0.2) < STARVED_DENIED);
    assert!(!Verdict::judge(&closed(), &waited(0.5, 0.2)).has(Flag::ClientStarved));
    assert!(Verdict::judge(&closed(), &waited(0.3, 0.17)).has(Flag::ClientStarved));
    // Nothing waited: nothing said.
    assert!(Verdict::judge(&closed(), &waited(0.3, 0.0)).findings.is_empty());
    // A run of 20 ms that waited 4 ms: a share, but too little time to mean anything.
    let mut short = result(Pacing::Closed, 200, 0.02, 100, 0.2);
    short.workers[0].cpu_wait = Duration::from_millis(4);
    assert!(!Verdict::judge(&closed(), &short).has(Flag::ClientStarved));
}

/// A client throttled by its cgroup's CPU quota is starved by that quota, not "while other
/// work held its CPUs": the evidence names the quota.
#[test]
fn a_client_throttled_by_its_cgroup_quota_is_starved_by_the_quota_not_by_other_work() {
    use loadlab_engine::cgroup::{CgroupThrottle, CpuQuota, Throttling};
    let mut r = waited(0.30, 0.30);
    r.cgroup_throttle = Some(CgroupThrottle {
        cgroup: "/sys/fs/cgroup/ci/job".into(),
        quota: CpuQuota { quota: Duration::from_millis(50), period: Duration::from_millis(100) },
        throttling: Throttling {
            periods: 20,
            throttled_periods: 18,
            throttled: Duration::from_millis(1_400),
        },
    });
    let v = Verdict::judge(&closed(), &r);
    let f = v.findings.iter().find(|f| f.flag == Flag::ClientStarved).expect("starved");
    let quota = "its cgroup's CPU quota (0.5 CPU: 50.0 ms per 100 ms, at /sys/fs/cgroup/ci/job) \
                 throttled it in 18 of 20 periods, 1.4 s in all";
    assert_eq!(
        f.evidence,
        format!("a worker waited for a CPU 30% of the run, 50% of the CPU time it wanted; {quota}")
    );
    assert!(f.warning.contains(&format!("preemptions) because {quota}, so")), "{}", f.warning);
    assert!(!f.warning.contains("other work"), "{}", f.warning);
    // Without throttling the wait is other work's.
    let plain = Verdict::judge(&closed(), &waited(0.30, 0.30));
    let f = plain.findings.iter().find(|f| f.flag == Flag::ClientStarved).unwrap();
    assert!(f.warning.contains("while other work held its CPUs"), "{}", f.warning);
}

/// A result on a veth whose probes saw `idle` µs before the load and `load` µs during it.
fn probed(idle: u32, load: &[u32], busy: f64) -> loadlab_engine::BenchResult {
    let mut r = result(Pacing::Closed, 60, 1.0, 100_000, busy);
    r.tally.bytes_total = 6_000_000;
    r.link = Link { interface: Some("veth0".into()), speed_mbps: Some(10_000) };
    r.path = PathRtt {
        idle_us: Some(idle),
        idle_unknown: None,
        under_load_us: load.to_vec(),
        unanswered: 0,
        machine_busy: Some(0.2),
    };
    r
}

#[test]
fn a_queue_on_the_path_is_network_bound_whatever_speed_the_nic_reports() {
    let r = probed(60, &[30_000, 35_000, 41_000, 33_000], 0.02);
    let v = Verdict::judge(&closed(), &r);
    assert!(v.has(Flag::NetworkBound), "{:?}", v.findings);
    assert!(!v.trusted());
    let f = v.findings.iter().find(|f| f.flag == Flag::NetworkBound).unwrap();
    assert_eq!(f.evidence, "RTT 60.0 µs idle, 35.0 ms under load; 48.0 Mbit/s carried");
    assert!(
        f.warning.contains(
            "rose from 60.0 µs idle to 35.0 ms under load (median of 4 probes) \
             while the client was 2% busy"
        ),
        "{}",
        f.warning
    );
    // The same bytes on a lab cell: the network, before any tier.
    let busy = [sample(&[("nginx", 5.0)], 10.0)];
    assert_eq!(limited_by(&r, &v, &busy, 2).limit, Limit::Network);
}

#[test]
fn the_path_rule_needs_a_real_rise_a_quiet_client_and_machine_and_a_link() {
    let net =
        |r: &loadlab_engine::BenchResult| Verdict::judge(&closed(), r).has(Flag::NetworkBound);
    // An unshaped veth at full speed: 6 µs idle, 19 µs under load (3x, but 13 µs).
    assert!(!net(&probed(6, &[17, 19, 21], 0.3)));
    // 100 µs above idle and three times it: the boundary.
    assert!(net(&probed(50, &[150, 150, 150], 0.1)));
    assert!(!net(&probed(50, &[149, 149, 149], 0.1)));
    // A slow path (20 ms idle) is not a queue until it triples.
    assert!(!net(&probed(20_000, &[50_000, 55_000, 59_000], 0.1)));
    assert!(net(&probed(20_000, &[60_000, 61_000, 62_000], 0.1)));
    // Too few probes; a busy client; a full machine; loopback: no verdict from the path.
    assert!(!net(&probed(50, &[5_000, 5_000], 0.1)));
    assert!(!net(&probed(50, &[5_000, 5_000, 5_000], 0.6)));
    let mut full = probed(50, &[5_000, 5_000, 5_000], 0.1);
    full.path.machine_busy = Some(0.95);
    assert!(!net(&full));
    let mut lo = probed(50, &[5_000, 5_000, 5_000], 0.1);
    lo.link = Link { interface: Some("lo".into()), speed_mbps: None };
    assert!(!net(&lo));
    // No idle RTT (no probe answered before the load): nothing to compare to.
    let mut blind = probed(50, &[5_000, 5_000, 5_000], 0.1);
    blind.path.idle_us = None;
    assert!(!net(&blind));
}

/// A path probed without an idle RTT (a null `idle_rtt_us`) cannot have the round-trip rule
/// applied: the verdict says which rules it could not apply, and why, never nothing.
#[test]
fn a_probed_path_without_an_idle_rtt_says_the_rules_that_need_it_were_not_applied() {
    let mut blind = probed(40_000, &[40_500, 41_000, 40_800], 0.02);
    assert!(Verdict::judge(&closed(), &blind).notes.iter().all(|n| !n.contains("idle RTT")));
    blind.path.idle_us = None;
    blind.path.idle_unknown = Some(loadlab_engine::NoIdleRtt {
        tried: 2,
        answered: 0,
        last: "no answer within 1000 ms".into(),
    });
    let v = Verdict::judge(&closed(), &blind);
    assert!(!v.has(Flag::NetworkBound), "{:?}", v.findings);
    assert!(
        v.notes.contains(
            &"round-trip and path-queue rules of network_bound not applied: no idle RTT \
              measured (2 of 2 handshakes before the load failed, the last with no answer \
              within 1000 ms)"
                .to_owned()
        ),
        "{:?}",
        v.notes
    );
}

#[test]
fn a_link_that_carried_more_than_its_reported_speed_is_not_a_limit() {
    // 14 Gbit/s over a veth that reports 10000 Mbit/s (seen on this kind of machine).
    let mut r = probed(6, &[16, 18, 19], 0.3);
    r.tally.bytes_total = 14_000_000_000 / 8;
    let v = Verdict::judge(&closed(), &r);
    assert!(!v.has(Flag::NetworkBound), "{:?}", v.findings);
    assert!(v.notes.iter().any(|n| n.contains("that speed is nominal")), "{:?}", v.notes);
}

#[test]
fn a_client_starved_by_the_stacks_own_tiers_is_the_machines_limit_not_the_clients() {
    let r = waited(0.30, 0.30);
    let v = Verdict::judge(&closed(), &r);
    assert!(v.has(Flag::ClientStarved));
    let cpus = std::thread::available_parallelism().map_or(1, |n| n.get()) as f64;
    // The tiers and the client (0.3 CPU) account for every busy CPU: the wait was for them.
    let stack_pct = (cpus - 0.3) * 100.0;
    let own = [sample(&[("nginx", stack_pct)], 100.0)];
    let l = limited_by(&r, &v, &own, cpus as usize);
    assert_ne!(l.limit, Limit::Client, "{l:?}");
    // A CPU's worth of other work (a busy loop beside the client): the client starved.
    let other = [sample(&[("nginx", (cpus - 1.3) * 100.0)], 100.0)];
    let l = limited_by(&r, &v, &other, cpus as usize);
    assert_eq!(l.limit, Limit::Client, "{l:?}");
    assert!(l.evidence.contains("waited for a CPU 30%"), "{}", l.evidence);
}

/// A sample in which php-fpm used `pct` of a CPU and its pool had `busy` of `max` children
/// busy with `queue` waiting.
fn pool_sample(pct: f64, busy: u32, max: u32, queue: u64) -> loadlab_lab::Sample {
    let mut s = sample(&[("nginx", 30.0), ("php-fpm", pct)], 70.0);
    s.tiers[1].pool = Some(loadlab_lab::pools::PoolReading {
        busy,
        max,
        listen_queue: Some(queue),
        answered: true,
        waited: false,
    });
    s
}

#[test]
fn a_pool_full_most_of_the_cell_limited_it_unless_its_cpu_did() {
    let r = result(Pacing::Closed, 1000, 1.0, 100, 0.2);
    let v = Verdict::judge(&closed(), &r);
    let full =
        [pool_sample(99.0, 2, 2, 17), pool_sample(98.0, 2, 2, 18), pool_sample(97.0, 1, 2, 0)];
    let l = limited_by(&r, &v, &full, 2);
    assert_eq!(l.limit, Limit::WorkerPool("php-fpm".into()), "{l:?}");
    assert_eq!(l.evidence, "2 of 2 children busy in 2 of 3 samples, listen queue up to 18");
    assert_eq!(
        l.sentence(),
        "limited by php-fpm pool: 2 of 2 children busy in 2 of 3 samples, listen queue up to 18"
    );
    // Full in only one of three samples: not the limit, and said so.
    let once =
        [pool_sample(40.0, 2, 2, 0), pool_sample(40.0, 1, 50, 0), pool_sample(40.0, 1, 2, 0)];
    let l = limited_by(&r, &v, &once, 2);
    assert_eq!(l.limit, Limit::NotDetermined);
    assert!(l.evidence.contains("no pool was full most of the time"), "{}", l.evidence);
    // A pool of 50 with 20 busy: never full.
    let big = [pool_sample(150.0, 20, 50, 0), pool_sample(150.0, 20, 50, 0)];
    assert_ne!(limited_by(&r, &v, &big, 2).limit, Limit::WorkerPool("php-fpm".into()));
    // Full, but its children used both CPUs they had: the CPU is the limit.
    let cpu = [pool_sample(190.0, 5, 5, 30), pool_sample(195.0, 5, 5, 31)];
    assert_eq!(limited_by(&r, &v, &cpu, 2).limit, Limit::TierCpu("php-fpm".into()));
    // A status that did not answer is no reading.
    let mut silent = pool_sample(50.0, 0, 0, 0);
    silent.tiers[1].pool = Some(loadlab_lab::pools::PoolReading::default());
    assert_eq!(limited_by(&r, &v, &[silent], 2).limit, Limit::NotDetermined);
}

#[test]
fn an_apache_pool_whose_status_waited_is_full_and_says_it_was_inferred() {
    let r = result(Pacing::Closed, 1000, 1.0, 100, 0.2);
    let v = Verdict::judge(&closed(), &r);
    let waited = |queue| {
        let mut s = sample(&[("apache", 60.0)], 70.0);
        s.tiers[0].pool = Some(loadlab_lab::pools::PoolReading {
            busy: 5,
            max: 5,
            listen_queue: Some(queue),
            answered: true,
            waited: true,
        });
        s
    };
    let l = limited_by(&r, &v, &[waited(16), waited(15)], 2);
    assert_eq!(l.limit, Limit::WorkerPool("apache".into()), "{l:?}");
    assert_eq!(
        l.evidence,
        "5 of 5 workers busy in 2 of 2 samples (in 2, its status page waited over 300 ms behind \
         the load), listen queue up to 16"
    );
}

#[test]
fn a_starved_client_that_filled_a_queued_link_is_the_networks_limit() {
    let mut r = probed(6, &[14_000, 15_000, 16_000], 0.18);
    r.workers[0].cpu_wait = Duration::from_secs_f64(0.3);
    let v = Verdict::judge(&closed(), &r);
    assert!(v.has(Flag::ClientStarved) && v.has(Flag::NetworkBound), "{:?}", v.findings);
    let quiet = [sample(&[("nginx", 20.0)], 40.0)];
    assert_eq!(limited_by(&r, &v, &quiet, 2).limit, Limit::Network);
}

/// A step that Ctrl-C cut short (in its warm-up: nothing completed) is shown but not judged:
/// the knee is that of the steps that finished, never "the next step broke: throughput".
#[test]
fn an_interrupted_step_is_never_a_failed_step() {
    use crate::commands::sweep::{run_sweep, SweepPlan, SweepTarget};
    use crate::fake::FakeEngine;
    use loadlab_stats::knee::Criteria;
    let mut engine = FakeEngine::new(10_000.0);
    engine.stop_after = Some(3);
    engine.interrupt_in_measure = true;
    let plan = SweepPlan {
        rates: vec![500.0, 800.0, 1200.0, 1600.0],
        targets: vec![SweepTarget {
            config: closed(),
            addr: "127.0.0.1:9".parse().unwrap(),
            url: "http://127.0.0.1:9/".into(),
        }],
        calls: None,
        arrival: loadlab_engine::Arrival::Fixed,
        max_connections: 100,
        criteria: Criteria::default(),
        stop_after_knee: None,
        find_knee: true,
        slo: None,
    };
    let out = run_sweep(&plan, &mut engine, &mut |_| Ok(())).expect("the sweep runs");
    assert!(out.interrupted);
    assert_eq!(out.steps.len(), 3);
    let last = &out.steps[2];
    assert!(last.interrupted && last.offered_rps == 1200.0, "{last:?}");
    let k = &out.knees[0];
    assert_eq!((k.offered_rps, k.reason.as_str()), (Some(800.0), "none"), "{k:?}");
    assert_eq!((k.steps_judged, k.interrupted), (2, true));
    assert_eq!(k.next_offered_rps, None, "no step broke");
}

/// The remaining flags, each at its boundary (docs/trust.md states the rules).
#[test]
fn every_flag_fires_on_its_stated_rule_and_not_below_it() {
    let judge =
        |cfg: &loadlab_engine::BenchConfig, r: &loadlab_engine::BenchResult| Verdict::judge(cfg, r);
    // connections_short: closed loop, fewer open at once than asked, without failures.
    let mut r = result(Pacing::Closed, 1000, 1.0, 100, 0.2);
    r.peak_open = 9;
    assert!(judge(&closed(), &r).has(Flag::ConnectionsShort));
    r.peak_open = 10;
    assert!(!judge(&closed(), &r).has(Flag::ConnectionsShort));
    // A count below -c cannot open -c connections: 5 requests, 5 connections is not short.
    let mut five = closed();
    five.stop = loadlab_engine::Stop::Count(5);
    r.peak_open = 5;
    assert!(!judge(&five, &r).has(Flag::ConnectionsShort));

    // connections_exhausted: open loop, the peak reached --max-connections.
    let open =
        Pacing::Open { rate: 1000.0, arrival: loadlab_engine::Arrival::Fixed, max_connections: 10 };
    let mut r = result(open, 1000, 1.0, 100, 0.2);
    r.peak_open = 10;
    let v = judge(&closed(), &r);
    let f = v.findings.iter().find(|f| f.flag == Flag::ConnectionsExhausted).expect("exhausted");
    assert_eq!(f.evidence, "all 10 allowed connections busy");
    r.peak_open = 9;
    assert!(!judge(&closed(), &r).has(Flag::ConnectionsExhausted));

    // fd_limit_low: the connections and 16 more descriptors do not fit the open-file limit.
    let mut r = result(Pacing::Closed, 1000, 1.0, 100, 0.2);
    r.fd_limit = 25;
    assert!(judge(&closed(), &r).has(Flag::FdLimitLow), "10 + 16 = 26 does not fit 25");
    r.fd_limit = 26;
    assert!(!judge(&closed(), &r).has(Flag::FdLimitLow));

    // errors: one failure is enough, and says which class.
    let mut r = result(Pacing::Closed, 1000, 1.0, 100, 0.2);
    assert!(!judge(&closed(), &r).has(Flag::Errors));
    r.tally.failed = 1;
    r.tally.errors.add(loadlab_engine::ErrorClass::ClientTimeout, None);
    let v = judge(&closed(), &r);
    let f = v.findings.iter().find(|f| f.flag == Flag::Errors).expect("errors");
    assert_eq!(f.evidence, "client_timeout 1 of 1001");

    // nothing_completed, and interrupted.
    let mut r = result(Pacing::Closed, 0, 1.0, 100, 0.2);
    r.tally.failed = 3;
    assert!(judge(&closed(), &r).has(Flag::NothingCompleted));
    let mut r = result(Pacing::Closed, 10, 1.0, 100, 0.2);
    assert!(!judge(&closed(), &r).has(Flag::Interrupted));
    r.interrupted = true;
    let v = judge(&closed(), &r);
    assert!(v.has(Flag::Interrupted) && v.trusted(), "interrupted is no one's limit: {v:?}");
}

#[test]
fn a_closed_loop_paced_by_the_round_trip_is_network_bound_with_the_arithmetic() {
    // 8 connections across a 30 ms round trip: 266 req/s, each request 30.1 ms.
    let mut cfg = closed();
    cfg.connections = 8;
    let mut r = probed(30_000, &[30_200, 30_100, 30_300], 0.01);
    r.tally = result(Pacing::Closed, 266, 1.0, 30_100, 0.01).tally;
    let v = Verdict::judge(&cfg, &r);
    let f = v.findings.iter().find(|f| f.flag == Flag::NetworkBound).expect("network-bound");
    assert_eq!(f.evidence, "8 conn / 30.0 ms RTT = at most 267 req/s; 266 achieved");
    assert!(
        f.warning.contains("one round trip of 30.0 ms of its 30.1 ms median, so 8 connections"),
        "{}",
        f.warning
    );
    assert!(!v.trusted());
    // Its control, the same loop without the delay: 30 µs of a 200 µs median.
    let mut control = probed(30, &[35, 40, 38], 0.3);
    control.tally = result(Pacing::Closed, 40_000, 1.0, 200, 0.3).tally;
    assert!(!Verdict::judge(&cfg, &control).has(Flag::NetworkBound));
    // A server that takes as long as the path: the round trip is half the median, the bound.
    let mut slow = r.clone();
    slow.tally = result(Pacing::Closed, 133, 1.0, 60_000, 0.01).tally;
    assert!(Verdict::judge(&cfg, &slow).has(Flag::NetworkBound));
    slow.tally = result(Pacing::Closed, 120, 1.0, 62_000, 0.01).tally;
    assert!(!Verdict::judge(&cfg, &slow).has(Flag::NetworkBound), "the server's time dominates");
    // A handshake per request: two round trips.
    cfg.keepalive = false;
    r.tally = result(Pacing::Closed, 133, 1.0, 60_200, 0.01).tally;
    let v = Verdict::judge(&cfg, &r);
    let f = v.findings.iter().find(|f| f.flag == Flag::NetworkBound).expect("two round trips");
    assert_eq!(f.evidence, "8 conn / 30.0 ms RTT x 2 = at most 133 req/s; 133 achieved");
    // An open loop's rate is its schedule's, not the round trip's.
    let mut open = closed();
    open.pacing =
        Pacing::Open { rate: 133.0, arrival: loadlab_engine::Arrival::Fixed, max_connections: 8 };
    assert!(!Verdict::judge(&open, &r).findings.iter().any(|f| f.evidence.contains("conn /")));
}

/// A step whose answer failed its check still counts as a completed request, so the verdict
/// says it beside the requests' figures, not only the step table.
#[test]
fn checks_that_failed_on_completed_requests_are_a_flag_with_their_steps() {
    use loadlab_engine::visits::{SessionTally, StepTally};
    let mut r = result(Pacing::Closed, 1000, 1.0, 100, 0.3);
    assert!(!Verdict::judge(&closed(), &r).has(Flag::ChecksFailed));
    let mut sessions = SessionTally::default();
    let mut failing = StepTally::default();
    failing.failed.insert("body".into(), 3);
    // A request's own failure is the errors rule's, not a check.
    failing.failed.insert("connreset".into(), 2);
    sessions.steps = vec![StepTally::default(), failing];
    r.tally.sessions = Some(Box::new(sessions.clone()));
    let v = Verdict::judge(&closed(), &r);
    let f = v.findings.iter().find(|f| f.flag == Flag::ChecksFailed).expect("flagged");
    assert_eq!(f.evidence, "3 checks failed (step 2: body 3)");
    assert!(f.warning.contains("count as completed requests"), "{}", f.warning);
    assert!(v.warnings().iter().any(|w| w.starts_with("3 checks failed")), "{:?}", v.warnings());
    sessions.steps[1].failed.remove("body");
    r.tally.sessions = Some(Box::new(sessions));
    assert!(!Verdict::judge(&closed(), &r).has(Flag::ChecksFailed));
}

/// In the open loop a visitor's number is its place among the visits in flight, so past the
/// users a lab made for a login visit visitors share one: a flag says so.
#[test]
fn visitor_numbers_past_the_labs_users_are_a_flag() {
    use loadlab_engine::visits::{SessionTally, VisitFile};
    let mut cfg = closed();
    let text = "[[step]]\npath = \"/u/{visitor}\"\n";
    let mut visits = VisitFile::parse(text, "login", &cfg, None, Default::default()).unwrap();
    visits.plan.users = Some(4);
    visits.apply(&mut cfg, Some(50.0), loadlab_engine::Arrival::Fixed);
    let mut r = result(Pacing::Closed, 1000, 1.0, 100, 0.0);
    let judged = |r: &loadlab_engine::BenchResult, cfg: &loadlab_engine::BenchConfig| {
        let v = Verdict::judge(cfg, r);
        v.findings.into_iter().find(|f| f.flag == Flag::VisitorsPastUsers)
    };
    for (top, flagged) in [(3, false), (4, false), (7, true)] {
        let sessions = SessionTally { top_visitor: top, ..Default::default() };
        r.tally.sessions = Some(Box::new(sessions));
        assert_eq!(judged(&r, &cfg).is_some(), flagged, "top visitor {top}");
    }
    let f = judged(&r, &cfg).unwrap();
    assert_eq!(f.evidence, "visitor numbers up to 7, 4 users");
    assert!(f.warning.contains("past the 4 users the lab made"), "{}", f.warning);
    // A visit without the lab's users has no such bound.
    let mut plain = cfg.clone();
    let mut plan = (**plain.visits.as_ref().unwrap()).clone();
    plan.users = None;
    plain.visits = Some(std::sync::Arc::new(plan));
    assert!(judged(&r, &plain).is_none());
}

#[test]
fn a_second_in_progress_raises_the_flags_its_evidence_shows() {
    use crate::commands::bench::following::Second;
    let calm =
        Second { completed: 100, cpu_us: 400_000, cpu_wait_us: 10_000, ..Default::default() };
    assert!(crate::judge::trust::raised_in(&calm, 1).is_empty());
    let errors = vec![(loadlab_engine::ErrorClass::FdUnavail, 3)];
    let short = Second { failed: 3, errors, ..calm.clone() };
    assert_eq!(crate::judge::trust::raised_in(&short, 1), [Flag::Errors, Flag::FdExhausted]);
    // One worker's full second of CPU is saturation; of two workers' seconds it is half.
    let busy = Second { cpu_us: 950_000, ..calm.clone() };
    assert_eq!(crate::judge::trust::raised_in(&busy, 1), [Flag::ClientSaturated]);
    assert!(crate::judge::trust::raised_in(&busy, 2).is_empty());
    let starved = Second { cpu_us: 300_000, cpu_wait_us: 400_000, ..calm };
    assert_eq!(crate::judge::trust::raised_in(&starved, 1), [Flag::ClientStarved]);
}
