//! Incremental, bounded HTTP/1.1 response parser.
//!
//! Bytes are fed as they arrive, in pieces of any size; the parser never trusts the server:
//! the head is limited in size and header count, chunk-size lines and trailers in length, chunk
//! sizes in value, and every framing rule of RFC 9112 section 6.3 is applied in order:
//! no body for HEAD, 1xx, 204 and 304; Transfer-Encoding over Content-Length (and the connection
//! closed afterwards); Content-Length values that disagree are an error; otherwise the body runs
//! until the server closes the connection.
//!
//! The parser does not allocate per response: a head that arrives split across reads is copied
//! into a buffer that keeps its capacity for the next response, and body bytes are handed to a
//! sink (for counting and validation) rather than stored.

mod chunked;
#[cfg(test)]
mod tests;

use chunked::ChunkedDecoder;

/// Headers beyond this count make the response a parse error.
pub const MAX_HEADERS: usize = 100;

/// Bounds on what a server may send before the parser gives up on the response.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Limits {
    /// Status line plus header fields, CRLFs included; also bounds chunked trailers.
    pub max_head_bytes: usize,
    /// One chunk-size line (with extensions) or one trailer field line.
    pub max_line_bytes: usize,
    /// The largest chunk a chunk-size line may announce.
    pub max_chunk_bytes: u64,
}

impl Default for Limits {
    fn default() -> Self {
        Limits { max_head_bytes: 64 * 1024, max_line_bytes: 8 * 1024, max_chunk_bytes: 64 << 20 }
    }
}

/// Why a response could not be parsed. [`ParseError::class`] maps each to an error class.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum ParseError {
    #[error("response head exceeds {0} bytes")]
    HeadTooLarge(usize),
    #[error("more than {MAX_HEADERS} header fields")]
    TooManyHeaders,
    #[error("malformed response head: {0}")]
    Malformed(httparse::Error),
    #[error("invalid Content-Length")]
    InvalidContentLength,
    #[error("conflicting Content-Length values")]
    ConflictingContentLength,
    #[error("Transfer-Encoding in an HTTP/1.0 response")]
    TransferEncodingInHttp10,
    #[error("unexpected 101 Switching Protocols")]
    UnexpectedUpgrade,
    #[error("invalid chunk framing")]
    InvalidChunk,
    #[error("chunk larger than {0} bytes")]
    ChunkTooLarge(u64),
    #[error("chunk-size or trailer line longer than {0} bytes")]
    LineTooLong(usize),
    #[error("connection closed before the response")]
    ClosedBeforeResponse,
    #[error("connection closed inside the response head")]
    IncompleteHead,
    #[error("connection closed before the end of the body")]
    ShortBody,
}

impl ParseError {
    pub fn class(&self) -> crate::ErrorClass {
        use crate::ErrorClass;
        match self {
            // A server that closes without a byte of answer looks to the client like a reset.
            ParseError::ClosedBeforeResponse => ErrorClass::Connreset,
            ParseError::ShortBody => ErrorClass::ShortBody,
            _ => ErrorClass::Parse,
        }
    }
}

/// What a call to [`Parser::feed`] achieved.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Progress {
    /// Everything given was consumed and the response is not finished.
    Partial,
    /// The response finished after `consumed` bytes of the input; bytes beyond that were not
    /// asked for (this client does not pipeline).
    Complete { consumed: usize },
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Phase {
    Head,
    Length(u64),
    Chunked,
    UntilClose,
    Done,
}

/// Parses one response at a time on one connection; [`Parser::reset`] before each request.
#[derive(Debug)]
pub struct Parser {
    limits: Limits,
    phase: Phase,
    head_request: bool,
    /// Head bytes received so far when the head spans reads; empty in the common case.
    spill: Vec<u8>,
    chunked: ChunkedDecoder,
    status: u16,
    keep_alive: bool,
    bytes_seen: u64,
    body_len: u64,
    /// When set, the next response's Server header is copied into `server`.
    capture_server: bool,
    server: Option<String>,
    /// When set, every header of each final response is copied into `headers` (for a single
    /// request's answer, never under load: it allocates).
    capture_headers: bool,
    headers: Vec<(String, String)>,
}

