//! The server-side extras of `h2::Connection`: the zero-copy DATA path
//! (`send_data_header`: header only, the caller writes the payload) checked
//! against our client connection as the receiving oracle, and the h2c
//! upgrade entry point (`upgrade_server`, RFC 7540 §3.2).

use h2lab_wire::frame::flags;
use h2lab_wire::h2::testing::{self as t, kind, read_frames, setting, Event, Recorder, TestPeer};
use h2lab_wire::h2::{
    Connection, ErrorCode, HeadersKind, Limits, LocalSettings, Role, SendError, StreamId,
};

/// A client and a server connection, SETTINGS exchanged, one GET on stream 1
/// answered with a 200 header section (the body is up to the test).
struct Pair {
    client: Connection,
    server: Connection,
    c_out: Vec<u8>,
    s_out: Vec<u8>,
    c_rec: Recorder,
    s_rec: Recorder,
}

impl Pair {
    fn new(client: LocalSettings) -> Pair {
        let mut p = Pair {
            client: Connection::new(Role::Client, client, Limits::new()),
            server: Connection::new(Role::Server, LocalSettings::server(), Limits::new()),
            c_out: Vec::new(),
            s_out: Vec::new(),
            c_rec: Recorder::default(),
            s_rec: Recorder::default(),
        };
        p.client.start(&mut p.c_out);
        p.server.start(&mut p.s_out);
        p.exchange();
        let id = p
            .client
            .send_request(
                |enc, b| {
                    enc.encode(
                        [
                            (&b":method"[..], &b"GET"[..]),
                            (b":scheme", b"http"),
                            (b":path", b"/"),
                            (b":authority", b"x"),
                        ],
                        b,
                    )
                },
                true,
                &mut p.c_out,
            )
            .unwrap();
        assert_eq!(id.get(), 1);
        p.exchange();
        assert!(p.s_rec.request_done(1));
        p.server
            .send_header_fields(id, &[(b":status", b"200")], false, &mut p.s_out)
            .unwrap();
        p
    }

    /// Moves all queued bytes both ways until both sides are quiet.
    fn exchange(&mut self) {
        for _ in 0..100 {
            if self.c_out.is_empty() && self.s_out.is_empty() {
                return;
            }
            let c = std::mem::take(&mut self.c_out);
            let n = self
                .server
                .recv(&c, &mut self.s_out, &mut self.s_rec)
                .unwrap();
            assert_eq!(n, c.len());
            let s = std::mem::take(&mut self.s_out);
            let n = self
                .client
                .recv(&s, &mut self.c_out, &mut self.c_rec)
                .unwrap();
            assert_eq!(n, s.len());
        }
        panic!("no quiescence");
    }

    /// Sends as much of `body[*sent..]` as the windows allow with the
    /// zero-copy path: header into `s_out`, then the payload from `body`.
    /// Returns the frame lengths.
    fn send_zero_copy(&mut self, body: &[u8], sent: &mut usize) -> Vec<usize> {
        let id = StreamId::new(1);
        let mut lens = Vec::new();
        loop {
            let rest = &body[*sent..];
            let n = self
                .server
                .send_data_header(id, rest.len(), true, &mut self.s_out)
                .unwrap();
            if n == 0 {
                return lens;
            }
            // What writev would put on the wire: the header, then the payload.
            self.s_out.extend_from_slice(&rest[..n]);
            *sent += n;
            lens.push(n);
            if *sent == body.len() {
                return lens;
            }
        }
    }
}

