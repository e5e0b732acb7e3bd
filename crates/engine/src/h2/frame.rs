//! HTTP/2 frames (RFC 9113 section 4 and 6): an incremental, bounded reader that turns the
//! bytes of a connection into [`Frame`]s, and the writers of the few frames a client sends.
//!
//! Frames are read in place from the caller's buffer when they arrive whole; one that spans
//! reads is copied into a buffer the reader keeps (its capacity is reused), never beyond the
//! largest frame we allow (SETTINGS_MAX_FRAME_SIZE, section 4.2). DATA payloads are not
//! buffered at all: they are handed on piece by piece as they arrive, so a body of any size
//! flows through the worker's one read buffer.

use super::{ConnError, ErrorCode};

/// Frame types (section 6; IANA "HTTP/2 Frame Type" registry).
pub const DATA: u8 = 0x0;
pub const HEADERS: u8 = 0x1;
pub const PRIORITY: u8 = 0x2;
pub const RST_STREAM: u8 = 0x3;
pub const SETTINGS: u8 = 0x4;
pub const PUSH_PROMISE: u8 = 0x5;
pub const PING: u8 = 0x6;
pub const GOAWAY: u8 = 0x7;
pub const WINDOW_UPDATE: u8 = 0x8;
pub const CONTINUATION: u8 = 0x9;

/// Flags.
pub const END_STREAM: u8 = 0x1;
pub const ACK: u8 = 0x1;
pub const END_HEADERS: u8 = 0x4;
pub const PADDED: u8 = 0x8;
pub const PRIORITY_FLAG: u8 = 0x20;

/// The frame header's length (section 4.1).
pub const HEAD_LEN: usize = 9;

/// The largest frame payload a peer may send us unless we raise SETTINGS_MAX_FRAME_SIZE, which
/// we do not (section 6.5.2: the initial value).
pub const MAX_FRAME: usize = 16_384;

/// One frame, or for DATA one piece of one, borrowed from the input.
#[derive(Debug, PartialEq, Eq)]
pub enum Frame<'a> {
    /// Body bytes of `stream`. `flow` is what this piece costs the flow-control windows
    /// (padding included, section 6.9.1); `end_stream` comes with the frame's last piece.
    Data {
        stream: u32,
        data: &'a [u8],
        flow: usize,
        end_stream: bool,
    },
    /// A header block fragment (padding and priority fields removed).
    Headers {
        stream: u32,
        fragment: &'a [u8],
        end_stream: bool,
        end_headers: bool,
    },
    Continuation {
        stream: u32,
        fragment: &'a [u8],
        end_headers: bool,
    },
    RstStream {
        stream: u32,
        code: u32,
    },
    /// The peer's parameters, 6 bytes each (section 6.5.1), or its acknowledgement of ours.
    Settings {
        ack: bool,
        params: &'a [u8],
    },
    Ping {
        ack: bool,
        data: [u8; 8],
    },
    GoAway {
        last_stream: u32,
        code: u32,
    },
    WindowUpdate {
        stream: u32,
        increment: u32,
    },
    /// A server push, which we disabled (SETTINGS_ENABLE_PUSH = 0): a protocol error.
    PushPromise,
    /// PRIORITY and frame types we do not know: ignored, as section 4.1 and 5.5 require.
    Ignored {
        len: usize,
    },
}

/// A frame header.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
struct Head {
    len: usize,
    kind: u8,
    flags: u8,
    stream: u32,
}

impl Head {
    fn parse(b: &[u8]) -> Head {
        Head {
            len: usize::from(b[0]) << 16 | usize::from(b[1]) << 8 | usize::from(b[2]),
            kind: b[3],
            flags: b[4],
            // The reserved bit is ignored on receipt (section 4.1).
            stream: u32::from_be_bytes([b[5], b[6], b[7], b[8]]) & 0x7fff_ffff,
        }
    }
}

#[derive(Debug)]
enum State {
    /// Reading a frame header; `have` bytes of it are in `head`.
    Head { have: usize },
    /// Inside a DATA frame.
    Data(DataFrame),
    /// A non-DATA frame whose payload spans reads: what came so far is in `spill`.
    Payload(Head),
}

/// A DATA frame being read: its pad-length byte still to come, body bytes left, then padding.
/// Its body is handed on in the pieces the reads bring, never copied.
#[derive(Debug)]
struct DataFrame {
    stream: u32,
    pad_byte: bool,
    data_left: usize,
    pad_left: usize,
    end_stream: bool,
    /// The header's bytes, counted with the frame's first piece.
    head_wire: usize,
}

