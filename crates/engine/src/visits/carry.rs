//! What a visitor of a visit file carries from one answer to its next request
//! ([`loadlab_visit::Visitor`]: its cookie jar and values, the verdict on each answer), and
//! the request bytes made from it toward the run's target. httperf's session logs and page
//! views carry nothing: their requests are the table's, the same bytes for every visitor.

use std::time::Instant;

use loadlab_visit::{Call, Response, Vars, Visitor};

use crate::{RequestSpec, Target};

/// How a visit file's calls become request bytes: the run's base request (its method,
/// headers and body, which a call's own replace), toward the run's target.
#[derive(Debug, Clone)]
pub struct Render {
    pub base: RequestSpec,
    pub target: Target,
    pub keepalive: bool,
    /// Values every visitor holds from the start, as if captured (a user, a password); a
    /// `{visitor}` in one is the visitor's number, so each visitor may be given its own.
    pub given: Vars,
}

/// One visitor's state, dropped with its visit: a [`Visitor`] that makes its requests' bytes.
#[derive(Debug)]
pub(crate) struct Carry {
    visitor: Visitor,
}

impl Carry {
    /// Visitor `number`'s state as its visit begins ([`Visitor::new`]): a closed population
    /// of K visitors numbers itself 1..=K.
    pub fn new(render: &Render, number: usize) -> Carry {
        let (host, tls) = (&render.target.host, render.target.tls);
        Carry { visitor: Visitor::new(host, tls, &render.given, number) }
    }

    /// `call`'s request for this visitor, into `out`: its templates filled with the values
    /// captured so far, and the jar's cookies for its path.
    pub fn render(
        &self,
        render: &Render,
        call: &Call,
        now: Instant,
        out: &mut Vec<u8>,
    ) -> Result<(), String> {
        let (spec, path) = self.request(render, call, now)?;
        let bytes =
            spec.encode_to(&render.target, &path, render.keepalive).map_err(|e| e.to_string())?;
        out.clear();
        out.extend_from_slice(&bytes);
        Ok(())
    }

    /// The same request over HTTP/2: its header block (literals that index nothing, as a
    /// visitor's own request is sent once) into `block`, its body into `body`; returns its
    /// path, for the cookies its answer sets.
    pub fn render_h2(
        &self,
        render: &Render,
        call: &Call,
        now: Instant,
        block: &mut Vec<u8>,
        body: &mut Vec<u8>,
    ) -> Result<String, String> {
        let (spec, path) = self.request(render, call, now)?;
        let fields = spec.h2_fields(&render.target, &path).map_err(|e| e.to_string())?;
        block.clear();
        for (name, value) in &fields {
            crate::h2::hpack::put_field(block, name.as_bytes(), value.as_bytes());
        }
        body.clear();
        body.extend_from_slice(&spec.body);
        Ok(path)
    }

    /// `call`'s request for this visitor and its path, whichever protocol carries it.
    fn request(
        &self,
        render: &Render,
        call: &Call,
        now: Instant,
    ) -> Result<(RequestSpec, String), String> {
        let v = &self.visitor;
        let path = v.fill(&call.path)?;
        let mut spec = RequestSpec {
            method: call.method.clone(),
            headers: render
                .base
                .headers
                .iter()
                .filter(|(n, _)| !call.headers.iter().any(|(m, _)| m.eq_ignore_ascii_case(n)))
                .cloned()
                .collect(),
            body: render.base.body.clone(),
        };
        for (name, value) in &call.headers {
            spec.headers.push((name.clone(), v.fill(value)?));
        }
        if let Some(body) = &call.body {
            spec.body = v.fill(body)?.into_bytes();
        }
        // The jar's cookies join any Cookie field the user gave (RFC 6265 section 5.4: one
        // field, pairs separated by "; ").
        if let Some(cookies) = v.cookies(&path, now) {
            match spec.headers.iter_mut().find(|(n, _)| n.eq_ignore_ascii_case("cookie")) {
                Some((_, v)) => *v = format!("{v}; {cookies}"),
                None => spec.headers.push(("Cookie".to_string(), cookies)),
            }
        }
        Ok((spec, path))
    }
}

/// A carry judges answers as its visitor does ([`Visitor::judge`]).
impl std::ops::Deref for Carry {
    type Target = Visitor;
    fn deref(&self) -> &Visitor {
        &self.visitor
    }
}

impl std::ops::DerefMut for Carry {
    fn deref_mut(&mut self) -> &mut Visitor {
        &mut self.visitor
    }
}

/// The first of `call`'s checks that `answer` breaks, by its class (a visit that carries
/// nothing).
pub(crate) fn judge_checks(
    call: &Call,
    answer: &Response<'_>,
) -> Result<(), loadlab_visit::Broken> {
    call.broken(answer).map_or(Ok(()), Err)
}

