//! A suite's stack knobs beyond the first ones (access_log, php_workers, keepalive_timeout,
//! keepalive_requests): read into the lab's knobs, and refused at the value's own line and
//! column when they are wrong or do not apply to the stack.

use loadlab_lab::knobs::{OnOff, Timeout};
use loadlab_suite::{parse, SuiteError};

/// A suite of one stack whose `[[stacks]]` table holds `knobs` (one `key = value` a line).
fn suite(stack: &str, knobs: &str) -> String {
    format!(
        "name = \"knobs\"\n\n[[stacks]]\nname = \"{stack}\"\n{knobs}\n\n[[workloads]]\n\
         name = \"hello.txt\"\n\n[[loads]]\nmodel = \"closed\"\nconcurrency = [1]\nrequests = 10\n"
    )
}

/// The message and `line:column` of the error `text` gives.
fn refused(text: &str) -> (String, (usize, usize)) {
    match parse(text, "k.toml") {
        Err(e @ SuiteError::Invalid { .. }) => {
            let at = e.location().expect("a located error");
            (e.to_string(), (at.line, at.column))
        }
        Err(other) => panic!("expected a located error, got {other}"),
        Ok(_) => panic!("accepted:\n{text}"),
    }
}

/// `knobs` on `stack` fail with `needle`, at the first occurrence of `at` in the text.
#[track_caller]
fn refused_at(stack: &str, knobs: &str, at: &str, needle: &str) {
    let text = suite(stack, knobs);
    let offset = text.find(at).unwrap_or_else(|| panic!("{at:?} is not in the text"));
    let line = text[..offset].lines().count() + usize::from(text[..offset].ends_with('\n'));
    let column = offset - text[..offset].rfind('\n').map_or(0, |i| i + 1) + 1;
    let (message, got) = refused(&text);
    assert_eq!(got, (line, column), "{message} (expected at {at:?})");
    assert!(message.contains(needle), "{message:?} lacks {needle:?}");
}

#[test]
fn the_new_knobs_are_read() {
    let knobs = "access_log = true\nworkers = 5\nphp_workers = 200\n\
                 keepalive_timeout = \"15s\"\nkeepalive_requests = 100";
    let parsed =
        parse(&suite("nginx-spawn-fcgi", knobs), "k.toml").unwrap_or_else(|e| panic!("{e}"));
    let k = parsed.stacks[0].knobs().unwrap();
    assert_eq!(k.access_log, OnOff::On);
    assert_eq!((k.workers, k.php_workers), (Some(5), Some(200)));
    assert_eq!(k.keepalive_timeout, Some("15s".parse::<Timeout>().unwrap()));
    assert_eq!(k.keepalive_requests, Some(100));

    let defaults = parse(&suite("nginx", ""), "k.toml").unwrap_or_else(|e| panic!("{e}"));
    let k = defaults.stacks[0].knobs().unwrap();
    assert_eq!(k.access_log, OnOff::Off);
    assert_eq!((k.php_workers, k.keepalive_timeout, k.keepalive_requests), (None, None, None));
    assert_eq!(k.keepalive_timeout().to_string(), "15s");
    assert_eq!(k.php_workers(), 5);
}

#[test]
fn bad_values_are_refused_where_they_are() {
    refused_at("nginx", "keepalive_timeout = \"soon\"", "\"soon\"", "keepalive_timeout: invalid");
    refused_at("nginx", "keepalive_timeout = \"0s\"", "\"0s\"", "above zero");
    refused_at("nginx", "keepalive_timeout = 15", "15", "expected a string");
    refused_at("nginx", "keepalive_requests = 0", "0\n", "keepalive_requests must be at least 1");
    refused_at("nginx-fpm", "php_workers = 0", "0\n", "php_workers must be at least 1");
    refused_at("nginx", "access_log = \"on\"", "\"on\"", "expected a boolean");
    refused_at("nginx", "acces_log = true", "acces_log", "unknown field `acces_log`");
}

