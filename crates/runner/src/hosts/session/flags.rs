//! A suite's lab stack as the remote `stack up`'s words: the knobs written back as the flags
//! `stack up` parses them from, so the stack there is the one the suite describes.

use loadlab_lab::{Knobs, OnOff, Stack};

/// `NAME --flag value...` for `stack up` on another host, with `--install-packages` when
/// `install` (its apt logic, there); an error names a knob that cannot go there (a directory
/// of this machine's).
pub fn up_words(stack: &Stack, knobs: &Knobs, install: bool) -> Result<Vec<String>, String> {
    if knobs.config.is_some() || knobs.docroot.is_some() {
        return Err(format!(
            "{}: config and docroot name directories of this machine, which a stack on \
             another host cannot read",
            stack.name
        ));
    }
    let mut words = vec![stack.name.to_string()];
    let mut flag = |name: &str, value: String| {
        words.push(format!("--{name}"));
        words.push(value);
    };
    let on_off = |v: OnOff| v.to_string();
    if let Some(port) = knobs.port {
        flag("port", port.to_string());
    }
    if let Some(addr) = knobs.listen {
        flag("listen", addr.to_string());
    }
    flag("keepalive", on_off(knobs.keepalive));
    if let Some(t) = knobs.keepalive_timeout {
        flag("keepalive-timeout", t.to_string());
    }
    if let Some(n) = knobs.keepalive_requests {
        flag("keepalive-requests", n.to_string());
    }
    flag("gzip", on_off(knobs.gzip));
    if let Some(v) = knobs.opcache {
        flag("opcache", on_off(v));
    }
    if let Some(v) = knobs.db {
        flag("db", on_off(v));
    }
    if let Some(n) = knobs.workers {
        flag("workers", n.to_string());
    }
    if let Some(n) = knobs.php_workers {
        flag("php-workers", n.to_string());
    }
    flag("access-log", on_off(knobs.access_log));
    if let Some(cpus) = &knobs.cpus {
        flag("cpus", cpus.to_string());
    }
    if let Some(net) = &knobs.net {
        flag("net", net.clone());
    }
    flag("tls", on_off(knobs.tls));
    flag("http2", on_off(knobs.http2));
    if knobs.excimer.is_on() {
        // Its PHP tiers readied for PHP's own stacks, as `stack up --profile` does.
        words.push("--profile".into());
    }
    if install {
        words.push("--install-packages".into());
    }
    Ok(words)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn knobs_become_the_flags_stack_up_reads_and_local_directories_are_refused() {
        let stack = loadlab_lab::catalog::stack("nginx-fpm").unwrap();
        let knobs = Knobs {
            workers: Some(2),
            php_workers: Some(7),
            keepalive_timeout: Some("15s".parse().unwrap()),
            cpus: Some("0-1".parse().unwrap()),
            net: Some("lan-100mbit".into()),
            ..Knobs::default()
        };
        let words = up_words(stack, &knobs, false).unwrap().join(" ");
        for expected in [
            "nginx-fpm ",
            "--workers 2",
            "--php-workers 7",
            "--keepalive-timeout 15s",
            "--cpus 0,1",
            "--net lan-100mbit",
            "--tls off",
        ] {
            assert!(words.contains(expected), "{expected:?} not in {words}");
        }
        let mut own = knobs.clone();
        own.listen = "0.0.0.0".parse().ok();
        assert!(up_words(stack, &own, false).unwrap().join(" ").contains("--listen 0.0.0.0"));
        assert!(!words.contains("--listen"), "the remote's default: where ssh reached it");
        assert!(!words.contains("--install-packages"));
        assert!(!words.contains("--profile"));
        let excimer = Knobs { excimer: OnOff::On, ..knobs.clone() };
        assert!(up_words(stack, &excimer, false).unwrap().contains(&"--profile".to_string()));
        let installing = up_words(stack, &knobs, true).unwrap();
        assert_eq!(installing.last().map(String::as_str), Some("--install-packages"));
        own.docroot = Some("/srv/site".into());
        let e = up_words(stack, &own, false).unwrap_err();
        assert!(e.contains("cannot read"), "{e}");
    }
}