impl DataFrame {
    /// Takes what `input` holds of this frame: the piece of body it carries, if any is to be
    /// told (with the flow-controlled bytes and the wire bytes it took), and whether the
    /// frame is over.
    fn take<'a>(
        &mut self,
        input: &mut &'a [u8],
    ) -> Result<(Option<(Frame<'a>, usize)>, bool), ConnError> {
        let mut flow = 0;
        if self.pad_byte {
            let pad = usize::from(input[0]);
            *input = &input[1..];
            self.pad_byte = false;
            // The pad length counts in the payload, so it must leave room for itself
            // (section 6.1).
            if pad >= self.data_left {
                return Err(ConnError::protocol("DATA padding exceeds the frame"));
            }
            self.data_left -= 1 + pad;
            self.pad_left = pad;
            flow += 1;
        }
        let take = self.data_left.min(input.len());
        let data = &input[..take];
        *input = &input[take..];
        self.data_left -= take;
        flow += take;
        let skip = if self.data_left == 0 { self.pad_left.min(input.len()) } else { 0 };
        self.pad_left -= skip;
        *input = &input[skip..];
        flow += skip;
        let done = self.data_left == 0 && self.pad_left == 0;
        let end_stream = done && self.end_stream;
        let wire = flow + std::mem::take(&mut self.head_wire);
        let piece = (take > 0 || end_stream || flow > 0)
            .then_some((Frame::Data { stream: self.stream, data, flow, end_stream }, wire));
        Ok((piece, done))
    }
}

/// Reads frames from a connection's bytes, in pieces of any size.
#[derive(Debug)]
pub struct Reader {
    head: [u8; HEAD_LEN],
    state: State,
    spill: Vec<u8>,
}

impl Default for Reader {
    fn default() -> Self {
        Reader { head: [0; HEAD_LEN], state: State::Head { have: 0 }, spill: Vec::new() }
    }
}

impl Reader {
    /// Decodes every frame (or DATA piece) in `input`, handing each to `on_frame` together with
    /// the wire bytes it took; what is left of a frame that spans reads waits for the next call.
    pub fn feed(
        &mut self,
        mut input: &[u8],
        on_frame: &mut impl FnMut(Frame<'_>, usize) -> Result<(), ConnError>,
    ) -> Result<(), ConnError> {
        while !input.is_empty() {
            match &mut self.state {
                State::Head { have } => {
                    let take = (HEAD_LEN - *have).min(input.len());
                    self.head[*have..*have + take].copy_from_slice(&input[..take]);
                    *have += take;
                    input = &input[take..];
                    if *have < HEAD_LEN {
                        return Ok(());
                    }
                    let head = Head::parse(&self.head);
                    check_head(&head)?;
                    if head.kind == DATA {
                        self.state = State::Data(DataFrame {
                            stream: head.stream,
                            pad_byte: head.flags & PADDED != 0,
                            data_left: head.len,
                            pad_left: 0,
                            end_stream: head.flags & END_STREAM != 0,
                            head_wire: HEAD_LEN,
                        });
                        if head.len == 0 {
                            self.finish_data(on_frame)?;
                        }
                    } else if input.len() >= head.len {
                        let (payload, rest) = input.split_at(head.len);
                        input = rest;
                        self.state = State::Head { have: 0 };
                        on_frame(decode(&head, payload)?, HEAD_LEN + head.len)?;
                    } else {
                        self.spill.clear();
                        self.spill.extend_from_slice(input);
                        self.state = State::Payload(head);
                        return Ok(());
                    }
                }
                State::Payload(head) => {
                    let head = *head;
                    let take = (head.len - self.spill.len()).min(input.len());
                    self.spill.extend_from_slice(&input[..take]);
                    input = &input[take..];
                    if self.spill.len() < head.len {
                        return Ok(());
                    }
                    self.state = State::Head { have: 0 };
                    let spill = std::mem::take(&mut self.spill);
                    let handled =
                        decode(&head, &spill).and_then(|f| on_frame(f, HEAD_LEN + head.len));
                    self.spill = spill;
                    handled?;
                }
                State::Data(frame) => {
                    let (piece, done) = frame.take(&mut input)?;
                    if done {
                        self.state = State::Head { have: 0 };
                    }
                    if let Some((frame, wire)) = piece {
                        on_frame(frame, wire)?;
                    }
                }
            }
        }
        Ok(())
    }

    /// An empty DATA frame: one empty piece, for its END_STREAM flag.
    fn finish_data(
        &mut self,
        on_frame: &mut impl FnMut(Frame<'_>, usize) -> Result<(), ConnError>,
    ) -> Result<(), ConnError> {
        if let State::Data(DataFrame { stream, end_stream, pad_byte: false, .. }) = self.state {
            self.state = State::Head { have: 0 };
            return on_frame(Frame::Data { stream, data: &[], flow: 0, end_stream }, HEAD_LEN);
        }
        // A padded DATA frame cannot be empty: its pad length byte is missing.
        Err(ConnError::frame_size("PADDED DATA frame without its pad length"))
    }
}

/// The checks that need only the header: sizes and stream ids (sections 4.2 and 6).
fn check_head(h: &Head) -> Result<(), ConnError> {
    if h.len > MAX_FRAME {
        return Err(ConnError::frame_size("a frame larger than SETTINGS_MAX_FRAME_SIZE"));
    }
    let on_stream = matches!(h.kind, DATA | HEADERS | PRIORITY | RST_STREAM | CONTINUATION);
    let on_conn = matches!(h.kind, SETTINGS | PING | GOAWAY);
    if on_stream && h.stream == 0 {
        return Err(ConnError::protocol("a stream frame on stream 0"));
    }
    if on_conn && h.stream != 0 {
        return Err(ConnError::protocol("a connection frame on a stream"));
    }
    let size_ok = match h.kind {
        PRIORITY => h.len == 5,
        RST_STREAM | WINDOW_UPDATE => h.len == 4,
        SETTINGS if h.flags & ACK != 0 => h.len == 0,
        SETTINGS => h.len.is_multiple_of(6),
        PING => h.len == 8,
        GOAWAY => h.len >= 8,
        _ => true,
    };
    if !size_ok {
        return Err(ConnError::frame_size("a frame of the wrong size for its type"));
    }
    Ok(())
}

/// A whole non-DATA frame's payload, decoded.
fn decode<'a>(h: &Head, payload: &'a [u8]) -> Result<Frame<'a>, ConnError> {
    let be32 = |b: &[u8]| u32::from_be_bytes([b[0], b[1], b[2], b[3]]);
    Ok(match h.kind {
        HEADERS => {
            let mut fragment = unpad(h, payload)?;
            if h.flags & PRIORITY_FLAG != 0 {
                // Stream dependency and weight (section 6.2), which a client may ignore.
                fragment = fragment
                    .get(5..)
                    .ok_or_else(|| ConnError::frame_size("HEADERS too short for its priority"))?;
            }
            Frame::Headers {
                stream: h.stream,
                fragment,
                end_stream: h.flags & END_STREAM != 0,
                end_headers: h.flags & END_HEADERS != 0,
            }
        }
        CONTINUATION => Frame::Continuation {
            stream: h.stream,
            fragment: payload,
            end_headers: h.flags & END_HEADERS != 0,
        },
        RST_STREAM => Frame::RstStream { stream: h.stream, code: be32(payload) },
        SETTINGS => Frame::Settings { ack: h.flags & ACK != 0, params: payload },
        PING => {
            let mut data = [0; 8];
            data.copy_from_slice(payload);
            Frame::Ping { ack: h.flags & ACK != 0, data }
        }
        GOAWAY => {
            Frame::GoAway { last_stream: be32(payload) & 0x7fff_ffff, code: be32(&payload[4..]) }
        }
        WINDOW_UPDATE => {
            Frame::WindowUpdate { stream: h.stream, increment: be32(payload) & 0x7fff_ffff }
        }
        PUSH_PROMISE => Frame::PushPromise,
        _ => Frame::Ignored { len: payload.len() },
    })
}

