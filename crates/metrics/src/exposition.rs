//! The board in Prometheus' text exposition format (version 0.0.4: `# HELP` and `# TYPE` once
//! per metric family, then one sample per line, label values escaped as the format says:
//! backslash, double quote and line feed). Every metric loadlab exports is named once, in
//! [`FAMILIES`]; the dashboard's test reads that list.

use std::fmt::Write;

use loadlab_engine::ErrorClass;

use crate::board::{Cell, Figures, BOUNDS_US};

/// One metric family: its name, type and help line.
pub struct Family {
    pub name: &'static str,
    pub kind: &'static str,
    pub help: &'static str,
}

const fn family(name: &'static str, kind: &'static str, help: &'static str) -> Family {
    Family { name, kind, help }
}

/// Every family, in the order rendered.
pub const FAMILIES: [Family; 16] = [
    family("loadlab_requests_total", "counter", "Requests ended, by outcome: completed (a response) or failed (an error of a class)."),
    family("loadlab_errors_total", "counter", "Failed requests by error class (the JSON's errors), every class present."),
    family("loadlab_responses_total", "counter", "Responses by status code."),
    family("loadlab_requests_sent_total", "counter", "Requests sent."),
    family("loadlab_arrivals_due_total", "counter", "Arrivals the schedule made due (open loop and sessions; 0 in the closed loop)."),
    family("loadlab_received_bytes_total", "counter", "Bytes received."),
    family("loadlab_latency_seconds", "histogram", "Latency every output shows: from when a request was due under a schedule, from its start in the closed loop."),
    family("loadlab_offered_rate", "gauge", "Rate asked for, requests per second, while measuring (0 otherwise, and for a closed loop)."),
    family("loadlab_achieved_rate", "gauge", "Requests completed per second over the last second, while measuring (0 otherwise)."),
    family("loadlab_open_connections", "gauge", "Connections open, while measuring (0 otherwise)."),
    family("loadlab_client_cpu_seconds_total", "counter", "CPU time (user and system) of loadlab's workers."),
    family("loadlab_measuring", "gauge", "1 while the cell is measured, 0 once it has ended."),
    family("loadlab_trust_flag", "gauge", "1 for each trust flag the verdict raised, 0 for the others; present once the cell is judged."),
    family("loadlab_tier_cpu_seconds_total", "counter", "CPU time of a lab stack's tier (its processes, and the children they reaped), user or system, as its sampler read it each second."),
    family("loadlab_tier_memory_bytes", "gauge", "Resident memory of a lab stack's tier (the sum of its processes' RSS) at its sampler's last reading."),
    family("loadlab_tier_processes", "gauge", "Processes of a lab stack's tier at its sampler's last reading."),
];

/// `"..."` with the format's three escapes.
fn quoted(out: &mut String, value: &str) {
    out.push('"');
    for c in value.chars() {
        match c {
            '\\' => out.push_str("\\\\"),
            '"' => out.push_str("\\\""),
            '\n' => out.push_str("\\n"),
            c => out.push(c),
        }
    }
    out.push('"');
}

/// One sample line: `name{the cell's labels,extra} value`.
fn sample(out: &mut String, name: &str, cell: &Cell, extra: &[(&str, &str)], value: f64) {
    let l = &cell.labels;
    out.push_str(name);
    let mut sep = '{';
    let labels = [
        ("run", l.run.as_str()),
        ("stack", &l.stack),
        ("workload", &l.workload),
        ("load", &l.load),
        ("repetition", &l.repetition),
    ];
    for (k, v) in labels.iter().chain(extra) {
        out.push(sep);
        out.push_str(k);
        out.push('=');
        quoted(out, v);
        sep = ',';
    }
    // Rust's shortest round-trip form is a float Prometheus parses; integers print bare.
    let _ = writeln!(out, "}} {value}");
}

/// The samples of family `name` for one cell.
fn samples(out: &mut String, name: &str, cell: &Cell, f: &Figures) {
    let c = &f.counts;
    let now = |v: f64| if cell.measuring { v } else { 0.0 };
    match name {
        "loadlab_requests_total" => {
            sample(out, name, cell, &[("outcome", "completed")], c.completed as f64);
            sample(out, name, cell, &[("outcome", "failed")], c.failed as f64);
        }
        "loadlab_errors_total" => {
            for class in ErrorClass::ALL {
                let n = c.errors.iter().find(|(k, _)| *k == class).map_or(0, |(_, n)| *n);
                sample(out, name, cell, &[("class", class.name())], n as f64);
            }
        }
        "loadlab_responses_total" => {
            for (code, n) in &c.status {
                sample(out, name, cell, &[("status", &code.to_string())], *n as f64);
            }
        }
        "loadlab_requests_sent_total" => sample(out, name, cell, &[], c.sent as f64),
        "loadlab_arrivals_due_total" => sample(out, name, cell, &[], c.due as f64),
        "loadlab_received_bytes_total" => sample(out, name, cell, &[], c.bytes as f64),
        "loadlab_latency_seconds" => histogram(out, name, cell, f),
        "loadlab_offered_rate" => sample(out, name, cell, &[], now(cell.offered.unwrap_or(0.0))),
        "loadlab_achieved_rate" => sample(out, name, cell, &[], now(cell.achieved())),
        "loadlab_open_connections" => sample(out, name, cell, &[], now(f.open as f64)),
        "loadlab_client_cpu_seconds_total" => sample(out, name, cell, &[], f.cpu_us as f64 / 1e6),
        "loadlab_measuring" => sample(out, name, cell, &[], f64::from(u8::from(cell.measuring))),
        "loadlab_trust_flag" => {
            for (flag, raised) in &cell.flags {
                sample(out, name, cell, &[("flag", flag)], f64::from(u8::from(*raised)));
            }
        }
        "loadlab_tier_cpu_seconds_total" => {
            for t in &cell.tiers {
                sample(out, name, cell, &[("tier", &t.tier), ("mode", "user")], t.cpu_user_s);
                sample(out, name, cell, &[("tier", &t.tier), ("mode", "system")], t.cpu_sys_s);
            }
        }
        "loadlab_tier_memory_bytes" => {
            for t in &cell.tiers {
                sample(out, name, cell, &[("tier", &t.tier)], t.rss_bytes as f64);
            }
        }
        "loadlab_tier_processes" => {
            for t in &cell.tiers {
                sample(out, name, cell, &[("tier", &t.tier)], t.processes as f64);
            }
        }
        _ => unreachable!("every family in FAMILIES has its samples"),
    }
}

