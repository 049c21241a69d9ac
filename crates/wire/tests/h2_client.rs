//! Client role against a scripted server: what the load generator relies on.

use h2lab_wire::frame::{flags, PREFACE};
use h2lab_wire::h2::testing::{
    self as t, kind, read_frames, setting, Event, RawFrame, Recorder, TestPeer,
};
use h2lab_wire::h2::{
    ConnError, Connection, ErrorCode, HeadersKind, Initiator, Limits, LocalSettings, Role,
    SendError, StreamId,
};
use h2lab_wire::hpack::RequestTemplate;

struct C<E = h2lab_wire::hpack::Encoder> {
    conn: Connection<E>,
    peer: TestPeer,
    out: Vec<u8>,
    rec: Recorder,
}

fn client() -> C {
    client_with(LocalSettings::client(), &[])
}

/// A client after the handshake with a server advertising `server`.
fn client_with(local: LocalSettings, server: &[(u16, u32)]) -> C {
    let conn = Connection::new(Role::Client, local, Limits::new());
    handshake(conn, server)
}

fn handshake<E: h2lab_wire::h2::HeaderEncoder>(conn: Connection<E>, server: &[(u16, u32)]) -> C<E> {
    let mut c = C {
        conn,
        peer: TestPeer::new(),
        out: Vec::new(),
        rec: Recorder::default(),
    };
    c.conn.start(&mut c.out);
    assert!(c.out.starts_with(PREFACE));
    let f = c.frames();
    assert_eq!(f[0].kind, kind::SETTINGS);
    // RFC 9113 §8.4: we disable push.
    assert!(f[0].settings().contains(&(setting::ENABLE_PUSH, 0)));
    let mut b = Vec::new();
    t::settings(&mut b, server);
    t::settings_ack(&mut b);
    c.feed(&b).unwrap();
    let f = c.frames();
    assert_eq!(f.len(), 1);
    assert!(f[0].kind == kind::SETTINGS && f[0].has(flags::ACK));
    c.rec.events.clear();
    c
}

impl<E: h2lab_wire::h2::HeaderEncoder> C<E> {
    fn feed(&mut self, b: &[u8]) -> Result<(), ConnError> {
        let n = self.conn.recv(b, &mut self.out, &mut self.rec)?;
        assert_eq!(n, b.len());
        Ok(())
    }

    fn frames(&mut self) -> Vec<RawFrame> {
        let f = read_frames(&self.out);
        self.out.clear();
        f
    }

    fn conn_error(&mut self, b: &[u8]) -> ErrorCode {
        let e = self.feed(b).expect_err("connection error");
        let f = self.frames();
        let g = f.iter().find(|f| f.kind == kind::GOAWAY).expect("GOAWAY");
        assert_eq!(g.error_code(), Some(e.code()));
        e.code()
    }

    fn stream_error(&mut self, b: &[u8], stream: u32) -> ErrorCode {
        self.feed(b).unwrap();
        let f = self.frames();
        let r: Vec<_> = f.iter().filter(|f| f.kind == kind::RST_STREAM).collect();
        assert_eq!(r.len(), 1, "{f:?}");
        assert_eq!(r[0].stream, stream);
        r[0].error_code().unwrap()
    }
}

impl C {
    fn get(&mut self, path: &str) -> StreamId {
        let fields = [
            (":method", "GET"),
            (":scheme", "https"),
            (":path", path),
            (":authority", "example.com"),
        ];
        self.conn
            .send_request(
                |enc, buf| {
                    enc.encode(
                        fields.iter().map(|(n, v)| (n.as_bytes(), v.as_bytes())),
                        buf,
                    )
                },
                true,
                &mut self.out,
            )
            .unwrap()
    }

    fn respond(&mut self, stream: u32, status: u16, extra: &[(&str, &str)], body: &[u8]) {
        let block = self.peer.response_block(status, extra);
        let mut b = Vec::new();
        t::headers(&mut b, stream, &block, body.is_empty());
        if !body.is_empty() {
            t::data(&mut b, stream, body, true);
        }
        self.feed(&b).unwrap();
    }
}

