//! Each server's own test of a configuration that holds the user's files, run after the run
//! directory is written and before anything starts: `nginx -t`, `apache2 -t`, `php-fpm -t`,
//! `varnishd -C`, and PHP's own reading of php.ini (`php-cgi -v`, or `php -v` beside mod_php,
//! which has no test of its own). A refusal fails the start with the server's own words and
//! line, naming the user's file by the user's path, rather than as a tier that did not start
//! with a log to search. Nothing runs for a stack without the user's files: the lab's own
//! configs are pinned by snapshots and started on every test run.

use std::path::Path;
use std::time::Duration;

use crate::error::{Error, Result};
use crate::servers::{self, Plan};
use crate::supervise;

/// `varnishd -C` compiles the VCL to C and the C with cc: about a second here.
const LIMIT: Duration = Duration::from_secs(30);

/// Runs the tests of every tier the user's files go into; whether any ran.
pub(crate) fn run(plan: &Plan) -> Result<bool> {
    let Some(config) = &plan.knobs.config else { return Ok(false) };
    let mut ran = false;
    for tier in plan.tiers() {
        for (test, command) in servers::server(tier).config_tests(plan)? {
            ran = true;
            let (status, stdout, stderr) = supervise::run_status(command, LIMIT)?;
            let said = yours(&format!("{stderr}{stdout}"), &plan.run, &config.dir);
            if let Some(summary) = refusal(status.success(), &said, &config.dir) {
                return Err(Error::Config {
                    tier: tier.name().to_string(),
                    test,
                    summary,
                    output: said.trim().to_string(),
                });
            }
        }
    }
    Ok(ran)
}

/// A server's output with the run directory's copies of the user's files named by the
/// user's own paths: the line numbers then point into the file the user edits.
fn yours(said: &str, run: &Path, dir: &Path) -> String {
    said.replace(&format!("{}/own/", run.display()), &format!("{}/", dir.display()))
}

/// `None` when the test passed; else the line of its answer that names the user's file (the
/// first line said, when none does), with the line that completes it: Apache ends its
/// "Syntax error on line 1 of FILE:" with a colon and gives the reason on the next line;
/// Varnish gives the reason first and the place alone after it, in parentheses. PHP reads an ini file with a syntax error up to the error
/// and carries on without the rest, exiting 0: it says so only in a startup message
/// ("PHP:  syntax error, unexpected '=' in FILE on line 3"), so such a message is a refusal
/// too. The lab's own files cause none (its tests start PHP with them on every run).
fn refusal(passed: bool, said: &str, dir: &Path) -> Option<String> {
    let php_complaint = said.lines().any(|l| {
        ["PHP:", "PHP Warning:", "PHP Fatal error:", "PHP Parse error:"]
            .iter()
            .any(|m| l.trim_start().starts_with(m))
    });
    if passed && !php_complaint {
        return None;
    }
    let dir = format!("{}/", dir.display());
    let lines: Vec<&str> = said.lines().map(str::trim).filter(|l| !l.is_empty()).collect();
    let Some(at) = lines.iter().position(|l| l.contains(&dir)).or((!lines.is_empty()).then_some(0))
    else {
        return Some("it said nothing, and failed".into());
    };
    let line = lines[at];
    Some(match (line.ends_with(':'), line.starts_with('(')) {
        (true, _) if at + 1 < lines.len() => format!("{line} {}", lines[at + 1]),
        (_, true) if at > 0 => format!("{} {line}", lines[at - 1]),
        _ => line.to_string(),
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_users_paths_replace_the_run_directorys() {
        let said = "nginx: [emerg] unknown directive \"add_headr\" in /run/x/nginx-1/own/\
                    nginx-server.conf:2\nnginx: configuration file /run/x/nginx-1/nginx/\
                    nginx.conf test failed\n";
        let said = yours(said, Path::new("/run/x/nginx-1"), Path::new("/home/you/tuned"));
        assert!(said.contains("in /home/you/tuned/nginx-server.conf:2\n"), "{said}");
        assert_eq!(
            refusal(false, &said, Path::new("/home/you/tuned")).unwrap(),
            "nginx: [emerg] unknown directive \"add_headr\" in /home/you/tuned/nginx-server.conf:2"
        );
        assert_eq!(refusal(true, &said, Path::new("/home/you/tuned")), None);
    }

    #[test]
    fn a_php_startup_message_is_a_refusal_though_php_exits_0() {
        let dir = Path::new("/home/you/conf");
        let version = "PHP 8.2.36 (cli) (built: Nov 18 2026 20:02:04) (NTS)\nCopyright (c)\n";
        assert_eq!(refusal(true, version, dir), None);
        let said = format!(
            "PHP:  syntax error, unexpected '=' in /home/you/conf/php.ini on line 3\n{version}"
        );
        assert_eq!(
            refusal(true, &said, dir).unwrap(),
            "PHP:  syntax error, unexpected '=' in /home/you/conf/php.ini on line 3"
        );
        let said = "PHP Warning:  PHP Startup: Unable to load dynamic library 'nope'\n";
        assert!(refusal(true, said, dir).unwrap().contains("Unable to load dynamic library"));
        assert_eq!(refusal(false, "", dir).unwrap(), "it said nothing, and failed");
    }

    #[test]
    fn apaches_reason_follows_its_place_and_varnishs_precedes_it() {
        let dir = Path::new("/home/you/conf");
        let apache = "AH00526: Syntax error on line 1 of /home/you/conf/apache-vhost.conf:\n\
                      Invalid command 'Header', perhaps misspelled or defined by a module not \
                      included in the server configuration\n";
        assert_eq!(
            refusal(false, apache, dir).unwrap(),
            "AH00526: Syntax error on line 1 of /home/you/conf/apache-vhost.conf: Invalid \
             command 'Header', perhaps misspelled or defined by a module not included in the \
             server configuration"
        );
        let varnish = "Message from VCC-compiler:\nUnknown token ';' when looking for STRING\n\n\
                       ('/home/you/conf/varnish.vcl' Line 2 Pos 21)\n  set resp.http.X = ;\n\
                       --------------------#\n\nRunning VCC-compiler failed, exited with 2\n";
        assert_eq!(
            refusal(false, varnish, dir).unwrap(),
            "Unknown token ';' when looking for STRING ('/home/you/conf/varnish.vcl' Line 2 Pos 21)"
        );
    }
}
