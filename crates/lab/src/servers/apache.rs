//! Apache httpd from its own generated config (`apache2 -f CONF -DFOREGROUND`): mpm_prefork
//! with mod_php as seed 000 ran it, or mpm_event handing `.php` to php-fpm over proxy_fcgi.

use std::process::Command;

use crate::catalog::{ApacheMode, Tier};
use crate::error::Result;
use crate::own::{self, Point};
use crate::servers::{
    capture_command, capture_file, php, user_line, Captured, Generated, Plan, Probe, Server,
};
use crate::template::render;
use loadlab_programs as programs;

const CONF: &str = include_str!("../../templates/apache.conf");
const MIME_TYPES: &str = include_str!("../../templates/apache-mime.types");
/// nginx's `combined` access log format, so that both servers' logs read alike.
const COMBINED: &str =
    r#"LogFormat "%h %l %u %t \"%r\" %>s %b \"%{Referer}i\" \"%{User-Agent}i\"" combined"#;

pub struct Apache {
    pub mode: ApacheMode,
}

impl Apache {
    fn conf_path(plan: &Plan) -> String {
        format!("{}/apache/apache2.conf", plan.run.display())
    }

    /// The MPM's process and thread settings. Prefork's defaults are seed 000's (its
    /// MaxClients and MaxRequestsPerChild are today's MaxRequestWorkers and
    /// MaxConnectionsPerChild); event's are Debian's. `--workers N` sets prefork's
    /// MaxRequestWorkers (mod_php runs in those, so it is the PHP count too), or event's
    /// process count (25 threads each).
    /// Workers the MPM may run at once: prefork's MaxRequestWorkers, or event's processes
    /// times 25 threads (see [`Apache::mpm_settings`]).
    pub fn max_workers(mode: ApacheMode, knobs: &crate::knobs::Knobs) -> u32 {
        let n = knobs.workers;
        match mode {
            ApacheMode::PreforkModPhp => n.unwrap_or(150),
            ApacheMode::EventFpm => n.map_or(150, |n| n * 25),
        }
    }

    fn mpm_settings(&self, plan: &Plan) -> String {
        let n = plan.knobs.workers;
        match self.mode {
            ApacheMode::PreforkModPhp => {
                let max = n.unwrap_or(150);
                let limit = if max > 256 { format!("ServerLimit {max}\n") } else { String::new() };
                format!(
                    "{limit}StartServers {}\nMinSpareServers {}\nMaxSpareServers {}\n\
                     MaxRequestWorkers {max}\nMaxConnectionsPerChild 0",
                    max.min(5),
                    max.min(5),
                    max.min(10),
                )
            }
            ApacheMode::EventFpm => {
                let (start, limit) = n.map_or((2, 16), |n| (n, n));
                let threads = n.map_or(150, |n| n * 25);
                format!(
                    "ServerLimit {limit}\nStartServers {start}\nThreadsPerChild 25\n\
                     ThreadLimit 64\nMinSpareThreads 25\nMaxSpareThreads {}\n\
                     MaxRequestWorkers {threads}\nMaxConnectionsPerChild 0",
                    threads.max(75),
                )
            }
        }
    }
}

impl Apache {
    /// mod_ssl and mod_http2 as the knobs ask: the modules to load, and their directives.
    fn tls_and_http2(&self, plan: &Plan) -> (String, String) {
        let tier = self.tier();
        let (tls, http2) = (plan.serves_tls(tier), plan.serves_http2(tier));
        let modules = plan.apache_modules.display().to_string();
        let mut load = String::new();
        let mut directives = String::new();
        if tls {
            let files = plan.tls_files();
            let run = plan.run.display();
            // The session cache in shared memory (shmcb) is what lets any child or thread
            // resume a session another made; its mutex is the `Mutex file:` default above.
            // Tickets are on by default: the key is made in the parent before it forks.
            load.push_str(&format!(
                "LoadModule socache_shmcb_module {modules}/mod_socache_shmcb.so\n\
                 LoadModule ssl_module {modules}/mod_ssl.so\n"
            ));
            directives.push_str(&format!(
                "SSLEngine on\nSSLCertificateFile {}\nSSLCertificateKeyFile {}\n\
                 SSLProtocol -all {}\nSSLSessionCache shmcb:{run}/apache/ssl_scache(512000)\n\
                 SSLSessionCacheTimeout 3600\nSSLSessionTickets on\n",
                files.cert.display(),
                files.key.display(),
                crate::cert::VERSIONS.iter().map(|v| format!("+{v}")).collect::<Vec<_>>().join(" "),
            ));
        }
        if http2 {
            load.push_str(&format!("LoadModule http2_module {modules}/mod_http2.so\n"));
            // h2 is HTTP/2 by ALPN over TLS; h2c in the clear, where mod_http2 takes both
            // prior knowledge (H2Direct, on by default for h2c) and the Upgrade header.
            let h2 = if tls { "h2" } else { "h2c" };
            directives.push_str(&format!("Protocols {h2} http/1.1\n"));
        } else if tls {
            directives.push_str("Protocols http/1.1\n");
        }
        (load, directives)
    }
}

