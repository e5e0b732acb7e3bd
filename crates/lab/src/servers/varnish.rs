//! Varnish in front of nginx, as seed 004 put it: `varnishd -F` with a VCL that passes only
//! loadlab's own probe, a malloc store, and no management port.
//!
//! The user's VCL (see [`crate::own`]) is included at the end of the lab's, not put in its
//! place: the lab's holds the backend (nginx on a port chosen per instance, which the user
//! cannot know), the pass of the lab's probe that verify needs, and the keep-alive knob's
//! header. Varnish runs a subroutine defined twice as one, the bodies in the order written, so
//! the user's `vcl_recv` or `vcl_deliver` runs after the lab's, which returns only for the
//! probe.

use std::process::Command;

use crate::catalog::Tier;
use crate::error::Result;
use crate::own::{self, Point};
use crate::servers::{capture_file, capture_version, Captured, Generated, Plan, Probe, Server};
use crate::template::render;
use loadlab_programs as programs;

const VCL: &str = include_str!("../../templates/varnish.vcl");

pub struct Varnish;

impl Server for Varnish {
    fn tier(&self) -> Tier {
        Tier::Varnish
    }

    fn configs(&self, plan: &Plan) -> Vec<Generated> {
        // Without keep-alive every response closes its client connection, as nginx and
        // Apache do with the knob off; Varnish has no setting for it but this header.
        let deliver = if plan.knobs.keepalive.is_on() {
            String::new()
        } else {
            "    set resp.http.Connection = \"close\";\n".to_string()
        };
        let mut vars = plan.common_vars();
        vars.extend([
            ("backend_port", plan.port("nginx").to_string()),
            ("deliver", deliver),
            (
                "own_vcl",
                own::include(plan, Point::VarnishVcl, |copy, original| {
                    format!("\n# Yours: {original}, copied.\ninclude \"{copy}\";\n")
                }),
            ),
        ]);
        vec![("varnish/default.vcl".into(), render(VCL, &vars))]
    }

    fn command(&self, plan: &Plan) -> Result<Command> {
        let dir = plan.run.join("varnish");
        let mut command = Command::new(programs::VARNISHD.find()?);
        // -j none: no jail, so it runs the same as root and as an ordinary user; -T none: no
        // management port, since nothing but loopback HTTP may listen.
        // Behind hitch, Varnish's listener takes the PROXY protocol only: hitch is its one
        // client (from 127.0.0.1, also in a profile's namespace).
        let listen = if plan.knobs.tls.is_on() {
            format!("127.0.0.1:{},PROXY", plan.port("varnish"))
        } else {
            format!("{}:{}", plan.bind_host(Tier::Varnish), plan.port("varnish"))
        };
        command
            .args(["-F", "-j", "none", "-T", "none", "-s", "malloc,64m"])
            .arg("-a")
            .arg(listen)
            .arg("-f")
            .arg(dir.join("default.vcl"))
            .arg("-n")
            .arg(dir.join("work"))
            .arg("-P")
            .arg(dir.join("varnishd.pid"));
        // timeout_idle is how long Varnish keeps an idle client connection; unset, Varnish's
        // own 5 s holds (nginx behind it gets the knob too, for Varnish's backend connections).
        // HTTP/2: h2c (prior knowledge or Upgrade) in the clear, or h2 when hitch's PROXY
        // header says ALPN chose it.
        if plan.serves_http2(Tier::Varnish) {
            command.args(["-p", "feature=+http2"]);
        }
        if let Some(timeout) = plan.knobs.keepalive_timeout {
            command.arg("-p").arg(format!("timeout_idle={}", timeout.as_millis() as f64 / 1000.0));
        }
        Ok(command)
    }

    /// `varnishd -C` compiles the VCL, the user's included, as the start would, in a work
    /// directory of its own (the server's is made when it starts).
    fn config_tests(&self, plan: &Plan) -> Result<Vec<(String, Command)>> {
        if !plan.knobs.has_own(Point::VarnishVcl) {
            return Ok(Vec::new());
        }
        let dir = plan.run.join("varnish");
        let mut command = Command::new(programs::VARNISHD.find()?);
        command.arg("-C").arg("-f").arg(dir.join("default.vcl")).arg("-n").arg(dir.join("check"));
        Ok(vec![("varnishd -C".into(), command)])
    }

    fn probe(&self, plan: &Plan) -> Probe {
        Probe::Tcp(plan.port("varnish"))
    }

    fn capture(&self, plan: &Plan) -> Vec<Captured> {
        let mut out = vec![capture_version("varnish", &programs::VARNISHD, "-V")];
        out.push(capture_file("varnish", "VCL", &plan.run.join("varnish/default.vcl")));
        out
    }
}
