//! Snapshot tests of every stack's generated configs, with the run directory and ports
//! replaced by placeholders so that the snapshots hold only what loadlab decides.
//! `LOADLAB_UPDATE_SNAPSHOTS=1 cargo test -p loadlab-lab` rewrites them after a deliberate
//! change; review the diff before committing it.

use std::path::{Path, PathBuf};

use crate::catalog::STACKS;
use crate::knobs::{Knobs, OnOff};
use crate::servers::{all_configs, Plan};

pub(crate) fn plan(stack: &'static crate::Stack, knobs: Knobs, root: bool) -> Plan {
    let tiers = stack.tiers(&knobs);
    let tcp: Vec<&'static str> = tiers
        .iter()
        .filter(|t| !matches!(t, crate::Tier::PhpFpm | crate::Tier::SpawnFcgi))
        .map(|t| t.name())
        .collect();
    let ports = crate::ports::free(tcp.len()).unwrap();
    Plan {
        id: format!("{}-1", stack.name),
        stack,
        knobs,
        run: std::env::temp_dir().join(format!("loadlab-snap-{}", std::process::id())),
        ports: tcp.into_iter().zip(ports).collect(),
        run_as: root.then(|| ("www-data".to_string(), "www-data".to_string())),
        apache_modules: "/usr/lib/apache2/modules".into(),
        mod_php: "/usr/lib/apache2/modules/libphp8.2.so".into(),
        net: None,
        listen: None,
    }
}

/// Every generated file of the plan, with paths and ports filtered out.
fn render(plan: &Plan) -> String {
    let mut out = String::new();
    for (path, text) in all_configs(plan) {
        let mut text = text.replace(&plan.run.display().to_string(), "$RUN");
        for (tier, port) in &plan.ports {
            text = text.replace(&port.to_string(), &format!("$PORT_{}", tier.replace('-', "_")));
        }
        out.push_str(&format!("=== {path} ===\n{text}\n"));
    }
    out
}

fn snapshot_path(name: &str) -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("snapshots").join(format!("{name}.snap"))
}

fn assert_snapshot(name: &str, actual: &str) {
    let path = snapshot_path(name);
    let expected = std::fs::read_to_string(&path).unwrap_or_default();
    if expected == actual {
        return;
    }
    if std::env::var_os("LOADLAB_UPDATE_SNAPSHOTS").is_some_and(|v| v == "1") {
        std::fs::write(&path, actual).unwrap();
        return;
    }
    let first = expected.lines().zip(actual.lines()).position(|(a, b)| a != b);
    panic!(
        "{} differs from the generated configs (first differing line: {:?}); \
         LOADLAB_UPDATE_SNAPSHOTS=1 rewrites it.\n--- generated ---\n{actual}",
        path.display(),
        first.map(|i| i + 1),
    );
}

#[test]
fn every_stack_with_default_knobs() {
    for stack in STACKS {
        let knobs = Knobs::default();
        assert_snapshot(stack.name, &render(&plan(stack, knobs, true)));
    }
}

#[test]
fn knobs_change_the_configs() {
    let knobs = Knobs {
        keepalive: OnOff::Off,
        gzip: OnOff::On,
        opcache: Some(OnOff::Off),
        db: Some(OnOff::On),
        workers: Some(3),
        ..Knobs::default()
    };
    // Caddy has no keep-alive off: gzip here (its workers are GOMAXPROCS, in its
    // environment rather than a config).
    let caddy = Knobs { keepalive: OnOff::On, db: None, ..knobs.clone() };
    let stack = crate::stack("caddy-fpm").unwrap();
    assert_snapshot("caddy-fpm-knobs", &render(&plan(stack, caddy, true)));
    for name in [
        "nginx-fpm",
        "apache-prefork-modphp",
        "apache-event-fpm",
        "varnish-nginx-fpm",
        "nginx-proxy-apache",
    ] {
        let stack = crate::stack(name).unwrap();
        assert_snapshot(&format!("{name}-knobs"), &render(&plan(stack, knobs.clone(), true)));
    }
}