#[test]
fn knobs_that_do_not_apply_are_refused_at_the_knob() {
    refused_at("nginx", "php_workers = 3", "3\n", "php_workers: nginx runs no PHP");
    refused_at(
        "apache-prefork-modphp",
        "php_workers = 3",
        "3\n",
        "php_workers: apache-prefork-modphp runs PHP inside Apache's workers (mod_php): set \
         workers",
    );
    refused_at(
        "nginx",
        "keepalive = false\nkeepalive_timeout = \"5s\"",
        "\"5s\"",
        "keepalive_timeout: keep-alive is off",
    );
    refused_at(
        "nginx",
        "keepalive = false\nkeepalive_requests = 2",
        "2\n",
        "keepalive_requests: keep-alive is off",
    );
    refused_at(
        "varnish-nginx-fpm",
        "keepalive_requests = 2",
        "2\n",
        "keepalive_requests: Varnish, in front in varnish-nginx-fpm, has no per-connection",
    );
    // What the front tier cannot limit, the tier behind may still time out.
    let text = suite("varnish-nginx-fpm", "keepalive_timeout = \"2s\"\naccess_log = true");
    parse(&text, "k.toml").unwrap_or_else(|e| panic!("{e}"));
}

/// The seeds' settings that these knobs made expressible.
#[test]
fn the_seed_suites_set_what_the_seeds_ran() {
    let knobs = |suite: &str, stack: &str| {
        let suite = loadlab_suite::builtin(suite).unwrap_or_else(|e| panic!("{e}"));
        suite.stacks.iter().find(|s| s.label == stack).expect(stack).knobs().unwrap().clone()
    };
    // 000: nginx's 5 workers; php-cgi children cut from 2000 to 200 (the suite says why).
    let fastcgi = knobs("php-modphp-vs-fastcgi", "nginx-spawn-fcgi");
    assert_eq!((fastcgi.workers, fastcgi.php_workers), (Some(5), Some(200)));
    // 003: keep-alive on with a 15 s timeout, gzip on, on both servers.
    for stack in ["nginx", "apache-prefork-modphp"] {
        let k = knobs("robots-autobench", stack);
        assert_eq!(k.keepalive_timeout.map(|t| t.as_millis()), Some(15_000), "{stack}");
        assert!(k.keepalive.is_on() && k.gzip.is_on(), "{stack}");
    }
    // 004: access logging on in every layer.
    for stack in ["wordpress-no-opcache", "wordpress-opcache", "wordpress-varnish-nginx-fpm"] {
        assert!(knobs("wordpress-cache-layers", stack).access_log.is_on(), "{stack}");
    }
}

/// `tls` and `http2` are read as `stack up --tls/--http2`, and refused at the key where the
/// front cannot serve them, with the lab's reason.
#[test]
fn tls_and_http2_are_read_and_refused_where_the_front_cannot() {
    let parsed = parse(&suite("apache-event-fpm", "tls = true\nhttp2 = true"), "k.toml")
        .unwrap_or_else(|e| panic!("{e}"));
    let k = parsed.stacks[0].knobs().unwrap();
    assert_eq!((k.tls, k.http2), (OnOff::On, OnOff::On));
    let plain = parse(&suite("nginx", ""), "k.toml").unwrap_or_else(|e| panic!("{e}"));
    let k = plain.stacks[0].knobs().unwrap();
    assert_eq!((k.tls, k.http2), (OnOff::Off, OnOff::Off));

    // At the value, as every knob is refused.
    refused_at(
        "apache-prefork-modphp",
        "http2 = true",
        "true",
        "http2: apache-prefork-modphp runs Apache mpm_prefork",
    );
    refused_at("mariadb", "tls = true", "true", "tls: mariadb serves no HTTP");
    refused_at("nginx", "http2 = true", "true", "h2c only");
}

