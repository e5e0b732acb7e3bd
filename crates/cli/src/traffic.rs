//! `bench`'s flags for what it sends beyond one URL (a URL list, a replayed log or timing
//! script) and for the interval log; what they make of the engine's configuration is
//! loadlab-runner's (`bench::flags`).

use std::path::PathBuf;

use clap::{Args, ValueEnum};
use loadlab_engine::Order;
use loadlab_runner::commands::bench::flags::TrafficFlags;

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
    /// The flags as typed, for the runner.
    pub fn flags(&self) -> TrafficFlags {
        TrafficFlags {
            urls: self.urls.clone(),
            urls_order: match self.urls_order {
                UrlsOrder::Weighted => Order::Weighted,
                UrlsOrder::Sequential => Order::Sequential,
            },
            replay: self.replay.clone(),
            timing_script: self.timing_script.clone(),
            speed: self.speed,
            hdr_log: self.hdr_log.is_some(),
        }
    }
}