/// A histogram's cumulative `_bucket` lines (`le` in seconds, `+Inf` last), `_sum`, `_count`.
fn histogram(out: &mut String, name: &str, cell: &Cell, f: &Figures) {
    let bucket = format!("{name}_bucket");
    for (bound, n) in BOUNDS_US.iter().zip(f.le) {
        let le = (*bound as f64 / 1e6).to_string();
        sample(out, &bucket, cell, &[("le", &le)], n as f64);
    }
    sample(out, &bucket, cell, &[("le", "+Inf")], f.latency_count as f64);
    sample(out, &format!("{name}_sum"), cell, &[], f.latency_sum_us / 1e6);
    sample(out, &format!("{name}_count"), cell, &[], f.latency_count as f64);
}

/// The whole exposition of `cells`.
pub fn render(cells: &[Cell]) -> String {
    let figures: Vec<Figures> = cells.iter().map(Cell::figures).collect();
    let mut out = String::new();
    for family in &FAMILIES {
        let _ = writeln!(out, "# HELP {} {}", family.name, family.help);
        let _ = writeln!(out, "# TYPE {} {}", family.name, family.kind);
        for (cell, f) in cells.iter().zip(&figures) {
            samples(&mut out, family.name, cell, f);
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use loadlab_engine::live::{Counts, Snapshot, Watch};
    use loadlab_stats::Recorder;

    use crate::board::{Board, Labels, Tier};

    #[test]
    fn a_cell_renders_every_family_with_its_labels_escaped() {
        let board = Board::default();
        let labels =
            Labels { stack: "a \"b\"\\c\nd".into(), load: "c=1".into(), ..Labels::default() };
        board.begin(labels, Some(50.0));
        let counts = Counts {
            completed: 3,
            status: vec![(200, 3)],
            errors: vec![(loadlab_engine::ErrorClass::ClientTimeout, 1)],
            failed: 1,
            ..Counts::default()
        };
        let mut latency = Recorder::new();
        latency.record(2_000_000);
        board.snapshot(&Snapshot { counts, open: 1, ..Snapshot::default() }, &latency);
        board.judged(vec![("errors".into(), true), ("client_saturated".into(), false)]);
        let tier = Tier {
            tier: "php-fpm".into(),
            cpu_user_s: 1.5,
            cpu_sys_s: 0.25,
            rss_bytes: 4096,
            processes: 3,
        };
        board.tiers_sampled(&[tier]);
        let text = super::render(&board.cells());
        let l = r#"run="",stack="a \"b\"\\c\nd",workload="",load="c=1",repetition="""#;
        for line in [
            format!("loadlab_requests_total{{{l},outcome=\"completed\"}} 3"),
            format!("loadlab_errors_total{{{l},class=\"client_timeout\"}} 1"),
            format!("loadlab_errors_total{{{l},class=\"connrefused\"}} 0"),
            format!("loadlab_responses_total{{{l},status=\"200\"}} 3"),
            format!("loadlab_latency_seconds_bucket{{{l},le=\"1\"}} 0"),
            format!("loadlab_latency_seconds_bucket{{{l},le=\"2.5\"}} 1"),
            format!("loadlab_latency_seconds_bucket{{{l},le=\"+Inf\"}} 1"),
            format!("loadlab_offered_rate{{{l}}} 50"),
            format!("loadlab_open_connections{{{l}}} 1"),
            format!("loadlab_trust_flag{{{l},flag=\"errors\"}} 1"),
            format!("loadlab_trust_flag{{{l},flag=\"client_saturated\"}} 0"),
            format!("loadlab_tier_cpu_seconds_total{{{l},tier=\"php-fpm\",mode=\"user\"}} 1.5"),
            format!("loadlab_tier_cpu_seconds_total{{{l},tier=\"php-fpm\",mode=\"system\"}} 0.25"),
            format!("loadlab_tier_memory_bytes{{{l},tier=\"php-fpm\"}} 4096"),
            format!("loadlab_tier_processes{{{l},tier=\"php-fpm\"}} 3"),
            "# TYPE loadlab_latency_seconds histogram".to_string(),
        ] {
            assert!(text.lines().any(|t| t == line), "{line}\nnot in\n{text}");
        }
        // Ended, the gauges of now fall to 0; the counters stay.
        board.end();
        let text = super::render(&board.cells());
        assert!(text.contains(&format!("loadlab_offered_rate{{{l}}} 0\n")), "{text}");
        assert!(text.contains(&format!("loadlab_measuring{{{l}}} 0\n")), "{text}");
        assert!(text.contains(&format!("loadlab_requests_total{{{l},outcome=\"failed\"}} 1\n")));
    }
}
