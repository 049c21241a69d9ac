//! Server role against a scripted client, one test per h2spec case family
//! (github.com/summerwind/h2spec, `http2/` and `hpack/` groups; section
//! numbers are h2spec's, which follow RFC 7540).

use h2lab_wire::frame::flags;
use h2lab_wire::h2::testing::{
    self as t, kind, read_frames, setting, RawFrame, Recorder, TestPeer,
};
use h2lab_wire::h2::{
    ConnError, Connection, ErrorCode, HeadersKind, Initiator, Limits, LocalSettings, Role, StreamId,
};

struct H {
    conn: Connection,
    peer: TestPeer,
    out: Vec<u8>,
    rec: Recorder,
}

impl H {
    fn server() -> H {
        H::with(LocalSettings::server(), Limits::new())
    }

    /// Connection after the h2spec handshake: both SETTINGS exchanged and
    /// acknowledged.
    fn with(local: LocalSettings, limits: Limits) -> H {
        let mut h = H {
            conn: Connection::new(Role::Server, local, limits),
            peer: TestPeer::new(),
            out: Vec::new(),
            rec: Recorder::default(),
        };
        let mut b = Vec::new();
        t::preface(&mut b);
        t::settings(&mut b, &[(setting::INITIAL_WINDOW_SIZE, 65535)]);
        t::settings_ack(&mut b);
        h.feed(&b).unwrap();
        let f = h.frames();
        // h2spec 3.5: the server preface is a SETTINGS frame, sent first.
        assert_eq!(f[0].kind, kind::SETTINGS);
        assert!(!f[0].has(flags::ACK));
        assert!(f[1].kind == kind::SETTINGS && f[1].has(flags::ACK));
        assert_eq!(h.rec.events, vec![t::Event::SettingsChanged]);
        h.rec.events.clear();
        h
    }

    fn feed(&mut self, b: &[u8]) -> Result<(), ConnError> {
        let n = self.conn.recv(b, &mut self.out, &mut self.rec)?;
        assert_eq!(n, b.len(), "all complete frames consumed");
        Ok(())
    }

    fn frames(&mut self) -> Vec<RawFrame> {
        let f = read_frames(&self.out);
        self.out.clear();
        f
    }

    /// Feed `b`, expect a connection error; check the GOAWAY we wrote.
    fn conn_error(&mut self, b: &[u8]) -> ErrorCode {
        let e = self.feed(b).expect_err("connection error expected");
        assert_eq!(e.initiator, Initiator::Local);
        let f = self.frames();
        let g = f
            .iter()
            .find(|f| f.kind == kind::GOAWAY)
            .expect("GOAWAY written");
        assert_eq!(g.error_code(), Some(e.code()));
        assert_eq!(g.stream, 0);
        // Every later call reports the same error.
        assert_eq!(self.feed(&[0; 9]).unwrap_err(), e);
        e.code()
    }

    /// Feed `b`, expect exactly one RST_STREAM on `stream`; return its code.
    fn stream_error(&mut self, b: &[u8], stream: u32) -> ErrorCode {
        self.feed(b).expect("no connection error");
        let f = self.frames();
        assert!(f.iter().all(|f| f.kind != kind::GOAWAY), "{f:?}");
        let r: Vec<_> = f.iter().filter(|f| f.kind == kind::RST_STREAM).collect();
        assert_eq!(r.len(), 1, "{f:?}");
        assert_eq!(r[0].stream, stream);
        r[0].error_code().unwrap()
    }

    fn get(&mut self, b: &mut Vec<u8>, stream: u32, end_stream: bool) {
        let block = self.peer.request_block("GET", "/", &[]);
        t::headers(b, stream, &block, end_stream);
    }

    fn post(&mut self, b: &mut Vec<u8>, stream: u32, extra: &[(&str, &str)]) {
        let block = self.peer.request_block("POST", "/", extra);
        t::headers(b, stream, &block, false);
    }

    /// PING round trip: the connection is alive and answered in order.
    fn assert_alive(&mut self) {
        let mut b = Vec::new();
        t::ping(&mut b, false, *b"h2specOK");
        self.feed(&b).unwrap();
        let f = self.frames();
        let p = f.last().unwrap();
        assert!(p.kind == kind::PING && p.has(flags::ACK) && p.payload == b"h2specOK");
    }

    fn respond(&mut self, stream: u32, body: &[u8]) {
        let id = StreamId::new(stream);
        self.conn
            .send_header_fields(id, &[(b":status", b"200")], body.is_empty(), &mut self.out)
            .unwrap();
        if !body.is_empty() {
            assert_eq!(
                self.conn.send_data(id, body, true, &mut self.out).unwrap(),
                body.len()
            );
        }
    }
}

// ---- 3.5 HTTP/2 Connection Preface ----

#[test]
fn h2spec_3_5_preface() {
    // Valid preface: SETTINGS first (checked in H::with).
    let mut h = H::server();
    h.assert_alive();
    // Invalid preface.
    let mut c = Connection::new(Role::Server, LocalSettings::server(), Limits::new());
    let mut out = Vec::new();
    let e = c.recv(
        b"INVALID CONNECTION PREFACE\r\n\r\n",
        &mut out,
        &mut Recorder::default(),
    );
    assert_eq!(e.unwrap_err().code(), ErrorCode::PROTOCOL_ERROR);
    // A partial preface waits for more.
    let mut c = Connection::new(Role::Server, LocalSettings::server(), Limits::new());
    assert_eq!(
        c.recv(b"PRI * HTTP/2", &mut out, &mut Recorder::default()),
        Ok(0)
    );
    // The preface must be followed by SETTINGS.
    let mut c = Connection::new(Role::Server, LocalSettings::server(), Limits::new());
    let mut b = Vec::new();
    t::preface(&mut b);
    t::ping(&mut b, false, [0; 8]);
    let e = c.recv(&b, &mut out, &mut Recorder::default()).unwrap_err();
    assert_eq!(e.code(), ErrorCode::PROTOCOL_ERROR);
}

// ---- 4.1 Frame Format ----

#[test]
fn h2spec_4_1_frame_format() {
    let mut h = H::server();
    let mut b = Vec::new();
    // Unknown type.
    t::raw_frame(&mut b, 0x16, 0, 0, &[0; 8]);
    // Undefined flags on PING.
    t::raw_frame(&mut b, kind::PING, 0x16, 0, &[1; 8]);
    // Reserved bit set in the stream id.
    t::raw_frame(&mut b, kind::PING, 0, 0x8000_0000, &[2; 8]);
    h.feed(&b).unwrap();
    let f = h.frames();
    assert_eq!(f.len(), 2);
    assert!(f.iter().all(|f| f.kind == kind::PING && f.has(flags::ACK)));
    assert_eq!(f[1].payload, [2; 8]);
}

// ---- 4.2 Frame Size ----

