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
/// Completed requests whose answer was not 2xx (absent from cells stored before it was kept).
pub const NON_2XX: &str = "non_2xx";
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
/// Body bytes after chunked decoding.
pub const BYTES_BODY: &str = "bytes_body";
/// Requests still in flight when the cell's measured time ended.
pub const UNFINISHED: &str = "unfinished";
/// The client's CPU use over the CPU it had, 0 to 1.
pub const CLIENT_CPU_BUSY: &str = "client_cpu_busy";
pub const CONNECTIONS_OPENED: &str = "connections_opened";
/// Connections open at once, at most.
pub const PEAK_CONNECTIONS: &str = "peak_connections";
/// Open loop: how late the 99th percentile of requests was sent after its due time.
pub const LATE_P99_US: &str = "late_p99_us";
/// Open loop: requests due in the measured window that were never sent.
pub const NOT_SENT: &str = "not_sent";

/// The name of one error class's count: `errors.connreset`.
pub fn error_class(class: &str) -> String {
    format!("{ERRORS}.{class}")
}
