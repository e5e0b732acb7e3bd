//! Reading requests off a test-server connection: the head up to CRLFCRLF, then a
//! Content-Length body; bytes past the request are kept for the next one (pipelining).

use std::io::{self, Read};

/// Heads bigger than this are refused: a client that never sends CRLFCRLF must not make the
/// server buffer without end.
const MAX_HEAD: usize = 64 * 1024;
const MAX_BODY: usize = 16 * 1024 * 1024;

/// One request as the server read it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Request {
    pub method: String,
    pub target: String,
    pub version: String,
    pub headers: Vec<(String, String)>,
    pub body: Vec<u8>,
}

impl Request {
    /// The first field with this name (names compare case-insensitively, RFC 9110 §5.1).
    pub fn header(&self, name: &str) -> Option<&str> {
        self.headers.iter().find(|(n, _)| n.eq_ignore_ascii_case(name)).map(|(_, v)| v.as_str())
    }

    /// Whether the client asked to close after this exchange: `Connection: close`, or an
    /// HTTP/1.0 request without `keep-alive` (RFC 9112 §9.3).
    pub fn wants_close(&self) -> bool {
        let has_token = |token: &str| {
            self.headers
                .iter()
                .filter(|(n, _)| n.eq_ignore_ascii_case("connection"))
                .any(|(_, v)| v.split(',').any(|t| t.trim().eq_ignore_ascii_case(token)))
        };
        has_token("close") || (self.version == "HTTP/1.0" && !has_token("keep-alive"))
    }
}

#[derive(Default)]
pub(super) struct RequestReader {
    buf: Vec<u8>,
}

impl RequestReader {
    /// The next request, or `None` when the client closed between requests.
    pub(super) fn read(&mut self, stream: &mut impl Read) -> io::Result<Option<Request>> {
        let head_end = loop {
            if let Some(at) = find(&self.buf, b"\r\n\r\n") {
                break at + 4;
            }
            if self.buf.len() > MAX_HEAD {
                return Err(invalid("request head too large"));
            }
            if !self.fill(stream)? {
                return if self.buf.is_empty() { Ok(None) } else { Err(eof()) };
            }
        };
        let mut request = parse_head(&self.buf[..head_end])?;
        let length = match request.header("content-length") {
            Some(v) => v.trim().parse::<usize>().map_err(|_| invalid("bad Content-Length"))?,
            None => 0,
        };
        if length > MAX_BODY {
            return Err(invalid("request body too large"));
        }
        while self.buf.len() < head_end + length {
            if !self.fill(stream)? {
                return Err(eof());
            }
        }
        request.body = self.buf[head_end..head_end + length].to_vec();
        self.buf.drain(..head_end + length);
        Ok(Some(request))
    }

    /// Appends what one read returns; false at end of stream.
    fn fill(&mut self, stream: &mut impl Read) -> io::Result<bool> {
        let mut chunk = [0u8; 8192];
        let n = stream.read(&mut chunk)?;
        self.buf.extend_from_slice(&chunk[..n]);
        Ok(n > 0)
    }
}

fn parse_head(head: &[u8]) -> io::Result<Request> {
    let text = std::str::from_utf8(head).map_err(|_| invalid("request head is not UTF-8"))?;
    let mut lines = text.split("\r\n");
    let request_line = lines.next().unwrap_or_default();
    let mut parts = request_line.split(' ');
    let (Some(method), Some(target), Some(version), None) =
        (parts.next(), parts.next(), parts.next(), parts.next())
    else {
        return Err(invalid("malformed request line"));
    };
    let mut headers = Vec::new();
    for line in lines.filter(|l| !l.is_empty()) {
        let (name, value) = line.split_once(':').ok_or_else(|| invalid("header without ':'"))?;
        headers.push((name.to_string(), value.trim().to_string()));
    }
    Ok(Request {
        method: method.to_string(),
        target: target.to_string(),
        version: version.to_string(),
        headers,
        body: Vec::new(),
    })
}

fn find(haystack: &[u8], needle: &[u8]) -> Option<usize> {
    haystack.windows(needle.len()).position(|w| w == needle)
}

fn invalid(what: &str) -> io::Error {
    io::Error::new(io::ErrorKind::InvalidData, what)
}

fn eof() -> io::Error {
    io::Error::new(io::ErrorKind::UnexpectedEof, "client closed mid-request")
}