impl Apache {
    /// The user's server-level file, and `${LOADLAB_DOCROOT}` for either of the user's files
    /// to name the instance's document root by (its `<Directory>`, say), which lies in a run
    /// directory the user cannot know in advance. `Include`, not `IncludeOptional`: the line
    /// is written only when the file was copied, so a missing one is loadlab's bug to show.
    fn own_server(&self, plan: &Plan) -> String {
        if !(plan.knobs.has_own(Point::Apache) || plan.knobs.has_own(Point::ApacheVhost)) {
            return String::new();
        }
        let define = format!("Define LOADLAB_DOCROOT {}\n", plan.docroot().display());
        let include = own::include(plan, Point::Apache, |copy, original| {
            format!("# Yours: {original}, copied.\nInclude {copy}\n")
        });
        format!("{define}{include}")
    }

    /// The MPM, the modules that run PHP and the handler that sends `.php` to them: mod_php
    /// inside prefork's children, or proxy_fcgi to php-fpm's socket under event.
    fn mpm_and_php(&self, plan: &Plan, modules: &str) -> (&'static str, String, String) {
        match self.mode {
            ApacheMode::PreforkModPhp => (
                "prefork",
                format!("LoadModule php_module {}\n", plan.mod_php.display()),
                "<FilesMatch \"\\.php$\">\n    SetHandler application/x-httpd-php\n</FilesMatch>\n"
                    .to_string(),
            ),
            ApacheMode::EventFpm => (
                "event",
                format!(
                    "LoadModule proxy_module {modules}/mod_proxy.so\n\
                     LoadModule proxy_fcgi_module {modules}/mod_proxy_fcgi.so\n"
                ),
                format!(
                    "<FilesMatch \"\\.php$\">\n    \
                     SetHandler \"proxy:unix:{}/php-fpm.sock|fcgi://localhost\"\n</FilesMatch>\n",
                    plan.run.display()
                ),
            ),
        }
    }
}

/// mod_deflate's modules and its filter for text, with the `gzip` knob on; nothing off.
fn gzip(plan: &Plan, modules: &str) -> (String, String) {
    if plan.knobs.gzip.is_on() {
        (
            format!(
                "LoadModule filter_module {modules}/mod_filter.so\n\
                 LoadModule deflate_module {modules}/mod_deflate.so\n"
            ),
            "AddOutputFilterByType DEFLATE text/html text/plain text/css application/json \
             application/javascript\n"
                .to_string(),
        )
    } else {
        (String::new(), String::new())
    }
}

impl Server for Apache {
    fn tier(&self) -> Tier {
        Tier::Apache { mode: self.mode }
    }

