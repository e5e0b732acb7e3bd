//! `loadlab sweep URL`: an offered-rate sweep, optionally of two targets interleaved step by
//! step (autobench's --host1/--host2), with the knee found and every step's trust flagged.

use std::io::Write as _;
use std::time::Duration;

use anyhow::Context;
use clap::Args;
use loadlab_output::sweep as output;
use loadlab_runner::commands::sweep::plan::{SweepFlags, SweepFormat};
use loadlab_runner::commands::sweep::ramp::run_ramp;
use loadlab_runner::commands::sweep::{run_sweep, Step, SweepPlan, SweepTarget};
use loadlab_runner::hosts::sweep_agents as agents;
use loadlab_runner::Measure;

use crate::exit::{Failure, OK, SLO_FAILED};
use crate::progress::Said;
use loadlab_runner::commands::bench::live::EngineMeasure;

#[derive(Debug, Args)]
pub struct SweepArgs {
    #[arg(help = crate::help::URL)]
    pub url: String,
    #[command(flatten)]
    pub sweep: SweepFlags,
    #[command(flatten)]
    pub request: loadlab_runner::commands::bench::flags::RequestFlags,
    #[command(flatten)]
    pub agent: crate::agents::AgentArgs,
    #[command(flatten)]
    pub metrics: crate::metrics::MetricsArgs,
}

pub fn run(args: SweepArgs) -> anyhow::Result<u8> {
    // Ctrl-C is ours from the start: one that comes during the pre-flight checks ends the
    // sweep with its (empty) knee, as one during a step does, not by the default signal.
    crate::signals::control()?;
    let usage = |m: String| anyhow::Error::new(Failure::usage(m));
    // The request flags are bench's, and so are the habits they may hide (h2load's -m); each
    // step has its duration, so -t is never ab's time limit here.
    let typed = loadlab_runner::commands::bench::habits::Typed {
        url: &args.url,
        method: &args.request.request.method,
        http2: args.request.protocol.http2,
        duration: true,
        ..Default::default()
    };
    loadlab_runner::commands::bench::habits::check(&typed).map_err(usage)?;
    if args.sweep.rates.as_ref().is_some_and(|r| r.0.is_empty()) {
        return Err(usage("--rates: no rate given".into()));
    }
    if !(0.0..=1.0).contains(&args.sweep.max_errors) {
        return Err(usage("--max-errors is a ratio between 0 and 1 (0.01 = 1%)".into()));
    }
    let served = crate::metrics::open(&args.metrics)?;
    let flags = &args.sweep;
    let (mut measure, mut said) = shown(&args)?;
    served.feed(&mut measure);
    let mut warn = |w: &str| said.err(&format!("loadlab: warning: {w}"));
    let mut targets = (flags.targets(&args.url, &args.request, &mut measure, &mut warn))
        .map_err(crate::exit::failure)?;
    if let Some(range) = args.sweep.ramp {
        return ramp(&args, flags, targets.remove(0), &mut measure, range, said);
    }
    let plan = flags.plan(targets);
    let to_stdout = args.sweep.format == SweepFormat::Text;
    let silent = args.request.quiet && !to_stdout;
    let table = Table { stdout: to_stdout, silent, said: &said };
    let urls: Vec<&str> = plan.targets.iter().map(|t| t.url.as_str()).collect();
    for line in output::legend(&urls) {
        table.line(&line)?;
    }
    table.line(&output::header())?;
    let mut so_far: Vec<Step> = Vec::new();
    let on_step = &mut |step: &Step| {
        if let Some(view) = table.said.view() {
            so_far.push(step.clone());
            show_step(view, &plan, &so_far);
        }
        table.line(&output::row(step))
    };
    let (outcome, ended) = match args.agent.agents()? {
        None => (run_sweep(&plan, &mut measure, on_step), Default::default()),
        Some(a) => {
            agents::run_sweep(&plan, &mut measure, &a, on_step).map_err(crate::agents::failure)?
        }
    };
    said.close()?;
    let table = Table { stdout: to_stdout, silent, said: &said };
    let outcome = outcome.map_err(crate::exit::failure)?;
    table.line("")?;
    for line in output::knees(&outcome.knees).into_iter().chain(output::share(&outcome)) {
        table.line(&line)?;
    }
    for g in &outcome.gates {
        table.line(&output::gate(g))?;
    }
    if let Some(path) = &args.sweep.csv {
        let write = |path: &std::path::Path| -> std::io::Result<()> {
            let mut out = std::io::BufWriter::new(std::fs::File::create(path)?);
            output::write_csv(&mut out, &outcome.steps, plan.targets.len())?;
            out.flush()
        };
        write(path).with_context(|| format!("writing {}", path.display()))?;
    }
    if args.sweep.format == SweepFormat::Json {
        let mut w = std::io::BufWriter::new(std::io::stdout().lock());
        output::write_json(&mut w, &outcome)?;
        w.flush()?;
    }
    Ok(agents_ended(&ended).unwrap_or(if outcome.gates_passed() { OK } else { SLO_FAILED }))
}

