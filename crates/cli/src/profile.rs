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
    #[arg(long = "top", value_name = "N", default_value_t = 15)]
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
    let tops: Vec<_> = profiles
        .iter()
        .map(|p| {
            let mut f = loadlab_report::profile::functions(&p.folded);
            f.truncate(args.top);
            (p, f)
        })
        .collect();
    if args.json {
        let tiers: Vec<serde_json::Value> = tops
            .iter()
            .map(|(p, f)| {
                serde_json::json!({
                    "tier": p.tier, "samples": p.samples, "lost": p.lost,
                    "interval_us": p.interval_us,
                    "enough": p.samples >= loadlab_report::profile::ENOUGH_SAMPLES,
                    "functions": f,
                })
            })
            .collect();
        let doc = serde_json::json!({ "run": run.0, "cell": args.cell, "tiers": tiers });
        outln!("{}", serde_json::to_string_pretty(&doc)?)?;
        return Ok(OK);
    }
    for (p, functions) in tops {
        let few = match p.samples < loadlab_report::profile::ENOUGH_SAMPLES {
            true => format!(
                ": under {} samples, too few to say much",
                loadlab_report::profile::ENOUGH_SAMPLES
            ),
            false => String::new(),
        };
        outln!(
            "{}: {} samples every {:.1} ms of CPU, {} lost{few}",
            p.tier,
            p.samples,
            p.interval_us as f64 / 1000.0,
            p.lost
        )?;
        outln!("  {:>6} {:>6}  function", "self%", "total%")?;
        let pct = |n: u64| 100.0 * n as f64 / p.samples.max(1) as f64;
        for f in functions {
            outln!("  {:>6.1} {:>6.1}  {}", pct(f.self_samples), pct(f.total_samples), f.function)?;
        }
    }
    Ok(OK)
}
