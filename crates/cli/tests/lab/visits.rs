//! The lab's built-in WordPress visits against real WordPress stacks, step by step in process:
//! `loadlab-visit`'s templates, captures, checks and cookie jar, over a small HTTP/1.0 client
//! (the body ends with the connection: no chunks to undo). The login passes only when the
//! cookie jar and the dashboard's nonce are carried: without the jar WordPress refuses the
//! login at step 2 (its test cookie missing), without the nonce the log-out at step 4 (403).

use std::io::{Read, Write};
use std::net::TcpStream;
use std::time::{Duration, Instant};

use loadlab_lab::visits;
use loadlab_visit::{visit_file, Jar, Response, Vars, Visit};
use serde_json::Value;

use super::{require_stack, TestLab};

/// What a walk of a visit leaves out, to show that the visit depends on it.
#[derive(Clone, Copy, PartialEq, Debug)]
enum Carry {
    Everything,
    /// No cookie goes back: every request as from a new browser.
    NoCookies,
    /// The captured `{nonce}` is replaced by a well-formed value of another session.
    NoNonce,
}

/// One answer: status, header fields, body.
struct Answer {
    status: u16,
    headers: Vec<(String, String)>,
    body: Vec<u8>,
}

/// One request in HTTP/1.0 to `addr` (`127.0.0.1:PORT`), read to the end.
fn exchange(
    addr: &str,
    method: &str,
    path: &str,
    fields: &[(String, String)],
    body: &str,
) -> Answer {
    let mut stream = TcpStream::connect(addr).expect("connect");
    stream.set_read_timeout(Some(Duration::from_secs(20))).unwrap();
    let mut request = format!("{method} {path} HTTP/1.0\r\nHost: {addr}\r\n");
    for (name, value) in fields {
        request.push_str(&format!("{name}: {value}\r\n"));
    }
    if method == "POST" {
        request.push_str(&format!("Content-Length: {}\r\n", body.len()));
    }
    request.push_str("\r\n");
    request.push_str(body);
    stream.write_all(request.as_bytes()).unwrap();
    let mut raw = Vec::new();
    stream.read_to_end(&mut raw).expect("read the answer");
    let split = raw.windows(4).position(|w| w == b"\r\n\r\n").expect("a whole head");
    let head = String::from_utf8_lossy(&raw[..split]).into_owned();
    let mut lines = head.split("\r\n");
    let status = lines.next().and_then(|l| l.split(' ').nth(1)).and_then(|s| s.parse().ok());
    let headers = lines
        .filter_map(|l| l.split_once(':'))
        .map(|(n, v)| (n.trim().to_string(), v.trim().to_string()))
        .collect();
    Answer { status: status.expect("a status"), headers, body: raw[split + 4..].to_vec() }
}

/// Runs `visit` once against `addr` as the engine would, carrying what `carry` says: the
/// number of requests made, or the step (from 1) and class of the first check or capture
/// that failed.
fn walk(addr: &str, visit: &Visit, given: &Vars, carry: Carry) -> Result<usize, (usize, String)> {
    let mut vars = given.clone();
    let mut jar = Jar::new("127.0.0.1", false);
    let mut requests = 0;
    for (step, burst) in visit.bursts.iter().enumerate() {
        let fail = |class: &str| Err((step + 1, class.to_string()));
        for call in &burst.calls {
            let path = call.path.to_string_with(&vars).expect("every name known");
            let mut fields: Vec<(String, String)> = call
                .headers
                .iter()
                .map(|(n, v)| (n.clone(), v.to_string_with(&vars).unwrap()))
                .collect();
            if let Some(cookie) = jar.header(&path, Instant::now()) {
                fields.push(("Cookie".into(), cookie));
            }
            let body = call.body.as_ref().map(|b| b.to_string_with(&vars).unwrap());
            let answer =
                exchange(addr, &call.method, &path, &fields, body.as_deref().unwrap_or(""));
            requests += 1;
            for (name, value) in &answer.headers {
                if name.eq_ignore_ascii_case("set-cookie") && carry != Carry::NoCookies {
                    jar.store(value, &path, Instant::now());
                }
            }
            let r =
                Response { status: answer.status, headers: &answer.headers, body: &answer.body };
            if let Some(check) = call.checks.iter().find(|c| !c.holds(&r)) {
                return fail(&format!("{} (answered {})", check.class(), answer.status));
            }
            for capture in &call.captures {
                let Some(mut value) = capture.take(&r) else { return fail("capture") };
                if carry == Carry::NoNonce && capture.name == "nonce" {
                    // A nonce's shape, but not this session's: ten hex digits.
                    value = "0123456789".to_string();
                }
                vars.insert(capture.name.clone(), value);
            }
        }
    }
    Ok(requests)
}

