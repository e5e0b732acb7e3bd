//! `--metrics-listen` and `--metrics-linger` on `bench`, `sweep` and `run` (and so on every
//! agent of `--agents`): the flags, and the endpoint they open for the command's life
//! (loadlab-metrics serves it; the runner's measure feeds its board).

use std::net::SocketAddr;
use std::sync::Arc;
use std::time::Duration;

use clap::Args;
use loadlab_metrics::{listen_addr, Board, Endpoint};
use loadlab_runner::commands::bench::live::EngineMeasure;

#[derive(Debug, Args)]
pub struct MetricsArgs {
    /// Serve live metrics for Prometheus at http://ADDR/metrics while the command runs. PORT or
    /// :PORT listens on 127.0.0.1 only; to listen beyond loopback, give the address
    /// (0.0.0.0:9464, [::]:9464): anyone who can reach it then reads the run's figures. Exit 13
    /// when the address is in use (docs/prometheus.md).
    #[arg(long = "metrics-listen", value_name = "ADDR", value_parser = listen_addr)]
    pub listen: Option<SocketAddr>,
    /// With --metrics-listen: after the run, keep serving until one scrape has read the final
    /// figures, for at most this long (0: exit at once, and a scraper may miss the last seconds).
    #[arg(long = "metrics-linger", value_name = "DURATION", default_value = "15s",
          value_parser = loadlab_load::parse_duration)]
    pub linger: Duration,
}

/// The endpoint of a command, serving until dropped; dropped after a measurement, it first
/// lingers (a command that ended before measuring anything has nothing to be scraped).
pub struct Served {
    endpoint: Option<(Endpoint, Arc<Board>)>,
    linger: Duration,
}

impl Drop for Served {
    fn drop(&mut self) {
        if let Some((endpoint, board)) = self.endpoint.take() {
            if !board.cells().is_empty() {
                endpoint.linger(self.linger);
            }
        }
    }
}

/// Opens the endpoint `args` asks for, before anything runs (an address in use ends the
/// command, exit 13).
pub fn open(args: &MetricsArgs) -> anyhow::Result<Served> {
    let Some(addr) = args.listen else { return Ok(Served { endpoint: None, linger: args.linger }) };
    let board = Arc::new(Board::default());
    let endpoint = Endpoint::bind(addr, board.clone()).map_err(crate::exit::failure)?;
    eprintln!("loadlab: metrics at http://{}/metrics", endpoint.addr());
    Ok(Served { endpoint: Some((endpoint, board)), linger: args.linger })
}

impl Served {
    /// Has `measure` tell the board of everything it measures.
    pub fn feed(&self, measure: &mut EngineMeasure) {
        if let Some((_, board)) = &self.endpoint {
            measure.publish_to(board.clone());
        }
    }
}