#[test]
fn h2spec_4_2_frame_size() {
    let mut h = H::server();
    let mut b = Vec::new();
    h.post(&mut b, 1, &[]);
    t::data(&mut b, 1, &[b'x'; 16384], true);
    h.feed(&b).unwrap();
    assert_eq!(h.rec.body(1).0.len(), 16384);

    let mut h = H::server();
    let mut b = Vec::new();
    h.post(&mut b, 1, &[]);
    t::data(&mut b, 1, &[b'x'; 16385], true);
    assert_eq!(h.conn_error(&b), ErrorCode::FRAME_SIZE_ERROR);

    let mut h = H::server();
    let big = "x".repeat(4000);
    let dummies: Vec<(String, &str)> = (0..5)
        .map(|i| (format!("x-dummy{i}"), big.as_str()))
        .collect();
    let extra: Vec<(&str, &str)> = dummies.iter().map(|(n, v)| (n.as_str(), *v)).collect();
    let block = h.peer.request_block("GET", "/", &extra);
    assert!(block.len() > 16384);
    let mut b = Vec::new();
    t::headers(&mut b, 1, &block, true);
    assert_eq!(h.conn_error(&b), ErrorCode::FRAME_SIZE_ERROR);
}

// ---- 4.3 Header Compression and Decompression ----

#[test]
fn h2spec_4_3_header_compression() {
    let mut h = H::server();
    let mut b = Vec::new();
    t::headers(&mut b, 1, &[0x40], true);
    assert_eq!(h.conn_error(&b), ErrorCode::COMPRESSION_ERROR);

    let mut h = H::server();
    let block = h.peer.request_block("GET", "/", &[]);
    let mut b = Vec::new();
    t::headers_flags(&mut b, 1, &block, false, false);
    t::priority(&mut b, 1, 0, false, 255);
    assert_eq!(h.conn_error(&b), ErrorCode::PROTOCOL_ERROR);

    let mut h = H::server();
    let block = h.peer.request_block("GET", "/", &[]);
    let mut b = Vec::new();
    t::headers_flags(&mut b, 1, &block, false, false);
    t::headers(&mut b, 3, &t::literal_block(&[(":method", "GET")]), true);
    assert_eq!(h.conn_error(&b), ErrorCode::PROTOCOL_ERROR);
}

// ---- 5.1 Stream States ----

#[test]
fn h2spec_5_1_idle() {
    for build in [
        |b: &mut Vec<u8>| t::data(b, 1, b"test", true),
        |b: &mut Vec<u8>| t::rst_stream(b, 1, 8),
        |b: &mut Vec<u8>| t::window_update(b, 1, 100),
        |b: &mut Vec<u8>| t::continuation(b, 1, &t::literal_block(&[("x", "y")]), true),
    ] {
        let mut h = H::server();
        let mut b = Vec::new();
        build(&mut b);
        assert_eq!(h.conn_error(&b), ErrorCode::PROTOCOL_ERROR);
    }
}

#[test]
fn h2spec_5_1_half_closed_remote() {
    // DATA.
    let mut h = H::server();
    let mut b = Vec::new();
    h.get(&mut b, 1, true);
    t::data(&mut b, 1, b"test", true);
    assert_eq!(h.stream_error(&b, 1), ErrorCode::STREAM_CLOSED);
    assert_eq!(h.rec.resets(1), vec![(ErrorCode::STREAM_CLOSED, false)]);
    // HEADERS.
    let mut h = H::server();
    let mut b = Vec::new();
    h.get(&mut b, 1, true);
    h.get(&mut b, 1, true);
    assert_eq!(h.stream_error(&b, 1), ErrorCode::STREAM_CLOSED);
    h.assert_alive();
    // CONTINUATION.
    let mut h = H::server();
    let mut b = Vec::new();
    h.get(&mut b, 1, true);
    t::continuation(&mut b, 1, &t::literal_block(&[("x", "y")]), true);
    assert_eq!(h.conn_error(&b), ErrorCode::PROTOCOL_ERROR);
}

#[test]
fn h2spec_5_1_closed() {
    // DATA after the client's RST_STREAM.
    let mut h = H::server();
    let mut b = Vec::new();
    h.post(&mut b, 1, &[]);
    t::rst_stream(&mut b, 1, 8);
    t::data(&mut b, 1, b"test", true);
    assert_eq!(h.stream_error(&b, 1), ErrorCode::STREAM_CLOSED);
    assert_eq!(h.rec.resets(1), vec![(ErrorCode::CANCEL, true)]);
    // HEADERS after the client's RST_STREAM: STREAM_CLOSED.
    let mut h = H::server();
    let mut b = Vec::new();
    h.post(&mut b, 1, &[]);
    t::rst_stream(&mut b, 1, 8);
    h.get(&mut b, 1, true);
    assert_eq!(h.conn_error(&b), ErrorCode::STREAM_CLOSED);
    // CONTINUATION after RST_STREAM.
    let mut h = H::server();
    let mut b = Vec::new();
    h.post(&mut b, 1, &[]);
    t::rst_stream(&mut b, 1, 8);
    t::continuation(&mut b, 1, &t::literal_block(&[("x", "y")]), true);
    assert_eq!(h.conn_error(&b), ErrorCode::PROTOCOL_ERROR);
    // DATA / HEADERS after a normal close.
    for data in [true, false] {
        let mut h = H::server();
        let mut b = Vec::new();
        h.get(&mut b, 1, true);
        h.feed(&b).unwrap();
        h.respond(1, b"hello");
        assert_eq!(h.conn.active_streams(), 0);
        h.frames();
        let mut b = Vec::new();
        if data {
            t::data(&mut b, 1, b"test", true);
            assert_eq!(h.stream_error(&b, 1), ErrorCode::STREAM_CLOSED);
        } else {
            h.get(&mut b, 1, true);
            assert_eq!(h.conn_error(&b), ErrorCode::STREAM_CLOSED);
        }
    }
}

// ---- 5.1.1 Stream Identifiers ----

#[test]
fn h2spec_5_1_1_stream_identifiers() {
    let mut h = H::server();
    let mut b = Vec::new();
    h.get(&mut b, 2, true);
    assert_eq!(h.conn_error(&b), ErrorCode::PROTOCOL_ERROR);

    let mut h = H::server();
    let mut b = Vec::new();
    h.get(&mut b, 5, true);
    h.get(&mut b, 3, true);
    assert_eq!(h.conn_error(&b), ErrorCode::PROTOCOL_ERROR);
    // The GOAWAY names the last stream processed.
}

#[test]
fn goaway_names_last_stream() {
    let mut h = H::server();
    let mut b = Vec::new();
    h.get(&mut b, 5, true);
    t::data(&mut b, 0, b"x", false);
    h.feed(&b).unwrap_err();
    let f = h.frames();
    let g = f.iter().find(|f| f.kind == kind::GOAWAY).unwrap();
    assert_eq!(g.last_stream_id(), Some(5));
    assert_eq!(g.error_code(), Some(ErrorCode::PROTOCOL_ERROR));
    assert!(!g.payload[8..].is_empty(), "debug data names the rule");
}

