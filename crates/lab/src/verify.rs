//! Verify before any load: every workload answers 200 with the right bytes, from the
//! intended server (Server, Via, X-Varnish), PHP really executed by the intended SAPI with
//! OPcache as configured, the cache really hit, keep-alive, gzip and access logs as configured,
//! the database reachable; with TLS, the certificate verified against the instance's CA, the
//! protocol ALPN selects and session resumption; with HTTP/2, the server speaking it; where
//! HTTP/3 is served, its offer in Alt-Svc and a GET over QUIC.

use std::time::Duration;

use serde::Serialize;

use crate::catalog::{ApacheMode, Stack, Tier};
use crate::error::Error;
use crate::knobs::Knobs;
use crate::servers::{mariadb::Mariadb, Plan};
use crate::supervise;
use crate::workloads::{self, Workload, STATUS_PATH};
use loadlab_engine::client::{self as http, Endpoint, Response};
use loadlab_engine::{Answer, Validation};

/// How the lab's own client reaches `tier`: its address, over TLS trusting only the
/// instance's CA when `tier` is the one that speaks TLS. Fails when the CA cannot be read.
pub(crate) fn endpoint(plan: &Plan, tier: Tier) -> Result<Endpoint, String> {
    let addr = plan.addr(tier.name());
    let tls = match plan.serves_tls(tier) {
        true => Some(http::Tls::new(&plan.tls_files().ca, &plan.host().to_string())?),
        false => None,
    };
    Ok(Endpoint { addr, tls })
}

/// One check and its outcome.
#[derive(Clone, Debug, Serialize)]
pub struct Check {
    /// The workload (`hello.txt`) or aspect (`php`, `keepalive`, `database`) checked.
    pub workload: String,
    pub ok: bool,
    /// What was found, or why it is wrong.
    pub detail: String,
}

/// Every check of one verify.
#[derive(Clone, Debug, Serialize)]
pub struct Report {
    pub checks: Vec<Check>,
}

impl Report {
    pub fn ok(&self) -> bool {
        self.checks.iter().all(|c| c.ok)
    }

    /// The first failed check as an error that names the workload and the reason.
    pub fn error(&self) -> Option<Error> {
        self.checks
            .iter()
            .find(|c| !c.ok)
            .map(|c| Error::Verify { workload: c.workload.clone(), reason: c.detail.clone() })
    }
}

/// Runs every check that applies to the instance `plan` describes.
pub fn verify(plan: &Plan) -> Report {
    let stack = plan.stack;
    let front = plan.front();
    if front == Tier::Mariadb {
        return Report { checks: vec![check_database(plan)] };
    }
    let port = match endpoint(plan, front) {
        Ok(endpoint) => endpoint,
        Err(e) => return Report { checks: vec![to_check("tls", Err(e))] },
    };
    let port = &port;
    // Hitch relays Varnish's answers: those are what the checks judge.
    let front = plan.answering();
    let knobs = &plan.knobs;
    let mut jobs: Vec<Box<dyn FnOnce() -> Check + Send + '_>> = Vec::new();
    for workload in workloads::for_stack(stack, knobs) {
        jobs.push(Box::new(move || {
            let outcome = check_workload(port, front, &workload, &expected(plan, &workload));
            to_check(workload.name, outcome)
        }));
    }
    if knobs.tls.is_on() {
        jobs.push(Box::new(move || to_check("tls", check_tls(port, knobs.http2.is_on()))));
    }
    if knobs.http2.is_on() {
        jobs.push(Box::new(move || to_check("http2", check_http2(port))));
    }
    if plan.serves_http3(front) {
        let hello = workloads::for_stack(stack, knobs).into_iter().find(|w| w.name == "hello.txt");
        let hello = expected(plan, &hello.expect("every HTTP stack serves hello.txt"));
        jobs.push(Box::new(move || to_check("http3", check_http3(port, &hello))));
    }
    if let Some(sapi) = expected_sapi(stack) {
        jobs.push(Box::new(move || to_check("php", check_php(port, sapi, knobs))));
    }
    jobs.push(Box::new(move || to_check("keepalive", check_keepalive(port, knobs))));
    // Apache's mod_deflate leaves very small bodies alone, so PHP stacks (every Apache
    // stack is one) are checked on phpinfo's 80 KB of HTML; nginx compresses robots.txt.
    let text = if stack.has_php() { "/phpinfo.php" } else { "/robots.txt" };
    jobs.push(Box::new(move || to_check("gzip", check_gzip(port, text, knobs))));
    if plan.has_db() {
        jobs.push(Box::new(move || check_database(plan)));
    }
    // The checks are independent requests: run at once, a verify takes about as long as
    // its slowest page (the first, uncached WordPress page) rather than the sum of all.
    let mut checks: Vec<Check> = std::thread::scope(|scope| {
        let handles: Vec<_> = jobs.into_iter().map(|job| scope.spawn(job)).collect();
        handles
            .into_iter()
            .map(|h| {
                h.join().unwrap_or_else(|_| Check {
                    workload: "verify".into(),
                    ok: false,
                    detail: "a check panicked".into(),
                })
            })
            .collect()
    });
    // After the others: their requests are what the logs must hold.
    checks.push(check_access_logs(plan));
    Report { checks }
}

