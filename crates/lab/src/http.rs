//! A small blocking HTTP/1.1 GET for verify and the pool status pages: one request per
//! connection (`Connection: close`), the whole answer read (bounded), the head parsed by
//! httparse, chunked bodies decoded. Not for load: that is the engine's.

use std::io::{Read, Write};
use std::net::{SocketAddr, TcpStream};
use std::time::Duration;

/// One response.
#[derive(Debug)]
pub struct Response {
    pub status: u16,
    /// Header names lower-cased, in the order received.
    pub headers: Vec<(String, String)>,
    pub body: Vec<u8>,
}

impl Response {
    pub fn header(&self, name: &str) -> Option<&str> {
        self.headers.iter().find(|(n, _)| n == name).map(|(_, v)| v.as_str())
    }
}

const TIMEOUT: Duration = Duration::from_secs(10);
/// The largest answer read (the biggest workload verify fetches whole is a few MB).
const MAX_RESPONSE: usize = 64 << 20;
/// Headers beyond this count make the answer unreadable to verify.
const MAX_HEADERS: usize = 64;

/// GETs `path` from `addr` (a lab server: 127.0.0.1, or a network profile's namespace), with
/// `headers` added to the request.
pub fn get(addr: SocketAddr, path: &str, headers: &[(&str, &str)]) -> Result<Response, String> {
    get_bounded(addr, path, headers, TIMEOUT)
}

/// GETs `path` with every step (connect, each write and read) bounded by `timeout`.
pub fn get_within(addr: SocketAddr, path: &str, timeout: Duration) -> Result<Response, String> {
    get_bounded(addr, path, &[], timeout)
}

fn get_bounded(
    addr: SocketAddr,
    path: &str,
    headers: &[(&str, &str)],
    timeout: Duration,
) -> Result<Response, String> {
    let mut stream = connect(addr, timeout)?;
    let mut request = format!("GET {path} HTTP/1.1\r\nHost: {addr}\r\nConnection: close\r\n");
    for (name, value) in headers {
        request.push_str(&format!("{name}: {value}\r\n"));
    }
    request.push_str("\r\n");
    stream.write_all(request.as_bytes()).map_err(|e| format!("send: {e}"))?;
    let mut raw = Vec::new();
    // What verify fetches is bounded; a server that sends more is not answering verify.
    (&mut stream)
        .take(MAX_RESPONSE as u64 + 1)
        .read_to_end(&mut raw)
        .map_err(|e| format!("read: {e}"))?;
    if raw.len() > MAX_RESPONSE {
        return Err(format!("answer longer than {MAX_RESPONSE} bytes"));
    }
    parse(&raw)
}

/// GETs `path` without `Connection: close` and returns as soon as the headers are in (the
/// body is left unread): what the server says about keeping the connection open.
pub fn get_head_keepalive(addr: SocketAddr, path: &str) -> Result<Response, String> {
    let mut stream = connect(addr, TIMEOUT)?;
    let request = format!("GET {path} HTTP/1.1\r\nHost: {addr}\r\n\r\n");
    stream.write_all(request.as_bytes()).map_err(|e| format!("send: {e}"))?;
    let mut raw = Vec::new();
    let mut buf = [0u8; 4096];
    loop {
        if let Some((status, headers, _)) = parse_head(&raw)? {
            return Ok(Response { status, headers, body: Vec::new() });
        }
        let n = stream.read(&mut buf).map_err(|e| format!("read: {e}"))?;
        if n == 0 || raw.len() > MAX_RESPONSE {
            return Err("no end of headers".into());
        }
        raw.extend_from_slice(&buf[..n]);
    }
}

/// A connection to `addr` whose connect, reads and writes time out.
fn connect(addr: SocketAddr, timeout: Duration) -> Result<TcpStream, String> {
    let stream = TcpStream::connect_timeout(&addr, timeout).map_err(|e| format!("connect: {e}"))?;
    stream.set_read_timeout(Some(timeout)).map_err(|e| e.to_string())?;
    stream.set_write_timeout(Some(timeout)).map_err(|e| e.to_string())?;
    Ok(stream)
}

