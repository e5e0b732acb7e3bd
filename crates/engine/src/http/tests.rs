//! Parser tests: every framing case, fed whole and split at every byte, malformed input, and
//! each limit.

use super::*;

#[derive(Debug, PartialEq)]
struct Parsed {
    status: u16,
    body: Vec<u8>,
    keep_alive: bool,
    consumed: usize,
}

/// Feeds `input` in pieces of `step` bytes; returns the response once complete, or after EOF
/// when `eof` is set.
fn parse_in_steps(input: &[u8], head: bool, step: usize, eof: bool) -> Result<Parsed, ParseError> {
    let mut p = Parser::new(Limits::default());
    p.reset(head);
    let mut body = Vec::new();
    let mut offset = 0;
    while offset < input.len() {
        let end = (offset + step).min(input.len());
        match p.feed(&input[offset..end], &mut |b| body.extend_from_slice(b))? {
            Progress::Complete { consumed } => {
                return Ok(Parsed {
                    status: p.status(),
                    body,
                    keep_alive: p.keep_alive(),
                    consumed: offset + consumed,
                })
            }
            Progress::Partial => offset = end,
        }
    }
    if eof {
        p.on_eof()?;
        return Ok(Parsed {
            status: p.status(),
            body,
            keep_alive: p.keep_alive(),
            consumed: offset,
        });
    }
    panic!("response incomplete without EOF");
}

/// Parses whole and at every split size, and checks that all agree.
fn parse(input: &[u8], head: bool, eof: bool) -> Result<Parsed, ParseError> {
    let whole = parse_in_steps(input, head, input.len().max(1), eof);
    for step in 1..input.len() {
        let split = parse_in_steps(input, head, step, eof);
        assert_eq!(split, whole, "step {step} disagrees");
    }
    whole
}

fn ok(input: &str) -> Parsed {
    parse(input.as_bytes(), false, false).unwrap()
}

#[test]
fn content_length() {
    let r = ok("HTTP/1.1 200 OK\r\nContent-Length: 13\r\n\r\nhello, world!");
    assert_eq!(r.status, 200);
    assert_eq!(r.body, b"hello, world!");
    assert!(r.keep_alive);
}

#[test]
fn content_length_zero_and_extra_bytes_left_unconsumed() {
    let input = "HTTP/1.1 200 OK\r\nContent-Length: 0\r\n\r\nEXTRA";
    let r = parse_in_steps(input.as_bytes(), false, input.len(), false).unwrap();
    assert_eq!(r.body, b"");
    assert_eq!(r.consumed, input.len() - 5);
}

#[test]
fn repeated_equal_content_length_is_accepted() {
    let r = ok("HTTP/1.1 200 OK\r\nContent-Length: 3, 3\r\nContent-Length: 3\r\n\r\nabc");
    assert_eq!(r.body, b"abc");
}

#[test]
fn conflicting_content_length_is_an_error() {
    for input in [
        "HTTP/1.1 200 OK\r\nContent-Length: 3\r\nContent-Length: 4\r\n\r\nabcd",
        "HTTP/1.1 200 OK\r\nContent-Length: 3, 4\r\n\r\nabcd",
    ] {
        let e = parse(input.as_bytes(), false, false).unwrap_err();
        assert_eq!(e, ParseError::ConflictingContentLength);
        assert_eq!(e.class(), crate::ErrorClass::Parse);
    }
}

#[test]
fn invalid_content_length_is_an_error() {
    for v in ["-1", "abc", "", "1 2", "99999999999999999999999"] {
        let input = format!("HTTP/1.1 200 OK\r\nContent-Length: {v}\r\n\r\n");
        assert_eq!(
            parse(input.as_bytes(), false, false).unwrap_err(),
            ParseError::InvalidContentLength,
            "{v:?}"
        );
    }
}

#[test]
fn chunked_with_extensions_and_trailers() {
    let r = ok("HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\n\
                5;name=value\r\nhello\r\n2 ; x=\"y\"\r\n, \r\n6\r\nworld!\r\n0\r\n\
                Expires: never\r\nX-Trailer: 1\r\n\r\n");
    assert_eq!(r.body, b"hello, world!");
    assert!(r.keep_alive);
}

#[test]
fn chunked_uppercase_hex_and_bare_lf() {
    let r = ok("HTTP/1.1 200 OK\r\nTransfer-Encoding: gzip, chunked\r\n\r\nA\nabcdefghij\n0\n\n");
    assert_eq!(r.body, b"abcdefghij");
}

#[test]
fn transfer_encoding_overrides_content_length_and_closes() {
    let r = ok("HTTP/1.1 200 OK\r\nContent-Length: 100\r\nTransfer-Encoding: chunked\r\n\r\n\
                3\r\nabc\r\n0\r\n\r\n");
    assert_eq!(r.body, b"abc");
    assert!(!r.keep_alive);
}

