//! The report's cells section: every measurement in the order it ran, by workload, each with
//! its figures in ApacheBench's and httperf's layouts, its flags and knobs.

use std::fmt::Write;

use loadlab_store::CellRecord;

use crate::counted::{Counted, Measured};
use crate::format;
use crate::group::{knobs_label, load_label_as, stack_labels};
use crate::layout::{self, Figures};
use crate::verdict::Measure;

use super::Esc;

pub(super) fn cells_section(o: &mut String, cells: &[CellRecord]) {
    let _ = writeln!(
        o,
        "<section id=\"cells\">\n<h2>Cells</h2>\n<p class=\"lead\">Every measurement in the order \
         it ran. Open one for its figures in ApacheBench's and httperf's layouts.</p>"
    );
    let labels = stack_labels(cells);
    let mut workloads: Vec<&str> = Vec::new();
    for c in cells {
        if !workloads.contains(&c.workload.as_str()) {
            workloads.push(&c.workload);
        }
    }
    for w in workloads {
        let mine: Vec<(&CellRecord, &String)> =
            cells.iter().zip(&labels).filter(|(c, _)| c.workload == w).collect();
        let flagged = mine.iter().filter(|(c, _)| !c.flags.is_empty()).count();
        let flagged = if flagged > 0 {
            format!(" · <span class=\"flag\">⚠</span> {flagged} flagged")
        } else {
            String::new()
        };
        let _ = writeln!(
            o,
            "<details class=\"workload\"><summary><strong>{}</strong> · {} cells{flagged}</summary>\
             <div class=\"body\">",
            Esc(w),
            mine.len()
        );
        for (c, stack) in mine {
            cell_detail(o, c, stack);
        }
        let _ = writeln!(o, "</div></details>");
    }
    let _ = writeln!(o, "</section>");
}

/// One cell: its figures in ab's and httperf's layouts, its flags and knobs.
fn cell_detail(o: &mut String, c: &CellRecord, stack: &str) {
    // A view or visit cell by its views' or visits' figures, as its group is compared.
    let counted = Counted::of(c);
    let v = |m: Measure| counted.value(m, c).map_or("—".to_owned(), |v| counted.show(m, v));
    let flag = if c.flags.is_empty() { "" } else { " <span class=\"flag\">⚠</span>" };
    let _ = writeln!(
        o,
        "<details><summary>#{} · {} · {} · rep {} — {} · {} {} · {} {}{flag}</summary>\
             \n<div class=\"body\">",
        c.ordinal,
        Esc(stack),
        Esc(&load_label_as(&c.load, counted)),
        format::repetition(c.repetition),
        v(Measure::Rps),
        counted.name(Measure::P50),
        v(Measure::P50),
        counted.name(Measure::P99),
        v(Measure::P99)
    );
    if !c.flags.is_empty() {
        let _ = write!(o, "<ul class=\"warnings\">");
        for f in &c.flags {
            let _ = write!(o, "<li>⚠ {}: {}</li>", Esc(f.flag.as_str()), Esc(&f.detail));
        }
        let _ = writeln!(o, "</ul>");
    }
    let _ = writeln!(
            o,
            "<p class=\"pm\">started {} · knobs {}</p>\n<div class=\"cols\"><div><h4>ab</h4><pre>{}</pre></div>\
             <div><h4>httperf</h4><pre>{}</pre></div></div>\n</div></details>",
            format::utc(c.started_at),
            Esc(&knobs_label(&c.knobs)),
            Esc(&layout::to_text(layout::ab, &Figures::of_cell(c))),
            Esc(&layout::to_text(layout::httperf, &Figures::of_cell(c)))
        );
}
