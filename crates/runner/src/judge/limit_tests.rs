//! Each branch of [`decide`], in its order, from hand-made verdicts and stack evidence: which
//! limit a figure gets is a function of the findings and what was measured of the stack.

use std::time::Duration;

use loadlab_engine::{BenchResult, Pacing};
use loadlab_lab::sampler::{CpuUse, TierCpuUse};

use super::*;
use crate::fake::result;
use crate::judge::trust::Finding;
use crate::tests::sample;

/// A verdict of exactly these findings.
fn verdict(flags: &[Flag]) -> Verdict {
    let findings = flags
        .iter()
        .map(|f| Finding {
            flag: f.clone(),
            evidence: format!("{f} evidence"),
            warning: String::new(),
        })
        .collect();
    Verdict { findings, notes: Vec::new() }
}

/// A closed loop of 1 s whose client used 0.2 CPU.
fn closed() -> BenchResult {
    result(Pacing::Closed, 1000, 1.0, 100, 0.2)
}

/// What counters read 11 ms apart say: `tiers` (name, CPU ms) and the machine's busy share.
fn counted(tiers: &[(&str, u64)], machine_busy: f64) -> CpuUse {
    CpuUse {
        wall: Duration::from_millis(11),
        tiers: tiers
            .iter()
            .map(|(t, ms)| TierCpuUse { tier: (*t).into(), cpu: Duration::from_millis(*ms) })
            .collect(),
        machine_busy: Some(machine_busy),
    }
}

fn cpus() -> usize {
    std::thread::available_parallelism().map_or(1, |n| n.get())
}

#[test]
fn every_client_flag_is_the_clients_limit_before_anything_else() {
    let busy = counted(&[("nginx", 22)], 1.0);
    let stack = StackEvidence::counted(&busy, &[], 2);
    for flag in [Flag::ClientSaturated, Flag::FdExhausted] {
        let l = decide(&closed(), &verdict(&[Flag::NetworkBound, flag.clone()]), &stack);
        assert_eq!(l.limit, Limit::Client, "{flag}");
        assert_eq!(l.evidence, format!("{flag} evidence"));
    }
}

/// Every allowed connection busy is the server holding them, not the client's limit: the
/// decision goes on to the network, the tiers and the rest (the sweep's knee reads it so: a
/// server at capacity breaks "throughput", not "client_limited").
#[test]
fn every_allowed_connection_busy_is_not_the_clients_limit() {
    let busy = counted(&[("nginx", 22)], 1.0);
    let stack = StackEvidence::counted(&busy, &[], 2);
    let l = decide(&closed(), &verdict(&[Flag::ConnectionsExhausted]), &stack);
    assert_ne!(l.limit, Limit::Client, "{l:?}");
    let l = decide(&closed(), &verdict(&[Flag::ConnectionsExhausted, Flag::NetworkBound]), &stack);
    assert_eq!(l.limit, Limit::Network, "{l:?}");
}

/// The one rule for a starved client (docs/trust.md): its wait is the client's limit unless
/// the link set the pace or the stack's measured tiers and the client account for the busy
/// CPUs. With no tier measured (a bench, an external target not sampled) nothing accounts for
/// it: the client's, said so, however long it waited.
#[test]
fn a_starved_client_is_the_clients_limit_unless_the_link_or_the_stack_explains_the_wait() {
    let starved = verdict(&[Flag::ClientStarved]);
    for stack in [StackEvidence::none(), StackEvidence::sampled(&[], 2)] {
        let l = decide(&closed(), &starved, &stack);
        assert_eq!(l.limit, Limit::Client);
        assert_eq!(
            l.evidence,
            "client_starved evidence; no tier of the stack was measured to account for the wait"
        );
    }
    assert_eq!(of_bench(&closed(), &starved).limit, Limit::Client);
    // The link carried what it could: the network's.
    let linked = verdict(&[Flag::ClientStarved, Flag::NetworkBound]);
    assert_eq!(of_bench(&closed(), &linked).limit, Limit::Network);
    // The tiers (all but the client's 0.2 CPU) and the client account for the busy CPUs: on to
    // the tiers, here nginx's CPU.
    let n = cpus();
    let own_ms = ((n as f64 - 0.2) * 11.0).round() as u64;
    let own = counted(&[("nginx", own_ms)], 1.0);
    let l = decide(&closed(), &starved, &StackEvidence::counted(&own, &[], n));
    assert_eq!(l.limit, Limit::TierCpu("nginx".into()), "{l:?}");
    // A CPU's worth of other work: the client's.
    let other_ms = ((n as f64 - 1.2) * 11.0).max(0.0).round() as u64;
    let other = counted(&[("nginx", other_ms)], 1.0);
    let l = decide(&closed(), &starved, &StackEvidence::counted(&other, &[], n));
    assert_eq!((l.limit, l.evidence.as_str()), (Limit::Client, "client_starved evidence"));
}

#[test]
fn the_network_comes_after_the_client_and_before_the_servers() {
    let busy = counted(&[("nginx", 22)], 1.0);
    let l =
        decide(&closed(), &verdict(&[Flag::NetworkBound]), &StackEvidence::counted(&busy, &[], 2));
    assert_eq!((l.limit, l.evidence.as_str()), (Limit::Network, "network_bound evidence"));
}

