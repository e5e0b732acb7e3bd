//! `bench`'s flags for what it sends beyond one URL (a URL list, a replayed log or timing
//! script) and for the interval log, and their translation into the engine's [`Traffic`]; the
//! files themselves are read by `loadlab_engine::input`.

use std::path::PathBuf;
use std::sync::Arc;

use clap::{Args, ValueEnum};
use loadlab_engine::{input, Arrival, BenchConfig, Order, Pacing, Replay, Stop, Traffic};

use crate::exit::engine_failure;
use crate::exit::Failure;

/// How `--urls` entries are picked.
#[derive(Debug, Clone, Copy, PartialEq, Eq, ValueEnum)]
pub enum UrlsOrder {
    /// At random in proportion to their weights, from --seed.
    Weighted,
    /// In the file's order, each entry `weight` times in a row.
    Sequential,
}

#[derive(Debug, Args)]
pub struct TrafficArgs {
    /// A URL list: one request a line, `[weight=N] [body=@FILE] [METHOD] /path [Name:
    /// value]...` (docs/bench.md); the URL argument gives the scheme, host and port, -m, -H
    /// and the body flags what lines leave out.
    #[arg(long = "urls", value_name = "FILE", conflicts_with_all = ["replay", "timing_script"])]
    pub urls: Option<PathBuf>,
    /// How --urls entries are picked: by weight (from --seed) or in the file's order.
    #[arg(long = "urls-order", value_enum, default_value_t = UrlsOrder::Weighted, requires = "urls")]
    pub urls_order: UrlsOrder,
    /// Replay an access log (Common/Combined Log Format or JSON lines): each line due at its
    /// time after the first (an open loop; --rate R: at R per second instead); -n N replays
    /// its first N lines.
    #[arg(
        long = "replay",
        value_name = "FILE",
        conflicts_with_all = ["timing_script", "connections", "conn_rate", "duration"]
    )]
    pub replay: Option<PathBuf>,
    /// Replay h2load's timing script: per line, an offset in milliseconds, a tab, the URI.
    #[arg(
        long = "timing-script",
        value_name = "FILE",
        conflicts_with_all = ["connections", "conn_rate", "duration"]
    )]
    pub timing_script: Option<PathBuf>,
    /// With --replay or --timing-script: X times as fast as the log (2 halves every gap).
    #[arg(long = "speed", value_name = "X")]
    pub speed: Option<f64>,
    /// Write a latency histogram per second to FILE in HdrHistogram's interval-log format
    /// (tagged corrected and uncorrected under --rate and --conn-rate).
    #[arg(long = "hdr-log", value_name = "FILE")]
    pub hdr_log: Option<PathBuf>,
}

impl TrafficArgs {
    /// The log or script to replay, if any.
    fn replay_file(&self) -> Option<&PathBuf> {
        self.replay.as_ref().or(self.timing_script.as_ref())
    }

    /// Reads the list, log or script into `config` (already built from the other flags, with
    /// its load model and stop condition), and checks what does not go with a replay. `rate`
    /// is `--rate`, `requests` `-n`.
    pub fn apply(
        &self,
        config: &mut BenchConfig,
        rate: Option<f64>,
        requests: Option<u64>,
    ) -> anyhow::Result<()> {
        let usage = |m: String| anyhow::Error::new(Failure::Usage(m));
        config.hdr_log = self.hdr_log.is_some();
        if let Some(path) = &self.urls {
            let order = match self.urls_order {
                UrlsOrder::Weighted => Order::Weighted,
                UrlsOrder::Sequential => Order::Sequential,
            };
            let mix = input::url_list::read(path, &config.target, order).map_err(engine_failure)?;
            config.traffic = Traffic::Mix(Arc::new(mix));
            return self.no_speed();
        }
        let Some(path) = self.replay_file() else { return self.no_speed() };
        let flag = if self.replay.is_some() { "--replay" } else { "--timing-script" };
        if self.replay.is_some() && config.request.method != "GET" {
            return Err(usage(
                "-m has no meaning with --replay: each line gives its method".into(),
            ));
        }
        if !config.request.body.is_empty() {
            return Err(usage(format!(
                "{flag} sends no body (logs hold none): drop the body flag"
            )));
        }
        let mut replay: Replay = match &self.replay {
            Some(_) => input::access_log::read(path, &config.target),
            None => input::timing_script::read(path, &config.target),
        }
        .map_err(engine_failure)?;
        if let Some(speed) = self.speed {
            if !(speed.is_finite() && speed > 0.0) {
                return Err(usage(format!("--speed {speed}: a speed is a positive number")));
            }
            if rate.is_some() {
                return Err(usage("--speed scales the log's timing, which --rate replaces".into()));
            }
            replay.speed = speed;
        }
        let lines = replay.len() as u64;
        let n = requests.unwrap_or(lines).min(lines);
        config.stop = Stop::Count(n);
        if let (Pacing::Open { arrival, max_connections, .. }, None) = (config.pacing, rate) {
            if arrival == Arrival::Poisson {
                return Err(usage(format!(
                    "--arrival poisson needs --rate with {flag}: without it each line is due at \
                     its time in the file"
                )));
            }
            config.pacing = Pacing::Open {
                rate: replay.mean_rate(n as usize),
                arrival: Arrival::Log,
                max_connections,
            };
        }
        config.traffic = Traffic::Replay(Arc::new(replay));
        Ok(())
    }

    fn no_speed(&self) -> anyhow::Result<()> {
        match self.speed {
            Some(_) => Err(Failure::Usage(
                "--speed scales a replay's timing: it goes with --replay or --timing-script".into(),
            )
            .into()),
            None => Ok(()),
        }
    }

    /// Whether a log or script is replayed: an open loop whatever -c says.
    pub fn replaying(&self) -> bool {
        self.replay_file().is_some()
    }
}