#[test]
fn handshake_advertises_local_settings_and_connection_window() {
    // h2load -w 16 -W 30 style settings.
    let local = LocalSettings {
        initial_window_size: (1 << 16) - 1 + 1,
        connection_window: (1 << 30) - 1,
        header_table_size: 8192,
        ..LocalSettings::client()
    };
    let mut c = Connection::new(Role::Client, local, Limits::new());
    let mut out = Vec::new();
    c.start(&mut out);
    c.start(&mut out); // idempotent
    assert_eq!(&out[..24], PREFACE);
    let f = read_frames(&out);
    assert_eq!(f.len(), 2);
    let s = f[0].settings();
    assert!(s.contains(&(setting::ENABLE_PUSH, 0)));
    assert!(s.contains(&(setting::INITIAL_WINDOW_SIZE, 65536)));
    assert!(s.contains(&(setting::HEADER_TABLE_SIZE, 8192)));
    assert_eq!(f[1].kind, kind::WINDOW_UPDATE);
    assert_eq!(
        (f[1].stream, f[1].increment()),
        (0, Some((1 << 30) - 1 - 65535))
    );
}

#[test]
fn request_and_response() {
    let mut c = client();
    let id = c.get("/index.html");
    assert_eq!(id, StreamId::new(1));
    assert_eq!(c.get("/b"), StreamId::new(3));
    let f = c.frames();
    let hdrs = c.peer.decode_headers(&f);
    assert_eq!(hdrs[0].0, 1);
    assert_eq!(hdrs[0].1[2], (":path".into(), "/index.html".into()));
    assert!(f[0].has(flags::END_STREAM | flags::END_HEADERS));
    assert_eq!(c.conn.active_streams(), 2);

    c.respond(
        1,
        200,
        &[("content-length", "5"), ("server", "x")],
        b"hello",
    );
    let d = c.rec.done(1);
    assert_eq!(d.len(), 1);
    assert_eq!(d[0].kind, HeadersKind::Response);
    assert_eq!(d[0].status, Some(200));
    assert_eq!(d[0].content_length, Some(5));
    assert!(!d[0].end_stream);
    assert_eq!(c.rec.headers(1)[0], (":status".into(), "200".into()));
    assert_eq!(c.rec.body(1), (b"hello".to_vec(), true));
    assert_eq!(c.conn.active_streams(), 1);
    // Nothing to send back for a small response.
    assert!(c.frames().is_empty());
}

#[test]
fn request_template_encoder() {
    let fields: [(&[u8], &[u8]); 3] = [
        (b":method", b"GET"),
        (b":scheme", b"http"),
        (b":authority", b"localhost:8080"),
    ];
    let paths: [&[u8]; 2] = [b"/a", b"/b"];
    let tpl = RequestTemplate::new(fields, paths, 4096).unwrap();
    let conn = Connection::with_encoder(Role::Client, LocalSettings::client(), Limits::new(), tpl);
    let mut c = handshake(conn, &[]);
    for i in 0..4 {
        c.conn
            .send_request(
                |tpl, buf| {
                    tpl.encode_next(i, buf);
                },
                true,
                &mut c.out,
            )
            .unwrap();
    }
    // The peer lowers its table to 0: the next block starts with a size update.
    let mut b = Vec::new();
    t::settings(&mut b, &[(setting::HEADER_TABLE_SIZE, 0)]);
    c.feed(&b).unwrap();
    c.conn
        .send_request(
            |tpl, buf| {
                tpl.encode_next(4, buf);
            },
            true,
            &mut c.out,
        )
        .unwrap();
    let f = c.frames();
    let hdrs = c.peer.decode_headers(&f);
    assert_eq!(hdrs.len(), 5);
    for (i, (id, fl)) in hdrs.iter().enumerate() {
        assert_eq!(*id, 2 * i as u32 + 1);
        let path = if i % 2 == 0 { "/a" } else { "/b" };
        assert!(fl.contains(&(":path".into(), path.into())), "{fl:?}");
    }
    let last = f.iter().rfind(|f| f.kind == kind::HEADERS).unwrap();
    assert_eq!(
        last.payload[0] & 0xe0,
        0x20,
        "starts with a dynamic table size update"
    );
    assert_eq!(c.peer.decoder.table_size(), 0);
}

