//! Asking for more than the client has: what a run's connections need (descriptors, local
//! ports toward the target, memory) against what this machine gives, checked before any load.
//! A closed loop opens all its connections: one that cannot fit is refused, or run with what
//! fits when the user asks. An open loop's `--max-connections` is a ceiling, not a need: it is
//! lowered to what fits, with a note.

use std::fmt;

/// Descriptors a run needs beyond its connections and what is already open (stdio among
/// them): the path probe's connection, and room for the store and the signal handler.
pub const FD_RESERVE: u64 = 8;
/// Descriptors per worker thread beyond its connections (epoll instance, timerfd).
pub const FD_PER_THREAD: u64 = 2;
/// Memory one open connection costs: the engine's slot (about 0.8 KB, measured as peak RSS
/// growing 7.6 MB from 10,000 to 20,000 connections) and the kernel's socket, file and buffers
/// at rest (a few KB), rounded up.
pub const BYTES_PER_CONNECTION: u64 = 8 * 1024;
/// The share of the available memory connections may take.
pub const MEMORY_SHARE: f64 = 0.5;

/// What the machine gives a run.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Has {
    /// The open-file limit the run will have: the hard limit, to which the engine raises the
    /// soft one.
    pub fd_limit: u64,
    /// Descriptors already open in this process.
    pub fds_open: u64,
    /// Local ports per source address toward one target (net.ipv4.ip_local_port_range).
    pub ports: u64,
    /// Source addresses the run spreads its connections over (1 without --source-ips).
    pub source_ips: u64,
    /// MemAvailable, in bytes; `None` when /proc/meminfo cannot be read.
    pub memory: Option<u64>,
}

impl Has {
    /// This machine, now.
    /// What this machine has for `config`'s connections: a unix socket takes no local port.
    pub fn for_config(config: &loadlab_engine::BenchConfig) -> Has {
        let mut has = Has::here(config.source_ips.len());
        if config.unix_socket.is_some() {
            has.ports = u64::MAX / 2;
        }
        has
    }

    pub fn here(source_ips: usize) -> Has {
        let (_, hard) = loadlab_engine::sys::raise_fd_limit();
        let fds_open =
            std::fs::read_dir("/proc/self/fd").map_or(0, |d| d.count() as u64).saturating_sub(1);
        let ports = std::fs::read_to_string(PORT_RANGE)
            .ok()
            .and_then(|s| parse_port_range(&s))
            .unwrap_or(28_232);
        let memory = std::fs::read_to_string("/proc/meminfo").ok().and_then(|s| mem_available(&s));
        Has { fd_limit: hard, fds_open, ports, source_ips: source_ips.max(1) as u64, memory }
    }
}

/// The limits that bound a load test as `doctor` shows them, read by the same probes as
/// [`Has::here`] but raising nothing: the open-file limit as the process was started with it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Limits {
    /// RLIMIT_NOFILE (soft, hard).
    pub open_files: (u64, u64),
    /// net.ipv4.ip_local_port_range as `LOW-HIGH`; empty when it cannot be read.
    pub port_range: String,
    /// Ports in that range.
    pub ports: Option<u64>,
    /// net.core.somaxconn, the listen backlog's cap; empty when it cannot be read.
    pub somaxconn: String,
    /// CPUs this process may use, and CPUs online.
    pub cpus_available: usize,
    pub cpus_online: i64,
}

impl Limits {
    pub fn here() -> Limits {
        let read = |path: &str| std::fs::read_to_string(path).unwrap_or_default();
        let ports = read(PORT_RANGE);
        Limits {
            open_files: loadlab_engine::sys::fd_limit(),
            port_range: ports.split_whitespace().collect::<Vec<_>>().join("-"),
            ports: parse_port_range(&ports),
            somaxconn: read("/proc/sys/net/core/somaxconn").trim().to_string(),
            cpus_available: std::thread::available_parallelism().map_or(0, |n| n.get()),
            cpus_online: loadlab_engine::sys::online_cpus(),
        }
    }
}