/// A built-in visit as `--visits NAME` gets it for the instance `up`, read as any visit file,
/// and the values it is given as visitor 1 holds them (`{visitor}` filled in).
fn builtin(lab: &TestLab, up: &Value, name: &str) -> (Visit, Vars) {
    let url = up["url"].as_str().expect("url");
    let records: Vec<_> =
        lab.lab().instances().expect("instances").into_iter().map(|(r, _)| r).collect();
    let found = visits::resolve(&records, name, url).expect("resolved").expect("built in");
    let b = found.visit;
    let visit = visit_file::parse(b.text, b.name, b.given).expect("a built-in visit parses");
    (visit, as_visitor(&found.given, 1))
}

/// Given values as visitor `number` holds them.
fn as_visitor(given: &[(String, String)], number: usize) -> Vars {
    let n = number.to_string();
    let mut vars: Vars =
        given.iter().map(|(k, v)| (k.clone(), v.replace("{visitor}", &n))).collect();
    vars.insert("visitor".into(), n);
    vars
}

fn addr(up: &Value) -> String {
    let url = up["url"].as_str().expect("url");
    url.trim_start_matches("http://").trim_end_matches('/').to_string()
}

/// Every built-in visit passes on the stack `up`, and the login fails where it must when the
/// cookies or the nonce are not carried.
fn visits_pass_and_the_login_needs_what_it_carries(lab: &TestLab, up: &Value) {
    let addr = addr(up);
    for name in ["wordpress:front", "wordpress:post", "wordpress:search"] {
        let (visit, given) = builtin(lab, up, name);
        let made = walk(&addr, &visit, &given, Carry::Everything);
        assert_eq!(made, Ok(visit.requests()), "{name} on {}", up["name"]);
    }
    // The lab gives each visitor its own user: visitor 1 is loadlab-1.
    let (login, given) = builtin(lab, up, "wordpress:login");
    assert_eq!(given["user"], "loadlab-1", "{given:?}");
    assert_eq!(walk(&addr, &login, &given, Carry::Everything), Ok(4), "{}", up["name"]);
    // The same visit twice: a visitor logs in again after logging out.
    assert_eq!(walk(&addr, &login, &given, Carry::Everything), Ok(4), "{}", up["name"]);
    let refused = |carry| walk(&addr, &login, &given, carry).unwrap_err();
    assert_eq!(refused(Carry::NoCookies), (2, "status (answered 200)".to_string()));
    assert_eq!(refused(Carry::NoNonce), (4, "status (answered 403)".to_string()));
    // The last visitor has a user of its own too, and one more has none.
    let url = up["url"].as_str().unwrap();
    let records: Vec<_> = lab.lab().instances().unwrap().into_iter().map(|(r, _)| r).collect();
    let found = visits::resolve(&records, "wordpress:login", url).unwrap().unwrap();
    let users = found.visitors.expect("a login has users for so many visitors");
    let last = as_visitor(&found.given, users);
    assert_eq!(walk(&addr, &login, &last, Carry::Everything), Ok(4));
    let beyond = as_visitor(&found.given, users + 1);
    assert_eq!(walk(&addr, &login, &beyond, Carry::Everything).unwrap_err().0, 2);
    let mut wrong = given.clone();
    wrong.insert("password".into(), "not-the-password".into());
    assert_eq!(walk(&addr, &login, &wrong, Carry::Everything).unwrap_err().0, 2);
}

#[test]
fn wordpress_nginx_fpm_builtin_visits() {
    let (lab, up) = require_stack!("wordpress-nginx-fpm", &[]);
    visits_pass_and_the_login_needs_what_it_carries(&lab, &up);
    bench_runs_the_login(&lab, &up);
    // `stack show` tells the administrator the visit was given.
    let id = up["id"].as_str().expect("id");
    let show = lab.json(&["stack", "show", id, "--json"]);
    let section = |what: &str| {
        show["captured"]
            .as_array()
            .expect("captured")
            .iter()
            .find(|c| c["tier"] == "wordpress" && c["what"] == what)
            .unwrap_or_else(|| panic!("no {what} in {show:#}"))
            .clone()
    };
    let admin = section("administrator");
    let listed = section("built-in visits")["text"].as_str().unwrap().to_string();
    for b in visits::BUILTINS {
        assert!(listed.contains(b.name), "{listed}");
    }
    // Where the passwords are, never the passwords: a run stores this section.
    let (_, given) = builtin(&lab, &up, "wordpress:login");
    let text = admin["text"].as_str().unwrap();
    assert!(text.contains("user: loadlab\npassword: in /"), "{text}");
    let secret = given["password"].trim_end_matches("-1");
    let admin_password = loadlab_lab::servers::wordpress::Admin::read(std::path::Path::new(
        up["run_dir"].as_str().unwrap_or_else(|| panic!("run_dir in {up:#}")),
    ))
    .unwrap()
    .password;
    for password in [secret, admin_password.as_str()] {
        assert!(!show.to_string().contains(password), "a password in stack show: {show:#}");
    }
    // The front page's built-in resources are what its HTML names, as a browser finds them.
    let url = up["url"].as_str().unwrap();
    let page = exchange(&addr(&up), "GET", "/", &[], "");
    let found = loadlab_visit::discover::page_resources(
        &String::from_utf8_lossy(&page.body),
        &url::Url::parse(url).unwrap(),
        &Default::default(),
    );
    let found: Vec<String> =
        found.kept.iter().map(|u| format!("{}?{}", u.path(), u.query().unwrap_or(""))).collect();
    let (front, _) = builtin(&lab, &up, "wordpress:front");
    let listed: Vec<String> = front.bursts[0].calls[1..]
        .iter()
        .map(|c| c.path.to_string_with(&Vars::new()).unwrap())
        .collect();
    assert_eq!(listed, found);
}

