//! HTTP/2 at the frame level over raw sockets: the h2c upgrade path, and the defences
//! (rapid reset, CONTINUATION flood, HPACK bomb, stream concurrency, PING flood, idle
//! timeout) end to end, each time checking that other clients are not affected.

mod common;

use std::io::{Read, Write};
use std::net::{SocketAddr, TcpStream};
use std::time::Duration;

use common::start;
use h2lab_wire::h2::testing::{self, RawFrame, TestPeer};
use h2lab_wire::h2::ErrorCode;

const SETTINGS: u8 = 0x4;
const HEADERS: u8 = 0x1;
const DATA: u8 = 0x0;
const RST_STREAM: u8 = 0x3;
const GOAWAY: u8 = 0x7;
const ACK: u8 = 0x1;
const END_STREAM: u8 = 0x1;

/// A scripted HTTP/2 client.
struct Raw {
    sock: TcpStream,
    buf: Vec<u8>,
    peer: TestPeer,
    closed: bool,
}

impl Raw {
    fn connect(addr: SocketAddr) -> Raw {
        let sock = TcpStream::connect(addr).unwrap();
        sock.set_read_timeout(Some(Duration::from_secs(10)))
            .unwrap();
        sock.set_nodelay(true).unwrap();
        Raw {
            sock,
            buf: Vec::new(),
            peer: TestPeer::new(),
            closed: false,
        }
    }

    /// Connects and sends the preface with empty SETTINGS.
    fn h2c(addr: SocketAddr) -> Raw {
        let mut r = Raw::connect(addr);
        let mut b = Vec::new();
        testing::preface(&mut b);
        testing::settings(&mut b, &[]);
        r.send(&b);
        r
    }

    fn send(&mut self, b: &[u8]) {
        // The server may already have closed: a failed write is not the test's concern.
        let _ = self.sock.write_all(b);
    }

    fn fill(&mut self) -> bool {
        let mut tmp = [0u8; 65536];
        match self.sock.read(&mut tmp) {
            Ok(0) | Err(_) => {
                self.closed = true;
                false
            }
            Ok(n) => {
                self.buf.extend_from_slice(&tmp[..n]);
                true
            }
        }
    }

    /// Reads an HTTP/1.1 response head (the 101 of an upgrade).
    fn http1_head(&mut self) -> String {
        loop {
            if let Some(i) = self.buf.windows(4).position(|w| w == b"\r\n\r\n") {
                let head = String::from_utf8(self.buf[..i + 4].to_vec()).unwrap();
                self.buf.drain(..i + 4);
                return head;
            }
            assert!(self.fill(), "EOF before the response head");
        }
    }

    /// Next complete frame, or `None` at EOF.
    fn frame(&mut self) -> Option<RawFrame> {
        loop {
            if self.buf.len() >= 9 {
                let len = (usize::from(self.buf[0]) << 16)
                    | (usize::from(self.buf[1]) << 8)
                    | usize::from(self.buf[2]);
                if self.buf.len() >= 9 + len {
                    let f = testing::read_frames(&self.buf[..9 + len]).pop().unwrap();
                    self.buf.drain(..9 + len);
                    return Some(f);
                }
            }
            if !self.fill() {
                return None;
            }
        }
    }

    /// Reads frames until `pred` matches one (returned) or the connection ends (`None`).
    fn until(&mut self, mut pred: impl FnMut(&RawFrame) -> bool) -> Option<RawFrame> {
        while let Some(f) = self.frame() {
            if f.kind == SETTINGS && !f.has(ACK) {
                let mut b = Vec::new();
                testing::settings_ack(&mut b);
                self.send(&b);
            }
            if pred(&f) {
                return Some(f);
            }
        }
        None
    }

    /// Reads until GOAWAY (returned with the rest discarded) and then EOF.
    fn goaway(&mut self) -> Option<RawFrame> {
        let g = self.until(|f| f.kind == GOAWAY);
        while self.frame().is_some() {}
        g
    }

