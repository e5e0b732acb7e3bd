//! One visitor's state through its visit: its cookie jar and the values it holds (the run's
//! given values and its number, then what its answers gave), the `{name}`s of a call filled
//! from them, and the verdict on each answer: its cookies kept, the call's checks, then its
//! captures. The engine makes the request bytes around it; httperf's session logs and page
//! views have no state, their calls only checks ([`Call::broken`]).

use std::time::Instant;

use crate::{Call, Jar, Response, Template, Vars};

/// Why an answer ends its visit: a check broken (its class: `status`, `body`, `header`) or a
/// capture that found nothing (`capture`), as [`crate::CHECK_CLASSES`] names them.
pub type Broken = &'static str;

/// A visitor's jar and values, dropped with its visit (the next visit starts with none, as a
/// new visitor would).
#[derive(Debug)]
pub struct Visitor {
    jar: Jar,
    vars: Vars,
}

impl Visitor {
    /// Visitor `number` of `host` (over TLS when `https`) as its visit begins: the `given`
    /// values, with `{visitor}` in them (and in the steps) its number. Numbers start at 1 and
    /// no two visitors in a visit at once hold the same.
    pub fn new(host: &str, https: bool, given: &Vars, number: usize) -> Visitor {
        let number = number.to_string();
        let own: Vars = [(crate::VISITOR.to_string(), number)].into_iter().collect();
        let mut vars: Vars = given
            .iter()
            .map(|(name, value)| (name.clone(), Template::parse(value).to_string_keeping(&own)))
            .collect();
        vars.extend(own);
        Visitor { jar: Jar::new(host, https), vars }
    }

    /// `template` with this visitor's values; the first name without one is the error (which
    /// the file's reading rules out for visits that got this far).
    pub fn fill(&self, template: &Template) -> Result<String, String> {
        template.to_string_with(&self.vars)
    }

    /// The jar's cookies for a request of `path`, as a Cookie field's value.
    pub fn cookies(&self, path: &str, now: Instant) -> Option<String> {
        self.jar.header(path, now)
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
        if let Some(broken) = call.broken(answer) {
            return Err(broken);
        }
        for capture in &call.captures {
            let value = capture.take(answer).ok_or("capture")?;
            self.vars.insert(capture.name.clone(), value);
        }
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::visit_file::{parse, tests::LOGIN};

    fn visitor() -> Visitor {
        let given = [("user".to_string(), "ann-{visitor}-{other}".to_string())];
        Visitor::new("127.0.0.1", false, &given.into_iter().collect(), 3)
    }

    #[test]
    fn an_answers_captures_and_cookies_are_kept_for_the_next_call() {
        let visit = parse(LOGIN, "login.toml", &["user"]).unwrap();
        let (form, post) = (&visit.bursts[0].calls[0], &visit.bursts[1].calls[0]);
        let (mut v, now) = (visitor(), Instant::now());
        let body = post.body.as_ref().unwrap();
        // Before the form's answer the post cannot be made.
        assert_eq!(v.fill(body), Err("nonce".to_string()));
        let headers = vec![("Set-Cookie".to_string(), "sid=42; Path=/".to_string())];
        let page = br#"<input name="_wpnonce" value="ab12">"#;
        let answer = Response { status: 200, headers: &headers, body: page };
        v.judge(form, "/wp-login.php", &answer, now).unwrap();
        // The given value's {visitor} is this visitor's number; any other brace stays.
        assert_eq!(v.fill(body).unwrap(), "log=ann-3-{other}&_wpnonce=ab12");
        assert_eq!(v.cookies("/wp-admin/", now).as_deref(), Some("sid=42"));
        assert_eq!(v.fill(&Template::parse("/u/{visitor}")).unwrap(), "/u/3");
    }

    #[test]
    fn a_broken_check_or_a_capture_that_finds_nothing_ends_the_visit_by_class() {
        let visit = parse(LOGIN, "login.toml", &["user"]).unwrap();
        let (form, post) = (&visit.bursts[0].calls[0], &visit.bursts[1].calls[0]);
        let (mut v, now) = (visitor(), Instant::now());
        let nothing = Response { status: 200, headers: &[], body: b"no form here" };
        assert_eq!(v.judge(form, "/wp-login.php", &nothing, now), Err("capture"));
        let refused = Response { status: 403, headers: &[], body: b"value" };
        assert_eq!(v.judge(form, "/wp-login.php", &refused, now), Err("status"));
        let html = vec![("Content-Type".to_string(), "text/html".to_string())];
        let welcome = b"Dashboard: Welcome, ann";
        let fine = Response { status: 302, headers: &html, body: welcome };
        assert_eq!(post.broken(&fine), None);
        assert_eq!(post.broken(&Response { headers: &[], ..fine }), Some("header"));
        assert_eq!(post.broken(&Response { body: b"Dashboard", ..fine }), Some("body"));
    }
}
