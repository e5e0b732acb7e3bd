//! Command lines clap cannot parse that are another tool's spelling: vegeta's `attack
//! -rate=100/s`, httperf's `--server H --port P --uri /x` and `--wsess`, k6's `--stage`, wrk's
//! `-s script.lua`, hey's and oha's `-q 100`. clap answers each with its guess at a similar
//! flag, several of them wrong (`--stage` with `--stages`, the open loop's rate where k6 means
//! virtual users; `--wsess` with `--wsesslog`, a session log where httperf means generated
//! sessions), so each is said here with the command that means what the tool meant.
//!
//! Only command lines clap refused come here, so a valid one is never read as another tool's;
//! the words are matched whole (`--server`, `--server=H`), never inside a value.

use loadlab_load::parse_duration;

/// What another tool's spelling in `args` (the words after `loadlab`, which clap refused)
/// means here, in one line with the command to type; `None` when the words are not another
/// tool's, and clap's own message says it best.
pub fn refusal(args: &[String]) -> Option<String> {
    let words: Vec<&str> = args.iter().map(String::as_str).collect();
    match words.split_first()? {
        (&"attack", rest) => Some(vegeta(rest, true)),
        (&"bench", rest) => [vegeta_flags, httperf_url, wsess, k6_stage, wrk_script, rate_q]
            .into_iter()
            .find_map(|habit| habit(rest)),
        _ => None,
    }
}

/// The value of the first of the flags `names` in `words`: `--name V`, `--name=V`, and for a
/// one-letter flag `-xV` too.
fn value<'a>(words: &[&'a str], names: &[&str]) -> Option<&'a str> {
    values(words, names).into_iter().next()
}

/// The value of every occurrence of the flags `names` in `words`, in order.
fn values<'a>(words: &[&'a str], names: &[&str]) -> Vec<&'a str> {
    let mut out = Vec::new();
    for (i, word) in words.iter().enumerate() {
        for name in names {
            if word == name {
                out.extend(words.get(i + 1));
            } else if let Some(v) = word.strip_prefix(name) {
                let short = name.len() == 2 && !word.starts_with("--");
                if let Some(v) = v.strip_prefix('=').or(short.then_some(v)) {
                    out.push(v);
                }
            }
        }
    }
    out
}

/// Whether one of the flags `names` is in `words`, with or without a value.
fn given(words: &[&str], names: &[&str]) -> bool {
    words.iter().any(|w| names.iter().any(|n| w == n || w.starts_with(&format!("{n}="))))
}

/// The URL typed, or the placeholder.
fn url<'a>(words: &[&'a str]) -> &'a str {
    let typed = words.iter().find(|w| w.starts_with("http://") || w.starts_with("https://"));
    typed.copied().unwrap_or("URL")
}

/// A number as a flag takes it: whole when it is, else to the thousandth.
fn number(x: f64) -> String {
    let rounded = (x * 1000.0).round() / 1000.0;
    rounded.to_string()
}

/// Go's one-dash flags of vegeta's `attack` typed to `bench`: `-rate=100/s -duration=5s`.
fn vegeta_flags(words: &[&str]) -> Option<String> {
    given(words, &["-rate", "-duration"]).then(|| vegeta(words, false))
}

/// vegeta's `attack` (`attack` itself typed or not): its rate (`100/s`, `100/1m`, a bare
/// number a second; 50 a second by default) and duration, and its targets, which it reads from
/// stdin and which are the URL argument here.
fn vegeta(words: &[&str], attack: bool) -> String {
    let flags: Vec<&str> =
        ["-rate", "-duration"].into_iter().filter(|f| given(words, &[f])).collect();
    let typed = match (attack, &flags[..]) {
        (true, _) => "'attack' is".to_string(),
        (false, [one]) => format!("{one} is"),
        (false, _) => format!("{} are", flags.join(" and ")),
    };
    let rate = match value(words, &["-rate"]) {
        None if attack => Some(50.0),
        None => None,
        Some(r) => match vegeta_rate(r) {
            Some(r) => Some(r),
            None => return format!("-rate={r}: vegeta's rate is N/DURATION (100/s, 600/1m)"),
        },
    };
    let duration = value(words, &["-duration"]).map(|d| format!(" -d {d}")).unwrap_or_default();
    let url = url(words);
    let load = match rate {
        // vegeta's -rate=0 sends as fast as its workers can: the closed loop.
        Some(0.0) => "-c N (N connections, each sending when the last answer came)".into(),
        Some(r) => format!("--rate {}", number(r)),
        None => "--rate R".to_string(),
    };
    format!(
        "{typed} vegeta's: here that is loadlab bench {load}{duration} {url} (vegeta's targets \
         on stdin are the URL argument here, or --urls FILE for several, one request a line)"
    )
}

