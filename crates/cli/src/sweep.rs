//! `loadlab sweep URL`: an offered-rate sweep, optionally of two targets interleaved step by
//! step (autobench's --host1/--host2), with the knee found and every step's trust flagged.

use std::io::Write;
use std::net::SocketAddr;
use std::path::PathBuf;
use std::time::Duration;

use anyhow::Context;
use clap::{Args, ValueEnum};
use loadlab_engine::{BenchConfig, BenchResult, Stop};
use loadlab_stats::knee::{self, Breach, Criteria, StepPoint};
use loadlab_stats::Moments;
use serde::Serialize;

use crate::bench_report::SCHEDULE_TOLERANCE_US;
use crate::exit::{Failure, OK};
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
    /// Largest p99 latency (from due time) a step may have and still count below the knee.
    #[arg(long = "slo", value_parser = parse_duration)]
    pub slo: Option<Duration>,
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

/// The least warm-up of a step.
const STEP_WARMUP: Duration = Duration::from_secs(1);

/// At most this many bisection steps per target with --find-knee.
const BISECT_STEPS: usize = 4;

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

/// One step of one target, with the figures autobench prints and the trust flags.
#[derive(Debug, Clone, Serialize)]
pub struct Step {
    pub target: String,
    /// 1 for the URL, 2 for --compare.
    pub host: usize,
    pub offered_rps: f64,
    /// New connections opened per second (httperf's connection rate).
    pub conn_rate: f64,
    pub achieved_rps: f64,
    pub reply_rate: Option<Moments>,
    /// Mean time to first byte, in ms (autobench's resp_time).
    pub resp_time_ms: f64,
    /// Received and sent, KB/s (autobench's net_io, from httperf's Net I/O).
    pub net_io_kbs: f64,
    pub completed: u64,
    pub failed: u64,
    /// Requests still in flight when the step ended (neither completed nor failed).
    pub unfinished: u64,
    /// Requests sent per second (httperf's request rate, autobench's req_rate).
    pub sent_rps: f64,
    pub error_ratio: f64,
    /// Latency from due time.
    pub p50_us: u64,
    pub p99_us: u64,
    pub service_p99_us: u64,
    pub late_p99_us: u64,
    pub not_sent: u64,
    /// Responses whose status was not 2xx (completed ones, and validation failures when
    /// --expect-status is given).
    pub non_2xx: u64,
    pub flags: Flags,
    /// False when the client could not drive the step: it says nothing about the server.
    pub trusted: bool,
    /// Added by --find-knee between two planned steps.
    pub bisect: bool,
}

#[derive(Debug, Clone, Serialize)]
pub struct Flags {
    pub client_saturated: bool,
    pub fd_or_port_exhausted: bool,
    /// The busier direction used at least 90% of the link's known speed.
    pub network_bound: bool,
    pub schedule_missed: bool,
    pub errors: bool,
}

#[derive(Debug, Clone, Serialize)]
pub struct KneeReport {
    pub target: String,
    /// The highest offered rate that passed, null if the first step failed.
    pub offered_rps: Option<f64>,
    pub achieved_rps: Option<f64>,
    pub p99_us: Option<u64>,
    /// Which criterion the next step broke: throughput, errors, latency, client_limited,
    /// network_bound; or `none` when every step passed (the knee lies above the highest rate
    /// tried).
    pub reason: String,
    /// The first failing step's offered rate.
    pub next_offered_rps: Option<f64>,
}

struct Target {
    config: BenchConfig,
    addr: SocketAddr,
    url: String,
}

