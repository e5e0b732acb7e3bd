//! `--format json`: the report serialized; the schema is docs/json-schema.md.

use std::io::{self, Write};

use super::Render;
use loadlab_runner::commands::bench::Report;

pub struct Json;

impl Render for Json {
    fn render(&self, report: &Report, out: &mut dyn Write) -> io::Result<()> {
        let Some(profiles) = &report.profiles else {
            serde_json::to_writer_pretty(&mut *out, report)?;
            return writeln!(out);
        };
        // `--profile`'s tiers, as `stack sample --json` gives them: their top functions, not
        // their folded stacks.
        let mut doc = serde_json::to_value(report)?;
        doc["profiles"] = crate::profile::bench_json(profiles);
        serde_json::to_writer_pretty(&mut *out, &doc)?;
        writeln!(out)
    }
}
