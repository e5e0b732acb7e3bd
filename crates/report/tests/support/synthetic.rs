//! A synthetic but realistic run of 99 cells, written to a real store file: five stacks, a
//! static-file concurrency ladder, a WordPress front page with 7 repetitions, an open-loop rate
//! sweep past the knee, httperf sessions, resource samples per tier, trust flags and configs.
//!
//! Numbers follow simple queueing shapes (throughput saturating with concurrency, latency by
//! Little's law, a log-normal latency distribution) with deterministic noise, so every test
//! sees the same report.

use std::collections::BTreeMap;
use std::path::Path;
use std::time::{Duration, SystemTime, UNIX_EPOCH};

use loadlab_stats::{Recorder, Series};
use loadlab_store::{
    metric, CellRecord, ConfigRecord, Counted, Environment, Flag, Histograms, LoadModel, LoadSpec,
    ProfileRecord, RunId, RunInfo, RunProfiles, RunStatus, Sample, Store, TrustFlag,
};
use serde_json::json;

/// Deterministic noise: a 64-bit LCG (Knuth's MMIX constants).
pub struct Noise(u64);

impl Noise {
    pub fn new(seed: u64) -> Noise {
        Noise(seed.wrapping_mul(0x9e37_79b9_7f4a_7c15) | 1)
    }

    /// Uniform in [0, 1).
    pub fn uniform(&mut self) -> f64 {
        self.0 =
            self.0.wrapping_mul(6_364_136_223_846_793_005).wrapping_add(1_442_695_040_888_963_407);
        (self.0 >> 11) as f64 / (1u64 << 53) as f64
    }

    /// Standard normal (Box-Muller).
    pub fn normal(&mut self) -> f64 {
        let u = self.uniform().max(1e-12);
        let v = self.uniform();
        (-2.0 * u.ln()).sqrt() * (std::f64::consts::TAU * v).cos()
    }

    /// `x` times a factor around 1 with relative spread `sd`.
    pub fn jitter(&mut self, x: f64, sd: f64) -> f64 {
        x * (1.0 + sd * self.normal())
    }
}

