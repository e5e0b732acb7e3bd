//! Fakes for the executor's and the sweep's traits, and results built by hand, so the runner's
//! decisions are tested in process, without a server, a stack or the clock.

use std::cell::RefCell;
use std::net::SocketAddr;
use std::time::Duration;

use loadlab_engine::sys::CpuTime;
use loadlab_engine::{
    BenchConfig, BenchResult, EngineError, Link, Pacing, PathRtt, Tally, WorkerSummary,
};

use crate::commands::run::executor::{Instance, Measure, NoSamples, Sampling, StackError, Stacks};
use loadlab_lab::named::Processes;
use loadlab_lab::procfs::ProcId;

/// A result of `completed` requests over `secs` seconds with latency `latency_us`, from one
/// worker that used `cpu_share` of its time, on loopback.
pub fn result(
    pacing: Pacing,
    completed: u64,
    secs: f64,
    latency_us: u64,
    cpu_share: f64,
) -> BenchResult {
    let duration = Duration::from_secs_f64(secs);
    let mut tally =
        Tally { completed, sent: completed, bytes_total: completed * 200, ..Tally::default() };
    tally.status[200] = completed;
    for i in 0..completed {
        tally.timings.total.record(latency_us);
        tally.timings.corrected.record(latency_us);
        tally.timings.waiting.record(latency_us);
        if pacing != Pacing::Closed {
            tally.timings.late.record(10);
        }
        tally.series.at((i as f64 / completed as f64 * secs) as usize).completed += 1;
    }
    let cpu = CpuTime { user: duration.mul_f64(cpu_share), sys: Duration::ZERO };
    BenchResult {
        tally,
        bytes_sent: completed * 40,
        duration,
        interrupted: false,
        workers: vec![WorkerSummary {
            cpu,
            cpu_wait: Duration::ZERO,
            involuntary_switches: 0,
            wall: duration,
        }],
        server: Some("fake".into()),
        tls: None,
        cpus_available: 2,
        peak_open: 10,
        pool: match pacing {
            Pacing::Closed => 10,
            Pacing::Open { max_connections, .. } | Pacing::Sessions { max_connections, .. } => {
                max_connections
            }
        },
        fd_limit: 1 << 20,
        pacing,
        protocol: loadlab_engine::Protocol::Http1,
        link: Link { interface: Some("lo".into()), speed_mbps: None },
        path: PathRtt::default(),
        cgroup_throttle: None,
        hdr_log: None,
        start_late: Duration::ZERO,
        sends: pacing.rate().map(|_| loadlab_engine::Sends::Exact),
    }
}

/// A server that completes up to `capacity` requests per second: below it an open-loop step
/// achieves what was offered, above it `capacity`, with latency rising.
pub struct FakeEngine {
    pub capacity: f64,
    /// The client's CPU share at each offered rate: rate / this (1.0 = saturated).
    pub client_rate_limit: f64,
    /// Configurations measured, in order.
    pub measured: RefCell<Vec<BenchConfig>>,
    /// Stop (as Ctrl-C would) after this many measurements.
    pub stop_after: Option<usize>,
    /// The interrupted measurement returns an interrupted result.
    pub interrupt_in_measure: bool,
    /// Requests for this path are answered 200 with a body that fails their check.
    pub wrong_body_at: Option<&'static str>,
}

impl FakeEngine {
    pub fn new(capacity: f64) -> FakeEngine {
        FakeEngine {
            capacity,
            client_rate_limit: f64::INFINITY,
            measured: RefCell::new(Vec::new()),
            stop_after: None,
            interrupt_in_measure: false,
            wrong_body_at: None,
        }
    }
}

impl Measure for FakeEngine {
    fn reach(&mut self, _config: &mut BenchConfig) -> Result<SocketAddr, EngineError> {
        Ok("127.0.0.1:9".parse().expect("an address"))
    }

    fn measure(
        &mut self,
        config: &BenchConfig,
        _addr: SocketAddr,
        _label: &str,
    ) -> Result<BenchResult, EngineError> {
        self.measured.borrow_mut().push(config.clone());
        let secs = 2.0;
        let offered = config.pacing.offered_rps().unwrap_or(self.capacity);
        let achieved = offered.min(self.capacity);
        let latency = if offered > self.capacity { 200_000 } else { 1_000 };
        let cpu = (offered / self.client_rate_limit).min(1.0);
        let mut r = result(config.pacing, (achieved * secs) as u64, secs, latency, cpu);
        if offered > self.capacity {
            // The schedule is kept: the requests were sent, the server queued them.
            r.tally.unfinished = ((offered - achieved) * secs) as u64;
        }
        if let Some(plan) = &config.visits {
            // Visits that all passed: as many as the requests allow, each step of each.
            let per = plan.requests().max(1) as u64;
            let visits = r.tally.completed / per;
            let mut sessions = loadlab_engine::visits::SessionTally {
                started: visits,
                completed: visits,
                ..Default::default()
            };
            sessions.steps.resize_with(plan.steps.len(), Default::default);
            for s in &mut sessions.steps {
                (s.started, s.completed) = (visits, visits);
            }
            r.tally.sessions = Some(Box::new(sessions));
        }
        if self.wrong_body_at == Some(config.target.path.as_str()) {
            let n = r.tally.completed;
            r.tally.completed = 0;
            r.tally.failed = n;
            r.tally.bytes_body = 13;
            r.tally.errors.add(loadlab_engine::ErrorClass::Validation, None);
            let body = b"hello, world!".to_vec();
            r.tally.answer = Some(Box::new(loadlab_engine::KeptAnswer { status: 200, body }));
        }
        let stopping = self.stop_after.is_some_and(|n| self.measured.borrow().len() >= n);
        if stopping && self.interrupt_in_measure {
            // Stopped in its warm-up, as Ctrl-C early in a step does: nothing measured.
            r = result(config.pacing, 0, 0.01, latency, cpu);
            r.interrupted = true;
        }
        Ok(r)
    }

