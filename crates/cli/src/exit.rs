//! Exit codes, and how errors reach the user: one readable chain, never a panic message.
//!
//! 0: the run finished (request failures are in the report); 1: internal error; 2: bad usage
//! or input; 3: the target could not be reached at all; 4: a package the command needs is not
//! installed; 5: a stack did not start or did not verify; 6: this machine cannot do what was
//! asked (a network profile without root or iproute2, or through netem on a kernel without it);
//! 99: the run finished but a `--slo` threshold failed, or `compare --fail-on-regression` found
//! one (k6's code for a failed threshold, so a CI job can tell a regression from a broken run);
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
pub const SLO_FAILED: u8 = 99;
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

/// A command line clap refused, said in loadlab's one-line style (`loadlab: error: ...`, exit
/// 2) instead of clap's paragraph, keeping a useful tip (a similar flag's name) and dropping
/// the one that misleads (clap suggests `-- -k` to pass an unknown flag as a value). Help and
/// version requests print as clap prints them.
pub fn bad_arguments(e: clap::Error) -> ExitCode {
    use clap::error::ErrorKind;
    if matches!(
        e.kind(),
        ErrorKind::DisplayHelp
            | ErrorKind::DisplayVersion
            | ErrorKind::DisplayHelpOnMissingArgumentOrSubcommand
    ) {
        e.exit();
    }
    // The subcommand the user typed, to point at its help (an unknown one points at loadlab's).
    let sub = std::env::args().nth(1).filter(|a| !a.starts_with('-'));
    let sub = sub.filter(|_| e.kind() != ErrorKind::InvalidSubcommand);
    eprintln!("loadlab: error: {}", one_line(&e.render().to_string(), sub.as_deref()));
    ExitCode::from(USAGE)
}

/// clap's rendered error as one line: the message with its details (the missing arguments),
/// its useful tips, and the help to read.
fn one_line(rendered: &str, sub: Option<&str>) -> String {
    let mut lines = rendered.lines().map(str::trim).filter(|l| !l.is_empty());
    let message = lines.next().unwrap_or("bad arguments");
    let mut out = message.strip_prefix("error: ").unwrap_or(message).to_string();
    for line in lines {
        if let Some(tip) = line.strip_prefix("tip: ") {
            if !tip.contains("as a value, use '--") {
                out.push_str(&format!(" ({tip})"));
            }
        } else if !line.starts_with("Usage: ") && !line.starts_with("For more information") {
            out.push(' ');
            out.push_str(line);
        }
    }
    match sub {
        Some(sub) => format!("{out}; see 'loadlab {sub} --help'"),
        None => format!("{out}; see 'loadlab --help'"),
    }
}

#[cfg(test)]
mod tests {
    use super::one_line;

    #[test]
    fn a_clap_error_becomes_one_line_without_the_misleading_tip() {
        let rendered =
            "error: unexpected argument '--bogus' found\n\n  tip: to pass '--bogus' as a \
                        value, use '-- --bogus'\n\nUsage: loadlab bench [OPTIONS] <URL>\n\nFor \
                        more information, try '--help'.\n";
        assert_eq!(
            one_line(rendered, Some("bench")),
            "unexpected argument '--bogus' found; see 'loadlab bench --help'"
        );
        let similar = "error: unexpected argument '--rat' found\n\n  tip: a similar argument \
                       exists: '--rate'\n\nUsage: loadlab bench [OPTIONS] <URL>\n";
        assert_eq!(
            one_line(similar, Some("bench")),
            "unexpected argument '--rat' found (a similar argument exists: '--rate'); see \
             'loadlab bench --help'"
        );
        let missing = "error: the following required arguments were not provided:\n  \
                       <URL>\n\nUsage: loadlab bench <URL>\n";
        assert_eq!(
            one_line(missing, None),
            "the following required arguments were not provided: <URL>; see 'loadlab --help'"
        );
    }
}