// ---- 5.1.2 Stream Concurrency ----

#[test]
fn h2spec_5_1_2_concurrency() {
    let local = LocalSettings {
        max_concurrent_streams: Some(3),
        ..LocalSettings::server()
    };
    let mut h = H::with(local, Limits::new());
    let mut b = Vec::new();
    t::settings(&mut b, &[(setting::INITIAL_WINDOW_SIZE, 0)]);
    for id in [1, 3, 5] {
        h.get(&mut b, id, true);
    }
    h.feed(&b).unwrap();
    h.frames();
    let mut b = Vec::new();
    h.get(&mut b, 7, true);
    assert_eq!(h.stream_error(&b, 7), ErrorCode::REFUSED_STREAM);
    assert!(!h.rec.request_done(7));
    // Later frames on the refused stream are ignored (we reset it).
    let mut b = Vec::new();
    t::data(&mut b, 7, b"late", false);
    h.feed(&b).unwrap();
    assert!(h.frames().iter().all(|f| f.kind != kind::RST_STREAM));
    // Once a stream completes, a new one is accepted.
    h.respond(1, b"");
    let mut b = Vec::new();
    h.get(&mut b, 9, true);
    h.feed(&b).unwrap();
    assert!(h.rec.request_done(9));
}

// ---- 5.3.1 Stream Dependencies ----

#[test]
fn h2spec_5_3_1_self_dependency() {
    let mut h = H::server();
    let block = h.peer.request_block("GET", "/", &[]);
    let mut b = Vec::new();
    t::headers_priority(&mut b, 1, 1, 255, &block, true);
    assert_eq!(h.stream_error(&b, 1), ErrorCode::PROTOCOL_ERROR);
    assert!(!h.rec.request_done(1));
    // The HPACK context stayed in sync: the next request decodes.
    let mut b = Vec::new();
    h.get(&mut b, 3, true);
    h.feed(&b).unwrap();
    assert!(h.rec.request_done(3));

    let mut h = H::server();
    let mut b = Vec::new();
    h.get(&mut b, 1, false);
    t::priority(&mut b, 1, 1, false, 255);
    assert_eq!(h.stream_error(&b, 1), ErrorCode::PROTOCOL_ERROR);
}

// ---- 5.4.1 Connection Error Handling ----

#[test]
fn h2spec_5_4_1_invalid_ping() {
    let mut h = H::server();
    let mut b = Vec::new();
    t::raw_frame(&mut b, kind::PING, 0, 3, &[0; 8]);
    assert_eq!(h.conn_error(&b), ErrorCode::PROTOCOL_ERROR);
}

// ---- 5.5 Extending HTTP/2 ----

#[test]
fn h2spec_5_5_extensions() {
    let mut h = H::server();
    let mut b = Vec::new();
    t::raw_frame(&mut b, 0x16, 0, 0, &[0; 8]);
    h.feed(&b).unwrap();
    h.assert_alive();

    let mut h = H::server();
    let block = h.peer.request_block("GET", "/", &[]);
    let mut b = Vec::new();
    t::headers_flags(&mut b, 1, &block, false, false);
    t::raw_frame(&mut b, 0x16, 0, 0, &[0; 8]);
    assert_eq!(h.conn_error(&b), ErrorCode::PROTOCOL_ERROR);
}

// ---- 6.1 DATA ----

#[test]
fn h2spec_6_1_data() {
    let mut h = H::server();
    let mut b = Vec::new();
    t::data(&mut b, 0, b"test", true);
    assert_eq!(h.conn_error(&b), ErrorCode::PROTOCOL_ERROR);

    let mut h = H::server();
    let mut b = Vec::new();
    h.post(&mut b, 1, &[("content-length", "4")]);
    // length 5, pad length 6
    t::raw_frame(
        &mut b,
        kind::DATA,
        flags::PADDED | flags::END_STREAM,
        1,
        b"\x06Test",
    );
    assert_eq!(h.conn_error(&b), ErrorCode::PROTOCOL_ERROR);

    // Padded DATA is accepted and the padding stripped.
    let mut h = H::server();
    let mut b = Vec::new();
    h.post(&mut b, 1, &[]);
    t::data_padded(&mut b, 1, b"test", 5, true);
    h.feed(&b).unwrap();
    assert_eq!(h.rec.body(1), (b"test".to_vec(), true));
}

// ---- 6.2 HEADERS ----

#[test]
fn h2spec_6_2_headers() {
    let mut h = H::server();
    let mut b = Vec::new();
    let block = h.peer.request_block("GET", "/", &[]);
    t::headers(&mut b, 0, &block, true);
    assert_eq!(h.conn_error(&b), ErrorCode::PROTOCOL_ERROR);

    // Invalid pad length.
    let mut h = H::server();
    let block = h.peer.request_block("GET", "/", &[]);
    let mut p = vec![u8::try_from(block.len() + 2).unwrap()];
    p.extend_from_slice(&block);
    let mut b = Vec::new();
    t::raw_frame(&mut b, kind::HEADERS, 0x0d, 1, &p);
    assert_eq!(h.conn_error(&b), ErrorCode::PROTOCOL_ERROR);

    // Padded and prioritized HEADERS are fine.
    let mut h = H::server();
    let block = h.peer.request_block("GET", "/", &[]);
    let mut b = Vec::new();
    t::headers_padded(&mut b, 1, &block, 7, true);
    let block = h.peer.request_block("GET", "/", &[]);
    t::headers_priority(&mut b, 3, 0, 10, &block, true);
    h.feed(&b).unwrap();
    assert!(h.rec.request_done(1) && h.rec.request_done(3));
}

// ---- 6.3 PRIORITY ----

#[test]
fn h2spec_6_3_priority() {
    let mut h = H::server();
    let mut b = Vec::new();
    t::priority(&mut b, 0, 1, false, 255);
    assert_eq!(h.conn_error(&b), ErrorCode::PROTOCOL_ERROR);

    let mut h = H::server();
    let mut b = Vec::new();
    h.get(&mut b, 1, true);
    t::raw_frame(&mut b, kind::PRIORITY, 0, 1, b"\x80\x00\x00\x01");
    assert_eq!(h.stream_error(&b, 1), ErrorCode::FRAME_SIZE_ERROR);

    // PRIORITY on idle streams (then a lower id), on closed streams: fine.
    let mut h = H::server();
    let mut b = Vec::new();
    t::priority(&mut b, 3, 0, false, 1);
    t::priority(&mut b, 1, 3, true, 255);
    h.get(&mut b, 1, true);
    h.feed(&b).unwrap();
    assert!(h.rec.request_done(1));
    h.respond(1, b"x");
    let mut b = Vec::new();
    t::priority(&mut b, 1, 0, false, 1);
    h.feed(&b).unwrap();
    h.assert_alive();
}