#[test]
fn header_table_size_reaches_the_encoder() {
    let mut c = client();
    let mut b = Vec::new();
    t::settings(&mut b, &[(setting::HEADER_TABLE_SIZE, 0)]);
    c.feed(&b).unwrap();
    c.frames();
    c.get("/x");
    let f = c.frames();
    assert_eq!(f[0].payload[0], 0x20, "size update to 0 first");
    // The encoder cap (h2load --encoder-header-table-size) bounds a raise.
    let local = LocalSettings {
        encoder_table_size: 512,
        ..LocalSettings::client()
    };
    let mut c = client_with(local, &[(setting::HEADER_TABLE_SIZE, 65536)]);
    c.get("/x");
    let f = c.frames();
    // 512 = 0x3f 0xe1 0x03 as a 5-bit prefix integer.
    assert_eq!(&f[0].payload[..3], &[0x3f, 0xe1, 0x03]);
}

#[test]
fn large_response_completes_with_batched_window_updates() {
    let mut c = client();
    let id = c.get("/big").get();
    c.frames();
    let block = c.peer.response_block(200, &[]);
    let mut b = Vec::new();
    t::headers(&mut b, id, &block, false);
    c.feed(&b).unwrap();
    // Play a compliant server: send while both windows allow.
    let total = 10 * 1024 * 1024;
    let (mut conn_win, mut stream_win, mut sent) = (65_535i64, 65_535i64, 0usize);
    let mut updates = 0;
    while sent < total {
        let n = (total - sent)
            .min(16_384)
            .min(conn_win as usize)
            .min(stream_win as usize);
        assert!(n > 0, "stalled at {sent}");
        let mut b = Vec::new();
        t::data(&mut b, id, &vec![0xab; n], sent + n == total);
        c.feed(&b).unwrap();
        sent += n;
        conn_win -= n as i64;
        stream_win -= n as i64;
        for f in c.frames() {
            assert_eq!(f.kind, kind::WINDOW_UPDATE);
            updates += 1;
            if f.stream == 0 {
                conn_win += i64::from(f.increment().unwrap());
            } else {
                stream_win += i64::from(f.increment().unwrap());
            }
        }
    }
    let (body, end) = c.rec.body(id);
    assert_eq!(body.len(), total);
    assert!(end);
    assert!(updates < 2 * total / 32_767 + 2, "batched: {updates}");
    assert_eq!(c.conn.active_streams(), 0);
}

#[test]
fn max_concurrent_streams_limits_requests() {
    let mut c = client_with(
        LocalSettings::client(),
        &[(setting::MAX_CONCURRENT_STREAMS, 2)],
    );
    assert_eq!(c.conn.peer_settings().max_concurrent_streams, Some(2));
    c.get("/1");
    c.get("/2");
    assert!(!c.conn.can_open_stream());
    assert_eq!(
        c.conn.send_request(|_, _| {}, true, &mut c.out),
        Err(SendError::WouldBlock)
    );
    c.respond(1, 200, &[], b"");
    assert!(c.conn.can_open_stream());
    assert_eq!(c.get("/3"), StreamId::new(5));
    // Lowering the limit below the open count blocks until streams finish.
    let mut b = Vec::new();
    t::settings(&mut b, &[(setting::MAX_CONCURRENT_STREAMS, 1)]);
    c.feed(&b).unwrap();
    assert!(!c.conn.can_open_stream());
}

