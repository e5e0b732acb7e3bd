//! HTTP/3 (RFC 9114) over a QUIC connection's streams, sans I/O: the bytes a client writes on
//! its control stream and request streams, and a bounded reader of each response stream. The
//! QUIC connection that carries them (datagrams, handshake, loss recovery) is the transport's;
//! this module sees only stream bytes and their end, as `h2` sees a TLS stream's plaintext.
//!
//! What a server can make this code do is bounded as HTTP/2's is: a field section by
//! SETTINGS_MAX_FIELD_SECTION_SIZE (which the client announces), QPACK by having no dynamic
//! table at all ([`qpack`]), frames it does not know by being skipped unread, and DATA by being
//! counted, never kept. Every way a response can break the protocol ends its request with the
//! HTTP/3 error code the RFC names for it ([`StreamError::code`]), so a run counts each by
//! that code, and [`code_name`] names the codes a server sends in a reset or a close.

pub mod frame;
pub mod get;
#[cfg(test)]
pub(crate) mod peer;
pub mod qpack;
pub mod quic;
pub(crate) mod streams;

/// H3_NO_ERROR: the code a client closes its connection with when done (RFC 9114 section 8.1).
pub const H3_NO_ERROR: u32 = 0x100;

/// H3_REQUEST_CANCELLED: a request the client no longer wants (its timeout), as its stream is
/// reset and its reading stopped (RFC 9114 section 4.1.1).
pub const H3_REQUEST_CANCELLED: u32 = 0x10c;

use qpack::{Decoder, QpackError};

/// HTTP/3's error codes (RFC 9114 section 8.1) and QPACK's (RFC 9204 section 6), by name.
const CODES: [(u64, &str); 20] = [
    (0x100, "H3_NO_ERROR"),
    (0x101, "H3_GENERAL_PROTOCOL_ERROR"),
    (0x102, "H3_INTERNAL_ERROR"),
    (0x103, "H3_STREAM_CREATION_ERROR"),
    (0x104, "H3_CLOSED_CRITICAL_STREAM"),
    (0x105, "H3_FRAME_UNEXPECTED"),
    (0x106, "H3_FRAME_ERROR"),
    (0x107, "H3_EXCESSIVE_LOAD"),
    (0x108, "H3_ID_ERROR"),
    (0x109, "H3_SETTINGS_ERROR"),
    (0x10a, "H3_MISSING_SETTINGS"),
    (0x10b, "H3_REQUEST_REJECTED"),
    (0x10c, "H3_REQUEST_CANCELLED"),
    (0x10d, "H3_REQUEST_INCOMPLETE"),
    (0x10e, "H3_MESSAGE_ERROR"),
    (0x10f, "H3_CONNECT_ERROR"),
    (0x110, "H3_VERSION_FALLBACK"),
    (0x200, "QPACK_DECOMPRESSION_FAILED"),
    (0x201, "QPACK_ENCODER_STREAM_ERROR"),
    (0x202, "QPACK_DECODER_STREAM_ERROR"),
];

/// The name of an application error code a server sent (RESET_STREAM, STOP_SENDING or
/// CONNECTION_CLOSE): one of [`CODES`], `reserved` for the codes 0x1f * N + 0x21 that
/// exercise a peer's handling of unknown ones (RFC 9114 section 8.1), or `None`.
pub fn code_name(code: u64) -> Option<&'static str> {
    if code >= 0x21 && (code - 0x21).is_multiple_of(0x1f) {
        return Some("reserved");
    }
    CODES.iter().find(|(c, _)| *c == code).map(|(_, name)| *name)
}

/// Whether an `Alt-Svc` field value (RFC 7838) offers HTTP/3 on UDP `port` of the same host:
/// an alternative `h3=":port"`, parameters (`ma`, `persist`) after it allowed. That is how a
/// client learns a server speaks HTTP/3 (RFC 9114 section 3.1.1); `clear` offers nothing.
pub fn alt_svc_offers(alt_svc: &str, port: u16) -> bool {
    let h3 = format!("h3=\":{port}\"");
    alt_svc.split(',').any(|offer| {
        let offer = offer.trim();
        offer.strip_prefix(h3.as_str()).is_some_and(|rest| rest.is_empty() || rest.starts_with(';'))
    })
}