/// A cell of about 11 ms (`modern --quick`) spans at most one sample of whole clock ticks,
/// too few for a tier's CPU; the counters at the cell's start and end give it.
#[test]
fn an_11_ms_cell_has_its_tiers_cpu_from_their_counters() {
    let v = verdict(&[]);
    let cpu = counted(&[("nginx", 3), ("php-fpm", 21)], 0.9);
    let l = decide(&closed(), &v, &StackEvidence::counted(&cpu, &[], 2));
    assert_eq!(l.limit, Limit::TierCpu("php-fpm".into()), "{l:?}");
    assert_eq!(l.evidence, "php-fpm used 1.9 of its 2 CPUs");
    let db = counted(&[("nginx", 3), ("mariadb", 11)], 0.9);
    assert_eq!(decide(&closed(), &v, &StackEvidence::counted(&db, &[], 1)).limit, Limit::Database);
}

#[test]
fn then_a_full_pool_then_the_machine_then_the_offer_then_nothing() {
    let v = verdict(&[]);
    let quiet = counted(&[("php-fpm", 5)], 0.5);
    let mut full = sample(&[("php-fpm", 50.0)], 50.0);
    full.tiers[0].pool = Some(loadlab_lab::pools::PoolReading {
        busy: 5,
        max: 5,
        listen_queue: Some(3),
        answered: true,
        waited: false,
    });
    let samples = [full];
    let l = decide(&closed(), &v, &StackEvidence::counted(&quiet, &samples, 2));
    assert_eq!(l.limit, Limit::WorkerPool("php-fpm".into()));

    let machine = counted(&[("nginx", 12), ("php-fpm", 8)], 0.97);
    let l = decide(&closed(), &v, &StackEvidence::counted(&machine, &[], 2));
    assert_eq!(l.limit, Limit::MachineCpu);
    assert_eq!(
        l.evidence,
        "the machine's CPUs were 97% busy; CPUs used: nginx 1.1, php-fpm 0.73, the client 0.20"
    );

    let pacing = Pacing::Open {
        rate: 1000.0,
        arrival: loadlab_engine::Arrival::Fixed,
        max_connections: 100,
    };
    let open = result(pacing, 1000, 1.0, 100, 0.2);
    let l = decide(&open, &v, &StackEvidence::counted(&quiet, &[], 2));
    assert_eq!(l.limit, Limit::Offered);

    let l = decide(&closed(), &v, &StackEvidence::counted(&quiet, &[], 2));
    assert_eq!(l.limit, Limit::NotDetermined);
    assert_eq!(l.evidence, "no tier used 90% of its CPUs (php-fpm 0.45 CPUs)");
    let l = of_bench(&closed(), &v);
    assert_eq!(
        (l.limit, l.evidence.as_str()),
        (Limit::NotDetermined, "no tier of the stack was measured in this cell")
    );
}

/// Through the executor: a lab cell whose sampler took no sample but counted its tiers' CPU
/// is stored limited by the tier that used its CPUs.
#[test]
fn a_lab_cell_is_stored_with_the_limit_its_tiers_counters_show() {
    use crate::fake::{FakeEngine, FakeLab};
    let suite = loadlab_suite::parse(crate::tests::TWO_STACKS, "two.toml").expect("a suite");
    let plan = loadlab_suite::plan(&suite, false);
    // Each tier may use the CPUs the client may (no `cpus` knob); nginx used 95% of them.
    let n = loadlab_engine::sys::allowed_cpus().len().max(1) as u64;
    let lab = FakeLab {
        tier_cpu: Some(CpuUse {
            wall: Duration::from_millis(100),
            ..counted(&[("nginx", 95 * n)], 0.5)
        }),
        ..FakeLab::default()
    };
    let ran = crate::tests::run_on_fakes(&plan, &lab, &mut FakeEngine::new(5_000.0), 2);
    ran.outcome.as_ref().expect("the plan runs");
    let cells = ran.cells();
    let limit = cells[0].limited_by.as_ref().expect("a limit");
    assert_eq!(limit.limit, Limit::TierCpu("nginx".into()), "{limit:?}");
    assert!(cells[0].samples.is_empty(), "no 1 Hz sample, and still a tier's CPU");
}

/// A stack on another host than the client. Its machine's busy CPUs are the server
/// host's, shared by its tiers alone; and they explain no wait of the client's, which is the
/// client's host's own limit.
#[test]
fn a_stack_elsewhere_has_the_server_hosts_cpus_and_explains_no_wait_of_the_clients() {
    let machine = counted(&[("nginx", 12), ("php-fpm", 8)], 0.97);
    let mut there = StackEvidence::counted(&machine, &[], 2);
    there.elsewhere = true;
    let l = decide(&closed(), &verdict(&[]), &there);
    assert_eq!(l.limit, Limit::MachineCpu);
    assert_eq!(
        l.evidence,
        "the server host's CPUs were 97% busy; CPUs used: nginx 1.1, php-fpm 0.73"
    );
    // The same busy tiers on this machine account for a starved client's wait; elsewhere not.
    let n = cpus();
    let own_ms = ((n as f64 - 0.2) * 11.0).round() as u64;
    let own = counted(&[("nginx", own_ms)], 1.0);
    let starved = verdict(&[Flag::ClientStarved]);
    let here = StackEvidence::counted(&own, &[], n);
    assert_eq!(decide(&closed(), &starved, &here).limit, Limit::TierCpu("nginx".into()));
    let mut there = StackEvidence::counted(&own, &[], n);
    there.elsewhere = true;
    let l = decide(&closed(), &starved, &there);
    assert_eq!((l.limit, l.evidence.as_str()), (Limit::Client, "client_starved evidence"));
}