/// Access logs as configured. On, every nginx and Apache tier has logged some of the requests
/// the checks above made (behind Varnish, nginx logs the misses, which every page's first
/// request is); off, no tier has written one, since a log costs a write per request.
fn check_access_logs(plan: &Plan) -> Check {
    let logs: Vec<(&str, std::path::PathBuf)> = plan
        .tiers()
        .iter()
        .filter(|t| matches!(t, Tier::Nginx { .. } | Tier::Apache { .. } | Tier::Caddy { .. }))
        .map(|t| (t.name(), plan.access_log(t.name())))
        .collect();
    let outcome = if plan.knobs.access_log.is_on() {
        logs.iter()
            .map(|(tier, path)| match std::fs::read(path) {
                Ok(bytes) if bytes.contains(&b'\n') => {
                    let n = bytes.iter().filter(|&&b| b == b'\n').count();
                    Ok(format!("{tier} {n} line{}", if n == 1 { "" } else { "s" }))
                }
                Ok(_) => Err(format!("access_log is on but {} is empty", path.display())),
                Err(e) => Err(format!("access_log is on but {}: {e}", path.display())),
            })
            .collect::<Result<Vec<_>, _>>()
            .map(|counts| format!("logged: {}", counts.join(", ")))
    } else {
        match logs.iter().find(|(_, path)| path.exists()) {
            Some((tier, path)) => {
                Err(format!("access_log is off but {tier} wrote {}", path.display()))
            }
            None => Ok("off: no access log written".to_string()),
        }
    };
    to_check("access_log", outcome)
}

fn to_check(name: &str, outcome: Result<String, String>) -> Check {
    Check { workload: name.into(), ok: outcome.is_ok(), detail: outcome.unwrap_or_else(|e| e) }
}

/// GETs the workload and judges its answer by `expected` (the workload's check, the one its
/// cells' responses will meet, from the intended server) with the engine's verdict on a whole
/// answer ([`Validation::verify`]), the one the runner's verify gives too. Through Varnish,
/// twice: Varnish must have answered (it names itself in `Via` and `X-Varnish`, passing on its
/// backend's `Server`), the second time from its cache.
pub fn check_workload(
    port: &Endpoint,
    front: Tier,
    workload: &Workload,
    expected: &Validation,
) -> Result<String, String> {
    let response = http::get(port, workload.path, &[])?;
    let mut detail = expected.verify(&answer(&response))?;
    if front == Tier::Varnish {
        let via = response.header("via").unwrap_or_default();
        let id = response.header("x-varnish");
        if !via.to_ascii_lowercase().contains("varnish") || id.is_none() {
            return Err(format!("not from varnish: Via {via:?}, X-Varnish {id:?}"));
        }
        detail.push_str(&format!(", Via {via}"));
        let again = http::get(port, workload.path, &[])?;
        expected.verify(&answer(&again))?;
        // X-Varnish holds this request's id, then, on a hit, the id of the request that
        // filled the cache.
        let ids = again.header("x-varnish").unwrap_or_default().split_whitespace().count();
        if ids != 2 {
            return Err(format!(
                "no cache hit after warm-up (X-Varnish: {:?}, Age: {:?})",
                again.header("x-varnish").unwrap_or_default(),
                again.header("age").unwrap_or_default()
            ));
        }
        detail.push_str(", cache hit after warm-up");
    }
    Ok(detail)
}

