//! Visits over HTTP/2 (`--http2` with `--view`, `--wsesslog`, `--visits`): a visitor
//! holds one connection per origin, as a browser does, and a burst's calls are concurrent
//! streams of it. Against the lab's real nginx (h2 by ALPN over TLS, h2c by prior knowledge)
//! and the in-process HTTP/2 server, which counts connections and requests on its side and
//! plays a login that needs the captured cookie and token back.

use super::mixes::file;
use super::views::site;
use super::visit_files::{login_visit, TOKEN};
use super::{assert_accounted, at, bench, uint};
use crate::support::{require_nginx, H2Behaviour, H2Peer, Listen};

/// The page of `views::site` and its three resources, for nginx to serve.
fn site_files() -> Vec<(String, Vec<u8>)> {
    site(&[], std::time::Duration::ZERO)
        .into_iter()
        .map(|p| {
            let name =
                if p.path == "/" { "index.html".to_string() } else { p.path[1..].to_string() };
            (name, p.body)
        })
        .collect()
}

/// Over TLS: the page is read for its resources before the run (over HTTP/1.1, which nginx
/// also offers by ALPN), then every view goes over h2.
#[test]
fn views_over_h2_with_nginx_fetch_every_resource_on_one_connection_per_visitor() {
    let files = site_files();
    let files: Vec<(&str, &[u8])> = files.iter().map(|(n, b)| (n.as_str(), &b[..])).collect();
    let nginx = require_nginx!(&files, Listen { http2: true, tls: true, ..Listen::default() });
    let args = ["--http2", "--view", "--rate", "20", "-n", "8", "--insecure"];
    let report = bench(&nginx.url("/"), &args, 0);
    assert_accounted(&report, 32);
    assert_eq!(uint(&report, "views.completed"), 8, "{report:#}");
    assert_eq!(uint(&report, "views.load_time_us.count"), 8, "{report:#}");
    assert_eq!(uint(&report, "status.200"), 32, "{report:#}");
    // One connection per visitor, every request of its view on it.
    assert_eq!(uint(&report, "connections.opened"), 8, "{report:#}");
    assert_eq!(at(&report, "tls.alpn"), "h2", "{report:#}");
}

/// Over h2c to a server that speaks nothing but HTTP/2 on its port (nginx 1.22's `listen ...
/// http2` in the clear): the page and its stylesheet are read for their resources over h2c
/// too. The font only the stylesheet names is found, so the stylesheet was read. Discovery
/// over HTTP/1.1 would stop the run there ("cannot reach ... invalid HTTP version").
#[test]
fn views_over_h2c_find_the_resources_over_h2c_on_an_h2_only_port() {
    let page = r#"<html><head><link rel="stylesheet" href="/s.css"><script src="/a.js"></script>
        </head><body></body></html>"#;
    let files: [(&str, &[u8]); 4] = [
        ("index.html", page.as_bytes()),
        ("s.css", b"@font-face { src: url(/f.woff2) }"),
        ("a.js", b"var a;"),
        ("f.woff2", b"font"),
    ];
    let nginx = require_nginx!(&files, Listen { http2: true, ..Listen::default() });
    let report = bench(&nginx.url("/"), &["--http2", "--view", "--rate", "20", "-n", "6"], 0);
    let listed: Vec<&str> = at(&report, "views.resources")
        .as_array()
        .expect("an array")
        .iter()
        .map(|r| r["path"].as_str().unwrap())
        .collect();
    assert_eq!(listed, ["/s.css", "/a.js", "/f.woff2"], "{report:#}");
    assert_accounted(&report, 24);
    assert_eq!(uint(&report, "views.completed"), 6, "{report:#}");
    assert_eq!(uint(&report, "status.200"), 24, "{report:#}");
    assert_eq!(uint(&report, "connections.opened"), 6, "{report:#}");
}

/// Sessions of two bursts: a page alone, then its four resources at once.
const TWO_BURSTS: &str = "/a.html\n    /a.css\n    /a.js\n    /a.png\n    /a.woff2\n/b.html\n";

/// At a rate, and by a closed population of two visitors at a time (`-c`): the same
/// connection per session.
#[test]
fn wsesslog_sessions_over_h2c_are_one_connection_each_on_the_server_side() {
    for load in [["--rate", "30"], ["-c", "2"]] {
        let server = H2Peer::start(H2Behaviour::Ok);
        let (_dir, log) = file("two.log", TWO_BURSTS);
        let spec = format!("6,0,{log}");
        let args = [&["--http2", "--wsesslog", spec.as_str()][..], &load].concat();
        let report = bench(&server.url("/"), &args, 0);
        assert_accounted(&report, 36);
        assert_eq!(uint(&report, "sessions.completed"), 6, "{load:?}: {report:#}");
        assert_eq!(uint(&report, "requests.completed"), 36, "{load:?}: {report:#}");
        // The server saw the preflight's two connections (TCP, then the h2c preface) and one
        // per session, and every request.
        assert_eq!(server.connections(), 2 + 6, "{load:?}");
        assert_eq!(server.requests(), 36, "{load:?}");
        assert_eq!(uint(&report, "connections.opened"), 6, "{load:?}: {report:#}");
    }
}

