//! Verify by answers, judged: a cell's configuration made into one request of each workload
//! (`one_request`), sent by the engine exactly as its cells will send it (method, headers,
//! body, TLS) and checked by the same validation, the answer kept whole and judged by the
//! engine's verdict on a whole answer, the one the lab's verify gives ([`judge`]). It is
//! an external target's whole verify (there is no lab to ask), and a custom workload's on a
//! lab stack (the lab's verify knows only its own workloads); the executor sends the requests
//! (`verify_answers`). Ready means verified: a wrong answer stops the run before the
//! instance's cells. A visit file's workload is verified by one whole visit of one visitor,
//! its captures carried and its checks applied (`judge_visit`): its requests alone would go
//! with `{nonce}` unfilled and prove nothing.

use loadlab_engine::{Answer, BenchConfig, BenchResult, ErrorClass, Order, Pacing, Stop, Traffic};

/// `config` as one request on one connection, nothing before it. Keep-alive and the protocol
/// stay the cell's (HTTP/2 has no connection per request): the run ends after its request. A
/// URL list's cells are verified by each of its requests once, in the file's order.
pub(crate) fn one_request(config: BenchConfig) -> BenchConfig {
    let views_pacing = config.pacing;
    // The load is the cell's, not the request's: none of it, its shape included (a shape
    // sets a duration that one request has not), reaches the verify.
    let mut config = BenchConfig {
        pacing: Pacing::Closed,
        connections: 1,
        threads: 1,
        pin: Vec::new(),
        stop: Stop::Count(1),
        warmup: std::time::Duration::ZERO,
        shape: None,
        hdr_log: false,
        coalesce: loadlab_engine::Coalesce::Exact,
        ..config
    };
    config.validation.keep_answer = true;
    // A visit file's visit: one visitor, one whole visit (the budget counts visits).
    if config.visits.as_ref().is_some_and(|p| p.render.is_some()) {
        return config;
    }
    // So too one page view that fetches from other origins (`view_hosts`): only a visitor's
    // connections reach them (the table's requests go to the target), and views arrive at
    // their rate (the first at once).
    if config.visits.as_ref().is_some_and(|p| p.origins.speaks_other()) {
        config.pacing = views_pacing;
        return config;
    }
    // Page views on the target alone: their requests, the page and each resource, are
    // verified one by one.
    config.visits = None;
    if let Traffic::Mix(mix) = &config.traffic {
        let mut each = (**mix).clone();
        each.order = Order::Sequential;
        for e in &mut each.entries {
            e.weight = 1;
        }
        config.stop = Stop::Count(each.entries.len() as u64);
        config.traffic = Traffic::Mix(std::sync::Arc::new(each));
    }
    config
}

/// For a URL list: the first of its requests that did not answer as checked, named by its
/// line and path; `None` when each did (or the run sent no list).
pub(crate) fn judge_entries(r: &BenchResult, config: &BenchConfig) -> Option<String> {
    let Traffic::Mix(mix) = &config.traffic else { return None };
    let (i, (e, t)) = mix
        .entries
        .iter()
        .zip(&r.tally.entries)
        .enumerate()
        .find(|(_, (_, t))| t.completed == 0)?;
    let statuses: Vec<String> = loadlab_store::metric::STATUS_CLASSES
        .iter()
        .zip(t.status_classes)
        .filter(|(_, n)| *n > 0)
        .map(|(c, n)| format!("{n} {c}"))
        .collect();
    Some(format!(
        "{} line {} ({} {}): no answer passed its check ({})",
        mix.file,
        e.line,
        e.method(&config.request),
        crate::commands::bench::traffic::entry_name(config, i, e),
        if statuses.is_empty() { "no answer".into() } else { statuses.join(", ") }
    ))
}

/// For a visit file's one visit: the step at which it failed and why (its check's class, or
/// its request's error), named as the steps' figures name it; `None` when the visit completed
/// (or the run was not a visit file's).
pub(crate) fn judge_visit(r: &BenchResult, config: &BenchConfig) -> Option<Result<String, String>> {
    let plan = config.visits.as_ref().filter(|p| p.render.is_some())?;
    let Some(sessions) = r.tally.sessions.as_deref() else {
        return Some(Err(format!("{}: the visit did not run", plan.file)));
    };
    if sessions.completed >= 1 {
        let steps = plan.steps.len();
        return Some(Ok(format!("one visit of {steps} steps passed every check")));
    }
    let failed = sessions.steps.iter().enumerate().find(|(_, s)| !s.failed.is_empty());
    let Some((i, step)) = failed else {
        return Some(Err(format!(
            "{}: the visit did not end within {:?}",
            plan.file, config.timeout
        )));
    };
    let name = plan.steps.get(i).map_or_else(|| format!("step {}", i + 1), String::clone);
    let classes: Vec<&str> = step.failed.keys().map(String::as_str).collect();
    let why = match classes.iter().find(|c| loadlab_visit::CHECK_CLASSES.contains(c)) {
        Some(&"capture") => "a capture found nothing in its answer".to_string(),
        Some(check) => format!("its {check} check failed"),
        None => format!("its request failed ({})", classes.join(", ")),
    };
    Some(Err(format!("{}: step {name}: {why}", plan.file)))
}

