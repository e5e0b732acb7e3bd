//! `loadlab run`: a suite's plan, cell by cell, run by [`loadlab_runner::commands::run`]; this prints
//! the plan, each stack instance and cell as it ends, and the verdict.

use std::path::PathBuf;

use crate::exit::{failure, INTERNAL, INTERRUPTED, OK, SLO_FAILED};
use clap::Args;
use loadlab_output::suite as output;
use loadlab_runner::values;
use loadlab_runner::{commands, Measure};

#[derive(Debug, Args)]
pub struct RunArgs {
    /// A built-in suite's name, or a suite file (TOML; see docs/suites.md).
    #[arg(long = "suite", default_value = loadlab_suite::DEFAULT)]
    pub suite: String,
    /// Scale counts and durations down as the suite's [quick] section says.
    #[arg(long = "quick")]
    pub quick: bool,
    /// Directory for the run's report-RUN.html, report.html (the latest finished run's) and,
    /// unless --db says otherwise, loadlab.db.
    #[arg(long = "out", default_value = "loadlab-out")]
    pub out: PathBuf,
    /// The SQLite store to add the run to.
    #[arg(long = "db")]
    pub db: Option<PathBuf>,
    /// Print the plan and its estimated duration, and run nothing.
    #[arg(long = "dry-run")]
    pub dry_run: bool,
    /// Repetitions of every cell, instead of the suite's (or its [quick] section's).
    #[arg(long = "repetitions", value_name = "N")]
    pub repetitions: Option<u32>,
    /// Run every stack behind this network link, whatever the suite says (docs/lab.md).
    #[arg(long = "net", value_name = "PROFILE", long_help = crate::help::net_profiles(
        "Run every stack behind this network link, whatever the suite says"
    ))]
    pub net: Option<String>,
    /// Thresholds every workload's cells must hold over their repetitions ('p99<50ms,
    /// errors<0.1%,rps>1000'), instead of the suite's `slo`; exit 99 when one fails.
    #[arg(long = "slo", value_name = "THRESHOLDS", value_parser = values::slo)]
    pub slo: Option<loadlab_runner::judge::slo::Slo>,
    /// Run every stack of the suite on this lab host over ssh (as a stack's `host = ` in the
    /// suite does); the load stays on this machine. Each stack lives as long as its ssh
    /// session (docs/hosts.md).
    #[arg(long = "host", value_name = "ssh://[user@]host[:port]", value_parser = crate::remote::parse_host)]
    pub host: Option<loadlab_remote::Host>,
    /// Stacks on lab hosts: install the Debian packages they lack there first (apt-get, as
    /// root or with sudo -n), instead of stopping before the run with the list (exit 4).
    #[arg(long = "install-packages")]
    pub install_packages: bool,
    /// No live terminal view: the progress line and the cells' lines as they end. The view is
    /// on only when stdout and stderr are both a terminal.
    #[arg(long = "no-tui")]
    pub no_tui: bool,
    #[command(flatten)]
    pub metrics: crate::metrics::MetricsArgs,
    /// Record each tier's on-CPU stacks with perf while cells are measured: every cell
    /// (`all`), the highest load of each stack and workload (`knee`), or none; instead of the
    /// suite's `profile`. Needs linux-perf and the right to profile the stack's processes.
    #[arg(long = "profile", value_name = "all|knee|none", num_args = 0..=1, default_missing_value = "all")]
    pub profile: Option<loadlab_suite::Profiling>,
}

