//! Visits and page views over `https://`: a visitor's connections are TLS
//! connections of the run's one client configuration (its trust flags, its resumed sessions).
//! The servers are the visits' own test servers (`Behaviour::Login`, `Behaviour::Site`)
//! behind a TLS front in this process ([`Front`]) with a certificate of a CA made for the
//! test, so what the server received can still be checked.

use std::io::{self, Read, Write};
use std::net::{SocketAddr, TcpListener, TcpStream};
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex};
use std::thread::{self, JoinHandle};
use std::time::Duration;

use super::mixes::file;
use super::tls::{certs, Certs};
use super::visit_files::{assert_private_with_cookies, login_visit, TOKEN};
use super::{assert_accounted, at, bench, uint};
use crate::support::{Behaviour, SitePath, TestServer};

/// A TLS-terminating front: each connection it accepts is relayed in the clear to `backend`
/// on a connection of its own, both ways. Stopped, and its threads joined, when dropped.
struct Front {
    addr: SocketAddr,
    stop: Arc<AtomicBool>,
    threads: Arc<Mutex<Vec<JoinHandle<()>>>>,
    accept: Option<JoinHandle<()>>,
}

impl Front {
    fn start(certs: &Certs, backend: SocketAddr) -> Front {
        let config = certs.server_config(rustls::DEFAULT_VERSIONS);
        let listener = TcpListener::bind("127.0.0.1:0").unwrap();
        let addr = listener.local_addr().unwrap();
        let stop = Arc::new(AtomicBool::new(false));
        let threads = Arc::new(Mutex::new(Vec::new()));
        let (s, t) = (stop.clone(), threads.clone());
        let accept = thread::spawn(move || {
            for tcp in listener.incoming() {
                if s.load(Ordering::SeqCst) {
                    return;
                }
                let Ok(tcp) = tcp else { return };
                let (config, s) = (config.clone(), s.clone());
                let relay = thread::spawn(move || relay(config, tcp, backend, &s));
                t.lock().unwrap().push(relay);
            }
        });
        Front { addr, stop, threads, accept: Some(accept) }
    }

    fn url(&self, host: &str, path: &str) -> String {
        format!("https://{host}:{}{path}", self.addr.port())
    }
}

impl Drop for Front {
    fn drop(&mut self) {
        self.stop.store(true, Ordering::SeqCst);
        // accept() has no timeout: a connection of our own wakes it to see the stop.
        let _ = TcpStream::connect_timeout(&self.addr, Duration::from_secs(1));
        if let Some(accept) = self.accept.take() {
            let _ = accept.join();
        }
        for relay in std::mem::take(&mut *self.threads.lock().unwrap()) {
            let _ = relay.join();
        }
    }
}

/// Relays one connection until either side ends it or the front stops. Both sockets read
/// with a short timeout, so one thread serves both directions (HTTP/1.1 without pipelining
/// never has both talking at once).
fn relay(
    config: Arc<rustls::ServerConfig>,
    tcp: TcpStream,
    backend: SocketAddr,
    stop: &AtomicBool,
) {
    let Ok(mut back) = TcpStream::connect(backend) else { return };
    let tick = Some(Duration::from_millis(1));
    if tcp.set_read_timeout(tick).is_err() || back.set_read_timeout(tick).is_err() {
        return;
    }
    let mut tls = rustls::StreamOwned::new(rustls::ServerConnection::new(config).unwrap(), tcp);
    let mut buf = vec![0u8; 64 << 10];
    let waiting =
        |e: &io::Error| matches!(e.kind(), io::ErrorKind::WouldBlock | io::ErrorKind::TimedOut);
    while !stop.load(Ordering::SeqCst) {
        match tls.read(&mut buf) {
            Ok(0) => return,
            Ok(n) if back.write_all(&buf[..n]).is_err() => return,
            Ok(_) => {}
            Err(e) if waiting(&e) => {}
            Err(_) => return,
        }
        match back.read(&mut buf) {
            Ok(0) => {
                tls.conn.send_close_notify();
                let _ = tls.flush();
                return;
            }
            Ok(n) if tls.write_all(&buf[..n]).and_then(|()| tls.flush()).is_err() => return,
            Ok(_) => {}
            Err(e) if waiting(&e) => {}
            Err(_) => return,
        }
    }
}

/// The test's CA in a file of `dir`, as `--cacert` takes it.
fn ca_file(dir: &tempfile::TempDir, certs: &Certs) -> String {
    let ca = dir.path().join("ca.pem");
    std::fs::write(&ca, &certs.ca_pem).unwrap();
    ca.display().to_string()
}

