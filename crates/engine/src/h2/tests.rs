//! The session against scripted servers: frames written by hand, fed in pieces of every size.

use std::time::Instant;

use super::frame::{self, put_head};
use super::hpack::put_field;
use super::*;
use crate::check::{BodyCheck, Validation};

fn session(streams: usize) -> Session {
    let now = Instant::now();
    let limits = Limits::default();
    Session::new(streams, &limits, || Exchange::new(BodyCheck::new(&Validation::default()), now))
}

/// One request of `fields`, with `body`.
fn request(fields: &[(&str, &str)], body: &[u8]) -> Requests {
    let fields: Vec<request::Field> =
        fields.iter().map(|(n, v)| (n.to_string(), v.to_string())).collect();
    Requests::build(1, |_| Ok::<_, ()>(fields.clone()), |_| body.into()).unwrap()
}

fn get() -> Requests {
    request(&[(":method", "GET")], b"")
}

/// A session whose connection is up, with `n` requests sent on streams 1, 3, ...
fn with_requests(streams: usize, n: usize, request: &Requests) -> Session {
    let mut s = queued(streams, n, request);
    let out = s.output().len();
    s.wrote(out);
    s
}

/// A session whose connection is up, with `n` requests queued (not yet written).
fn queued(streams: usize, n: usize, request: &Requests) -> Session {
    let mut s = session(streams);
    s.connected();
    for i in 0..n {
        s.place(i, false);
    }
    s.send(request, Instant::now());
    s
}

fn settings(params: &[(u16, u32)]) -> Vec<u8> {
    let mut out = Vec::new();
    frame::put_settings(&mut out, params);
    out
}

fn headers(stream: u32, status: &[u8], flags: u8) -> Vec<u8> {
    let mut block = Vec::new();
    put_field(&mut block, b":status", status);
    put_field(&mut block, b"server", b"test/1");
    put_field(&mut block, b"content-length", b"5");
    let mut out = Vec::new();
    put_head(&mut out, block.len(), frame::HEADERS, flags | frame::END_HEADERS, stream);
    out.extend_from_slice(&block);
    out
}

fn data(stream: u32, body: &[u8], flags: u8) -> Vec<u8> {
    let mut out = Vec::new();
    put_head(&mut out, body.len(), frame::DATA, flags, stream);
    out.extend_from_slice(body);
    out
}

fn outcomes(s: &mut Session) -> Vec<(usize, Outcome)> {
    s.done.drain(..).collect()
}

#[test]
fn a_response_in_pieces_of_every_size_completes_once() {
    let request = get();
    for piece in [1, 2, 7, 9, 10, 64, 4096] {
        let mut s = with_requests(2, 1, &request);
        let mut wire = settings(&[(3, 100)]);
        // Padded DATA: one pad-length byte, "hel", 4 bytes of padding; then "lo" and the end.
        wire.extend(headers(1, b"200", 0));
        put_head(&mut wire, 1 + 3 + 4, frame::DATA, frame::PADDED, 1);
        wire.extend_from_slice(&[4, b'h', b'e', b'l', 0, 0, 0, 0]);
        wire.extend(data(1, b"lo", frame::END_STREAM));
        for chunk in wire.chunks(piece) {
            s.feed(chunk, Instant::now()).unwrap();
        }
        assert_eq!(outcomes(&mut s), [(0, Outcome::Complete)], "pieces of {piece}");
        assert_eq!((s.slots[0].status, s.slots[0].body_len), (200, 5));
        assert_eq!(s.server.as_deref(), Some("test/1"));
        // Every frame byte of the stream counts in its response, headers and padding too.
        let settings_len = 9 + 6;
        assert_eq!(s.slots[0].ex.resp_bytes as usize, wire.len() - settings_len);
        // The SETTINGS was acknowledged.
        assert!(s.output().windows(5).any(|w| w == [0, 0, 0, frame::SETTINGS, frame::ACK]));
    }
}

/// A verify's run keeps its answer whole over HTTP/2 too: the DATA frames' bodies, in
/// whatever pieces they came, without their padding.
#[test]
fn a_kept_answer_is_the_streams_body_without_padding() {
    let request = get();
    let keep = Validation { keep_answer: true, ..Validation::default() };
    for piece in [1, 3, 4096] {
        let mut s = with_requests(1, 1, &request);
        s.slots[0].ex.check = BodyCheck::new(&keep);
        let mut wire = settings(&[]);
        wire.extend(headers(1, b"200", 0));
        put_head(&mut wire, 1 + 3 + 2, frame::DATA, frame::PADDED, 1);
        wire.extend_from_slice(&[2, b'h', b'e', b'l', 0, 0]);
        wire.extend(data(1, b"lo", frame::END_STREAM));
        for chunk in wire.chunks(piece) {
            s.feed(chunk, Instant::now()).unwrap();
        }
        assert_eq!(outcomes(&mut s), [(0, Outcome::Complete)], "pieces of {piece}");
        assert_eq!(s.slots[0].ex.check.kept(), Some(&b"hello"[..]), "pieces of {piece}");
    }
}

