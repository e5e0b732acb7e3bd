//! HTTP/2 client connections (RFC 9113), sans I/O: a [`Session`] is fed what its socket read
//! and holds what to write; the worker's loop does the I/O, as for HTTP/1.1.
//!
//! A session owns a fixed set of stream slots (`--streams`, h2load's `-m`), each carrying one
//! request at a time with its own [`Exchange`]; a request is placed on a free slot and sent as
//! soon as the connection and the server's SETTINGS_MAX_CONCURRENT_STREAMS allow. The requests'
//! HEADERS blocks are encoded once for the run ([`Requests`]): a connection's first request
//! enters the fields all requests share in HPACK's table, later ones name them by index.
//!
//! What a server can make this code do is bounded as the HTTP/1.1 parser's is: frames by
//! SETTINGS_MAX_FRAME_SIZE, header blocks by `Limits::max_head_bytes`, HPACK by its table size
//! and header-list limits (`hpack`). Flow control: our windows are opened wide at once (as
//! h2load does, 2^30 - 1) and refilled as bodies arrive; the server's windows bound the request
//! bodies we send. A failure of the connection ([`ConnError`]) ends every stream on it; one
//! of a stream (RST_STREAM, a malformed response) ends only that stream.

pub(crate) mod frame;
pub(crate) mod hpack;
pub(crate) mod request;

use std::collections::VecDeque;
use std::time::Instant;

use request::Indexing;
pub use request::Requests;

use crate::exchange::Exchange;
use crate::http::Limits;
use crate::ErrorClass;

/// The client connection preface (RFC 9113 section 3.4).
pub const PREFACE: &[u8] = b"PRI * HTTP/2.0\r\n\r\nSM\r\n\r\n";

/// Our receive windows, stream and connection: h2load's default (`-w 30 -W 30`).
const WINDOW: u32 = (1 << 30) - 1;
/// The protocol's initial window (section 6.9.2), before SETTINGS and WINDOW_UPDATE change it.
const INITIAL_WINDOW: i64 = 65_535;
/// The largest a flow-control window may be (section 6.9.1).
const MAX_WINDOW: i64 = (1 << 31) - 1;

/// Error codes (RFC 9113 section 7).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
#[repr(u32)]
pub enum ErrorCode {
    NoError = 0x0,
    Protocol = 0x1,
    FlowControl = 0x3,
    FrameSize = 0x6,
    Cancel = 0x8,
    Compression = 0x9,
}

/// The name of an error code as RFC 9113 section 7 spells it.
pub fn code_name(code: u32) -> &'static str {
    match code {
        0x0 => "NO_ERROR",
        0x1 => "PROTOCOL_ERROR",
        0x2 => "INTERNAL_ERROR",
        0x3 => "FLOW_CONTROL_ERROR",
        0x4 => "SETTINGS_TIMEOUT",
        0x5 => "STREAM_CLOSED",
        0x6 => "FRAME_SIZE_ERROR",
        0x7 => "REFUSED_STREAM",
        0x8 => "CANCEL",
        0x9 => "COMPRESSION_ERROR",
        0xa => "CONNECT_ERROR",
        0xb => "ENHANCE_YOUR_CALM",
        0xc => "INADEQUATE_SECURITY",
        0xd => "HTTP_1_1_REQUIRED",
        _ => "unknown error code",
    }
}

/// Why a request failed over HTTP/2, kept with the counts of its class (`errors_h2`): what
/// happened, and the error code the server sent when it sent one.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Reason {
    pub what: &'static str,
    pub code: Option<u32>,
}

impl std::fmt::Display for Reason {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self.code {
            Some(code) => write!(f, "{} {}", self.what, code_name(code)),
            None => f.write_str(self.what),
        }
    }
}

/// A connection error (RFC 9113 section 5.4.1): the code we send in our GOAWAY, and why.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct ConnError {
    pub code: ErrorCode,
    pub what: &'static str,
}

impl ConnError {
    pub fn protocol(what: &'static str) -> ConnError {
        ConnError { code: ErrorCode::Protocol, what }
    }

    pub fn frame_size(what: &'static str) -> ConnError {
        ConnError { code: ErrorCode::FrameSize, what }
    }

    /// The reason its streams fail with, in class `h2_conn`.
    pub fn reason(&self) -> Reason {
        Reason { what: self.what, code: None }
    }
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum StreamState {
    Free,
    /// A request waits for the connection, the server's stream limit or a retry.
    Pending,
    /// HEADERS sent; the response is awaited or arriving.
    Open,
    /// The stream ended (its outcome is in `done`); the slot is freed once it is recorded.
    Ended,
}

impl StreamState {
    /// Whether a stream in this state fails when its connection does: an open one, and
    /// (`pending`) one waiting for it.
    pub fn fails_with_connection(self, pending: bool) -> bool {
        match self {
            StreamState::Open => true,
            StreamState::Pending => pending,
            StreamState::Free | StreamState::Ended => false,
        }
    }
}

/// A stream slot of either multiplexed protocol (this one's [`Slot`], HTTP/3's), as its
/// connection counts them ([`in_flight`], [`measured_in_flight`], [`pending`]).
pub(crate) trait StreamSlot {
    fn state(&self) -> StreamState;
    fn measured(&self) -> bool;
}

/// Requests waiting or open.
pub(crate) fn in_flight(slots: &[impl StreamSlot]) -> usize {
    slots.iter().filter(|s| s.state() != StreamState::Free).count()
}

pub(crate) fn measured_in_flight(slots: &[impl StreamSlot]) -> u64 {
    slots.iter().filter(|s| s.state() != StreamState::Free && s.measured()).count() as u64
}

pub(crate) fn pending(slots: &[impl StreamSlot]) -> bool {
    slots.iter().any(|s| s.state() == StreamState::Pending)
}

impl StreamSlot for Slot {
    fn state(&self) -> StreamState {
        self.state
    }

