//! URL lists (`--urls FILE`): one request a line,
//!
//! ```text
//! # comments and blank lines are ignored
//! [weight=N] [body=@FILE] [METHOD] /path-or-URL [Name: value]...
//! ```
//!
//! `weight` (1 by default, at most [`MAX_WEIGHT`]) is how often the line is picked relative to
//! the others; `body=@FILE` sends FILE (relative to the list's directory) as the body; METHOD
//! defaults to the run's (`-m`, GET). The target is a path, or an absolute URL of the run's
//! scheme, host and port. Header fields follow as `Name: value`, a space after each colon: a
//! field's value runs to the next word that ends with a colon. Every wrong line is an error
//! naming the line and what to write.

use std::path::Path;

use super::{beside, error, for_each_line, origin_form, OtherHosts, Refused};
use crate::mix::{Entry, Mix, Order, MAX_ENTRIES, MAX_WEIGHT};
use crate::{EngineError, RequestSpec, Target};

const SHAPE: &str = "a line is [weight=N] [body=@FILE] [METHOD] /path [Name: value]...";

/// Reads the URL list at `path` for requests to `target`.
pub fn read(path: &Path, target: &Target, order: Order) -> Result<Mix, EngineError> {
    let file = path.display().to_string();
    let mut entries = Vec::new();
    for_each_line(path, |n, bytes| {
        let line = std::str::from_utf8(bytes)
            .map_err(|_| error(&file, Some(n), "not UTF-8 text; write the list in UTF-8"))?;
        let line = line.trim();
        if line.is_empty() || line.starts_with('#') {
            return Ok(());
        }
        if entries.len() == MAX_ENTRIES {
            return Err(error(
                &file,
                Some(n),
                format!(
                    "more than {MAX_ENTRIES} requests: a list has at most {MAX_ENTRIES} (each has \
                     figures of its own); replay a longer one as a log (--replay)"
                ),
            ));
        }
        let entry =
            parse_line(line, n, path, target).map_err(|what| error(&file, Some(n), what))?;
        entries.push(entry);
        Ok(())
    })?;
    if entries.is_empty() {
        return Err(error(&file, None, format!("no request in the file; {SHAPE}")));
    }
    Ok(Mix { file, entries, order })
}

/// One line of the list (neither blank nor a comment), or what is wrong with it.
fn parse_line(line: &str, n: usize, list: &Path, target: &Target) -> Result<Entry, String> {
    let mut words = line.split_whitespace().peekable();
    let mut entry = Entry::new(String::new(), n);
    // Options first: they hold '=' and come before the method and the target.
    while let Some((key, value)) = words.peek().and_then(|w| w.split_once('=')) {
        if key.starts_with('/') || key.contains("://") {
            break;
        }
        match key {
            "weight" => {
                entry.weight = value
                    .parse::<u32>()
                    .ok()
                    .filter(|w| (1..=MAX_WEIGHT).contains(w))
                    .ok_or_else(|| {
                    format!("weight={value}: a weight is a whole number from 1 to {MAX_WEIGHT}")
                })?;
            }
            "body" => {
                let name = value
                    .strip_prefix('@')
                    .filter(|f| !f.is_empty())
                    .ok_or_else(|| format!("body={value}: name the body's file as body=@FILE"))?;
                let at = beside(list, name);
                entry.body = Some(
                    std::fs::read(&at)
                        .map_err(|e| format!("body=@{name}: cannot read {}: {e}", at.display()))?,
                );
            }
            _ => return Err(format!("unknown option {key}=...; {SHAPE}")),
        }
        words.next();
    }
    let mut word = words.next().ok_or_else(|| format!("no path after the options; {SHAPE}"))?;
    let looks_like_target = |w: &str| w.starts_with('/') || w.contains("://") || w == "*";
    if !looks_like_target(word) {
        if !RequestSpec::is_method(word) {
            return Err(format!("{word:?} is neither a method nor a path; {SHAPE}"));
        }
        entry.method = Some(word.to_string());
        word = words.next().ok_or_else(|| format!("no path after the method {word}; {SHAPE}"))?;
    }
    entry.path = origin_form(word.as_bytes(), target, OtherHosts::Refuse).map_err(|r| match r {
        Refused::OtherHost => format!(
            "{word} is not on the target {}: a list's requests go to the URL given on the \
             command line; write the path alone",
            target.url
        ),
        Refused::Asterisk => "OPTIONS * cannot be sent; name a path".to_string(),
        Refused::NotATarget => {
            format!("{word:?} is not a path (/...) or an http:// URL; {SHAPE}")
        }
    })?;
    // The rest is header fields: `Name:` starts one, the words up to the next name its value.
    let mut current: Option<(&str, Vec<&str>)> = None;
    for w in words {
        match w.strip_suffix(':') {
            Some(name) if !name.is_empty() && !name.contains(':') => {
                push_header(current.take(), &mut entry)?;
                current = Some((name, Vec::new()));
            }
            _ => match current.as_mut() {
                Some((_, value)) => value.push(w),
                None => {
                    return Err(format!(
                        "{w:?} after the path: only header fields may follow it, as \
                         \"Name: value\" (a space after the colon); {SHAPE}"
                    ))
                }
            },
        }
    }
    push_header(current.take(), &mut entry)?;
    Ok(entry)
}

