//! One request's settings and the check of its answers, as `bench`'s and `sweep`'s flags and a
//! suite workload's keys: [`Request`] (what is sent) lowered into the engine's [`RequestSpec`],
//! [`Expect`] (what an answer must be) into its [`Validation`]. Each refusal names its
//! [`Setting`] as the command line spells it (its flag) or a suite does (its key, which the
//! suite places at its line and column); where the two must differ, [`Origin`] says how.

use std::path::{Path, PathBuf};

use loadlab_engine::{RequestSpec, Validation};

/// What is sent: `bench`'s and `sweep`'s `-m`, `-H`, `--body` and `--body-string`, and a
/// suite workload's `method`, `headers`, `body_file` and `body` (with `path`).
#[derive(Debug, Clone, PartialEq, Eq, clap::Args, serde::Deserialize)]
#[serde(default)]
pub struct Request {
    /// The request method (ab's -m; h2load's -m is --streams).
    #[arg(short = 'm', long = "method", default_value = "GET")]
    pub method: String,
    /// An extra request header, "Name: value" (repeatable).
    #[arg(short = 'H', long = "header", value_name = "HEADER")]
    pub headers: Vec<String>,
    /// Send the contents of FILE as the request body.
    // A suite's `body_file`, relative to the suite file.
    #[arg(long = "body", value_name = "FILE", conflicts_with = "body_string")]
    #[serde(rename = "body_file")]
    pub body: Option<PathBuf>,
    /// Send S as the request body.
    // A suite's `body`.
    #[arg(long = "body-string", value_name = "S")]
    #[serde(rename = "body")]
    pub body_string: Option<String>,
}

impl Default for Request {
    fn default() -> Self {
        crate::unflagged()
    }
}

/// What an answer must be to count as completed: `bench`'s and `sweep`'s `--expect-*`, and a
/// suite workload's `expect_status`, `expect_sha256` and `expect_contains`.
#[derive(Debug, Clone, Default, PartialEq, Eq, clap::Args, serde::Deserialize)]
#[serde(default)]
pub struct Expect {
    /// Count responses with other status codes as failures (200, 200-299, 2xx, 200,304).
    // A suite may write a bare code, `expect_status = 200`.
    #[arg(long = "expect-status", value_name = "CODES")]
    #[serde(deserialize_with = "status")]
    pub expect_status: Option<String>,
    /// Count responses whose body has another SHA-256 as failures.
    #[arg(long = "expect-body-sha256", value_name = "HEX")]
    #[serde(rename = "expect_sha256")]
    pub expect_body_sha256: Option<String>,
    /// Count responses whose body does not contain TEXT as failures.
    #[arg(long = "expect-contains", value_name = "TEXT")]
    pub expect_contains: Option<String>,
}

/// Where a request's settings come from, for the rules that differ between them.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Origin {
    /// `bench`'s and `sweep`'s flags: headers go as given (a `Content-Length` of the user's
    /// too, to see how a server takes a wrong one), and without `--expect-status` an answer
    /// of any status counts.
    Flags,
    /// A suite workload's keys: the body's framing (`Content-Length`, `Transfer-Encoding`) is
    /// loadlab's to write, and with any `expect_*` but no `expect_status` the status must be
    /// 200.
    Suite,
}

/// One setting of [`Request`] or [`Expect`], which a refusal names.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Setting {
    Method,
    /// The header at this index of `headers`.
    Header(usize),
    /// The body's file.
    Body,
    /// The body given inline.
    BodyString,
    ExpectStatus,
    ExpectBodySha256,
    ExpectContains,
}

impl Setting {
    /// The setting as `origin` spells it: a flag, or a suite's key.
    pub fn name(self, origin: Origin) -> &'static str {
        let (flag, key) = match self {
            Setting::Method => ("-m", "method"),
            Setting::Header(_) => ("-H", "headers"),
            Setting::Body => ("--body", "body_file"),
            Setting::BodyString => ("--body-string", "body"),
            Setting::ExpectStatus => ("--expect-status", "expect_status"),
            Setting::ExpectBodySha256 => ("--expect-body-sha256", "expect_sha256"),
            Setting::ExpectContains => ("--expect-contains", "expect_contains"),
        };
        match origin {
            Origin::Flags => flag,
            Origin::Suite => key,
        }
    }
}

