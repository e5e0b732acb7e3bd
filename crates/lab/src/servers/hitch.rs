//! hitch terminating TLS in front of Varnish, which has none of its own: it decrypts each
//! connection and hands it to Varnish with a PROXY protocol v2 header carrying the ALPN it
//! negotiated, so that Varnish speaks HTTP/2 to a client that chose `h2`. Run with
//! `daemon = off`, so its master is the process loadlab started; its workers share the
//! master's TLS context, so a ticket one issued resumes at any other.

use std::process::Command;

use crate::catalog::Tier;
use crate::error::Result;
use crate::servers::{
    capture_file, capture_version, user_line, Captured, Generated, Plan, Probe, Server,
};
use crate::template::render;
use loadlab_programs as programs;

const CONF: &str = include_str!("../../templates/hitch.conf");

pub struct Hitch;

impl Hitch {
    /// One worker per CPU the stack may use, as hitch's documentation advises (it has no
    /// `auto`).
    pub fn workers(plan: &Plan) -> usize {
        plan.knobs
            .cpus
            .as_ref()
            .map(|c| c.0.len())
            .unwrap_or_else(|| std::thread::available_parallelism().map_or(1, |n| n.get()))
    }
}

impl Server for Hitch {
    fn tier(&self) -> Tier {
        Tier::Hitch
    }

    fn configs(&self, plan: &Plan) -> Vec<Generated> {
        let files = plan.tls_files();
        let mut vars = plan.common_vars();
        vars.extend([
            ("bind", plan.bind(Tier::Hitch).to_string()),
            ("port", plan.port("hitch").to_string()),
            ("backend_port", plan.port("varnish").to_string()),
            ("cert", files.cert.display().to_string()),
            ("key", files.key.display().to_string()),
            ("versions", crate::cert::VERSIONS.join(" ")),
            ("alpn", crate::cert::alpn(plan.knobs.http2.is_on()).join(", ")),
            ("workers", Self::workers(plan).to_string()),
            // hitch binds as root, then its workers switch (they never read the key again).
            ("user", user_line(plan, |u, g| format!("user = \"{u}\"\ngroup = \"{g}\"\n"))),
        ]);
        vec![("hitch/hitch.conf".into(), render(CONF, &vars))]
    }

    fn command(&self, plan: &Plan) -> Result<Command> {
        let mut command = Command::new(programs::HITCH.find()?);
        command.arg(format!("--config={}", plan.run.join("hitch/hitch.conf").display()));
        Ok(command)
    }

    fn probe(&self, plan: &Plan) -> Probe {
        Probe::Tcp(plan.port("hitch"))
    }

    fn capture(&self, plan: &Plan) -> Vec<Captured> {
        vec![
            capture_version("hitch", &programs::HITCH, "--version"),
            capture_file("hitch", "hitch.conf", &plan.run.join("hitch/hitch.conf")),
        ]
    }
}