#[test]
fn a_header_block_split_into_continuation_frames_is_decoded_whole() {
    let request = get();
    let mut s = with_requests(1, 1, &request);
    let whole = headers(1, b"200", frame::END_STREAM);
    let block = &whole[9..];
    let mut wire = settings(&[]);
    put_head(&mut wire, 2, frame::HEADERS, frame::END_STREAM, 1);
    wire.extend_from_slice(&block[..2]);
    put_head(&mut wire, block.len() - 2, frame::CONTINUATION, frame::END_HEADERS, 1);
    wire.extend_from_slice(&block[2..]);
    s.feed(&wire, Instant::now()).unwrap();
    // content-length 5 with no body: a malformed response, the stream's failure alone.
    let done = outcomes(&mut s);
    assert!(matches!(done[..], [(0, Outcome::Failed(ErrorClass::Parse, _))]), "{done:?}");
}

#[test]
fn the_first_frame_must_be_settings() {
    let request = get();
    let mut s = with_requests(1, 1, &request);
    let err = s.feed(&headers(1, b"200", 0), Instant::now()).unwrap_err();
    assert_eq!(err.what, "the server's first frame was not SETTINGS");
    // Our GOAWAY (PROTOCOL_ERROR) is queued for the server.
    let out = s.output();
    assert_eq!(out[3], frame::GOAWAY, "{out:?}");
}

#[test]
fn rst_stream_fails_its_stream_alone_with_the_code() {
    let request = get();
    let mut s = with_requests(2, 2, &request);
    let mut wire = settings(&[]);
    put_head(&mut wire, 4, frame::RST_STREAM, 0, 3);
    wire.extend_from_slice(&7u32.to_be_bytes());
    s.feed(&wire, Instant::now()).unwrap();
    let reason = Reason { what: "RST_STREAM", code: Some(7) };
    assert_eq!(outcomes(&mut s), [(1, Outcome::Failed(ErrorClass::H2Stream, reason))]);
    assert_eq!(reason.to_string(), "RST_STREAM REFUSED_STREAM");
    assert_eq!(s.slots[0].state, StreamState::Open);
}

#[test]
fn goaway_sends_the_streams_it_refused_again_once() {
    let request = get();
    let mut s = with_requests(3, 3, &request);
    let mut wire = settings(&[]);
    frame::put_goaway(&mut wire, 1, ErrorCode::NoError);
    s.feed(&wire, Instant::now()).unwrap();
    assert_eq!(outcomes(&mut s), [(1, Outcome::Refused), (2, Outcome::Refused)]);
    assert!(!s.drained(), "stream 1 is still answered");
    assert_eq!(s.free_slot(), None, "no new stream after GOAWAY");
    s.feed(&headers(1, b"204", frame::END_STREAM), Instant::now()).unwrap();
    assert_eq!(outcomes(&mut s), [(0, Outcome::Complete)]);
    assert!(s.drained() && s.pending());
    // A new connection sends them again; a second refusal fails them.
    s.release(0);
    s.connected();
    assert_eq!(s.send(&request, Instant::now()).0, 0, "unmeasured requests");
    let mut wire = settings(&[]);
    frame::put_goaway(&mut wire, 0, ErrorCode::NoError);
    s.feed(&wire, Instant::now()).unwrap();
    let done = outcomes(&mut s);
    assert_eq!(done.len(), 2);
    assert!(done.iter().all(|d| matches!(d.1, Outcome::Failed(ErrorClass::H2Conn, _))));
}

#[test]
fn a_body_waits_for_the_servers_window() {
    let request = request(&[(":method", "GET")], &[b'x'; 100]);
    let mut s = session(1);
    s.connected();
    s.feed(&settings(&[(4, 0)]), Instant::now()).unwrap();
    s.place(0, false);
    assert_eq!(s.send(&request, Instant::now()).0, 0, "HEADERS went, the body did not");
    let sent = s.output().len();
    s.wrote(sent);
    let mut wire = Vec::new();
    frame::put_window_update(&mut wire, 1, 60);
    s.feed(&wire, Instant::now()).unwrap();
    s.send(&request, Instant::now());
    assert_eq!(s.output().len(), 9 + 60, "as much as the window allows");
    s.wrote(9 + 60);
    frame::put_window_update(&mut wire, 1, 40);
    s.feed(&wire[13..], Instant::now()).unwrap();
    s.send(&request, Instant::now());
    let out = s.output();
    assert_eq!(out.len(), 9 + 40);
    assert_eq!(out[4], frame::END_STREAM, "the last DATA frame ends the stream");
}

