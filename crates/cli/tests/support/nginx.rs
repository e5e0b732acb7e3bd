//! A real nginx for integration tests: a throwaway prefix (docroot, config, logs, temp paths)
//! in its own temp dir, run in the foreground as a child process and stopped on drop.

use std::fs;
use std::net::{SocketAddr, TcpListener, TcpStream};
use std::path::{Component, Path, PathBuf};
use std::process::{Child, Command, ExitStatus, Stdio};
use std::thread;
use std::time::{Duration, Instant};

use tempfile::TempDir;

use super::skip::{self, Skip};

/// How long nginx gets to start listening, and then to exit after SIGTERM. It takes tens of
/// milliseconds; the limits are for a two-CPU CI machine starting MariaDB or Apache for
/// other tests at the same moment, and cost nothing when nginx is quick.
const START_LIMIT: Duration = Duration::from_secs(30);
const STOP_LIMIT: Duration = Duration::from_secs(30);
/// The free port we pick can be taken before nginx binds it; a new port fixes that.
const PORT_ATTEMPTS: usize = 5;

/// Starts nginx serving `files`, or skips the calling test when nginx is not installed:
/// `let nginx = require_nginx!(&[("hello.txt", b"hello")]);`
macro_rules! require_nginx {
    ($files:expr) => {
        $crate::support::nginx::require_nginx!($files, Default::default())
    };
    ($files:expr, $listen:expr) => {
        match $crate::support::nginx::Nginx::start_with($files, $listen) {
            Ok(nginx) => nginx,
            Err(skip) => {
                skip.report();
                return;
            }
        }
    };
}
pub(crate) use require_nginx;

pub struct Nginx {
    child: Child,
    port: u16,
    dir: TempDir,
    tls: bool,
}

/// How the private nginx listens.
#[derive(Debug, Clone, Copy)]
pub struct Listen {
    /// HTTP/2 (`http2` on the listener): h2c by prior knowledge, or h2 by ALPN with `tls`.
    pub http2: bool,
    /// TLS with a self-signed certificate for 127.0.0.1 made for this instance.
    pub tls: bool,
    /// nginx's `keepalive_requests`: after that many requests a connection ends (over HTTP/2
    /// with a GOAWAY).
    pub keepalive_requests: u32,
}

impl Default for Listen {
    fn default() -> Self {
        Listen { http2: false, tls: false, keepalive_requests: 1_000_000 }
    }
}

impl Nginx {
    /// nginx serving `files` (paths relative to the docroot) on 127.0.0.1. Err only when
    /// nginx is missing and skipping is allowed; any failure to start panics with its logs.
    pub fn start(docroot_files: &[(&str, &[u8])]) -> Result<Nginx, Skip> {
        Nginx::start_with(docroot_files, Listen::default())
    }

    /// The same, listening as `listen` says.
    pub fn start_with(docroot_files: &[(&str, &[u8])], listen: Listen) -> Result<Nginx, Skip> {
        let binary = skip::find_program("nginx", &["/usr/sbin/nginx"])
            .ok_or_else(|| skip::missing("nginx", "nginx"))?;
        let dir = tempfile::Builder::new().prefix("loadlab-nginx-").tempdir().expect("temp dir");
        let www = dir.path().join("www");
        fs::create_dir_all(&www).expect("create docroot");
        // nginx makes each *_temp_path itself, but not their parent.
        fs::create_dir_all(dir.path().join("tmp")).expect("create tmp");
        for (name, contents) in docroot_files {
            let path = www.join(docroot_relative(name));
            fs::create_dir_all(path.parent().expect("docroot file has a parent"))
                .expect("create docroot subdirectory");
            fs::write(&path, contents).expect("write docroot file");
        }
        if listen.tls {
            let cert = rcgen::generate_simple_self_signed(vec!["127.0.0.1".into()]).expect("cert");
            fs::write(dir.path().join("cert.pem"), cert.cert.pem()).expect("cert.pem");
            fs::write(dir.path().join("key.pem"), cert.key_pair.serialize_pem()).expect("key");
        }
        for attempt in 1..=PORT_ATTEMPTS {
            let port = free_port();
            let conf = config(dir.path(), port, listen);
            fs::write(dir.path().join("nginx.conf"), conf).expect("conf");
            // A stale pid file would read as "started" before this attempt has bound.
            let _ = fs::remove_file(pid_file(dir.path()));
            let mut child = Command::new(&binary)
                .arg("-p")
                .arg(dir.path())
                .arg("-c")
                .arg(dir.path().join("nginx.conf"))
                .stdin(Stdio::null())
                .stdout(Stdio::null())
                .stderr(fs::File::create(dir.path().join("stderr.log")).expect("stderr.log"))
                .spawn()
                .expect("spawn nginx");
            match wait_until_serving(&mut child, dir.path(), port) {
                Ok(()) => return Ok(Nginx { child, port, dir, tls: listen.tls }),
                Err(Some(_)) if attempt < PORT_ATTEMPTS && lost_port_race(dir.path()) => continue,
                Err(status) => {
                    let status = status.map_or_else(|| stop(&mut child), Some);
                    panic!("nginx did not start (exit: {status:?}):\n{}", logs(dir.path()));
                }
            }
        }
        unreachable!("the last attempt either returns or panics")
    }