    fn measured(&self) -> bool {
        self.ex.measured
    }
}

/// One stream slot: the request it carries and its response so far.
#[derive(Debug)]
pub(crate) struct Slot {
    pub ex: Exchange,
    pub state: StreamState,
    id: u32,
    /// The final (non-1xx) response head has arrived.
    final_head: bool,
    pub status: u16,
    pub body_len: u64,
    content_length: Option<u64>,
    /// Body bytes received and not yet given back by a WINDOW_UPDATE.
    recv_unacked: u32,
    /// What the server lets us send on this stream (its body).
    send_window: i64,
    body_sent: usize,
    /// Refused once by a GOAWAY and sent again: a second refusal fails it.
    retried: bool,
    /// Its request is a HEAD: the response has no body whatever its headers say.
    head: bool,
    /// What its request put on the wire (frame headers included), once sent whole.
    pub wire: u64,
    /// A request of its own instead of the run's table's (a visit file's, rendered per
    /// visitor): its header block, literals that enter nothing in HPACK's table, and its body.
    own: Option<(Vec<u8>, Vec<u8>)>,
    /// The response's header fields, when the session captures them (a visit's captures).
    pub headers: Vec<(String, String)>,
}

impl Slot {
    /// Whether [`Session::send`] has something of this slot's to send: a request waiting for
    /// its stream, or the rest of its body.
    fn waits(&self, requests: &Requests) -> bool {
        match self.state {
            StreamState::Pending => true,
            StreamState::Open => {
                let body = match &self.own {
                    Some((_, body)) => body.len(),
                    None => requests.get(self.ex.entry as usize).body.len(),
                };
                self.body_sent < body
            }
            StreamState::Free | StreamState::Ended => false,
        }
    }
}

/// What became of a stream, for the worker to record.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Outcome {
    Complete,
    Failed(ErrorClass, Reason),
    /// Refused by a GOAWAY before the server processed it: it waits to be sent again on a new
    /// connection (RFC 9113 section 6.8 makes that safe), and its first sending did not count.
    Refused,
}

/// The server's SETTINGS that bind us (section 6.5.2).
#[derive(Debug, Clone, Copy)]
struct Peer {
    max_streams: u32,
    initial_window: i64,
    max_frame: usize,
    /// SETTINGS_HEADER_TABLE_SIZE went below the initial 4096: our next block must say so
    /// (RFC 7541 section 4.2).
    table_update: Option<u32>,
    /// The smallest table size it has announced on this connection: below what the shared
    /// fields take, some of them may have been evicted, and the connection stops indexing.
    table_floor: usize,
}

impl Default for Peer {
    fn default() -> Self {
        Peer {
            max_streams: u32::MAX,
            initial_window: INITIAL_WINDOW,
            max_frame: frame::MAX_FRAME,
            table_update: None,
            table_floor: hpack::TABLE_SIZE,
        }
    }
}

/// One HTTP/2 connection's protocol state and its stream slots.
#[derive(Debug)]
pub(crate) struct Session {
    reader: frame::Reader,
    hpack: hpack::Decoder,
    /// A header block that spans HEADERS and CONTINUATION frames: (stream, END_STREAM).
    block_of: Option<(u32, bool)>,
    block: Vec<u8>,
    /// Its wire bytes so far, counted in the stream's response bytes.
    block_wire: usize,
    max_block: usize,
    /// Bytes to write, from `out_pos` on.
    out: Vec<u8>,
    out_pos: usize,
    next_id: u32,
    open: u32,
    peer: Peer,
    send_window: i64,
    recv_unacked: u32,
    /// The server's first frame, which must be SETTINGS, has arrived.
    settings_seen: bool,
    /// Whether the fields all requests share are in the server's table.
    indexing: Indexing,
    /// The connection is established and our preface is queued: requests may go.
    ready: bool,
    /// The server's GOAWAY: the last stream it will process, and its code.
    pub goaway: Option<(u32, u32)>,
    pub slots: Vec<Slot>,
    /// Streams that ended since the worker last looked, with how.
    pub done: VecDeque<(usize, Outcome)>,
    /// The first Server header seen, when asked for.
    pub server: Option<String>,
    capture_server: bool,
    /// Every response's header fields are kept in its slot (`Slot::headers`).
    capture_headers: bool,
}

