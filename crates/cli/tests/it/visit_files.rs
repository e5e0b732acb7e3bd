//! Visit files (`--visits FILE`): a visitor's steps in order with its own cookie jar
//! and captured values, against the login server (`Behaviour::Login`): the visit passes only
//! when both the cookie and the captured token are carried; a step that breaks a check or
//! finds no capture ends its visit, counted by step and class; a closed population and an open
//! loop both make exactly the visits asked for; think time is in no latency.

use serde_json::Value;

use super::mixes::file;
use super::{assert_accounted, assert_exit, at, bench, strings, uint};
use crate::support::{
    loadlab, output_within, timing_lock, with_fd_limit, Behaviour, TestServer, RUN_LIMIT,
};

/// Log in (capturing the token the page holds), read a page after `think`, then open the
/// private page with the token in `private_headers` (the cookie goes by itself).
pub(crate) fn login_visit(capture: &str, think: &str, private_headers: &str) -> String {
    format!(
        r#"name = "log in"
[[step]]
path = "/login"
status = 200
contains = "token"
[[step.capture]]
name = "token"
regex = '{capture}'
[[step.capture]]
name = "sid"
cookie = "sid"
[[step]]
path = "/home"
think = "{think}"
[[step]]
path = "/private"
headers = {{ {private_headers} }}
status = 200
contains = "secret"
"#
    )
}

pub(crate) const TOKEN: &str = r#"name="token" value="([^"]+)""#;

/// The report's `visits.steps`: (step, started, completed, failed by class).
fn steps(report: &Value) -> Vec<(String, u64, u64, Value)> {
    let all = at(report, "visits.steps").as_array().expect("an array");
    all.iter()
        .map(|s| {
            let n = |k: &str| s[k].as_u64().expect("a count");
            let name = s["step"].as_str().expect("a name").to_string();
            (name, n("started"), n("completed"), s["failed"].clone())
        })
        .collect()
}