/// What one synthetic cell measured, before it is turned into a record.
struct Shape {
    rps: f64,
    /// Median latency, µs; p99 is about 3x that (log-normal with σ = ln 3 / 2.326).
    p50_us: f64,
    error_share: f64,
    /// CPU cores each tier burns at this rate, and its resident memory in MiB.
    tiers: Vec<(&'static str, f64, f64)>,
}

fn record(
    ordinal: u32,
    stack: &str,
    workload: &str,
    load: LoadSpec,
    repetition: u32,
    shape: Shape,
    noise: &mut Noise,
) -> CellRecord {
    let duration = 10.0;
    let sigma = 3f64.ln() / 2.326;
    let mut latency = Recorder::new();
    for _ in 0..4_000 {
        latency.record((shape.p50_us * (sigma * noise.normal()).exp()).max(1.0) as u64);
    }
    let completed = (shape.rps * duration).round();
    let failed = (completed * shape.error_share).round();
    let mut series = Series::with_capacity(10);
    for s in 0..10 {
        let b = series.at(s);
        b.completed = noise.jitter(shape.rps, 0.03).max(0.0) as u64;
        b.failed = (failed / duration) as u64;
        b.bytes = b.completed * 20_700;
    }
    let started_at = at(1_000 + u64::from(ordinal) * 12_000);
    // The machine is busy with every tier and with the load generator, on 2 CPUs.
    let busy: f64 = shape.tiers.iter().map(|t| t.1).sum::<f64>() / 2.0 + 0.15;
    let samples = shape
        .tiers
        .iter()
        .flat_map(|&(tier, cores, mib)| {
            let mut cpu = 0.0;
            let mut n = Noise::new(u64::from(ordinal) * 31 + tier.len() as u64);
            (0..=10).map(move |s| {
                if s > 0 {
                    cpu += n.jitter(cores, 0.08).max(0.0);
                }
                Sample {
                    tier: tier.to_owned(),
                    t_ms: s * 1_000,
                    cpu_user_s: cpu * 0.7,
                    cpu_sys_s: cpu * 0.3,
                    rss_bytes: (n.jitter(mib, 0.01) * 1_048_576.0) as u64,
                    processes: 4,
                    loadavg: 1.2,
                    machine_cpu: busy.min(0.99),
                }
            })
        })
        .collect();
    let mut metrics = BTreeMap::from([
        (metric::RPS.to_owned(), shape.rps),
        (metric::P50_US.to_owned(), latency.percentile(50.0) as f64),
        (metric::P90_US.to_owned(), latency.percentile(90.0) as f64),
        (metric::P99_US.to_owned(), latency.percentile(99.0) as f64),
        (metric::MEAN_US.to_owned(), latency.mean()),
        (metric::COMPLETED.to_owned(), completed),
        (metric::FAILED.to_owned(), failed),
        ("errors.connreset".to_owned(), failed),
        (metric::BYTES.to_owned(), completed * 20_700.0),
        (metric::CPU_US_PER_REQUEST.to_owned(), noise.jitter(38.0, 0.05)),
    ]);
    if let Some(rate) = load.rate {
        let offered = rate * load.calls_per_connection.unwrap_or(1) as f64;
        metrics.insert(metric::OFFERED_RPS.to_owned(), offered);
        metrics.insert(metric::ACHIEVED_RPS.to_owned(), shape.rps);
    }
    CellRecord {
        ordinal,
        stack: stack.to_owned(),
        knobs: BTreeMap::from([("workers".to_owned(), json!(4))]),
        workload: workload.to_owned(),
        load,
        repetition,
        started_at,
        duration_s: duration,
        metrics,
        histograms: Histograms { latency: Some(latency), ..Histograms::default() },
        series,
        seconds: Vec::new(),
        steps: Vec::new(),
        samples,
        flags: Vec::new(),
        counted: Some(Counted::Requests),
        limited_by: None,
        slo: None,
    }
}

fn at(offset_ms: u64) -> SystemTime {
    UNIX_EPOCH + Duration::from_millis(1_750_000_000_000 + offset_ms)
}

fn closed(connections: u64) -> LoadSpec {
    let mut l = LoadSpec::new(LoadModel::Closed);
    l.connections = Some(connections);
    l.duration_s = Some(10.0);
    l.keepalive = true;
    l
}

/// The 99 cells, in the interleaved order a suite runs them (A B A B, never all of A first).
pub fn cells() -> Vec<CellRecord> {
    let mut noise = Noise::new(42);
    let mut out: Vec<CellRecord> = Vec::new();
    let mut push =
        |stack: &str, workload: &str, load: LoadSpec, rep: u32, shape: Shape, noise: &mut Noise| {
            let ordinal = out.len() as u32;
            out.push(record(ordinal, stack, workload, load, rep, shape, noise));
        };

    // Static 20 KB file, closed loop: throughput saturates with concurrency (nginx higher).
    for c in [1u64, 10, 50, 100, 200] {
        for rep in 0..3 {
            for (stack, cap, half) in [("nginx", 24_000.0, 4.0), ("apache-event", 15_000.0, 6.0)] {
                let rps = noise.jitter(cap * c as f64 / (c as f64 + half), 0.02);
                let tiers = vec![(
                    if stack == "nginx" { "nginx" } else { "apache2" },
                    rps / 16_000.0,
                    12.0 + c as f64 * 0.05,
                )];
                let shape = Shape { rps, p50_us: 0.85e6 * c as f64 / rps, error_share: 0.0, tiers };
                push(stack, "static-20k", closed(c), rep, shape, &mut noise);
            }
        }
    }
    // WordPress front page, 7 repetitions so the intervals are real 95% CIs.
    for rep in 0..7 {
        for (stack, rps, tiers) in [
            ("apache-mod_php", 96.0, vec![("apache2", 1.85, 310.0), ("mariadb", 0.12, 180.0)]),
            (
                "nginx-php-fpm",
                112.0,
                vec![("nginx", 0.05, 14.0), ("php-fpm", 1.8, 260.0), ("mariadb", 0.13, 180.0)],
            ),
            (
                "varnish",
                8_900.0,
                vec![("varnish", 0.9, 120.0), ("nginx", 0.0, 14.0), ("php-fpm", 0.01, 90.0)],
            ),
        ] {
            let rps = noise.jitter(rps, 0.025);
            let shape = Shape { rps, p50_us: 0.9e6 * 20.0 / rps, error_share: 0.0, tiers };
            push(stack, "wordpress-front", closed(20), rep, shape, &mut noise);
        }
    }
    // Open-loop sweep of a PHP page: achieved follows offered up to capacity, then latency
    // (counted from when each request was due) climbs and errors appear.
    for rate in [200.0, 400.0, 600.0, 800.0, 1_000.0, 1_200.0] {
        for rep in 0..3 {
            for (stack, cap) in [("apache-mod_php", 700.0), ("nginx-php-fpm", 1_050.0)] {
                let rho: f64 = rate / cap;
                let rps = noise.jitter(rate.min(cap * 0.98), 0.005);
                let p50 = if rho < 0.95 { 2_500.0 / (1.0 - rho * 0.9) } else { 400_000.0 * rho };
                let tiers = vec![("php", rps / 650.0, 200.0 + rps * 0.05)];
                let error_share = if rho > 1.0 { 0.02 * (rho - 1.0) * 10.0 } else { 0.0 };
                let mut load = LoadSpec::new(LoadModel::Open);
                load.rate = Some(rate);
                load.duration_s = Some(10.0);
                load.extra.insert("arrival".into(), json!("poisson"));
                let shape = Shape { rps, p50_us: noise.jitter(p50, 0.03), error_share, tiers };
                push(stack, "php-hello", load, rep, shape, &mut noise);
            }
        }
    }
    // httperf sessions, 10 calls per connection.
    for rate in [50.0, 100.0, 150.0] {
        for rep in 0..2 {
            for (stack, cap) in [("apache-mod_php", 1_100.0), ("nginx-php-fpm", 1_600.0)] {
                let offered: f64 = rate * 10.0;
                let rps = noise.jitter(offered.min(cap), 0.01);
                let mut load = LoadSpec::new(LoadModel::Session);
                load.rate = Some(rate);
                load.calls_per_connection = Some(10);
                load.requests = Some((rate * 10.0) as u64);
                let p50 = if offered < cap { 3_000.0 } else { 250_000.0 };
                let shape = Shape {
                    rps,
                    p50_us: p50,
                    error_share: 0.0,
                    tiers: vec![("php", rps / 500.0, 220.0)],
                };
                push(stack, "robots-sessions", load, rep, shape, &mut noise);
            }
        }
    }

    let flag = |c: &mut CellRecord, flag: Flag, detail: &str| {
        c.flags.push(TrustFlag { flag, detail: detail.to_owned() });
    };
    // apache at 200 connections, third repetition: the client ran out of CPU.
    let i = out
        .iter()
        .position(|c| {
            c.stack == "apache-event" && c.load.connections == Some(200) && c.repetition == 2
        })
        .unwrap();
    flag(&mut out[i], Flag::ClientSaturated, "client CPU 97%");
    for c in out.iter_mut().filter(|c| c.stack == "apache-mod_php" && c.load.rate == Some(1_200.0))
    {
        let failed = c.metrics[metric::FAILED];
        flag(c, Flag::Errors, &format!("{failed} connreset"));
        flag(c, Flag::ScheduleMissed, "fell 1.9 s behind the schedule");
    }
    out
}

pub fn configs() -> Vec<ConfigRecord> {
    let config = |stack: &str, tier: &str, kind: &str, name: &str, content: &str| ConfigRecord {
        stack: stack.into(),
        tier: tier.into(),
        kind: kind.into(),
        name: name.into(),
        content: content.into(),
    };
    vec![
        config("nginx", "nginx", "version", "", "nginx version: nginx/1.22.1"),
        config(
            "nginx",
            "nginx",
            "config",
            "nginx.conf",
            "worker_processes 2;\nevents { worker_connections 4096; }\nhttp {\n    sendfile on;\n    \
             keepalive_timeout 65;\n    server {\n        listen 127.0.0.1:40123;\n        root /tmp/loadlab/run/www;\n    }\n}\n",
        ),
        config("apache-event", "apache2", "modules", "", "core_module (static)\nmpm_event_module (shared)"),
        config(
            "nginx-php-fpm",
            "php-fpm",
            "config",
            "www.conf",
            "[www]\npm = static\npm.max_children = 4\nlisten = /tmp/loadlab/run/php.sock\n",
        ),
    ]
}

fn environment() -> Environment {
    Environment {
        hostname: "bench-02".into(),
        kernel: "6.1.0-31-amd64".into(),
        cpu_model: "Intel(R) Xeon(R) Gold 6248R CPU @ 3.00GHz".into(),
        cpu_count: 2,
        loadlab_version: "0.1.0".into(),
        packages: BTreeMap::from([
            ("apache2".into(), "2.4.62-1~deb12u2".into()),
            ("mariadb-server".into(), "1:10.11.6-0+deb12u1".into()),
            ("nginx".into(), "1.22.1-9+deb12u1".into()),
            ("php8.2-fpm".into(), "8.2.28-1~deb12u1".into()),
            ("varnish".into(), "7.1.1-1.1".into()),
        ]),
    }
}

/// Writes the synthetic run of `cells` into a store file at `path` and returns its id.
pub fn store_run(path: &Path, cells: Vec<CellRecord>, profiles: &RunProfiles) -> RunId {
    let mut store = Store::open(path).expect("open the store");
    let info = RunInfo { suite: "classic".into(), started_at: at(0), environment: environment() };
    let run = store.begin_run(&info).expect("begin the run");
    for c in cells {
        let tiers = profiles.get(&c.ordinal).map_or(&[][..], |p| &p[..]);
        store.record_profiled_cell(run, &c, tiers).expect("record a cell");
    }
    for c in configs() {
        store.record_config(run, &c).expect("record a config");
    }
    store.finish_run(run, RunStatus::Finished, at(1_250_000)).expect("finish the run");
    run
}

/// The synthetic run with its WordPress cells of the first repetition profiled: Apache's
/// apache2, nginx-php-fpm's nginx and php-fpm and varnish's varnish as dense as
/// [`ProfileRecord::dense_for_test`] makes them, Apache's mariadb with too few samples to draw.
pub fn profiled_wordpress() -> (Vec<CellRecord>, RunProfiles) {
    let mut cells = cells();
    let mut profiles = RunProfiles::new();
    for c in cells.iter_mut().filter(|c| c.workload == "wordpress-front" && c.repetition == 0) {
        c.knobs.insert("profile".into(), json!("perf"));
        let tiers = match c.stack.as_str() {
            "apache-mod_php" => {
                let few = ProfileRecord::for_test("mariadb", "mariadb;do_command 120\n");
                vec![ProfileRecord::dense_for_test("apache2", 1_000, 1), few]
            }
            "nginx-php-fpm" => vec![
                ProfileRecord::dense_for_test("nginx", 1_000, 2),
                ProfileRecord::dense_for_test("php-fpm", 1_000, 3),
            ],
            _ => vec![ProfileRecord::dense_for_test("varnish", 500, 4)],
        };
        profiles.insert(c.ordinal, tiers);
    }
    (cells, profiles)
}
