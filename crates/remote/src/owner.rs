//! This side of `--host`: `stack up --host` holds the session in the foreground (of the
//! command itself, or of its owner process, `--hold LOG`) or hands it to an owner process and
//! returns; `stack down --host` of a held stack ends its owner's session; the other `--host`
//! commands run the remote loadlab's own and pass its exit code through. Nothing here prints:
//! what is to be said comes back to the caller (or through its `print` and `note`).

use std::io::{BufRead, BufReader};
use std::os::unix::process::CommandExt;
use std::path::Path;
use std::process::{Child, Command, Stdio};
use std::sync::mpsc::RecvTimeoutError;
use std::time::Duration;

use loadlab_lab::{procfs, StateDir};
use serde_json::Value;

use crate::error::{Error, IoContext, Result};
use crate::held::{self, Held, Holds};
use crate::protocol::Event;
use crate::{args, provision, session, Host, Session, Ssh};

/// A stack's start and verify there, with a first MariaDB datadir, stay within this.
pub const UP_LIMIT: Duration = Duration::from_secs(300);

/// The loadlab to run on `host`, copied there if need be (`note` says so).
pub fn program(
    ssh: &Ssh,
    host: &Host,
    version: &str,
    note: &mut dyn FnMut(&str),
) -> Result<String> {
    let local = provision::Local::this(version)?;
    Ok(provision::ensure(ssh, host, &local, note)?.program)
}

/// `loadlab ARGV` (its `--host` left out) on `host`, its output on this terminal: its exit
/// code. ssh's own failure is [`Error::Ssh`].
pub fn pass_through(
    host: &Host,
    argv: &[String],
    version: &str,
    note: &mut dyn FnMut(&str),
) -> Result<u8> {
    let ssh = Ssh::from_env()?;
    let mut words = vec![program(&ssh, host, version, note)?];
    words.extend(args::remote_command_args(argv));
    let line = crate::ssh::command_line(&words);
    // stdin a pipe held until ssh ends: when this loadlab dies (Ctrl-C, kill), the remote
    // reads EOF, and a `stack sample` there stops (args::UNTIL_EOF_FLAG).
    let mut child =
        ssh.command(host, &line).stdin(Stdio::piped()).spawn().context(|| "running ssh".into())?;
    let held = child.stdin.take();
    let status = child.wait().context(|| "waiting for ssh".into())?;
    drop(held);
    match status.code() {
        Some(crate::run::SSH_FAILED) | None => {
            Err(Error::Ssh { host: host.to_string(), reason: format!("ssh {status}") })
        }
        Some(code) => Ok(code as u8),
    }
}

/// What `stack up --host` was asked.
pub struct Up<'a> {
    pub host: &'a Host,
    /// The command line's words after the program, as typed.
    pub argv: &'a [String],
    /// This loadlab's version (the one wanted there).
    pub version: &'a str,
    /// Set in the owner process: its stderr log, removed when it ends.
    pub hold: Option<&'a Path>,
}

impl Up<'_> {
    /// The remote `stack up`'s arguments: the words after `up`, as typed.
    fn remote_args(&self) -> Result<Vec<String>> {
        let after_up: Vec<String> =
            self.argv.iter().skip_while(|w| *w != "up").skip(1).cloned().collect();
        args::remote_up_args(&after_up).map_err(Error::Usage)
    }
}

/// `stack up --host --foreground`: the session started, its stack up and verified and shown
/// by `print`, then held until `cancel` (Ctrl-C or SIGTERM: `stack down` of a held stack) or
/// its end (the stack taken down there, or the path to it lost); then closed. With `hold`
/// the record that `stack list` and `stack down` read is kept meanwhile. A failed `print`
/// (a closed pipe) takes the stack down and is returned.
pub fn hold(
    state: &StateDir,
    up: &Up,
    cancel: &dyn Fn() -> bool,
    note: &mut dyn FnMut(&str),
    print: &mut dyn FnMut(&Held) -> std::io::Result<()>,
) -> Result<()> {
    let remote_args = up.remote_args()?;
    let ssh = Ssh::from_env()?;
    let program = program(&ssh, up.host, up.version, note)?;
    let mut session = Session::start(&ssh, up.host, &program, &remote_args, Stdio::inherit())?;
    let instance = session.wait_up(UP_LIMIT, cancel)?;
    let holds = Holds::new(state);
    let held = held_record(up.host, instance, std::process::id())?;
    if up.hold.is_some() {
        holds.save(&up.host.file_tag(), &held)?;
    }
    // As a local foreground stack: it goes down whatever happens to the output.
    let printed = print(&held).context(|| "writing the instance".into());
    let ended = match &printed {
        Ok(()) => hold_until_asked(&mut session, cancel),
        Err(_) => Ok(()),
    };
    let _ = holds.forget(&up.host.file_tag(), &held.id);
    if let Some(log) = up.hold {
        let _ = std::fs::remove_file(log);
    }
    ended?;
    session.close()?;
    printed
}

/// Keeps the session until `cancel` or its end.
fn hold_until_asked(session: &mut Session, cancel: &dyn Fn() -> bool) -> Result<()> {
    while !cancel() {
        // Samples and other events are for a runner; here only the end matters.
        session.next(Duration::from_millis(200))?;
        if session.ended() {
            break;
        }
    }
    Ok(())
}

