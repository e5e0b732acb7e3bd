//! `bench --agents N --agent-hosts ssh://a,ssh://b`: agent 0 starts the N-1 others itself,
//! through ssh, as `run --host` starts a lab host's loadlab: this binary put there when it is
//! not ([`provision::ensure`]), then each agent's session with the same load, its own index and
//! the rendezvous address that host reaches this one at, the secret on its stdin. Agent 0 then
//! runs as any agent 0 does; it gives up the rendezvous as soon as one of the sessions ends
//! (not after `--rendezvous-timeout`), and after the run it collects each session's end.
//!
//! No agent outlives its test: each remote agent exits when its session's input closes,
//! which is when agent 0 drops it, dies or loses its ssh ([`RemoteAgent`]).

use std::net::{IpAddr, Ipv4Addr, Ipv6Addr, SocketAddr, TcpListener};
use std::path::Path;
use std::sync::atomic::Ordering;
use std::time::Duration;

use loadlab_agents::auth::Token;
use loadlab_agents::coordinator::{Coordinator, Plan};
use loadlab_agents::AgentsError;
use loadlab_engine::Control;
use loadlab_remote::agents::{self as remote, Ended, RemoteAgent};
use loadlab_remote::{provision, Host, Ssh};

/// Why the others could not be started, or did not come.
#[derive(Debug, thiserror::Error)]
pub enum HostsError {
    /// A host could not be reached, cannot run this loadlab, or was named wrong.
    #[error(transparent)]
    Remote(#[from] loadlab_remote::Error),
    #[error(transparent)]
    Agents(#[from] AgentsError),
    /// An agent's session ended before the start.
    #[error("agent {index} ({}) {} before the start", ended.host, how(ended))]
    Ended { index: usize, ended: Box<Ended> },
    /// Ctrl-C before the start.
    #[error("interrupted before the start")]
    Interrupted,
}

/// How long a remote agent's session may take to end once agent 0 has its part.
const END_LIMIT: Duration = Duration::from_secs(15);
/// ssh's exit code when ssh itself failed.
const SSH_FAILED: i32 = 255;

/// What agent 0 starts the others with.
#[derive(Debug, Clone)]
pub struct Launch {
    /// The hosts of agents 1 to N-1, in index order.
    pub hosts: Vec<Host>,
    pub ssh: Ssh,
    /// Agent 0's command line, its words after the program, as typed: the load the others run.
    pub argv: Vec<String>,
    /// This loadlab's version (the one wanted there).
    pub version: String,
    pub secret: Secret,
    /// `--rendezvous` as typed: where the others connect when given (else this host's
    /// address towards each, on a port the system picks).
    pub rendezvous: Option<String>,
}

impl Launch {
    /// Agent 0 of `--agents of --agent-hosts hosts`: `hosts` (`ssh://[user@]host[:port]`,
    /// comma-separated: exactly N-1 of them) with this process's command line, the system's
    /// ssh ([`Ssh::from_env`]) and the secret ([`Secret::new`] of `--token-file`,
    /// `LOADLAB_TOKEN`), and agent 0's [`Token`].
    pub fn agent_0(
        hosts: &str,
        of: usize,
        (file, env): (Option<&Path>, Option<String>),
        rendezvous: Option<String>,
    ) -> Result<(Launch, Token), HostsError> {
        let usage = |m: String| HostsError::Remote(loadlab_remote::Error::Usage(m));
        let hosts = hosts
            .split(',')
            .map(|h| h.trim().parse::<Host>())
            .collect::<Result<Vec<Host>, _>>()
            .map_err(|e| {
                usage(format!("--agent-hosts {}", e.to_string().trim_start_matches("--host ")))
            })?;
        if hosts.len() + 1 != of {
            return Err(usage(format!(
                "--agent-hosts names {} hosts and --agents {of} needs {} (agent 0 is this one)",
                hosts.len(),
                of - 1
            )));
        }
        let (secret, token) = Secret::new(file, env)?;
        let ssh = Ssh::from_env()?;
        let argv = std::env::args().skip(1).collect();
        let version = env!("CARGO_PKG_VERSION").to_string();
        Ok((Launch { hosts, ssh, argv, version, secret, rendezvous }, token))
    }
}

/// The shared secret as text, for the sessions' stdin; never printed.
#[derive(Clone)]
pub struct Secret(String);

impl std::fmt::Debug for Secret {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str("Secret(..)")
    }
}

impl Secret {
    /// `--token-file`'s or `LOADLAB_TOKEN`'s secret, else a new random one: agent 0 hands it
    /// to every agent it starts, so nobody has to make one. With it, agent 0's [`Token`].
    pub fn new(file: Option<&Path>, env: Option<String>) -> Result<(Secret, Token), AgentsError> {
        let text = match (file, env) {
            (Some(file), _) => Token::read_text(file)?,
            (None, Some(env)) => env.trim().to_string(),
            (None, None) => random_hex()?,
        };
        let token = Token::load(None, Some(text.clone()))?;
        Ok((Secret(text), token))
    }
}

/// 128 random bits from the kernel, as hex.
fn random_hex() -> Result<String, AgentsError> {
    use std::io::Read;
    let mut bytes = [0u8; 16];
    std::fs::File::open("/dev/urandom")
        .and_then(|mut f| f.read_exact(&mut bytes))
        .map_err(|source| AgentsError::Io { context: "making a secret", source })?;
    Ok(bytes.iter().map(|b| format!("{b:02x}")).collect())
}

/// The agents agent 0 started, index 1 first.
#[derive(Default)]
pub struct Fleet {
    agents: Vec<RemoteAgent>,
}

/// Puts this loadlab on every host (`note` hears of a copy), listens for the rendezvous
/// (`listen`: the address `--rendezvous` resolved to, if given) and starts agent I on host
/// I-1 of `of`.
pub fn start(
    launch: &Launch,
    of: usize,
    listen: Option<SocketAddr>,
    note: &mut dyn FnMut(&str),
) -> Result<(TcpListener, Fleet), HostsError> {
    let local = provision::Local::this(&launch.version)?;
    let mut programs = Vec::new();
    for host in &launch.hosts {
        programs.push(provision::ensure(&launch.ssh, host, &local, note)?.program);
    }
    let (listener, towards) = listen_for(launch, listen)?;
    let port = listener
        .local_addr()
        .map_err(|source| AgentsError::Io { context: "listening on the rendezvous", source })?
        .port();
    let load = remote::load_words(&launch.argv);
    let mut fleet = Fleet::default();
    for (i, (host, program)) in launch.hosts.iter().zip(&programs).enumerate() {
        let at = match (&launch.rendezvous, towards[i]) {
            (Some(given), _) => given.clone(),
            (None, ip) => SocketAddr::new(ip, port).to_string(),
        };
        let args = remote::agent_args(&load, i + 1, of, &at);
        let secret = launch.secret.0.as_bytes();
        fleet.agents.push(RemoteAgent::start(&launch.ssh, host, program, &args, secret)?);
    }
    Ok((listener, fleet))
}

/// The rendezvous listener, and each host's address of this one. Without `--rendezvous`:
/// the address of the interface that routes to each host, on one port for all; when the
/// hosts are reached through different interfaces, every address of that family listens.
fn listen_for(
    launch: &Launch,
    listen: Option<SocketAddr>,
) -> Result<(TcpListener, Vec<IpAddr>), HostsError> {
    let bind = |at: SocketAddr| {
        TcpListener::bind(at)
            .map_err(|source| AgentsError::Io { context: "listening on the rendezvous", source })
    };
    if let Some(at) = listen {
        return Ok((bind(at)?, vec![at.ip(); launch.hosts.len()]));
    }
    let towards = launch
        .hosts
        .iter()
        .map(remote::local_address_towards)
        .collect::<Result<Vec<IpAddr>, _>>()?;
    let first = towards.first().copied().unwrap_or(IpAddr::V4(Ipv4Addr::LOCALHOST));
    let ip = match (towards.iter().all(|ip| *ip == first), first) {
        (true, ip) => ip,
        (false, IpAddr::V4(_)) => IpAddr::V4(Ipv4Addr::UNSPECIFIED),
        (false, IpAddr::V6(_)) => IpAddr::V6(Ipv6Addr::UNSPECIFIED),
    };
    Ok((bind(SocketAddr::new(ip, 0))?, towards))
}

impl Fleet {
    /// [`Coordinator::gather`], given up as soon as a session ends before the start (that
    /// agent will never be ready: its own failure is the error, named) or agent 0 is
    /// interrupted.
    pub fn gather(
        &mut self,
        listener: TcpListener,
        plan: Plan,
        control: &Control,
    ) -> Result<Coordinator, HostsError> {
        let interrupted = || control.stop.load(Ordering::Relaxed);
        let mut go_on = || !interrupted() && !self.agents.iter_mut().any(|a| a.has_ended());
        let gathered = Coordinator::gather_while(listener, plan, &mut go_on);
        match gathered {
            Ok(c) => Ok(c),
            Err(_) if interrupted() => Err(HostsError::Interrupted),
            // Only a rendezvous given up is the ended session's doing; a refusal (a differing
            // load) is its own error, whatever the refused agents did since.
            Err(e @ AgentsError::Missing { .. }) => {
                let Some(i) = self.agents.iter_mut().position(|a| a.has_ended()) else {
                    return Err(e.into());
                };
                let ended = self.agents.remove(i).finish(Duration::ZERO);
                Err(HostsError::Ended { index: i + 1, ended: Box::new(ended) })
            }
            Err(e) => Err(e.into()),
        }
    }

