//! The page as a whole: escaping of everything that came from outside, no URL, and the parts a
//! reader looks for.

use loadlab_store::{ConfigRecord, Flag, HostFacts, Sample};

use super::*;
use crate::testcell::{flagged, reps, run};

const EVIL: &str = "<script>alert('x')</script>";

fn samples() -> Vec<Sample> {
    // Each second: 0.3 s of user and 0.1 s of system CPU, i.e. 40% of one core.
    (1..6)
        .map(|s| Sample {
            tier: "nginx".into(),
            t_ms: s * 1_000,
            cpu_user_s: 0.3,
            cpu_sys_s: 0.1,
            rss_bytes: 20_000_000,
            processes: 3,
            loadavg: 0.5,
            machine_cpu: 0.6,
        })
        .collect()
}

#[test]
fn text_from_servers_and_configs_is_escaped() {
    let stack = format!("nginx{EVIL}");
    let mut cells = reps(&stack, &format!("static{EVIL}"), 10, &[100.0, 101.0, 102.0]);
    cells.extend(reps(&stack, &format!("static{EVIL}"), 50, &[300.0, 301.0, 302.0]));
    cells.extend(reps("apache", &format!("static{EVIL}"), 10, &[90.0, 91.0, 92.0]));
    cells[0].knobs.insert(EVIL.into(), serde_json::json!(EVIL));
    cells[0].samples = samples();
    cells[0].samples[2].tier = EVIL.into();
    cells[1] = flagged(cells[1].clone(), Flag::Other(EVIL.into()), EVIL);
    let configs = vec![ConfigRecord {
        stack: stack.clone(),
        tier: EVIL.into(),
        kind: "config".into(),
        name: EVIL.into(),
        content: format!("server {{ # {EVIL} \"&\" }}"),
    }];
    let mut r = run();
    r.suite = EVIL.into();
    r.environment.hostname = EVIL.into();
    r.environment.packages.insert(EVIL.into(), EVIL.into());
    let html = render_html(&r, &cells, &configs, &Default::default());
    assert!(!html.to_lowercase().contains("<script"), "raw script tag in the report");
    assert!(html.contains("&lt;script&gt;alert(&#39;x&#39;)&lt;/script&gt;"));
    assert!(html.contains("server { # &lt;script&gt;"));
    assert!(html.contains("&quot;&amp;&quot;"));
}

#[test]
fn the_page_fetches_nothing() {
    let mut cells = reps("nginx", "static", 10, &[100.0, 101.0, 102.0]);
    cells.extend(reps("nginx", "static", 50, &[300.0, 301.0, 302.0]));
    cells[0].samples = samples();
    let html = render_html(&run(), &cells, &[], &Default::default());
    for needle in ["http:", "https:", "src=", "url(", "@import", "<link", "<script", "//cdn"] {
        assert!(!html.contains(needle), "found {needle:?}");
    }
    assert!(html.starts_with("<!DOCTYPE html>"));
    assert!(html.contains("<meta charset=\"utf-8\">"));
}

#[test]
fn verdict_flags_and_charts_are_on_the_page() {
    let mut cells = reps("nginx", "static", 10, &[1_000.0; 7]);
    cells.extend(reps("apache", "static", 10, &[500.0; 7]));
    cells.extend(reps("nginx", "static", 50, &[1_500.0; 7]));
    cells.extend(reps("apache", "static", 50, &[700.0; 7]));
    cells[20] = flagged(cells[20].clone(), Flag::ClientSaturated, "client CPU 99%");
    cells[3].samples = samples();
    // Its requests over its 10 s: the ab layout's requests per second.
    cells[0].metrics.insert(loadlab_store::metric::COMPLETED.into(), 10_000.0);
    let html = render_html(&run(), &cells, &[], &Default::default());
    assert!(
        html.contains("<span class=\"winner\">nginx</span> 2.00× the req/s of apache"),
        "{html}"
    );
    assert!(html.contains("nginx rep 7: client_saturated: client CPU 99%"));
    assert!(html.contains("⚠ nginx: client_saturated in repetition 7: client CPU 99%"));
    assert!(html.contains("1 of 28 cells carry a trust flag"));
    // Throughput by concurrency, one spectrum, one resource chart.
    assert_eq!(html.matches("<figure class=\"chart\" data-chart>").count(), 3);
    assert_eq!(html.matches("<svg ").count(), 3);
    assert!(!html.contains("<p class=\"chart-error\">"), "{html}");
    assert!(html.contains("Requests per second:    1000.00 [#/sec] (mean)"));
}

