//! `bench --agent-hosts ssh://a,ssh://b`: agent I of a test started on a host through ssh,
//! running the same load as agent 0 with its own index, its secret passed so that it appears
//! in no process's argv on either machine.
//!
//! The secret travels on the session's stdin: the remote shell reads its first line into
//! `LOADLAB_TOKEN` (a shell builtin, so no process of its own with it in argv) and execs
//! loadlab, which takes it from the environment as every agent may. ssh's own argv holds only
//! the command line, and the remote shell's `sh -c` line only the variable's name. stdin stays
//! open afterwards and is closed when this side drops the agent or dies; the remote agent
//! watches it ([`EOF_FLAG`], [`exit_on_eof`]) and exits when it closes, so that no agent is
//! left running on a host whose agent 0 or session is gone.

use std::io::{Read, Write};
use std::net::{IpAddr, ToSocketAddrs, UdpSocket};
use std::os::unix::process::CommandExt;
use std::process::{Child, ChildStdin, Stdio};
use std::sync::{Arc, Mutex};
use std::thread::JoinHandle;
use std::time::{Duration, Instant};

use crate::error::{Error, IoContext, Result};
use crate::host::Host;
use crate::ssh::{command_line, Ssh};

/// The environment variable the remote agent reads its secret from.
pub const TOKEN_VAR: &str = "LOADLAB_TOKEN";

/// The hidden flag of `bench` that makes it exit when its stdin closes (its session is gone).
pub const EOF_FLAG: &str = "--until-eof";

/// Flags of agent 0's command line that are about agent 0 only, with a value: its place and
/// rendezvous (each remote agent gets its own), its files and output, its verdict, and what
/// names this machine's own addresses or CPUs (another host has others).
const LOCAL_WITH_VALUE: &[&str] = &[
    "--source-ips",
    "--pin",
    "--agents",
    "--agent",
    "--agent-hosts",
    "--rendezvous",
    "--token-file",
    "--agent-weight",
    "--on-agent-loss",
    "--merged-hdr-log",
    "--hdr-log",
    "--format",
    "-e",
    "--latency-csv",
    "--slo",
];
/// The same, without a value.
const LOCAL_ALONE: &[&str] = &["-q", "--quiet", EOF_FLAG];

/// The load of agent 0's command line (its words after the program, as typed): the words
/// after `bench`, without what is agent 0's own ([`LOCAL_WITH_VALUE`], [`LOCAL_ALONE`]).
pub fn load_words(argv: &[String]) -> Vec<String> {
    let mut out = Vec::new();
    let mut words = argv.iter().skip_while(|w| *w != "bench").skip(1);
    while let Some(word) = words.next() {
        let flag = word.split_once('=').map_or(word.as_str(), |(f, _)| f);
        if LOCAL_WITH_VALUE.contains(&flag) {
            if !word.contains('=') {
                words.next();
            }
        } else if !LOCAL_ALONE.contains(&flag) {
            out.push(word.clone());
        }
    }
    out
}

/// The remote agent's arguments: `bench`, the load exactly as agent 0's command line gives it,
/// then its place in the test. Its output is its own part, as JSON, for the log only; it ends
/// with its session.
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
    args.extend(["--format".into(), "json".into(), "--quiet".into(), EOF_FLAG.into()]);
    args
}

/// The remote shell's command line: the secret from stdin's first line into the environment,
/// then `program args` in the shell's place.
pub fn remote_line(program: &str, args: &[String]) -> String {
    let mut words = vec![program.to_string()];
    words.extend_from_slice(args);
    format!("IFS= read -r {TOKEN_VAR} && export {TOKEN_VAR} && exec {}", command_line(&words))
}

