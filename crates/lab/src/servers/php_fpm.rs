//! php-fpm: one static pool on a unix socket in the run directory, run with `-F` (foreground)
//! from its own config.

use std::process::Command;

use crate::catalog::Tier;
use crate::error::Result;
use crate::own::{self, Point};
use crate::servers::{
    capture_command, capture_version, php, user_line, Captured, Generated, Plan, Probe, Server,
};
use crate::sys::is_root;
use crate::template::render;
use loadlab_programs as programs;

const CONF: &str = include_str!("../../templates/php-fpm.conf");

pub struct PhpFpm;

/// The socket the pool listens on, in an instance's run directory.
pub fn listen_socket(run: &std::path::Path) -> std::path::PathBuf {
    run.join("php-fpm.sock")
}

/// The pool's status socket (`pm.status_listen`): served by php-fpm's own process, so the
/// status answers while every child is busy (see `pools`).
pub fn status_socket(run: &std::path::Path) -> std::path::PathBuf {
    run.join("php-fpm-status.sock")
}

impl PhpFpm {
    fn socket(plan: &Plan) -> std::path::PathBuf {
        listen_socket(&plan.run)
    }

    fn base_command(plan: &Plan) -> Result<Command> {
        let mut command = Command::new(programs::PHP_FPM.find()?);
        command.arg("-y").arg(plan.run.join("php-fpm/php-fpm.conf"));
        // php-fpm refuses to start as root without -R, even though its workers switch to
        // the pool's user.
        if is_root() {
            command.arg("-R");
        }
        php::set_env(plan, &mut command);
        Ok(command)
    }
}

impl Server for PhpFpm {
    fn tier(&self) -> Tier {
        Tier::PhpFpm
    }

    fn configs(&self, plan: &Plan) -> Vec<Generated> {
        let mut vars = plan.common_vars();
        vars.extend([
            ("socket", Self::socket(plan).to_string_lossy().into_owned()),
            ("status_socket", status_socket(&plan.run).to_string_lossy().into_owned()),
            (
                "listen_owner",
                user_line(plan, |u, g| format!("listen.owner = {u}\nlisten.group = {g}\n")),
            ),
            ("user", user_line(plan, |u, g| format!("user = {u}\ngroup = {g}\n"))),
            ("workers", php::workers(plan).to_string()),
            (
                "own_pool",
                own::include(plan, Point::PhpFpmPool, |copy, original| {
                    format!("; Yours: {original}, copied.\ninclude = {copy}\n")
                }),
            ),
        ]);
        vec![("php-fpm/php-fpm.conf".into(), render(CONF, &vars))]
    }

    fn command(&self, plan: &Plan) -> Result<Command> {
        let mut command = Self::base_command(plan)?;
        command.arg("-F");
        Ok(command)
    }

    /// `php-fpm -t` reads the pool and PHP's ini files alike.
    fn config_tests(&self, plan: &Plan) -> Result<Vec<(String, Command)>> {
        if !(plan.knobs.has_own(Point::PhpFpmPool) || plan.knobs.has_own(Point::PhpIni)) {
            return Ok(Vec::new());
        }
        let mut command = Self::base_command(plan)?;
        command.arg("-t");
        Ok(vec![("php-fpm -t".into(), command)])
    }

    fn probe(&self, plan: &Plan) -> Probe {
        Probe::Unix(Self::socket(plan))
    }

    fn capture(&self, plan: &Plan) -> Vec<Captured> {
        let mut out = vec![
            capture_version("php-fpm", &programs::PHP_FPM, "-v"),
            capture_version("php-fpm", &programs::PHP_FPM, "-m"),
        ];
        // -tt prints the pool's effective settings (as NOTICE lines on stderr).
        if let Ok(mut test) = Self::base_command(plan) {
            test.arg("-tt");
            out.push(capture_command("php-fpm", "php-fpm -tt", test));
        }
        out
    }
}
