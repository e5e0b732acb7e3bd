//! Whether a suite's plan can answer its question before it runs: the report compares stacks
//! cell by cell with a two-sided Mann-Whitney test at α = 0.05, which with fewer than 4
//! repetitions per side can never reach significance (3 against 3: the smallest p is 0.1).

use loadlab_stats::mann_whitney::min_samples_for_significance;
use loadlab_suite::Plan;

/// The significance level the report's verdict uses.
pub const ALPHA: f64 = 0.05;

/// A sentence saying why the plan cannot show a significant difference, or `None` when it can
/// (or compares nothing: one stack per workload and load).
pub fn underpowered(plan: &Plan) -> Option<String> {
    let need = min_samples_for_significance(ALPHA) as u32;
    if plan.repetitions >= need || !compares(plan) {
        return None;
    }
    Some(format!(
        "with {} repetition{} per stack no difference between stacks can reach significance \
         (a two-sided Mann-Whitney test at α = {ALPHA} needs at least {need} per side): pass \
         --repetitions {need} or more to compare them",
        plan.repetitions,
        if plan.repetitions == 1 { "" } else { "s" },
    ))
}

/// Whether some workload at some load runs on two stacks or more: a comparison.
fn compares(plan: &Plan) -> bool {
    let mut seen: Vec<(&str, String, usize)> = Vec::new();
    for c in plan.cells.iter().filter(|c| c.repetition == 0) {
        let key = (c.workload.name(), format!("{:?}", c.load), c.stack_index);
        if seen.iter().any(|(w, l, s)| *w == key.0 && *l == key.1 && *s != key.2) {
            return true;
        }
        seen.push(key);
    }
    false
}

#[cfg(test)]
mod tests {
    use super::*;

    fn plan(text: &str, quick: bool) -> Plan {
        let suite = loadlab_suite::parse(text, "t.toml").expect("a valid suite");
        loadlab_suite::plan(&suite, quick)
    }

    const TWO: &str = "name = \"two\"\nrepetitions = 3\n[[stacks]]\nname = \"nginx\"\n\
        [[stacks]]\nname = \"nginx-fpm\"\n[[workloads]]\nname = \"hello.txt\"\n\
        [[loads]]\nmodel = \"closed\"\nconcurrency = [2]\nduration = \"1s\"\n";

    #[test]
    fn three_repetitions_of_a_comparison_cannot_answer_and_four_can() {
        let line = underpowered(&plan(TWO, false)).expect("3 against 3 is underpowered");
        assert!(line.starts_with("with 3 repetitions per stack no difference"), "{line}");
        assert!(line.contains("at least 4 per side"), "{line}");
        // One number: the fix it names is the least that can answer, not a safe margin.
        assert!(line.ends_with("pass --repetitions 4 or more to compare them"), "{line}");
        assert_eq!(underpowered(&plan(&TWO.replace("= 3", "= 4"), false)), None);
    }

    #[test]
    fn one_stack_compares_nothing() {
        let one = TWO.replace("[[stacks]]\nname = \"nginx-fpm\"\n", "");
        assert_eq!(underpowered(&plan(&one, false)), None);
    }

    #[test]
    fn every_built_in_suite_can_answer_quick_or_not() {
        for name in loadlab_suite::builtin::names() {
            let suite = loadlab_suite::builtin(name).expect("a built-in suite");
            for quick in [false, true] {
                let p = loadlab_suite::plan(&suite, quick);
                assert_eq!(underpowered(&p), None, "{name} quick={quick}: {} reps", p.repetitions);
            }
        }
    }
}