/// `http3 = true` loads a Caddy stack with TLS over HTTP/3 (the stack set up as without it),
/// and is refused at its value where the stack serves none (nginx 1.22; Caddy without TLS),
/// beside `http2 = true`, and on an external target, as the other stack keys are.
#[test]
fn http3_is_read_on_caddy_with_tls_and_refused_where_no_h3_is_served() {
    let parsed = parse(&suite("caddy-fpm", "tls = true\nhttp3 = true"), "k.toml")
        .unwrap_or_else(|e| panic!("{e}"));
    let lab = parsed.stacks[0].lab_stack().unwrap();
    assert!(lab.http3);
    assert_eq!((lab.knobs.tls, lab.knobs.http2), (OnOff::On, OnOff::Off));
    let off = parse(&suite("caddy", "tls = true\nhttp3 = false"), "k.toml").unwrap();
    assert!(!off.stacks[0].lab_stack().unwrap().http3);

    refused_at(
        "nginx-fpm",
        "tls = true\nhttp3 = true",
        "true\n\n",
        "http3: nginx-fpm offers no HTTP/3: its front, nginx, has none",
    );
    refused_at("caddy", "http3 = true", "true", "http3: caddy serves HTTP/3 only with TLS on");
    refused_at(
        "caddy",
        "tls = true\nhttp2 = true\nhttp3 = true",
        "true\n\n",
        "give http2 = true or http3 = true, not both",
    );
    let external = suite("caddy", "").replace(
        "name = \"caddy\"\n",
        "url = \"https://127.0.0.1:9\"\nlabel = \"mine\"\nhttp3 = true\n",
    );
    let (message, _) = refused(&external);
    assert!(message.contains("http3 is a knob of the lab's stacks"), "{message}");
}

/// A suite file in a directory of its own, beside a config directory `conf` holding `files`
/// and a docroot `site` holding `site`: its path, for `parse`'s file name.
fn beside(files: &[&str], site: &[&str]) -> (tempfile::TempDir, String) {
    let dir = tempfile::tempdir().unwrap();
    for (sub, names) in [("conf", files), ("site", site)] {
        std::fs::create_dir(dir.path().join(sub)).unwrap();
        for name in names {
            std::fs::write(dir.path().join(sub).join(name), "# mine\n").unwrap();
        }
    }
    let file = dir.path().join("s.toml").display().to_string();
    (dir, file)
}

/// `config` and `docroot` name directories relative to the suite file; the lab's knobs get
/// them absolute, with the include points the directory fills.
#[test]
fn config_and_docroot_are_read_relative_to_the_suite_file() {
    let (dir, file) = beside(&["nginx-server.conf", "php.ini"], &["app.php"]);
    let text = suite("nginx-fpm", "config = \"conf\"\ndocroot = \"site\"");
    let parsed = parse(&text, &file).unwrap_or_else(|e| panic!("{e}"));
    let k = parsed.stacks[0].knobs().unwrap();
    let config = k.config.as_ref().expect("config");
    assert_eq!(config.dir, dir.path().canonicalize().unwrap().join("conf"));
    let names: Vec<&str> = config.files.iter().map(|p| p.file_name()).collect();
    assert_eq!(names, ["nginx-server.conf", "php.ini"]);
    assert_eq!(k.docroot.as_deref(), Some(&*dir.path().canonicalize().unwrap().join("site")));
}

/// Each mistake at its own key: a file that is no include point (named), a point the stack
/// has no tier for, a docroot file that would replace the lab's, a missing directory, and
/// either key on a server of the user's, which loadlab does not configure.
#[test]
fn config_and_docroot_mistakes_are_refused_at_their_key() {
    let at = |text: &str, file: &str, needle: &str, key: &str| {
        let e = parse(text, file).err().unwrap_or_else(|| panic!("accepted:\n{text}"));
        let offset = text.find(key).unwrap();
        let line = text[..offset].matches('\n').count() + 1;
        assert_eq!(e.location().map(|l| l.line), Some(line), "{e}");
        assert!(e.to_string().contains(needle), "{e} lacks {needle:?}");
    };
    let (_d, file) = beside(&["nginx-server.conf", "nginx.conf"], &[]);
    at(
        &suite("nginx", "config = \"conf\""),
        &file,
        "\"nginx.conf\" is not an include point",
        "config =",
    );
    let (_d, file) = beside(&["apache-vhost.conf"], &["robots.txt"]);
    at(
        &suite("nginx-fpm", "config = \"conf\""),
        &file,
        "config: apache-vhost.conf needs an Apache tier, and nginx-fpm has none",
        "config =",
    );
    at(
        &suite("nginx", "docroot = \"site\""),
        &file,
        "would replace the lab's robots.txt",
        "docroot =",
    );
    at(&suite("nginx", "docroot = \"nowhere\""), &file, "docroot: ", "docroot =");
    at(
        &suite("mariadb", "docroot = \"site\""),
        &file,
        "docroot: mariadb serves no HTTP",
        "docroot =",
    );
    let external = "name = \"x\"\n[[stacks]]\nurl = \"http://127.0.0.1:1\"\nlabel = \"mine\"\n\
                    config = \"conf\"\n[[workloads]]\nname = \"hello.txt\"\n[[loads]]\n\
                    model = \"closed\"\nconcurrency = [1]\nrequests = 10\n";
    at(external, &file, "config is a knob of the lab's stacks", "config =");
}

