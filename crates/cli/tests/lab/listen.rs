//! A stack on another host (`stack up --listen ADDR`), with two network namespaces of the
//! test's own as hosts A and B ([`Hosts`]): the stack runs in B on B's address, `bench` runs in
//! A; only the front tier listens beyond loopback; behind `--net lan-100mbit` B's egress on its
//! interface is shaped for the stack's port alone, a transfer-heavy bench from A is limited by
//! the network, and `stack down` (or the cleanup of a killed owner's stack) removes every qdisc.
//! Bad addresses are refused with exit 2. Needs root and iproute2 (skipped visibly without, a
//! failure in CI) and nginx, Apache.

use std::net::SocketAddr;
use std::process::Output;
use std::time::Duration;

use serde_json::Value;

use super::{pids, running, TestLab, LIMIT};
use crate::support::busy::{busy_since, cpu_times};
use crate::support::hosts::{leftover_namespaces, Host, Hosts};
use crate::support::{assert_success, output_within, wait_until};

/// `loadlab ARGS` of `lab`, run in `host`.
fn run_in(host: &Host, lab: &TestLab, args: &[&str]) -> Output {
    output_within(host.within(&lab.command(args)), LIMIT)
}

/// `stack up NAME --listen ADDR KNOBS --json` in `host`, which must succeed: the answer and
/// what it said on stderr.
fn up_in(host: &Host, lab: &TestLab, stack: &str, knobs: &[&str]) -> (Value, String) {
    let mut args = vec!["stack", "up", stack, "--json"];
    args.extend_from_slice(knobs);
    let out = run_in(host, lab, &args);
    assert_success(&out, &args);
    let up = serde_json::from_slice(&out.stdout).expect("stack up prints JSON");
    (up, String::from_utf8_lossy(&out.stderr).into_owned())
}

/// `loadlab bench URL ARGS --format json` from `host`, which must succeed. At a raised
/// priority (the tests run as root): the bench must find out what limits the stack on B, and
/// on a machine busy with other builds a client at the default priority waits for a CPU long
/// enough to be judged the limit itself (seen: 21% of a 3 s run, `limited_by` client).
fn bench_from(host: &Host, url: &str, args: &[&str]) -> Value {
    let mut bench = std::process::Command::new("nice");
    bench.args(["-n", "-10"]).arg(env!("CARGO_BIN_EXE_loadlab"));
    bench.args(["bench", url]).args(args).args(["--expect-status", "200"]);
    bench.args(["--format", "json", "--quiet"]);
    let out = output_within(host.within(&bench), Duration::from_secs(60));
    assert_success(&out, &["bench", url]);
    serde_json::from_slice(&out.stdout).expect("bench prints JSON")
}

/// The listening TCP sockets of `host` (all the instance's: nothing else runs there).
fn listening(host: &Host) -> Vec<SocketAddr> {
    host.run("ss", &["-H", "-l", "-t", "-n"])
        .lines()
        .filter_map(|l| l.split_whitespace().nth(3)?.parse().ok())
        .collect()
}

fn url_port(up: &Value) -> u16 {
    let url = up["url"].as_str().expect("a url");
    url.trim_end_matches('/').rsplit(':').next().unwrap().parse().expect("a port")
}