// ---- 6.4 RST_STREAM ----

#[test]
fn h2spec_6_4_rst_stream() {
    let mut h = H::server();
    let mut b = Vec::new();
    t::rst_stream(&mut b, 0, 8);
    assert_eq!(h.conn_error(&b), ErrorCode::PROTOCOL_ERROR);

    let mut h = H::server();
    let mut b = Vec::new();
    t::rst_stream(&mut b, 1, 8);
    assert_eq!(h.conn_error(&b), ErrorCode::PROTOCOL_ERROR);

    let mut h = H::server();
    let mut b = Vec::new();
    h.get(&mut b, 1, true);
    t::raw_frame(&mut b, kind::RST_STREAM, 0, 1, b"\x00\x00\x00");
    assert_eq!(h.conn_error(&b), ErrorCode::FRAME_SIZE_ERROR);
}

// ---- 6.5 SETTINGS, 6.5.2, 6.5.3 ----

#[test]
fn h2spec_6_5_settings() {
    let cases: [(&[u8], ErrorCode); 3] = [
        (
            b"\x00\x00\x01\x04\x01\x00\x00\x00\x00\x00",
            ErrorCode::FRAME_SIZE_ERROR,
        ),
        (
            b"\x00\x00\x06\x04\x00\x00\x00\x00\x01\x00\x03\x00\x00\x00\x64",
            ErrorCode::PROTOCOL_ERROR,
        ),
        (
            b"\x00\x00\x03\x04\x00\x00\x00\x00\x00\x00\x03\x00",
            ErrorCode::FRAME_SIZE_ERROR,
        ),
    ];
    for (b, code) in cases {
        let mut h = H::server();
        assert_eq!(h.conn_error(b), code);
    }
    let mut h = H::server();
    let mut b = Vec::new();
    t::settings(&mut b, &[(setting::ENABLE_PUSH, 0)]);
    h.feed(&b).unwrap();
    let f = h.frames();
    assert!(f.len() == 1 && f[0].kind == kind::SETTINGS && f[0].has(flags::ACK));
    assert!(f[0].payload.is_empty());
}

#[test]
fn h2spec_6_5_2_defined_parameters() {
    let cases = [
        (setting::ENABLE_PUSH, 2, ErrorCode::PROTOCOL_ERROR),
        (
            setting::INITIAL_WINDOW_SIZE,
            1 << 31,
            ErrorCode::FLOW_CONTROL_ERROR,
        ),
        (setting::MAX_FRAME_SIZE, 16383, ErrorCode::PROTOCOL_ERROR),
        (setting::MAX_FRAME_SIZE, 1 << 24, ErrorCode::PROTOCOL_ERROR),
    ];
    for (id, v, code) in cases {
        let mut h = H::server();
        let mut b = Vec::new();
        t::settings(&mut b, &[(id, v)]);
        assert_eq!(h.conn_error(&b), code, "{id} = {v}");
    }
    // Unknown identifier: ignored.
    let mut h = H::server();
    let mut b = Vec::new();
    t::settings(&mut b, &[(0xff, 1)]);
    h.feed(&b).unwrap();
    h.assert_alive();
}

#[test]
fn h2spec_6_5_3_settings_synchronization() {
    let mut h = H::server();
    let mut b = Vec::new();
    t::settings(
        &mut b,
        &[
            (setting::INITIAL_WINDOW_SIZE, 100),
            (setting::INITIAL_WINDOW_SIZE, 1),
        ],
    );
    h.get(&mut b, 1, true);
    h.feed(&b).unwrap();
    assert_eq!(h.conn.peer_settings().initial_window_size, 1);
    h.frames();
    let id = StreamId::new(1);
    h.conn
        .send_header_fields(id, &[(b":status", b"200")], false, &mut h.out)
        .unwrap();
    assert_eq!(h.conn.send_data(id, b"hello", true, &mut h.out).unwrap(), 1);
    let f = h.frames();
    let d: Vec<_> = f.iter().filter(|f| f.kind == kind::DATA).collect();
    assert_eq!(d.len(), 1);
    assert_eq!(d[0].payload, b"h");
    assert!(!d[0].has(flags::END_STREAM));
}

// ---- 6.7 PING ----

#[test]
fn h2spec_6_7_ping() {
    let mut h = H::server();
    let mut b = Vec::new();
    t::ping(&mut b, true, *b"unexpect");
    t::ping(&mut b, false, *b"expected");
    h.feed(&b).unwrap();
    let f = h.frames();
    assert_eq!(f.len(), 1);
    assert_eq!(f[0].payload, b"expected");
    assert_eq!(h.rec.events, vec![t::Event::PingAck(*b"unexpect")]);

    let mut h = H::server();
    let mut b = Vec::new();
    t::raw_frame(&mut b, kind::PING, 0, 1, &[0; 8]);
    assert_eq!(h.conn_error(&b), ErrorCode::PROTOCOL_ERROR);

    let mut h = H::server();
    let mut b = Vec::new();
    t::raw_frame(&mut b, kind::PING, 0, 0, &[0; 6]);
    assert_eq!(h.conn_error(&b), ErrorCode::FRAME_SIZE_ERROR);
}

// ---- 6.8 GOAWAY ----

#[test]
fn h2spec_6_8_goaway() {
    let mut h = H::server();
    let mut b = Vec::new();
    t::raw_frame(&mut b, kind::GOAWAY, 0, 1, &[0; 8]);
    assert_eq!(h.conn_error(&b), ErrorCode::PROTOCOL_ERROR);

    // A client's GOAWAY (NO_ERROR): reported, connection still answers.
    let mut h = H::server();
    let mut b = Vec::new();
    t::goaway(&mut b, 0, 0, b"h2spec");
    h.feed(&b).unwrap();
    assert_eq!(
        h.rec.events,
        vec![t::Event::GoAway(0, ErrorCode::NO_ERROR, b"h2spec".to_vec())]
    );
    h.assert_alive();
    assert!(h.conn.is_finished());
}

// ---- 6.9 WINDOW_UPDATE, 6.9.1, 6.9.2 ----

#[test]
fn h2spec_6_9_window_update() {
    let mut h = H::server();
    let mut b = Vec::new();
    t::window_update(&mut b, 0, 0);
    assert_eq!(h.conn_error(&b), ErrorCode::PROTOCOL_ERROR);

    let mut h = H::server();
    let mut b = Vec::new();
    h.get(&mut b, 1, true);
    t::window_update(&mut b, 1, 0);
    assert_eq!(h.stream_error(&b, 1), ErrorCode::PROTOCOL_ERROR);

    let mut h = H::server();
    let mut b = Vec::new();
    t::raw_frame(&mut b, kind::WINDOW_UPDATE, 0, 0, b"\x00\x00\x01");
    assert_eq!(h.conn_error(&b), ErrorCode::FRAME_SIZE_ERROR);

    // WINDOW_UPDATE on stream 0 and on a half-closed (remote) stream: fine.
    let mut h = H::server();
    let mut b = Vec::new();
    t::window_update(&mut b, 0, 1);
    h.get(&mut b, 1, true);
    t::window_update(&mut b, 1, 1);
    h.feed(&b).unwrap();
    assert!(h.rec.events.contains(&t::Event::WindowOpened(Some(1))));
    h.assert_alive();
}