/// `host = "ssh://..."` puts a stack on a lab host, written as the remote crate
/// writes it; anything else is refused at its value, and an external target has no host.
#[test]
fn a_stack_on_a_lab_host_is_read_and_a_bad_url_refused_at_its_value() {
    let parsed = parse(&suite("nginx", "host = \"ssh://root@lab1:2222/\""), "k.toml")
        .unwrap_or_else(|e| panic!("{e}"));
    let lab = parsed.stacks[0].lab_stack().unwrap();
    assert_eq!(lab.host.as_deref(), Some("ssh://root@lab1:2222"));
    let here = parse(&suite("nginx", ""), "k.toml").unwrap_or_else(|e| panic!("{e}"));
    assert_eq!(here.stacks[0].lab_stack().unwrap().host, None);

    refused_at("nginx", "host = \"http://lab1\"", "\"http://lab1\"", "host: \"http://lab1\"");
    refused_at("nginx", "host = \"ssh://lab1/x\"", "\"ssh://lab1/x\"", "a path, query or");
    let external = "name = \"k\"\n[[stacks]]\nurl = \"http://127.0.0.1:9\"\nlabel = \"mine\"\n\
                    host = \"ssh://lab1\"\n[[workloads]]\nname = \"hello.txt\"\n[[loads]]\n\
                    model = \"closed\"\nconcurrency = [1]\nrequests = 10\n";
    let (message, _) = refused(external);
    assert!(message.contains("host"), "{message}");
}

/// `listen` binds the front tier where clients on other hosts reach it; a value that
/// is no address, the database stack, and loopback behind a profile are refused at the value.
#[test]
fn listen_is_read_and_a_bad_address_refused_at_its_value() {
    for (written, read) in [("0.0.0.0", "0.0.0.0"), ("[::]", "::"), ("10.215.0.2", "10.215.0.2")] {
        let text = suite("nginx-fpm", &format!("listen = \"{written}\"\nhost = \"ssh://lab1\""));
        let parsed = parse(&text, "k.toml").unwrap_or_else(|e| panic!("{e}"));
        let knobs = parsed.stacks[0].knobs().unwrap();
        assert_eq!(knobs.listen, Some(read.parse().unwrap()), "{written}");
    }
    let here = parse(&suite("nginx", ""), "k.toml").unwrap_or_else(|e| panic!("{e}"));
    assert_eq!(here.stacks[0].knobs().unwrap().listen, None, "127.0.0.1 by default");

    refused_at("nginx", "listen = \"lab1\"", "\"lab1\"", "listen: \"lab1\" is not an IP address");
    refused_at("nginx", "listen = \"10.0.0.1:80\"", "\"10.0.0.1:80\"", "not an IP address");
    refused_at("mariadb", "listen = \"0.0.0.0\"", "\"0.0.0.0\"", "granted from loopback only");
    refused_at(
        "nginx",
        "net = \"lan-100mbit\"\nlisten = \"127.0.0.1\"",
        "\"127.0.0.1\"",
        "beyond loopback",
    );
}