#[test]
fn a_stack_listening_on_b_answers_a_and_keeps_its_inner_tier_on_loopback() {
    let Some(hosts) = Hosts::new() else { return };
    let lab = TestLab::new();
    let b = hosts.b.addr.to_string();
    let (up, said) = up_in(&hosts.b, &lab, "nginx-proxy-apache", &["--listen", &b]);
    let port = url_port(&up);
    assert_eq!(up["url"], format!("http://{b}:{port}/"), "{up:#}");
    assert!(said.contains("reachable from the network"), "{said}");
    assert_eq!(said.lines().count(), 1, "{said}");
    // ss's view, not the lab's: the front on B's address, the apache behind it on loopback.
    let sockets = listening(&hosts.b);
    let (beyond, inner): (Vec<&SocketAddr>, Vec<&SocketAddr>) =
        sockets.iter().partition(|a| !a.ip().is_loopback());
    assert_eq!(beyond, vec![&SocketAddr::new(hosts.b.addr.into(), port)], "{sockets:?}");
    assert!(!inner.is_empty(), "apache listens on loopback: {sockets:?}");
    let check = up["checks"].as_array().unwrap().iter().find(|c| c["workload"] == "loopback");
    assert_eq!(check.map(|c| &c["ok"]), Some(&Value::Bool(true)), "{up:#}");
    // From A: the front answers, the inner tier's port is not there.
    let hello = format!("{}hello.txt", up["url"].as_str().unwrap());
    let report = bench_from(&hosts.a, &hello, &["-n", "200"]);
    assert_eq!(report["requests"]["completed"], 200, "{report:#}");
    assert_eq!(report["requests"]["failed"], 0, "{report:#}");
    for inner in inner {
        let there = SocketAddr::new(hosts.b.addr.into(), inner.port());
        let mut reached = hosts.a.command("timeout");
        let connect = format!("exec 3<>/dev/tcp/{}/{}", there.ip(), there.port());
        reached.args(["5", "bash", "-c", &connect]);
        let out = reached.output().unwrap();
        assert!(!out.status.success(), "A reached the inner tier at {there}");
    }
    let leaders = pids(&up);
    let id = up["id"].as_str().unwrap();
    assert_success(&run_in(&hosts.b, &lab, &["stack", "down", id]), &["stack", "down", id]);
    assert!(running(&leaders).is_empty(), "processes left: {:?}", running(&leaders));
    assert!(!lab.lab().state().run_root().join(id).exists(), "the run directory is left");
    let names = hosts.names().map(str::to_string);
    drop(hosts);
    let left = leftover_namespaces();
    assert!(names.iter().all(|n| !left.contains(n)), "namespaces left: {left:?}");
}

#[test]
fn behind_lan_100mbit_b_shapes_the_stacks_responses_alone_and_a_is_limited_by_the_network() {
    let Some(hosts) = Hosts::new() else { return };
    let lab = TestLab::new();
    let b = hosts.b.addr.to_string();
    let (shaped, said) =
        up_in(&hosts.b, &lab, "nginx", &["--listen", "0.0.0.0", "--net", "lan-100mbit"]);
    // 0.0.0.0's URL is B's primary address: the source of its default route.
    assert_eq!(shaped["url"], format!("http://{b}:{}/", url_port(&shaped)), "{shaped:#}");
    let qdiscs = hosts.b.qdiscs();
    assert!(qdiscs.contains("qdisc htb 10ad: root"), "{qdiscs}");
    assert!(said.contains("egress, its port only") && said.contains("not shaped"), "{said}");
    let listen = &shaped["listen"];
    assert_eq!(
        (&listen["bind"], &listen["primary"]),
        (&"0.0.0.0".into(), &true.into()),
        "{listen}"
    );
    assert_eq!(listen["shaping"]["rate_bps"], 100_000_000, "{listen}");
    // A second stack on the same interface, not shaped: its port is not the filter's.
    let (open, _) = up_in(&hosts.b, &lab, "nginx", &["--listen", &b]);

    let before = cpu_times();
    let report = bench_from(
        &hosts.a,
        &format!("{}100k.bin", shaped["url"].as_str().unwrap()),
        &["-c", "10", "-d", "3s"],
    );
    let machine_busy = busy_since(before);
    let carried = report["client"]["path"]["achieved_mbps"].as_f64().unwrap();
    assert!((60.0..=100.0).contains(&carried), "{carried} Mbit/s through 100: {report:#}");
    assert_eq!(report["requests"]["failed"], 0, "{report:#}");
    let free = bench_from(
        &hosts.a,
        &format!("{}100k.bin", open["url"].as_str().unwrap()),
        &["-c", "10", "-d", "1s"],
    );
    let unshaped = free["client"]["path"]["achieved_mbps"].as_f64().unwrap();
    assert!(unshaped > 150.0, "the unshaped stack carried {unshaped} Mbit/s: {free:#}");
    eprintln!("shaped {carried:.1} Mbit/s, unshaped {unshaped:.0} Mbit/s");

    for up in [&shaped, &open] {
        let id = up["id"].as_str().unwrap();
        assert_success(&run_in(&hosts.b, &lab, &["stack", "down", id]), &["stack", "down", id]);
    }
    let qdiscs = hosts.b.qdiscs();
    assert!(!qdiscs.contains("htb") && !qdiscs.contains("bfifo"), "left: {qdiscs}");
    // Last, the judgement: from A nothing says B's rate (A's own end is a 10 Gbit/s veth), so
    // `network` comes from the path rule of docs/trust.md (the handshake RTT rose under load),
    // which by design judges nothing while the machine is 90% busy or more (a full machine
    // delays handshakes too). The other engineers' builds keep this machine at 100% for
    // minutes: then the rule's silence is checked (never the stack blamed) and said.
    let limit = &report["limited_by"]["kind"];
    if machine_busy < 0.9 {
        assert_eq!(limit, "network", "{carried} Mbit/s: {report:#}");
    } else {
        assert!(
            matches!(limit.as_str(), Some("not_determined" | "client" | "network")),
            "{report:#}"
        );
        let why = format!(
            "limited_by not judged: the machine was {:.0}% busy during the bench (the path \
             rule needs under 90%); it said {limit}",
            machine_busy * 100.0
        );
        crate::support::Skip(why).report();
    }
}

