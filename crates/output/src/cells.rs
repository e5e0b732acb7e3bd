//! A stored run's cells as CSV (`loadlab report --format csv`).

/// One row per cell: where, what load, and every metric (the union of names, sorted).
pub fn csv(cells: &[loadlab_store::CellRecord]) -> String {
    let mut names: Vec<&str> =
        cells.iter().flat_map(|c| c.metrics.keys().map(String::as_str)).collect();
    names.sort_unstable();
    names.dedup();
    let quote = |s: &str| {
        if s.contains([',', '"', '\n']) {
            format!("\"{}\"", s.replace('"', "\"\""))
        } else {
            s.to_string()
        }
    };
    let mut out = String::from("ordinal,stack,workload,load,repetition,duration_s");
    for n in &names {
        out.push(',');
        out.push_str(n);
    }
    out.push('\n');
    for c in cells {
        let load = serde_json::to_string(&c.load).unwrap_or_default();
        out.push_str(&format!(
            "{},{},{},{},{},{:.3}",
            c.ordinal,
            quote(&c.stack),
            quote(&c.workload),
            quote(&load),
            c.repetition,
            c.duration_s
        ));
        for n in &names {
            out.push(',');
            if let Some(v) = c.metrics.get(*n).filter(|v| v.is_finite()) {
                out.push_str(&v.to_string());
            }
        }
        out.push('\n');
    }
    out
}
