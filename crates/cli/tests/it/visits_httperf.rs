//! `--format httperf` for page views and visit files: a view or a visit is one of
//! httperf's sessions, so their runs print httperf's session block from their own figures,
//! with the labels and in the order httperf 0.9 prints them for `--wsesslog`, and a script
//! that parses httperf's output (bench/wsesslog.sh's `Session rate ... (C/S)`) reads them.
//! httperf itself runs the same sessions against the same server for the reference.

use std::time::Duration;

use super::mixes::file;
use super::sessions::skeleton;
use super::{assert_exit, views::site};
use crate::support::skip::{find_program, missing};
use crate::support::{loadlab, output_within, Behaviour, TestServer, RUN_LIMIT};

/// `loadlab bench URL ARGS --format httperf`: its stdout.
fn httperf_layout(url: &str, args: &[&str]) -> String {
    let mut command = loadlab();
    command.args(["bench", url]).args(args).args(["--format", "httperf", "--quiet"]);
    let output = output_within(command, RUN_LIMIT);
    assert_exit(&output, 0);
    String::from_utf8(output.stdout).expect("UTF-8 report")
}

/// httperf's own run of `sessions` sessions of `log` at 20 a second: its stdout, or `None`
/// where httperf is not installed (and so not in CI, where it is required).
fn httperf(server: &TestServer, sessions: u32, log: &str) -> Option<String> {
    let Some(httperf) = find_program("httperf", &[]) else {
        missing("httperf", "httperf").report();
        return None;
    };
    let (_dir, path) = file("sessions.log", log);
    let port = server.addr().port().to_string();
    let mut command = std::process::Command::new(httperf);
    command.args(["--server", "127.0.0.1", "--port", &port, "--rate", "20", "--timeout", "10"]);
    command.args(["--wsesslog", &format!("{sessions},0.01,{path}")]);
    command.args(["--max-connections", "4", "--max-piped-calls", "1"]);
    let output = output_within(command, RUN_LIMIT);
    assert!(output.status.success(), "httperf: {}", String::from_utf8_lossy(&output.stderr));
    Some(String::from_utf8(output.stdout).expect("UTF-8 from httperf"))
}

/// The session block: httperf's lines that start with `Session`, in order.
fn session_lines(report: &str) -> Vec<&str> {
    report.lines().filter(|l| l.starts_with("Session")).collect()
}

/// What a parser of httperf's output reads: requests and replies of the `Total:` line, and
/// the sessions completed and begun of the `Session rate` line (bench/wsesslog.sh's sed).
fn parsed(report: &str) -> (u64, u64, u64, u64) {
    let number_after = |line: &str, label: &str| -> u64 {
        let rest = line.split(label).nth(1).unwrap_or_else(|| panic!("no {label:?} in {line}"));
        let digits: String = rest.chars().take_while(char::is_ascii_digit).collect();
        digits.parse().unwrap_or_else(|_| panic!("no number after {label:?} in {line}"))
    };
    let total = report.lines().find(|l| l.starts_with("Total: ")).expect("a Total line");
    let rate = report.lines().find(|l| l.starts_with("Session rate ")).expect("a rate line");
    let counts = rate.rsplit('(').next().expect("(C/S)").trim_end_matches(')');
    let (done, begun) = counts.split_once('/').expect("C/S");
    (
        number_after(total, " requests "),
        number_after(total, " replies "),
        done.parse().expect("sessions completed"),
        begun.parse().expect("sessions begun"),
    )
}

/// Ours against httperf's: the same session lines, label for label, in the same order, and
/// the same counts where they do not depend on timing.
fn assert_as_httperf(ours: &str, theirs: Option<&str>, expected: (u64, u64, u64, u64)) {
    assert_eq!(parsed(ours), expected, "loadlab:\n{ours}");
    assert!(!ours.lines().next().unwrap_or_default().contains("--wsesslog"), "{ours}");
    let Some(theirs) = theirs else { return };
    assert_eq!(parsed(theirs), expected, "httperf:\n{theirs}");
    let (o, t) = (session_lines(ours), session_lines(theirs));
    let shape = |lines: &[&str]| lines.iter().map(|l| skeleton(l)).collect::<Vec<_>>();
    assert_eq!(shape(&o), shape(&t), "loadlab:\n{ours}\nhttperf:\n{theirs}");
    // Sessions by replies received: every one of them all its replies, in both.
    let histogram = |lines: &[&str]| lines.last().map(|l| l.to_string());
    assert_eq!(histogram(&o), histogram(&t), "loadlab:\n{ours}\nhttperf:\n{theirs}");
}

#[test]
fn page_views_print_httperfs_session_block() {
    let server = TestServer::start(Behaviour::Site(site(&[], Duration::ZERO)));
    let ours = httperf_layout(&server.url("/"), &["--view", "--rate", "20", "-n", "10"]);
    // One view is one session of one burst: the page, then its three resources.
    let theirs = httperf(&server, 10, "/\n    /s.css\n    /a.js\n    /i.png\n");
    assert_as_httperf(&ours, theirs.as_deref(), (40, 40, 10, 10));
    assert!(ours.starts_with("loadlab ") && ours.contains("(page views of / and its 3"), "{ours}");
}

#[test]
fn visits_print_httperfs_session_block_at_a_rate_and_by_a_population() {
    let server = TestServer::start(Behaviour::Site(site(&[], Duration::ZERO)));
    let visit = "name = \"two pages\"\nthink = \"10ms\"\n[[step]]\npath = \"/\"\n\
                 resources = [\"/s.css\"]\n[[step]]\npath = \"/a.js\"\n";
    let (_dir, visit) = file("two.toml", visit);
    let ours = httperf_layout(&server.url("/"), &["--visits", &visit, "--rate", "20", "-n", "8"]);
    // A visit is one session of a burst a step: the page and its stylesheet, then the script.
    let theirs = httperf(&server, 8, "/\n    /s.css\n/a.js\n");
    assert_as_httperf(&ours, theirs.as_deref(), (24, 24, 8, 8));
    assert!(ours.contains(&format!("(visits of {visit}, 2 steps, 20 a second")), "{ours}");
    // A closed population prints the same block: 2 visitors, 6 visits in all.
    let closed = httperf_layout(&server.url("/"), &["--visits", &visit, "-c", "2", "-n", "6"]);
    assert_as_httperf(&closed, None, (18, 18, 6, 6));
    assert_eq!(session_lines(&closed).len(), 5, "{closed}");
}
