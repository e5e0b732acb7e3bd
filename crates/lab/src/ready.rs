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
                let listening = listening_inodes(*port);
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

/// Inodes of the sockets listening on 127.0.0.1:`port` (or any address), from
/// /proc/net/tcp, where addresses are hex in network byte order read as a host integer.
fn listening_inodes(port: u16) -> Vec<u64> {
    let text = fs::read_to_string("/proc/net/tcp").unwrap_or_default();
    parse_listening(&text, port)
}

fn parse_listening(text: &str, port: u16) -> Vec<u64> {
    let wanted = [format!("0100007F:{port:04X}"), format!("00000000:{port:04X}")];
    text.lines()
        .skip(1)
        .filter_map(|line| {
            let fields: Vec<&str> = line.split_whitespace().collect();
            // sl local rem st tx:rx tr:when retrnsmt uid timeout inode
            let (local, state, inode) = (fields.get(1)?, fields.get(3)?, fields.get(9)?);
            (*state == "0A" && wanted.iter().any(|w| w == local)).then(|| inode.parse().ok())?
        })
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
    fn listening_sockets_are_found_by_port() {
        let text = "  sl  local_address rem_address   st tx_queue rx_queue tr tm->when retrnsmt   uid  timeout inode\n\
   0: 0100007F:1F90 00000000:0000 0A 00000000:00000000 00:00000000 00000000     0        0 4242 1 0 100 0 0 10 0\n\
   1: 0100007F:1F90 0100007F:D431 01 00000000:00000000 00:00000000 00000000     0        0 4343 1 0 100 0 0 10 0\n\
   2: 0100007F:1F91 00000000:0000 0A 00000000:00000000 00:00000000 00000000     0        0 4444 1 0 100 0 0 10 0\n";
        assert_eq!(parse_listening(text, 8080), vec![4242]);
        assert_eq!(parse_listening(text, 8081), vec![4444]);
        assert!(parse_listening(text, 80).is_empty());
    }

    #[test]
    fn our_own_listener_is_ours() {
        let listener = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
        let port = listener.local_addr().unwrap().port();
        let inodes = listening_inodes(port);
        assert_eq!(inodes.len(), 1);
        assert!(socket_inodes(std::process::id() as i32).contains(&inodes[0]));
    }
}
