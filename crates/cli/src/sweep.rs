//! `loadlab sweep URL`: an offered-rate sweep, optionally of two targets interleaved step by
//! step (autobench's --host1/--host2), with the knee found and every step's trust flagged.

use std::io::Write;
use std::path::PathBuf;
use std::time::Duration;

use anyhow::Context;
use clap::{Args, ValueEnum};
use loadlab_output::sweep as output;
use loadlab_runner::ramp::run_ramp;
use loadlab_runner::slo::Slo;
use loadlab_runner::sweep::{run_sweep, SweepTarget};
use loadlab_runner::sweep_agents as agents;
use loadlab_runner::sweep_plan::SweepFlags;
use loadlab_runner::values::{self, RateList};
use loadlab_runner::Measure;

use crate::exit::{Failure, OK, SLO_FAILED};
use loadlab_load::parse_duration;

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
    #[arg(long = "rates", value_parser = values::rates, required_unless_present = "ramp")]
    pub rates: Option<RateList>,
    /// Instead of steps, one run whose rate rises from FROM to TO over --ramp-duration, its
    /// knee found second by second by the same rule (known to within the ramp's slope: a
    /// sweep of steps around it confirms).
    #[arg(
        long = "ramp",
        value_name = "FROM..TO",
        value_parser = values::ramp,
        conflicts_with_all = ["rates", "compare", "find_knee", "conns_per_step", "stop_after_knee", "slo", "csv"]
    )]
    pub ramp: Option<(f64, f64)>,
    /// How long the ramp lasts [default: 10s].
    #[arg(long = "ramp-duration", value_parser = parse_duration, requires = "ramp")]
    pub ramp_duration: Option<Duration>,
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
    pub schedule: loadlab_load::Schedule,
    #[command(flatten)]
    pub request: loadlab_runner::bench::flags::RequestFlags,
    #[command(flatten)]
    pub agent: crate::agents::AgentArgs,
}

pub fn run(args: SweepArgs) -> anyhow::Result<u8> {
    // Ctrl-C is ours from the start: one that comes during the pre-flight checks ends the
    // sweep with its (empty) knee, as one during a step does, not by the default signal.
    crate::signals::control()?;
    let usage = |m: String| anyhow::Error::new(Failure::usage(m));
    // The request flags are bench's, and so are the habits they may hide (h2load's -m); each
    // step has its duration, so -t is never ab's time limit here.
    let typed = loadlab_runner::habits::Typed {
        method: &args.request.method,
        http2: args.request.http2,
        duration: true,
        ..Default::default()
    };
    loadlab_runner::habits::check(&typed).map_err(usage)?;
    if args.rates.as_ref().is_some_and(|r| r.0.is_empty()) {
        return Err(usage("--rates: no rate given".into()));
    }
    if !(0.0..=1.0).contains(&args.max_errors) {
        return Err(usage("--max-errors is a ratio between 0 and 1 (0.01 = 1%)".into()));
    }
    let flags = flags(&args);
    // A sweep's table is its progress; a ramp's one run shows the bench's line.
    let mut measure = crate::progress::measure(args.ramp.is_none() || args.request.quiet)?;
    let mut warn = |w: &str| eprintln!("loadlab: warning: {w}");
    let mut targets =
        (flags.targets(&args.request, &mut measure, &mut warn)).map_err(crate::exit::failure)?;
    if let Some(range) = args.ramp {
        return ramp(&args, &flags, targets.remove(0), &mut measure, range);
    }
    let plan = flags.plan(targets);
    let to_stdout = args.format == SweepFormat::Text;
    let table = Table { stdout: to_stdout, silent: args.request.quiet && !to_stdout };
    let urls: Vec<&str> = plan.targets.iter().map(|t| t.url.as_str()).collect();
    for line in output::legend(&urls) {
        table.line(&line)?;
    }
    table.line(&output::header())?;
    let on_step = &mut |step: &_| table.line(&output::row(step));
    let (outcome, ended) = match args.agent.agents()? {
        None => (run_sweep(&plan, &mut measure, on_step), Default::default()),
        Some(a) => {
            agents::run_sweep(&plan, &mut measure, &a, on_step).map_err(crate::agents::failure)?
        }
    };
    let outcome = outcome.map_err(crate::exit::failure)?;
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
    Ok(agents_ended(&ended).unwrap_or(if outcome.gates_passed() { OK } else { SLO_FAILED }))
}

/// `--agents`: an agent lost, or this agent stopped by agent 0, said and made the exit code.
fn agents_ended(ended: &agents::Ended) -> Option<u8> {
    for (l, step) in &ended.lost {
        eprintln!("loadlab: error: agent {} was lost in step {step}, second {}", l.index, l.second);
    }
    if let Some(s) = &ended.stopped_by {
        eprintln!("loadlab: error: agent 0 stopped the sweep: {s}");
    }
    (!ended.lost.is_empty() || ended.stopped_by.is_some()).then_some(crate::exit::AGENT_LOST)
}

/// The flags as the runner takes them.
fn flags(args: &SweepArgs) -> SweepFlags {
    SweepFlags {
        urls: std::iter::once(&args.url).chain(&args.compare).cloned().collect(),
        rates: args.rates.as_ref().map_or_else(Vec::new, |r| r.0.clone()),
        step_duration: args.step_duration,
        conns_per_step: args.conns_per_step,
        calls_per_conn: args.calls_per_conn,
        schedule: args.schedule,
        over_capacity: args.request.over_capacity,
        max_errors: args.max_errors,
        stop_after_knee: args.stop_after_knee,
        find_knee: args.find_knee,
        slo: args.slo.clone(),
    }
}

/// `sweep --ramp FROM..TO`: one shaped run, its seconds and its knee.
fn ramp(
    args: &SweepArgs,
    flags: &SweepFlags,
    target: SweepTarget,
    measure: &mut dyn Measure,
    (from, to): (f64, f64),
) -> anyhow::Result<u8> {
    let duration = args.ramp_duration.unwrap_or(Duration::from_secs(10));
    let plan = flags.ramp(target, from, to, duration);
    let (outcome, ended) = match args.agent.agents()? {
        None => (run_ramp(&plan, measure), Default::default()),
        Some(a) => agents::run_ramp(&plan, measure, &a).map_err(crate::agents::failure)?,
    };
    let outcome = outcome.map_err(crate::exit::failure)?;
    let mut out = std::io::BufWriter::new(std::io::stdout().lock());
    match args.format {
        SweepFormat::Text => output::write_ramp_text(&mut out, &outcome)?,
        SweepFormat::Json => output::write_ramp_json(&mut out, &outcome)?,
    }
    out.flush()?;
    Ok(agents_ended(&ended).unwrap_or(OK))
}

/// `--slo`: thresholds, or a bare duration as a p99 bound (what the flag took before it took
/// thresholds).
fn parse_sweep_slo(s: &str) -> Result<Slo, String> {
    match parse_duration(s) {
        Ok(d) => values::slo(&format!("p99<={}us", d.as_micros())),
        Err(_) => values::slo(s),
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
