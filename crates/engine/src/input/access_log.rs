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
//! A line that is not in either format (no `[time]` and quoted request, a time that is not a
//! date, a JSON line that does not parse or has no time) is an error naming the file, the line
//! and what is expected: the file is not the log it claims to be there, and a replay of what
//! remains would not be the traffic it recorded. The one exception is a last line without its
//! end of line, as a server still writing the log leaves it: counted as `truncated`. A line in
//! the format whose request cannot be replayed (CONNECT, `*`, another host, a request line that
//! is not one, such as a TLS handshake a server logged as a 400, or none at all) is counted by
//! its [`Skip`] reason and said; a file with no line that can be replayed is an error naming
//! the first.

use std::path::Path;

use serde_json::{Map, Value};
use time::format_description::well_known::Rfc3339;
use time::format_description::BorrowedFormatItem;
use time::macros::format_description;
use time::{OffsetDateTime, PrimitiveDateTime};

use super::{error, for_each_line_ended, origin_form, OtherHosts, Refused};
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

/// What a line of either format looks like, for the errors of one that is not.
const EXPECTED: &str = "the Common or Combined Log Format (host ident user [10/Oct/2000:13:55:36 \
                        -0700] \"GET /path HTTP/1.1\" status bytes ...) or a JSON object a line \
                        is expected; fix or remove the line";

/// Why a line is not replayed.
enum Unusable {
    /// A line in the format whose request is not one to replay: counted.
    Skip(Skip),
    /// A line not in the format at all: an error, with what is wrong and what to do.
    Malformed(String),
}

impl From<Skip> for Unusable {
    fn from(why: Skip) -> Unusable {
        Unusable::Skip(why)
    }
}

