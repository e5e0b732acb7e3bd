//! How a run's cells are grouped: by workload and load (a group), then by stack within a group,
//! and groups that differ only in their load level (a family: a concurrency list or a rate
//! sweep), which the charts draw as one line per stack.
//!
//! Everything keeps the plan's order (cells come from the store by ordinal), so a report lists
//! workloads, loads and stacks as the suite file named them.

use std::collections::BTreeMap;

use loadlab_store::{CellRecord, LoadModel, LoadSpec};
use serde_json::Value;

use crate::counted::Counted;

/// The cells of one stack in one group, in repetition order.
#[derive(Debug, Clone)]
pub struct StackCells<'a> {
    /// The stack's label: its name, plus its knobs when the run used the name with several
    /// knob sets (see [`stack_labels`]).
    pub stack: String,
    pub cells: Vec<&'a CellRecord>,
}

/// The cells that ran one workload under one load, by stack.
#[derive(Debug, Clone)]
pub struct Group<'a> {
    pub workload: String,
    pub load: LoadSpec,
    /// What its cells count: requests, page views or visits.
    pub counted: Counted,
    pub stacks: Vec<StackCells<'a>>,
}

impl Group<'_> {
    /// "closed, 50 connections, keep-alive", "open, 3 views/s, 4 s": the load as a person
    /// names it.
    pub fn load_label(&self) -> String {
        load_label_as(&self.load, self.counted)
    }
}

/// Groups `cells` by (workload, load) and, inside each group, by stack label.
pub fn groups(cells: &[CellRecord]) -> Vec<Group<'_>> {
    let labels = stack_labels(cells);
    let mut out: Vec<Group<'_>> = Vec::new();
    let mut index: BTreeMap<(String, String), usize> = BTreeMap::new();
    for (cell, label) in cells.iter().zip(labels) {
        let key = (cell.workload.clone(), load_key(&cell.load));
        let at = *index.entry(key).or_insert_with(|| {
            out.push(Group {
                workload: cell.workload.clone(),
                load: cell.load.clone(),
                counted: Counted::Requests,
                stacks: Vec::new(),
            });
            out.len() - 1
        });
        let group = &mut out[at];
        match group.stacks.iter_mut().find(|s| s.stack == label) {
            Some(s) => s.cells.push(cell),
            None => group.stacks.push(StackCells { stack: label, cells: vec![cell] }),
        }
    }
    for group in &mut out {
        for s in &mut group.stacks {
            s.cells.sort_by_key(|c| (c.repetition, c.ordinal));
        }
        group.counted = Counted::of_cells(group.stacks.iter().flat_map(|s| s.cells.clone()));
    }
    out
}

/// Each cell's stack label, in input order. A stack name the run used with one knob set is its
/// own label; one used with several (keep-alive on and off, two worker counts) gets its knobs
/// appended, so that different settings are never pooled as repetitions of one thing.
pub fn stack_labels(cells: &[CellRecord]) -> Vec<String> {
    let mut knob_sets: BTreeMap<&str, Vec<&BTreeMap<String, Value>>> = BTreeMap::new();
    for c in cells {
        let sets = knob_sets.entry(&c.stack).or_default();
        if !sets.contains(&&c.knobs) {
            sets.push(&c.knobs);
        }
    }
    cells
        .iter()
        .map(|c| {
            if knob_sets[c.stack.as_str()].len() > 1 {
                format!("{} {}", c.stack, knobs_label(&c.knobs))
            } else {
                c.stack.clone()
            }
        })
        .collect()
}

/// `{workers=4, pm=static}` from a knobs map; strings without their JSON quotes.
pub fn knobs_label(knobs: &BTreeMap<String, Value>) -> String {
    let parts: Vec<String> = knobs
        .iter()
        .map(|(k, v)| match v {
            Value::String(s) => format!("{k}={s}"),
            other => format!("{k}={other}"),
        })
        .collect();
    format!("{{{}}}", parts.join(", "))
}

/// The identity of a load: its JSON, which is canonical because every map in it is ordered.
pub(crate) fn load_key(load: &LoadSpec) -> String {
    serde_json::to_string(load).unwrap_or_default()
}

/// The load as a person names it, e.g. "closed, 50 conn, keep-alive, 30 s" or
/// "open, 2,000 req/s, 60 s".
pub fn load_label(load: &LoadSpec) -> String {
    load_label_as(load, Counted::Requests)
}

/// The load of a workload that counts `counted`: its level in views or visits ("open, 3
/// views/s", "closed, 2 visitors") when it counts them.
pub fn load_label_as(load: &LoadSpec, counted: Counted) -> String {
    let mut parts: Vec<String> = vec![model_name(load.model).to_owned()];
    let level = counted.level(load);
    let closed = load.model == LoadModel::Closed;
    if let Some(c) = load.connections {
        parts.push(level.clone().filter(|_| closed).unwrap_or_else(|| format!("{c} conn")));
    }
    if let Some(r) = load.rate {
        let unit = if load.model == LoadModel::Session { "conn/s" } else { "req/s" };
        let own = level.filter(|_| !closed);
        parts.push(own.unwrap_or_else(|| format!("{} {unit}", crate::format::count(r))));
    }
    let sessions = load.model == LoadModel::Session;
    if let Some(k) = load.calls_per_connection {
        parts.push(format!("{k} {}/conn", if k == 1 { "call" } else { "calls" }));
    }
    // One call per connection leaves nothing to keep alive.
    if load.keepalive && !(sessions && load.calls_per_connection == Some(1)) {
        parts.push("keep-alive".to_owned());
    }
    if let Some(n) = load.requests {
        // A session run counts connections (httperf's --num-conns), not requests.
        parts.push(if sessions { format!("{n} conns") } else { format!("n={n}") });
    }
    if let Some(d) = load.duration_s {
        parts.push(format!("{} s", crate::format::count(d)));
    }
    for (k, v) in &load.extra {
        match v {
            Value::String(s) => parts.push(format!("{k}={s}")),
            other => parts.push(format!("{k}={other}")),
        }
    }
    parts.join(", ")
}

