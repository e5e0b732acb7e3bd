//! TLS and HTTP/2 on the lab's real servers: nginx, Apache event with
//! php-fpm and Varnish behind hitch come up with a certificate from their own CA, verify the
//! certificate, the protocol ALPN selects and session resumption, serve `loadlab bench
//! --cacert` with 2xx answers, and go down leaving no process (hitch's included); the knobs are
//! refused with their reasons where the front cannot serve them.

use std::os::unix::fs::PermissionsExt;
use std::path::Path;

use serde_json::Value;

use super::stacks::{exercise, ASPECTS, BIG_FILE, PHP, PHPINFO, STATIC};
use super::{require_stack, TestLab};
use crate::support::{run_json, skip::servers_required, Skip};

/// The detail of verify's check `name` in an `up --json` answer, which must have passed.
pub(super) fn passed<'a>(up: &'a Value, name: &str) -> &'a str {
    let checks = up["checks"].as_array().expect("checks");
    let check = checks.iter().find(|c| c["workload"] == name);
    let check = check.unwrap_or_else(|| panic!("no {name} check: {up:#}"));
    assert_eq!(check["ok"], true, "{check:#}");
    check["detail"].as_str().expect("detail")
}

pub(super) fn stderr(output: &std::process::Output) -> String {
    String::from_utf8_lossy(&output.stderr).into_owned()
}

/// `loadlab bench URL -n 50 --expect-status 200 ARGS`: its JSON report and exit code.
fn bench(url: &str, args: &[&str]) -> (Value, Option<i32>) {
    let mut all = vec!["bench", url, "-n", "50", "-c", "2", "--expect-status", "200"];
    all.extend_from_slice(args);
    let (report, output) = run_json(&all);
    (report, output.status.code())
}

#[test]
fn nginx_with_tls_verifies_its_certificate_and_serves_bench_with_its_ca() {
    let (lab, up) = require_stack!("nginx", &["--tls", "on"]);
    let url = up["url"].as_str().expect("url").to_string();
    assert!(url.starts_with("https://127.0.0.1:"), "{up:#}");
    let tls = passed(&up, "tls");
    for said in ["ALPN http/1.1", "certificate for 127.0.0.1 verified", "session resumed"] {
        assert!(tls.contains(said), "{tls}");
    }
    let ca = up["cacert"].as_str().expect("the instance's CA").to_string();
    let key = Path::new(&ca).with_file_name("key.pem");
    assert_eq!(std::fs::metadata(&key).unwrap().permissions().mode() & 0o777, 0o600);

    // Trusting the instance's CA: every answer 200. Trusting the system's roots: refused
    // before any load, with the reason (exit 3).
    let (report, code) = bench(&format!("{url}100k.bin"), &["--cacert", &ca]);
    assert_eq!(code, Some(0), "{report:#}");
    assert_eq!(report["requests"]["completed"], 50, "{report:#}");
    // The message names the instance's CA file: the way out.
    let output = lab.run(&["bench", &format!("{url}hello.txt"), "-n", "5"]);
    assert_eq!(output.status.code(), Some(3), "{}", stderr(&output));
    let said = stderr(&output);
    assert!(said.contains("invalid peer certificate"), "{said}");
    assert!(said.contains(&format!("--cacert {ca} (the lab instance's CA)")), "{said}");
    assert!(said.contains("--insecure"), "{said}");
    // nginx 1.22 has no HTTP/3: `--http3` is refused before any load, in one line saying
    // which piece is missing (exit 3).
    let output =
        lab.run(&["bench", &format!("{url}hello.txt"), "-n", "5", "--http3", "--cacert", &ca]);
    assert_eq!(output.status.code(), Some(3), "{}", stderr(&output));
    let said = stderr(&output);
    assert_eq!(said.lines().count(), 1, "{said}");
    assert!(said.contains("the server offers no HTTP/3: Alt-Svc \"\" names no h3=\":"), "{said}");

    let id = up["id"].as_str().unwrap().to_string();
    let show = lab.json(&["stack", "show", &id, "--json"]);
    assert_eq!(show["tls"]["tls"], "on", "{show:#}");
    assert_eq!(show["tls"]["terminator"], "nginx", "{show:#}");
    assert_eq!(show["tls"]["protocols"], serde_json::json!(["http/1.1"]), "{show:#}");
    assert_eq!(show["tls"]["files"]["ca"], ca.as_str(), "{show:#}");
    assert_eq!(show["tls"]["subject"], format!("CN=loadlab {id}"), "{show:#}");
    let text = lab.run(&["stack", "show", &id]);
    let text = String::from_utf8_lossy(&text.stdout);
    assert!(text.contains(&format!("loadlab bench --cacert {ca}")), "{text}");
    assert!(text.contains("listen 127.0.0.1:") && text.contains(" ssl;"), "{text}");

    // The megabyte file is many TLS records per response.
    exercise(lab, up, &[STATIC, ASPECTS, &["tls"]], Some(BIG_FILE));
}