#[test]
fn goaway_refuses_streams_above_last_id() {
    let mut c = client();
    for p in ["/1", "/2", "/3"] {
        c.get(p);
    }
    let mut b = Vec::new();
    t::goaway(&mut b, 3, 0, b"shutdown");
    c.feed(&b).unwrap();
    assert_eq!(
        c.rec.events,
        vec![
            Event::GoAway(3, ErrorCode::NO_ERROR, b"shutdown".to_vec()),
            Event::Reset(5, ErrorCode::REFUSED_STREAM, true),
        ]
    );
    assert_eq!(c.conn.goaway_received(), Some(StreamId::new(3)));
    assert!(!c.conn.can_open_stream());
    assert_eq!(
        c.conn.send_request(|_, _| {}, true, &mut c.out),
        Err(SendError::GoingAway)
    );
    assert!(!c.conn.is_finished());
    c.respond(1, 200, &[], b"a");
    c.respond(3, 200, &[], b"b");
    assert!(c.conn.is_finished());
    assert_eq!(c.conn.error(), None);
    // A GOAWAY with an error code is reported as a remote error.
    let mut c = client();
    let mut b = Vec::new();
    t::goaway(&mut b, 0, 2, b"");
    c.feed(&b).unwrap();
    let e = c.conn.error().unwrap();
    assert_eq!(
        (e.initiator, e.code()),
        (Initiator::Remote, ErrorCode::INTERNAL_ERROR)
    );
}

#[test]
fn rst_stream_from_server() {
    let mut c = client();
    c.get("/1");
    c.frames();
    let mut b = Vec::new();
    t::rst_stream(&mut b, 1, ErrorCode::INTERNAL_ERROR.0);
    c.feed(&b).unwrap();
    assert_eq!(c.rec.resets(1), vec![(ErrorCode::INTERNAL_ERROR, true)]);
    assert_eq!(c.conn.active_streams(), 0);
    assert!(
        c.frames().is_empty(),
        "no RST_STREAM in response to RST_STREAM"
    );
    // DATA after the peer's reset: STREAM_CLOSED.
    let mut b = Vec::new();
    t::data(&mut b, 1, b"late", true);
    assert_eq!(c.stream_error(&b, 1), ErrorCode::STREAM_CLOSED);
}

#[test]
fn cancel_ignores_late_frames_but_keeps_windows() {
    let mut c = client();
    let id = c.get("/1");
    c.frames();
    assert!(c.conn.reset(id, ErrorCode::CANCEL, &mut c.out));
    assert!(!c.conn.reset(id, ErrorCode::CANCEL, &mut c.out));
    let f = c.frames();
    assert_eq!((f.len(), f[0].error_code()), (1, Some(ErrorCode::CANCEL)));
    // The server had already answered: all ignored, HPACK kept in sync.
    let mut b = Vec::new();
    let block = c.peer.response_block(200, &[("x-a", "b")]);
    t::headers(&mut b, 1, &block, false);
    for _ in 0..4 {
        t::data(&mut b, 1, &[0; 16_000], false);
    }
    c.feed(&b).unwrap();
    assert!(c.rec.events.is_empty());
    let f = c.frames();
    assert!(
        f.iter()
            .all(|f| f.kind == kind::WINDOW_UPDATE && f.stream == 0),
        "{f:?}"
    );
    assert!(!f.is_empty(), "connection window returned");
    c.get("/2");
    c.respond(3, 200, &[("x-a", "b")], b"ok");
    assert_eq!(c.rec.headers(3)[1], ("x-a".into(), "b".into()));
}

