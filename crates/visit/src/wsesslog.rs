//! httperf's session log (`--wsesslog N,X,FILE`), read as httperf's man page documents it, so
//! that an httperf user's file runs unchanged:
//!
//! - a line whose first character is `#` is a comment;
//! - a line of only whitespace ends a session (several in a row make no empty session);
//! - any other line is one request: its URI, then `think=`, `method=` and `contents=`
//!   attributes. A line that starts with whitespace belongs to the burst of the last line
//!   that did not; one that does not starts a burst;
//! - `contents=` may be quoted with `'` or `"`; inside the quotes `\n` is a newline, and so is
//!   a backslash that ends a line (the man page's `\<CR>`); `think=` is in seconds and is the
//!   pause after its burst's last answer (the run's X when absent).
//!
//! Every error names its line and column.

use std::time::Duration;

use crate::model::{Burst, Call, Think, Visit};
use crate::template::Template;
use crate::VisitError;

/// The sessions of a session log, in the file's order (the run uses them round-robin).
pub fn parse(text: &str, file: &str) -> Result<Vec<Visit>, VisitError> {
    let mut cur = Cursor { chars: text.chars().collect(), i: 0, line: 1, col: 1, file };
    let mut sessions = Vec::new();
    let mut bursts: Vec<Burst> = Vec::new();
    let end_session = |bursts: &mut Vec<Burst>, sessions: &mut Vec<Visit>| {
        if !bursts.is_empty() {
            let name = format!("session {}", sessions.len() + 1);
            sessions.push(Visit { name, bursts: std::mem::take(bursts) });
        }
    };
    while !cur.done() {
        if cur.peek() == Some('#') {
            cur.skip_line();
            continue;
        }
        let indented = matches!(cur.peek(), Some(' ' | '\t'));
        cur.skip_blanks();
        if cur.at_eol() {
            cur.skip_line();
            end_session(&mut bursts, &mut sessions);
            continue;
        }
        let (line, col) = (cur.line, cur.col);
        let (call, think) = request_line(&mut cur)?;
        match (indented, bursts.last_mut()) {
            (true, Some(burst)) => {
                burst.calls.push(call);
                if think.is_some() {
                    burst.think = think;
                }
            }
            (true, None) => {
                return Err(cur.error_at(
                    line,
                    col,
                    "an indented line continues a burst, but no burst has started in this \
                     session (its first line must not be indented)",
                ))
            }
            (false, _) => bursts.push(Burst { calls: vec![call], think }),
        }
    }
    end_session(&mut bursts, &mut sessions);
    if sessions.is_empty() {
        return Err(VisitError::File {
            file: file.to_string(),
            message: "no session in the file (only comments and blank lines)".to_string(),
        });
    }
    Ok(sessions)
}

/// One request line, from its URI to its end: the call and its `think=`.
fn request_line(cur: &mut Cursor<'_>) -> Result<(Call, Option<Think>), VisitError> {
    let uri = cur.token();
    let mut call = Call::get(&uri);
    let mut think = None;
    loop {
        cur.skip_blanks();
        if cur.at_eol() {
            cur.skip_line();
            return Ok((call, think));
        }
        let (line, col) = (cur.line, cur.col);
        let word = cur.until(|c| c == '=' || c.is_whitespace());
        if cur.peek() != Some('=') {
            return Err(cur.error_at(line, col, &format!("expected name=value, found '{word}'")));
        }
        cur.bump();
        let (vline, vcol) = (cur.line, cur.col);
        let value = cur.value()?;
        match word.as_str() {
            "think" => {
                let secs = crate::duration::parse(&value).filter(|_| !value.ends_with('m'));
                let Some(d) = secs else {
                    let m = format!("think={value} is not a number of seconds");
                    return Err(cur.error_at(vline, vcol, &m));
                };
                think = Some(Think::Fixed(d));
            }
            "method" if !value.is_empty() => call.method = value,
            "contents" => call.body = Some(Template::literal(&value)),
            "method" => return Err(cur.error_at(vline, vcol, "method= needs a method")),
            other => {
                let m = format!(
                    "unknown attribute '{other}' (httperf's session log has think=, method= \
                     and contents=)"
                );
                return Err(cur.error_at(line, col, &m));
            }
        }
    }
}

/// A position in the file, by character, with its line and column.
struct Cursor<'a> {
    chars: Vec<char>,
    i: usize,
    line: usize,
    col: usize,
    file: &'a str,
}

