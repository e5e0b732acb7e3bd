//! Everything an instance's configs are generated from ([`Plan`]): its stack, knobs, run
//! directory, ports and, behind a network profile, its namespace; and where in the run
//! directory its files go. Pure data: rendering a plan's configs touches nothing, so tests pin
//! them as snapshots.

use std::net::{IpAddr, SocketAddr};
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
    /// The port of each tier that listens on TCP (on 127.0.0.1, but the front's with
    /// `listen`).
    pub ports: Vec<(&'static str, u16)>,
    /// The user and group that workers switch to; `Some` only when loadlab runs as root.
    pub run_as: Option<(String, String)>,
    /// Apache's module directory and mod_php's path.
    pub apache_modules: PathBuf,
    pub mod_php: PathBuf,
    /// Behind a network profile: the namespace the servers run in (/run/netns/NAME), the
    /// stack's address there, and the client's on the other end of the link. `None`: loopback.
    pub net: Option<NetPlan>,
    /// With the `listen` knob: the address the front tier binds, where clients reach it, and
    /// its shaping behind a profile. `None`: loopback, or a profile's namespace.
    pub listen: Option<loadlab_net::host::Exposure>,
}

const LOOPBACK: IpAddr = loadlab_net::host::LOOPBACK;

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

    /// Whether `tier` serves HTTP/3 to clients ([`crate::catalog::Stack::http3_tier`]).
    pub fn serves_http3(&self, tier: Tier) -> bool {
        self.stack.http3_tier(&self.knobs) == Some(tier)
    }

    /// The instance's certificate files (written only with `tls` on).
    pub fn tls_files(&self) -> TlsFiles {
        TlsFiles::in_run(&self.run)
    }

    /// The address clients reach the stack at: 127.0.0.1, its namespace's end of the link,
    /// or with `listen` the address it binds (the host's primary one for a wildcard).
    pub fn host(&self) -> IpAddr {
        match (&self.net, &self.listen) {
            (Some(n), _) => n.stack_ip.into(),
            (None, Some(l)) => l.public,
            (None, None) => LOOPBACK,
        }
    }

    /// `tier`'s listening address as the client reaches it: with `listen`, only the front is
    /// beyond loopback.
    pub fn addr(&self, tier: &str) -> SocketAddr {
        let inner = self.listen.is_some() && tier != self.front().name();
        SocketAddr::new(if inner { LOOPBACK } else { self.host() }, self.port(tier))
    }

    /// The address `tier` binds: every address of a profile's namespace (its loopback and its
    /// end of the link, nothing else is there), the `listen` address for the front, and
    /// 127.0.0.1 for everything else.
    pub fn bind(&self, tier: Tier) -> IpAddr {
        match &self.listen {
            _ if self.net.is_some() => IpAddr::V4(std::net::Ipv4Addr::UNSPECIFIED),
            Some(l) if tier == self.front() => l.bind,
            _ => LOOPBACK,
        }
    }

    /// [`Plan::bind`] as nginx, Apache and Varnish write a host before `:PORT` (`[::]`).
    pub fn bind_host(&self, tier: Tier) -> String {
        match self.bind(tier) {
            IpAddr::V6(v6) => format!("[{v6}]"),
            v4 => v4.to_string(),
        }
    }

    pub fn url(&self) -> String {
        let front = self.front();
        let at = SocketAddr::new(self.host(), self.port(front.name()));
        match front {
            Tier::Mariadb => format!("mysql://{at}/loadlab"),
            _ if self.knobs.tls.is_on() => format!("https://{at}/"),
            _ => format!("http://{at}/"),
        }
    }

    /// Whom the status pages answer beyond loopback: the client's end of a profile's link, or
    /// with `listen` this host's own address the front is reached at (the lab's verify and
    /// sampler come from it).
    fn status_client(&self) -> Option<IpAddr> {
        match (&self.net, &self.listen) {
            (Some(n), _) => Some(n.client_ip.into()),
            (None, Some(l)) if l.is_beyond_loopback() => Some(l.public),
            _ => None,
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
            // Each server adds `bind`, its own (see `Plan::bind`).
            // The status pages answer loopback, and the lab's client beyond it.
            (
                "status_allow",
                self.status_client()
                    .map_or(String::new(), |ip| format!("            allow {ip};\n")),
            ),
            (
                "status_require",
                self.status_client().map_or(String::new(), |ip| format!("    Require ip {ip}\n")),
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
