//! Other tools' habits on a `bench` command line: which tool's meaning a flag combination
//! has, and, where loadlab would read it as something else, the refusal that says what to type.
//!
//! ab, wrk, wrk2, h2load and httperf share letters with different meanings (ab's `-t` is a
//! time limit, loadlab's threads; h2load's `-m` is streams, ab's and loadlab's the method;
//! httperf's `--rate` is new connections per second, wrk2's and loadlab's requests per
//! second). A benchmark that quietly runs another test than the one typed is worse than one
//! that refuses, so each combination that can only be another tool's is refused here with the
//! command that means what that tool meant; what is loadlab's own passes. [`flags`] has the
//! habits whose meaning loadlab has, [`spelled`] the spellings clap cannot parse.

pub mod flags;
pub mod spelled;

/// The flags of a `bench` command line that the habits concern, as typed (`None`: not given).
#[derive(Debug, Clone, Default)]
pub struct Typed<'a> {
    /// The URL argument.
    pub url: &'a str,
    /// `-c`.
    pub connections: Option<usize>,
    /// `-R`, `--rate`.
    pub rate: Option<f64>,
    /// `--conn-rate`.
    pub conn_rate: Option<f64>,
    /// `--conns`, `--num-conns`.
    pub conns: Option<u64>,
    /// `--calls-per-conn`, `--num-calls`.
    pub calls: Option<u32>,
    /// `-n`.
    pub requests: Option<u64>,
    /// Whether `-d` was given.
    pub duration: bool,
    /// `-t`.
    pub threads: Option<usize>,
    /// Whether ab's `-k` was given.
    pub keepalive: bool,
    /// Whether a `-H` asks for `Connection: close` (which means `--no-keepalive`).
    pub closes: bool,
    /// `-m`.
    pub method: &'a str,
    /// Whether `--http2` was given.
    pub http2: bool,
    /// The CPUs this process may run on.
    pub cpus: usize,
}

/// The refusal of a command line that means another tool's test: one line, with what to type.
pub fn check(t: &Typed) -> Result<(), String> {
    userinfo(t.url)?;
    httperf(t)?;
    wrk2(t)?;
    h2load(t)?;
    ab(t)?;
    keepalive_and_close(t)
}

/// ab's `-k` keeps connections alive while `-H 'Connection: close'` (wrk's way) closes each
/// after one request: the two ask for opposite tests, so neither is guessed.
fn keepalive_and_close(t: &Typed) -> Result<(), String> {
    if t.keepalive && t.closes {
        return Err("-k keeps connections alive and -H 'Connection: close' closes each after one \
                    request (--no-keepalive): give one of them"
            .into());
    }
    Ok(())
}

/// httperf's `--num-conns N --num-calls K --rate R` is N sessions of K requests at R new
/// connections a second; here `--rate` is requests a second and httperf's rate is
/// `--conn-rate`, which the session flags need.
fn httperf(t: &Typed) -> Result<(), String> {
    if t.conn_rate.is_some() || (t.conns.is_none() && t.calls.is_none()) {
        return Ok(());
    }
    let rate = t.rate.map_or("R".to_string(), |r| r.to_string());
    let mut command = format!("--conn-rate {rate}");
    let mut given = Vec::new();
    if let Some(n) = t.conns {
        command.push_str(&format!(" --num-conns {n}"));
        given.push("--num-conns");
    }
    if let Some(k) = t.calls {
        command.push_str(&format!(" --num-calls {k}"));
        given.push("--num-calls");
    }
    let given = given.join(" and ");
    Err(match (t.rate, t.conns) {
        (Some(_), _) => format!(
            "{given} with --rate is httperf's model, sessions at {rate} new connections a \
             second: here that is {command} (--rate is wrk2's, requests a second)"
        ),
        (None, Some(n)) => format!(
            "{given} counts httperf's sessions and needs their rate: {command} (new \
             connections a second); for {n} requests, -n {n}"
        ),
        (None, None) => format!(
            "{given} makes httperf's sessions and needs their rate: {command} (new \
             connections a second)"
        ),
    })
}

/// wrk2's `-c N -R R` is an open loop over N connections: here `-c` is the closed loop's, and
/// the open loop's connections grow up to `--max-connections`.
fn wrk2(t: &Typed) -> Result<(), String> {
    let Some(c) = t.connections else { return Ok(()) };
    let with = match (t.rate, t.conn_rate) {
        (Some(_), _) => "--rate (wrk2's -R)",
        (None, Some(_)) => "--conn-rate",
        (None, None) => return Ok(()),
    };
    Err(format!(
        "-c {c} is the closed loop's connections: with {with} the connections grow as the \
         schedule needs, up to --max-connections {c} (wrk2's -c with -R)"
    ))
}

/// h2load's `-m N` is N streams per connection; a method is never all digits (RFC 9110
/// section 9: methods are tokens, and every registered one is a word).
fn h2load(t: &Typed) -> Result<(), String> {
    if t.method.is_empty() || !t.method.bytes().all(|b| b.is_ascii_digit()) {
        return Ok(());
    }
    let http2 = if t.http2 { "" } else { "--http2 " };
    Err(format!(
        "-m {m} is a method here, and no method is a number: did you mean --streams {m} \
         (h2load's -m)? With HTTP/2: {http2}--streams {m}",
        m = t.method
    ))
}

