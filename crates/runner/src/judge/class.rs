//! Which class of failure each library error is, decided once here where every library's
//! errors meet: whether the user is to fix it (a bad flag or file), a target was not reached,
//! a package is missing, a stack failed, and so on. The command line maps a class to its
//! documented exit code and prints the error; it does not look inside errors.

use loadlab_engine::EngineError;
use loadlab_store::StoreError;

use crate::commands::bench::flags::FlagError;
use crate::commands::bench::BenchError;
use crate::commands::run::executor::StackError;
use crate::commands::run::SuiteError;
use crate::commands::stack::StackCommandError;
use crate::hosts::agent::AgentError;
use crate::hosts::fleet::HostsError;
use crate::hosts::merge::MergeFailure;
use crate::RunError;

/// The outcome classes besides success and an internal error (see the cli's exit codes).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Class {
    /// The user's input is wrong: a bad flag value, URL or file.
    Usage,
    /// The target could not be reached at all.
    Unreachable,
    /// A Debian package is missing.
    MissingPackage,
    /// A stack did not start, or did not verify.
    StackFailed,
    /// Ctrl-C or SIGTERM ended it before it finished.
    Interrupted,
    /// This machine cannot do what was asked (a network profile without root or iproute2).
    Unsupported,
    /// A lab host cannot run this loadlab binary.
    Incompatible,
    /// `--agents`: the agents did not all meet within `--rendezvous-timeout`.
    Rendezvous,
    /// `--agents`: agent 0 refused or dropped this agent.
    Refused,
    /// `loadlab merge`: interval logs whose histogram settings differ or whose seconds do not
    /// line up.
    Unmergeable,
    /// `--metrics-listen`: the endpoint's address is in use, or cannot be listened on here.
    MetricsListen,
    /// A remote loadlab ended with this exit code (its message is on stderr already).
    Remote(u8),
    /// None of the above: a fault of loadlab or of the machine.
    Internal,
}

/// An error's [`Class`], and the write error inside it, if it is one of output (a closed
/// pipe ends a command quietly).
pub trait Classify {
    fn class(&self) -> Class;
    fn output(&self) -> Option<&std::io::Error> {
        None
    }
}

impl Classify for loadlab_lab::Error {
    fn class(&self) -> Class {
        use loadlab_lab::Error as E;
        match self {
            E::MissingPackage { .. } => Class::MissingPackage,
            E::UnknownStack(_) | E::BadKnob(_) | E::NoSuchInstance(_) | E::NoVisit(_) => {
                Class::Usage
            }
            E::Start { .. } | E::Config { .. } | E::Verify { .. } | E::Processes(_) => {
                Class::StackFailed
            }
            E::Interrupted => Class::Interrupted,
            E::NetUnavailable(_) => Class::Unsupported,
            _ => Class::Internal,
        }
    }
}

/// The metrics endpoint could not listen: its own class, so that a script can tell a port
/// in use from a run that failed.
impl Classify for loadlab_metrics::MetricsError {
    fn class(&self) -> Class {
        Class::MetricsListen
    }
}

/// On the way to a lab host: a bad `--host` is the user's, an ssh that cannot connect an
/// unreachable target, a remote loadlab's failure keeps its own exit code.
impl Classify for loadlab_remote::Error {
    fn class(&self) -> Class {
        use loadlab_remote::Error as E;
        match self {
            E::BadHost(_) | E::BadSshCommand(_) | E::Usage(_) => Class::Usage,
            E::Interrupted(_) => Class::Interrupted,
            E::OwnerStuck(_) => Class::StackFailed,
            E::Ssh { .. } | E::Lost { .. } => Class::Unreachable,
            E::Incompatible { .. } => Class::Incompatible,
            E::Remote { code, .. } => Class::Remote(*code),
            E::Lab(e) => e.class(),
            _ => Class::Internal,
        }
    }

    fn output(&self) -> Option<&std::io::Error> {
        match self {
            loadlab_remote::Error::Io { source, .. } => Some(source),
            _ => None,
        }
    }
}

/// A bad path or a file that is not a store is the user's; the rest internal.
impl Classify for StoreError {
    fn class(&self) -> Class {
        if self.is_user_error() {
            Class::Usage
        } else {
            Class::Internal
        }
    }
}

/// A bad configuration or input file is the user's; an unreachable target has its own class.
impl Classify for EngineError {
    fn class(&self) -> Class {
        match self {
            EngineError::Config(_) | EngineError::Input { .. } => Class::Usage,
            EngineError::Unreachable { .. } => Class::Unreachable,
            _ => Class::Internal,
        }
    }
}

/// A capacity refusal is the user's to fix.
impl Classify for BenchError {
    fn class(&self) -> Class {
        match self {
            BenchError::Capacity(_) => Class::Usage,
            BenchError::Engine(e) => e.class(),
        }
    }
}

impl Classify for crate::commands::bench::profiled::ProfileError {
    fn class(&self) -> Class {
        use crate::commands::bench::profiled::ProfileError as E;
        match self {
            E::NotAnInstance(_) => Class::Usage,
            E::Lab(e) => e.class(),
        }
    }
}

impl Classify for RunError {
    fn class(&self) -> Class {
        match self {
            RunError::Lab(e) => e.class(),
            RunError::Remote(e) => e.class(),
            RunError::Store(e) | RunError::NotStored { source: e, .. } => e.class(),
            RunError::Engine(e) => e.class(),
            RunError::Events(_) => Class::Internal,
            RunError::Unsupported(_) => Class::Unsupported,
            // As a lab stack that does not verify: the stack is not what the suite measures.
            RunError::Verify { .. } => Class::StackFailed,
        }
    }

