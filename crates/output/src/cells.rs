//! A stored run's cells as CSV (`loadlab report --format csv`).

use serde_json::Value;

/// The load's fields in this order, then any others a cell's load has (`extra`), sorted.
const LOAD_FIELDS: [&str; 8] = [
    "model",
    "connections",
    "rate",
    "duration_s",
    "requests",
    "calls_per_connection",
    "keepalive",
    "warmup_s",
];

/// One row per cell: where, what load (each of its fields a `load_` column, so that a
/// spreadsheet can sort and filter by it), and every metric (the union of names, sorted).
pub fn csv(cells: &[loadlab_store::CellRecord]) -> String {
    let mut names: Vec<&str> =
        cells.iter().flat_map(|c| c.metrics.keys().map(String::as_str)).collect();
    names.sort_unstable();
    names.dedup();
    let loads: Vec<serde_json::Map<String, Value>> = cells
        .iter()
        .map(|c| match serde_json::to_value(&c.load) {
            Ok(Value::Object(m)) => m,
            _ => serde_json::Map::new(),
        })
        .collect();
    let mut extra: Vec<&str> = loads
        .iter()
        .flat_map(|m| m.keys().map(String::as_str))
        .filter(|k| !LOAD_FIELDS.contains(k))
        .collect();
    extra.sort_unstable();
    extra.dedup();
    let load_fields: Vec<&str> = LOAD_FIELDS.iter().copied().chain(extra).collect();
    let mut out = String::from("ordinal,stack,workload");
    for f in &load_fields {
        out.push_str(&format!(",load_{f}"));
    }
    out.push_str(",repetition,duration_s");
    for n in &names {
        out.push(',');
        out.push_str(n);
    }
    out.push('\n');
    for (c, load) in cells.iter().zip(&loads) {
        out.push_str(&format!("{},{},{}", c.ordinal, quote(&c.stack), quote(&c.workload)));
        for f in &load_fields {
            out.push(',');
            out.push_str(&quote(&load.get(*f).map(field).unwrap_or_default()));
        }
        // Counted as the text and the report count it, from 1 (the store's are from 0).
        let repetition = loadlab_report::format::repetition(c.repetition);
        out.push_str(&format!(",{repetition},{:.3}", c.duration_s));
        for n in &names {
            out.push(',');
            if let Some(v) = c.figure(n) {
                out.push_str(&v.to_string());
            }
        }
        out.push('\n');
    }
    out
}

/// A load field as a CSV value: numbers as Rust prints them (`250`, `0.5`), text bare, null
/// empty, anything nested as its JSON.
fn field(v: &Value) -> String {
    match v {
        Value::Null => String::new(),
        Value::String(s) => s.clone(),
        Value::Number(n) => n.as_f64().map_or_else(|| n.to_string(), |f| f.to_string()),
        other => other.to_string(),
    }
}

fn quote(s: &str) -> String {
    if s.contains([',', '"', '\n']) {
        format!("\"{}\"", s.replace('"', "\"\""))
    } else {
        s.to_string()
    }
}

#[cfg(test)]
mod tests {
    use loadlab_store::{metric, CellRecord, LoadModel, LoadSpec};

    fn cell(ordinal: u32, load: LoadSpec) -> CellRecord {
        let record = CellRecord::for_test("nginx", "hello.txt", load);
        CellRecord { ordinal, duration_s: 2.0, ..record.with_metrics(&[(metric::RPS, 100.0)]) }
    }

    /// Each field of the load is a column of its own, empty where a cell's model has none:
    /// one column holding a JSON object is something a spreadsheet cannot sort or filter by.
    #[test]
    fn the_load_is_one_column_per_field() {
        let mut closed = LoadSpec::new(LoadModel::Closed);
        closed.connections = Some(10);
        closed.duration_s = Some(5.0);
        closed.keepalive = true;
        let mut open = LoadSpec::new(LoadModel::Open);
        open.rate = Some(250.0);
        open.extra.insert("arrival".into(), "poisson".into());
        let text = super::csv(&[cell(0, closed), cell(1, open)]);
        let rows: Vec<Vec<&str>> = text.lines().map(|l| l.split(',').collect()).collect();
        assert!(!text.contains('{'), "{text}");
        let column = |name: &str| {
            let i = rows[0].iter().position(|h| *h == name);
            let i = i.unwrap_or_else(|| panic!("no {name} column in {text}"));
            (rows[1][i], rows[2][i])
        };
        assert_eq!(column("load_model"), ("closed", "open"));
        assert_eq!(column("load_connections"), ("10", ""));
        assert_eq!(column("load_rate"), ("", "250"));
        assert_eq!(column("load_duration_s"), ("5", ""));
        assert_eq!(column("load_keepalive"), ("true", "false"));
        assert_eq!(column("load_arrival"), ("", "poisson"));
        assert_eq!(column("duration_s"), ("2.000", "2.000"));
        // The first repetition is 1, as `loadlab run` and the report say it.
        assert_eq!(column("repetition"), ("1", "1"));
        assert_eq!(column("rps"), ("100", "100"));
        assert!(rows.iter().all(|r| r.len() == rows[0].len()), "{text}");
    }
}