/// vegeta's `-rate`: `N/DURATION` (`100/s`, `100/1s`, `600/1m`) or a bare `N` a second.
fn vegeta_rate(r: &str) -> Option<f64> {
    let (n, per) = r.split_once('/').unwrap_or((r, "1s"));
    let n: f64 = n.parse().ok().filter(|n: &f64| n.is_finite() && *n >= 0.0)?;
    let per = if per.starts_with(|c: char| c.is_ascii_digit()) {
        per.to_string()
    } else {
        format!("1{per}")
    };
    let per = parse_duration(&per).ok()?.as_secs_f64();
    (per > 0.0).then(|| n / per)
}

/// httperf's `--server H --port P --uri /x` (`--ssl` for https): the URL argument here.
fn httperf_url(words: &[&str]) -> Option<String> {
    let flags = ["--server", "--port", "--uri"];
    let typed: Vec<&str> = flags.into_iter().filter(|f| given(words, &[f])).collect();
    if typed.is_empty() {
        return None;
    }
    let ssl = words.contains(&"--ssl");
    let server = value(words, &["--server"]).unwrap_or("localhost");
    let server = if server.contains(':') { format!("[{server}]") } else { server.to_string() };
    let port = value(words, &["--port"]).unwrap_or(if ssl { "443" } else { "80" });
    let uri = value(words, &["--uri"]).unwrap_or("/");
    let scheme = if ssl { "https" } else { "http" };
    Some(format!(
        "httperf's {} name the URL here, the one argument: loadlab bench {scheme}://{server}:{port}{uri}",
        typed.join(", ")
    ))
}

/// httperf's `--wsess=N1,N2,X`: N1 sessions of N2 calls, X seconds of think time between
/// them, at `--rate` sessions a second. Here sessions are `--conn-rate`'s, their calls back
/// to back; think time is a session log's or a visit file's.
fn wsess(words: &[&str]) -> Option<String> {
    if !given(words, &["--wsess"]) {
        return None;
    }
    let spec = value(words, &["--wsess"]).unwrap_or_default();
    let (n1, n2, x) = match spec.split(',').collect::<Vec<_>>()[..] {
        [n1, n2, x] => (n1, n2, x),
        _ => ("N1", "N2", "X"),
    };
    let rate = value(words, &["--rate", "-R"]).unwrap_or("R");
    Some(format!(
        "httperf's --wsess={n1},{n2},{x} ({n1} sessions of {n2} calls, {x} s of think time) is \
         --conn-rate {rate} --num-conns {n1} --num-calls {n2} here (httperf's --rate is \
         --conn-rate), the calls back to back; with think time, --wsesslog {n1},{x},FILE \
         (httperf's session log, not --wsess) or --visits FILE"
    ))
}

/// k6's `--stage 30s:100` (or `-s`, repeatable): virtual users in stages, which are
/// connections in stages here (`-c`); `--stages` is the open loop's rate in stages.
fn k6_stage(words: &[&str]) -> Option<String> {
    let stages = values(words, &["--stage"]);
    let short = values(words, &["-s"]);
    let short: Vec<&str> = short.into_iter().filter(|s| s.contains(':')).collect();
    let (typed, stages) = match (stages.is_empty(), short.is_empty()) {
        (false, _) => ("--stage", stages),
        (true, false) => ("-s", short),
        (true, true) => return None,
    };
    let stages = stages.join(",");
    let short = if typed == "-s" { " (-s is the timeout here)" } else { "" };
    Some(format!(
        "k6's {typed} {stages} ramps virtual users{short}: here that is -c {stages}, \
         connections in stages (a closed loop; the first stage from 0 connections, k6's from \
         --vus); --stages is the open loop's rate in stages (k6's ramping arrival rate)"
    ))
}