impl Session {
    pub fn new(streams: usize, limits: &Limits, mut exchange: impl FnMut() -> Exchange) -> Session {
        let slot = |ex| Slot {
            ex,
            state: StreamState::Free,
            id: 0,
            final_head: false,
            status: 0,
            body_len: 0,
            content_length: None,
            recv_unacked: 0,
            send_window: 0,
            body_sent: 0,
            retried: false,
            head: false,
            wire: 0,
            own: None,
            headers: Vec::new(),
        };
        Session {
            reader: frame::Reader::default(),
            hpack: hpack::Decoder::new(limits.max_head_bytes),
            block_of: None,
            block: Vec::new(),
            block_wire: 0,
            max_block: limits.max_head_bytes,
            out: Vec::with_capacity(4096),
            out_pos: 0,
            next_id: 1,
            open: 0,
            peer: Peer::default(),
            send_window: INITIAL_WINDOW,
            recv_unacked: 0,
            settings_seen: false,
            indexing: Indexing::Unseeded,
            ready: false,
            goaway: None,
            slots: (0..streams).map(|_| slot(exchange())).collect(),
            done: VecDeque::with_capacity(streams),
            server: None,
            capture_server: true,
            capture_headers: false,
        }
    }

    /// Keeps every response's header fields (`Slot::headers`): a visit's captures and its
    /// cookie jar read them. Off, only `:status`, content-length and Server are decoded.
    pub fn capture_headers(&mut self) {
        self.capture_headers = true;
    }

    /// Requests waiting or open.
    pub fn in_flight(&self) -> usize {
        in_flight(&self.slots)
    }

    pub fn measured_in_flight(&self) -> u64 {
        measured_in_flight(&self.slots)
    }

    pub fn pending(&self) -> bool {
        pending(&self.slots)
    }

    /// A slot with no request, if new requests may still go on this connection.
    pub fn free_slot(&self) -> Option<usize> {
        if self.goaway.is_some() {
            return None;
        }
        self.slots.iter().position(|s| s.state == StreamState::Free)
    }

    /// Over TLS, the handshake just ended at `now`: the requests rustls held until then went
    /// out with its end, so that is when they were written.
    pub fn sent_with_handshake(&mut self, now: Instant) {
        for slot in self.slots.iter_mut().filter(|s| s.state == StreamState::Open) {
            slot.ex.written = slot.ex.written.max(now);
        }
    }

    /// A GOAWAY came and no stream it let through is still open: the connection has nothing
    /// more to give.
    pub fn drained(&self) -> bool {
        self.goaway.is_some() && self.open == 0
    }

    /// A new connection for this session: fresh protocol state, our preface queued (the
    /// preface, SETTINGS, and the connection window opened wide), the waiting requests sent.
    pub fn connected(&mut self) {
        self.reader = frame::Reader::default();
        self.hpack = hpack::Decoder::new(self.max_block);
        self.block_of = None;
        self.out.clear();
        self.out_pos = 0;
        self.next_id = 1;
        self.open = 0;
        self.peer = Peer::default();
        self.send_window = INITIAL_WINDOW;
        self.recv_unacked = 0;
        self.settings_seen = false;
        self.indexing = Indexing::Unseeded;
        self.goaway = None;
        self.ready = true;
        self.out.extend_from_slice(PREFACE);
        // SETTINGS_HEADER_TABLE_SIZE 0: a load generator reads three fields of a response head,
        // and a server that indexes nothing spares it decoding the rest (nginx indexes its
        // Huffman-coded Date, Last-Modified and ETag: decoding them to keep them was 12% of the
        // client's CPU at c=10 x m=10). Until the server applies it, the 4096 of RFC 7541 stand.
        // SETTINGS_ENABLE_PUSH 0, SETTINGS_INITIAL_WINDOW_SIZE, SETTINGS_MAX_HEADER_LIST_SIZE.
        let params = [(1, 0), (2, 0), (4, WINDOW), (6, self.max_block as u32)];
        frame::put_settings(&mut self.out, &params);
        frame::put_window_update(&mut self.out, 0, WINDOW - INITIAL_WINDOW as u32);
    }

    /// The connection is gone: nothing more is sent on it until [`Session::connected`].
    pub fn disconnected(&mut self) {
        self.ready = false;
        // A GOAWAY binds only its connection: the next one takes new streams again.
        self.goaway = None;
        self.out.clear();
        self.out_pos = 0;
        self.open = 0;
    }

    /// Places a request on slot `s` (its exchange begun by the caller, which says which
    /// request it is; `head` when that is a HEAD); it is sent by the next [`Session::send`].
    pub fn place(&mut self, s: usize, head: bool) {
        let slot = &mut self.slots[s];
        slot.state = StreamState::Pending;
        slot.retried = false;
        slot.head = head;
    }

    /// Places a request of its own on slot `s`: `block` its header fields as literals that
    /// index nothing ([`hpack::put_field`]), `body` its body; sent as [`Session::place`]'s are.
    pub fn place_own(&mut self, s: usize, head: bool, block: Vec<u8>, body: Vec<u8>) {
        self.place(s, head);
        self.slots[s].own = Some((block, body));
    }

