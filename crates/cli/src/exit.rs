//! Exit codes, and how errors reach the user: one readable chain, never a panic message.
//!
//! 0: the run finished (request failures are in the report); 1: internal error; 2: bad usage
//! or input; 3: the target could not be reached at all; 4: a package the command needs is not
//! installed; 5: a stack did not start or did not verify; 6: this machine cannot do what was
//! asked (a network profile without root or iproute2, or through netem on a kernel without it);
//! 130: interrupted (Ctrl-C).

use std::io;
use std::process::ExitCode;

/// The outcome classes a subcommand can end with besides success.
#[derive(Debug, thiserror::Error)]
pub enum Failure {
    /// The user's input is wrong: a bad flag value, URL or file.
    #[error("{0}")]
    Usage(String),
    /// The target could not be reached at all.
    #[error("{0}")]
    Unreachable(String),
    /// A Debian package is missing; the message names the apt-get command.
    #[error("{0}")]
    MissingPackage(String),
    /// A stack did not start, or did not verify.
    #[error("{0}")]
    StackFailed(String),
    /// Ctrl-C or SIGTERM ended the command before it finished.
    #[error("{0}")]
    Interrupted(String),
    /// This machine cannot do what was asked: a network profile without root or iproute2, or
    /// through netem on a kernel without it.
    #[error("{0}")]
    Unsupported(String),
}

pub const OK: u8 = 0;
pub const INTERNAL: u8 = 1;
pub const USAGE: u8 = 2;
pub const UNREACHABLE: u8 = 3;
pub const MISSING_PACKAGE: u8 = 4;
pub const STACK_FAILED: u8 = 5;
pub const UNSUPPORTED: u8 = 6;
pub const INTERRUPTED: u8 = 130;

impl Failure {
    fn code(&self) -> u8 {
        match self {
            Failure::Usage(_) => USAGE,
            Failure::Unreachable(_) => UNREACHABLE,
            Failure::MissingPackage(_) => MISSING_PACKAGE,
            Failure::StackFailed(_) => STACK_FAILED,
            Failure::Interrupted(_) => INTERRUPTED,
            Failure::Unsupported(_) => UNSUPPORTED,
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