/// Parses a whole response read to the end of the connection.
pub fn parse(raw: &[u8]) -> Result<Response, String> {
    let (status, headers, end) = parse_head(raw)?.ok_or("no end of headers")?;
    let rest = &raw[end..];
    let chunked = headers
        .iter()
        .any(|(n, v)| n == "transfer-encoding" && v.to_ascii_lowercase().contains("chunked"));
    let body = if chunked {
        dechunk(rest)?
    } else if let Some(len) = headers
        .iter()
        .find(|(n, _)| n == "content-length")
        .and_then(|(_, v)| v.parse::<usize>().ok())
    {
        if rest.len() < len {
            return Err(format!("short body: {} of {len} bytes", rest.len()));
        }
        rest[..len].to_vec()
    } else {
        rest.to_vec()
    };
    Ok(Response { status, headers, body })
}

/// The status, the headers (names lower-cased) and the head's length in bytes.
type Head = (u16, Vec<(String, String)>, usize);

/// The head of `raw` once it is complete; `None` while it is not.
fn parse_head(raw: &[u8]) -> Result<Option<Head>, String> {
    let mut slots = [httparse::EMPTY_HEADER; MAX_HEADERS];
    let mut response = httparse::Response::new(&mut slots);
    let end = match response.parse(raw) {
        Ok(httparse::Status::Complete(end)) => end,
        Ok(httparse::Status::Partial) => return Ok(None),
        Err(e) => return Err(format!("bad response head: {e}")),
    };
    let status = response.code.ok_or("no status code")?;
    let headers = response
        .headers
        .iter()
        .map(|h| {
            let value = String::from_utf8_lossy(h.value).trim().to_string();
            (h.name.to_ascii_lowercase(), value)
        })
        .collect();
    Ok(Some((status, headers, end)))
}

/// Decodes a chunked body (RFC 9112 section 7.1); extensions and trailers are skipped.
fn dechunk(mut data: &[u8]) -> Result<Vec<u8>, String> {
    let mut body = Vec::new();
    loop {
        let line_end = find(data, b"\r\n").ok_or("truncated chunk size")?;
        let line = std::str::from_utf8(&data[..line_end]).map_err(|_| "bad chunk size")?;
        let size_text = line.split(';').next().unwrap_or_default().trim();
        let size = usize::from_str_radix(size_text, 16).map_err(|_| "bad chunk size")?;
        data = &data[line_end + 2..];
        if size == 0 {
            return Ok(body);
        }
        if data.len() < size + 2 {
            return Err("truncated chunk".into());
        }
        body.extend_from_slice(&data[..size]);
        data = &data[size + 2..];
    }
}

fn find(haystack: &[u8], needle: &[u8]) -> Option<usize> {
    haystack.windows(needle.len()).position(|w| w == needle)
}

#[cfg(test)]
mod tests {
    use super::parse;

    #[test]
    fn content_length_and_chunked_bodies() {
        let r =
            parse(b"HTTP/1.1 200 OK\r\nServer: nginx\r\nContent-Length: 5\r\n\r\nhello").unwrap();
        assert_eq!(
            (r.status, r.header("server"), r.body.as_slice()),
            (200, Some("nginx"), &b"hello"[..])
        );
        let r = parse(
            b"HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\n5;x=y\r\nhello\r\n2\r\n, \r\n0\r\n\r\n",
        )
        .unwrap();
        assert_eq!(r.body, b"hello, ");
        assert!(parse(b"HTTP/1.1 200 OK\r\nContent-Length: 9\r\n\r\nhello").is_err());
        let r = parse(b"HTTP/1.0 404 Not Found\r\n\r\nall of it").unwrap();
        assert_eq!((r.status, r.body.as_slice()), (404, &b"all of it"[..]));
        assert!(parse(b"HTTP/1.1 200 OK\r\nServer: nginx\r\n").is_err(), "no end of head");
        assert!(parse(b"garbage\r\n\r\n").is_err());
    }
}
