//! The response reader against streams built frame by frame: each of RFC 9114's rules for a
//! request stream, fed whole and a byte at a time, and hostile bytes that must end in an
//! error, never a panic.

use super::frame::{put_header, put_varint, DATA, HEADERS};
use super::qpack::{encode, Decoder};
use super::*;

fn headers(fields: &[(&[u8], &[u8])]) -> Vec<u8> {
    headers_frame(fields)
}

fn data(body: &[u8]) -> Vec<u8> {
    let mut out = Vec::new();
    put_header(&mut out, DATA, body.len());
    out.extend_from_slice(body);
    out
}

fn frame(kind: u64, payload: &[u8]) -> Vec<u8> {
    let mut out = Vec::new();
    put_varint(&mut out, kind);
    put_varint(&mut out, payload.len() as u64);
    out.extend_from_slice(payload);
    out
}

/// What reading `stream` yields: the status, the wanted fields, the body, and the outcome at
/// its end; fed in pieces of `step` bytes.
fn read(stream: &[u8], step: usize, head: bool) -> (Vec<String>, Result<(), StreamError>) {
    let mut reader = Response::new(1024, |n| n == b"server");
    reader.begin(head);
    let mut decoder = Decoder::new(1024);
    let mut parts = Vec::new();
    let mut body = Vec::new();
    for piece in stream.chunks(step) {
        let mut on = |part: Part<'_>| match part {
            Part::Status(s) => parts.push(format!("status {s}")),
            Part::Field(n, v) => parts.push(format!(
                "{}: {}",
                String::from_utf8_lossy(n),
                String::from_utf8_lossy(v)
            )),
            Part::Body(b) => body.extend_from_slice(b),
        };
        if let Err(e) = reader.feed(piece, &mut decoder, &mut on) {
            return (parts, Err(e));
        }
    }
    if !body.is_empty() {
        parts.push(format!("body {}", String::from_utf8_lossy(&body)));
    }
    (parts, reader.finish())
}

/// [`read`] whole and a byte at a time, which must agree.
fn read_both(stream: &[u8], head: bool) -> (Vec<String>, Result<(), StreamError>) {
    let whole = read(stream, stream.len().max(1), head);
    assert_eq!(read(stream, 1, head), whole, "fed a byte at a time");
    whole
}

const OK: &[(&[u8], &[u8])] =
    &[(b":status", b"200"), (b"content-length", b"13"), (b"server", b"Caddy")];

#[test]
fn a_response_is_its_status_wanted_fields_and_body() {
    let mut stream = headers(OK);
    stream.extend(data(b"hello, "));
    stream.extend(data(b"world!"));
    let (parts, end) = read_both(&stream, false);
    assert_eq!(parts, ["server: Caddy", "status 200", "body hello, world!"]);
    assert_eq!(end, Ok(()));
}

#[test]
fn interim_responses_unknown_frames_and_trailers_are_passed_over() {
    let mut stream = headers(&[(b":status", b"103"), (b"link", b"</a.css>")]);
    // A reserved frame type (0x1f * 1 + 0x21) with a payload: skipped unread (section 9).
    stream.extend(frame(0x40, b"grease"));
    stream.extend(headers(OK));
    stream.extend(data(b"hello, world!"));
    stream.extend(frame(0x21, b""));
    stream.extend(headers(&[(b"x-checksum", b"1")]));
    let (parts, end) = read_both(&stream, false);
    assert_eq!(parts, ["server: Caddy", "status 200", "body hello, world!"]);
    assert_eq!(end, Ok(()));
}

#[test]
fn frames_out_of_place_on_a_request_stream_are_frame_unexpected() {
    let after_trailers = [headers(OK), data(b"hello, world!"), headers(&[]), data(b"x")].concat();
    for (stream, kind) in [
        (data(b"early"), 0x00),
        (frame(0x04, b""), 0x04),
        (frame(0x07, &[0]), 0x07),
        (frame(0x0d, &[0]), 0x0d),
        (frame(0x03, &[0]), 0x03),
        // HTTP/2's PRIORITY, PING, WINDOW_UPDATE and CONTINUATION have no HTTP/3 meaning.
        (frame(0x02, b""), 0x02),
        (frame(0x09, b""), 0x09),
        (after_trailers, 0x00),
    ] {
        let (_, end) = read_both(&stream, false);
        assert_eq!(end, Err(StreamError::FrameUnexpected(kind)), "{kind:#x}");
        assert_eq!(end.unwrap_err().code(), 0x105);
    }
    let (_, end) = read_both(&frame(0x05, &[0, 0, 0]), false);
    assert_eq!(end, Err(StreamError::Push));
}

