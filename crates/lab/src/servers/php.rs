//! PHP's settings shared by every PHP tier (mod_php, php-fpm, php-cgi): one ini file in the
//! run directory, read after the distribution's own through `PHP_INI_SCAN_DIR`.

use std::process::Command;

use crate::error::Result;
use crate::own::{self, Point};
use crate::servers::{Generated, Plan};
use crate::template::render;
use loadlab_programs::Need;

const INI: &str = include_str!("../../templates/php.ini");
const EXCIMER: &str = include_str!("../../templates/excimer.php");

/// The ini, and with the `excimer` knob the script that profiles PHP's requests while a cell
/// is profiled (see [`crate::profiler::php`]), read first on every request.
pub fn configs(plan: &Plan) -> Vec<Generated> {
    use crate::profiler::php;
    let mut vars = plan.common_vars();
    vars.push(("opcache", if plan.knobs.opcache_on() { "1" } else { "0" }.into()));
    let excimer = plan.knobs.excimer.is_on();
    let prepend = format!("{}/{}", php::DIR, php::PREPEND);
    let line = format!("auto_prepend_file = {}\n", plan.run.join(&prepend).display());
    vars.push(("excimer", if excimer { line } else { String::new() }));
    let mut files = vec![("php/loadlab.ini".into(), render(INI, &vars))];
    if excimer {
        vars.extend(php::template_vars(&plan.run));
        files.push((prepend, render(EXCIMER, &vars)));
    }
    files
}

/// Points PHP at the run directory's ini. The leading `:` keeps the compiled-in scan
/// directory (Debian's conf.d, which loads the extensions) and adds ours after it, so the
/// OPcache knob overrides the distribution's default instead of replacing its extension list.
/// The user's php.ini, when given, is in a directory of its own listed last: PHP reads the
/// directories in order, and a setting read later wins.
pub fn set_env(plan: &Plan, command: &mut Command) {
    let own = own::path(plan, Point::PhpIni)
        .and_then(|ini| ini.parent().map(|dir| format!(":{}", dir.display())))
        .unwrap_or_default();
    command.env("PHP_INI_SCAN_DIR", format!(":{}/php{own}", plan.run.display()));
}

/// `program -v` (php-cgi, php) reading PHP's ini files as the tier's PHP will: a test of the
/// user's php.ini for a tier that has none of its own (see [`crate::own::check`]).
pub fn ini_test(plan: &Plan, program: &Need) -> Result<Command> {
    let mut command = Command::new(program.find()?);
    command.arg("-v");
    set_env(plan, &mut command);
    Ok(command)
}

/// How many PHP processes a PHP tier of its own (php-fpm, spawn-fcgi) starts.
pub fn workers(plan: &Plan) -> u32 {
    plan.knobs.php_workers()
}