/// Adds a header field gathered from the line's words, checked as `-H` checks one.
fn push_header(field: Option<(&str, Vec<&str>)>, entry: &mut Entry) -> Result<(), String> {
    if let Some((name, value)) = field {
        let raw = format!("{name}: {}", value.join(" "));
        entry.headers.push(RequestSpec::parse_header(&raw).map_err(|e| e.to_string())?);
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::super::testing::{file, target};
    use super::*;

    #[test]
    fn lines_give_weight_method_target_and_headers() {
        let (dir, path) = file("urls.txt", 
            "# a comment\n\n/plain\nweight=3 POST /form?x=1 Content-Type: text/plain X-Two: a b\r\n\
             weight=2 body=@b.json PUT http://127.0.0.1:8080/api Referer: http://x/ y\n",
        );
        std::fs::write(dir.path().join("b.json"), b"{}").unwrap();
        let mix = read(&path, &target(), Order::Weighted).unwrap();
        assert_eq!(mix.entries.len(), 3);
        let [a, b, c] = &mix.entries[..] else { unreachable!() };
        assert_eq!(
            (a.method.as_deref(), a.path.as_str(), a.weight, a.line),
            (None, "/plain", 1, 3)
        );
        assert_eq!(
            (b.method.as_deref(), b.path.as_str(), b.weight),
            (Some("POST"), "/form?x=1", 3)
        );
        assert_eq!(
            b.headers,
            [("Content-Type".into(), "text/plain".into()), ("X-Two".into(), "a b".into())]
        );
        assert_eq!((c.method.as_deref(), c.path.as_str(), c.weight), (Some("PUT"), "/api", 2));
        assert_eq!(c.body.as_deref(), Some(&b"{}"[..]));
        assert_eq!(c.headers, [("Referer".into(), "http://x/ y".into())]);
    }

    #[test]
    fn a_wrong_line_is_named_with_what_to_write() {
        let cases = [
            ("/a\nweight=0 /b\n", "urls.txt:2: weight=0: a weight is a whole number"),
            ("weight=x /b\n", "urls.txt:1: weight=x"),
            ("colour=red /b\n", "urls.txt:1: unknown option colour=..."),
            ("GE@T /b\n", "urls.txt:1: \"GE@T\" is neither a method nor a path"),
            ("GET\n", "urls.txt:1: no path after the method GET"),
            ("GET b\n", "urls.txt:1: \"b\" is not a path"),
            ("/a b\n", "urls.txt:1: \"b\" after the path: only header fields"),
            ("http://example.com/a\n", "urls.txt:1: http://example.com/a is not on the target"),
            ("/a Bad Name: x\n", "urls.txt:1: \"Bad\" after the path"),
            ("body=x /a\n", "urls.txt:1: body=x: name the body's file as body=@FILE"),
            ("body=@missing /a\n", "urls.txt:1: body=@missing: cannot read"),
            ("# only a comment\n", "urls.txt: no request in the file"),
        ];
        for (text, want) in cases {
            let (_dir, path) = file("urls.txt", text);
            let e = read(&path, &target(), Order::Weighted).unwrap_err().to_string();
            let e = e.replace(&format!("{}", path.display()), "urls.txt");
            assert!(e.starts_with(want), "{text:?}: {e}");
        }
        let e = read(Path::new("/nonexistent/urls.txt"), &target(), Order::Weighted).unwrap_err();
        assert!(e.to_string().starts_with("/nonexistent/urls.txt: cannot read:"), "{e}");
    }

    #[test]
    fn a_list_longer_than_the_limit_is_refused_at_the_line_past_it() {
        let text: String = (0..=MAX_ENTRIES).map(|i| format!("/{i}\n")).collect();
        let (_dir, path) = file("urls.txt", &text);
        let e = read(&path, &target(), Order::Weighted).unwrap_err().to_string();
        assert!(e.contains(&format!(":{}: more than {MAX_ENTRIES}", MAX_ENTRIES + 1)), "{e}");
    }
}