#[test]
fn a_login_visit_over_https_carries_its_cookie_and_token_on_resumed_tls_connections() {
    let certs = certs();
    let server = TestServer::start(Behaviour::Login);
    let front = Front::start(&certs, server.addr());
    let dir = tempfile::tempdir().unwrap();
    let ca = ca_file(&dir, &certs);
    let (_d, visit) = file("login.toml", &login_visit(TOKEN, "0s", r#"X-Token = "{token}""#));
    let url = front.url("localhost", "/");

    // A closed population of 3 visitors, 12 visits, trusting the test's CA.
    let report = bench(&url, &["--visits", &visit, "-c", "3", "-n", "12", "--cacert", &ca], 0);
    assert_eq!(uint(&report, "visits.completed"), 12, "{report:#}");
    assert_eq!(uint(&report, "visits.failed"), 0, "{report:#}");
    assert_accounted(&report, 36);
    assert_eq!(server.requests(), 36);
    assert_eq!(uint(&report, "errors.tls"), 0, "{report:#}");
    assert_eq!(at(&report, "tls.version"), "TLSv1.3", "{report:#}");
    // Every connection a visitor opened was a TLS one, its handshake timed once...
    let opened = uint(&report, "connections.opened");
    assert!(opened >= 12, "a connection a visit at least: {report:#}");
    assert_eq!(uint(&report, "timings_us.tls.count"), opened, "{report:#}");
    // ...and the visitors' connections resumed sessions of the run's one configuration: only
    // the first handshakes, before any ticket came, were full ones.
    let resumed = uint(&report, "connections.tls_resumed");
    assert!(resumed >= opened / 2, "{resumed} of {opened} resumed:\n{report:#}");
    assert_private_with_cookies(&server, 12);

    // An open loop, trusting anything (--insecure), toward the address itself.
    let url = front.url("127.0.0.1", "/");
    let report = bench(&url, &["--visits", &visit, "--rate", "40", "-n", "8", "--insecure"], 0);
    assert_eq!(uint(&report, "visits.completed"), 8, "{report:#}");
    assert_eq!(server.requests(), 36 + 24);
}

#[test]
fn a_visit_without_its_captured_token_fails_over_https_as_in_the_clear() {
    let certs = certs();
    let server = TestServer::start(Behaviour::Login);
    let front = Front::start(&certs, server.addr());
    let (_d, visit) = file("no-token.toml", &login_visit(TOKEN, "0s", r#"X-Token = "{sid}""#));
    let url = front.url("127.0.0.1", "/");
    let report = bench(&url, &["--visits", &visit, "--rate", "40", "-n", "6", "--insecure"], 0);
    assert_eq!(uint(&report, "visits.completed"), 0, "{report:#}");
    assert_eq!(uint(&report, "visits.failed"), 6, "{report:#}");
    assert_eq!(at(&report, "visits.steps")[2]["failed"], serde_json::json!({ "status": 6 }));
    assert_eq!(uint(&report, "errors.tls"), 0, "{report:#}");
}

#[test]
fn a_page_view_over_https_finds_and_fetches_its_resources_over_tls() {
    let certs = certs();
    let page = r#"<html><head><link rel="stylesheet" href="/s.css"></head>
        <body><img src="/i.png"></body></html>"#;
    let site = vec![
        SitePath::new("/", &[], page),
        SitePath::new("/s.css", &[], "body { background: url(/bg.png) }"),
        SitePath::new("/i.png", &[], "png"),
        SitePath::new("/bg.png", &[], "png"),
    ];
    let server = TestServer::start(Behaviour::Site(site));
    let front = Front::start(&certs, server.addr());
    let dir = tempfile::tempdir().unwrap();
    let ca = ca_file(&dir, &certs);
    let url = front.url("localhost", "/");
    let report = bench(&url, &["--view", "--rate", "20", "-n", "5", "--cacert", &ca], 0);
    assert_eq!(uint(&report, "views.completed"), 5, "{report:#}");
    assert_eq!(uint(&report, "views.failed"), 0, "{report:#}");
    // Discovery read the page and its stylesheet over TLS, and found what the CSS names.
    let listed: Vec<&str> = at(&report, "views.resources")
        .as_array()
        .unwrap()
        .iter()
        .map(|r| r["path"].as_str().unwrap())
        .collect();
    assert_eq!(listed, ["/s.css", "/i.png", "/bg.png"], "{report:#}");
    assert_accounted(&report, 20);
    assert_eq!(uint(&report, "timings_us.tls.count"), uint(&report, "connections.opened"));
    assert_eq!(at(&report, "tls.version"), "TLSv1.3", "{report:#}");
}

/// A site of one stylesheet, `/s.css`, whose body is `css`.
fn sheet_site(css: &str) -> TestServer {
    TestServer::start(Behaviour::Site(vec![SitePath::new("/s.css", &[], css)]))
}

/// A page naming the stylesheet at `sheet` (another origin's, by its whole URL) and its own
/// `/s.css`, both served.
fn page_naming(sheet: &str) -> Vec<SitePath> {
    let page = format!(
        r#"<html><head><link rel="stylesheet" href="{sheet}">
        <link rel="stylesheet" href="/s.css"></head><body></body></html>"#
    );
    vec![SitePath::new("/", &[], &page), SitePath::new("/s.css", &[], "p { margin: 0 }")]
}

/// Each row of `urls`: its name and completed requests.
fn url_rows(report: &serde_json::Value) -> Vec<(String, u64)> {
    let rows = at(report, "urls").as_array().expect("an array");
    rows.iter()
        .map(|u| (u["path"].as_str().unwrap().to_string(), u["completed"].as_u64().unwrap()))
        .collect()
}

#[test]
fn a_plain_pages_view_fetches_an_allowed_https_origins_stylesheet_over_resumed_tls() {
    let certs = certs();
    let other = sheet_site("body { color: black }");
    let front = Front::start(&certs, other.addr());
    let sheet = front.url("localhost", "/s.css");
    let page = TestServer::start(Behaviour::Site(page_naming(&sheet)));
    let dir = tempfile::tempdir().unwrap();
    let ca = ca_file(&dir, &certs);
    let allowed = format!("localhost:{}", front.addr.port());
    let views = 8;
    let n = views.to_string();
    let args = ["--view", "--view-hosts", &allowed, "--rate", "20", "-n", &n, "--cacert", &ca];
    let report = bench(&page.url("/"), &args, 0);
    assert_eq!(uint(&report, "views.completed"), views, "{report:#}");
    assert_eq!(uint(&report, "views.failed"), 0, "{report:#}");
    assert!(at(&report, "views.skipped").as_array().unwrap().is_empty(), "{report:#}");
    assert_accounted(&report, 3 * views);
    // Behind the TLS front, the stylesheet once a view, and once read at discovery; each with
    // its origin's Host.
    let asked: Vec<(String, Option<String>)> = (other.received().into_iter())
        .map(|(_, r)| (r.target.clone(), r.header("host").map(str::to_string)))
        .collect();
    assert_eq!(asked.len() as u64, views + 1, "{asked:?}");
    assert!(asked.iter().skip(1).all(|(t, h)| t == "/s.css" && *h == Some(allowed.clone())));
    // Each viewer's connection to the https origin made a handshake, timed and counted; the
    // page's own connections are plain, and the run's `tls` is the target's: none.
    assert_eq!(uint(&report, "connections.opened"), 2 * views, "{report:#}");
    assert_eq!(uint(&report, "timings_us.tls.count"), views, "{report:#}");
    assert_eq!(uint(&report, "errors.tls"), 0, "{report:#}");
    let resumed = uint(&report, "connections.tls_resumed");
    assert!(resumed >= views / 2, "{resumed} of {views} resumed:\n{report:#}");
    assert!(report.get("tls").is_none_or(|t| t.is_null()), "{report:#}");
    // Two origins' `/s.css`, two rows told apart by origin.
    let mut rows = url_rows(&report);
    rows.sort();
    let mut expected = vec![("/".to_string(), views), ("/s.css".into(), views), (sheet, views)];
    expected.sort();
    assert_eq!(rows, expected, "{report:#}");
}

#[test]
fn an_https_pages_view_fetches_an_allowed_origins_plain_stylesheet_in_the_clear() {
    let certs = certs();
    let other = sheet_site("body { color: black }");
    let page = TestServer::start(Behaviour::Site(page_naming(&other.url("/s.css"))));
    let front = Front::start(&certs, page.addr());
    let url = front.url("127.0.0.1", "/");
    let views = 6;
    let n = views.to_string();
    let allowed = other.addr().to_string();
    let args = ["--view", "--view-hosts", &allowed, "--rate", "20", "-n", &n, "--insecure"];
    let report = bench(&url, &args, 0);
    assert_eq!(uint(&report, "views.completed"), views, "{report:#}");
    assert_accounted(&report, 3 * views);
    assert_eq!(other.targets().get("/s.css"), Some(&(views + 1)));
    assert_eq!(other.connections(), views + 1, "one connection of each viewer, and discovery's");
    // Only the page's connections were TLS ones.
    assert_eq!(uint(&report, "timings_us.tls.count"), views, "{report:#}");
    assert_eq!(at(&report, "tls.version"), "TLSv1.3", "{report:#}");
}

#[test]
fn an_allowed_https_origin_the_run_does_not_trust_is_one_error_before_any_load() {
    let certs = certs();
    let other = sheet_site("body { color: black }");
    let front = Front::start(&certs, other.addr());
    let sheet = front.url("localhost", "/s.css");
    let page = TestServer::start(Behaviour::Site(page_naming(&sheet)));
    let allowed = format!("localhost:{}", front.addr.port());
    let url = page.url("/");
    let stderr = super::refused(&[&url, "--view", "--view-hosts", &allowed, "--rate", "5"]);
    let origin = format!("https://localhost:{}", front.addr.port());
    assert!(stderr.contains(&origin), "{stderr}");
    assert!(stderr.contains("certificate is not trusted"), "{stderr}");
    assert_eq!(stderr.trim().lines().count(), 1, "one line:\n{stderr}");
    // Discovery read the page and its own stylesheet; not one view.
    assert_eq!(page.targets().get("/"), Some(&1), "{stderr}");
    assert_eq!(other.requests(), 0, "{stderr}");
}
