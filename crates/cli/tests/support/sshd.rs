//! An sshd of the test's own inside a test host (see [`hosts`](super::hosts)): host and client
//! keys generated into its temp dir, listening only on that host's address, its config, pid
//! file, authorized keys and logs all in the temp dir; and the ssh client config loadlab is
//! given through `LOADLAB_SSH_COMMAND` (the test's key, a known_hosts of the test's own, and
//! the remote loadlab's state and cache directories in the temp dir, sent by `SetEnv`).
//! On drop: the remote lab's instances are taken down, sshd and whatever it left are
//! killed. Needs openssh-server and openssh-client (TEST_PACKAGES).

use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::time::Duration;

use tempfile::TempDir;

use super::hosts::Host;
use super::skip::{self, find_program, Skip};
use super::{loadlab, output_within, wait_until};

/// One sshd in host `b`, reached from host `a`.
pub struct Sshd {
    pub dir: TempDir,
    child: Child,
    addr: String,
    b_netns: String,
}

impl Sshd {
    /// Starts sshd in `b` and waits until `a` can log in; `Err(Skip)` without openssh
    /// (a failure in CI).
    pub fn start(a: &Host, b: &Host) -> Result<Sshd, Skip> {
        let Some(sshd) = find_program("sshd", &["/usr/sbin/sshd"]) else {
            return Err(skip::missing("sshd", "openssh-server"));
        };
        for program in ["ssh", "ssh-keygen"] {
            if find_program(program, &[]).is_none() {
                return Err(skip::missing(program, "openssh-client"));
            }
        }
        let dir = tempfile::Builder::new().prefix("loadlab-sshd-").tempdir().expect("temp dir");
        let d = dir.path();
        for key in ["host_key", "client_key"] {
            let made = Command::new("ssh-keygen")
                .args(["-q", "-t", "ed25519", "-N", "", "-C", "loadlab-test", "-f"])
                .arg(d.join(key))
                .status()
                .expect("ssh-keygen runs");
            assert!(made.success(), "ssh-keygen {key}");
        }
        let read = |name: &str| std::fs::read_to_string(d.join(name)).expect(name);
        std::fs::write(d.join("authorized_keys"), read("client_key.pub")).unwrap();
        let host_key = read("host_key.pub");
        let host_key = host_key.split_whitespace().take(2).collect::<Vec<_>>().join(" ");
        std::fs::write(d.join("known_hosts"), format!("{} {host_key}\n", b.addr)).unwrap();
        std::fs::write(d.join("sshd_config"), sshd_config(d, &b.addr.to_string())).unwrap();
        std::fs::write(d.join("ssh_config"), ssh_config(d)).unwrap();
        // sshd insists on its privilege separation directory, which Debian's service makes
        // at start; an sshd of the machine, if any, uses the same one, so it is left.
        std::fs::create_dir_all("/run/sshd").expect("create /run/sshd");
        let log = std::fs::File::create(d.join("sshd.log")).unwrap();
        let child = b
            .command(&sshd)
            .args(["-D", "-e", "-f"])
            .arg(d.join("sshd_config"))
            .stdin(Stdio::null())
            .stdout(Stdio::null())
            .stderr(log)
            .spawn()
            .expect("start sshd");
        let sshd = Sshd { dir, child, addr: b.addr.to_string(), b_netns: b.netns.clone() };
        let ready = wait_until(Duration::from_secs(15), || {
            let mut ssh = a.command("ssh");
            ssh.args(["-F"]).arg(sshd.dir.path().join("ssh_config"));
            ssh.args(["-o", "BatchMode=yes", &format!("root@{}", sshd.addr), "true"]);
            ssh.stdin(Stdio::null()).stdout(Stdio::null()).stderr(Stdio::null());
            ssh.status().is_ok_and(|s| s.success())
        });
        assert!(ready, "sshd in {} did not let the test in:\n{}", b.netns, sshd.log());
        Ok(sshd)
    }

    /// `ssh://root@B`.
    pub fn url(&self) -> String {
        format!("ssh://root@{}", self.addr)
    }

    /// What `LOADLAB_SSH_COMMAND` is set to.
    pub fn ssh_command(&self) -> String {
        format!("ssh -F {}", self.dir.path().join("ssh_config").display())
    }