#[test]
fn a_reset_stream_fails_its_call_and_ends_the_visit_with_a_class() {
    let server = H2Peer::start(H2Behaviour::Reset);
    let (_dir, log) = file("two.log", TWO_BURSTS);
    let spec = format!("3,0,{log}");
    let report = bench(&server.url("/"), &["--http2", "--wsesslog", &spec, "--rate", "30"], 0);
    // Each session's first call is reset: it fails as h2_stream and nothing more is sent.
    assert_accounted(&report, 3);
    assert_eq!(uint(&report, "errors.h2_stream"), 3, "{report:#}");
    assert_eq!(uint(&report, "sessions.failed"), 3, "{report:#}");
    assert_eq!(uint(&report, "sessions.not_issued"), 3 * 5, "{report:#}");
}

/// A login over h2c: the cookie its answer sets and the token its page shows, captured and
/// carried back by each visitor on its own connection; without the token the server refuses,
/// so the visit fails at that step.
#[test]
fn a_login_visit_carries_its_cookie_and_captured_token_over_h2() {
    let server = H2Peer::start(H2Behaviour::Login);
    let visit = login_visit(TOKEN, "0s", r#"X-Token = "{token}""#);
    let (_dir, visit) = file("login.toml", &visit);
    let args = ["--http2", "--visits", &visit, "-c", "3", "-n", "9"];
    let report = bench(&server.url("/"), &args, 0);
    assert_accounted(&report, 27);
    assert_eq!(uint(&report, "visits.completed"), 9, "{report:#}");
    assert_eq!(uint(&report, "status.200"), 27, "{report:#}");
    // One connection per visit (its visitor's), the preflight's two besides.
    assert_eq!(server.connections(), 2 + 9);
    assert_eq!(server.requests(), 27);

    let without = login_visit(TOKEN, "0s", r#"X-Other = "{token}""#);
    let (_dir, without) = file("without.toml", &without);
    let args = ["--http2", "--visits", &without, "-c", "1", "-n", "2"];
    let report = bench(&server.url("/"), &args, 0);
    assert_eq!(uint(&report, "visits.completed"), 0, "{report:#}");
    assert_eq!(uint(&report, "visits.failed"), 2, "{report:#}");
    assert_eq!(uint(&report, "status.403"), 2, "{report:#}");
}

/// A server that ends each connection with a GOAWAY after three answers: the streams it
/// refused go again on a new connection of the same visitor, and no call is lost.
#[test]
fn a_goaway_mid_burst_sends_the_refused_streams_again_and_loses_no_call() {
    let server = H2Peer::start(H2Behaviour::GoawayAfter { per_conn: 3 });
    let (_dir, log) = file("two.log", TWO_BURSTS);
    let spec = format!("4,0,{log}");
    let report = bench(&server.url("/"), &["--http2", "--wsesslog", &spec, "--rate", "30"], 0);
    assert_accounted(&report, 24);
    assert_eq!(uint(&report, "requests.completed"), 24, "{report:#}");
    assert_eq!(uint(&report, "sessions.completed"), 4, "{report:#}");
    // Six calls a session, three answered per connection: two connections each.
    assert_eq!(uint(&report, "connections.opened"), 8, "{report:#}");
}

/// A GOAWAY with every answer: a burst's calls that waited for a stream while the GOAWAY
/// allowed none, and the next burst, each go on a new connection; none waits forever.
#[test]
fn calls_held_back_by_a_goaway_go_on_a_new_connection() {
    let server = H2Peer::start(H2Behaviour::GoawayAfter { per_conn: 1 });
    let (_dir, log) = file("goaway.log", "/a.html\n    /a.css\n/b.html\n");
    let spec = format!("3,0,{log}");
    let report = bench(&server.url("/"), &["--http2", "--wsesslog", &spec, "--rate", "30"], 0);
    assert_accounted(&report, 9);
    assert_eq!(uint(&report, "sessions.completed"), 3, "{report:#}");
    assert_eq!(uint(&report, "connections.opened"), 9, "{report:#}");
}

/// A server that never opens its flow-control window: a visit's request body can never go,
/// and the call ends at its timeout (its stream reset), failing the visit, not hanging it.
#[test]
fn a_stream_that_never_gets_its_body_out_ends_at_the_timeout() {
    let server = H2Peer::start(H2Behaviour::WindowNeverOpened);
    let (_dir, log) = file("post.log", "/form method=POST contents='a=1'\n    /a.css\n");
    let spec = format!("2,0,{log}");
    let args = ["--http2", "--wsesslog", &spec, "--rate", "20", "--timeout", "300ms"];
    let report = bench(&server.url("/"), &args, 0);
    assert_accounted(&report, 2);
    assert_eq!(uint(&report, "errors.client_timeout"), 2, "{report:#}");
    assert_eq!(uint(&report, "sessions.failed"), 2, "{report:#}");
    assert_eq!(uint(&report, "sessions.not_issued"), 2, "{report:#}");
}
