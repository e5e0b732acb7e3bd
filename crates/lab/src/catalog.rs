//! The built-in stacks as data: each one's tiers (front first), what it serves, and the Debian
//! packages it needs.

use serde::{Deserialize, Serialize};

use crate::error::{Error, Result};
use crate::knobs::{Knobs, OnOff};
use crate::programs::{self, Need};

/// One server process tree of a stack, with how it is wired to the tier behind it.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "kebab-case")]
pub enum Tier {
    /// Varnish caching in front of the next tier (nginx).
    Varnish,
    /// nginx serving static files, handing `.php` to `php`.
    Nginx { php: NginxPhp },
    /// Apache httpd.
    Apache { mode: ApacheMode },
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
            Tier::Varnish => "varnish",
            Tier::Nginx { .. } => "nginx",
            Tier::Apache { .. } => "apache",
            Tier::PhpFpm => "php-fpm",
            Tier::SpawnFcgi => "spawn-fcgi",
            Tier::Mariadb => "mariadb",
        }
    }

    /// What this tier needs installed.
    pub fn needs(&self) -> Vec<Need> {
        match self {
            Tier::Varnish => vec![programs::VARNISHD],
            Tier::Nginx { .. } => vec![programs::NGINX],
            Tier::Apache { mode: ApacheMode::PreforkModPhp } => {
                vec![programs::APACHE, programs::MOD_PHP]
            }
            Tier::Apache { mode: ApacheMode::EventFpm } => vec![programs::APACHE],
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

/// Whether a stack has a database tier.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize)]
#[serde(rename_all = "kebab-case")]
pub enum Db {
    /// No database, and no `--db` knob.
    No,
    /// A MariaDB tier only with `--db on`.
    Optional,
    /// Always a MariaDB tier.
    Always,
}

/// A built-in stack.
#[derive(Debug, Serialize)]
pub struct Stack {
    pub name: &'static str,
    /// One line for `stack list`.
    pub summary: &'static str,
    /// The HTTP tiers, front first (the database tier is added by [`Stack::tiers`]).
    pub http_tiers: &'static [Tier],
    pub db: Db,
    /// WordPress at `/`.
    pub wordpress: bool,
}

const NGINX_FPM: Tier = Tier::Nginx { php: NginxPhp::Fpm };
const PREFORK: Tier = Tier::Apache { mode: ApacheMode::PreforkModPhp };

/// Every built-in stack, in the order `stack list` shows them.
pub const STACKS: &[Stack] = &[
    Stack {
        name: "nginx",
        summary: "nginx serving static files",
        http_tiers: &[Tier::Nginx { php: NginxPhp::None }],
        db: Db::No,
        wordpress: false,
    },
    Stack {
        name: "apache-prefork-modphp",
        summary: "Apache mpm_prefork + mod_php (seed 000's settings)",
        http_tiers: &[PREFORK],
        db: Db::Optional,
        wordpress: false,
    },
    Stack {
        name: "apache-event-fpm",
        summary: "Apache mpm_event + proxy_fcgi to php-fpm",
        http_tiers: &[Tier::Apache { mode: ApacheMode::EventFpm }, Tier::PhpFpm],
        db: Db::Optional,
        wordpress: false,
    },
    Stack {
        name: "nginx-fpm",
        summary: "nginx + php-fpm over a unix socket",
        http_tiers: &[NGINX_FPM, Tier::PhpFpm],
        db: Db::Optional,
        wordpress: false,
    },
    Stack {
        name: "nginx-spawn-fcgi",
        summary: "nginx + php-cgi children started by spawn-fcgi (seed 000)",
        http_tiers: &[Tier::Nginx { php: NginxPhp::SpawnFcgi }, Tier::SpawnFcgi],
        db: Db::Optional,
        wordpress: false,
    },
    Stack {
        name: "nginx-proxy-apache",
        summary: "nginx serves static files, proxies .php to Apache mod_php (seed 002)",
        http_tiers: &[Tier::Nginx { php: NginxPhp::ProxyApache }, PREFORK],
        db: Db::Optional,
        wordpress: false,
    },
    Stack {
        name: "varnish-nginx-fpm",
        summary: "Varnish in front of nginx + php-fpm (seed 004)",
        http_tiers: &[Tier::Varnish, NGINX_FPM, Tier::PhpFpm],
        db: Db::Optional,
        wordpress: false,
    },
    Stack {
        name: "mariadb",
        summary: "MariaDB alone, with the Country table",
        http_tiers: &[],
        db: Db::Always,
        wordpress: false,
    },
    Stack {
        name: "wordpress-nginx-fpm",
        summary: "WordPress on nginx + php-fpm + MariaDB (seed 004)",
        http_tiers: &[NGINX_FPM, Tier::PhpFpm],
        db: Db::Always,
        wordpress: true,
    },
    Stack {
        name: "wordpress-apache-modphp",
        summary: "WordPress on Apache prefork + mod_php + MariaDB",
        http_tiers: &[PREFORK],
        db: Db::Always,
        wordpress: true,
    },
    Stack {
        name: "wordpress-varnish-nginx-fpm",
        summary: "WordPress behind Varnish, on nginx + php-fpm + MariaDB (seed 004)",
        http_tiers: &[Tier::Varnish, NGINX_FPM, Tier::PhpFpm],
        db: Db::Always,
        wordpress: true,
    },
];

/// The built-in stack called `name`.
pub fn stack(name: &str) -> Result<&'static Stack> {
    STACKS.iter().find(|s| s.name == name).ok_or_else(|| Error::UnknownStack(name.to_string()))
}

impl Stack {
    /// Whether PHP runs in this stack.
    pub fn has_php(&self) -> bool {
        self.http_tiers.iter().any(Tier::runs_php)
    }

    /// Whether the database tier runs with these knobs.
    pub fn has_db(&self, knobs: &Knobs) -> bool {
        match self.db {
            Db::No => false,
            Db::Optional => knobs.db == Some(OnOff::On),
            Db::Always => true,
        }
    }

    /// The tiers that run with these knobs, front first.
    pub fn tiers(&self, knobs: &Knobs) -> Vec<Tier> {
        let mut tiers = self.http_tiers.to_vec();
        if self.has_db(knobs) {
            tiers.push(Tier::Mariadb);
        }
        tiers
    }

    /// Everything the stack needs installed with these knobs, without repeats.
    pub fn needs(&self, knobs: &Knobs) -> Vec<Need> {
        let mut needs: Vec<Need> = self.tiers(knobs).iter().flat_map(Tier::needs).collect();
        if self.has_php() && self.has_db(knobs) {
            needs.push(programs::PHP_MYSQL);
        }
        if self.wordpress {
            // php-cli runs WordPress's installer once, into the database template.
            needs.extend([programs::WORDPRESS, programs::WORDPRESS_THEME, programs::PHP_CLI]);
        }
        let mut unique = Vec::new();
        for need in needs {
            if !unique.contains(&need) {
                unique.push(need);
            }
        }
        unique
    }

    /// The Debian packages of [`Stack::needs`], without repeats.
    pub fn packages(&self, knobs: &Knobs) -> Vec<&'static str> {
        let mut packages: Vec<&'static str> = Vec::new();
        for need in self.needs(knobs) {
            if !packages.contains(&need.package) {
                packages.push(need.package);
            }
        }
        packages
    }

    /// The packages of [`Stack::packages`] that are not installed.
    pub fn missing_packages(&self, knobs: &Knobs) -> Vec<&'static str> {
        let mut missing: Vec<&'static str> = Vec::new();
        for need in self.needs(knobs) {
            if !need.installed() && !missing.contains(&need.package) {
                missing.push(need.package);
            }
        }
        missing
    }

    /// Refuses knobs that do not apply, so that a typo'd experiment fails before it runs.
    pub fn check_knobs(&self, knobs: &Knobs) -> Result<()> {
        if knobs.opcache.is_some() && !self.has_php() {
            return Err(Error::BadKnob(format!("--opcache: {} runs no PHP", self.name)));
        }
        if knobs.db.is_some() && self.db == Db::No {
            return Err(Error::BadKnob(format!("--db: {} has no database tier", self.name)));
        }
        if self.db == Db::Always && knobs.db == Some(OnOff::Off) {
            return Err(Error::BadKnob(format!("--db off: {} needs its database", self.name)));
        }
        if self.http_tiers.is_empty() && knobs.port.is_some() {
            return Err(Error::BadKnob(format!("--port: {} serves no HTTP", self.name)));
        }
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn names_are_unique() {
        for (i, a) in STACKS.iter().enumerate() {
            assert!(STACKS[i + 1..].iter().all(|b| b.name != a.name), "{}", a.name);
        }
    }

    #[test]
    fn db_follows_the_knob() {
        let on = Knobs { db: Some(OnOff::On), ..Knobs::default() };
        let nginx_fpm = stack("nginx-fpm").unwrap();
        assert_eq!(nginx_fpm.tiers(&Knobs::default()).len(), 2);
        assert_eq!(nginx_fpm.tiers(&on).last(), Some(&Tier::Mariadb));
        assert!(nginx_fpm.packages(&on).contains(&"php-mysql"));
        assert!(stack("wordpress-nginx-fpm").unwrap().has_db(&Knobs::default()));
    }

    #[test]
    fn knobs_that_do_not_apply_are_refused() {
        let opcache = Knobs { opcache: Some(OnOff::Off), ..Knobs::default() };
        assert!(stack("nginx").unwrap().check_knobs(&opcache).is_err());
        assert!(stack("nginx-fpm").unwrap().check_knobs(&opcache).is_ok());
        let db = Knobs { db: Some(OnOff::On), ..Knobs::default() };
        assert!(stack("nginx").unwrap().check_knobs(&db).is_err());
    }
}