/// The nav links the sections the page has and no other: a run without a sweep has no
/// "Sweeps", whose link would lead nowhere.
#[test]
fn every_nav_link_lands_on_a_section_of_the_page() {
    let mut cells = reps("nginx", "static", 10, &[100.0, 101.0, 102.0]);
    cells.extend(reps("nginx", "static", 50, &[300.0, 301.0, 302.0]));
    cells[0].samples = samples();
    for html in [
        render_html(&run(), &cells, &[], &Default::default()),
        render_html(&run(), &[], &[], &Default::default()),
    ] {
        let nav = &html[html.find("<nav>").unwrap()..html.find("</nav>").unwrap()];
        let links: Vec<&str> =
            nav.split("href=\"#").skip(1).map(|l| &l[..l.find('"').unwrap()]).collect();
        assert!(links.len() >= 3, "{nav}");
        for id in links {
            assert!(html.contains(&format!("id=\"{id}\"")), "#{id} leads nowhere: {nav}");
        }
        assert!(!nav.contains("Sweeps"), "no sweep ran: {nav}");
    }
}

#[test]
fn a_run_without_cells_still_renders() {
    let html = render_html(&run(), &[], &[], &Default::default());
    assert!(html.contains("No cell of this run has finished yet."));
    assert!(!html.contains("<svg "));
    assert!(html.trim_end().ends_with("</html>"));
}

#[test]
fn zero_latency_on_a_log_axis_draws_no_infinite_point() {
    // p99 from 1 µs to 100 ms spans five decades: a log axis, where a zero cannot go.
    let mut cells = reps("nginx", "static", 10, &[100.0, 101.0, 102.0]);
    cells.extend(reps("nginx", "static", 50, &[300.0, 301.0, 302.0]));
    for (i, c) in cells.iter_mut().enumerate() {
        let p99 = if i < 3 { 0.0 } else { 100_000.0 };
        c.metrics.insert(loadlab_store::metric::P99_US.into(), p99);
        c.metrics.insert(loadlab_store::metric::P50_US.into(), 1.0 + i as f64);
    }
    let html = render_html(&run(), &cells, &[], &Default::default());
    assert!(!html.contains("<p class=\"chart-error\">"), "{html}");
    for svg in html.split("<svg ").skip(1) {
        let svg = &svg[..svg.find("</svg>").expect("a closed svg")];
        assert!(!svg.contains("inf") && !svg.contains("NaN"), "{svg}");
    }
}

#[test]
fn the_environment_names_the_link_each_stack_was_measured_across() {
    let mut cells = reps("nginx", "static", 10, &[100.0, 101.0]);
    cells.extend(reps("apache", "static", 10, &[90.0, 91.0]));
    cells.extend(reps("varnish", "static", 10, &[95.0, 96.0]));
    for c in cells.iter_mut().filter(|c| c.stack == "nginx") {
        c.knobs.insert("net".into(), serde_json::json!("lan-100mbit"));
    }
    for c in cells.iter_mut().filter(|c| c.stack == "varnish") {
        c.knobs.insert("net".into(), serde_json::json!("wan"));
        c.knobs.insert("net_delay".into(), serde_json::json!("netem"));
    }
    let html = render_html(&run(), &cells, &[], &Default::default());
    assert!(html.contains("<dt>network</dt><dd>--net lan-100mbit: nginx</dd>"), "{html}");
    assert!(html.contains("<dt>network</dt><dd>--net wan (delay by netem): varnish</dd>"));
    assert!(html.contains("<dt>network</dt><dd>loopback (no link in between): apache</dd>"));
}

