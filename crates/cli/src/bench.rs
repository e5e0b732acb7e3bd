//! `loadlab bench URL`: one load test, with ab's, wrk's, wrk2's and httperf's load models.

use std::io::Write;
use std::path::{Path, PathBuf};
use std::time::Duration;

use anyhow::Context;
use clap::Args;
use loadlab_engine::{BenchConfig, Level};
use loadlab_runner::bench::agent::{self, Outcome};
use loadlab_runner::bench::flags::LoadFlags;
use loadlab_runner::bench::{self, Disposition};
use loadlab_runner::slo::Slo;
use loadlab_runner::values;

use crate::exit::{Failure, AGENT_LOST, OK, SLO_FAILED, STOPPED, UNREACHABLE};
use crate::load::{self, RequestArgs};
use crate::traffic::TrafficArgs;
use loadlab_load::parse_duration;
use loadlab_output::bench::{self as output, Format};

#[derive(Debug, Args)]
#[command(group(clap::ArgGroup::new("visitors").args(["wsesslog", "visits"])))]
pub struct BenchArgs {
    #[arg(help = crate::help::URL)]
    pub url: String,
    /// Closed loop: concurrent connections, each with one request outstanding [default: 10]
    /// (with --rate, wrk2's -c, the bound is --max-connections).
    /// A ramp (0..100 over -d) or stages (30s:0..100,1m:100) open and close connections on
    /// schedule (k6's ramping VUs), with the figures of every second.
    #[arg(short = 'c', long = "connections", value_parser = values::connections)]
    pub connections: Option<Level>,
    /// Total requests to make after warm-up (not with --conn-rate, whose sessions are counted
    /// in connections: --conns).
    #[arg(short = 'n', long = "requests", conflicts_with_all = ["duration", "conns", "conn_rate"])]
    pub requests: Option<u64>,
    /// How long to run (10s, 1m, 500ms); the default when no count is given is 10s.
    #[arg(short = 'd', long = "duration", value_parser = parse_duration, allow_hyphen_values = true)]
    pub duration: Option<Duration>,
    /// Open loop: requests per second, due on a schedule whatever the server's speed; latency
    /// is measured from when each request was due (-R as wrk2). A ramp over the run
    /// (100..5000) or stages (30s:0..1000,2m:1000) make the rate change over time, with the
    /// figures of every second.
    #[arg(
        short = 'R',
        long = "rate",
        value_name = "R",
        conflicts_with = "conn_rate",
        value_parser = values::level
    )]
    pub rate: Option<Level>,
    /// httperf's sessions: new connections per second, each carrying --calls-per-conn
    /// requests; a ramp or stages as --rate's.
    #[arg(long = "conn-rate", value_name = "R", value_parser = values::level)]
    pub conn_rate: Option<Level>,
    /// The open loop's rate in stages (k6's ramping arrival rate): DURATION:LEVEL or
    /// DURATION:FROM..TO, comma-separated, e.g. '30s:0..1000,2m:1000,30s:1000..0'; the run
    /// lasts their sum.
    #[arg(
        long = "stages",
        value_name = "STAGES",
        conflicts_with_all = ["rate", "conn_rate", "duration", "requests"],
        value_parser = values::stages
    )]
    pub stages: Option<Level>,
    /// Requests on each new connection with --conn-rate (httperf's --num-calls) [default: 1].
    #[arg(long = "calls-per-conn", visible_alias = "num-calls", value_name = "K")]
    pub calls_per_conn: Option<u32>,
    /// Total connections (sessions) to make with --conn-rate (httperf's --num-conns; httperf's
    /// --rate is --conn-rate here).
    #[arg(
        long = "conns",
        visible_alias = "num-conns",
        value_name = "N",
        conflicts_with = "duration"
    )]
    pub conns: Option<u64>,
    /// httperf's session log: N sessions of FILE's bursts (httperf's format), X the think time
    /// in seconds of a burst that names none; --rate is sessions per second (docs/visits.md).
    #[arg(
        long = "wsesslog",
        value_name = "N,X,FILE",
        requires = "rate",
        conflicts_with_all = ["requests", "duration", "conn_rate", "conns", "urls", "replay", "timing_script"]
    )]
    pub wsesslog: Option<String>,
    /// A visit file's visits (TOML steps with checks and captures, docs/visits.md), or files by
    /// weight (a.toml:3,b.toml, or --visits once per file): at --rate visits a second, or -c
    /// visitors; -n counts visits.
    #[arg(long = "visits", value_name = "FILE", conflicts_with_all = ["wsesslog", "view", "urls", "replay", "timing_script"])]
    pub visits: Vec<String>,
    /// With --visits: a value its steps use as {NAME} ({visitor} in it: the visitor's number).
    #[arg(long = "given", value_name = "NAME=VALUE", requires = "visits")]
    pub given: Vec<String>,
    /// With --wsesslog or --visits: connections one visitor may hold at once, a burst's
    /// requests spread over them (httperf's --max-connections with sessions) [default: 4;
    /// --visits: its widest step's, up to 4].
    #[arg(long = "visitor-connections", value_name = "K", requires = "visitors")]
    pub visitor_connections: Option<usize>,
    /// Page views at --rate a second: the URL's page, then the resources its HTML and CSS name
    /// (same host), found once before the run, over up to --browser-connections connections
    /// of each viewer; -n counts views (docs/visits.md).
    #[arg(
        long = "view",
        requires = "rate",
        conflicts_with_all = ["wsesslog", "conn_rate", "conns", "urls", "replay", "timing_script"]
    )]
    pub view: bool,
    /// With --view: also fetch the resources on these hosts (HOST: any port), over each
    /// viewer's own connections to them; other hosts' are listed as skipped.
    #[arg(
        long = "view-hosts",
        value_name = "HOST[:PORT],...",
        value_delimiter = ',',
        requires = "view"
    )]
    pub view_hosts: Vec<String>,
    /// With --view: connections one viewer may hold, as a browser's per host [default: 6].
    #[arg(long = "browser-connections", value_name = "K", requires = "view")]
    pub browser_connections: Option<usize>,
    /// With --view: each visitor views the page twice, the second time with a browser's cache
    /// of the first (fresh resources skipped, stale ones revalidated); -n counts visitors.
    #[arg(long = "repeat-view", requires = "view")]
    pub repeat_view: bool,
    #[command(flatten)]
    pub schedule: loadlab_load::Schedule,
    #[command(flatten)]
    pub request: RequestArgs,
    #[command(flatten)]
    pub traffic: TrafficArgs,
    #[command(flatten)]
    pub habits: HabitArgs,
    #[command(flatten)]
    pub agent: crate::agents::AgentArgs,
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
}

