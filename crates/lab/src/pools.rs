//! Worker pools seen from their own status pages: how many of a tier's workers were busy, how
//! many it may have, and how many requests waited in its listen queue. Read by the sampler once
//! per interval with a short timeout, so that "every child busy" is measured, not guessed from
//! CPU (a pool of PHP children waiting on I/O is full while its CPU is idle).
//!
//! - php-fpm: the pool's status page (`pm.status_path`) on a status socket of its own
//!   (`pm.status_listen`), served by php-fpm's own process, so it answers when every child is
//!   busy. Its `listen queue` counts only for TCP listeners on Linux: the lab's pools listen on
//!   a unix socket, so the queue is read from the kernel's socket table instead ([`unix_queue`]).
//! - Apache: `mod_status`'s `server-status?auto` (BusyWorkers, IdleWorkers) at a location the
//!   load never asks for; the maximum is the MPM's MaxRequestWorkers from the generated config.
//!   The status is served by a worker like any request: when every worker is busy it waits
//!   in the listen queue, so a status that does not answer within [`STATUS_TIMEOUT`] is read as
//!   a full pool (`waited`), and the queue is read from the kernel's socket table.
//! - nginx: `stub_status` (active connections) against `worker_processes` times its 4096
//!   `worker_connections`: nginx's pool is connections, and its event loop always answers.

use std::path::{Path, PathBuf};
use std::time::Duration;

use serde::{Deserialize, Serialize};

/// How long a status read may take before the pool counts as not answering.
pub const STATUS_TIMEOUT: Duration = Duration::from_millis(300);

/// Where a tier's pool reports.
#[derive(Clone, Debug)]
pub enum PoolStatus {
    /// php-fpm's status socket, and the socket its pool listens on (for the queue).
    PhpFpm { status: PathBuf, listen: PathBuf },
    /// Where Apache is reached (127.0.0.1, or a network profile's namespace; over TLS when
    /// it speaks TLS), and MaxRequestWorkers.
    Apache { endpoint: loadlab_engine::client::Endpoint, max: u32 },
    /// Where nginx is reached, and the connections its workers may hold.
    Nginx { endpoint: loadlab_engine::client::Endpoint, max: u32 },
}

/// One reading of a pool.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
pub struct PoolReading {
    /// Workers busy with a request (the status request itself is not counted).
    pub busy: u32,
    /// Workers the pool may have.
    pub max: u32,
    /// Connections waiting to be accepted by the pool, when known.
    pub listen_queue: Option<u64>,
    /// False when the status page did not answer within [`STATUS_TIMEOUT`]: then the other
    /// fields are zero and say nothing.
    pub answered: bool,
    /// Apache: the status page waited behind the load past [`STATUS_TIMEOUT`], which only a
    /// pool with no free worker makes it do: `busy` is then `max`, inferred, not read.
    #[serde(default, skip_serializing_if = "std::ops::Not::not")]
    pub waited: bool,
}

impl PoolReading {
    /// Every worker busy. A listen queue alone is not enough: children that are free but
    /// waiting for a CPU leave connections queued too (seen: 36 of 50 children busy with a
    /// queue of 7 under 20 connections on 2 CPUs). The queue is the evidence of what a full
    /// pool costs, not the test of fullness.
    pub fn full(&self) -> bool {
        self.answered && self.max > 0 && self.busy >= self.max
    }
}

impl PoolStatus {
    /// Reads the pool now. `ns_of`: a process of the stack, whose network namespace holds the
    /// pool's listening sockets (a stack behind a network profile has its own).
    pub fn read(&self, ns_of: Option<i32>) -> PoolReading {
        let read = match self {
            PoolStatus::PhpFpm { status, listen } => {
                crate::fcgi::get(status, "/loadlab-fpm-status", "", STATUS_TIMEOUT)
                    .ok()
                    .and_then(|out| parse_php_fpm(&String::from_utf8_lossy(&out)))
                    .map(|mut r| {
                        // php-fpm's own figure is 0 for a unix socket; the kernel knows.
                        r.listen_queue = unix_queue(listen, ns_of).or(r.listen_queue);
                        r
                    })
            }
            PoolStatus::Apache { endpoint, max } => {
                let addr = &endpoint.addr;
                match loadlab_engine::client::get_within(
                    endpoint,
                    "/loadlab-server-status?auto",
                    STATUS_TIMEOUT,
                ) {
                    Ok(r) if r.status == 200 => {
                        parse_apache(&String::from_utf8_lossy(&r.body), *max).map(|mut r| {
                            r.listen_queue = tcp_queue(*addr, ns_of);
                            r
                        })
                    }
                    Ok(_) => None,
                    Err(e) if timed_out(&e) => Some(PoolReading {
                        busy: *max,
                        max: *max,
                        listen_queue: tcp_queue(*addr, ns_of),
                        answered: true,
                        waited: true,
                    }),
                    Err(_) => None,
                }
            }
            PoolStatus::Nginx { endpoint, max } => {
                let addr = &endpoint.addr;
                loadlab_engine::client::get_within(
                    endpoint,
                    "/loadlab-nginx-status",
                    STATUS_TIMEOUT,
                )
                .ok()
                .filter(|r| r.status == 200)
                .and_then(|r| parse_nginx(&String::from_utf8_lossy(&r.body), *max))
                .map(|mut r| {
                    r.listen_queue = tcp_queue(*addr, ns_of);
                    r
                })
            }
        };
        read.unwrap_or_default()
    }
}

