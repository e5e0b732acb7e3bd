//! httperf's session model (`--conn-rate R --calls-per-conn K --conns N`): exact counts on
//! both sides of the wire, `--format httperf` line for line against httperf itself, and
//! `--source-ips` spreading connections over local addresses.

use std::collections::BTreeMap;
use std::net::{IpAddr, Ipv4Addr};
use std::time::Duration;

use super::{assert_accounted, assert_exit, at, bench, float, uint};
use crate::support::skip::{find_program, missing};
use crate::support::{loadlab, output_within, wait_until, Behaviour, TestServer, RUN_LIMIT};

/// httperf's example: 100 connections at 200 a second, 5 calls on each.
const SESSION_ARGS: [&str; 6] = ["--conn-rate", "200", "--calls-per-conn", "5", "--conns", "100"];

#[test]
fn sessions_make_exactly_n_connections_of_k_calls() {
    let server = TestServer::start(Behaviour::ok("session"));
    let report = bench(&server.url("/"), &SESSION_ARGS, 0);
    assert_eq!(at(&report, "mode"), "sessions", "{report:#}");
    assert_accounted(&report, 500);
    assert_eq!(uint(&report, "requests.completed"), 500, "{report:#}");
    assert_eq!(uint(&report, "connections.opened"), 100, "{report:#}");
    assert_eq!(float(&report, "connections.replies_per_connection"), 5.0, "{report:#}");
    assert_eq!(uint(&report, "connections.lifetime_us.count"), 100, "{report:#}");
    // The offered request rate is connections/s times calls.
    assert_eq!(float(&report, "rate.offered_rps"), 1000.0, "{report:#}");
    assert_eq!(at(&report, "config.calls_per_connection"), 5, "{report:#}");
    // Sessions are due every 5 ms and take well under that on loopback, so few overlap: by
    // Little's law, at most those due within the longest a session was outstanding (how late
    // it started plus how long its connection lived), plus one per worker. On a quiet machine
    // that is two or three; a machine that stalls the client or the server for 70 ms makes it
    // fifteen, rightly.
    let outstanding_us =
        uint(&report, "rate.late_max_us") + uint(&report, "connections.lifetime_us.max");
    let bound = 200.0 * outstanding_us as f64 / 1e6 + uint(&report, "client.threads") as f64 + 1.0;
    assert!(uint(&report, "connections.peak") as f64 <= bound, "peak above {bound}:\n{report:#}");

    // The server's side: 100 connections (and the pre-flight check's, which sent nothing),
    // 500 requests.
    assert!(wait_until(Duration::from_secs(30), || server.connections() == 101));
    assert_eq!(server.connections(), 101);
    assert_eq!(server.requests(), 500);
}

/// The lines scripts written for httperf parse, with loadlab's figures in them.
#[test]
fn httperf_layout_has_httperfs_lines() {
    let server = TestServer::start(Behaviour::ok("session"));
    let report = httperf_layout(&server);
    for line in [
        "Total: connections 100 requests 500 replies 500 test-duration ",
        "Connection rate: ",
        "Connection length [replies/conn]: 5.000\n",
        "Request rate: ",
        "Reply rate [replies/s]: ",
        "Reply status: 1xx=0 2xx=500 3xx=0 4xx=0 5xx=0\n",
        "Errors: total 0 client-timo 0 socket-timo 0 connrefused 0 connreset 0\n",
        "Errors: fd-unavail 0 addrunavail 0 ftab-full 0 other 0\n",
    ] {
        assert!(report.contains(line), "no {line:?} in:\n{report}");
    }
    // 200 connections a second. Never faster: the last of the 100 sessions is due 495 ms in,
    // and the test duration (which the rate divides into) lasts until it ends. Slower only by
    // as much as the run itself reports: the last session ended at most its lateness (within
    // the longest latency from due time) plus its connection's lifetime after its due time.
    // On a quiet machine that is a millisecond or two; a stall of the machine stretches it.
    let rate = value_after(&report, "Connection rate: ");
    let duration = value_after(&report, "test-duration ");
    let late_ms = value_in_line(&report, "Latency from due time [ms]:", "max ");
    let life_ms = value_in_line(&report, "Connection time [ms]: min", "max ");
    assert!(rate <= 100.0 / 0.495 + 0.1, "{report}");
    let longest = 0.495 + (late_ms + life_ms) / 1e3 + 0.002;
    assert!(duration <= longest, "{report}");
    assert!(rate >= 100.0 / longest - 0.1, "{report}");
}

