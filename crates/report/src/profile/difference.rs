//! Two stacks of one group compared by where their CPU went: each function's self share
//! (the samples in which it was on the CPU itself, of all the stack's samples, every tier
//! together) in each, the functions whose shares differ most, and the largest three said in
//! words.
//!
//! Shares, not sample counts: the stacks ran the same seconds but not the same number of
//! requests, so counts would mostly say which served more. A frame perf could not name (a
//! server built without frame pointers or symbols: `[libphp8.2.so]`) is code of that object:
//! it stays in the table, and the words say it apart (see [`words`]); the kernel's frames
//! always have names.

use serde::Serialize;

use super::{functions, lines, StackProfile, ENOUGH_SAMPLES};

/// Functions listed in a difference's table.
pub const TOP: usize = 15;

/// Differences said in words.
pub const SAID: usize = 3;

/// One function's self share in two stacks, in percent of each stack's samples.
#[derive(Clone, Debug, PartialEq, Serialize)]
pub struct FunctionDelta {
    pub function: String,
    pub base_pct: f64,
    pub other_pct: f64,
    /// `other_pct - base_pct`, in percentage points.
    pub difference_pct: f64,
}

/// The difference of `other` against `base`, two stacks of one group.
#[derive(Clone, Debug, PartialEq, Serialize)]
pub struct Difference {
    pub base: String,
    pub other: String,
    pub base_samples: u64,
    pub other_samples: u64,
    /// Both have at least [`ENOUGH_SAMPLES`]; otherwise nothing is compared.
    pub enough: bool,
    /// The [`TOP`] functions whose self shares differ most, the largest difference first.
    pub functions: Vec<FunctionDelta>,
    /// The largest [`SAID`] differences of named functions in words and each stack's share in
    /// code perf could not name, or why there is no comparison.
    pub words: Vec<String>,
}

/// `other` against `base`, from their stacks of every tier.
pub fn between(base: &StackProfile, other: &StackProfile) -> Difference {
    let (base_samples, other_samples) = (base.samples(), other.samples());
    let enough = base_samples >= ENOUGH_SAMPLES && other_samples >= ENOUGH_SAMPLES;
    let (functions, words) = match enough {
        true => {
            let mut all = deltas(&base.folded(), &other.folded());
            all.truncate(TOP);
            let words = words(&base.stack, &other.stack, &all);
            (all, words)
        }
        false => (Vec::new(), vec![too_few(base, other)]),
    };
    Difference {
        base: base.stack.clone(),
        other: other.stack.clone(),
        base_samples,
        other_samples,
        enough,
        functions,
        words,
    }
}

/// Why two stacks are not compared: the one (or both) with too few samples, and why a stack
/// that has none has none.
fn too_few(base: &StackProfile, other: &StackProfile) -> String {
    let short: Vec<String> = [base, other]
        .into_iter()
        .filter(|s| s.samples() < ENOUGH_SAMPLES)
        .map(|s| match s.recorded() {
            true => format!("{} has {} samples", s.stack, s.samples()),
            false => format!("{} has no profile ({})", s.stack, s.profile),
        })
        .collect();
    format!(
        "{} and {} are not compared: {}, under the {ENOUGH_SAMPLES} a profile needs to say \
         anything.",
        base.stack,
        other.stack,
        short.join(" and ")
    )
}

/// Every function's self share in `base` and in `other` (folded stacks), the largest
/// difference first (ties by name).
pub fn deltas(base: &str, other: &str) -> Vec<FunctionDelta> {
    let shares = |folded: &str| {
        let total: u64 = lines(folded).map(|(_, n)| n).sum();
        let pct = move |n: u64| 100.0 * n as f64 / total.max(1) as f64;
        functions(folded).into_iter().map(move |f| (f.function, pct(f.self_samples)))
    };
    let mut by: std::collections::BTreeMap<String, (f64, f64)> = Default::default();
    for (f, pct) in shares(base) {
        by.entry(f).or_default().0 = pct;
    }
    for (f, pct) in shares(other) {
        by.entry(f).or_default().1 = pct;
    }
    let mut all: Vec<FunctionDelta> = by
        .into_iter()
        .filter(|(_, (b, o))| b + o > 0.0)
        .map(|(function, (base_pct, other_pct))| FunctionDelta {
            function,
            base_pct,
            other_pct,
            difference_pct: other_pct - base_pct,
        })
        .collect();
    // Stable: among equal differences the names keep the map's order.
    all.sort_by(|a, b| b.difference_pct.abs().total_cmp(&a.difference_pct.abs()));
    all
}

/// The largest [`SAID`] differences of named functions as sentences, the stack that spends
/// more named first ("nginx-fpm spends 18.0% of its samples in copy_page, apache-modphp
/// 3.1%"), then, when perf named none of some code, each stack's share in it by object: the
/// same interpreter is `[libphp8.2.so]` in Apache and `[php-cgi8.2]` beside nginx, so its
/// frames differ by name and not by what runs, and are said side by side instead.
pub fn words(base: &str, other: &str, deltas: &[FunctionDelta]) -> Vec<String> {
    let (unnamed, named): (Vec<&FunctionDelta>, Vec<&FunctionDelta>) =
        deltas.iter().partition(|d| d.function.starts_with('[') && d.function.ends_with(']'));
    let mut said: Vec<String> = named
        .iter()
        .filter(|d| d.difference_pct.abs() >= 0.05)
        .take(SAID)
        .map(|d| {
            let ((more, m), (less, l)) = match d.difference_pct > 0.0 {
                true => ((other, d.other_pct), (base, d.base_pct)),
                false => ((base, d.base_pct), (other, d.other_pct)),
            };
            format!("{more} spends {m:.1}% of its samples in {}, {less} {l:.1}%", d.function)
        })
        .collect();
    let objects = |pct: fn(&FunctionDelta) -> f64| {
        let mut by: Vec<&&FunctionDelta> = unnamed.iter().filter(|d| pct(d) >= 0.05).collect();
        by.sort_by(|a, b| pct(b).total_cmp(&pct(a)));
        let total: f64 = by.iter().map(|d| pct(d)).sum();
        let list: Vec<String> =
            by.iter().take(SAID).map(|d| format!("{} {:.1}%", d.function, pct(d))).collect();
        (total, list.join(", "))
    };
    let (b, b_list) = objects(|d| d.base_pct);
    let (o, o_list) = objects(|d| d.other_pct);
    if b + o > 0.0 {
        let objects = |list: String| match list.is_empty() {
            true => list,
            false => format!(" ({list})"),
        };
        said.push(format!(
            "{base} spends {b:.1}% of its samples in code perf found no symbol for{}, \
             {other} {o:.1}%{}",
            objects(b_list),
            objects(o_list)
        ));
    }
    said
}
