//! Every RFC 9113 rejection rule of the frame codec, asserting the exact
//! scope and error code.

use h2lab_wire::frame::{
    flags, Decoded, ErrorCode, Frame, FrameDecoder, FrameHeader, H2Error, Headers, Priority, Scope,
    Settings, StreamId, WindowUpdate, DEFAULT_MAX_FRAME_SIZE, MAX_MAX_FRAME_SIZE,
};

/// Build a raw frame.
fn raw(kind: u8, fl: u8, stream: u32, payload: &[u8]) -> Vec<u8> {
    let len = payload.len() as u32;
    let mut v = vec![(len >> 16) as u8, (len >> 8) as u8, len as u8, kind, fl];
    v.extend_from_slice(&stream.to_be_bytes());
    v.extend_from_slice(payload);
    v
}

fn decode(buf: &[u8]) -> Result<Decoded<'_>, H2Error> {
    FrameDecoder::new().decode(buf)
}

/// Assert a connection error with `code`.
#[track_caller]
fn conn_err(buf: &[u8], code: ErrorCode) -> H2Error {
    match decode(buf) {
        Err(e) => {
            assert_eq!(e.scope, Scope::Connection, "{e}");
            assert_eq!(e.code, code, "{e}");
            assert!(e.rule.starts_with("RFC "), "{e}");
            e
        }
        Ok(d) => panic!("expected connection error {code}, got {d:?}"),
    }
}

/// Assert a stream error with `code` on `stream`, consuming the whole frame.
#[track_caller]
fn stream_err(buf: &[u8], stream: u32, code: ErrorCode) -> Option<Frame<'_>> {
    match decode(buf) {
        Ok(Decoded::StreamError {
            error,
            frame,
            consumed,
        }) => {
            assert_eq!(error.scope, Scope::Stream(StreamId::new(stream)), "{error}");
            assert_eq!(error.code, code, "{error}");
            assert_eq!(consumed, buf.len());
            frame
        }
        other => panic!("expected stream error {code}, got {other:?}"),
    }
}

#[track_caller]
fn ok(buf: &[u8]) -> Frame<'_> {
    match decode(buf) {
        Ok(Decoded::Frame { frame, consumed }) => {
            assert_eq!(consumed, buf.len());
            frame
        }
        other => panic!("expected a frame, got {other:?}"),
    }
}

const DATA: u8 = 0;
const HEADERS: u8 = 1;
const PRIORITY: u8 = 2;
const RST: u8 = 3;
const SETTINGS: u8 = 4;
const PUSH: u8 = 5;
const PING: u8 = 6;
const GOAWAY: u8 = 7;
const WU: u8 = 8;
const CONT: u8 = 9;

// ---- DATA (§6.1) ----

#[test]
fn data_on_stream_zero() {
    conn_err(&raw(DATA, 0, 0, b"x"), ErrorCode::PROTOCOL_ERROR);
}

#[test]
fn data_padded_without_pad_length() {
    conn_err(
        &raw(DATA, flags::PADDED, 1, b""),
        ErrorCode::FRAME_SIZE_ERROR,
    );
}

#[test]
fn data_padding_equal_or_above_payload() {
    // Payload of 3 octets, Pad Length 3: padding >= payload length.
    conn_err(
        &raw(DATA, flags::PADDED, 1, &[3, 0, 0]),
        ErrorCode::PROTOCOL_ERROR,
    );
    conn_err(
        &raw(DATA, flags::PADDED, 1, &[200, 0, 0]),
        ErrorCode::PROTOCOL_ERROR,
    );
    conn_err(
        &raw(DATA, flags::PADDED, 1, &[1]),
        ErrorCode::PROTOCOL_ERROR,
    );
    // Pad Length = payload length - 1: legal, no data.
    match ok(&raw(DATA, flags::PADDED, 1, &[2, 0, 0])) {
        Frame::Data(d) => {
            assert_eq!(d.data, b"");
            assert_eq!(d.pad_len, Some(2));
            assert_eq!(d.flow_controlled_len(), 3);
        }
        f => panic!("{f:?}"),
    }
    // Pad Length 0 with only the Pad Length octet.
    assert!(matches!(
        ok(&raw(DATA, flags::PADDED, 1, &[0])),
        Frame::Data(_)
    ));
}

// ---- HEADERS (§6.2) ----