#[test]
fn frame_and_header_limits_are_connection_errors() {
    let request = get();
    let mut s = with_requests(1, 1, &request);
    let mut wire = settings(&[]);
    put_head(&mut wire, frame::MAX_FRAME + 1, frame::DATA, 0, 1);
    assert_eq!(s.feed(&wire, Instant::now()).unwrap_err().code, ErrorCode::FrameSize);

    // A header list above SETTINGS_MAX_HEADER_LIST_SIZE (64 KiB decoded), in few wire bytes:
    // one long value, then its dynamic-table entry repeated by index.
    let mut s = with_requests(1, 1, &request);
    let mut block = vec![0x40];
    block.extend_from_slice(&[0x01, b'x', 0x7f, 0xa1, 0x1e]); // name "x", a 4,000-byte value
    block.extend(std::iter::repeat_n(b'v', 4_000));
    block.extend(std::iter::repeat_n(0xbe, 20)); // index 62, twenty times
    let mut wire = settings(&[]);
    put_head(&mut wire, block.len(), frame::HEADERS, frame::END_HEADERS, 1);
    wire.extend_from_slice(&block);
    let err = s.feed(&wire, Instant::now()).unwrap_err();
    assert_eq!(err.what, LIST_TOO_LARGE);
}

#[test]
fn frames_on_streams_never_opened_are_protocol_errors() {
    let request = get();
    let mut s = with_requests(1, 1, &request);
    let mut wire = settings(&[]);
    wire.extend(data(5, b"abc", 0));
    assert_eq!(s.feed(&wire, Instant::now()).unwrap_err().code, ErrorCode::Protocol);
    let mut s = with_requests(1, 1, &request);
    let mut wire = settings(&[]);
    put_head(&mut wire, 4, frame::PUSH_PROMISE, frame::END_HEADERS, 1);
    wire.extend_from_slice(&2u32.to_be_bytes());
    assert_eq!(s.feed(&wire, Instant::now()).unwrap_err().what, "PUSH_PROMISE with push disabled");
}

/// The header blocks of the HEADERS frames in `out` (after the preface, if there).
fn header_blocks(out: &[u8]) -> Vec<Vec<u8>> {
    let mut out = out.strip_prefix(PREFACE).unwrap_or(out);
    let mut blocks = Vec::new();
    while out.len() >= frame::HEAD_LEN {
        let len = u32::from_be_bytes([0, out[0], out[1], out[2]]) as usize;
        if out[3] == frame::HEADERS {
            blocks.push(out[frame::HEAD_LEN..frame::HEAD_LEN + len].to_vec());
        }
        out = &out[frame::HEAD_LEN + len..];
    }
    blocks
}

fn decoded(d: &mut hpack::Decoder, block: &[u8]) -> Vec<(String, String)> {
    let mut got = Vec::new();
    d.decode(block, |_| true, &mut |n, v| {
        got.push((String::from_utf8_lossy(n).into(), String::from_utf8_lossy(v).into()))
    })
    .unwrap();
    got
}

fn typical() -> Requests {
    let fields = [
        (":method", "GET"),
        (":scheme", "http"),
        (":authority", "127.0.0.1:8080"),
        (":path", "/hello.txt"),
        ("user-agent", "loadlab/0"),
        ("accept", "*/*"),
    ];
    request(&fields, b"")
}

#[test]
fn a_connections_first_request_enters_its_fields_and_the_next_ones_name_them() {
    let requests = typical();
    let mut s = queued(3, 3, &requests);
    let blocks = header_blocks(s.output());
    let out = s.output().len();
    s.wrote(out);
    assert_eq!(blocks.len(), 3);
    // GET and http from the static table, then the four other fields by dynamic index.
    assert_eq!(blocks[1], [0x82, 0x86, 0xc1, 0xc0, 0xbf, 0xbe]);
    assert_eq!(blocks[2], blocks[1]);
    assert!(blocks[0].len() > 30, "the first one carries the values");
    // What the server's decoder makes of them: the same request three times.
    let mut d = hpack::Decoder::new(64 << 10);
    let first = decoded(&mut d, &blocks[0]);
    assert_eq!(first.len(), 6);
    assert_eq!(decoded(&mut d, &blocks[1]), first);
    assert_eq!(decoded(&mut d, &blocks[2]), first);

    // A new connection starts with an empty table: it enters them again.
    s.disconnected();
    s.fail_all(ErrorClass::H2Conn, None, false);
    s.done.clear();
    for i in 0..3 {
        s.release(i);
    }
    s.connected();
    s.place(0, false);
    s.send(&requests, Instant::now());
    assert_eq!(header_blocks(s.output()), [blocks[0].clone()]);
}