/// httperf's own report for the same load against the same kind of server: every line it
/// prints, loadlab prints too, in the same order, with the same words; only the numbers
/// differ (and the first line, which echoes each tool's command). loadlab's extra lines
/// (schedule, corrected latency, warnings) come after httperf's last.
#[test]
fn httperf_layout_matches_httperf_line_for_line() {
    let Some(httperf) = find_program("httperf", &[]) else {
        missing("httperf", "httperf").report();
        return;
    };
    let server = TestServer::start(Behaviour::ok("session"));
    let port = server.addr().port().to_string();
    let mut command = std::process::Command::new(httperf);
    command.args(["--server", "127.0.0.1", "--port", &port, "--uri", "/"]);
    command.args(["--rate", "200", "--num-conns", "100", "--num-calls", "5"]);
    let output = output_within(command, RUN_LIMIT);
    assert!(output.status.success(), "httperf: {}", String::from_utf8_lossy(&output.stderr));
    let theirs = String::from_utf8(output.stdout).expect("UTF-8 from httperf");
    assert!(theirs.contains("Total: connections 100 requests 500 replies 500"), "{theirs}");
    let ours = httperf_layout(&server);

    let theirs: Vec<&str> = theirs.lines().skip(1).collect();
    let ours: Vec<&str> = ours.lines().skip(1).collect();
    assert!(ours.len() >= theirs.len(), "loadlab:\n{ours:#?}\nhttperf:\n{theirs:#?}");
    for (n, (t, o)) in theirs.iter().zip(&ours).enumerate() {
        assert_eq!(skeleton(o), skeleton(t), "line {}:\nloadlab: {o}\nhttperf: {t}", n + 2);
    }
    // Both counted the same: the figures that do not depend on timing agree exactly.
    for prefix in ["Total: connections", "Reply status:", "Errors:"] {
        let pick = |lines: &[&str]| -> Vec<String> {
            lines
                .iter()
                .filter(|l| l.starts_with(prefix))
                .map(|l| l.split(" test-duration").next().unwrap_or(l).to_string())
                .collect()
        };
        assert_eq!(pick(&ours), pick(&theirs), "{prefix}");
    }
}

/// `loadlab bench URL SESSION_ARGS --format httperf`.
fn httperf_layout(server: &TestServer) -> String {
    let mut command = loadlab();
    command.args(["bench", &server.url("/")]).args(SESSION_ARGS);
    command.args(["--format", "httperf", "--quiet"]);
    let output = output_within(command, RUN_LIMIT);
    assert_exit(&output, 0);
    String::from_utf8(output.stdout).expect("UTF-8 report")
}

/// A line with every number replaced by `#`: its layout.
pub(super) fn skeleton(line: &str) -> String {
    let mut out = String::new();
    let mut in_number = false;
    for c in line.chars() {
        if c.is_ascii_digit() || (in_number && c == '.') {
            if !in_number {
                out.push('#');
            }
            in_number = true;
        } else {
            in_number = false;
            out.push(c);
        }
    }
    out
}

/// The number right after `label` in `report`.
fn value_after(report: &str, label: &str) -> f64 {
    let rest = report.split(label).nth(1).unwrap_or_else(|| panic!("no {label:?}"));
    let number: String = rest.chars().take_while(|c| c.is_ascii_digit() || *c == '.').collect();
    number.parse().unwrap_or_else(|_| panic!("no number after {label:?}"))
}

/// The number right after `label` in the line of `report` that starts with `line`.
fn value_in_line(report: &str, line: &str, label: &str) -> f64 {
    let found = report.lines().find(|l| l.starts_with(line));
    value_after(found.unwrap_or_else(|| panic!("no line {line:?} in:\n{report}")), label)
}

#[test]
fn skeleton_hides_numbers_only() {
    assert_eq!(skeleton("Net I/O: 307.1 KB/s (2.5*10^6 bps)"), "Net I/O: # KB/s (#*#^# bps)");
    assert_eq!(skeleton("Reply status: 1xx=0 2xx=500"), "Reply status: #xx=# #xx=#");
}

/// `--source-ips 127.0.0.1-127.0.0.16`: new connections take the addresses in turn (one
/// worker, so one turn), and the server sees each as the peer.
#[test]
fn source_ips_spread_connections_round_robin() {
    let server = TestServer::start(Behaviour::ok("from where"));
    let report = bench(
        &server.url("/"),
        &["--conn-rate", "400", "--conns", "32", "-t", "1", "--source-ips", "127.0.0.1-127.0.0.16"],
        0,
    );
    assert_accounted(&report, 32);
    assert_eq!(uint(&report, "requests.completed"), 32, "{report:#}");
    assert_eq!(at(&report, "config.source_ips").as_array().map(Vec::len), Some(16));
    assert!(wait_until(Duration::from_secs(30), || server.connections() == 33));
    let mut seen: BTreeMap<IpAddr, u32> = BTreeMap::new();
    for ip in server.peers() {
        *seen.entry(ip).or_default() += 1;
    }
    let expected: BTreeMap<IpAddr, u32> = (1..=16)
        .map(|i| {
            // Two sessions from each address; 127.0.0.1 also made the pre-flight connect.
            (IpAddr::V4(Ipv4Addr::new(127, 0, 0, i)), if i == 1 { 3 } else { 2 })
        })
        .collect();
    assert_eq!(seen, expected);
}