/// wrk's `-s script.lua`: `-s` is ab's timeout here, and loadlab runs no Lua; what wrk's
/// scripts are written for has flags of its own.
fn wrk_script(words: &[&str]) -> Option<String> {
    let script = value(words, &["-s", "--script"])
        .filter(|s| !s.starts_with('-') && !s.contains(':') && parse_duration(s).is_err())?;
    Some(format!(
        "-s is the timeout here (ab's -s), not wrk's script ({script}): loadlab runs no Lua; \
         several requests are --urls FILE (by weight or in order), steps with checks and \
         captures --visits FILE, one request's body --body FILE (with -m and -H)"
    ))
}

/// hey's and oha's `-q 100`: a rate, per worker in hey and in all in oha; `-q` is `--quiet`
/// here and the rate is `--rate`, the whole run's.
fn rate_q(words: &[&str]) -> Option<String> {
    let q: f64 = value(words, &["-q"])?.parse().ok().filter(|q: &f64| q.is_finite() && *q > 0.0)?;
    let c = value(words, &["-c", "--connections"]).and_then(|c| c.parse::<u32>().ok());
    // hey's and oha's -c: 50 workers unless given.
    let workers = c.unwrap_or(50);
    let (q_typed, bound) = match c {
        Some(c) => (format!("-c {c} -q {}", number(q)), format!(" --max-connections {c}")),
        None => (format!("-q {}", number(q)), String::new()),
    };
    Some(format!(
        "-q is --quiet here, not a rate: hey's {q_typed} (a second per worker, of {workers}) is \
         --rate {}{bound}, oha's (a second in all) --rate {}{bound}; --rate counts the whole \
         run's requests a second, due on a schedule",
        number(q * f64::from(workers)),
        number(q)
    ))
}

#[cfg(test)]
mod tests {
    use super::refusal;

    fn refused(line: &str) -> Option<String> {
        let words: Vec<String> = line.split_whitespace().map(str::to_string).collect();
        refusal(&words)
    }

    #[test]
    fn each_tools_spelling_is_said_with_the_command_to_type() {
        let url = "http://127.0.0.1:8080/";
        for (line, says) in [
            ("attack -rate=100/s -duration=5s", "loadlab bench --rate 100 -d 5s URL"),
            ("attack -duration=5s", "--rate 50 -d 5s"),
            (&format!("bench -rate=600/1m {url}"), &format!("--rate 10 {url}")),
            ("bench -rate 100 -duration 2s", "--rate 100 -d 2s URL (vegeta's targets on stdin"),
            ("bench -rate=0 -duration=1s", "-c N"),
            ("bench -rate=fast", "-rate=fast: vegeta's rate is N/DURATION"),
            (
                "bench --server 127.0.0.1 --port 8080 --uri /x",
                "httperf's --server, --port, --uri name the URL here, the one argument: \
                 loadlab bench http://127.0.0.1:8080/x",
            ),
            ("bench --server=::1 --ssl", "https://[::1]:443/"),
            ("bench --wsess=5,2,1 --rate 3", "--conn-rate 3 --num-conns 5 --num-calls 2"),
            ("bench --wsess 5,2,1", "--wsesslog 5,1,FILE"),
            ("bench --stage 1s:5 --stage 2s:0 URL", "-c 1s:5,2s:0, connections in stages"),
            ("bench -s 30s:100 URL", "k6's -s 30s:100 ramps virtual users (-s is the timeout"),
            ("bench -s script.lua URL", "not wrk's script (script.lua)"),
            ("bench -q 100 URL", "hey's -q 100 (a second per worker, of 50) is --rate 5000,"),
            ("bench -c 2 -q 100 URL", "--rate 200 --max-connections 2, oha's"),
            ("bench -c2 -q100 URL", "oha's (a second in all) --rate 100 --max-connections 2"),
        ] {
            let said = refused(line).unwrap_or_else(|| panic!("{line}: not refused"));
            assert!(said.contains(says), "{line}: {said}");
        }
    }

    /// What is not another tool's is clap's to say: an unknown flag, a bad timeout, `-q`
    /// beside a URL that is not a number, another subcommand.
    #[test]
    fn other_mistakes_are_left_to_clap() {
        for line in [
            "bench --bogus URL",
            "bench -s -1 URL",
            "bench -q URL1 URL2",
            "bench -rat 5 URL",
            "stack frob",
            "sweep --stage 1s:5 URL",
            "",
        ] {
            assert_eq!(refused(line), None, "{line}");
        }
    }
}
