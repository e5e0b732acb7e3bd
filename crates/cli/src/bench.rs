//! `loadlab bench URL`: one load test, with ab's, wrk's, wrk2's and httperf's load models.

use std::io::Write;
use std::path::{Path, PathBuf};

use anyhow::Context;
use clap::Args;
use loadlab_engine::{BenchConfig, Level};
use loadlab_runner::commands::bench::flags::{LoadFlags, RequestFlags, TrafficFlags};
use loadlab_runner::commands::bench::profiled::Profiled;
use loadlab_runner::commands::bench::{self, habits, Disposition};
use loadlab_runner::hosts::agent::{self, Outcome};
use loadlab_runner::judge::slo::Slo;
use loadlab_runner::values;

use crate::exit::{Failure, AGENT_LOST, OK, SLO_FAILED, STOPPED, UNREACHABLE};
use loadlab_output::bench::{self as output, Format};

#[derive(Debug, Args)]
pub struct BenchArgs {
    #[arg(help = crate::help::URL)]
    pub url: String,
    #[command(flatten)]
    pub load: LoadFlags,
    #[command(flatten)]
    pub request: RequestFlags,
    #[command(flatten)]
    pub traffic: TrafficFlags,
    #[command(flatten)]
    pub habits: habits::flags::Habits,
    #[command(flatten)]
    pub agent: crate::agents::AgentArgs,
    #[command(flatten)]
    pub metrics: crate::metrics::MetricsArgs,
    /// Output format.
    #[arg(long = "format", value_enum, default_value_t = Format::Text)]
    pub format: Format,
    /// Also write the latency percentile spectrum (HdrHistogram style) to FILE as CSV (ab's
    /// -e).
    #[arg(short = 'e', long = "latency-csv", value_name = "FILE")]
    pub latency_csv: Option<PathBuf>,
    /// A pass/fail gate: thresholds that must all hold, e.g. 'p99<50ms,errors<0.1%,rps>1000'
    /// (pNN, mean, max against a duration; errors as a share; rps); exit 99 when one fails.
    #[arg(long = "slo", value_name = "THRESHOLDS", value_parser = values::slo)]
    pub slo: Option<Slo>,
    /// The URL being a lab instance's (`loadlab stack up`): record each of its tiers' on-CPU
    /// stacks with perf while the bench measures (after the warm-up), as `run --profile` does,
    /// and print each tier's top functions after the result (PHP's own too when the stack was
    /// brought up with --profile). Needs linux-perf and the right to profile the machine (root).
    #[arg(long = "profile", conflicts_with = "agents")]
    pub profile: bool,
}

pub fn run(mut args: BenchArgs) -> anyhow::Result<u8> {
    let notes = args.habits.lower(&mut args.load, &mut args.request);
    let typed = typed(&args);
    habits::check(&typed).map_err(Failure::usage)?;
    for note in habits::threads_note(&typed).into_iter().chain(notes) {
        eprintln!("loadlab: note: {note}");
    }
    let config = build_config(&args)?;
    let profile = args.profile.then(|| profiled(&config)).transpose()?;
    let request = bench::Request {
        config,
        over_capacity: args.request.over_capacity,
        slo: args.slo.clone(),
        profile,
    };
    let agents = args.agent.agents()?;
    // The interval logs' files are made before the load, so that a path that cannot be
    // written is refused before the run, not after it.
    let hdr_log = open(args.traffic.hdr_log.as_deref(), "--hdr-log")?;
    let merged_log = open(args.agent.merged_hdr_log.as_deref(), "--merged-hdr-log")?;
    let served = crate::metrics::open(&args.metrics)?;
    let Some(agents) = agents else {
        // One load on this host: the live view, unless told not to or not on a terminal.
        let title = format!("bench {}", args.url);
        let (mut measure, mut said) = crate::progress::watch(&title, &args.request, true)?;
        served.feed(&mut measure);
        let mut warn = |w: &str| said.err(&format!("loadlab: warning: {w}"));
        let judged = bench::run(request, &mut measure, &mut warn);
        said.close()?;
        let judged = judged.map_err(crate::exit::bench_failure)?;
        write_log(hdr_log, judged.result.hdr_log.as_ref(), &judged)?;
        return print(&args, &judged);
    };
    let mut measure = crate::progress::measure(args.request.quiet)?;
    served.feed(&mut measure);
    let mut warn = |w: &str| eprintln!("loadlab: warning: {w}");
    let control = measure.control();
    if agents.share.index == 0 {
        measure.show_others(agents.others.clone());
    }
    let outcome = agent::run(request, &agents, &mut measure, control, &mut warn)
        .map_err(crate::agents::failure)?;
    match outcome {
        Outcome::Merged { judged, own_log, lost } => {
            write_log(hdr_log, own_log.as_ref(), &judged)?;
            write_log(merged_log, judged.result.hdr_log.as_ref(), &judged)?;
            let code = print(&args, &judged)?;
            Ok(if lost.is_some() { AGENT_LOST } else { code })
        }
        Outcome::Member { judged, stopped } => {
            write_log(hdr_log, judged.result.hdr_log.as_ref(), &judged)?;
            // The figures of this agent's part; the test's verdict (--slo) is agent 0's.
            print(&args, &judged)?;
            match stopped {
                Some(s) if s.lost => {
                    eprintln!("loadlab: error: agent 0 stopped the test: {}", s.reason);
                    Ok(AGENT_LOST)
                }
                Some(s) => {
                    eprintln!("loadlab: agent 0 stopped the test: {}", s.reason);
                    Ok(STOPPED)
                }
                None => Ok(OK),
            }
        }
    }
}