#[test]
fn a_login_visit_passes_when_its_cookie_and_captured_token_are_carried() {
    let server = TestServer::start(Behaviour::Login);
    let (_dir, visit) = file("login.toml", &login_visit(TOKEN, "0s", r#"X-Token = "{token}""#));
    // A closed population: 3 visitors, 12 visits in all.
    let report = bench(&server.url("/"), &["--visits", &visit, "-c", "3", "-n", "12"], 0);
    assert_eq!(uint(&report, "visits.completed"), 12, "{report:#}");
    assert_eq!(uint(&report, "visits.failed"), 0, "{report:#}");
    assert_accounted(&report, 36);
    assert_eq!(server.requests(), 36);
    // Each visitor's steps went on its one connection: a connection a visit.
    assert_eq!(super::float(&report, "sessions.connections_per_session"), 1.0, "{report:#}");
    let none = serde_json::json!({});
    let expected = ["1 GET /login", "2 GET /home", "3 GET /private"]
        .map(|s| (s.to_string(), 12, 12, none.clone()));
    assert_eq!(steps(&report), expected, "{report:#}");
    assert_eq!(at(&report, "visits.steps")[0]["latency_us"]["count"], 12, "{report:#}");
    // The report, `visits` among it, is the published schema's.
    let errors: Vec<String> =
        crate::schema::validator().iter_errors(&report).map(|e| e.to_string()).collect();
    assert!(errors.is_empty(), "{errors:?}");
    assert_private_with_cookies(&server, 12);
}

/// The login server's side: `n` private requests, each carrying a cookie of the session it
/// was given.
pub(crate) fn assert_private_with_cookies(server: &TestServer, n: usize) {
    let private: Vec<_> =
        server.received().into_iter().filter(|(_, r)| r.target == "/private").collect();
    assert_eq!(private.len(), n);
    assert!(private
        .iter()
        .all(|(_, r)| r.header("cookie").is_some_and(|c| c.starts_with("sid=s"))));
}

#[test]
fn a_visit_without_the_token_or_its_capture_fails_at_that_step() {
    let server = TestServer::start(Behaviour::Login);
    // The private page without the token: refused (403), the visit ends at step 3.
    let (_dir, visit) = file("no-token.toml", &login_visit(TOKEN, "0s", r#"X-Token = "{sid}""#));
    let report = bench(&server.url("/"), &["--visits", &visit, "--rate", "50", "-n", "8"], 0);
    assert_eq!(uint(&report, "visits.completed"), 0, "{report:#}");
    assert_eq!(uint(&report, "visits.failed"), 8, "{report:#}");
    let s = steps(&report);
    assert_eq!((s[0].2, s[1].2, s[2].1, s[2].2), (8, 8, 8, 0), "{report:#}");
    assert_eq!(s[2].3, serde_json::json!({ "status": 8 }), "{report:#}");
    // Every request went and was answered: the failure is the visit's, not a request's.
    assert_accounted(&report, 24);
    // ...and the requests' figures say that 8 of their answers failed a check.
    let warnings = at(&report, "warnings").as_array().expect("warnings").clone();
    let said = format!("8 checks failed ({}: status 8): ", s[2].0);
    assert!(warnings.iter().any(|w| w.as_str().unwrap().starts_with(&said)), "{warnings:?}");
    // A capture that finds nothing ends the visit at its step: nothing more is sent.
    let (_d, visit) =
        file("no-capture.toml", &login_visit("nonce=(\\d+)", "0s", "X-A = \"{token}\""));
    let report = bench(&server.url("/"), &["--visits", &visit, "--rate", "50", "-n", "5"], 0);
    let s = steps(&report);
    assert_eq!((s[0].1, s[0].2, s[1].1), (5, 0, 0), "{report:#}");
    assert_eq!(s[0].3, serde_json::json!({ "capture": 5 }), "{report:#}");
    assert_eq!(uint(&report, "sessions.not_issued"), 10, "{report:#}");
    assert_eq!(server.requests(), 24 + 5);
}

#[test]
fn an_open_loop_makes_exactly_the_visits_asked_for() {
    let server = TestServer::start(Behaviour::Login);
    let (_dir, visit) = file("login.toml", &login_visit(TOKEN, "10ms", r#"X-Token = "{token}""#));
    let report = bench(&server.url("/"), &["--visits", &visit, "--rate", "40", "-n", "20"], 0);
    assert_eq!(at(&report, "mode"), "sessions");
    assert_eq!(uint(&report, "sessions.started"), 20, "{report:#}");
    assert_eq!(uint(&report, "visits.completed"), 20, "{report:#}");
    assert_eq!(uint(&report, "visits.duration_us.count"), 20, "{report:#}");
    assert_accounted(&report, 60);
    assert_eq!(server.requests(), 60);
}

/// Two steps two seconds apart: a visit lasts about 2 s on loopback.
const SLOW_VISIT: &str = r#"name = "slow"
[[step]]
path = "/a"
think = "2s"
[[step]]
path = "/b"
"#;

#[test]
fn a_closed_populations_warm_up_visits_are_measured_from_the_window_on() {
    let _quiet = timing_lock();
    let server = TestServer::start(Behaviour::ok("visit"));
    let (_dir, visit) = file("slow.toml", SLOW_VISIT);
    // The window is 0.1-3.1 s. The 2 visits begun at 0 end at about 2 s, inside it; the 2
    // their visitors begin then would end at about 4 s, after it (margins of about 1 s, for a
    // busy machine). Measuring only the visits begun in the window would count none: a
    // visitor is in its warm-up visit until 2 s.
    let args = ["--visits", &visit, "-c", "2", "-d", "3s", "--warmup", "100ms"];
    let report = bench(&server.url("/"), &args, 0);
    for (key, n) in [("started", 4), ("completed", 2), ("failed", 0), ("unfinished", 2)] {
        assert_eq!(uint(&report, &format!("sessions.{key}")), n, "{key}:\n{report:#}");
    }
    // A carried visit's lifetime runs from its due time, the think included.
    assert!(uint(&report, "visits.duration_us.min") >= 2_000_000, "{report:#}");
    // Steps count from the first due in the window: the carried visits' second steps and the
    // next visits' first; the carried visits' first steps were answered before it.
    let counts: Vec<_> = steps(&report).into_iter().map(|(_, s, c, _)| (s, c)).collect();
    assert_eq!(counts, [(2, 2), (2, 2)], "{report:#}");
    assert!(!strings(&report, "warnings").iter().any(|w| w.contains("no visit")), "{report:#}");

    // A window shorter than any visit: no visit ends in it, and the output says so where
    // the (absent) visits/s would be, though requests completed.
    let args = ["--visits", &visit, "-c", "2", "-d", "1s"];
    let report = bench(&server.url("/"), &args, 0);
    assert_eq!(uint(&report, "visits.completed"), 0, "{report:#}");
    assert!(uint(&report, "requests.completed") > 0, "{report:#}");
    let warned = strings(&report, "warnings").iter().any(|w| w.starts_with("no visit completed"));
    assert!(warned, "no warning that no visit completed:\n{report:#}");
}

#[test]
fn think_time_is_in_no_step_latency() {
    let _quiet = timing_lock();
    let server = TestServer::start(Behaviour::Login);
    let (_dir, visit) = file("think.toml", &login_visit(TOKEN, "300ms", r#"X-Token = "{token}""#));
    let report = bench(&server.url("/"), &["--visits", &visit, "--rate", "20", "-n", "5"], 0);
    assert_eq!(uint(&report, "visits.completed"), 5, "{report:#}");
    // The think before step 2 lies inside each visit...
    assert!(uint(&report, "visits.duration_us.min") >= 300_000, "{report:#}");
    // ...and in no step's latency nor any request's: on loopback an answer takes well under a
    // millisecond, so even a busy machine's worst stays far below one think.
    for i in 0..3 {
        let max = at(&report, "visits.steps")[i]["latency_us"]["max"].as_u64().expect("a max");
        assert!(max < 150_000, "step {} holds think time ({max} us):\n{report:#}", i + 1);
    }
    assert!(uint(&report, "latency_us.max") < 150_000, "{report:#}");
}

#[test]
fn a_population_past_the_open_file_limit_is_refused_counting_each_visitors_connections() {
    let server = TestServer::start(Behaviour::Login);
    // A step with a resource: each visitor may hold two connections.
    let (_dir, visit) = file("two.toml", "[[step]]\npath = \"/a\"\nresources = [\"/b\"]\n");
    let mut command = loadlab();
    // 200 connections would fit under 256 descriptors; 200 visitors of 2 each do not.
    command.args(["bench", &server.url("/"), "--visits", &visit, "-c", "200", "-d", "2s"]);
    let output = output_within(with_fd_limit(command, 256), RUN_LIMIT);
    assert_exit(&output, 2);
    let stderr = String::from_utf8_lossy(&output.stderr);
    assert!(
        stderr.contains("200 visitors of up to 2 connections each: 400 connections"),
        "{stderr}"
    );
    assert_eq!(server.requests(), 0);
}

#[test]
fn a_bad_visit_file_or_load_model_is_refused_in_one_line() {
    let (_dir, bad) = file("bad.toml", "[[step]]\npath = \"/\"\ncolour = 1\n");
    let (_d, used) = file("used.toml", "[[step]]\npath = \"/p?n={nonce}\"\n");
    let (_e, good) = file("good.toml", "[[step]]\npath = \"/\"\n");
    let cases = [
        (
            vec!["--visits", &bad, "-c", "2", "-n", "2"],
            format!("{bad}:3:1: unknown field `colour`"),
        ),
        (
            vec!["--visits", &used, "-c", "2", "-n", "2"],
            "step 1: {nonce} is used before any step captures it".to_string(),
        ),
        (
            vec!["--visits", &good, "-c", "1..5", "-d", "2s"],
            "--visits: visitors arrive at --rate visits a second, or a fixed -c".to_string(),
        ),
    ];
    for (args, expected) in cases {
        let mut cmd = loadlab();
        cmd.args(["bench", "http://127.0.0.1:9/"]).args(&args);
        let out = output_within(cmd, RUN_LIMIT);
        assert_exit(&out, 2);
        let stderr = String::from_utf8_lossy(&out.stderr);
        assert!(stderr.contains(&expected), "{args:?}: {stderr}");
        assert_eq!(stderr.trim().lines().count(), 1, "one line:\n{stderr}");
    }
}

/// `--visits a.toml:3,b.toml:1`: each arriving visit picks its file by weight from the run's
/// seed, so that the same seed makes the same picks; each file has its own visits and steps.
#[test]
fn a_weighted_mix_of_visit_files_picks_by_weight_and_reports_each_file() {
    let server = TestServer::start(Behaviour::Login);
    let (_a, login) = file("login.toml", &login_visit(TOKEN, "0s", r#"X-Token = "{token}""#));
    let (_b, other) = file("other.toml", "[[step]]\npath = \"/other\"\ncontains = \"page\"\n");
    let spec = format!("{login}:3,{other}");
    let args = ["--visits", &spec, "--rate", "200", "-n", "40", "--seed", "7"];
    let report = bench(&server.url("/"), &args, 0);
    assert_eq!(uint(&report, "visits.completed"), 40, "{report:#}");
    let files = at(&report, "visits.files").as_array().expect("visits.files").clone();
    let each = |i: usize, k: &str| files[i][k].as_u64().expect("a count");
    assert_eq!((files[0]["weight"].clone(), files[1]["weight"].clone()), (3.into(), 1.into()));
    assert_eq!(each(0, "completed") + each(1, "completed"), 40, "{report:#}");
    // 3 to 1: the login file most of the time, the other some of it.
    assert!(each(0, "completed") > each(1, "completed") && each(1, "completed") > 0, "{files:?}");
    // What the server saw is what each file's figures say.
    let seen = server.targets();
    assert_eq!(seen["/login"], each(0, "started"));
    assert_eq!(seen["/other"], each(1, "completed"));
    assert_eq!(seen["/private"], each(0, "completed"));
    // Each file's visits timed on their own: a duration per completed visit of it.
    for f in &files {
        assert_eq!(f["duration_us"]["count"], f["completed"], "{report:#}");
    }
    // Each file's step table, and every step named after its file in the whole list.
    assert_eq!(files[1]["steps"][0]["step"], "1 GET /other", "{report:#}");
    let names: Vec<String> = steps(&report).into_iter().map(|s| s.0).collect();
    assert_eq!(names[3], format!("{other}: 1 GET /other"));
    let errors: Vec<String> =
        crate::schema::validator().iter_errors(&report).map(|e| e.to_string()).collect();
    assert!(errors.is_empty(), "{errors:?}");
    // The same seed, the same picks.
    let again = bench(&server.url("/"), &args, 0);
    assert_eq!(at(&again, "visits.files")[1]["completed"], files[1]["completed"]);
    // A weight of 0 is refused in one line.
    let mut cmd = loadlab();
    cmd.args(["bench", "http://127.0.0.1:9/", "--visits", &format!("{login}:0"), "-c", "1"]);
    let out = output_within(cmd, RUN_LIMIT);
    assert_exit(&out, 2);
    assert!(String::from_utf8_lossy(&out.stderr).contains("a weight is a whole number"));
}

/// `--visits` given once per file: each value one file, commas and colons in its path kept
/// (its last `:N` a weight), so any path can be named in a mix; an empty name or a bad weight
/// among them is refused in one line, exit 2, before any load.
#[test]
fn visits_given_once_per_file_name_any_path_and_refuse_an_empty_name_or_a_bad_weight() {
    let server = TestServer::start(Behaviour::Login);
    let dir = tempfile::tempdir().unwrap();
    let odd = dir.path().join("a,b:c");
    std::fs::create_dir(&odd).unwrap();
    let odd = odd.join("x,y.toml").display().to_string();
    std::fs::write(&odd, "[[step]]\npath = \"/other\"\ncontains = \"page\"\n").unwrap();
    let (_b, login) = file("login.toml", &login_visit(TOKEN, "0s", r#"X-Token = "{token}""#));
    let (weighted, url) = (format!("{odd}:3"), server.url("/"));
    let args = ["--visits", &weighted, "--visits", &login, "--rate", "200", "-n", "12"];
    let report = bench(&url, &args, 0);
    let files = at(&report, "visits.files").as_array().expect("visits.files").clone();
    let named: Vec<(&str, u64)> = files
        .iter()
        .map(|f| (f["file"].as_str().unwrap(), f["weight"].as_u64().unwrap()))
        .collect();
    assert_eq!(named, [(odd.as_str(), 3), (login.as_str(), 1)], "{report:#}");
    assert_eq!(uint(&report, "visits.completed"), 12, "{report:#}");
    assert_eq!(server.targets()["/other"], files[0]["completed"].as_u64().unwrap());
    // Alone, a path with a comma is that file when it names one whole.
    let alone = bench(&url, &["--visits", &odd, "--rate", "200", "-n", "2"], 0);
    assert_eq!(uint(&alone, "visits.completed"), 2, "{alone:#}");
    let before = server.requests();
    for (values, said) in [
        (vec![login.as_str(), ""], "an empty visit file name"),
        (vec![login.as_str(), ":2"], "an empty visit file name"),
        (vec![odd.as_str(), "b,c.toml:0"], "a weight is a whole number from 1"),
    ] {
        let mut cmd = loadlab();
        cmd.args(["bench", &url, "-c", "1", "-n", "1"]);
        for v in &values {
            cmd.args(["--visits", v]);
        }
        let out = output_within(cmd, RUN_LIMIT);
        assert_exit(&out, 2);
        let stderr = String::from_utf8_lossy(&out.stderr);
        assert!(stderr.contains("--visits") && stderr.contains(said), "{values:?}: {stderr}");
        assert_eq!(stderr.trim().lines().count(), 1, "one line:\n{stderr}");
    }
    assert_eq!(server.requests(), before, "no load for a refused --visits");
}

/// A step that names the status it expects (a login's 302) knows that answer for a right one:
/// it is no "not 2xx" in the verdict, while a step that names none still is.
#[test]
fn a_status_a_step_asks_for_is_not_counted_as_not_2xx() {
    let redirect = Behaviour::Fixed {
        status: 302,
        headers: vec![("Location".into(), "/".into())],
        body: b"moved".to_vec(),
    };
    let server = TestServer::start(redirect);
    let asked = "name = \"asked\"\n[[step]]\npath = \"/login\"\nstatus = 302\n";
    let (_dir, visit) = file("asked.toml", asked);
    let report = bench(&server.url("/"), &["--visits", &visit, "-c", "1", "-n", "10"], 0);
    assert_eq!(uint(&report, "visits.completed"), 10, "{report:#}");
    let said = strings(&report, "warnings");
    assert!(!said.iter().any(|w| w.contains("not 2xx")), "{said:?}");
    // Nor an error to the SLO.
    let args = ["--visits", &visit, "-c", "1", "-n", "10", "--slo", "errors<1%"];
    let report = bench(&server.url("/"), &args, 0);
    assert_eq!(at(&report, "slo.passed"), true, "{:#}", at(&report, "slo"));
    // A second step that asks for nothing: its 302s are said, and only they.
    let (_d, visit) = file("half.toml", &format!("{asked}[[step]]\npath = \"/next\"\n"));
    let report = bench(&server.url("/"), &["--visits", &visit, "-c", "1", "-n", "10"], 0);
    assert_eq!(uint(&report, "visits.completed"), 10, "{report:#}");
    let said = strings(&report, "warnings");
    assert!(said.iter().any(|w| w.starts_with("10 responses were not 2xx")), "{said:?}");
}

/// A visit file's rows show the visit's duration; its SLO judges the requests' latency, and
/// its verdict names which it judged.
#[test]
fn a_visit_workloads_slo_names_the_latency_it_judged() {
    let server = TestServer::start(Behaviour::ok("page"));
    let (_dir, visit) =
        file("two.toml", "name = \"two\"\n[[step]]\npath = \"/a\"\n[[step]]\npath = \"/b\"\n");
    let args = ["--visits", &visit, "-c", "1", "-n", "5", "--slo", "p99<60s,errors<1%"];
    let report = bench(&server.url("/"), &args, 0);
    let terms = at(&report, "slo.terms");
    assert!(terms[0]["detail"].as_str().unwrap().starts_with("request p99 "), "{terms:#}");
    assert!(terms[1]["detail"].as_str().unwrap().starts_with("errors "), "{terms:#}");
    // A run of requests says its latency plainly, as before.
    let report = bench(&server.url("/"), &["-n", "5", "--slo", "p99<60s"], 0);
    assert!(
        at(&report, "slo.terms")[0]["detail"].as_str().unwrap().starts_with("p99 "),
        "{report:#}"
    );
}
