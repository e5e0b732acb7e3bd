//! `loadlab merge FILE...`: agents' interval logs (`--hdr-log`) added into one result, printed
//! as bench prints its latency (text or JSON), and optionally written as one interval log. The
//! reading and adding are loadlab-runner's (`merge`) and the stats crate's; this prints.

use std::io::Write as _;
use std::path::PathBuf;

use clap::{Args, ValueEnum};
use loadlab_output::bench as output;
use loadlab_runner::hosts::merge;

#[derive(Debug, Args)]
pub struct MergeArgs {
    /// The interval logs to add (each written by `bench --hdr-log` on one agent)
    #[arg(value_name = "FILE", required = true)]
    pub files: Vec<PathBuf>,
    /// Output format
    #[arg(long, value_enum, default_value_t = MergeFormat::Text)]
    pub format: MergeFormat,
    /// Also write the merged interval log to FILE (the form --hdr-log writes)
    #[arg(long = "hdr-log", value_name = "FILE")]
    pub hdr_log: Option<PathBuf>,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq, ValueEnum)]
pub enum MergeFormat {
    /// The latency table bench prints
    Text,
    /// The merged figures, for scripts
    Json,
}

pub fn run(args: MergeArgs) -> anyhow::Result<u8> {
    let merging = merge::merge(&args.files).map_err(crate::exit::failure)?;
    if let Some(path) = &args.hdr_log {
        merging.write(path, env!("CARGO_PKG_VERSION")).map_err(crate::exit::failure)?;
    }
    let figures = merging.merged.figures(merging.files);
    match args.format {
        MergeFormat::Json => outln!("{}", serde_json::to_string_pretty(&figures)?)?,
        MergeFormat::Text => {
            let mut out = std::io::BufWriter::new(std::io::stdout().lock());
            output::write_merged(&mut out, &figures)?;
            out.flush()?;
        }
    }
    Ok(crate::exit::OK)
}
