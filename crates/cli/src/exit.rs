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
    /// A lab host cannot run this loadlab binary.
    #[error("{0}")]
    Incompatible(String),
    /// A remote loadlab ended with this exit code (its message is on stderr already).
    #[error("{0}")]
    Remote(String, u8),
    /// `--agents`: the agents did not all meet within `--rendezvous-timeout`.
    #[error("{0}")]
    Rendezvous(String),
    /// `--agents`: agent 0 refused or dropped this agent.
    #[error("{0}")]
    Refused(String),
    /// `loadlab merge`: interval logs whose histogram settings differ or whose seconds do not
    /// line up.
    #[error("{0}")]
    Unmergeable(String),
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
    fn code(&self) -> u8 {
        match self {
            Failure::Usage(_) => USAGE,
            Failure::Unreachable(_) => UNREACHABLE,
            Failure::MissingPackage(_) => MISSING_PACKAGE,
            Failure::StackFailed(_) => STACK_FAILED,
            Failure::Interrupted(_) => INTERRUPTED,
            Failure::Unsupported(_) => UNSUPPORTED,
            Failure::Incompatible(_) => INCOMPATIBLE,
            Failure::Remote(_, code) => *code,
            Failure::Rendezvous(_) => RENDEZVOUS,
            Failure::Refused(_) => REFUSED,
            Failure::Unmergeable(_) => UNMERGEABLE,
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

/// Lab errors: a missing package or a bad name is the user's to fix.
pub fn lab_failure(err: loadlab_lab::Error) -> anyhow::Error {
    use loadlab_lab::Error as LabError;
    let message = err.to_string();
    match err {
        LabError::MissingPackage { .. } => Failure::MissingPackage(message).into(),
        LabError::UnknownStack(_) | LabError::BadKnob(_) | LabError::NoSuchInstance(_) => {
            Failure::Usage(message).into()
        }
        LabError::Start { .. }
        | LabError::Config { .. }
        | LabError::Verify { .. }
        | LabError::Processes(_) => Failure::StackFailed(message).into(),
        LabError::Interrupted => Failure::Interrupted(message).into(),
        LabError::NetUnavailable(_) => Failure::Unsupported(message).into(),
        other => anyhow::Error::new(other),
    }
}

/// Errors on the way to a lab host: a bad `--host` is the user's, an ssh that cannot
/// connect an unreachable target, a remote loadlab's failure keeps its own exit code.
pub fn remote_failure(e: loadlab_remote::Error) -> anyhow::Error {
    use loadlab_remote::Error as RemoteError;
    let message = e.to_string();
    match e {
        RemoteError::BadHost(_) | RemoteError::BadSshCommand(_) | RemoteError::Usage(_) => {
            Failure::Usage(message).into()
        }
        RemoteError::Interrupted(_) => Failure::Interrupted(message).into(),
        RemoteError::OwnerStuck(_) => Failure::StackFailed(message).into(),
        RemoteError::Ssh { .. } | RemoteError::Lost { .. } => Failure::Unreachable(message).into(),
        RemoteError::Incompatible { .. } => Failure::Incompatible(message).into(),
        RemoteError::Remote { code, .. } => Failure::Remote(message, code).into(),
        RemoteError::Lab(e) => lab_failure(e),
        // Printing what the session shows into a closed pipe: the quiet end of `| head`.
        RemoteError::Io { source, .. } if source.kind() == io::ErrorKind::BrokenPipe => {
            source.into()
        }
        other => anyhow::Error::new(other),
    }
}

/// `loadlab stack`'s sequences: a failed install is a missing package; a failed print (a
/// closed pipe) stays an io error, which ends quietly.
pub fn stack_failure(e: loadlab_runner::stack::StackError) -> anyhow::Error {
    use loadlab_runner::stack::StackError;
    match e {
        StackError::Lab(e) => lab_failure(e),
        StackError::Remote(e) => remote_failure(e),
        StackError::Install(m) => Failure::MissingPackage(m).into(),
        StackError::Print(e) => e.into(),
        e @ StackError::Io { .. } => anyhow::Error::new(e),
    }
}

/// Store errors: a bad path or a file that is not a store is the user's; the rest internal.
pub fn store_failure(e: loadlab_store::StoreError) -> anyhow::Error {
    if e.is_user_error() {
        Failure::Usage(e.to_string()).into()
    } else {
        anyhow::Error::new(e)
    }
}

/// Engine errors: a bad configuration or input file is the user's; an unreachable target has
/// its own code.
pub fn engine_failure(e: loadlab_engine::EngineError) -> anyhow::Error {
    use loadlab_engine::EngineError;
    match e {
        EngineError::Config(m) => Failure::Usage(m).into(),
        e @ EngineError::Input { .. } => Failure::Usage(e.to_string()).into(),
        EngineError::Unreachable { .. } => Failure::Unreachable(e.to_string()).into(),
        other => anyhow::Error::new(other),
    }
}

/// `bench`'s (and a sweep target's) errors: a capacity refusal is the user's to fix.
pub fn bench_failure(e: loadlab_runner::bench::BenchError) -> anyhow::Error {
    use loadlab_runner::bench::BenchError;
    match e {
        BenchError::Capacity(m) => Failure::Usage(m).into(),
        BenchError::Engine(e) => engine_failure(e),
    }
}

/// The executor's errors.
pub fn run_failure(e: loadlab_runner::RunError) -> anyhow::Error {
    use loadlab_runner::RunError;
    match e {
        RunError::Lab(e) => lab_failure(e),
        RunError::Remote(e) => remote_failure(e),
        RunError::Store(e) => store_failure(e),
        RunError::Engine(e) => engine_failure(e),
        RunError::Events(e) => e.into(),
        RunError::Unsupported(why) => Failure::Unsupported(why).into(),
        // As a lab stack that does not verify: the stack is not what the suite measures.
        e @ RunError::Verify { .. } => Failure::StackFailed(e.to_string()).into(),
    }
}

/// A suite run's preparation and finish.
pub fn suite_failure(e: loadlab_runner::suite::SuiteError) -> anyhow::Error {
    use loadlab_runner::suite::SuiteError;
    match e {
        SuiteError::Usage(m) => Failure::Usage(m).into(),
        SuiteError::MissingPackages(m) => Failure::MissingPackage(m).into(),
        SuiteError::Lab(e) => lab_failure(e),
        SuiteError::Remote(e) => remote_failure(e),
        SuiteError::Store(e) => store_failure(e),
        e @ SuiteError::Io { .. } => anyhow::Error::new(e),
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