/// The file an interval-log flag names, created before the run.
fn open<'a>(
    path: Option<&'a Path>,
    flag: &str,
) -> anyhow::Result<Option<(&'a Path, std::fs::File)>> {
    path.map(|p| Ok((p, create(p, flag)?))).transpose()
}

/// Writes an interval log into the file made before the run.
fn write_log(
    file: Option<(&Path, std::fs::File)>,
    log: Option<&loadlab_engine::HdrLog>,
    judged: &bench::Judged,
) -> anyhow::Result<()> {
    if let (Some((path, file)), Some(log)) = (file, log) {
        let url = &judged.config.target.url;
        let comment = format!("loadlab {} bench {url}", env!("CARGO_PKG_VERSION"));
        output::write_hdr_log(file, log, &comment)
            .with_context(|| format!("writing {}", path.display()))?;
    }
    Ok(())
}

/// Prints a judged run in the chosen format; returns its exit code.
fn print(args: &BenchArgs, judged: &bench::Judged) -> anyhow::Result<u8> {
    let report = &judged.report;
    if let (Some(path), Some(latency)) = (&args.latency_csv, &report.histograms.latency) {
        output::write_latency_csv(path, latency)
            .with_context(|| format!("writing {}", path.display()))?;
    }
    if let Some(Err(why)) = report.profiles.as_ref().map(|p| &p.tiers) {
        eprintln!("loadlab: perf could not record ({why}): measured without profiles");
    }
    let mut stdout = std::io::BufWriter::new(std::io::stdout().lock());
    output::render(args.format, report, &mut stdout)?;
    stdout.flush()?;
    drop(stdout);
    let unreachable = judged.disposition == Disposition::Unreachable;
    for line in output::beside(args.format, report, !unreachable) {
        eprintln!("loadlab: {line}");
    }
    Ok(match judged.disposition {
        Disposition::Unreachable => {
            let at = &judged.config.target.authority;
            eprintln!("loadlab: error: no request reached {at}");
            UNREACHABLE
        }
        Disposition::SloFailed => SLO_FAILED,
        Disposition::Finished => OK,
    })
}

/// `--profile`'s lab instance, the one at the target's address, ready to be profiled (exit 2
/// when it is no instance's, 4 when perf or php-excimer is missing); what to know of it is
/// said on stderr.
fn profiled(config: &BenchConfig) -> anyhow::Result<Profiled> {
    let lab = loadlab_lab::Lab::from_env().map_err(crate::exit::failure)?;
    let profiled = Profiled::at(lab, &config.target.authority).map_err(crate::exit::failure)?;
    if let Some(note) = profiled.note() {
        eprintln!("loadlab: note: {note}");
    }
    Ok(profiled)
}

/// Turns the flags into the engine's configuration, checking everything that can be checked
/// before a single byte is sent.
fn build_config(args: &BenchArgs) -> anyhow::Result<BenchConfig> {
    let mut note = |said: &str| eprintln!("loadlab: note: {said}");
    args.load
        .config(&args.request, &args.traffic, &args.url, &mut note)
        .map_err(crate::exit::failure)
}

/// The flags other tools' habits concern, as typed.
fn typed(args: &BenchArgs) -> habits::Typed<'_> {
    habits::Typed {
        url: &args.url,
        connections: args.load.connections.as_ref().map(|c| c.mean() as usize),
        rate: args.load.rate().map(Level::mean),
        conn_rate: args.load.conn_rate.as_ref().map(Level::mean),
        conns: args.load.conns,
        calls: args.load.calls_per_conn,
        requests: args.load.requests,
        duration: args.load.duration.is_some(),
        threads: args.request.threads,
        keepalive: args.habits.keepalive,
        closes: args.request.asks_close(),
        method: &args.request.request.method,
        http2: args.request.protocol.http2,
        cpus: loadlab_engine::sys::allowed_cpus().len(),
    }
}

/// Creates the file an output flag names, before the run: a path that cannot be written is
/// the user's to fix (exit 2), found before any load.
fn create(path: &Path, flag: &str) -> anyhow::Result<std::fs::File> {
    std::fs::File::create(path).map_err(|e| {
        Failure::usage(format!("{flag} {}: cannot create it: {e}", path.display())).into()
    })
}