/// php-fpm's plain status page: `active processes`, `total processes`, `listen queue`.
/// `active` includes the child answering the status request when the page is served by the
/// pool itself; on the status socket it is not.
pub fn parse_php_fpm(text: &str) -> Option<PoolReading> {
    let field = |name: &str| -> Option<u64> {
        text.lines().find_map(|l| {
            let (k, v) = l.split_once(':')?;
            (k.trim() == name).then(|| v.trim().parse().ok()).flatten()
        })
    };
    Some(PoolReading {
        busy: field("active processes")? as u32,
        max: field("total processes")? as u32,
        listen_queue: field("listen queue"),
        answered: true,
        waited: false,
    })
}

/// Apache's `server-status?auto`: BusyWorkers and IdleWorkers; `max` from the config.
pub fn parse_apache(text: &str, max: u32) -> Option<PoolReading> {
    let field = |name: &str| -> Option<u32> {
        text.lines().find_map(|l| {
            let (k, v) = l.split_once(':')?;
            (k.trim() == name).then(|| v.trim().parse().ok()).flatten()
        })
    };
    // The worker serving the status page counts as busy: at that instant it is one the load
    // could not have, and when the page was served the pool had at most this many free.
    let busy = field("BusyWorkers")?;
    field("IdleWorkers")?;
    Some(PoolReading { busy, max, listen_queue: None, answered: true, waited: false })
}

/// Whether a status read failed by timing out (the kernel's EAGAIN on a timed read, or the
/// connect's own timeout), not by being refused.
fn timed_out(error: &str) -> bool {
    error.contains("timed out") || error.contains("temporarily unavailable")
}

/// nginx's `stub_status`: "Active connections: N" (the status request's own included).
pub fn parse_nginx(text: &str, max: u32) -> Option<PoolReading> {
    let line = text.lines().find(|l| l.starts_with("Active connections:"))?;
    let active: u32 = line.split(':').nth(1)?.trim().parse().ok()?;
    Some(PoolReading {
        busy: active.saturating_sub(1),
        max,
        listen_queue: None,
        answered: true,
        waited: false,
    })
}

/// `ss ARGS`, in the network namespace of process `ns_of` when that is not this one (a stack
/// behind a network profile: `ss` lists only its own namespace's sockets).
fn ss(args: &[&str], ns_of: Option<i32>) -> Option<String> {
    let mut command = std::process::Command::new(loadlab_programs::SS.find().ok()?);
    command.args(args);
    let ours = std::fs::read_link("/proc/self/ns/net").ok();
    let theirs = ns_of.map(|pid| PathBuf::from(format!("/proc/{pid}/ns/net")));
    let ns = match theirs {
        Some(path) if std::fs::read_link(&path).ok() != ours => {
            Some(std::fs::File::open(path).ok()?)
        }
        _ => None,
    };
    // `ns` stays open until the command has run.
    crate::sys::at_exec(
        &mut command,
        crate::sys::AtExec { netns: ns.as_ref(), ..Default::default() },
    );
    let out = command.output().ok()?;
    Some(String::from_utf8_lossy(&out.stdout).into_owned())
}

/// The accept queue of the TCP listener at `addr` (Recv-Q of a listener in `ss`).
pub fn tcp_queue(addr: std::net::SocketAddr, ns_of: Option<i32>) -> Option<u64> {
    parse_ss_tcp(&ss(&["-ltnH"], ns_of)?, addr.port())
}

/// `ss -ltnH` lines: `LISTEN 0 511 127.0.0.1:8080 0.0.0.0:*`: Recv-Q is the second field. The
/// listener is on 127.0.0.1, or on every address in a network profile's namespace.
fn parse_ss_tcp(text: &str, port: u16) -> Option<u64> {
    let wants = [format!("127.0.0.1:{port}"), format!("0.0.0.0:{port}"), format!("*:{port}")];
    text.lines().find_map(|l| {
        let f: Vec<&str> = l.split_whitespace().collect();
        (f.len() >= 4 && wants.iter().any(|w| f[3] == w)).then(|| f[1].parse().ok()).flatten()
    })
}