#[test]
fn headers_on_stream_zero() {
    conn_err(
        &raw(HEADERS, flags::END_HEADERS, 0, b"x"),
        ErrorCode::PROTOCOL_ERROR,
    );
}

#[test]
fn headers_too_short() {
    conn_err(
        &raw(HEADERS, flags::PADDED, 1, b""),
        ErrorCode::FRAME_SIZE_ERROR,
    );
    conn_err(
        &raw(HEADERS, flags::PRIORITY, 1, &[0, 0, 0, 0]),
        ErrorCode::FRAME_SIZE_ERROR,
    );
    conn_err(
        &raw(
            HEADERS,
            flags::PRIORITY | flags::PADDED,
            1,
            &[0, 0, 0, 0, 0],
        ),
        ErrorCode::FRAME_SIZE_ERROR,
    );
}

#[test]
fn headers_padding_too_large() {
    conn_err(
        &raw(HEADERS, flags::PADDED, 1, &[4, 1, 2, 3]),
        ErrorCode::PROTOCOL_ERROR,
    );
    // Padding that would overlap the priority fields.
    conn_err(
        &raw(
            HEADERS,
            flags::PADDED | flags::PRIORITY,
            1,
            &[1, 0, 0, 0, 0, 16],
        ),
        ErrorCode::PROTOCOL_ERROR,
    );
    // Exactly fitting: padding takes everything after the priority fields.
    let buf = raw(
        HEADERS,
        flags::PADDED | flags::PRIORITY,
        1,
        &[1, 0, 0, 0, 0, 16, 0],
    );
    let f = ok(&buf);
    assert!(matches!(f, Frame::Headers(h) if h.fragment.is_empty() && h.pad_len == Some(1)));
}

#[test]
fn headers_depending_on_itself_is_a_stream_error_with_the_frame() {
    let buf = raw(
        HEADERS,
        flags::PRIORITY | flags::END_HEADERS,
        5,
        &[0, 0, 0, 5, 16, 0x82],
    );
    let frame = stream_err(&buf, 5, ErrorCode::PROTOCOL_ERROR);
    // The frame is returned so its field block can still be HPACK-decoded.
    match frame {
        Some(Frame::Headers(h)) => assert_eq!(h.fragment, &[0x82]),
        f => panic!("{f:?}"),
    }
    // The strict per-frame decoder reports it as Err.
    let head = FrameHeader::parse(&buf).unwrap();
    let e = Headers::decode(head, &buf[9..]).unwrap_err();
    assert_eq!(e.scope, Scope::Stream(StreamId::new(5)));
    assert_eq!(e.code, ErrorCode::PROTOCOL_ERROR);
    // The exclusive bit does not change the dependency id.
    stream_err(
        &raw(
            HEADERS,
            flags::PRIORITY | flags::END_HEADERS,
            5,
            &[0x80, 0, 0, 5, 16],
        ),
        5,
        ErrorCode::PROTOCOL_ERROR,
    );
}

// ---- PRIORITY (§6.3) ----

#[test]
fn priority_on_stream_zero() {
    conn_err(
        &raw(PRIORITY, 0, 0, &[0, 0, 0, 1, 16]),
        ErrorCode::PROTOCOL_ERROR,
    );
}

#[test]
fn priority_wrong_length_is_stream_frame_size_error() {
    assert!(stream_err(
        &raw(PRIORITY, 0, 3, &[0, 0, 0, 1]),
        3,
        ErrorCode::FRAME_SIZE_ERROR
    )
    .is_none());
    stream_err(
        &raw(PRIORITY, 0, 3, &[0, 0, 0, 1, 16, 0]),
        3,
        ErrorCode::FRAME_SIZE_ERROR,
    );
    stream_err(&raw(PRIORITY, 0, 3, &[]), 3, ErrorCode::FRAME_SIZE_ERROR);
}

#[test]
fn priority_depending_on_itself() {
    stream_err(
        &raw(PRIORITY, 0, 3, &[0, 0, 0, 3, 16]),
        3,
        ErrorCode::PROTOCOL_ERROR,
    );
    let head = FrameHeader::new(
        h2lab_wire::frame::FrameKind::Priority,
        0,
        StreamId::new(3),
        5,
    );
    let e = Priority::decode(head, &[0x80, 0, 0, 3, 16]).unwrap_err();
    assert_eq!(e.scope, Scope::Stream(StreamId::new(3)));
    assert_eq!(e.code, ErrorCode::PROTOCOL_ERROR);
}

