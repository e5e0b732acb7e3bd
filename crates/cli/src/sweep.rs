//! `loadlab sweep URL`: an offered-rate sweep, optionally of two targets interleaved step by
//! step (autobench's --host1/--host2), with the knee found and every step's trust flagged.

use std::io::Write;
use std::path::PathBuf;
use std::time::Duration;

use anyhow::Context;
use clap::{Args, ValueEnum};
use loadlab_engine::{Pacing, Stop};
use loadlab_output::sweep as output;
use loadlab_runner::slo::Slo;
use loadlab_runner::sweep::{run_sweep, SweepPlan, SweepTarget};
use loadlab_runner::Measure;
use loadlab_stats::knee::Criteria;

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
    #[arg(help = crate::help::URL)]
    pub url: String,
    /// Offered request rates: a range `LOW..HIGH:STEP` or a list `100,200,400`.
    #[arg(long = "rates", value_parser = parse_rates)]
    pub rates: RateList,
    /// How long each step is measured, after its warm-up of at least 1s [default: 10s].
    #[arg(long = "step-duration", value_parser = parse_duration, allow_hyphen_values = true, conflicts_with = "conns_per_step")]
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
    // The request flags are bench's, and so are the habits they may hide (h2load's -m); each
    // step has its duration, so -t is never ab's time limit here.
    let typed = loadlab_runner::habits::Typed {
        method: &args.request.method,
        http2: args.request.http2,
        duration: true,
        ..Default::default()
    };
    loadlab_runner::habits::check(&typed).map_err(usage)?;
    if args.rates.0.is_empty() {
        return Err(usage("--rates: no rate given".into()));
    }
    if !(0.0..=1.0).contains(&args.max_errors) {
        return Err(usage("--max-errors is a ratio between 0 and 1 (0.01 = 1%)".into()));
    }
    let mut measure = crate::progress::measure(true)?;
    let plan = plan(&args, targets(&args, &mut measure)?);
    let to_stdout = args.format == SweepFormat::Text;
    let table = Table { stdout: to_stdout, silent: args.request.quiet && !to_stdout };
    let urls: Vec<&str> = plan.targets.iter().map(|t| t.url.as_str()).collect();
    for line in output::legend(&urls) {
        table.line(&line)?;
    }
    table.line(&output::header())?;
    let outcome = run_sweep(&plan, &mut measure, &mut |step| table.line(&output::row(step)))
        .map_err(crate::exit::run_failure)?;
    table.line("")?;
    for line in output::knees(&outcome.knees) {
        table.line(&line)?;
    }
    for g in &outcome.gates {
        table.line(&output::gate(g))?;
    }
    if let Some(path) = &args.csv {
        let write = |path: &std::path::Path| -> std::io::Result<()> {
            let mut out = std::io::BufWriter::new(std::fs::File::create(path)?);
            output::write_csv(&mut out, &outcome.steps, plan.targets.len())?;
            out.flush()
        };
        write(path).with_context(|| format!("writing {}", path.display()))?;
    }
    if args.format == SweepFormat::Json {
        let mut w = std::io::BufWriter::new(std::io::stdout().lock());
        output::write_json(&mut w, &outcome)?;
        w.flush()?;
    }
    Ok(if outcome.gates_passed() { OK } else { SLO_FAILED })
}

/// Each target's configuration, fitted to what the client has and reached once.
fn targets(args: &SweepArgs, measure: &mut dyn Measure) -> anyhow::Result<Vec<SweepTarget>> {
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
        let (addr, capped) = loadlab_runner::bench::prepare(&mut config, policy, measure)
            .map_err(load::bench_failure)?;
        if let Some(w) = capped {
            eprintln!("loadlab: warning: {w}");
        }
        targets.push(SweepTarget { config, addr, url: url.clone() });
    }
    Ok(targets)
}

/// The sweep the flags ask for, over `targets`.
fn plan(args: &SweepArgs, targets: Vec<SweepTarget>) -> SweepPlan {
    // As fitted to what the client has (the same machine for every target).
    let max_connections = match targets[0].config.pacing {
        Pacing::Open { max_connections, .. } | Pacing::Sessions { max_connections, .. } => {
            max_connections
        }
        Pacing::Closed => args.schedule.max_connections,
    };
    SweepPlan {
        rates: args.rates.0.clone(),
        targets,
        calls: (args.calls_per_conn.is_some() || args.conns_per_step.is_some())
            .then(|| args.calls_per_conn.unwrap_or(1).max(1)),
        arrival: args.schedule.arrival.into(),
        max_connections,
        criteria: Criteria { max_error_ratio: args.max_errors, ..Criteria::default() },
        stop_after_knee: args.stop_after_knee,
        find_knee: args.find_knee,
        slo: args.slo.clone(),
    }
}

/// `--slo`: thresholds, or a bare duration as a p99 bound (what the flag took before it took
/// thresholds).
fn parse_sweep_slo(s: &str) -> Result<Slo, String> {
    match crate::units::parse_duration(s) {
        Ok(d) => load::parse_slo(&format!("p99<={}us", d.as_micros())),
        Err(_) => load::parse_slo(s),
    }
}

/// The table printed as the sweep goes: to stdout for text, stderr for JSON (unless quiet).
struct Table {
    stdout: bool,
    silent: bool,
}

impl Table {
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
