//! Caddy: static files, and `.php` handed to php-fpm over FastCGI on its unix socket. With TLS,
//! HTTP/1.1, HTTP/2 and HTTP/3 on one port: TCP for the first two by ALPN, UDP for QUIC, which
//! Caddy announces in `Alt-Svc` (RFC 9114 section 3.1.1). Run with `caddy run`, in the
//! foreground, from a Caddyfile in the run directory; its home and data stay there too.

use std::process::Command;

use crate::catalog::Tier;
use crate::error::Result;
use crate::servers::{
    capture_command, capture_file, capture_version, Captured, Generated, Plan, Probe, Server,
};
use crate::template::render;
use loadlab_programs as programs;

const CONF: &str = include_str!("../../templates/Caddyfile");

pub struct Caddy {
    pub fpm: bool,
}

impl Caddy {
    fn conf_path(plan: &Plan) -> std::path::PathBuf {
        plan.run.join("caddy/Caddyfile")
    }

    /// `caddy SUBCOMMAND` reading the instance's Caddyfile, with its home in the run
    /// directory: Caddy keeps its autosaved config and data under `$XDG_CONFIG_HOME` and
    /// `$XDG_DATA_HOME` (falling back to `$HOME`), never the user's.
    fn caddy(plan: &Plan, subcommand: &str) -> Result<Command> {
        let home = plan.run.join("caddy");
        let mut command = Command::new(programs::CADDY.find()?);
        command
            .arg(subcommand)
            .arg("--config")
            .arg(Self::conf_path(plan))
            .arg("--adapter")
            .arg("caddyfile")
            .env("HOME", &home)
            .env("XDG_CONFIG_HOME", home.join("config"))
            .env("XDG_DATA_HOME", home.join("data"));
        // Go runs goroutines on GOMAXPROCS threads (one per CPU by default): Caddy's workers.
        if let Some(n) = plan.knobs.workers {
            command.env("GOMAXPROCS", n.to_string());
        }
        Ok(command)
    }
}

/// The protocols Caddy serves: HTTP/3 needs TLS (QUIC carries TLS 1.3, RFC 9001), h2 over TLS
/// is offered by ALPN, and h2c without TLS is taken beside HTTP/1.1 on the one port.
pub fn protocols(tls: bool, http2: bool) -> &'static str {
    match (tls, http2) {
        (true, true) => "h1 h2 h3",
        (true, false) => "h1 h3",
        (false, true) => "h1 h2c",
        (false, false) => "h1",
    }
}

impl Server for Caddy {
    fn tier(&self) -> Tier {
        Tier::Caddy { fpm: self.fpm }
    }

    fn configs(&self, plan: &Plan) -> Vec<Generated> {
        let knobs = &plan.knobs;
        let tier = self.tier();
        let tls = plan.serves_tls(tier);
        let files = plan.tls_files();
        let tls_block = if tls {
            // Caddy spells TLSv1.3 `tls1.3`.
            let versions: Vec<String> =
                crate::cert::VERSIONS.iter().map(|v| v.replace("TLSv", "tls")).collect();
            let versions = versions.join(" ");
            format!(
                "\ttls {} {} {{\n\t\tprotocols {versions}\n\t}}\n",
                files.cert.display(),
                files.key.display()
            )
        } else {
            String::new()
        };
        // Caddy's default leaves bodies under 512 bytes alone; nginx compresses from 20, and
        // verify checks robots.txt on a static stack.
        let gzip =
            if knobs.gzip.is_on() { "\tencode gzip {\n\t\tminimum_length 20\n\t}\n" } else { "" };
        // php_fastcgi also routes paths that are no file to index.php, as nginx's
        // try_files does for WordPress.
        let php = if self.fpm {
            let socket = crate::servers::php_fpm::listen_socket(&plan.run);
            format!("\tphp_fastcgi unix/{}\n", socket.display())
        } else {
            String::new()
        };
        // Caddy's zap logger writes each request's line as it ends, unbuffered.
        let access_log = if knobs.access_log.is_on() {
            format!(
                "\tlog {{\n\t\toutput file {} {{\n\t\t\troll_disabled\n\t\t}}\n\t}}\n",
                plan.access_log("caddy").display()
            )
        } else {
            String::new()
        };
        let mut vars = plan.common_vars();
        vars.extend([
            ("scheme", if tls { "https" } else { "http" }.to_string()),
            ("bind", plan.bind(tier).to_string()),
            ("port", plan.port("caddy").to_string()),
            ("protocols", protocols(tls, plan.serves_http2(tier)).to_string()),
            // Go reads `15s` and `500ms` as the knob writes them.
            ("idle", knobs.keepalive_timeout().to_string()),
            ("tls", tls_block),
            ("gzip", gzip.to_string()),
            ("php", php),
            ("access_log", access_log),
        ]);
        vec![("caddy/Caddyfile".into(), render(CONF, &vars))]
    }

    fn command(&self, plan: &Plan) -> Result<Command> {
        Self::caddy(plan, "run")
    }

    fn probe(&self, plan: &Plan) -> Probe {
        Probe::Tcp(plan.port("caddy"))
    }

    fn capture(&self, plan: &Plan) -> Vec<Captured> {
        let mut out = vec![
            capture_version("caddy", &programs::CADDY, "version"),
            capture_file("caddy", "Caddyfile", &Self::conf_path(plan)),
        ];
        // The JSON Caddy runs: the Caddyfile with every default Caddy filled in.
        if let Ok(adapt) = Self::caddy(plan, "adapt") {
            out.push(capture_command("caddy", "caddy adapt", adapt));
        }
        out
    }
}