#[test]
fn h2spec_6_9_1_flow_control_window() {
    // Window of 1: DATA of 1 octet.
    let mut h = H::server();
    let mut b = Vec::new();
    t::settings(&mut b, &[(setting::INITIAL_WINDOW_SIZE, 1)]);
    h.get(&mut b, 1, true);
    h.feed(&b).unwrap();
    h.frames();
    let id = StreamId::new(1);
    h.conn
        .send_header_fields(id, &[(b":status", b"200")], false, &mut h.out)
        .unwrap();
    assert_eq!(h.conn.send_data(id, b"abc", true, &mut h.out).unwrap(), 1);
    assert_eq!(h.conn.send_data(id, b"bc", true, &mut h.out).unwrap(), 0);
    assert_eq!(h.conn.send_capacity(id), 0);

    // Overflow on the connection.
    let mut h = H::server();
    let mut b = Vec::new();
    t::window_update(&mut b, 0, 0x7fff_ffff);
    t::window_update(&mut b, 0, 0x7fff_ffff);
    assert_eq!(h.conn_error(&b), ErrorCode::FLOW_CONTROL_ERROR);

    // Overflow on a stream.
    let mut h = H::server();
    let mut b = Vec::new();
    h.get(&mut b, 1, true);
    t::window_update(&mut b, 1, 0x7fff_ffff);
    t::window_update(&mut b, 1, 0x7fff_ffff);
    assert_eq!(h.stream_error(&b, 1), ErrorCode::FLOW_CONTROL_ERROR);
    assert_eq!(
        h.rec.resets(1),
        vec![(ErrorCode::FLOW_CONTROL_ERROR, false)]
    );
}

#[test]
fn h2spec_6_9_2_initial_window_size() {
    // Change after HEADERS: 0 then 1.
    let mut h = H::server();
    let mut b = Vec::new();
    t::settings(&mut b, &[(setting::INITIAL_WINDOW_SIZE, 0)]);
    h.get(&mut b, 1, true);
    h.feed(&b).unwrap();
    let id = StreamId::new(1);
    h.conn
        .send_header_fields(id, &[(b":status", b"200")], false, &mut h.out)
        .unwrap();
    assert_eq!(h.conn.send_data(id, b"abc", true, &mut h.out).unwrap(), 0);
    h.frames();
    let mut b = Vec::new();
    t::settings(&mut b, &[(setting::INITIAL_WINDOW_SIZE, 1)]);
    h.feed(&b).unwrap();
    assert!(h
        .rec
        .events
        .ends_with(&[t::Event::SettingsChanged, t::Event::WindowOpened(None)]));
    assert_eq!(h.conn.send_data(id, b"abc", true, &mut h.out).unwrap(), 1);

    // Negative window: 3, send 3, lower to 2 (window -1), +2 → 1.
    let mut h = H::server();
    let mut b = Vec::new();
    t::settings(&mut b, &[(setting::INITIAL_WINDOW_SIZE, 3)]);
    h.get(&mut b, 1, true);
    h.feed(&b).unwrap();
    h.conn
        .send_header_fields(id, &[(b":status", b"200")], false, &mut h.out)
        .unwrap();
    assert_eq!(
        h.conn.send_data(id, b"abcdef", true, &mut h.out).unwrap(),
        3
    );
    let mut b = Vec::new();
    t::settings(&mut b, &[(setting::INITIAL_WINDOW_SIZE, 2)]);
    h.feed(&b).unwrap();
    assert_eq!(h.conn.send_data(id, b"def", true, &mut h.out).unwrap(), 0);
    let mut b = Vec::new();
    t::window_update(&mut b, 1, 2);
    h.feed(&b).unwrap();
    assert_eq!(h.conn.send_capacity(id), 1);
    assert_eq!(h.conn.send_data(id, b"def", true, &mut h.out).unwrap(), 1);

    // Exceeding 2^31-1 (raw bytes as h2spec sends them).
    let mut h = H::server();
    let b = b"\x00\x00\x06\x04\x00\x00\x00\x00\x00\x00\x04\x80\x00\x00\x00";
    assert_eq!(h.conn_error(b), ErrorCode::FLOW_CONTROL_ERROR);

    // A delta that pushes an open stream's window above 2^31-1.
    let mut h = H::server();
    let mut b = Vec::new();
    h.get(&mut b, 1, true);
    t::window_update(&mut b, 1, 0x7fff_ffff - 65535);
    t::settings(&mut b, &[(setting::INITIAL_WINDOW_SIZE, 65536)]);
    assert_eq!(h.conn_error(&b), ErrorCode::FLOW_CONTROL_ERROR);
}

// ---- 6.10 CONTINUATION ----

#[test]
fn h2spec_6_10_continuation() {
    let mut h = H::server();
    let block = h
        .peer
        .request_block("GET", "/", &[("x-a", "1"), ("x-b", "2")]);
    let (a, rest) = block.split_at(5);
    let (m, z) = rest.split_at(3);
    let mut b = Vec::new();
    t::headers_flags(&mut b, 1, a, true, false);
    t::continuation(&mut b, 1, m, false);
    t::continuation(&mut b, 1, z, true);
    h.feed(&b).unwrap();
    assert_eq!(h.rec.headers(1).len(), 6);
    assert_eq!(h.rec.done(1)[0].block_len, block.len());

    type Build = fn(&mut Vec<u8>, &[u8], &[u8]);
    let cases: [Build; 5] = [
        // CONTINUATION followed by a non-CONTINUATION frame.
        |b, blk, d| {
            t::headers_flags(b, 1, blk, false, false);
            t::continuation(b, 1, d, false);
            t::data(b, 1, b"test", true);
        },
        // CONTINUATION on stream 0.
        |b, blk, d| {
            t::headers_flags(b, 1, blk, false, false);
            t::continuation(b, 0, d, true);
        },
        // After HEADERS with END_HEADERS.
        |b, blk, d| {
            t::headers_flags(b, 1, blk, false, true);
            t::continuation(b, 1, d, true);
        },
        // After CONTINUATION with END_HEADERS.
        |b, blk, d| {
            t::headers_flags(b, 1, blk, false, false);
            t::continuation(b, 1, d, true);
            t::continuation(b, 1, d, true);
        },
        // Preceded by DATA.
        |b, blk, d| {
            t::headers_flags(b, 1, blk, false, true);
            t::data(b, 1, b"test", true);
            t::continuation(b, 1, d, false);
        },
    ];
    for build in cases {
        let mut h = H::server();
        let block = h.peer.request_block("POST", "/", &[]);
        let dummy = t::literal_block(&[("x-dummy0", "x")]);
        let mut b = Vec::new();
        build(&mut b, &block, &dummy);
        assert_eq!(h.conn_error(&b), ErrorCode::PROTOCOL_ERROR);
    }
}

