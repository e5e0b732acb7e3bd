//! Access logs to replay (`--replay FILE`): the Common and Combined Log Formats that Apache
//! and nginx write by default, and JSON lines (nginx's `log_format ... escape=json`, Apache's
//! `LogFormat` written as JSON), each line told apart by its first character.
//!
//! - Common/Combined: `host ident user [10/Oct/2000:13:55:36 -0700] "GET /a HTTP/1.1" 200
//!   2326 ...`; what follows the request line is not needed. Escapes in the request line
//!   (`\"`, `\\`, `\xHH`, as both servers write them) are undone.
//! - JSON: an object with the request as `request` (`"GET /a?b HTTP/1.1"`, nginx's `$request`,
//!   Apache's `%r`) or as `method` (or `request_method`) with `request_uri`, `uri`, `path` or
//!   `url`, plus `args`, `query_string` or `query` when the path has no query; and the time as
//!   `time`, `timestamp`, `@timestamp`, `time_iso8601`, `time_local`, `msec` or `ts`: a date
//!   (RFC 3339, ISO 8601 with a `+0000` offset or none, or the Common Log Format's) or a
//!   number of seconds since the epoch (milliseconds above 10^11, microseconds above 10^14,
//!   as Apache's `%{msec}t` and `%{usec}t` write them). Other keys (status, bytes, host) are
//!   not needed: requests go to the run's target, bodies are not in logs.
//!
//! A line that cannot be replayed is counted by its [`Skip`] reason; a file with no line that
//! can is an error naming the first bad line.

use std::path::Path;

use serde_json::{Map, Value};
use time::format_description::well_known::Rfc3339;
use time::format_description::BorrowedFormatItem;
use time::macros::format_description;
use time::{OffsetDateTime, PrimitiveDateTime};

use super::{error, for_each_line, origin_form, OtherHosts, Refused};
use crate::replay::{Builder, Replay, Skip};
use crate::{EngineError, RequestSpec, Target};