#[test]
fn nginx_fpm_with_tls_and_http2_negotiates_h2() {
    let (lab, up) = require_stack!("nginx-fpm", &["--tls", "on", "--http2", "on"]);
    bench_over_h2(&up);
    assert!(passed(&up, "tls").contains("ALPN h2,"), "{up:#}");
    let h2 = passed(&up, "http2");
    assert!(h2.starts_with("h2 by ALPN: SETTINGS"), "{h2}");
    let show = lab.json(&["stack", "show", up["id"].as_str().unwrap(), "--json"]);
    assert_eq!(show["tls"]["protocols"], serde_json::json!(["h2", "http/1.1"]), "{show:#}");
    exercise(lab, up, &[STATIC, PHP, ASPECTS, &["php", "tls", "http2"]], Some(PHPINFO));
}

#[test]
fn apache_event_fpm_with_tls_and_http2() {
    let (lab, up) = require_stack!("apache-event-fpm", &["--tls", "on", "--http2", "on"]);
    assert!(passed(&up, "tls").contains("ALPN h2,"), "{up:#}");
    assert!(passed(&up, "http2").starts_with("h2 by ALPN: SETTINGS"), "{up:#}");
    let show = lab.json(&["stack", "show", up["id"].as_str().unwrap(), "--json"]);
    let conf = show["captured"].as_array().unwrap().iter().find(|c| c["what"] == "apache2.conf");
    let conf = conf.and_then(|c| c["text"].as_str()).expect("apache2.conf captured");
    assert!(conf.contains("SSLEngine on") && conf.contains("Protocols h2 http/1.1"), "{conf}");
    bench_over_h2(&up);
    exercise(lab, up, &[STATIC, PHP, ASPECTS, &["php", "tls", "http2"]], Some(PHPINFO));
}

/// The engine over HTTP/2 against a lab stack: PHP and a 100 KB file (several DATA frames and
/// window updates), 4 streams on each of 2 connections, all 50 answers 200.
pub(super) fn bench_over_h2(up: &Value) {
    let url = up["url"].as_str().expect("url");
    let ca = up["cacert"].as_str().expect("the instance's CA");
    for path in ["hello.php", "100k.bin"] {
        let args = ["--cacert", ca, "--http2", "--streams", "4"];
        let (report, code) = bench(&format!("{url}{path}"), &args);
        assert_eq!(code, Some(0), "{report:#}");
        assert_eq!(report["protocol"], "h2", "{report:#}");
        assert_eq!(report["tls"]["alpn"], "h2", "{report:#}");
        assert_eq!(report["tls"]["version"], "TLSv1.3", "{report:#}");
        assert_eq!(report["requests"]["completed"], 50, "{path}: {report:#}");
        assert_eq!(report["requests"]["failed"], 0, "{path}: {report:#}");
    }
}

