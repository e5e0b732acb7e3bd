//! The HTTP endpoint Prometheus scrapes: std's `TcpListener` on a thread of its own, one
//! connection at a time (a scraper asks once per scrape interval; a second one waits its
//! turn), each answered with the board as it stands and closed. `GET /metrics` (or `/`) gets
//! the exposition; anything else a 404. A client that does not finish its request within
//! [`READ_TIMEOUT`] is dropped, so that it cannot hold the endpoint.
//!
//! The run's last figures would be lost to a scraper whose next scrape comes after the process
//! has exited, so [`Endpoint::linger`] keeps serving after the run until one scrape has been
//! served the final figures, or for at most the time given.

use std::io::{self, Read, Write};
use std::net::{IpAddr, Ipv4Addr, SocketAddr, TcpListener, TcpStream};
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Condvar, Mutex};
use std::thread::JoinHandle;
use std::time::{Duration, Instant};

use crate::Board;

/// How long a scraper may take to send its request.
pub const READ_TIMEOUT: Duration = Duration::from_secs(5);

/// Why the endpoint could not listen.
#[derive(Debug, thiserror::Error)]
pub enum MetricsError {
    #[error("--metrics-listen {addr}: the address is in use (another process listens there)")]
    InUse { addr: SocketAddr },
    #[error("--metrics-listen {addr}: {source}")]
    Bind { addr: SocketAddr, source: io::Error },
}

/// `--metrics-listen`'s value: `PORT` or `:PORT` on loopback (127.0.0.1), or `HOST:PORT`
/// (`[::1]:9100`, `0.0.0.0:9100`) to listen elsewhere, only when given so.
pub fn listen_addr(s: &str) -> Result<SocketAddr, String> {
    let port = s.strip_prefix(':').unwrap_or(s);
    if let Ok(port) = port.parse::<u16>() {
        return Ok(SocketAddr::new(IpAddr::V4(Ipv4Addr::LOCALHOST), port));
    }
    s.parse().map_err(|_| format!("'{s}' is not PORT, :PORT or an address HOST:PORT (an IP)"))
}

/// [`Endpoint::linger`]'s wait: (lingering, and a scrape rendered since then was answered).
#[derive(Debug, Default)]
struct Served {
    state: Mutex<(bool, bool)>,
    changed: Condvar,
}

impl Served {
    fn state(&self) -> std::sync::MutexGuard<'_, (bool, bool)> {
        self.state.lock().unwrap_or_else(|e| e.into_inner())
    }
}

/// The endpoint, serving while it lives.
#[derive(Debug)]
pub struct Endpoint {
    addr: SocketAddr,
    stop: Arc<AtomicBool>,
    served: Arc<Served>,
    thread: Option<JoinHandle<()>>,
}

impl Endpoint {
    /// Listens on `addr` and serves `board` from a thread of its own.
    pub fn bind(addr: SocketAddr, board: Arc<Board>) -> Result<Endpoint, MetricsError> {
        let listener = TcpListener::bind(addr).map_err(|source| match source.kind() {
            io::ErrorKind::AddrInUse => MetricsError::InUse { addr },
            _ => MetricsError::Bind { addr, source },
        })?;
        let addr = listener.local_addr().map_err(|source| MetricsError::Bind { addr, source })?;
        let (stop, served) = (Arc::new(AtomicBool::new(false)), Arc::new(Served::default()));
        let (s, d) = (stop.clone(), served.clone());
        let thread = std::thread::Builder::new()
            .name("metrics".into())
            .spawn(move || serve(&listener, &board, &s, &d))
            .map_err(|source| MetricsError::Bind { addr, source })?;
        Ok(Endpoint { addr, stop, served, thread: Some(thread) })
    }

    /// The address it listens on (its port chosen by the system for port 0).
    pub fn addr(&self) -> SocketAddr {
        self.addr
    }

    /// Serves on until a scrape that began after this call has been answered (so with the
    /// figures as they stand now), or for `at_most`, whichever comes first; then stops.
    pub fn linger(self, at_most: Duration) {
        let until = Instant::now() + at_most;
        let mut state = self.served.state();
        state.0 = true;
        while !state.1 {
            let left = until.saturating_duration_since(Instant::now());
            if left.is_zero() {
                break;
            }
            state =
                self.served.changed.wait_timeout(state, left).unwrap_or_else(|e| e.into_inner()).0;
        }
    }
}

impl Drop for Endpoint {
    fn drop(&mut self) {
        self.stop.store(true, Ordering::Relaxed);
        // The thread waits in accept(): a connection of our own wakes it to see the stop.
        let _ = TcpStream::connect_timeout(&wake_addr(self.addr), Duration::from_secs(1));
        if let Some(t) = self.thread.take() {
            let _ = t.join();
        }
    }
}

/// Where to connect to reach a listener bound to `addr` (an unspecified address is reached
/// on loopback).
fn wake_addr(addr: SocketAddr) -> SocketAddr {
    match addr.ip() {
        IpAddr::V4(ip) if ip.is_unspecified() => (Ipv4Addr::LOCALHOST, addr.port()).into(),
        IpAddr::V6(ip) if ip.is_unspecified() => {
            (std::net::Ipv6Addr::LOCALHOST, addr.port()).into()
        }
        _ => addr,
    }
}