    /// Ends every request on this connection without an outcome (their visit ended) and
    /// forgets the connection: the session is ready for [`Session::connected`] again.
    pub fn abandon(&mut self) {
        for slot in self.slots.iter_mut() {
            slot.state = StreamState::Free;
            slot.own = None;
        }
        self.done.clear();
        self.disconnected();
    }

    /// Frees slot `s` once its outcome is recorded.
    pub fn release(&mut self, s: usize) {
        self.slots[s].state = StreamState::Free;
    }

    /// Ends the request on slot `s` without its response (a timeout): an open stream is reset
    /// (CANCEL), and what the server still sends on it is ignored.
    pub fn cancel(&mut self, s: usize) {
        let slot = &mut self.slots[s];
        if slot.state == StreamState::Open {
            self.open -= 1;
            if self.ready {
                frame::put_rst_stream(&mut self.out, slot.id, ErrorCode::Cancel);
            }
        }
        slot.state = StreamState::Free;
    }

    /// Fails every request on this connection: open streams (`pending` too: those still
    /// waiting for it), each to `done` with `class` and `reason`.
    pub fn fail_all(&mut self, class: ErrorClass, reason: Option<Reason>, pending: bool) {
        let reason = reason.unwrap_or(Reason { what: "", code: None });
        for (i, slot) in self.slots.iter_mut().enumerate() {
            if slot.state.fails_with_connection(pending) {
                slot.state = StreamState::Ended;
                self.done.push_back((i, Outcome::Failed(class, reason)));
            }
        }
        self.open = 0;
    }

    /// Sends what waits and may go: new streams as the server's stream limit allows, and
    /// request bodies as its windows allow; each slot's request is its exchange's entry of
    /// `requests`. Returns the measured requests whose last byte was queued, and what they put
    /// on the wire.
    pub fn send(&mut self, requests: &Requests, now: Instant) -> (u64, u64) {
        if !self.ready || self.goaway.is_some() {
            return (0, 0);
        }
        if self.peer.table_floor < requests.shared_size() {
            self.indexing = Indexing::Off;
        }
        let (mut sent, mut bytes) = (0, 0);
        for i in 0..self.slots.len() {
            let entry = self.slots[i].ex.entry as usize;
            if !self.slots[i].waits(requests) {
                // Called for each stream that ends (the closed loop places the next request
                // at once), so passing over the others must cost next to nothing.
                continue;
            }
            // A request of its own is lent out of its slot while it is sent.
            let own = self.slots[i].own.take();
            let body: &[u8] = match &own {
                Some((_, body)) => body,
                None => &requests.get(entry).body,
            };
            let before = self.out.len();
            let mut finished = false;
            if self.slots[i].state == StreamState::Pending && self.open < self.peer.max_streams {
                if self.next_id > 0x7fff_ffff {
                    // Stream ids are spent (section 5.1.1): the connection ends as if the
                    // server had said GOAWAY, and its waiting requests go on a new one.
                    self.goaway = Some((self.next_id - 2, 0));
                    break;
                }
                let block = own.as_ref().map(|(b, _)| &b[..]);
                self.open_stream(i, requests, entry, block, body.is_empty());
                self.slots[i].wire = 0;
                self.slots[i].ex.written = now;
                finished = body.is_empty();
            }
            let slot = &self.slots[i];
            if slot.state == StreamState::Open && slot.body_sent < body.len() {
                finished = self.send_body(i, body);
            }
            let slot = &mut self.slots[i];
            slot.own = own;
            slot.wire += (self.out.len() - before) as u64;
            if finished {
                slot.ex.written = now;
                if slot.ex.measured {
                    sent += 1;
                    bytes += slot.wire;
                }
            }
        }
        (sent, bytes)
    }

    /// Opens a stream for slot `i`'s request: the table's `entry`, or its `own` block.
    fn open_stream(
        &mut self,
        i: usize,
        requests: &Requests,
        entry: usize,
        own: Option<&[u8]>,
        bodiless: bool,
    ) {
        let id = self.next_id;
        self.next_id += 2;
        self.open += 1;
        let window = self.peer.initial_window;
        let slot = &mut self.slots[i];
        slot.state = StreamState::Open;
        slot.id = id;
        slot.final_head = false;
        slot.status = 0;
        slot.body_len = 0;
        slot.content_length = None;
        slot.recv_unacked = 0;
        slot.send_window = window;
        slot.body_sent = 0;
        slot.headers.clear();
        let end_stream = if bodiless { frame::END_STREAM } else { 0 };
        // After the server lowered its table size, our next block starts with a dynamic table
        // size update (RFC 7541 section 4.2); that happens once, so it may allocate.
        let mut prefix = Vec::new();
        if let Some(size) = self.peer.table_update.take() {
            hpack::put_size_update(&mut prefix, size as usize);
        }
        let prefix = &prefix[..];
        let indexing = self.indexing;
        if indexing == Indexing::Unseeded && own.is_none() {
            self.indexing = Indexing::Seeded;
        }
        let put = |out: &mut Vec<u8>| match own {
            Some(block) => out.extend_from_slice(block),
            None => requests.put_block(out, entry, indexing),
        };
        let own_len = own.map(<[u8]>::len);
        let block_len =
            prefix.len() + own_len.unwrap_or_else(|| requests.block_len(entry, indexing));
        let max = self.peer.max_frame;
        if block_len <= max {
            frame::put_head(
                &mut self.out,
                block_len,
                frame::HEADERS,
                end_stream | frame::END_HEADERS,
                id,
            );
            self.out.extend_from_slice(prefix);
            put(&mut self.out);
            return;
        }
        // A block larger than a frame: HEADERS, then CONTINUATION frames (section 6.10).
        let mut whole = Vec::with_capacity(block_len);
        whole.extend_from_slice(prefix);
        put(&mut whole);
        for (n, chunk) in whole.chunks(max).enumerate() {
            let last = (n + 1) * max >= whole.len();
            let flags = if last { frame::END_HEADERS } else { 0 };
            let kind = if n == 0 { frame::HEADERS } else { frame::CONTINUATION };
            let flags = if n == 0 { flags | end_stream } else { flags };
            frame::put_head(&mut self.out, chunk.len(), kind, flags, id);
            self.out.extend_from_slice(chunk);
        }
    }