#[test]
fn an_external_target_is_named_by_who_answered_and_said_to_be_unsampled() {
    let mut cells = reps("mine", "robots gzip", 10, &[100.0, 101.0]);
    cells.extend(reps("nginx", "robots gzip", 10, &[90.0, 91.0]));
    for c in cells.iter_mut().filter(|c| c.stack == "mine") {
        c.knobs = [("url".to_string(), serde_json::json!("http://127.0.0.1:8080"))].into();
    }
    cells[2].samples = samples();
    let identity = ConfigRecord {
        stack: "mine".into(),
        tier: "external".into(),
        kind: ConfigRecord::IDENTITY.into(),
        name: String::new(),
        content: "url: http://127.0.0.1:8080\naddress: 127.0.0.1:8080\ntls: no\n\
                  server: nginx/1.22.1\nsampling: not sampled: external target\nverified:\n  \
                  robots gzip: status 200, 24 body bytes\n"
            .into(),
    };
    // As a run stores it now: the same identity as JSON renders the same page.
    let typed = ConfigRecord::of_identity("mine", "external", &identity.identity().unwrap());
    assert_ne!(typed.content, identity.content);
    let html = render_html(&run(), &cells, &[identity], &Default::default());
    assert!(
        html.contains(
            "<dt>external</dt><dd>mine: http://127.0.0.1:8080 at 127.0.0.1:8080, Server \
             nginx/1.22.1, TLS no; not sampled: external target (not started by loadlab)</dd>"
        ),
        "{html}"
    );
    assert_eq!(render_html(&run(), &cells, &[typed], &Default::default()), html);
    // Not a lab stack on loopback.
    assert!(html.contains("<dt>network</dt><dd>loopback (no link in between): nginx</dd>"));
    assert!(html.contains("<p class=\"note\">mine: not sampled: external target"), "{html}");
    // Sampled by its pids, it is charted as the lab's stacks are and needs no note.
    for c in cells.iter_mut().filter(|c| c.stack == "mine") {
        c.samples = samples();
    }
    let html = render_html(&run(), &cells, &[], &Default::default());
    assert!(!html.contains("not sampled"));
}

#[test]
fn each_stacks_slo_verdict_is_a_line_under_its_group() {
    let mut cells = reps("nginx", "static", 50, &[1_000.0, 1_010.0]);
    cells.extend(reps("apache", "static", 50, &[500.0, 505.0]));
    for c in &mut cells {
        c.slo = Some("rps>800".into());
    }
    let html = render_html(&run(), &cells, &[], &Default::default());
    assert!(
        html.contains(
            "<tr class=\"slo-row\"><td colspan=\"8\"><ul class=\"slo\"><li class=\"pass\">✓ \
             nginx: SLO rps&gt;800: pass (rps 1005 &gt; 800)</li><li class=\"fail\">✗ apache: \
             SLO rps&gt;800: FAIL (rps 502.5 &lt;= 800)</li></ul></td></tr>"
        ),
        "{html}"
    );
    assert!(
        html.contains("<p class=\"gate fail\">SLO gate: FAIL (1 of 2 failed: apache"),
        "{html}"
    );
    let plain =
        render_html(&run(), &reps("nginx", "static", 50, &[1_000.0]), &[], &Default::default());
    assert!(!plain.contains("slo-row") && !plain.contains("SLO gate"));
}

/// Stacks on a lab host. The environment names this machine as the client's, the
/// server host with its machine, the path between them, and which stacks ran there.
#[test]
fn the_environment_shows_both_machines_and_the_path_between_them() {
    let mut cells = reps("nginx", "static", 10, &[100.0, 101.0]);
    cells.extend(reps("apache", "static", 10, &[90.0, 91.0]));
    for c in cells.iter_mut().filter(|c| c.stack == "nginx") {
        c.knobs.insert("host".into(), serde_json::json!("ssh://root@lab2"));
        c.knobs.insert("host_cpus".into(), serde_json::json!(64));
        c.samples = samples();
    }
    let facts = HostFacts::for_test();
    let host = ConfigRecord::of_host(&facts, "nginx");
    // A run stored before the facts were kept as JSON: the same facts as lines.
    let lines = "host: ssh://root@lab2\nhostname: lab2\nkernel: 6.1.0\ncpu: 8 × EPYC\n\
                 memory: 16.0 GiB\nruns: nginx\nserver nic: eth0, 1000 Mbit/s\n\
                 client nic: eth1, 1000 Mbit/s\nidle rtt: 61 µs\npackages:\n  nginx 1.22\n";
    let old = ConfigRecord { content: lines.into(), ..host.clone() };
    let html = render_html(&run(), &cells, &[host], &Default::default());
    assert!(html.contains("<dt>client host</dt><dd>lab1</dd>"), "{html}");
    assert!(html.contains(
        "<dt>server host</dt><dd>ssh://root@lab2 (lab2): kernel 6.1.0, CPU 8 × EPYC, memory \
         16.0 GiB; ran nginx</dd><dt>path</dt><dd>client NIC eth1, 1000 Mbit/s → server NIC \
         eth0, 1000 Mbit/s; idle RTT 61 µs</dd>"
    ));
    assert!(html.contains(&format!("<pre>{}</pre>", super::Esc(lines))), "{html}");
    assert_eq!(
        render_html(&run(), &cells, &[old], &Default::default()),
        html,
        "the old form reads as the new"
    );
    assert!(html.contains("<dt>network</dt><dd>the path to ssh://root@lab2: nginx</dd>"));
    assert!(html.contains("<dt>network</dt><dd>loopback (no link in between): apache</dd>"));
    // Its tiers' CPU chart counts that host's cores.
    assert!(html.contains("one core (64 on ssh://root@lab2)"), "{html}");
    let alone =
        render_html(&run(), &reps("apache", "static", 10, &[90.0]), &[], &Default::default());
    assert!(alone.contains("<dt>host</dt><dd>lab1</dd>") && !alone.contains("server host"));
}

