//! What ab's, wrk's, wrk2's and httperf's users type out of habit: accepted where the meaning
//! is clear (ab's -k -l -r -p -u -T -e -i -C -A -s, wrk's --latency, wrk2's -R, httperf's
//! --num-conns, --num-calls and --hog), and every refused command line said in one line pointing at the right help.

use super::{assert_exit, at, uint};
use crate::support::{loadlab, output_within, run_json, Behaviour, TestServer};

#[test]
fn abs_post_file_and_content_type_send_the_file_as_a_post() {
    let server = TestServer::start(Behaviour::ok("ok"));
    let dir = tempfile::tempdir().unwrap();
    let file = dir.path().join("body.json");
    std::fs::write(&file, br#"{"a":1}"#).unwrap();
    let url = server.url("/form");
    let file = file.to_str().unwrap();
    let args =
        ["bench", "-k", "-l", "-r", "-n", "3", "-c", "1", "-p", file, "-T", "application/json"];
    let (report, output) = run_json(&[&args[..], &[url.as_str()]].concat());
    assert_exit(&output, 0);
    assert_eq!(uint(&report, "requests.completed"), 3);
    assert_eq!(at(&report, "config.method"), "POST");
    let request = server.last_request().expect("a request");
    assert_eq!(request.method, "POST");
    assert_eq!(request.body, br#"{"a":1}"#);
    assert_eq!(request.header("content-type"), Some("application/json"));
    // Each flag that changes nothing here says what loadlab does instead.
    let stderr = String::from_utf8_lossy(&output.stderr);
    for flag in ["-k: keep-alive is already on", "-l: ", "-r: "] {
        assert!(stderr.contains(&format!("loadlab: note: {flag}")), "{flag}: {stderr}");
    }
}

#[test]
fn abs_put_file_puts_and_an_explicit_method_wins() {
    let server = TestServer::start(Behaviour::ok("ok"));
    let dir = tempfile::tempdir().unwrap();
    let file = dir.path().join("b.txt");
    std::fs::write(&file, b"put me").unwrap();
    let (url, file) = (server.url("/x"), file.to_str().unwrap().to_string());
    let (_, output) = run_json(&["bench", "-n", "1", "-c", "1", "-u", &file, &url]);
    assert_exit(&output, 0);
    let request = server.last_request().expect("a request");
    assert_eq!((request.method.as_str(), request.body.as_slice()), ("PUT", &b"put me"[..]));
    let (_, output) = run_json(&["bench", "-n", "1", "-c", "1", "-m", "PATCH", "-p", &file, &url]);
    assert_exit(&output, 0);
    assert_eq!(server.last_request().expect("a request").method, "PATCH");
}

#[test]
fn abs_i_sends_head_requests_and_c_and_a_set_cookie_and_basic_auth() {
    let server = TestServer::start(Behaviour::NoBody { status: 204 });
    let url = server.url("/h");
    let (report, output) = run_json(&["bench", "-i", "-n", "3", "-c", "1", &url]);
    assert_exit(&output, 0);
    assert_eq!((uint(&report, "requests.completed"), uint(&report, "requests.failed")), (3, 0));
    assert_eq!(at(&report, "config.method"), "HEAD");
    assert_eq!(server.last_request().expect("a request").method, "HEAD");

    let args = ["bench", "-n", "1", "-c", "1", "-C", "a=1", "-C", "b=x y", "-A", "user:pa:ss"];
    let (_, output) = run_json(&[&args[..], &[url.as_str()]].concat());
    assert_exit(&output, 0);
    let request = server.last_request().expect("a request");
    assert_eq!(request.header("cookie"), Some("a=1; b=x y"));
    // "user:pa:ss" in Base64: the password may hold colons (RFC 7617 section 2).
    assert_eq!(request.header("authorization"), Some("Basic dXNlcjpwYTpzcw=="));
}

#[test]
fn abs_i_c_and_a_refuse_what_they_cannot_mean() {
    let url = "http://127.0.0.1:1/";
    for (args, says) in [
        (vec!["-i", "-m", "POST"], "cannot be used with"),
        (vec!["-C", "novalue;x"], "a cookie is NAME=VALUE"),
        (vec!["-A", "nocolon"], "write USER:PASSWORD"),
        (vec!["-C", "a=1", "-H", "Cookie: b=2"], "-C and -H 'Cookie: ...' both set"),
    ] {
        let mut command = loadlab();
        command.args(["bench", "-n", "1"]).args(&args).arg(url);
        let output = output_within(command, std::time::Duration::from_secs(20));
        assert_exit(&output, 2);
        let stderr = String::from_utf8_lossy(&output.stderr);
        assert_eq!(stderr.lines().count(), 1, "{args:?}: {stderr}");
        assert!(stderr.contains(says), "{args:?}: {stderr}");
    }
}

/// ab's -s is its timeout in seconds: loadlab's --timeout, which takes a bare number as
/// seconds; httperf's --hog changes nothing here and says so.
#[test]
fn abs_s_bounds_each_request_and_httperfs_hog_is_a_note() {
    let server = TestServer::start(Behaviour::Silent);
    let args = ["bench", "-s", "0.3", "-n", "1", "-c", "1", "--hog", &server.url("/")];
    let (report, output) = run_json(&args);
    assert_exit(&output, 0);
    assert_eq!(at(&report, "config.timeout_s").as_f64(), Some(0.3));
    assert_eq!(uint(&report, "errors.client_timeout"), 1);
    let stderr = String::from_utf8_lossy(&output.stderr);
    assert!(stderr.contains("loadlab: note: --hog: "), "{stderr}");
}

#[test]
fn wrk2s_capital_r_is_the_open_loops_rate_and_httperfs_names_count_sessions() {
    let server = TestServer::start(Behaviour::ok("ok"));
    let url = server.url("/");
    let (report, output) = run_json(&["bench", "-R", "200", "-d", "500ms", &url]);
    assert_exit(&output, 0);
    assert_eq!(at(&report, "mode"), "open");
    assert_eq!(at(&report, "config.rate").as_f64(), Some(200.0));
    let args = ["bench", "--conn-rate", "100", "--num-conns", "20", "--num-calls", "2", &url];
    let (report, output) = run_json(&args);
    assert_exit(&output, 0);
    assert_eq!(uint(&report, "requests.completed"), 40);
}

#[test]
fn abs_e_writes_the_percentile_csv() {
    let server = TestServer::start(Behaviour::ok("ok"));
    let dir = tempfile::tempdir().unwrap();
    let csv = dir.path().join("p.csv");
    let (_, output) =
        run_json(&["bench", "-n", "20", "-c", "2", "-e", csv.to_str().unwrap(), &server.url("/")]);
    assert_exit(&output, 0);
    let text = std::fs::read_to_string(&csv).unwrap();
    assert!(text.starts_with("value_us,percentile,"), "{text}");
    assert!(text.lines().count() > 2, "{text}");
}

/// Every refused command line is one `loadlab: error:` line naming the help of the innermost
/// subcommand typed, and exit 2: not clap's paragraph for an unknown `-k` whose tip
/// (`use '-- -k'`) leads nowhere, nor `loadlab stack`'s whole help, nor `stack`'s help for an
/// error under `stack up`. (`run` is given a wrong flag only: without arguments it would start
/// the default suite.)
#[test]
fn a_refused_command_line_is_one_line_with_where_to_look() {
    let bogus = "unexpected argument '--bogus'";
    for (args, says, help) in [
        (vec!["bench", "--bogus", "http://127.0.0.1:1/"], bogus, "bench"),
        (
            vec!["bench", "--rat", "5", "http://127.0.0.1:1/"],
            "a similar argument exists: '--rate'",
            "bench",
        ),
        (vec!["bench"], "<URL>", "bench"),
        (
            vec!["bench", "-k", "--no-keepalive", "http://127.0.0.1:1/"],
            "cannot be used with",
            "bench",
        ),
        (vec!["frobnicate"], "unrecognized subcommand", ""),
        // As `loadlab stack` alone: the subcommands in one line, not clap's whole help.
        (vec![], "'loadlab' needs a subcommand: bench, sweep, stack, doctor, run", ""),
        (vec!["sweep", "--bogus", "http://127.0.0.1:1/"], bogus, "sweep"),
        (vec!["run", "--bogus", "--dry-run"], bogus, "run"),
        (vec!["stack", "up", "--bogus", "nginx"], bogus, "stack up"),
        (vec!["stack", "up"], "<NAME>", "stack up"),
        (vec!["stack"], "'loadlab stack' needs a subcommand: list, up, verify", "stack"),
        (vec!["stack", "frob"], "unrecognized subcommand 'frob'", "stack"),
        (vec!["compare", "--bogus", "1", "2"], bogus, "compare"),
        (vec!["report", "--bogus"], bogus, "report"),
        (vec!["doctor", "--bogus"], bogus, "doctor"),
    ] {
        let mut command = loadlab();
        command.args(&args);
        let output = output_within(command, std::time::Duration::from_secs(20));
        assert_exit(&output, 2);
        let stderr = String::from_utf8_lossy(&output.stderr);
        assert_eq!(stderr.lines().count(), 1, "{args:?}: {stderr}");
        assert!(stderr.starts_with("loadlab: error: "), "{args:?}: {stderr}");
        assert!(stderr.contains(says), "{args:?}: {stderr}");
        let help = if help.is_empty() { String::new() } else { format!("{help} ") };
        assert!(stderr.trim_end().ends_with(&format!("; see 'loadlab {help}--help'")), "{stderr}");
        assert!(!stderr.contains("use '--"), "{args:?}: {stderr}");
    }
}

/// `loadlab ARGS URL` against a server that answers: refused with exit 2 in one line that
/// says each of `says`, and nothing sent. (On a command line read as something else, the
/// server would have been loaded and the exit 0.)
fn refused_before_any_load(args: &[&str], says: &[&str]) {
    let server = TestServer::start(Behaviour::ok("ok"));
    let mut command = loadlab();
    command.args(args).arg(server.url("/"));
    let output = output_within(command, std::time::Duration::from_secs(60));
    let stderr = String::from_utf8_lossy(&output.stderr);
    assert_exit(&output, 2);
    assert_eq!(stderr.lines().count(), 1, "{args:?}: {stderr}");
    for said in says {
        assert!(stderr.contains(said), "{args:?}: no {said:?} in {stderr}");
    }
    assert_eq!(server.requests(), 0, "{args:?}: load was sent");
}

/// httperf's `--num-conns 200 --rate 100` (200 sessions at 100 new connections a second)
/// would run wrk2's open loop of 200 requests at 100 requests a second here, `--conns 50`
/// without `--conn-rate` a closed loop of 50 requests, and `--num-calls 2 --rate 100` an open
/// loop that ignores --num-calls. httperf's rate is `--conn-rate` here: each is refused, with
/// the command that means what httperf meant.
#[test]
fn httperfs_num_conns_with_rate_or_without_conn_rate_is_refused_with_the_command_to_type() {
    refused_before_any_load(
        &["bench", "--num-conns", "200", "--rate", "100"],
        &["--conn-rate 100 --num-conns 200", "httperf"],
    );
    refused_before_any_load(&["bench", "-c", "10", "--conns", "50"], &["--conn-rate", "-n 50"]);
    // httperf's --num-calls with its --rate: its sessions, --conn-rate here.
    refused_before_any_load(
        &["bench", "--num-calls", "2", "--rate", "100", "-d", "1s"],
        &["--conn-rate 100 --num-calls 2"],
    );
}

/// h2load's `-m 10` (streams per connection) read as ab's `-m`, the method, would send every
/// request as method "10" and count every 400 as completed: a method of digits is refused.
#[test]
fn a_method_of_digits_is_refused_as_h2loads_m() {
    refused_before_any_load(
        &["bench", "-m", "10", "-n", "5"],
        &["did you mean --streams 10 (h2load's -m)?"],
    );
    refused_before_any_load(
        &["sweep", "--rates", "10", "-m", "4"],
        &["did you mean --streams 4 (h2load's -m)?"],
    );
}

/// ab's `-t 5` (a time limit) would be 5 worker threads and a 10 s run here. `-t` is threads
/// (docs/bench.md); more threads than CPUs with no stop given looks like ab's.
#[test]
fn abs_t_as_a_time_limit_is_refused_when_it_cannot_be_threads() {
    // More threads than this machine has CPUs, whatever the machine.
    let threads = (num_cpus() * 4 + 1).to_string();
    refused_before_any_load(
        &["bench", "-t", &threads, "--rate", "50"],
        &[&format!("-d {threads}s"), "ab's -t"],
    );
}

/// `ab -t 2 -n 20 -c 1 -k` typed to loadlab runs 2 threads, not a 2 s limit: it runs as
/// typed, and one line on stderr says what `-t` is and what ab's time limit is.
#[test]
fn abs_t_among_abs_flags_is_said_to_be_threads() {
    let server = TestServer::start(Behaviour::ok("ok"));
    let url = server.url("/");
    let (report, output) = run_json(&["bench", "-t", "1", "-n", "20", "-c", "1", "-k", &url]);
    assert_exit(&output, 0);
    assert_eq!(uint(&report, "requests.completed"), 20);
    let said = "loadlab: note: -t 1 is 1 worker threads here, not ab's -t (a time limit): that \
                is -d 1s";
    let stderr = String::from_utf8_lossy(&output.stderr);
    assert_eq!(stderr.lines().filter(|l| *l == said).count(), 1, "{stderr}");
    // With -d the time is given: nothing to say.
    let (_, output) = run_json(&["bench", "-t", "1", "-c", "1", "-d", "200ms", &url]);
    assert_exit(&output, 0);
    assert!(!String::from_utf8_lossy(&output.stderr).contains("ab's -t"));
}

/// `-t 0` is refused in one line, not run as one thread.
#[test]
fn no_threads_are_refused() {
    refused_before_any_load(&["bench", "-t", "0", "-n", "5"], &["-t 0", "at least one"]);
}

/// wrk's users ask for a connection per request with `-H 'Connection: close'`: that is
/// --no-keepalive, each request on a connection of its own, and `config.keepalive` says so.
#[test]
fn a_connection_close_header_is_no_keepalive() {
    let server = TestServer::start(Behaviour::ok("ok"));
    let args = ["bench", "-n", "5", "-c", "1", "-H", "Connection: close", &server.url("/")];
    let (report, output) = run_json(&args);
    assert_exit(&output, 0);
    assert_eq!(at(&report, "config.keepalive"), false, "{report:#}");
    assert_eq!(uint(&report, "requests.completed"), 5);
    assert_eq!(uint(&report, "connections.opened"), 5, "{report:#}");
    // ab's -k beside it asks for the opposite: refused, not noted as "already on".
    refused_before_any_load(
        &["bench", "-k", "-n", "5", "-H", "Connection: close"],
        &["-k keeps connections alive", "--no-keepalive"],
    );
}

fn num_cpus() -> usize {
    std::thread::available_parallelism().map_or(64, usize::from).max(64)
}

/// wrk2's `-c50 -R 2000` is refused pointing at `--max-connections`, not with clap's
/// "'--connections' cannot be used with '--rate'": wrk2's -c is the open loop's connection
/// count.
#[test]
fn wrk2s_c_with_r_points_at_max_connections() {
    refused_before_any_load(&["bench", "-c50", "-R", "2000"], &["--max-connections 50", "wrk2"]);
}

/// Every duration flag of bench and sweep says what is wrong with `-d -5s`'s value, not
/// "unexpected argument '-5' found".
#[test]
fn a_negative_duration_is_said_to_be_one() {
    refused_before_any_load(&["bench", "-d", "-5s"], &["-5s", "negative"]);
    refused_before_any_load(&["bench", "-n", "1", "--warmup", "-1s"], &["-1s", "negative"]);
    refused_before_any_load(
        &["sweep", "--rates", "10", "--step-duration", "-2s"],
        &["-2s", "negative"],
    );
}

/// One row of docs/bench.md's table of other tools' habits: the command typed, and what
/// loadlab does with it.
#[derive(Debug)]
struct Habit {
    typed: Vec<String>,
    does: Does,
}

#[derive(Debug)]
enum Does {
    /// Runs the configuration of this command (`None`: the one typed), saying these notes.
    Runs(Option<Vec<String>>, Vec<String>),
    /// Refused in one line that says this.
    Refused(String),
}

/// The table under "## What other tools' users type", its server address rewritten to
/// `addr`: the second column's command, and the third's first code span (the command it
/// runs as, or the refusal's text) and, after "note", the notes.
fn habits_table(addr: &str) -> Vec<Habit> {
    let path = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("../../docs/bench.md");
    let text = std::fs::read_to_string(path).expect("read docs/bench.md");
    let text = text.replace("127.0.0.1:8080", addr);
    let lines = text.lines().skip_while(|l| *l != "## What other tools' users type");
    let rows = lines.skip_while(|l| !l.starts_with('|')).take_while(|l| l.starts_with('|'));
    let spans = |cell: &str| -> Vec<String> {
        cell.split('`').skip(1).step_by(2).map(str::to_string).collect()
    };
    let command = |line: &str| -> Vec<String> {
        let words = shell_words(line);
        assert_eq!(words[0], "loadlab", "{line}");
        words[1..].to_vec()
    };
    let mut out = Vec::new();
    for row in rows.skip(2) {
        let cells: Vec<&str> = row.trim_matches('|').split(" | ").map(str::trim).collect();
        assert_eq!(cells.len(), 3, "{row}");
        let typed = command(&spans(cells[1])[0]);
        let said = spans(cells[2]);
        let notes = |from: usize| -> Vec<String> {
            if cells[2].contains("note") {
                said[from..].to_vec()
            } else {
                Vec::new()
            }
        };
        let does = if cells[2].starts_with("refused: ") {
            assert_eq!(said.len(), 1, "a refusal quotes one text: {row}");
            Does::Refused(said[0].clone())
        } else if cells[2].starts_with("the same as ") {
            Does::Runs(Some(command(&said[0])), notes(1))
        } else {
            assert!(cells[2].starts_with("as typed"), "{row}");
            Does::Runs(None, notes(0))
        };
        out.push(Habit { typed, does });
    }
    assert!(out.len() >= 20, "the habits table was not read: {out:?}");
    out
}

/// A command line's words, `'...'` quoting a word with spaces.
fn shell_words(line: &str) -> Vec<String> {
    let mut words = Vec::new();
    for (i, part) in line.split('\'').enumerate() {
        if i % 2 == 1 {
            words.push(part.to_string());
        } else {
            words.extend(part.split_whitespace().map(str::to_string));
        }
    }
    words
}

/// `loadlab ARGS --format json`: its exit code, JSON `mode` and `config`, and stderr.
fn run_config(args: &[String]) -> (Option<i32>, serde_json::Value, String) {
    let mut command = loadlab();
    command.args(args).args(["--format", "json"]);
    let output = output_within(command, std::time::Duration::from_secs(60));
    let stderr = String::from_utf8_lossy(&output.stderr).into_owned();
    let report: serde_json::Value = serde_json::from_slice(&output.stdout)
        .unwrap_or_else(|e| panic!("{args:?}: no JSON ({e}): {stderr}"));
    let config = serde_json::json!([report["mode"], report["config"]]);
    (output.status.code(), config, stderr)
}

/// Every row of docs/bench.md's habits table, run: a refused habit exits 2 before any load
/// in one line saying the row's text; an honoured one runs the configuration of the command
/// the row names (or the one typed) and says each of the row's notes on stderr, and no
/// other. The docs cannot say what loadlab does not do.
#[test]
fn every_row_of_the_habits_table_runs_as_it_says() {
    let server = TestServer::start(Behaviour::ok("ok"));
    let addr = server.addr().to_string();
    for habit in habits_table(&addr) {
        let typed = &habit.typed;
        match &habit.does {
            Does::Refused(says) => {
                let mut command = loadlab();
                command.args(typed);
                let before = server.requests();
                let output = output_within(command, std::time::Duration::from_secs(60));
                let stderr = String::from_utf8_lossy(&output.stderr);
                assert_exit(&output, 2);
                assert_eq!(stderr.lines().count(), 1, "{typed:?}: {stderr}");
                assert!(stderr.starts_with("loadlab: error: "), "{typed:?}: {stderr}");
                assert!(stderr.contains(says.as_str()), "{typed:?}: no {says:?} in {stderr}");
                assert_eq!(server.requests(), before, "{typed:?}: load was sent");
            }
            Does::Runs(same_as, notes) => {
                let (code, config, stderr) = run_config(typed);
                assert_eq!(code, Some(0), "{typed:?}: {stderr}");
                if let Some(same_as) = same_as {
                    let (code, expected, own) = run_config(same_as);
                    assert_eq!(code, Some(0), "{same_as:?}: {own}");
                    assert_eq!(config, expected, "{typed:?} against {same_as:?}");
                }
                let said: Vec<&str> =
                    stderr.lines().filter_map(|l| l.strip_prefix("loadlab: note: ")).collect();
                assert_eq!(said.len(), notes.len(), "{typed:?}: {said:?} for {notes:?}");
                for (said, note) in said.iter().zip(notes) {
                    assert!(said.starts_with(note.as_str()), "{typed:?}: {said:?}, not {note:?}");
                }
            }
        }
    }
}