    /// `http://127.0.0.1:PORT` followed by `path` (a leading `/` is added if missing).
    pub fn url(&self, path: &str) -> String {
        let slash = if path.starts_with('/') { "" } else { "/" };
        let scheme = if self.tls { "https" } else { "http" };
        format!("{scheme}://127.0.0.1:{}{slash}{path}", self.port)
    }

    pub fn addr(&self) -> SocketAddr {
        SocketAddr::from(([127, 0, 0, 1], self.port))
    }

    /// The master's pid, as nginx wrote it to its pid file.
    pub fn master_pid(&self) -> i32 {
        read_pid(self.dir.path()).expect("nginx pid file")
    }

    /// The master and its workers: the processes drop must leave behind none of.
    pub fn pids(&self) -> Vec<i32> {
        let master = self.master_pid();
        let mut pids = vec![master];
        pids.extend(children_of(master));
        pids
    }

    /// The prefix directory: config, logs, pid file and `www/`.
    pub fn dir(&self) -> &Path {
        self.dir.path()
    }

    /// error.log and captured stderr, for assertion messages.
    pub fn logs(&self) -> String {
        logs(self.dir.path())
    }
}

impl Drop for Nginx {
    fn drop(&mut self) {
        stop(&mut self.child);
    }
}

/// Whether a process with this pid exists (a zombie counts: it has not been reaped).
pub fn process_exists(pid: i32) -> bool {
    match super::sys::kill(pid, 0) {
        Ok(()) => true,
        Err(e) => e.raw_os_error() == Some(libc::EPERM),
    }
}

fn config(dir: &Path, port: u16, listen: Listen) -> String {
    let d = dir.display();
    let mut options = String::new();
    let mut tls = String::new();
    if listen.tls {
        options.push_str(" ssl");
        tls = format!("ssl_certificate \"{d}/cert.pem\"; ssl_certificate_key \"{d}/key.pem\";");
    }
    if listen.http2 {
        options.push_str(" http2");
    }
    let keepalive_requests = listen.keepalive_requests;
    // Run as root, the master would switch workers to `nobody`, which cannot enter the 0700
    // temp dir; as anyone else the directive is ignored with a warning, so add it only then.
    let user = if super::sys::is_root() { "user root;" } else { "" };
    format!(
        r#"daemon off;
master_process on;
worker_processes 1;
worker_rlimit_nofile 8192;
pid "{d}/nginx.pid";
error_log "{d}/error.log";
{user}
events {{
    worker_connections 4096;
}}
http {{
    access_log off;
    keepalive_requests {keepalive_requests};
    default_type application/octet-stream;
    client_body_temp_path "{d}/tmp/client_body";
    proxy_temp_path "{d}/tmp/proxy";
    fastcgi_temp_path "{d}/tmp/fastcgi";
    uwsgi_temp_path "{d}/tmp/uwsgi";
    scgi_temp_path "{d}/tmp/scgi";
    server {{
        listen 127.0.0.1:{port}{options};
        root "{d}/www";
        {tls}
    }}
}}
"#
    )
}

