//! Files of requests, read before the run: URL lists (`--urls`, [`url_list`]), access logs
//! (`--replay`, [`access_log`]) and h2load's timing scripts (`--timing-script`,
//! [`timing_script`]). Each reader turns its file into the engine's terms ([`crate::mix::Mix`],
//! [`crate::replay::Replay`]), or says which line is wrong and what to write instead
//! ([`crate::EngineError::Input`]).
//!
//! Files are read a line at a time into one reused buffer, so a large log costs what is kept
//! of it (its distinct requests and two numbers a line), not its size.

pub mod access_log;
pub mod timing_script;
pub mod url_list;

use std::io::BufRead;
use std::path::Path;

use percent_encoding::{percent_encode, AsciiSet, CONTROLS};

use crate::{EngineError, Target};

/// Bytes a request target cannot carry as they are (RFC 9112 section 3.2: no whitespace or
/// controls; RFC 3986 allows only ASCII): percent-encoded, as a browser would send them.
const NOT_IN_TARGET: &AsciiSet = &CONTROLS.add(b' ').add(b'"');

/// The error for `file` (and `line`, when one is to blame).
pub(crate) fn error(file: &str, line: Option<usize>, what: impl Into<String>) -> EngineError {
    EngineError::Input { file: file.to_string(), line, what: what.into() }
}

/// Calls `each(number, bytes)` for every line of `path` (1-based, its end of line removed:
/// LF or CRLF), stopping at the first error `each` returns.
pub(crate) fn for_each_line(
    path: &Path,
    mut each: impl FnMut(usize, &[u8]) -> Result<(), EngineError>,
) -> Result<(), EngineError> {
    for_each_line_ended(path, |n, line, _| each(n, line))
}

/// As [`for_each_line`], also telling whether the line ended with an end of line: only the
/// file's last line can lack one, as when a server is still writing it.
pub(crate) fn for_each_line_ended(
    path: &Path,
    mut each: impl FnMut(usize, &[u8], bool) -> Result<(), EngineError>,
) -> Result<(), EngineError> {
    let name = path.display().to_string();
    let file =
        std::fs::File::open(path).map_err(|e| error(&name, None, format!("cannot read: {e}")))?;
    let mut reader = std::io::BufReader::new(file);
    let mut buf = Vec::with_capacity(512);
    let mut number = 0;
    loop {
        buf.clear();
        let n = reader
            .read_until(b'\n', &mut buf)
            .map_err(|e| error(&name, Some(number + 1), format!("cannot read: {e}")))?;
        if n == 0 {
            return Ok(());
        }
        number += 1;
        let ended = buf.ends_with(b"\n");
        let line = buf.strip_suffix(b"\n").unwrap_or(&buf);
        let line = line.strip_suffix(b"\r").unwrap_or(line);
        each(number, line, ended)?;
    }
}

/// Why a request target was refused.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Refused {
    /// Neither `/path` nor an `http://` or `https://` URL.
    NotATarget,
    /// `*` (OPTIONS *).
    Asterisk,
    /// An absolute URL naming another scheme, host or port than the target's.
    OtherHost,
}

/// Whether an absolute URL naming another host than the target's is refused (URL lists, logs)
/// or sent to the target all the same (h2load's timing scripts, which use the first URI's
/// host for every line).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum OtherHosts {
    Refuse,
    Rewrite,
}

/// The origin-form request target (path and query) for `raw`: a path as it is, or the path of
/// an absolute URL (RFC 9112 section 3.2.2) of the target's scheme, host and port. Bytes no
/// request line may carry are percent-encoded.
pub(crate) fn origin_form(
    raw: &[u8],
    target: &Target,
    other: OtherHosts,
) -> Result<String, Refused> {
    if raw.first() == Some(&b'/') {
        return Ok(percent_encode(raw, NOT_IN_TARGET).to_string());
    }
    if raw == b"*" {
        return Err(Refused::Asterisk);
    }
    let text = std::str::from_utf8(raw).map_err(|_| Refused::NotATarget)?;
    let lower = text.get(..8).unwrap_or(text).to_ascii_lowercase();
    if !(lower.starts_with("http://") || lower.starts_with("https://")) {
        return Err(Refused::NotATarget);
    }
    let url = url::Url::parse(text).map_err(|_| Refused::NotATarget)?;
    let same = url.scheme() == if target.tls { "https" } else { "http" }
        && url.host_str().is_some_and(|h| h.eq_ignore_ascii_case(&target.host))
        && url.port_or_known_default() == Some(target.port);
    if !same && other == OtherHosts::Refuse {
        return Err(Refused::OtherHost);
    }
    let mut path = url.path().to_string();
    if let Some(q) = url.query() {
        path.push('?');
        path.push_str(q);
    }
    Ok(path)
}

/// `name` relative to the directory of `file` (a body file named in a URL list), unless it is
/// absolute.
pub(crate) fn beside(file: &Path, name: &str) -> std::path::PathBuf {
    let name = Path::new(name);
    match file.parent() {
        Some(dir) if name.is_relative() => dir.join(name),
        _ => name.to_path_buf(),
    }
}

/// What the readers' tests share: a file holding `text` in a temporary directory of its own,
/// and the target their requests go to.
#[cfg(test)]
pub(crate) mod testing {
    pub fn file(name: &str, text: &str) -> (tempfile::TempDir, std::path::PathBuf) {
        let dir = tempfile::tempdir().expect("a temporary directory");
        let path = dir.path().join(name);
        std::fs::write(&path, text).expect("write the file");
        (dir, path)
    }

    pub fn target() -> crate::Target {
        crate::Target::parse("http://127.0.0.1:8080/").expect("a valid URL")
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn targets_are_paths_or_urls_of_the_target() {
        let t = testing::target();
        let ok = |raw: &str, other| origin_form(raw.as_bytes(), &t, other);
        assert_eq!(ok("/a?b=1", OtherHosts::Refuse).unwrap(), "/a?b=1");
        assert_eq!(ok("/caf\u{e9} x", OtherHosts::Refuse).unwrap(), "/caf%C3%A9%20x");
        assert_eq!(ok("http://127.0.0.1:8080/p?q", OtherHosts::Refuse).unwrap(), "/p?q");
        assert_eq!(ok("HTTP://127.0.0.1:8080", OtherHosts::Refuse).unwrap(), "/");
        assert_eq!(ok("http://example.com/p", OtherHosts::Refuse), Err(Refused::OtherHost));
        assert_eq!(ok("https://127.0.0.1:8080/p", OtherHosts::Refuse), Err(Refused::OtherHost));
        assert_eq!(ok("http://example.com/p", OtherHosts::Rewrite).unwrap(), "/p");
        assert_eq!(ok("*", OtherHosts::Refuse), Err(Refused::Asterisk));
        assert_eq!(ok("p", OtherHosts::Refuse), Err(Refused::NotATarget));
        assert_eq!(ok("ftp://x/", OtherHosts::Refuse), Err(Refused::NotATarget));
    }
}