#[test]
fn a_server_table_too_small_for_the_fields_stops_the_indexing() {
    let requests = typical();
    let mut s = queued(2, 1, &requests);
    let mut d = hpack::Decoder::new(64 << 10);
    let first = decoded(&mut d, &header_blocks(s.output())[0]);
    s.wrote(s.output().len());
    // 100 bytes hold none of the four entered fields (56 + 43 + 51 + 41 bytes).
    s.feed(&settings(&[(1, 100)]), Instant::now()).unwrap();
    s.place(1, false);
    s.send(&requests, Instant::now());
    let block = header_blocks(s.output()).pop().unwrap();
    assert_eq!(block[0], 0x3f, "a table size update (100 = 31 + 69) comes first");
    assert_eq!(decoded(&mut d, &block), first, "the fields sent as literals");

    // A smaller table that still holds them changes nothing.
    let mut s = queued(2, 1, &requests);
    s.wrote(s.output().len());
    s.feed(&settings(&[(1, 1000)]), Instant::now()).unwrap();
    s.place(1, false);
    s.send(&requests, Instant::now());
    let block = header_blocks(s.output()).pop().unwrap();
    assert_eq!(block[..3], [0x3f, 0xc9, 0x07], "the size update (1000)");
    assert_eq!(block[3..], [0x82, 0x86, 0xc1, 0xc0, 0xbf, 0xbe]);
}

#[test]
fn a_requests_bytes_on_the_wire_are_what_it_wrote() {
    let requests = typical();
    let mut s = session(2);
    s.connected();
    let preface = s.output().len();
    s.place(0, false);
    s.place(1, false);
    // Exchanges begun by a worker are measured; these stand for such.
    s.slots[0].ex.measured = true;
    s.slots[1].ex.measured = true;
    let (sent, bytes) = s.send(&requests, Instant::now());
    assert_eq!(sent, 2);
    assert_eq!(bytes as usize, s.output().len() - preface);
    assert_eq!(s.slots[1].wire, 9 + 6, "a frame head and six indices");
}

/// A visitor's own request (a visit file's, rendered per visitor) goes as its own block,
/// decodable without any table, beside the table's requests; the table's indexing is left as
/// it was, so the next table request still enters the shared fields.
#[test]
fn an_own_request_block_goes_as_given_and_enters_nothing() {
    let request = get();
    let mut s = session(2);
    s.connected();
    let preface = s.output().len();
    s.wrote(preface);
    let mut block = Vec::new();
    put_field(&mut block, b":method", b"POST");
    put_field(&mut block, b":path", b"/login");
    put_field(&mut block, b"cookie", b"sid=s1");
    s.place_own(0, false, block.clone(), b"a=1".to_vec());
    s.send(&request, Instant::now());
    let out = s.output().to_vec();
    // HEADERS (no END_STREAM: a body follows) carrying exactly the block, then the body.
    let mut expect = Vec::new();
    put_head(&mut expect, block.len(), frame::HEADERS, frame::END_HEADERS, 1);
    expect.extend_from_slice(&block);
    expect.extend(data(1, b"a=1", frame::END_STREAM));
    assert_eq!(out, expect);
    assert_eq!(s.indexing, Indexing::Unseeded);
}

/// With `capture_headers`, a response's fields are kept in its slot (a visit's captures and
/// cookie jar read them); without, nothing is kept.
#[test]
fn captured_response_fields_are_kept_in_their_slot() {
    let request = get();
    for capture in [true, false] {
        let mut s = session(1);
        if capture {
            s.capture_headers();
        }
        s.connected();
        s.place(0, false);
        s.send(&request, Instant::now());
        let mut block = Vec::new();
        put_field(&mut block, b":status", b"200");
        put_field(&mut block, b"set-cookie", b"sid=s1; Path=/");
        let mut wire = settings(&[]);
        put_head(&mut wire, block.len(), frame::HEADERS, frame::END_HEADERS | frame::END_STREAM, 1);
        wire.extend_from_slice(&block);
        s.feed(&wire, Instant::now()).unwrap();
        assert_eq!(outcomes(&mut s), [(0, Outcome::Complete)]);
        let kept = [("set-cookie".to_string(), "sid=s1; Path=/".to_string())];
        let expect: &[(String, String)] = if capture { &kept } else { &[] };
        assert_eq!(s.slots[0].headers, expect, "capture {capture}");
    }
}