/// A profiled run's PHP stacks read the excimer prepend first on every request, mod_php and
/// php-fpm alike; without the knob no PHP config names it.
#[test]
fn the_excimer_knob_prepends_the_profiler_to_every_php_request() {
    let on = Knobs { excimer: OnOff::On, ..Knobs::default() };
    assert_snapshot(
        "nginx-fpm-excimer",
        &render(&plan(crate::stack("nginx-fpm").unwrap(), on.clone(), true)),
    );
    let modphp = render(&plan(crate::stack("apache-prefork-modphp").unwrap(), on, true));
    assert!(modphp.contains("auto_prepend_file = $RUN/profile/excimer.php\n"), "{modphp}");
    for stack in STACKS {
        let text = render(&plan(stack, Knobs::default(), true));
        assert!(!text.contains("excimer"), "{}: {text}", stack.name);
    }
}

#[test]
fn as_an_ordinary_user_no_user_switching() {
    let stack = crate::stack("nginx-fpm").unwrap();
    let text = render(&plan(stack, Knobs::default(), false));
    assert!(!text.contains("www-data"), "{text}");
}

#[test]
fn every_placeholder_is_filled() {
    for stack in STACKS {
        let text = render(&plan(stack, Knobs::default(), true));
        assert!(!text.contains("{{"), "{}: {text}", stack.name);
    }
}

/// The knobs the seeds' experiments set beyond the first ones: access logs, keep-alive's
/// timeout and request limit, and PHP's process count apart from the web tier's.
#[test]
fn access_log_keepalive_limits_and_php_workers() {
    let knobs = Knobs {
        access_log: OnOff::On,
        keepalive_timeout: Some("1500ms".parse().unwrap()),
        keepalive_requests: Some(2),
        workers: Some(3),
        php_workers: Some(7),
        ..Knobs::default()
    };
    for name in ["nginx-fpm", "apache-event-fpm", "nginx-proxy-apache", "caddy-fpm"] {
        let stack = crate::stack(name).unwrap();
        // Caddy (Go's server) has no per-connection request limit.
        let limit = if name == "caddy-fpm" { None } else { knobs.keepalive_requests };
        let knobs = Knobs { keepalive_requests: limit, ..knobs.clone() };
        let knobs = if stack.has_php_pool() {
            knobs.clone()
        } else {
            Knobs { php_workers: None, ..knobs.clone() }
        };
        assert_eq!(stack.knob_problem(&knobs), None);
        assert_snapshot(&format!("{name}-logs-limits"), &render(&plan(stack, knobs, true)));
    }
}

/// TLS and HTTP/2 on every kind of front: nginx (`listen ... ssl http2`), Apache event with
/// mod_ssl and mod_http2 (and h2c), Apache prefork with mod_ssl alone, and hitch in front of
/// Varnish (whose listener then takes the PROXY protocol, with HTTP/2 on).
#[test]
fn tls_and_http2() {
    let knobs = |tls, http2| Knobs {
        tls,
        http2,
        // hitch's workers follow the stack's CPUs: pinned, the snapshot does not depend on
        // the machine's count.
        cpus: Some("0-1".parse().unwrap()),
        ..Knobs::default()
    };
    for (name, tls, http2, snap) in [
        ("nginx-fpm", OnOff::On, OnOff::On, "nginx-fpm-tls-http2"),
        ("apache-event-fpm", OnOff::On, OnOff::On, "apache-event-fpm-tls-http2"),
        ("apache-event-fpm", OnOff::Off, OnOff::On, "apache-event-fpm-h2c"),
        ("apache-prefork-modphp", OnOff::On, OnOff::Off, "apache-prefork-modphp-tls"),
        ("varnish-nginx-fpm", OnOff::On, OnOff::On, "varnish-nginx-fpm-tls-http2"),
        ("caddy-fpm", OnOff::On, OnOff::On, "caddy-fpm-tls-http2"),
        ("caddy", OnOff::On, OnOff::Off, "caddy-tls"),
        ("caddy", OnOff::Off, OnOff::On, "caddy-h2c"),
    ] {
        let stack = crate::stack(name).unwrap();
        let knobs = knobs(tls, http2);
        assert_eq!(stack.knob_problem(&knobs), None, "{snap}");
        assert_snapshot(snap, &render(&plan(stack, knobs, true)));
    }
}

