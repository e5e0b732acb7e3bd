//! `--host ssh://...`: this side of a lab host, printed. The session held in the foreground,
//! handed to an owner process, or ended, and the other commands passed through, are
//! loadlab-remote's (`owner`); the hidden `remote hello` is what a remote loadlab says of
//! itself.

use std::io::Write;
use std::path::Path;

use clap::Subcommand;
use loadlab_lab::Lab;
use loadlab_remote::held::{Held, Holds};
use loadlab_remote::owner::{self, HandedOver};
use loadlab_remote::protocol::Event;
use loadlab_remote::{provision, Host};

use crate::exit::{remote_failure, OK};
use crate::signals;

const VERSION: &str = env!("CARGO_PKG_VERSION");

#[derive(Debug, Subcommand)]
pub enum RemoteCommand {
    /// One JSON line: this binary's version, the machine's architecture and glibc.
    Hello,
}

pub fn run(command: RemoteCommand) -> anyhow::Result<u8> {
    match command {
        RemoteCommand::Hello => {
            out!("{}", Event::Hello(provision::hello(VERSION)).line())?;
            Ok(OK)
        }
    }
}

/// `--host`'s value; clap prefixes the flag's name itself.
pub fn parse_host(text: &str) -> Result<Host, String> {
    text.parse::<Host>().map_err(|e| e.to_string().trim_start_matches("--host ").to_string())
}

/// The command line's words after the program, as typed.
fn argv() -> Vec<String> {
    std::env::args().skip(1).collect()
}

fn note(line: &str) {
    eprintln!("loadlab: {line}");
}

/// `loadlab ARGS` (without `--host`) on `host`, its output and exit code passed through.
pub fn pass_through(host: &Host) -> anyhow::Result<u8> {
    owner::pass_through(host, &argv(), VERSION, &mut note).map_err(remote_failure)
}

/// `stack up NAME --host H ...`: held here with `--foreground` (in the owner process too,
/// `hold` its log), else handed to an owner process.
pub fn up(
    lab: &Lab,
    host: &Host,
    json: bool,
    foreground: bool,
    hold: Option<&Path>,
) -> anyhow::Result<u8> {
    let argv = argv();
    let up = owner::Up { host, argv: &argv, version: VERSION, hold };
    let control = signals::control()?;
    let cancel = || signals::interrupted(&control);
    if !foreground {
        return match owner::hand_over(lab.state(), &up, json, &cancel, &mut note) {
            Ok(HandedOver::Held { held, said }) => {
                eprint!("{said}");
                print_up(&held, json, false)?;
                Ok(OK)
            }
            Ok(HandedOver::Failed { code, said }) => {
                eprint!("{said}");
                Ok(code)
            }
            Err(e) => Err(remote_failure(e)),
        };
    }
    let _teardown = signals::Finishing::hold();
    let mut print = |held: &Held| print_up(held, json, true);
    owner::hold(lab.state(), &up, &cancel, &mut note, &mut print).map_err(remote_failure)?;
    Ok(OK)
}

fn print_up(held: &Held, json: bool, foreground: bool) -> std::io::Result<()> {
    let mut out = std::io::stdout().lock();
    if json {
        writeln!(out, "{}", held.instance)?;
    } else {
        let checks = held.instance["checks"].as_array().map_or(0, Vec::len);
        let ms = held.instance["up_ms"].as_u64().unwrap_or_default();
        let (id, url, host) = (&held.id, &held.url, &held.host);
        writeln!(out, "{id}  {url}  up and verified on {host} in {ms} ms ({checks} checks)")?;
        if foreground {
            writeln!(out, "  in the foreground of an ssh session: Ctrl-C takes it down")?;
        } else {
            let pid = held.owner.pid;
            writeln!(out, "  held by pid {pid}; `loadlab stack down {id} --host {host}` ends it")?;
        }
    }
    out.flush()
}

/// The held remote stacks, for `stack list`.
pub fn held(lab: &Lab) -> anyhow::Result<Vec<Held>> {
    Holds::new(lab.state()).all().map_err(remote_failure)
}
