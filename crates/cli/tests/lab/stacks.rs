//! Every built-in stack, started once: up and verified (every workload that applies, named
//! here independently of the lab's own list), a short `loadlab bench -n 200` through it
//! while `loadlab stack sample` watches its tiers, and down with no process left. Some run
//! behind a network profile (each profile at least once: a veth, and the delay path this
//! machine takes by default, with and without loss: the stage here and in CI, netem where the
//! kernel has it), where the same must hold through the link and nothing of it may be left.

use std::process::{Child, Stdio};
use std::time::Duration;

use serde_json::Value;

use super::{pids, require_stack, running, TestLab};
use crate::support::{drain, run_json, wait_until};

pub(super) const STATIC: &[&str] = &["hello.txt", "robots.txt", "20k.bin", "100k.bin", "1m.bin"];
pub(super) const PHP: &[&str] = &["hello.php", "phpinfo.php"];
const DB: &[&str] = &["country.php", "complex.php"];
/// What every HTTP stack also checks besides its workloads.
pub(super) const ASPECTS: &[&str] = &["keepalive", "gzip", "access_log", "loopback"];

/// The load a test applies: a path and what every answer must hold.
pub(super) struct Load {
    path: &'static str,
    expect: &'static [&'static str],
}

/// A megabyte file: enough bytes that even a cache in front burns measurable CPU.
pub(super) const BIG_FILE: Load = Load { path: "/1m.bin", expect: &[] };
/// phpinfo(): seed 000's page, heavy enough (80 KB) that PHP's CPU shows in the samples.
pub(super) const PHPINFO: Load =
    Load { path: "/phpinfo.php", expect: &["--expect-contains", "PHP Version"] };
const FRONT_PAGE: Load = Load { path: "/", expect: &["--expect-contains", "loadlab post 5"] };

/// Checks `up`'s verify, loads the stack while sampling it, takes it down, and checks that
/// nothing of it is left.
pub(super) fn exercise(lab: TestLab, up: Value, checks: &[&[&str]], load: Option<Load>) {
    let id = up["id"].as_str().expect("id").to_string();
    let names: Vec<&str> = up["checks"]
        .as_array()
        .expect("checks")
        .iter()
        .map(|c| c["workload"].as_str().unwrap())
        .collect();
    let expected: Vec<&str> = checks.iter().flat_map(|c| c.iter().copied()).collect();
    assert_eq!(sorted(names), sorted(expected), "{up:#}");
    assert!(up["checks"].as_array().unwrap().iter().all(|c| c["ok"] == true), "{up:#}");
    // The 3 s target is measured by bench/lab-cycles.sh on an idle machine; here other tests
    // share the CPUs, so only a gross regression fails.
    assert!(up["up_ms"].as_u64().expect("up_ms") < 20_000, "{up:#}");
    let pids = pids(&up);
    assert!(!pids.is_empty(), "{up:#}");

    let again = lab.json(&["stack", "verify", &id, "--json"]);
    assert_eq!(again["ok"], true, "{again:#}");
    check_captured(&lab.json(&["stack", "show", &id, "--json"]), &up);

    let sampler = start_sampler(&lab, &id, &[]);
    if let Some(load) = &load {
        let url = format!("{}{}", up["url"].as_str().unwrap().trim_end_matches('/'), load.path);
        let mut args =
            vec!["bench", url.as_str(), "-n", "200", "-c", "4", "--expect-status", "200"];
        args.extend_from_slice(load.expect);
        // Over TLS the engine trusts the instance's own CA, as a suite's run does.
        if let Some(ca) = up["cacert"].as_str() {
            args.extend_from_slice(&["--cacert", ca]);
        }
        let (report, output) = run_json(&args);
        assert_eq!(output.status.code(), Some(0), "{report:#}");
        assert_eq!(report["requests"]["completed"], 200, "{report:#}");
        assert_eq!(report["requests"]["failed"], 0, "{report:#}");
    } else {
        std::thread::sleep(Duration::from_millis(1200));
    }
    let samples = stop_sampler(sampler);
    check_samples(&samples, &up, load.is_some());

    lab.down(&id);
    assert!(
        wait_until(Duration::from_secs(30), || running(&pids).is_empty()),
        "left: {:?}",
        running(&pids)
    );
    if let Some(link) = up["net"].as_object() {
        // The device's name may already be another test's link (the lowest free index is
        // taken at once): the namespace, which is this lab's alone, and the stage are checked;
        // a veth goes with its namespace end, and a stage ends only when its TUN is deleted.
        let ns = link["namespace"].as_str().unwrap();
        assert!(!std::path::Path::new("/run/netns").join(ns).exists(), "{ns} left");
        if let Some(stage) = link["stage"].as_u64() {
            assert!(
                wait_until(Duration::from_secs(5), || running(&[stage as i32]).is_empty()),
                "the delay stage {stage} outlived its link"
            );
        }
    }
    let run_dir = lab.json(&["stack", "list", "--json"]);
    assert_eq!(run_dir["instances"], serde_json::json!([]), "{run_dir:#}");
}