/// The kernel's ephemeral port range: the local ports a client's connections take.
const PORT_RANGE: &str = "/proc/sys/net/ipv4/ip_local_port_range";

/// Which limit a run ran into.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Limit {
    Descriptors,
    Ports,
    Memory,
}

/// A run that does not fit: what limits it, to how many connections, and what to do.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Shortfall {
    pub limit: Limit,
    pub asked: usize,
    /// Connections that fit.
    pub fits: usize,
    /// The limit's figure in words: "open-file limit 20,000".
    pub figure: String,
}

impl fmt::Display for Shortfall {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let how = match self.limit {
            Limit::Descriptors => {
                "raise it with `ulimit -Hn` and `ulimit -n` (as root; for \
                                   services LimitNOFILE=, for logins /etc/security/limits.conf)"
            }
            Limit::Ports => {
                "widen it with `sysctl net.ipv4.ip_local_port_range=\"1024 65535\"`, \
                             or spread connections over more --source-ips"
            }
            Limit::Memory => "free memory, or use fewer connections",
        };
        write!(
            f,
            "{} connections do not fit: {} allows {}; {how}, or pass --over-capacity cap to run \
             with {}",
            loadlab_stats::format::count(self.asked as f64),
            self.figure,
            loadlab_stats::format::count(self.fits as f64),
            loadlab_stats::format::count(self.fits as f64),
        )
    }
}

/// How many connections `threads` workers can hold open at once on a machine that `has`, and
/// the tightest limit.
pub fn fits(has: &Has, threads: usize) -> (usize, Limit, String) {
    let reserve = FD_RESERVE + FD_PER_THREAD * threads as u64 + has.fds_open;
    let by_fd = has.fd_limit.saturating_sub(reserve);
    let by_ports = has.ports * has.source_ips;
    let by_memory =
        has.memory.map_or(u64::MAX, |m| (m as f64 * MEMORY_SHARE) as u64 / BYTES_PER_CONNECTION);
    let count = loadlab_stats::format::count;
    let mut best = (
        by_fd,
        Limit::Descriptors,
        format!("the open-file limit of {} (hard)", count(has.fd_limit as f64)),
    );
    if by_ports < best.0 {
        best = (
            by_ports,
            Limit::Ports,
            format!(
                "{} local ports toward one address{}",
                count(has.ports as f64),
                if has.source_ips > 1 {
                    format!(" from each of {} source addresses", has.source_ips)
                } else {
                    String::new()
                }
            ),
        );
    }
    if by_memory < best.0 {
        best = (
            by_memory,
            Limit::Memory,
            format!(
                "half the available memory ({}) at {} per connection",
                loadlab_stats::format::bytes(has.memory.unwrap_or(0) as f64),
                loadlab_stats::format::bytes(BYTES_PER_CONNECTION as f64)
            ),
        );
    }
    (best.0.min(usize::MAX as u64) as usize, best.1, best.2)
}

/// Whether `connections` fit; the shortfall when they do not.
pub fn check(has: &Has, connections: usize, threads: usize) -> Result<(), Shortfall> {
    let (fits, limit, figure) = fits(has, threads);
    if connections <= fits {
        Ok(())
    } else {
        Err(Shortfall { limit, asked: connections, fits, figure })
    }
}

/// What to do when a run's connections do not fit (`--over-capacity`).
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, clap::ValueEnum)]
pub enum Policy {
    /// Refuse before any load (exit 2).
    #[default]
    Refuse,
    /// Run with the connections that fit, and say so.
    Cap,
    /// Run as asked: the connections that do not fit fail as fd_unavail or addr_unavail.
    Run,
}

