//! QPACK (RFC 9204) without a dynamic table: this client announces a table capacity of 0 and
//! no blocked streams (see [`super::frame::control_stream`]), so a server's field sections
//! hold only static-table references and literals, and decode in order with no state across
//! responses (section 2.1.1). A reference to the dynamic table is the server's error
//! (QPACK_DECOMPRESSION_FAILED, section 2.2.3).
//!
//! Integers, strings and Huffman codes are HPACK's (RFC 7541 sections 5.1 and 5.2, RFC 9204
//! section 4.1), so they are read and written by [`crate::h2::hpack`]'s functions, with the
//! prefixes QPACK's representations give them. Like HPACK's decoder, this one never allocates
//! per response: Huffman strings go into two buffers it keeps, and values nobody asked for are
//! skipped undecoded.

use crate::h2::hpack::{
    self, integer, prefixed_string, put_integer, put_prefixed_string, skip_string, HpackError,
};

/// Why a field section could not be decoded: each is QPACK_DECOMPRESSION_FAILED (0x200), but
/// [`QpackError::Field`]'s `ListTooLarge`, which is ours (the section broke
/// SETTINGS_MAX_FIELD_SECTION_SIZE, H3_EXCESSIVE_LOAD).
#[derive(Debug, Clone, Copy, PartialEq, Eq, thiserror::Error)]
pub enum QpackError {
    #[error("QPACK: {0}")]
    Field(#[from] HpackError),
    #[error("QPACK: a reference to the dynamic table, whose capacity is 0")]
    DynamicTable,
    #[error("QPACK: static index {0} is not in the table")]
    StaticIndex(usize),
}

/// The static table (RFC 9204 Appendix A), index 0 first.
const STATIC: [(&[u8], &[u8]); 99] = [
    (b":authority", b""),
    (b":path", b"/"),
    (b"age", b"0"),
    (b"content-disposition", b""),
    (b"content-length", b"0"),
    (b"cookie", b""),
    (b"date", b""),
    (b"etag", b""),
    (b"if-modified-since", b""),
    (b"if-none-match", b""),
    (b"last-modified", b""),
    (b"link", b""),
    (b"location", b""),
    (b"referer", b""),
    (b"set-cookie", b""),
    (b":method", b"CONNECT"),
    (b":method", b"DELETE"),
    (b":method", b"GET"),
    (b":method", b"HEAD"),
    (b":method", b"OPTIONS"),
    (b":method", b"POST"),
    (b":method", b"PUT"),
    (b":scheme", b"http"),
    (b":scheme", b"https"),
    (b":status", b"103"),
    (b":status", b"200"),
    (b":status", b"304"),
    (b":status", b"404"),
    (b":status", b"503"),
    (b"accept", b"*/*"),
    (b"accept", b"application/dns-message"),
    (b"accept-encoding", b"gzip, deflate, br"),
    (b"accept-ranges", b"bytes"),
    (b"access-control-allow-headers", b"cache-control"),
    (b"access-control-allow-headers", b"content-type"),
    (b"access-control-allow-origin", b"*"),
    (b"cache-control", b"max-age=0"),
    (b"cache-control", b"max-age=2592000"),
    (b"cache-control", b"max-age=604800"),
    (b"cache-control", b"no-cache"),
    (b"cache-control", b"no-store"),
    (b"cache-control", b"public, max-age=31536000"),
    (b"content-encoding", b"br"),
    (b"content-encoding", b"gzip"),
    (b"content-type", b"application/dns-message"),
    (b"content-type", b"application/javascript"),
    (b"content-type", b"application/json"),
    (b"content-type", b"application/x-www-form-urlencoded"),
    (b"content-type", b"image/gif"),
    (b"content-type", b"image/jpeg"),
    (b"content-type", b"image/png"),
    (b"content-type", b"text/css"),
    (b"content-type", b"text/html; charset=utf-8"),
    (b"content-type", b"text/plain"),
    (b"content-type", b"text/plain;charset=utf-8"),
    (b"range", b"bytes=0-"),
    (b"strict-transport-security", b"max-age=31536000"),
    (b"strict-transport-security", b"max-age=31536000; includesubdomains"),
    (b"strict-transport-security", b"max-age=31536000; includesubdomains; preload"),
    (b"vary", b"accept-encoding"),
    (b"vary", b"origin"),
    (b"x-content-type-options", b"nosniff"),
    (b"x-xss-protection", b"1; mode=block"),
    (b":status", b"100"),
    (b":status", b"204"),
    (b":status", b"206"),
    (b":status", b"302"),
    (b":status", b"400"),
    (b":status", b"403"),
    (b":status", b"421"),
    (b":status", b"425"),
    (b":status", b"500"),
    (b"accept-language", b""),
    (b"access-control-allow-credentials", b"FALSE"),
    (b"access-control-allow-credentials", b"TRUE"),
    (b"access-control-allow-headers", b"*"),
    (b"access-control-allow-methods", b"get"),
    (b"access-control-allow-methods", b"get, post, options"),
    (b"access-control-allow-methods", b"options"),
    (b"access-control-expose-headers", b"content-length"),
    (b"access-control-request-headers", b"content-type"),
    (b"access-control-request-method", b"get"),
    (b"access-control-request-method", b"post"),
    (b"alt-svc", b"clear"),
    (b"authorization", b""),
    (b"content-security-policy", b"script-src 'none'; object-src 'none'; base-uri 'none'"),
    (b"early-data", b"1"),
    (b"expect-ct", b""),
    (b"forwarded", b""),
    (b"if-range", b""),
    (b"origin", b""),
    (b"purpose", b"prefetch"),
    (b"server", b""),
    (b"timing-allow-origin", b"*"),
    (b"upgrade-insecure-requests", b"1"),
    (b"user-agent", b""),
    (b"x-forwarded-for", b""),
    (b"x-frame-options", b"deny"),
    (b"x-frame-options", b"sameorigin"),
];

fn static_entry(index: usize) -> Result<(&'static [u8], &'static [u8]), QpackError> {
    STATIC.get(index).copied().ok_or(QpackError::StaticIndex(index))
}

/// Encodes one request's field section (RFC 9204 section 4.5), once for the run: the prefix
/// (Required Insert Count 0, Base 0), then each field as a static-table line where the table
/// has name and value, a literal naming a static entry where it has the name, and a literal
/// with its name otherwise. None asks the server to index anything.
pub fn encode(fields: &[(&[u8], &[u8])]) -> Vec<u8> {
    let mut out = vec![0x00, 0x00];
    for &(name, value) in fields {
        if let Some(i) = STATIC.iter().position(|e| *e == (name, value)) {
            // Indexed field line, static (T = 1): 11xxxxxx.
            put_integer(&mut out, i, 6, 0xc0);
        } else if let Some(i) = STATIC.iter().position(|e| e.0 == name) {
            // Literal with a static name reference, N = 0, T = 1: 0101xxxx.
            put_integer(&mut out, i, 4, 0x50);
            put_prefixed_string(&mut out, value, 7, 0);
        } else {
            // Literal with a literal name, N = 0: 001Hxxx.
            put_prefixed_string(&mut out, name, 3, 0x20);
            put_prefixed_string(&mut out, value, 7, 0);
        }
    }
    out
}

/// Decodes the field sections of one connection's responses.
#[derive(Debug)]
pub struct Decoder {
    max_list: usize,
    name: Vec<u8>,
    value: Vec<u8>,
}

impl Decoder {
    /// A decoder whose field sections may decode to at most `max_list` bytes, counted as
    /// SETTINGS_MAX_FIELD_SECTION_SIZE counts them (RFC 9114 section 4.2.2: name, value and
    /// 32 per field, as HTTP/2).
    pub fn new(max_list: usize) -> Decoder {
        Decoder { max_list, name: Vec::with_capacity(256), value: Vec::with_capacity(256) }
    }