fn model_name(model: LoadModel) -> &'static str {
    match model {
        LoadModel::Closed => "closed",
        LoadModel::Open => "open",
        LoadModel::Session => "sessions",
    }
}

/// Groups that differ only in their load level: the connection count of a closed load, the
/// rate of an open or session load. Request counts are left out of the identity too, since
/// suites scale `-n` (or httperf's `--num-conns`) with the level.
#[derive(Debug, Clone)]
pub struct Family<'g, 'a> {
    pub workload: String,
    pub model: LoadModel,
    pub counted: Counted,
    /// The shared part of the load, e.g. "closed, keep-alive, 30 s".
    pub label: String,
    /// (level, group), ascending by level.
    pub points: Vec<(f64, &'g Group<'a>)>,
}

impl Family<'_, '_> {
    /// What the level is: "connections" or "offered req/s"...
    pub fn level_name(&self) -> &'static str {
        match (self.model, self.counted) {
            (LoadModel::Closed, Counted::Visits) => "visitors",
            (LoadModel::Closed, _) => "concurrent connections",
            (_, Counted::Views) => "offered rate (views/s)",
            (_, Counted::Visits) => "offered rate (visits/s)",
            (LoadModel::Open, _) => "offered rate (req/s)",
            (LoadModel::Session, _) => "offered rate (conn/s)",
        }
    }
}

/// The families of `groups`, in the order of their first group; every group belongs to exactly
/// one (a group without a level, such as a closed load with no connection count, is alone).
pub fn families<'g, 'a>(groups: &'g [Group<'a>]) -> Vec<Family<'g, 'a>> {
    let mut out: Vec<Family<'g, 'a>> = Vec::new();
    let mut index: BTreeMap<(String, String), usize> = BTreeMap::new();
    for (i, g) in groups.iter().enumerate() {
        let mut shared = g.load.clone();
        shared.requests = None;
        let level = match g.load.model {
            LoadModel::Closed => shared.connections.take().map(|c| c as f64),
            LoadModel::Open | LoadModel::Session => shared.rate.take(),
        };
        // A group with no level cannot be placed on a line with others.
        let key_load = if level.is_some() { load_key(&shared) } else { format!("#{i}") };
        let at = *index.entry((g.workload.clone(), key_load)).or_insert_with(|| {
            out.push(Family {
                workload: g.workload.clone(),
                model: g.load.model,
                counted: g.counted,
                label: load_label_as(&shared, g.counted),
                points: Vec::new(),
            });
            out.len() - 1
        });
        out[at].points.push((level.unwrap_or(0.0), g));
    }
    for f in &mut out {
        f.points.sort_by(|a, b| a.0.total_cmp(&b.0));
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::testcell::cell;
    use serde_json::json;

    #[test]
    fn groups_keep_plan_order_and_pool_repetitions() {
        let cells = vec![
            cell("nginx", "static", 10, 0, 100.0),
            cell("apache", "static", 10, 0, 90.0),
            cell("nginx", "static", 10, 1, 101.0),
            cell("nginx", "static", 50, 0, 300.0),
            cell("apache", "static", 10, 1, 91.0),
        ];
        let gs = groups(&cells);
        assert_eq!(gs.len(), 2);
        assert_eq!(gs[0].load.connections, Some(10));
        let names: Vec<_> = gs[0].stacks.iter().map(|s| s.stack.as_str()).collect();
        assert_eq!(names, ["nginx", "apache"]);
        assert_eq!(gs[0].stacks[0].cells.len(), 2);
        assert_eq!(gs[0].stacks[1].cells[1].repetition, 1);
        let fams = families(&gs);
        assert_eq!(fams.len(), 1);
        let levels: Vec<f64> = fams[0].points.iter().map(|p| p.0).collect();
        assert_eq!(levels, [10.0, 50.0]);
    }

    #[test]
    fn one_stack_name_with_two_knob_sets_is_two_stacks() {
        let mut a = cell("apache", "php", 10, 0, 1.0);
        a.knobs.insert("keepalive".into(), json!("on"));
        let mut b = cell("apache", "php", 10, 0, 1.0);
        b.knobs.insert("keepalive".into(), json!("off"));
        let labels = stack_labels(&[a.clone(), b.clone(), cell("nginx", "php", 10, 0, 1.0)]);
        assert_eq!(labels, ["apache {keepalive=on}", "apache {keepalive=off}", "nginx"]);
        assert_eq!(groups(&[a, b])[0].stacks.len(), 2);
    }

    #[test]
    fn load_labels_read_like_the_flags() {
        let mut l = LoadSpec::new(LoadModel::Open);
        l.rate = Some(2000.0);
        l.duration_s = Some(60.0);
        l.extra.insert("arrival".into(), json!("poisson"));
        assert_eq!(load_label(&l), "open, 2,000 req/s, 60 s, arrival=poisson");
        let mut s = LoadSpec::new(LoadModel::Session);
        s.rate = Some(150.0);
        s.calls_per_connection = Some(10);
        assert_eq!(load_label(&s), "sessions, 150 conn/s, 10 calls/conn");
        let mut one = LoadSpec::new(LoadModel::Session);
        one.rate = Some(100.0);
        one.calls_per_connection = Some(1);
        one.keepalive = true;
        one.requests = Some(5000);
        assert_eq!(load_label(&one), "sessions, 100 conn/s, 1 call/conn, 5000 conns");
    }
}
