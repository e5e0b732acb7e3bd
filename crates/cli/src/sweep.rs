//! `loadlab sweep URL`: an offered-rate sweep, optionally of two targets interleaved step by
//! step (autobench's --host1/--host2), with the knee found and every step's trust flagged.

use std::io::Write;
use std::path::PathBuf;
use std::time::Duration;

use anyhow::Context;
use clap::{Args, ValueEnum};
use loadlab_engine::{Pacing, Stop};
use loadlab_runner::slo::Slo;
use loadlab_runner::sweep::{
    run_sweep, Gate, KneeReport, Step, SweepOutcome, SweepPlan, SweepTarget,
};
use loadlab_stats::knee::Criteria;
use serde::Serialize;

use crate::exit::{Failure, OK, SLO_FAILED};
use crate::load::{self, RequestArgs, ScheduleArgs};
use crate::units::parse_duration;

#[derive(Debug, Clone, Copy, PartialEq, Eq, ValueEnum)]
pub enum SweepFormat {
    /// The table, then the knee.
    Text,
    /// `steps` (one object per step and target) and `knee`; the table goes to stderr.
    Json,
}

#[derive(Debug, Args)]
pub struct SweepArgs {
    /// The target, an http:// URL.
    pub url: String,
    /// Offered request rates: a range `LOW..HIGH:STEP` or a list `100,200,400`.
    #[arg(long = "rates", value_parser = parse_rates)]
    pub rates: RateList,
    /// How long each step is measured, after its warm-up of at least 1s [default: 10s].
    #[arg(long = "step-duration", value_parser = parse_duration, conflicts_with = "conns_per_step")]
    pub step_duration: Option<Duration>,
    /// Connections per step instead of a duration (httperf's --num-conns; implies sessions).
    #[arg(long = "conns-per-step", value_name = "N")]
    pub conns_per_step: Option<u64>,
    /// Requests per connection: the step's rate is then reached with new connections at
    /// rate/K per second, K calls each (httperf's --num-calls, as autobench drives it).
    #[arg(long = "calls-per-conn", value_name = "K")]
    pub calls_per_conn: Option<u32>,
    /// A second target, run at every step right next to the first (autobench's --host2).
    #[arg(long = "compare", value_name = "URL2")]
    pub compare: Option<String>,
    /// Write autobench's columns (plus p50/p99 from due time) to FILE as CSV.
    #[arg(long = "csv", value_name = "FILE")]
    pub csv: Option<PathBuf>,
    /// Output format.
    #[arg(long = "format", value_enum, default_value_t = SweepFormat::Text)]
    pub format: SweepFormat,
    /// Largest error ratio a step may have and still count below the knee (0.01 = 1%).
    #[arg(long = "max-errors", default_value_t = 0.0)]
    pub max_errors: f64,
    /// Thresholds each step must hold to count below the knee ('p99<10ms,errors<0.1%'; a bare
    /// duration is a p99 bound); rps terms are a gate on the knee's achieved rate ('...,rps>=3000'),
    /// exit 99 when it is lower.
    #[arg(long = "slo", value_name = "THRESHOLDS", value_parser = parse_sweep_slo)]
    pub slo: Option<Slo>,
    /// Stop N steps after every target's first failing step.
    #[arg(long = "stop-after-knee", value_name = "N")]
    pub stop_after_knee: Option<usize>,
    /// Bisect between the last good and the first bad step to place the knee more precisely.
    #[arg(long = "find-knee")]
    pub find_knee: bool,
    #[command(flatten)]
    pub schedule: ScheduleArgs,
    #[command(flatten)]
    pub request: RequestArgs,
}

/// A parsed `--rates` value.
#[derive(Debug, Clone)]
pub struct RateList(pub Vec<f64>);

/// Parses `100..2000:100` (the suite files' sweep syntax, one parser for both) or
/// `100,200,400` into ascending, distinct rates.
fn parse_rates(s: &str) -> Result<RateList, String> {
    let mut rates = if s.contains("..") {
        loadlab_suite::parse_sweep(s)?
    } else {
        s.split(',')
            .map(|x| {
                x.trim()
                    .parse::<f64>()
                    .ok()
                    .filter(|v| v.is_finite() && *v > 0.0)
                    .ok_or_else(|| format!("invalid rate {x:?} in {s:?}"))
            })
            .collect::<Result<Vec<f64>, String>>()?
    };
    rates.sort_by(f64::total_cmp);
    rates.dedup();
    Ok(RateList(rates))
}

