//! A stack's tiers as data: which server each one is, how it hands requests on, what it
//! needs installed and whether it runs PHP.

use serde::{Deserialize, Serialize};

use loadlab_programs::{self as programs, Need};

/// One server process tree of a stack, with how it is wired to the tier behind it.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "kebab-case")]
pub enum Tier {
    /// hitch terminating TLS in front of Varnish, which has no TLS of its own; it hands each
    /// connection on with a PROXY protocol header (v2, carrying the ALPN it negotiated).
    Hitch,
    /// Varnish caching in front of the next tier (nginx).
    Varnish,
    /// nginx serving static files, handing `.php` to `php`.
    Nginx { php: NginxPhp },
    /// Apache httpd.
    Apache { mode: ApacheMode },
    /// Caddy serving static files, handing `.php` to php-fpm with `fpm`; with TLS, HTTP/1.1,
    /// HTTP/2 and HTTP/3 on one port (TCP and UDP).
    Caddy { fpm: bool },
    /// php-fpm's pool on a unix socket (for nginx) or on 127.0.0.1 (for Apache).
    PhpFpm,
    /// php-cgi children started by spawn-fcgi on a unix socket, as in seed 000.
    SpawnFcgi,
    /// MariaDB with a datadir of its own.
    Mariadb,
}

/// Where nginx sends `.php` requests.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "kebab-case")]
pub enum NginxPhp {
    /// No PHP: `.php` files would be served as they are, so the stack has no PHP workloads.
    None,
    /// FastCGI to php-fpm over a unix socket.
    Fpm,
    /// FastCGI to spawn-fcgi's php-cgi over a unix socket.
    SpawnFcgi,
    /// HTTP to Apache mod_php over the same document root (seed 002's advice).
    ProxyApache,
}

/// Apache's MPM and how it runs PHP.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "kebab-case")]
pub enum ApacheMode {
    /// mpm_prefork with mod_php inside each child.
    PreforkModPhp,
    /// mpm_event with proxy_fcgi to php-fpm.
    EventFpm,
}

impl Tier {
    /// The tier's name in records, samples and captures.
    pub fn name(&self) -> &'static str {
        match self {
            Tier::Hitch => "hitch",
            Tier::Varnish => "varnish",
            Tier::Nginx { .. } => "nginx",
            Tier::Apache { .. } => "apache",
            Tier::Caddy { .. } => "caddy",
            Tier::PhpFpm => "php-fpm",
            Tier::SpawnFcgi => "spawn-fcgi",
            Tier::Mariadb => "mariadb",
        }
    }

    /// What this tier needs installed.
    pub fn needs(&self) -> Vec<Need> {
        match self {
            Tier::Hitch => vec![programs::HITCH],
            Tier::Varnish => vec![programs::VARNISHD],
            Tier::Nginx { .. } => vec![programs::NGINX],
            Tier::Apache { mode: ApacheMode::PreforkModPhp } => {
                vec![programs::APACHE, programs::MOD_PHP]
            }
            Tier::Apache { mode: ApacheMode::EventFpm } => vec![programs::APACHE],
            Tier::Caddy { .. } => vec![programs::CADDY],
            Tier::PhpFpm => vec![programs::PHP_FPM],
            Tier::SpawnFcgi => vec![programs::SPAWN_FCGI, programs::PHP_CGI],
            Tier::Mariadb => {
                vec![programs::MARIADBD, programs::MARIADB_INSTALL_DB, programs::MARIADB_CLIENT]
            }
        }
    }

    /// Whether this tier runs PHP itself.
    pub fn runs_php(&self) -> bool {
        matches!(
            self,
            Tier::Apache { mode: ApacheMode::PreforkModPhp } | Tier::PhpFpm | Tier::SpawnFcgi
        )
    }
}