impl Parser {
    pub fn new(limits: Limits) -> Self {
        Parser {
            limits,
            phase: Phase::Head,
            head_request: false,
            spill: Vec::new(),
            chunked: ChunkedDecoder::default(),
            status: 0,
            keep_alive: true,
            bytes_seen: 0,
            body_len: 0,
            capture_server: false,
            server: None,
            capture_headers: false,
            headers: Vec::new(),
        }
    }

    /// Prepares for the response to a new request; `head_request` for HEAD (no body follows).
    pub fn reset(&mut self, head_request: bool) {
        self.phase = Phase::Head;
        self.head_request = head_request;
        self.spill.clear();
        self.chunked = ChunkedDecoder::default();
        self.status = 0;
        self.keep_alive = true;
        self.bytes_seen = 0;
        self.body_len = 0;
    }

    /// Asks for the Server header of the next response (read back with [`Parser::take_server`]).
    pub fn capture_server(&mut self) {
        self.capture_server = true;
    }

    pub fn take_server(&mut self) -> Option<String> {
        self.server.take()
    }

    /// Asks for every header of the responses to come, names lower-cased and values trimmed
    /// (read back with [`Parser::take_headers`]).
    pub fn capture_headers(&mut self) {
        self.capture_headers = true;
    }

    /// The headers of the last final response, when [`Parser::capture_headers`] asked for
    /// them.
    pub fn take_headers(&mut self) -> Vec<(String, String)> {
        std::mem::take(&mut self.headers)
    }

    /// The final status code, once the head has been parsed (0 before).
    pub fn status(&self) -> u16 {
        self.status
    }

    /// Whether the connection may carry another request after this response.
    pub fn keep_alive(&self) -> bool {
        self.keep_alive
    }

    /// Body bytes so far (after chunked decoding).
    pub fn body_len(&self) -> u64 {
        self.body_len
    }

    /// Whether the status line has started to arrive.
    pub fn started(&self) -> bool {
        self.bytes_seen > 0
    }

    /// Feeds the next bytes from the connection. Body bytes are passed to `sink`.
    pub fn feed(
        &mut self,
        data: &[u8],
        sink: &mut impl FnMut(&[u8]),
    ) -> Result<Progress, ParseError> {
        let mut pos = 0;
        loop {
            let rest = &data[pos..];
            match self.phase {
                Phase::Head => match self.parse_head(rest)? {
                    Some(n) => {
                        pos += n;
                        self.bytes_seen += n as u64;
                    }
                    None => {
                        self.bytes_seen += rest.len() as u64;
                        return Ok(Progress::Partial);
                    }
                },
                Phase::Length(remaining) => {
                    let take = remaining.min(rest.len() as u64) as usize;
                    self.body(&rest[..take], sink);
                    pos += take;
                    if remaining == take as u64 {
                        self.phase = Phase::Done;
                    } else {
                        self.phase = Phase::Length(remaining - take as u64);
                        return Ok(Progress::Partial);
                    }
                }
                Phase::Chunked => {
                    let mut body_len = 0u64;
                    let (n, done) = self.chunked.decode(rest, &self.limits, &mut |b| {
                        body_len += b.len() as u64;
                        sink(b);
                    })?;
                    self.body_len += body_len;
                    self.bytes_seen += n as u64;
                    pos += n;
                    if done {
                        self.phase = Phase::Done;
                    } else {
                        return Ok(Progress::Partial);
                    }
                }
                Phase::UntilClose => {
                    self.body(rest, sink);
                    return Ok(Progress::Partial);
                }
                Phase::Done => return Ok(Progress::Complete { consumed: pos }),
            }
        }
    }

