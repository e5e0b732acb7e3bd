//! `https://`: a server in this process speaks TLS with a certificate signed by a CA made for
//! the test. Trusted through `--cacert` (or `--insecure`) the load runs and each new
//! connection's handshake is timed; untrusted, or a server that never answers the handshake,
//! is one clear error before any load.

use std::io::{Read, Write};
use std::net::{SocketAddr, TcpListener};
use std::sync::Arc;
use std::thread;

use rustls::pki_types::{CertificateDer, PrivateKeyDer, PrivatePkcs8KeyDer};

use super::{bench, refused, uint};

/// A CA, and a certificate for localhost and 127.0.0.1 that it signed.
pub(crate) struct Certs {
    pub ca_pem: String,
    leaf: CertificateDer<'static>,
    key: PrivateKeyDer<'static>,
}

pub(crate) fn certs() -> Certs {
    let mut ca = rcgen::CertificateParams::new(Vec::<String>::new()).unwrap();
    ca.is_ca = rcgen::IsCa::Ca(rcgen::BasicConstraints::Unconstrained);
    let ca_key = rcgen::KeyPair::generate().unwrap();
    let ca_cert = ca.self_signed(&ca_key).unwrap();
    let leaf = rcgen::CertificateParams::new(vec!["localhost".into(), "127.0.0.1".into()]).unwrap();
    let leaf_key = rcgen::KeyPair::generate().unwrap();
    let leaf_cert = leaf.signed_by(&leaf_key, &ca_cert, &ca_key).unwrap();
    Certs {
        ca_pem: ca_cert.pem(),
        leaf: leaf_cert.der().clone(),
        key: PrivateKeyDer::Pkcs8(PrivatePkcs8KeyDer::from(leaf_key.serialize_der())),
    }
}

