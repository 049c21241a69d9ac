//! Server push (RFC 9113 §8.4) against a scripted peer, both roles.

use h2lab_wire::frame::flags;
use h2lab_wire::h2::testing::{
    self as t, kind, read_frames, setting, Event, RawFrame, Recorder, TestPeer,
};
use h2lab_wire::h2::{Connection, ErrorCode, Limits, LocalSettings, Role, SendError, StreamId};

struct P {
    conn: Connection,
    peer: TestPeer,
    out: Vec<u8>,
    rec: Recorder,
}

impl P {
    fn feed(&mut self, b: &[u8]) -> Result<(), h2lab_wire::h2::ConnError> {
        let n = self.conn.recv(b, &mut self.out, &mut self.rec)?;
        assert_eq!(n, b.len());
        Ok(())
    }
    fn frames(&mut self) -> Vec<RawFrame> {
        let f = read_frames(&self.out);
        self.out.clear();
        f
    }
}

/// A server after the handshake with a client advertising `client`, and
/// one open request on stream 1.
fn server(client: &[(u16, u32)]) -> P {
    let mut p = P {
        conn: Connection::new(Role::Server, LocalSettings::server(), Limits::new()),
        peer: TestPeer::new(),
        out: Vec::new(),
        rec: Recorder::default(),
    };
    let mut b = Vec::new();
    t::preface(&mut b);
    t::settings(&mut b, client);
    t::settings_ack(&mut b);
    let block = p.peer.request_block("GET", "/page", &[]);
    t::headers(&mut b, 1, &block, true);
    p.feed(&b).unwrap();
    p.frames();
    p
}

fn promise(p: &mut P, parent: u32, path: &str) -> Result<StreamId, SendError> {
    let fields: [(&[u8], &[u8]); 4] = [
        (b":method", b"GET"),
        (b":scheme", b"http"),
        (b":path", path.as_bytes()),
        (b":authority", b"localhost"),
    ];
    p.conn
        .send_push_promise_fields(StreamId::new(parent), &fields, &mut p.out)
}

#[test]
fn server_pushes_on_even_ids_then_answers_the_reserved_stream() {
    let mut p = server(&[]);
    assert!(p.conn.can_push());
    let a = promise(&mut p, 1, "/asset/a.css").unwrap();
    let b = promise(&mut p, 1, "/asset/b.js").unwrap();
    // RFC 9113 §5.1.1: server streams are even and increasing.
    assert_eq!((a.get(), b.get()), (2, 4));
    let f = p.frames();
    assert_eq!(f.len(), 2);
    for (fr, id) in f.iter().zip([2u32, 4]) {
        assert_eq!(fr.kind, kind::PUSH_PROMISE);
        assert_eq!(fr.stream, 1, "sent on the client's stream");
        assert!(fr.has(flags::END_HEADERS));
        assert_eq!(fr.payload[..4], id.to_be_bytes());
    }
    // The promised request decodes as a complete request.
    let mut block = f[0].payload[4..].to_vec();
    let mut fields = Vec::new();
    p.peer
        .decoder
        .decode(&block, |fl| {
            fields.push((fl.name.to_vec(), fl.value.to_vec()));
        })
        .unwrap();
    assert!(fields.contains(&(b":path".to_vec(), b"/asset/a.css".to_vec())));
    block.clear();
    // Reserved (local): we can send the response, the client cannot send.
    p.conn
        .send_header_fields(a, &[(b":status", b"200")], false, &mut p.out)
        .unwrap();
    assert_eq!(p.conn.send_data(a, b"body{}", true, &mut p.out), Ok(6));
    let f = p.frames();
    assert_eq!(f[0].kind, kind::HEADERS);
    assert_eq!(f[0].stream, 2);
    assert!(f[1].kind == kind::DATA && f[1].has(flags::END_STREAM));
    // The parent can still be answered and promises after it ends are refused.
    p.conn
        .send_header_fields(StreamId::new(1), &[(b":status", b"200")], true, &mut p.out)
        .unwrap();
    assert_eq!(
        promise(&mut p, 1, "/asset/c.css"),
        Err(SendError::StreamClosed(StreamId::new(1)))
    );
}