// ---- 7 Error Codes ----

#[test]
fn h2spec_7_unknown_error_codes() {
    let mut h = H::server();
    let mut b = Vec::new();
    h.post(&mut b, 1, &[]);
    t::rst_stream(&mut b, 1, 0xff);
    t::goaway(&mut b, 0, 0xff, &[]);
    h.feed(&b).unwrap();
    assert_eq!(h.rec.resets(1), vec![(ErrorCode(0xff), true)]);
    h.assert_alive();
}

// ---- 8.1 HTTP Request/Response Exchange ----

#[test]
fn h2spec_8_1_exchange() {
    // GET, HEAD, POST with trailers.
    let mut h = H::server();
    let mut b = Vec::new();
    h.get(&mut b, 1, true);
    let head = h.peer.request_block("HEAD", "/", &[]);
    t::headers(&mut b, 3, &head, true);
    h.post(&mut b, 5, &[("trailer", "x-test")]);
    t::data(&mut b, 5, b"test", false);
    let trailers = h.peer.block(&[("x-test", "ok")]);
    t::headers(&mut b, 5, &trailers, true);
    h.feed(&b).unwrap();
    assert_eq!(h.rec.done(1)[0].kind, HeadersKind::Request);
    assert!(h.rec.done(1)[0].end_stream);
    assert!(h.rec.request_done(3));
    let d = h.rec.done(5);
    assert_eq!(d.len(), 2);
    assert_eq!((d[0].kind, d[0].end_stream), (HeadersKind::Request, false));
    assert_eq!((d[1].kind, d[1].end_stream), (HeadersKind::Trailers, true));
    assert_eq!(h.rec.body(5), (b"test".to_vec(), false));

    // Second HEADERS without END_STREAM.
    let mut h = H::server();
    let mut b = Vec::new();
    h.post(&mut b, 1, &[]);
    t::data(&mut b, 1, b"test", false);
    let trailers = h.peer.block(&[("x-test", "ok")]);
    t::headers(&mut b, 1, &trailers, false);
    assert_eq!(h.stream_error(&b, 1), ErrorCode::PROTOCOL_ERROR);
}

// ---- 8.1.2 HTTP Header Fields (all malformed-request cases) ----

#[test]
fn h2spec_8_1_2_malformed_requests() {
    let cases: &[&[(&str, &str)]] = &[
        // 8.1.2: uppercase field name.
        &[
            (":method", "GET"),
            (":scheme", "http"),
            (":path", "/"),
            ("X-TEST", "ok"),
        ],
        // 8.1.2.1: unknown pseudo-header, response pseudo-header, after regular field.
        &[
            (":method", "GET"),
            (":scheme", "http"),
            (":path", "/"),
            (":test", "ok"),
        ],
        &[
            (":method", "GET"),
            (":scheme", "http"),
            (":path", "/"),
            (":status", "200"),
        ],
        &[
            (":method", "GET"),
            (":scheme", "http"),
            ("x-test", "ok"),
            (":path", "/"),
        ],
        // 8.1.2.2: connection-specific, TE other than trailers.
        &[
            (":method", "GET"),
            (":scheme", "http"),
            (":path", "/"),
            ("connection", "keep-alive"),
        ],
        &[
            (":method", "GET"),
            (":scheme", "http"),
            (":path", "/"),
            ("te", "trailers, deflate"),
        ],
        // 8.1.2.3: empty path, missing and duplicated pseudo-headers.
        &[(":method", "GET"), (":scheme", "http"), (":path", "")],
        &[(":scheme", "http"), (":path", "/")],
        &[(":method", "GET"), (":path", "/")],
        &[(":method", "GET"), (":scheme", "http")],
        &[
            (":method", "GET"),
            (":scheme", "http"),
            (":path", "/"),
            (":method", "GET"),
        ],
        &[
            (":method", "GET"),
            (":scheme", "http"),
            (":path", "/"),
            (":scheme", "http"),
        ],
        &[
            (":method", "GET"),
            (":scheme", "http"),
            (":path", "/"),
            (":path", "/"),
        ],
    ];
    for fields in cases {
        let mut h = H::server();
        let block = h.peer.block(fields);
        let mut b = Vec::new();
        t::headers(&mut b, 1, &block, true);
        assert_eq!(
            h.stream_error(&b, 1),
            ErrorCode::PROTOCOL_ERROR,
            "{fields:?}"
        );
        assert_eq!(h.rec.resets(1), vec![(ErrorCode::PROTOCOL_ERROR, false)]);
        assert!(!h.rec.request_done(1));
        // The connection and its HPACK context survive.
        let mut b = Vec::new();
        h.get(&mut b, 3, true);
        h.feed(&b).unwrap();
        assert!(h.rec.request_done(3), "{fields:?}");
    }
    // Pseudo-header field in trailers.
    let mut h = H::server();
    let mut b = Vec::new();
    h.post(&mut b, 1, &[]);
    t::data(&mut b, 1, b"test", false);
    let trailers = h.peer.block(&[(":method", "POST")]);
    t::headers(&mut b, 1, &trailers, true);
    assert_eq!(h.stream_error(&b, 1), ErrorCode::PROTOCOL_ERROR);
}

#[test]
fn h2spec_8_1_2_6_content_length() {
    for frames in [&[&b"test"[..]][..], &[b"test", b"test"]] {
        let mut h = H::server();
        let mut b = Vec::new();
        h.post(&mut b, 1, &[("content-length", "1")]);
        for (i, d) in frames.iter().enumerate() {
            t::data(&mut b, 1, d, i + 1 == frames.len());
        }
        assert_eq!(h.stream_error(&b, 1), ErrorCode::PROTOCOL_ERROR);
        assert!(
            h.rec.body(1).0.is_empty(),
            "data beyond content-length not delivered"
        );
    }
    // Too short at END_STREAM, in trailers, and with END_STREAM on HEADERS.
    let mut h = H::server();
    let mut b = Vec::new();
    h.post(&mut b, 1, &[("content-length", "10")]);
    t::data(&mut b, 1, b"test", true);
    assert_eq!(h.stream_error(&b, 1), ErrorCode::PROTOCOL_ERROR);
    let mut h = H::server();
    let mut b = Vec::new();
    h.post(&mut b, 1, &[("content-length", "10")]);
    t::data(&mut b, 1, b"test", false);
    let trailers = h.peer.block(&[("x-t", "1")]);
    t::headers(&mut b, 1, &trailers, true);
    assert_eq!(h.stream_error(&b, 1), ErrorCode::PROTOCOL_ERROR);
    let mut h = H::server();
    let block = h
        .peer
        .request_block("POST", "/", &[("content-length", "3")]);
    let mut b = Vec::new();
    t::headers(&mut b, 1, &block, true);
    assert_eq!(h.stream_error(&b, 1), ErrorCode::PROTOCOL_ERROR);
    // Matching length is fine.
    let mut h = H::server();
    let mut b = Vec::new();
    h.post(&mut b, 1, &[("content-length", "8")]);
    t::data(&mut b, 1, b"test", false);
    t::data(&mut b, 1, b"test", true);
    h.feed(&b).unwrap();
    assert_eq!(h.rec.body(1), (b"testtest".to_vec(), true));
}

