//! The servers behind one trait: each module writes its tier's config from a template into
//! the run directory, builds its foreground command, says how to tell it is ready, and
//! captures its effective config and version. [`Plan`] is everything they are generated from.

pub mod apache;
pub mod country;
pub mod hitch;
pub mod mariadb;
pub mod nginx;
pub mod php;
pub mod php_fpm;
pub mod spawn_fcgi;
pub mod varnish;
pub mod wordpress;

#[cfg(test)]
pub(crate) mod snapshots;

use std::path::{Path, PathBuf};
use std::process::Command;
use std::time::Duration;

use serde::Serialize;

use crate::catalog::{Stack, Tier};
use crate::error::Result;
use crate::knobs::Knobs;
use crate::state::StateDir;
use crate::{programs, supervise};

/// Everything an instance's configs are generated from. Pure data: rendering a plan's
/// configs touches nothing, so tests pin them as snapshots.
#[derive(Clone, Debug)]
pub struct Plan {
    pub id: String,
    pub stack: &'static Stack,
    pub knobs: Knobs,
    /// The instance's private run directory.
    pub run: PathBuf,
    /// The port of each tier that listens on TCP (all on 127.0.0.1).
    pub ports: Vec<(&'static str, u16)>,
    /// The user and group that workers switch to; `Some` only when loadlab runs as root.
    pub run_as: Option<(String, String)>,
    /// Apache's module directory and mod_php's path.
    pub apache_modules: PathBuf,
    pub mod_php: PathBuf,
    /// Behind a network profile: the namespace the servers run in (/run/netns/NAME), the
    /// stack's address there, and the client's on the other end of the link. `None`: loopback.
    pub net: Option<NetPlan>,
}

/// Where a stack behind a network profile lives.
#[derive(Clone, Debug)]
pub struct NetPlan {
    pub netns: PathBuf,
    pub stack_ip: std::net::Ipv4Addr,
    pub client_ip: std::net::Ipv4Addr,
}

impl Plan {
    pub fn docroot(&self) -> PathBuf {
        self.run.join("www")
    }

    pub fn logs(&self) -> PathBuf {
        self.run.join("logs")
    }

    /// The access log of an HTTP tier (written only with the `access_log` knob on).
    pub fn access_log(&self, tier: &str) -> PathBuf {
        self.logs().join(format!("{tier}-access.log"))
    }

    /// The log a tier's stdout and stderr go to.
    pub fn console_log(&self, tier: &str) -> PathBuf {
        self.logs().join(format!("{tier}.console.log"))
    }

    /// The port of `tier`; the plan gives one to every TCP tier, so its absence is a bug.
    pub fn port(&self, tier: &str) -> u16 {
        self.ports
            .iter()
            .find(|(name, _)| *name == tier)
            .unwrap_or_else(|| panic!("no port planned for {tier}"))
            .1
    }

    pub fn tiers(&self) -> Vec<Tier> {
        self.stack.tiers(&self.knobs)
    }

    /// The tier clients talk to: the first HTTP tier (hitch, with TLS in front of Varnish), or
    /// the database alone.
    pub fn front(&self) -> Tier {
        self.tiers()[0]
    }

    /// The tier whose HTTP answers clients read: the front, or the Varnish behind hitch
    /// (hitch relays bytes and adds no header of its own).
    pub fn answering(&self) -> Tier {
        self.tiers().into_iter().find(|t| *t != Tier::Hitch).expect("a stack has a tier")
    }

    /// Whether `tier` speaks TLS to clients (the `tls` knob on, and `tier` in front).
    pub fn serves_tls(&self, tier: Tier) -> bool {
        self.stack.tls_tier(&self.knobs) == Some(tier)
    }

    /// Whether `tier` serves HTTP/2 to clients: the `http2` knob on, and `tier` the first web
    /// server (behind hitch, Varnish speaks h2 itself; hitch only offers it by ALPN).
    pub fn serves_http2(&self, tier: Tier) -> bool {
        self.knobs.http2.is_on() && self.answering() == tier
    }

    /// The instance's certificate files (written only with `tls` on).
    pub fn tls_files(&self) -> crate::cert::Files {
        crate::cert::Files::in_run(&self.run)
    }

    /// How the lab's own client reaches `tier`: its address, over TLS trusting only the
    /// instance's CA when `tier` is the one that speaks TLS. Fails when the CA cannot be read.
    pub(crate) fn endpoint(&self, tier: Tier) -> Result<crate::http::Endpoint, String> {
        let addr = self.addr(tier.name());
        let tls = match self.serves_tls(tier) {
            true => Some(crate::http::Tls::new(&self.tls_files().ca, &self.host().to_string())?),
            false => None,
        };
        Ok(crate::http::Endpoint { addr, tls })
    }

    /// The address clients reach the stack at: 127.0.0.1, or its namespace's end of the link.
    pub fn host(&self) -> std::net::Ipv4Addr {
        self.net.as_ref().map_or(std::net::Ipv4Addr::LOCALHOST, |n| n.stack_ip)
    }

    /// `tier`'s listening address as the client reaches it.
    pub fn addr(&self, tier: &str) -> std::net::SocketAddr {
        std::net::SocketAddr::from((self.host(), self.port(tier)))
    }

    pub fn url(&self) -> String {
        let front = self.front();
        let port = self.port(front.name());
        let host = self.host();
        match front {
            Tier::Mariadb => format!("mysql://{host}:{port}/loadlab"),
            _ if self.knobs.tls.is_on() => format!("https://{host}:{port}/"),
            _ => format!("http://{host}:{port}/"),
        }
    }