    /// Decodes one whole field section, giving each field whose name `wanted` accepts to
    /// `field`, in order; a literal value of another field is skipped undecoded.
    pub fn decode(
        &mut self,
        section: &[u8],
        wanted: impl Fn(&[u8]) -> bool,
        field: &mut impl FnMut(&[u8], &[u8]),
    ) -> Result<(), QpackError> {
        // The prefix: Required Insert Count, then the Base's sign and delta (section 4.5.1).
        // With no dynamic table the count must be 0; the Base then names nothing.
        let (required, n) = integer(section, 8)?;
        if required != 0 {
            return Err(QpackError::DynamicTable);
        }
        let (_, m) = integer(section.get(n..).ok_or(HpackError::Truncated)?, 7)?;
        let mut pos = n + m;
        let mut list = Count { used: 0, max: self.max_list };
        while pos < section.len() {
            let b = section[pos];
            let (name, value_at): (&[u8], usize) = if b & 0x80 != 0 {
                // Indexed field line (section 4.5.2): T (0x40) set for the static table.
                if b & 0x40 == 0 {
                    return Err(QpackError::DynamicTable);
                }
                let (index, n) = integer(&section[pos..], 6)?;
                pos += n;
                let (name, value) = static_entry(index)?;
                list.add(name.len() + value.len())?;
                if wanted(name) {
                    field(name, value);
                }
                continue;
            } else if b & 0x40 != 0 {
                // Literal with a name reference (section 4.5.4): T (0x10) for static.
                if b & 0x10 == 0 {
                    return Err(QpackError::DynamicTable);
                }
                let (index, n) = integer(&section[pos..], 4)?;
                (static_entry(index)?.0, pos + n)
            } else if b & 0x20 != 0 {
                // Literal with a literal name (section 4.5.6): its length after 3 bits.
                let (s, n) = prefixed_string(section, pos, 3, &mut self.name)?;
                (s.map_or(&self.name[..], |(a, b)| &section[a..b]), pos + n)
            } else {
                // 0001xxxx and 0000xxxx: post-base references, into the dynamic table.
                return Err(QpackError::DynamicTable);
            };
            let literal = Literal { section, name, wanted: &wanted };
            pos = literal.value(value_at, &mut self.value, &mut list, field)?;
        }
        Ok(())
    }
}

/// A field section's decoded size so far, against its limit.
struct Count {
    used: usize,
    max: usize,
}

impl Count {
    fn add(&mut self, len: usize) -> Result<(), QpackError> {
        self.used += len + hpack::ENTRY_OVERHEAD;
        if self.used > self.max {
            return Err(HpackError::ListTooLarge.into());
        }
        Ok(())
    }
}

/// A literal field line whose name is known and whose value comes next.
struct Literal<'a, W> {
    section: &'a [u8],
    name: &'a [u8],
    wanted: &'a W,
}