/// Through Varnish: the login's POST and every request with a cookie must reach WordPress.
#[test]
fn wordpress_varnish_builtin_visits() {
    let (lab, up) = require_stack!("wordpress-varnish-nginx-fpm", &[]);
    visits_pass_and_the_login_needs_what_it_carries(&lab, &up);
    bench_runs_the_login(&lab, &up);
}

#[test]
fn wordpress_apache_builtin_visits() {
    let (lab, up) = require_stack!("wordpress-apache-modphp", &[]);
    visits_pass_and_the_login_needs_what_it_carries(&lab, &up);
}

/// `loadlab bench URL --visits NAME ARGS --format json` against the stack `up`: the report
/// and the exit code.
fn bench(lab: &TestLab, up: &Value, visits: &str, args: &[&str]) -> (Value, Option<i32>) {
    let url = up["url"].as_str().expect("url");
    let mut words = vec!["bench", url, "--visits", visits, "--format", "json"];
    words.extend_from_slice(args);
    let output = lab.run(&words);
    let report = serde_json::from_slice(&output.stdout).unwrap_or_else(|e| {
        panic!("{words:?} printed no JSON ({e}): {}", String::from_utf8_lossy(&output.stderr))
    });
    (report, output.status.code())
}

/// The per-step figures of a report: each step's (started, completed, failures by class).
fn steps(report: &Value) -> Vec<(u64, u64, Value)> {
    let steps = report["visits"]["steps"].as_array().unwrap_or_else(|| panic!("{report:#}"));
    steps
        .iter()
        .map(|s| {
            (s["started"].as_u64().unwrap(), s["completed"].as_u64().unwrap(), s["failed"].clone())
        })
        .collect()
}

/// The built-in login run by `loadlab bench --visits wordpress:login`: every step of every
/// visit passes, visitors logging in at once each as its own user (as one user, WordPress's
/// unlocked session row lost 8 of 20 at -c 4), in a closed population and at a rate; the
/// same visit with another session's nonce (a file of its own, given the users by `--given`)
/// fails every visit at step 4, by its status, after 3 steps passed.
fn bench_runs_the_login(lab: &TestLab, up: &Value) {
    for load in [&["-c", "4", "-n", "20"][..], &["--rate", "8", "-n", "20"][..]] {
        let (report, _) = bench(lab, up, "wordpress:login", load);
        assert_eq!(report["visits"]["completed"], 20, "{load:?}: {report:#}");
        assert_eq!(report["visits"]["failed"], 0, "{load:?}: {report:#}");
        for (started, completed, failed) in steps(&report) {
            assert_eq!((started, completed, failed), (20, 20, serde_json::json!({})), "{report:#}");
        }
    }
    let url = up["url"].as_str().unwrap();
    let records: Vec<_> = lab.lab().instances().unwrap().into_iter().map(|(r, _)| r).collect();
    let found = visits::resolve(&records, "wordpress:login", url).unwrap().unwrap();
    let text = found.visit.text;
    let dir = tempfile::tempdir().unwrap();
    let file = dir.path().join("login-without-nonce.toml");
    let without = text.replace("_wpnonce={nonce}", "_wpnonce=0123456789");
    assert_ne!(without, text);
    std::fs::write(&file, without).unwrap();
    let given: Vec<String> = found.given.iter().map(|(k, v)| format!("{k}={v}")).collect();
    let mut args = vec!["-c", "2", "-n", "4"];
    for g in &given {
        args.extend(["--given", g.as_str()]);
    }
    let (report, _) = bench(lab, up, file.to_str().unwrap(), &args);
    assert_eq!(report["visits"]["completed"], 0, "{report:#}");
    assert_eq!(report["visits"]["failed"], 4, "{report:#}");
    let steps = steps(&report);
    assert_eq!(steps.len(), 4, "{report:#}");
    for step in &steps[..3] {
        assert_eq!(step, &(4, 4, serde_json::json!({})), "{report:#}");
    }
    assert_eq!(steps[3], (4, 0, serde_json::json!({ "status": 4 })), "{report:#}");
    // A given name that no step uses is refused before any load, exit 2.
    let words = ["bench", url, "--visits", "wordpress:login", "-n", "1", "--given", "colour=red"];
    let out = lab.run(&words);
    let said = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(2), "{said}");
    assert!(said.contains("given for {colour}, which no step uses"), "{said}");
}
