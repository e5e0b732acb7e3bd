//! The `loadlab` command: parse the arguments, run the subcommand, map the outcome to an exit
//! code. This is the only crate that prints or uses anyhow.

mod bench;
mod doctor;
mod exit;
mod load;
mod output;
mod progress;
mod report;
mod stack;
mod sweep;
mod units;

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
    Bench(bench::BenchArgs),
    /// An offered-rate sweep with knee detection, optionally of two targets (autobench).
    Sweep(sweep::SweepArgs),
    /// The lab's server stacks: list, up, verify, sample, show, down.
    Stack(stack::StackArgs),
    /// What is installed, the limits that matter for load (open files, ports), CPUs, and
    /// stale instances.
    Doctor(doctor::DoctorArgs),
}

fn main() -> ExitCode {
    let cli = Cli::parse();
    let outcome = match cli.command {
        Command::Bench(args) => bench::run(args),
        Command::Sweep(args) => sweep::run(args),
        Command::Stack(args) => stack::run(args),
        Command::Doctor(args) => doctor::run(args),
    };
    exit::finish(outcome)
}