impl<W: Fn(&[u8]) -> bool> Literal<'_, W> {
    /// The value at `pos`: decoded (into `buf` when Huffman-coded) and given to `field` when
    /// the name is wanted, skipped otherwise; the position after it.
    fn value(
        &self,
        pos: usize,
        buf: &mut Vec<u8>,
        list: &mut Count,
        field: &mut impl FnMut(&[u8], &[u8]),
    ) -> Result<usize, QpackError> {
        let (section, name) = (self.section, self.name);
        if !(self.wanted)(name) {
            let (len, n) = skip_string(section, pos)?;
            list.add(name.len() + len)?;
            return Ok(pos + n);
        }
        let (value, n) = prefixed_string(section, pos, 7, buf)?;
        let value: &[u8] = value.map_or(&buf[..], |(a, b)| &section[a..b]);
        list.add(name.len() + value.len())?;
        field(name, value);
        Ok(pos + n)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn decode_all(section: &[u8]) -> Result<Vec<(String, String)>, QpackError> {
        let mut out = Vec::new();
        Decoder::new(16_384).decode(section, |_| true, &mut |n, v| {
            out.push((String::from_utf8_lossy(n).into(), String::from_utf8_lossy(v).into()))
        })?;
        Ok(out)
    }

    #[test]
    fn the_static_table_has_rfc_9204s_entries() {
        assert_eq!(STATIC.len(), 99);
        assert_eq!(STATIC[17], (&b":method"[..], &b"GET"[..]));
        assert_eq!(STATIC[25], (&b":status"[..], &b"200"[..]));
        assert_eq!(STATIC[92], (&b"server"[..], &b""[..]));
        assert_eq!(STATIC[98], (&b"x-frame-options"[..], &b"sameorigin"[..]));
    }

    #[test]
    fn a_request_round_trips_through_static_references_and_literals() {
        let fields: [(&[u8], &[u8]); 5] = [
            (b":method", b"GET"),
            (b":scheme", b"https"),
            (b":authority", b"127.0.0.1:8443"),
            (b":path", b"/hello.txt"),
            (b"x-loadlab", b"1"),
        ];
        let section = encode(&fields);
        // The prefix, then GET and https by static index alone (17 and 23).
        assert_eq!(&section[..4], &[0x00, 0x00, 0xc0 | 17, 0xc0 | 23]);
        let decoded = decode_all(&section).unwrap();
        let want: Vec<(String, String)> = fields
            .iter()
            .map(|(n, v)| (String::from_utf8_lossy(n).into(), String::from_utf8_lossy(v).into()))
            .collect();
        assert_eq!(decoded, want);
    }

    #[test]
    fn a_response_names_its_status_and_skips_what_nobody_asked_for() {
        // :status 200 (static 25), server: Caddy (literal, static name 92, Huffman-coded by
        // the encoder), a date nobody wants.
        let section = encode(&[(b":status", b"200"), (b"server", b"Caddy"), (b"date", b"x")]);
        let mut seen = Vec::new();
        Decoder::new(1024)
            .decode(&section, |n| n != b"date", &mut |n, v| seen.push((n.to_vec(), v.to_vec())))
            .unwrap();
        assert_eq!(
            seen,
            [(b":status".to_vec(), b"200".to_vec()), (b"server".to_vec(), b"Caddy".to_vec())]
        );
    }

    #[test]
    fn references_to_a_dynamic_table_are_refused() {
        // Required Insert Count 1: the section depends on an insertion we never allowed.
        assert_eq!(decode_all(&[0x02, 0x00, 0x80]), Err(QpackError::DynamicTable));
        // Indexed line with T = 0, literal with a dynamic name, post-base forms.
        for line in [0x80u8, 0x40, 0x10, 0x00] {
            assert_eq!(decode_all(&[0x00, 0x00, line]), Err(QpackError::DynamicTable), "{line:#x}");
        }
        assert_eq!(decode_all(&[0x00, 0x00, 0xc0 | 0x3f, 0x40]), Err(QpackError::StaticIndex(127)));
    }

    #[test]
    fn truncated_and_oversized_sections_are_errors() {
        let section = encode(&[(b":status", b"200"), (b"x-long", &[b'a'; 100])]);
        for cut in 0..section.len() {
            let r = decode_all(&section[..cut]);
            // Cut between whole lines, what remains decodes; inside one, it is truncated.
            if let Err(e) = r {
                assert_eq!(e, QpackError::Field(HpackError::Truncated), "cut at {cut}");
            }
        }
        assert!(decode_all(&[]).is_err(), "no prefix");
        let mut small = Decoder::new(64);
        let e = small.decode(&section, |_| true, &mut |_, _| {}).unwrap_err();
        assert_eq!(e, QpackError::Field(HpackError::ListTooLarge));
    }
}