fn serve(listener: &TcpListener, board: &Board, stop: &AtomicBool, served: &Served) {
    for conn in listener.incoming() {
        if stop.load(Ordering::Relaxed) {
            return;
        }
        // A connection that fails is the scraper's problem, and the next scrape's chance.
        let Ok(mut conn) = conn else { continue };
        // Only a scrape whose figures were read after linger() began has the final ones.
        let lingering = served.state().0;
        if answer(&mut conn, board).is_ok() && lingering {
            served.state().1 = true;
            served.changed.notify_all();
        }
    }
}

/// Reads one request head (at most 8 KiB) and answers it.
fn answer(conn: &mut TcpStream, board: &Board) -> io::Result<()> {
    conn.set_read_timeout(Some(READ_TIMEOUT))?;
    conn.set_write_timeout(Some(READ_TIMEOUT))?;
    let mut head = Vec::with_capacity(1024);
    let mut buf = [0u8; 1024];
    while !head.windows(4).any(|w| w == b"\r\n\r\n") {
        let n = conn.read(&mut buf)?;
        if n == 0 || head.len() + n > 8192 {
            return Err(io::ErrorKind::InvalidData.into());
        }
        head.extend_from_slice(&buf[..n]);
    }
    let line = head.split(|b| *b == b'\r').next().unwrap_or_default();
    let mut words = line.split(|b| *b == b' ');
    let (method, path) = (words.next().unwrap_or_default(), words.next().unwrap_or_default());
    let path = path.split(|b| *b == b'?').next().unwrap_or_default();
    let (status, body) = match (method, path) {
        (b"GET", b"/metrics" | b"/") => ("200 OK", crate::exposition::render(&board.cells())),
        _ => ("404 Not Found", "loadlab serves its metrics at GET /metrics\n".to_string()),
    };
    let head = format!(
        "HTTP/1.1 {status}\r\nContent-Type: text/plain; version=0.0.4; charset=utf-8\r\n\
         Content-Length: {}\r\nConnection: close\r\n\r\n",
        body.len()
    );
    conn.write_all(head.as_bytes())?;
    conn.write_all(body.as_bytes())?;
    conn.flush()
}

#[cfg(test)]
mod tests {
    use super::*;

    fn get(addr: SocketAddr, path: &str) -> String {
        let mut c = TcpStream::connect(addr).unwrap();
        write!(c, "GET {path} HTTP/1.1\r\nHost: x\r\n\r\n").unwrap();
        let mut out = String::new();
        c.read_to_string(&mut out).unwrap();
        out
    }

    #[test]
    fn a_scrape_gets_the_board_and_anything_else_a_404() {
        let board = Arc::new(Board::default());
        board.begin(crate::Labels::default(), None);
        let endpoint = Endpoint::bind(listen_addr("0").unwrap(), board).unwrap();
        assert!(endpoint.addr().ip().is_loopback());
        let answer = get(endpoint.addr(), "/metrics");
        assert!(answer.starts_with("HTTP/1.1 200 OK\r\n"), "{answer}");
        assert!(answer.contains("\r\n\r\n# HELP loadlab_requests_total "), "{answer}");
        assert!(get(endpoint.addr(), "/other").starts_with("HTTP/1.1 404 "));
    }

    #[test]
    fn an_address_in_use_is_told_as_such() {
        let taken = TcpListener::bind("127.0.0.1:0").unwrap();
        let addr = taken.local_addr().unwrap();
        let err = Endpoint::bind(addr, Arc::default()).unwrap_err();
        assert!(matches!(err, MetricsError::InUse { .. }), "{err}");
        assert_eq!(
            err.to_string(),
            format!(
                "--metrics-listen {addr}: the address is in use (another process listens there)"
            )
        );
    }

    #[test]
    fn listening_is_on_loopback_unless_an_address_is_given() {
        assert_eq!(listen_addr("9100").unwrap(), "127.0.0.1:9100".parse().unwrap());
        assert_eq!(listen_addr(":9100").unwrap(), "127.0.0.1:9100".parse().unwrap());
        assert_eq!(listen_addr("0.0.0.0:9100").unwrap(), "0.0.0.0:9100".parse().unwrap());
        assert_eq!(listen_addr("[::1]:9").unwrap(), "[::1]:9".parse().unwrap());
        assert!(listen_addr("localhost:9100").is_err());
    }

    #[test]
    fn lingering_ends_with_the_first_scrape_after_it_or_at_its_limit() {
        let endpoint = Endpoint::bind(listen_addr("0").unwrap(), Arc::default()).unwrap();
        let addr = endpoint.addr();
        let t0 = Instant::now();
        let scraper = std::thread::spawn(move || {
            std::thread::sleep(Duration::from_millis(200));
            get(addr, "/metrics")
        });
        endpoint.linger(Duration::from_secs(20));
        assert!(t0.elapsed() < Duration::from_secs(10));
        assert!(scraper.join().unwrap().starts_with("HTTP/1.1 200"));
        let endpoint = Endpoint::bind(listen_addr("0").unwrap(), Arc::default()).unwrap();
        let t0 = Instant::now();
        endpoint.linger(Duration::from_millis(300));
        assert!(t0.elapsed() >= Duration::from_millis(300));
    }
}
