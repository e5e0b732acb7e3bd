//! Installing a stack's missing Debian packages on the host it runs on (`stack up --host ...
//! --install-packages`): the Makefile's `apt_install` logic (update, then install without
//! recommends, non-interactive), as root or through `sudo -n` (never a password prompt: the
//! session has no terminal). Its output goes to stderr: stdout is the session's protocol.

use std::process::{Command, Stdio};

/// The command that installs `packages`, as this user (`root`: no sudo).
pub fn install_command(packages: &[&str], root: bool) -> Command {
    let list = crate::ssh::command_line(packages);
    let sudo = if root { "" } else { "sudo -n " };
    let script = format!(
        "{sudo}apt-get update >&2 && {sudo}env DEBIAN_FRONTEND=noninteractive apt-get install \
         -y --no-install-recommends {list} >&2"
    );
    let mut command = Command::new("sh");
    command.args(["-c", &script]).stdin(Stdio::null()).stdout(Stdio::null());
    command
}

/// Whether this process runs as root: the effective uid, the third field of `Uid:` in
/// /proc/self/status.
pub fn is_root() -> bool {
    std::fs::read_to_string("/proc/self/status").is_ok_and(|s| {
        s.lines().any(|l| l.starts_with("Uid:") && l.split_whitespace().nth(2) == Some("0"))
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    fn script(command: &Command) -> String {
        command.get_args().nth(1).unwrap().to_string_lossy().into_owned()
    }

    #[test]
    fn root_installs_directly_and_others_through_sudo_without_a_prompt() {
        let root = script(&install_command(&["nginx", "php-fpm"], true));
        assert_eq!(
            root,
            "apt-get update >&2 && env DEBIAN_FRONTEND=noninteractive apt-get install -y \
             --no-install-recommends nginx php-fpm >&2"
        );
        let user = script(&install_command(&["hitch"], false));
        assert!(user.starts_with("sudo -n apt-get update >&2 && sudo -n env "), "{user}");
    }
}