/// `stack show` captured every tier's config and versions, and none of it failed.
fn check_captured(show: &Value, up: &Value) {
    let captured = show["captured"].as_array().expect("captured");
    for tier in up["tiers"].as_array().expect("tiers") {
        assert!(
            captured.iter().any(|c| c["tier"] == tier["name"]),
            "no capture of {tier}: {show:#}"
        );
    }
    for c in captured {
        let text = c["text"].as_str().expect("text");
        assert!(!text.trim().is_empty() && !text.starts_with("capture failed"), "{c:#}");
    }
}

fn sorted(mut v: Vec<&str>) -> Vec<&str> {
    v.sort_unstable();
    v
}

/// `stack sample` (with `more` arguments) in the background, returned once it has taken its
/// first reading (it says so on stderr).
fn start_sampler(
    lab: &TestLab,
    id: &str,
    more: &[&str],
) -> (Child, std::thread::JoinHandle<Vec<u8>>) {
    let mut command =
        lab.command(&["stack", "sample", id, "-d", "60s", "--interval", "250ms", "--json"]);
    command.args(more);
    command.stdout(Stdio::piped()).stderr(Stdio::piped());
    let mut child = command.spawn().expect("spawn stack sample");
    let stdout = drain(child.stdout.take().unwrap());
    let mut stderr = std::io::BufReader::new(child.stderr.take().unwrap());
    let mut line = String::new();
    std::io::BufRead::read_line(&mut stderr, &mut line).expect("read the sampler's stderr");
    assert!(line.starts_with("sampling"), "stack sample said {line:?}");
    (child, stdout)
}

/// Ctrl-C to the sampler, which then prints its series.
fn stop_sampler((mut child, stdout): (Child, std::thread::JoinHandle<Vec<u8>>)) -> Value {
    crate::support::sys::signal_child(&child, libc::SIGINT).expect("SIGINT to stack sample");
    let status = child.wait().expect("wait for stack sample");
    assert!(status.success(), "stack sample: {status}");
    let out = stdout.join().unwrap();
    serde_json::from_slice(&out)
        .unwrap_or_else(|e| panic!("{e}: {}", String::from_utf8_lossy(&out)))
}

