//! What profiles weigh in the report: the classic suite with every cell profiled stays under
//! 5 MB.
//!
//! Without running the suite: its real plan (the suite crate's), every stack of every group
//! given its real tiers (the lab's catalog, through the plan) and one more for a PHP stack
//! (PHP's own stacks), each as dense as `ProfileRecord::dense_for_test` makes it, which draws
//! a larger graph than any tier of a real run measured (`a_dense_profile_draws_more_than_a_
//! real_one`). A flame graph merges a stack's repetitions and leaves out frames under 0.5% of
//! its width, so its size is bounded by its detail, not by the cells' length or how many
//! repetitions were profiled: one profiled cell per stack and group, that dense, bounds the
//! suite's report.

use std::collections::BTreeMap;

use loadlab_store::{CellRecord, LoadModel, LoadSpec, ProfileRecord, RunProfiles};
use tempfile::TempDir;

use crate::support::report_of;

/// The largest graph of seed 000's run at c=10 (Apache mod_php against nginx + spawn-fcgi,
/// 10,000 requests a cell, 4 repetitions merged: 1,101 to 3,267 samples a tier), bytes of its
/// figure: nginx's, 207 frames.
const LARGEST_REAL_GRAPH: usize = 33_349;

const LIMIT: usize = 5 * 1024 * 1024;

/// `n` dense tiers, seeded by `seed`.
fn tiers(n: usize, seed: u64) -> Vec<ProfileRecord> {
    (0..n)
        .map(|i| ProfileRecord::dense_for_test(&format!("tier{i}"), 1_000, seed * 8 + i as u64))
        .collect()
}

/// The tiers a plan's stack runs, and one for PHP's own stacks where it runs PHP.
fn tier_count(stack: &loadlab_suite::StackSpec) -> usize {
    match &stack.source {
        loadlab_suite::StackSource::Lab(l) => {
            l.stack.tiers(&l.knobs).len() + usize::from(l.stack.has_php())
        }
        loadlab_suite::StackSource::External(_) => 1,
    }
}

/// Each cell of the classic suite's plan, its load told apart by its index among the plan's
/// distinct loads, with its stack's dense tiers on the first cell of each stack in each group;
/// and how many tiers that is.
fn classic() -> (Vec<CellRecord>, RunProfiles, usize) {
    let suite = loadlab_suite::builtin("classic").expect("the classic suite");
    let plan = loadlab_suite::plan(&suite, false);
    let mut loads: Vec<String> = Vec::new();
    let mut profiled: BTreeMap<(String, String, String), ()> = BTreeMap::new();
    let mut cells = Vec::new();
    let mut profiles = RunProfiles::new();
    for c in &plan.cells {
        let key = format!("{:?}", c.load.point);
        let at = loads.iter().position(|l| *l == key).unwrap_or_else(|| {
            loads.push(key.clone());
            loads.len() - 1
        });
        let mut load = LoadSpec::new(LoadModel::Closed);
        load.connections = Some(at as u64 + 1);
        let mut cell = CellRecord {
            ordinal: c.ordinal,
            repetition: c.repetition,
            ..CellRecord::for_test(&c.stack.label, &c.workload.spec.name, load)
        };
        cell.knobs.insert("profile".into(), serde_json::json!("perf"));
        let group = (c.workload.spec.name.clone(), key, c.stack.label.clone());
        if profiled.insert(group, ()).is_none() {
            profiles.insert(c.ordinal, tiers(tier_count(&c.stack), u64::from(c.ordinal)));
        }
        cells.push(cell);
    }
    let tiers = profiles.values().map(Vec::len).sum();
    (cells, profiles, tiers)
}

#[test]
fn the_classic_suites_report_with_every_cell_profiled_stays_under_5_mb() {
    let dir = TempDir::new().unwrap();
    let (cells, profiles, tiers) = classic();
    let html = report_of(&dir.path().join("loadlab.db"), cells, &profiles);
    let drawn = html.matches("<figure class=\"flame\">").count();
    assert!(drawn > tiers, "{drawn} figures for {tiers} tiers and the differentials");
    eprintln!("{drawn} graphs ({tiers} tiers), {} bytes", html.len());
    assert!(html.len() < LIMIT, "{} bytes with {drawn} flame graphs", html.len());
}

#[test]
fn a_dense_profile_draws_more_than_a_real_one() {
    let dir = TempDir::new().unwrap();
    let mut cell = CellRecord::for_test("nginx", "hello.txt", LoadSpec::new(LoadModel::Closed));
    cell.knobs.insert("profile".into(), serde_json::json!("perf"));
    let profiles = RunProfiles::from([(0, vec![ProfileRecord::dense_for_test("nginx", 1_000, 1)])]);
    let html = report_of(&dir.path().join("loadlab.db"), vec![cell], &profiles);
    let figure = &html[html.find("<figure class=\"flame\">").unwrap()..];
    let figure = &figure[..figure.find("</figure>").unwrap()];
    eprintln!("{} bytes, {} frames", figure.len(), figure.matches("<rect").count());
    assert!(figure.len() > LARGEST_REAL_GRAPH, "{} bytes", figure.len());
}
