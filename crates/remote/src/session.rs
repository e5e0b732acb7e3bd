//! One ssh session running a remote loadlab in its foreground: this side writes the
//! heartbeat (and any [`Order`]) to its stdin and reads its events from its stdout; ending the session (closing
//! its stdin, or this process dying, which closes it too) is what takes the remote stack down.

use std::io::{BufRead, BufReader, Write};
use std::os::unix::process::CommandExt;
use std::process::{Child, Stdio};
use std::sync::mpsc::{self, Receiver, RecvTimeoutError, Sender};
use std::thread::JoinHandle;
use std::time::{Duration, Instant};

use serde_json::Value;

use crate::error::{Error, IoContext, Result};
use crate::host::Host;
use crate::protocol::{Event, Order, HEARTBEAT, HEARTBEAT_EVERY};
use crate::run::SSH_FAILED;
use crate::ssh::{command_line, Ssh};

/// How long a closed session may take to end: the remote's teardown (the lab's SIGTERM
/// grace of 10 s, then SIGKILL) and the way back.
pub const CLOSE_LIMIT: Duration = Duration::from_secs(30);

/// A line of the remote's stdout, or its end.
enum Line {
    Event(Event),
    Garbage(String),
    End,
}

/// A running session. Dropping it closes it (see [`Session::close`]).
pub struct Session {
    host: Host,
    child: Child,
    lines: Receiver<Line>,
    /// To the heartbeat's thread, the one writer of the remote's stdin: orders to write;
    /// dropped, it stops.
    stop: Option<Sender<Order>>,
    heartbeat: Option<JoinHandle<()>>,
    ended: bool,
}

impl Session {
    /// Runs `program args` on `host`; the remote's stderr goes to `stderr` (this process's,
    /// or a log). ssh gets a process group of its own: a Ctrl-C at the terminal reaches this
    /// loadlab, which then closes the session in order, not ssh, which would just drop it.
    pub fn start(
        ssh: &Ssh,
        host: &Host,
        program: &str,
        args: &[String],
        stderr: Stdio,
    ) -> Result<Session> {
        let mut words = vec![program.to_string()];
        words.extend_from_slice(args);
        let mut command = ssh.command(host, &command_line(&words));
        command.stdin(Stdio::piped()).stdout(Stdio::piped()).stderr(stderr).process_group(0);
        let mut child = command.spawn().context(|| format!("starting {command:?}"))?;
        let stdin = child.stdin.take().expect("piped stdin");
        let stdout = child.stdout.take().expect("piped stdout");
        let (stop, stopped) = mpsc::channel();
        let heartbeat = std::thread::spawn(move || beat(stdin, stopped));
        let (tx, lines) = mpsc::channel();
        std::thread::spawn(move || {
            for line in BufReader::new(stdout).lines() {
                let Ok(line) = line else { break };
                let read = match Event::parse(&line) {
                    Ok(event) => Line::Event(event),
                    Err(why) => Line::Garbage(why),
                };
                if tx.send(read).is_err() {
                    return;
                }
            }
            let _ = tx.send(Line::End);
        });
        Ok(Session {
            host: host.clone(),
            child,
            lines,
            stop: Some(stop),
            heartbeat: Some(heartbeat),
            ended: false,
        })
    }

    pub fn host(&self) -> &Host {
        &self.host
    }

    /// The next event within `wait`: `Ok(None)` if none came. The session's end is an
    /// error: the remote loadlab's (its exit code) or ssh's, or `Ok` for a clean end
    /// ([`Session::ended`] then turns true).
    pub fn next(&mut self, wait: Duration) -> Result<Option<Event>> {
        if self.ended {
            return Ok(None);
        }
        match self.lines.recv_timeout(wait) {
            Ok(Line::Event(event)) => Ok(Some(event)),
            Ok(Line::Garbage(reason)) => {
                Err(Error::Protocol { host: self.host.to_string(), reason })
            }
            Ok(Line::End) | Err(RecvTimeoutError::Disconnected) => {
                self.ended = true;
                self.exit_status(CLOSE_LIMIT).map(|()| None)
            }
            Err(RecvTimeoutError::Timeout) => Ok(None),
        }
    }

    /// Writes `order` to the remote, beside the heartbeat; false once the session is closing.
    pub fn order(&self, order: Order) -> bool {
        self.stop.as_ref().is_some_and(|to| to.send(order).is_ok())
    }

