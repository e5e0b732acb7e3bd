//! An in-process HTTP/2 server (prior knowledge, h2c) on std::net, a thread per connection,
//! that misbehaves as its [`H2Behaviour`] says. Frames are written by hand (RFC 9113 section
//! 4.1) and header blocks are HPACK literals (RFC 7541 section 6.2.2), so that a test can send
//! exactly the bytes a broken server would.

use std::io::{Read, Write};
use std::net::{SocketAddr, TcpListener, TcpStream};
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::Arc;
use std::thread;
use std::time::Duration;

const PREFACE_LEN: usize = 24;
const DATA: u8 = 0;
const HEADERS: u8 = 1;
const RST_STREAM: u8 = 3;
const SETTINGS: u8 = 4;
const GOAWAY: u8 = 7;
const CONTINUATION: u8 = 9;
const END_STREAM: u8 = 1;
const END_HEADERS: u8 = 4;

/// What the server does with the requests of each connection.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum H2Behaviour {
    /// `200` with the body `ok`, for every request.
    Ok,
    /// Answers `per_conn` requests, then a GOAWAY naming the last of them, then closes: the
    /// requests sent beyond it were never processed.
    GoawayAfter { per_conn: u32 },
    /// RST_STREAM REFUSED_STREAM for every request.
    Reset,
    /// A response head whose decoded header list is far over 64 KiB: one 4,000-byte field
    /// added to the HPACK table, then named by index again and again.
    HugeHeaderList,
    /// SETTINGS_INITIAL_WINDOW_SIZE 0, and never a WINDOW_UPDATE: a request body can never go.
    WindowNeverOpened,
    /// After its SETTINGS, bytes that are no frame a server may send (DATA on stream 0).
    Garbage,
    /// Accepts and reads, and never sends a byte, SETTINGS included.
    NoSettings,
    /// A login, per connection (one visitor's): `/login` sets the cookie `sid=sN` and shows
    /// the token `tN` in a form field; `/private` answers `secret` only to a request that
    /// carries both back (the cookie, and the token as `x-token`), 403 otherwise; any other
    /// path `ok`. Request header blocks are decoded as far as a client's literals go.
    Login,
}

/// A running server; it lives until the test process ends.
pub struct H2Peer {
    pub addr: SocketAddr,
    connections: Arc<AtomicU64>,
    requests: Arc<AtomicU64>,
}

impl H2Peer {
    pub fn start(behaviour: H2Behaviour) -> H2Peer {
        let listener = TcpListener::bind("127.0.0.1:0").expect("bind 127.0.0.1:0");
        let addr = listener.local_addr().expect("local_addr");
        let connections = Arc::new(AtomicU64::new(0));
        let requests = Arc::new(AtomicU64::new(0));
        let (c, r) = (connections.clone(), requests.clone());
        thread::spawn(move || {
            for tcp in listener.incoming() {
                let Ok(tcp) = tcp else { return };
                let n = c.fetch_add(1, Ordering::Relaxed) + 1;
                let r = r.clone();
                thread::spawn(move || serve(tcp, behaviour, &r, n));
            }
        });
        H2Peer { addr, connections, requests }
    }

    pub fn url(&self, path: &str) -> String {
        format!("http://{}{path}", self.addr)
    }

    /// Connections accepted, the preflight's included.
    pub fn connections(&self) -> u64 {
        self.connections.load(Ordering::Relaxed)
    }

    /// HEADERS frames (requests) received.
    pub fn requests(&self) -> u64 {
        self.requests.load(Ordering::Relaxed)
    }
}

fn frame(out: &mut Vec<u8>, kind: u8, flags: u8, stream: u32, payload: &[u8]) {
    out.extend_from_slice(&(payload.len() as u32).to_be_bytes()[1..]);
    out.push(kind);
    out.push(flags);
    out.extend_from_slice(&stream.to_be_bytes());
    out.extend_from_slice(payload);
}

/// `:status 200` (static index 8) and `content-length: 2`, then DATA `ok` ending the stream.
fn ok(out: &mut Vec<u8>, stream: u32) {
    let block = [0x88, 0x0f, 0x0d, 0x01, b'2'];
    frame(out, HEADERS, END_HEADERS, stream, &block);
    frame(out, DATA, END_STREAM, stream, b"ok");
}