#[test]
fn data_header_path_respects_windows_and_frame_size_and_ends_the_stream() {
    // The client's default windows (65535) bound the first burst.
    let mut p = Pair::new(LocalSettings::client());
    let body: Vec<u8> = (0..200_000u32).map(|i| (i % 251) as u8).collect();
    let mut sent = 0;
    let id = StreamId::new(1);
    assert_eq!(p.server.send_capacity(id), 65_535);
    let lens = p.send_zero_copy(&body, &mut sent);
    // RFC 9113 §6.9.1: no more than the window; §4.2: frames of at most 16384.
    assert_eq!(sent, 65_535);
    assert!(lens.iter().all(|&n| n <= 16_384), "{lens:?}");
    assert_eq!(lens.len(), 4);
    assert_eq!(p.server.send_capacity(id), 0);
    // The body is not finished: no frame carries END_STREAM yet.
    let frames = read_frames(&p.s_out);
    let data: Vec<_> = frames.iter().filter(|f| f.kind == kind::DATA).collect();
    assert_eq!(data.len(), 4);
    assert!(data.iter().all(|f| !f.has(flags::END_STREAM)));
    // The client reads the body and returns the windows; the rest goes out.
    while sent < body.len() {
        p.exchange();
        let more = p.send_zero_copy(&body, &mut sent);
        assert!(!more.is_empty(), "the client reopened the windows");
    }
    let last = read_frames(&p.s_out).pop().unwrap();
    assert!(last.kind == kind::DATA && last.has(flags::END_STREAM));
    p.exchange();
    let (got, end) = p.c_rec.body(1);
    assert!(end, "END_STREAM reached the client");
    assert!(got == body, "the client received the exact body");
    // The stream is closed for sending now.
    assert_eq!(
        p.server.send_data_header(id, 1, true, &mut p.s_out),
        Err(SendError::StreamClosed(id))
    );
    assert!(p.s_out.is_empty(), "nothing written for a closed stream");
}

#[test]
fn data_header_path_uses_the_peers_max_frame_size_and_sends_empty_end_stream() {
    let mut client = LocalSettings::client();
    client.max_frame_size = 20_000;
    client.initial_window_size = 1 << 20;
    client.connection_window = 1 << 20;
    let mut p = Pair::new(client);
    let body = vec![7u8; 50_000];
    let id = StreamId::new(1);
    // Not the end: a body the caller will finish with an empty frame.
    let mut sent = 0;
    let mut lens = Vec::new();
    while sent < body.len() {
        let n = p
            .server
            .send_data_header(id, body.len() - sent, false, &mut p.s_out)
            .unwrap();
        p.s_out.extend_from_slice(&body[sent..sent + n]);
        sent += n;
        lens.push(n);
    }
    assert_eq!(lens, vec![20_000, 20_000, 10_000]);
    // len 0 with end_stream: an empty DATA frame with END_STREAM.
    assert_eq!(
        p.server
            .send_data_header(id, 0, true, &mut p.s_out)
            .unwrap(),
        0
    );
    let last = read_frames(&p.s_out).pop().unwrap();
    assert!(last.kind == kind::DATA && last.has(flags::END_STREAM) && last.payload.is_empty());
    p.exchange();
    assert_eq!(p.c_rec.body(1), (body, true));
}

// ---- h2c upgrade ----

const GET_ROOT: &[(&[u8], &[u8])] = &[
    (b":method", b"GET"),
    (b":scheme", b"http"),
    (b":authority", b"localhost"),
    (b":path", b"/"),
    (b"user-agent", b"test"),
];

/// HTTP2-Settings payload (decoded) from `(id, value)` pairs.
fn settings_payload(params: &[(u16, u32)]) -> Vec<u8> {
    let mut p = Vec::new();
    for (id, v) in params {
        p.extend_from_slice(&id.to_be_bytes());
        p.extend_from_slice(&v.to_be_bytes());
    }
    p
}

fn client_preface() -> Vec<u8> {
    let mut b = Vec::new();
    t::preface(&mut b);
    t::settings(&mut b, &[]);
    b
}