    pub fn has_db(&self) -> bool {
        self.stack.has_db(&self.knobs)
    }

    /// The variables every template may use.
    pub fn common_vars(&self) -> Vec<(&'static str, String)> {
        vec![
            ("id", self.id.clone()),
            ("stack", self.stack.name.to_string()),
            ("run", self.run.to_string_lossy().into_owned()),
            ("docroot", self.docroot().to_string_lossy().into_owned()),
            // Servers listen on loopback, or in their own namespace on every address (its
            // loopback and its end of the link: nothing else is there).
            ("bind", if self.net.is_some() { "0.0.0.0" } else { "127.0.0.1" }.to_string()),
            // The status pages answer loopback, and behind a profile the client's address.
            (
                "status_allow",
                self.net
                    .as_ref()
                    .map_or(String::new(), |n| format!("            allow {};\n", n.client_ip)),
            ),
            (
                "status_require",
                self.net
                    .as_ref()
                    .map_or(String::new(), |n| format!("    Require ip {}\n", n.client_ip)),
            ),
        ]
    }
}

/// How to tell a started tier is ready to serve.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Probe {
    /// Accepts TCP connections on 127.0.0.1 at this port.
    Tcp(u16),
    /// Accepts connections on this unix socket.
    Unix(PathBuf),
}

/// One piece of a tier's effective configuration or version, as data for the run record.
#[derive(Clone, Debug, PartialEq, Eq, Serialize)]
pub struct Captured {
    pub tier: String,
    /// What was captured: `nginx -T`, `varnishd -V`, `VCL`, ...
    pub what: String,
    pub text: String,
}

/// A generated file: path relative to the run directory, and contents.
pub type Generated = (String, String);

/// One tier's server.
pub trait Server {
    fn tier(&self) -> Tier;

    /// The config files of this tier, rendered from its templates.
    fn configs(&self, plan: &Plan) -> Vec<Generated>;

    /// Anything beyond config files the tier needs before it starts (a datadir).
    fn prepare(&self, _plan: &Plan, _state: &StateDir) -> Result<()> {
        Ok(())
    }

    /// The command that runs the server in the foreground.
    fn command(&self, plan: &Plan) -> Result<Command>;

    fn probe(&self, plan: &Plan) -> Probe;

    /// The server's own tests of its configuration with the user's files in it (see
    /// [`crate::own::check`]), each with how it is named: none unless the user gave a file
    /// for this tier.
    fn config_tests(&self, _plan: &Plan) -> Result<Vec<(String, Command)>> {
        Ok(Vec::new())
    }

    /// The tier's effective configuration and versions.
    fn capture(&self, plan: &Plan) -> Vec<Captured>;
}

/// The server that runs `tier`.
pub fn server(tier: Tier) -> Box<dyn Server> {
    match tier {
        Tier::Hitch => Box::new(hitch::Hitch),
        Tier::Varnish => Box::new(varnish::Varnish),
        Tier::Nginx { php } => Box::new(nginx::Nginx { php }),
        Tier::Apache { mode } => Box::new(apache::Apache { mode }),
        Tier::PhpFpm => Box::new(php_fpm::PhpFpm),
        Tier::SpawnFcgi => Box::new(spawn_fcgi::SpawnFcgi),
        Tier::Mariadb => Box::new(mariadb::Mariadb),
    }
}

/// Every config file of the plan's tiers, plus the PHP settings when PHP runs.
pub fn all_configs(plan: &Plan) -> Vec<Generated> {
    let mut files: Vec<Generated> =
        plan.tiers().into_iter().flat_map(|t| server(t).configs(plan)).collect();
    if plan.stack.has_php() {
        files.extend(php::configs(plan));
    }
    files
}

/// Runs a capture command: its stdout, or its stderr for tools that report there
/// (`varnishd -V`, `php-fpm -tt`), or the error as text, since a capture that fails must not
/// stop the run it describes.
pub fn capture_command(tier: &str, what: &str, command: Command) -> Captured {
    let text = match supervise::run_output(command, Duration::from_secs(10)) {
        Ok((stdout, stderr)) if stdout.trim().is_empty() => stderr,
        Ok((stdout, _)) => stdout,
        Err(e) => format!("capture failed: {e}"),
    };
    Captured { tier: tier.to_string(), what: what.to_string(), text }
}

/// Runs `need`'s program with `flag` (`-v`, `--version`) as a capture.
pub fn capture_version(tier: &str, need: &programs::Need, flag: &str) -> Captured {
    let what = format!("{} {flag}", need.name());
    match need.find() {
        Ok(program) => {
            let mut command = Command::new(program);
            command.arg(flag);
            capture_command(tier, &what, command)
        }
        Err(e) => Captured { tier: tier.into(), what, text: format!("capture failed: {e}") },
    }
}

/// Captures a generated file's contents as it is on disk.
pub fn capture_file(tier: &str, what: &str, path: &Path) -> Captured {
    let text = std::fs::read_to_string(path)
        .unwrap_or_else(|e| format!("capture failed: reading {}: {e}", path.display()));
    Captured { tier: tier.to_string(), what: what.to_string(), text }
}

/// `user`-style lines only when running as root: an unprivileged server cannot switch user
/// and some refuse to start when asked to.
pub fn user_line(plan: &Plan, render: impl Fn(&str, &str) -> String) -> String {
    plan.run_as.as_ref().map_or_else(String::new, |(user, group)| render(user, group))
}
