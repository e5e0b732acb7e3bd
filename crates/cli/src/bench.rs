//! `loadlab bench URL`: one load test, closed loop, with ab's and wrk's flags.

use std::path::PathBuf;
use std::sync::Arc;
use std::time::Duration;

use anyhow::Context;
use clap::{Args, ValueEnum};
use loadlab_engine::{
    sys, BenchConfig, Control, EngineError, RequestSpec, Stop, Target, Validation,
};

use crate::exit::{Failure, OK, UNREACHABLE};
use crate::output;
use crate::progress::Progress;
use crate::report::Report;
use crate::units::parse_duration;

#[derive(Debug, Clone, Copy, PartialEq, Eq, ValueEnum)]
pub enum Format {
    /// Aligned, readable, with warnings beside the figures they touch.
    Text,
    /// Every figure, for scripts (schema: docs/json-schema.md).
    Json,
    /// ApacheBench's report layout, field for field.
    Ab,
    /// One header line and one row.
    Csv,
}

#[derive(Debug, Args)]
pub struct BenchArgs {
    /// The target, an http:// URL (host name, IPv4 or [IPv6] literal).
    pub url: String,
    /// Concurrent connections, each with one request outstanding.
    #[arg(short = 'c', long = "connections", default_value_t = 10)]
    pub connections: usize,
    /// Total requests to make (after warm-up); the run ends when all completed or failed.
    #[arg(short = 'n', long = "requests", conflicts_with = "duration")]
    pub requests: Option<u64>,
    /// How long to run (10s, 1m, 500ms); the default when -n is not given is 10s.
    #[arg(short = 'd', long = "duration", value_parser = parse_duration)]
    pub duration: Option<Duration>,
    /// Worker threads, each with its own event loop [default: CPUs available, at most -c].
    #[arg(short = 't', long = "threads")]
    pub threads: Option<usize>,
    /// CPUs to pin the worker threads to, round-robin (e.g. 0 or 0,2-3).
    #[arg(long = "pin", value_name = "CPUS")]
    pub pin: Option<String>,
    /// Open a new connection for every request (as ab without -k).
    #[arg(long = "no-keepalive")]
    pub no_keepalive: bool,
    /// Bound on each request, from its start to its last byte.
    #[arg(long = "timeout", default_value = "30s", value_parser = parse_duration)]
    pub timeout: Duration,
    /// Bound on establishing each TCP connection.
    #[arg(long = "connect-timeout", default_value = "10s", value_parser = parse_duration)]
    pub connect_timeout: Duration,
    /// The request method.
    #[arg(short = 'm', long = "method", default_value = "GET")]
    pub method: String,
    /// An extra request header, "Name: value" (repeatable).
    #[arg(short = 'H', long = "header", value_name = "HEADER")]
    pub headers: Vec<String>,
    /// Send the contents of FILE as the request body.
    #[arg(long = "body", value_name = "FILE", conflicts_with = "body_string")]
    pub body: Option<PathBuf>,
    /// Send S as the request body.
    #[arg(long = "body-string", value_name = "S")]
    pub body_string: Option<String>,
    /// Load applied before measuring, excluded from the results.
    #[arg(long = "warmup", default_value = "0s", value_parser = parse_duration)]
    pub warmup: Duration,
    /// Count responses with other status codes as failures (200, 200-299, 2xx, 200,304).
    #[arg(long = "expect-status", value_name = "CODES")]
    pub expect_status: Option<String>,
    /// Count responses whose body has another SHA-256 as failures.
    #[arg(long = "expect-body-sha256", value_name = "HEX")]
    pub expect_body_sha256: Option<String>,
    /// Count responses whose body does not contain TEXT as failures.
    #[arg(long = "expect-contains", value_name = "TEXT")]
    pub expect_contains: Option<String>,
    /// Output format.
    #[arg(long = "format", value_enum, default_value_t = Format::Text)]
    pub format: Format,
    /// Also write the latency percentile spectrum (HdrHistogram style) to FILE as CSV.
    #[arg(long = "latency-csv", value_name = "FILE")]
    pub latency_csv: Option<PathBuf>,
    /// No live progress line.
    #[arg(short = 'q', long = "quiet")]
    pub quiet: bool,
}

pub fn run(args: BenchArgs) -> anyhow::Result<u8> {
    let mut config = build_config(&args)?;
    config.target.resolve().map_err(engine_failure)?;
    let address = loadlab_engine::preflight(&config.target, config.connect_timeout)
        .map_err(engine_failure)?;

    let control = Arc::new(Control::default());
    install_ctrl_c(control.clone())?;
    let progress = (!args.quiet).then(|| Progress::start(control.clone(), &config)).flatten();
    let result = loadlab_engine::run(&config, address, control);
    if let Some(p) = progress {
        p.finish();
    }
    let result = result.map_err(engine_failure)?;

    let report = Report::new(&config, address, &result);
    if let Some(path) = &args.latency_csv {
        output::write_latency_csv(path, &result.tally.timings.total)
            .with_context(|| format!("writing {}", path.display()))?;
    }
    output::render(args.format, &report, &result)?;
    if report.target_unreachable() {
        eprintln!("loadlab: error: no request reached {}", config.target.authority);
        return Ok(UNREACHABLE);
    }
    Ok(OK)
}