    fn get(&mut self, stream: u32, path: &str) -> Vec<u8> {
        let block = self.peer.request_block("GET", path, &[]);
        let mut b = Vec::new();
        testing::headers(&mut b, stream, &block, true);
        self.send(&b);
        let mut body = Vec::new();
        loop {
            let f = self
                .until(|f| {
                    f.stream == stream
                        && (f.kind == DATA || f.kind == RST_STREAM || f.kind == HEADERS)
                })
                .expect("response");
            assert_ne!(
                f.kind,
                RST_STREAM,
                "stream {stream} reset: {:?}",
                f.error_code()
            );
            if f.kind == DATA {
                body.extend_from_slice(&f.payload);
                // Give the window back so big bodies complete.
                let mut b = Vec::new();
                testing::window_update(&mut b, 0, f.payload.len().max(1) as u32);
                testing::window_update(&mut b, stream, f.payload.len().max(1) as u32);
                self.send(&b);
            }
            if f.has(END_STREAM) {
                return body;
            }
        }
    }
}

/// Another client works while (or after) a misbehaving one is dealt with.
fn healthy(addr: SocketAddr) {
    let mut r = Raw::h2c(addr);
    assert_eq!(r.get(1, "/ping"), b"pong");
}

#[test]
fn h2c_upgrade_turns_the_request_into_stream_1() {
    let s = start(|_| {});
    let addr = s.addr().unwrap();
    let mut r = Raw::connect(addr);
    // SETTINGS_MAX_CONCURRENT_STREAMS = 100, SETTINGS_INITIAL_WINDOW_SIZE = 1 MiB
    let settings = "AAMAAABkAAQAEAAA";
    r.send(
        format!(
            "GET /data?size=60000 HTTP/1.1\r\nHost: localhost\r\nConnection: Upgrade, HTTP2-Settings\r\nUpgrade: h2c\r\nHTTP2-Settings: {settings}\r\n\r\n"
        )
        .as_bytes(),
    );
    let head = r.http1_head();
    assert!(head.starts_with("HTTP/1.1 101 "), "{head}");
    assert!(head.to_ascii_lowercase().contains("upgrade: h2c"));
    // The server preface comes first. No SETTINGS ACK: the 101 is the acknowledgement of
    // HTTP2-Settings.
    let first = r.frame().unwrap();
    assert_eq!((first.kind, first.flags), (SETTINGS, 0));
    // Our preface; then stream 1's response arrives.
    let mut b = Vec::new();
    testing::preface(&mut b);
    testing::settings(&mut b, &[]);
    r.send(&b);
    let mut got = 0;
    let mut saw_headers = false;
    let mut saw_ack = false;
    while got < 60_000 {
        let f = r.frame().expect("stream 1 response");
        match f.kind {
            SETTINGS => {
                // Exactly one ACK: for the SETTINGS we just sent.
                assert!(f.has(ACK) && !saw_ack, "unexpected SETTINGS");
                saw_ack = true;
            }
            HEADERS => {
                assert_eq!(f.stream, 1);
                let h = r.peer.decode_headers(std::slice::from_ref(&f));
                assert!(h[0].1.contains(&(":status".into(), "200".into())));
                saw_headers = true;
            }
            // Within the connection window (65535): no WINDOW_UPDATE needed.
            DATA => {
                assert_eq!(f.stream, 1);
                got += f.payload.len();
            }
            _ => {}
        }
    }
    assert!(saw_headers);
    assert_eq!(got, 60_000);
    assert_eq!(r.get(3, "/ping"), b"pong");
    assert_eq!(
        r.get(5, "/json").len(),
        h2lab_server::endpoints::JSON_BODY.len()
    );
}

#[test]
fn upgrade_with_a_bad_preface_is_a_connection_error() {
    let s = start(|_| {});
    let mut r = Raw::connect(s.addr().unwrap());
    r.send(b"GET /ping HTTP/1.1\r\nHost: x\r\nConnection: Upgrade, HTTP2-Settings\r\nUpgrade: h2c\r\nHTTP2-Settings: \r\n\r\nGET / HTTP/1.1\r\n\r\n");
    assert!(r.http1_head().starts_with("HTTP/1.1 101 "));
    let g = r.goaway().expect("GOAWAY");
    assert_eq!(g.error_code(), Some(ErrorCode::PROTOCOL_ERROR));
}

