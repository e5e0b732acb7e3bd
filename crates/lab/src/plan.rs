//! Everything an instance's configs are generated from ([`Plan`]): its stack, knobs, run
//! directory, ports and, behind a network profile, its namespace; and where in the run
//! directory its files go. Pure data: rendering a plan's configs touches nothing, so tests pin
//! them as snapshots.

use std::path::{Path, PathBuf};

use serde::Serialize;

use crate::catalog::Stack;
use crate::knobs::Knobs;
use crate::tier::Tier;

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
    pub fn tls_files(&self) -> TlsFiles {
        TlsFiles::in_run(&self.run)
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

/// The instance's TLS files, in its run directory.
#[derive(Clone, Debug, PartialEq, Eq, Serialize)]
pub struct TlsFiles {
    /// The CA certificate: what a client trusts (`--cacert`).
    pub ca: PathBuf,
    /// The server certificate, then the CA's (the chain servers send).
    pub cert: PathBuf,
    /// The server certificate's private key (mode 0600).
    pub key: PathBuf,
}

impl TlsFiles {
    pub fn in_run(run: &Path) -> TlsFiles {
        let dir = run.join("tls");
        TlsFiles { ca: dir.join("ca.pem"), cert: dir.join("cert.pem"), key: dir.join("key.pem") }
    }
}
