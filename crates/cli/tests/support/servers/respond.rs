//! What each [`Behaviour`] puts on the wire for one request, and what then becomes of the
//! connection.

use std::io::{self, Write};
use std::net::TcpStream;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Mutex;
use std::thread;
use std::time::{Duration, Instant};

use super::{lock, Behaviour, Request};

/// The Content-Length that `NoBody` advertises without sending: for HEAD, and for 304 (RFC 9110
/// §8.6 lets both state the size a GET would have returned).
pub const NO_BODY_ADVERTISED_LEN: usize = 1234;

/// The body lengths `Varying` cycles through, one per request.
pub const VARYING_LENGTHS: [usize; 2] = [10, 12];

/// The server's own time, shared by its connections: when it started (`Freeze` counts its
/// periods from then) and when the next response may leave (`Capacity`).
pub(super) struct Clock {
    started: Instant,
    next_slot: Mutex<Instant>,
}

impl Clock {
    pub(super) fn new() -> Clock {
        let now = Instant::now();
        Clock { started: now, next_slot: Mutex::new(now) }
    }

    /// If `now` falls in one of `Freeze`'s pause windows, when that window ends.
    fn thaw(&self, period: Duration, pause: Duration, now: Instant) -> Option<Instant> {
        let elapsed = now.saturating_duration_since(self.started).as_nanos();
        let period_ns = period.as_nanos().max(1);
        let phase = elapsed % period_ns;
        // The window sits in the middle of each period, so a run that starts with the server
        // meets whole windows, not one cut short at either end.
        let from = period_ns.saturating_sub(pause.as_nanos()) / 2;
        let until = from + pause.as_nanos();
        (from..until).contains(&phase).then(|| now + nanos(until - phase))
    }

    /// Takes the next output slot of a server answering `per_second` times a second: now if
    /// the server has been idle, else one gap after the slot before it.
    fn slot(&self, per_second: f64) -> Instant {
        let gap = Duration::from_secs_f64(1.0 / per_second);
        let mut next = lock(&self.next_slot);
        let slot = (*next).max(Instant::now());
        *next = slot + gap;
        slot
    }
}

fn nanos(n: u128) -> Duration {
    Duration::from_nanos(u64::try_from(n).unwrap_or(u64::MAX))
}

/// What the connection does after the answer.
pub(super) enum After {
    /// Serve the next request, unless this one asked to close.
    KeepAlive,
    /// Serve the next request whatever this one asked (`Silent` never answers or closes).
    Hold,
    /// Close after the client has read everything.
    Close,
    /// Abort with RST.
    Reset,
}

