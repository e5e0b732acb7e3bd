//! spawn-fcgi starting php-cgi as seed 000 did: `spawn-fcgi -n` binds the unix socket and
//! execs php-cgi in its place (so loadlab's child is php-cgi's master), which forks
//! PHP_FCGI_CHILDREN workers sharing that socket and one OPcache.

use std::process::Command;

use crate::catalog::Tier;
use crate::error::Result;
use crate::servers::{capture_version, php, Captured, Generated, Plan, Probe, Server};
use loadlab_programs as programs;

pub struct SpawnFcgi;

impl SpawnFcgi {
    fn socket(plan: &Plan) -> std::path::PathBuf {
        plan.run.join("php-cgi.sock")
    }
}

impl Server for SpawnFcgi {
    fn tier(&self) -> Tier {
        Tier::SpawnFcgi
    }

    /// spawn-fcgi takes everything on its command line; PHP's settings are in php.rs.
    fn configs(&self, _plan: &Plan) -> Vec<Generated> {
        Vec::new()
    }

    fn command(&self, plan: &Plan) -> Result<Command> {
        let mut command = Command::new(programs::SPAWN_FCGI.find()?);
        command.arg("-n").arg("-s").arg(Self::socket(plan)).arg("-M").arg("0660");
        command.arg("-C").arg(php::workers(plan).to_string());
        if let Some((user, group)) = &plan.run_as {
            command.args(["-u", user, "-g", group, "-U", user, "-G", group]);
        }
        // The error_log setting names this instance's run directory on php-cgi's command
        // line, where the stale-instance sweep looks for it.
        command
            .arg("--")
            .arg(programs::PHP_CGI.find()?)
            .arg("-d")
            .arg(format!("error_log={}/php-errors.log", plan.logs().display()));
        php::set_env(plan, &mut command);
        Ok(command)
    }

    fn config_tests(&self, plan: &Plan) -> Result<Vec<(String, Command)>> {
        if !plan.knobs.has_own(crate::own::Point::PhpIni) {
            return Ok(Vec::new());
        }
        Ok(vec![("php-cgi -v".into(), php::ini_test(plan, &programs::PHP_CGI)?)])
    }

    fn probe(&self, plan: &Plan) -> Probe {
        Probe::Unix(Self::socket(plan))
    }

    fn capture(&self, _plan: &Plan) -> Vec<Captured> {
        vec![
            capture_version("spawn-fcgi", &programs::SPAWN_FCGI, "-v"),
            capture_version("spawn-fcgi", &programs::PHP_CGI, "-v"),
            capture_version("spawn-fcgi", &programs::PHP_CGI, "-m"),
        ]
    }
}