    /// Sends as much of slot `i`'s body as the windows allow; true when its last byte went.
    fn send_body(&mut self, i: usize, body: &[u8]) -> bool {
        let slot = &mut self.slots[i];
        while slot.body_sent < body.len() {
            let room = slot.send_window.min(self.send_window).min(self.peer.max_frame as i64);
            if room <= 0 {
                // The server has not opened its window: the body waits for a WINDOW_UPDATE,
                // and the request's deadline bounds the wait.
                return false;
            }
            let n = (body.len() - slot.body_sent).min(room as usize);
            let last = slot.body_sent + n == body.len();
            let flags = if last { frame::END_STREAM } else { 0 };
            frame::put_head(&mut self.out, n, frame::DATA, flags, slot.id);
            self.out.extend_from_slice(&body[slot.body_sent..slot.body_sent + n]);
            slot.body_sent += n;
            slot.send_window -= n as i64;
            self.send_window -= n as i64;
        }
        true
    }

    /// Bytes waiting to be written.
    pub fn output(&self) -> &[u8] {
        &self.out[self.out_pos..]
    }

    /// `n` bytes of [`Session::output`] were written.
    pub fn wrote(&mut self, n: usize) {
        self.out_pos += n;
        if self.out_pos == self.out.len() {
            self.out.clear();
            self.out_pos = 0;
        }
    }

    /// Takes the bytes the connection read at `now`. Streams that end go to `done`, their
    /// body bytes to their validation; an error of the connection is returned, and the
    /// caller ends it.
    pub fn feed(&mut self, data: &[u8], now: Instant) -> Result<(), ConnError> {
        let mut reader = std::mem::take(&mut self.reader);
        let result = reader.feed(data, &mut |f, wire| self.on_frame(f, wire, now));
        self.reader = reader;
        if let Err(e) = result {
            frame::put_goaway(&mut self.out, self.next_id.saturating_sub(2), e.code);
        }
        result
    }

    /// The connection reached its end: the open streams fail, as `h2_conn` after a GOAWAY
    /// (the server said it was going), otherwise as a reset (or a short body when a response
    /// had begun).
    pub fn on_eof(&mut self) {
        let goaway = self.goaway;
        for (i, slot) in self.slots.iter_mut().enumerate() {
            if slot.state != StreamState::Open {
                continue;
            }
            slot.state = StreamState::Ended;
            let outcome = match (goaway, slot.final_head) {
                (Some((_, code)), _) => Outcome::Failed(
                    ErrorClass::H2Conn,
                    Reason { what: "connection closed after GOAWAY", code: Some(code) },
                ),
                (None, true) => Outcome::Failed(ErrorClass::ShortBody, NO_REASON),
                (None, false) => Outcome::Failed(ErrorClass::Connreset, NO_REASON),
            };
            self.done.push_back((i, outcome));
        }
        self.disconnected();
    }

    fn slot_of(&self, stream: u32) -> Option<usize> {
        self.slots.iter().position(|s| s.state == StreamState::Open && s.id == stream)
    }

    /// A frame on a stream we know of no request for: one we opened and ended (a timeout,
    /// a reset) is ignored; one never opened is a protocol error (section 5.1).
    fn unknown_stream(&self, stream: u32) -> Result<(), ConnError> {
        if !stream.is_multiple_of(2) && stream < self.next_id {
            Ok(())
        } else {
            Err(ConnError::protocol("a frame on a stream never opened"))
        }
    }

