//! Visit files: a visit's steps in TOML, in the style of the suite files. Each step is one
//! request (and, with `resources`, the burst it starts), then a think time:
//!
//! ```toml
//! name = "log in"
//! think = "1s"                       # after each step that names none
//! [[step]]
//! path = "/wp-login.php"
//! status = 200                       # or [200, 302]
//! [[step.capture]]
//! name = "nonce"
//! regex = 'name="_wpnonce" value="([^"]+)"'   # or header = "Location", cookie = "sid"
//! [[step]]
//! method = "POST"
//! path = "/wp-login.php"
//! headers = { Content-Type = "application/x-www-form-urlencoded" }
//! body = "log={user}&pwd={password}&_wpnonce={nonce}"
//! think = { exponential = "2s" }
//! contains = "Dashboard"              # matches = 'regex', header = "Location" or
//!                                    # header = { name = "Location", contains = "/wp-admin" }
//! resources = ["/wp-admin/css/dashboard.css"]
//! ```
//!
//! A `{name}` must be captured by an earlier step or given by the run (`given`), which is
//! checked when the file is read, not when a visitor first needs it. `{visitor}`, the
//! visitor's number (from 1), needs neither.

use std::collections::{BTreeMap, HashSet};
use std::ops::Range;

use serde::Deserialize;
use toml::Spanned;