#[test]
fn upgrade_makes_stream_1_half_closed_remote_and_applies_http2_settings() {
    let mut conn = Connection::new(Role::Server, LocalSettings::server(), Limits::new());
    let (mut out, mut rec) = (Vec::new(), Recorder::default());
    let payload = settings_payload(&[
        (setting::INITIAL_WINDOW_SIZE, 1000),
        (setting::HEADER_TABLE_SIZE, 0),
        (setting::MAX_FRAME_SIZE, 20_000),
    ]);
    let id = conn
        .upgrade_server(&payload, GET_ROOT, &mut out, &mut rec)
        .unwrap();
    assert_eq!(id.get(), 1);
    // Our SETTINGS, and no ACK: "a 101 response serves as implicit
    // acknowledgement" (RFC 7540 §3.2.1).
    let f = read_frames(&out);
    assert_eq!(f[0].kind, kind::SETTINGS);
    assert!(f
        .iter()
        .all(|f| !(f.kind == kind::SETTINGS && f.has(flags::ACK))));
    out.clear();
    // The request is delivered like a HEADERS frame with END_STREAM.
    assert_eq!(
        rec.headers(1),
        GET_ROOT
            .iter()
            .map(|(n, v)| (
                String::from_utf8_lossy(n).into_owned(),
                String::from_utf8_lossy(v).into_owned()
            ))
            .collect::<Vec<_>>()
    );
    let done = rec.done(1);
    assert_eq!(done.len(), 1);
    assert_eq!(done[0].kind, HeadersKind::Request);
    assert!(done[0].end_stream);
    // The peer's settings are in force: its window, its frame size, its table.
    assert_eq!(conn.send_capacity(id), 1000);
    assert_eq!(conn.peer_settings().max_frame_size, 20_000);
    assert!(!conn.preface_received());
    conn.send_header_fields(id, &[(b":status", b"200")], false, &mut out)
        .unwrap();
    let f = read_frames(&out);
    assert_eq!(f[0].kind, kind::HEADERS);
    // RFC 7541 §4.2: the encoder signals the peer's table size 0 first.
    assert_eq!(f[0].payload[0], 0x20, "{:?}", f[0].payload);
    out.clear();

    // The client's preface and SETTINGS arrive; they are ACKed as usual.
    let b = client_preface();
    assert_eq!(conn.recv(&b, &mut out, &mut rec).unwrap(), b.len());
    assert!(conn.preface_received());
    let f = read_frames(&out);
    assert!(f
        .iter()
        .any(|f| f.kind == kind::SETTINGS && f.has(flags::ACK)));
    out.clear();
    // Stream 1 is half-closed (remote): DATA on it is a stream error of
    // type STREAM_CLOSED (RFC 9113 §5.1).
    let mut d = Vec::new();
    t::data(&mut d, 1, b"late", true);
    conn.recv(&d, &mut out, &mut rec).unwrap();
    let f = read_frames(&out);
    let rst = f.iter().find(|f| f.kind == kind::RST_STREAM).unwrap();
    assert_eq!(
        (rst.stream, rst.error_code()),
        (1, Some(ErrorCode::STREAM_CLOSED))
    );
    out.clear();
    // A new request opens stream 3.
    let mut peer = TestPeer::new();
    let block = peer.request_block("GET", "/next", &[]);
    let mut h = Vec::new();
    t::headers(&mut h, 3, &block, true);
    conn.recv(&h, &mut out, &mut rec).unwrap();
    assert!(rec.request_done(3));
    assert!(conn
        .send_data(StreamId::new(3), b"", true, &mut out)
        .is_ok());
}

#[test]
fn upgraded_stream_1_is_answered_with_a_body() {
    let mut conn = Connection::new(Role::Server, LocalSettings::server(), Limits::new());
    let (mut out, mut rec) = (Vec::new(), Recorder::default());
    let id = conn
        .upgrade_server(&[], GET_ROOT, &mut out, &mut rec)
        .unwrap();
    conn.recv(&client_preface(), &mut out, &mut rec).unwrap();
    out.clear();
    conn.send_header_fields(id, &[(b":status", b"200")], false, &mut out)
        .unwrap();
    assert_eq!(conn.send_data(id, b"hello", true, &mut out).unwrap(), 5);
    let f = read_frames(&out);
    assert_eq!(f[1].kind, kind::DATA);
    assert!(f[1].has(flags::END_STREAM) && f[1].payload == b"hello");
    // Both sides closed: the stream is gone.
    assert_eq!(conn.active_streams(), 0);
}

