//! The requests of a URL list workload (a suite's `urls = FILE`), each with its own figures:
//! what its cells stored under `url.METHOD PATH.*` ([`loadlab_store::metric::url`]), as the
//! median over a stack's repetitions, as `bench --urls` shows one run's.

use std::collections::BTreeMap;

use loadlab_stats::summary::median;
use loadlab_store::{metric, CellRecord};
use serde::Serialize;

/// One request of a URL list on one stack: each figure the median over its repetitions.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct RequestFigures {
    pub method: String,
    /// Path and query, as sent.
    pub path: String,
    pub completed: f64,
    pub failed: f64,
    /// Completed answers that were not 2xx.
    pub non_2xx: f64,
    /// Its completed requests' latency, µs: the median over the repetitions that completed
    /// one; `None` when none did.
    pub p50_us: Option<f64>,
    pub p99_us: Option<f64>,
    /// Its line in the list; `None` for cells stored before lines were kept.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub line: Option<u64>,
}

/// The figures' column names in tables, in [`RequestFigures::shown`]'s order.
pub const COLUMNS: [&str; 5] = ["completed", "failed", "non-2xx", "p50", "p99"];

impl RequestFigures {
    /// `GET /cart`, cut as tables cut it ([`loadlab_stats::format::request`]).
    pub fn request(&self) -> String {
        loadlab_stats::format::request(&self.method, &self.path)
    }

    /// Where it sorts: by its line in the list, and by path and method where no line was
    /// stored (after those with one).
    fn order(&self) -> (u64, &str, &str) {
        (self.line.unwrap_or(u64::MAX), &self.path, &self.method)
    }

    /// The figures as tables show them, in [`COLUMNS`]' order: counts as counts, latencies
    /// with their unit, `-` for one nothing measured (as `bench --urls`'s table).
    pub fn shown(&self) -> [String; 5] {
        use loadlab_stats::format::{count, micros};
        let latency = |v: Option<f64>| v.map_or("-".to_owned(), micros);
        [
            count(self.completed),
            count(self.failed),
            count(self.non_2xx),
            latency(self.p50_us),
            latency(self.p99_us),
        ]
    }
}

/// Every stack's requests of one group, request by request in the list's order, the stacks
/// in the group's order under each: the rows of the report's table of them.
pub fn rows<'a>(
    stacks: impl IntoIterator<Item = (&'a str, &'a [RequestFigures])>,
) -> Vec<(&'a str, &'a RequestFigures)> {
    let mut rows: Vec<(&str, &RequestFigures)> = stacks
        .into_iter()
        .flat_map(|(stack, requests)| requests.iter().map(move |r| (stack, r)))
        .collect();
    // Stable: the stacks keep their order under each request.
    rows.sort_by(|a, b| a.1.order().cmp(&b.1.order()));
    rows
}

