//! What a visit asks of an answer ([`Check`]) and takes from it ([`Capture`]). Both read a
//! [`Response`] as the engine kept it: the status, the head's fields and the body.

use regex::Regex;

/// The classes of a failed check, as the steps' figures count them: a check broken (`status`,
/// `body`, `header`) or a capture that found nothing (`capture`). A step's other failures are
/// its request's (an error class, or `validation` for the run's own `--expect-*`).
pub const CHECK_CLASSES: [&str; 4] = ["status", "body", "header", "capture"];

/// An answer as a check or a capture sees it.
#[derive(Debug, Clone, Copy)]
pub struct Response<'a> {
    pub status: u16,
    pub headers: &'a [(String, String)],
    pub body: &'a [u8],
}

impl Response<'_> {
    /// The first field of this name (case-insensitive, RFC 9110 section 5.1).
    pub fn header(&self, name: &str) -> Option<&str> {
        self.headers.iter().find(|(n, _)| n.eq_ignore_ascii_case(name)).map(|(_, v)| v.as_str())
    }
}

/// A condition on an answer; a broken one ends the visit, counted by its [`Check::class`].
#[derive(Debug, Clone)]
pub enum Check {
    /// The status is one of these.
    Status(Vec<u16>),
    /// The body contains this text.
    BodyContains(String),
    /// The body matches this regular expression.
    BodyRegex(Regex),
    /// The answer has this header field, and, when given, its value contains this text.
    Header { name: String, contains: Option<String> },
}

impl PartialEq for Check {
    fn eq(&self, other: &Check) -> bool {
        match (self, other) {
            (Check::Status(a), Check::Status(b)) => a == b,
            (Check::BodyContains(a), Check::BodyContains(b)) => a == b,
            (Check::BodyRegex(a), Check::BodyRegex(b)) => a.as_str() == b.as_str(),
            (Check::Header { name: a, contains: x }, Check::Header { name: b, contains: y }) => {
                a.eq_ignore_ascii_case(b) && x == y
            }
            _ => false,
        }
    }
}

impl Check {
    /// Whether the answer meets it.
    pub fn holds(&self, r: &Response<'_>) -> bool {
        match self {
            Check::Status(s) => s.contains(&r.status),
            Check::BodyContains(text) => {
                r.body.windows(text.len().max(1)).any(|w| w == text.as_bytes())
            }
            Check::BodyRegex(re) => re.is_match(&String::from_utf8_lossy(r.body)),
            Check::Header { name, contains } => match (r.header(name), contains) {
                (Some(value), Some(text)) => value.contains(text.as_str()),
                (found, None) => found.is_some(),
                (None, Some(_)) => false,
            },
        }
    }

    /// The class a visit that broke it is counted under.
    /// Its class in the figures: one of [`CHECK_CLASSES`].
    pub fn class(&self) -> &'static str {
        match self {
            Check::Status(_) => "status",
            Check::BodyContains(_) | Check::BodyRegex(_) => "body",
            Check::Header { .. } => "header",
        }
    }

    /// Whether the check needs the body kept (the engine keeps it only then).
    pub fn needs_body(&self) -> bool {
        matches!(self, Check::BodyContains(_) | Check::BodyRegex(_))
    }
}

/// A value an answer gives to later calls, as `{name}`.
#[derive(Debug, Clone)]
pub struct Capture {
    pub name: String,
    pub source: Source,
}

/// Where a captured value comes from.
#[derive(Debug, Clone)]
pub enum Source {
    /// A response header field's value.
    Header(String),
    /// A cookie the answer sets (its value).
    Cookie(String),
    /// A regular expression over the body: its first group, or the whole match without one.
    Regex(Regex),
}

impl PartialEq for Capture {
    fn eq(&self, other: &Capture) -> bool {
        let same = match (&self.source, &other.source) {
            (Source::Header(a), Source::Header(b)) | (Source::Cookie(a), Source::Cookie(b)) => {
                a == b
            }
            (Source::Regex(a), Source::Regex(b)) => a.as_str() == b.as_str(),
            _ => false,
        };
        same && self.name == other.name
    }
}

impl Capture {
    /// The value in this answer, if it has one.
    pub fn take(&self, r: &Response<'_>) -> Option<String> {
        match &self.source {
            Source::Header(h) => r.header(h).map(str::to_string),
            Source::Cookie(name) => r
                .headers
                .iter()
                .filter(|(n, _)| n.eq_ignore_ascii_case("set-cookie"))
                .filter_map(|(_, v)| cookie::Cookie::parse(v.as_str()).ok())
                .find(|c| c.name() == name)
                .map(|c| c.value().to_string()),
            Source::Regex(re) => {
                let body = String::from_utf8_lossy(r.body);
                let caps = re.captures(&body)?;
                caps.get(1).or_else(|| caps.get(0)).map(|m| m.as_str().to_string())
            }
        }
    }

    /// Whether the capture needs the body kept.
    pub fn needs_body(&self) -> bool {
        matches!(self.source, Source::Regex(_))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn headers() -> Vec<(String, String)> {
        [
            ("Location", "/wp-admin/"),
            ("Set-Cookie", "a=1; Path=/"),
            ("set-cookie", "wordpress_logged_in=u%7C9; Path=/; HttpOnly"),
        ]
        .into_iter()
        .map(|(n, v)| (n.to_string(), v.to_string()))
        .collect()
    }

    #[test]
    fn captures_from_header_cookie_and_body() {
        let h = headers();
        let body = br#"<input name="_wpnonce" value="3f9a" />"#;
        let r = Response { status: 302, headers: &h, body };
        let cap = |source| Capture { name: "x".into(), source };
        assert_eq!(cap(Source::Header("location".into())).take(&r).unwrap(), "/wp-admin/");
        let logged = cap(Source::Cookie("wordpress_logged_in".into())).take(&r);
        assert_eq!(logged.unwrap(), "u%7C9");
        let re = Regex::new(r#"name="_wpnonce" value="([^"]+)""#).unwrap();
        assert_eq!(cap(Source::Regex(re)).take(&r).unwrap(), "3f9a");
        assert_eq!(cap(Source::Header("etag".into())).take(&r), None);
    }

    #[test]
    fn checks_hold_or_break_with_their_class() {
        let h = headers();
        let r = Response { status: 302, headers: &h, body: b"Welcome back" };
        assert!(Check::Status(vec![200, 302]).holds(&r));
        assert!(!Check::Status(vec![200]).holds(&r));
        assert!(Check::BodyContains("back".into()).holds(&r));
        let missing = Check::BodyContains("Dashboard".into());
        assert!(!missing.holds(&r));
        assert_eq!(missing.class(), "body");
        assert!(Check::BodyRegex(Regex::new("W[a-z]+ back").unwrap()).holds(&r));
        let location = |contains: Option<&str>| Check::Header {
            name: "location".into(),
            contains: contains.map(str::to_string),
        };
        assert!(location(None).holds(&r) && location(Some("wp-admin")).holds(&r));
        assert!(!location(Some("login")).holds(&r));
        let etag = Check::Header { name: "ETag".into(), contains: None };
        assert!(!etag.holds(&r));
        assert_eq!(etag.class(), "header");
    }
}
