//! `loadlab bench URL`: one load test, with ab's, wrk's, wrk2's and httperf's load models.

use std::io::Write;
use std::path::{Path, PathBuf};
use std::time::Duration;

use anyhow::Context;
use clap::Args;
use loadlab_engine::{BenchConfig, Pacing, Stop};
use loadlab_runner::bench::agent::{self, Outcome};
use loadlab_runner::bench::{self, Disposition};
use loadlab_runner::slo::Slo;

use crate::exit::{Failure, AGENT_LOST, OK, SLO_FAILED, STOPPED, UNREACHABLE};
use crate::load::{self, RequestArgs, ScheduleArgs};
use crate::traffic::TrafficArgs;
use crate::units::parse_duration;
use loadlab_output::bench::{self as output, Format};

#[derive(Debug, Args)]
pub struct BenchArgs {
    #[arg(help = crate::help::URL)]
    pub url: String,
    /// Closed loop: concurrent connections, each with one request outstanding [default: 10]
    /// (with --rate, wrk2's -c, the bound is --max-connections).
    #[arg(short = 'c', long = "connections")]
    pub connections: Option<usize>,
    /// Total requests to make after warm-up (not with --conn-rate, whose sessions are counted
    /// in connections: --conns).
    #[arg(short = 'n', long = "requests", conflicts_with_all = ["duration", "conns", "conn_rate"])]
    pub requests: Option<u64>,
    /// How long to run (10s, 1m, 500ms); the default when no count is given is 10s.
    #[arg(short = 'd', long = "duration", value_parser = parse_duration, allow_hyphen_values = true)]
    pub duration: Option<Duration>,
    /// Open loop: requests per second, due on a schedule whatever the server's speed; latency
    /// is measured from when each request was due (-R as wrk2).
    #[arg(short = 'R', long = "rate", value_name = "R", conflicts_with = "conn_rate")]
    pub rate: Option<f64>,
    /// httperf's sessions: new connections per second, each carrying --calls-per-conn requests.
    #[arg(long = "conn-rate", value_name = "R")]
    pub conn_rate: Option<f64>,
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
    #[command(flatten)]
    pub schedule: ScheduleArgs,
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
    #[arg(long = "slo", value_name = "THRESHOLDS", value_parser = load::parse_slo)]
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
    /// What each habit flag given does here.
    pub fn notes(&self) -> Vec<&'static str> {
        [
            (self.keepalive, "-k: keep-alive is already on (--no-keepalive turns it off)"),
            (
                self.variable_length,
                "-l: a varying response length is never a failure here (it is a note)",
            ),
            (self.keep_going, "-r: socket errors never stop a run here (they are counted)"),
            (self.latency, "--latency: the latency percentiles are always printed"),
            (
                self.hog,
                "--hog: connections take any local port of net.ipv4.ip_local_port_range \
                 (--source-ips gives more)",
            ),
        ]
        .into_iter()
        .filter_map(|(given, note)| given.then_some(note))
        .collect()
    }
}

pub fn run(args: BenchArgs) -> anyhow::Result<u8> {
    loadlab_runner::habits::check(&typed(&args)).map_err(Failure::Usage)?;
    for note in args.habits.notes() {
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
    let own_layout = matches!(args.format, Format::Ab | Format::Httperf | Format::Csv);
    if matches!(args.format, Format::Ab | Format::Httperf) {
        // Those layouts have no place for these; stdout stays the tool's layout.
        if report.urls.is_some() {
            eprintln!(
                "loadlab: note: the per-URL figures of --urls have no place in this layout; \
                 --format text, json or csv shows them"
            );
        }
        if let Some(note) = report.replay.as_ref().and_then(|r| r.skipped_sentence()) {
            eprintln!("loadlab: note: {note}");
        }
    }
    let unreachable = judged.disposition == Disposition::Unreachable;
    if let (Some(v), true, false) = (&report.slo, own_layout, unreachable) {
        // Those layouts have no place for the gate's verdict: its line goes to stderr.
        eprintln!("loadlab: {}", v.line());
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
    let usage = |m: String| anyhow::Error::new(Failure::Usage(m));
    let mut config = args.request.config(&args.url)?;
    config.pacing = match (args.rate, args.conn_rate) {
        (Some(rate), _) => args.schedule.pacing(rate, None),
        (None, Some(rate)) => args.schedule.pacing(rate, Some(args.calls_per_conn.unwrap_or(1))),
        // A replay is an open loop; its rate, the log's, is set once the log is read.
        (None, None) if args.traffic.replaying() => args.schedule.pacing(1.0, None),
        (None, None) => Pacing::Closed,
    };
    config.coalesce = args.schedule.coalesce;
    let connections = args.connections.unwrap_or(DEFAULT_CONNECTIONS);
    config.connections = connections;
    if config.pacing == Pacing::Closed {
        match args.request.threads {
            Some(t) if t > connections => {
                return Err(usage(format!(
                    "--threads {t} is more than --connections {connections}: each thread needs \
                     a connection"
                )))
            }
            Some(_) => {}
            None => config.threads = config.threads.min(connections.max(1)),
        }
    }
    config.stop = match (args.requests, args.conns, args.duration) {
        (Some(n), _, _) | (None, Some(n), _) => Stop::Count(n),
        (None, None, Some(d)) => Stop::Duration(d),
        (None, None, None) => Stop::Duration(Duration::from_secs(10)),
    };
    args.traffic.apply(&mut config, args.rate, args.requests)?;
    config.check().map_err(crate::exit::engine_failure)?;
    Ok(config)
}

/// The closed loop's connections when -c is not given.
const DEFAULT_CONNECTIONS: usize = 10;

/// The flags other tools' habits concern, as typed.
fn typed(args: &BenchArgs) -> loadlab_runner::habits::Typed<'_> {
    loadlab_runner::habits::Typed {
        connections: args.connections,
        rate: args.rate,
        conn_rate: args.conn_rate,
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
        Failure::Usage(format!("{flag} {}: cannot create it: {e}", path.display())).into()
    })
}