    fn on_frame(
        &mut self,
        f: frame::Frame<'_>,
        wire: usize,
        now: Instant,
    ) -> Result<(), ConnError> {
        use frame::Frame;
        if !self.settings_seen {
            // The server's preface is a SETTINGS frame, first (section 3.4).
            match f {
                Frame::Settings { ack: false, .. } => self.settings_seen = true,
                _ => return Err(ConnError::protocol("the server's first frame was not SETTINGS")),
            }
        }
        if let Some((stream, _)) = self.block_of {
            // Nothing may come between a header block's frames (section 6.10).
            match f {
                Frame::Continuation { stream: s, .. } if s == stream => {}
                _ => return Err(ConnError::protocol("a frame inside a header block")),
            }
        }
        match f {
            Frame::Data { stream, data, flow, end_stream } => {
                self.on_data(stream, data, flow, wire, end_stream)?
            }
            Frame::Headers { stream, fragment, end_stream, end_headers } => {
                self.on_headers(stream, fragment, end_stream, end_headers, wire, now)?
            }
            Frame::Continuation { stream, fragment, end_headers } => {
                self.on_continuation(stream, fragment, end_headers, wire)?
            }
            Frame::RstStream { stream, code } => match self.slot_of(stream) {
                Some(s) => {
                    let reason = Reason { what: "RST_STREAM", code: Some(code) };
                    self.end_stream(s, Outcome::Failed(ErrorClass::H2Stream, reason));
                }
                None => self.unknown_stream(stream)?,
            },
            Frame::Settings { ack: false, params } => {
                self.on_settings(params)?;
                frame::put_head(&mut self.out, 0, frame::SETTINGS, frame::ACK, 0);
            }
            Frame::Settings { ack: true, .. } => {}
            Frame::Ping { ack: false, data } => {
                frame::put_head(&mut self.out, 8, frame::PING, frame::ACK, 0);
                self.out.extend_from_slice(&data);
            }
            Frame::Ping { ack: true, .. } => {}
            Frame::GoAway { last_stream, code } => self.on_goaway(last_stream, code),
            Frame::WindowUpdate { stream, increment } => {
                self.on_window_update(stream, increment)?
            }
            Frame::PushPromise => {
                return Err(ConnError::protocol("PUSH_PROMISE with push disabled"));
            }
            Frame::Ignored { .. } => {}
        }
        Ok(())
    }

    /// A HEADERS frame: the whole block, or its first fragment kept until the CONTINUATION
    /// that ends it (section 6.10). Its stream's first byte arrived at `now`.
    fn on_headers(
        &mut self,
        stream: u32,
        fragment: &[u8],
        end_stream: bool,
        end_headers: bool,
        wire: usize,
        now: Instant,
    ) -> Result<(), ConnError> {
        if stream.is_multiple_of(2) || stream >= self.next_id {
            return Err(ConnError::protocol("HEADERS on a stream never opened"));
        }
        if let Some(s) = self.slot_of(stream) {
            self.slots[s].ex.first_byte.get_or_insert(now);
        }
        if end_headers {
            return self.on_block(stream, fragment, end_stream, wire);
        }
        if fragment.len() > self.max_block {
            return Err(ConnError::protocol(BLOCK_TOO_LARGE));
        }
        self.block.clear();
        self.block.extend_from_slice(fragment);
        self.block_wire = wire;
        self.block_of = Some((stream, end_stream));
        Ok(())
    }

    /// A CONTINUATION frame: one more fragment of the block its HEADERS began, which is
    /// decoded once it ends. The block's buffer is lent to the decoder and kept for reuse.
    fn on_continuation(
        &mut self,
        stream: u32,
        fragment: &[u8],
        end_headers: bool,
        wire: usize,
    ) -> Result<(), ConnError> {
        let Some((_, end_stream)) = self.block_of else {
            return Err(ConnError::protocol("CONTINUATION without HEADERS"));
        };
        if self.block.len() + fragment.len() > self.max_block {
            return Err(ConnError::protocol(BLOCK_TOO_LARGE));
        }
        self.block.extend_from_slice(fragment);
        self.block_wire += wire;
        if !end_headers {
            return Ok(());
        }
        self.block_of = None;
        let block = std::mem::take(&mut self.block);
        let wire = self.block_wire;
        let done = self.on_block(stream, &block, end_stream, wire);
        self.block = block;
        done
    }

    /// A WINDOW_UPDATE: more room to send on the connection (stream 0) or on one stream; a
    /// window past 2^31-1 is a flow-control error (section 6.9.1).
    fn on_window_update(&mut self, stream: u32, increment: u32) -> Result<(), ConnError> {
        if increment == 0 {
            return Err(ConnError::protocol("WINDOW_UPDATE of 0"));
        }
        let window = match stream {
            0 => Some(&mut self.send_window),
            _ => self.slot_of(stream).map(|s| &mut self.slots[s].send_window),
        };
        if let Some(w) = window {
            *w += i64::from(increment);
            if *w > MAX_WINDOW {
                return Err(ConnError {
                    code: ErrorCode::FlowControl,
                    what: "a window beyond 2^31-1",
                });
            }
        }
        Ok(())
    }

    fn on_data(
        &mut self,
        stream: u32,
        data: &[u8],
        flow: usize,
        wire: usize,
        end_stream: bool,
    ) -> Result<(), ConnError> {
        // Every DATA byte counts against the connection's window, whatever its stream's fate
        // (section 6.9): give it back once half the window is used.
        self.recv_unacked += flow as u32;
        if self.recv_unacked >= WINDOW / 2 {
            frame::put_window_update(&mut self.out, 0, self.recv_unacked);
            self.recv_unacked = 0;
        }
        let Some(s) = self.slot_of(stream) else { return self.unknown_stream(stream) };
        let slot = &mut self.slots[s];
        slot.ex.resp_bytes += wire as u64;
        if !slot.final_head {
            return self.stream_error(s, "DATA before the response head");
        }
        slot.body_len += data.len() as u64;
        if !data.is_empty() {
            slot.ex.check.update(data);
        }
        slot.recv_unacked += flow as u32;
        if slot.recv_unacked >= WINDOW / 2 && !end_stream {
            frame::put_window_update(&mut self.out, stream, slot.recv_unacked);
            slot.recv_unacked = 0;
        }
        if end_stream {
            self.finish(s);
        }
        Ok(())
    }