/// The accept queue of the listening unix socket at `path`: the receive-queue column of
/// /proc/net/unix is not it, so the kernel's socket diagnostics are asked through `ss`, which
/// reports a listener's queue as Recv-Q. `None` when `ss` is missing or the socket not found.
pub fn unix_queue(path: &Path, ns_of: Option<i32>) -> Option<u64> {
    parse_ss_unix(&ss(&["-xlnH"], ns_of)?, path)
}

/// `ss -xlnH` lines: `u_str LISTEN 0 4096 /run/x.sock 12345 * 0`: Recv-Q is the third field.
fn parse_ss_unix(text: &str, path: &Path) -> Option<u64> {
    let want = path.to_str()?;
    text.lines().find_map(|l| {
        let f: Vec<&str> = l.split_whitespace().collect();
        (f.len() >= 5 && f[4] == want).then(|| f[2].parse().ok()).flatten()
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    const FPM: &str = "pool:                 loadlab\nprocess manager:      static\n\
        start time:           24/Nov/2026:15:00:00 +0000\nstart since:          12\n\
        accepted conn:        5080\nlisten queue:         0\nmax listen queue:     0\n\
        listen queue len:     0\nidle processes:       0\nactive processes:     2\n\
        total processes:      2\nmax active processes: 2\nmax children reached: 0\n\
        slow requests:        0\n";

    #[test]
    fn php_fpm_status_gives_busy_of_total() {
        let r = parse_php_fpm(FPM).unwrap();
        assert_eq!(
            r,
            PoolReading { busy: 2, max: 2, listen_queue: Some(0), answered: true, waited: false }
        );
        assert!(r.full());
        let half =
            parse_php_fpm(&FPM.replace("active processes:     2", "active processes:     1"))
                .unwrap();
        assert!(!half.full());
        assert_eq!(parse_php_fpm("pool: x\n"), None);
    }

    #[test]
    fn a_queue_with_a_free_worker_is_not_full_and_silence_is_not_a_reading() {
        let r =
            PoolReading { busy: 36, max: 50, listen_queue: Some(7), answered: true, waited: false };
        assert!(!r.full());
        assert!(!PoolReading::default().full());
    }

    #[test]
    fn apache_status_counts_busy_workers_its_own_included() {
        let text = "Total Accesses: 10\nBusyWorkers: 5\nIdleWorkers: 0\nScoreboard: WWWWW\n";
        let r = parse_apache(text, 5).unwrap();
        assert_eq!((r.busy, r.max, r.answered), (5, 5, true));
        assert!(r.full());
        let free = "BusyWorkers: 4\nIdleWorkers: 1\n";
        assert!(!parse_apache(free, 5).unwrap().full());
        assert_eq!(parse_apache("BusyWorkers: 3\n", 5), None);
    }

    #[test]
    fn nginx_counts_active_connections_less_its_own() {
        let text = "Active connections: 21 \nserver accepts handled requests\n 5 5 9 \n\
                    Reading: 0 Writing: 20 Waiting: 1 \n";
        let r = parse_nginx(text, 8192).unwrap();
        assert_eq!((r.busy, r.max, r.full()), (20, 8192, false));
        assert!(parse_nginx("Active connections: 9\n", 8).unwrap().full());
        assert_eq!(parse_nginx("nothing", 8), None);
        let tcp =
            "LISTEN 12  511  127.0.0.1:8080  0.0.0.0:*\nLISTEN 0 511 127.0.0.1:80 0.0.0.0:*\n";
        assert_eq!(parse_ss_tcp(tcp, 8080), Some(12));
        assert_eq!(parse_ss_tcp(tcp, 81), None);
        let everywhere = "LISTEN 3     511          0.0.0.0:8081      0.0.0.0:*\n";
        assert_eq!(parse_ss_tcp(everywhere, 8081), Some(3));
    }

    #[test]
    fn ss_lines_give_the_listeners_queue() {
        let text = "u_str LISTEN 37   4096 /tmp/run/php-fpm.sock 123 * 0\n\
                    u_str LISTEN 0    128  /run/other.sock 124 * 0\n";
        assert_eq!(parse_ss_unix(text, Path::new("/tmp/run/php-fpm.sock")), Some(37));
        assert_eq!(parse_ss_unix(text, Path::new("/tmp/nope.sock")), None);
    }
}
