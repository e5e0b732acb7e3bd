//! What a visitor of a visit file carries from one answer to its next request: its cookie jar
//! and the values it captured, the request bytes rendered from them, and the verdict on each
//! answer (the call's checks, then its captures). httperf's session logs and page views carry
//! nothing: their requests are the table's, the same bytes for every visitor.

use std::time::Instant;

use loadlab_visit::{Call, Jar, Response, Vars};

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

/// `{visitor}` as a given value writes it.
const VISITOR_HOLE: &str = "{visitor}";

/// One visitor's state, dropped with its visit.
#[derive(Debug)]
pub(crate) struct Carry {
    jar: Jar,
    vars: Vars,
}

/// Why an answer ends its visit: a check broken (its class: `status`, `body`, `header`) or a
/// capture that found nothing (`capture`).
pub(crate) type Broken = &'static str;

impl Carry {
    /// Visitor `number`'s state as its visit begins: the given values, with `{visitor}` (in
    /// them and in the steps) its number. Numbers start at 1 and no two visitors in a visit
    /// at once hold the same; a closed population of K visitors numbers itself 1..=K.
    pub fn new(render: &Render, number: usize) -> Carry {
        let jar = Jar::new(&render.target.host, render.target.tls);
        let number = number.to_string();
        let mut vars: Vars = render
            .given
            .iter()
            .map(|(name, value)| (name.clone(), value.replace(VISITOR_HOLE, &number)))
            .collect();
        vars.insert(loadlab_visit::VISITOR.to_string(), number);
        Carry { jar, vars }
    }

    /// `call`'s request for this visitor, into `out`: its templates filled with the values
    /// captured so far, and the jar's cookies for its path. A name without a value (which the
    /// file's reading rules out for visits that got this far) is the error.
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
        let path = call.path.to_string_with(&self.vars)?;
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
            spec.headers.push((name.clone(), value.to_string_with(&self.vars)?));
        }
        if let Some(body) = &call.body {
            spec.body = body.to_string_with(&self.vars)?.into_bytes();
        }
        // The jar's cookies join any Cookie field the user gave (RFC 6265 section 5.4: one
        // field, pairs separated by "; ").
        if let Some(cookies) = self.jar.header(&path, now) {
            match spec.headers.iter_mut().find(|(n, _)| n.eq_ignore_ascii_case("cookie")) {
                Some((_, v)) => *v = format!("{v}; {cookies}"),
                None => spec.headers.push(("Cookie".to_string(), cookies)),
            }
        }
        Ok((spec, path))
    }

    /// Judges the answer to `call` (a request for `path`): its cookies go into the jar, then
    /// the first broken check or missing capture ends the visit; otherwise the captured
    /// values are kept for the calls to come.
    pub fn judge(
        &mut self,
        call: &Call,
        path: &str,
        answer: &Response<'_>,
        now: Instant,
    ) -> Result<(), Broken> {
        for (_, v) in answer.headers.iter().filter(|(n, _)| n.eq_ignore_ascii_case("set-cookie")) {
            self.jar.store(v, path, now);
        }
        judge_checks(call, answer)?;
        for capture in &call.captures {
            let value = capture.take(answer).ok_or("capture")?;
            self.vars.insert(capture.name.clone(), value);
        }
        Ok(())
    }
}

/// The first of `call`'s checks that `answer` breaks, by its class.
pub(crate) fn judge_checks(call: &Call, answer: &Response<'_>) -> Result<(), Broken> {
    match call.checks.iter().find(|c| !c.holds(answer)) {
        Some(broken) => Err(broken.class()),
        None => Ok(()),
    }
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
    use loadlab_visit::visit_file;

    const VISIT: &str = r#"
[[step]]
path = "/login"
status = 200
[[step.capture]]
name = "token"
regex = 'token=(\w+)'
[[step]]
method = "POST"
path = "/private?t={token}&v={visitor}"
headers = { X-Token = "{token}" }
body = "token={token}&log={user}"
header = "X-Ok"
"#;

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

    #[test]
    fn captures_and_cookies_go_into_the_next_request() {
        let visit = visit_file::parse(VISIT, "v.toml", &["user"]).unwrap();
        let (login, private) = (&visit.bursts[0].calls[0], &visit.bursts[1].calls[0]);
        let (r, now) = (render(), Instant::now());
        let mut carry = Carry::new(&r, 3);
        let mut bytes = Vec::new();
        carry.render(&r, login, now, &mut bytes).unwrap();
        assert_eq!(request_path(&bytes), "/login");
        // Before the answer, the second request cannot be made.
        assert_eq!(carry.render(&r, private, now, &mut bytes), Err("token".to_string()));
        let headers = vec![("Set-Cookie".to_string(), "sid=42; Path=/".to_string())];
        let answer = Response { status: 200, headers: &headers, body: b"<p>token=ab12</p>" };
        carry.judge(login, "/login", &answer, now).unwrap();
        carry.render(&r, private, now, &mut bytes).unwrap();
        let text = String::from_utf8(bytes.clone()).unwrap();
        assert!(text.starts_with("POST /private?t=ab12&v=3 HTTP/1.1\r\n"), "{text}");
        for field in ["X-Token: ab12\r\n", "Cookie: sid=42\r\n", "Accept-Language: en\r\n"] {
            assert!(text.contains(field), "{field} in {text}");
        }
        // A given value's `{visitor}` is this visitor's number too.
        assert!(text.ends_with("\r\n\r\ntoken=ab12&log=ann-3"), "{text}");
        // The second answer lacks its header: a broken check, by class.
        let plain = Response { status: 200, headers: &[], body: b"" };
        assert_eq!(carry.judge(private, "/private", &plain, now), Err("header"));
    }

    #[test]
    fn a_capture_that_finds_nothing_breaks_the_visit() {
        let visit = visit_file::parse(VISIT, "v.toml", &["user"]).unwrap();
        let login = &visit.bursts[0].calls[0];
        let (r, now) = (render(), Instant::now());
        let mut carry = Carry::new(&r, 3);
        let no_token = Response { status: 200, headers: &[], body: b"nothing here" };
        assert_eq!(carry.judge(login, "/login", &no_token, now), Err("capture"));
        let refused = Response { status: 403, headers: &[], body: b"token=x" };
        assert_eq!(carry.judge(login, "/login", &refused, now), Err("status"));
    }
}