pub fn run(args: SweepArgs) -> anyhow::Result<u8> {
    // Ctrl-C is ours from the start: one that comes during the pre-flight checks ends the
    // sweep with its (empty) knee, as one during a step does, not by the default signal.
    crate::signals::control()?;
    let usage = |m: String| anyhow::Error::new(Failure::Usage(m));
    if args.rates.0.is_empty() {
        return Err(usage("--rates: no rate given".into()));
    }
    if !(0.0..=1.0).contains(&args.max_errors) {
        return Err(usage("--max-errors is a ratio between 0 and 1 (0.01 = 1%)".into()));
    }
    let mut measure = load::EngineMeasure::new(true)?;
    let mut targets = Vec::new();
    for url in std::iter::once(&args.url).chain(args.compare.as_ref()) {
        let mut config = args.request.config(url)?;
        config.stop = match (args.conns_per_step, args.step_duration) {
            (Some(n), _) => Stop::Count(n),
            (None, d) => Stop::Duration(d.unwrap_or(Duration::from_secs(10))),
        };
        config.pacing = args.schedule.pacing(1.0, None);
        config.coalesce = args.schedule.coalesce;
        let policy = args.request.over_capacity.into();
        let (addr, capped) = loadlab_runner::bench::prepare(&mut config, policy, &mut measure)
            .map_err(crate::exit::bench_failure)?;
        if let Some(w) = capped {
            eprintln!("loadlab: warning: {w}");
        }
        targets.push(SweepTarget { config, addr, url: url.clone() });
    }
    // As fitted to what the client has (the same machine for every target).
    let max_connections = match targets[0].config.pacing {
        Pacing::Open { max_connections, .. } | Pacing::Sessions { max_connections, .. } => {
            max_connections
        }
        Pacing::Closed => args.schedule.max_connections,
    };
    let criteria = Criteria { max_error_ratio: args.max_errors, ..Criteria::default() };

    let to_stdout = args.format == SweepFormat::Text;
    let table = Table::new(to_stdout, args.request.quiet && !to_stdout);
    table.header()?;
    let plan = SweepPlan {
        rates: args.rates.0.clone(),
        targets,
        calls: (args.calls_per_conn.is_some() || args.conns_per_step.is_some())
            .then(|| args.calls_per_conn.unwrap_or(1).max(1)),
        arrival: args.schedule.arrival.into(),
        max_connections,
        criteria,
        stop_after_knee: args.stop_after_knee,
        find_knee: args.find_knee,
        slo: args.slo.clone(),
    };
    let outcome = run_sweep(&plan, &mut measure, &mut |step| table.row(step))
        .map_err(crate::exit::run_failure)?;
    let SweepOutcome { steps, knees, interrupted, gates } = &outcome;
    table.knees(knees)?;
    for g in gates {
        let verdict = if g.passed { "pass" } else { "FAIL" };
        table.line(&format!("SLO gate of {}: {verdict}: {}", g.target, g.detail))?;
    }
    if let Some(path) = &args.csv {
        write_csv(path, steps, plan.targets.len())
            .with_context(|| format!("writing {}", path.display()))?;
    }
    if args.format == SweepFormat::Json {
        #[derive(Serialize)]
        struct Out<'a> {
            loadlab_version: &'static str,
            interrupted: bool,
            steps: &'a [Step],
            knee: &'a KneeReport,
            knees: &'a [KneeReport],
            gates: &'a [Gate],
        }
        let out = Out {
            loadlab_version: env!("CARGO_PKG_VERSION"),
            interrupted: *interrupted,
            steps,
            knee: &knees[0],
            knees,
            gates,
        };
        let stdout = std::io::stdout();
        let mut w = std::io::BufWriter::new(stdout.lock());
        serde_json::to_writer_pretty(&mut w, &out)?;
        writeln!(w)?;
        w.flush()?;
    }
    Ok(if outcome.gates_passed() { OK } else { SLO_FAILED })
}

