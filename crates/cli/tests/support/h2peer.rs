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
                c.fetch_add(1, Ordering::Relaxed);
                let r = r.clone();
                thread::spawn(move || serve(tcp, behaviour, &r));
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

fn serve(mut tcp: TcpStream, behaviour: H2Behaviour, requests: &AtomicU64) {
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
    while let Some((kind, flags, stream, _)) = read_frame(&mut tcp) {
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
        }
        let _ = flags;
        if tcp.write_all(&out).is_err() {
            return;
        }
    }
}