/// Every sample covers every tier, each with live processes and memory; under load the
/// stack used CPU.
fn check_samples(samples: &Value, up: &Value, loaded: bool) {
    let samples = samples["samples"].as_array().expect("samples");
    assert!(!samples.is_empty());
    let tiers = up["tiers"].as_array().map_or(0, Vec::len);
    let mut cpu = 0.0;
    for sample in samples {
        let per_tier = sample["tiers"].as_array().expect("tiers");
        assert_eq!(per_tier.len(), tiers.max(per_tier.len()), "{sample:#}");
        for tier in per_tier {
            assert!(tier["processes"].as_u64().unwrap() >= 1, "{sample:#}");
            assert!(tier["rss_bytes"].as_u64().unwrap() > 0, "{sample:#}");
            cpu += tier["cpu_user_pct"].as_f64().unwrap() + tier["cpu_sys_pct"].as_f64().unwrap();
        }
        assert!(sample["machine"]["load1"].as_f64().is_some(), "{sample:#}");
    }
    if loaded {
        assert!(cpu > 0.0, "no CPU sampled under load: {samples:#?}");
    }
}

/// nginx-fpm brought up with `--profile` in a lab of its own: the lab, its `up`, its id and
/// its phpinfo page's URL; `None` (said) where php-excimer or perf is missing.
fn profiled_nginx_fpm() -> Option<(TestLab, Value, String, String)> {
    use loadlab_lab::programs::{EXCIMER, PERF};
    let (lab, up) = match TestLab::up_or_skip("nginx-fpm", &["--profile"]) {
        Ok(started) => started,
        Err(skip) => {
            skip.report();
            return None;
        }
    };
    if let Some(need) = [PERF, EXCIMER].iter().find(|need| need.find().is_err()) {
        crate::support::skip::missing("nginx-fpm --profile", need.package).report();
        return None;
    }
    let id = up["id"].as_str().expect("id").to_string();
    let url = format!("{}{}", up["url"].as_str().unwrap().trim_end_matches('/'), PHPINFO.path);
    Some((lab, up, id, url))
}

/// `stack sample --profile` records the tiers' stacks with perf as a profiled cell does, and
/// lists each tier's top functions beside the samples; a stack brought up with `--profile`
/// gives PHP's own stacks too. Needs nginx, php-fpm, php-excimer and linux-perf, as root.
#[test]
fn stack_sample_profile_lists_each_tiers_top_functions() {
    let Some((lab, _, id, url)) = profiled_nginx_fpm() else { return };
    let sampler = start_sampler(&lab, &id, &["--profile"]);
    let (report, output) = run_json(&["bench", &url, "-d", "3s", "-c", "4"]);
    assert_eq!(output.status.code(), Some(0), "{report:#}");
    let doc = stop_sampler(sampler);
    lab.down(&id);
    let Some(profiles) = doc["profiles"].as_array() else {
        // perf refused by the kernel here: said on stderr, sampled without profiles.
        assert!(!crate::support::skip::servers_required(), "no profiles in CI: {doc:#}");
        return eprintln!("skipped: perf could not record here");
    };
    let tier = |name: &str| {
        let t = profiles.iter().find(|t| t["tier"] == name);
        t.unwrap_or_else(|| panic!("no profile of {name}: {profiles:#?}")).clone()
    };
    let fpm = tier("php-fpm");
    assert!(fpm["samples"].as_u64().unwrap() > 0, "{fpm:#}");
    assert_eq!(fpm["interval_us"], 10_101, "{fpm:#}");
    assert!(!fpm["functions"].as_array().unwrap().is_empty(), "{fpm:#}");
    // phpinfo's requests mostly end within excimer's first 1 ms: a few of 3 s of them do not.
    let php = tier(loadlab_lab::profiler::php::TIER);
    assert_eq!(php["interval_us"], 1_000, "{php:#}");
    assert!(php["samples"].as_u64().unwrap() > 0, "{php:#}");
}

