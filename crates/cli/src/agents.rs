//! `bench`'s flags for one test from many hosts (`--agents N --agent I --rendezvous HOST:PORT`),
//! turned into the runner's [`Agents`]; the rendezvous and the merge are the libraries'
//! (`loadlab_agents`, `loadlab_runner::bench::agent`).

use std::net::{SocketAddr, ToSocketAddrs};
use std::path::PathBuf;
use std::time::Duration;

use clap::Args;
use loadlab_agents::auth::Token;
use loadlab_agents::coordinator::OnLoss;
use loadlab_engine::Share;
use loadlab_runner::bench::agent::{AgentError, Agents};
use loadlab_runner::bench::hosts::Launch;

use crate::exit::Failure;
use crate::units::parse_duration;

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
    /// The runner's view of these flags; `None` without `--agents` (or with `--agents 1`,
    /// which is a single host).
    pub fn agents(&self) -> anyhow::Result<Option<Agents>> {
        let usage = |m: String| anyhow::Error::new(Failure::usage(m));
        let Some(of) = self.agents else { return Ok(None) };
        if of == 0 {
            return Err(usage("--agents must be at least 1".into()));
        }
        if self.until_eof {
            loadlab_remote::agents::exit_on_eof(crate::exit::AGENT_LOST.into());
        }
        let index = match self.agent {
            Some(i) => i,
            None if self.agent_hosts.is_some() => 0,
            None => std::env::var("JOB_COMPLETION_INDEX")
                .map_err(|_| usage("--agents needs --agent I (or JOB_COMPLETION_INDEX)".into()))?
                .trim()
                .parse()
                .map_err(|_| usage("JOB_COMPLETION_INDEX is not a number".into()))?,
        };
        if self.agent_weight == 0 {
            return Err(usage("--agent-weight must be at least 1".into()));
        }
        if index >= of {
            return Err(usage(format!("--agent {index} is not in 0..{}", of - 1)));
        }
        if of == 1 && self.agent_hosts.is_none() {
            return Ok(None);
        }
        let spec = match (&self.rendezvous, &self.agent_hosts) {
            (Some(spec), _) => spec.as_str(),
            // Unused: agent 0 of --agent-hosts listens where each host routes to.
            (None, Some(_)) => "0.0.0.0:0",
            (None, None) => return Err(usage("--agents needs --rendezvous HOST:PORT".into())),
        };
        let rendezvous = resolve(spec).map_err(|e| usage(format!("--rendezvous {spec}: {e}")))?;
        let (file, env) = (self.token_file.as_deref(), std::env::var("LOADLAB_TOKEN").ok());
        let (launch, token) = match &self.agent_hosts {
            Some(hosts) => Launch::agent_0(hosts, of, (file, env), self.rendezvous.clone())
                .map(|(launch, token)| (Some(launch), token))
                .map_err(crate::exit::failure)?,
            None => (None, Token::load(file, env).map_err(|e| usage(e.to_string()))?),
        };
        Ok(Some(Agents {
            share: Share::new(index, of),
            rendezvous,
            token,
            timeout: self.rendezvous_timeout,
            host: host_name(),
            others: Default::default(),
            on_loss: match self.on_agent_loss {
                OnAgentLoss::Stop => OnLoss::Stop,
                OnAgentLoss::Continue => OnLoss::Continue,
            },
            weight: self.agent_weight,
            launch,
            merged_hdr_log: self.merged_hdr_log.clone(),
        }))
    }
}

fn resolve(spec: &str) -> Result<SocketAddr, String> {
    let mut addrs = spec.to_socket_addrs().map_err(|e| e.to_string())?;
    addrs.next().ok_or_else(|| "resolves to no address".to_string())
}

/// This host's name, for agent 0's report.
fn host_name() -> String {
    std::fs::read_to_string("/proc/sys/kernel/hostname")
        .map(|h| h.trim().to_string())
        .unwrap_or_else(|_| "unknown".into())
}

/// An agent's failure, as its class says it (a bench's names the lab's CA when it helps).
pub fn failure(e: AgentError) -> anyhow::Error {
    match e {
        AgentError::Bench(e) => crate::load::bench_failure(e),
        other => crate::exit::failure(other),
    }
}