/// Fits `config`'s connections to what the machine `has`: `Err` (the line to print) when the
/// run is refused; otherwise the warning to show with the run, if any. A closed loop opens
/// every `-c` connection, so one that does not fit is refused, capped or run as `policy` says;
/// an open loop's `max_connections` is a ceiling, lowered to what fits unless `Run`.
pub fn fit(
    config: &mut loadlab_engine::BenchConfig,
    policy: Policy,
    has: &Has,
) -> Result<Option<String>, String> {
    use loadlab_engine::Pacing;
    let fmt = |n: usize| loadlab_stats::format::count(n as f64);
    let threads = config.threads;
    match &mut config.pacing {
        Pacing::Closed => {
            // A visit file's population: each visitor holds up to `per_visitor` connections
            // per origin over HTTP/1.1, one per origin over HTTP/2.
            let h2 = config.protocol.is_h2();
            let per = config.visits.as_ref().map_or(1, |p| p.connections_per_visitor(h2));
            let Err(short) = check(has, config.connections * per, threads) else {
                return Ok(None);
            };
            if per > 1 && policy != Policy::Run {
                let n = fmt(config.connections);
                return Err(format!("{n} visitors of up to {per} connections each: {short}"));
            }
            match policy {
                Policy::Refuse => Err(short.to_string()),
                Policy::Run => Ok(Some(format!(
                    "{} connections were asked for where {} allows {}: those beyond it fail as \
                     the client's own errors (--over-capacity run)",
                    fmt(short.asked),
                    short.figure,
                    fmt(short.fits)
                ))),
                Policy::Cap if short.fits == 0 => {
                    Err(format!("no connection fits: {}", short.figure))
                }
                Policy::Cap => {
                    config.connections = short.fits;
                    config.threads = threads.min(short.fits);
                    Ok(Some(format!(
                        "ran with {} connections, not the {} asked for: {} allows no more \
                         (--over-capacity cap)",
                        fmt(short.fits),
                        fmt(short.asked),
                        short.figure
                    )))
                }
            }
        }
        Pacing::Open { max_connections, .. } | Pacing::Sessions { max_connections, .. } => {
            let (fits, limit, figure) = fits(has, threads);
            let asked = *max_connections;
            if asked <= fits {
                return Ok(None);
            }
            if policy == Policy::Run {
                return Ok(Some(format!(
                    "--max-connections {} is more than {figure} allows ({}): connections \
                     beyond it fail as the client's own errors (--over-capacity run)",
                    fmt(asked),
                    fmt(fits)
                )));
            }
            if fits < threads {
                return Err(Shortfall { limit, asked, fits, figure }.to_string());
            }
            *max_connections = fits;
            Ok(Some(format!(
                "--max-connections lowered from {} to {}: {figure} allows no more",
                fmt(asked),
                fmt(fits)
            )))
        }
    }
}

/// The first closed-loop cell of `plan` whose connections do not fit, with its shortfall: a
/// suite is checked whole before any stack starts. (An open-loop cell's `max_connections` is a
/// ceiling: the engine's connection cap holds it, and its cells are not refused.)
pub fn check_plan(
    plan: &loadlab_suite::Plan,
    has: &Has,
    threads: usize,
) -> Result<(), (String, Shortfall)> {
    for cell in &plan.cells {
        if let loadlab_suite::Point::Closed { concurrency } = cell.load.point {
            if let Err(short) = check(has, concurrency, threads.min(concurrency.max(1))) {
                return Err((format!("{} {}", cell.stack.label, cell.workload.name()), short));
            }
        }
    }
    Ok(())
}

fn parse_port_range(text: &str) -> Option<u64> {
    let mut it = text.split_whitespace().map(|f| f.parse::<u64>().ok());
    let (lo, hi) = (it.next()??, it.next()??);
    (hi >= lo).then(|| hi - lo + 1)
}

