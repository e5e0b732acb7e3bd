//! The usual metric names, so the CLI that writes a cell and the report that reads it agree.
//!
//! The store accepts any name; these are the ones loadlab itself uses. Units are in the name.

/// Completed requests per second over the measured duration.
pub const RPS: &str = "rps";
/// Latency percentiles in microseconds (from the corrected histogram under open-loop load).
pub const P50_US: &str = "p50_us";
pub const P90_US: &str = "p90_us";
pub const P99_US: &str = "p99_us";
pub const MEAN_US: &str = "mean_us";
/// Requests answered with a response that passed validation.
pub const COMPLETED: &str = "completed";
/// Requests that failed, all error classes together.
pub const FAILED: &str = "failed";
/// Error count; the per-class counts use `errors.<class>` (e.g. `errors.connreset`).
pub const ERRORS: &str = "errors";
/// Response bytes received, headers included.
pub const BYTES: &str = "bytes";
/// The client's own CPU time per completed request, in microseconds.
pub const CPU_US_PER_REQUEST: &str = "cpu_us_per_request";
/// Offered and achieved rates under open-loop load, per second.
pub const OFFERED_RPS: &str = "offered_rps";
pub const ACHIEVED_RPS: &str = "achieved_rps";
