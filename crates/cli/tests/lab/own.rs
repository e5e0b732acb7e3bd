//! The user's own configuration and docroot on real stacks (`stack up --config DIR --docroot
//! DIR`), observed from outside the servers: a header each web server adds because a snippet
//! says so, a php.ini value read back by a PHP page of the user's docroot, a php-fpm pool size
//! and an Apache worker limit seen in their status pages; a syntax error in each server's
//! file fails the start with exit 5 and the server's own words, naming the user's file and
//! line, before anything starts; mistakes of the user's are exit 2.

use std::io::{Read, Write};
use std::net::TcpStream;
use std::path::Path;
use std::time::Duration;

use serde_json::Value;
use tempfile::TempDir;

use super::{require_stack, TestLab};
use crate::support::skip;

/// A directory holding `files` (name, contents), for `--config` or `--docroot`.
fn dir_of(files: &[(&str, &str)]) -> TempDir {
    let dir = tempfile::Builder::new().prefix("loadlab-own-").tempdir().expect("temp dir");
    for (name, text) in files {
        let path = dir.path().join(name);
        std::fs::create_dir_all(path.parent().unwrap()).unwrap();
        std::fs::write(path, text).unwrap();
    }
    dir
}

fn arg(dir: &TempDir) -> &str {
    dir.path().to_str().expect("a UTF-8 temp path")
}

/// `GET path` on the instance `up` in HTTP/1.0, so that the body ends with the connection
/// (no chunks to undo): the head and the body.
fn get(up: &Value, path: &str) -> (String, String) {
    let url = up["url"].as_str().expect("url");
    let addr = url.trim_start_matches("http://").trim_end_matches('/');
    let mut stream = TcpStream::connect(addr).expect("connect");
    stream.set_read_timeout(Some(Duration::from_secs(10))).unwrap();
    let request = format!("GET {path} HTTP/1.0\r\nHost: {addr}\r\n\r\n");
    stream.write_all(request.as_bytes()).unwrap();
    let mut answer = Vec::new();
    stream.read_to_end(&mut answer).expect("read the answer");
    let answer = String::from_utf8_lossy(&answer).into_owned();
    let (head, body) = answer.split_once("\r\n\r\n").unwrap_or((&answer, ""));
    assert!(head.starts_with("HTTP/1.1 200"), "GET {path}: {head}");
    (head.to_string(), body.to_string())
}

/// The pool readings of `tier` over a second of `stack sample`: php-fpm's from its status
/// page, Apache's MaxRequestWorkers as the sampler takes it.
fn pool_max(lab: &TestLab, up: &Value, tier: &str) -> u64 {
    let id = up["id"].as_str().expect("id");
    let sampled = lab.json(&["stack", "sample", id, "-d", "1s", "--interval", "200ms", "--json"]);
    let samples = sampled["samples"].as_array().expect("samples");
    let pools: Vec<&Value> = samples
        .iter()
        .flat_map(|s| s["tiers"].as_array().expect("tiers"))
        .filter(|t| t["tier"] == tier)
        .map(|t| &t["pool"])
        .filter(|p| p["answered"] == true)
        .collect();
    assert!(!pools.is_empty(), "no answered pool reading of {tier}: {sampled:#}");
    pools[pools.len() - 1]["max"].as_u64().expect("max")
}

/// What `stack show --json` captured, as `what: text` pairs.
fn captured(lab: &TestLab, up: &Value) -> Vec<(String, String)> {
    let show = lab.json(&["stack", "show", up["id"].as_str().expect("id"), "--json"]);
    show["captured"]
        .as_array()
        .expect("captured")
        .iter()
        .map(|c| (c["what"].as_str().unwrap().to_string(), c["text"].as_str().unwrap().into()))
        .collect()
}

const INI_PHP: &str = "<?php echo 'memory_limit=', ini_get('memory_limit'), \"\\n\";\n";

