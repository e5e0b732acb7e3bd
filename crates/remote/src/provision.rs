//! The loadlab binary on the remote host: the one already there when it is this version,
//! else a copy of this very binary in a per-user cache there
//! (`${XDG_CACHE_HOME:-~/.cache}/loadlab/VERSION-HASH/loadlab`, written under a temporary
//! name and renamed, so that a cut copy is never run). A copy is refused, with the reason,
//! where it could not run: another architecture, or an older glibc than this one (a binary
//! needs the glibc symbol versions it was linked against; newer glibcs keep the old ones).

use std::io::Read;
use std::path::PathBuf;
use std::process::Stdio;
use std::time::Duration;

use sha2::{Digest, Sha256};

use crate::error::{Error, IoContext, Result};
use crate::host::Host;
use crate::protocol::{Event, Hello};
use crate::run::finish;
use crate::ssh::Ssh;

/// A probe or a copy over a slow link still ends within this.
const LIMIT: Duration = Duration::from_secs(120);

/// This binary: what it is, where it is, and the cache directory's name for it.
#[derive(Clone, Debug)]
pub struct Local {
    pub hello: Hello,
    pub exe: PathBuf,
    /// `VERSION-HASH`: a new build gets a new directory, never half of an old one.
    pub tag: String,
}

impl Local {
    /// The running binary, of version `version` (the cli's `CARGO_PKG_VERSION`).
    pub fn this(version: &str) -> Result<Local> {
        let exe = std::env::current_exe().context(|| "finding this loadlab binary".into())?;
        let mut file =
            std::fs::File::open(&exe).context(|| format!("reading {}", exe.display()))?;
        let mut hasher = Sha256::new();
        let mut buf = vec![0; 1 << 16];
        loop {
            let n = file.read(&mut buf).context(|| format!("reading {}", exe.display()))?;
            if n == 0 {
                break;
            }
            hasher.update(&buf[..n]);
        }
        let hash: String = hasher.finalize()[..6].iter().map(|b| format!("{b:02x}")).collect();
        Ok(Local { hello: hello(version), exe, tag: format!("{version}-{hash}") })
    }
}

/// What `loadlab remote hello` says of this binary and machine.
pub fn hello(version: &str) -> Hello {
    let glibc = std::process::Command::new("getconf")
        .arg("GNU_LIBC_VERSION")
        .output()
        .ok()
        .and_then(|o| glibc_of(&String::from_utf8_lossy(&o.stdout)));
    Hello { version: version.into(), arch: std::env::consts::ARCH.into(), glibc }
}

/// `2.36` out of getconf's `glibc 2.36`.
fn glibc_of(getconf: &str) -> Option<String> {
    getconf.trim().strip_prefix("glibc ").map(|v| v.trim().to_string())
}

/// How the remote's loadlab was found.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Found {
    /// This binary, copied there earlier.
    Cached,
    /// `loadlab` on the remote's PATH, of this version.
    OnPath,
    /// Copied just now.
    Copied,
}

/// The loadlab to run on a host.
#[derive(Clone, Debug)]
pub struct Remote {
    /// The program as the remote shell runs it: `loadlab` or an absolute path.
    pub program: String,
    pub found: Found,
}

/// What one ssh round trip learns of the remote.
#[derive(Debug, Default, PartialEq)]
struct Probe {
    cached: Option<String>,
    /// `Some(None)`: a loadlab on PATH that could not say hello (an older one).
    on_path: Option<Option<Hello>>,
    arch: String,
    glibc: Option<String>,
}

/// The cache directory for `tag`, as the remote shell expands it.
fn cache_dir(tag: &str) -> String {
    format!("\"${{XDG_CACHE_HOME:-$HOME/.cache}}/loadlab/{tag}\"")
}

fn probe_script(tag: &str) -> String {
    format!(
        "c={dir}; [ -x \"$c/loadlab\" ] && printf 'cached %s\\n' \"$c/loadlab\"; \
         if command -v loadlab >/dev/null 2>&1; then printf 'path '; \
         loadlab remote hello 2>/dev/null || echo; fi; \
         printf 'uname %s\\n' \"$(uname -m)\"; \
         printf 'getconf %s\\n' \"$(getconf GNU_LIBC_VERSION 2>/dev/null)\"",
        dir = cache_dir(tag)
    )
}

fn parse_probe(text: &str) -> Probe {
    let mut probe = Probe::default();
    for line in text.lines() {
        let (key, value) = line.split_once(' ').unwrap_or((line, ""));
        match key {
            "cached" => probe.cached = Some(value.to_string()),
            "path" => {
                probe.on_path = Some(match Event::parse(value) {
                    Ok(Event::Hello(h)) => Some(h),
                    _ => None,
                })
            }
            "uname" => probe.arch = value.trim().to_string(),
            "getconf" => probe.glibc = glibc_of(value),
            _ => {}
        }
    }
    probe
}

/// The loadlab to use, or `None` when this one must be copied; `Err` with the reason when
/// this one could not run there.
fn decide(probe: &Probe, this: &Hello) -> std::result::Result<Option<Remote>, String> {
    if let Some(path) = &probe.cached {
        return Ok(Some(Remote { program: path.clone(), found: Found::Cached }));
    }
    if let Some(Some(there)) = &probe.on_path {
        if there.version == this.version {
            return Ok(Some(Remote { program: "loadlab".into(), found: Found::OnPath }));
        }
    }
    if probe.arch != this.arch {
        return Err(format!(
            "its architecture is {} and this loadlab is built for {}",
            if probe.arch.is_empty() { "unknown" } else { &probe.arch },
            this.arch
        ));
    }
    match (&probe.glibc, &this.glibc) {
        (None, Some(here)) => Err(format!("it has no glibc and this loadlab needs glibc {here}")),
        (Some(there), Some(here)) if version(there) < version(here) => Err(format!(
            "its glibc is {there} and this loadlab needs {here} or newer (install loadlab \
             there, built on that host)"
        )),
        _ => Ok(None),
    }
}

