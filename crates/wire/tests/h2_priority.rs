//! RFC 9218 on the HTTP/2 connection: PRIORITY_UPDATE reaches the server's
//! sink (open and idle streams), its rules are enforced, and
//! SETTINGS_NO_RFC7540_PRIORITIES is advertised and validated.

use h2lab_wire::frame::{PriorityUpdate, StreamId, PRIORITY_UPDATE_TYPE};
use h2lab_wire::h2::testing::{self as t, read_frames, TestPeer};
use h2lab_wire::h2::{ConnError, Connection, ErrorCode, Events, Limits, LocalSettings, Role};
use h2lab_wire::priority::{self, ExtPriority};

#[derive(Default)]
struct Sink {
    updates: Vec<(u32, ExtPriority)>,
    requests: Vec<u32>,
}

impl Events for Sink {
    fn header(&mut self, _: StreamId, _: &[u8], _: &[u8]) {}
    fn headers_done(&mut self, stream: StreamId, _: h2lab_wire::h2::HeadersDone) {
        self.requests.push(stream.get());
    }
    fn priority_update(&mut self, stream: StreamId, value: &[u8]) {
        self.updates
            .push((stream.get(), priority::parse_or_default(value)));
    }
}

fn update(buf: &mut Vec<u8>, stream: u32, value: &str) {
    PriorityUpdate {
        prioritized_stream_id: StreamId::new(stream),
        field_value: value.as_bytes(),
    }
    .encode(buf);
}

fn server(max_streams: u32) -> (Connection, Sink, Vec<u8>) {
    let local = LocalSettings {
        max_concurrent_streams: Some(max_streams),
        no_rfc7540_priorities: true,
        ..LocalSettings::server()
    };
    let mut conn = Connection::new(Role::Server, local, Limits::new());
    let mut sink = Sink::default();
    let mut out = Vec::new();
    let mut b = Vec::new();
    t::preface(&mut b);
    t::settings(&mut b, &[]);
    t::settings_ack(&mut b);
    conn.recv(&b, &mut out, &mut sink).unwrap();
    // RFC 9218 §2.1: sent in the first SETTINGS frame.
    let f = read_frames(&out);
    assert!(f[0].settings().contains(&(0x9, 1)), "{:?}", f[0].settings());
    out.clear();
    (conn, sink, out)
}

#[test]
fn updates_for_open_idle_and_closed_streams() {
    let (mut conn, mut sink, mut out) = server(100);
    let mut peer = TestPeer::new();
    let mut b = Vec::new();
    // Idle stream 3 first (initial priority sent before the request), then
    // stream 1 opened and reprioritised.
    update(&mut b, 3, "u=0");
    let block = peer.request_block("GET", "/", &[("priority", "u=5, i")]);
    t::headers(&mut b, 1, &block, false);
    update(&mut b, 1, "u=2, i");
    conn.recv(&b, &mut out, &mut sink).unwrap();
    assert_eq!(
        sink.updates,
        vec![
            (3, ExtPriority::new(0, false)),
            (1, ExtPriority::new(2, true))
        ]
    );
    // Stream 5 opens, closing 3 implicitly (RFC 9113 §5.1.1): an update for
    // 3 is now for a closed stream and discarded.
    b.clear();
    let block = peer.request_block("GET", "/", &[]);
    t::headers(&mut b, 5, &block, true);
    update(&mut b, 3, "u=7");
    conn.recv(&b, &mut out, &mut sink).unwrap();
    assert_eq!(sink.updates.len(), 2);
    assert!(read_frames(&out).is_empty(), "no error, no reply");
}

fn expect_conn_error(conn: &mut Connection, sink: &mut Sink, b: &[u8], code: ErrorCode) {
    let mut out = Vec::new();
    let e: ConnError = conn.recv(b, &mut out, sink).unwrap_err();
    assert_eq!(e.code(), code, "{e}");
    let f = read_frames(&out);
    assert_eq!(f.last().and_then(|f| f.error_code()), Some(code));
}

#[test]
fn frame_rules_are_connection_errors() {
    // Non-zero frame stream.
    let (mut conn, mut sink, _) = server(100);
    let mut b = Vec::new();
    t::raw_frame(&mut b, PRIORITY_UPDATE_TYPE, 0, 1, &[0, 0, 0, 1]);
    expect_conn_error(&mut conn, &mut sink, &b, ErrorCode::PROTOCOL_ERROR);
    // Prioritized stream 0.
    let (mut conn, mut sink, _) = server(100);
    b.clear();
    update(&mut b, 0, "u=1");
    expect_conn_error(&mut conn, &mut sink, &b, ErrorCode::PROTOCOL_ERROR);
    // Too short.
    let (mut conn, mut sink, _) = server(100);
    b.clear();
    t::raw_frame(&mut b, PRIORITY_UPDATE_TYPE, 0, 0, &[0, 1]);
    expect_conn_error(&mut conn, &mut sink, &b, ErrorCode::FRAME_SIZE_ERROR);
    // An idle push stream.
    let (mut conn, mut sink, _) = server(100);
    b.clear();
    update(&mut b, 2, "u=1");
    expect_conn_error(&mut conn, &mut sink, &b, ErrorCode::PROTOCOL_ERROR);
    // Bad SETTINGS_NO_RFC7540_PRIORITIES value.
    let (mut conn, mut sink, _) = server(100);
    b.clear();
    t::settings(&mut b, &[(0x9, 2)]);
    expect_conn_error(&mut conn, &mut sink, &b, ErrorCode::PROTOCOL_ERROR);
}

#[test]
fn idle_updates_are_bounded_by_max_concurrent_streams() {
    let (mut conn, mut sink, mut out) = server(3);
    let mut b = Vec::new();
    for id in [1, 3, 5] {
        update(&mut b, id, "u=1");
    }
    // The same idle stream again does not count twice.
    update(&mut b, 5, "u=2");
    conn.recv(&b, &mut out, &mut sink).unwrap();
    assert_eq!(sink.updates.len(), 4);
    b.clear();
    update(&mut b, 7, "u=1");
    expect_conn_error(&mut conn, &mut sink, &b, ErrorCode::PROTOCOL_ERROR);
}

#[test]
fn a_client_rejects_priority_update() {
    let mut conn = Connection::new(Role::Client, LocalSettings::client(), Limits::new());
    let mut sink = Sink::default();
    let mut out = Vec::new();
    conn.start(&mut out);
    let mut b = Vec::new();
    t::settings(&mut b, &[]);
    update(&mut b, 1, "u=1");
    let e = conn.recv(&b, &mut out, &mut sink).unwrap_err();
    assert_eq!(e.code(), ErrorCode::PROTOCOL_ERROR);
}
