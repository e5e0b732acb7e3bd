//! The figures the docs give for the built-in suites (how many, their cells, how long each
//! takes full and `--quick`, the classic tour's stacks and starts) read from README.md,
//! docs/README.md and docs/suites.md and compared with what the plan of each suite computes, so
//! a suite that changes fails here until its docs follow.

use std::path::PathBuf;

use loadlab_suite::{builtin, plan};

/// Numbers the docs spell out.
const WORDS: [&str; 13] = [
    "zero", "one", "two", "three", "four", "five", "six", "seven", "eight", "nine", "ten",
    "eleven", "twelve",
];

/// A file of the workspace, by its path from the workspace's root.
fn doc(name: &str) -> String {
    let path = PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("../..").join(name);
    std::fs::read_to_string(&path).unwrap_or_else(|e| panic!("{}: {e}", path.display()))
}

/// The rows of the table under `## The built-in suites`: the suite's key and its cells.
fn suite_rows(text: &str) -> Vec<Vec<String>> {
    let section = text.split("## The built-in suites").nth(1).expect("the section");
    section
        .lines()
        .skip_while(|l| !l.starts_with("| suite"))
        .skip(2)
        .take_while(|l| l.starts_with('|'))
        .map(|l| l.trim_matches('|').split(" | ").map(|c| c.trim().to_string()).collect())
        .collect()
}

/// `about 3.7 min` or `about 11 h` against an estimate in seconds: equal at the precision the
/// docs give (a figure without a decimal is rounded to the unit).
fn check_about(suite: &str, what: &str, cell: &str, seconds: f64) -> Option<String> {
    let words: Vec<&str> = cell.split_whitespace().collect();
    let [about, figure, unit] = words[..] else { panic!("{suite} {what}: {cell:?}") };
    assert_eq!(about, "about", "{suite} {what}: {cell:?}");
    let per = match unit {
        "min" => 60.0,
        "h" => 3600.0,
        other => panic!("{suite} {what}: unit {other:?}"),
    };
    let decimals = figure.split_once('.').map_or(0, |(_, d)| d.len());
    let planned = format!("{:.*}", decimals, seconds / per);
    (figure != planned)
        .then(|| format!("{suite} {what}: the docs say {cell:?}, the plan {planned} {unit}"))
}

#[test]
fn docs_suites_table_gives_each_builtin_suite_the_cells_and_time_its_plan_computes() {
    let rows = suite_rows(&doc("docs/suites.md"));
    let keys: Vec<String> =
        rows.iter().map(|r| r[0].split('`').nth(1).unwrap_or_default().to_string()).collect();
    let mut names: Vec<&str> = builtin::names().collect();
    let mut listed: Vec<&str> = keys.iter().map(String::as_str).collect();
    names.sort_unstable();
    listed.sort_unstable();
    assert_eq!(listed, names, "one row per built-in suite");
    let mut wrong = Vec::new();
    for (row, key) in rows.iter().zip(&keys) {
        let [_, _, _, cells, full, quick] = &row[..] else { panic!("{key}: {row:?}") };
        let suite = builtin(key).unwrap_or_else(|e| panic!("{e}"));
        let whole = plan(&suite, false).estimate();
        if cells != &whole.cells.to_string() {
            wrong.push(format!("{key}: the docs say {cells} cells, the plan {}", whole.cells));
        }
        wrong.extend(check_about(key, "full", full, whole.total.as_secs_f64()));
        let quick_total = plan(&suite, true).estimate().total.as_secs_f64();
        wrong.extend(check_about(key, "--quick", quick, quick_total));
    }
    assert!(wrong.is_empty(), "docs/suites.md drifted from the plans:\n{}", wrong.join("\n"));
}

#[test]
fn docs_readme_counts_the_builtin_suites() {
    let text = doc("docs/README.md");
    let at = text.find(" built-in suites").expect("docs/README.md names the built-in suites");
    let word = text[..at].rsplit(' ').next().unwrap_or_default();
    assert_eq!(word, WORDS[builtin::names().count()], "docs/README.md: the {word} built-in suites");
}

/// The README's tour (`make demo`) and docs/suites.md's count of its stack starts, against the
/// plan of `classic`.
#[test]
fn the_classic_tour_has_the_cells_stacks_and_starts_the_docs_give() {
    let suite = builtin("classic").unwrap_or_else(|e| panic!("{e}"));
    let e = plan(&suite, false).estimate();
    let (stacks, reps) = (suite.stacks.len(), suite.repetitions as usize);
    let tour =
        format!("{} cells on {} stacks in {} repetitions", e.cells, WORDS[stacks], WORDS[reps]);
    let readme = doc("README.md");
    assert!(readme.contains(&tour), "README.md should say {tour:?}");
    let starts = format!("{stacks} stacks x {reps} repetitions = {} starts", e.stack_ups);
    assert!(doc("docs/suites.md").contains(&starts), "docs/suites.md should say {starts:?}");
}