/// Whether the one answer of `r`, sent as `config` says, is the one expected: what it was, or
/// what was wrong with it ([`loadlab_engine::Validation::verify`] on the answer the run kept,
/// with the Server header it saw). Without an answer, how the exchange failed.
pub fn judge(r: &BenchResult, config: &BenchConfig) -> Result<String, String> {
    if let Some(visit) = judge_visit(r, config) {
        return visit;
    }
    let t = &r.tally;
    let server = r.server.as_deref();
    if let Some(kept) = &t.answer {
        let answer = Answer { status: kept.status, server, body: &kept.body };
        return config.validation.verify(&answer);
    }
    if t.completed >= 1 {
        // A measure that keeps no answer (the fakes): the load's check passed it.
        let status = t.status_counts().into_keys().next().unwrap_or(0);
        let server = server.map_or(String::new(), |s| format!(", Server {s}"));
        return Ok(format!("status {status}, {} body bytes{server}", t.bytes_body));
    }
    let Some((class, _)) = t.errors.iter().find(|(_, n)| *n > 0) else {
        return Err(format!("no answer within {:?}", config.timeout));
    };
    Err(match class {
        ErrorClass::Tls => {
            let reasons: Vec<&str> = t.errors.tls_reasons.keys().map(String::as_str).collect();
            format!("TLS failed: {}", reasons.join("; "))
        }
        ErrorClass::Other => {
            let errnos: Vec<String> = t.errors.other_errno.keys().map(i32::to_string).collect();
            format!("failed (errno {})", errnos.join(", "))
        }
        other => format!("failed: {}", describe(other)),
    })
}