#[test]
fn zero_window_then_window_update() {
    let mut c = client_with(
        LocalSettings::client(),
        &[(setting::INITIAL_WINDOW_SIZE, 0)],
    );
    let id = c
        .conn
        .send_request(
            |enc, buf| {
                enc.encode(
                    [
                        (&b":method"[..], &b"POST"[..]),
                        (b":scheme", b"http"),
                        (b":path", b"/upload"),
                        (b":authority", b"h"),
                    ],
                    buf,
                )
            },
            false,
            &mut c.out,
        )
        .unwrap();
    assert_eq!(c.conn.send_data(id, b"payload", true, &mut c.out), Ok(0));
    assert_eq!(c.conn.send_capacity(id), 0);
    c.frames();
    let mut b = Vec::new();
    t::window_update(&mut b, id.get(), 3);
    c.feed(&b).unwrap();
    assert_eq!(c.rec.events, vec![Event::WindowOpened(Some(1))]);
    assert_eq!(c.conn.send_data(id, b"payload", true, &mut c.out), Ok(3));
    // Raising INITIAL_WINDOW_SIZE opens every stream.
    let mut b = Vec::new();
    t::settings(&mut b, &[(setting::INITIAL_WINDOW_SIZE, 100)]);
    c.feed(&b).unwrap();
    assert!(c
        .rec
        .events
        .ends_with(&[Event::SettingsChanged, Event::WindowOpened(None)]));
    assert_eq!(c.conn.send_data(id, b"load", true, &mut c.out), Ok(4));
    assert!(!c.conn.can_send(id));
    let f = c.frames();
    let d: Vec<_> = f.iter().filter(|f| f.kind == kind::DATA).collect();
    assert_eq!(d[0].payload, b"pay");
    assert_eq!(d[1].payload, b"load");
    assert!(d[1].has(flags::END_STREAM));
    // Empty DATA with END_STREAM is always allowed.
    let id = c.get("/x");
    let _ = id;
}

#[test]
fn max_frame_size_splits_data_and_headers() {
    let mut c = client_with(
        LocalSettings::client(),
        &[(setting::MAX_FRAME_SIZE, 20_000)],
    );
    let cookie = "#".repeat(50_000); // longer when Huffman coded: sent raw
    let fields = [
        (":method", "POST"),
        (":scheme", "http"),
        (":path", "/"),
        (":authority", "h"),
        ("cookie", cookie.as_str()),
    ];
    let id = c
        .conn
        .send_request(
            |enc, buf| {
                enc.encode(
                    fields.iter().map(|(n, v)| (n.as_bytes(), v.as_bytes())),
                    buf,
                )
            },
            false,
            &mut c.out,
        )
        .unwrap();
    let mut b = Vec::new();
    t::window_update(&mut b, 0, 100_000);
    t::window_update(&mut b, 1, 100_000);
    c.feed(&b).unwrap();
    assert_eq!(
        c.conn.send_data(id, &[1; 50_000], true, &mut c.out),
        Ok(50_000)
    );
    let f = c.frames();
    let kinds: Vec<(u8, usize)> = f.iter().map(|f| (f.kind, f.payload.len())).collect();
    assert_eq!(kinds[0].0, kind::HEADERS);
    assert_eq!(kinds[0].1, 20_000);
    assert_eq!(kinds[1], (kind::CONTINUATION, 20_000));
    assert_eq!(kinds[2].0, kind::CONTINUATION);
    assert!(f[2].has(flags::END_HEADERS) && !f[0].has(flags::END_STREAM));
    let data: Vec<usize> = f
        .iter()
        .filter(|f| f.kind == kind::DATA)
        .map(|f| f.payload.len())
        .collect();
    assert_eq!(data, vec![20_000, 20_000, 10_000]);
    let hdrs = c.peer.decode_headers(&f);
    assert_eq!(hdrs[0].1[4].1.len(), 50_000);
}

