//! Verify by answers, judged: a cell's configuration made into one request of each workload
//! ([`one_request`]), sent by the engine exactly as its cells will send it (method, headers,
//! body, TLS) and checked by the same validation, and what its answer says ([`judge`]). It is
//! an external target's whole verify (there is no lab to ask), and a custom workload's on a
//! lab stack (the lab's verify knows only its own workloads); the executor sends the requests
//! (`verify_answers`). Ready means verified: a wrong answer stops the run before the
//! instance's cells.

use loadlab_engine::{BenchConfig, BenchResult, ErrorClass, Order, Pacing, Stop, Traffic};

/// `config` as one request on one connection, nothing before it. Keep-alive and the protocol
/// stay the cell's (HTTP/2 has no connection per request): the run ends after its request. A
/// URL list's cells are verified by each of its requests once, in the file's order.
pub(crate) fn one_request(mut config: BenchConfig) -> BenchConfig {
    config.pacing = Pacing::Closed;
    config.connections = 1;
    config.threads = 1;
    config.pin.clear();
    config.stop = Stop::Count(1);
    config.warmup = std::time::Duration::ZERO;
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
    let (e, t) = mix.entries.iter().zip(&r.tally.entries).find(|(_, t)| t.completed == 0)?;
    let statuses: Vec<String> = ["1xx", "2xx", "3xx", "4xx", "5xx"]
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
        e.path,
        if statuses.is_empty() { "no answer".into() } else { statuses.join(", ") }
    ))
}

/// Whether the one answer of `r`, sent as `config` says, passed its validation: what it was,
/// or what was wrong with it.
pub fn judge(r: &BenchResult, config: &BenchConfig) -> Result<String, String> {
    let (t, v) = (&r.tally, &config.validation);
    let status = t.status_counts().into_keys().next();
    if t.completed >= 1 {
        let server = r.server.as_deref().map_or(String::new(), |s| format!(", Server {s}"));
        return Ok(format!(
            "status {}, {} body bytes{server}",
            status.map_or("?".into(), |s| s.to_string()),
            t.bytes_body
        ));
    }
    let Some((class, _)) = t.errors.iter().find(|(_, n)| *n > 0) else {
        return Err(format!("no answer within {:?}", config.timeout));
    };
    Err(match class {
        ErrorClass::Validation => v.explain(None, status.unwrap_or(0), t.bytes_body),
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
    use loadlab_engine::Validation;

    fn failed(class: ErrorClass, status: u16, body: u64) -> BenchResult {
        let mut r = result(Pacing::Closed, 0, 0.01, 100, 0.1);
        r.tally.status = Box::new([0; 1000]);
        if status > 0 {
            r.tally.status[usize::from(status)] = 1;
        }
        r.tally.bytes_body = body;
        r.tally.failed = 1;
        r.tally.errors.add(class, None);
        r
    }

    fn checked(v: Validation) -> BenchConfig {
        let target = loadlab_engine::Target::parse("http://127.0.0.1:9/").expect("a URL");
        BenchConfig { validation: v, ..BenchConfig::new(target) }
    }

    #[test]
    fn a_wrong_answer_says_what_was_wrong() {
        let two_xx = checked(Validation { status: vec![(200, 299)], ..Validation::default() });
        let e = judge(&failed(ErrorClass::Validation, 404, 153), &two_xx).unwrap_err();
        assert_eq!(e, "status 404, expected 2xx");
        let contains = checked(Validation {
            status: vec![(200, 200), (304, 304)],
            body_contains: Some(b"welcome".to_vec()),
            ..Validation::default()
        });
        let e = judge(&failed(ErrorClass::Validation, 200, 13), &contains).unwrap_err();
        assert_eq!(e, "the body (13 bytes, status 200) lacks \"welcome\"");
        let e = judge(&failed(ErrorClass::Validation, 500, 13), &contains).unwrap_err();
        assert_eq!(e, "status 500, expected 200,304");
        let e = judge(&failed(ErrorClass::Connreset, 0, 0), &two_xx).unwrap_err();
        assert!(e.contains("reset"), "{e}");
        let mut tls = failed(ErrorClass::Tls, 0, 0);
        tls.tally.errors.tls_reasons.insert("invalid peer certificate: UnknownIssuer".into(), 1);
        let e = judge(&tls, &two_xx).unwrap_err();
        assert_eq!(e, "TLS failed: invalid peer certificate: UnknownIssuer");
    }

    #[test]
    fn a_good_answer_says_its_status_size_and_server() {
        let r = result(Pacing::Closed, 1, 0.01, 100, 0.1);
        let ok = judge(&r, &checked(Validation::default())).unwrap();
        assert_eq!(ok, "status 200, 0 body bytes, Server fake");
    }
}