#[test]
fn non_chunked_transfer_encoding_reads_until_close() {
    let r = parse(b"HTTP/1.1 200 OK\r\nTransfer-Encoding: gzip\r\n\r\nzzz", false, true).unwrap();
    assert_eq!(r.body, b"zzz");
    assert!(!r.keep_alive);
}

#[test]
fn close_delimited_body() {
    let r =
        parse(b"HTTP/1.1 200 OK\r\nConnection: close\r\n\r\nuntil the end", false, true).unwrap();
    assert_eq!(r.body, b"until the end");
    assert!(!r.keep_alive);
}

#[test]
fn http10_closes_unless_keep_alive() {
    let r = ok("HTTP/1.0 200 OK\r\nContent-Length: 2\r\n\r\nok");
    assert!(!r.keep_alive);
    let r = ok("HTTP/1.0 200 OK\r\nConnection: Keep-Alive\r\nContent-Length: 2\r\n\r\nok");
    assert!(r.keep_alive);
    let r = parse(b"HTTP/1.0 200 OK\r\n\r\nold school", false, true).unwrap();
    assert_eq!(r.body, b"old school");
}

#[test]
fn http10_with_transfer_encoding_is_faulty() {
    let e = parse(b"HTTP/1.0 200 OK\r\nTransfer-Encoding: chunked\r\n\r\n0\r\n\r\n", false, false)
        .unwrap_err();
    assert_eq!(e, ParseError::TransferEncodingInHttp10);
}

#[test]
fn connection_close_in_http11() {
    let r = ok("HTTP/1.1 200 OK\r\nConnection: keep-alive, close\r\nContent-Length: 1\r\n\r\nx");
    assert!(!r.keep_alive);
}

#[test]
fn no_body_for_head_204_304() {
    let r = parse(b"HTTP/1.1 200 OK\r\nContent-Length: 1000\r\n\r\n", true, false).unwrap();
    assert_eq!((r.status, r.body.len()), (200, 0));
    assert!(r.keep_alive);
    for code in [204, 304] {
        let input = format!("HTTP/1.1 {code} X\r\nContent-Length: 10\r\n\r\n");
        let r = parse(input.as_bytes(), false, false).unwrap();
        assert_eq!((r.status, r.body.len(), r.consumed), (code, 0, input.len()));
    }
}

#[test]
fn interim_responses_are_skipped() {
    let r = ok("HTTP/1.1 100 Continue\r\n\r\nHTTP/1.1 103 Early Hints\r\nLink: </a>\r\n\r\n\
                HTTP/1.1 201 Created\r\nContent-Length: 2\r\n\r\nok");
    assert_eq!((r.status, r.body.as_slice()), (201, &b"ok"[..]));
}

#[test]
fn switching_protocols_is_an_error() {
    let e = parse(b"HTTP/1.1 101 Switching Protocols\r\n\r\n", false, false).unwrap_err();
    assert_eq!(e, ParseError::UnexpectedUpgrade);
}

#[test]
fn garbage_is_a_parse_error() {
    for input in [&b"\x00\x01garbage\r\n\r\n"[..], b"HTTP/9 OK\r\n\r\n", b"<html>hi</html>\r\n\r\n"]
    {
        let e = parse_in_steps(input, false, input.len(), false).unwrap_err();
        assert!(matches!(e, ParseError::Malformed(_)), "{e:?}");
        assert_eq!(e.class(), crate::ErrorClass::Parse);
    }
}

#[test]
fn bad_chunk_framing_is_a_parse_error() {
    for body in ["zz\r\n", "\r\n", "3\r\nabcX\r\n", "3\r\nabc\rX", "3x\r\n"] {
        let input = format!("HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\n{body}");
        let e = parse_in_steps(input.as_bytes(), false, input.len(), true).unwrap_err();
        assert_eq!(e, ParseError::InvalidChunk, "{body:?}");
    }
}

#[test]
fn eof_cases() {
    let e = |input: &[u8]| parse(input, false, true).unwrap_err();
    assert_eq!(parse_in_steps(b"", false, 1, true).unwrap_err(), ParseError::ClosedBeforeResponse);
    assert_eq!(ParseError::ClosedBeforeResponse.class(), crate::ErrorClass::Connreset);
    assert_eq!(e(b"HTTP/1.1 200 OK\r\nContent-Le"), ParseError::IncompleteHead);
    assert_eq!(e(b"HTTP/1.1 200 OK\r\nContent-Length: 10\r\n\r\nabc"), ParseError::ShortBody);
    assert_eq!(ParseError::ShortBody.class(), crate::ErrorClass::ShortBody);
    assert_eq!(
        e(b"HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\n5\r\nab"),
        ParseError::ShortBody
    );
    // A chunked body without its last chunk is short, even at a chunk boundary.
    assert_eq!(
        e(b"HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\n2\r\nab\r\n"),
        ParseError::ShortBody
    );
}