    fn configs(&self, plan: &Plan) -> Vec<Generated> {
        let modules = plan.apache_modules.display().to_string();
        let (mpm, php_modules, php_handler) = self.mpm_and_php(plan, &modules);
        let (gzip_modules, gzip) = gzip(plan, &modules);
        let knobs = &plan.knobs;
        // MaxKeepAliveRequests counts the requests after a connection's first (Apache keeps
        // the connection while fewer than that many keep-alives have been granted), so N
        // requests a connection is N - 1, and 1 is no keep-alive at all (0 would be no
        // limit). Unset, Apache's own default (100, so 101 requests) holds.
        let one_request = knobs.keepalive_requests == Some(1);
        let keepalive_requests = match knobs.keepalive_requests {
            Some(n) if n > 1 => format!("MaxKeepAliveRequests {}\n", n - 1),
            _ => String::new(),
        };
        // mod_log_config is built into Debian's apache2. Without BufferedLogs, CustomLog
        // writes each line as its request ends.
        let access_log = if knobs.access_log.is_on() {
            format!("{COMBINED}\nCustomLog {} combined\n", plan.access_log("apache").display())
        } else {
            String::new()
        };
        let (tls_modules, tls) = self.tls_and_http2(plan);
        let mut vars = plan.common_vars();
        vars.extend([
            ("bind", plan.bind_host(self.tier())),
            ("tls_modules", tls_modules),
            ("tls", tls),
            ("port", plan.port("apache").to_string()),
            ("user", user_line(plan, |u, g| format!("User {u}\nGroup {g}"))),
            ("mpm", mpm.to_string()),
            ("modules", modules),
            ("php_modules", php_modules),
            ("gzip_modules", gzip_modules),
            ("mpm_settings", self.mpm_settings(plan)),
            (
                "keepalive",
                if knobs.keepalive.is_on() && !one_request { "On" } else { "Off" }.into(),
            ),
            ("keepalive_timeout", knobs.keepalive_timeout().config_value()),
            ("keepalive_requests", keepalive_requests),
            ("access_log", access_log),
            (
                "index",
                if plan.stack.has_php() { "index.php index.html" } else { "index.html" }.into(),
            ),
            ("php_handler", php_handler),
            ("gzip", gzip),
            ("own_server", self.own_server(plan)),
            (
                "own_vhost",
                own::include(plan, Point::ApacheVhost, |copy, original| {
                    format!("# Yours: {original}, copied.\nInclude {copy}\n")
                }),
            ),
        ]);
        vec![
            ("apache/apache2.conf".into(), render(CONF, &vars)),
            ("apache/mime.types".into(), MIME_TYPES.to_string()),
        ]
    }

    fn command(&self, plan: &Plan) -> Result<Command> {
        let mut command = Command::new(programs::APACHE.find()?);
        command.arg("-f").arg(Self::conf_path(plan)).arg("-DFOREGROUND");
        // Debian's apache2ctl would set these from /etc/apache2/envvars; our config does not
        // use them, but modules and scripts that look for them find this instance's paths.
        let dir = plan.run.join("apache");
        command
            .env("APACHE_RUN_DIR", &dir)
            .env("APACHE_LOCK_DIR", &dir)
            .env("APACHE_PID_FILE", dir.join("apache2.pid"))
            .env("APACHE_LOG_DIR", plan.logs())
            .env("LANG", "C");
        if let Some((user, group)) = &plan.run_as {
            command.env("APACHE_RUN_USER", user).env("APACHE_RUN_GROUP", group);
        }
        if self.mode == ApacheMode::PreforkModPhp {
            php::set_env(plan, &mut command);
        }
        Ok(command)
    }

    fn config_tests(&self, plan: &Plan) -> Result<Vec<(String, Command)>> {
        let mut tests = Vec::new();
        if plan.knobs.has_own(Point::Apache) || plan.knobs.has_own(Point::ApacheVhost) {
            let mut command = self.command(plan)?;
            command.arg("-t");
            tests.push(("apache2 -t".into(), command));
        }
        if self.mode == ApacheMode::PreforkModPhp && plan.knobs.has_own(Point::PhpIni) {
            // mod_php reads php.ini as Apache starts and has no test of its own: the PHP
            // command line of the same package reads it as it will.
            tests.push(("php -v".into(), php::ini_test(plan, &programs::PHP_CLI)?));
        }
        Ok(tests)
    }

    fn probe(&self, plan: &Plan) -> Probe {
        Probe::Tcp(plan.port("apache"))
    }

    fn capture(&self, plan: &Plan) -> Vec<Captured> {
        let mut out = Vec::new();
        // Both read our config (without -f, apache2 would read /etc/apache2's).
        for flag in ["-M", "-V"] {
            if let Ok(mut command) = self.command(plan) {
                command.arg(flag);
                out.push(capture_command("apache", &format!("apache2 {flag}"), command));
            }
        }
        out.push(capture_file("apache", "apache2.conf", &plan.run.join("apache/apache2.conf")));
        out
    }
}
