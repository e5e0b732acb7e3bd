//! One ssh session running a remote loadlab in its foreground: this side writes the
//! heartbeat to its stdin and reads its events from its stdout; ending the session (closing
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
use crate::protocol::{Event, HEARTBEAT, HEARTBEAT_EVERY};
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
    stop: Option<Sender<()>>,
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

/// Writes a heartbeat every [`HEARTBEAT_EVERY`] until told to stop (or the sender goes),
/// then drops stdin: the remote reads EOF.
fn beat(mut stdin: std::process::ChildStdin, stop: Receiver<()>) {
    loop {
        if stdin.write_all(HEARTBEAT).and_then(|()| stdin.flush()).is_err() {
            return;
        }
        match stop.recv_timeout(HEARTBEAT_EVERY) {
            Err(RecvTimeoutError::Timeout) => continue,
            _ => return,
        }
    }
}