/// `index` counts requests across the whole server, so cycles advance per request, not per
/// connection.
pub(super) fn answer(
    behaviour: &Behaviour,
    request: &Request,
    index: u64,
    out: &mut TcpStream,
    stop: &AtomicBool,
    clock: &Clock,
) -> io::Result<After> {
    // RFC 9110 §9.3.2: a response to HEAD has the GET response's fields and never a body.
    let head = request.method == "HEAD";
    match behaviour {
        Behaviour::Fixed { status, headers, body } => {
            out.write_all(&response("HTTP/1.1", *status, headers, body, head))?;
            Ok(After::KeepAlive)
        }
        Behaviour::Chunked { chunks, extensions, trailers } => {
            write_chunked(out, chunks, *extensions, *trailers, head)?;
            Ok(After::KeepAlive)
        }
        Behaviour::CloseDelimited { body } => {
            out.write_all(b"HTTP/1.1 200 OK\r\nConnection: close\r\n\r\n")?;
            if !head {
                out.write_all(body)?;
            }
            Ok(After::Close)
        }
        Behaviour::Http10 { body } => {
            out.write_all(&response("HTTP/1.0", 200, &[], body, head))?;
            Ok(After::Close)
        }
        Behaviour::Freeze { period, pause, body } => {
            if let Some(thaw) = clock.thaw(*period, *pause, Instant::now()) {
                if !sleep_until_unless_stopped(thaw, stop) {
                    return Ok(After::Close);
                }
            }
            out.write_all(&response("HTTP/1.1", 200, &[], body, head))?;
            Ok(After::KeepAlive)
        }
        Behaviour::Capacity { per_second, body } => {
            if !sleep_until_unless_stopped(clock.slot(*per_second), stop) {
                return Ok(After::Close);
            }
            out.write_all(&response("HTTP/1.1", 200, &[], body, head))?;
            Ok(After::KeepAlive)
        }
        Behaviour::Slow { delay, body } => {
            if !sleep_unless_stopped(*delay, stop) {
                return Ok(After::Close);
            }
            out.write_all(&response("HTTP/1.1", 200, &[], body, head))?;
            Ok(After::KeepAlive)
        }
        Behaviour::Truncated { declared, sent } => {
            let head = format!("HTTP/1.1 200 OK\r\nContent-Length: {declared}\r\n\r\n");
            out.write_all(head.as_bytes())?;
            out.write_all(&vec![b't'; *sent])?;
            Ok(After::Close)
        }
        Behaviour::Reset => Ok(After::Reset),
        Behaviour::Garbage => {
            out.write_all(b"\x00\x01garbage\r\n\r\n")?;
            Ok(After::Close)
        }
        Behaviour::Silent => Ok(After::Hold),
        Behaviour::EndlessChunked => {
            endless_chunked(out, stop)?;
            Ok(After::Close)
        }
        Behaviour::NoBody { status } => {
            out.write_all(no_body(*status, head).as_bytes())?;
            Ok(After::KeepAlive)
        }
        Behaviour::ConflictingLength => {
            // Exactly as many bytes as the larger value, then close, so that a client that
            // (wrongly) picks either value still ends up with a well-defined outcome.
            out.write_all(
                b"HTTP/1.1 200 OK\r\nContent-Length: 5\r\nContent-Length: 7\r\n\r\nhello!!",
            )?;
            Ok(After::Close)
        }
        Behaviour::Interim => {
            // Two writes (the socket has TCP_NODELAY), so the client may well read the interim
            // response on its own and must then keep waiting for the final one (RFC 9110 §15.2).
            out.write_all(b"HTTP/1.1 100 Continue\r\n\r\n")?;
            out.write_all(&response("HTTP/1.1", 200, &[], b"final", head))?;
            Ok(After::KeepAlive)
        }
        Behaviour::Varying => {
            let len = VARYING_LENGTHS[(index % VARYING_LENGTHS.len() as u64) as usize];
            out.write_all(&response("HTTP/1.1", 200, &[], &vec![b'v'; len], head))?;
            Ok(After::KeepAlive)
        }
        Behaviour::Login => {
            let (status, headers, body) = login(request, index);
            out.write_all(&response("HTTP/1.1", status, &headers, body.as_bytes(), head))?;
            Ok(After::KeepAlive)
        }
        Behaviour::StatusCycle(statuses) => {
            let Some(&status) = statuses.get((index % statuses.len().max(1) as u64) as usize)
            else {
                // An empty cycle has no status to send; aborting makes the mistake visible.
                return Ok(After::Reset);
            };
            let body = format!("status {status}\n");
            out.write_all(&response("HTTP/1.1", status, &[], body.as_bytes(), head))?;
            Ok(After::KeepAlive)
        }
    }
}

/// A complete response framed by Content-Length.
fn response(
    version: &str,
    status: u16,
    headers: &[(String, String)],
    body: &[u8],
    head_only: bool,
) -> Vec<u8> {
    let mut out = format!("{version} {status} {}\r\n", reason(status));
    for (name, value) in headers {
        out.push_str(&format!("{name}: {value}\r\n"));
    }
    out.push_str(&format!("Content-Length: {}\r\n\r\n", body.len()));
    let mut out = out.into_bytes();
    if !head_only {
        out.extend_from_slice(body);
    }
    out
}

fn no_body(status: u16, head: bool) -> String {
    if head {
        return format!("HTTP/1.1 200 OK\r\nContent-Length: {NO_BODY_ADVERTISED_LEN}\r\n\r\n");
    }
    let framing = match status {
        // RFC 9110 §8.6: a 1xx or 204 must not carry Content-Length.
        100..=199 | 204 => String::new(),
        // The same section allows 304 to state the size of the representation it stands for:
        // a client that waits for that many bytes hangs, which is what this case catches.
        304 => format!("Content-Length: {NO_BODY_ADVERTISED_LEN}\r\n"),
        _ => "Content-Length: 0\r\n".to_string(),
    };
    format!("HTTP/1.1 {status} {}\r\n{framing}\r\n", reason(status))
}