use crate::capture::{Capture, Check, Source};
use crate::model::{Burst, Call, Think, Visit};
use crate::template::Template;
use crate::VisitError;

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct File {
    name: Option<String>,
    think: Option<Spanned<ThinkSpec>>,
    step: Vec<Spanned<Step>>,
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct Step {
    method: Option<Spanned<String>>,
    path: String,
    #[serde(default)]
    headers: BTreeMap<String, String>,
    body: Option<String>,
    think: Option<Spanned<ThinkSpec>>,
    status: Option<OneOrMany>,
    contains: Option<String>,
    /// A regular expression the body must match.
    matches: Option<Spanned<String>>,
    header: Option<HeaderSpec>,
    #[serde(default)]
    capture: Vec<Spanned<CaptureSpec>>,
    #[serde(default)]
    resources: Vec<String>,
}

// Each untagged enum says what it expects: serde's own message names the Rust type.
#[derive(Deserialize)]
#[serde(untagged, expecting = "a duration (\"1s\") or { exponential = \"2s\" }")]
enum ThinkSpec {
    Fixed(String),
    Exponential { exponential: String },
}

#[derive(Deserialize)]
#[serde(untagged, expecting = "a status code or a list of them: 200 or [200, 302], not in quotes")]
enum OneOrMany {
    One(u16),
    Many(Vec<u16>),
}

/// `header = "Location"` (present) or `header = { name = "Location", contains = "/wp-admin" }`.
#[derive(Deserialize)]
#[serde(
    untagged,
    expecting = "a header's name (\"Location\") or { name = \"Location\", contains = \"/wp-admin\" }"
)]
enum HeaderSpec {
    Present(String),
    Contains { name: String, contains: String },
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct CaptureSpec {
    name: String,
    header: Option<String>,
    cookie: Option<String>,
    regex: Option<String>,
}

/// A mistake found after toml read the file, at the span of what it is about.
struct Mistake {
    span: Range<usize>,
    message: String,
}

/// Turns a message into a [`Mistake`] at `span`.
fn at(span: Range<usize>) -> impl Fn(String) -> Mistake {
    move |message| Mistake { span: span.clone(), message }
}

/// Reads a visit file; `given` are the names the run fills in itself (a user, a password).
pub fn parse(text: &str, file: &str, given: &[&str]) -> Result<Visit, VisitError> {
    let parsed: File = toml::from_str(text).map_err(|e| {
        if is_session_log(text, file) {
            return VisitError::File {
                file: file.to_string(),
                message: format!(
                    "an httperf session log, not a visit file: give it to --wsesslog N,X,{file}"
                ),
            };
        }
        toml_error(text, file, &e)
    })?;
    let located = |m: Mistake| located(text, file, m.span.start, m.message);
    if parsed.step.is_empty() {
        return Err(VisitError::File {
            file: file.to_string(),
            message: "a visit needs at least one [[step]]".to_string(),
        });
    }
    let default_think = parsed.think.map(|t| think(&t)).transpose().map_err(located)?;
    if given.contains(&crate::VISITOR) {
        return Err(VisitError::File {
            file: file.to_string(),
            message: "{visitor} is the visitor's number: a run cannot give it".to_string(),
        });
    }
    let mut known: HashSet<String> = given.iter().map(|s| s.to_string()).collect();
    known.insert(crate::VISITOR.to_string());
    let mut bursts = Vec::with_capacity(parsed.step.len());
    for (i, step) in parsed.step.into_iter().enumerate() {
        let span = step.span();
        let step_at = |m: Mistake| {
            located(Mistake { message: format!("step {}: {}", i + 1, m.message), ..m })
        };
        let burst = burst(step.into_inner(), default_think).map_err(step_at)?;
        let whole = at(span);
        for name in burst.calls.iter().flat_map(Call::names) {
            if !known.contains(name) {
                return Err(step_at(whole(format!(
                    "{{{name}}} is used before any step captures it (nor does the run give it)"
                ))));
            }
        }
        for capture in &burst.calls[0].captures {
            if capture.name == crate::VISITOR || given.contains(&capture.name.as_str()) {
                return Err(step_at(whole(format!(
                    "capture '{}' would replace a value the run gives (the visitor's number \
                     or a given value): name it otherwise",
                    capture.name
                ))));
            }
        }
        known.extend(burst.calls[0].captures.iter().map(|c| c.name.clone()));
        bursts.push(burst);
    }
    let name = parsed.name.unwrap_or_else(|| file.to_string());
    Ok(Visit { name, bursts })
}

/// One step as the burst it starts.
fn burst(step: Step, default_think: Option<Think>) -> Result<Burst, Mistake> {
    let mut checks = Vec::new();
    match step.status {
        Some(OneOrMany::One(s)) => checks.push(Check::Status(vec![s])),
        Some(OneOrMany::Many(s)) => checks.push(Check::Status(s)),
        None => {}
    }
    if let Some(text) = step.contains {
        checks.push(Check::BodyContains(text));
    }
    if let Some(re) = step.matches {
        let re = regex(re.get_ref()).map_err(|e| at(re.span())(format!("matches: {e}")))?;
        checks.push(Check::BodyRegex(re));
    }
    match step.header {
        Some(HeaderSpec::Present(name)) => checks.push(Check::Header { name, contains: None }),
        Some(HeaderSpec::Contains { name, contains }) => {
            checks.push(Check::Header { name, contains: Some(contains) })
        }
        None => {}
    }
    let captures = step.capture.into_iter().map(capture).collect::<Result<Vec<_>, _>>()?;
    let method = match step.method {
        None => "GET".to_string(),
        Some(m)
            if !m.get_ref().is_empty() && m.get_ref().bytes().all(|b| b.is_ascii_alphabetic()) =>
        {
            m.into_inner()
        }
        Some(m) => {
            return Err(at(m.span())(format!("method '{}' is not an HTTP method", m.get_ref())))
        }
    };
    let first = Call {
        method,
        path: Template::parse(&step.path),
        headers: step.headers.iter().map(|(n, v)| (n.clone(), Template::parse(v))).collect(),
        body: step.body.as_deref().map(Template::parse),
        checks,
        captures,
    };
    let mut calls = vec![first];
    calls.extend(step.resources.iter().map(|p| Call::get(p)));
    let think = step.think.map(|t| think(&t)).transpose()?.or(default_think);
    Ok(Burst { calls, think })
}

fn think(spec: &Spanned<ThinkSpec>) -> Result<Think, Mistake> {
    let d = |s: &str| {
        crate::duration::parse(s)
            .ok_or_else(|| at(spec.span())(format!("think '{s}' is not a duration")))
    };
    Ok(match spec.get_ref() {
        ThinkSpec::Fixed(s) => Think::Fixed(d(s)?),
        ThinkSpec::Exponential { exponential } => Think::Exponential { mean: d(exponential)? },
    })
}

/// A regular expression, or why not in one line: the regex crate's own message draws the
/// pattern with a caret under the mistake, over several lines.
fn regex(pattern: &str) -> Result<regex::Regex, String> {
    regex::Regex::new(pattern).map_err(|e| {
        let text = e.to_string();
        let why = text.lines().rev().find_map(|l| l.strip_prefix("error: ")).unwrap_or(&text);
        format!("bad regex '{pattern}': {}", why.trim())
    })
}

fn capture(spec: Spanned<CaptureSpec>) -> Result<Capture, Mistake> {
    let here = at(spec.span());
    let spec = spec.into_inner();
    let name = spec.name;
    let source = match (spec.header, spec.cookie, spec.regex) {
        (Some(h), None, None) => Source::Header(h),
        (None, Some(c), None) => Source::Cookie(c),
        (None, None, Some(r)) => {
            Source::Regex(regex(&r).map_err(|e| here(format!("capture '{name}': {e}")))?)
        }
        _ => {
            return Err(here(format!(
                "capture '{name}' needs exactly one of header =, cookie = or regex ="
            )))
        }
    };
    Ok(Capture { name, source })
}

/// Whether `text`, which is not TOML, reads as httperf's session log: its first line that is
/// neither blank nor a comment is a URI, which no TOML line can start with.
fn is_session_log(text: &str, file: &str) -> bool {
    let first = text.lines().map(str::trim).find(|l| !l.is_empty() && !l.starts_with('#'));
    first.is_some_and(|l| l.starts_with('/')) && crate::wsesslog::parse(text, file).is_ok()
}

/// toml's error at its line and column (the span's start).
fn toml_error(text: &str, file: &str, e: &toml::de::Error) -> VisitError {
    let message = e.message().to_string();
    match e.span() {
        Some(span) => located(text, file, span.start, message),
        None => VisitError::File { file: file.to_string(), message },
    }
}

/// A mistake at byte `offset` of `text`, as `file:line:column`.
fn located(text: &str, file: &str, offset: usize, message: String) -> VisitError {
    let before = &text[..offset.min(text.len())];
    let line = before.matches('\n').count() + 1;
    let column = before.rsplit('\n').next().map_or(0, |l| l.chars().count()) + 1;
    VisitError::At { file: file.to_string(), line, column, message }
}

#[cfg(test)]
pub(crate) mod tests {
    use super::*;
    use std::time::Duration;