    fn stopped(&self) -> bool {
        self.stop_after.is_some_and(|n| self.measured.borrow().len() >= n)
    }
}

/// A lab whose stacks come up at once; it remembers what it was asked.
#[derive(Default)]
pub struct FakeLab {
    pub log: RefCell<Vec<String>>,
    /// `up` of this stack fails to verify.
    pub broken: Option<&'static str>,
    /// The processes named for an external target are not running.
    pub gone: bool,
    /// What a lab instance's sampler counted of its tiers' CPU over each cell; none without.
    pub tier_cpu: Option<loadlab_lab::sampler::CpuUse>,
    /// Instances started on a lab host (`host = ...`), with what that host is said to be:
    /// 64 CPUs, one interface.
    pub remote: RefCell<std::collections::BTreeMap<String, loadlab_store::HostFacts>>,
    /// Where its instances answer, when a test serves them; else 127.0.0.1:9, where nothing
    /// does.
    pub url: Option<String>,
}

/// A sampler that took no 1 Hz sample (a cell shorter than the interval) but counted its
/// tiers' CPU from their counters at the cell's start and end.
struct Counted(loadlab_lab::sampler::CpuUse);

impl Sampling for Counted {
    fn stop(self: Box<Self>) -> loadlab_lab::sampler::Sampled {
        loadlab_lab::sampler::Sampled { samples: Vec::new(), cpu: Some(self.0), profiles: None }
    }
}

/// A sampler that read one interval of the tier `external` at half a CPU.
struct ExternalSamples;

impl Sampling for ExternalSamples {
    fn stop(self: Box<Self>) -> loadlab_lab::sampler::Sampled {
        let tier = loadlab_lab::sampler::TierSample {
            tier: crate::commands::run::executor::EXTERNAL_TIER.into(),
            cpu_user_pct: 40.0,
            cpu_sys_pct: 10.0,
            rss_bytes: 1 << 20,
            processes: 2,
            pool: None,
        };
        let samples = vec![loadlab_lab::Sample {
            t_ms: 1000,
            unix_ms: 0,
            interval_ms: 1000,
            tiers: vec![tier],
            machine: None,
        }];
        loadlab_lab::sampler::Sampled { samples, cpu: None, profiles: None }
    }
}

impl Stacks for FakeLab {
    fn up(
        &self,
        lab: &loadlab_suite::LabStack,
        _cancel: &dyn Fn() -> bool,
    ) -> Result<Instance, StackError> {
        let (stack, knobs) = (lab.stack, &lab.knobs);
        if self.broken == Some(stack.name) {
            return Err(loadlab_lab::Error::Verify {
                workload: "hello.txt".into(),
                reason: "a fake failure".into(),
            }
            .into());
        }
        let n = self.log.borrow().iter().filter(|l| l.starts_with("up")).count();
        let id = format!("{}-{n}", stack.name);
        self.log.borrow_mut().push(format!("up {id}"));
        if let Some(host) = &lab.host {
            let facts = loadlab_store::HostFacts {
                host: host.clone(),
                hostname: "lab2".into(),
                cpu_count: 64,
                server_nic: Some("eth0".into()),
                server_nic_mbps: Some(1000),
                ..Default::default()
            };
            self.remote.borrow_mut().insert(id.clone(), facts);
        }
        // As the lab answers: https:// and the instance's CA with TLS on.
        let tls = knobs.tls.is_on();
        Ok(Instance {
            url: self.url.clone().unwrap_or_else(|| {
                format!("{}://127.0.0.1:9/", if tls { "https" } else { "http" })
            }),
            cacert: tls.then(|| format!("/fake/{id}/tls/ca.pem").into()),
            id,
            elapsed: Duration::from_millis(5),
            checks: 3,
            // A kernel without netem, as this machine's: delay by the stage.
            net_delay: knobs
                .net
                .as_deref()
                .and_then(|n| n.parse::<loadlab_lab::net::Profile>().ok())
                .and_then(|p| p.delay_path(|| false).ok().flatten()),
        })
    }

    fn host_facts(&self, id: &str) -> Option<loadlab_store::HostFacts> {
        self.remote.borrow().get(id).cloned()
    }

    fn down(&self, id: &str) -> Result<(), StackError> {
        self.log.borrow_mut().push(format!("down {id}"));
        Ok(())
    }

    fn capture(&self, _id: &str) -> Result<Vec<loadlab_lab::Captured>, StackError> {
        Ok(Vec::new())
    }

    fn sample(&self, _id: &str, _profile: bool) -> Result<Box<dyn Sampling>, StackError> {
        Ok(match &self.tier_cpu {
            Some(cpu) => Box::new(Counted(cpu.clone())),
            None => Box::new(NoSamples),
        })
    }

    fn resolve(&self, processes: &Processes) -> Result<Vec<ProcId>, StackError> {
        self.log.borrow_mut().push(format!("resolve {}", processes.describe()));
        if self.gone {
            return Err(loadlab_lab::Error::Processes("pid 4242 is not running".into()).into());
        }
        Ok(vec![ProcId { pid: 4242, start: 1 }])
    }

    fn sample_processes(&self, roots: &[ProcId]) -> Result<Box<dyn Sampling>, StackError> {
        self.log.borrow_mut().push(format!("sample {} processes", roots.len()));
        Ok(Box::new(ExternalSamples))
    }
}
