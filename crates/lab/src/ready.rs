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

/// Inodes of the sockets listening on `port`, on any address (127.0.0.1, every address of a
/// profile's namespace, or the front's `--listen` address, IPv4 or IPv6).
fn listening_inodes(pid: i32, port: u16) -> Vec<u64> {
    // The process's own view: the tables of the network namespace it runs in (the lab's, or
    // a network profile's).
    let suffix = format!(":{port:04X}");
    ["tcp", "tcp6"]
        .iter()
        .flat_map(|t| {
            listeners(&fs::read_to_string(format!("/proc/{pid}/net/{t}")).unwrap_or_default())
        })
        .filter(|(local, _)| local.ends_with(&suffix))
        .map(|(_, i)| i)
        .collect()
}

/// `addr` as /proc/net/tcp{,6} prints a local address: each 32-bit word of the address in
/// network order, printed as the host reads it (`%08X`), then the port.
fn proc_hex(addr: std::net::SocketAddr) -> String {
    let bytes = match addr.ip() {
        std::net::IpAddr::V4(v4) => v4.octets().to_vec(),
        std::net::IpAddr::V6(v6) => v6.octets().to_vec(),
    };
    let words: String = bytes
        .chunks(4)
        .map(|w| format!("{:08X}", u32::from_ne_bytes([w[0], w[1], w[2], w[3]])))
        .collect();
    format!("{words}:{:04X}", addr.port())
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
/// /proc's hex, but for `allowed` (the front's `--listen` address): what must be empty, since
/// nothing else of the lab may listen beyond 127.0.0.1.
pub fn exposed(pids: &[i32], allowed: Option<std::net::SocketAddr>) -> Vec<String> {
    let ours: Vec<u64> = pids.iter().flat_map(|p| socket_inodes(*p)).collect();
    let allowed = allowed.map(proc_hex);
    ["/proc/net/tcp", "/proc/net/tcp6"]
        .iter()
        .flat_map(|path| listeners(&fs::read_to_string(path).unwrap_or_default()))
        .filter(|(local, inode)| ours.contains(inode) && !is_loopback(local))
        .filter(|(local, _)| allowed.as_ref() != Some(local))
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
        assert_eq!(proc_hex("127.0.0.1:8080".parse().unwrap()), "0100007F:1F90");
        assert_eq!(proc_hex("10.215.0.2:80".parse().unwrap()), "0200D70A:0050");
        assert_eq!(
            proc_hex("[::1]:8080".parse().unwrap()),
            "00000000000000000000000001000000:1F90"
        );
    }

    #[test]
    fn our_own_listener_is_ours() {
        let listener = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
        let port = listener.local_addr().unwrap().port();
        let inodes = listening_inodes(std::process::id() as i32, port);
        assert_eq!(inodes.len(), 1);
        assert!(socket_inodes(std::process::id() as i32).contains(&inodes[0]));
        let me = std::process::id() as i32;
        assert!(exposed(&[me], None).is_empty());
        let everywhere = std::net::TcpListener::bind("0.0.0.0:0").unwrap();
        assert_eq!(exposed(&[me], None).len(), 1);
        // The front's --listen address is allowed; the same address on another port is not.
        let front = everywhere.local_addr().unwrap();
        assert!(exposed(&[me], Some(front)).is_empty());
        let other = std::net::SocketAddr::new(front.ip(), front.port().wrapping_add(1));
        assert_eq!(exposed(&[me], Some(other)).len(), 1);
        drop(everywhere);
        // Listening on the port at any address is ready, IPv6 included.
        let v6 = std::net::TcpListener::bind("[::1]:0").unwrap();
        assert_eq!(listening_inodes(me, v6.local_addr().unwrap().port()).len(), 1);
    }
}