    /// A whole header block for `stream`. It is decoded whatever the stream's fate, since
    /// HPACK's table is the connection's (section 4.3).
    fn on_block(
        &mut self,
        stream: u32,
        block: &[u8],
        end_stream: bool,
        wire: usize,
    ) -> Result<(), ConnError> {
        let s = self.slot_of(stream);
        let mut status: Option<u16> = None;
        let mut length: Option<Option<u64>> = None;
        let capture = self.capture_server && s.is_some();
        let mut server = None;
        let all = self.capture_headers && s.is_some();
        let mut fields = Vec::new();
        let wanted = |name: &[u8]| {
            all || name == b":status" || name == b"content-length" || (capture && name == b"server")
        };
        self.hpack
            .decode(block, wanted, &mut |name, value| {
                if all && !name.starts_with(b":") {
                    let text = |b: &[u8]| String::from_utf8_lossy(b).into_owned();
                    fields.push((text(name), text(value)));
                }
                match name {
                    b":status" => status = parse_status(value),
                    b"content-length" => length = Some(parse_decimal(value)),
                    b"server" if capture => {
                        server = Some(String::from_utf8_lossy(value).into_owned())
                    }
                    _ => {}
                }
            })
            .map_err(|e| match e {
                hpack::HpackError::ListTooLarge => ConnError::protocol(LIST_TOO_LARGE),
                _ => ConnError { code: ErrorCode::Compression, what: hpack_what(e) },
            })?;
        if server.is_some() {
            self.server = server;
            self.capture_server = false;
        }
        let Some(s) = s else { return Ok(()) };
        let slot = &mut self.slots[s];
        slot.ex.resp_bytes += wire as u64;
        if slot.final_head {
            // Trailers (RFC 9113 section 8.1) end the stream.
            if !end_stream {
                return self.stream_error(s, "a second header block without END_STREAM");
            }
            self.finish(s);
            return Ok(());
        }
        let status = match status {
            Some(101) | None => return self.stream_error(s, "a response without a valid :status"),
            Some(code) => code,
        };
        if (100..200).contains(&status) {
            // An interim response (section 8.1): the final head follows.
            if end_stream {
                return self.stream_error(s, "an interim response that ends the stream");
            }
            return Ok(());
        }
        slot.final_head = true;
        slot.status = status;
        if all {
            slot.headers = fields;
        }
        slot.content_length = match length {
            Some(None) => return self.stream_error(s, "an invalid content-length"),
            Some(n) => n,
            None => None,
        };
        if end_stream {
            self.finish(s);
        }
        Ok(())
    }

    /// The stream's last frame arrived: complete, unless its body disagrees with its
    /// content-length (section 8.1.1: a malformed response).
    fn finish(&mut self, s: usize) {
        let slot = &self.slots[s];
        let bodiless = slot.head || slot.status == 204 || slot.status == 304;
        if let (Some(n), false) = (slot.content_length, bodiless) {
            if n != slot.body_len {
                let reason =
                    Reason { what: "a body of another length than its content-length", code: None };
                return self.end_stream(s, Outcome::Failed(ErrorClass::Parse, reason));
            }
        }
        self.end_stream(s, Outcome::Complete);
    }

    /// A malformed response: the stream is reset (PROTOCOL_ERROR, section 8.1.1) and its
    /// request fails as `parse`, like a malformed HTTP/1.1 response.
    fn stream_error(&mut self, s: usize, what: &'static str) -> Result<(), ConnError> {
        frame::put_rst_stream(&mut self.out, self.slots[s].id, ErrorCode::Protocol);
        self.end_stream(s, Outcome::Failed(ErrorClass::Parse, Reason { what, code: None }));
        Ok(())
    }

    fn end_stream(&mut self, s: usize, outcome: Outcome) {
        self.open -= 1;
        // The slot keeps its request until the worker has recorded it (`release`).
        self.slots[s].state = StreamState::Ended;
        self.done.push_back((s, outcome));
    }