/// `bench --profile` against a lab instance records its tiers' stacks while the bench
/// measures, as a profiled cell does, and gives each tier's top functions with the result
/// (`profiles` in the JSON, which the schema knows); a URL that is no instance's is refused
/// before any load, naming `stack up` (exit 2). Needs nginx, php-fpm, php-excimer and
/// linux-perf, as root.
#[test]
fn bench_profile_lists_the_instances_tiers_top_functions() {
    let Some((lab, up, id, url)) = profiled_nginx_fpm() else { return };
    let args = ["bench", &url, "--profile", "-d", "3s", "--warmup", "1s", "-c", "4"];
    let output = lab.run(&[&args[..], &["--format", "json", "--quiet"]].concat());
    let stderr = String::from_utf8_lossy(&output.stderr).into_owned();
    assert_eq!(output.status.code(), Some(0), "{stderr}");
    let doc: Value = serde_json::from_slice(&output.stdout).expect("JSON");
    crate::schema::assert_valid(&crate::schema::validator(), &doc);
    let profiles = &doc["profiles"];
    assert_eq!((&profiles["instance"], &profiles["stack"]), (&up["id"], &up["name"]), "{doc:#}");
    if profiles["profile"] != "perf" {
        // perf refused by the kernel here: said on stderr, measured without profiles.
        assert!(!crate::support::skip::servers_required(), "no profiles in CI: {profiles:#}");
        assert!(stderr.contains("perf could not record"), "{stderr}");
        lab.down(&id);
        return eprintln!("skipped: perf could not record here");
    }
    let tiers = profiles["tiers"].as_array().expect("tiers");
    let tier = |name: &str| {
        let t = tiers.iter().find(|t| t["tier"] == name);
        t.unwrap_or_else(|| panic!("no profile of {name}: {tiers:#?}")).clone()
    };
    for name in ["nginx", "php-fpm"] {
        let t = tier(name);
        assert!(t["samples"].as_u64().unwrap() > 0, "{t:#}");
        assert_eq!(t["interval_us"], 10_101, "{t:#}");
        assert!(!t["functions"].as_array().unwrap().is_empty(), "{t:#}");
    }
    // The text gives the same tiers after the result, as `stack sample --profile` does.
    let text = lab.run(&["bench", &url, "--profile", "-n", "200", "-c", "4", "--quiet"]);
    assert_eq!(text.status.code(), Some(0), "{}", String::from_utf8_lossy(&text.stderr));
    let text = String::from_utf8_lossy(&text.stdout);
    assert!(text.contains("php-fpm: ") && text.contains("self%"), "{text}");
    // perf missing: exit 4 naming its package, before any load; refused by the kernel (a
    // perf that fails as it does then): one line, and the bench goes on without profiles.
    let fake = tempfile::tempdir().expect("temp dir");
    let with_perf = |perf: Option<&str>| {
        if let Some(script) = perf {
            let path = fake.path().join("perf");
            std::fs::write(&path, script).expect("write the fake perf");
            std::fs::set_permissions(&path, std::os::unix::fs::PermissionsExt::from_mode(0o755))
                .expect("make it executable");
        }
        let mut command = lab.command(&["bench", &url, "--profile", "-n", "20", "--quiet"]);
        command.env("LOADLAB_SEARCH_PATH", fake.path());
        crate::support::output_within(command, Duration::from_secs(60))
    };
    let missing = with_perf(None);
    let said = String::from_utf8_lossy(&missing.stderr);
    assert_eq!(missing.status.code(), Some(4), "{said}");
    assert!(said.contains("linux-perf") && missing.stdout.is_empty(), "{said}");
    let refused = with_perf(Some(
        "#!/bin/sh\necho 'No permission to enable cpu-clock event.' >&2\nexit 255\n",
    ));
    let said = String::from_utf8_lossy(&refused.stderr);
    assert_eq!(refused.status.code(), Some(0), "{said}");
    let line = "loadlab: perf could not record (No permission to enable cpu-clock event.)";
    assert_eq!(said.lines().filter(|l| l.starts_with(line)).count(), 1, "{said}");
    let out = String::from_utf8_lossy(&refused.stdout);
    assert!(out.contains("Requests per second") || out.contains("req/s"), "{out}");
    assert!(!out.contains("self%"), "{out}");
    lab.down(&id);

    // The same URL once its instance is down is no lab instance's.
    let refused = lab.run(&["bench", &url, "--profile", "-n", "10"]);
    let said = String::from_utf8_lossy(&refused.stderr);
    assert_eq!(refused.status.code(), Some(2), "{said}");
    assert_eq!(said.lines().count(), 1, "{said}");
    assert!(said.contains("stack up"), "{said}");
}

