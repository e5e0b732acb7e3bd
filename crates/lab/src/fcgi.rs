//! A minimal, bounded FastCGI client: one responder request on a unix socket, the STDOUT
//! stream returned. It asks php-fpm for its status page on the pool's own status socket
//! (`pm.status_listen`), which php-fpm serves from a process of its own, so the answer comes
//! even while every child of the pool is busy. Not for load.

use std::io::{Read, Write};
use std::os::unix::net::UnixStream;
use std::path::Path;
use std::time::Duration;

const VERSION: u8 = 1;
const BEGIN_REQUEST: u8 = 1;
const END_REQUEST: u8 = 3;
const PARAMS: u8 = 4;
const STDIN: u8 = 5;
const STDOUT: u8 = 6;
const STDERR: u8 = 7;
const RESPONDER: u16 = 1;
const REQUEST_ID: u16 = 1;
/// A status page is a few hundred bytes; anything past this is not one.
const MAX_RESPONSE: usize = 64 * 1024;

/// GETs `script?query` from the FastCGI server on `socket` within `timeout` (per read and
/// write); returns what the server wrote to STDOUT (CGI headers, blank line, body).
pub fn get(socket: &Path, script: &str, query: &str, timeout: Duration) -> Result<Vec<u8>, String> {
    let mut stream = UnixStream::connect(socket).map_err(|e| format!("connect: {e}"))?;
    stream.set_read_timeout(Some(timeout)).map_err(|e| e.to_string())?;
    stream.set_write_timeout(Some(timeout)).map_err(|e| e.to_string())?;
    stream.write_all(&request(script, query)).map_err(|e| format!("send: {e}"))?;
    let mut raw = Vec::new();
    let mut buf = [0u8; 8192];
    loop {
        match parse(&raw)? {
            Some(stdout) => return Ok(stdout),
            None if raw.len() > MAX_RESPONSE => return Err("answer too long".into()),
            None => {}
        }
        let n = stream.read(&mut buf).map_err(|e| format!("read: {e}"))?;
        if n == 0 {
            return Err("closed before the end of the request".into());
        }
        raw.extend_from_slice(&buf[..n]);
    }
}

/// The records of one GET: BEGIN_REQUEST, the parameters, their end, an empty STDIN.
fn request(script: &str, query: &str) -> Vec<u8> {
    let mut out = Vec::new();
    let mut begin = RESPONDER.to_be_bytes().to_vec();
    begin.extend_from_slice(&[0; 6]); // flags (close when done) and reserved
    record(&mut out, BEGIN_REQUEST, &begin);
    let mut params = Vec::new();
    for (name, value) in [
        ("SCRIPT_NAME", script),
        ("SCRIPT_FILENAME", script),
        ("REQUEST_URI", script),
        ("QUERY_STRING", query),
        ("REQUEST_METHOD", "GET"),
        ("SERVER_PROTOCOL", "HTTP/1.1"),
        ("GATEWAY_INTERFACE", "CGI/1.1"),
    ] {
        pair(&mut params, name.as_bytes(), value.as_bytes());
    }
    record(&mut out, PARAMS, &params);
    record(&mut out, PARAMS, &[]);
    record(&mut out, STDIN, &[]);
    out
}

fn record(out: &mut Vec<u8>, kind: u8, content: &[u8]) {
    debug_assert!(content.len() <= u16::MAX as usize);
    out.extend_from_slice(&[VERSION, kind]);
    out.extend_from_slice(&REQUEST_ID.to_be_bytes());
    out.extend_from_slice(&(content.len() as u16).to_be_bytes());
    out.extend_from_slice(&[0, 0]); // no padding, reserved
    out.extend_from_slice(content);
}

/// A name-value pair; lengths below 128 take one byte, longer ones four with the high bit set.
fn pair(out: &mut Vec<u8>, name: &[u8], value: &[u8]) {
    for len in [name.len(), value.len()] {
        if len < 128 {
            out.push(len as u8);
        } else {
            out.extend_from_slice(&(len as u32 | 0x8000_0000).to_be_bytes());
        }
    }
    out.extend_from_slice(name);
    out.extend_from_slice(value);
}

/// The STDOUT stream once END_REQUEST is in `raw`; `None` while records are still missing.
fn parse(raw: &[u8]) -> Result<Option<Vec<u8>>, String> {
    let mut stdout = Vec::new();
    let mut at = 0;
    while raw.len() >= at + 8 {
        let h = &raw[at..at + 8];
        if h[0] != VERSION {
            return Err(format!("not FastCGI (version byte {})", h[0]));
        }
        let len = u16::from_be_bytes([h[4], h[5]]) as usize;
        let end = at + 8 + len + h[6] as usize;
        if raw.len() < end {
            return Ok(None);
        }
        let content = &raw[at + 8..at + 8 + len];
        match h[1] {
            STDOUT => stdout.extend_from_slice(content),
            END_REQUEST => return Ok(Some(stdout)),
            STDERR => {}
            other => return Err(format!("unexpected FastCGI record type {other}")),
        }
        at = end;
    }
    Ok(None)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_request_is_begin_params_end_of_params_and_empty_stdin() {
        let r = request("/status", "full");
        assert_eq!(&r[..8], &[1, BEGIN_REQUEST, 0, 1, 0, 8, 0, 0]);
        assert_eq!(&r[8..10], &RESPONDER.to_be_bytes());
        // The last two records are an empty PARAMS and an empty STDIN.
        assert_eq!(&r[r.len() - 16..], &[1, PARAMS, 0, 1, 0, 0, 0, 0, 1, STDIN, 0, 1, 0, 0, 0, 0]);
        let mut long = Vec::new();
        pair(&mut long, b"N", &[b'v'; 200]);
        assert_eq!(&long[..5], &[1, 0x80, 0, 0, 200]);
    }

    #[test]
    fn stdout_is_gathered_until_the_end_of_the_request() {
        let mut raw = Vec::new();
        record(&mut raw, STDOUT, b"Content-type: text/plain\r\n\r\npool: ");
        record(&mut raw, STDERR, b"ignored");
        record(&mut raw, STDOUT, b"www\n");
        assert_eq!(parse(&raw), Ok(None), "no END_REQUEST yet");
        record(&mut raw, END_REQUEST, &[0; 8]);
        let out = parse(&raw).unwrap().unwrap();
        assert!(out.ends_with(b"pool: www\n"));
        assert_eq!(parse(&raw[..raw.len() - 3]), Ok(None), "a truncated record waits");
        assert!(parse(b"HTTP/1.1 200 OK\r\n").is_err());
    }
}
