//! nginx: static files, and `.php` handed to php-fpm or php-cgi over FastCGI or to Apache
//! over HTTP; run with `daemon off` so its master is the process loadlab started.

use std::process::Command;

use crate::catalog::{NginxPhp, Tier};
use crate::error::Result;
use crate::own::{self, Point};
use crate::servers::{capture_command, user_line, Captured, Generated, Plan, Probe, Server};
use crate::template::render;
use loadlab_programs as programs;

const CONF: &str = include_str!("../../templates/nginx.conf");
const FASTCGI: &str = include_str!("../../templates/nginx-fastcgi.conf");
const PROXY: &str = include_str!("../../templates/nginx-proxy.conf");

/// Each worker's `worker_connections` (the template's).
pub const WORKER_CONNECTIONS: u32 = 4096;

/// The connections nginx's workers may hold at once: `worker_processes` (auto: one per CPU the
/// stack may use) times [`WORKER_CONNECTIONS`].
pub fn max_connections(knobs: &crate::knobs::Knobs) -> u32 {
    let cpus = knobs
        .cpus
        .as_ref()
        .map(|c| c.0.len())
        .unwrap_or_else(|| std::thread::available_parallelism().map_or(1, |n| n.get()));
    knobs.workers.unwrap_or(cpus as u32) * WORKER_CONNECTIONS
}

pub struct Nginx {
    pub php: NginxPhp,
}

impl Nginx {
    fn conf_path(plan: &Plan) -> String {
        format!("{}/nginx/nginx.conf", plan.run.display())
    }

    /// The `location` blocks beyond static files: WordPress's front controller, and where
    /// `.php` goes.
    fn locations(&self, plan: &Plan) -> String {
        let run = plan.run.display();
        let socket = |name: &str| format!("{run}/{name}.sock");
        let php_location = match self.php {
            NginxPhp::None => String::new(),
            NginxPhp::Fpm => render(FASTCGI, &[("socket", socket("php-fpm"))]),
            NginxPhp::SpawnFcgi => render(FASTCGI, &[("socket", socket("php-cgi"))]),
            NginxPhp::ProxyApache => PROXY.to_string(),
        };
        // WordPress routes every path that is not a file through its index.php.
        let front_controller = if plan.stack.wordpress {
            "        location / {\n            try_files $uri $uri/ /index.php?$args;\n        }\n"
        } else {
            ""
        };
        format!("{front_controller}{php_location}")
    }

    /// The pool of keep-alive connections to Apache, when `.php` is proxied there.
    fn upstream(&self, plan: &Plan) -> String {
        if self.php == NginxPhp::ProxyApache {
            let port = plan.port("apache");
            format!(
                "    upstream apache {{\n        server 127.0.0.1:{port};\n        \
                 keepalive 32;\n    }}\n"
            )
        } else {
            String::new()
        }
    }
}

/// The keep-alive directives the knobs ask for.
fn keepalive(knobs: &crate::knobs::Knobs) -> String {
    // A timeout of 0 is nginx's keep-alive off.
    match (knobs.keepalive.is_on(), knobs.keepalive_requests) {
        (false, _) => "keepalive_timeout 0;".to_string(),
        (true, None) => {
            format!("keepalive_timeout {};", knobs.keepalive_timeout().config_value())
        }
        (true, Some(n)) => format!(
            "keepalive_timeout {};\n    keepalive_requests {n};",
            knobs.keepalive_timeout().config_value()
        ),
    }
}

/// The certificate, versions and session resumption of a front that speaks TLS.
fn tls_lines(plan: &Plan) -> String {
    let files = plan.tls_files();
    // One session cache shared by the workers, and tickets (whose key the master makes
    // before forking, so any worker decrypts any ticket): a returning client resumes
    // whichever worker accepts it, as the engine's connections do by default.
    format!(
        "        ssl_certificate {};\n        ssl_certificate_key {};\n        \
         ssl_protocols {};\n        ssl_session_cache shared:loadlab:10m;\n        \
         ssl_session_timeout 1h;\n        ssl_session_tickets on;\n",
        files.cert.display(),
        files.key.display(),
        crate::cert::VERSIONS.join(" "),
    )
}