pub fn run(args: SweepArgs) -> anyhow::Result<u8> {
    let usage = |m: String| anyhow::Error::new(Failure::Usage(m));
    if args.rates.0.is_empty() {
        return Err(usage("--rates: no rate given".into()));
    }
    if !(0.0..=1.0).contains(&args.max_errors) {
        return Err(usage("--max-errors is a ratio between 0 and 1 (0.01 = 1%)".into()));
    }
    let mut targets = Vec::new();
    for url in std::iter::once(&args.url).chain(args.compare.as_ref()) {
        let mut config = args.request.config(url)?;
        config.stop = match (args.conns_per_step, args.step_duration) {
            (Some(n), _) => Stop::Count(n),
            (None, d) => Stop::Duration(d.unwrap_or(Duration::from_secs(10))),
        };
        let addr = load::reach(&mut config)?;
        targets.push(Target { config, addr, url: url.clone() });
    }
    load::warn_fd_limit(args.schedule.max_connections, targets[0].config.threads);
    let criteria = Criteria {
        max_error_ratio: args.max_errors,
        slo_p99_us: args.slo.map(|d| d.as_micros() as u64),
        ..Criteria::default()
    };

    let to_stdout = args.format == SweepFormat::Text;
    let table = Table::new(to_stdout, args.request.quiet && !to_stdout);
    table.header()?;
    let mut steps: Vec<Step> = Vec::new();
    let mut interrupted = false;
    'rates: for (i, &rate) in args.rates.0.iter().enumerate() {
        // Alternate which target goes first, so neither always runs on a machine the other
        // just warmed (or heated).
        let order: Vec<usize> = if i % 2 == 0 {
            (0..targets.len()).collect()
        } else {
            (0..targets.len()).rev().collect()
        };
        for t in order {
            let (step, stop) = run_step(&args, &targets[t], t + 1, rate, false)?;
            table.row(&step)?;
            steps.push(step);
            if stop {
                interrupted = true;
                break 'rates;
            }
        }
        if let Some(n) = args.stop_after_knee {
            let past = |host: usize| {
                let s: Vec<&Step> = steps.iter().filter(|s| s.host == host).collect();
                let points: Vec<StepPoint> = s.iter().map(|s| point(s)).collect();
                knee::find(&points, &criteria)
                    .first_bad
                    .is_some_and(|(bad, _)| points.len() > bad + n)
            };
            if (1..=targets.len()).all(past) {
                break;
            }
        }
    }
    if args.find_knee && !interrupted {
        for (t, target) in targets.iter().enumerate() {
            let host = t + 1;
            for _ in 0..BISECT_STEPS {
                let mine = sorted_steps(&steps, host);
                let points: Vec<StepPoint> = mine.iter().map(|s| point(s)).collect();
                let k = knee::find(&points, &criteria);
                let (Some(good), Some((bad, _))) = (k.last_good, k.first_bad) else { break };
                let (lo, hi) = (mine[good].offered_rps, mine[bad].offered_rps);
                // Closer than 1% apart is below what one run of this length can tell apart.
                if hi - lo <= lo * 0.01 {
                    break;
                }
                let (step, stop) = run_step(&args, target, host, (lo + hi) / 2.0, true)?;
                table.row(&step)?;
                steps.push(step);
                if stop {
                    interrupted = true;
                    break;
                }
            }
        }
    }

    let knees: Vec<KneeReport> = targets
        .iter()
        .enumerate()
        .map(|(t, target)| knee_report(&sorted_steps(&steps, t + 1), &criteria, &target.url))
        .collect();
    table.knees(&knees)?;
    if let Some(path) = &args.csv {
        write_csv(path, &steps, targets.len())
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
        }
        let out = Out {
            loadlab_version: env!("CARGO_PKG_VERSION"),
            interrupted,
            steps: &steps,
            knee: &knees[0],
            knees: &knees,
        };
        let stdout = std::io::stdout();
        let mut w = std::io::BufWriter::new(stdout.lock());
        serde_json::to_writer_pretty(&mut w, &out)?;
        writeln!(w)?;
        w.flush()?;
    }
    Ok(OK)
}

/// Runs one step; returns it and whether Ctrl-C asked the sweep to stop.
fn run_step(
    args: &SweepArgs,
    target: &Target,
    host: usize,
    rate: f64,
    bisect: bool,
) -> anyhow::Result<(Step, bool)> {
    let mut config = target.config.clone();
    // Every step warms up for at least a second: the server's queue reaches its steady state
    // for this rate, and what the previous (perhaps overloaded) step left behind drains before
    // anything is counted.
    config.warmup = config.warmup.max(STEP_WARMUP);
    let sessions = args.calls_per_conn.is_some() || args.conns_per_step.is_some();
    let calls = args.calls_per_conn.unwrap_or(1).max(1);
    config.pacing = if sessions {
        args.schedule.pacing(rate / f64::from(calls), Some(calls))
    } else {
        args.schedule.pacing(rate, None)
    };
    config.check().map_err(load::engine_failure)?;
    let request_len =
        config.request.encode(&config.target, config.keepalive).map_or(0, |b| b.len());
    let (result, control) = load::measure(&config, target.addr, true, "")?;
    let step = step_of(&result, &target.url, host, bisect, request_len as u64);
    Ok((step, crate::signals::interrupted(&control)))
}