/// The lab client's response as a verify judges it.
pub fn answer(response: &Response) -> Answer<'_> {
    Answer { status: response.status, server: response.header("server"), body: &response.body }
}

/// What `workload`'s answer from the instance `plan` describes must be: the check its cells'
/// responses will meet ([`crate::workloads::Expect::validation`]), from the front server,
/// whose product its `Server` header names. Varnish is known by `Via` and `X-Varnish` instead
/// ([`check_workload`]): the `Server` it passes on is its backend's, which a user's VCL may
/// remove.
pub fn expected(plan: &Plan, workload: &Workload) -> Validation {
    let server = match plan.answering() {
        Tier::Nginx { .. } => Some("nginx".to_string()),
        Tier::Apache { .. } => Some("Apache".to_string()),
        Tier::Caddy { .. } => Some("Caddy".to_string()),
        _ => None,
    };
    Validation { server, ..workload.expect.validation() }
}

/// The SAPI that must answer PHP requests: it proves which tier ran the page.
fn expected_sapi(stack: &Stack) -> Option<&'static str> {
    stack.http_tiers.iter().find_map(|tier| match tier {
        Tier::Apache { mode: ApacheMode::PreforkModPhp } => Some("apache2handler"),
        Tier::PhpFpm => Some("fpm-fcgi"),
        Tier::SpawnFcgi => Some("cgi-fcgi"),
        _ => None,
    })
}

fn check_php(port: &Endpoint, sapi: &str, knobs: &Knobs) -> Result<String, String> {
    let response = http::get(port, STATUS_PATH, &[])?;
    if response.status != 200 {
        return Err(format!("{STATUS_PATH}: status {}", response.status));
    }
    let status: serde_json::Value = serde_json::from_slice(&response.body)
        .map_err(|e| format!("{STATUS_PATH} did not answer JSON ({e}): PHP did not run it"))?;
    let got = status["sapi"].as_str().unwrap_or_default();
    if got != sapi {
        return Err(format!("PHP ran as {got:?}, not {sapi:?}"));
    }
    let opcache = status["opcache_enabled"].as_bool().unwrap_or(false);
    if opcache != knobs.opcache_on() {
        let want = if knobs.opcache_on() { "on" } else { "off" };
        return Err(format!("OPcache is {}, expected {want}", if opcache { "on" } else { "off" }));
    }
    Ok(format!(
        "PHP {} as {got}, OPcache {}",
        status["version"].as_str().unwrap_or("?"),
        if opcache { "on" } else { "off" }
    ))
}

/// Keep-alive as configured: without the knob every response announces `Connection: close`,
/// as it does with one request allowed per connection.
fn check_keepalive(port: &Endpoint, knobs: &Knobs) -> Result<String, String> {
    let head = http::get_head_keepalive(port, "/hello.txt")?;
    let closes = head.header("connection").is_some_and(|v| v.eq_ignore_ascii_case("close"));
    let one_request = knobs.keepalive_requests == Some(1);
    match (knobs.keepalive.is_on() && !one_request, closes) {
        (true, false) => Ok("connections kept open".into()),
        (false, true) if one_request => Ok("one request per connection, then closed".into()),
        (false, true) => Ok("every response closes its connection".into()),
        (true, true) => Err("keep-alive is on but the server closed the connection".into()),
        (false, false) if one_request => {
            Err("one request per connection, but the server kept the connection".into())
        }
        (false, false) => Err("keep-alive is off but the server kept the connection".into()),
    }
}

/// gzip as configured, on a text page asked for with `Accept-Encoding: gzip`.
fn check_gzip(port: &Endpoint, path: &str, knobs: &Knobs) -> Result<String, String> {
    let response = http::get(port, path, &[("Accept-Encoding", "gzip")])?;
    let gzipped = response.header("content-encoding").is_some_and(|v| v.contains("gzip"));
    match (knobs.gzip.is_on(), gzipped) {
        (true, true) => Ok(format!("{path} is gzipped")),
        (false, false) => Ok(format!("{path} is sent as is")),
        (true, false) => Err(format!("gzip is on but {path} came uncompressed")),
        (false, true) => Err(format!("gzip is off but {path} came gzipped")),
    }
}

