//! HTTP/3 frames (RFC 9114 section 7) and QUIC's variable-length integers (RFC 9000 section
//! 16), which frame types, lengths and settings are all written in.

/// The frame types a client meets or sends (RFC 9114 section 7.2).
pub const DATA: u64 = 0x00;
pub const HEADERS: u64 = 0x01;
pub const CANCEL_PUSH: u64 = 0x03;
pub const SETTINGS: u64 = 0x04;
pub const PUSH_PROMISE: u64 = 0x05;
pub const GOAWAY: u64 = 0x07;
pub const MAX_PUSH_ID: u64 = 0x0d;

/// Unidirectional stream types (RFC 9114 section 6.2, RFC 9204 section 4.2).
pub const CONTROL_STREAM: u64 = 0x00;
pub const PUSH_STREAM: u64 = 0x01;
pub const QPACK_ENCODER_STREAM: u64 = 0x02;
pub const QPACK_DECODER_STREAM: u64 = 0x03;

/// Settings (RFC 9114 section 7.2.4.1, RFC 9204 section 5).
pub const SETTINGS_QPACK_MAX_TABLE_CAPACITY: u64 = 0x01;
pub const SETTINGS_MAX_FIELD_SECTION_SIZE: u64 = 0x06;
pub const SETTINGS_QPACK_BLOCKED_STREAMS: u64 = 0x07;

/// The largest value a variable-length integer holds: 2^62 - 1.
pub const MAX_VARINT: u64 = (1 << 62) - 1;

/// A variable-length integer at the start of `b`: its value and the bytes it took, or `None`
/// when `b` ends first. The two high bits of the first byte give its length: 1, 2, 4 or 8.
pub fn varint(b: &[u8]) -> Option<(u64, usize)> {
    let first = *b.first()?;
    let len = 1usize << (first >> 6);
    let bytes = b.get(..len)?;
    let mut value = u64::from(first & 0x3f);
    for &byte in &bytes[1..] {
        value = value << 8 | u64::from(byte);
    }
    Some((value, len))
}

/// Appends `value` as a variable-length integer in the fewest bytes.
///
/// # Panics
/// When `value` exceeds [`MAX_VARINT`]: every value this client writes is a small constant
/// or a length it chose.
pub fn put_varint(out: &mut Vec<u8>, value: u64) {
    assert!(value <= MAX_VARINT, "{value} does not fit a QUIC varint");
    match value {
        0..=0x3f => out.push(value as u8),
        0x40..=0x3fff => out.extend_from_slice(&(value as u16 | 0x4000).to_be_bytes()),
        0x4000..=0x3fff_ffff => out.extend_from_slice(&(value as u32 | 0x8000_0000).to_be_bytes()),
        _ => out.extend_from_slice(&(value | 0xc000_0000_0000_0000).to_be_bytes()),
    }
}

/// A frame's type and payload length at the start of `b`, and the bytes they took; `None`
/// until both have arrived.
pub fn header(b: &[u8]) -> Option<(u64, u64, usize)> {
    let (kind, n) = varint(b)?;
    let (len, m) = varint(&b[n..])?;
    Some((kind, len, n + m))
}

/// Appends a frame header of this type and payload length.
pub fn put_header(out: &mut Vec<u8>, kind: u64, len: usize) {
    put_varint(out, kind);
    put_varint(out, len as u64);
}

/// Frame types of HTTP/2 that HTTP/3 has no use for: receiving one is a connection error
/// (RFC 9114 section 7.2.8).
pub fn is_http2_only(kind: u64) -> bool {
    matches!(kind, 0x02 | 0x06 | 0x08 | 0x09)
}

/// The client's control stream as it opens: its type, then SETTINGS (RFC 9114 section
/// 6.2.1): no QPACK dynamic table and no blocked streams, so that every response's field
/// section decodes from the static table and literals alone (RFC 9204 section 2.1.1), and
/// the largest field section this client takes.
pub fn control_stream(max_field_section: usize) -> Vec<u8> {
    let mut settings = Vec::new();
    for (id, value) in [
        (SETTINGS_QPACK_MAX_TABLE_CAPACITY, 0),
        (SETTINGS_QPACK_BLOCKED_STREAMS, 0),
        (SETTINGS_MAX_FIELD_SECTION_SIZE, max_field_section as u64),
    ] {
        put_varint(&mut settings, id);
        put_varint(&mut settings, value);
    }
    let mut out = Vec::new();
    put_varint(&mut out, CONTROL_STREAM);
    put_header(&mut out, SETTINGS, settings.len());
    out.extend_from_slice(&settings);
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn varints_take_the_lengths_rfc_9000_gives() {
        // RFC 9000 appendix A.1's examples.
        for (bytes, value) in [
            (&[0xc2, 0x19, 0x7c, 0x5e, 0xff, 0x14, 0xe8, 0x8c][..], 151_288_809_941_952_652),
            (&[0x9d, 0x7f, 0x3e, 0x7d], 494_878_333),
            (&[0x7b, 0xbd], 15_293),
            (&[0x25], 37),
        ] {
            assert_eq!(varint(bytes), Some((value, bytes.len())));
            let mut out = Vec::new();
            put_varint(&mut out, value);
            assert_eq!(out, bytes);
        }
        // The shortest form is written; a longer one is still read (section 16).
        assert_eq!(varint(&[0x40, 0x25]), Some((37, 2)));
        assert_eq!(varint(&[0x9d, 0x7f]), None);
        assert_eq!(varint(&[]), None);
    }

    #[test]
    fn a_frame_header_needs_both_varints() {
        let mut out = Vec::new();
        put_header(&mut out, HEADERS, 300);
        assert_eq!(out, [0x01, 0x41, 0x2c]);
        assert_eq!(header(&out), Some((HEADERS, 300, 3)));
        assert_eq!(header(&out[..2]), None);
    }

    #[test]
    fn the_control_stream_opens_with_settings_and_no_dynamic_table() {
        let bytes = control_stream(65_536);
        assert_eq!(bytes[0], 0x00, "stream type: control");
        let (kind, len, n) = header(&bytes[1..]).unwrap();
        assert_eq!(kind, SETTINGS);
        let mut payload = &bytes[1 + n..];
        assert_eq!(payload.len() as u64, len);
        let mut seen = Vec::new();
        while !payload.is_empty() {
            let (id, a) = varint(payload).unwrap();
            let (value, b) = varint(&payload[a..]).unwrap();
            seen.push((id, value));
            payload = &payload[a + b..];
        }
        assert_eq!(seen, [(0x01, 0), (0x07, 0), (0x06, 65_536)]);
    }
}