    /// A login visit of every field: a capture, given and captured values, every check,
    /// resources (the visitor's tests judge its answers too).
    pub(crate) const LOGIN: &str = r#"
name = "log in"
think = "1s"
[[step]]
path = "/wp-login.php"
status = 200
[[step.capture]]
name = "nonce"
regex = 'name="_wpnonce" value="([^"]+)"'
[[step]]
method = "POST"
path = "/wp-login.php"
headers = { Content-Type = "application/x-www-form-urlencoded" }
body = "log={user}&_wpnonce={nonce}"
think = { exponential = "2s" }
status = [200, 302]
contains = "Dashboard"
matches = 'Welcome, \w+'
header = { name = "Content-Type", contains = "html" }
resources = ["/a.css", "/b.js"]
"#;

    #[test]
    fn a_visit_file_reads_into_bursts() {
        let v = parse(LOGIN, "login.toml", &["user"]).unwrap();
        assert_eq!(v.name, "log in");
        assert_eq!(v.bursts.len(), 2);
        assert_eq!(v.bursts[0].think, Some(Think::Fixed(Duration::from_secs(1))));
        assert_eq!(v.bursts[0].calls[0].captures[0].name, "nonce");
        let post = &v.bursts[1];
        assert_eq!(post.think, Some(Think::Exponential { mean: Duration::from_secs(2) }));
        assert_eq!(post.calls.len(), 3);
        assert_eq!(post.calls[0].checks.len(), 4);
        assert_eq!(post.calls[0].checks[3].class(), "header");
        assert!(!post.calls[0].is_static() && post.calls[1].is_static());
        assert_eq!(v.requests(), 4);
    }