#[test]
fn nginx() {
    let (lab, up) = require_stack!("nginx", &[]);
    exercise(lab, up, &[STATIC, ASPECTS], Some(BIG_FILE));
}

#[test]
fn apache_prefork_modphp_with_db() {
    let (lab, up) = require_stack!("apache-prefork-modphp", &["--db", "on", "--net", "lan-1gbit"]);
    // Seed 000's StartServers 5: the parent and at least five children.
    assert!(pids(&up).len() >= 6, "{up:#}");
    exercise(lab, up, &[STATIC, PHP, DB, ASPECTS, &["php", "database"]], Some(PHPINFO));
}

#[test]
fn apache_event_fpm_gzip_no_keepalive() {
    let (lab, up) = require_stack!("apache-event-fpm", &["--gzip", "on", "--keepalive", "off"]);
    exercise(lab, up, &[STATIC, PHP, ASPECTS, &["php"]], Some(PHPINFO));
}

#[test]
fn nginx_fpm_with_db_no_opcache_pinned() {
    let knobs = ["--db", "on", "--opcache", "off", "--workers", "2", "--cpus", "0"];
    let (lab, up) = require_stack!("nginx-fpm", &knobs);
    exercise(lab, up, &[STATIC, PHP, DB, ASPECTS, &["php", "database"]], Some(PHPINFO));
}

#[test]
fn nginx_spawn_fcgi() {
    let (lab, up) = require_stack!("nginx-spawn-fcgi", &[]);
    exercise(lab, up, &[STATIC, PHP, ASPECTS, &["php"]], Some(PHPINFO));
}

#[test]
fn nginx_proxy_apache_with_db() {
    let (lab, up) = require_stack!("nginx-proxy-apache", &["--db", "on", "--net", "wan"]);
    exercise(lab, up, &[STATIC, PHP, DB, ASPECTS, &["php", "database"]], Some(PHPINFO));
}

#[test]
fn varnish_nginx_fpm_no_keepalive() {
    let (lab, up) = require_stack!("varnish-nginx-fpm", &["--keepalive", "off"]);
    exercise(lab, up, &[STATIC, PHP, ASPECTS, &["php"]], Some(BIG_FILE));
}

#[test]
fn mariadb() {
    let (lab, up) = require_stack!("mariadb", &["--net", "rate=1gbit,delay=1ms"]);
    assert!(up["url"].as_str().unwrap().starts_with("mysql://10.214."), "{up:#}");
    exercise(lab, up, &[&["database", "loopback"]], None);
}

/// What every WordPress stack checks: all the workloads, PHP and the database.
const WORDPRESS: &[&[&str]] = &[STATIC, PHP, DB, &["wordpress"], ASPECTS, &["php", "database"]];

#[test]
fn wordpress_nginx_fpm() {
    let (lab, up) = require_stack!("wordpress-nginx-fpm", &["--net", "lan-100mbit"]);
    exercise(lab, up, WORDPRESS, Some(FRONT_PAGE));
}

#[test]
fn wordpress_apache_modphp() {
    let (lab, up) = require_stack!("wordpress-apache-modphp", &[]);
    exercise(lab, up, WORDPRESS, Some(FRONT_PAGE));
}

/// Through Varnish the front page is a cache hit costing no CPU; the big file still does.
#[test]
fn wordpress_varnish_nginx_fpm() {
    let (lab, up) = require_stack!("wordpress-varnish-nginx-fpm", &["--net", "wan"]);
    exercise(lab, up, WORDPRESS, Some(BIG_FILE));
}
