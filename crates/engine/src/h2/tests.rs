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

fn get() -> Request {
    let mut block = Vec::new();
    put_field(&mut block, b":method", b"GET");
    Request { block: block.into(), body: Box::new([]) }
}

/// A session whose connection is up, with `n` requests sent on streams 1, 3, ...
fn with_requests(streams: usize, n: usize, request: &Request) -> Session {
    let mut s = session(streams);
    s.connected();
    for i in 0..n {
        s.place(i, false);
    }
    s.send(std::slice::from_ref(request), Instant::now());
    let out = s.output().len();
    s.wrote(out);
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
    assert_eq!(s.send(std::slice::from_ref(&request), Instant::now()).0, 0, "unmeasured requests");
    let mut wire = settings(&[]);
    frame::put_goaway(&mut wire, 0, ErrorCode::NoError);
    s.feed(&wire, Instant::now()).unwrap();
    let done = outcomes(&mut s);
    assert_eq!(done.len(), 2);
    assert!(done.iter().all(|d| matches!(d.1, Outcome::Failed(ErrorClass::H2Conn, _))));
}

#[test]
fn a_body_waits_for_the_servers_window() {
    let request = Request { block: get().block, body: vec![b'x'; 100].into() };
    let mut s = session(1);
    s.connected();
    s.feed(&settings(&[(4, 0)]), Instant::now()).unwrap();
    s.place(0, false);
    assert_eq!(
        s.send(std::slice::from_ref(&request), Instant::now()).0,
        0,
        "HEADERS went, the body did not"
    );
    let sent = s.output().len();
    s.wrote(sent);
    let mut wire = Vec::new();
    frame::put_window_update(&mut wire, 1, 60);
    s.feed(&wire, Instant::now()).unwrap();
    s.send(std::slice::from_ref(&request), Instant::now());
    assert_eq!(s.output().len(), 9 + 60, "as much as the window allows");
    s.wrote(9 + 60);
    frame::put_window_update(&mut wire, 1, 40);
    s.feed(&wire[13..], Instant::now()).unwrap();
    s.send(std::slice::from_ref(&request), Instant::now());
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