/// A setting whose value cannot be used, named as its origin spells it.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("{}: {what}", setting.name(*origin))]
pub struct Refusal {
    pub setting: Setting,
    pub origin: Origin,
    /// What is wrong, in words that do not name the setting.
    pub what: String,
}

impl Request {
    /// The engine's request: the method and headers checked, the body read (a file's path
    /// relative to `dir`).
    pub fn spec(&self, origin: Origin, dir: &Path) -> Result<RequestSpec, Refusal> {
        let refuse = |setting, what| Refusal { setting, origin, what };
        if !RequestSpec::is_method(&self.method) {
            let what =
                format!("invalid method {:?}; a method is one word, as GET or POST", self.method);
            return Err(refuse(Setting::Method, what));
        }
        let mut spec = RequestSpec { method: self.method.clone(), ..RequestSpec::default() };
        for (i, raw) in self.headers.iter().enumerate() {
            let header = RequestSpec::parse_header(raw)
                .map_err(|e| refuse(Setting::Header(i), e.to_string()))?;
            // A suite's body is loadlab's to frame: a length of the user's could not match
            // the body each cell sends.
            let framing = ["content-length", "transfer-encoding"];
            if origin == Origin::Suite && framing.iter().any(|n| header.0.eq_ignore_ascii_case(n)) {
                let what = format!("{} is set from the body; leave it out", header.0);
                return Err(refuse(Setting::Header(i), what));
            }
            spec.headers.push(header);
        }
        spec.body = match (&self.body, &self.body_string) {
            (Some(_), Some(_)) => {
                let (inline, file) = (Setting::BodyString, Setting::Body);
                let what =
                    format!("give {} or {}, not both", inline.name(origin), file.name(origin));
                return Err(refuse(Setting::Body, what));
            }
            (Some(path), None) => {
                read_body(&dir.join(path)).map_err(|e| refuse(Setting::Body, e))?
            }
            (None, Some(inline)) => inline.as_bytes().to_vec(),
            (None, None) => Vec::new(),
        };
        Ok(spec)
    }
}

impl Expect {
    /// The engine's check of every answer; `None` when nothing is expected (an answer of any
    /// status counts on the command line; a suite has its own default).
    pub fn validation(&self, origin: Origin) -> Result<Option<Validation>, Refusal> {
        let refuse = |setting, what| Refusal { setting, origin, what };
        let given = [&self.expect_status, &self.expect_body_sha256, &self.expect_contains];
        if given.iter().all(|g| g.is_none()) {
            return Ok(None);
        }
        let status = match (&self.expect_status, origin) {
            (Some(s), _) => {
                Validation::parse_status(s).map_err(|e| refuse(Setting::ExpectStatus, e))?
            }
            (None, Origin::Flags) => Vec::new(),
            // A page that contains the right words in a 500 error is still an error.
            (None, Origin::Suite) => vec![(200, 200)],
        };
        let mut v = Validation { status, ..Validation::default() };
        if let Some(s) = &self.expect_body_sha256 {
            let digest =
                Validation::parse_sha256(s).map_err(|e| refuse(Setting::ExpectBodySha256, e))?;
            v.body_sha256 = Some(digest);
        }
        if let Some(s) = &self.expect_contains {
            if s.is_empty() {
                return Err(refuse(Setting::ExpectContains, "the text must not be empty".into()));
            }
            v.body_contains = Some(s.as_bytes().to_vec());
        }
        Ok(Some(v))
    }
}

/// The body in the file at `path` (`--body`, ab's `-p` and `-u`, a suite's `body_file`).
pub fn read_body(path: &Path) -> Result<Vec<u8>, String> {
    std::fs::read(path).map_err(|e| format!("cannot read {}: {e}", path.display()))
}

