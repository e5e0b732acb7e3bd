//! `sweep`'s layouts: the table printed as the sweep goes (one line per step, with its trust
//! flags), the knee of each target in a sentence, and autobench's CSV.

use loadlab_runner::commands::sweep::ramp::RampOutcome;
use std::io::Write;

use loadlab_runner::commands::sweep::{Gate, KneeReport, Step, SweepOutcome};
use serde::Serialize;

/// autobench's CSV columns, per target (suffixed `_host1`, `_host2` when comparing), plus the
/// p50 and p99 from due time.
pub const CSV_COLUMNS: [&str; 11] = [
    "req_rate",
    "con_rate",
    "min_rep_rate",
    "avg_rep_rate",
    "max_rep_rate",
    "stddev_rep_rate",
    "resp_time",
    "net_io",
    "errors",
    "p50_us",
    "p99_us",
];

/// autobench's CSV of the steps, one row per offered rate, the columns of each host side by
/// side.
pub fn write_csv(out: &mut dyn Write, steps: &[Step], hosts: usize) -> std::io::Result<()> {
    let suffix = |h: usize| if hosts > 1 { format!("_host{h}") } else { String::new() };
    let mut header = vec!["dem_req_rate".to_string()];
    for h in 1..=hosts {
        header.extend(CSV_COLUMNS.iter().map(|c| format!("{c}{}", suffix(h))));
    }
    writeln!(out, "{}", header.join(","))?;
    // autobench's columns have no place to say a step was cut short, or ran without a lost
    // agent's share: interrupted and partial steps are left out (the table and the JSON show
    // them).
    let steps: Vec<&Step> =
        steps.iter().filter(|s| !s.interrupted && s.partial.is_none()).collect();
    let mut rates: Vec<f64> = steps.iter().map(|s| s.offered_rps).collect();
    rates.sort_by(f64::total_cmp);
    rates.dedup();
    for rate in rates {
        let mut row = vec![format!("{rate}")];
        for h in 1..=hosts {
            match steps.iter().find(|s| s.host == h && s.offered_rps == rate) {
                Some(s) => {
                    let m = s.reply_rate;
                    let f = |v: Option<f64>| v.map_or(String::new(), |v| format!("{v:.1}"));
                    row.extend([
                        format!("{:.1}", s.sent_rps),
                        format!("{:.1}", s.conn_rate),
                        f(m.map(|m| m.min)),
                        f(m.map(|m| m.mean)),
                        f(m.map(|m| m.max)),
                        f(m.map(|m| m.stdev)),
                        format!("{:.3}", s.resp_time_ms),
                        format!("{:.1}", s.net_io_kbs),
                        s.failed.to_string(),
                        s.p50_us.to_string(),
                        s.p99_us.to_string(),
                    ]);
                }
                None => row.extend(CSV_COLUMNS.iter().map(|_| String::new())),
            }
        }
        writeln!(out, "{}", row.join(","))?;
    }
    Ok(())
}

/// Which URL each `host` of the table is, when there are two (`--compare`); nothing for one.
pub fn legend(urls: &[&str]) -> Vec<String> {
    if urls.len() < 2 {
        return Vec::new();
    }
    urls.iter().enumerate().map(|(i, url)| format!("host {}: {url}", i + 1)).collect()
}

/// The table's header line.
pub fn header() -> String {
    format!(
        "{:>4} {:>10} {:>10} {:>8} {:>24} {:>9} {:>9} {:>8} {:>7}  {}",
        "host",
        "offered",
        "achieved",
        "conn/s",
        "reply/s min/avg/max/sd",
        "p50",
        "p99",
        "errors",
        "late99",
        "trust"
    )
}

/// A step's line of the table: its figures and what its verdict says of them.
pub fn row(s: &Step) -> String {
    let rr = s.reply_rate.map_or("-".to_string(), |m| {
        format!("{:.0}/{:.0}/{:.0}/{:.1}", m.min, m.mean, m.max, m.stdev)
    });
    format!(
        "{:>4} {:>10.1} {:>10.1} {:>8.1} {:>24} {:>9} {:>9} {:>8} {:>7}  {}",
        s.host,
        s.offered_rps,
        s.achieved_rps,
        s.conn_rate,
        rr,
        loadlab_stats::format::micros(s.p50_us as f64),
        loadlab_stats::format::micros(s.p99_us as f64),
        s.failed,
        loadlab_stats::format::micros(s.late_p99_us as f64),
        s.trust_column()
    )
}