/// `--slo`: thresholds, or a bare duration as a p99 bound (what the flag took before it took
/// thresholds).
fn parse_sweep_slo(s: &str) -> Result<Slo, String> {
    match crate::units::parse_duration(s) {
        Ok(d) => load::parse_slo(&format!("p99<={}us", d.as_micros())),
        Err(_) => load::parse_slo(s),
    }
}

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

fn write_csv(path: &std::path::Path, steps: &[Step], hosts: usize) -> std::io::Result<()> {
    let mut out = std::io::BufWriter::new(std::fs::File::create(path)?);
    let suffix = |h: usize| if hosts > 1 { format!("_host{h}") } else { String::new() };
    let mut header = vec!["dem_req_rate".to_string()];
    for h in 1..=hosts {
        header.extend(CSV_COLUMNS.iter().map(|c| format!("{c}{}", suffix(h))));
    }
    writeln!(out, "{}", header.join(","))?;
    // autobench's columns have no place to say a step was cut short: interrupted steps are
    // left out (the table and the JSON show them).
    let steps: Vec<&Step> = steps.iter().filter(|s| !s.interrupted).collect();
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
    out.flush()
}

/// The table printed as the sweep goes: to stdout for text, stderr for JSON (unless quiet).
struct Table {
    stdout: bool,
    silent: bool,
}

impl Table {
    fn new(stdout: bool, silent: bool) -> Table {
        Table { stdout, silent }
    }

    fn line(&self, s: &str) -> std::io::Result<()> {
        if self.silent {
            return Ok(());
        }
        if self.stdout {
            let mut out = std::io::stdout().lock();
            writeln!(out, "{s}")?;
            out.flush()
        } else {
            eprintln!("{s}");
            Ok(())
        }
    }

    fn header(&self) -> std::io::Result<()> {
        self.line(&format!(
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
        ))
    }

    fn row(&self, s: &Step) -> std::io::Result<()> {
        let rr = s.reply_rate.map_or("-".to_string(), |m| {
            format!("{:.0}/{:.0}/{:.0}/{:.1}", m.min, m.mean, m.max, m.stdev)
        });
        let mut trust = Vec::new();
        if s.flags.client_saturated {
            trust.push("CLIENT SATURATED");
        }
        if s.flags.client_starved {
            trust.push("CLIENT STARVED");
        }
        if s.flags.fd_or_port_exhausted {
            trust.push("FD/PORTS EXHAUSTED");
        }
        if s.flags.network_bound {
            trust.push("NETWORK-BOUND");
        }
        if s.flags.schedule_missed {
            trust.push("schedule missed");
        }
        if s.flags.errors {
            trust.push("errors");
        }
        let non_2xx = format!("{} non-2xx", s.non_2xx);
        if s.non_2xx > 0 {
            trust.push(&non_2xx);
        }
        if s.interrupted {
            // What a step stopped part-way shows is no finding about anyone.
            trust.clear();
            trust.push("INTERRUPTED: not judged");
        } else if !s.trusted {
            trust.push("-> says nothing about the server");
        }
        if s.slo.as_ref().is_some_and(|v| !v.passed) {
            trust.push("SLO broken");
        }
        if s.bisect {
            trust.push("(bisect)");
        }
        self.line(&format!(
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
            if trust.is_empty() { "ok".to_string() } else { trust.join(", ") }
        ))
    }

    fn knees(&self, knees: &[KneeReport]) -> std::io::Result<()> {
        self.line("")?;
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
            self.line(&text)?;
        }
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn rate_lists() {
        assert_eq!(parse_rates("100..500:100").unwrap().0, vec![100.0, 200.0, 300.0, 400.0, 500.0]);
        assert_eq!(parse_rates("400,100,200,100").unwrap().0, vec![100.0, 200.0, 400.0]);
        assert_eq!(parse_rates("10..15:10").unwrap().0, vec![10.0]);
        for bad in ["", "a", "100..50:10", "0,100", "1..2", "1..1000000:1"] {
            assert!(parse_rates(bad).is_err(), "{bad}");
        }
    }
}