// ---- 8.2 Server Push ----

#[test]
fn h2spec_8_2_push_promise_from_client() {
    let mut h = H::server();
    let mut b = Vec::new();
    h.get(&mut b, 1, false);
    let block = h.peer.request_block("GET", "/pushed", &[]);
    t::push_promise(&mut b, 1, 2, &block);
    assert_eq!(h.conn_error(&b), ErrorCode::PROTOCOL_ERROR);
}

// ---- hpack/ group ----

#[test]
fn h2spec_hpack_errors() {
    // (representation, appended after the common request fields?) — bytes as
    // h2spec sends them.
    let cases: &[(&[u8], bool)] = &[
        // 2.3.3: indexed field with index 70; literal with name index 70.
        (b"\xC6", true),
        (b"\x7F\x07\x00", true),
        // 4.2: dynamic table size update at the end of the block.
        (b"\x21", true),
        // 5.2: Huffman padding longer than 7 bits, padded by zero, EOS.
        (b"\x00\x85\xf2\xb2\x4a\x84\xff\x84\x49\x50\x9f\xff", true),
        (b"\x00\x85\xf2\xb2\x4a\x84\xff\x83\x49\x50\x90", true),
        (
            b"\x00\x85\xf2\xb2\x4a\x84\xff\x87\x49\x51\xff\xff\xff\xfa\x7f",
            true,
        ),
        // 6.1: index 0.
        (b"\x80", true),
        // 6.3: size update to 4097 (> SETTINGS_HEADER_TABLE_SIZE) first.
        (b"\x3f\xe2\x1f", false),
    ];
    for (rep, after) in cases {
        let mut h = H::server();
        let common = h.peer.request_block("GET", "/", &[]);
        let block = if *after {
            [common, rep.to_vec()].concat()
        } else {
            [rep.to_vec(), common].concat()
        };
        let mut b = Vec::new();
        t::headers(&mut b, 1, &block, true);
        assert_eq!(h.conn_error(&b), ErrorCode::COMPRESSION_ERROR, "{rep:02x?}");
    }
    // generic/5: valid representations are accepted.
    let reps: &[&[u8]] = &[
        b"\xba",
        b"\x40\x87\xb5\x05\xb1\x61\xcc\x5a\x93\x84\x9c\x48\xac\xa4",
        b"\x40\x0a\x75\x73\x65\x72\x2d\x61\x67\x65\x6e\x74\x06\x68\x32\x73\x70\x65\x63",
        b"\x40\x85\xf2\xb2\x4a\x84\xff\x84\x9c\x48\xac\xa4",
        b"\x00\x87\xb5\x05\xb1\x61\xcc\x5a\x93\x84\x9c\x48\xac\xa4",
        b"\x10\x0a\x75\x73\x65\x72\x2d\x61\x67\x65\x6e\x74\x06\x68\x32\x73\x70\x65\x63",
    ];
    for rep in reps {
        let mut h = H::server();
        let block = [h.peer.request_block("GET", "/", &[]), rep.to_vec()].concat();
        let mut b = Vec::new();
        t::headers(&mut b, 1, &block, true);
        h.feed(&b).unwrap();
        assert!(h.rec.request_done(1), "{rep:02x?}");
    }
    // Valid representations: literal variants, Huffman, size updates.
    let mut h = H::server();
    let mut block = vec![0x20, 0x3f, 0xe1, 0x1f]; // size update 0, then 4096
    block.extend(h.peer.block(&[
        (":method", "GET"),
        (":scheme", "http"),
        (":path", "/"),
        (":authority", "localhost"),
        ("x-long-custom-header", "value value value"),
    ]));
    block.extend(t::literal_block(&[("x-plain", "v")]));
    block.extend([0x10, 0x01, b'y', 0x01, b'z']); // never indexed, new name
    let mut b = Vec::new();
    t::headers(&mut b, 1, &block, true);
    h.feed(&b).unwrap();
    let got = h.rec.headers(1);
    assert_eq!(got.len(), 7);
    assert_eq!(got[6], ("y".into(), "z".into()));
}

// ---- Responses as the server sends them ----

#[test]
fn server_response_framing_and_flow_control() {
    let mut h = H::server();
    let mut b = Vec::new();
    h.get(&mut b, 1, true);
    h.feed(&b).unwrap();
    h.frames();
    let id = StreamId::new(1);
    let body = vec![7u8; 100_000];
    h.conn
        .send_header_fields(
            id,
            &[(b":status", b"200"), (b"content-length", b"100000")],
            false,
            &mut h.out,
        )
        .unwrap();
    // Connection window 65535, frames of at most 16384.
    assert_eq!(
        h.conn.send_data(id, &body, true, &mut h.out).unwrap(),
        65535
    );
    let f = h.frames();
    let hdrs = h.peer.decode_headers(&f);
    assert_eq!(hdrs[0].1[0], (":status".into(), "200".into()));
    let sizes: Vec<usize> = f
        .iter()
        .filter(|f| f.kind == kind::DATA)
        .map(|f| f.payload.len())
        .collect();
    assert_eq!(sizes, vec![16384, 16384, 16384, 16383]);
    // Stream window full too: WINDOW_UPDATE on the connection only is not enough.
    let mut b = Vec::new();
    t::window_update(&mut b, 0, 100_000);
    h.feed(&b).unwrap();
    assert_eq!(h.conn.send_capacity(id), 0);
    let mut b = Vec::new();
    t::window_update(&mut b, 1, 100_000);
    h.feed(&b).unwrap();
    assert_eq!(
        h.conn
            .send_data(id, &body[65535..], true, &mut h.out)
            .unwrap(),
        100_000 - 65535
    );
    let f = h.frames();
    assert!(f.last().unwrap().has(flags::END_STREAM));
    assert_eq!(h.conn.active_streams(), 0);
    assert_eq!(
        h.conn.send_data(id, b"x", true, &mut h.out),
        Err(h2lab_wire::h2::SendError::StreamClosed(id))
    );
}