/// The requests whose figures `cells` (one stack's repetitions) stored, in the list's order
/// (by path and then method for cells stored without lines); empty for any other workload.
pub fn requests(cells: &[&CellRecord]) -> Vec<RequestFigures> {
    // (path, method) -> figure -> its value in each repetition that has it.
    type Values<'a> = BTreeMap<&'a str, Vec<f64>>;
    let mut by: BTreeMap<(&str, &str), Values<'_>> = BTreeMap::new();
    for c in cells {
        for (name, &v) in &c.metrics {
            let Some((method, path, figure)) = metric::parse_url(name) else { continue };
            let completed = c.metrics.get(&metric::url(method, path, "completed")).copied();
            // An empty histogram's percentile is 0: no latency, not a fast one.
            let timed = completed.is_some_and(|n| n > 0.0) || !figure.ends_with("_us");
            if v.is_finite() && timed {
                by.entry((path, method)).or_default().entry(figure).or_default().push(v);
            }
        }
    }
    let mut requests: Vec<RequestFigures> = by
        .into_iter()
        .map(|((path, method), figures)| {
            let get = |figure: &str| figures.get(figure).and_then(|v| median(v));
            RequestFigures {
                method: method.to_owned(),
                path: path.to_owned(),
                completed: get("completed").unwrap_or(0.0),
                failed: get("failed").unwrap_or(0.0),
                non_2xx: get("non_2xx").unwrap_or(0.0),
                p50_us: get("p50_us"),
                p99_us: get("p99_us"),
                // The same in every repetition of one list.
                line: get(metric::URL_LINE).map(|l| l as u64),
            }
        })
        .collect();
    requests.sort_by(|a, b| a.order().cmp(&b.order()));
    requests
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::testcell::with_load;
    use loadlab_store::{LoadModel, LoadSpec};

    fn rep(repetition: u32, a: [f64; 5], c: [f64; 5]) -> CellRecord {
        let mut metrics = Vec::new();
        for (request, values) in [(("GET", "/a.php"), a), (("POST", "/c"), c)] {
            for (figure, v) in metric::URL_FIGURES.iter().zip(values) {
                metrics.push((metric::url(request.0, request.1, figure), v));
            }
        }
        let metrics: Vec<(&str, f64)> = metrics.iter().map(|(k, v)| (k.as_str(), *v)).collect();
        with_load("mine", "shop", LoadSpec::new(LoadModel::Closed), repetition, &metrics)
    }

    /// The list's order, not the paths': `/z` on line 1 comes before `/a` on line 2; a cell
    /// stored before lines were kept falls back to path order.
    #[test]
    fn requests_keep_their_list_order() {
        let mut metrics = Vec::new();
        for (path, line) in [("/z", 1.0), ("/a", 2.0)] {
            metrics.push((metric::url("GET", path, "completed"), 1.0));
            metrics.push((metric::url("GET", path, metric::URL_LINE), line));
        }
        let metrics: Vec<(&str, f64)> = metrics.iter().map(|(k, v)| (k.as_str(), *v)).collect();
        let cell = with_load("mine", "shop", LoadSpec::new(LoadModel::Closed), 0, &metrics);
        let got = requests(&[&cell]);
        let order: Vec<(&str, Option<u64>)> =
            got.iter().map(|r| (r.path.as_str(), r.line)).collect();
        assert_eq!(order, [("/z", Some(1)), ("/a", Some(2))]);
        let old = rep(0, [1.0; 5], [1.0; 5]);
        let paths: Vec<String> = requests(&[&old]).iter().map(|r| r.request()).collect();
        assert_eq!(paths, ["GET /a.php", "POST /c"]);
        assert!(requests(&[&old]).iter().all(|r| r.line.is_none()));
    }

    #[test]
    fn each_request_has_the_median_of_its_repetitions_and_no_latency_without_an_answer() {
        let cells = [
            rep(0, [100.0, 0.0, 2.0, 300.0, 900.0], [0.0, 5.0, 0.0, 0.0, 0.0]),
            rep(1, [120.0, 1.0, 0.0, 320.0, 950.0], [1.0, 4.0, 1.0, 700.0, 700.0]),
            rep(2, [110.0, 0.0, 0.0, 310.0, 990.0], [0.0, 6.0, 0.0, 0.0, 0.0]),
        ];
        let refs: Vec<&CellRecord> = cells.iter().collect();
        let got = requests(&refs);
        assert_eq!(got.len(), 2);
        let a = &got[0];
        assert_eq!((a.method.as_str(), a.path.as_str()), ("GET", "/a.php"));
        assert_eq!((a.completed, a.failed, a.non_2xx), (110.0, 0.0, 0.0));
        assert_eq!((a.p50_us, a.p99_us), (Some(310.0), Some(950.0)));
        let c = &got[1];
        assert_eq!(c.request(), "POST /c");
        assert_eq!((c.completed, c.failed), (0.0, 5.0));
        // Only repetition 1 answered /c: its latency is the only one.
        assert_eq!((c.p50_us, c.p99_us), (Some(700.0), Some(700.0)));
        let plain = crate::testcell::cell("nginx", "static", 10, 0, 1_000.0);
        assert!(requests(&[&plain]).is_empty());
    }
}
