//! The report's profiles section: for each group with profiled cells, each stack's flame
//! graphs tier by tier, and the differential flame graph of the group's first stack against
//! each other, with the functions whose shares differ most as a table and the largest three
//! in words. A tier with too few samples, and a stack whose profile was refused or not
//! recorded, is said instead of drawn.

use std::fmt::Write;

use loadlab_store::{CellRecord, RunProfiles};

use crate::flame;
use crate::group::{groups, Group};
use crate::profile::{self, Difference, GroupProfiles, StackProfile, TierStacks, ENOUGH_SAMPLES};

use super::Esc;

/// The section, empty when no cell of the run was to be profiled.
pub(super) fn profiles_section(cells: &[CellRecord], profiles: &RunProfiles) -> String {
    let groups = groups(cells);
    let profiled: Vec<(&Group<'_>, GroupProfiles)> =
        groups.iter().filter_map(|g| Some((g, profile::of_group(g, profiles)?))).collect();
    let mut out = String::new();
    if profiled.is_empty() {
        return out;
    }
    let o = &mut out;
    let _ = writeln!(
        o,
        "<section id=\"profiles\">\n<h2>Where the CPU went</h2>\n<p class=\"lead\">Each tier's \
         on-CPU stacks, sampled by perf while the cell was measured and merged over the stack's \
         profiled repetitions: a box is a function, its width its share of the tier's samples, \
         its callers below it; hover over one for its figures. <code>loadlab profile CELL</code> \
         lists them, <code>--folded DIR</code> writes them for other tools. A frame in brackets \
         (<code>[libphp8.2.so]</code>) is code of that object perf found no symbol for.</p>"
    );
    for (g, p) in &profiled {
        let _ = writeln!(
            o,
            "<div class=\"profile-group\">\n<h3>{} · {}</h3>",
            Esc(&g.workload),
            Esc(&g.load_label())
        );
        for s in &p.stacks {
            stack(o, s);
        }
        for d in &p.differences {
            difference(o, d, p);
        }
        let _ = writeln!(o, "</div>");
    }
    let _ = writeln!(o, "</section>");
    out
}

fn stack(o: &mut String, s: &StackProfile) {
    let cells: Vec<String> = s.cells.iter().map(u32::to_string).collect();
    let _ = write!(o, "<h4>{}", Esc(&s.stack));
    if !cells.is_empty() {
        let _ = write!(o, " <span class=\"pm\">cells {}</span>", cells.join(", "));
    }
    let _ = writeln!(o, "</h4>");
    if !s.recorded() {
        let _ = writeln!(o, "<p class=\"note\">Not profiled: {}.</p>", Esc(&s.profile));
    } else if s.tiers.is_empty() {
        let _ = writeln!(o, "<p class=\"note\">perf recorded no sample of its tiers.</p>");
    }
    for t in &s.tiers {
        tier(o, t);
    }
}

fn tier(o: &mut String, t: &TierStacks) {
    let lost = match t.lost {
        0 => String::new(),
        n => format!(", {n} lost"),
    };
    let _ = writeln!(
        o,
        "<figure class=\"flame\"><figcaption><strong>{}</strong>: {} samples, one every {:.1} ms \
         of a CPU{lost}</figcaption>",
        Esc(&t.tier),
        t.samples,
        t.interval_us as f64 / 1000.0
    );
    match t.enough {
        true => graph(o, flame::svg(&t.folded)),
        false => {
            let _ = writeln!(
                o,
                "<p class=\"note\">{} samples: under {ENOUGH_SAMPLES}, too few for a flame graph \
                 to say anything.</p>",
                t.samples
            );
        }
    }
    let _ = writeln!(o, "</figure>");
}

fn difference(o: &mut String, d: &Difference, p: &GroupProfiles) {
    let _ = writeln!(o, "<h4>{} against {}</h4>\n<ul class=\"said\">", Esc(&d.other), Esc(&d.base));
    for w in &d.words {
        let _ = writeln!(o, "<li>{}</li>", Esc(w));
    }
    let _ = writeln!(o, "</ul>");
    if !d.enough {
        return;
    }
    let folded = |name: &str| {
        p.stacks.iter().find(|s| s.stack == name).map(|s| profile::code_only(&s.folded()))
    };
    let (Some(base), Some(other)) = (folded(&d.base), folded(&d.other)) else { return };
    let _ = writeln!(
        o,
        "<div class=\"flame-diff\"><figure class=\"flame\"><figcaption>{other}'s stacks, \
         every tier together, coloured by the change of each function's share from {base}'s: \
         red a larger share, blue a smaller one (both scaled to the same total). The tiers' \
         names are left out, so that the code both run (the kernel's, libc's, PHP's) lines \
         up.</figcaption>",
        other = Esc(&d.other),
        base = Esc(&d.base)
    );
    graph(o, flame::differential(&base, &other).and_then(|diff| flame::svg(&diff)));
    let _ = writeln!(
        o,
        "</figure>\n<table class=\"deltas\"><thead><tr><th>function (self)</th>\
         <th class=\"num\">{}</th><th class=\"num\">{}</th><th class=\"num\" title=\"percentage points\">Δ</th>\
         </tr></thead><tbody>",
        Esc(&d.base),
        Esc(&d.other)
    );
    for f in &d.functions {
        let _ = writeln!(
            o,
            "<tr><td>{}</td><td class=\"num\">{:.1}%</td><td class=\"num\">{:.1}%</td>\
             <td class=\"num\">{:+.1}</td></tr>",
            Esc(&f.function),
            f.base_pct,
            f.other_pct,
            f.difference_pct
        );
    }
    let _ = writeln!(o, "</tbody></table></div>");
}

/// A drawn graph, or why it could not be drawn.
fn graph(o: &mut String, svg: std::io::Result<String>) {
    match svg {
        Ok(svg) => o.push_str(&svg),
        Err(e) => {
            let _ =
                write!(o, "<p class=\"chart-error\">cannot draw it: {}</p>", Esc(&e.to_string()));
        }
    }
}