/// `10/Oct/2000:13:55:36 -0700`, the Common Log Format's time.
const CLF_TIME: &[BorrowedFormatItem<'_>] = format_description!(
    "[day]/[month repr:short]/[year]:[hour]:[minute]:[second] [offset_hour sign:mandatory][offset_minute]"
);
/// ISO 8601 with an offset that has no colon (`+0000`, as strftime's `%z`).
const ISO_PLAIN_OFFSET: &[BorrowedFormatItem<'_>] = format_description!(
    "[year]-[month]-[day]T[hour]:[minute]:[second][optional [.[subsecond]]][offset_hour sign:mandatory][offset_minute]"
);
/// ISO 8601 without an offset (taken as UTC: only differences between lines matter).
const ISO_NO_OFFSET: &[BorrowedFormatItem<'_>] =
    format_description!("[year]-[month]-[day]T[hour]:[minute]:[second][optional [.[subsecond]]]");

const TIME_KEYS: [&str; 7] =
    ["time", "timestamp", "@timestamp", "time_iso8601", "time_local", "msec", "ts"];
const METHOD_KEYS: [&str; 2] = ["method", "request_method"];
const PATH_KEYS: [&str; 4] = ["request_uri", "uri", "path", "url"];
const QUERY_KEYS: [&str; 3] = ["args", "query_string", "query"];

/// Reads the log at `path` for replay against `target`.
pub fn read(path: &Path, target: &Target) -> Result<Replay, EngineError> {
    let file = path.display().to_string();
    let mut log = Builder::default();
    for_each_line(path, |n, bytes| {
        let bytes = bytes.trim_ascii();
        if bytes.is_empty() {
            return Ok(());
        }
        log.read();
        let parsed = if bytes[0] == b'{' { json_line(bytes) } else { clf_line(bytes) };
        match parsed.and_then(|line| line.resolve(target)) {
            Ok(l) => log.line(l.format, Some(&l.method), &l.path, l.at_ns, l.coarse),
            Err(why) => log.skip(why, n),
        }
        Ok(())
    })?;
    let replay = log.finish(&file);
    if replay.is_empty() {
        // The earliest bad line is the one to look at first.
        let first = replay.skipped.iter().min_by_key(|(_, (_, line))| *line);
        let what = match first {
            None => "no line at all: an access log is one request a line".to_string(),
            Some((why, (_, line))) => format!(
                "no line can be replayed ({} lines read; line {line}: {}); the Common or \
                 Combined Log Format or JSON lines with a time and a request are expected",
                replay.read,
                why.describe()
            ),
        };
        return Err(error(&file, first.map(|(_, (_, line))| *line), what));
    }
    Ok(replay)
}

/// A line's request and time, before its target is checked.
struct Line {
    format: &'static str,
    method: String,
    /// The request target as the log has it.
    target: Vec<u8>,
    at_ns: i64,
    coarse: bool,
}

/// A line ready to replay: its target in origin-form.
struct Ready {
    format: &'static str,
    method: String,
    path: String,
    at_ns: i64,
    coarse: bool,
}

impl Line {
    fn resolve(self, target: &Target) -> Result<Ready, Skip> {
        if self.method == "CONNECT" {
            return Err(Skip::Connect);
        }
        let path = origin_form(&self.target, target, OtherHosts::Refuse).map_err(|r| match r {
            Refused::Asterisk => Skip::Asterisk,
            Refused::OtherHost => Skip::OtherHost,
            Refused::NotATarget => Skip::BadRequestLine,
        })?;
        let Line { format, method, at_ns, coarse, .. } = self;
        Ok(Ready { format, method, path, at_ns, coarse })
    }
}

/// `host ident user [time] "request" ...`: the time between the first brackets, the request
/// in the quotes that follow.
fn clf_line(line: &[u8]) -> Result<Line, Skip> {
    let text = std::str::from_utf8(line).map_err(|_| Skip::Unparsable)?;
    let open = text.find(" [").ok_or(Skip::Unparsable)?;
    let close = open + text[open..].find("] \"").ok_or(Skip::Unparsable)?;
    let (at_ns, coarse) = clf_time(&text[open + 2..close]).ok_or(Skip::BadTime)?;
    let quoted = &line[close + 3..];
    let request = unquote(quoted).ok_or(Skip::Unparsable)?;
    let (method, target) = request_line(&request)?;
    Ok(Line { format: "combined", method, target, at_ns, coarse })
}

/// The request line up to its closing quote, its escapes undone (`\"`, `\\`, `\xHH`; a
/// backslash before anything else is kept as it is).
fn unquote(quoted: &[u8]) -> Option<Vec<u8>> {
    let mut out = Vec::with_capacity(quoted.len());
    let mut i = 0;
    while i < quoted.len() {
        match quoted[i] {
            b'"' => return Some(out),
            b'\\' if matches!(quoted.get(i + 1), Some(b'"' | b'\\')) => {
                out.push(quoted[i + 1]);
                i += 2;
            }
            b'\\' if quoted.get(i + 1) == Some(&b'x') => {
                let hex = quoted.get(i + 2..i + 4).and_then(|h| std::str::from_utf8(h).ok());
                match hex.and_then(|h| u8::from_str_radix(h, 16).ok()) {
                    Some(b) => {
                        out.push(b);
                        i += 4;
                    }
                    None => {
                        out.push(b'\\');
                        i += 1;
                    }
                }
            }
            b => {
                out.push(b);
                i += 1;
            }
        }
    }
    None
}

/// `METHOD target [HTTP/x.y]`: the method and the target.
fn request_line(request: &[u8]) -> Result<(String, Vec<u8>), Skip> {
    if request.is_empty() || request == b"-" {
        return Err(Skip::NoRequest);
    }
    let parts: Vec<&[u8]> = request.split(|&b| b == b' ').filter(|p| !p.is_empty()).collect();
    let (method, target) = match parts[..] {
        [m, t] => (m, t),
        [m, t, v] if v.starts_with(b"HTTP/") => (m, t),
        _ => return Err(Skip::BadRequestLine),
    };
    let method = std::str::from_utf8(method).map_err(|_| Skip::BadRequestLine)?;
    if !RequestSpec::is_method(method) {
        return Err(Skip::BadRequestLine);
    }
    Ok((method.to_string(), target.to_vec()))
}

/// A JSON line: the request and the time under the keys the module's overview lists.
fn json_line(line: &[u8]) -> Result<Line, Skip> {
    let object: Map<String, Value> = serde_json::from_slice(line).map_err(|_| Skip::Unparsable)?;
    let text = |keys: &[&str]| {
        keys.iter()
            .find_map(|k| object.get(*k))
            .and_then(Value::as_str)
            .filter(|s| !s.is_empty() && *s != "-")
    };
    let (method, target) = match (object.get("request").and_then(Value::as_str), text(&METHOD_KEYS))
    {
        (Some(request), _) => request_line(request.as_bytes())?,
        (None, Some(method)) => {
            if !RequestSpec::is_method(method) {
                return Err(Skip::BadRequestLine);
            }
            let mut target = text(&PATH_KEYS).ok_or(Skip::NoRequest)?.to_string();
            if let Some(query) = text(&QUERY_KEYS).filter(|_| !target.contains('?')) {
                if !query.starts_with('?') {
                    target.push('?');
                }
                target.push_str(query);
            }
            (method.to_string(), target.into_bytes())
        }
        (None, None) => return Err(Skip::NoRequest),
    };
    let time = TIME_KEYS.iter().find_map(|k| object.get(*k)).ok_or(Skip::BadTime)?;
    let (at_ns, coarse) = match time {
        Value::Number(n) => decimal_seconds(&n.to_string()).ok_or(Skip::BadTime)?,
        Value::String(s) => json_time(s).ok_or(Skip::BadTime)?,
        _ => return Err(Skip::BadTime),
    };
    Ok(Line { format: "json", method, target, at_ns, coarse })
}

/// A time written as a string: a number of seconds (nginx's `$msec`), or a date.
fn json_time(s: &str) -> Option<(i64, bool)> {
    let s = s.trim();
    if let Some(at) = decimal_seconds(s) {
        return Some(at);
    }
    let fraction = s.contains('.');
    let at = OffsetDateTime::parse(s, &Rfc3339)
        .or_else(|_| OffsetDateTime::parse(s, ISO_PLAIN_OFFSET))
        .or_else(|_| PrimitiveDateTime::parse(s, ISO_NO_OFFSET).map(|t| t.assume_utc()));
    match at {
        Ok(at) => Some((nanos(at)?, !fraction)),
        Err(_) => clf_time(s),
    }
}

/// The Common Log Format's time: whole seconds.
fn clf_time(s: &str) -> Option<(i64, bool)> {
    let at = OffsetDateTime::parse(s, CLF_TIME).ok()?;
    Some((nanos(at)?, true))
}

fn nanos(at: OffsetDateTime) -> Option<i64> {
    i64::try_from(at.unix_timestamp_nanos()).ok()
}

/// A decimal number of seconds since the epoch (`1714557600.250`), or of milliseconds or
/// microseconds by its size (this century's times are ~1.7e9 s, ~1.7e12 ms, ~1.7e15 µs), in
/// nanoseconds; whole seconds are coarse. Read digit by digit: through a float, 0.250 s would
/// come out 249,999,872 ns.
fn decimal_seconds(s: &str) -> Option<(i64, bool)> {
    let (whole, fraction) = s.split_once('.').unwrap_or((s, ""));
    if whole.is_empty() || !whole.bytes().all(|b| b.is_ascii_digit()) {
        return None;
    }
    if !fraction.bytes().all(|b| b.is_ascii_digit()) {
        return None;
    }
    let whole: i64 = whole.parse().ok()?;
    // Nine digits of the fraction are nanoseconds of a second; fewer are padded.
    let digits = &fraction[..fraction.len().min(9)];
    let nanos_of = |unit_ns: i64| -> Option<i64> {
        let frac = format!("{digits:0<9}").parse::<i64>().ok()? * unit_ns / 1_000_000_000;
        whole.checked_mul(unit_ns)?.checked_add(frac)
    };
    if whole > 100_000_000_000_000 {
        Some((nanos_of(1_000)?, false))
    } else if whole > 100_000_000_000 {
        Some((nanos_of(1_000_000)?, false))
    } else {
        Some((nanos_of(1_000_000_000)?, fraction.is_empty()))
    }
}

#[cfg(test)]
mod tests {
    use super::super::testing::{file, target};
    use super::*;

    fn paths(r: &Replay) -> Vec<String> {
        let request = |e: &u32| {
            let (method, path) = r.distinct.get(*e as usize);
            format!("{} {path}", method.unwrap_or("GET"))
        };
        r.requests.iter().map(request).collect()
    }

    #[test]
    fn combined_and_common_lines_with_escapes_and_every_skip_reason() {
        let text = r#"127.0.0.1 - frank [10/Oct/2000:13:55:36 -0700] "GET /apache_pb.gif HTTP/1.0" 200 2326 "http://www.example.com/start.html" "Mozilla/4.08"
10.0.0.1 - - [10/Oct/2000:13:55:37 -0700] "POST /form?a=\"b\"&c=\x41 HTTP/1.1" 302 -
10.0.0.1 - - [10/Oct/2000:13:55:37 -0700] "-" 400 0 "-" "-"
10.0.0.1 - - [10/Oct/2000:13:55:38 -0700] "CONNECT example.com:443 HTTP/1.1" 200 0
10.0.0.1 - - [10/Oct/2000:13:55:38 -0700] "OPTIONS * HTTP/1.1" 200 0
10.0.0.1 - - [10/Oct/2000:13:55:38 -0700] "GET http://other.example/x HTTP/1.1" 200 0
10.0.0.1 - - [10/Oct/2000:13:55:38 -0700] "GET /a b c HTTP/1.1" 400 0
10.0.0.1 - - [99/Foo/2000:13:55:38 -0700] "GET /t HTTP/1.1" 200 0
this is not a log line

10.0.0.1 - - [10/Oct/2000:13:55:39 -0700] "HEAD /caf\xc3\xa9 HTTP/1.1" 200 0
"#;
        let (_dir, path) = file("access.log", text);
        let r = read(&path, &target()).unwrap();
        assert_eq!(r.format, "combined");
        assert_eq!(r.read, 10, "blank lines are not read as lines");
        assert_eq!(
            paths(&r),
            ["GET /apache_pb.gif", "POST /form?a=%22b%22&c=A", "HEAD /caf%C3%A9"]
        );
        let skipped: Vec<(&str, u64, usize)> =
            r.skipped.iter().map(|(k, (n, first))| (k.name(), *n, *first)).collect();
        assert_eq!(
            skipped,
            [
                ("unparsable", 1, 9),
                ("no_request", 1, 3),
                ("bad_request_line", 1, 7),
                ("bad_time", 1, 8),
                ("connect", 1, 4),
                ("asterisk", 1, 5),
                ("other_host", 1, 6),
            ]
        );
        assert_eq!(r.skipped_total() + r.len() as u64, r.read);
        assert_eq!(r.offsets_ns[1], 1_000_000_000, "second 13:55:37 holds one replayed line");
        assert_eq!(r.offsets_ns[2], 3_000_000_000);
    }

    #[test]
    fn json_lines_as_nginx_and_apache_write_them() {
        let text = r#"{"time_iso8601":"2024-05-01T10:00:00+00:00","request":"GET /a?x=1 HTTP/1.1","status":"200"}
{"msec":"1714557600.250","request_method":"POST","uri":"/b","args":"y=2","status":200}
{"time":"2024-05-01T10:00:00.500+0000","method":"GET","path":"/c","query_string":"?z=3"}
{"time":1714557601,"method":"DELETE","url":"/d"}
{"time":"01/May/2024:10:00:02 +0000","request":"GET /e HTTP/2.0"}
{"time":1714557602000,"request":"GET /f HTTP/1.1"}
{"time":"yesterday","request":"GET /g HTTP/1.1"}
{"time":1714557602,"status":200}
{"broken json
"#;
        let (_dir, path) = file("access.log", text);
        let r = read(&path, &target()).unwrap();
        assert_eq!(r.format, "json");
        assert_eq!(
            paths(&r),
            ["GET /a?x=1", "POST /b?y=2", "GET /c?z=3", "DELETE /d", "GET /e", "GET /f"]
        );
        let ms: Vec<u64> = r.offsets_ns.iter().map(|ns| ns / 1_000_000).collect();
        assert_eq!(ms, [0, 250, 500, 1_000, 2_000, 2_000]);
        let skipped: Vec<&str> = r.skipped.keys().map(|k| k.name()).collect();
        assert_eq!(skipped, ["unparsable", "no_request", "bad_time"]);
    }

    #[test]
    fn epoch_numbers_in_seconds_milliseconds_and_microseconds() {
        assert_eq!(decimal_seconds("1714557600.25"), Some((1_714_557_600_250_000_000, false)));
        assert_eq!(decimal_seconds("1714557600"), Some((1_714_557_600_000_000_000, true)));
        assert_eq!(decimal_seconds("1714557600123"), Some((1_714_557_600_123_000_000, false)));
        assert_eq!(decimal_seconds("1714557600123456"), Some((1_714_557_600_123_456_000, false)));
        assert_eq!(decimal_seconds("1.5e9"), None);
        assert_eq!(decimal_seconds("-3"), None);
    }

    #[test]
    fn a_log_with_nothing_to_replay_is_an_error_naming_its_first_bad_line() {
        let (_dir, path) =
            file("access.log", "\n\nnot a log\n1.2.3.4 - - [x] \"GET / HTTP/1.1\" 200 0\n");
        let e = read(&path, &target()).unwrap_err().to_string();
        let name = path.display().to_string();
        assert!(
            e.starts_with(&format!(
                "{name}:3: no line can be replayed (2 lines read; line 3: neither"
            )),
            "{e}"
        );
        let (_dir, path) = file("access.log", "\n");
        let e = read(&path, &target()).unwrap_err().to_string();
        assert!(e.contains("no line at all"), "{e}");
    }
}