/// h2c: Apache serves HTTP/2 with prior knowledge beside HTTP/1.1 on one plain port.
#[test]
fn apache_event_fpm_serves_h2c_beside_http1() {
    let (lab, up) = require_stack!("apache-event-fpm", &["--http2", "on"]);
    assert!(up["url"].as_str().unwrap().starts_with("http://"), "{up:#}");
    assert_eq!(up["cacert"], Value::Null, "{up:#}");
    assert!(passed(&up, "http2").starts_with("h2c with prior knowledge: SETTINGS"), "{up:#}");
    assert!(
        passed(&up, "hello.txt").starts_with("status 200, 13 body bytes, Server Apache"),
        "{up:#}"
    );
    lab.down(up["id"].as_str().unwrap());
}

/// mod_http2 needs a threaded MPM: prefork (for mod_php) is refused with that reason, as a
/// usage error, and nothing starts. TLS alone it serves.
#[test]
fn apache_prefork_modphp_refuses_http2_with_its_reason_and_serves_tls() {
    let lab = TestLab::new();
    let output = lab.run(&["stack", "up", "apache-prefork-modphp", "--tls", "on", "--http2", "on"]);
    assert_eq!(output.status.code(), Some(2), "{}", stderr(&output));
    let message = stderr(&output);
    assert!(
        message.contains("--http2: apache-prefork-modphp runs Apache mpm_prefork"),
        "{message}"
    );
    assert!(message.contains("mod_http2 needs a threaded MPM (event)"), "{message}");
    assert_eq!(message.lines().count(), 1, "{message}");
    let list = lab.json(&["stack", "list", "--json"]);
    assert_eq!(list["instances"], serde_json::json!([]), "{list:#}");

    let (lab, up) = require_stack!("apache-prefork-modphp", &["--tls", "on"]);
    assert!(passed(&up, "tls").contains("ALPN http/1.1"), "{up:#}");
    exercise(lab, up, &[STATIC, PHP, ASPECTS, &["php", "tls"]], Some(PHPINFO));
}

/// Varnish has no TLS: hitch terminates it, a tier of its own (sampled, and gone after
/// `down`), and Varnish behind it still serves cache hits, and h2 by hitch's ALPN.
#[test]
fn varnish_nginx_fpm_with_tls_hits_the_cache_through_hitch() {
    let (lab, up) = require_stack!("varnish-nginx-fpm", &["--tls", "on", "--http2", "on"]);
    let tiers: Vec<&str> =
        up["tiers"].as_array().unwrap().iter().map(|t| t["name"].as_str().unwrap()).collect();
    assert_eq!(tiers, ["hitch", "varnish", "nginx", "php-fpm"], "{up:#}");
    assert!(passed(&up, "hello.txt").ends_with("cache hit after warm-up"), "{up:#}");
    assert!(passed(&up, "tls").contains("ALPN h2,"), "{up:#}");
    // Varnish's own SETTINGS (nginx's would name INITIAL_WINDOW_SIZE and MAX_FRAME_SIZE).
    assert_eq!(passed(&up, "http2"), "h2 by ALPN: SETTINGS MAX_CONCURRENT_STREAMS=100");
    let run_dir = up["run_dir"].as_str().unwrap().to_string();
    // exercise() checks every tier sampled, hitch's included, and every pid gone after down.
    exercise(lab, up, &[STATIC, PHP, ASPECTS, &["php", "tls", "http2"]], Some(BIG_FILE));
    let left: Vec<i32> = loadlab_lab::procfs::all()
        .iter()
        .filter(|p| !p.is_zombie())
        .filter(|p| loadlab_lab::procfs::cmdline(p.pid).is_some_and(|c| c.contains(&run_dir)))
        .map(|p| p.pid)
        .collect();
    assert!(left.is_empty(), "processes of {run_dir} left: {left:?}");
}