/// nginx writes its pid file only after binding its listeners, so the pid file naming our
/// child plus an accepted connection means this nginx, not whoever else has the port, serves.
fn wait_until_serving(child: &mut Child, dir: &Path, port: u16) -> Result<(), Option<ExitStatus>> {
    let deadline = Instant::now() + START_LIMIT;
    let addr = SocketAddr::from(([127, 0, 0, 1], port));
    while Instant::now() < deadline {
        if let Ok(Some(status)) = child.try_wait() {
            return Err(Some(status));
        }
        if read_pid(dir) == Some(child.id() as i32)
            && TcpStream::connect_timeout(&addr, Duration::from_millis(200)).is_ok()
        {
            return Ok(());
        }
        thread::sleep(Duration::from_millis(20));
    }
    Err(None)
}

fn lost_port_race(dir: &Path) -> bool {
    fs::read_to_string(dir.join("error.log"))
        .is_ok_and(|log| log.contains("Address already in use"))
}

/// SIGTERM is nginx's fast shutdown (SIGQUIT would wait for busy keep-alive clients); SIGKILL
/// to master and workers if it has not exited in time. Returns the exit status if known.
fn stop(child: &mut Child) -> Option<ExitStatus> {
    if let Ok(Some(status)) = child.try_wait() {
        return Some(status);
    }
    let master = child.id() as i32;
    // Our own child, not yet reaped: the pid is still ours.
    let _ = super::sys::kill(master, libc::SIGTERM);
    let deadline = Instant::now() + STOP_LIMIT;
    while Instant::now() < deadline {
        if let Ok(Some(status)) = child.try_wait() {
            return Some(status);
        }
        thread::sleep(Duration::from_millis(20));
    }
    // Workers outlive a SIGKILLed master, so find them first.
    for pid in children_of(master).into_iter().chain([master]) {
        // Our child and its children, read just now; one gone already is no failure.
        let _ = super::sys::kill(pid, libc::SIGKILL);
    }
    child.wait().ok()
}

/// Pids whose parent is `parent`, from /proc/<pid>/stat.
fn children_of(parent: i32) -> Vec<i32> {
    let Ok(entries) = fs::read_dir("/proc") else { return Vec::new() };
    entries
        .filter_map(|entry| entry.ok()?.file_name().to_str()?.parse::<i32>().ok())
        .filter(|pid| {
            // The command name may contain spaces and ')', so the fields after the last ')'
            // are the reliable ones: state, then ppid.
            let stat = fs::read_to_string(format!("/proc/{pid}/stat")).unwrap_or_default();
            let after = stat.rsplit_once(')').map_or("", |(_, rest)| rest);
            after.split_whitespace().nth(1).and_then(|p| p.parse().ok()) == Some(parent)
        })
        .collect()
}

fn pid_file(dir: &Path) -> PathBuf {
    dir.join("nginx.pid")
}

fn read_pid(dir: &Path) -> Option<i32> {
    fs::read_to_string(pid_file(dir)).ok()?.trim().parse().ok()
}

fn free_port() -> u16 {
    let listener = TcpListener::bind("127.0.0.1:0").expect("bind 127.0.0.1:0");
    listener.local_addr().expect("local_addr").port()
}

/// Docroot file names must stay inside the docroot.
fn docroot_relative(name: &str) -> &Path {
    let path = Path::new(name.trim_start_matches('/'));
    assert!(
        path.components().all(|c| matches!(c, Component::Normal(_))),
        "docroot file {name:?} must be a plain relative path"
    );
    path
}

fn logs(dir: &Path) -> String {
    let read = |name: &str| fs::read_to_string(dir.join(name)).unwrap_or_default();
    format!("--- error.log ---\n{}--- stderr ---\n{}", read("error.log"), read("stderr.log"))
}