#[test]
fn push_is_refused() {
    let mut c = client();
    c.get("/");
    let mut b = Vec::new();
    let block = c.peer.request_block("GET", "/style.css", &[]);
    t::push_promise(&mut b, 1, 2, &block);
    assert_eq!(c.conn_error(&b), ErrorCode::PROTOCOL_ERROR);

    let mut c = client();
    let mut b = Vec::new();
    t::settings(&mut b, &[(setting::ENABLE_PUSH, 1)]);
    assert_eq!(c.conn_error(&b), ErrorCode::PROTOCOL_ERROR);
}

#[test]
fn informational_trailers_and_malformed_responses() {
    let mut c = client();
    c.get("/");
    let mut b = Vec::new();
    let b100 = c.peer.response_block(103, &[("link", "</a.css>")]);
    t::headers(&mut b, 1, &b100, false);
    let b200 = c.peer.response_block(200, &[]);
    t::headers(&mut b, 1, &b200, false);
    t::data(&mut b, 1, b"body", false);
    let tr = c.peer.block(&[("grpc-status", "0")]);
    t::headers(&mut b, 1, &tr, true);
    c.feed(&b).unwrap();
    let kinds: Vec<HeadersKind> = c.rec.done(1).iter().map(|d| d.kind).collect();
    assert_eq!(
        kinds,
        vec![
            HeadersKind::Informational,
            HeadersKind::Response,
            HeadersKind::Trailers
        ]
    );
    assert_eq!(c.conn.active_streams(), 0);

    type Case = (
        &'static [(&'static str, &'static str)],
        bool,
        Option<&'static [u8]>,
    );
    let cases: &[Case] = &[
        // No :status.
        (&[("server", "x")], true, None),
        // Request pseudo-header in a response.
        (&[(":status", "200"), (":path", "/")], true, None),
        // Connection-specific field.
        (
            &[(":status", "200"), ("transfer-encoding", "chunked")],
            false,
            Some(b"x"),
        ),
        // 1xx with END_STREAM; 101.
        (&[(":status", "100")], true, None),
        (&[(":status", "101")], false, None),
        // content-length mismatch.
        (
            &[(":status", "200"), ("content-length", "3")],
            false,
            Some(b"toolong"),
        ),
    ];
    for (fields, end, body) in cases {
        let mut c = client();
        c.get("/");
        c.frames();
        let block = c.peer.block(fields);
        let mut b = Vec::new();
        t::headers(&mut b, 1, &block, *end);
        if let Some(d) = body {
            t::data(&mut b, 1, d, true);
        }
        assert_eq!(
            c.stream_error(&b, 1),
            ErrorCode::PROTOCOL_ERROR,
            "{fields:?}"
        );
        assert_eq!(c.rec.resets(1), vec![(ErrorCode::PROTOCOL_ERROR, false)]);
    }
    // DATA before the response HEADERS.
    let mut c = client();
    c.get("/");
    c.frames();
    let mut b = Vec::new();
    t::data(&mut b, 1, b"x", true);
    assert_eq!(c.stream_error(&b, 1), ErrorCode::PROTOCOL_ERROR);
    // A response to HEAD, 204 and 304 may carry content-length without DATA.
    for status in [200, 204, 304] {
        let mut c = client();
        c.get("/");
        c.respond(1, status, &[("content-length", "1234")], b"");
        assert!(c.rec.resets(1).is_empty());
        assert!(c.rec.done(1)[0].end_stream);
    }
}

#[test]
fn server_frames_on_streams_we_did_not_open() {
    // HEADERS on an even (server-initiated) stream: push is disabled.
    let mut c = client();
    let block = c.peer.response_block(200, &[]);
    let mut b = Vec::new();
    t::headers(&mut b, 2, &block, true);
    assert_eq!(c.conn_error(&b), ErrorCode::PROTOCOL_ERROR);
    // HEADERS / DATA on an odd stream we have not opened yet.
    let mut c = client();
    let block = c.peer.response_block(200, &[]);
    let mut b = Vec::new();
    t::headers(&mut b, 1, &block, true);
    assert_eq!(c.conn_error(&b), ErrorCode::PROTOCOL_ERROR);
    let mut c = client();
    let mut b = Vec::new();
    t::data(&mut b, 3, b"x", true);
    assert_eq!(c.conn_error(&b), ErrorCode::PROTOCOL_ERROR);
    // A second response on a finished stream: STREAM_CLOSED.
    let mut c = client();
    c.get("/");
    c.respond(1, 200, &[], b"x");
    let block = c.peer.response_block(200, &[]);
    let mut b = Vec::new();
    t::headers(&mut b, 1, &block, true);
    assert_eq!(c.conn_error(&b), ErrorCode::STREAM_CLOSED);
}

