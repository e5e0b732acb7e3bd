//! Numbers without I/O: latency recorders built on HDR histograms, per-second series, and the
//! summary statistics that loadlab reports.
//!
//! - [`Recorder`] holds one latency distribution: an HDR histogram (µs resolution, up to one hour,
//!   three significant digits) plus exact count, sum, sum of squares, min and max, so that means
//!   and standard deviations are exact while percentiles come from the histogram. Each engine
//!   worker owns its recorders; they merge exactly after the workers join.
//! - [`Series`] is a per-second time series of counters, one bucket per elapsed second, so its
//!   memory grows with the run's duration in seconds, never with the number of requests.
//! - [`interval_log`] writes a histogram per second in HdrHistogram's interval-log format.
//! - [`log_merge`] adds several agents' interval logs into one, exactly, and refuses logs whose
//!   histogram settings or seconds differ (`loadlab merge`).
//! - [`summary`] has the small helpers (mean, standard deviation, median) used on series.
//! - [`knee`] finds the highest rate a target sustained in a sweep.
//! - [`ci`] gives the median of repetitions with a distribution-free 95% confidence interval
//!   (order statistics, as benchstat), and the ratio of two medians with its interval.
//! - [`mann_whitney`] tests whether two stacks differ (two-sided Mann-Whitney U, exact for small
//!   samples) and says when too few repetitions could never show a difference.
//! - [`outliers`] flags repetitions unlike the others (modified Z-scores from median and MAD).
//! - [`format`] prints numbers for people, the same in every output.
//! - [`slo`]: thresholds (`p99<50ms,errors<0.1%,rps>1000`) and their pass/fail verdict, the CI
//!   gate of `bench`, `sweep` and `run`.

pub mod ci;
pub mod format;
pub mod interval_log;
pub mod knee;
pub mod log_merge;
pub mod mann_whitney;
pub mod outliers;
pub mod recorder;
pub mod series;
pub mod slo;
pub mod summary;

pub use recorder::{Recorder, RecorderSummary};
pub use series::{Bucket, Series};
pub use summary::Moments;
