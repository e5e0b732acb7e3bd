//! Exit codes, and how errors reach the user: one readable chain, never a panic message; each
//! library's errors mapped to the failure classes (and so to exit codes).
//!
//! 0: the run finished (request failures are in the report); 1: internal error; 2: bad usage
//! or input; 3: the target could not be reached at all, or a lab host was lost (ssh could not
//! connect, or a session went silent); 4: a package the command needs is not
//! installed; 5: a stack did not start or did not verify; 6: this machine cannot do what was
//! asked (a network profile without root or iproute2, or through netem on a kernel without it);
//! 7: a lab host cannot run this binary; 8: `--agents`: not every agent was ready within
//! `--rendezvous-timeout` (the missing are named); 9: `--agents`: an agent was lost during the
//! run (the partial result is printed); 10: `--agents`: this agent was refused by agent 0
//! (late, its secret not agent 0's, or its index taken); 11: `merge` refused interval logs
//! that cannot be added (settings or seconds differ); 12: `--agents`: this agent was stopped
//! by agent 0 on purpose (agent 0 was interrupted, Ctrl-C, or its own run failed), its part
//! printed; 13: `--metrics-listen`: the address is in use or cannot be listened on (before
//! any load); 99: the run finished but a `--slo`
//! threshold failed, or `compare --fail-on-regression` found
//! one (k6's code for a failed threshold, so a CI job can tell a regression from a broken run);
//! 130: interrupted (Ctrl-C).

use std::io;
use std::process::ExitCode;

use loadlab_runner::judge::class::{Class, Classify};

/// A failure of a class (and so of an exit code), with what to tell the user.
#[derive(Debug, thiserror::Error)]
#[error("{message}")]
pub struct Failure {
    class: Class,
    message: String,
}

pub const OK: u8 = 0;
pub const INTERNAL: u8 = 1;
pub const USAGE: u8 = 2;
pub const UNREACHABLE: u8 = 3;
pub const MISSING_PACKAGE: u8 = 4;
pub const STACK_FAILED: u8 = 5;
pub const UNSUPPORTED: u8 = 6;
pub const INCOMPATIBLE: u8 = 7;
pub const RENDEZVOUS: u8 = 8;
pub const AGENT_LOST: u8 = 9;
pub const REFUSED: u8 = 10;
pub const UNMERGEABLE: u8 = 11;
/// `--agents`: agent 0 stopped this agent on purpose (it was interrupted); not a loss.
pub const STOPPED: u8 = 12;
pub const METRICS_LISTEN: u8 = 13;
pub const SLO_FAILED: u8 = 99;
pub const INTERRUPTED: u8 = 130;

impl Failure {
    pub fn new(class: Class, message: impl Into<String>) -> Failure {
        Failure { class, message: message.into() }
    }

    /// The user's input is wrong: a bad flag value, URL or file.
    pub fn usage(message: impl Into<String>) -> Failure {
        Failure::new(Class::Usage, message)
    }

    fn code(&self) -> u8 {
        match self.class {
            Class::Usage => USAGE,
            Class::Unreachable => UNREACHABLE,
            Class::MissingPackage => MISSING_PACKAGE,
            Class::StackFailed => STACK_FAILED,
            Class::Interrupted => INTERRUPTED,
            Class::Unsupported => UNSUPPORTED,
            Class::Incompatible => INCOMPATIBLE,
            Class::Remote(code) => code,
            Class::Rendezvous => RENDEZVOUS,
            Class::Refused => REFUSED,
            Class::Unmergeable => UNMERGEABLE,
            Class::MetricsListen => METRICS_LISTEN,
            Class::Internal => INTERNAL,
        }
    }
}

/// Prints an error chain and picks the exit code. A closed stdout (`loadlab ... | head`) is not
/// an error worth a message.
pub fn finish(outcome: anyhow::Result<u8>) -> ExitCode {
    match outcome {
        Ok(code) => ExitCode::from(code),
        Err(err) => {
            if let Some(io) = err.downcast_ref::<io::Error>() {
                if io.kind() == io::ErrorKind::BrokenPipe {
                    return ExitCode::from(OK);
                }
            }
            let code = err.downcast_ref::<Failure>().map_or(INTERNAL, Failure::code);
            eprintln!("loadlab: error: {err:#}");
            ExitCode::from(code)
        }
    }
}

/// A library error as its class says (`loadlab_runner::judge::class`): the user's, an unreachable
/// target, a missing package, ... each its own code; an internal one keeps its chain. A
/// failed write of output into a closed pipe stays the io error, which ends quietly.
pub fn failure<E>(e: E) -> anyhow::Error
where
    E: Classify + std::error::Error + Send + Sync + 'static,
{
    if let Some(out) = e.output().filter(|o| o.kind() == io::ErrorKind::BrokenPipe) {
        return io::Error::from(out.kind()).into();
    }
    match e.class() {
        Class::Internal => anyhow::Error::new(e),
        class => Failure::new(class, e.to_string()).into(),
    }
}

/// [`failure`] of `e` said in the words `said` (what the run stored of it), its class and
/// code kept.
pub fn told<E: Classify>(e: &E, said: String) -> anyhow::Error {
    if let Some(out) = e.output().filter(|o| o.kind() == io::ErrorKind::BrokenPipe) {
        return io::Error::from(out.kind()).into();
    }
    Failure::new(e.class(), said).into()
}

/// A command line clap refused, said in loadlab's one-line style (`loadlab: error: ...`, exit
/// 2; the line is [`loadlab_output::usage::line`]'s, or, for another tool's spelling, what to
/// type here). Help and version requests print as clap prints them. `cli` is the command
/// tree, to point at the help of the subcommand typed.
pub fn bad_arguments(e: clap::Error, cli: &clap::Command) -> ExitCode {
    use clap::error::ErrorKind;
    if matches!(e.kind(), ErrorKind::DisplayHelp | ErrorKind::DisplayVersion) {
        e.exit();
    }
    let args: Vec<String> =
        std::env::args_os().skip(1).map(|a| a.to_string_lossy().into_owned()).collect();
    let line = loadlab_runner::commands::bench::habits::spelled::refusal(&args)
        .unwrap_or_else(|| loadlab_output::usage::line(&e, cli, args.into_iter()));
    eprintln!("loadlab: error: {line}");
    ExitCode::from(USAGE)
}

/// A bench's error as its class says, naming the lab instance's CA file when the target is
/// one whose certificate was not trusted.
pub fn bench_failure(e: loadlab_runner::commands::bench::BenchError) -> anyhow::Error {
    failure(loadlab_runner::advice::bench_with_lab_ca(e))
}