#[test]
fn rapid_reset_gets_goaway_enhance_your_calm() {
    let s = start(|c| {
        c.max_rapid_resets = 50;
        c.rapid_reset_window = 1000;
    });
    let addr = s.addr().unwrap();
    let mut r = Raw::h2c(addr);
    let mut b = Vec::new();
    for i in 0..500u32 {
        let id = 1 + 2 * i;
        let block = r.peer.request_block("GET", "/delay?ms=2000", &[]);
        testing::headers(&mut b, id, &block, true);
        testing::rst_stream(&mut b, id, ErrorCode::CANCEL.0);
    }
    r.send(&b);
    let g = r.goaway().expect("GOAWAY");
    assert_eq!(g.error_code(), Some(ErrorCode::ENHANCE_YOUR_CALM));
    assert!(r.closed);
    healthy(addr);
}

#[test]
fn continuation_flood_gets_goaway() {
    let s = start(|c| c.max_continuation_frames = 16);
    let addr = s.addr().unwrap();
    let mut r = Raw::h2c(addr);
    let block = r
        .peer
        .request_block("GET", "/ping", &[("x-pad", &"a".repeat(100))]);
    let mut b = Vec::new();
    // HEADERS without END_HEADERS, then endless one-byte CONTINUATIONs.
    testing::raw_frame(&mut b, HEADERS, END_STREAM, 1, &block[..4]);
    for i in 0..5000 {
        let byte = &block[4 + i % (block.len() - 4)..][..1];
        testing::continuation(&mut b, 1, byte, false);
    }
    r.send(&b);
    let g = r.goaway().expect("GOAWAY");
    assert_eq!(g.error_code(), Some(ErrorCode::ENHANCE_YOUR_CALM));
    healthy(addr);
}

#[test]
fn hpack_bomb_is_refused_and_the_connection_survives() {
    let s = start(|c| c.max_header_list_size = 16 * 1024);
    let addr = s.addr().unwrap();
    let mut r = Raw::h2c(addr);
    // One 4000-byte field added to the dynamic table and referenced 200 times: about 4 KB
    // on the wire, 800 KB decoded.
    let block = testing::hpack_bomb_block(200);
    let mut b = Vec::new();
    testing::headers(&mut b, 1, &block, true);
    r.send(&b);
    let f = r
        .until(|f| f.stream == 1 || f.kind == GOAWAY)
        .expect("a reaction");
    match f.kind {
        RST_STREAM => {
            // A stream error; the HPACK state stayed in sync, so the connection lives on.
            assert_ne!(f.error_code(), Some(ErrorCode::NO_ERROR));
            assert_eq!(r.get(3, "/ping"), b"pong");
        }
        HEADERS => {
            let h = r.peer.decode_headers(std::slice::from_ref(&f));
            assert!(h[0].1.contains(&(":status".into(), "431".into())), "{h:?}");
        }
        GOAWAY => assert_eq!(f.error_code(), Some(ErrorCode::ENHANCE_YOUR_CALM)),
        _ => unreachable!(),
    }
    healthy(addr);
}

#[test]
fn streams_beyond_the_limit_are_refused() {
    let s = start(|c| c.max_concurrent_streams = 4);
    let addr = s.addr().unwrap();
    let mut r = Raw::h2c(addr);
    let mut b = Vec::new();
    for i in 0..6u32 {
        let block = r.peer.request_block("GET", "/delay?ms=300", &[]);
        testing::headers(&mut b, 1 + 2 * i, &block, true);
    }
    r.send(&b);
    let mut refused = Vec::new();
    let mut answered = Vec::new();
    while refused.len() + answered.len() < 6 {
        let f = r
            .until(|f| f.kind == RST_STREAM || (f.kind == DATA && f.has(END_STREAM)))
            .expect("frames");
        if f.kind == RST_STREAM {
            assert_eq!(f.error_code(), Some(ErrorCode::REFUSED_STREAM));
            refused.push(f.stream);
        } else {
            answered.push(f.stream);
        }
    }
    refused.sort_unstable();
    answered.sort_unstable();
    assert_eq!(answered, vec![1, 3, 5, 7]);
    assert_eq!(refused, vec![9, 11]);
    // The connection is fine.
    assert_eq!(r.get(13, "/ping"), b"pong");
}