/// Reads one frame: (type, flags, stream, payload); `None` at the end of the connection.
fn read_frame(tcp: &mut TcpStream) -> Option<(u8, u8, u32, Vec<u8>)> {
    let mut head = [0u8; 9];
    tcp.read_exact(&mut head).ok()?;
    let len = u32::from_be_bytes([0, head[0], head[1], head[2]]) as usize;
    let mut payload = vec![0; len];
    tcp.read_exact(&mut payload).ok()?;
    let stream = u32::from_be_bytes([head[5], head[6], head[7], head[8]]) & 0x7fff_ffff;
    Some((head[3], head[4], stream, payload))
}

/// Serves connection number `n` (from 1) as `behaviour` says.
fn serve(mut tcp: TcpStream, behaviour: H2Behaviour, requests: &AtomicU64, n: u64) {
    let mut preface = [0u8; PREFACE_LEN];
    if tcp.read_exact(&mut preface).is_err() {
        return;
    }
    if behaviour == H2Behaviour::NoSettings {
        // Holds the connection, silent, until the client goes.
        let mut sink = [0u8; 4096];
        while matches!(tcp.read(&mut sink), Ok(n) if n > 0) {}
        return;
    }
    let mut out = Vec::new();
    let settings: &[u8] = match behaviour {
        // SETTINGS_INITIAL_WINDOW_SIZE (0x4) = 0.
        H2Behaviour::WindowNeverOpened => &[0, 4, 0, 0, 0, 0],
        _ => &[],
    };
    frame(&mut out, SETTINGS, 0, 0, settings);
    if behaviour == H2Behaviour::Garbage {
        frame(&mut out, DATA, 0, 0, b"not a frame a server may send");
    }
    if tcp.write_all(&out).is_err() {
        return;
    }
    let mut answered = 0;
    while let Some((kind, flags, stream, block)) = read_frame(&mut tcp) {
        if kind != HEADERS {
            continue;
        }
        requests.fetch_add(1, Ordering::Relaxed);
        let mut out = Vec::new();
        match behaviour {
            H2Behaviour::Ok => ok(&mut out, stream),
            H2Behaviour::GoawayAfter { per_conn } => {
                answered += 1;
                ok(&mut out, stream);
                if answered == per_conn {
                    let mut goaway = stream.to_be_bytes().to_vec();
                    goaway.extend_from_slice(&0u32.to_be_bytes());
                    frame(&mut out, GOAWAY, 0, 0, &goaway);
                    let _ = tcp.write_all(&out);
                    // Requests already on their way are read (and counted), not answered;
                    // then the end.
                    let _ = tcp.set_read_timeout(Some(Duration::from_millis(50)));
                    while let Some((kind, ..)) = read_frame(&mut tcp) {
                        if kind == HEADERS {
                            requests.fetch_add(1, Ordering::Relaxed);
                        }
                    }
                    return;
                }
            }
            H2Behaviour::Reset => frame(&mut out, RST_STREAM, 0, stream, &7u32.to_be_bytes()),
            H2Behaviour::HugeHeaderList => {
                let mut block = vec![0x88, 0x40, 0x01, b'x', 0x7f, 0xa1, 0x1e];
                block.extend(std::iter::repeat_n(b'v', 4_000));
                block.extend(std::iter::repeat_n(0xbe, 20));
                let (first, rest) = block.split_at(2_000);
                frame(&mut out, HEADERS, END_STREAM, stream, first);
                frame(&mut out, CONTINUATION, END_HEADERS, stream, rest);
            }
            // The body never comes (the window is closed): nothing to answer.
            H2Behaviour::WindowNeverOpened => {}
            H2Behaviour::Garbage | H2Behaviour::NoSettings => {}
            H2Behaviour::Login => login(&mut out, stream, &fields(&block), n),
        }
        let _ = flags;
        if tcp.write_all(&out).is_err() {
            return;
        }
    }
}

