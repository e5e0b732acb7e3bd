//! `loadlab profile`: a stored cell's profiles, each tier's top functions (self and total),
//! and its folded stacks written out for other tools (flamegraph.pl, inferno, speedscope).

use std::path::PathBuf;

use anyhow::Context;
use clap::Args;

use crate::exit::{failure, Failure, OK};
use crate::report_cmd::{open_existing, pick_run};

#[derive(Debug, Args)]
pub struct ProfileArgs {
    #[command(flatten)]
    pub store: crate::report_cmd::StoreArgs,
    /// The run [default: the latest].
    #[arg(long = "run", value_name = "ID")]
    pub run: Option<i64>,
    /// The cell: its number in the run's plan, as `loadlab run` numbers them (from 1).
    #[arg(value_name = "CELL")]
    pub cell: u32,
    /// Functions listed per tier.
    #[arg(long = "top", value_name = "N", default_value_t = loadlab_output::profile::TOP)]
    pub top: usize,
    /// Write each tier's folded stacks to DIR/cell-CELL-TIER.folded.
    #[arg(long = "folded", value_name = "DIR")]
    pub folded: Option<PathBuf>,
    /// One JSON object instead of the tables.
    #[arg(long = "json")]
    pub json: bool,
}

pub fn run(args: ProfileArgs) -> anyhow::Result<u8> {
    let store = open_existing(&args.store)?;
    let run = pick_run(&store, args.run)?;
    let ordinal =
        args.cell.checked_sub(1).ok_or_else(|| Failure::usage("cells are numbered from 1"))?;
    let profiles = store.profiles(run, ordinal).map_err(failure)?;
    if profiles.is_empty() {
        let msg = format!("cell {} of run {run} has no profile (run it with --profile)", args.cell);
        return Err(Failure::usage(msg).into());
    }
    if let Some(dir) = &args.folded {
        std::fs::create_dir_all(dir).with_context(|| format!("creating {}", dir.display()))?;
        for p in &profiles {
            let name = p.tier.replace(|c: char| !c.is_ascii_alphanumeric() && c != '-', "_");
            let path = dir.join(format!("cell-{}-{name}.folded", args.cell));
            std::fs::write(&path, &p.folded)
                .with_context(|| format!("writing {}", path.display()))?;
        }
    }
    if args.json {
        let tiers = loadlab_output::profile::tiers_json(&profiles, args.top);
        let doc = serde_json::json!({ "run": run.0, "cell": args.cell, "tiers": tiers });
        outln!("{}", serde_json::to_string_pretty(&doc)?)?;
        return Ok(OK);
    }
    loadlab_output::profile::write_tiers(&mut std::io::stdout().lock(), &profiles, args.top)?;
    Ok(OK)
}