#[test]
fn server_never_pushes_when_the_client_disabled_push() {
    // RFC 9113 §6.5.2: "An endpoint MUST NOT send a PUSH_PROMISE frame if it
    // receives this parameter set to a value of 0".
    let mut p = server(&[(setting::ENABLE_PUSH, 0)]);
    assert!(!p.conn.can_push());
    assert_eq!(
        promise(&mut p, 1, "/asset/a.css"),
        Err(SendError::PushDisabled)
    );
    assert!(p.out.is_empty(), "nothing written");
}

#[test]
fn server_push_respects_the_clients_max_concurrent_streams() {
    let mut p = server(&[(setting::MAX_CONCURRENT_STREAMS, 1)]);
    promise(&mut p, 1, "/asset/a.css").unwrap();
    assert!(!p.conn.can_push());
    assert_eq!(
        promise(&mut p, 1, "/asset/b.css"),
        Err(SendError::WouldBlock)
    );
    // Finishing the pushed stream frees the slot.
    let a = StreamId::new(2);
    p.conn
        .send_header_fields(a, &[(b":status", b"200")], true, &mut p.out)
        .unwrap();
    assert!(p.conn.can_push());
    assert_eq!(promise(&mut p, 1, "/asset/b.css").map(StreamId::get), Ok(4));
}

#[test]
fn rst_stream_on_a_promised_stream_cancels_it() {
    let mut p = server(&[]);
    let a = promise(&mut p, 1, "/asset/a.css").unwrap();
    p.conn
        .send_header_fields(a, &[(b":status", b"200")], false, &mut p.out)
        .unwrap();
    p.frames();
    let mut b = Vec::new();
    t::rst_stream(&mut b, 2, ErrorCode::CANCEL.0);
    p.feed(&b).unwrap();
    assert!(p
        .rec
        .events
        .contains(&Event::Reset(2, ErrorCode::CANCEL, true)));
    assert!(!p.conn.can_send(a));
    assert_eq!(
        p.conn.send_data(a, b"x", true, &mut p.out),
        Err(SendError::StreamClosed(a))
    );
    assert!(p.out.is_empty());
}

#[test]
fn a_client_cannot_push() {
    let mut c = Connection::new(Role::Client, LocalSettings::client(), Limits::new());
    let mut out = Vec::new();
    let r = c.send_push_promise_fields(StreamId::new(1), &[], &mut out);
    assert_eq!(r, Err(SendError::WrongRole));
}

/// A client after the handshake, with one request open on stream 1.
fn client(enable_push: bool) -> P {
    let local = LocalSettings {
        enable_push,
        ..LocalSettings::client()
    };
    let mut p = P {
        conn: Connection::new(Role::Client, local, Limits::new()),
        peer: TestPeer::new(),
        out: Vec::new(),
        rec: Recorder::default(),
    };
    p.conn.start(&mut p.out);
    let f = p.frames();
    let v = u32::from(enable_push);
    assert!(f[0].settings().contains(&(setting::ENABLE_PUSH, v)));
    let mut b = Vec::new();
    t::settings(&mut b, &[]);
    t::settings_ack(&mut b);
    p.feed(&b).unwrap();
    let fields: [(&[u8], &[u8]); 4] = [
        (b":method", b"GET"),
        (b":scheme", b"http"),
        (b":path", b"/page"),
        (b":authority", b"localhost"),
    ];
    p.conn
        .send_request(
            |enc, buf| enc.encode(fields.iter().copied(), buf),
            true,
            &mut p.out,
        )
        .unwrap();
    p.frames();
    p.rec.events.clear();
    p
}

