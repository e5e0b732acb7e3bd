//! `--host ssh://...`: this side of a lab host. `stack up --host` runs the remote loadlab's
//! `stack up --session` in the foreground of one ssh session and prints what it answers, or
//! hands that session to an owner process (this program again, `--hold`) and returns;
//! `stack down/show/sample/verify --host` and `doctor --host` run the remote loadlab's own
//! command and pass its output and exit code through. The hidden `remote hello` is what a
//! remote loadlab says of itself. The deciding is in loadlab-remote.

use std::io::{BufRead, BufReader, Write};
use std::os::unix::process::CommandExt;
use std::path::Path;
use std::process::{Command, Stdio};
use std::time::Duration;

use clap::Subcommand;
use loadlab_lab::{procfs, Lab};
use loadlab_remote::held::{self, Held, Holds};
use loadlab_remote::protocol::Event;
use loadlab_remote::{args, provision, session, Host, Session, Ssh};
use serde_json::Value;

use crate::exit::{remote_failure, Failure, OK};
use crate::signals;

/// A stack's start and verify there, with a first MariaDB datadir, stay within this.
const UP_LIMIT: Duration = Duration::from_secs(300);

#[derive(Debug, Subcommand)]
pub enum RemoteCommand {
    /// One JSON line: this binary's version, the machine's architecture and glibc.
    Hello,
}

