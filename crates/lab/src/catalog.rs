//! The built-in stacks as data: each one's tiers (front first), what it serves, and the Debian
//! packages it needs.

use serde::Serialize;

use crate::error::{Error, Result};
use crate::includes::Point;
use crate::knobs::{Knobs, OnOff};
pub use crate::tier::{ApacheMode, NginxPhp, Tier};
use loadlab_programs::{self as programs, Need};

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
        name: "caddy",
        summary: "Caddy serving static files; with TLS, HTTP/1.1, HTTP/2 and HTTP/3 on one port",
        http_tiers: &[Tier::Caddy { fpm: false }],
        db: Db::No,
        wordpress: false,
    },
    Stack {
        name: "caddy-fpm",
        summary: "Caddy + php-fpm over a unix socket; with TLS, HTTP/3 beside HTTP/1.1 and h2",
        http_tiers: &[Tier::Caddy { fpm: true }, Tier::PhpFpm],
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

    /// The tiers that run with these knobs, front first: hitch before Varnish with TLS on,
    /// the database last.
    pub fn tiers(&self, knobs: &Knobs) -> Vec<Tier> {
        let mut tiers = Vec::new();
        if knobs.tls.is_on() && self.varnish_in_front() {
            tiers.push(Tier::Hitch);
        }
        tiers.extend_from_slice(self.http_tiers);
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
        let mod_php = self.tiers(knobs).contains(&Tier::Apache { mode: ApacheMode::PreforkModPhp });
        if mod_php && knobs.has_own(Point::PhpIni) {
            // mod_php has no test of its own: php -v reads the user's php.ini as it will.
            needs.push(programs::PHP_CLI);
        }
        if self.has_php() && knobs.excimer.is_on() {
            needs.push(programs::EXCIMER);
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

    /// Whether PHP runs in a tier of its own (php-fpm, spawn-fcgi) rather than inside
    /// Apache's workers (mod_php).
    pub fn has_php_pool(&self) -> bool {
        self.http_tiers.iter().any(|t| matches!(t, Tier::PhpFpm | Tier::SpawnFcgi))
    }

    /// The keep-alive knobs Caddy has no setting for: Go's server keeps every connection it
    /// can and counts no requests per connection, so neither `keepalive off` nor
    /// `keepalive_requests` could be written into its config.
    fn caddy_problem(&self, knobs: &Knobs) -> Option<KnobProblem> {
        if !matches!(self.http_tiers.first(), Some(Tier::Caddy { .. })) {
            return None;
        }
        let reason = |key, what: &str| {
            let reason = format!("{} runs Caddy, which has no {what} (Go's server)", self.name);
            Some(KnobProblem { key, reason })
        };
        if !knobs.keepalive.is_on() {
            return reason("keepalive", "keep-alive off");
        }
        if knobs.keepalive_requests.is_some() {
            return reason("keepalive_requests", "per-connection request limit");
        }
        None
    }

    /// Whether clients talk to Varnish.
    fn varnish_in_front(&self) -> bool {
        self.http_tiers.first() == Some(&Tier::Varnish)
    }

    /// The tier that speaks TLS to clients with the `tls` knob on: the front web server, or
    /// hitch in front of Varnish. `None` with `tls` off (or for the database alone).
    pub fn tls_tier(&self, knobs: &Knobs) -> Option<Tier> {
        knobs.tls.is_on().then(|| self.tiers(knobs).first().copied()).flatten()
    }

    /// The tier that serves HTTP/3 to clients with these knobs: Caddy in front with `tls` on,
    /// on the UDP port of the same number (QUIC always carries TLS 1.3, RFC 9001). `None`
    /// elsewhere: nginx 1.22, Apache and Varnish have no HTTP/3.
    pub fn http3_tier(&self, knobs: &Knobs) -> Option<Tier> {
        self.tls_tier(knobs).filter(|t| matches!(t, Tier::Caddy { .. }))
    }

    /// Why clients cannot load this stack over HTTP/3 with these knobs, if they cannot.
    pub fn http3_problem(&self, knobs: &Knobs) -> Option<String> {
        if self.http3_tier(knobs).is_some() {
            return None;
        }
        let name = self.name;
        Some(match self.http_tiers.first() {
            None => format!("{name} serves no HTTP"),
            Some(Tier::Caddy { .. }) => {
                format!("{name} serves HTTP/3 only with TLS on: QUIC carries TLS 1.3 (RFC 9001)")
            }
            Some(front) => format!(
                "{name} offers no HTTP/3: its front, {}, has none in Debian 12 (nginx 1.22, \
                 Apache and Varnish do not speak it); the Caddy stacks do, with TLS on",
                front.name()
            ),
        })
    }

    /// Why the front tier cannot serve HTTP/2 with these knobs, if it cannot.
    fn http2_problem(&self, knobs: &Knobs) -> Option<String> {
        match self.http_tiers.first()? {
            // nginx 1.22's `listen PORT http2` without `ssl` speaks h2c with prior knowledge
            // only: an HTTP/1.1 request on that port gets no answer (nginx tells the two apart
            // by the preface only from 1.25.1), so verify could not check a workload there.
            // Apache and Varnish take both on one port.
            Tier::Nginx { .. } if !knobs.tls.is_on() => Some(format!(
                "{} would serve h2c only (nginx 1.22 answers no HTTP/1.1 on an http2 port \
                 without ssl): add --tls on for h2 by ALPN",
                self.name
            )),
            // mod_http2 runs each stream on a worker thread of its own; prefork has one
            // process per connection and no threads, and Apache refuses h2 under it
            // ("mod_http2 ... not supported with mpm_prefork"). mod_php needs prefork.
            Tier::Apache { mode: ApacheMode::PreforkModPhp } => Some(format!(
                "{} runs Apache mpm_prefork (mod_php is not thread-safe), and mod_http2 needs \
                 a threaded MPM (event): use apache-event-fpm for HTTP/2",
                self.name
            )),
            _ => None,
        }
    }

    /// The first setting that does not apply to this stack, if any, judged from the knobs
    /// alone; [`Stack::knob_problem`] (with the user's own files, whose docroot it lists) is
    /// the whole check, in [`crate::own`].
    pub fn setting_problem(&self, knobs: &Knobs) -> Option<KnobProblem> {
        let problem = |key, reason: String| Some(KnobProblem { key, reason });
        let name = self.name;
        let http = !self.http_tiers.is_empty();
        let keepalive_off = !knobs.keepalive.is_on();
        if knobs.opcache.is_some() && !self.has_php() {
            return problem("opcache", format!("{name} runs no PHP"));
        }
        if knobs.db.is_some() && self.db == Db::No {
            return problem("db", format!("{name} has no database tier"));
        }
        if self.db == Db::Always && knobs.db == Some(OnOff::Off) {
            return problem("db", format!("{name} needs its database"));
        }
        if !http && knobs.port.is_some() {
            return problem("port", format!("{name} serves no HTTP"));
        }
        if !http && knobs.access_log.is_on() {
            return problem("access_log", format!("{name} serves no HTTP"));
        }
        if let Some(reason) = listen_problem(self, knobs) {
            return problem("listen", reason);
        }
        if !http && knobs.tls.is_on() {
            return problem("tls", format!("{name} serves no HTTP"));
        }
        if !http && knobs.http2.is_on() {
            return problem("http2", format!("{name} serves no HTTP"));
        }
        if knobs.http2.is_on() {
            if let Some(reason) = self.http2_problem(knobs) {
                return problem("http2", reason);
            }
        }
        if knobs.php_workers.is_some() && !self.has_php_pool() {
            let reason = if self.has_php() {
                format!("{name} runs PHP inside Apache's workers (mod_php): set workers")
            } else {
                format!("{name} runs no PHP")
            };
            return problem("php_workers", reason);
        }
        if knobs.php_workers == Some(0) {
            return problem("php_workers", "must be at least 1".into());
        }
        if let Some(reason) = self.caddy_problem(knobs) {
            return Some(reason);
        }
        if knobs.keepalive_timeout.is_some() && keepalive_off {
            return problem("keepalive_timeout", "keep-alive is off".into());
        }
        if let Some(n) = knobs.keepalive_requests {
            if keepalive_off {
                return problem("keepalive_requests", "keep-alive is off".into());
            }
            if n == 0 {
                return problem("keepalive_requests", "must be at least 1".into());
            }
            // Varnish has no limit on a client connection's requests; the one nginx behind
            // it has would apply to Varnish's backend connections, not to the clients'.
            if self.varnish_in_front() {
                return problem(
                    "keepalive_requests",
                    format!("Varnish, in front in {name}, has no per-connection request limit"),
                );
            }
        }
        None
    }
}

/// Why `listen` does not apply, if it does not: a stack whose front is the database (its user
/// is granted from loopback only), or loopback with a profile, which `net` alone runs behind a
/// link on this host. Whether the address is the host's is the lab's to check there.
fn listen_problem(stack: &Stack, knobs: &Knobs) -> Option<String> {
    let addr = knobs.listen?;
    if stack.http_tiers.is_empty() {
        return Some(format!("the {} stack's user is granted from loopback only", stack.name));
    }
    let profiled = knobs.net.as_deref().is_some_and(|n| n != "loopback");
    if addr.is_loopback() && profiled {
        return Some(format!(
            "{addr} with a network profile: give an address beyond loopback, or leave listen \
             out to run the stack behind a shaped link on this host"
        ));
    }
    None
}

/// A knob that does not apply to a stack: its key (as suite files spell it; the CLI flag is
/// the same with dashes) and why.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct KnobProblem {
    pub key: &'static str,
    pub reason: String,
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

    #[test]
    fn new_knobs_apply_where_their_server_is() {
        let key =
            |name: &str, knobs: Knobs| stack(name).unwrap().knob_problem(&knobs).map(|p| p.key);
        let php = Knobs { php_workers: Some(3), ..Knobs::default() };
        assert_eq!(key("nginx-fpm", php.clone()), None);
        assert_eq!(key("nginx-spawn-fcgi", php.clone()), None);
        assert_eq!(key("apache-event-fpm", php.clone()), None);
        assert_eq!(key("apache-prefork-modphp", php.clone()), Some("php_workers"));
        assert_eq!(key("nginx", php), Some("php_workers"));
        let requests = Knobs { keepalive_requests: Some(2), ..Knobs::default() };
        assert_eq!(key("apache-prefork-modphp", requests.clone()), None);
        assert_eq!(key("varnish-nginx-fpm", requests.clone()), Some("keepalive_requests"));
        let off = Knobs { keepalive: OnOff::Off, ..requests };
        assert_eq!(key("nginx", off), Some("keepalive_requests"));
        let timeout = Knobs {
            keepalive: OnOff::Off,
            keepalive_timeout: Some("5s".parse().unwrap()),
            ..Knobs::default()
        };
        assert_eq!(key("nginx", timeout), Some("keepalive_timeout"));
        let log = Knobs { access_log: OnOff::On, ..Knobs::default() };
        assert_eq!(key("varnish-nginx-fpm", log.clone()), None);
        assert_eq!(key("mariadb", log), Some("access_log"));
        let err = stack("nginx")
            .unwrap()
            .check_knobs(&Knobs { php_workers: Some(2), ..Knobs::default() });
        assert_eq!(err.unwrap_err().to_string(), "--php-workers: nginx runs no PHP");
    }

    #[test]
    fn http3_is_served_by_caddy_with_tls_and_refused_elsewhere_with_the_reason() {
        let tls = Knobs { tls: OnOff::On, ..Knobs::default() };
        let problem = |name: &str, knobs: &Knobs| stack(name).unwrap().http3_problem(knobs);
        for name in ["caddy", "caddy-fpm"] {
            assert_eq!(problem(name, &tls), None, "{name}");
            assert_eq!(
                stack(name).unwrap().http3_tier(&tls),
                Some(stack(name).unwrap().tiers(&tls)[0])
            );
            let plain = problem(name, &Knobs::default()).expect("no h3 without TLS");
            assert!(plain.contains("only with TLS on"), "{plain}");
        }
        let nginx = problem("nginx-fpm", &tls).expect("nginx 1.22 has no h3");
        assert!(nginx.starts_with("nginx-fpm offers no HTTP/3: its front, nginx,"), "{nginx}");
        assert!(problem("varnish-nginx-fpm", &tls).unwrap().contains("its front, varnish"));
        assert_eq!(problem("mariadb", &Knobs::default()).unwrap(), "mariadb serves no HTTP");
    }

    #[test]
    fn tls_and_http2_apply_where_the_front_can_serve_them() {
        let key =
            |name: &str, knobs: &Knobs| stack(name).unwrap().knob_problem(knobs).map(|p| p.key);
        let tls = Knobs { tls: OnOff::On, ..Knobs::default() };
        let h2 = Knobs { tls: OnOff::On, http2: OnOff::On, ..Knobs::default() };
        let h2c = Knobs { http2: OnOff::On, ..Knobs::default() };
        for s in STACKS.iter().filter(|s| !s.http_tiers.is_empty()) {
            assert_eq!(key(s.name, &tls), None, "{}", s.name);
        }
        assert_eq!(key("mariadb", &tls), Some("tls"));
        assert_eq!(key("mariadb", &h2c), Some("http2"));
        for name in ["nginx", "apache-event-fpm", "nginx-proxy-apache", "varnish-nginx-fpm"] {
            assert_eq!(key(name, &h2), None, "{name}");
        }
        // mod_http2 refuses prefork, which mod_php needs.
        for name in ["apache-prefork-modphp", "wordpress-apache-modphp"] {
            let p = stack(name).unwrap().knob_problem(&h2).unwrap();
            assert_eq!(p.key, "http2");
            assert!(p.reason.contains("mod_http2 needs a threaded MPM (event)"), "{}", p.reason);
        }
        // h2c: Apache and Varnish take it beside HTTP/1.1 on one port, nginx 1.22 does not.
        assert_eq!(key("apache-event-fpm", &h2c), None);
        assert_eq!(key("varnish-nginx-fpm", &h2c), None);
        assert_eq!(key("nginx-fpm", &h2c), Some("http2"));
        // hitch goes in front of Varnish only with TLS.
        let varnish = stack("varnish-nginx-fpm").unwrap();
        assert_eq!(varnish.tiers(&tls)[0], Tier::Hitch);
        assert_eq!(varnish.tls_tier(&tls), Some(Tier::Hitch));
        assert_eq!(varnish.tiers(&h2c)[0], Tier::Varnish);
        assert!(varnish.needs(&tls).contains(&programs::HITCH));
        assert_eq!(stack("nginx").unwrap().tls_tier(&h2c), None);
    }
}