// ---- RST_STREAM (§6.4) ----

#[test]
fn rst_stream_rules() {
    conn_err(&raw(RST, 0, 0, &[0, 0, 0, 8]), ErrorCode::PROTOCOL_ERROR);
    conn_err(&raw(RST, 0, 1, &[0, 0, 8]), ErrorCode::FRAME_SIZE_ERROR);
    conn_err(
        &raw(RST, 0, 1, &[0, 0, 0, 0, 8]),
        ErrorCode::FRAME_SIZE_ERROR,
    );
    match ok(&raw(RST, 0, 1, &[0, 0, 0x12, 0x34])) {
        Frame::RstStream(r) => assert_eq!(r.error_code, ErrorCode(0x1234)),
        f => panic!("{f:?}"),
    }
}

// ---- SETTINGS (§6.5) ----

fn setting(id: u16, v: u32) -> Vec<u8> {
    let mut p = id.to_be_bytes().to_vec();
    p.extend_from_slice(&v.to_be_bytes());
    p
}

#[test]
fn settings_frame_rules() {
    conn_err(&raw(SETTINGS, 0, 1, &[]), ErrorCode::PROTOCOL_ERROR);
    conn_err(
        &raw(SETTINGS, flags::ACK, 0, &setting(1, 0)),
        ErrorCode::FRAME_SIZE_ERROR,
    );
    conn_err(
        &raw(SETTINGS, 0, 0, &[0, 1, 0, 0, 0]),
        ErrorCode::FRAME_SIZE_ERROR,
    );
    conn_err(
        &raw(SETTINGS, 0, 0, &[0, 1, 0, 0, 0, 0, 0]),
        ErrorCode::FRAME_SIZE_ERROR,
    );
    assert_eq!(
        ok(&raw(SETTINGS, flags::ACK, 0, &[])),
        Frame::Settings(Settings::ack())
    );
    assert_eq!(
        ok(&raw(SETTINGS, 0, 0, &[])),
        Frame::Settings(Settings::default())
    );
}

#[test]
fn settings_value_rules() {
    conn_err(
        &raw(SETTINGS, 0, 0, &setting(2, 2)),
        ErrorCode::PROTOCOL_ERROR,
    );
    conn_err(
        &raw(SETTINGS, 0, 0, &setting(4, 1 << 31)),
        ErrorCode::FLOW_CONTROL_ERROR,
    );
    conn_err(
        &raw(SETTINGS, 0, 0, &setting(4, u32::MAX)),
        ErrorCode::FLOW_CONTROL_ERROR,
    );
    conn_err(
        &raw(SETTINGS, 0, 0, &setting(5, 16_383)),
        ErrorCode::PROTOCOL_ERROR,
    );
    conn_err(
        &raw(SETTINGS, 0, 0, &setting(5, 1 << 24)),
        ErrorCode::PROTOCOL_ERROR,
    );
    conn_err(
        &raw(SETTINGS, 0, 0, &setting(5, 0)),
        ErrorCode::PROTOCOL_ERROR,
    );
    conn_err(
        &raw(SETTINGS, 0, 0, &setting(8, 2)),
        ErrorCode::PROTOCOL_ERROR,
    );

    let mut p = setting(4, (1 << 31) - 1);
    p.extend(setting(5, DEFAULT_MAX_FRAME_SIZE));
    p.extend(setting(5, MAX_MAX_FRAME_SIZE)); // duplicate: last wins
    p.extend(setting(2, 0));
    p.extend(setting(8, 1));
    p.extend(setting(0x7, 99)); // unknown: ignored
    p.extend(setting(0xffff, 1)); // unknown: ignored
    p.extend(setting(1, 0));
    p.extend(setting(3, 100));
    p.extend(setting(6, 8192));
    match ok(&raw(SETTINGS, 0, 0, &p)) {
        Frame::Settings(s) => {
            assert!(!s.ack);
            assert_eq!(s.initial_window_size, Some((1 << 31) - 1));
            assert_eq!(s.max_frame_size, Some(MAX_MAX_FRAME_SIZE));
            assert_eq!(s.enable_push, Some(false));
            assert_eq!(s.enable_connect_protocol, Some(true));
            assert_eq!(s.header_table_size, Some(0));
            assert_eq!(s.max_concurrent_streams, Some(100));
            assert_eq!(s.max_header_list_size, Some(8192));
            assert_eq!(s.iter().count(), 7);
        }
        f => panic!("{f:?}"),
    }
    // A bad value after good ones still fails the whole frame.
    let mut p = setting(1, 0);
    p.extend(setting(2, 7));
    conn_err(&raw(SETTINGS, 0, 0, &p), ErrorCode::PROTOCOL_ERROR);
}

