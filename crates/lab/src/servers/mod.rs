//! The servers behind one trait: each module writes its tier's config from a template into
//! the run directory, builds its foreground command, says how to tell it is ready, and
//! captures its effective config and version ([`crate::capture`]), all from a [`Plan`].

pub mod apache;
pub mod caddy;
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

use std::path::PathBuf;
use std::process::Command;

pub use crate::capture::{capture_command, capture_file, capture_version, Captured};
use crate::error::Result;
pub use crate::plan::{NetPlan, Plan};
use crate::state::StateDir;
use crate::tier::Tier;

/// How to tell a started tier is ready to serve.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Probe {
    /// Accepts TCP connections on 127.0.0.1 at this port.
    Tcp(u16),
    /// Accepts connections on this unix socket.
    Unix(PathBuf),
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
        Tier::Caddy { fpm } => Box::new(caddy::Caddy { fpm }),
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

/// `user`-style lines only when running as root: an unprivileged server cannot switch user
/// and some refuse to start when asked to.
pub fn user_line(plan: &Plan, render: impl Fn(&str, &str) -> String) -> String {
    plan.run_as.as_ref().map_or_else(String::new, |(user, group)| render(user, group))
}