impl Certs {
    /// A server's TLS configuration of `versions` with the certificate the CA signed.
    pub(crate) fn server_config(
        &self,
        versions: &[&'static rustls::SupportedProtocolVersion],
    ) -> Arc<rustls::ServerConfig> {
        let provider = Arc::new(rustls::crypto::ring::default_provider());
        let config = rustls::ServerConfig::builder_with_provider(provider)
            .with_protocol_versions(versions)
            .unwrap()
            .with_no_client_auth()
            .with_single_cert(vec![self.leaf.clone()], self.key.clone_key())
            .unwrap();
        Arc::new(config)
    }
}

/// What a test server does with each request head it read: answer on the TLS stream, or
/// break it; `false` ends the connection.
type Answer = fn(&mut rustls::StreamOwned<rustls::ServerConnection, std::net::TcpStream>) -> bool;

/// `hello tls`, keep-alive.
fn hello(tls: &mut rustls::StreamOwned<rustls::ServerConnection, std::net::TcpStream>) -> bool {
    let reply = b"HTTP/1.1 200 OK\r\nContent-Length: 10\r\n\r\nhello tls\n";
    tls.write_all(reply).and_then(|()| tls.flush()).is_ok()
}

/// An HTTP/1.1 keep-alive server over TLS 1.2 and 1.3 answering `hello tls`.
pub(crate) fn serve(certs: &Certs) -> SocketAddr {
    serve_with(certs, rustls::DEFAULT_VERSIONS, hello)
}

/// A server over TLS of `versions`, a thread per connection, that reads request heads and
/// gives each to `answer`. Runs until the test process ends.
fn serve_with(
    certs: &Certs,
    versions: &[&'static rustls::SupportedProtocolVersion],
    answer: Answer,
) -> SocketAddr {
    let config = certs.server_config(versions);
    let listener = TcpListener::bind("127.0.0.1:0").unwrap();
    let addr = listener.local_addr().unwrap();
    thread::spawn(move || {
        for tcp in listener.incoming() {
            let Ok(tcp) = tcp else { return };
            let config = config.clone();
            thread::spawn(move || {
                let conn = rustls::ServerConnection::new(config).unwrap();
                let mut tls = rustls::StreamOwned::new(conn, tcp);
                let mut head = Vec::new();
                let mut byte = [0u8; 1];
                loop {
                    match tls.read(&mut byte) {
                        Ok(1) => head.push(byte[0]),
                        _ => return,
                    }
                    if head.ends_with(b"\r\n\r\n") {
                        head.clear();
                        if !answer(&mut tls) {
                            return;
                        }
                    }
                }
            });
        }
    });
    addr
}

#[test]
fn https_runs_with_its_ca_times_each_new_connections_handshake_and_resumes() {
    let certs = certs();
    let addr = serve(&certs);
    let dir = tempfile::tempdir().unwrap();
    let ca = dir.path().join("ca.pem");
    std::fs::write(&ca, &certs.ca_pem).unwrap();
    let (ca, url) = (ca.display().to_string(), format!("https://localhost:{}/", addr.port()));
    let expect = ["--expect-contains", "hello tls", "--cacert", &ca];

    // Keep-alive: one handshake per connection.
    let args = [&["-c", "4", "-n", "400", "-t", "1"][..], &expect].concat();
    let kept = bench(&url, &args, 0);
    assert_eq!(uint(&kept, "requests.completed"), 400, "{kept:#}");
    assert_eq!(uint(&kept, "errors.tls"), 0, "{kept:#}");
    assert_eq!(uint(&kept, "timings_us.tls.count"), 4, "{kept:#}");
    assert!(uint(&kept, "timings_us.tls.p50") > 0, "{kept:#}");
    // What the handshake settled on, named as IANA and OpenSSL name it; this server offers
    // no ALPN protocol.
    let tls = &kept["tls"];
    assert_eq!(tls["version"], "TLSv1.3", "{kept:#}");
    let cipher = tls["cipher"].as_str().unwrap_or_default();
    assert!(cipher.starts_with("TLS_AES_") || cipher == "TLS_CHACHA20_POLY1305_SHA256", "{tls}");
    assert_eq!(tls["group"], "X25519", "{tls}");
    assert!(tls["alpn"].is_null(), "{tls}");
    // ab's layout says it as ab does.
    let mut ab = crate::support::loadlab();
    ab.args(["bench", &url, "-n", "10", "-c", "1", "--format", "ab", "--cacert", &ca]);
    let out = crate::support::output_within(ab, crate::support::RUN_LIMIT);
    let text = String::from_utf8_lossy(&out.stdout);
    assert!(text.contains(&format!("SSL/TLS Protocol:       TLSv1.3,{cipher}\n")), "{text}");
    assert!(text.contains("Server Temp Key:        X25519\n"), "{text}");
    assert!(text.contains("TLS Server Name:        localhost\n"), "{text}");

    // A connection per request: a handshake per request, in the open loop too.
    let args = [&["--no-keepalive", "--rate", "200", "-d", "1s", "-t", "1"][..], &expect].concat();
    let each = bench(&url, &args, 0);
    let completed = uint(&each, "requests.completed");
    // What is asserted is a handshake per request, not the rate: a debug build whose CPU other
    // tests share (the judgement tests' busy loops) completes fewer of the 200 within the second.
    assert!(completed >= 100, "{each:#}");
    assert_eq!(uint(&each, "timings_us.tls.count"), completed, "{each:#}");
    assert_eq!(uint(&each, "requests.failed"), 0, "{each:#}");
    // Sessions resume across the run's connections: all but the first few handshakes.
    let resumed = uint(&each, "connections.tls_resumed");
    assert!(resumed >= completed / 2, "{resumed} of {completed} resumed\n{each:#}");

    // --no-tls-resume: a full handshake every time.
    let args =
        [&["--no-keepalive", "-n", "50", "-c", "2", "--no-tls-resume"][..], &expect].concat();
    let full = bench(&url, &args, 0);
    assert_eq!(uint(&full, "timings_us.tls.count"), 50, "{full:#}");
    assert_eq!(uint(&full, "connections.tls_resumed"), 0, "{full:#}");

    // --insecure needs no CA, and an IP address as the name.
    let url_ip = format!("https://127.0.0.1:{}/", addr.port());
    let insecure = bench(&url_ip, &["-n", "50", "-c", "2", "--insecure"], 0);
    assert_eq!(uint(&insecure, "requests.completed"), 50, "{insecure:#}");
}

#[test]
fn an_untrusted_certificate_or_a_silent_handshake_is_one_clear_error() {
    let certs = certs();
    let addr = serve(&certs);
    let stderr = refused(&["-n", "10", &format!("https://localhost:{}/", addr.port())]);
    // A server it reached is not one it "cannot reach", and it says what to pass.
    assert!(!stderr.contains("cannot reach"), "{stderr}");
    for said in [
        "reached the server, but its certificate is not trusted (invalid peer certificate: ",
        "--cacert FILE",
        "--insecure",
    ] {
        assert!(stderr.contains(said), "no {said:?} in {stderr}");
    }

    // A listener that accepts and never says a word: the handshake times out. It holds every
    // connection it takes (the TCP preflight's and the handshake's) until the process ends.
    let silent = TcpListener::bind("127.0.0.1:0").unwrap();
    let port = silent.local_addr().unwrap().port();
    thread::spawn(move || {
        let mut held = Vec::new();
        for tcp in silent.incoming() {
            held.push(tcp);
        }
    });
    let url = format!("https://127.0.0.1:{port}/");
    let stderr = refused(&["-n", "1", "--connect-timeout", "500ms", "--insecure", &url]);
    assert!(stderr.contains("no handshake within"), "{stderr}");
}

/// `--tls-version` holds the client to one version: 1.2 against a server of 1.3 only fails
/// the handshake, with the reason; 1.3 runs.
#[test]
fn tls_version_offers_only_the_version_asked_for() {
    let certs = certs();
    let addr = serve_with(&certs, &[&rustls::version::TLS13], hello);
    let url = format!("https://127.0.0.1:{}/", addr.port());
    let ok = bench(&url, &["-n", "20", "-c", "1", "--insecure", "--tls-version", "1.3"], 0);
    assert_eq!(uint(&ok, "requests.completed"), 20, "{ok:#}");
    assert_eq!(ok["tls"]["version"], "TLSv1.3", "{ok:#}");
    let stderr = refused(&["-n", "1", "--insecure", "--tls-version", "1.2", &url]);
    assert!(stderr.contains("TLS: "), "{stderr}");
    // Against a server of both, 1.2 is what the run says it spoke.
    let both = serve(&certs);
    let url = format!("https://127.0.0.1:{}/", both.port());
    let old = bench(&url, &["-n", "20", "-c", "1", "--insecure", "--tls-version", "1.2"], 0);
    assert_eq!(old["tls"]["version"], "TLSv1.2", "{old:#}");
    let cipher = old["tls"]["cipher"].as_str().unwrap_or_default();
    assert!(cipher.starts_with("TLS_ECDHE_"), "{old:#}");
}

/// A server that finishes the handshake, reads the request and answers with a record that is
/// not one it could have sealed (a broken record mid-stream): every request fails as `tls`,
/// with rustls's reason kept in `errors_tls`, and nothing hangs.
#[test]
fn a_broken_record_mid_stream_fails_as_tls_with_its_reason() {
    /// An application-data record whose "ciphertext" was never sealed.
    fn broken(
        tls: &mut rustls::StreamOwned<rustls::ServerConnection, std::net::TcpStream>,
    ) -> bool {
        let _ = tls.sock.write_all(b"\x17\x03\x03\x00\x20broken-record-broken-record-xxxxx");
        let _ = tls.sock.flush();
        std::thread::sleep(std::time::Duration::from_millis(200));
        false
    }
    let port = serve_with(&certs(), rustls::DEFAULT_VERSIONS, broken).port();
    let url = format!("https://127.0.0.1:{port}/");
    let report = bench(&url, &["-n", "10", "-c", "2", "--insecure", "--timeout", "5s"], 0);
    assert_eq!(uint(&report, "errors.tls"), 10, "{report:#}");
    let reasons = report["errors_tls"].as_object().expect("errors_tls");
    assert!(!reasons.is_empty(), "{report:#}");
    assert_eq!(reasons.values().map(|n| n.as_u64().unwrap()).sum::<u64>(), 10, "{report:#}");
}

/// A server that answers with half a body, then a close_notify alert, and keeps the TCP
/// connection open: the alert ends the response there, so each request fails at once as a
/// short body (not a TLS failure, not a timeout).
#[test]
fn a_close_notify_mid_body_ends_the_response_as_short() {
    fn cut(tls: &mut rustls::StreamOwned<rustls::ServerConnection, std::net::TcpStream>) -> bool {
        let _ = tls.write_all(b"HTTP/1.1 200 OK\r\nContent-Length: 100\r\n\r\nhalf a body");
        tls.conn.send_close_notify();
        let _ = tls.flush();
        // The socket stays open well past the run's timeout: only the alert can end it.
        std::thread::sleep(std::time::Duration::from_secs(10));
        false
    }
    let port = serve_with(&certs(), rustls::DEFAULT_VERSIONS, cut).port();
    let url = format!("https://127.0.0.1:{port}/");
    let report = bench(&url, &["-n", "6", "-c", "2", "--insecure", "--timeout", "5s"], 0);
    // Waiting for an event that never comes would end each as client_timeout instead.
    assert_eq!(uint(&report, "errors.short_body"), 6, "{report:#}");
    assert_eq!(uint(&report, "errors.tls"), 0, "{report:#}");
}

/// 100 KB of `x`, keep-alive: a response of seven TLS records.
fn large(tls: &mut rustls::StreamOwned<rustls::ServerConnection, std::net::TcpStream>) -> bool {
    let mut reply = b"HTTP/1.1 200 OK\r\nContent-Length: 102400\r\n\r\n".to_vec();
    reply.resize(reply.len() + 102_400, b'x');
    tls.write_all(&reply).and_then(|()| tls.flush()).is_ok()
}

/// A read of one record's plaintext (16 KB at most) is not a drained socket: taken for one,
/// the edge-triggered loop would wait for an event that never comes with the rest of the
/// response in the socket, and every response longer than a record would end as a client
/// timeout (as against the lab's nginx over TLS: 20k.bin, 1m.bin).
#[test]
fn a_response_longer_than_one_tls_record_is_read_whole() {
    let certs = certs();
    let addr = serve_with(&certs, rustls::DEFAULT_VERSIONS, large);
    let url = format!("https://127.0.0.1:{}/", addr.port());
    let args = ["-c", "2", "-n", "200", "-t", "1", "--timeout", "5s", "--insecure"];
    let report = bench(&url, &args, 0);
    assert_eq!(uint(&report, "requests.completed"), 200, "{report:#}");
    assert_eq!(uint(&report, "requests.failed"), 0, "{report:#}");
    assert_eq!(uint(&report, "bytes.body"), 200 * 102_400, "{report:#}");
}