/// `::` takes this host's primary IPv6 address for its URL, and its shaping classifies both
/// families: Apache's socket on `::` takes IPv4 clients too (mapped), and both are shaped.
#[test]
fn a_stack_on_every_ipv6_address_is_reached_and_shaped_over_both_families() {
    let Some(hosts) = Hosts::new() else { return };
    let lab = TestLab::new();
    let knobs = ["--listen", "::", "--net", "rate=50mbit"];
    let (up, _) = up_in(&hosts.b, &lab, "apache-event-fpm", &knobs);
    let port = url_port(&up);
    assert_eq!(up["url"], format!("http://[{}]:{port}/", hosts.b.addr6), "{up:#}");
    let check = up["checks"].as_array().unwrap().iter().find(|c| c["workload"] == "loopback");
    assert_eq!(check.map(|c| &c["ok"]), Some(&Value::Bool(true)), "{up:#}");
    let v4 = format!("http://{}:{port}/100k.bin", hosts.b.addr);
    for url in [format!("{}100k.bin", up["url"].as_str().unwrap()), v4] {
        let report = bench_from(&hosts.a, &url, &["-c", "10", "-d", "2s"]);
        let carried = report["client"]["path"]["achieved_mbps"].as_f64().unwrap();
        assert!((25.0..=50.0).contains(&carried), "{url}: {carried} Mbit/s through 50");
        assert_eq!(report["requests"]["failed"], 0, "{report:#}");
    }
    let shown = run_in(&hosts.b, &lab, &["stack", "show", up["id"].as_str().unwrap()]);
    let shown = String::from_utf8_lossy(&shown.stdout);
    assert!(shown.contains("this host's primary address"), "{shown}");
    assert!(shown.contains("ingress (requests) not shaped"), "{shown}");
    let id = up["id"].as_str().unwrap();
    assert_success(&run_in(&hosts.b, &lab, &["stack", "down", id]), &["stack", "down", id]);
    assert!(!hosts.b.qdiscs().contains("10ad:"), "{}", hosts.b.qdiscs());
}