#[test]
fn ping_and_pong() {
    let mut c = client();
    c.conn.ping(*b"rtt-0001", &mut c.out);
    let f = c.frames();
    assert!(f[0].kind == kind::PING && !f[0].has(flags::ACK));
    let mut b = Vec::new();
    t::ping(&mut b, true, *b"rtt-0001");
    t::ping(&mut b, false, *b"server!!");
    c.feed(&b).unwrap();
    assert_eq!(c.rec.events, vec![Event::PingAck(*b"rtt-0001")]);
    let f = c.frames();
    assert_eq!((f.len(), f[0].payload.as_slice()), (1, &b"server!!"[..]));
}

#[test]
fn response_trickled_byte_by_byte() {
    let mut c = client();
    c.get("/");
    c.frames();
    let block = c.peer.response_block(200, &[("content-length", "11")]);
    let mut b = Vec::new();
    t::headers(&mut b, 1, &block, false);
    t::data(&mut b, 1, b"hello ", false);
    t::data_padded(&mut b, 1, b"world", 3, true);
    // Connection closed mid-frame: the tail is never consumed.
    let mut pending = Vec::new();
    for &byte in &b[..b.len() - 1] {
        pending.push(byte);
        let n = c.conn.recv(&pending, &mut c.out, &mut c.rec).unwrap();
        pending.drain(..n);
    }
    assert!(!pending.is_empty());
    assert_eq!(c.rec.body(1), (b"hello ".to_vec(), false));
    pending.push(*b.last().unwrap());
    let n = c.conn.recv(&pending, &mut c.out, &mut c.rec).unwrap();
    assert_eq!(n, pending.len());
    assert_eq!(c.rec.body(1), (b"hello world".to_vec(), true));
}

#[test]
fn stream_ids_and_send_errors() {
    let mut c = client();
    let id = c.get("/");
    assert_eq!(
        c.conn.send_data(id, b"x", false, &mut c.out),
        Err(SendError::StreamClosed(id))
    );
    assert_eq!(
        c.conn
            .send_headers(StreamId::new(9), |_, _| {}, true, &mut c.out),
        Err(SendError::StreamClosed(StreamId::new(9)))
    );
    // After a local connection error nothing can be sent.
    let mut b = Vec::new();
    t::data(&mut b, 0, b"x", true);
    c.feed(&b).unwrap_err();
    assert_eq!(
        c.conn.send_request(|_, _| {}, true, &mut c.out),
        Err(SendError::ConnectionClosed)
    );
    assert_eq!(c.conn.error().unwrap().initiator, Initiator::Local);
    assert!(c.conn.is_finished());
}

#[test]
fn late_response_to_cancelled_stream_after_many_other_streams() {
    let mut c = client();
    let cancelled = c.get("/slow");
    assert!(c.conn.reset(cancelled, ErrorCode::CANCEL, &mut c.out));
    for i in 0..300 {
        let id = c.get("/fast").get();
        assert_eq!(id, 3 + 2 * i);
        c.respond(id, 200, &[], b"ok");
    }
    c.frames();
    // The slow response finally arrives: ignored, the connection lives on.
    c.respond(cancelled.get(), 200, &[], b"late");
    assert!(c.rec.done(1).is_empty());
    assert!(c
        .frames()
        .iter()
        .all(|f| f.kind != kind::GOAWAY && f.kind != kind::RST_STREAM));
    assert!(c.conn.can_open_stream());
}