/// `expect_status = 200` or `expect_status = "2xx"`: the text [`Validation::parse_status`]
/// reads.
fn status<'de, D: serde::Deserializer<'de>>(d: D) -> Result<Option<String>, D::Error> {
    struct Visitor;
    impl serde::de::Visitor<'_> for Visitor {
        type Value = Option<String>;
        fn expecting(&self, f: &mut std::fmt::Formatter) -> std::fmt::Result {
            f.write_str("a status code (200) or a string of codes, ranges and classes (\"2xx\")")
        }
        fn visit_i64<E: serde::de::Error>(self, v: i64) -> Result<Self::Value, E> {
            Ok(Some(v.to_string()))
        }
        fn visit_str<E: serde::de::Error>(self, v: &str) -> Result<Self::Value, E> {
            Ok(Some(v.to_string()))
        }
    }
    d.deserialize_any(Visitor)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn request(headers: &[&str]) -> Request {
        Request { headers: headers.iter().map(|h| h.to_string()).collect(), ..Request::default() }
    }

    #[test]
    fn a_refusal_names_the_setting_as_its_origin_spells_it() {
        let bad = Request { method: "GE T".into(), ..Request::default() };
        let said = bad.spec(Origin::Flags, Path::new("")).unwrap_err().to_string();
        assert_eq!(said, "-m: invalid method \"GE T\"; a method is one word, as GET or POST");
        let said = request(&["A: 1", "no colon"]).spec(Origin::Suite, Path::new(""));
        let refusal = said.unwrap_err();
        assert_eq!(refusal.setting, Setting::Header(1));
        assert!(refusal.to_string().starts_with("headers: invalid header"), "{refusal}");
        let empty = Expect { expect_contains: Some(String::new()), ..Expect::default() };
        let said = empty.validation(Origin::Flags).unwrap_err().to_string();
        assert_eq!(said, "--expect-contains: the text must not be empty");
    }

    /// The rules that differ, each where its origin has it.
    #[test]
    fn a_suite_frames_the_body_and_expects_200_the_flags_do_neither() {
        let length = request(&["Content-Length: 5"]);
        assert_eq!(length.spec(Origin::Flags, Path::new("")).unwrap().headers.len(), 1);
        let said = length.spec(Origin::Suite, Path::new("")).unwrap_err().to_string();
        assert_eq!(said, "headers: Content-Length is set from the body; leave it out");
        let contains = Expect { expect_contains: Some("ok".into()), ..Expect::default() };
        assert_eq!(contains.validation(Origin::Flags).unwrap().unwrap().status, vec![]);
        assert_eq!(contains.validation(Origin::Suite).unwrap().unwrap().status, vec![(200, 200)]);
        assert_eq!(Expect::default().validation(Origin::Suite).unwrap(), None);
    }

    /// Each setting's names are its flag's, as clap defines it, and its key's, as serde reads
    /// it: the refusals cannot name a flag or key that is not there.
    #[test]
    fn every_setting_is_named_as_clap_and_serde_name_it() {
        use clap::Args as _;
        let command = Expect::augment_args(Request::augment_args(clap::Command::new("t")));
        let flags: Vec<String> = command
            .get_arguments()
            .flat_map(|a| {
                let short = a.get_short().map(|c| format!("-{c}"));
                short.into_iter().chain(a.get_long().map(|l| format!("--{l}")))
            })
            .collect();
        let settings = [
            (Setting::Method, "\"PUT\""),
            (Setting::Header(0), "[\"A: 1\"]"),
            (Setting::Body, "\"b\""),
            (Setting::BodyString, "\"b\""),
            (Setting::ExpectStatus, "200"),
            (Setting::ExpectBodySha256, "\"b\""),
            (Setting::ExpectContains, "\"b\""),
        ];
        for (setting, value) in settings {
            let flag = setting.name(Origin::Flags);
            assert!(flags.iter().any(|f| f == flag), "{flag} is not a flag: {flags:?}");
            let table = format!("{} = {value}", setting.name(Origin::Suite));
            let request: Request = toml::from_str(&table).unwrap();
            let expect: Expect = toml::from_str(&table).unwrap();
            let read = request != Request::default() || expect != Expect::default();
            assert!(read, "{table:?} is read into neither type");
        }
    }

    #[test]
    fn a_body_is_a_file_relative_to_the_directory_or_inline_not_both() {
        let dir = tempfile::tempdir().unwrap();
        std::fs::write(dir.path().join("b"), b"x=1").unwrap();
        let file = Request { body: Some("b".into()), ..Request::default() };
        assert_eq!(file.spec(Origin::Suite, dir.path()).unwrap().body, b"x=1");
        let said = file.spec(Origin::Flags, Path::new("/nonexistent")).unwrap_err().to_string();
        assert!(said.starts_with("--body: cannot read /nonexistent/b: "), "{said}");
        let both = Request { body_string: Some("y".into()), ..file };
        let said = both.spec(Origin::Suite, dir.path()).unwrap_err().to_string();
        assert_eq!(said, "body_file: give body or body_file, not both");
    }
}