/// The record of a remote instance whose session process `pid` holds.
fn held_record(host: &Host, instance: Value, pid: u32) -> Result<Held> {
    let event = Event::Up { instance };
    let (id, url) = event.id_and_url().ok_or_else(|| Error::Protocol {
        host: host.to_string(),
        reason: "its stack up named no id or url".into(),
    })?;
    let (id, url) = (id.to_string(), url.to_string());
    let Event::Up { instance } = event else { unreachable!("made above") };
    let owner = procfs::identify(pid as i32).ok_or_else(|| Error::Io {
        context: format!("reading the start time of pid {pid}"),
        source: std::io::Error::other("no such process"),
    })?;
    Ok(Held { host: host.to_string(), id, url, owner, instance })
}

/// How a hand-over to an owner process ended.
pub enum HandedOver {
    /// The stack is up and verified there, held by the owner; `said` is what the remote
    /// said meanwhile (that its stack is reachable from the network), for this terminal.
    Held { held: Held, said: String },
    /// The owner ended without a stack, with this exit code (never 0) after saying `said`.
    Failed { code: u8, said: String },
}

/// Without `--foreground`: the binary is put there first (`note` says so), then an owner
/// process (this program with `--foreground --hold LOG --json`, in a process group of its
/// own) holds the session; it prints the instance as one JSON line once the stack is
/// verified, which is when this returns. Its errors until then are in LOG, returned.
/// `cancel` before that: [`Error::Interrupted`], the owner ended (its ssh's input closes
/// with it, and the remote takes down what it started).
pub fn hand_over(
    state: &StateDir,
    up: &Up,
    json: bool,
    cancel: &dyn Fn() -> bool,
    note: &mut dyn FnMut(&str),
) -> Result<HandedOver> {
    up.remote_args()?;
    let ssh = Ssh::from_env()?;
    program(&ssh, up.host, up.version, note)?;
    let dir = state.root().join("remote");
    std::fs::create_dir_all(&dir).context(|| format!("creating {}", dir.display()))?;
    let log = dir.join(format!("{}-{}.log", up.host.file_tag(), std::process::id()));
    let me = std::env::current_exe().context(|| "finding this program".into())?;
    let mut owner = Command::new(me);
    owner.args(up.argv).args(["--foreground", "--hold"]).arg(&log);
    if !json {
        owner.arg("--json");
    }
    let log_file = std::fs::File::create(&log).context(|| format!("creating {}", log.display()))?;
    owner.stdin(Stdio::null()).stdout(Stdio::piped()).stderr(log_file);
    let mut child = owner.process_group(0).spawn().context(|| "starting the owner".into())?;
    let said = |log: &Path| {
        let said = std::fs::read_to_string(log).unwrap_or_default();
        // Then the log goes, so that a killed owner leaves no file (it writes on, unlinked).
        let _ = std::fs::remove_file(log);
        said
    };
    let Some(line) = first_line(&mut child, cancel) else {
        let _ = child.kill();
        let _ = child.wait();
        let _ = std::fs::remove_file(&log);
        return Err(Error::Interrupted("interrupted before the stack was up".into()));
    };
    match serde_json::from_str::<Value>(&line) {
        Ok(instance) => {
            let said = said(&log);
            // The record names the owner, not this process, which ends now.
            let held = held_record(up.host, instance, std::process::id())?;
            let owner = procfs::identify(child.id() as i32).unwrap_or(held.owner);
            Ok(HandedOver::Held { held: Held { owner, ..held }, said })
        }
        Err(_) => {
            let status = child.wait().context(|| "waiting for the owner".into())?;
            let code = status.code().unwrap_or(1) as u8;
            Ok(HandedOver::Failed { code: if code == 0 { 1 } else { code }, said: said(&log) })
        }
    }
}

/// The owner's first line (empty if it ended without one), or `None` on `cancel` first: the
/// owner is in a process group of its own, so the terminal's Ctrl-C reaches only this one.
fn first_line(child: &mut Child, cancel: &dyn Fn() -> bool) -> Option<String> {
    let stdout = child.stdout.take().expect("piped");
    let (tx, rx) = std::sync::mpsc::channel();
    std::thread::spawn(move || {
        let mut line = String::new();
        let _ = BufReader::new(stdout).read_line(&mut line);
        let _ = tx.send(line);
    });
    loop {
        match rx.recv_timeout(Duration::from_millis(100)) {
            Ok(line) => return Some(line),
            Err(_) if cancel() => return None,
            Err(RecvTimeoutError::Timeout) => continue,
            Err(RecvTimeoutError::Disconnected) => return Some(String::new()),
        }
    }
}

/// `stack down ID --host H` (or an id only held stacks have; `None`: every held stack): ends
/// the owners' sessions, which takes the stacks down there, each told to `released` once
/// gone. `false` when no held stack matches. An owner that does not end its session within
/// the session's close limit and a margin is [`Error::OwnerStuck`].
pub fn release(
    state: &StateDir,
    id: Option<&str>,
    host: Option<&Host>,
    released: &mut dyn FnMut(&Held) -> std::io::Result<()>,
) -> Result<bool> {
    let host_text = host.map(Host::to_string);
    let holds = Holds::new(state);
    let found = match id {
        Some(id) => holds.find(id, host_text.as_deref()),
        None => holds.all(),
    }?;
    for held in &found {
        if !held::release(held, session::CLOSE_LIMIT + Duration::from_secs(5)) {
            return Err(Error::OwnerStuck(format!(
                "the owner of {} on {} (pid {}) did not end its session",
                held.id, held.host, held.owner.pid
            )));
        }
        released(held).context(|| "writing".into())?;
    }
    Ok(!found.is_empty())
}