/// Turns the flags into the engine's configuration, checking everything that can be checked
/// before a single byte is sent.
fn build_config(args: &BenchArgs) -> anyhow::Result<BenchConfig> {
    let usage = |m: String| anyhow::Error::new(Failure::Usage(m));
    let target = Target::parse(&args.url).map_err(engine_failure)?;
    let mut config = BenchConfig::new(target);
    config.connections = args.connections;
    let cpus = sys::allowed_cpus();
    config.threads = args.threads.unwrap_or(cpus.len()).min(args.connections.max(1));
    if let Some(t) = args.threads {
        if t > args.connections {
            return Err(usage(format!(
                "--threads {t} is more than --connections {}: each thread needs a connection",
                args.connections
            )));
        }
    }
    if let Some(pin) = &args.pin {
        config.pin = parse_cpu_list(pin).map_err(usage)?;
        if let Some(bad) = config.pin.iter().find(|c| !cpus.contains(c)) {
            return Err(usage(format!("--pin: CPU {bad} is not available (allowed: {cpus:?})")));
        }
    }
    config.stop = match (args.requests, args.duration) {
        (Some(n), _) => Stop::Requests(n),
        (None, Some(d)) => Stop::Duration(d),
        (None, None) => Stop::Duration(Duration::from_secs(10)),
    };
    config.keepalive = !args.no_keepalive;
    config.timeout = args.timeout;
    config.connect_timeout = args.connect_timeout;
    config.warmup = args.warmup;

    let mut request = RequestSpec { method: args.method.clone(), ..RequestSpec::default() };
    for h in &args.headers {
        request.headers.push(RequestSpec::parse_header(h).map_err(engine_failure)?);
    }
    if let Some(path) = &args.body {
        request.body =
            std::fs::read(path).map_err(|e| usage(format!("--body {}: {e}", path.display())))?;
    } else if let Some(s) = &args.body_string {
        request.body = s.as_bytes().to_vec();
    }
    config.request = request;

    let mut v = Validation::default();
    if let Some(s) = &args.expect_status {
        v.status =
            Validation::parse_status(s).map_err(|e| usage(format!("--expect-status: {e}")))?;
    }
    if let Some(s) = &args.expect_body_sha256 {
        v.body_sha256 = Some(
            Validation::parse_sha256(s).map_err(|e| usage(format!("--expect-body-sha256: {e}")))?,
        );
    }
    if let Some(s) = &args.expect_contains {
        if s.is_empty() {
            return Err(usage("--expect-contains: the text must not be empty".into()));
        }
        v.body_contains = Some(s.as_bytes().to_vec());
    }
    config.validation = v;
    config.check().map_err(engine_failure)?;
    Ok(config)
}

/// Parses a CPU list such as `0`, `0,2` or `0-3,6`.
fn parse_cpu_list(s: &str) -> Result<Vec<usize>, String> {
    let mut out = Vec::new();
    for part in s.split(',').map(str::trim) {
        let num = |x: &str| {
            x.trim().parse::<usize>().map_err(|_| format!("--pin: invalid CPU list {s:?}"))
        };
        match part.split_once('-') {
            Some((a, b)) => {
                let (a, b) = (num(a)?, num(b)?);
                if a > b {
                    return Err(format!("--pin: empty CPU range {part:?}"));
                }
                out.extend(a..=b);
            }
            None => out.push(num(part)?),
        }
    }
    Ok(out)
}

/// Maps engine errors to the CLI's failure classes (and so to exit codes).
fn engine_failure(e: EngineError) -> anyhow::Error {
    match e {
        EngineError::Config(m) => Failure::Usage(m).into(),
        EngineError::Unreachable { .. } => Failure::Unreachable(e.to_string()).into(),
        other => anyhow::Error::new(other),
    }
}

/// The first Ctrl-C stops the run and still prints what was measured; a second one exits at
/// once, for a run that does not stop quickly enough.
fn install_ctrl_c(control: Arc<Control>) -> anyhow::Result<()> {
    ctrlc::set_handler(move || {
        if control.stop.swap(true, std::sync::atomic::Ordering::Relaxed) {
            std::process::exit(130);
        }
    })
    .context("installing the Ctrl-C handler")
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn cpu_lists() {
        assert_eq!(parse_cpu_list("0").unwrap(), vec![0]);
        assert_eq!(parse_cpu_list("0,2-4").unwrap(), vec![0, 2, 3, 4]);
        assert!(parse_cpu_list("a").is_err());
        assert!(parse_cpu_list("3-1").is_err());
    }
}