fn write_chunked(
    out: &mut TcpStream,
    chunks: &[Vec<u8>],
    extensions: bool,
    trailers: bool,
    head: bool,
) -> io::Result<()> {
    let mut head_text = String::from("HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n");
    if trailers {
        head_text.push_str("Trailer: X-Checksum, X-Chunks\r\n");
    }
    head_text.push_str("\r\n");
    out.write_all(head_text.as_bytes())?;
    if head {
        return Ok(());
    }
    // One write per chunk, so chunk boundaries and read boundaries fall in different places.
    for (i, data) in chunks.iter().filter(|c| !c.is_empty()).enumerate() {
        out.write_all(&chunk(i, data, extensions))?;
    }
    let mut last = String::from("0");
    if extensions {
        last.push_str(";last=yes");
    }
    last.push_str("\r\n");
    if trailers {
        let total: usize = chunks.iter().map(Vec::len).sum();
        let sent = chunks.iter().filter(|c| !c.is_empty()).count();
        last.push_str(&format!("X-Checksum: {total}\r\nX-Chunks: {sent}\r\n"));
    }
    last.push_str("\r\n");
    out.write_all(last.as_bytes())
}

/// One chunk. Sizes alternate between upper- and lower-case hex because RFC 9112 §7.1 makes
/// hex digits case-insensitive and a parser should be shown both.
fn chunk(i: usize, data: &[u8], extension: bool) -> Vec<u8> {
    let mut out =
        if i % 2 == 1 { format!("{:x}", data.len()) } else { format!("{:X}", data.len()) };
    if extension {
        out.push_str(&format!(";chunk={i}"));
    }
    out.push_str("\r\n");
    let mut out = out.into_bytes();
    out.extend_from_slice(data);
    out.extend_from_slice(b"\r\n");
    out
}

/// Sends 16 KiB chunks until the stop flag is set or a write fails (the client went away, or
/// drop shut the socket down, which wakes a write blocked on a full send buffer with EPIPE).
fn endless_chunked(out: &mut TcpStream, stop: &AtomicBool) -> io::Result<()> {
    out.write_all(b"HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\n")?;
    let piece = chunk(0, &[b'e'; 16 * 1024], false);
    while !stop.load(Ordering::SeqCst) {
        out.write_all(&piece)?;
    }
    Ok(())
}

/// Sleeps in short steps so a dropped server does not wait out a long delay; false if stopped.
fn sleep_unless_stopped(delay: Duration, stop: &AtomicBool) -> bool {
    sleep_until_unless_stopped(Instant::now() + delay, stop)
}

/// Like [`sleep_unless_stopped`], until an instant.
fn sleep_until_unless_stopped(until: Instant, stop: &AtomicBool) -> bool {
    loop {
        if stop.load(Ordering::SeqCst) {
            return false;
        }
        let now = Instant::now();
        if now >= until {
            return true;
        }
        thread::sleep((until - now).min(Duration::from_millis(10)));
    }
}

fn reason(status: u16) -> &'static str {
    match status {
        100 => "Continue",
        200 => "OK",
        201 => "Created",
        204 => "No Content",
        301 => "Moved Permanently",
        302 => "Found",
        304 => "Not Modified",
        400 => "Bad Request",
        403 => "Forbidden",
        404 => "Not Found",
        429 => "Too Many Requests",
        500 => "Internal Server Error",
        502 => "Bad Gateway",
        503 => "Service Unavailable",
        504 => "Gateway Timeout",
        _ => "Status",
    }
}

/// `Behaviour::Login`'s answer to `request`, the server's `index`th.
fn login(request: &Request, index: u64) -> (u16, Vec<(String, String)>, String) {
    let path = request.target.split('?').next().unwrap_or("");
    match path {
        "/login" => {
            let cookie = ("Set-Cookie".to_string(), format!("sid=s{index}; Path=/; HttpOnly"));
            let body = format!("<form><input name=\"token\" value=\"t{index}\"></form>\n");
            (200, vec![cookie], body)
        }
        "/private" => {
            // The session the cookie names, and the token that session was given.
            let sid = request.header("cookie").and_then(|c| {
                c.split(';').find_map(|p| p.trim().strip_prefix("sid=s").map(str::to_string))
            });
            let body = String::from_utf8_lossy(&request.body).into_owned();
            let ok = sid.is_some_and(|n| {
                let token = format!("t{n}");
                request.header("x-token") == Some(token.as_str())
                    || body.split('&').any(|f| f == format!("token={token}"))
            });
            match ok {
                true => (200, Vec::new(), "secret\n".to_string()),
                false => (403, Vec::new(), "forbidden\n".to_string()),
            }
        }
        _ => (200, Vec::new(), "page\n".to_string()),
    }
}
