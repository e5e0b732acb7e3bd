//! A lab host named by `ssh://[user@]host[:port]`: parsed once, with a clear error for
//! anything else, and handed to ssh as its destination and `-p`.

use std::fmt;
use std::str::FromStr;

use crate::error::Error;

/// Where a remote stack runs. The host name is passed to ssh as is, so that the user's
/// `~/.ssh/config` aliases (`Host lab1`) work.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Host {
    pub user: Option<String>,
    /// A name, an IPv4 address, or an IPv6 address without its brackets.
    pub host: String,
    pub port: Option<u16>,
}

impl Host {
    /// ssh's destination: `user@host` or `host`.
    pub fn destination(&self) -> String {
        match &self.user {
            Some(user) => format!("{user}@{}", self.host),
            None => self.host.clone(),
        }
    }

    /// A name for this host usable in a file name (the local records of held stacks).
    pub fn file_tag(&self) -> String {
        self.to_string()
            .trim_start_matches("ssh://")
            .chars()
            .map(|c| if c.is_ascii_alphanumeric() || c == '.' || c == '-' { c } else { '_' })
            .collect()
    }
}

impl fmt::Display for Host {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str("ssh://")?;
        if let Some(user) = &self.user {
            write!(f, "{user}@")?;
        }
        if self.host.contains(':') {
            write!(f, "[{}]", self.host)?;
        } else {
            f.write_str(&self.host)?;
        }
        if let Some(port) = self.port {
            write!(f, ":{port}")?;
        }
        Ok(())
    }
}

impl FromStr for Host {
    type Err = Error;

    fn from_str(text: &str) -> Result<Host, Error> {
        let bad = |why: &str| {
            Error::BadHost(format!("{text:?}: {why} (expected ssh://[user@]host[:port])"))
        };
        let rest = text.strip_prefix("ssh://").ok_or_else(|| bad("not an ssh:// URL"))?;
        let rest = rest.strip_suffix('/').unwrap_or(rest);
        if rest.contains(['/', '?', '#']) {
            return Err(bad("a path, query or fragment means nothing here"));
        }
        let (user, at) = match rest.rsplit_once('@') {
            Some((user, at)) if valid_user(user) => (Some(user.to_string()), at),
            Some(_) => return Err(bad("bad user name")),
            None => (None, rest),
        };
        let (host, port) = split_port(at).ok_or_else(|| bad("bad port"))?;
        let is_v6 = host.parse::<std::net::Ipv6Addr>().is_ok();
        if !(is_v6 || valid_name(host)) {
            return Err(bad("bad host name"));
        }
        Ok(Host { user, host: host.to_string(), port })
    }
}

/// `host`, `host:port`, `[v6]` or `[v6]:port`; `None` for a port that is not one.
fn split_port(at: &str) -> Option<(&str, Option<u16>)> {
    let (host, port) = if let Some(inner) = at.strip_prefix('[') {
        let (host, after) = inner.split_once(']')?;
        let port = match after {
            "" => None,
            after => Some(after.strip_prefix(':')?),
        };
        (host, port)
    } else {
        match at.split_once(':') {
            Some((host, port)) => (host, Some(port)),
            None => (at, None),
        }
    };
    let port = match port {
        Some(p) => Some(p.parse::<u16>().ok().filter(|p| *p != 0)?),
        None => None,
    };
    Some((host, port))
}

/// A host name ssh will not read as an option: letters, digits, `.`, `-`, `_`, not leading `-`.
fn valid_name(host: &str) -> bool {
    !host.is_empty()
        && !host.starts_with('-')
        && host.chars().all(|c| c.is_ascii_alphanumeric() || matches!(c, '.' | '-' | '_'))
}

fn valid_user(user: &str) -> bool {
    !user.is_empty()
        && !user.starts_with('-')
        && user.chars().all(|c| c.is_ascii_alphanumeric() || matches!(c, '.' | '-' | '_'))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn host(text: &str) -> Host {
        text.parse().unwrap_or_else(|e| panic!("{text}: {e}"))
    }

    #[test]
    fn user_host_and_port_are_read_and_written_back() {
        let h = host("ssh://root@10.215.0.2:2222");
        assert_eq!(h.user.as_deref(), Some("root"));
        assert_eq!((h.host.as_str(), h.port), ("10.215.0.2", Some(2222)));
        assert_eq!(h.destination(), "root@10.215.0.2");
        assert_eq!(h.to_string(), "ssh://root@10.215.0.2:2222");
        let alias = host("ssh://lab1/");
        assert_eq!((alias.destination(), alias.user, alias.port), ("lab1".into(), None, None));
        let v6 = host("ssh://[::1]:22");
        assert_eq!((v6.host.as_str(), v6.port), ("::1", Some(22)));
        assert_eq!(v6.to_string(), "ssh://[::1]:22");
        assert_eq!(host("ssh://u@[fd00::2]").destination(), "u@fd00::2");
    }

    #[test]
    fn anything_else_is_refused_with_the_form_expected() {
        for bad in [
            "root@host",
            "http://host",
            "ssh://",
            "ssh://host:0",
            "ssh://host:99999",
            "ssh://host:x",
            "ssh://host/path",
            "ssh://-oProxyCommand=x",
            "ssh://-u@host",
            "ssh://a b",
            "ssh://[::1",
            "ssh://[::1]x",
            "ssh://@host",
        ] {
            let e = bad.parse::<Host>().expect_err(bad).to_string();
            assert!(e.contains("expected ssh://[user@]host[:port]"), "{bad}: {e}");
        }
    }

    #[test]
    fn file_tags_keep_hosts_apart() {
        assert_eq!(host("ssh://root@10.0.0.1:22").file_tag(), "root_10.0.0.1_22");
        assert_ne!(host("ssh://a@b").file_tag(), host("ssh://b").file_tag());
    }
}