    fn output(&self) -> Option<&std::io::Error> {
        match self {
            RunError::Events(e) => Some(e),
            _ => None,
        }
    }
}

impl Classify for SuiteError {
    fn class(&self) -> Class {
        match self {
            SuiteError::Usage(_) => Class::Usage,
            SuiteError::MissingPackages(_) => Class::MissingPackage,
            SuiteError::Lab(e) => e.class(),
            SuiteError::Remote(e) => e.class(),
            SuiteError::Store(e) => e.class(),
            SuiteError::Io { .. } => Class::Internal,
        }
    }
}

/// A stack failed here (the lab's class) or on its host (the remote error's).
impl Classify for StackError {
    fn class(&self) -> Class {
        match self {
            StackError::Lab(e) => e.class(),
            StackError::Remote(e) => e.class(),
        }
    }

    fn output(&self) -> Option<&std::io::Error> {
        match self {
            StackError::Lab(_) => None,
            StackError::Remote(e) => e.output(),
        }
    }
}

impl Classify for StackCommandError {
    fn class(&self) -> Class {
        match self {
            StackCommandError::Stack(e) => e.class(),
            StackCommandError::Install(_) => Class::MissingPackage,
            StackCommandError::Print(_) | StackCommandError::Io { .. } => Class::Internal,
        }
    }

    fn output(&self) -> Option<&std::io::Error> {
        match self {
            StackCommandError::Print(e) => Some(e),
            StackCommandError::Stack(e) => e.output(),
            _ => None,
        }
    }
}

impl Classify for FlagError {
    fn class(&self) -> Class {
        match self {
            FlagError::Usage(_) => Class::Usage,
            FlagError::Engine(e) => e.class(),
        }
    }
}

impl Classify for crate::commands::sweep::plan::SweepFlagError {
    fn class(&self) -> Class {
        match self {
            Self::Flags(e) => e.class(),
            Self::Bench(e) => e.class(),
        }
    }
}

/// An agent's: the rendezvous missed, a load or secret that is the user's to fix, a refusal.
impl Classify for AgentError {
    fn class(&self) -> Class {
        match self {
            AgentError::Bench(e) => e.class(),
            AgentError::Unsupported(_) => Class::Usage,
            AgentError::Agents(e) => e.class(),
            AgentError::Hosts(e) => e.class(),
            AgentError::Merge { .. } => Class::Internal,
            // As `bench`'s output flags: the path is the user's to fix.
            AgentError::File { .. } => Class::Usage,
        }
    }
}

/// The rendezvous's: missed, a load or secret that is the user's to fix, a refusal.
impl Classify for loadlab_agents::AgentsError {
    fn class(&self) -> Class {
        use loadlab_agents::AgentsError as E;
        match self {
            E::Missing { .. } => Class::Rendezvous,
            E::LoadDiffers { .. } | E::Token(_) => Class::Usage,
            E::Refused(_) => Class::Refused,
            E::Io { .. } => Class::Internal,
        }
    }
}

/// Starting the agents of `--agent-hosts`: the host's classes as `--host`'s; an agent whose
/// session ended before the start was not ready (unless ssh itself failed: the host's).
impl Classify for HostsError {
    fn class(&self) -> Class {
        match self {
            HostsError::Remote(e) => e.class(),
            HostsError::Agents(e) => e.class(),
            HostsError::Ended { ended, .. } if crate::hosts::fleet::ssh_failed(ended) => {
                Class::Unreachable
            }
            HostsError::Ended { .. } => Class::Rendezvous,
            HostsError::Interrupted => Class::Interrupted,
        }
    }
}

/// Logs that cannot be added are their own class; a file that cannot be read is the user's.
impl Classify for MergeFailure {
    fn class(&self) -> Class {
        match self {
            MergeFailure::Refused(e) if e.unmergeable() => Class::Unmergeable,
            MergeFailure::Refused(_) | MergeFailure::File(_) => Class::Usage,
            MergeFailure::Write { .. } => Class::Internal,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn nested_errors_take_their_inner_class() {
        let unreachable = || EngineError::Unreachable { target: "x".into(), reason: "y".into() };
        assert_eq!(BenchError::Engine(unreachable()).class(), Class::Unreachable);
        assert_eq!(RunError::Engine(unreachable()).class(), Class::Unreachable);
        assert_eq!(FlagError::Engine(EngineError::Config("bad".into())).class(), Class::Usage);
        let lab = loadlab_lab::Error::NoSuchInstance("nginx-1".into());
        assert_eq!(StackError::Remote(loadlab_remote::Error::Lab(lab)).class(), Class::Usage);
        let code = loadlab_remote::Error::Remote { host: "b".into(), code: 5 };
        assert_eq!(StackError::Remote(code).class(), Class::Remote(5));
    }

    #[test]
    fn a_failed_write_is_output_wherever_it_is_carried() {
        let pipe = || std::io::Error::from(std::io::ErrorKind::BrokenPipe);
        assert!(RunError::Events(pipe()).output().is_some());
        assert!(StackCommandError::Print(pipe()).output().is_some());
        let io = loadlab_remote::Error::Io { context: "writing".into(), source: pipe() };
        assert!(StackCommandError::from(io).output().is_some());
        assert!(RunError::Unsupported("h3".into()).output().is_none());
    }
}