/// A view group's charts name views/s and the page load, and their scale is the views' (up to
/// 12 views/s), not its requests' (20 a view, up to 240 req/s).
#[test]
fn a_view_groups_charts_name_and_carry_the_views() {
    let cells = crate::testcell::view_cells(3, &[3.0, 6.0, 12.0]);
    let html = render_html(&run(), &cells, &[], &Default::default());
    let sweeps = &html[html.find("<section id=\"sweeps\">").expect("a sweep")..];
    let sweeps = &sweeps[..sweeps.find("</section>").unwrap()];
    let svg = &sweeps[..sweeps.find("</svg>").unwrap()];
    let texts: Vec<&str> = svg
        .split("<text")
        .skip(1)
        .map(|t| t[t.find('>').unwrap() + 1..].split('<').next().unwrap().trim())
        .collect();
    let at = |label: &str| {
        texts
            .iter()
            .position(|t| *t == label)
            .unwrap_or_else(|| panic!("no {label:?} in {texts:?}"))
    };
    let (achieved, p99) = (at("achieved (views/s)"), at("p99 page load (ms)"));
    at("offered rate (views/s)");
    let ticks: Vec<f64> = texts[achieved + 1..p99].iter().filter_map(|t| t.parse().ok()).collect();
    assert!(!ticks.is_empty() && ticks.iter().all(|&t| t <= 12.0), "the views' scale: {ticks:?}");
    assert!(sweeps.contains("varnish sustains 12 views/s;"), "{sweeps}");
    assert!(!sweeps.contains("req/s"), "{sweeps}");
    // At one rate: the page-load percentiles.
    let html =
        render_html(&run(), &crate::testcell::view_cells(3, &[3.0]), &[], &Default::default());
    assert!(html.contains("<h3>front page views · open, 3 views/s: page load percentiles</h3>"));
    assert!(html.contains("page load (ms)"), "{html}");
}

#[test]
fn profiled_cells_are_drawn_as_flame_graphs_and_the_stacks_compared() {
    let (cells, profiles) = crate::testcell::profiled_group();
    let html = render_html(&run(), &cells, &[], &profiles);
    assert!(html.contains("<section id=\"profiles\">"), "no profiles section");
    assert!(html.contains("<a href=\"#profiles\">"), "no link to it");
    // apache2 and php-cgi drawn, nginx's 300 samples said, the differential drawn.
    assert_eq!(html.matches("<figure class=\"flame\">").count(), 4, "{html}");
    assert!(html.contains("<title>execute_ex (600 samples, 60.00%)</title>"), "apache2's graph");
    assert!(html.contains("300 samples: under 500, too few for a flame graph"), "nginx's tier");
    assert!(html.contains("Not profiled: refused: No permission."), "varnish's cells");
    assert!(html.contains("<h4>nginx-fastcgi against apache-modphp</h4>"));
    assert!(html.contains(
        "<li>nginx-fastcgi spends 35.0% of its samples in unix_stream_sendmsg, apache-modphp \
         10.0%</li>"
    ));
    assert!(html.contains("<tr><td>unix_stream_sendmsg</td><td class=\"num\">10.0%</td>"));
    assert!(html.contains("varnish has no profile (refused: No permission)"));
    for needle in ["http:", "https:", "src=", "url(", "@import", "<link", "<script", "//cdn"] {
        assert!(!html.contains(needle), "found {needle:?}");
    }

    let lost = render_html(&run(), &cells, &[], &Default::default());
    assert!(lost.contains("perf recorded no sample of its tiers."), "asked, recorded, none kept");
    let mut plain = cells;
    plain.iter_mut().for_each(|c| drop(c.knobs.remove("profile")));
    let plain = render_html(&run(), &plain, &[], &profiles);
    assert!(!plain.contains("profiles"), "cells not asked to be profiled have a profile section");
}
