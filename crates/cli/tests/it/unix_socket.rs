//! `--unix-socket PATH`: the load goes to a unix-domain socket, the URL gives the Host header
//! and the path (as curl's flag). A server in this process answers on a socket in the test's
//! own directory; each model runs against it, and a socket that is not there is unreachable.

use std::io::{BufRead, BufReader, Write};
use std::os::unix::net::UnixListener;
use std::path::PathBuf;
use std::thread;

use super::{at, bench, uint};
use crate::support::{loadlab, output_within, RUN_LIMIT};

/// A keep-alive HTTP/1.1 server on a unix socket, a thread per connection, answering every
/// request with `Host` echoed in its body. Lives as long as the test's temporary directory.
struct UnixServer {
    dir: tempfile::TempDir,
}

impl UnixServer {
    fn start() -> UnixServer {
        let dir = tempfile::tempdir().expect("temp dir");
        let listener = UnixListener::bind(dir.path().join("http.sock")).expect("bind");
        thread::spawn(move || {
            for stream in listener.incoming() {
                let Ok(stream) = stream else { return };
                thread::spawn(move || {
                    let mut reader = BufReader::new(stream.try_clone().expect("clone"));
                    let mut writer = stream;
                    loop {
                        let (mut line, mut host) = (String::new(), String::new());
                        // A request head: lines until the empty one.
                        loop {
                            line.clear();
                            match reader.read_line(&mut line) {
                                Ok(0) | Err(_) => return,
                                Ok(_) => {}
                            }
                            if let Some(h) = line.strip_prefix("Host: ") {
                                host = h.trim().to_string();
                            }
                            if line == "\r\n" {
                                break;
                            }
                        }
                        let body = format!("host {host}\n");
                        let head =
                            format!("HTTP/1.1 200 OK\r\nContent-Length: {}\r\n\r\n", body.len());
                        if writer.write_all(format!("{head}{body}").as_bytes()).is_err() {
                            return;
                        }
                    }
                });
            }
        });
        UnixServer { dir }
    }

    fn path(&self) -> PathBuf {
        self.dir.path().join("http.sock")
    }
}

#[test]
fn closed_and_open_loops_run_over_a_unix_socket() {
    let server = UnixServer::start();
    let sock = server.path().display().to_string();
    let url = "http://app.example/status";
    let contains = ["--expect-contains", "host app.example"];
    let closed =
        bench(url, &["--unix-socket", &sock, "-c", "4", "-n", "300", contains[0], contains[1]], 0);
    assert_eq!(uint(&closed, "requests.completed"), 300, "{closed:#}");
    assert_eq!(uint(&closed, "requests.failed"), 0, "{closed:#}");
    assert_eq!(at(&closed, "config.address"), &format!("unix:{sock}"), "{closed:#}");
    assert_eq!(at(&closed, "client.link.interface"), "unix socket", "{closed:#}");
    assert_eq!(at(&closed, "client.network_bound"), false, "{closed:#}");

    let open = bench(url, &["--unix-socket", &sock, "--rate", "400", "-d", "1s"], 0);
    assert_eq!(uint(&open, "requests.failed"), 0, "{open:#}");
    // The schedule's 400, less what a stall of this shared machine at the window's end left
    // in flight (the open-loop tests against nginx bound the rate itself).
    let completed = uint(&open, "requests.completed");
    assert!((300..=401).contains(&completed), "{open:#}");
}

#[test]
fn a_missing_socket_is_unreachable_and_source_ips_are_refused() {
    let dir = tempfile::tempdir().expect("temp dir");
    let missing = dir.path().join("none.sock").display().to_string();
    let mut cmd = loadlab();
    cmd.args(["bench", "--unix-socket", &missing, "-n", "1", "http://localhost/"]);
    let out = output_within(cmd, RUN_LIMIT);
    assert_eq!(out.status.code(), Some(3), "{out:?}");
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(stderr.contains(&format!("cannot reach unix:{missing}")), "{stderr}");

    let mut cmd = loadlab();
    cmd.args(["bench", "--unix-socket", &missing, "--source-ips", "127.0.0.1", "http://x/"]);
    let out = output_within(cmd, RUN_LIMIT);
    assert_eq!(out.status.code(), Some(2), "{out:?}");
}