fn version(text: &str) -> Vec<u32> {
    text.split('.').map(|p| p.parse().unwrap_or(0)).collect()
}

/// Finds or puts this binary on `host`; `note` hears of a copy, once made (for stderr).
pub fn ensure(ssh: &Ssh, host: &Host, local: &Local, note: &mut dyn FnMut(&str)) -> Result<Remote> {
    let probe =
        finish(ssh.command(host, &in_sh(&probe_script(&local.tag))), Stdio::null(), host, LIMIT)?;
    let probe = parse_probe(&probe.stdout);
    let reason = match decide(&probe, &local.hello) {
        Ok(Some(remote)) => return Ok(remote),
        Ok(None) => match &probe.on_path {
            Some(Some(h)) => format!("its loadlab is {}", h.version),
            Some(None) => "its loadlab is older than `remote hello`".into(),
            None => "no loadlab on its PATH".into(),
        },
        Err(reason) => return Err(Error::Incompatible { host: host.to_string(), reason }),
    };
    let copied = copy(ssh, host, local)?;
    let mb = std::fs::metadata(&local.exe).map_or(0, |m| m.len() >> 20);
    note(&format!(
        "copied this loadlab {} ({mb} MB) to {host}, {}: {reason}",
        local.hello.version, copied.program
    ));
    Ok(copied)
}

/// `script` run by `sh`, whatever the remote user's login shell (fish, csh) makes of `;`,
/// `$(...)` and `${X:-Y}`: it only has to pass three words on.
fn in_sh(script: &str) -> String {
    crate::ssh::command_line(&["sh", "-c", script])
}

/// Copies this binary into the remote's cache: a temporary name, then a rename.
fn copy(ssh: &Ssh, host: &Host, local: &Local) -> Result<Remote> {
    let script = format!(
        "c={dir}; t=\"$c/.loadlab.$$\"; mkdir -p \"$c\" && cat > \"$t\" && chmod 0755 \"$t\" \
         && mv -f \"$t\" \"$c/loadlab\" && printf '%s\\n' \"$c/loadlab\" || {{ rm -f \"$t\"; \
         exit 1; }}",
        dir = cache_dir(&local.tag)
    );
    let exe =
        std::fs::File::open(&local.exe).context(|| format!("reading {}", local.exe.display()))?;
    let done = finish(ssh.command(host, &in_sh(&script)), Stdio::from(exe), host, LIMIT)?;
    let path = done.stdout.trim();
    if !done.status.success() || path.is_empty() {
        return Err(Error::Ssh {
            host: host.to_string(),
            reason: format!("copying loadlab failed: {}", done.stderr.trim()),
        });
    }
    Ok(Remote { program: path.to_string(), found: Found::Copied })
}

#[cfg(test)]
mod tests {
    use super::*;

    fn this() -> Hello {
        Hello { version: "0.1.0".into(), arch: "x86_64".into(), glibc: Some("2.36".into()) }
    }

    fn probe(text: &str) -> Probe {
        parse_probe(text)
    }

    #[test]
    fn the_cached_copy_then_the_same_version_on_path_then_a_copy() {
        let cached = probe("cached /root/.cache/loadlab/0.1.0-ab/loadlab\nuname x86_64\n");
        let found = decide(&cached, &this()).unwrap().unwrap();
        assert_eq!(
            (found.program.as_str(), found.found),
            ("/root/.cache/loadlab/0.1.0-ab/loadlab", Found::Cached)
        );
        let same =
            format!("path {}uname x86_64\ngetconf glibc 2.36\n", Event::Hello(this()).line());
        assert_eq!(decide(&probe(&same), &this()).unwrap().unwrap().found, Found::OnPath);
        let mut older = this();
        older.version = "0.0.9".into();
        let other =
            format!("path {}uname x86_64\ngetconf glibc 2.36\n", Event::Hello(older).line());
        assert!(decide(&probe(&other), &this()).unwrap().is_none(), "another version: copy");
        let none = probe("path \nuname x86_64\ngetconf glibc 2.41\n");
        assert_eq!(none.on_path, Some(None));
        assert!(decide(&none, &this()).unwrap().is_none(), "newer glibc runs this binary");
    }

    #[test]
    fn another_architecture_or_an_older_glibc_is_refused_with_the_reason() {
        let arm = decide(&probe("uname aarch64\ngetconf glibc 2.36\n"), &this()).unwrap_err();
        assert_eq!(arm, "its architecture is aarch64 and this loadlab is built for x86_64");
        let old = decide(&probe("uname x86_64\ngetconf glibc 2.31\n"), &this()).unwrap_err();
        assert!(old.starts_with("its glibc is 2.31 and this loadlab needs 2.36"), "{old}");
        let musl = decide(&probe("uname x86_64\ngetconf \n"), &this()).unwrap_err();
        assert!(musl.contains("no glibc"), "{musl}");
        assert!(version("2.9") < version("2.36"), "compared as numbers, not text");
    }

    #[test]
    fn this_binary_is_named_by_version_and_hash() {
        let local = Local::this("9.9.9").unwrap();
        let (version, hash) = local.tag.split_once('-').unwrap();
        assert_eq!((version, hash.len()), ("9.9.9", 12));
        assert_eq!(local.hello.arch, std::env::consts::ARCH);
    }
}
