//! The `loadlab` binary end to end, one module per area, and the helpers they share for
//! running `bench` and reading its JSON report.

mod ab_format;
mod agents_k8s;
mod cli_errors;
mod error_classes;
mod fd_limit;
mod habits;
mod hdr_log;
mod hostile_failures;
mod hostile_framing;
mod http2;
mod http3;
mod interrupt;
mod link;
mod live_view;
mod merge;
mod metrics;
mod mixes;
mod nginx_bench;
mod open_loop;
pub(crate) mod ramp;
mod replay;
mod sessions;
mod slo;
mod sweep;
mod sweep_interrupt;
pub(crate) mod tls;
mod trust;
mod unix_socket;
mod validation;
mod views;
pub(crate) mod visit_files;
mod visits;
mod visits_h2;
mod visits_httperf;
mod visits_tls;

use std::process::Output;

use serde_json::Value;

use crate::support::run_json;

/// The value at a dotted path such as `requests.completed` or `status.200`; panics, showing
/// the report, when it is missing, so that a renamed key fails loudly instead of reading 0.
pub fn at<'a>(report: &'a Value, path: &str) -> &'a Value {
    path.split('.').fold(report, |v, key| {
        v.get(key).unwrap_or_else(|| panic!("no {path} in the report:\n{report:#}"))
    })
}

/// An unsigned integer at `path`.
pub fn uint(report: &Value, path: &str) -> u64 {
    at(report, path)
        .as_u64()
        .unwrap_or_else(|| panic!("{path} is not an unsigned integer in:\n{report:#}"))
}

/// A number at `path`.
pub fn float(report: &Value, path: &str) -> f64 {
    at(report, path).as_f64().unwrap_or_else(|| panic!("{path} is not a number in:\n{report:#}"))
}

/// The strings in the array at `path` (`warnings`, `notes`).
pub fn strings(report: &Value, path: &str) -> Vec<String> {
    at(report, path)
        .as_array()
        .unwrap_or_else(|| panic!("{path} is not an array in:\n{report:#}"))
        .iter()
        .map(|s| s.as_str().expect("array of strings").to_string())
        .collect()
}

/// `loadlab bench URL ARGS` as JSON, checking that it exited with `code` and did not panic.
pub fn bench(url: &str, args: &[&str], code: i32) -> Value {
    let all: Vec<&str> = ["bench", url].into_iter().chain(args.iter().copied()).collect();
    let (report, output) = run_json(&all);
    assert_exit(&output, code);
    report
}

/// `loadlab bench ARGS`, which must be refused before any load (exit 3): its stderr.
pub fn refused(args: &[&str]) -> String {
    let mut cmd = crate::support::loadlab();
    cmd.arg("bench").args(args);
    let out = crate::support::output_within(cmd, crate::support::RUN_LIMIT);
    let stderr = String::from_utf8_lossy(&out.stderr).into_owned();
    assert_eq!(out.status.code(), Some(3), "{stderr}");
    stderr
}

/// Asserts the exit code, and that no panic message reached stderr whatever the code.
pub fn assert_exit(output: &Output, code: i32) {
    let stderr = String::from_utf8_lossy(&output.stderr);
    assert_eq!(output.status.code(), Some(code), "{}; stderr:\n{stderr}", output.status);
    assert!(!stderr.contains("panicked"), "loadlab panicked:\n{stderr}");
}

/// Every one of the `n` requests of a `-n` run ended exactly once: completed or failed, none
/// left in flight.
pub fn assert_accounted(report: &Value, n: u64) {
    let (completed, failed) = (uint(report, "requests.completed"), uint(report, "requests.failed"));
    assert_eq!(completed + failed, n, "completed {completed} + failed {failed}:\n{report:#}");
    assert_eq!(uint(report, "requests.unfinished"), 0, "{report:#}");
    let classes: u64 = at(report, "errors")
        .as_object()
        .expect("errors is an object")
        .values()
        .map(|n| n.as_u64().expect("error counts are integers"))
        .sum();
    assert_eq!(classes, failed, "every failure is in exactly one class:\n{report:#}");
}

/// Asserts that all `n` requests failed, all of them in the error class `class`.
pub fn assert_all_failed_as(report: &Value, n: u64, class: &str) {
    assert_accounted(report, n);
    assert_eq!(uint(report, &format!("errors.{class}")), n, "{report:#}");
    assert_eq!(uint(report, "requests.completed"), 0, "{report:#}");
}