#[test]
fn a_stream_that_ends_early_says_where() {
    let whole = [headers(OK), data(b"hello, world!")].concat();
    // Inside the HEADERS frame or before it: no response; inside DATA's header or payload:
    // a frame cut short.
    let (_, end) = read_both(&whole[..3], false);
    assert_eq!(end, Err(StreamError::Truncated));
    let (_, end) = read_both(&[], false);
    assert_eq!(end, Err(StreamError::Incomplete));
    assert_eq!(end.unwrap_err().code(), 0x10d);
    let headers_len = headers(OK).len();
    let (_, end) = read_both(&whole[..headers_len + 5], false);
    assert_eq!(end, Err(StreamError::Truncated));
    // Whole frames, but less body than Content-Length.
    let short = [headers(OK), data(b"hello")].concat();
    let (_, end) = read_both(&short, false);
    assert_eq!(end, Err(StreamError::Message("the body ended before its Content-Length")));
}

#[test]
fn malformed_responses_are_message_errors() {
    let long = [headers(OK), data(b"hello, world!!")].concat();
    for (stream, head, said) in [
        (headers(&[(b"server", b"x")]), false, "a response without :status"),
        (headers(&[(b":status", b"2000")]), false, "a :status that is not 3 digits"),
        (headers(&[(b":status", b"101")]), false, "101 Switching Protocols, which HTTP/3 forbids"),
        (
            headers(&[(b":status", b"200"), (b":path", b"/")]),
            false,
            "a pseudo-header field other than :status",
        ),
        (
            headers(&[(b":status", b"200"), (b"content-length", b"-1")]),
            false,
            "a bad Content-Length",
        ),
        (long, false, "a body beyond its Content-Length"),
        (
            [headers(&[(b":status", b"204")]), data(b"x")].concat(),
            false,
            "a body after HEAD, 204 or 304",
        ),
        ([headers(OK), data(b"x")].concat(), true, "a body after HEAD, 204 or 304"),
        (
            [headers(&[(b":status", b"200")]), headers(&[(b":status", b"200")])].concat(),
            false,
            "a pseudo-header field in trailers",
        ),
    ] {
        let (_, end) = read_both(&stream, head);
        assert_eq!(end, Err(StreamError::Message(said)));
    }
    // A HEAD answer has its Content-Length and no body.
    let (parts, end) = read_both(&headers(OK), true);
    assert_eq!((parts.len(), end), (2, Ok(())));
}

#[test]
fn field_sections_are_bounded_and_qpack_errors_are_theirs() {
    let big = vec![b'a'; 2000];
    let (_, end) = read_both(&headers(&[(b":status", b"200"), (b"x-big", &big)]), false);
    assert_eq!(end, Err(StreamError::FieldSectionTooLarge));
    assert_eq!(end.unwrap_err().code(), 0x107);
    // Required Insert Count 1: a dynamic table this client never allowed.
    let (_, end) = read_both(&frame(HEADERS, &[0x02, 0x00, 0xd9]), false);
    assert_eq!(end.unwrap_err().code(), 0x200);
    let (_, end) = read_both(&frame(HEADERS, b""), false);
    assert_eq!(end.unwrap_err().code(), 0x200);
    let section = encode(&[(b":status", b"200")]);
    assert_eq!(read_both(&frame(HEADERS, &section), false).1, Ok(()));
}

#[test]
fn hostile_bytes_end_in_an_error_or_a_response_never_a_panic() {
    // A fixed xorshift stream: garbage frames of every type and length, some starting with a
    // valid HEADERS so that DATA and the rest are reached too.
    let mut x: u64 = 0x9e37_79b9_7f4a_7c15;
    let mut next = move || {
        x ^= x << 13;
        x ^= x >> 7;
        x ^= x << 17;
        x
    };
    for i in 0..2000 {
        let len = (next() % 64) as usize;
        let mut stream = if i % 2 == 0 { headers(OK) } else { Vec::new() };
        stream.extend((0..len).map(|_| next() as u8));
        let step = 1 + (next() % 7) as usize;
        let (_, end) = read(&stream, step, false);
        if let Err(e) = end {
            assert!(e.code() >= 0x105, "{e}");
        }
    }
}

#[test]
fn error_codes_are_named_as_the_rfcs_name_them() {
    assert_eq!(code_name(0x10b), Some("H3_REQUEST_REJECTED"));
    assert_eq!(code_name(0x10c), Some("H3_REQUEST_CANCELLED"));
    assert_eq!(code_name(0x200), Some("QPACK_DECOMPRESSION_FAILED"));
    assert_eq!(code_name(0x21 + 0x1f * 3), Some("reserved"));
    assert_eq!(code_name(0x99), None);
}

#[test]
fn alt_svc_offers_h3_only_on_the_port_it_names() {
    assert!(alt_svc_offers(r#"h3=":8443"; ma=2592000"#, 8443));
    assert!(alt_svc_offers(r#"h2=":8443", h3=":8443""#, 8443));
    assert!(!alt_svc_offers(r#"h3=":84431""#, 8443));
    assert!(!alt_svc_offers(r#"h3=":8444"; ma=60"#, 8443));
    assert!(!alt_svc_offers(r#"h3-29=":8443""#, 8443));
    assert!(!alt_svc_offers(r#"h3=":8443"x"#, 8443));
    assert!(!alt_svc_offers("clear", 8443));
    assert!(!alt_svc_offers("", 8443));
}