#[test]
fn sink_can_be_a_trait_object() {
    let mut c = client();
    c.get("/");
    let block = c.peer.response_block(200, &[]);
    let mut b = Vec::new();
    t::headers(&mut b, 1, &block, true);
    let mut rec = Recorder::default();
    let sink: &mut dyn h2lab_wire::h2::Events = &mut rec;
    assert_eq!(c.conn.recv(&b, &mut c.out, sink), Ok(b.len()));
    assert_eq!(rec.done(1)[0].status, Some(200));
}

#[test]
fn streams_before_server_settings_are_capped() {
    let limits = Limits {
        max_streams_before_settings: 3,
        ..Limits::new()
    };
    let mut c = Connection::new(Role::Client, LocalSettings::client(), limits);
    let mut out = Vec::new();
    let get = |c: &mut Connection, out: &mut Vec<u8>| {
        c.send_request(
            |enc, buf| enc.encode([(&b":method"[..], &b"GET"[..])], buf),
            true,
            out,
        )
    };
    for _ in 0..3 {
        get(&mut c, &mut out).unwrap();
    }
    assert_eq!(get(&mut c, &mut out), Err(SendError::WouldBlock));
    // The server's SETTINGS (no limit) lift the cap.
    let mut b = Vec::new();
    t::settings(&mut b, &[]);
    c.recv(&b, &mut out, &mut Recorder::default()).unwrap();
    assert!(get(&mut c, &mut out).is_ok());
}

#[test]
fn manual_stream_windows_are_returned_only_when_released() {
    let mut c = client();
    c.conn.set_manual_stream_windows(true);
    let id = c.get("/big");
    c.frames();
    let block = c.peer.response_block(200, &[]);
    let mut b = Vec::new();
    t::headers(&mut b, id.get(), &block, false);
    // The whole default stream window (65,535), padded frames included.
    t::data(&mut b, id.get(), &[1; 16_384], false);
    t::data(&mut b, id.get(), &[2; 16_384], false);
    t::data_padded(&mut b, id.get(), &[3; 16_128], 255, false);
    t::data(&mut b, id.get(), &[4; 16_383], false);
    c.feed(&b).unwrap();
    // The connection window is returned; the stream's is not: no more DATA may come on it.
    let f = c.frames();
    assert!(
        f.iter().all(|f| f.stream == 0),
        "no stream WINDOW_UPDATE before release: {f:?}"
    );
    let mut b = Vec::new();
    t::data(&mut b, id.get(), &[5; 1], false);
    assert_eq!(c.stream_error(&b, id.get()), ErrorCode::FLOW_CONTROL_ERROR);

    // Another stream: released bytes come back, batched at half the window.
    let id = c.get("/again");
    c.frames();
    let block = c.peer.response_block(200, &[]);
    let mut b = Vec::new();
    t::headers(&mut b, id.get(), &block, false);
    for n in [16_384, 16_384, 7_232] {
        t::data(&mut b, id.get(), &vec![1; n], false);
    }
    c.feed(&b).unwrap();
    c.frames();
    c.conn.release_stream_window(id, 10_000, &mut c.out);
    assert!(c.frames().is_empty(), "below the threshold");
    c.conn.release_stream_window(id, 30_000, &mut c.out);
    let f = c.frames();
    assert_eq!(f.len(), 1, "{f:?}");
    assert_eq!((f[0].kind, f[0].stream), (kind::WINDOW_UPDATE, id.get()));
    assert_eq!(f[0].increment(), Some(40_000));
    let mut b = Vec::new();
    for (n, end) in [(16_384, false), (16_384, false), (7_232, true)] {
        t::data(&mut b, id.get(), &vec![2; n], end);
    }
    c.feed(&b).unwrap();
    assert_eq!(c.rec.body(id.get()).0.len(), 80_000);
}
