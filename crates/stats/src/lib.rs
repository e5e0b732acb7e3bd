//! Numbers without I/O: latency recorders built on HDR histograms, per-second series, and the
//! summary statistics that loadlab reports.
//!
//! - [`Recorder`] holds one latency distribution: an HDR histogram (µs resolution, up to one hour,
//!   three significant digits) plus exact count, sum, sum of squares, min and max, so that means
//!   and standard deviations are exact while percentiles come from the histogram. Each engine
//!   worker owns its recorders; they merge exactly after the workers join.
//! - [`Series`] is a per-second time series of counters, one bucket per elapsed second, so its
//!   memory grows with the run's duration in seconds, never with the number of requests.
//! - [`summary`] has the small helpers (mean, standard deviation, median) used on series.

pub mod recorder;
pub mod series;
pub mod summary;

pub use recorder::{Recorder, RecorderSummary};
pub use series::{Bucket, Series};
pub use summary::Moments;
