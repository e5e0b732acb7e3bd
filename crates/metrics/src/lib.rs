//! loadlab's live figures for Prometheus, while a run lasts: a [`Board`] that the engine's
//! per-second snapshots ([`loadlab_engine::live`]) and the runner's events (the cell being
//! measured, its trust flags once judged, a lab stack's tiers as its sampler reads them) fold into, rendered
//! in Prometheus' text exposition format ([`exposition`]) by an [`Endpoint`] on a thread of its
//! own. Nothing here runs per request: a worker tells the board of its second once a second,
//! and a scrape reads the board.

pub mod board;
pub mod endpoint;
pub mod exposition;

pub use board::{Board, Figures, Labels, Tier};
pub use endpoint::{listen_addr, Endpoint, MetricsError};