/// The address of this machine's interface that routes to `host`: where its agent can reach
/// agent 0. A UDP socket's connect sends nothing; it only asks the kernel for the route and
/// so the source address. A name this machine cannot resolve (an alias of `~/.ssh/config`)
/// has no route here: `--rendezvous` must say.
pub fn local_address_towards(host: &Host) -> Result<IpAddr> {
    let unknown = |why: String| {
        Error::Usage(format!(
            "--agent-hosts {host}: {why}, so the address its agent would reach this one at is \
             unknown: give --rendezvous HOST:PORT"
        ))
    };
    let there = (host.host.as_str(), host.port.unwrap_or(22))
        .to_socket_addrs()
        .ok()
        .and_then(|mut a| a.next())
        .ok_or_else(|| unknown("its name does not resolve here".into()))?;
    let any = if there.is_ipv4() { "0.0.0.0:0" } else { "[::]:0" };
    let socket = UdpSocket::bind(any).context(|| "a socket to find a route".into())?;
    socket.connect(there).map_err(|e| unknown(format!("no route to it ({e})")))?;
    Ok(socket.local_addr().context(|| "the route's source address".into())?.ip())
}

/// Exits with `code` once stdin is at its end: the session that started this agent is gone
/// (its ssh, or agent 0 holding it, died), and nobody would ever read this agent's result.
/// A thread of its own, blocked in read(2) the whole run: the load never waits on it.
pub fn exit_on_eof(code: i32) {
    std::thread::spawn(move || {
        let mut stdin = std::io::stdin().lock();
        let mut sink = [0u8; 256];
        loop {
            match stdin.read(&mut sink) {
                Ok(0) => break,
                Err(e) if e.kind() != std::io::ErrorKind::Interrupted => break,
                _ => {}
            }
        }
        std::process::exit(code);
    });
}

/// The last bytes of an output kept: enough for its error lines, bounded whatever it prints.
const TAIL: usize = 16 << 10;

/// An output of the remote agent, read as it comes so that its pipe never fills.
struct Tail {
    text: Arc<Mutex<Vec<u8>>>,
    reader: Option<JoinHandle<()>>,
}

impl Tail {
    fn read(from: impl Read + Send + 'static) -> Tail {
        let text = Arc::new(Mutex::new(Vec::new()));
        let into = text.clone();
        let reader = std::thread::spawn(move || {
            let mut from = from;
            let mut buf = [0u8; 4096];
            while let Ok(n @ 1..) = from.read(&mut buf) {
                let mut text = into.lock().unwrap_or_else(|e| e.into_inner());
                text.extend_from_slice(&buf[..n]);
                let over = text.len().saturating_sub(TAIL);
                text.drain(..over);
            }
        });
        Tail { text, reader: Some(reader) }
    }

    /// All of it, once the writer has closed its end.
    fn finish(mut self) -> String {
        if let Some(reader) = self.reader.take() {
            let _ = reader.join();
        }
        let text = self.text.lock().unwrap_or_else(|e| e.into_inner());
        String::from_utf8_lossy(&text).into_owned()
    }
}

/// How a remote agent's session ended.
#[derive(Debug, Clone)]
pub struct Ended {
    pub host: Host,
    /// The remote agent's exit code; ssh's 255: ssh failed; `None`: ssh was killed here.
    pub code: Option<i32>,
    pub stdout: String,
    pub stderr: String,
}

impl Ended {
    /// Its last stderr line: what it said of its end.
    pub fn said(&self) -> &str {
        self.stderr.lines().rev().map(str::trim).find(|l| !l.is_empty()).unwrap_or("")
    }
}

/// An agent running on another host, its session held open.
pub struct RemoteAgent {
    pub host: Host,
    child: Child,
    /// Held open: closing it (drop, or this process's death) ends the session's input.
    stdin: Option<ChildStdin>,
    outputs: Option<(Tail, Tail)>,
}

