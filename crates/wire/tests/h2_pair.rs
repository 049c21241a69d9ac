//! Our client against our server, in memory: requests with bodies both
//! ways, flow control with small windows, table-size and frame-size
//! settings, GOAWAY — both ends must agree on every byte.

use std::collections::BTreeMap;

use h2lab_wire::h2::testing::{Event, Recorder};
use h2lab_wire::h2::{
    Connection, ErrorCode, Events, HeadersKind, Limits, LocalSettings, Role, SendError, StreamId,
};
use proptest::prelude::*;

/// Pending body bytes per stream, sent as windows open.
#[derive(Default)]
struct Outbox {
    pending: BTreeMap<u32, (Vec<u8>, usize)>,
}

impl Outbox {
    fn push(&mut self, id: StreamId, body: Vec<u8>) {
        self.pending.insert(id.get(), (body, 0));
    }

    fn flush<E: h2lab_wire::h2::HeaderEncoder>(
        &mut self,
        c: &mut Connection<E>,
        out: &mut Vec<u8>,
    ) {
        let mut done = Vec::new();
        for (&id, (body, sent)) in self.pending.iter_mut() {
            let sid = StreamId::new(id);
            match c.send_data(sid, &body[*sent..], true, out) {
                Ok(n) => {
                    *sent += n;
                    if *sent == body.len() {
                        done.push(id);
                    }
                }
                // Reset by the peer (e.g. refused): nothing more to send.
                Err(SendError::StreamClosed(_)) => done.push(id),
                Err(e) => panic!("send_data {id}: {e}"),
            }
        }
        for id in done {
            self.pending.remove(&id);
        }
    }
}

struct Pair {
    client: Connection,
    server: Connection,
    c_out: Vec<u8>,
    s_out: Vec<u8>,
    c_rec: Recorder,
    s_rec: Recorder,
    c_box: Outbox,
    s_box: Outbox,
    /// Server: requests answered so far.
    answered: usize,
    response_len: usize,
}

impl Pair {
    fn new(c: LocalSettings, s: LocalSettings, response_len: usize) -> Pair {
        let mut p = Pair {
            client: Connection::new(Role::Client, c, Limits::new()),
            server: Connection::new(Role::Server, s, Limits::new()),
            c_out: Vec::new(),
            s_out: Vec::new(),
            c_rec: Recorder::default(),
            s_rec: Recorder::default(),
            c_box: Outbox::default(),
            s_box: Outbox::default(),
            answered: 0,
            response_len,
        };
        p.client.start(&mut p.c_out);
        p.server.start(&mut p.s_out);
        // Exchange SETTINGS first, as the requests depend on the server's
        // concurrency limit.
        p.pump(usize::MAX);
        p
    }

    /// Move bytes both ways (in chunks of `chunk`) until nothing moves;
    /// the server answers every completed request.
    fn pump(&mut self, chunk: usize) {
        for _ in 0..100_000 {
            let mut moved = false;
            for to_server in [true, false] {
                let (src, conn, rec) = if to_server {
                    (&mut self.c_out, &mut self.server, &mut self.s_rec)
                } else {
                    (&mut self.s_out, &mut self.client, &mut self.c_rec)
                };
                let mut buf = std::mem::take(src);
                let mut reply = Vec::new();
                let mut fed = 0;
                let mut pending = Vec::new();
                while fed < buf.len() {
                    let end = fed.saturating_add(chunk).min(buf.len());
                    pending.extend_from_slice(&buf[fed..end]);
                    fed = end;
                    let n = conn.recv(&pending, &mut reply, rec).unwrap();
                    pending.drain(..n);
                }
                assert!(pending.is_empty());
                moved |= !buf.is_empty();
                buf.clear();
                if to_server {
                    self.s_out.extend_from_slice(&reply);
                } else {
                    self.c_out.extend_from_slice(&reply);
                }
            }
            // Server application: answer finished requests.
            let finished: Vec<u32> = self
                .s_rec
                .events
                .iter()
                .filter_map(|e| match e {
                    Event::HeadersDone(id, d) if d.end_stream => Some(*id),
                    Event::Data(id, _, true) => Some(*id),
                    _ => None,
                })
                .collect();
            for id in finished.into_iter().skip(self.answered) {
                self.answered += 1;
                let sid = StreamId::new(id);
                let len = self.response_len.to_string();
                self.server
                    .send_header_fields(
                        sid,
                        &[(b":status", b"200"), (b"content-length", len.as_bytes())],
                        self.response_len == 0,
                        &mut self.s_out,
                    )
                    .unwrap();
                if self.response_len > 0 {
                    self.s_box
                        .push(sid, vec![(id % 251) as u8; self.response_len]);
                }
            }
            self.s_box.flush(&mut self.server, &mut self.s_out);
            self.c_box.flush(&mut self.client, &mut self.c_out);
            if !moved && self.c_out.is_empty() && self.s_out.is_empty() {
                return;
            }
        }
        panic!("no quiescence");
    }

    fn request(&mut self, path: &str, body: Option<Vec<u8>>) -> Result<StreamId, SendError> {
        let cl = body.as_ref().map(|b| b.len().to_string());
        let mut fields: Vec<(&[u8], &[u8])> = vec![
            (b":method", if body.is_some() { b"POST" } else { b"GET" }),
            (b":scheme", b"http"),
            (b":path", path.as_bytes()),
            (b":authority", b"localhost"),
        ];
        if let Some(cl) = &cl {
            fields.push((b"content-length", cl.as_bytes()));
        }
        let id = self.client.send_request(
            |enc, buf| enc.encode(fields.iter().copied(), buf),
            body.is_none(),
            &mut self.c_out,
        )?;
        if let Some(b) = body {
            self.c_box.push(id, b);
        }
        Ok(id)
    }
}