/// ab's `-t N` is a time limit of N seconds; here `-t` is worker threads. More threads than
/// CPUs with no stop condition typed is what ab's users type, not a thread count one would
/// choose: refused, with both readings.
fn ab(t: &Typed) -> Result<(), String> {
    let Some(n) = t.threads else { return Ok(()) };
    let stop_given = t.duration || t.requests.is_some() || t.conns.is_some();
    if n <= t.cpus || stop_given {
        return Ok(());
    }
    Err(format!(
        "-t {n} is {n} worker threads here, more than the {} CPUs, not ab's -t (a time limit): \
         for a {n} s run type -d {n}s; for {n} threads, say how long too (-d or -n)",
        t.cpus
    ))
}

/// The line to say when `-t N` may be ab's time limit read as threads: `-t` without `-d`
/// among ab's flags (`-n`, `-k`, `-c`). Fewer threads than CPUs, or a count of requests, is a
/// thread count one might choose, so the run goes on as typed; the line says what it is.
pub fn threads_note(t: &Typed) -> Option<String> {
    // `-t 0` is refused with the configuration, in a line of its own.
    let n = t.threads.filter(|n| *n > 0)?;
    let among_abs = t.requests.is_some() || t.keepalive || t.connections.is_some();
    (!t.duration && among_abs).then(|| {
        format!("-t {n} is {n} worker threads here, not ab's -t (a time limit): that is -d {n}s")
    })
}

/// curl's and wget's `http://user:pw@host/`: RFC 9110 section 4.2.4 forbids a client to send
/// a URL's userinfo, and what those tools make of it, Basic authentication, is ab's `-A` here.
fn userinfo(url: &str) -> Result<(), String> {
    let Ok(parsed) = url::Url::parse(url) else { return Ok(()) };
    if parsed.username().is_empty() && parsed.password().is_none() {
        return Ok(());
    }
    let decode = |s: &str| percent_encoding::percent_decode_str(s).decode_utf8_lossy().into_owned();
    let user = decode(parsed.username());
    let password = parsed.password().map_or_else(|| "PASSWORD".to_string(), decode);
    let mut bare = parsed.clone();
    // Both succeed on an http(s) URL, which has a host.
    let _ = bare.set_username("");
    let _ = bare.set_password(None);
    Err(format!(
        "{url}: a URL's user:password@ is never sent (RFC 9110 section 4.2.4); Basic \
         authentication is -A here: -A {user}:{password} {bare}"
    ))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn typed() -> Typed<'static> {
        Typed { url: "http://127.0.0.1:8080/", method: "GET", cpus: 4, ..Typed::default() }
    }

    #[test]
    fn loadlabs_own_combinations_pass() {
        let ok = [
            Typed { connections: Some(50), ..typed() },
            Typed { rate: Some(100.0), ..typed() },
            Typed { conn_rate: Some(10.0), conns: Some(20), calls: Some(3), ..typed() },
            Typed { threads: Some(4), ..typed() },
            Typed { threads: Some(64), duration: true, ..typed() },
            Typed { method: "PATCH", ..typed() },
            Typed { keepalive: true, ..typed() },
            Typed { closes: true, ..typed() },
        ];
        for t in ok {
            assert_eq!(check(&t), Ok(()), "{t:?}");
        }
    }

    #[test]
    fn other_tools_readings_are_refused_with_the_command_to_type() {
        let cases = [
            (
                Typed { conns: Some(200), rate: Some(100.0), ..typed() },
                "--conn-rate 100 --num-conns 200",
            ),
            (Typed { conns: Some(50), connections: Some(10), ..typed() }, "-n 50"),
            (
                Typed { calls: Some(2), rate: Some(100.0), ..typed() },
                "--conn-rate 100 --num-calls 2",
            ),
            (
                Typed { connections: Some(50), rate: Some(2000.0), ..typed() },
                "--max-connections 50",
            ),
            (
                Typed { connections: Some(5), conn_rate: Some(10.0), ..typed() },
                "--max-connections 5",
            ),
            (Typed { method: "10", ..typed() }, "--streams 10 (h2load's -m)"),
            (Typed { threads: Some(5), ..typed() }, "-d 5s"),
            (
                Typed { url: "http://admin:s%40cret@127.0.0.1:8080/x", ..typed() },
                "Basic authentication is -A here: -A admin:s@cret http://127.0.0.1:8080/x",
            ),
            (Typed { url: "https://admin@[::1]/", ..typed() }, "-A admin:PASSWORD https://[::1]/"),
        ];
        for (t, says) in cases {
            let refusal = check(&t).expect_err(says);
            assert!(refusal.contains(says), "{t:?}: {refusal}");
        }
    }

    /// ab's `ab -t 2 -n 100 -c 4 -k` runs; what `-t 2` is and ab's time limit are said.
    #[test]
    fn ab_flags_around_t_without_d_have_t_said_as_threads() {
        let said = "-t 2 is 2 worker threads here, not ab's -t (a time limit): that is -d 2s";
        for t in [
            Typed { threads: Some(2), requests: Some(100), ..typed() },
            Typed { threads: Some(2), keepalive: true, ..typed() },
            Typed { threads: Some(2), connections: Some(4), ..typed() },
        ] {
            assert_eq!(check(&t), Ok(()), "{t:?}");
            assert_eq!(threads_note(&t).as_deref(), Some(said), "{t:?}");
        }
        for quiet in [
            Typed { threads: Some(2), connections: Some(4), duration: true, ..typed() },
            Typed { threads: Some(2), ..typed() },
            Typed { connections: Some(4), keepalive: true, ..typed() },
        ] {
            assert_eq!(threads_note(&quiet), None, "{quiet:?}");
        }
    }

    #[test]
    fn keep_alive_and_connection_close_together_are_refused_naming_both() {
        let both = check(&Typed { keepalive: true, closes: true, ..typed() }).unwrap_err();
        assert!(both.contains("-k") && both.contains("Connection: close"), "{both}");
    }
}