#[test]
fn a_killed_owners_shaping_is_removed_by_the_next_start() {
    let Some(hosts) = Hosts::new() else { return };
    let lab = TestLab::new();
    let b = hosts.b.addr.to_string();
    let args = ["stack", "up", "nginx", "--listen", &b, "--net", "lan-100mbit", "--foreground"];
    let mut owner = hosts.b.within(&lab.command(&args));
    owner.stdout(std::process::Stdio::null()).stderr(std::process::Stdio::null());
    let mut owner = owner.spawn().expect("stack up runs");
    let started = wait_until(Duration::from_secs(60), || {
        lab.lab()
            .instances()
            .unwrap()
            .iter()
            .any(|(r, _)| r.tiers.iter().all(|t| t.leader.is_some()))
            && hosts.b.qdiscs().contains("10ad:")
    });
    let records = lab.lab().instances().unwrap();
    // `ip netns exec` execs loadlab: the child is the owner itself.
    let _ = owner.kill();
    let _ = owner.wait();
    assert!(started, "the foreground stack did not come up: {records:?}");
    let leaders: Vec<i32> = records.iter().flat_map(|(r, _)| r.leaders()).map(|l| l.pid).collect();
    assert!(hosts.b.qdiscs().contains("10ad:"), "the shaping went with its owner already");
    // The next start in B cleans the stale instance: its processes and its shaping.
    let (next, _) = up_in(&hosts.b, &lab, "nginx", &["--listen", &b]);
    assert!(running(&leaders).is_empty(), "the killed owner's servers run: {leaders:?}");
    let qdiscs = hosts.b.qdiscs();
    assert!(!qdiscs.contains("10ad:"), "the killed owner's shaping is left: {qdiscs}");
    let id = next["id"].as_str().unwrap();
    assert_success(&run_in(&hosts.b, &lab, &["stack", "down", id]), &["stack", "down", id]);
}

/// Bad addresses are the user's to fix: exit 2 and one line naming the flag, and nothing made.
#[test]
fn an_address_not_of_this_host_or_loopback_with_a_profile_is_refused_with_exit_2() {
    let lab = TestLab::new();
    for (args, says) in [
        (&["--listen", "10.215.255.254"][..], "not an address of this host"),
        (&["--listen", "127.0.0.1", "--net", "lan-100mbit"][..], "beyond loopback"),
        (&["--listen", "fe80::1"][..], "link-local"),
        (&["--listen", "nowhere"][..], "invalid"),
    ] {
        let mut all = vec!["stack", "up", "nginx"];
        all.extend_from_slice(args);
        let out = lab.run(&all);
        let stderr = String::from_utf8_lossy(&out.stderr);
        assert_eq!(out.status.code(), Some(2), "{all:?}: {stderr}");
        assert!(stderr.contains(says) && stderr.contains("--listen"), "{all:?}: {stderr}");
        assert!(!stderr.contains("panicked"), "{stderr}");
    }
    let out = lab.run(&["stack", "up", "mariadb", "--listen", "0.0.0.0"]);
    assert_eq!(out.status.code(), Some(2), "{}", String::from_utf8_lossy(&out.stderr));
    assert!(lab.lab().instances().unwrap().is_empty());
}

/// Between hosts delay, jitter and loss need netem below the stack's class: on a kernel
/// without it (this machine's, CI's) `--net wan` with `--listen` fails at once with exit 6,
/// saying why, and leaves no qdisc; with netem, the class has it below.
#[test]
fn a_delay_profile_with_listen_needs_netem_and_says_so() {
    let Some(hosts) = Hosts::new() else { return };
    let lab = TestLab::new();
    let b = hosts.b.addr.to_string();
    let netem = lab.json(&["doctor", "--json"])["network_profiles"]["netem"].as_bool();
    let args = ["stack", "up", "nginx", "--listen", &b, "--net", "wan", "--json"];
    let out = run_in(&hosts.b, &lab, &args);
    let stderr = String::from_utf8_lossy(&out.stderr);
    if netem == Some(true) {
        assert_success(&out, &args);
        assert!(hosts.b.qdiscs().contains("netem"), "{}", hosts.b.qdiscs());
        let up: Value = serde_json::from_slice(&out.stdout).unwrap();
        let id = up["id"].as_str().unwrap();
        assert_success(&run_in(&hosts.b, &lab, &["stack", "down", id]), &["stack", "down", id]);
    } else {
        assert_eq!(out.status.code(), Some(6), "{stderr}");
        assert!(stderr.contains("netem") && stderr.contains("--listen"), "{stderr}");
        assert_eq!(stderr.lines().count(), 1, "{stderr}");
    }
    assert!(!hosts.b.qdiscs().contains("10ad:"), "{}", hosts.b.qdiscs());
    assert!(lab.lab().instances().unwrap().is_empty());
}
