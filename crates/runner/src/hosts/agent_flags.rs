//! The flags of one test from many hosts (`--agents N --agent I --rendezvous HOST:PORT`, ...)
//! as typed, checked and turned into [`Agents`]: which index this host is, where the
//! rendezvous is, the secret, and agent 0's ssh launch of the others.

use std::net::{SocketAddr, ToSocketAddrs};
use std::path::PathBuf;
use std::time::Duration;

use loadlab_agents::auth::Token;
use loadlab_agents::coordinator::OnLoss;
use loadlab_engine::Share;

use super::agent::{AgentError, Agents};
use super::fleet::Launch;

/// The flags as typed; `agents` is `--agents N`, absent on a single host.
#[derive(Debug, Clone)]
pub struct AgentFlags {
    pub agents: Option<usize>,
    pub agent: Option<usize>,
    pub rendezvous: Option<String>,
    pub agent_hosts: Option<String>,
    /// A remote agent of `--agent-hosts`: exit with `eof_exit` when stdin closes.
    pub until_eof: bool,
    pub eof_exit: u8,
    pub timeout: Duration,
    pub token_file: Option<PathBuf>,
    pub on_loss: OnLoss,
    pub weight: u64,
    /// `--merged-hdr-log` (agent 0 of `sweep` writes it; `bench` from its merged result).
    pub merged_hdr_log: Option<PathBuf>,
}

impl AgentFlags {
    /// The runner's view of these flags; `None` without `--agents` (or with `--agents 1`,
    /// which is a single host). The index comes from `--agent`, else Kubernetes'
    /// `JOB_COMPLETION_INDEX` (`index_env`), else it is refused.
    pub fn agents(&self, index_env: Option<String>) -> Result<Option<Agents>, AgentError> {
        let usage = AgentError::Unsupported;
        let Some(of) = self.agents else { return Ok(None) };
        if of == 0 {
            return Err(usage("--agents must be at least 1".into()));
        }
        if self.until_eof {
            loadlab_remote::agents::exit_on_eof(self.eof_exit.into());
        }
        let index = match (self.agent, &self.agent_hosts, index_env) {
            (Some(i), _, _) => i,
            (None, Some(_), _) => 0,
            (None, None, Some(v)) => v
                .trim()
                .parse()
                .map_err(|_| usage("JOB_COMPLETION_INDEX is not a number".into()))?,
            (None, None, None) => {
                return Err(usage("--agents needs --agent I (or JOB_COMPLETION_INDEX)".into()))
            }
        };
        if self.weight == 0 {
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
                .map(|(launch, token)| (Some(launch), token))?,
            None => (None, Token::load(file, env).map_err(|e| usage(e.to_string()))?),
        };
        Ok(Some(Agents {
            share: Share::new(index, of),
            rendezvous,
            token,
            timeout: self.timeout,
            host: host_name(),
            others: Default::default(),
            on_loss: self.on_loss,
            weight: self.weight,
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

#[cfg(test)]
mod tests {
    use super::*;

    fn flags() -> AgentFlags {
        AgentFlags {
            agents: Some(3),
            agent: None,
            rendezvous: Some("127.0.0.1:1".into()),
            agent_hosts: None,
            until_eof: false,
            eof_exit: 9,
            timeout: Duration::from_secs(1),
            token_file: None,
            on_loss: OnLoss::Stop,
            weight: 1,
            merged_hdr_log: None,
        }
    }

    fn refused(f: &AgentFlags, env: Option<&str>) -> String {
        match f.agents(env.map(str::to_string)) {
            Err(e) => e.to_string(),
            Ok(a) => panic!("accepted: {:?}", a.map(|a| a.share)),
        }
    }

    #[test]
    fn the_index_comes_from_the_flag_or_the_indexed_job_and_must_be_in_range() {
        let f = flags();
        assert!(refused(&f, None).contains("--agent I (or JOB_COMPLETION_INDEX)"));
        assert!(refused(&f, Some("x")).contains("JOB_COMPLETION_INDEX is not a number"));
        assert!(refused(&f, Some("3")).contains("--agent 3 is not in 0..2"));
        let f = AgentFlags { agents: Some(0), ..flags() };
        assert!(refused(&f, None).contains("at least 1"));
        let f = AgentFlags { weight: 0, agent: Some(1), ..flags() };
        assert!(refused(&f, None).contains("--agent-weight"));
    }

    #[test]
    fn one_agent_is_a_single_host_and_none_is_none() {
        let f = AgentFlags { agents: Some(1), agent: Some(0), ..flags() };
        assert!(f.agents(None).unwrap().is_none());
        let f = AgentFlags { agents: None, ..flags() };
        assert!(f.agents(None).unwrap().is_none());
    }

    #[test]
    fn more_than_one_needs_a_rendezvous_and_a_secret() {
        let f = AgentFlags { rendezvous: None, agent: Some(1), ..flags() };
        assert!(refused(&f, None).contains("--rendezvous HOST:PORT"));
        let f = AgentFlags { rendezvous: Some("127.0.0.1".into()), ..flags() };
        assert!(refused(&f, Some("1")).starts_with("--rendezvous 127.0.0.1: "));
    }
}