    /// After the run: each session's end, waited for; what the report should say of those
    /// that did not end well (an agent stopped or lost says why in its last line).
    pub fn finish(self) -> Vec<String> {
        // One limit for all: a hung host costs END_LIMIT once, not once per host.
        let deadline = std::time::Instant::now() + END_LIMIT;
        let left = || deadline.saturating_duration_since(std::time::Instant::now());
        let ended: Vec<Ended> = self.agents.into_iter().map(|a| a.finish(left())).collect();
        ended
            .iter()
            .enumerate()
            .filter(|(_, e)| e.code != Some(0))
            .map(|(i, e)| format!("agent {} ({}) {}", i + 1, e.host, how(e)))
            .collect()
    }
}

/// How a session ended, in words.
pub fn how(ended: &Ended) -> String {
    let said = match ended.said() {
        "" => String::new(),
        said => format!(": {said}"),
    };
    match ended.code {
        Some(SSH_FAILED) => format!("could not be reached by ssh{said}"),
        Some(code) => format!("ended with exit {code}{said}"),
        None => format!("lost its ssh session (killed){said}"),
    }
}

/// Whether a session that ended before the start failed in ssh itself (the host, not the
/// agent).
pub fn ssh_failed(ended: &Ended) -> bool {
    ended.code == Some(SSH_FAILED)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn ended(code: Option<i32>, stderr: &str) -> Ended {
        let host = "ssh://root@b".parse().unwrap();
        Ended { host, code, stdout: String::new(), stderr: stderr.into() }
    }

    #[test]
    fn a_sessions_end_says_who_failed_and_its_last_line() {
        let refused = ended(Some(SSH_FAILED), "ssh: connect to host b port 22: refused\n");
        assert_eq!(
            how(&refused),
            "could not be reached by ssh: ssh: connect to host b port 22: refused"
        );
        assert!(ssh_failed(&refused));
        let stopped = ended(Some(12), "loadlab: agent 0 stopped the test: interrupted\n\n");
        assert_eq!(
            how(&stopped),
            "ended with exit 12: loadlab: agent 0 stopped the test: interrupted"
        );
        assert!(!ssh_failed(&stopped));
        assert_eq!(how(&ended(None, "")), "lost its ssh session (killed)");
    }

    #[test]
    fn without_a_secret_given_each_test_gets_a_new_random_one() {
        let (a, _) = Secret::new(None, None).unwrap();
        let (b, _) = Secret::new(None, None).unwrap();
        assert_eq!(a.0.len(), 32);
        assert_ne!(a.0, b.0);
        assert_eq!(format!("{a:?}"), "Secret(..)", "never printed");
        let (given, _) = Secret::new(None, Some(" a-secret-of-some-length \n".into())).unwrap();
        assert_eq!(given.0, "a-secret-of-some-length");
        assert!(Secret::new(None, Some("short".into())).is_err());
    }
}