/// The live view of a sweep after each step: the steps against their offered rate, and the
/// knee as the steps so far place it, once one of them broke (the one knee judgement, the
/// sweep's own at its end).
fn show_step(view: &loadlab_tui::View, plan: &SweepPlan, so_far: &[Step]) {
    let Some(step) = so_far.last() else { return };
    view.step(step.offered_rps, step.achieved_rps);
    let found: Vec<_> = loadlab_runner::commands::sweep::knees(plan, so_far, false)
        .into_iter()
        .filter(|k| k.reason != "none")
        .collect();
    if !found.is_empty() {
        view.so_far("knee so far", output::knees(&found));
    }
}

/// How the sweep is shown as it goes: the live view; without it, a sweep's table is its
/// progress and a ramp's one run shows the bench's line. Agents show their own line.
fn shown(args: &SweepArgs) -> anyhow::Result<(EngineMeasure, Said)> {
    if args.agent.agents.is_some() {
        let quiet = args.sweep.ramp.is_none() || args.request.quiet;
        return Ok((crate::progress::measure(quiet)?, Said::none()));
    }
    let title = format!("sweep {}", args.url);
    crate::progress::watch(&title, &args.request, args.sweep.ramp.is_some())
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

/// `sweep --ramp FROM..TO`: one shaped run, its seconds and its knee.
fn ramp(
    args: &SweepArgs,
    flags: &SweepFlags,
    target: SweepTarget,
    measure: &mut dyn Measure,
    (from, to): (f64, f64),
    mut said: Said,
) -> anyhow::Result<u8> {
    let duration = args.sweep.ramp_duration.unwrap_or(Duration::from_secs(10));
    let plan = flags.ramp(target, from, to, duration);
    let (outcome, ended) = match args.agent.agents()? {
        None => (run_ramp(&plan, measure), Default::default()),
        Some(a) => agents::run_ramp(&plan, measure, &a).map_err(crate::agents::failure)?,
    };
    said.close()?;
    let outcome = outcome.map_err(crate::exit::failure)?;
    let mut out = std::io::BufWriter::new(std::io::stdout().lock());
    match args.sweep.format {
        SweepFormat::Text => output::write_ramp_text(&mut out, &outcome)?,
        SweepFormat::Json => output::write_ramp_json(&mut out, &outcome)?,
    }
    out.flush()?;
    Ok(agents_ended(&ended).unwrap_or(OK))
}

/// The table printed as the sweep goes: to stdout for text, stderr for JSON (unless quiet),
/// held while the live view is on.
struct Table<'a> {
    stdout: bool,
    silent: bool,
    said: &'a Said,
}

impl Table<'_> {
    fn line(&self, s: &str) -> std::io::Result<()> {
        if self.silent {
            return Ok(());
        }
        if self.stdout {
            self.said.out(s)
        } else {
            self.said.err(s);
            Ok(())
        }
    }
}