fn check_response(rec: &Recorder, id: u32, len: usize) {
    let done = rec.done(id);
    assert_eq!(done[0].kind, HeadersKind::Response);
    assert_eq!(done[0].status, Some(200));
    let (body, end) = rec.body(id);
    assert!(end || len == 0);
    assert_eq!(body.len(), len, "stream {id}");
    assert!(body.iter().all(|&b| b == (id % 251) as u8));
    assert!(rec.resets(id).is_empty());
}

#[test]
fn many_requests_small_windows() {
    let client = LocalSettings {
        initial_window_size: 1000,
        connection_window: 70_000,
        ..LocalSettings::client()
    };
    let server = LocalSettings {
        initial_window_size: 3000,
        max_concurrent_streams: Some(7),
        header_table_size: 256,
        ..LocalSettings::server()
    };
    let mut p = Pair::new(client, server, 20_000);
    p.pump(1000);
    let mut ids = Vec::new();
    let mut n = 0;
    while ids.len() < 60 {
        let body = (n % 3 == 0).then(|| vec![7u8; 10_000]);
        match p.request(&format!("/r/{n}"), body) {
            Ok(id) => {
                ids.push(id.get());
                n += 1;
            }
            Err(SendError::WouldBlock) => p.pump(777),
            Err(e) => panic!("{e}"),
        }
    }
    p.pump(4096);
    for &id in &ids {
        check_response(&p.c_rec, id, 20_000);
    }
    // The server saw every request body completely.
    for (i, &id) in ids.iter().enumerate() {
        let (body, end) = p.s_rec.body(id);
        assert!(end || i % 3 != 0);
        assert_eq!(body.len(), if i % 3 == 0 { 10_000 } else { 0 });
    }
    assert_eq!(p.client.active_streams(), 0);
    assert_eq!(p.server.active_streams(), 0);
}

#[test]
fn graceful_shutdown_mid_run() {
    let mut p = Pair::new(LocalSettings::client(), LocalSettings::server(), 100);
    for i in 0..5 {
        p.request(&format!("/{i}"), None).unwrap();
    }
    // Deliver the requests, then the server says GOAWAY before answering.
    let bytes = std::mem::take(&mut p.c_out);
    let mut reply = Vec::new();
    p.server.recv(&bytes, &mut reply, &mut p.s_rec).unwrap();
    p.server.goaway(ErrorCode::NO_ERROR, b"restart", &mut reply);
    p.s_out.extend_from_slice(&reply);
    // Requests opened after the GOAWAY was sent but before the client saw it.
    p.request("/late", None).unwrap();
    p.pump(512);
    for id in [1, 3, 5, 7, 9] {
        check_response(&p.c_rec, id, 100);
    }
    assert!(p
        .c_rec
        .events
        .contains(&Event::GoAway(9, ErrorCode::NO_ERROR, b"restart".to_vec())));
    assert_eq!(p.c_rec.resets(11), vec![(ErrorCode::REFUSED_STREAM, true)]);
    assert_eq!(p.request("/x", None), Err(SendError::GoingAway));
    assert!(p.client.is_finished() && p.server.is_finished());
}

struct Counter(usize);
impl Events for Counter {
    fn header(&mut self, _: StreamId, _: &[u8], _: &[u8]) {
        self.0 += 1;
    }
}

#[test]
fn header_table_changes_keep_both_ends_in_sync() {
    for size in [0u32, 64, 4096, 65536] {
        let server = LocalSettings {
            header_table_size: size,
            ..LocalSettings::server()
        };
        let mut p = Pair::new(LocalSettings::client(), server, 10);
        for i in 0..50 {
            p.request(&format!("/same/path/{}", i % 5), None).unwrap();
            if i % 7 == 0 {
                p.pump(333);
            }
        }
        p.pump(10_000);
        for id in (1..100).step_by(2) {
            check_response(&p.c_rec, id, 10);
        }
    }
    let _ = Counter(0);
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(96))]

    #[test]
    fn random_settings_and_chunking(
        c_win in 1u32..70_000,
        s_win in 1u32..70_000,
        frame in prop_oneof![Just(16_384u32), 16_384u32..100_000],
        table in prop_oneof![Just(0u32), Just(4096), 0u32..10_000],
        chunk in 1usize..5000,
        response_len in 0usize..50_000,
        posts in proptest::collection::vec(proptest::option::of(0usize..30_000), 1..12),
    ) {
        let client = LocalSettings {
            initial_window_size: c_win,
            max_frame_size: frame,
            header_table_size: table,
            ..LocalSettings::client()
        };
        let server = LocalSettings {
            initial_window_size: s_win,
            max_frame_size: frame,
            header_table_size: table,
            max_concurrent_streams: Some(3),
            ..LocalSettings::server()
        };
        let mut p = Pair::new(client, server, response_len);
        let mut ids = Vec::new();
        for (i, post) in posts.iter().enumerate() {
            loop {
                match p.request(&format!("/{i}"), post.map(|n| vec![1; n])) {
                    Ok(id) => {
                        ids.push(id.get());
                        break;
                    }
                    Err(SendError::WouldBlock) => p.pump(chunk),
                    Err(e) => panic!("{e}"),
                }
            }
        }
        p.pump(chunk);
        for &id in &ids {
            check_response(&p.c_rec, id, response_len);
        }
        prop_assert_eq!(p.client.active_streams(), 0);
        prop_assert_eq!(p.server.active_streams(), 0);
    }
}