#[test]
fn upgrade_with_a_malformed_request_resets_stream_1_only() {
    let bad: &[(&[u8], &[u8])] = &[(b":method", b"GET"), (b":scheme", b"http")];
    let mut conn = Connection::new(Role::Server, LocalSettings::server(), Limits::new());
    let (mut out, mut rec) = (Vec::new(), Recorder::default());
    conn.upgrade_server(&[], bad, &mut out, &mut rec).unwrap();
    let f = read_frames(&out);
    let rst = f.iter().find(|f| f.kind == kind::RST_STREAM).unwrap();
    assert_eq!(
        (rst.stream, rst.error_code()),
        (1, Some(ErrorCode::PROTOCOL_ERROR))
    );
    assert_eq!(rec.resets(1), vec![(ErrorCode::PROTOCOL_ERROR, false)]);
    assert!(!rec.request_done(1));
    assert!(!rec.events.iter().any(|e| matches!(e, Event::Header(..))));
    // The connection lives on.
    out.clear();
    conn.recv(&client_preface(), &mut out, &mut rec).unwrap();
    assert!(conn.error().is_none());

    // A header list over SETTINGS_MAX_HEADER_LIST_SIZE is refused.
    let mut local = LocalSettings::server();
    local.max_header_list_size = Some(100);
    let mut conn = Connection::new(Role::Server, local, Limits::new());
    let big = [b'a'; 200];
    let fields: Vec<(&[u8], &[u8])> = GET_ROOT
        .iter()
        .copied()
        .chain([(&b"x-big"[..], &big[..])])
        .collect();
    let mut out = Vec::new();
    conn.upgrade_server(&[], &fields, &mut out, &mut rec)
        .unwrap();
    let rst = read_frames(&out)
        .into_iter()
        .find(|f| f.kind == kind::RST_STREAM)
        .unwrap();
    assert_eq!(rst.error_code(), Some(ErrorCode::REFUSED_STREAM));
}

#[test]
fn upgrade_errors_are_connection_errors() {
    // RFC 9113 §6.5: a length that is not a multiple of 6 is FRAME_SIZE_ERROR.
    for (payload, code) in [
        (vec![0u8; 5], ErrorCode::FRAME_SIZE_ERROR),
        (
            settings_payload(&[(setting::INITIAL_WINDOW_SIZE, 0x8000_0000)]),
            ErrorCode::FLOW_CONTROL_ERROR,
        ),
        (
            settings_payload(&[(setting::ENABLE_PUSH, 2)]),
            ErrorCode::PROTOCOL_ERROR,
        ),
    ] {
        let mut conn = Connection::new(Role::Server, LocalSettings::server(), Limits::new());
        let (mut out, mut rec) = (Vec::new(), Recorder::default());
        let e = conn
            .upgrade_server(&payload, GET_ROOT, &mut out, &mut rec)
            .unwrap_err();
        assert_eq!(e.code(), code);
        let g = read_frames(&out)
            .into_iter()
            .find(|f| f.kind == kind::GOAWAY)
            .unwrap();
        assert_eq!(g.error_code(), Some(code));
        assert!(!rec.request_done(1));
    }
    // Misuse: twice, or on a client.
    let mut conn = Connection::new(Role::Server, LocalSettings::server(), Limits::new());
    let (mut out, mut rec) = (Vec::new(), Recorder::default());
    conn.upgrade_server(&[], GET_ROOT, &mut out, &mut rec)
        .unwrap();
    let e = conn
        .upgrade_server(&[], GET_ROOT, &mut out, &mut rec)
        .unwrap_err();
    assert_eq!(e.code(), ErrorCode::INTERNAL_ERROR);
    let mut client = Connection::new(Role::Client, LocalSettings::client(), Limits::new());
    let e = client
        .upgrade_server(&[], GET_ROOT, &mut out, &mut rec)
        .unwrap_err();
    assert_eq!(e.code(), ErrorCode::INTERNAL_ERROR);
}

#[test]
fn after_upgrade_an_invalid_preface_is_a_protocol_error() {
    let mut conn = Connection::new(Role::Server, LocalSettings::server(), Limits::new());
    let (mut out, mut rec) = (Vec::new(), Recorder::default());
    conn.upgrade_server(&[], GET_ROOT, &mut out, &mut rec)
        .unwrap();
    // A partial preface is waited for.
    assert_eq!(conn.recv(b"PRI * HT", &mut out, &mut rec).unwrap(), 0);
    // RFC 9113 §3.4: "Clients and servers MUST treat an invalid connection
    // preface as a connection error (Section 5.4.1) of type PROTOCOL_ERROR."
    let e = conn
        .recv(b"GET / HTTP/1.1\r\n\r\n......", &mut out, &mut rec)
        .unwrap_err();
    assert_eq!(e.code(), ErrorCode::PROTOCOL_ERROR);
}