/// The login's answer to a request of `fields`, on the connection of visitor `n`.
fn login(out: &mut Vec<u8>, stream: u32, fields: &[(String, String)], n: u64) {
    let field = |name: &str| fields.iter().find(|(f, _)| f == name).map(|(_, v)| v.as_str());
    let (sid, token) = (format!("sid=s{n}"), format!("t{n}"));
    let (status, cookie, body) = match field(":path").unwrap_or("") {
        "/login" => {
            let form = format!(r#"<input name="token" value="{token}">"#);
            (b"200", Some(format!("{sid}; Path=/")), form)
        }
        "/private" => {
            let carried = field("cookie").is_some_and(|c| c.split("; ").any(|p| p == sid));
            match carried && field("x-token") == Some(&token) {
                true => (b"200", None, "secret".to_string()),
                false => (b"403", None, "no".to_string()),
            }
        }
        _ => (b"200", None, "ok".to_string()),
    };
    // Literals without indexing (RFC 7541 section 6.2.2) named by static index: :status (8),
    // set-cookie (55), content-length (28); values short enough for a one-byte length.
    let mut head = vec![0x08, 3];
    head.extend_from_slice(status);
    let mut literal = |index: &[u8], value: &str| {
        head.extend_from_slice(index);
        head.push(value.len() as u8);
        head.extend_from_slice(value.as_bytes());
    };
    if let Some(cookie) = cookie {
        literal(&[0x0f, 0x28], &cookie);
    }
    literal(&[0x0f, 0x0d], &body.len().to_string());
    frame(out, HEADERS, END_HEADERS, stream, &head);
    frame(out, DATA, END_STREAM, stream, body.as_bytes());
}

/// The fields of a request's header block, as a client that indexes nothing sends them:
/// static table entries (section 6.1) and literals without indexing (section 6.2.2), Huffman
/// coded or not; a name the static table holds is given for the few a login reads.
fn fields(block: &[u8]) -> Vec<(String, String)> {
    const NAMES: [(usize, &str); 7] = [
        (1, ":authority"),
        (2, ":method"),
        (4, ":path"),
        (6, ":scheme"),
        (19, "accept"),
        (32, "cookie"),
        (58, "user-agent"),
    ];
    let name_of = |i: usize| {
        let at = NAMES.iter().rev().find(|(n, _)| *n <= i).map_or("?", |(_, name)| name);
        at.to_string()
    };
    let mut out = Vec::new();
    let mut at = 0;
    while at < block.len() {
        let first = block[at];
        if first & 0x80 != 0 {
            // Indexed: :method GET (2), :path / (4), :scheme http (6) are all a login meets.
            let i = integer(block, &mut at, 7);
            let value = match i {
                2 => "GET",
                3 => "POST",
                4 => "/",
                6 => "http",
                7 => "https",
                _ => "",
            };
            out.push((name_of(i), value.to_string()));
            continue;
        }
        let index = integer(block, &mut at, 4);
        let name = if index == 0 { string(block, &mut at) } else { name_of(index) };
        out.push((name, string(block, &mut at)));
    }
    out
}

/// An HPACK integer with a `prefix`-bit prefix (RFC 7541 section 5.1), from `at` on.
fn integer(block: &[u8], at: &mut usize, prefix: u8) -> usize {
    let max = (1usize << prefix) - 1;
    let mut value = (block[*at] as usize) & max;
    *at += 1;
    if value < max {
        return value;
    }
    let mut shift = 0;
    loop {
        let b = block[*at];
        *at += 1;
        value += ((b & 0x7f) as usize) << shift;
        shift += 7;
        if b & 0x80 == 0 {
            return value;
        }
    }
}

/// An HPACK string literal (section 5.2), Huffman coded or not.
fn string(block: &[u8], at: &mut usize) -> String {
    let huffman = block[*at] & 0x80 != 0;
    let len = integer(block, at, 7);
    let raw = &block[*at..*at + len];
    *at += len;
    let mut text = Vec::new();
    if huffman {
        httlib_huffman::decode(raw, &mut text, httlib_huffman::DecoderSpeed::FourBits)
            .expect("a valid Huffman string");
    } else {
        text.extend_from_slice(raw);
    }
    String::from_utf8_lossy(&text).into_owned()
}
