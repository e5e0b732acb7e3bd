//! docs/grafana-dashboard.json against what loadlab exports: the fields Grafana's dashboard
//! model requires of a dashboard, its panels and their queries, and every metric and label a
//! query names present in a rendered exposition (a renamed metric would leave an empty panel).

use std::collections::BTreeSet;

use loadlab_engine::live::{Counts, Snapshot, Watch};
use loadlab_metrics::{exposition, Board, Labels, Tier};
use loadlab_stats::Recorder;
use serde_json::Value;

fn dashboard() -> Value {
    let path = concat!(env!("CARGO_MANIFEST_DIR"), "/../../docs/grafana-dashboard.json");
    serde_json::from_str(&std::fs::read_to_string(path).unwrap()).unwrap()
}

/// A board with one judged and sampled cell, every family filled: its exposition's metric names (as
/// sampled: a histogram's `_bucket`, `_sum`, `_count`) and label names.
fn exported() -> (BTreeSet<String>, BTreeSet<String>) {
    let board = Board::default();
    board.begin(Labels::default(), Some(10.0));
    let counts = Counts { completed: 1, status: vec![(200, 1)], ..Counts::default() };
    let mut latency = Recorder::new();
    latency.record(100);
    board.snapshot(&Snapshot { counts, ..Snapshot::default() }, &latency);
    board.judged(vec![("errors".into(), false)]);
    board.tiers_sampled(&[Tier { tier: "nginx".into(), ..Tier::default() }]);
    let text = exposition::render(&board.cells());
    let (mut metrics, mut labels) = (BTreeSet::new(), BTreeSet::new());
    for line in text.lines().filter(|l| !l.starts_with('#')) {
        let (name, rest) = line.split_once('{').unwrap();
        metrics.insert(name.to_string());
        for pair in rest.split("\",") {
            labels.insert(pair.split_once('=').unwrap().0.to_string());
        }
    }
    (metrics, labels)
}

/// Words of a PromQL expression that start with `loadlab_`.
fn metric_names(expr: &str) -> Vec<String> {
    let words = expr.split(|c: char| !(c.is_ascii_alphanumeric() || c == '_'));
    words.filter(|w| w.starts_with("loadlab_")).map(str::to_string).collect()
}

/// Label names in an expression's selectors (`name=`, `name=~`) and `by (...)` clauses.
fn label_names(expr: &str) -> Vec<String> {
    let mut out = Vec::new();
    for (i, _) in expr.match_indices('=') {
        let before = expr[..i].trim_end_matches(['!', ' ']);
        let word = before.rsplit(|c: char| !(c.is_ascii_alphanumeric() || c == '_')).next();
        // `==` compares values; its left side is no label.
        if expr[i..].starts_with("==") || expr[..i].ends_with('=') {
            continue;
        }
        out.extend(word.filter(|w| !w.is_empty()).map(str::to_string));
    }
    for clause in expr.split("by (").skip(1) {
        let inside = clause.split(')').next().unwrap_or_default();
        out.extend(inside.split(',').map(|l| l.trim().to_string()));
    }
    out
}

#[test]
fn the_dashboard_has_the_fields_grafana_requires() {
    let d = dashboard();
    for key in ["title", "uid", "schemaVersion", "panels", "templating", "time"] {
        assert!(d.get(key).is_some(), "no {key}");
    }
    assert!(d["schemaVersion"].as_u64().unwrap() >= 36);
    let panels = d["panels"].as_array().unwrap();
    assert!(!panels.is_empty());
    let mut ids = BTreeSet::new();
    for p in panels {
        for key in ["id", "type", "title", "gridPos", "targets", "datasource"] {
            assert!(p.get(key).is_some(), "panel {} has no {key}", p["title"]);
        }
        assert!(ids.insert(p["id"].as_u64().unwrap()), "panel id {} twice", p["id"]);
        for key in ["h", "w", "x", "y"] {
            assert!(p["gridPos"][key].is_u64(), "panel {}: gridPos.{key}", p["title"]);
        }
        for t in p["targets"].as_array().unwrap() {
            assert!(t["refId"].is_string() && t["expr"].is_string(), "{t}");
        }
    }
}

#[test]
fn every_query_names_a_metric_and_labels_loadlab_exports() {
    let (metrics, labels) = exported();
    let d = dashboard();
    let mut exprs: Vec<String> = Vec::new();
    for p in d["panels"].as_array().unwrap() {
        for t in p["targets"].as_array().unwrap() {
            exprs.push(t["expr"].as_str().unwrap().to_string());
        }
    }
    for v in d["templating"]["list"].as_array().unwrap() {
        if let Some(q) = v["definition"].as_str() {
            exprs.push(q.to_string());
        }
    }
    for expr in &exprs {
        let named = metric_names(expr);
        assert!(!named.is_empty(), "{expr}: no loadlab metric");
        for m in named {
            assert!(metrics.contains(&m), "{expr}: {m} is not exported ({metrics:?})");
        }
        for l in label_names(expr) {
            assert!(labels.contains(&l), "{expr}: label {l} is not exported ({labels:?})");
        }
    }
    // The test reads what it means to: a made-up name is caught.
    assert!(!metrics.contains("loadlab_requests"));
    assert_eq!(
        label_names(r#"sum by (le, stack) (x{a=~"b", c="d"}) == 1"#),
        ["a", "c", "le", "stack"]
    );
}
