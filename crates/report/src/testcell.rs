//! Hand-made cells for unit tests: only the fields a test names are set, the rest is empty.

use std::sync::atomic::{AtomicU32, Ordering};
use std::time::{Duration, UNIX_EPOCH};

use loadlab_store::{
    metric, CellRecord, Environment, Flag, LoadModel, LoadSpec, ProfileRecord, Run, RunId,
    RunStatus, TrustFlag,
};

static ORDINAL: AtomicU32 = AtomicU32::new(0);

/// A closed-loop cell of `stack` on `workload` at `connections`, measuring `rps` req/s.
pub fn cell(
    stack: &str,
    workload: &str,
    connections: u64,
    repetition: u32,
    rps: f64,
) -> CellRecord {
    let mut load = LoadSpec::new(LoadModel::Closed);
    load.connections = Some(connections);
    load.duration_s = Some(10.0);
    with_load(stack, workload, load, repetition, &[(metric::RPS, rps)])
}

/// An open-loop cell at `rate` req/s measuring `p99_us`.
pub fn open_cell(stack: &str, workload: &str, rate: f64, repetition: u32, p99: f64) -> CellRecord {
    let mut load = LoadSpec::new(LoadModel::Open);
    load.rate = Some(rate);
    with_load(stack, workload, load, repetition, &[(metric::RPS, rate), (metric::P99_US, p99)])
}

/// A cell with `load` and exactly `metrics`.
pub fn with_load(
    stack: &str,
    workload: &str,
    load: LoadSpec,
    repetition: u32,
    metrics: &[(&str, f64)],
) -> CellRecord {
    let ordinal = ORDINAL.fetch_add(1, Ordering::Relaxed);
    CellRecord {
        ordinal,
        repetition,
        started_at: UNIX_EPOCH + Duration::from_secs(1_750_000_000 + u64::from(ordinal) * 15),
        ..CellRecord::for_test(stack, workload, load).with_metrics(metrics)
    }
}

/// `cells` of `stack` with one repetition per value.
pub fn reps(stack: &str, workload: &str, connections: u64, rps: &[f64]) -> Vec<CellRecord> {
    rps.iter().enumerate().map(|(i, &v)| cell(stack, workload, connections, i as u32, v)).collect()
}

/// Views of a page on two stacks at each of `rates` views/s, `reps` repetitions each: varnish
/// completes every view offered (page load p99 40 ms), opcache 5 in 6 (p99 450 ms). The
/// requests' rate is 20 a view and their p99 9 ms, so a heading, table or chart that shows the
/// requests' figures instead of the views' is seen.
pub fn view_cells(reps: u32, rates: &[f64]) -> Vec<CellRecord> {
    let mut cells = Vec::new();
    for &rate in rates {
        for r in 0..reps {
            for (stack, sixths, load_p99) in
                [("varnish", 6.0, 40_000.0), ("opcache", 5.0, 450_000.0)]
            {
                let views = rate * sixths / 6.0;
                let mut c = open_cell(stack, "front page views", rate, r, 9_000.0);
                for (k, v) in [
                    (metric::RPS, 20.0 * views),
                    (metric::VIEWS_RPS, views),
                    (metric::VIEW_P50_US, load_p99 / 2.0),
                    (metric::VIEW_P99_US, load_p99),
                ] {
                    c.metrics.insert(k.into(), v);
                }
                cells.push(c);
            }
        }
    }
    cells
}

/// Visits of a search by a closed population of 2 visitors (1.5 visits/s, visit p99 2.9 s,
/// at 40 req/s), beside a plain workload (`hello.txt`, 900 req/s), `reps` repetitions each.
pub fn visit_cells(reps: u32) -> Vec<CellRecord> {
    let mut cells = Vec::new();
    for r in 0..reps {
        let mut c = cell("opcache", "search", 2, r, 40.0);
        c.metrics.insert(metric::VISITS_RPS.into(), 1.5);
        c.metrics.insert(metric::VISIT_P50_US.into(), 1_200_000.0);
        c.metrics.insert(metric::VISIT_P99_US.into(), 2_900_000.0);
        cells.push(c);
        cells.push(cell("opcache", "hello.txt", 2, r, 900.0));
    }
    cells
}

/// Raises `flag` on `c`.
pub fn flagged(mut c: CellRecord, flag: Flag, detail: &str) -> CellRecord {
    c.flags.push(TrustFlag { flag, detail: detail.to_owned() });
    c
}

/// A finished run of the `classic` suite on a 2-CPU machine, for the cells above.
pub fn run() -> Run {
    Run {
        id: RunId(7),
        suite: "classic".into(),
        started_at: UNIX_EPOCH + Duration::from_secs(1_750_000_000),
        finished_at: Some(UNIX_EPOCH + Duration::from_secs(1_750_000_300)),
        status: RunStatus::Finished,
        reason: None,
        environment: Environment {
            hostname: "lab1".into(),
            cpu_count: 2,
            loadlab_version: "0.1.0".into(),
            ..Environment::default()
        },
    }
}

/// mod_php: most of Apache's samples in PHP's executor and the kernel's page copy; FastCGI:
/// the same PHP in php-cgi, nginx's, and sockets between them.
pub const MODPHP: &str = "apache2;[libphp8.2.so];execute_ex 600\n\
                      apache2;[libphp8.2.so] 200\n\
                      apache2;entry_SYSCALL_64;do_syscall_64;copy_user_enhanced_fast_string 100\n\
                      apache2;entry_SYSCALL_64;do_syscall_64;unix_stream_sendmsg 100\n";
pub const FASTCGI_PHP: &str = "php-cgi;[libphp8.2.so];execute_ex 400\n\
                           php-cgi;[libphp8.2.so] 50\n\
                           php-cgi;entry_SYSCALL_64;do_syscall_64;unix_stream_sendmsg 250\n";
pub const FASTCGI_NGINX: &str = "nginx;ngx_http_fastcgi_handler 100\n\
                             nginx;entry_SYSCALL_64;do_syscall_64;unix_stream_sendmsg 100\n\
                             nginx;entry_SYSCALL_64;do_syscall_64;copy_user_enhanced_fast_string 100\n";

/// `c` as the runner stores a cell it was asked to profile: its `profile` knob says what
/// became of it (`perf`, `refused: ...`).
pub fn profiled(mut c: CellRecord, said: &str) -> CellRecord {
    c.knobs.insert("profile".into(), serde_json::json!(said));
    c
}

/// Seed 000 at c=10, profiled: apache-modphp (1,000 samples), nginx-fastcgi (nginx 300,
/// php-cgi 700) and a third stack whose profile the kernel refused.
pub fn profiled_group() -> (Vec<CellRecord>, loadlab_store::RunProfiles) {
    let cells = vec![
        profiled(cell("apache-modphp", "phpinfo.php", 10, 0, 100.0), "perf"),
        profiled(cell("nginx-fastcgi", "phpinfo.php", 10, 0, 200.0), "perf"),
        profiled(cell("varnish", "phpinfo.php", 10, 0, 300.0), "refused: No permission"),
    ];
    let mut profiles = loadlab_store::RunProfiles::new();
    profiles.insert(cells[0].ordinal, vec![ProfileRecord::for_test("apache2", MODPHP)]);
    let fastcgi = vec![
        ProfileRecord::for_test("nginx", FASTCGI_NGINX),
        ProfileRecord::for_test("php-cgi", FASTCGI_PHP),
    ];
    profiles.insert(cells[1].ordinal, fastcgi);
    (cells, profiles)
}