/// TLS as the instance's clients will meet it. Both `h2` and `http/1.1` are offered by ALPN,
/// as a browser offers them, so the server's choice is what is judged: `h2` with http2 on,
/// `http/1.1` otherwise. The certificate must verify against the instance's CA alone for the
/// address the client uses (rustls checks the chain and the name, RFC 6125). A second
/// connection must resume the first one's session, as the engine's do by default: TLS 1.3
/// tickets arrive after the handshake (RFC 8446 section 4.6.1), so the first connection
/// reads an answer before it closes.
fn check_tls(port: &Endpoint, http2: bool) -> Result<String, String> {
    let tls = port.tls.as_ref().ok_or("tls is on but the front speaks plain HTTP")?;
    let config = tls.config(&["h2", "http/1.1"]);
    let (mut stream, first) = http::handshake(port.addr, tls, &config, http::TIMEOUT)?;
    let want = if http2 { "h2" } else { "http/1.1" };
    let alpn = &first.negotiated.alpn;
    if alpn.as_deref() != Some(want) {
        return Err(format!("ALPN selected {alpn:?} of h2 and http/1.1, expected {want}"));
    }
    if http2 {
        http::h2_settings(&mut stream)?;
    } else {
        let answer = http::exchange(&mut stream, port.addr, "/hello.txt", &[])?;
        if answer.status != 200 {
            return Err(format!("/hello.txt over TLS: status {}", answer.status));
        }
    }
    drop(stream);
    let (_, again) = http::handshake(port.addr, tls, &config, http::TIMEOUT)?;
    if !again.resumed {
        return Err(format!(
            "a second connection did not resume the session ({}): no session cache or tickets",
            again.negotiated.version
        ));
    }
    Ok(format!(
        "{} {}, ALPN {want}, certificate for {} verified by the instance's CA, session resumed",
        first.negotiated.version, first.negotiated.cipher, tls.host
    ))
}

/// The front speaks HTTP/2: after the connection preface its first frame is SETTINGS. Over
/// TLS only `h2` is offered by ALPN; in the clear it is h2c with prior knowledge.
fn check_http2(port: &Endpoint) -> Result<String, String> {
    let mut stream = http::connect_h2(port)?;
    let settings = http::describe_settings(&http::h2_settings(&mut stream)?);
    let how = if port.tls.is_some() { "h2 by ALPN" } else { "h2c with prior knowledge" };
    Ok(format!("{how}: {settings}"))
}

/// The front serves HTTP/3: its answer over TCP names h3 on its own port in `Alt-Svc` (RFC
/// 9114 section 3.1.1), which is how a client learns a server speaks it, and a GET of
/// `/hello.txt` over QUIC on that UDP port, trusting the instance's CA alone, answers 200 with
/// its bytes from the intended server.
fn check_http3(port: &Endpoint, expected: &Validation) -> Result<String, String> {
    // RFC 7838's alt-value for the UDP port of the same number.
    let h3 = format!("h3=\":{}\"", port.addr.port());
    let answer = loadlab_engine::h3::get::offered(port, "/hello.txt", http::TIMEOUT)
        .map_err(|e| e.to_string())?;
    let detail = expected.verify(&self::answer(&answer))?;
    Ok(format!("Alt-Svc offers {h3}; /hello.txt over HTTP/3: {detail}"))
}