// ---- PUSH_PROMISE (§6.6) ----

#[test]
fn push_promise_rules() {
    conn_err(
        &raw(PUSH, flags::END_HEADERS, 0, &[0, 0, 0, 2]),
        ErrorCode::PROTOCOL_ERROR,
    );
    conn_err(
        &raw(PUSH, flags::END_HEADERS, 1, &[0, 0, 2]),
        ErrorCode::FRAME_SIZE_ERROR,
    );
    conn_err(
        &raw(PUSH, flags::PADDED, 1, &[]),
        ErrorCode::FRAME_SIZE_ERROR,
    );
    conn_err(
        &raw(PUSH, flags::PADDED, 1, &[0, 0, 0, 2]),
        ErrorCode::FRAME_SIZE_ERROR,
    );
    conn_err(
        &raw(PUSH, flags::PADDED, 1, &[2, 0, 0, 0, 2, 0]),
        ErrorCode::PROTOCOL_ERROR,
    );
    // Promised stream 0 or odd: illegal (pushed streams are server-initiated).
    conn_err(
        &raw(PUSH, flags::END_HEADERS, 1, &[0, 0, 0, 0]),
        ErrorCode::PROTOCOL_ERROR,
    );
    conn_err(
        &raw(PUSH, flags::END_HEADERS, 1, &[0, 0, 0, 3]),
        ErrorCode::PROTOCOL_ERROR,
    );
    conn_err(
        &raw(PUSH, flags::END_HEADERS, 1, &[0x80, 0, 0, 0]),
        ErrorCode::PROTOCOL_ERROR,
    );
    match ok(&raw(
        PUSH,
        flags::END_HEADERS | flags::PADDED,
        1,
        &[1, 0x80, 0, 0, 2, 0xaa, 0],
    )) {
        Frame::PushPromise(p) => {
            assert_eq!(p.promised_stream_id, StreamId::new(2)); // R bit ignored
            assert_eq!(p.fragment, &[0xaa]);
            assert!(p.end_headers);
        }
        f => panic!("{f:?}"),
    }
}

// ---- PING (§6.7) ----

#[test]
fn ping_rules() {
    conn_err(&raw(PING, 0, 1, &[0; 8]), ErrorCode::PROTOCOL_ERROR);
    conn_err(&raw(PING, 0, 0, &[0; 7]), ErrorCode::FRAME_SIZE_ERROR);
    conn_err(&raw(PING, 0, 0, &[0; 9]), ErrorCode::FRAME_SIZE_ERROR);
    conn_err(&raw(PING, flags::ACK, 0, &[]), ErrorCode::FRAME_SIZE_ERROR);
}

// ---- GOAWAY (§6.8) ----

#[test]
fn goaway_rules() {
    let e = conn_err(&raw(GOAWAY, 0, 1, &[0; 8]), ErrorCode::PROTOCOL_ERROR);
    assert_eq!(e.rule, "RFC 9113 §6.8: GOAWAY on a non-zero stream");
    conn_err(&raw(GOAWAY, 0, 0, &[0; 7]), ErrorCode::FRAME_SIZE_ERROR);
    conn_err(&raw(GOAWAY, 0, 0, &[]), ErrorCode::FRAME_SIZE_ERROR);
    match ok(&raw(
        GOAWAY,
        0,
        0,
        &[0x80, 0, 0, 7, 0, 0, 0, 0x42, b'h', b'i'],
    )) {
        Frame::GoAway(g) => {
            assert_eq!(g.last_stream_id, StreamId::new(7));
            assert_eq!(g.error_code, ErrorCode(0x42));
            assert_eq!(g.error_code.to_string(), "UNKNOWN_ERROR(0x42)");
            assert_eq!(g.debug_data, b"hi");
        }
        f => panic!("{f:?}"),
    }
}

// ---- WINDOW_UPDATE (§6.9) ----

