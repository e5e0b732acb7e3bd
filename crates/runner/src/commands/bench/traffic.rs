//! The parts of `bench`'s report about what it sent beyond one URL: each request of a URL list
//! with its own figures (`urls`), and what a replay read, replayed and skipped (`replay`).

use std::collections::BTreeMap;

use loadlab_engine::{Arrival, BenchConfig, BenchResult, Pacing, Skip, Stop, Traffic};
use loadlab_stats::RecorderSummary;
use serde::Serialize;

/// One request of a URL list and its own figures.
#[derive(Debug, Serialize)]
pub struct UrlFigures {
    /// The line of the list it came from.
    pub line: usize,
    pub method: String,
    /// Path and query, as sent; a page view's request to another origin (`--view-hosts`) is
    /// named by its whole URL (`https://cdn.example:443/s.css`), so that two origins' `/s.css`
    /// are two rows told apart.
    pub path: String,
    pub weight: u32,
    pub completed: u64,
    pub failed: u64,
    /// Its share of the requests that ended (completed or failed).
    pub share: f64,
    /// Its completed requests' latency (from the due time under --rate and --conn-rate),
    /// kept to two significant digits.
    pub latency_us: RecorderSummary,
    /// Its responses by status class, validation failures included.
    pub status_class: BTreeMap<&'static str, u64>,
    /// Those not 2xx, as the run's own count says them (`Report::not_2xx`).
    #[serde(skip)]
    pub not_2xx: u64,
}

/// The `urls` array: a URL list's entries in the file's order; `None` without a list.
pub fn urls(cfg: &BenchConfig, r: &BenchResult) -> Option<Vec<UrlFigures>> {
    let Traffic::Mix(mix) = &cfg.traffic else { return None };
    let ended = (r.tally.completed + r.tally.failed).max(1) as f64;
    let figures = mix
        .entries
        .iter()
        .zip(&r.tally.entries)
        .enumerate()
        .map(|(i, (entry, t))| UrlFigures {
            line: entry.line,
            method: entry.method(&cfg.request).to_string(),
            path: entry_name(cfg, i, entry),
            weight: entry.weight,
            completed: t.completed,
            failed: t.failed,
            share: (t.completed + t.failed) as f64 / ended,
            latency_us: t.latency.summary(),
            status_class: loadlab_store::metric::STATUS_CLASSES
                .into_iter()
                .zip(t.status_classes)
                .collect(),
            not_2xx: crate::judge::trust::not_2xx_of(&t.status_classes),
        })
        .collect();
    Some(figures)
}

/// The name of entry `i` of the run's requests for its own figures: its path, or its whole
/// URL when a page view's plan puts it on another origin than the target's.
pub fn entry_name(cfg: &BenchConfig, i: usize, entry: &loadlab_engine::mix::Entry) -> String {
    match &cfg.visits {
        Some(plan) => plan.origins.entry_name(i, &entry.path),
        None => entry.path.clone(),
    }
}

/// What a replay read and sent.
#[derive(Debug, Serialize)]
pub struct ReplayEcho {
    pub file: String,
    /// `combined` (Common or Combined Log Format), `json`, both as `combined+json`, or
    /// `timing-script` (h2load's).
    pub format: String,
    /// Lines read, blank ones aside.
    pub lines: u64,
    /// Lines the run replayed: every usable one, or the first `-n`.
    pub replayed: u64,
    /// Distinct requests among them, each encoded once.
    pub distinct_requests: usize,
    /// How lines were timed: `log` (each at its time after the first, scaled by `speed`),
    /// or `fixed` or `poisson` at `--rate`, in the log's order.
    pub timing: &'static str,
    /// `--speed`.
    pub speed: f64,
    /// From the first replayed line's due time to the last's, at that speed (log timing).
    pub span_s: Option<f64>,
    /// Lines not replayed, by reason; every reason present, zeroes included.
    pub skipped: BTreeMap<&'static str, u64>,
    /// The first line skipped for each reason that occurred.
    pub skipped_first_line: BTreeMap<&'static str, usize>,
}

/// The `replay` object; `None` without a replay.
pub fn replay(cfg: &BenchConfig) -> Option<ReplayEcho> {
    let Traffic::Replay(replay) = &cfg.traffic else { return None };
    let replayed = match cfg.stop {
        Stop::Count(n) => n.min(replay.len() as u64),
        Stop::Duration(_) => replay.len() as u64,
    };
    let timing = match cfg.pacing {
        Pacing::Open { arrival: Arrival::Poisson, .. } => "poisson",
        Pacing::Open { arrival: Arrival::Log, .. } => "log",
        _ => "fixed",
    };
    let last = (replayed as usize).checked_sub(1);
    Some(ReplayEcho {
        file: replay.file.clone(),
        format: replay.format.clone(),
        lines: replay.read,
        replayed,
        distinct_requests: replay.distinct.len(),
        timing,
        speed: replay.speed,
        span_s: last.filter(|_| timing == "log").map(|k| replay.offset(k).as_secs_f64()),
        skipped: Skip::ALL
            .iter()
            .map(|s| (s.name(), replay.skipped.get(s).map_or(0, |(n, _)| *n)))
            .collect(),
        skipped_first_line: replay.skipped.iter().map(|(s, (_, line))| (s.name(), *line)).collect(),
    })
}

impl ReplayEcho {
    /// Skipped lines in a sentence: `3 of 1,000 lines not replayed: no_request 2 (first at
    /// line 17), connect 1 (line 90)`; `None` when every line was replayed.
    pub fn skipped_sentence(&self) -> Option<String> {
        let total: u64 = self.skipped.values().sum();
        if total == 0 {
            return None;
        }
        let count = |n: u64| loadlab_stats::format::count(n as f64);
        let reasons: Vec<String> = self
            .skipped
            .iter()
            .filter(|(_, n)| **n > 0)
            .map(|(why, n)| {
                format!("{why} {} (first at line {})", count(*n), self.skipped_first_line[why])
            })
            .collect();
        Some(format!(
            "{} of {} lines of {} not replayed: {}",
            count(total),
            count(self.lines),
            self.file,
            reasons.join(", ")
        ))
    }
}