    /// Whether the remote's output has ended (the session is over).
    pub fn ended(&self) -> bool {
        self.ended
    }

    /// Waits for the `Up` event: the instance, as `stack up --json` prints it.
    pub fn wait_up(&mut self, limit: Duration, cancel: &dyn Fn() -> bool) -> Result<Value> {
        let deadline = Instant::now() + limit;
        while Instant::now() < deadline && !cancel() {
            match self.next(Duration::from_millis(100))? {
                Some(Event::Up { instance }) => return Ok(instance),
                Some(_) => continue,
                None if self.ended => break,
                None => continue,
            }
        }
        let reason = if cancel() {
            "interrupted before the stack was up".to_string()
        } else if self.ended {
            "the session ended before the stack was up".to_string()
        } else {
            format!("no stack up within {limit:?}")
        };
        Err(Error::Protocol { host: self.host.to_string(), reason })
    }

    /// Ends the session in order: the heartbeat stops and stdin closes, the remote takes
    /// its stack down and exits; waits for that (its `Down` event, then ssh's exit) up to
    /// [`CLOSE_LIMIT`], then kills ssh. Whether the remote said its stack is down.
    pub fn close(mut self) -> Result<bool> {
        self.stop_heartbeat();
        let deadline = Instant::now() + CLOSE_LIMIT;
        let mut down = false;
        while !self.ended && Instant::now() < deadline {
            match self.next(Duration::from_millis(100)) {
                Ok(Some(Event::Down { .. })) => down = true,
                Ok(_) => {}
                Err(Error::Protocol { .. }) => {}
                Err(e) => return Err(e),
            }
        }
        if !self.ended {
            self.ended = true;
            let _ = self.exit_status(Duration::ZERO);
        }
        Ok(down)
    }

    /// Ends a session whose path is lost without waiting for it: ssh is killed (its own
    /// keepalives would take 15 s to give up) and the heartbeat stops; the remote takes its
    /// stack down by itself when no heartbeat comes for [`HEARTBEAT_TIMEOUT`].
    ///
    /// [`HEARTBEAT_TIMEOUT`]: crate::protocol::HEARTBEAT_TIMEOUT
    pub fn abandon(mut self) {
        // Killed first: a heartbeat blocked on a full pipe then fails instead of waiting.
        let _ = self.child.kill();
        let _ = self.child.wait();
        self.ended = true;
        self.stop_heartbeat();
    }

    fn stop_heartbeat(&mut self) {
        drop(self.stop.take());
        if let Some(beat) = self.heartbeat.take() {
            let _ = beat.join();
        }
    }

    /// ssh's exit, within `limit` (killed after): a clean end, ssh's failure, or the remote
    /// loadlab's exit code.
    fn exit_status(&mut self, limit: Duration) -> Result<()> {
        let deadline = Instant::now() + limit;
        let status = loop {
            if let Some(status) = self.child.try_wait().context(|| "waiting for ssh".into())? {
                break status;
            }
            if Instant::now() >= deadline {
                let _ = self.child.kill();
                break self.child.wait().context(|| "waiting for ssh".into())?;
            }
            std::thread::sleep(Duration::from_millis(10));
        };
        match status.code() {
            Some(0) => Ok(()),
            Some(SSH_FAILED) => Err(Error::Ssh {
                host: self.host.to_string(),
                reason: "the session failed (ssh's message is above)".into(),
            }),
            Some(code) => Err(Error::Remote { host: self.host.to_string(), code: code as u8 }),
            None => {
                Err(Error::Ssh { host: self.host.to_string(), reason: format!("ssh {status}") })
            }
        }
    }
}

impl Drop for Session {
    fn drop(&mut self) {
        self.stop_heartbeat();
        if !self.ended {
            // Closing stdin already tells the remote; waiting lets its teardown finish
            // before this process, perhaps, exits.
            let _ = self.exit_status(CLOSE_LIMIT);
        }
    }
}

