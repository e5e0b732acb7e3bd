//! One test from many hosts: the rendezvous of `loadlab bench ... --agents N --agent I`.
//!
//! Every host runs the same command; the command line defines the load, and the rendezvous
//! carries only what it must: readiness (with a digest of the load, so that agent 0 refuses an
//! agent whose load differs), the clock measurements and the start time, heartbeats, each
//! agent's measurements at the end, and stop. Nothing received can change a target or a load.
//!
//! - [`auth`]: the shared secret and the challenge-response that comes before any message.
//! - [`wire`]: the messages and their framing; [`b64`]: the histograms' bytes in them.
//! - [`load`]: the load's identity, option by option.
//! - [`clock`]: clock offset and round trip from ping samples; the start time.
//! - [`part`]: an agent's measurements, as sent to agent 0 and added into its result; its
//!   visits' figures in [`visits`].
//! - [`stream`]: the same, second by second during the run, so that a lost agent counts.
//! - [`coordinator`]: agent 0's side; [`member`]: every other agent's.

pub mod auth;
pub mod b64;
pub mod clock;
pub mod coordinator;
pub mod load;
pub mod member;
pub mod part;
pub mod stream;
pub mod visits;
pub mod wire;

use std::time::Duration;

/// How long an agent may be silent during the run before it is declared lost.
pub const HEARTBEAT_LOSS: Duration = Duration::from_secs(2);
/// How often an agent sends its heartbeat (its counters so far).
pub const HEARTBEAT_EVERY: Duration = Duration::from_millis(500);

/// Why a rendezvous did not lead to a run, or a run to its merged result.
#[derive(Debug, thiserror::Error)]
pub enum AgentsError {
    /// The secret is missing or unusable: the user's to fix.
    #[error("{0}")]
    Token(String),
    /// Not every agent was ready within `--rendezvous-timeout`.
    #[error("agents not ready within {timeout:?}: {}", list(missing))]
    Missing { missing: Vec<usize>, timeout: Duration },
    /// An agent's load is not agent 0's.
    #[error("agent {index}'s load differs from agent 0's in {option}: {theirs} there, {ours} on agent 0")]
    LoadDiffers { index: usize, option: String, ours: String, theirs: String },
    /// Agent 0 refused this agent (late, a differing load, an index taken), or dropped it
    /// (its secret did not match).
    #[error("{0}")]
    Refused(String),
    #[error("rendezvous {context}: {source}")]
    Io {
        context: &'static str,
        #[source]
        source: std::io::Error,
    },
}

fn list(indices: &[usize]) -> String {
    let names: Vec<String> = indices.iter().map(|i| format!("agent {i}")).collect();
    names.join(", ")
}

/// A thread of the rendezvous, named (`agent-*`) so that its CPU can be told from the engine
/// workers' (`loadlab-w*`) in /proc/PID/task/*/comm: bench/agents.sh measures it so.
pub(crate) fn named<F, T>(name: &str, f: F) -> std::thread::JoinHandle<T>
where
    F: FnOnce() -> T + Send + 'static,
    T: Send + 'static,
{
    // As `std::thread::spawn`, which panics when the OS cannot make a thread.
    std::thread::Builder::new().name(name.to_string()).spawn(f).expect("spawning a thread")
}

/// An I/O error of the rendezvous, with what was being done.
pub(crate) fn io(context: &'static str) -> impl FnOnce(std::io::Error) -> AgentsError {
    move |source| AgentsError::Io { context, source }
}
