//! Server defences: rapid reset, CONTINUATION flood, HPACK bomb, control
//! frame floods, concurrency.

use h2lab_wire::h2::testing::{self as t, kind, read_frames, RawFrame, Recorder, TestPeer};
use h2lab_wire::h2::{ConnError, Connection, ErrorCode, Limits, LocalSettings, Role};

struct S {
    conn: Connection,
    peer: TestPeer,
    out: Vec<u8>,
    rec: Recorder,
}

fn server(local: LocalSettings, limits: Limits) -> S {
    let mut s = S {
        conn: Connection::new(Role::Server, local, limits),
        peer: TestPeer::new(),
        out: Vec::new(),
        rec: Recorder::default(),
    };
    let mut b = Vec::new();
    t::preface(&mut b);
    t::settings(&mut b, &[]);
    t::settings_ack(&mut b);
    s.feed(&b).unwrap();
    s.out.clear();
    s
}

impl S {
    fn feed(&mut self, b: &[u8]) -> Result<(), ConnError> {
        self.conn.recv(b, &mut self.out, &mut self.rec).map(|_| ())
    }
    fn frames(&mut self) -> Vec<RawFrame> {
        let f = read_frames(&self.out);
        self.out.clear();
        f
    }
    fn request(&mut self, b: &mut Vec<u8>, id: u32, end_stream: bool) {
        let block = self.peer.request_block("GET", "/", &[]);
        t::headers(b, id, &block, end_stream);
    }
    fn calm(&mut self, e: ConnError) {
        assert_eq!(e.code(), ErrorCode::ENHANCE_YOUR_CALM, "{e}");
        let f = self.frames();
        let g = f.last().unwrap();
        assert_eq!(
            (g.kind, g.error_code()),
            (kind::GOAWAY, Some(ErrorCode::ENHANCE_YOUR_CALM))
        );
    }
}

#[test]
fn rapid_reset_is_stopped() {
    let mut s = server(LocalSettings::server(), Limits::new());
    let mut id = 1;
    let err = loop {
        let mut b = Vec::new();
        s.request(&mut b, id, true);
        t::rst_stream(&mut b, id, ErrorCode::CANCEL.0);
        if let Err(e) = s.feed(&b) {
            break e;
        }
        id += 2;
        assert!(id < 2000, "rapid reset never detected");
    };
    s.calm(err);
    assert!(id > 200, "budget allows some cancellations ({id})");
}

#[test]
fn occasional_cancellation_is_fine() {
    let mut s = server(LocalSettings::server(), Limits::new());
    for i in 0..20_000u32 {
        let id = 2 * i + 1;
        let mut b = Vec::new();
        s.request(&mut b, id, true);
        if i % 10 == 0 {
            t::rst_stream(&mut b, id, ErrorCode::CANCEL.0);
        }
        s.feed(&b).unwrap();
        if i % 10 != 0 {
            s.conn
                .send_header_fields(id.into_stream(), &[(b":status", b"204")], true, &mut s.out)
                .unwrap();
        }
        s.out.clear();
    }
    // Resets of streams we already answered do not count.
    let mut s = server(LocalSettings::server(), Limits::new());
    for i in 0..5_000u32 {
        let id = 2 * i + 1;
        let mut b = Vec::new();
        s.request(&mut b, id, false);
        s.feed(&b).unwrap();
        s.conn
            .send_header_fields(id.into_stream(), &[(b":status", b"200")], true, &mut s.out)
            .unwrap();
        let mut b = Vec::new();
        t::rst_stream(&mut b, id, ErrorCode::NO_ERROR.0);
        s.feed(&b).unwrap();
        s.out.clear();
    }
}

trait IntoStream {
    fn into_stream(self) -> h2lab_wire::h2::StreamId;
}
impl IntoStream for u32 {
    fn into_stream(self) -> h2lab_wire::h2::StreamId {
        h2lab_wire::h2::StreamId::new(self)
    }
}

#[test]
fn continuation_flood() {
    // Many empty CONTINUATION frames.
    let mut s = server(LocalSettings::server(), Limits::new());
    let block = s.peer.request_block("GET", "/", &[]);
    let mut b = Vec::new();
    t::headers_flags(&mut b, 1, &block, true, false);
    for _ in 0..1000 {
        t::continuation(&mut b, 1, &[], false);
    }
    let e = s.feed(&b).unwrap_err();
    s.calm(e);
    // A block growing past the byte limit.
    let limits = Limits {
        max_header_block_bytes: 10_000,
        ..Limits::new()
    };
    let mut s = server(LocalSettings::server(), limits);
    let mut b = Vec::new();
    t::headers_flags(&mut b, 1, &block, true, false);
    for _ in 0..5 {
        t::continuation(
            &mut b,
            1,
            &t::literal_block(&[("x", &"y".repeat(100))]).repeat(30),
            false,
        );
    }
    let e = s.feed(&b).unwrap_err();
    s.calm(e);
}