/// The path part of a request's bytes (between the method and the version), for the jar's
/// default cookie path.
pub(crate) fn request_path(bytes: &[u8]) -> &str {
    let line = bytes.split(|b| *b == b'\r').next().unwrap_or_default();
    let mut parts = line.split(|b| *b == b' ');
    let path = parts.nth(1).unwrap_or(b"/");
    std::str::from_utf8(path).unwrap_or("/")
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::sync::{Arc, Mutex};

    use loadlab_visit::{Capture, Source, Template};

    fn render() -> Render {
        let target = Target::parse("http://127.0.0.1:8080/").unwrap();
        let base = RequestSpec {
            method: "GET".into(),
            headers: vec![("Accept-Language".into(), "en".into())],
            body: Vec::new(),
        };
        let given = [("user".to_string(), "ann-{visitor}".to_string())].into_iter().collect();
        Render { base, target, keepalive: true, given }
    }

    /// The answer to `login` gives the token and a cookie; `private` uses both, the base
    /// request's fields and the visitor's number.
    #[test]
    fn captures_and_cookies_go_into_the_next_request() {
        let capture = Capture { name: "token".into(), source: Source::Header("X-Next".into()) };
        let login = Call { captures: vec![capture], ..Call::get("/login") };
        let private = Call {
            method: "POST".into(),
            path: Template::parse("/private?t={token}&v={visitor}"),
            headers: vec![("X-Token".into(), Template::parse("{token}"))],
            body: Some(Template::parse("token={token}&log={user}")),
            ..Call::get("/")
        };
        let (r, now) = (render(), Instant::now());
        let mut carry = Carry::new(&r, 3);
        let mut bytes = Vec::new();
        carry.render(&r, &login, now, &mut bytes).unwrap();
        assert_eq!(request_path(&bytes), "/login");
        // Before the answer, the second request cannot be made.
        assert_eq!(carry.render(&r, &private, now, &mut bytes), Err("token".to_string()));
        let headers = [("Set-Cookie", "sid=42; Path=/"), ("X-Next", "ab12")];
        let headers: Vec<(String, String)> =
            headers.iter().map(|(n, v)| (n.to_string(), v.to_string())).collect();
        let answer = Response { status: 200, headers: &headers, body: b"" };
        carry.judge(&login, "/login", &answer, now).unwrap();
        carry.render(&r, &private, now, &mut bytes).unwrap();
        let text = String::from_utf8(bytes.clone()).unwrap();
        assert!(text.starts_with("POST /private?t=ab12&v=3 HTTP/1.1\r\n"), "{text}");
        for field in ["X-Token: ab12\r\n", "Cookie: sid=42\r\n", "Accept-Language: en\r\n"] {
            assert!(text.contains(field), "{field} in {text}");
        }
        // A given value's `{visitor}` is this visitor's number too.
        assert!(text.ends_with("\r\n\r\ntoken=ab12&log=ann-3"), "{text}");
        let nothing = Response { status: 200, headers: &[], body: b"" };
        assert_eq!(carry.judge(&login, "/login", &nothing, now), Err("capture"));
    }

    /// A server on 127.0.0.1 that answers each request after `delay` (so that an open loop's
    /// visits overlap), and the request targets it saw.
    fn slow_server(delay: std::time::Duration) -> (std::net::SocketAddr, Arc<Mutex<Vec<String>>>) {
        use std::io::{Read, Write};
        let listener = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
        let (addr, seen) = (listener.local_addr().unwrap(), Arc::new(Mutex::new(Vec::new())));
        let saw = seen.clone();
        std::thread::spawn(move || {
            for mut conn in listener.incoming().flatten() {
                let saw = saw.clone();
                std::thread::spawn(move || {
                    let mut buf = [0u8; 4096];
                    while let Ok(n) = conn.read(&mut buf) {
                        let head = String::from_utf8_lossy(&buf[..n]).into_owned();
                        let Some(target) = head.split(' ').nth(1) else { return };
                        saw.lock().unwrap().push(target.to_string());
                        std::thread::sleep(delay);
                        let answer = b"HTTP/1.1 200 OK\r\nContent-Length: 2\r\n\r\nok";
                        if conn.write_all(answer).is_err() {
                            return;
                        }
                    }
                });
            }
        });
        (addr, seen)
    }

    /// In the open loop a visitor's number is its place among the visits in flight: the
    /// tally's `top_visitor` is the highest number a request carried (for the lab's users
    /// rule, `visitors_past_users`), above 1 when visits overlapped, never above the visits.
    #[test]
    fn the_highest_visitor_number_of_an_open_loop_is_kept() {
        let (addr, seen) = slow_server(std::time::Duration::from_millis(60));
        let target = Target::parse(&format!("http://{addr}/")).unwrap();
        let mut config = crate::BenchConfig::new(target);
        (config.threads, config.stop) = (1, crate::Stop::Count(8));
        let visit = "[[step]]\npath = \"/u/{visitor}\"\n";
        let visits = super::super::VisitFile::parse(visit, "v", &config, None, Vars::new());
        visits.unwrap().apply(&mut config, Some(100.0), crate::Arrival::Fixed);
        let control = Arc::new(crate::Control::default());
        let result = crate::run(&config, addr, control).unwrap();
        let top = result.tally.sessions.as_deref().unwrap().top_visitor;
        let numbers: Vec<u64> = seen
            .lock()
            .unwrap()
            .iter()
            .filter_map(|t| t.strip_prefix("/u/")?.parse().ok())
            .collect();
        assert_eq!(numbers.len(), 8, "{numbers:?}");
        assert_eq!(Some(top), numbers.iter().max().copied(), "{numbers:?}");
        // 10 ms apart, 60 ms each: several in flight at once.
        assert!((2..=8).contains(&top), "{top}");
    }
}