fn describe(class: ErrorClass) -> &'static str {
    match class {
        ErrorClass::Connrefused => "connection refused",
        ErrorClass::Connreset => "the connection was reset or closed before any answer",
        ErrorClass::ClientTimeout => "no complete answer within the load's timeout",
        ErrorClass::ConnectTimeout => "no connection within the connect timeout",
        ErrorClass::Parse => "the answer is not valid HTTP/1.1",
        ErrorClass::ShortBody => "the connection closed before the body's end",
        other => other.name(),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::fake::result;
    use loadlab_engine::{KeptAnswer, Validation};

    /// A run of one request that failed as `class`; a validation failure keeps its answer.
    fn failed(class: ErrorClass, status: u16, body: &[u8]) -> BenchResult {
        let mut r = result(Pacing::Closed, 0, 0.01, 100, 0.1);
        r.tally.status = Box::new([0; 1000]);
        if status > 0 {
            r.tally.status[usize::from(status)] = 1;
        }
        r.tally.bytes_body = body.len() as u64;
        r.tally.failed = 1;
        r.tally.errors.add(class, None);
        if class == ErrorClass::Validation {
            r.tally.answer = Some(Box::new(KeptAnswer { status, body: body.to_vec() }));
        }
        r
    }

    fn checked(v: Validation) -> BenchConfig {
        let target = loadlab_engine::Target::parse("http://127.0.0.1:9/").expect("a URL");
        BenchConfig { validation: v, ..BenchConfig::new(target) }
    }

    #[test]
    fn a_wrong_answer_says_what_was_wrong() {
        let two_xx = checked(Validation { status: vec![(200, 299)], ..Validation::default() });
        let e = judge(&failed(ErrorClass::Validation, 404, b"gone"), &two_xx).unwrap_err();
        assert_eq!(e, "status 404, expected 2xx (body starts \"gone\")");
        let contains = checked(Validation {
            status: vec![(200, 200), (304, 304)],
            body_contains: Some(b"welcome".to_vec()),
            ..Validation::default()
        });
        let e = judge(&failed(ErrorClass::Validation, 200, b"hello, world!"), &contains);
        assert_eq!(e.unwrap_err(), "the body (13 bytes, status 200) lacks \"welcome\"");
        let e = judge(&failed(ErrorClass::Validation, 500, b""), &contains).unwrap_err();
        assert_eq!(e, "status 500, expected 200,304 (body starts \"\")");
        let e = judge(&failed(ErrorClass::Connreset, 0, b""), &two_xx).unwrap_err();
        assert!(e.contains("reset"), "{e}");
        let mut tls = failed(ErrorClass::Tls, 0, b"");
        tls.tally.errors.tls_reasons.insert("invalid peer certificate: UnknownIssuer".into(), 1);
        let e = judge(&tls, &two_xx).unwrap_err();
        assert_eq!(e, "TLS failed: invalid peer certificate: UnknownIssuer");
    }

    #[test]
    fn a_good_answer_says_its_status_size_and_server() {
        let mut r = result(Pacing::Closed, 1, 0.01, 100, 0.1);
        let ok = judge(&r, &checked(Validation::default())).unwrap();
        assert_eq!(ok, "status 200, 0 body bytes, Server fake");
        r.tally.answer = Some(Box::new(KeptAnswer { status: 200, body: b"welcome".to_vec() }));
        let ok = judge(&r, &checked(Validation::default())).unwrap();
        assert_eq!(ok, "status 200, 7 body bytes, Server fake");
        // The answer kept whole is judged whole: the server a verify asks for, too.
        let from_apache = Validation { server: Some("Apache".into()), ..Validation::default() };
        let e = judge(&r, &checked(from_apache)).unwrap_err();
        assert_eq!(e, "not from Apache: Server \"fake\"");
    }

    #[test]
    fn one_request_keeps_its_answer() {
        assert!(one_request(checked(Validation::default())).validation.keep_answer);
    }

    /// A cell whose load changes over time (a ramp, stages; open or closed) is verified by one
    /// plain request: the shape, which sets a duration, is the load's, not the request's.
    #[test]
    fn a_shaped_loads_one_request_has_no_shape() {
        let stages = loadlab_engine::Shape::parse_stages("1s:1..10,1s:10").expect("stages");
        let open = Pacing::Open {
            rate: 50.0,
            arrival: loadlab_engine::Arrival::Fixed,
            max_connections: 100,
        };
        for pacing in [Pacing::Closed, open] {
            let mut config = BenchConfig { pacing, ..checked(Validation::default()) };
            config.shaped(stages.clone());
            config.check().expect("the cell's load is valid");
            let one = one_request(config);
            assert!(one.shape.is_none() && !one.hdr_log, "{one:?}");
            assert_eq!((one.pacing, one.stop), (Pacing::Closed, Stop::Count(1)));
            one.check().expect("its one request is valid");
        }
    }

    /// Answers every request on 127.0.0.1 with `answer` and closes, until dropped (at most
    /// 16 connections and 20 s).
    struct Server {
        addr: std::net::SocketAddr,
        stop: std::sync::Arc<std::sync::atomic::AtomicBool>,
        thread: Option<std::thread::JoinHandle<()>>,
    }

    impl Server {
        fn answering(answer: String) -> Server {
            use std::io::{ErrorKind, Read, Write};
            use std::sync::atomic::Ordering;
            let listener = std::net::TcpListener::bind("127.0.0.1:0").expect("a port");
            listener.set_nonblocking(true).expect("nonblocking");
            let addr = listener.local_addr().expect("its address");
            let stop = std::sync::Arc::new(std::sync::atomic::AtomicBool::new(false));
            let stopped = stop.clone();
            let thread = std::thread::spawn(move || {
                let until = std::time::Instant::now() + std::time::Duration::from_secs(20);
                let mut served = 0;
                while served < 16 && !stopped.load(Ordering::Relaxed) {
                    let mut tcp = match listener.accept() {
                        Ok((tcp, _)) => tcp,
                        Err(e) if e.kind() == ErrorKind::WouldBlock => {
                            if std::time::Instant::now() > until {
                                return;
                            }
                            std::thread::sleep(std::time::Duration::from_millis(5));
                            continue;
                        }
                        Err(_) => return,
                    };
                    served += 1;
                    let _ = tcp.set_nonblocking(false);
                    let _ = tcp.set_read_timeout(Some(std::time::Duration::from_secs(2)));
                    let (mut head, mut byte) = (Vec::new(), [0u8; 1]);
                    while !head.ends_with(b"\r\n\r\n") && matches!(tcp.read(&mut byte), Ok(1)) {
                        head.push(byte[0]);
                    }
                    let _ = tcp.write_all(answer.as_bytes());
                }
            });
            Server { addr, stop, thread: Some(thread) }
        }
    }

    impl Drop for Server {
        fn drop(&mut self) {
            self.stop.store(true, std::sync::atomic::Ordering::Relaxed);
            if let Some(thread) = self.thread.take() {
                let _ = thread.join();
            }
        }
    }

    /// A visit workload is verified by one whole visit, its capture carried into
    /// the next step and its checks applied; a failing step is named with its check.
    #[test]
    fn a_visit_is_verified_whole_and_its_failing_step_named() {
        let body = "token=ab12 hello";
        let answer = format!(
            "HTTP/1.1 200 OK\r\nContent-Length: {}\r\nConnection: close\r\n\r\n{body}",
            body.len()
        );
        let server = Server::answering(answer);
        let visit = |last_check: &str| {
            format!(
                "[[step]]\npath = \"/a\"\nstatus = 200\n[[step.capture]]\nname = \"t\"\n\
                 regex = 'token=(\\w+)'\n[[step]]\npath = \"/b?t={{t}}\"\n{last_check}\n"
            )
        };
        let run = |text: &str| {
            let url = format!("http://{}/", server.addr);
            let mut config = BenchConfig::new(loadlab_engine::Target::parse(&url).unwrap());
            let v = loadlab_engine::visits::VisitFile::parse(
                text,
                "v.toml",
                &config,
                None,
                Default::default(),
            )
            .expect("a visit");
            v.apply(&mut config, None, loadlab_engine::Arrival::Fixed);
            config.connections = 3;
            let config = one_request(config);
            assert_eq!((config.connections, config.stop), (1, Stop::Count(1)));
            let control = std::sync::Arc::new(loadlab_engine::Control::default());
            let r = loadlab_engine::run(&config, server.addr, control).expect("a run");
            judge(&r, &config)
        };
        assert_eq!(
            run(&visit("contains = \"hello\"")),
            Ok("one visit of 2 steps passed every check".into())
        );
        let e = run(&visit("contains = \"welcome\"")).unwrap_err();
        assert_eq!(e, "v.toml: step 2 GET /b?t={t}: its body check failed");
    }

    /// The "one verifier": a wrong answer reads the same from the lab's verify of its
    /// own stacks (its blocking client) and from the runner's (one request sent by the load,
    /// its answer kept), for each way an answer can be wrong.
    #[test]
    fn the_same_wrong_answer_reads_the_same_from_the_lab_and_from_the_runner() {
        use loadlab_lab::workloads::{self, Expect, Workload};
        let nginx_fpm = loadlab_lab::stack("nginx-fpm").expect("a stack");
        let all = workloads::for_stack(nginx_fpm, &loadlab_lab::Knobs::default());
        let hello = all.iter().find(|w| w.name == "hello.txt").expect("hello.txt").clone();
        let markers = workloads::FRONT_PAGE_MARKERS.iter().map(|m| m.to_string()).collect();
        let page =
            Workload { name: "wordpress", path: "/", expect: Expect::Markers(markers), php: true };
        let half = format!("<html>{}</html>", workloads::FRONT_PAGE_MARKERS[0]);
        let cases: [(&Workload, u16, &str, &str, &str); 5] = [
            (&hello, 200, "nginx/1.22", "hello", "has SHA-256"),
            (&hello, 404, "nginx/1.22", "<h1>Not Found</h1>", "status 404, expected 200"),
            (&hello, 200, "Apache/2.4", "hello, world!", "not from nginx"),
            (&page, 200, "nginx", &half, "lacks \"loadlab post 5\""),
            (&page, 200, "nginx", "<?php the_content(); ?>", "PHP source"),
        ];
        for (workload, status, server, body, wrong) in cases {
            let expected =
                Validation { server: Some("nginx".into()), ..workload.expect.validation() };
            let len = body.len();
            let answer = format!(
                "HTTP/1.1 {status} X\r\nServer: {server}\r\nContent-Length: {len}\r\n\
                 Connection: close\r\n\r\n{body}"
            );
            let server = Server::answering(answer);
            let port = loadlab_engine::client::Endpoint::plain(server.addr);
            let front = loadlab_lab::Tier::Nginx { php: loadlab_lab::catalog::NginxPhp::Fpm };
            let lab = loadlab_lab::verify::check_workload(&port, front, workload, &expected);

            let url = format!("http://{}{}", server.addr, workload.path);
            let target = loadlab_engine::Target::parse(&url).expect("a URL");
            let config =
                one_request(BenchConfig { validation: expected, ..BenchConfig::new(target) });
            let control = std::sync::Arc::new(loadlab_engine::Control::default());
            let r = loadlab_engine::run(&config, server.addr, control).expect("a run");
            let runner = judge(&r, &config);

            let lab = lab.expect_err("a wrong answer");
            assert!(lab.contains(wrong), "{lab}");
            assert_eq!(runner, Err(lab));
        }
    }
}
