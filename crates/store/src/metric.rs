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
/// Of `non_2xx`, the answers a visit's step asked for by its status check (a login's 302):
/// no error to the SLO (absent when there were none, and from cells stored before it was kept).
pub const NON_2XX_ASKED: &str = "non_2xx_asked";
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

/// Requests written in full, and the bytes of their heads and bodies.
pub const SENT: &str = "sent";
pub const BYTES_SENT: &str = "bytes_sent";
/// With keep-alive on: the responses after which the connection stayed open (ab's Keep-Alive
/// requests); absent with it off.
pub const KEEPALIVE: &str = "keepalive";
/// The client's CPU time over the measured window, user and system, seconds.
pub const CPU_USER_S: &str = "cpu_user_s";
pub const CPU_SYS_S: &str = "cpu_sys_s";
/// Replies per closed connection, on average (httperf's connection length); absent when no
/// connection closed.
pub const REPLIES_PER_CONNECTION: &str = "replies_per_connection";
/// The status classes a response is counted in, each under [`status_class`]'s name.
pub const STATUS_CLASSES: [&str; 5] = ["1xx", "2xx", "3xx", "4xx", "5xx"];

/// The name of the count of completed responses of one status class: `status.2xx`.
pub fn status_class(class: &str) -> String {
    format!("status.{class}")
}

/// Page views (a workload with `view = true`): completed views per second, and the page-load
/// time's percentiles (from a view's due time to its last resource's last byte), microseconds.
pub const VIEWS_RPS: &str = "views_rps";
/// Page views completed in the measured time.
pub const VIEWS: &str = "views";
pub const VIEW_P50_US: &str = "view_p50_us";
pub const VIEW_P99_US: &str = "view_p99_us";

/// Visits of several steps (a workload with `visits = ...`): completed and failed visits in
/// the measured time, completed visits per second, and the visit duration's percentiles (from
/// a visit's due time to its last answer, think times included), microseconds. Each step's
/// figures are the cell's `steps`.
pub const VISITS: &str = "visits";
pub const VISITS_FAILED: &str = "visits_failed";
pub const VISITS_RPS: &str = "visits_rps";
pub const VISIT_P50_US: &str = "visit_p50_us";
pub const VISIT_P99_US: &str = "visit_p99_us";

/// The name of one error class's count: `errors.connreset`.
pub fn error_class(class: &str) -> String {
    format!("{ERRORS}.{class}")
}

/// What is kept of each request of a URL list (`urls = FILE`), under [`url`]'s names.
pub const URL_FIGURES: [&str; 5] = ["completed", "failed", "non_2xx", "p50_us", "p99_us"];

/// Kept beside [`URL_FIGURES`]: the request's line in its list, so that reports show the
/// requests in the list's order (cells stored before it was kept have none).
pub const URL_LINE: &str = "line";

/// The name of one figure of one request of a URL list: `url.GET /cart.p99_us`.
pub fn url(method: &str, path: &str, figure: &str) -> String {
    format!("url.{method} {path}.{figure}")
}

/// A [`url`] name read back: its method, path and figure; `None` for any other name. The
/// figure is what follows the last dot, so a path may hold dots (`/a.php`).
pub fn parse_url(name: &str) -> Option<(&str, &str, &str)> {
    let (request, figure) = name.strip_prefix("url.")?.rsplit_once('.')?;
    let (method, path) = request.split_once(' ')?;
    Some((method, path, figure))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn url_names_read_back_with_dots_in_the_path() {
        let name = url("GET", "/v1.2/a.php?x=1.5", "p99_us");
        assert_eq!(name, "url.GET /v1.2/a.php?x=1.5.p99_us");
        assert_eq!(parse_url(&name), Some(("GET", "/v1.2/a.php?x=1.5", "p99_us")));
        assert_eq!(parse_url("errors.connreset"), None);
        assert_eq!(parse_url("url.nospace.completed"), None);
    }
}