#[test]
fn tls_and_http2_where_the_front_cannot_serve_them_are_usage_errors() {
    let lab = TestLab::new();
    for (args, said) in [
        (&["stack", "up", "mariadb", "--tls", "on"][..], "--tls: mariadb serves no HTTP"),
        (&["stack", "up", "mariadb", "--http2", "on"], "--http2: mariadb serves no HTTP"),
        (&["stack", "up", "nginx", "--http2", "on"], "nginx would serve h2c only"),
        (
            &["stack", "up", "wordpress-apache-modphp", "--http2", "on", "--tls", "on"],
            "mpm_prefork",
        ),
        (&["stack", "up", "nginx", "--tls", "maybe"], "on or off"),
    ] {
        let output = lab.run(args);
        assert_eq!(output.status.code(), Some(2), "{args:?}: {}", stderr(&output));
        assert!(stderr(&output).contains(said), "{args:?}: {}", stderr(&output));
    }
}

/// A suite whose stack serves HTTP/2 is loaded over HTTP/2 with its load's streams: every
/// request answered, the stored load saying h2 and the streams.
#[test]
fn a_suite_with_http2_is_loaded_over_http2() {
    let lab = TestLab::new();
    let suite = lab.dir.path().join("h2.toml");
    std::fs::write(
        &suite,
        "name = \"h2\"\nrepetitions = 1\nwarmup = \"0s\"\n[[stacks]]\nname = \"nginx\"\n\
         tls = true\nhttp2 = true\n\n[[workloads]]\nname = \"hello.txt\"\n\n[[loads]]\n\
         model = \"closed\"\nconcurrency = [2]\nstreams = 5\nrequests = 200\n",
    )
    .unwrap();
    let out = lab.dir.path().join("out");
    let args = ["run", "--suite", suite.to_str().unwrap(), "--out", out.to_str().unwrap()];
    let output = lab.run(&args);
    if output.status.code() == Some(4) {
        assert!(!servers_required(), "CI must run nginx: {}", stderr(&output));
        Skip(stderr(&output)).report();
        return;
    }
    let stdout = String::from_utf8_lossy(&output.stdout);
    assert_eq!(output.status.code(), Some(0), "{stdout}\n{}", stderr(&output));
    assert!(stdout.contains("closed c=2 m=5 n=200"), "{stdout}");
    let db = out.join("loadlab.db");
    let csv = lab.run(&["report", "1", "--db", db.to_str().unwrap(), "--format", "csv"]);
    let csv = String::from_utf8_lossy(&csv.stdout);
    let (head, row) = csv.split_once('\n').expect("a header and a row");
    let (head, row) = (crate::run::fields(head), crate::run::fields(row));
    let column = |name: &str| {
        let i = head.iter().position(|c| c == name).unwrap_or_else(|| panic!("{name}: {head:?}"));
        row[i].clone()
    };
    assert_eq!((column("completed"), column("failed")), ("200".into(), "0".into()), "{csv}");
    let text = lab.run(&["report", "1", "--db", db.to_str().unwrap(), "--format", "text"]);
    let text = String::from_utf8_lossy(&text.stdout);
    assert!(text.contains("streams=5"), "{text}");
}

/// Behind a network profile the certificate names the namespace's address, which is what the
/// client reaches: verify and `bench --cacert` check it for that address.
#[test]
fn tls_behind_lan_1gbit_names_the_namespace_address() {
    if !crate::support::sys::is_root() {
        assert!(!servers_required(), "CI must run the network profile test as root");
        return Skip("network profiles need root".into()).report();
    }
    let (lab, up) = require_stack!("nginx", &["--tls", "on", "--net", "lan-1gbit"]);
    let url = up["url"].as_str().unwrap().to_string();
    let host = url.trim_start_matches("https://").split(':').next().unwrap().to_string();
    assert!(host.starts_with("10.214."), "{url}");
    assert!(passed(&up, "tls").contains(&format!("certificate for {host} verified")), "{up:#}");
    let id = up["id"].as_str().unwrap().to_string();
    let show = lab.json(&["stack", "show", &id, "--json"]);
    assert_eq!(show["tls"]["names"][0], host.as_str(), "{show:#}");
    let ca = up["cacert"].as_str().unwrap();
    let (report, code) = bench(&format!("{url}100k.bin"), &["--cacert", ca]);
    assert_eq!(code, Some(0), "{report:#}");
    assert_eq!(report["requests"]["completed"], 50, "{report:#}");
    lab.down(&id);
}