    /// As [`Sshd::ssh_command`], with `NAME=VALUE` also set in the remote loadlab's
    /// environment (sshd accepts `LOADLAB_SEARCH_PATH` besides the state and cache).
    pub fn ssh_command_setting(&self, var: &str) -> String {
        let d = self.dir.path();
        let config = ssh_config(d).replace(
            &format!("XDG_CACHE_HOME={}/cache-b", d.display()),
            &format!("XDG_CACHE_HOME={}/cache-b {var}", d.display()),
        );
        let path = d.join("ssh_config-setting");
        std::fs::write(&path, config).expect("write an ssh config");
        format!("ssh -F {}", path.display())
    }

    /// The listening sshd's pid: the one process of B's that is not the test's doing.
    pub fn pid(&self) -> i32 {
        self.child.id() as i32
    }

    /// The remote loadlab's state directory (in B).
    pub fn remote_state(&self) -> PathBuf {
        self.dir.path().join("state-b")
    }

    /// The remote loadlab's cache of copied binaries (in B).
    pub fn remote_cache(&self) -> PathBuf {
        self.dir.path().join("cache-b/loadlab")
    }

    /// The local loadlab's state directory (in A).
    pub fn local_state(&self) -> PathBuf {
        self.dir.path().join("state-a")
    }

    /// `loadlab ARGS` in host `a`, with the test's ssh and A's state directory.
    pub fn loadlab_in(&self, a: &Host, args: &[&str]) -> Command {
        let mut command = loadlab();
        command.args(args);
        command.env("LOADLAB_SSH_COMMAND", self.ssh_command());
        command.env("LOADLAB_STATE_DIR", self.local_state());
        a.within(&command)
    }

    pub fn log(&self) -> String {
        std::fs::read_to_string(self.dir.path().join("sshd.log")).unwrap_or_default()
    }
}

/// What `LOADLAB_SSH_COMMAND` is set to for reaching every one of `sshds`: a `Host` block per
/// address, each with its own key, known host and remote directories (the config written into
/// the first one's temp dir).
pub fn ssh_command_for_all(sshds: &[&Sshd]) -> String {
    let config: String = sshds
        .iter()
        .map(|s| ssh_config(s.dir.path()).replacen("Host *", &format!("Host {}", s.addr), 1))
        .collect();
    let path = sshds[0].dir.path().join("ssh_config-all");
    std::fs::write(&path, config).expect("write an ssh config");
    format!("ssh -F {}", path.display())
}

impl Drop for Sshd {
    /// What a failed test left in B goes: its stacks (through B's own state), then sshd.
    fn drop(&mut self) {
        let mut down = loadlab();
        down.args(["stack", "down", "--all"]).env("LOADLAB_STATE_DIR", self.remote_state());
        let mut inside = Command::new("ip");
        inside.args(["netns", "exec", &self.b_netns]).arg(down.get_program());
        inside.args(down.get_args()).env("LOADLAB_STATE_DIR", self.remote_state());
        let _ = output_within(inside, Duration::from_secs(60));
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

fn sshd_config(dir: &Path, addr: &str) -> String {
    let d = dir.display();
    format!(
        "ListenAddress {addr}\nPort 22\nHostKey {d}/host_key\nPidFile {d}/sshd.pid\n\
         AuthorizedKeysFile {d}/authorized_keys\nPermitRootLogin prohibit-password\n\
         StrictModes no\nPasswordAuthentication no\nKbdInteractiveAuthentication no\n\
         UsePAM no\nPrintMotd no\n\
         AcceptEnv LOADLAB_STATE_DIR XDG_CACHE_HOME LOADLAB_SEARCH_PATH\n"
    )
}

fn ssh_config(dir: &Path) -> String {
    let d = dir.display();
    format!(
        "Host *\n  IdentityFile {d}/client_key\n  IdentitiesOnly yes\n  \
         UserKnownHostsFile {d}/known_hosts\n  GlobalKnownHostsFile /dev/null\n  \
         StrictHostKeyChecking yes\n  UpdateHostKeys no\n  \
         SetEnv LOADLAB_STATE_DIR={d}/state-b XDG_CACHE_HOME={d}/cache-b\n"
    )
}