#[test]
fn nginx_fpm_serves_the_users_header_php_ini_pool_size_and_files() {
    let config = dir_of(&[
        ("nginx-server.conf", "# mine\nadd_header X-Mine yes always;\n"),
        ("php.ini", "memory_limit = 77M\n"),
        ("php-fpm-pool.conf", "pm.max_children = 3\n"),
    ]);
    let site = dir_of(&[("mine/ini.php", INI_PHP), ("mine/note.txt", "mine\n")]);
    let (lab, up) =
        require_stack!("nginx-fpm", &["--config", arg(&config), "--docroot", arg(&site)]);
    // The servers' own tests ran before the start, and verify passed on the lab's files.
    assert!(up["phases_ms"]["check"].is_u64(), "{up:#}");
    let files = &up["knobs"]["config"]["files"];
    assert_eq!(files, &serde_json::json!(["nginx-server.conf", "php-fpm-pool.conf", "php.ini"]));

    let (head, body) = get(&up, "/hello.txt");
    assert!(head.contains("\r\nX-Mine: yes"), "{head}");
    assert_eq!(body, "hello, world!");
    let (head, body) = get(&up, "/mine/ini.php");
    assert!(head.contains("\r\nX-Mine: yes"), "{head}");
    assert!(body.contains("memory_limit=77M"), "{body}");
    assert_eq!(get(&up, "/mine/note.txt").1, "mine\n");
    // php-fpm's status page counts the pool's processes: 3, not the lab's 5.
    assert_eq!(pool_max(&lab, &up, "php-fpm"), 3);

    // Captured as the instance runs them: copies, whatever becomes of the originals.
    std::fs::write(config.path().join("php.ini"), "memory_limit = 1M\n").unwrap();
    let captured = captured(&lab, &up);
    let find = |what: &str| {
        let found = captured.iter().find(|(w, _)| w.starts_with(what));
        found.map(|(_, t)| t.as_str()).unwrap_or_else(|| panic!("no {what}: {captured:?}"))
    };
    assert_eq!(find("php.ini (yours, from "), "memory_limit = 77M\n");
    assert!(find("nginx -T").contains("add_header X-Mine yes always;"));
    assert!(find("php-fpm -tt").contains("pm.max_children = 3"));
    let manifest = find("docroot (yours, from ");
    let bytes = INI_PHP.len() + "mine\n".len();
    assert!(manifest.starts_with(&format!("# 2 files, {bytes} bytes, ")), "{manifest}");
    assert!(manifest.contains("  mine/ini.php\n"), "{manifest}");
    assert_eq!(get(&up, "/mine/ini.php").1, "memory_limit=77M\n");
}

#[test]
fn apache_takes_the_users_header_and_worker_limit_and_mod_php_their_php_ini() {
    let config = dir_of(&[
        (
            "apache.conf",
            "LoadModule headers_module /usr/lib/apache2/modules/mod_headers.so\n\
             MaxRequestWorkers 40\n",
        ),
        (
            "apache-vhost.conf",
            "Header set X-Mine yes\n<Directory ${LOADLAB_DOCROOT}/mine>\n    \
             AllowOverride FileInfo\n</Directory>\n",
        ),
        ("php.ini", "memory_limit = 66M\n"),
    ]);
    let site = dir_of(&[("mine/ini.php", INI_PHP)]);
    let (lab, up) = require_stack!(
        "apache-prefork-modphp",
        &["--config", arg(&config), "--docroot", arg(&site)]
    );
    let (head, body) = get(&up, "/mine/ini.php");
    assert!(head.contains("\r\nX-Mine: yes"), "{head}");
    assert!(body.contains("memory_limit=66M"), "{body}");
    // The sampler judges the pool by the user's MaxRequestWorkers, not the lab's 150.
    assert_eq!(pool_max(&lab, &up, "apache"), 40);
}

#[test]
fn varnish_runs_the_users_vcl_after_the_labs() {
    let vcl = "vcl 4.1;\n\nsub vcl_deliver {\n    set resp.http.X-Mine = \"vcl\";\n}\n";
    let config = dir_of(&[("varnish.vcl", vcl)]);
    // Verify checked the cache hit and the probe's pass, which the user's VCL left alone.
    let (_lab, up) = require_stack!("varnish-nginx-fpm", &["--config", arg(&config)]);
    let (head, _) = get(&up, "/hello.txt");
    assert!(head.contains("\r\nX-Mine: vcl"), "{head}");
}