    /// The connection reached end of file: completes a close-delimited body, or says what was
    /// cut short.
    pub fn on_eof(&mut self) -> Result<(), ParseError> {
        match self.phase {
            Phase::Done => Ok(()),
            Phase::UntilClose => {
                self.phase = Phase::Done;
                Ok(())
            }
            Phase::Head if self.bytes_seen == 0 => Err(ParseError::ClosedBeforeResponse),
            Phase::Head => Err(ParseError::IncompleteHead),
            Phase::Length(_) | Phase::Chunked => Err(ParseError::ShortBody),
        }
    }

    #[inline]
    fn body(&mut self, bytes: &[u8], sink: &mut impl FnMut(&[u8])) {
        self.body_len += bytes.len() as u64;
        self.bytes_seen += bytes.len() as u64;
        if !bytes.is_empty() {
            sink(bytes);
        }
    }

    /// Parses the head from `input` (plus any spilled bytes). Returns how many bytes of `input`
    /// the head took, or `None` when it is still incomplete (all of `input` was kept).
    fn parse_head(&mut self, input: &[u8]) -> Result<Option<usize>, ParseError> {
        let max = self.limits.max_head_bytes;
        if self.spill.is_empty() {
            return match self.apply_head_from(input)? {
                Some(n) => Ok(Some(n)),
                None if input.len() >= max => Err(ParseError::HeadTooLarge(max)),
                None => {
                    self.spill.extend_from_slice(input);
                    Ok(None)
                }
            };
        }
        // The head spans reads. A head within the limit ends within the first `max - old`
        // bytes of the input, so copying more than that would only copy body bytes.
        let old = self.spill.len();
        let take = input.len().min(max - old);
        self.spill.extend_from_slice(&input[..take]);
        let spill = std::mem::take(&mut self.spill);
        let parsed = self.apply_head_from(&spill);
        self.spill = spill;
        match parsed? {
            Some(n) => {
                self.spill.clear();
                Ok(Some(n - old))
            }
            None if self.spill.len() >= max => Err(ParseError::HeadTooLarge(max)),
            None => Ok(None),
        }
    }

    /// Runs httparse over `buf`; on a complete head, applies it and returns its length.
    fn apply_head_from(&mut self, buf: &[u8]) -> Result<Option<usize>, ParseError> {
        // Uninitialised: httparse writes the slots it fills, so the 3.2 KB of an initialised
        // array would be zeroed for every response only to be overwritten.
        let mut headers = [const { std::mem::MaybeUninit::uninit() }; MAX_HEADERS];
        let mut resp = httparse::Response::new(&mut []);
        let config = httparse::ParserConfig::default();
        let n = match config.parse_response_with_uninit_headers(&mut resp, buf, &mut headers) {
            Ok(httparse::Status::Complete(n)) => n,
            Ok(httparse::Status::Partial) => return Ok(None),
            Err(httparse::Error::TooManyHeaders) => return Err(ParseError::TooManyHeaders),
            Err(e) => return Err(ParseError::Malformed(e)),
        };
        if n > self.limits.max_head_bytes {
            return Err(ParseError::HeadTooLarge(self.limits.max_head_bytes));
        }
        let code = resp.code.unwrap_or(0);
        let http10 = resp.version == Some(0);
        if code == 101 {
            return Err(ParseError::UnexpectedUpgrade);
        }
        if (100..200).contains(&code) {
            // An interim response (100 Continue, 103 Early Hints): the final one follows on the
            // same connection, so the phase stays Head (RFC 9110 section 15.2).
            return Ok(Some(n));
        }

        let framing = self.framing(resp.headers)?;
        if self.capture_headers {
            self.headers = resp
                .headers
                .iter()
                .map(|h| {
                    let value = String::from_utf8_lossy(trim(h.value)).into_owned();
                    (h.name.to_ascii_lowercase(), value)
                })
                .collect();
        }
        self.status = code;
        // HTTP/1.1 connections persist unless closed; HTTP/1.0 ones only when asked to
        // (RFC 9112 section 9.3).
        self.keep_alive =
            if http10 { framing.keep_alive_token && !framing.close } else { !framing.close };
        self.phase = self.body_phase(code, http10, &framing)?;
        Ok(Some(n))
    }