/// Flags that ab's and wrk's users type out of habit and that loadlab does anyway: accepted,
/// with a note on what loadlab does instead, rather than refused.
#[derive(Debug, Args)]
pub struct HabitArgs {
    /// ab's -k: keep-alive, which is already the default (--no-keepalive turns it off).
    #[arg(short = 'k', conflicts_with = "no_keepalive")]
    pub keepalive: bool,
    /// ab's -l: accept a varying response length, which loadlab always does (it reports the
    /// range as a note, never as a failure).
    #[arg(short = 'l')]
    pub variable_length: bool,
    /// ab's -r: go on after socket errors, which loadlab always does (each is counted by class).
    #[arg(short = 'r')]
    pub keep_going: bool,
    /// wrk's --latency: the latency distribution, which every output already has.
    #[arg(long = "latency")]
    pub latency: bool,
    /// httperf's --hog: use as many local ports as it takes, which loadlab always does (the
    /// kernel's whole ephemeral range).
    #[arg(long = "hog")]
    pub hog: bool,
}

impl HabitArgs {
    fn anyway(&self) -> loadlab_runner::habits::Anyway {
        let (keepalive, variable_length, keep_going) =
            (self.keepalive, self.variable_length, self.keep_going);
        loadlab_runner::habits::Anyway {
            keepalive,
            variable_length,
            keep_going,
            latency: self.latency,
            hog: self.hog,
        }
    }
}

pub fn run(args: BenchArgs) -> anyhow::Result<u8> {
    loadlab_runner::habits::check(&typed(&args)).map_err(Failure::usage)?;
    for note in args.habits.anyway().notes() {
        eprintln!("loadlab: note: {note}");
    }
    let request = bench::Request {
        config: build_config(&args)?,
        over_capacity: args.request.over_capacity.into(),
        slo: args.slo.clone(),
    };
    let agents = args.agent.agents()?;
    // The interval logs' files are made before the load, so that a path that cannot be
    // written is refused before the run, not after it.
    let hdr_log = open(args.traffic.hdr_log.as_deref(), "--hdr-log")?;
    let merged_log = open(args.agent.merged_hdr_log.as_deref(), "--merged-hdr-log")?;
    let mut measure = crate::progress::measure(args.request.quiet)?;
    let mut warn = |w: &str| eprintln!("loadlab: warning: {w}");
    let Some(agents) = agents else {
        let judged = bench::run(request, &mut measure, &mut warn).map_err(load::bench_failure)?;
        write_log(hdr_log, judged.result.hdr_log.as_ref(), &judged)?;
        return print(&args, &judged);
    };
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
    let (report, result) = (&judged.report, &judged.result);
    if let Some(path) = &args.latency_csv {
        output::write_latency_csv(path, result.latency())
            .with_context(|| format!("writing {}", path.display()))?;
    }
    let mut stdout = std::io::BufWriter::new(std::io::stdout().lock());
    output::render(args.format, report, result, &mut stdout)?;
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

/// Turns the flags into the engine's configuration, checking everything that can be checked
/// before a single byte is sent.
fn build_config(args: &BenchArgs) -> anyhow::Result<BenchConfig> {
    let load = LoadFlags {
        connections: args.connections.clone(),
        requests: args.requests,
        duration: args.duration,
        rate: args.rate.clone().or(args.stages.clone()),
        conn_rate: args.conn_rate.clone(),
        calls_per_conn: args.calls_per_conn,
        conns: args.conns,
        schedule: args.schedule,
        traffic: args.traffic.flags(),
        wsesslog: args.wsesslog.clone().map(|spec| (spec, args.visitor_connections)),
        view: args
            .view
            .then(|| (args.browser_connections, args.repeat_view, args.view_hosts.clone())),
        visits: (!args.visits.is_empty()).then(|| (args.visits.clone(), args.visitor_connections)),
        given: args.given.clone(),
    };
    let mut note = |said: &str| eprintln!("loadlab: note: {said}");
    load.config(&args.request.flags(), &args.url, &mut note).map_err(crate::exit::failure)
}

/// The flags other tools' habits concern, as typed.
fn typed(args: &BenchArgs) -> loadlab_runner::habits::Typed<'_> {
    loadlab_runner::habits::Typed {
        connections: args.connections.as_ref().map(|c| c.mean() as usize),
        rate: args.rate.as_ref().or(args.stages.as_ref()).map(Level::mean),
        conn_rate: args.conn_rate.as_ref().map(Level::mean),
        conns: args.conns,
        calls: args.calls_per_conn,
        requests: args.requests,
        duration: args.duration.is_some(),
        threads: args.request.threads,
        method: &args.request.method,
        http2: args.request.http2,
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