#[test]
fn large_response_headers_use_continuation() {
    let mut h = H::server();
    let mut b = Vec::new();
    h.get(&mut b, 1, true);
    h.feed(&b).unwrap();
    h.frames();
    let big = vec![b'v'; 40_000];
    let id = StreamId::new(1);
    h.conn
        .send_header_fields(
            id,
            &[(b":status", b"200"), (b"x-big", &big)],
            true,
            &mut h.out,
        )
        .unwrap();
    let f = h.frames();
    assert_eq!(f[0].kind, kind::HEADERS);
    assert!(f[0].has(flags::END_STREAM) && !f[0].has(flags::END_HEADERS));
    assert!(f[1..]
        .iter()
        .all(|f| f.kind == kind::CONTINUATION && f.payload.len() <= 16384));
    assert!(f.last().unwrap().has(flags::END_HEADERS));
    let hdrs = h.peer.decode_headers(&f);
    assert_eq!(hdrs[0].1[1].1.len(), 40_000);
}

#[test]
fn request_body_returns_windows_in_batches() {
    let mut h = H::server();
    let mut b = Vec::new();
    h.post(&mut b, 1, &[]);
    h.feed(&b).unwrap();
    // 1000 frames of 1000 bytes: far more than the 65535 windows.
    let mut updates = (0u64, 0u64);
    for i in 0..1000 {
        let mut b = Vec::new();
        t::data(&mut b, 1, &[1; 1000], i == 999);
        h.feed(&b).unwrap();
        for f in h.frames() {
            assert_eq!(f.kind, kind::WINDOW_UPDATE);
            let inc = u64::from(f.increment().unwrap());
            assert!(inc >= 32_767, "batched, got {inc}");
            if f.stream == 0 {
                updates.0 += inc;
            } else {
                updates.1 += inc;
            }
        }
    }
    assert_eq!(h.rec.body(1).0.len(), 1_000_000);
    assert!(updates.0 >= 1_000_000 - 65_535 && updates.0 <= 1_000_000);
    assert!(updates.1 >= 1_000_000 - 65_535 && updates.1 <= 1_000_000);
}

#[test]
fn peer_exceeding_windows() {
    // Stream window exceeded → stream FLOW_CONTROL_ERROR.
    let local = LocalSettings {
        initial_window_size: 100,
        ..LocalSettings::server()
    };
    let mut h = H::with(local, Limits::new());
    let mut b = Vec::new();
    h.post(&mut b, 1, &[]);
    t::data(&mut b, 1, &[0; 101], false);
    assert_eq!(h.stream_error(&b, 1), ErrorCode::FLOW_CONTROL_ERROR);
    // Connection window exceeded → connection FLOW_CONTROL_ERROR. (Windows
    // are returned as soon as half is used, so only one frame larger than
    // the rest of the window can exceed it.)
    let local = LocalSettings {
        max_frame_size: 100_000,
        ..LocalSettings::server()
    };
    let mut h = H::with(local, Limits::new());
    let mut b = Vec::new();
    h.post(&mut b, 1, &[]);
    t::data(&mut b, 1, &[0; 65_536], false);
    assert_eq!(h.conn_error(&b), ErrorCode::FLOW_CONTROL_ERROR);
}

#[test]
fn smaller_initial_window_applies_after_ack() {
    let local = LocalSettings {
        initial_window_size: 1000,
        ..LocalSettings::server()
    };
    let mut c = Connection::new(Role::Server, local, Limits::new());
    let (mut out, mut rec, mut peer) = (Vec::new(), Recorder::default(), TestPeer::new());
    let mut b = Vec::new();
    t::preface(&mut b);
    t::settings(&mut b, &[]);
    // Before our SETTINGS are acknowledged the default 65535 applies
    // (RFC 9113 §6.9.3).
    let block = peer.request_block("POST", "/", &[]);
    t::headers(&mut b, 1, &block, false);
    t::data(&mut b, 1, &[0; 5000], false);
    c.recv(&b, &mut out, &mut rec).unwrap();
    assert_eq!(rec.body(1).0.len(), 5000);
    let sent = read_frames(&out);
    assert!(sent[0]
        .settings()
        .contains(&(setting::INITIAL_WINDOW_SIZE, 1000)));
    out.clear();
    // After the ACK the window is 65535 - 5000 + (1000 - 65535) < 0.
    let mut b = Vec::new();
    t::settings_ack(&mut b);
    t::data(&mut b, 1, &[0; 1], false);
    c.recv(&b, &mut out, &mut rec).unwrap();
    let f = read_frames(&out);
    assert_eq!(f[0].error_code(), Some(ErrorCode::FLOW_CONTROL_ERROR));
}

#[test]
fn graceful_goaway_from_server() {
    let mut h = H::server();
    let mut b = Vec::new();
    h.get(&mut b, 1, true);
    h.feed(&b).unwrap();
    h.conn.goaway(ErrorCode::NO_ERROR, b"bye", &mut h.out);
    let f = h.frames();
    assert_eq!(f[0].last_stream_id(), Some(1));
    assert!(!h.conn.is_finished());
    // New streams above the last id are ignored, their HPACK state kept.
    let mut b = Vec::new();
    h.get(&mut b, 3, true);
    t::data(&mut b, 3, b"x", true);
    h.feed(&b).unwrap();
    assert!(!h.rec.request_done(3));
    assert!(h.frames().is_empty());
    h.respond(1, b"done");
    assert!(h.conn.is_finished());
    // A second GOAWAY never raises the last stream id.
    h.conn.goaway(ErrorCode::NO_ERROR, &[], &mut h.out);
    assert_eq!(h.frames().last().unwrap().last_stream_id(), Some(1));
}

#[test]
fn server_cannot_open_requests() {
    let mut h = H::server();
    assert_eq!(
        h.conn.send_request(|_, _| {}, true, &mut h.out),
        Err(h2lab_wire::h2::SendError::WrongRole)
    );
}

#[test]
fn incomplete_frames_are_not_consumed() {
    let mut h = H::server();
    let mut b = Vec::new();
    h.get(&mut b, 1, true);
    t::ping(&mut b, false, [9; 8]);
    for cut in 0..b.len() {
        let mut c = Connection::new(Role::Server, LocalSettings::server(), Limits::new());
        let mut pre = Vec::new();
        t::preface(&mut pre);
        t::settings(&mut pre, &[]);
        let (mut out, mut rec) = (Vec::new(), Recorder::default());
        c.recv(&pre, &mut out, &mut rec).unwrap();
        // Split the input at `cut`: the caller keeps the unconsumed tail.
        let n = c.recv(&b[..cut], &mut out, &mut rec).unwrap();
        let mut rest = b[n..cut].to_vec();
        rest.extend_from_slice(&b[cut..]);
        assert_eq!(c.recv(&rest, &mut out, &mut rec).unwrap(), rest.len());
        assert!(rec.request_done(1));
        assert!(rec.events.iter().all(|e| !matches!(e, t::Event::Reset(..))));
    }
}
