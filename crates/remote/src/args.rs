//! The remote `stack up`'s arguments, made from the local one's: the knobs pass through as
//! typed (so a knob added to `stack up` works with `--host` without a change here); what is
//! about this side (`--host`, `--json`, `--foreground`) is taken out, and the session's own
//! flags are added. Where the remote listens, without `--listen`: [`reached_at`].

use std::net::IpAddr;

/// Flags of the local `stack up` that take a value and do not go to the remote.
const LOCAL_WITH_VALUE: &[&str] = &["--host", "--hold"];
/// Flags of the local `stack up` without a value that do not go to the remote.
const LOCAL_ALONE: &[&str] = &["--json", "--foreground"];
/// Flags naming local files, which the remote cannot read.
const LOCAL_FILES: &[&str] = &["--config", "--docroot"];

/// The hidden flag of `stack up` that makes it a session's remote end: JSON lines on stdout,
/// the heartbeat on stdin.
pub const SESSION_FLAG: &str = "--session";

/// The hidden flag of `stack sample` that ends it when its stdin closes: over ssh, when the
/// session that asked for it ends (Ctrl-C or a killed loadlab here), instead of sampling on
/// for its whole `--duration` with nobody to print to.
pub const UNTIL_EOF_FLAG: &str = "--until-eof";

/// A command's arguments for the remote loadlab, from the local ones after the program
/// (`stack show ID --host H --json`): `--host` taken out, the rest as typed; a `stack sample`
/// ends with its session ([`UNTIL_EOF_FLAG`]).
pub fn remote_command_args(local: &[String]) -> Vec<String> {
    let mut out = Vec::new();
    let mut words = local.iter();
    while let Some(word) = words.next() {
        match word.split_once('=').map_or(word.as_str(), |(f, _)| f) {
            "--host" if word.contains('=') => {}
            "--host" => {
                words.next();
            }
            _ => out.push(word.clone()),
        }
    }
    if out.windows(2).any(|w| w[0] == "stack" && w[1] == "sample") {
        out.push(UNTIL_EOF_FLAG.to_string());
    }
    out
}

/// `stack up` arguments for the remote, from the local ones after `up` (`nginx --host H
/// --workers 2`); an error names a flag that cannot go there.
pub fn remote_up_args(local: &[String]) -> Result<Vec<String>, String> {
    let mut out = vec!["stack".to_string(), "up".to_string()];
    let mut words = local.iter();
    while let Some(word) = words.next() {
        let flag = word.split_once('=').map_or(word.as_str(), |(f, _)| f);
        if LOCAL_FILES.contains(&flag) {
            return Err(format!(
                "{flag} names a local directory, which a stack on another host cannot read \
                 (copy it there and use {flag} on that host's loadlab)"
            ));
        }
        if LOCAL_WITH_VALUE.contains(&flag) {
            if !word.contains('=') {
                words.next();
            }
            continue;
        }
        if LOCAL_ALONE.contains(&flag) {
            continue;
        }
        out.push(word.clone());
    }
    out.extend(["--foreground".to_string(), SESSION_FLAG.to_string()]);
    Ok(out)
}

/// The address an ssh client reached this host at: `SSH_CONNECTION`'s third field
/// (`client_ip client_port server_ip server_port`), set by sshd for every session.
pub fn reached_at(ssh_connection: Option<&str>) -> Option<IpAddr> {
    ssh_connection?.split_whitespace().nth(2)?.parse().ok()
}

#[cfg(test)]
mod tests {
    use super::*;

    fn words(text: &str) -> Vec<String> {
        text.split_whitespace().map(String::from).collect()
    }

    #[test]
    fn knobs_pass_through_and_this_sides_flags_do_not() {
        let local = words("nginx --host ssh://root@b --workers 2 --json --foreground --gzip on");
        assert_eq!(
            remote_up_args(&local).unwrap().join(" "),
            "stack up nginx --workers 2 --gzip on --foreground --session"
        );
        let eq = words("nginx --host=ssh://b --listen 0.0.0.0 --hold /tmp/log");
        assert_eq!(
            remote_up_args(&eq).unwrap().join(" "),
            "stack up nginx --listen 0.0.0.0 --foreground --session"
        );
    }

    #[test]
    fn other_commands_lose_only_the_host() {
        let local = words("stack show nginx-1 --host ssh://b --json");
        assert_eq!(remote_command_args(&local).join(" "), "stack show nginx-1 --json");
        let local = words("doctor --json --host=ssh://b");
        assert_eq!(remote_command_args(&local).join(" "), "doctor --json");
        let local = words("stack sample nginx-1 -d 60s --host ssh://b");
        assert_eq!(
            remote_command_args(&local).join(" "),
            "stack sample nginx-1 -d 60s --until-eof"
        );
    }

    #[test]
    fn local_directories_are_refused_by_name() {
        let e = remote_up_args(&words("nginx --host ssh://b --config=/tmp/x")).unwrap_err();
        assert!(e.starts_with("--config names a local directory"), "{e}");
        let e = remote_up_args(&words("nginx --docroot /srv/site")).unwrap_err();
        assert!(e.starts_with("--docroot names"), "{e}");
    }

    #[test]
    fn the_address_reached_is_ssh_connections_third_field() {
        let v4 = reached_at(Some("10.215.0.1 51234 10.215.0.2 22")).unwrap();
        assert_eq!(v4.to_string(), "10.215.0.2");
        let v6 = reached_at(Some("fd00::1 51234 fd00::2 22")).unwrap();
        assert_eq!(v6.to_string(), "fd00::2");
        assert_eq!(reached_at(None), None);
        assert_eq!(reached_at(Some("garbage")), None);
    }
}
