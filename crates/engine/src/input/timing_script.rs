//! h2load's timing scripts (`--timing-script FILE`, h2load's `--timing-script-file`): each line
//! is two fields separated by a tab, the time offset from the start of the run in milliseconds
//! (microsecond resolution: `12.345`) and the URI. As in h2load, the scheme, host and port of
//! the URIs do not matter: every request goes to the run's target (its path and query are
//! kept), and the method is the run's (`-m`). Unlike h2load, where each client plays the whole
//! script, the script plays once over the run's connections, as a replayed log does.
//!
//! A script is written by hand or by a tool, so a wrong line is an error naming it, not a line
//! skipped; offsets never decrease, since h2load sends the lines in order.

use std::path::Path;

use super::{error, for_each_line, origin_form, OtherHosts, Refused};
use crate::replay::{Builder, Replay};
use crate::{EngineError, Target};

const SHAPE: &str = "a line is the offset in milliseconds, a tab, and the URI (12.5<TAB>/path)";

/// Reads the timing script at `path` for requests to `target`.
pub fn read(path: &Path, target: &Target) -> Result<Replay, EngineError> {
    let file = path.display().to_string();
    let mut script = Builder::default();
    let mut last = (0.0f64, 0usize);
    for_each_line(path, |n, bytes| {
        let bad = |what: String| error(&file, Some(n), what);
        let line = std::str::from_utf8(bytes).map_err(|_| bad("not UTF-8 text".into()))?;
        if line.trim().is_empty() {
            return Ok(());
        }
        script.read();
        let (offset, uri) =
            line.split_once('\t').ok_or_else(|| bad(format!("no tab in the line; {SHAPE}")))?;
        let ms = offset
            .trim()
            .parse::<f64>()
            .ok()
            .filter(|ms| ms.is_finite() && *ms >= 0.0)
            .ok_or_else(|| bad(format!("{offset:?} is not an offset in milliseconds; {SHAPE}")))?;
        if ms < last.0 {
            return Err(bad(format!(
                "offset {ms} ms comes before line {}'s {} ms: the lines are sent in order, so \
                 their offsets never decrease",
                last.1, last.0
            )));
        }
        last = (ms, n);
        let uri = uri.trim();
        let path =
            origin_form(uri.as_bytes(), target, OtherHosts::Rewrite).map_err(|r| match r {
                Refused::Asterisk => bad("* cannot be requested; name a path".into()),
                _ => bad(format!("{uri:?} is not a URI (http://host/path) or a path; {SHAPE}")),
            })?;
        let at_ns = (ms * 1e6).round() as i64;
        script.line("timing-script", None, &path, at_ns, false);
        Ok(())
    })?;
    let replay = script.finish(&file);
    if replay.is_empty() {
        return Err(error(&file, None, format!("no line in the script; {SHAPE}")));
    }
    Ok(replay)
}

#[cfg(test)]
mod tests {
    use super::super::testing::{file, target};
    use super::*;

    #[test]
    fn offsets_in_milliseconds_and_uris_rewritten_to_the_target() {
        let (_dir, path) = file(
            "script",
            "0.0\thttp://example.com/a\n12.345\t/b?x=1\r\n\n12.345\thttps://x:444/a\n",
        );
        let t = target();
        let r = read(&path, &t).unwrap();
        assert_eq!(r.format, "timing-script");
        assert_eq!(&r.offsets_ns[..], [0, 12_345_000, 12_345_000]);
        assert_eq!(&r.requests[..], [0, 1, 0]);
        assert_eq!(r.distinct.get(1), (None, "/b?x=1"), "the run's method");
        assert_eq!(r.distinct.get(0), (None, "/a"));
    }

    #[test]
    fn a_wrong_line_is_named() {
        let t = target();
        let cases = [
            ("0\t/a\n5 /b\n", ":2: no tab in the line"),
            ("x\t/a\n", ":1: \"x\" is not an offset in milliseconds"),
            ("-1\t/a\n", ":1: \"-1\" is not an offset"),
            ("5\t/a\n4\t/b\n", ":2: offset 4 ms comes before line 1's 5 ms"),
            ("1\tftp://x/\n", ":1: \"ftp://x/\" is not a URI"),
            ("\n", ": no line in the script"),
        ];
        for (text, want) in cases {
            let (_dir, path) = file("script", text);
            let e = read(&path, &t).unwrap_err().to_string();
            let name = path.display().to_string();
            assert!(e.starts_with(&format!("{name}{want}")), "{text:?}: {e}");
        }
    }
}
