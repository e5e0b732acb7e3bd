//! The system's ssh, as the user runs it: `ssh`, or `LOADLAB_SSH_COMMAND` split as a shell
//! splits words (git's `GIT_SSH_COMMAND`), never in a terminal and never asking for a
//! password. Authentication is the user's own: keys, agent, `~/.ssh/config`, known_hosts.

use std::process::Command;

use crate::error::{Error, Result};
use crate::host::Host;

/// The environment variable that replaces `ssh`, e.g. `ssh -F /path/config`.
pub const SSH_COMMAND_VAR: &str = "LOADLAB_SSH_COMMAND";

/// How ssh is started.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Ssh {
    words: Vec<String>,
}

impl Ssh {
    /// `LOADLAB_SSH_COMMAND` when set and not empty, else `ssh`.
    pub fn from_env() -> Result<Ssh> {
        Ssh::parse(std::env::var(SSH_COMMAND_VAR).ok().as_deref())
    }

    /// The ssh command `var` names (split as a shell splits words), or `ssh` when unset.
    pub fn parse(var: Option<&str>) -> Result<Ssh> {
        let Some(text) = var.filter(|t| !t.trim().is_empty()) else {
            return Ok(Ssh { words: vec!["ssh".into()] });
        };
        let words = shlex::split(text)
            .filter(|w| !w.is_empty())
            .ok_or_else(|| Error::BadSshCommand(format!("{text:?} is not a word list")))?;
        Ok(Ssh { words })
    }

    /// ssh to `host` running `remote` (a shell command line; see [`command_line`]).
    ///
    /// `BatchMode=yes`: a missing key fails at once instead of prompting a terminal the
    /// user may not be watching. `-T`: no tty, so the remote's stdin and stdout are plain
    /// pipes (the heartbeat and the JSON lines) and a cut session is an EOF, not a hang-up.
    /// `ServerAliveInterval`: this side notices a dead path within about 15 s, as the
    /// remote side does by the missing heartbeat.
    pub fn command(&self, host: &Host, remote: &str) -> Command {
        let mut command = Command::new(&self.words[0]);
        command.args(&self.words[1..]);
        command.args(["-T", "-o", "BatchMode=yes"]);
        command.args(["-o", "ServerAliveInterval=5", "-o", "ServerAliveCountMax=3"]);
        if let Some(port) = host.port {
            command.args(["-p", &port.to_string()]);
        }
        command.arg(host.destination()).arg(remote);
        command
    }
}

/// `words` quoted for the remote user's shell (ssh passes the command as one string).
pub fn command_line<S: AsRef<str>>(words: &[S]) -> String {
    let quoted: Vec<String> = words
        .iter()
        .map(|w| match shlex::try_quote(w.as_ref()) {
            Ok(q) => q.into_owned(),
            // Only a NUL byte cannot be quoted; no argument of loadlab's has one.
            Err(_) => w.as_ref().replace('\0', ""),
        })
        .collect();
    quoted.join(" ")
}

#[cfg(test)]
mod tests {
    use super::*;

    fn args(command: &Command) -> Vec<String> {
        command.get_args().map(|a| a.to_string_lossy().into_owned()).collect()
    }

    #[test]
    fn ssh_by_default_and_the_variable_split_like_a_shell() {
        assert_eq!(Ssh::parse(None).unwrap().words, ["ssh"]);
        assert_eq!(Ssh::parse(Some("  ")).unwrap().words, ["ssh"]);
        let ssh = Ssh::parse(Some("ssh -F '/tmp/my dir/config' -i k")).unwrap();
        assert_eq!(ssh.words, ["ssh", "-F", "/tmp/my dir/config", "-i", "k"]);
        let e = Ssh::parse(Some("ssh -F 'unclosed")).unwrap_err().to_string();
        assert!(e.starts_with("LOADLAB_SSH_COMMAND: "), "{e}");
    }

    #[test]
    fn the_command_never_prompts_and_takes_the_port() {
        let ssh = Ssh::parse(Some("ssh -F c")).unwrap();
        let host: Host = "ssh://root@10.215.0.2:2222".parse().unwrap();
        let command = ssh.command(&host, "loadlab remote hello");
        assert_eq!(command.get_program(), "ssh");
        let a = args(&command);
        assert_eq!(&a[..2], ["-F", "c"]);
        assert!(a.windows(2).any(|w| w == ["-o", "BatchMode=yes"]), "{a:?}");
        assert!(a.contains(&"-T".to_string()), "{a:?}");
        assert!(a.windows(2).any(|w| w == ["-p", "2222"]), "{a:?}");
        assert_eq!(&a[a.len() - 2..], ["root@10.215.0.2", "loadlab remote hello"]);
    }

    #[test]
    fn remote_words_survive_the_remote_shell() {
        let line = command_line(&["loadlab", "stack", "up", "it's", "a b", "$HOME"]);
        assert_eq!(
            shlex::split(&line).unwrap(),
            ["loadlab", "stack", "up", "it's", "a b", "$HOME"]
        );
    }
}
