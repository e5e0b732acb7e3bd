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
//! printed; 99: the run finished but a `--slo`
//! threshold failed, or `compare --fail-on-regression` found
//! one (k6's code for a failed threshold, so a CI job can tell a regression from a broken run);
//! 130: interrupted (Ctrl-C).

use std::io;
use std::process::ExitCode;

use loadlab_runner::class::{Class, Classify};

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

/// A library error as its class says (`loadlab_runner::class`): the user's, an unreachable
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

/// A command line clap refused, said in loadlab's one-line style (`loadlab: error: ...`, exit
/// 2) instead of clap's paragraph, keeping a useful tip (a similar flag's name) and dropping
/// the one that misleads (clap suggests `-- -k` to pass an unknown flag as a value). Help and
/// version requests print as clap prints them; `loadlab` alone, and a subcommand that needs
/// one of its own (`loadlab stack`), name them in one line. `cli` is the command
/// tree, to tell which (sub)subcommand the user typed and point at its help.
pub fn bad_arguments(e: clap::Error, cli: &clap::Command) -> ExitCode {
    use clap::error::ErrorKind;
    let path = subcommand_path(cli, std::env::args().skip(1));
    let missing_subcommand = e.kind() == ErrorKind::DisplayHelpOnMissingArgumentOrSubcommand;
    if matches!(e.kind(), ErrorKind::DisplayHelp | ErrorKind::DisplayVersion) {
        e.exit();
    }
    let line = if missing_subcommand {
        // `loadlab` alone as `loadlab stack` alone: the subcommands in one line.
        let typed: String = path.iter().map(|p| format!(" {p}")).collect();
        let names = subcommands(cli, &path);
        if names.is_empty() {
            format!("'loadlab{typed}' needs arguments; see 'loadlab{typed} --help'")
        } else {
            let names = names.join(", ");
            format!("'loadlab{typed}' needs a subcommand: {names}; see 'loadlab{typed} --help'")
        }
    } else {
        one_line(&e.render().to_string(), &path)
    };
    eprintln!("loadlab: error: {line}");
    ExitCode::from(USAGE)
}

/// The subcommands the user typed, outermost first (`["stack", "up"]`): each argument that
/// names a subcommand of the one before, flags passed over, up to the first that does not (an
/// unknown one stops there, so its error points at the help that lists the right ones).
fn subcommand_path(cli: &clap::Command, args: impl Iterator<Item = String>) -> Vec<String> {
    let mut at = cli;
    let mut path = Vec::new();
    for arg in args {
        if arg.starts_with('-') {
            continue;
        }
        match at.find_subcommand(&arg) {
            Some(sub) if sub.get_name() != "help" => {
                path.push(sub.get_name().to_string());
                at = sub;
            }
            _ => break,
        }
    }
    path
}

/// The visible subcommands of the one at `path`, by name.
fn subcommands(cli: &clap::Command, path: &[String]) -> Vec<String> {
    let at = path.iter().fold(cli, |c, name| c.find_subcommand(name).unwrap_or(c));
    at.get_subcommands()
        .filter(|s| !s.is_hide_set() && s.get_name() != "help")
        .map(|s| s.get_name().to_string())
        .collect()
}

/// clap's rendered error as one line: the message with its details (the missing arguments),
/// its useful tips, and the help to read.
fn one_line(rendered: &str, path: &[String]) -> String {
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
    let help: String = path.iter().map(|p| format!("{p} ")).collect();
    format!("{out}; see 'loadlab {help}--help'")
}

#[cfg(test)]
mod tests {
    use super::{one_line, subcommand_path};

    #[test]
    fn a_clap_error_becomes_one_line_without_the_misleading_tip() {
        let rendered =
            "error: unexpected argument '--bogus' found\n\n  tip: to pass '--bogus' as a \
                        value, use '-- --bogus'\n\nUsage: loadlab bench [OPTIONS] <URL>\n\nFor \
                        more information, try '--help'.\n";
        assert_eq!(
            one_line(rendered, &["bench".into()]),
            "unexpected argument '--bogus' found; see 'loadlab bench --help'"
        );
        let similar = "error: unexpected argument '--rat' found\n\n  tip: a similar argument \
                       exists: '--rate'\n\nUsage: loadlab bench [OPTIONS] <URL>\n";
        assert_eq!(
            one_line(similar, &["bench".into()]),
            "unexpected argument '--rat' found (a similar argument exists: '--rate'); see \
             'loadlab bench --help'"
        );
        let missing = "error: the following required arguments were not provided:\n  \
                       <URL>\n\nUsage: loadlab bench <URL>\n";
        assert_eq!(
            one_line(missing, &[]),
            "the following required arguments were not provided: <URL>; see 'loadlab --help'"
        );
        let nested = "error: unexpected argument '--bogus' found\n\nUsage: loadlab stack up\n";
        assert_eq!(
            one_line(nested, &["stack".into(), "up".into()]),
            "unexpected argument '--bogus' found; see 'loadlab stack up --help'"
        );
    }

    /// Regression: errors under `stack up` pointed at `loadlab stack --help`, which does not
    /// list up's flags.
    #[test]
    fn the_help_pointed_at_is_the_innermost_subcommand_typed() {
        use clap::{Arg, Command};
        let cli = Command::new("loadlab")
            .subcommand(Command::new("bench").arg(Arg::new("method").short('m')))
            .subcommand(Command::new("stack").subcommand(Command::new("up")));
        let path = |args: &[&str]| subcommand_path(&cli, args.iter().map(|a| a.to_string()));
        assert_eq!(path(&["stack", "up", "--bogus", "nginx"]), ["stack", "up"]);
        assert_eq!(path(&["stack", "frob"]), ["stack"]);
        assert_eq!(path(&["bench", "-m", "stack", "http://x/"]), ["bench"]);
        assert!(path(&["frobnicate"]).is_empty());
        assert!(path(&["--bogus"]).is_empty());
    }
}