impl Cursor<'_> {
    fn done(&self) -> bool {
        self.i >= self.chars.len()
    }

    fn peek(&self) -> Option<char> {
        self.chars.get(self.i).copied()
    }

    fn bump(&mut self) -> Option<char> {
        let c = self.peek()?;
        self.i += 1;
        if c == '\n' {
            (self.line, self.col) = (self.line + 1, 1);
        } else {
            self.col += 1;
        }
        Some(c)
    }

    fn at_eol(&self) -> bool {
        matches!(self.peek(), None | Some('\n' | '\r'))
    }

    fn skip_blanks(&mut self) {
        while matches!(self.peek(), Some(' ' | '\t')) {
            self.bump();
        }
    }

    /// Past the end of this line.
    fn skip_line(&mut self) {
        while let Some(c) = self.bump() {
            if c == '\n' {
                break;
            }
        }
    }

    fn until(&mut self, stop: impl Fn(char) -> bool) -> String {
        let mut s = String::new();
        while let Some(c) = self.peek().filter(|c| !stop(*c)) {
            s.push(c);
            self.bump();
        }
        s
    }

    /// A word up to the next whitespace.
    fn token(&mut self) -> String {
        self.until(char::is_whitespace)
    }

    /// An attribute's value: quoted (spanning lines by its escapes) or a word.
    fn value(&mut self) -> Result<String, VisitError> {
        let Some(quote) = self.peek().filter(|c| *c == '\'' || *c == '"') else {
            return Ok(self.token());
        };
        let (line, col) = (self.line, self.col);
        self.bump();
        let mut s = String::new();
        loop {
            match self.bump() {
                None => {
                    let m = format!("the value quoted with {quote} here is never closed");
                    return Err(self.error_at(line, col, &m));
                }
                Some(c) if c == quote => return Ok(s),
                Some('\\') => match self.bump() {
                    Some('n') => s.push('\n'),
                    // The man page's `\<CR>`: a newline in the data, the value going on.
                    Some('\n') => s.push('\n'),
                    Some('\r') if self.peek() == Some('\n') => {
                        self.bump();
                        s.push('\n');
                    }
                    Some(c @ ('\\' | '\'' | '"')) => s.push(c),
                    Some(c) => {
                        s.push('\\');
                        s.push(c);
                    }
                    None => {}
                },
                Some(c) => s.push(c),
            }
        }
    }

    fn error_at(&self, line: usize, column: usize, message: &str) -> VisitError {
        VisitError::At { file: self.file.to_string(), line, column, message: message.to_string() }
    }
}

/// httperf's X: the think time of a burst that names none.
pub fn default_think(seconds: f64) -> Option<Think> {
    (seconds.is_finite() && seconds >= 0.0).then(|| Think::Fixed(Duration::from_secs_f64(seconds)))
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The example of httperf's man page, as printed there.
    const MAN_PAGE: &str = "\
# Comment lines start with a ``#'' as the first
# character.  Lines with only whitespace delimit
# sessions (multiple blank lines do not generate
# ``null'' sessions).  All other lines specify a
# uri-sequence (1 uri per line).  If the first
# character of the line is whitespace (e.g. space
# or tab), the uri is considered to be part of a
# burst that is sent out after the previous
# non-burst uri.

# session 1 definition (this is a comment)
/foo.html think=2.0
     /pict1.gif
     /pict2.gif
/foo2.html method=POST contents='Post data'
     /pict3.gif
     /pict4.gif

# session 2 definition
/foo3.html method=POST contents=\"Multiline\\ndata\"
/foo4.html method=HEAD
";

    fn paths(b: &Burst) -> Vec<String> {
        b.calls.iter().map(|c| c.path.to_string_with(&Default::default()).unwrap()).collect()
    }

    #[test]
    fn the_man_pages_example_is_two_sessions_of_bursts() {
        let s = parse(MAN_PAGE, "man").unwrap();
        assert_eq!(s.len(), 2);
        let one = &s[0].bursts;
        assert_eq!(one.len(), 2);
        assert_eq!(paths(&one[0]), ["/foo.html", "/pict1.gif", "/pict2.gif"]);
        assert_eq!(one[0].think, Some(Think::Fixed(Duration::from_secs(2))));
        assert_eq!(paths(&one[1]), ["/foo2.html", "/pict3.gif", "/pict4.gif"]);
        assert_eq!(one[1].think, None, "the default X");
        assert_eq!(one[1].calls[0].method, "POST");
        assert_eq!(one[1].calls[0].body, Some(Template::literal("Post data")));
        assert_eq!(one[1].calls[1].method, "GET");
        let two = &s[1].bursts;
        assert_eq!(two.len(), 2, "two bursts of one request each");
        assert_eq!(two[0].calls[0].body, Some(Template::literal("Multiline\ndata")));
        assert_eq!(two[1].calls[0].method, "HEAD");
        assert_eq!(s[0].requests() + s[1].requests(), 8);
    }

    #[test]
    fn a_backslash_at_the_end_of_a_line_continues_quoted_contents() {
        let s = parse("/a method=POST contents=\"x\\\ny\"\n/b\n", "f").unwrap();
        assert_eq!(s[0].bursts[0].calls[0].body, Some(Template::literal("x\ny")));
        assert_eq!(paths(&s[0].bursts[1]), ["/b"]);
    }

    #[test]
    fn errors_name_line_and_column() {
        let e = |text: &str| parse(text, "s.log").unwrap_err().to_string();
        assert_eq!(e("/a\n/b think=soon\n"), "s.log:2:10: think=soon is not a number of seconds");
        assert!(e("/a colour=red\n").starts_with("s.log:1:4: unknown attribute 'colour'"));
        assert!(e("/a\n\n  /b\n").starts_with("s.log:3:3: an indented line"));
        assert!(e("/a contents='open\n").starts_with("s.log:1:13: the value quoted"));
        assert!(e("/a think\n").starts_with("s.log:1:4: expected name=value"));
        assert_eq!(
            e("# nothing\n\n"),
            "s.log: no session in the file (only comments and blank lines)"
        );
    }

    #[test]
    fn blank_lines_of_whitespace_end_sessions_and_tabs_indent() {
        let s = parse("/a\n\t/a1\n \t \n\n\n/b\n", "f").unwrap();
        assert_eq!(s.len(), 2);
        assert_eq!(paths(&s[0].bursts[0]), ["/a", "/a1"]);
    }
}
