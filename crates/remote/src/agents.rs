//! The start of `bench --agent-hosts ssh://a,ssh://b` (the first piece: no flag uses it yet):
//! agent I of a test started on a host through ssh, running the same load as agent 0 with its
//! own index, its secret passed so that it appears in no process's argv on either machine.
//!
//! The secret travels on the session's stdin: the remote shell reads its first line into
//! `LOADLAB_TOKEN` (a shell builtin, so no process of its own with it in argv) and execs
//! loadlab, which takes it from the environment as every agent may. ssh's own argv holds only
//! the command line, and the remote shell's `sh -c` line only the variable's name. stdin stays
//! open afterwards and is closed when this side drops the agent or dies, so that the session
//! ends with it; the remote agent itself stops when agent 0's rendezvous connection is gone.

use std::io::Write;
use std::process::{Child, ChildStdin, Stdio};

use crate::error::{Error, IoContext, Result};
use crate::host::Host;
use crate::ssh::{command_line, Ssh};

/// The environment variable the remote agent reads its secret from.
pub const TOKEN_VAR: &str = "LOADLAB_TOKEN";

/// The remote agent's arguments: `bench`, the load exactly as agent 0's command line gives it,
/// then its place in the test. Its output is its own part, as JSON, for the log only.
pub fn agent_args(load: &[String], index: usize, of: usize, rendezvous: &str) -> Vec<String> {
    let mut args = vec!["bench".to_string()];
    args.extend_from_slice(load);
    for (flag, value) in [
        ("--agents", of.to_string()),
        ("--agent", index.to_string()),
        ("--rendezvous", rendezvous.into()),
    ] {
        args.push(flag.into());
        args.push(value);
    }
    args.extend(["--format".into(), "json".into(), "--quiet".into()]);
    args
}

/// The remote shell's command line: the secret from stdin's first line into the environment,
/// then `program args` in the shell's place.
pub fn remote_line(program: &str, args: &[String]) -> String {
    let mut words = vec![program.to_string()];
    words.extend_from_slice(args);
    format!("IFS= read -r {TOKEN_VAR} && export {TOKEN_VAR} && exec {}", command_line(&words))
}

/// An agent running on another host, its session held open.
pub struct RemoteAgent {
    pub host: Host,
    child: Child,
    /// Held open: closing it (drop, or this process's death) ends the session's input.
    stdin: Option<ChildStdin>,
}

impl RemoteAgent {
    /// Starts `program args` on `host` through `ssh` and hands it `token` on stdin. The
    /// remote's stdout and stderr go to `output` and `errors` (a log, or null).
    pub fn start(
        ssh: &Ssh,
        host: &Host,
        program: &str,
        args: &[String],
        token: &[u8],
        (output, errors): (Stdio, Stdio),
    ) -> Result<RemoteAgent> {
        if token.contains(&b'\n') {
            return Err(Error::Usage("the agents' secret must be one line".into()));
        }
        let mut command = ssh.command(host, &remote_line(program, args));
        command.stdin(Stdio::piped()).stdout(output).stderr(errors);
        let mut child = command.spawn().context(|| format!("starting {command:?}"))?;
        let mut stdin = child.stdin.take().expect("piped stdin");
        let mut line = token.to_vec();
        line.push(b'\n');
        if let Err(e) = stdin.write_all(&line).and_then(|()| stdin.flush()) {
            let _ = child.kill();
            let _ = child.wait();
            return Err(Error::Ssh { host: host.to_string(), reason: e.to_string() });
        }
        Ok(RemoteAgent { host: host.clone(), child, stdin: Some(stdin) })
    }

    /// Waits for the session to end; the remote agent's exit code (ssh's 255: ssh failed).
    pub fn wait(mut self) -> Result<Option<i32>> {
        drop(self.stdin.take());
        let status = self.child.wait().context(|| format!("waiting for {}", self.host))?;
        Ok(status.code())
    }
}

impl Drop for RemoteAgent {
    /// A session still running when its agent is dropped (agent 0 failed early) is ended: its
    /// input closed, ssh killed and reaped.
    fn drop(&mut self) {
        drop(self.stdin.take());
        if matches!(self.child.try_wait(), Ok(None)) {
            let _ = self.child.kill();
            let _ = self.child.wait();
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::process::Command;

    #[test]
    fn the_agent_runs_agent_0s_load_with_its_own_place() {
        let load: Vec<String> = ["http://t/", "-R", "100", "-d", "5s"].map(String::from).into();
        let args = agent_args(&load, 2, 3, "10.0.0.1:7070");
        assert_eq!(&args[..6], ["bench", "http://t/", "-R", "100", "-d", "5s"]);
        let tail = &args[6..];
        assert!(tail.windows(2).any(|w| w == ["--agent", "2"]), "{tail:?}");
        assert!(tail.windows(2).any(|w| w == ["--agents", "3"]), "{tail:?}");
        assert!(tail.windows(2).any(|w| w == ["--rendezvous", "10.0.0.1:7070"]), "{tail:?}");
    }

    /// The remote line, run by a local shell as sshd would, gives the program the secret in
    /// its environment from stdin, and the secret is in no argv.
    #[test]
    fn the_secret_reaches_the_environment_and_no_argv() {
        let secret = "s3cret with spaces and 'quotes'";
        let line = remote_line("printenv", &[TOKEN_VAR.to_string()]);
        assert!(!line.contains(secret));
        let mut sh = Command::new("sh");
        sh.args(["-c", &line]).stdin(Stdio::piped()).stdout(Stdio::piped());
        let mut child = sh.spawn().expect("sh runs");
        let mut stdin = child.stdin.take().unwrap();
        writeln!(stdin, "{secret}").unwrap();
        drop(stdin);
        let out = child.wait_with_output().expect("sh ends");
        assert!(out.status.success());
        assert_eq!(String::from_utf8_lossy(&out.stdout).trim_end(), secret);
        let ssh = Ssh::parse(None).unwrap();
        let host: Host = "ssh://root@10.215.0.2".parse().unwrap();
        let command = ssh.command(&host, &line);
        assert!(command.get_args().all(|a| !a.to_string_lossy().contains(secret)));
    }
}
