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

use serde::Deserialize;

use crate::capture::{Capture, Check, Source};
use crate::model::{Burst, Call, Think, Visit};
use crate::template::Template;
use crate::VisitError;

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct File {
    name: Option<String>,
    think: Option<ThinkSpec>,
    step: Vec<Step>,
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct Step {
    method: Option<String>,
    path: String,
    #[serde(default)]
    headers: BTreeMap<String, String>,
    body: Option<String>,
    think: Option<ThinkSpec>,
    status: Option<OneOrMany>,
    contains: Option<String>,
    /// A regular expression the body must match.
    matches: Option<String>,
    header: Option<HeaderSpec>,
    #[serde(default)]
    capture: Vec<CaptureSpec>,
    #[serde(default)]
    resources: Vec<String>,
}

#[derive(Deserialize)]
#[serde(untagged)]
enum ThinkSpec {
    Fixed(String),
    Exponential { exponential: String },
}

#[derive(Deserialize)]
#[serde(untagged)]
enum OneOrMany {
    One(u16),
    Many(Vec<u16>),
}

/// `header = "Location"` (present) or `header = { name = "Location", contains = "/wp-admin" }`.
#[derive(Deserialize)]
#[serde(untagged)]
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

/// Reads a visit file; `given` are the names the run fills in itself (a user, a password).
pub fn parse(text: &str, file: &str, given: &[&str]) -> Result<Visit, VisitError> {
    let parsed: File = toml::from_str(text).map_err(|e| toml_error(text, file, &e))?;
    let whole = |message: String| VisitError::File { file: file.to_string(), message };
    if parsed.step.is_empty() {
        return Err(whole("a visit needs at least one [[step]]".to_string()));
    }
    let default_think = parsed.think.map(|t| think(&t)).transpose().map_err(&whole)?;
    if given.contains(&crate::VISITOR) {
        return Err(whole("{visitor} is the visitor's number: a run cannot give it".to_string()));
    }
    let mut known: HashSet<String> = given.iter().map(|s| s.to_string()).collect();
    known.insert(crate::VISITOR.to_string());
    let mut bursts = Vec::with_capacity(parsed.step.len());
    for (i, step) in parsed.step.into_iter().enumerate() {
        let at = |m: String| whole(format!("step {}: {m}", i + 1));
        let burst = burst(step, default_think).map_err(at)?;
        for name in burst.calls.iter().flat_map(Call::names) {
            if !known.contains(name) {
                return Err(at(format!(
                    "{{{name}}} is used before any step captures it (nor does the run give it)"
                )));
            }
        }
        for capture in &burst.calls[0].captures {
            if capture.name == crate::VISITOR || given.contains(&capture.name.as_str()) {
                return Err(at(format!(
                    "capture '{}' would replace a value the run gives (the visitor's number \
                     or a given value): name it otherwise",
                    capture.name
                )));
            }
        }
        known.extend(burst.calls[0].captures.iter().map(|c| c.name.clone()));
        bursts.push(burst);
    }
    let name = parsed.name.unwrap_or_else(|| file.to_string());
    Ok(Visit { name, bursts })
}

/// One step as the burst it starts.
fn burst(step: Step, default_think: Option<Think>) -> Result<Burst, String> {
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
        let re = regex::Regex::new(&re).map_err(|e| format!("matches: bad regex: {e}"))?;
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
    let method = step.method.unwrap_or_else(|| "GET".to_string());
    if method.is_empty() || !method.bytes().all(|b| b.is_ascii_alphabetic()) {
        return Err(format!("method '{method}' is not an HTTP method"));
    }
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

fn think(spec: &ThinkSpec) -> Result<Think, String> {
    let d =
        |s: &str| crate::duration::parse(s).ok_or_else(|| format!("think '{s}' is not a duration"));
    Ok(match spec {
        ThinkSpec::Fixed(s) => Think::Fixed(d(s)?),
        ThinkSpec::Exponential { exponential } => Think::Exponential { mean: d(exponential)? },
    })
}

fn capture(spec: CaptureSpec) -> Result<Capture, String> {
    let name = spec.name;
    let source = match (spec.header, spec.cookie, spec.regex) {
        (Some(h), None, None) => Source::Header(h),
        (None, Some(c), None) => Source::Cookie(c),
        (None, None, Some(r)) => Source::Regex(
            regex::Regex::new(&r).map_err(|e| format!("capture '{name}': bad regex: {e}"))?,
        ),
        _ => {
            return Err(format!(
                "capture '{name}' needs exactly one of header =, cookie = or regex ="
            ))
        }
    };
    Ok(Capture { name, source })
}

/// toml's error at its line and column (the span's start).
fn toml_error(text: &str, file: &str, e: &toml::de::Error) -> VisitError {
    let message = e.message().to_string();
    let Some(span) = e.span() else {
        return VisitError::File { file: file.to_string(), message };
    };
    let before = &text[..span.start.min(text.len())];
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
        assert!(e.to_string().contains("think 'soon' is not a duration"), "{e}");
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
