//! The `loadlab` command: parse the arguments, run the subcommand, map the outcome to an exit
//! code. This is the only crate that prints or uses anyhow.

/// `println!` that returns the error instead of panicking when stdout is closed
/// (`loadlab ... | head`), so that `exit::finish` can end quietly.
macro_rules! outln {
    ($($arg:tt)*) => {{
        use std::io::Write as _;
        writeln!(std::io::stdout(), $($arg)*)
    }};
}

/// `print!` likewise.
macro_rules! out {
    ($($arg:tt)*) => {{
        use std::io::Write as _;
        write!(std::io::stdout(), $($arg)*)
    }};
}

mod agents;
mod agents_cmd;
mod bench;
mod compare;
mod doctor;
mod exit;
mod help;
mod merge;
mod metrics;
mod profile;
mod progress;
mod remote;
mod report_cmd;
mod run;
mod runs;
mod signals;
mod stack;
mod sweep;

use std::process::ExitCode;

use clap::{Parser, Subcommand};

/// A web-server benchmarking lab: honest HTTP load generation.
#[derive(Debug, Parser)]
#[command(name = "loadlab", version, about, max_term_width = 100)]
struct Cli {
    #[command(subcommand)]
    command: Command,
}

#[derive(Debug, Subcommand)]
enum Command {
    /// One load test against a URL: closed loop (ab, wrk), open loop (--rate, as wrk2) or
    /// sessions (--conn-rate, as httperf).
    Bench(Box<bench::BenchArgs>),
    /// An offered-rate sweep with knee detection, optionally of two targets (autobench).
    Sweep(Box<sweep::SweepArgs>),
    /// The lab's server stacks: list, up, verify, sample, show, down.
    Stack(stack::StackArgs),
    /// What is installed, the limits that matter for load (open files, ports), CPUs, and
    /// stale instances.
    Doctor(doctor::DoctorArgs),
    /// A suite: stacks x workloads x loads x repetitions, into the store, then the report.
    Run(run::RunArgs),
    /// The runs a store holds.
    Runs(runs::RunsArgs),
    /// A profiled cell's top functions per tier (self and total), and its folded stacks.
    Profile(profile::ProfileArgs),
    /// A stored run as a self-contained HTML report (or its verdict as text or JSON, its cells
    /// as CSV).
    Report(report_cmd::ReportArgs),
    /// Two stored runs side by side, benchstat-style: medians, CIs, significance.
    Compare(compare::CompareArgs),
    /// What starts the agents of a test from many hosts: `agents k8s -- bench URL [flags]`.
    Agents(agents_cmd::AgentsArgs),
    /// Agents' interval logs (--hdr-log) added into one result, exactly.
    Merge(merge::MergeArgs),
    /// What a lab host's loadlab says of itself (`remote hello`), for `--host`.
    #[command(hide = true, subcommand)]
    Remote(remote::RemoteCommand),
    /// The delay-and-loss stage of a network profile's link, started by `stack up --net`.
    #[command(hide = true)]
    NetStage {
        #[arg(allow_hyphen_values = true)]
        args: Vec<String>,
    },
}

fn main() -> ExitCode {
    let cli = match Cli::try_parse() {
        Ok(cli) => cli,
        Err(e) => return exit::bad_arguments(e, &<Cli as clap::CommandFactory>::command()),
    };
    // Links with delay or loss run their stage from this program (`net-stage`).
    if let Ok(me) = std::env::current_exe() {
        loadlab_lab::net::stage::set_program(me);
    }
    let outcome = match cli.command {
        Command::Bench(args) => bench::run(*args),
        Command::Sweep(args) => sweep::run(*args),
        Command::Stack(args) => stack::run(args),
        Command::Doctor(args) => doctor::run(args),
        Command::Run(args) => run::run(args),
        Command::Runs(args) => runs::run(args),
        Command::Profile(args) => profile::run(args),
        Command::Report(args) => report_cmd::run(args),
        Command::Compare(args) => compare::run(args),
        Command::Merge(args) => merge::run(args),
        Command::Agents(args) => agents_cmd::run(args),
        Command::Remote(command) => remote::run(command),
        Command::NetStage { args } => {
            return ExitCode::from(loadlab_lab::net::stage::main(&args) as u8);
        }
    };
    exit::finish(outcome)
}
