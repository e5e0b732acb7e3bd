//! The chunked transfer coding (RFC 9112 section 7.1), decoded byte by byte for framing and in
//! bulk for data, with chunk extensions skipped and trailer fields read and discarded.

use super::{Limits, ParseError};

#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
enum State {
    /// Reading the hex digits of a chunk size.
    #[default]
    Size,
    /// After the size: whitespace and `;name=value` extensions up to the line end.
    Ext,
    /// Expecting the LF that ends the chunk-size line.
    SizeLf,
    /// Inside chunk data.
    Data,
    /// Expecting the CRLF after chunk data.
    DataCr,
    DataLf,
    /// At the start of a trailer line (or of the final empty line).
    TrailerStart,
    Trailer,
    TrailerLf,
    /// Expecting the LF of the final empty line.
    FinalLf,
}

#[derive(Debug, Clone, Default)]
pub(super) struct ChunkedDecoder {
    state: State,
    /// The size being read, then the bytes of chunk data still to come.
    size: u64,
    digits: usize,
    line_len: usize,
    trailer_bytes: usize,
}

impl ChunkedDecoder {
    /// Decodes from `data`, passing chunk data to `sink`. Returns how much of `data` was used
    /// and whether the message ended there.
    pub(super) fn decode(
        &mut self,
        data: &[u8],
        limits: &Limits,
        sink: &mut impl FnMut(&[u8]),
    ) -> Result<(usize, bool), ParseError> {
        let mut i = 0;
        while i < data.len() {
            if self.state == State::Data {
                let take = self.size.min((data.len() - i) as u64) as usize;
                sink(&data[i..i + take]);
                i += take;
                self.size -= take as u64;
                if self.size == 0 {
                    self.state = State::DataCr;
                }
                continue;
            }
            let b = data[i];
            i += 1;
            if self.step(b, limits)? {
                return Ok((i, true));
            }
        }
        Ok((i, false))
    }

    /// One byte of framing (a size line, the CRLF after data, a trailer line) in the current
    /// state; whether it ended the message.
    #[inline]
    fn step(&mut self, b: u8, limits: &Limits) -> Result<bool, ParseError> {
        match self.state {
            State::Size => match b {
                b'0'..=b'9' | b'a'..=b'f' | b'A'..=b'F' => {
                    let digit = u64::from((b as char).to_digit(16).unwrap_or(0));
                    self.digits += 1;
                    self.line(limits)?;
                    self.size = self
                        .size
                        .checked_mul(16)
                        .and_then(|s| s.checked_add(digit))
                        .filter(|s| *s <= limits.max_chunk_bytes)
                        .ok_or(ParseError::ChunkTooLarge(limits.max_chunk_bytes))?;
                }
                _ if self.digits == 0 => return Err(ParseError::InvalidChunk),
                b';' | b' ' | b'\t' => self.state = State::Ext,
                b'\r' => self.state = State::SizeLf,
                // A bare LF is accepted as a line end (RFC 9112 section 2.2).
                b'\n' => self.end_size_line(),
                _ => return Err(ParseError::InvalidChunk),
            },
            State::Ext => match b {
                b'\r' => self.state = State::SizeLf,
                b'\n' => self.end_size_line(),
                _ => self.line(limits)?,
            },
            State::SizeLf => match b {
                b'\n' => self.end_size_line(),
                _ => return Err(ParseError::InvalidChunk),
            },
            State::DataCr => match b {
                b'\r' => self.state = State::DataLf,
                b'\n' => self.state = State::Size,
                _ => return Err(ParseError::InvalidChunk),
            },
            State::DataLf => match b {
                b'\n' => self.state = State::Size,
                _ => return Err(ParseError::InvalidChunk),
            },
            State::TrailerStart => match b {
                b'\r' => self.state = State::FinalLf,
                b'\n' => return Ok(true),
                _ => {
                    self.state = State::Trailer;
                    self.line_len = 0;
                    self.trailer(limits)?;
                }
            },
            State::Trailer => match b {
                b'\r' => self.state = State::TrailerLf,
                b'\n' => self.state = State::TrailerStart,
                _ => self.trailer(limits)?,
            },
            State::TrailerLf => match b {
                b'\n' => self.state = State::TrailerStart,
                _ => return Err(ParseError::InvalidChunk),
            },
            State::FinalLf => match b {
                b'\n' => return Ok(true),
                _ => return Err(ParseError::InvalidChunk),
            },
            State::Data => unreachable!("data is consumed in bulk by decode"),
        }
        Ok(false)
    }

    fn end_size_line(&mut self) {
        self.line_len = 0;
        self.digits = 0;
        self.state = if self.size == 0 { State::TrailerStart } else { State::Data };
    }

    /// Counts one byte of a chunk-size line against the line limit.
    fn line(&mut self, limits: &Limits) -> Result<(), ParseError> {
        self.line_len += 1;
        if self.line_len > limits.max_line_bytes {
            return Err(ParseError::LineTooLong(limits.max_line_bytes));
        }
        Ok(())
    }

    /// Counts one byte of a trailer line against the line and the head limits.
    fn trailer(&mut self, limits: &Limits) -> Result<(), ParseError> {
        self.trailer_bytes += 1;
        if self.trailer_bytes > limits.max_head_bytes {
            return Err(ParseError::HeadTooLarge(limits.max_head_bytes));
        }
        self.line(limits)
    }
}
