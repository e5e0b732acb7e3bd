//! Reading a metrics endpoint as a scraper does: a free port to give `--metrics-listen`, and
//! one `GET` of a path over HTTP/1.0 (Prometheus' own HTTP API is read the same way).

use std::io::{Read, Write};
use std::net::{SocketAddr, TcpListener, TcpStream};
use std::process::Child;
use std::time::{Duration, Instant};

/// A port free now on 127.0.0.1 (the listener is closed before it is handed on).
pub fn free_port() -> u16 {
    TcpListener::bind("127.0.0.1:0").unwrap().local_addr().unwrap().port()
}

/// `GET path` on `addr` over HTTP/1.0: the body, or `None` if nothing answered.
pub fn get(addr: SocketAddr, path: &str) -> Option<String> {
    let mut c = TcpStream::connect_timeout(&addr, Duration::from_secs(2)).ok()?;
    c.set_read_timeout(Some(Duration::from_secs(5))).ok()?;
    write!(c, "GET {path} HTTP/1.0\r\nHost: {addr}\r\n\r\n").ok()?;
    let mut out = String::new();
    c.read_to_string(&mut out).ok()?;
    out.contains(" 200 ").then(|| out.split_once("\r\n\r\n").map(|(_, b)| b.to_string()))?
}

/// The value of each sample of `family` in an exposition `text` whose labels include every
/// one of `labels` (`stack="nginx"`).
pub fn values(text: &str, family: &str, labels: &[&str]) -> Vec<f64> {
    text.lines()
        .filter(|l| l.starts_with(&format!("{family}{{")))
        .filter(|l| labels.iter().all(|want| l.contains(want)))
        .filter_map(|l| l.rsplit_once(' ')?.1.parse().ok())
        .collect()
}

/// Scrapes `addr` until it serves a lab cell's tiers under `cell`'s labels (each
/// `name="value"`): some CPU, every tier's memory above nothing; that scrape. Panics with the
/// last scrape if `child` ends first or `limit` passes.
pub fn tiers_served(child: &mut Child, addr: SocketAddr, cell: &[&str], limit: Duration) -> String {
    let deadline = Instant::now() + limit;
    let mut last = String::new();
    loop {
        if Instant::now() > deadline || child.try_wait().unwrap().is_some() {
            let _ = child.kill();
            panic!("no tier with CPU and memory was served; the last scrape:\n{last}");
        }
        std::thread::sleep(Duration::from_millis(300));
        let Some(text) = get(addr, "/metrics") else { continue };
        let cpu: f64 = values(&text, "loadlab_tier_cpu_seconds_total", cell).iter().sum();
        let memory = values(&text, "loadlab_tier_memory_bytes", cell);
        if cpu > 0.0 && !memory.is_empty() && memory.iter().all(|m| *m > 0.0) {
            return text;
        }
        last = text;
    }
}

/// Scrapes `addr` until `child`, lingering for a scrape of its final figures, exits (within
/// `within`), and asserts it succeeded.
pub fn scraped_until_it_exits(child: &mut Child, addr: SocketAddr, within: Duration) {
    let exited = Instant::now() + within;
    while child.try_wait().unwrap().is_none() {
        assert!(Instant::now() < exited, "still lingering after being scraped");
        std::thread::sleep(Duration::from_millis(300));
        let _ = get(addr, "/metrics");
    }
    assert!(child.wait().unwrap().success());
}