/// How one response stream broke HTTP/3; each ends that request only (the connection stays),
/// with the error code a client resets the stream with.
#[derive(Debug, Clone, Copy, PartialEq, Eq, thiserror::Error)]
pub enum StreamError {
    /// A frame of a type that has no place on a request stream, or out of order (DATA before
    /// HEADERS, a frame after the trailers): RFC 9114 section 4.1.
    #[error("H3_FRAME_UNEXPECTED: frame type {0:#x} out of place on a request stream")]
    FrameUnexpected(u64),
    /// The stream ended inside a frame (section 7.1).
    #[error("H3_FRAME_ERROR: the stream ended inside a frame")]
    Truncated,
    /// A PUSH_PROMISE, though this client never allowed a push (no MAX_PUSH_ID, section 7.2.5).
    #[error("H3_ID_ERROR: a push promised without MAX_PUSH_ID")]
    Push,
    /// A field section larger than SETTINGS_MAX_FIELD_SECTION_SIZE.
    #[error("H3_EXCESSIVE_LOAD: a field section above SETTINGS_MAX_FIELD_SECTION_SIZE")]
    FieldSectionTooLarge,
    /// A malformed response (section 4.1.2): no or a bad `:status`, a pseudo-header in
    /// trailers, a body beside its Content-Length, a body after 204 or 304, or 101.
    #[error("H3_MESSAGE_ERROR: {0}")]
    Message(&'static str),
    /// The field section did not decode.
    #[error("QPACK_DECOMPRESSION_FAILED: {0}")]
    Qpack(#[from] QpackError),
    /// The stream ended before a final response's HEADERS (section 4.1).
    #[error("H3_REQUEST_INCOMPLETE: the stream ended before the response's headers")]
    Incomplete,
}

impl StreamError {
    /// The RFC's code for it.
    pub fn code(&self) -> u64 {
        match self {
            StreamError::FrameUnexpected(_) => 0x105,
            StreamError::Truncated => 0x106,
            StreamError::Push => 0x108,
            StreamError::FieldSectionTooLarge => 0x107,
            StreamError::Message(_) => 0x10e,
            StreamError::Qpack(QpackError::Field(crate::h2::hpack::HpackError::ListTooLarge)) => {
                0x107
            }
            StreamError::Qpack(_) => 0x200,
            StreamError::Incomplete => 0x10d,
        }
    }
}

/// A request's HEADERS frame, encoded once for the run: its fields in QPACK, pseudo-header
/// fields first (RFC 9114 section 4.3.1).
pub fn headers_frame(fields: &[(&[u8], &[u8])]) -> Vec<u8> {
    let section = qpack::encode(fields);
    let mut out = Vec::with_capacity(section.len() + 8);
    frame::put_header(&mut out, frame::HEADERS, section.len());
    out.extend_from_slice(&section);
    out
}

/// What a response stream yields, in order.
#[derive(Debug, PartialEq, Eq)]
pub enum Part<'a> {
    /// The final response's status (interim 1xx responses are passed over).
    Status(u16),
    /// A field of the final response (or its trailers) that the reader was asked for.
    Field(&'a [u8], &'a [u8]),
    /// Body bytes, as they arrive.
    Body(&'a [u8]),
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Phase {
    /// Before the final response's HEADERS.
    Head,
    /// DATA, or trailers.
    Body,
    /// After the trailers: nothing more may come.
    Done,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Frame {
    /// A frame header is being read (into `buf`).
    Header,
    /// A HEADERS payload of this length is being read (into `buf`).
    Headers(usize),
    /// DATA with this many bytes to come.
    Data(u64),
    /// A frame of an unknown or reserved type, skipped (section 9).
    Skip(u64),
}

/// Reads one response stream after another: the frames of each, bounded, into [`Part`]s. One
/// per stream slot, reused for every request the slot carries, so its buffer is allocated
/// once.
#[derive(Debug)]
pub struct Response {
    phase: Phase,
    frame: Frame,
    buf: Vec<u8>,
    max_field_section: usize,
    /// The request was HEAD, or the status says the response has no body.
    bodiless: bool,
    content_length: Option<u64>,
    body: u64,
    /// The fields beyond `:status` and Content-Length the caller wants (Server, say).
    wanted: fn(&[u8]) -> bool,
}

impl Response {
    /// A reader whose field sections may be up to `max_field_section` bytes, giving the
    /// fields `wanted` accepts as [`Part::Field`].
    pub fn new(max_field_section: usize, wanted: fn(&[u8]) -> bool) -> Response {
        Response {
            phase: Phase::Head,
            frame: Frame::Header,
            buf: Vec::with_capacity(max_field_section.min(16_384)),
            max_field_section,
            bodiless: false,
            content_length: None,
            body: 0,
            wanted,
        }
    }

    /// Starts reading the response to a new request (`head`: a HEAD request, whose response
    /// has no body whatever its Content-Length says).
    pub fn begin(&mut self, head: bool) {
        self.phase = Phase::Head;
        self.frame = Frame::Header;
        self.buf.clear();
        self.bodiless = head;
        self.content_length = None;
        self.body = 0;
    }

    /// Feeds bytes the stream delivered, in order.
    pub fn feed(
        &mut self,
        mut data: &[u8],
        decoder: &mut Decoder,
        on: &mut impl FnMut(Part<'_>),
    ) -> Result<(), StreamError> {
        while !data.is_empty() {
            match self.frame {
                Frame::Header => {
                    let old = self.buf.len();
                    // A frame header is two varints: at most 16 bytes.
                    let take = data.len().min(16 - old);
                    self.buf.extend_from_slice(&data[..take]);
                    let Some((kind, len, n)) = frame::header(&self.buf) else {
                        data = &data[take..];
                        continue;
                    };
                    data = &data[n - old..];
                    self.buf.clear();
                    self.frame = self.start(kind, len)?;
                }
                Frame::Headers(len) => {
                    let take = data.len().min(len - self.buf.len());
                    self.buf.extend_from_slice(&data[..take]);
                    data = &data[take..];
                    if self.buf.len() == len {
                        self.headers(decoder, on)?;
                        self.buf.clear();
                        self.frame = Frame::Header;
                    }
                }
                Frame::Data(left) | Frame::Skip(left) => {
                    let take = data.len().min(usize::try_from(left).unwrap_or(usize::MAX));
                    if let Frame::Data(_) = self.frame {
                        self.data(&data[..take], on)?;
                    }
                    data = &data[take..];
                    self.frame = match (self.frame, left - take as u64) {
                        (_, 0) => Frame::Header,
                        (Frame::Data(_), rest) => Frame::Data(rest),
                        (_, rest) => Frame::Skip(rest),
                    };
                }
            }
        }
        if let Frame::Data(0) | Frame::Skip(0) = self.frame {
            self.frame = Frame::Header;
        }
        Ok(())
    }

    /// The stream's end (its FIN): the response is whole, or the error that it is not.
    pub fn finish(&self) -> Result<(), StreamError> {
        if self.frame != Frame::Header || !self.buf.is_empty() {
            return Err(StreamError::Truncated);
        }
        if self.phase == Phase::Head {
            return Err(StreamError::Incomplete);
        }
        match self.content_length {
            Some(len) if !self.bodiless && len != self.body => {
                Err(StreamError::Message("the body ended before its Content-Length"))
            }
            _ => Ok(()),
        }
    }

    /// A frame header was read: what reading its payload means, by its type and the phase.
    fn start(&self, kind: u64, len: u64) -> Result<Frame, StreamError> {
        match kind {
            frame::DATA if self.phase == Phase::Body => Ok(Frame::Data(len)),
            frame::HEADERS if self.phase != Phase::Done => {
                match usize::try_from(len).ok().filter(|l| *l <= self.max_field_section) {
                    // An empty payload cannot hold a field section's prefix.
                    Some(0) => Err(StreamError::Qpack(QpackError::Field(
                        crate::h2::hpack::HpackError::Truncated,
                    ))),
                    Some(len) => Ok(Frame::Headers(len)),
                    None => Err(StreamError::FieldSectionTooLarge),
                }
            }
            frame::PUSH_PROMISE => Err(StreamError::Push),
            frame::DATA
            | frame::HEADERS
            | frame::CANCEL_PUSH
            | frame::SETTINGS
            | frame::GOAWAY
            | frame::MAX_PUSH_ID => Err(StreamError::FrameUnexpected(kind)),
            kind if frame::is_http2_only(kind) => Err(StreamError::FrameUnexpected(kind)),
            _ => Ok(Frame::Skip(len)),
        }
    }

    /// A whole HEADERS payload is in `buf`: a response's head (interim or final) or its
    /// trailers.
    fn headers(
        &mut self,
        decoder: &mut Decoder,
        on: &mut impl FnMut(Part<'_>),
    ) -> Result<(), StreamError> {
        let trailers = self.phase == Phase::Body;
        let wanted = self.wanted;
        let mut status: Option<Result<u16, ()>> = None;
        let mut content_length: Option<Result<u64, ()>> = None;
        let mut pseudo = false;
        let mut fields = |name: &[u8], value: &[u8]| match name {
            b":status" => status = Some(parse_status(value)),
            b"content-length" => content_length = Some(parse_length(value)),
            _ if name.starts_with(b":") => pseudo = true,
            _ if !trailers => on(Part::Field(name, value)),
            _ => {}
        };
        decoder.decode(
            &self.buf,
            |n| n.starts_with(b":") || n == b"content-length" || wanted(n),
            &mut fields,
        )?;
        if trailers {
            if pseudo || status.is_some() {
                return Err(StreamError::Message("a pseudo-header field in trailers"));
            }
            self.phase = Phase::Done;
            return Ok(());
        }
        if pseudo {
            return Err(StreamError::Message("a pseudo-header field other than :status"));
        }
        let status = match status {
            Some(Ok(s)) => s,
            Some(Err(())) => return Err(StreamError::Message("a :status that is not 3 digits")),
            None => return Err(StreamError::Message("a response without :status")),
        };
        match status {
            101 => Err(StreamError::Message("101 Switching Protocols, which HTTP/3 forbids")),
            100..=199 => Ok(()),
            _ => {
                self.content_length = match content_length {
                    Some(Ok(len)) => Some(len),
                    Some(Err(())) => return Err(StreamError::Message("a bad Content-Length")),
                    None => None,
                };
                self.bodiless |= status == 204 || status == 304;
                self.phase = Phase::Body;
                on(Part::Status(status));
                Ok(())
            }
        }
    }

    fn data(&mut self, bytes: &[u8], on: &mut impl FnMut(Part<'_>)) -> Result<(), StreamError> {
        if bytes.is_empty() {
            return Ok(());
        }
        if self.bodiless {
            return Err(StreamError::Message("a body after HEAD, 204 or 304"));
        }
        self.body += bytes.len() as u64;
        if self.content_length.is_some_and(|len| self.body > len) {
            return Err(StreamError::Message("a body beyond its Content-Length"));
        }
        on(Part::Body(bytes));
        Ok(())
    }
}

fn parse_status(value: &[u8]) -> Result<u16, ()> {
    match value {
        [a @ b'1'..=b'5', b, c] if b.is_ascii_digit() && c.is_ascii_digit() => {
            Ok(u16::from(a - b'0') * 100 + u16::from(b - b'0') * 10 + u16::from(c - b'0'))
        }
        _ => Err(()),
    }
}

fn parse_length(value: &[u8]) -> Result<u64, ()> {
    if value.is_empty() || value.len() > 19 || !value.iter().all(u8::is_ascii_digit) {
        return Err(());
    }
    Ok(value.iter().fold(0, |n, d| n * 10 + u64::from(d - b'0')))
}

#[cfg(test)]
mod tests;
