//! `--format json`: the report serialized; the schema is docs/json-schema.md.

use std::io::{self, Write};

use super::Render;
use loadlab_runner::commands::bench::Report;

pub struct Json;

impl Render for Json {
    fn render(&self, report: &Report, out: &mut dyn Write) -> io::Result<()> {
        serde_json::to_writer_pretty(&mut *out, report)?;
        writeln!(out)
    }
}