pub fn run(command: RemoteCommand) -> anyhow::Result<u8> {
    match command {
        RemoteCommand::Hello => {
            let hello = provision::hello(env!("CARGO_PKG_VERSION"));
            out!("{}", Event::Hello(hello).line())?;
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

/// The loadlab to run on `host`, copied there if need be (said on stderr).
fn remote_program(ssh: &Ssh, host: &Host) -> anyhow::Result<String> {
    let local = provision::Local::this(env!("CARGO_PKG_VERSION")).map_err(remote_failure)?;
    let mut note = |line: &str| eprintln!("loadlab: {line}");
    let remote = provision::ensure(ssh, host, &local, &mut note).map_err(remote_failure)?;
    Ok(remote.program)
}

/// `loadlab ARGS` (without `--host`) on `host`, its output and exit code passed through.
pub fn pass_through(host: &Host) -> anyhow::Result<u8> {
    let ssh = Ssh::from_env().map_err(remote_failure)?;
    let mut words = vec![remote_program(&ssh, host)?];
    words.extend(args::remote_command_args(&argv()));
    let line = loadlab_remote::ssh::command_line(&words);
    // stdin a pipe held until ssh ends: when this loadlab dies (Ctrl-C, kill), the remote
    // reads EOF, and a `stack sample` there stops (args::UNTIL_EOF_FLAG).
    let mut child = ssh.command(host, &line).stdin(Stdio::piped()).spawn()?;
    let held = child.stdin.take();
    let status = child.wait()?;
    drop(held);
    match status.code() {
        Some(loadlab_remote::run::SSH_FAILED) | None => {
            Err(remote_failure(loadlab_remote::Error::Ssh {
                host: host.to_string(),
                reason: format!("ssh {status}"),
            }))
        }
        Some(code) => Ok(code as u8),
    }
}

/// What `stack up --host` was asked besides the host.
pub struct Up<'a> {
    pub host: &'a Host,
    pub json: bool,
    pub foreground: bool,
    /// Set in the owner process: its stderr log, removed when it ends.
    pub hold: Option<&'a Path>,
}

/// `stack up NAME --host H ...`.
pub fn up(lab: &Lab, up: Up) -> anyhow::Result<u8> {
    let after_up: Vec<String> = argv().into_iter().skip_while(|w| w != "up").skip(1).collect();
    let remote_args = args::remote_up_args(&after_up).map_err(Failure::Usage)?;
    let ssh = Ssh::from_env().map_err(remote_failure)?;
    if !up.foreground {
        return hand_over(lab, &ssh, up.host, up.json);
    }
    let program = remote_program(&ssh, up.host)?;
    let control = signals::control()?;
    let cancel = || signals::interrupted(&control);
    let _teardown = signals::Finishing::hold();
    let mut session = Session::start(&ssh, up.host, &program, &remote_args, Stdio::inherit())
        .map_err(remote_failure)?;
    let instance = session.wait_up(UP_LIMIT, &cancel).map_err(remote_failure)?;
    let holds = Holds::new(lab.state());
    let held = held_record(up.host, instance)?;
    if up.hold.is_some() {
        holds.save(&up.host.file_tag(), &held).map_err(remote_failure)?;
    }
    // As a local foreground stack: it goes down whatever happens to the output.
    let printed = print_up(&held, up.json, true);
    let ended = match &printed {
        Ok(()) => hold_until_asked(&mut session, &cancel),
        Err(_) => Ok(()),
    };
    let _ = holds.forget(&up.host.file_tag(), &held.id);
    if let Some(log) = up.hold {
        let _ = std::fs::remove_file(log);
    }
    ended?;
    session.close().map_err(remote_failure)?;
    printed.map(|()| OK)
}

/// Keeps the session until Ctrl-C or SIGTERM (`stack down` of a held stack) or its end
/// (the stack taken down there, or the path to it lost).
fn hold_until_asked(session: &mut Session, cancel: &dyn Fn() -> bool) -> anyhow::Result<()> {
    while !cancel() {
        // Samples and other events are for a runner; here only the end matters.
        session.next(Duration::from_millis(200)).map_err(remote_failure)?;
        if session.ended() {
            break;
        }
    }
    Ok(())
}

fn held_record(host: &Host, instance: Value) -> anyhow::Result<Held> {
    let event = Event::Up { instance };
    let (id, url) = event.id_and_url().ok_or_else(|| {
        remote_failure(loadlab_remote::Error::Protocol {
            host: host.to_string(),
            reason: "its stack up named no id or url".into(),
        })
    })?;
    let (id, url) = (id.to_string(), url.to_string());
    let Event::Up { instance } = event else { unreachable!("made above") };
    let owner = procfs::identify(std::process::id() as i32)
        .ok_or_else(|| anyhow::anyhow!("reading this process's start time"))?;
    Ok(Held { host: host.to_string(), id, url, owner, instance })
}

fn print_up(held: &Held, json: bool, foreground: bool) -> anyhow::Result<()> {
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
    out.flush()?;
    Ok(())
}

/// Without `--foreground`: the binary is put there first (said on this terminal), then an
/// owner process (this program with `--foreground --hold LOG`, in a process group of its own)
/// holds the session; it prints the instance as one JSON line once the stack is verified,
/// which is when this returns. Its errors until then are in LOG, shown here.
fn hand_over(lab: &Lab, ssh: &Ssh, host: &Host, json: bool) -> anyhow::Result<u8> {
    remote_program(ssh, host)?;
    let dir = lab.state().root().join("remote");
    std::fs::create_dir_all(&dir)?;
    let log = dir.join(format!("{}-{}.log", host.file_tag(), std::process::id()));
    let mut owner = Command::new(std::env::current_exe()?);
    owner.args(argv()).args(["--foreground", "--hold"]).arg(&log);
    if !json {
        owner.arg("--json");
    }
    owner.stdin(Stdio::null()).stdout(Stdio::piped()).stderr(std::fs::File::create(&log)?);
    let mut child = owner.process_group(0).spawn()?;
    let Some(line) = first_line(&mut child)? else {
        // Ctrl-C before the stack was up: the owner goes, its ssh's input closes with it,
        // and the remote takes down what it started.
        let _ = child.kill();
        let _ = child.wait();
        let _ = std::fs::remove_file(&log);
        return Err(Failure::Interrupted("interrupted before the stack was up".into()).into());
    };
    match serde_json::from_str::<Value>(&line) {
        Ok(instance) => {
            // What the remote said until now (that its stack is reachable from the network);
            // then the log goes, so that a killed owner leaves no file (it writes on, unlinked).
            eprint!("{}", std::fs::read_to_string(&log).unwrap_or_default());
            let _ = std::fs::remove_file(&log);
            let held = held_record(host, instance)?;
            // The record names the owner, not this process, which ends now.
            let owner = procfs::identify(child.id() as i32).unwrap_or(held.owner);
            print_up(&Held { owner, ..held }, json, false)?;
            Ok(OK)
        }
        Err(_) => {
            let status = child.wait()?;
            let said = std::fs::read_to_string(&log).unwrap_or_default();
            let _ = std::fs::remove_file(&log);
            eprint!("{said}");
            let code = status.code().unwrap_or(crate::exit::INTERNAL.into()) as u8;
            Ok(if code == OK { crate::exit::INTERNAL } else { code })
        }
    }
}

/// The owner's first line (empty if it ended without one), or `None` on Ctrl-C first: the
/// owner is in a process group of its own, so the terminal's Ctrl-C reaches only this one.
fn first_line(child: &mut std::process::Child) -> anyhow::Result<Option<String>> {
    let stdout = child.stdout.take().expect("piped");
    let (tx, rx) = std::sync::mpsc::channel();
    std::thread::spawn(move || {
        let mut line = String::new();
        let _ = BufReader::new(stdout).read_line(&mut line);
        let _ = tx.send(line);
    });
    let control = signals::control()?;
    loop {
        match rx.recv_timeout(Duration::from_millis(100)) {
            Ok(line) => return Ok(Some(line)),
            Err(_) if signals::interrupted(&control) => return Ok(None),
            Err(std::sync::mpsc::RecvTimeoutError::Timeout) => continue,
            Err(std::sync::mpsc::RecvTimeoutError::Disconnected) => return Ok(Some(String::new())),
        }
    }
}

/// `stack down ID --host H` (or an id only held stacks have; `None`: `--all`): ends the
/// owners' sessions, which takes the stacks down there. `None` when no held stack matches.
pub fn down_held(lab: &Lab, id: Option<&str>, host: Option<&Host>) -> anyhow::Result<Option<u8>> {
    let host_text = host.map(Host::to_string);
    let holds = Holds::new(lab.state());
    let found = match id {
        Some(id) => holds.find(id, host_text.as_deref()),
        None => holds.all(),
    }
    .map_err(remote_failure)?;
    if found.is_empty() {
        return Ok(None);
    }
    for held in &found {
        if !held::release(held, session::CLOSE_LIMIT + Duration::from_secs(5)) {
            return Err(Failure::StackFailed(format!(
                "the owner of {} on {} (pid {}) did not end its session",
                held.id, held.host, held.owner.pid
            ))
            .into());
        }
        outln!("{} down on {}", held.id, held.host)?;
    }
    Ok(Some(OK))
}

/// The held remote stacks, for `stack list`.
pub fn held(lab: &Lab) -> anyhow::Result<Vec<Held>> {
    Holds::new(lab.state()).all().map_err(remote_failure)
}