    /// What the head's headers say of the body's framing and the connection (and the Server
    /// header, when it is asked for).
    fn framing(&mut self, headers: &[httparse::Header<'_>]) -> Result<Framing, ParseError> {
        let mut f = Framing::default();
        for h in headers {
            let name = h.name;
            if name.eq_ignore_ascii_case("content-length") {
                for part in h.value.split(|&b| b == b',') {
                    let v = parse_decimal(trim(part)).ok_or(ParseError::InvalidContentLength)?;
                    match f.content_length {
                        Some(prev) if prev != v => {
                            return Err(ParseError::ConflictingContentLength)
                        }
                        _ => f.content_length = Some(v),
                    }
                }
            } else if name.eq_ignore_ascii_case("transfer-encoding") {
                f.transfer_encoding = true;
                // Only the final coding decides the framing (RFC 9112 section 6.3, item 4).
                let last = h.value.rsplit(|&b| b == b',').next().map(trim).unwrap_or(&[]);
                f.chunked = last.eq_ignore_ascii_case(b"chunked");
            } else if name.eq_ignore_ascii_case("connection") {
                for token in h.value.split(|&b| b == b',').map(trim) {
                    f.close |= token.eq_ignore_ascii_case(b"close");
                    f.keep_alive_token |= token.eq_ignore_ascii_case(b"keep-alive");
                }
            } else if self.capture_server && name.eq_ignore_ascii_case("server") {
                self.server = Some(String::from_utf8_lossy(h.value).into_owned());
                self.capture_server = false;
            }
        }
        Ok(f)
    }

    /// How the body of a final response with status `code` is delimited, RFC 9112 section
    /// 6.3's rules in order; a framing that leaves the body's end uncertain also ends the
    /// connection's reuse.
    fn body_phase(&mut self, code: u16, http10: bool, f: &Framing) -> Result<Phase, ParseError> {
        if self.head_request || code == 204 || code == 304 {
            return Ok(Phase::Done);
        }
        if f.transfer_encoding {
            if http10 {
                // RFC 9112 section 6.1: treat the framing as faulty.
                return Err(ParseError::TransferEncodingInHttp10);
            }
            if f.content_length.is_some() {
                // Both headers: Transfer-Encoding wins, and the connection must be closed
                // after the response because the message may be a smuggling attempt.
                self.keep_alive = false;
            }
            if f.chunked {
                return Ok(Phase::Chunked);
            }
            self.keep_alive = false;
            return Ok(Phase::UntilClose);
        }
        Ok(match f.content_length {
            Some(0) => Phase::Done,
            Some(len) => Phase::Length(len),
            None => {
                self.keep_alive = false;
                Phase::UntilClose
            }
        })
    }
}

/// What a head's headers say of its body's framing and of its connection.
#[derive(Debug, Default)]
struct Framing {
    content_length: Option<u64>,
    transfer_encoding: bool,
    /// The final transfer coding is `chunked`.
    chunked: bool,
    /// `Connection: close`.
    close: bool,
    /// `Connection: keep-alive` (what keeps an HTTP/1.0 connection open).
    keep_alive_token: bool,
}

fn trim(b: &[u8]) -> &[u8] {
    let start = b.iter().position(|c| !matches!(c, b' ' | b'\t')).unwrap_or(b.len());
    let end = b.iter().rposition(|c| !matches!(c, b' ' | b'\t')).map_or(start, |e| e + 1);
    &b[start..end]
}

/// A non-empty run of ASCII digits that fits in a u64.
fn parse_decimal(b: &[u8]) -> Option<u64> {
    if b.is_empty() || b.len() > 19 {
        return None;
    }
    b.iter().try_fold(0u64, |acc, &c| c.is_ascii_digit().then(|| acc * 10 + u64::from(c - b'0')))
}