fn step_of(r: &BenchResult, url: &str, host: usize, bisect: bool, request_len: u64) -> Step {
    let t = &r.tally;
    let offered = r.offered_rps().unwrap_or(0.0);
    let done = t.completed + t.failed;
    let secs = r.duration.as_secs_f64().max(f64::MIN_POSITIVE);
    let fd = t.errors.get(loadlab_engine::ErrorClass::FdUnavail)
        + t.errors.get(loadlab_engine::ErrorClass::AddrUnavail);
    let flags = Flags {
        client_saturated: r.saturated(),
        fd_or_port_exhausted: fd > 0,
        network_bound: r.network_bound(),
        schedule_missed: r.schedule_missed(SCHEDULE_TOLERANCE_US),
        errors: t.failed > 0,
    };
    let conn_rate = t.connections_opened as f64 / secs;
    Step {
        target: url.to_string(),
        host,
        offered_rps: offered,
        conn_rate,
        achieved_rps: r.rps(),
        reply_rate: Moments::of(&r.per_second_completed()),
        resp_time_ms: t.timings.waiting.mean() / 1000.0,
        net_io_kbs: (t.bytes_total + t.sent * request_len) as f64 / 1024.0 / secs,
        completed: t.completed,
        failed: t.failed,
        unfinished: t.unfinished,
        sent_rps: t.sent as f64 / secs,
        error_ratio: if done > 0 { t.failed as f64 / done as f64 } else { 0.0 },
        p50_us: t.timings.corrected.percentile(50.0),
        p99_us: t.timings.corrected.percentile(99.0),
        service_p99_us: t.timings.total.percentile(99.0),
        late_p99_us: t.timings.late.percentile(99.0),
        not_sent: t.not_sent,
        non_2xx: {
            let c = t.status_classes();
            c[0] + c[2] + c[3] + c[4]
        },
        trusted: !(flags.client_saturated || flags.fd_or_port_exhausted || flags.network_bound),
        flags,
        bisect,
    }
}

fn point(s: &Step) -> StepPoint {
    StepPoint {
        offered_rps: s.offered_rps,
        achieved_rps: s.achieved_rps,
        error_ratio: s.error_ratio,
        p99_us: s.p99_us,
        client_limited: s.flags.client_saturated || s.flags.fd_or_port_exhausted,
        network_bound: s.flags.network_bound,
    }
}

/// One target's steps in ascending order of offered rate.
fn sorted_steps(steps: &[Step], host: usize) -> Vec<&Step> {
    let mut mine: Vec<&Step> = steps.iter().filter(|s| s.host == host).collect();
    mine.sort_by(|a, b| a.offered_rps.total_cmp(&b.offered_rps));
    mine
}

fn knee_report(steps: &[&Step], criteria: &Criteria, url: &str) -> KneeReport {
    let points: Vec<StepPoint> = steps.iter().map(|s| point(s)).collect();
    let k = knee::find(&points, criteria);
    let good = k.last_good.map(|i| steps[i]);
    KneeReport {
        target: url.to_string(),
        offered_rps: good.map(|s| s.offered_rps),
        achieved_rps: good.map(|s| s.achieved_rps),
        p99_us: good.map(|s| s.p99_us),
        reason: match k.first_bad {
            None => "none".into(),
            Some((_, b)) => breach_name(b).into(),
        },
        next_offered_rps: k.first_bad.map(|(i, _)| steps[i].offered_rps),
    }
}

fn breach_name(b: Breach) -> &'static str {
    match b {
        Breach::Throughput => "throughput",
        Breach::Errors => "errors",
        Breach::Latency => "latency",
        Breach::ClientLimited => "client_limited",
        Breach::NetworkBound => "network_bound",
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
        if !s.trusted {
            trust.push("-> says nothing about the server");
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