fn mem_available(meminfo: &str) -> Option<u64> {
    let line = meminfo.lines().find(|l| l.starts_with("MemAvailable:"))?;
    let kb: u64 = line.split_whitespace().nth(1)?.parse().ok()?;
    Some(kb * 1024)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn has(fd_limit: u64) -> Has {
        Has { fd_limit, fds_open: 4, ports: 28_232, source_ips: 1, memory: Some(24 << 30) }
    }

    #[test]
    fn descriptors_are_the_limit_with_the_reserve_counted() {
        // 20,000 - 8 - 2 x 2 - 4 open = 19,984.
        assert_eq!(check(&has(20_000), 19_984, 2), Ok(()));
        let short = check(&has(20_000), 19_985, 2).unwrap_err();
        assert_eq!((short.limit, short.fits), (Limit::Descriptors, 19_984));
        let line = check(&has(20_000), 1_000_000, 2).unwrap_err().to_string();
        assert!(line.starts_with("1,000,000 connections do not fit: the open-file limit of 20,000 (hard) allows 19,984; raise it with `ulimit -Hn`"), "{line}");
        assert!(line.ends_with("--over-capacity cap to run with 19,984"), "{line}");
    }

    #[test]
    fn ports_limit_when_descriptors_do_not_and_source_addresses_multiply_them() {
        let h = has(1 << 20);
        let short = check(&h, 100_000, 2).unwrap_err();
        assert_eq!((short.limit, short.fits), (Limit::Ports, 28_232));
        assert!(short.to_string().contains("ip_local_port_range"), "{short}");
        let four = Has { source_ips: 4, ..h };
        assert_eq!(check(&four, 100_000, 2), Ok(()));
    }

    #[test]
    fn memory_limits_last_and_unknown_memory_does_not() {
        let small = Has { memory: Some(64 << 20), ..has(1 << 20) };
        let short = check(&small, 10_000, 1).unwrap_err();
        // Half of 64 MiB at 8 KiB each.
        assert_eq!((short.limit, short.fits), (Limit::Memory, 4_096));
        assert_eq!(check(&Has { memory: None, ..small }, 10_000, 1), Ok(()));
    }

    fn config(pacing: loadlab_engine::Pacing, connections: usize) -> loadlab_engine::BenchConfig {
        let target = loadlab_engine::Target::parse("http://127.0.0.1:9/").unwrap();
        let mut c = loadlab_engine::BenchConfig::new(target);
        (c.pacing, c.connections, c.threads) = (pacing, connections, 2);
        c
    }

    #[test]
    fn a_closed_loop_past_the_limit_is_refused_capped_or_run_as_asked() {
        let h = has(20_000);
        let mut c = config(loadlab_engine::Pacing::Closed, 1_000_000);
        let refused = fit(&mut c, Policy::Refuse, &h).unwrap_err();
        assert!(refused.starts_with("1,000,000 connections do not fit"), "{refused}");
        assert_eq!(c.connections, 1_000_000, "a refusal changes nothing");
        let warned = fit(&mut c, Policy::Run, &h).unwrap().expect("a warning");
        assert!(warned.contains("--over-capacity run") && c.connections == 1_000_000, "{warned}");
        let capped = fit(&mut c, Policy::Cap, &h).unwrap().expect("a warning");
        assert_eq!(c.connections, 19_984);
        assert!(capped.starts_with("ran with 19,984 connections, not the 1,000,000"), "{capped}");
        // What fits needs no word.
        assert_eq!(
            fit(&mut config(loadlab_engine::Pacing::Closed, 100), Policy::Refuse, &h),
            Ok(None)
        );
        let mut none = config(loadlab_engine::Pacing::Closed, 10);
        assert!(fit(&mut none, Policy::Cap, &has(12))
            .unwrap_err()
            .starts_with("no connection fits"));
    }

    /// Over HTTP/2 a visitor's population is reserved one connection per visitor and origin,
    /// not HTTP/1.1's connections per visitor, so it is not refused where it fits.
    #[test]
    fn a_population_of_visitors_is_reserved_its_protocols_connections() {
        let visit = loadlab_visit::Visit {
            name: "v".into(),
            bursts: vec![loadlab_visit::Burst {
                calls: vec![loadlab_visit::Call::get("/a"), loadlab_visit::Call::get("/b")],
                think: None,
            }],
        };
        let think = loadlab_visit::Think::Fixed(std::time::Duration::ZERO);
        let (plan, _) = loadlab_engine::visits::Plan::new("v", &[visit], think, 4).unwrap();
        // 20,000 descriptors fit 19,984 connections: 4,996 visitors of 4, or of 1 each.
        let h = has(20_000);
        let mut c = config(loadlab_engine::Pacing::Closed, 10_000);
        c.visits = Some(std::sync::Arc::new(plan));
        let refused = fit(&mut c, Policy::Refuse, &h).unwrap_err();
        assert!(refused.starts_with("10,000 visitors of up to 4 connections each"), "{refused}");
        c.protocol = loadlab_engine::Protocol::Http2 { streams: 1 };
        assert_eq!(fit(&mut c, Policy::Refuse, &h), Ok(None));
        c.connections = 20_000;
        let refused = fit(&mut c, Policy::Refuse, &h).unwrap_err();
        assert!(refused.starts_with("20,000 connections do not fit"), "{refused}");
    }

    #[test]
    fn an_open_loops_ceiling_is_lowered_to_what_fits_unless_run_as_asked() {
        let open = |max| loadlab_engine::Pacing::Open {
            rate: 1000.0,
            arrival: loadlab_engine::Arrival::Fixed,
            max_connections: max,
        };
        let mut c = config(open(100_000), 10);
        let w = fit(&mut c, Policy::Refuse, &has(20_000)).unwrap().expect("a warning");
        assert_eq!(c.pacing, open(19_984));
        assert!(w.starts_with("--max-connections lowered from 100,000 to 19,984"), "{w}");
        let mut asked = config(open(100_000), 10);
        assert!(fit(&mut asked, Policy::Run, &has(20_000)).unwrap().is_some());
        assert_eq!(asked.pacing, open(100_000));
        assert_eq!(fit(&mut config(open(500), 10), Policy::Refuse, &has(20_000)), Ok(None));
    }

    #[test]
    fn a_suite_is_checked_whole_before_it_starts() {
        let text = "name = \"big\"\n[[stacks]]\nname = \"nginx\"\n[[workloads]]\n\
            name = \"hello.txt\"\n[[loads]]\nmodel = \"closed\"\n\
            concurrency = [10, 50000]\nduration = \"1s\"\n";
        let suite = loadlab_suite::parse(text, "big.toml").expect("a valid suite");
        let plan = loadlab_suite::plan(&suite, false);
        let (cell, short) = check_plan(&plan, &has(20_000), 2).unwrap_err();
        assert_eq!((cell.as_str(), short.asked), ("nginx hello.txt", 50_000));
        // Four source addresses give 4 x 28,232 ports: 50,000 connections fit.
        assert_eq!(check_plan(&plan, &Has { source_ips: 4, ..has(1 << 20) }, 2), Ok(()));
    }

    #[test]
    fn proc_files_are_read_as_the_kernel_writes_them() {
        assert_eq!(parse_port_range("32768\t60999\n"), Some(28_232));
        assert_eq!(parse_port_range("bad"), None);
        assert_eq!(mem_available("MemTotal: 10 kB\nMemAvailable:   2048 kB\n"), Some(2 << 20));
        assert_eq!(mem_available("MemTotal: 10 kB\n"), None);
        let here = Has::here(1);
        assert!(here.fd_limit > 0 && here.ports > 0, "{here:?}");
    }

    #[test]
    fn a_unix_socket_needs_no_local_port() {
        let target = loadlab_engine::Target::parse("http://localhost/").unwrap();
        let mut config = loadlab_engine::BenchConfig::new(target);
        let tcp = Has::for_config(&config);
        config.unix_socket = Some("/run/app.sock".into());
        let unix = Has::for_config(&config);
        assert!(unix.ports > 1 << 40, "{unix:?}");
        // 100,000 connections: more than the ports toward one address, not more than a socket
        // path allows when descriptors and memory are there.
        let plenty = |h: Has| Has { fd_limit: 1 << 20, memory: Some(1 << 40), ..h };
        assert!(check(&plenty(tcp), 100_000, 1).is_err());
        assert_eq!(check(&plenty(unix), 100_000, 1), Ok(()));
    }
}
