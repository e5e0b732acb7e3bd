//! Readiness: a tier is ready when its own process group holds the listening socket of its
//! port (not merely when something accepts there: another program may have taken the port
//! between our asking the kernel for it and the server binding it), or when its unix
//! socket, in the private run directory, accepts.

use std::fs;
use std::os::unix::net::UnixStream;
use std::thread;
use std::time::{Duration, Instant};

use crate::error::{Error, Result};
use crate::procfs::{self, ProcId};
use crate::servers::Probe;

const POLL: Duration = Duration::from_millis(10);

/// Waits until the group led by `leader` serves `probe`. Fails with `Error::Start`
/// (carrying `logs()`) when the group exits or `limit` passes, and with
/// `Error::Interrupted` as soon as `cancel()` says so.
pub fn wait(
    tier: &str,
    leader: ProcId,
    probe: &Probe,
    limit: Duration,
    cancel: &dyn Fn() -> bool,
    logs: &dyn Fn() -> String,
) -> Result<()> {
    let deadline = Instant::now() + limit;
    let fail =
        |reason: &str| Error::Start { tier: tier.into(), reason: reason.into(), log: logs() };
    loop {
        let group = procfs::group(leader, &procfs::all());
        if group.is_empty() {
            crate::supervise::reap(&[leader]);
            return Err(fail("it exited"));
        }
        let ready = match probe {
            Probe::Tcp(port) => {
                let listening = listening_inodes(leader.pid, *port);
                !listening.is_empty()
                    && group
                        .iter()
                        .any(|p| socket_inodes(p.pid).iter().any(|i| listening.contains(i)))
            }
            Probe::Unix(path) => UnixStream::connect(path).is_ok(),
        };
        if ready {
            return Ok(());
        }
        if cancel() {
            return Err(Error::Interrupted);
        }
        if Instant::now() >= deadline {
            return Err(fail(&format!("not ready after {limit:?}")));
        }
        thread::sleep(POLL);
    }
}

/// Inodes of the sockets listening on 127.0.0.1:`port` (or any address).
fn listening_inodes(pid: i32, port: u16) -> Vec<u64> {
    // The process's own view: the table of the network namespace it runs in (the lab's, or a
    // network profile's).
    let text = fs::read_to_string(format!("/proc/{pid}/net/tcp")).unwrap_or_default();
    let wanted = [format!("0100007F:{port:04X}"), format!("00000000:{port:04X}")];
    listeners(&text)
        .into_iter()
        .filter(|(local, _)| wanted.contains(local))
        .map(|(_, i)| i)
        .collect()
}

/// The listening sockets in a /proc/net/tcp or tcp6 table: local address (hex, as the
/// kernel prints it: the IPv4 address in host byte order, then the port) and inode.
fn listeners(text: &str) -> Vec<(String, u64)> {
    text.lines()
        .skip(1)
        .filter_map(|line| {
            let fields: Vec<&str> = line.split_whitespace().collect();
            // sl local rem st tx:rx tr:when retrnsmt uid timeout inode
            let (local, state, inode) = (fields.get(1)?, fields.get(3)?, fields.get(9)?);
            (*state == "0A").then(|| Some((local.to_string(), inode.parse().ok()?)))?
        })
        .collect()
}

/// Whether a local address from /proc/net/tcp{,6} is on loopback: 127.0.0.0/8 (whose first
/// octet is the last byte printed) or ::1.
fn is_loopback(local: &str) -> bool {
    let addr = local.split(':').next().unwrap_or_default();
    match addr.len() {
        8 => addr.ends_with("7F"),
        _ => addr == "00000000000000000000000001000000",
    }
}

/// The listening sockets of these processes that are not on loopback, as `address:port` in
/// /proc's hex: what must be empty, since nothing of the lab may listen beyond 127.0.0.1.
pub fn exposed(pids: &[i32]) -> Vec<String> {
    let ours: Vec<u64> = pids.iter().flat_map(|p| socket_inodes(*p)).collect();
    ["/proc/net/tcp", "/proc/net/tcp6"]
        .iter()
        .flat_map(|path| listeners(&fs::read_to_string(path).unwrap_or_default()))
        .filter(|(local, inode)| ours.contains(inode) && !is_loopback(local))
        .map(|(local, _)| local)
        .collect()
}

/// Inodes of the sockets process `pid` has open.
fn socket_inodes(pid: i32) -> Vec<u64> {
    let Ok(entries) = fs::read_dir(format!("/proc/{pid}/fd")) else { return Vec::new() };
    entries
        .filter_map(|e| {
            let target = fs::read_link(e.ok()?.path()).ok()?;
            let text = target.to_str()?;
            text.strip_prefix("socket:[")?.strip_suffix(']')?.parse().ok()
        })
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn listening_sockets_and_their_addresses() {
        let text = "  sl  local_address rem_address   st tx_queue rx_queue tr tm->when retrnsmt   uid  timeout inode\n\
   0: 0100007F:1F90 00000000:0000 0A 00000000:00000000 00:00000000 00000000     0        0 4242 1 0 100 0 0 10 0\n\
   1: 0100007F:1F90 0100007F:D431 01 00000000:00000000 00:00000000 00000000     0        0 4343 1 0 100 0 0 10 0\n\
   2: 00000000:1F91 00000000:0000 0A 00000000:00000000 00:00000000 00000000     0        0 4444 1 0 100 0 0 10 0\n";
        let found = listeners(text);
        assert_eq!(
            found,
            vec![("0100007F:1F90".to_string(), 4242), ("00000000:1F91".to_string(), 4444)]
        );
        assert!(is_loopback("0100007F:1F90"));
        assert!(is_loopback("0200007F:1F90"));
        assert!(!is_loopback("00000000:1F91"));
        assert!(is_loopback("00000000000000000000000001000000:1F90"));
        assert!(!is_loopback("00000000000000000000000000000000:1F90"));
    }

    #[test]
    fn our_own_listener_is_ours() {
        let listener = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
        let port = listener.local_addr().unwrap().port();
        let inodes = listening_inodes(std::process::id() as i32, port);
        assert_eq!(inodes.len(), 1);
        assert!(socket_inodes(std::process::id() as i32).contains(&inodes[0]));
        assert!(exposed(&[std::process::id() as i32]).is_empty());
        let everywhere = std::net::TcpListener::bind("0.0.0.0:0").unwrap();
        assert_eq!(exposed(&[std::process::id() as i32]).len(), 1);
        drop(everywhere);
    }
}