    #[test]
    fn a_name_nobody_captures_and_bad_fields_are_refused() {
        let e = parse(LOGIN, "login.toml", &[]).unwrap_err().to_string();
        assert!(e.contains("step 2: {user} is used before"), "{e}");
        let e = parse("[[step]]\npath = \"/\"\ncolour = 1\n", "v.toml", &[]).unwrap_err();
        assert!(e.to_string().starts_with("v.toml:3:1: unknown field `colour`"), "{e}");
        let e = parse("[[step]]\npath = \"/\"\n[[step.capture]]\nname = \"x\"\n", "v", &[]);
        assert!(e.unwrap_err().to_string().contains("exactly one of"));
        let e = parse("[[step]]\npath = \"/\"\nthink = \"soon\"\n", "v", &[]).unwrap_err();
        assert_eq!(e.to_string(), "v:3:9: step 1: think 'soon' is not a duration");
    }

    /// What a user wrote wrong is told in the file's terms, at its line and column, in one
    /// line: never a Rust type's name, never a multi-line regex diagram.
    #[test]
    fn every_mistake_has_its_place_and_names_no_rust_type() {
        let step = |line: &str| format!("[[step]]\npath = \"/\"\n{line}\n");
        let e = parse(&step("status = \"200\""), "v", &[]).unwrap_err().to_string();
        assert!(e.starts_with("v:3:10: a status code or a list of them"), "{e}");
        for line in ["think = 3", "header = 3"] {
            let e = parse(&step(line), "v", &[]).unwrap_err().to_string();
            assert!(e.starts_with("v:3:") && !e.contains("enum"), "{e}");
        }
        let e = parse(&step("matches = '(x'"), "v", &[]).unwrap_err().to_string();
        assert_eq!(e, "v:3:11: step 1: matches: bad regex '(x': unclosed group");
        let capture = "[[step.capture]]\nname = \"n\"\nregex = '['";
        let e = parse(&step(capture), "v", &[]).unwrap_err().to_string();
        assert!(e.starts_with("v:3:1: step 1: capture 'n': bad regex '[': "), "{e}");
        assert!(!e.contains('\n'), "{e}");
        let e = parse(&step("method = \"G T\""), "v", &[]).unwrap_err().to_string();
        assert_eq!(e, "v:3:10: step 1: method 'G T' is not an HTTP method");
        let e = parse(&step("body = \"{who}\""), "v", &[]).unwrap_err().to_string();
        assert!(e.starts_with("v:1:1: step 1: {who} is used before"), "{e}");
    }

    #[test]
    fn an_httperf_session_log_is_pointed_to_wsesslog() {
        let log = "# two pages\n/index.html think=2.0\n    /style.css\n/about.html\n";
        let e = parse(log, "s.log", &[]).unwrap_err().to_string();
        assert_eq!(
            e,
            "s.log: an httperf session log, not a visit file: give it to --wsesslog N,X,s.log"
        );
    }

    #[test]
    fn the_visitors_number_needs_no_capture_and_no_capture_replaces_a_given_value() {
        let v = parse("[[step]]\npath = \"/u/{visitor}\"\n", "v", &[]).unwrap();
        assert!(v.uses("visitor") && !v.uses("user"));
        let capturing = |name: &str| {
            format!("[[step]]\npath = \"/\"\n[[step.capture]]\nname = \"{name}\"\nheader = \"X\"\n")
        };
        for (name, given) in [("visitor", &[][..]), ("user", &["user"][..])] {
            let e = parse(&capturing(name), "v", given).unwrap_err().to_string();
            assert!(e.contains(&format!("step 1: capture '{name}' would replace")), "{e}");
        }
        let e = parse(&capturing("x"), "v", &["visitor"]).unwrap_err().to_string();
        assert!(e.contains("a run cannot give it"), "{e}");
    }
}