/// The user's files at their include points (see `own`): every point of each kind of tier,
/// from a directory whose path is fixed so that the comments naming it are stable. The
/// user's php.ini is no line of a config but a directory PHP scans last: shown as the
/// environment every PHP tier gets.
#[test]
fn the_users_files_at_their_include_points() {
    use crate::own::{Config, Point};
    for (name, files) in [
        ("nginx-fpm", vec![Point::NginxHttp, Point::NginxServer, Point::PhpFpmPool, Point::PhpIni]),
        ("apache-event-fpm", vec![Point::Apache, Point::ApacheVhost, Point::PhpFpmPool]),
        ("apache-prefork-modphp", vec![Point::ApacheVhost, Point::PhpIni]),
        ("varnish-nginx-fpm", vec![Point::VarnishVcl, Point::NginxServer]),
    ] {
        let stack = crate::stack(name).unwrap();
        let config = Config { dir: "/home/you/conf".into(), files };
        let knobs = Knobs { config: Some(config), ..Knobs::default() };
        assert_eq!(stack.knob_problem(&knobs), None, "{name}");
        let plan = plan(stack, knobs, true);
        let mut text = render(&plan);
        let mut command = std::process::Command::new("php");
        crate::servers::php::set_env(&plan, &mut command);
        for (key, value) in command.get_envs() {
            let value = value.unwrap_or_default().to_string_lossy();
            let value = value.replace(&plan.run.display().to_string(), "$RUN");
            text.push_str(&format!("=== env {} ===\n{value}\n", key.to_string_lossy()));
        }
        assert_snapshot(&format!("{name}-own"), &text);
    }
}

/// `--listen`: the front tier alone binds the address (IPv6 in brackets where nginx, Apache and
/// Varnish write a host before its port, bare in hitch's own brackets), every tier behind it
/// 127.0.0.1; the URL and the status pages name the public address.
#[test]
fn listen_binds_the_front_alone() {
    use loadlab_net::host::Exposure;
    let exposure = |bind: &str, public: &str| Exposure {
        bind: bind.parse().unwrap(),
        public: public.parse().unwrap(),
        primary: bind != public,
        interface: "eth0".into(),
        shaping: None,
    };
    let stack = crate::stack("nginx-proxy-apache").unwrap();
    let mut p = plan(stack, Knobs::default(), true);
    p.listen = Some(exposure("::", "fd00::2"));
    let text = render(&p);
    assert!(text.contains("listen [::]:$PORT_nginx"), "{text}");
    assert!(text.contains("Listen 127.0.0.1:$PORT_apache"), "{text}");
    assert!(text.contains("allow fd00::2;") && text.contains("Require ip fd00::2"), "{text}");
    assert_eq!(p.url(), format!("http://[fd00::2]:{}/", p.port("nginx")));
    assert_eq!(p.addr("apache").ip(), loadlab_net::host::LOOPBACK);
    assert_eq!(p.addr("nginx").ip().to_string(), "fd00::2");

    let tls = Knobs { tls: OnOff::On, ..Knobs::default() };
    let mut p = plan(crate::stack("varnish-nginx-fpm").unwrap(), tls, true);
    p.listen = Some(exposure("10.0.0.2", "10.0.0.2"));
    let text = render(&p);
    assert!(text.contains("frontend = \"[10.0.0.2]:$PORT_hitch\""), "{text}");
    assert!(text.contains("listen 127.0.0.1:$PORT_nginx"), "{text}");
    assert_eq!(crate::cert::names(&p)[0], "10.0.0.2");
}