/// The database answers a query over its socket, with the whole Country table.
fn check_database(plan: &Plan) -> Check {
    let outcome = Mariadb::client(plan).map_err(|e| e.to_string()).and_then(|mut client| {
        client.args(["--batch", "--skip-column-names", "-e"]);
        client.arg("SELECT COUNT(*) FROM loadlab.Country");
        supervise::run(client, Duration::from_secs(10)).map_err(|e| e.to_string())
    });
    let check = match outcome {
        Ok(out) if out.trim() == "240" => Ok("reachable, Country has 240 rows".to_string()),
        Ok(out) => Err(format!("Country has {:?} rows, expected 240", out.trim())),
        Err(e) => Err(format!("not reachable: {e}")),
    };
    to_check("database", check)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::knobs::OnOff;

    /// A plan for nginx-proxy-apache (an nginx and an Apache tier) in a scratch run directory;
    /// nothing is started.
    fn plan(run: &std::path::Path, access_log: OnOff) -> Plan {
        Plan {
            id: "nginx-proxy-apache-1".into(),
            stack: crate::catalog::stack("nginx-proxy-apache").unwrap(),
            knobs: Knobs { access_log, ..Knobs::default() },
            run: run.to_path_buf(),
            ports: vec![("nginx", 1), ("apache", 2)],
            run_as: None,
            apache_modules: "/usr/lib/apache2/modules".into(),
            mod_php: "/usr/lib/apache2/modules/libphp8.2.so".into(),
            net: None,
            listen: None,
        }
    }

    fn response(status: u16, server: &str, body: &[u8]) -> Response {
        let headers = vec![("server".to_string(), server.to_string())];
        Response { status, headers, body: body.to_vec() }
    }

    #[test]
    fn an_answer_is_judged_by_the_check_its_cells_meet_from_the_front_server() {
        let dir = tempfile::tempdir().unwrap();
        let plan = plan(dir.path(), OnOff::Off);
        let all = workloads::for_stack(plan.stack, &Knobs::default());
        let hello = all.iter().find(|w| w.name == "hello.txt").unwrap();
        let judge = |r: &Response, w: &Workload| expected(&plan, w).verify(&answer(r));
        let ok = judge(&response(200, "nginx/1.22", workloads::HELLO), hello);
        assert_eq!(ok, Ok("status 200, 13 body bytes, Server nginx/1.22".into()));
        let e = judge(&response(404, "nginx/1.22", b"gone"), hello).unwrap_err();
        assert_eq!(e, "status 404, expected 200 (body starts \"gone\")");
        // nginx-proxy-apache: nginx in front, its Server header on every answer.
        let e = judge(&response(200, "Apache", workloads::HELLO), hello).unwrap_err();
        assert_eq!(e, "not from nginx: Server \"Apache\"");
        let e = judge(&response(200, "nginx", b"hello"), hello).unwrap_err();
        assert!(e.starts_with("the body (5 bytes, status 200) has SHA-256 "), "{e}");

        let page = Workload {
            name: "page",
            path: "/page.php",
            expect: workloads::Expect::Markers(vec!["<html".into(), "done".into()]),
            php: true,
        };
        assert!(judge(&response(200, "nginx", b"<html>all done</html>"), &page).is_ok());
        let source = response(200, "nginx", b"<?php echo '<html>done'; ?>");
        let e = judge(&source, &page).unwrap_err();
        assert_eq!(e, "PHP source was served instead of being executed");
        // The load checks the first marker only; verify checks every one.
        let e = judge(&response(200, "nginx", b"<html>half"), &page).unwrap_err();
        assert_eq!(e, "the body (10 bytes, status 200) lacks \"done\"");
    }

    #[test]
    fn the_front_server_is_named_but_varnish_by_its_own_headers() {
        let dir = tempfile::tempdir().unwrap();
        let mut plan = plan(dir.path(), OnOff::Off);
        let hello = &workloads::for_stack(plan.stack, &Knobs::default())[0];
        for (stack, server) in [
            ("apache-event-fpm", Some("Apache")),
            ("nginx-proxy-apache", Some("nginx")),
            ("varnish-nginx-fpm", None),
        ] {
            plan.stack = crate::catalog::stack(stack).unwrap();
            assert_eq!(expected(&plan, hello).server.as_deref(), server, "{stack}");
        }
    }

    #[test]
    fn access_logs_must_match_the_knob() {
        let dir = tempfile::tempdir().unwrap();
        std::fs::create_dir(dir.path().join("logs")).unwrap();
        let on = plan(dir.path(), OnOff::On);
        let off = plan(dir.path(), OnOff::Off);
        assert!(check_access_logs(&off).ok, "no log written, knob off");
        let missing = check_access_logs(&on);
        assert!(!missing.ok && missing.detail.contains("nginx-access.log"), "{missing:?}");

        std::fs::write(on.access_log("nginx"), "GET /hello.txt\nGET /robots.txt\n").unwrap();
        std::fs::write(on.access_log("apache"), "").unwrap();
        let empty = check_access_logs(&on);
        assert!(!empty.ok && empty.detail.contains("apache-access.log is empty"), "{empty:?}");

        std::fs::write(on.access_log("apache"), "GET /hello.php\n").unwrap();
        let both = check_access_logs(&on);
        assert!(both.ok, "{both:?}");
        assert_eq!(both.detail, "logged: nginx 2 lines, apache 1 line");
        let written = check_access_logs(&off);
        assert!(!written.ok && written.detail.contains("access_log is off"), "{written:?}");
    }

    /// An instance's certificates, written by the lab into `dir` (as for nginx-1 with tls on).
    fn certs(dir: &std::path::Path) -> crate::cert::Files {
        let mut plan = plan(dir, OnOff::Off);
        plan.stack = crate::catalog::stack("nginx").unwrap();
        plan.knobs.tls = OnOff::On;
        crate::cert::write(&plan).unwrap()
    }

    /// A TLS server in this process with the lab's certificate for 127.0.0.1, offering
    /// `alpn`, resuming sessions or not, answering each request `hello, world!` and closing.
    fn serve(files: &crate::cert::Files, alpn: &[&str], resume: bool) -> std::net::SocketAddr {
        use rustls::pki_types::pem::PemObject;
        use std::io::{Read, Write};
        let chain: Vec<_> = rustls::pki_types::CertificateDer::pem_file_iter(&files.cert)
            .unwrap()
            .map(Result::unwrap)
            .collect();
        let key = rustls::pki_types::PrivateKeyDer::from_pem_file(&files.key).unwrap();
        let provider = std::sync::Arc::new(rustls::crypto::ring::default_provider());
        let mut config = rustls::ServerConfig::builder_with_provider(provider)
            .with_safe_default_protocol_versions()
            .unwrap()
            .with_no_client_auth()
            .with_single_cert(chain, key)
            .unwrap();
        config.alpn_protocols = alpn.iter().map(|p| p.as_bytes().to_vec()).collect();
        if !resume {
            config.session_storage = std::sync::Arc::new(rustls::server::NoServerSessionStorage {});
            config.send_tls13_tickets = 0;
        }
        let config = std::sync::Arc::new(config);
        let listener = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
        let addr = listener.local_addr().unwrap();
        std::thread::spawn(move || {
            for tcp in listener.incoming().take(4) {
                let Ok(tcp) = tcp else { return };
                let conn = rustls::ServerConnection::new(config.clone()).unwrap();
                let mut tls = rustls::StreamOwned::new(conn, tcp);
                let mut head = Vec::new();
                let mut byte = [0u8; 1];
                while !head.ends_with(b"\r\n\r\n") {
                    match tls.read(&mut byte) {
                        Ok(1) => head.push(byte[0]),
                        _ => break,
                    }
                }
                if head.ends_with(b"\r\n\r\n") {
                    let answer = b"HTTP/1.1 200 OK\r\nContent-Length: 13\r\n\r\nhello, world!";
                    let _ = tls.write_all(answer);
                    tls.conn.send_close_notify();
                    let _ = tls.flush();
                }
            }
        });
        addr
    }

    fn endpoint(addr: std::net::SocketAddr, ca: &std::path::Path) -> Endpoint {
        Endpoint { addr, tls: Some(http::Tls::new(ca, "127.0.0.1").unwrap()) }
    }

    #[test]
    fn tls_is_checked_for_the_instances_ca_the_alpn_choice_and_resumption() {
        let dir = tempfile::tempdir().unwrap();
        let files = certs(dir.path());
        let good = check_tls(&endpoint(serve(&files, &["http/1.1"], true), &files.ca), false);
        let good = good.unwrap();
        assert!(good.contains("ALPN http/1.1, certificate for 127.0.0.1 verified"), "{good}");
        assert!(good.ends_with("session resumed"), "{good}");

        // Another instance's CA does not vouch for this one's certificate.
        let other = tempfile::tempdir().unwrap();
        let stranger = certs(other.path()).ca;
        let addr = serve(&files, &["http/1.1"], true);
        let err = check_tls(&endpoint(addr, &stranger), false).unwrap_err();
        assert!(err.contains("invalid peer certificate"), "{err}");

        // http2 on, but the server selects http/1.1.
        let addr = serve(&files, &["http/1.1"], true);
        let err = check_tls(&endpoint(addr, &files.ca), true).unwrap_err();
        assert!(err.contains("ALPN selected Some(\"http/1.1\")") && err.contains("expected h2"));

        // No session cache and no tickets: every handshake is a full one.
        let addr = serve(&files, &["http/1.1"], false);
        let err = check_tls(&endpoint(addr, &files.ca), false).unwrap_err();
        assert!(err.contains("did not resume the session"), "{err}");
    }
}