#[test]
fn window_update_rules() {
    conn_err(&raw(WU, 0, 0, &[0, 0, 1]), ErrorCode::FRAME_SIZE_ERROR);
    conn_err(
        &raw(WU, 0, 1, &[0, 0, 0, 0, 1]),
        ErrorCode::FRAME_SIZE_ERROR,
    );
    conn_err(&raw(WU, 0, 0, &[0, 0, 0, 0]), ErrorCode::PROTOCOL_ERROR);
    // Reserved bit set, increment 0.
    conn_err(&raw(WU, 0, 0, &[0x80, 0, 0, 0]), ErrorCode::PROTOCOL_ERROR);
    assert!(stream_err(&raw(WU, 0, 7, &[0, 0, 0, 0]), 7, ErrorCode::PROTOCOL_ERROR).is_none());
    assert_eq!(
        ok(&raw(WU, 0, 7, &[0xff, 0xff, 0xff, 0xff])),
        Frame::WindowUpdate(WindowUpdate::new(StreamId::new(7), (1 << 31) - 1))
    );
}

// ---- CONTINUATION (§6.10) ----

#[test]
fn continuation_on_stream_zero() {
    conn_err(
        &raw(CONT, flags::END_HEADERS, 0, b"x"),
        ErrorCode::PROTOCOL_ERROR,
    );
}

// ---- Frame size (§4.2) and unknown frames (§4.1, §5.5) ----

#[test]
fn oversized_frame_rejected_from_the_header_alone() {
    let head = raw(DATA, 0, 1, &[])[..9].to_vec();
    let mut h = head.clone();
    h[0..3].copy_from_slice(&[0, 0x40, 0x01]); // 16385
    conn_err(&h, ErrorCode::FRAME_SIZE_ERROR);
    // Also for connection-level and unknown frames.
    let mut h = raw(0xee, 0, 0, &[])[..9].to_vec();
    h[0..3].copy_from_slice(&[0xff, 0xff, 0xff]);
    conn_err(&h, ErrorCode::FRAME_SIZE_ERROR);
    // Exactly the limit: waits for the payload.
    let mut h = head.clone();
    h[0..3].copy_from_slice(&[0, 0x40, 0x00]);
    assert_eq!(decode(&h), Ok(Decoded::NeedMore(16384)));
    // A larger local limit accepts it.
    let mut h = head;
    h[0..3].copy_from_slice(&[0, 0x40, 0x01]);
    let d = FrameDecoder::with_max_frame_size(1 << 20);
    assert_eq!(d.decode(&h), Ok(Decoded::NeedMore(16385)));
    assert_eq!(
        FrameDecoder::with_max_frame_size(0).max_frame_size(),
        DEFAULT_MAX_FRAME_SIZE
    );
    assert_eq!(
        FrameDecoder::with_max_frame_size(u32::MAX).max_frame_size(),
        MAX_MAX_FRAME_SIZE
    );
}

#[test]
fn unknown_frames_and_flags_are_ignored() {
    let buf = raw(0xfa, 0xff, 0x8000_0003, b"whatever");
    match ok(&buf) {
        Frame::Unknown { header, payload } => {
            assert_eq!(header.kind.as_u8(), 0xfa);
            assert_eq!(header.stream_id, StreamId::new(3));
            assert_eq!(payload, b"whatever");
        }
        f => panic!("{f:?}"),
    }
    // Undefined flags on known frames have no effect.
    match ok(&raw(PING, 0xfe, 0, &[1; 8])) {
        Frame::Ping(p) => assert!(!p.ack),
        f => panic!("{f:?}"),
    }
    match ok(&raw(DATA, 0xf6, 1, b"abc")) {
        Frame::Data(d) => {
            assert_eq!(d.data, b"abc");
            assert!(!d.end_stream);
            assert_eq!(d.pad_len, None);
        }
        f => panic!("{f:?}"),
    }
}

#[test]
fn error_display_mentions_scope_code_and_rule() {
    let e = decode(&raw(GOAWAY, 0, 1, &[0; 8])).unwrap_err();
    assert_eq!(
        e.to_string(),
        "connection error PROTOCOL_ERROR: RFC 9113 §6.8: GOAWAY on a non-zero stream"
    );
    let boxed: Box<dyn std::error::Error> = Box::new(e);
    assert!(boxed.to_string().contains("GOAWAY"));
}