impl Server for Nginx {
    fn tier(&self) -> Tier {
        Tier::Nginx { php: self.php }
    }

    fn configs(&self, plan: &Plan) -> Vec<Generated> {
        let gzip = if plan.knobs.gzip.is_on() {
            "gzip on;\n    gzip_types text/plain text/css application/json application/javascript;"
        } else {
            "gzip off;"
        };
        let knobs = &plan.knobs;
        let upstream = self.upstream(plan);
        let keepalive = keepalive(knobs);
        // Without `buffer=`, each request's line is written as it ends, so a log holds every
        // request the moment its response is sent.
        let access_log = if knobs.access_log.is_on() {
            format!("access_log {} combined;", plan.access_log("nginx").display())
        } else {
            "access_log off;".to_string()
        };
        let tier = self.tier();
        let (tls, http2) = (plan.serves_tls(tier), plan.serves_http2(tier));
        // nginx 1.22 takes both as flags of `listen`: `ssl` for TLS, `http2` for h2 by ALPN
        // over TLS, or for h2c with prior knowledge without it (nginx has no h2c Upgrade).
        let listen_flags =
            format!("{}{}", if tls { " ssl" } else { "" }, if http2 { " http2" } else { "" });
        let tls_block = if tls { tls_lines(plan) } else { String::new() };
        let mut vars = plan.common_vars();
        vars.extend([
            ("bind", plan.bind_host(self.tier())),
            ("listen_flags", listen_flags),
            ("tls", tls_block),
            ("workers", knobs.workers.map_or("auto".to_string(), |n| n.to_string())),
            ("worker_connections", WORKER_CONNECTIONS.to_string()),
            ("user", user_line(plan, |u, g| format!("user {u} {g};"))),
            ("keepalive", keepalive),
            ("access_log", access_log),
            ("gzip", gzip.to_string()),
            ("upstream", upstream),
            ("port", plan.port("nginx").to_string()),
            (
                "index",
                if plan.stack.has_php() { "index.php index.html" } else { "index.html" }.into(),
            ),
            ("locations", self.locations(plan)),
            (
                "own_http",
                own::include(plan, Point::NginxHttp, |copy, original| {
                    format!("    # Yours: {original}, copied.\n    include {copy};\n")
                }),
            ),
            (
                "own_server",
                own::include(plan, Point::NginxServer, |copy, original| {
                    format!("        # Yours: {original}, copied.\n        include {copy};\n")
                }),
            ),
        ]);
        vec![("nginx/nginx.conf".into(), render(CONF, &vars))]
    }

    fn command(&self, plan: &Plan) -> Result<Command> {
        let mut command = Command::new(programs::NGINX.find()?);
        // -e: errors from before the config is read go to our log, not /var/log/nginx.
        command
            .arg("-p")
            .arg(plan.run.join("nginx"))
            .arg("-e")
            .arg(plan.logs().join("nginx-error.log"))
            .arg("-c")
            .arg(Self::conf_path(plan));
        Ok(command)
    }

    fn config_tests(&self, plan: &Plan) -> Result<Vec<(String, Command)>> {
        if !(plan.knobs.has_own(Point::NginxHttp) || plan.knobs.has_own(Point::NginxServer)) {
            return Ok(Vec::new());
        }
        let mut command = self.command(plan)?;
        command.arg("-t");
        Ok(vec![("nginx -t".into(), command)])
    }

    fn probe(&self, plan: &Plan) -> Probe {
        Probe::Tcp(plan.port("nginx"))
    }

    fn capture(&self, plan: &Plan) -> Vec<Captured> {
        let Ok(mut command) = self.command(plan) else { return Vec::new() };
        command.arg("-T");
        vec![capture_command("nginx", "nginx -T", command)]
    }
}