#[test]
fn client_accepting_push_gets_the_promised_request_and_response() {
    let mut p = client(true);
    let mut b = Vec::new();
    let req = p.peer.request_block("GET", "/asset/a.css", &[]);
    t::push_promise(&mut b, 1, 2, &req);
    let resp = p.peer.response_block(200, &[("content-length", "6")]);
    t::headers(&mut b, 2, &resp, false);
    t::data(&mut b, 2, b"body{}", true);
    p.feed(&b).unwrap();
    let ev = &p.rec.events;
    assert!(ev.contains(&Event::PromisedHeader(
        2,
        ":path".into(),
        "/asset/a.css".into()
    )));
    assert!(ev.contains(&Event::PushPromise(1, 2)));
    assert_eq!(p.rec.body(2), (b"body{}".to_vec(), true));
    assert_eq!(p.rec.done(2)[0].status, Some(200));
    // The pushed stream is closed now: a second HEADERS on it is an error.
    assert_eq!(p.conn.active_streams(), 1, "only the request");
}

#[test]
fn client_cancels_a_push_with_rst_stream() {
    let mut p = client(true);
    let mut b = Vec::new();
    let req = p.peer.request_block("GET", "/asset/a.css", &[]);
    t::push_promise(&mut b, 1, 2, &req);
    p.feed(&b).unwrap();
    assert!(p
        .conn
        .reset(StreamId::new(2), ErrorCode::CANCEL, &mut p.out));
    let f = p.frames();
    assert!(f[0].kind == kind::RST_STREAM && f[0].stream == 2);
    // Frames already in flight on it are ignored.
    let mut b = Vec::new();
    let resp = p.peer.response_block(200, &[]);
    t::headers(&mut b, 2, &resp, false);
    t::data(&mut b, 2, b"late", true);
    p.feed(&b).unwrap();
    assert_eq!(p.rec.body(2).0, b"");
}

#[test]
fn client_refusing_push_treats_a_push_promise_as_a_connection_error() {
    // RFC 9113 §6.5.2 / §8.4: PROTOCOL_ERROR after SETTINGS_ENABLE_PUSH = 0.
    let mut p = client(false);
    let mut b = Vec::new();
    let req = p.peer.request_block("GET", "/asset/a.css", &[]);
    t::push_promise(&mut b, 1, 2, &req);
    let e = p.feed(&b).unwrap_err();
    assert_eq!(e.code(), ErrorCode::PROTOCOL_ERROR);
    let f = p.frames();
    assert!(f.iter().any(|f| f.kind == kind::GOAWAY));
    assert!(!p
        .rec
        .events
        .iter()
        .any(|e| matches!(e, Event::PushPromise(..))));
}

#[test]
fn client_rejects_illegal_promises() {
    // RFC 9113 §6.6: the promised id must be new.
    let mut p = client(true);
    let mut b = Vec::new();
    let req = p.peer.request_block("GET", "/a", &[]);
    t::push_promise(&mut b, 1, 4, &req);
    p.feed(&b).unwrap();
    let mut b = Vec::new();
    let req = p.peer.request_block("GET", "/b", &[]);
    t::push_promise(&mut b, 1, 2, &req);
    assert_eq!(p.feed(&b).unwrap_err().code(), ErrorCode::PROTOCOL_ERROR);
    // RFC 9113 §6.6: only on an open client stream.
    let mut p = client(true);
    let mut b = Vec::new();
    let req = p.peer.request_block("GET", "/a", &[]);
    t::push_promise(&mut b, 3, 2, &req);
    assert_eq!(p.feed(&b).unwrap_err().code(), ErrorCode::PROTOCOL_ERROR);
    // RFC 9113 §8.4: an incomplete promised request is a stream error.
    let mut p = client(true);
    let mut b = Vec::new();
    let req = p.peer.block(&[(":method", "GET")]);
    t::push_promise(&mut b, 1, 2, &req);
    p.feed(&b).unwrap();
    let f = p.frames();
    assert!(f[0].kind == kind::RST_STREAM && f[0].stream == 2);
    assert_eq!(f[0].error_code(), Some(ErrorCode::PROTOCOL_ERROR));
}
