//! `bench`'s flags for one test from many hosts (`--agents N --agent I --rendezvous HOST:PORT`),
//! declared; the runner's `agent_flags` checks them into its [`Agents`]; the rendezvous and
//! the merge are the libraries' (`loadlab_agents`, `loadlab_runner::hosts::agent`).

use std::path::PathBuf;
use std::time::Duration;

use clap::Args;
use loadlab_agents::coordinator::OnLoss;
use loadlab_runner::hosts::agent::{AgentError, Agents};
use loadlab_runner::hosts::agent_flags::AgentFlags;

use loadlab_load::parse_duration;

#[derive(Debug, Args)]
pub struct AgentArgs {
    /// One test from N hosts: run this same command on each (docs/many-hosts.md).
    #[arg(long = "agents", value_name = "N")]
    pub agents: Option<usize>,
    /// This host's index, 0 to N-1 (agent 0 listens on --rendezvous and prints the merged
    /// result) [default: $JOB_COMPLETION_INDEX, a Kubernetes Indexed Job's].
    #[arg(long = "agent", value_name = "I", requires = "agents")]
    pub agent: Option<usize>,
    /// Where agent 0 listens and the others connect [with --agent-hosts: this host's address
    /// towards each, a port the system picks].
    #[arg(long = "rendezvous", value_name = "HOST:PORT", requires = "agents")]
    pub rendezvous: Option<String>,
    /// Agent 0 starts agents 1 to N-1 itself through ssh, one per host, comma-separated
    /// ssh://[user@]host[:port] (this loadlab copied there when missing).
    #[arg(
        long = "agent-hosts",
        value_name = "HOSTS",
        requires = "agents",
        conflicts_with = "agent"
    )]
    pub agent_hosts: Option<String>,
    /// A remote agent of --agent-hosts: exit when stdin (its ssh session) closes.
    #[arg(long = "until-eof", hide = true)]
    pub until_eof: bool,
    /// How long agent 0 waits for every agent to be ready (exit 8 naming the missing ones),
    /// and an agent for agent 0.
    #[arg(long = "rendezvous-timeout", value_parser = parse_duration, default_value = "60s", allow_hyphen_values = true)]
    pub rendezvous_timeout: Duration,
    /// The shared secret of the rendezvous, in FILE [default: $LOADLAB_TOKEN]; required with
    /// --agents above 1.
    #[arg(long = "token-file", value_name = "FILE", requires = "agents")]
    pub token_file: Option<PathBuf>,
    /// Agent 0: write the merged test's HdrHistogram interval log to FILE (--hdr-log holds
    /// this host's own).
    #[arg(long = "merged-hdr-log", value_name = "FILE", requires = "agents")]
    pub merged_hdr_log: Option<PathBuf>,
    /// Agent 0: when an agent is lost, stop every agent (stop, the default) or go on without
    /// it (continue: the merged result is partial, with the shortfall per second).
    #[arg(long = "on-agent-loss", value_enum, default_value = "stop", requires = "agents")]
    pub on_agent_loss: OnAgentLoss,
    /// This host's weight: its share of the load is W over the sum of every agent's weights
    /// (agent 0 learns them as the agents say they are ready).
    #[arg(long = "agent-weight", value_name = "W", default_value_t = 1, requires = "agents")]
    pub agent_weight: u64,
}

/// `--on-agent-loss`.
#[derive(Debug, Clone, Copy, clap::ValueEnum)]
pub enum OnAgentLoss {
    Stop,
    Continue,
}

impl AgentArgs {
    /// The runner's view of these flags (`loadlab_runner::hosts::agent_flags`).
    pub fn agents(&self) -> anyhow::Result<Option<Agents>> {
        let flags = AgentFlags {
            agents: self.agents,
            agent: self.agent,
            rendezvous: self.rendezvous.clone(),
            agent_hosts: self.agent_hosts.clone(),
            until_eof: self.until_eof,
            eof_exit: crate::exit::AGENT_LOST,
            timeout: self.rendezvous_timeout,
            token_file: self.token_file.clone(),
            on_loss: match self.on_agent_loss {
                OnAgentLoss::Stop => OnLoss::Stop,
                OnAgentLoss::Continue => OnLoss::Continue,
            },
            weight: self.agent_weight,
            merged_hdr_log: self.merged_hdr_log.clone(),
        };
        flags.agents(std::env::var("JOB_COMPLETION_INDEX").ok()).map_err(failure)
    }
}

/// An agent's failure, as its class says it (a bench's names the lab's CA when it helps).
pub fn failure(e: AgentError) -> anyhow::Error {
    match e {
        AgentError::Bench(e) => crate::exit::bench_failure(e),
        other => crate::exit::failure(other),
    }
}
