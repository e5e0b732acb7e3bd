//! `loadlab report [RUN] -o FILE`: a stored run as one self-contained HTML file, or its verdict
//! as the terminal table `run` ends with, as JSON or as CSV.

use std::path::{Path, PathBuf};

use anyhow::Context;
use clap::{Args, ValueEnum};
use loadlab_runner::commands::run::stored;
use loadlab_store::{RunId, Store};

use crate::exit::{failure, OK};

#[derive(Debug, Clone, Copy, PartialEq, Eq, ValueEnum)]
pub enum ReportFormat {
    /// The self-contained HTML report.
    Html,
    /// The verdict table `loadlab run` prints at its end.
    Text,
    /// The verdict (per workload and load: each stack's medians with CIs, the comparisons).
    Json,
    /// Every cell's metrics, one row per cell.
    Csv,
}

/// Which store `runs`, `report` and `compare` read.
#[derive(Debug, Args)]
pub struct StoreArgs {
    /// The SQLite store [default: loadlab-out/loadlab.db, where `loadlab run` writes].
    #[arg(long = "db", conflicts_with = "out")]
    pub db: Option<PathBuf>,
    /// The directory a `loadlab run --out DIR` wrote: its DIR/loadlab.db.
    #[arg(long = "out", value_name = "DIR")]
    pub out: Option<PathBuf>,
}

impl StoreArgs {
    pub fn path(&self) -> PathBuf {
        match (&self.db, &self.out) {
            (Some(db), _) => db.clone(),
            (None, Some(dir)) => dir.join("loadlab.db"),
            // Where `run` writes by default.
            (None, None) => Path::new("loadlab-out").join("loadlab.db"),
        }
    }
}

#[derive(Debug, Args)]
pub struct ReportArgs {
    /// The run's id (see `loadlab runs`); the latest run when omitted.
    pub run: Option<i64>,
    #[command(flatten)]
    pub store: StoreArgs,
    /// Where to write; stdout for text, JSON and CSV when omitted, report.html for HTML.
    #[arg(short = 'o', long = "output")]
    pub output: Option<PathBuf>,
    #[arg(long = "format", value_enum, default_value_t = ReportFormat::Html)]
    pub format: ReportFormat,
}

pub fn run(args: ReportArgs) -> anyhow::Result<u8> {
    let store = open_existing(&args.store)?;
    let id = pick_run(&store, args.run)?;
    say_unfinished(&store, id)?;
    match args.format {
        ReportFormat::Html => {
            let out = args.output.unwrap_or_else(|| PathBuf::from("report.html"));
            loadlab_runner::commands::run::write_report(&store, id, &out).map_err(failure)?;
            outln!("{}", out.display())?;
        }
        ReportFormat::Text => {
            let cells = store.cells(id).map_err(failure)?;
            let table = loadlab_report::verdict_table(&loadlab_report::verdicts(&cells));
            emit(args.output.as_deref(), &table)?;
        }
        ReportFormat::Json => {
            let cells = store.cells(id).map_err(failure)?;
            let profiles = store.run_profiles(id).map_err(failure)?;
            let verdicts = loadlab_report::profiled_verdicts(&cells, &profiles);
            let text = serde_json::to_string_pretty(&verdicts)? + "\n";
            emit(args.output.as_deref(), &text)?;
        }
        ReportFormat::Csv => {
            let cells = store.cells(id).map_err(failure)?;
            emit(args.output.as_deref(), &loadlab_output::cells::csv(&cells))?;
        }
    }
    Ok(OK)
}

/// A run that did not finish is said before its figures, on stderr so that every format's
/// output keeps its shape.
pub fn say_unfinished(store: &Store, id: RunId) -> anyhow::Result<()> {
    if let Some(line) = stored::unfinished(store, id).map_err(failure)? {
        eprintln!("loadlab: {line}");
    }
    Ok(())
}

/// Opens a store that must already exist: reading commands never create one.
pub fn open_existing(which: &StoreArgs) -> anyhow::Result<Store> {
    stored::open_existing(&which.path()).map_err(failure)
}

/// The run asked for, or the latest one.
pub fn pick_run(store: &Store, run: Option<i64>) -> anyhow::Result<RunId> {
    stored::pick_run(store, run).map_err(failure)
}

fn emit(path: Option<&Path>, text: &str) -> anyhow::Result<()> {
    match path {
        Some(p) => std::fs::write(p, text).with_context(|| format!("writing {}", p.display())),
        None => {
            use std::io::Write;
            let mut out = std::io::stdout().lock();
            out.write_all(text.as_bytes())?;
            Ok(out.flush()?)
        }
    }
}