impl RemoteAgent {
    /// Starts `program args` on `host` through `ssh` and hands it `token` on stdin. ssh is in
    /// a process group of its own: the terminal's Ctrl-C reaches agent 0 only, which stops
    /// the others through the rendezvous (they say so in their exit code).
    pub fn start(
        ssh: &Ssh,
        host: &Host,
        program: &str,
        args: &[String],
        token: &[u8],
    ) -> Result<RemoteAgent> {
        if token.contains(&b'\n') {
            return Err(Error::Usage("the agents' secret must be one line".into()));
        }
        let mut command = ssh.command(host, &remote_line(program, args));
        command.stdin(Stdio::piped()).stdout(Stdio::piped()).stderr(Stdio::piped());
        let mut child =
            command.process_group(0).spawn().context(|| format!("starting {command:?}"))?;
        let mut stdin = child.stdin.take().expect("piped stdin");
        let outputs = (
            Tail::read(child.stdout.take().expect("piped stdout")),
            Tail::read(child.stderr.take().expect("piped stderr")),
        );
        let mut agent =
            RemoteAgent { host: host.clone(), child, stdin: None, outputs: Some(outputs) };
        let mut line = token.to_vec();
        line.push(b'\n');
        // A session that ended already (ssh refused, or the remote shell exited) cannot take
        // the line: its input is left closed, and its end (exit code, last words) says why.
        if stdin.write_all(&line).and_then(|()| stdin.flush()).is_ok() {
            agent.stdin = Some(stdin);
        }
        Ok(agent)
    }

    /// Whether its session has ended (the remote agent, or ssh, is gone).
    pub fn has_ended(&mut self) -> bool {
        !matches!(self.child.try_wait(), Ok(None))
    }

    /// Waits up to `limit` for the session to end by itself (the remote agent ends once it
    /// has sent agent 0 its part); past it, its input is closed and ssh killed.
    pub fn finish(mut self, limit: Duration) -> Ended {
        let deadline = Instant::now() + limit;
        while !self.has_ended() && Instant::now() < deadline {
            std::thread::sleep(Duration::from_millis(20));
        }
        self.end();
        let code = self.child.wait().ok().and_then(|s| s.code());
        let (stdout, stderr) = match self.outputs.take() {
            Some((out, err)) => (out.finish(), err.finish()),
            None => Default::default(),
        };
        Ended { host: self.host.clone(), code, stdout, stderr }
    }

    /// Its input closed (the remote agent exits, [`exit_on_eof`]), ssh killed if still there.
    fn end(&mut self) {
        drop(self.stdin.take());
        if matches!(self.child.try_wait(), Ok(None)) {
            let _ = self.child.kill();
        }
    }
}

impl Drop for RemoteAgent {
    /// A session still running when its agent is dropped (agent 0 failed early) is ended and
    /// reaped.
    fn drop(&mut self) {
        self.end();
        let _ = self.child.wait();
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

    #[test]
    fn the_others_get_agent_0s_load_without_what_is_agent_0s_own() {
        let argv: Vec<String> = "bench http://t/ -c 6 --agents 3 --agent-hosts ssh://a,ssh://b \
             --rendezvous=10.0.0.1:7 --token-file /t --format json -q --hdr-log h -H x:y \
             --slo p99<1s --merged-hdr-log=m -e e.csv --pin 0-1 --source-ips=10.0.0.2 -d 5s"
            .split_whitespace()
            .map(String::from)
            .collect();
        assert_eq!(load_words(&argv).join(" "), "http://t/ -c 6 -H x:y -d 5s");
        let args = agent_args(&load_words(&argv), 1, 3, "10.0.0.1:7");
        assert_eq!(args.last().map(String::as_str), Some(EOF_FLAG), "{args:?}");
    }

    #[test]
    fn the_route_to_a_host_has_a_local_source_and_an_unknown_name_asks_for_rendezvous() {
        let here: Host = "ssh://root@127.0.0.1".parse().unwrap();
        assert!(local_address_towards(&here).unwrap().is_loopback());
        let alias: Host = "ssh://no-such-host.invalid".parse().unwrap();
        let e = local_address_towards(&alias).unwrap_err().to_string();
        assert!(e.contains("give --rendezvous HOST:PORT"), "{e}");
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