/// On an agent other than agent 0: whose the steps are, in place of the knees it leaves to
/// agent 0.
pub fn share(outcome: &SweepOutcome) -> Option<String> {
    outcome.share.as_ref().map(|share| {
        format!(
            "{share}: each step above is this host's share of it; the knees are agent 0's, \
             judged on every agent's steps added"
        )
    })
}

/// The knee of each target in a sentence.
pub fn knees(knees: &[KneeReport]) -> Vec<String> {
    let mut lines = Vec::new();
    for k in knees {
        let text = match (k.offered_rps, k.reason.as_str()) {
            _ if k.interrupted && k.steps_judged == 0 => format!(
                "knee of {}: not found: the sweep was interrupted before any step finished",
                k.target
            ),
            (Some(rate), "none") if k.interrupted => format!(
                "knee of {}: above {rate} req/s, the highest of the {} steps that finished \
                     (the sweep was interrupted; none of them failed)",
                k.target, k.steps_judged
            ),
            (Some(rate), "none") => format!(
                "knee of {}: above {rate} req/s, the highest rate tried (every step passed)",
                k.target
            ),
            (Some(rate), reason) => format!(
                "knee of {}: {rate} req/s offered, {:.1} achieved, p99 {}; the next step ({} \
                     req/s) broke: {reason}",
                k.target,
                k.achieved_rps.unwrap_or(0.0),
                loadlab_stats::format::micros(k.p99_us.unwrap_or(0) as f64),
                k.next_offered_rps.unwrap_or(0.0)
            ),
            (None, reason) => format!(
                "knee of {}: below the lowest rate tried ({} req/s broke: {reason})",
                k.target,
                k.next_offered_rps.unwrap_or(0.0)
            ),
        };
        let text = if k.interrupted && k.steps_judged > 0 && k.reason != "none" {
            format!("{text} (interrupted: of the {} steps that finished)", k.steps_judged)
        } else {
            text
        };
        lines.push(text);
    }
    lines
}

/// A target's SLO gate on its knee's achieved rate.
pub fn gate(g: &Gate) -> String {
    let verdict = if g.passed { "pass" } else { "FAIL" };
    format!("SLO gate of {}: {verdict}: {}", g.target, g.detail)
}

/// `--format json`: the steps, the knee (of the first target, and of each) and the gates.
pub fn write_json(out: &mut dyn Write, outcome: &SweepOutcome) -> std::io::Result<()> {
    #[derive(Serialize)]
    struct Out<'a> {
        loadlab_version: &'static str,
        interrupted: bool,
        steps: &'a [Step],
        knee: Option<&'a KneeReport>,
        knees: &'a [KneeReport],
        gates: &'a [Gate],
        #[serde(skip_serializing_if = "Option::is_none")]
        share: Option<&'a str>,
    }
    let SweepOutcome { steps, knees, interrupted, gates, share } = outcome;
    let doc = Out {
        loadlab_version: env!("CARGO_PKG_VERSION"),
        interrupted: *interrupted,
        steps,
        knee: knees.first(),
        knees,
        gates,
        share: share.as_deref(),
    };
    serde_json::to_writer_pretty(&mut *out, &doc)?;
    writeln!(out)
}

/// `sweep --ramp`: the figures of every second, then the knee in a sentence.
pub fn write_ramp_text(out: &mut dyn Write, outcome: &RampOutcome) -> std::io::Result<()> {
    writeln!(out, "loadlab sweep {} (one rising ramp)", outcome.url)?;
    // A ramp of the offered rate: an open loop's seconds.
    crate::bench::seconds::text(&outcome.seconds, false, out)?;
    writeln!(out, "{}", outcome.sentence())
}

/// `sweep --ramp --format json`: the seconds and the knee, with its sentence.
pub fn write_ramp_json(out: &mut dyn Write, outcome: &RampOutcome) -> std::io::Result<()> {
    #[derive(Serialize)]
    struct Out<'a> {
        loadlab_version: &'static str,
        mode: &'static str,
        #[serde(flatten)]
        outcome: &'a RampOutcome,
        sentence: String,
    }
    let doc = Out {
        loadlab_version: env!("CARGO_PKG_VERSION"),
        mode: "ramp",
        outcome,
        sentence: outcome.sentence(),
    };
    serde_json::to_writer_pretty(&mut *out, &doc).map_err(std::io::Error::other)?;
    writeln!(out)
}