#[test]
fn hpack_bomb_is_refused_and_connection_survives() {
    let local = LocalSettings {
        max_header_list_size: Some(16 * 1024),
        ..LocalSettings::server()
    };
    let mut s = server(local, Limits::new());
    // Insert one 4000-octet entry, then reference it (index 62) 4000 times:
    // 4 KB on the wire, 16 MB decoded. (Literal request fields keep the
    // test peer's own encoder out of the dynamic table.)
    let req = [(":method", "GET"), (":scheme", "http"), (":path", "/")];
    let mut block = t::literal_block(&req);
    block.extend([0x40, 0x05]);
    block.extend(b"x-big");
    block.extend([0x7f, 0xa1, 0x1e]); // length 4000 = 127 + 33 + (30 << 7)
    block.extend(std::iter::repeat_n(b'a', 4000));
    block.extend(std::iter::repeat_n(0xbe, 4000));
    let mut b = Vec::new();
    t::headers(&mut b, 1, &block, true);
    s.feed(&b).unwrap();
    let f = s.frames();
    assert_eq!(
        (f[0].kind, f[0].error_code()),
        (kind::RST_STREAM, Some(ErrorCode::REFUSED_STREAM))
    );
    assert!(!s.rec.request_done(1));
    let delivered = s
        .rec
        .headers(1)
        .iter()
        .map(|(n, v)| n.len() + v.len() + 32)
        .sum::<usize>();
    assert!(delivered <= 16 * 1024, "{delivered}");
    // The dynamic table is in sync: index 62 still means x-big.
    let mut block = t::literal_block(&req);
    block.push(0xbe);
    let mut b = Vec::new();
    t::headers(&mut b, 3, &block, true);
    s.feed(&b).unwrap();
    assert!(s.rec.request_done(3));
    assert_eq!(s.rec.headers(3).last().unwrap().0, "x-big");
}

#[test]
fn control_frame_floods() {
    type Build = fn(&mut Vec<u8>);
    let floods: [Build; 5] = [
        |b| t::ping(b, false, [0; 8]),
        |b| t::settings(b, &[]),
        |b| t::priority(b, 1, 0, false, 1),
        |b| t::raw_frame(b, 0x42, 0, 0, &[]),
        |b| t::data(b, 1, &[], false),
    ];
    for flood in floods {
        let mut s = server(LocalSettings::server(), Limits::new());
        let mut b = Vec::new();
        s.request(&mut b, 1, false);
        for _ in 0..5000 {
            flood(&mut b);
        }
        let e = s.feed(&b).unwrap_err();
        s.calm(e);
    }
    // The same frames interleaved with real work are fine.
    let mut s = server(LocalSettings::server(), Limits::new());
    for i in 0..500u32 {
        let mut b = Vec::new();
        for _ in 0..10 {
            t::ping(&mut b, false, [0; 8]);
            t::settings(&mut b, &[]);
        }
        s.request(&mut b, 2 * i + 1, true);
        s.feed(&b).unwrap();
        let id = (2 * i + 1).into_stream();
        s.conn
            .send_header_fields(id, &[(b":status", b"204")], true, &mut s.out)
            .unwrap();
        s.out.clear();
    }
}

#[test]
fn refused_streams_beyond_concurrency_limit() {
    let local = LocalSettings {
        max_concurrent_streams: Some(10),
        ..LocalSettings::server()
    };
    let mut s = server(local, Limits::new());
    let mut b = Vec::new();
    for i in 0..20 {
        s.request(&mut b, 2 * i + 1, true);
    }
    s.feed(&b).unwrap();
    let f = s.frames();
    let refused: Vec<u32> = f
        .iter()
        .filter(|f| f.error_code() == Some(ErrorCode::REFUSED_STREAM))
        .map(|f| f.stream)
        .collect();
    assert_eq!(refused, (10..20).map(|i| 2 * i + 1).collect::<Vec<_>>());
    assert_eq!(s.conn.active_streams(), 10);
    // Every request decoded (HPACK in sync), only the first 10 delivered.
    assert_eq!(
        (1..=39)
            .step_by(2)
            .filter(|&id| s.rec.request_done(id))
            .count(),
        10
    );
}