/// One mistake in each server's file: the start fails before any server runs, exit 5, with
/// the server's own message naming the user's file and its line.
#[test]
fn a_syntax_error_fails_the_start_with_the_servers_message_and_line() {
    let cases: [(&str, &str, &str, &[&str]); 5] = [
        (
            "nginx",
            "nginx-server.conf",
            "# mine\nadd_headr X-Mine yes;\n",
            &["nginx refused your configuration (nginx -t): nginx: [emerg] unknown directive \
               \"add_headr\" in DIR/nginx-server.conf:2"],
        ),
        (
            "apache-event-fpm",
            "apache-vhost.conf",
            "Header set X-Mine yes\n",
            &["apache refused your configuration (apache2 -t): AH00526: Syntax error on line 1 \
               of DIR/apache-vhost.conf: Invalid command 'Header'"],
        ),
        (
            "nginx-fpm",
            "php-fpm-pool.conf",
            "pm.max_children = 3\npm.max_childre = 4\n",
            &[
                "php-fpm refused your configuration (php-fpm -t): ",
                "ERROR: [DIR/php-fpm-pool.conf:2] unknown entry 'pm.max_childre'",
            ],
        ),
        (
            "apache-prefork-modphp",
            "php.ini",
            "memory_limit = 66M\nfoo = \"unclosed\nbar = 1\n",
            &[
                "apache refused your configuration (php -v): PHP:  syntax error, ",
                " in DIR/php.ini on line ",
            ],
        ),
        (
            "varnish-nginx-fpm",
            "varnish.vcl",
            "sub vcl_deliver {\n    set resp.http.X-Mine = ;\n}\n",
            &["varnish refused your configuration (varnishd -C): Unknown token ';' when looking \
               for STRING ('DIR/varnish.vcl' Line 2 Pos"],
        ),
    ];
    let lab = TestLab::new();
    for (stack, file, text, needles) in cases {
        let config = dir_of(&[(file, text)]);
        let output = lab.run(&["stack", "up", stack, "--config", arg(&config)]);
        let stderr = String::from_utf8_lossy(&output.stderr);
        if output.status.code() == Some(4) {
            skip::missing(stack, stderr.trim()).report();
            continue;
        }
        assert_eq!(output.status.code(), Some(5), "{stack}: {stderr}");
        let first = stderr.lines().next().unwrap_or_default();
        assert!(first.starts_with("loadlab: error: "), "{stderr}");
        for needle in needles {
            let needle = needle.replace("DIR", arg(&config));
            assert!(first.contains(&needle), "{stack}: {needle:?} not in\n{stderr}");
        }
        // The server's whole answer follows, and nothing was left running.
        assert!(stderr.contains(" said ---\n"), "{stderr}");
        let list = lab.json(&["stack", "list", "--json"]);
        assert_eq!(list["instances"], serde_json::json!([]), "{stack}: {list:#}");
    }
}

/// Mistakes of the user's, refused before anything starts (no server is needed): a file that
/// is no include point, a point the stack has no tier for, a docroot file that would replace
/// one of the lab's, a directory that is not there.
#[test]
fn the_users_mistakes_are_usage_errors_naming_the_file() {
    let lab = TestLab::new();
    let unknown = dir_of(&[("nginx-http.conf", ""), ("nginx.conf", "")]);
    let apache = dir_of(&[("apache.conf", "")]);
    let clash = dir_of(&[("robots.txt", "mine")]);
    let missing = Path::new("/nonexistent/loadlab-own");
    for (args, needle) in [
        (
            vec!["stack", "up", "nginx", "--config", arg(&unknown)],
            "\"nginx.conf\" is not an include point".to_string(),
        ),
        (
            vec!["stack", "up", "nginx-fpm", "--config", arg(&apache)],
            "--config: apache.conf needs an Apache tier, and nginx-fpm has none (its tiers: \
             nginx, php-fpm)"
                .to_string(),
        ),
        (
            vec!["stack", "up", "nginx", "--docroot", arg(&clash)],
            format!("--docroot: {}/robots.txt would replace the lab's robots.txt", arg(&clash)),
        ),
        (
            vec!["stack", "up", "nginx", "--docroot", missing.to_str().unwrap()],
            "--docroot: /nonexistent/loadlab-own: No such file".to_string(),
        ),
    ] {
        let output = lab.run(&args);
        let stderr = String::from_utf8_lossy(&output.stderr);
        assert_eq!(output.status.code(), Some(2), "{args:?}: {stderr}");
        assert_eq!(stderr.lines().count(), 1, "{stderr}");
        assert!(stderr.contains(&needle), "{needle:?} not in {stderr}");
    }
}