#[test]
fn head_size_limit() {
    let limits = Limits { max_head_bytes: 128, ..Limits::default() };
    let big = format!("HTTP/1.1 200 OK\r\nX-Big: {}\r\n\r\n", "a".repeat(200));
    for step in [1, 7, 64, big.len()] {
        let mut p = Parser::new(limits);
        p.reset(false);
        let mut result = Ok(Progress::Partial);
        for piece in big.as_bytes().chunks(step) {
            result = p.feed(piece, &mut |_| {});
            if result.is_err() {
                break;
            }
        }
        assert_eq!(result.unwrap_err(), ParseError::HeadTooLarge(128), "step {step}");
    }
    // Just under the limit passes, even when split.
    let small = "HTTP/1.1 200 OK\r\nContent-Length: 0\r\n\r\n";
    let mut p = Parser::new(Limits { max_head_bytes: small.len() + 1, ..Limits::default() });
    p.reset(false);
    assert_eq!(p.feed(&small.as_bytes()[..10], &mut |_| {}), Ok(Progress::Partial));
    assert_eq!(
        p.feed(&small.as_bytes()[10..], &mut |_| {}),
        Ok(Progress::Complete { consumed: small.len() - 10 })
    );
}

#[test]
fn too_many_headers() {
    let mut input = String::from("HTTP/1.1 200 OK\r\n");
    for i in 0..=MAX_HEADERS {
        input.push_str(&format!("X-{i}: v\r\n"));
    }
    input.push_str("\r\n");
    let e = parse_in_steps(input.as_bytes(), false, input.len(), false).unwrap_err();
    assert_eq!(e, ParseError::TooManyHeaders);
}

#[test]
fn chunk_size_limit_and_overflow() {
    let input = "HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\n4000001\r\n";
    let e = parse_in_steps(input.as_bytes(), false, input.len(), false).unwrap_err();
    assert_eq!(e, ParseError::ChunkTooLarge(64 << 20));
    let input = "HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\nFFFFFFFFFFFFFFFFFFFF\r\n";
    let e = parse_in_steps(input.as_bytes(), false, input.len(), false).unwrap_err();
    assert_eq!(e, ParseError::ChunkTooLarge(64 << 20));
}

#[test]
fn chunk_line_length_limit() {
    let limits = Limits { max_line_bytes: 32, ..Limits::default() };
    for line in [format!("1;{}\r\n", "e".repeat(40)), format!("{}1\r\n", "0".repeat(40))] {
        let input = format!("HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\n{line}");
        let mut p = Parser::new(limits);
        p.reset(false);
        assert_eq!(p.feed(input.as_bytes(), &mut |_| {}), Err(ParseError::LineTooLong(32)));
    }
    let input = format!(
        "HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\n0\r\nX: {}\r\n\r\n",
        "t".repeat(40)
    );
    let mut p = Parser::new(limits);
    p.reset(false);
    assert_eq!(p.feed(input.as_bytes(), &mut |_| {}), Err(ParseError::LineTooLong(32)));
}

#[test]
fn server_header_is_captured_once_on_request() {
    let mut p = Parser::new(Limits::default());
    p.reset(false);
    p.capture_server();
    let input = b"HTTP/1.1 200 OK\r\nServer: nginx/1.22.1\r\nContent-Length: 0\r\n\r\n";
    assert!(matches!(p.feed(input, &mut |_| {}), Ok(Progress::Complete { .. })));
    assert_eq!(p.take_server().as_deref(), Some("nginx/1.22.1"));
    p.reset(false);
    assert!(matches!(p.feed(input, &mut |_| {}), Ok(Progress::Complete { .. })));
    assert_eq!(p.take_server(), None);
}

#[test]
fn parser_is_reusable_across_responses() {
    let mut p = Parser::new(Limits::default());
    for _ in 0..3 {
        p.reset(false);
        let mut body = Vec::new();
        let input = b"HTTP/1.1 200 OK\r\nContent-Length: 2\r\n\r\nok";
        assert_eq!(p.feed(&input[..20], &mut |b| body.extend_from_slice(b)), Ok(Progress::Partial));
        assert_eq!(
            p.feed(&input[20..], &mut |b| body.extend_from_slice(b)),
            Ok(Progress::Complete { consumed: input.len() - 20 })
        );
        assert_eq!(body, b"ok");
    }
}