/// The payload without its padding (section 6.2).
fn unpad<'a>(h: &Head, payload: &'a [u8]) -> Result<&'a [u8], ConnError> {
    if h.flags & PADDED == 0 {
        return Ok(payload);
    }
    let pad = usize::from(*payload.first().ok_or_else(|| ConnError::frame_size("no pad length"))?);
    if pad >= payload.len() {
        return Err(ConnError::protocol("padding exceeds the frame"));
    }
    Ok(&payload[1..payload.len() - pad])
}

/// Appends a frame header.
pub fn put_head(out: &mut Vec<u8>, len: usize, kind: u8, flags: u8, stream: u32) {
    let len = len as u32;
    out.extend_from_slice(&len.to_be_bytes()[1..]);
    out.push(kind);
    out.push(flags);
    out.extend_from_slice(&stream.to_be_bytes());
}

/// Appends a SETTINGS frame with `params` (identifier, value).
pub fn put_settings(out: &mut Vec<u8>, params: &[(u16, u32)]) {
    put_head(out, params.len() * 6, SETTINGS, 0, 0);
    for (id, value) in params {
        out.extend_from_slice(&id.to_be_bytes());
        out.extend_from_slice(&value.to_be_bytes());
    }
}

pub fn put_window_update(out: &mut Vec<u8>, stream: u32, increment: u32) {
    put_head(out, 4, WINDOW_UPDATE, 0, stream);
    out.extend_from_slice(&increment.to_be_bytes());
}

pub fn put_rst_stream(out: &mut Vec<u8>, stream: u32, code: ErrorCode) {
    put_head(out, 4, RST_STREAM, 0, stream);
    out.extend_from_slice(&(code as u32).to_be_bytes());
}

pub fn put_goaway(out: &mut Vec<u8>, last_stream: u32, code: ErrorCode) {
    put_head(out, 8, GOAWAY, 0, 0);
    out.extend_from_slice(&last_stream.to_be_bytes());
    out.extend_from_slice(&(code as u32).to_be_bytes());
}