    fn on_settings(&mut self, params: &[u8]) -> Result<(), ConnError> {
        for p in params.chunks_exact(6) {
            let id = u16::from_be_bytes([p[0], p[1]]);
            let value = u32::from_be_bytes([p[2], p[3], p[4], p[5]]);
            match id {
                0x1 if (value as usize) < hpack::TABLE_SIZE => {
                    self.peer.table_update = Some(value);
                    self.peer.table_floor = self.peer.table_floor.min(value as usize);
                }
                0x3 => self.peer.max_streams = value,
                0x4 => {
                    if i64::from(value) > MAX_WINDOW {
                        return Err(ConnError {
                            code: ErrorCode::FlowControl,
                            what: "SETTINGS_INITIAL_WINDOW_SIZE beyond 2^31-1",
                        });
                    }
                    // Open streams' windows move by the change (section 6.9.2).
                    let delta = i64::from(value) - self.peer.initial_window;
                    self.peer.initial_window = i64::from(value);
                    for slot in self.slots.iter_mut().filter(|s| s.state == StreamState::Open) {
                        slot.send_window += delta;
                    }
                }
                0x5 => {
                    if !(frame::MAX_FRAME as u32..1 << 24).contains(&value) {
                        return Err(ConnError::protocol("SETTINGS_MAX_FRAME_SIZE out of range"));
                    }
                    self.peer.max_frame = value as usize;
                }
                // Unknown settings are ignored (section 6.5.2); so are those that do not bind
                // a client's sending.
                _ => {}
            }
        }
        Ok(())
    }

    /// The server will process no stream above `last` (section 6.8): those are sent again on a
    /// new connection, once; a second refusal fails them.
    fn on_goaway(&mut self, last: u32, code: u32) {
        self.goaway = Some((last, code));
        for (i, slot) in self.slots.iter_mut().enumerate() {
            if slot.state != StreamState::Open || slot.id <= last {
                continue;
            }
            self.open -= 1;
            if slot.retried {
                slot.state = StreamState::Ended;
                let reason = Reason { what: "refused twice by GOAWAY", code: Some(code) };
                self.done.push_back((i, Outcome::Failed(ErrorClass::H2Conn, reason)));
            } else {
                slot.state = StreamState::Pending;
                slot.retried = true;
                self.done.push_back((i, Outcome::Refused));
            }
        }
    }
}

const NO_REASON: Reason = Reason { what: "", code: None };
const BLOCK_TOO_LARGE: &str = "a header block larger than the head limit";
const LIST_TOO_LARGE: &str = "a header list larger than SETTINGS_MAX_HEADER_LIST_SIZE";

fn hpack_what(e: hpack::HpackError) -> &'static str {
    use hpack::HpackError::*;
    match e {
        Truncated => "HPACK: a truncated header block",
        Integer => "HPACK: an integer too large",
        Index => "HPACK: an index not in the tables",
        Huffman => "HPACK: an invalid Huffman string",
        TableSize => "HPACK: a table size above the limit",
        LateTableSize => "HPACK: a table size update after a field",
        ListTooLarge => LIST_TOO_LARGE,
    }
}

/// One blocking exchange before any load: the preface and an empty SETTINGS frame, answered
/// by the server's SETTINGS within `timeout` (RFC 9113 section 3.4). An HTTP/1.1 server answers
/// the preface with an error page, and that is said, not a run of failures.
pub fn preflight(addr: std::net::SocketAddr, timeout: std::time::Duration) -> Result<(), String> {
    use std::io::{Read, Write};
    let mut tcp =
        std::net::TcpStream::connect_timeout(&addr, timeout).map_err(|e| e.to_string())?;
    tcp.set_read_timeout(Some(timeout)).map_err(|e| e.to_string())?;
    tcp.set_write_timeout(Some(timeout)).map_err(|e| e.to_string())?;
    let mut hello = PREFACE.to_vec();
    frame::put_settings(&mut hello, &[]);
    tcp.write_all(&hello).map_err(|e| e.to_string())?;
    let mut head = [0u8; frame::HEAD_LEN];
    let mut have = 0;
    while have < head.len() {
        match tcp.read(&mut head[have..]) {
            Ok(0) => break,
            Ok(n) => have += n,
            Err(e)
                if matches!(
                    e.kind(),
                    std::io::ErrorKind::WouldBlock | std::io::ErrorKind::TimedOut
                ) =>
            {
                return Err(format!(
                    "HTTP/2: no SETTINGS within {timeout:?} (prior knowledge, h2c)"
                ))
            }
            Err(e) => return Err(format!("HTTP/2: {e}")),
        }
    }
    let head = &head[..have];
    if head.len() == frame::HEAD_LEN && head[3] == frame::SETTINGS && head[4] & frame::ACK == 0 {
        return Ok(());
    }
    if head.starts_with(b"HTTP/") {
        return Err(
            "HTTP/2: the server answered the preface with HTTP/1.x: it does not speak h2c \
                    (prior knowledge); over TLS, h2 is chosen by ALPN"
                .into(),
        );
    }
    Err("HTTP/2: the server's first frame was not SETTINGS (prior knowledge, h2c)".into())
}

/// A `:status` value: three digits.
fn parse_status(v: &[u8]) -> Option<u16> {
    if v.len() != 3 || !v.iter().all(u8::is_ascii_digit) {
        return None;
    }
    Some(v.iter().fold(0u16, |a, d| a * 10 + u16::from(d - b'0')))
}

/// A content-length: ASCII digits that fit in a u64.
fn parse_decimal(v: &[u8]) -> Option<u64> {
    if v.is_empty() || v.len() > 19 || !v.iter().all(u8::is_ascii_digit) {
        return None;
    }
    Some(v.iter().fold(0u64, |a, d| a * 10 + u64::from(d - b'0')))
}

#[cfg(test)]
mod tests;