pub fn run(args: RunArgs) -> anyhow::Result<u8> {
    let overrides = commands::run::Overrides {
        net: args.net.clone(),
        slo: args.slo.clone(),
        repetitions: args.repetitions,
        host: args.host.as_ref().map(ToString::to_string),
        profile: args.profile,
    };
    let (suite, notes) = commands::run::load(&args.suite, &overrides).map_err(failure)?;
    for note in notes {
        eprintln!("loadlab: {note}");
    }
    let plan = loadlab_suite::plan(&suite, args.quick);
    let (mut out, mut err) = (std::io::stdout(), std::io::stderr());
    output::write_plan(&mut out, &plan)?;
    commands::run::check(&plan).map_err(failure)?;
    // Said before anything runs: a plan that cannot answer its question is no surprise later.
    if let Some(line) = loadlab_runner::judge::power::underpowered(&plan) {
        outln!("  note: {line}")?;
    }
    if args.dry_run {
        output::write_cells(&mut out, &plan)?;
        return Ok(OK);
    }
    commands::run::check_packages(&suite).map_err(failure)?;
    let remote =
        commands::run::remote_stacks(&suite, Box::new(|note| eprintln!("loadlab: {note}")))
            .installing(args.install_packages);
    if !args.install_packages {
        commands::run::check_remote_packages(&suite, &remote).map_err(failure)?;
    }
    let served = crate::metrics::open(&args.metrics)?;
    let mut started =
        commands::run::begin(&suite, &plan, &args.out, args.db.as_deref()).map_err(failure)?;
    output::write_started(&mut out, &mut err, &started)?;

    // Stacks come and go inside, and the run's record is closed and reported after: a second
    // Ctrl-C waits for both.
    let _finishing = crate::signals::Finishing::hold();
    let shown = loadlab_runner::commands::bench::flags::RequestFlags {
        no_tui: args.no_tui,
        ..Default::default()
    };
    let (mut measure, mut said) =
        crate::progress::watch(&format!("run --suite {}", args.suite), &shown, true)?;
    if let Some(view) = said.view() {
        view.plan_ends(std::time::Instant::now() + plan.estimate().total);
    }
    served.feed(&mut measure);
    let outcome = commands::run::execute(
        &mut started,
        &plan,
        &remote,
        &mut measure,
        &mut Told {
            lines: output::Progress(crate::progress::SaidLines(&said, Vec::new())),
            said: &said,
            ended: Vec::new(),
        },
    );
    said.close()?;
    let stopped = measure.stopped();
    let finished =
        commands::run::finish(&mut started, &outcome, stopped, &args.out).map_err(failure)?;
    output::write_end(&mut out, &started, &plan, &finished)?;
    // A failed run exits with its error's code (5 for a verify that failed), said last in the
    // words stored with the run (a store that could not keep a cell named, with the cell).
    if let (Err(e), Some(reason)) = (&outcome, &finished.reason) {
        return Err(crate::exit::told(e, reason.clone()));
    }
    outcome.map_err(failure)?;
    Ok(match finished.disposition {
        commands::run::Disposition::Interrupted => INTERRUPTED,
        commands::run::Disposition::SloFailed => SLO_FAILED,
        commands::run::Disposition::Finished => OK,
        // Not reached: a failed run's outcome is its error, returned above.
        commands::run::Disposition::Failed => INTERNAL,
    })
}

/// A suite's progress lines as they come (held by the live view while it is on), and on the
/// view the verdict over the cells ended so far: its rows fill in as groups finish, as the
/// report's one verdict ([`loadlab_report::verdicts`]) makes them at the end.
struct Told<'a> {
    lines: output::Progress<crate::progress::SaidLines<'a>>,
    said: &'a crate::progress::Said,
    ended: Vec<loadlab_store::CellRecord>,
}

impl commands::run::executor::Events for Told<'_> {
    fn stack_up(
        &mut self,
        cell: &loadlab_suite::Cell,
        instance: &commands::run::executor::Instance,
    ) -> std::io::Result<()> {
        self.lines.stack_up(cell, instance)
    }

    fn cell_done(&mut self, done: &commands::run::executor::CellDone<'_>) -> std::io::Result<()> {
        self.lines.cell_done(done)?;
        if let Some(view) = self.said.view() {
            self.ended.push(done.record.clone());
            let table = loadlab_report::verdict_table(&loadlab_report::verdicts(&self.ended));
            view.so_far("verdict so far", table.lines().map(str::to_string).collect());
        }
        Ok(())
    }

    fn cell_interrupted(&mut self, label: &str) -> std::io::Result<()> {
        self.lines.cell_interrupted(label)
    }

    fn profile_refused(&mut self, why: &str) -> std::io::Result<()> {
        self.lines.profile_refused(why)
    }

    fn views_found(
        &mut self,
        workload: &str,
        plan: &loadlab_engine::visits::ViewPlan,
    ) -> std::io::Result<()> {
        self.lines.views_found(workload, plan)
    }
}