/// Reads the log at `path` for replay against `target`.
pub fn read(path: &Path, target: &Target) -> Result<Replay, EngineError> {
    let file = path.display().to_string();
    let mut log = Builder::default();
    for_each_line_ended(path, |n, bytes, ended| {
        let bytes = bytes.trim_ascii();
        if bytes.is_empty() {
            return Ok(());
        }
        log.read();
        let parsed = if bytes[0] == b'{' { json_line(bytes) } else { clf_line(bytes) };
        match parsed.and_then(|line| Ok(line.resolve(target)?)) {
            Ok(l) => log.line(l.format, Some(&l.method), &l.path, l.at_ns, l.coarse),
            Err(Unusable::Skip(why)) => log.skip(why, n),
            // A server writes a line and its end of line together: a last line without one is
            // still being written, not wrong.
            Err(Unusable::Malformed(_)) if !ended => log.skip(Skip::Truncated, n),
            Err(Unusable::Malformed(what)) => return Err(error(&file, Some(n), what)),
        }
        Ok(())
    })?;
    let replay = log.finish(&file);
    if replay.is_empty() {
        // The earliest line not replayed is the one to look at first.
        let first = replay.skipped.iter().min_by_key(|(_, (_, line))| *line);
        let what = match first {
            None => "no line at all: an access log is one request a line".to_string(),
            Some((why, (_, line))) => format!(
                "no line can be replayed ({} read; line {line}: {}): a log of requests \
                 to this site's paths is expected",
                if replay.read == 1 {
                    "1 line".to_string()
                } else {
                    format!("{} lines", replay.read)
                },
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
fn clf_line(line: &[u8]) -> Result<Line, Unusable> {
    let malformed =
        |what: &str| Unusable::Malformed(format!("not a log line ({what}): {EXPECTED}"));
    let text = std::str::from_utf8(line).map_err(|_| malformed("not UTF-8 text"))?;
    let open = text.find(" [").ok_or_else(|| malformed("no [time]"))?;
    let close = open
        + text[open..].find("] \"").ok_or_else(|| malformed("no [time] and quoted request"))?;
    let time = &text[open + 2..close];
    let (at_ns, coarse) = clf_time(time).ok_or_else(|| {
        Unusable::Malformed(format!(
            "the time [{time}] is not the Common Log Format's (10/Oct/2000:13:55:36 -0700); fix \
             or remove the line"
        ))
    })?;
    let quoted = &line[close + 3..];
    let request = unquote(quoted).ok_or_else(|| malformed("the request has no closing quote"))?;
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
fn json_line(line: &[u8]) -> Result<Line, Unusable> {
    let object: Map<String, Value> = serde_json::from_slice(line).map_err(|e| {
        Unusable::Malformed(format!(
            "not a JSON object (wrong at column {}): JSON lines are one object a line, with a \
             request and a time; fix or remove the line",
            e.column()
        ))
    })?;
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
                return Err(Skip::BadRequestLine.into());
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
        (None, None) => return Err(Skip::NoRequest.into()),
    };
    let Some((key, time)) = TIME_KEYS.iter().find_map(|k| object.get(*k).map(|v| (*k, v))) else {
        return Err(Unusable::Malformed(format!(
            "no time: a JSON line needs one of {} (nginx: \"msec\":\"$msec\"); add it to the \
             log's format",
            TIME_KEYS.join(", ")
        )));
    };
    let at = match time {
        Value::Number(n) => decimal_seconds(&n.to_string()),
        Value::String(s) => json_time(s),
        _ => None,
    };
    let (at_ns, coarse) = at.ok_or_else(|| {
        Unusable::Malformed(format!(
            "the time {key}: {time} is not a date (RFC 3339, ISO 8601 or the Common Log \
             Format's) nor seconds since the epoch; fix or remove the line"
        ))
    })?;
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
10.0.0.1 - - [10/Oct/2000:13:55:38 -0700] "\x16\x03\x01\x02\x00\x01\x00\x01\xFC\x03\x03" 400 157

10.0.0.1 - - [10/Oct/2000:13:55:39 -0700] "HEAD /caf\xc3\xa9 HTTP/1.1" 200 0
10.0.0.1 - - [10/Oct/2000:13:55:40 -0700] "GET /still-being-wr"#;
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
        // Line 8 is a TLS handshake nginx logged as a 400: a request line that is not one.
        assert_eq!(
            skipped,
            [
                ("no_request", 1, 3),
                ("bad_request_line", 2, 7),
                ("connect", 1, 4),
                ("asterisk", 1, 5),
                ("other_host", 1, 6),
                ("truncated", 1, 11),
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
{"time":1714557602,"status":200}
{"time":1714557602,"request":"GET /half"#;
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
        assert_eq!(skipped, ["no_request", "truncated"]);
    }

    /// A line that is not in the format is an error naming the file, the line and what is
    /// expected, even when other lines could be replayed; a last line that lacks its end of
    /// line as well is a log still being written (counted as truncated, above).
    #[test]
    fn a_line_not_in_the_format_is_an_error_naming_it_and_what_to_do() {
        let good = "10.0.0.1 - - [10/Oct/2000:13:55:36 -0700] \"GET /a HTTP/1.1\" 200 5\n";
        for (bad, says) in [
            ("this is not a log line", "not a log line (no [time]): the Common or Combined"),
            ("1.2.3.4 - - [x] \"GET / HTTP/1.1\" 200 0", "the time [x] is not the Common Log"),
            ("1.2.3.4 - - [10/Oct/2000:13:55:36 -0700] \"GET /a", "has no closing quote"),
            ("{\"broken json", "not a JSON object (wrong at column 13)"),
            ("{\"request\":\"GET /g HTTP/1.1\"}", "no time: a JSON line needs one of time,"),
            (
                "{\"time\":\"yesterday\",\"request\":\"GET /g HTTP/1.1\"}",
                "the time time: \"yesterday\" is not a date",
            ),
        ] {
            let (_dir, path) = file("access.log", &format!("{good}\n{bad}\n{good}"));
            let e = read(&path, &target()).unwrap_err().to_string();
            let name = path.display().to_string();
            assert!(e.starts_with(&format!("{name}:3: ")), "{bad}: {e}");
            assert!(e.contains(says), "{bad}: {e}");
            assert!(e.ends_with("the line") || e.ends_with("format"), "{bad}: {e}");
            assert_eq!(e.lines().count(), 1, "{e}");
        }
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
    fn a_log_with_nothing_to_replay_is_an_error_naming_its_first_line() {
        let text = "\n\n1.2.3.4 - - [10/Oct/2000:13:55:36 -0700] \"-\" 400 0\n\
                    1.2.3.4 - - [10/Oct/2000:13:55:36 -0700] \"CONNECT a:443 HTTP/1.1\" 200 0\n";
        let (_dir, path) = file("access.log", text);
        let e = read(&path, &target()).unwrap_err().to_string();
        let name = path.display().to_string();
        assert!(
            e.starts_with(&format!(
                "{name}:3: no line can be replayed (2 lines read; line 3: no request"
            )),
            "{e}"
        );
        let (_dir, path) = file("access.log", "\n");
        let e = read(&path, &target()).unwrap_err().to_string();
        assert!(e.contains("no line at all"), "{e}");
    }
}