/// Writes a heartbeat every [`HEARTBEAT_EVERY`], and each order as it comes, until the
/// sender goes; then drops stdin: the remote reads EOF.
fn beat(mut stdin: std::process::ChildStdin, orders: Receiver<Order>) {
    let mut line = HEARTBEAT.to_vec();
    loop {
        if stdin.write_all(&line).and_then(|()| stdin.flush()).is_err() {
            return;
        }
        line = match orders.recv_timeout(HEARTBEAT_EVERY) {
            Ok(order) => order.line().into_bytes(),
            Err(RecvTimeoutError::Timeout) => HEARTBEAT.to_vec(),
            Err(RecvTimeoutError::Disconnected) => return,
        };
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::path::Path;

    /// An "ssh" that runs the remote command line here: the last argument, by `sh -c`.
    fn fake_ssh(dir: &Path) -> Ssh {
        let path = dir.join("fake-ssh");
        std::fs::write(&path, "#!/bin/sh\nfor last; do :; done\nexec sh -c \"$last\"\n").unwrap();
        let mut mode = std::fs::metadata(&path).unwrap().permissions();
        std::os::unix::fs::PermissionsExt::set_mode(&mut mode, 0o755);
        std::fs::set_permissions(&path, mode).unwrap();
        Ssh::parse(Some(&path.to_string_lossy())).unwrap()
    }

    /// A remote end as a script: says up, counts its input's lines until EOF into `count`
    /// (and keeps those that are not heartbeats in `orders`), says down.
    fn remote(dir: &Path) -> String {
        let path = dir.join("remote.sh");
        let (count, orders) = (dir.join("count"), dir.join("orders"));
        let up = Event::Up { instance: serde_json::json!({"id": "nginx-1", "url": "http://b/"}) };
        let down = Event::Down { id: "nginx-1".into() };
        let script = format!(
            "#!/bin/sh\nprintf '%s' '{}'\nn=0\nwhile read l; do n=$((n+1)); \
             [ \"$l\" = heartbeat ] || echo \"$l\" >> {}; done\necho $n > {}\n\
             printf '%s' '{}'\n",
            up.line(),
            orders.display(),
            count.display(),
            down.line()
        );
        std::fs::write(&path, script).unwrap();
        path.to_string_lossy().into_owned()
    }

    fn host() -> Host {
        "ssh://root@b".parse().unwrap()
    }

    #[test]
    fn the_instance_comes_heartbeats_go_and_close_waits_for_down() {
        let dir = tempfile::tempdir().unwrap();
        let ssh = fake_ssh(dir.path());
        let args = vec![remote(dir.path())];
        let mut session = Session::start(&ssh, &host(), "sh", &args, Stdio::null()).unwrap();
        let instance = session.wait_up(Duration::from_secs(10), &|| false).unwrap();
        assert_eq!(instance["id"], "nginx-1");
        std::thread::sleep(Duration::from_millis(1200));
        assert!(session.order(Order::StartProfile));
        std::thread::sleep(Duration::from_millis(1300));
        assert!(session.close().unwrap(), "the remote said down");
        let beats: u32 =
            std::fs::read_to_string(dir.path().join("count")).unwrap().trim().parse().unwrap();
        assert!((3..=5).contains(&beats), "{beats} lines (heartbeats and an order) in 2.5 s");
        let orders = std::fs::read_to_string(dir.path().join("orders")).unwrap();
        assert_eq!(orders, "profile start\n", "the order went as its line");
    }

    #[test]
    fn a_remote_failure_keeps_its_exit_code_and_ssh_s_own_is_told_apart() {
        let dir = tempfile::tempdir().unwrap();
        let ssh = fake_ssh(dir.path());
        let fails = |code: &str| {
            let args = vec!["-c".to_string(), format!("echo refused >&2; exit {code}")];
            let mut session = Session::start(&ssh, &host(), "sh", &args, Stdio::null()).unwrap();
            session.wait_up(Duration::from_secs(10), &|| false).unwrap_err()
        };
        assert!(matches!(fails("4"), Error::Remote { code: 4, .. }), "{}", fails("4"));
        assert!(matches!(fails("255"), Error::Ssh { .. }), "{}", fails("255"));
        let args = vec!["-c".to_string(), "echo Welcome".to_string()];
        let mut session = Session::start(&ssh, &host(), "sh", &args, Stdio::null()).unwrap();
        let garbage = session.wait_up(Duration::from_secs(10), &|| false).unwrap_err();
        assert!(garbage.to_string().contains("\"Welcome\""), "{garbage}");
    }
}
