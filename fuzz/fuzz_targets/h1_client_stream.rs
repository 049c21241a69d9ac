//! End to end, HTTP/1.1 client side: a fuzzed byte stream, cut into reads of varying sizes,
//! fed to the engine's HTTP/1.1 session (`h2lab_engine::h1::H1Session`: pipelining, the carry
//! buffer between reads, `Connection: close` handling), with requests submitted whenever the
//! session accepts them.
//!
//! Oracles: no panic; every submitted slot ends at most once, in submission order (responses
//! match requests in order, RFC 9112 §9.3.2), and gets events only while outstanding;
//! `in_flight` matches.
//!
//! Input: configuration octet (pipelining depth, HEAD, POST), read-size seed, then the server's
//! bytes.
#![no_main]

mod common;

use std::collections::VecDeque;
use std::sync::Arc;

use common::Reads;
use h2lab_engine::h1::H1Session;
use h2lab_engine::session::{Session, SessionEvents};
use h2lab_engine::{fuzzing, BenchConfig};
use libfuzzer_sys::fuzz_target;

#[derive(Default)]
struct Track {
    /// Outstanding slots, oldest first.
    queue: VecDeque<u32>,
}

impl Track {
    fn front(&self, slot: u32, what: &str) {
        assert_eq!(self.queue.front(), Some(&slot), "{what} for slot {slot}");
    }
    fn end(&mut self, slot: u32, what: &str) {
        assert!(self.queue.contains(&slot), "{what} for slot {slot}");
        self.queue.retain(|s| *s != slot);
    }
}

impl SessionEvents for Track {
    fn status(&mut self, slot: u32, _status: u16) {
        self.front(slot, "status");
    }
    fn header_bytes(&mut self, _wire: usize, _decoded: usize) {}
    fn body(&mut self, slot: u32, len: usize) {
        self.front(slot, "body");
        assert!(len > 0);
    }
    fn complete(&mut self, slot: u32) {
        self.front(slot, "complete");
        self.queue.pop_front();
    }
    fn reset(&mut self, slot: u32, _code: u32) {
        self.end(slot, "reset");
    }
    fn refused(&mut self, slot: u32) {
        self.end(slot, "refused");
    }
    fn goaway(&mut self, _last_stream_id: u32, _code: u32) {
        panic!("GOAWAY from HTTP/1.1");
    }
    fn push_refused(&mut self) {}
}

fn submit_all(s: &mut H1Session, t: &mut Track, out: &mut Vec<u8>, next: &mut u32) {
    while s.can_submit() {
        if s.submit(*next, 0, out).is_err() {
            break;
        }
        t.queue.push_back(*next);
        *next = next.wrapping_add(1);
    }
}

fuzz_target!(|data: &[u8]| {
    let [cfg_byte, seed, input @ ..] = data else {
        return;
    };
    let depth = 1 + u32::from(cfg_byte & 7);
    let mut cfg = BenchConfig::from_uris(&["http://127.0.0.1/x"], None).unwrap();
    if cfg_byte & 0x08 != 0 {
        cfg.headers.push((":method".into(), "HEAD".into()));
    } else if cfg_byte & 0x10 != 0 {
        cfg.body = Some(Arc::from(&b"request body"[..]));
    }
    let mut s = fuzzing::h1_session(&cfg, depth).unwrap();
    let mut t = Track::default();
    let mut out = Vec::new();
    let mut next = 0;
    s.on_connect(&mut out);
    submit_all(&mut s, &mut t, &mut out, &mut next);
    let mut reads = Reads::new(*seed, [1, 7, 64, 1024, 1 << 16][usize::from(*seed) % 5]);
    let mut rest = input;
    while !rest.is_empty() {
        let (chunk, tail) = rest.split_at(reads.next_len().min(rest.len()));
        rest = tail;
        if s.on_read(chunk, &mut out, &mut t).is_err() {
            return;
        }
        assert_eq!(s.in_flight() as usize, t.queue.len());
        if s.wants_close() {
            break;
        }
        submit_all(&mut s, &mut t, &mut out, &mut next);
    }
    let _ = s.on_eof(&mut t);
    assert!(s.in_flight() as usize == t.queue.len());
});