#[test]
fn ping_flood_gets_goaway() {
    let s = start(|_| {});
    let addr = s.addr().unwrap();
    let mut r = Raw::h2c(addr);
    let mut b = Vec::new();
    for i in 0..5000u64 {
        testing::ping(&mut b, false, i.to_be_bytes());
    }
    r.send(&b);
    let g = r.goaway().expect("GOAWAY");
    assert_eq!(g.error_code(), Some(ErrorCode::ENHANCE_YOUR_CALM));
    healthy(addr);
}

#[test]
fn idle_connection_gets_goaway_no_error() {
    let s = start(|c| c.idle_timeout = Duration::from_millis(300));
    let mut r = Raw::h2c(s.addr().unwrap());
    assert_eq!(r.get(1, "/ping"), b"pong");
    let g = r.goaway().expect("GOAWAY");
    assert_eq!(g.error_code(), Some(ErrorCode::NO_ERROR));
    assert_eq!(g.last_stream_id(), Some(1));
    assert!(r.closed);
}

#[test]
fn server_shutdown_sends_goaway_no_error() {
    // The frame-level side of tests/protocols.rs's graceful stop (where the h2 crate only
    // reports a clean end).
    let s = start(|_| {});
    let mut r = Raw::h2c(s.addr().unwrap());
    assert_eq!(r.get(1, "/ping"), b"pong");
    s.shutdown();
    let g = r.goaway().expect("GOAWAY");
    assert_eq!(g.error_code(), Some(ErrorCode::NO_ERROR));
    assert_eq!(g.last_stream_id(), Some(1));
    assert!(r.closed);
    s.join().unwrap();
}

#[test]
fn a_slow_delay_keeps_the_connection_past_the_idle_timeout() {
    let s = start(|c| c.idle_timeout = Duration::from_millis(300));
    let mut r = Raw::h2c(s.addr().unwrap());
    assert_eq!(r.get(1, "/delay?ms=900"), b"delayed 900 ms\n");
}

#[test]
fn h2c_upgrade_with_a_head_larger_than_one_frame() {
    let s = start(|c| c.max_header_list_size = 64 * 1024);
    let mut r = Raw::connect(s.addr().unwrap());
    // Random-looking bytes so Huffman coding cannot shrink the block below 16 KiB.
    let big: String = (0..30_000u32)
        .map(|i| char::from(b'!' + (i.wrapping_mul(2_654_435_761) >> 27) as u8 % 90))
        .filter(|c| *c != '\\')
        .collect();
    r.send(
        format!(
            "GET /info HTTP/1.1\r\nHost: localhost\r\nConnection: Upgrade, HTTP2-Settings\r\nUpgrade: h2c\r\nHTTP2-Settings: AAMAAABk\r\nx-big: {big}\r\n\r\n"
        )
        .as_bytes(),
    );
    assert!(r.http1_head().starts_with("HTTP/1.1 101 "));
    let mut b = Vec::new();
    testing::preface(&mut b);
    testing::settings(&mut b, &[]);
    r.send(&b);
    let mut body = Vec::new();
    loop {
        let f = r.frame().expect("response");
        assert_ne!(f.kind, RST_STREAM);
        assert_ne!(f.kind, GOAWAY);
        if f.kind == DATA && f.stream == 1 {
            body.extend_from_slice(&f.payload);
            if f.has(END_STREAM) {
                break;
            }
        }
    }
    let v: serde_json::Value = serde_json::from_slice(&body).unwrap();
    assert_eq!(v["protocol"], "HTTP/2");
    let headers = v["headers"].as_array().unwrap();
    assert!(headers
        .iter()
        .any(|h| h[0] == "x-big" && h[1].as_str().unwrap().len() == big.len()));
}
