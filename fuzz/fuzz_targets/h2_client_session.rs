//! End to end, client side: a fuzzed byte stream, cut into reads of varying sizes, fed to the
//! engine's HTTP/2 session (`h2lab_engine::h2::H2Session`, the code `h2lab bench` runs on its
//! wire `Connection`) after the connection preface, with requests (and request bodies)
//! submitted whenever the session accepts them.
//!
//! Oracles: no panic; every submitted slot ends at most once and gets events only while it is
//! outstanding; `in_flight` matches; everything the session writes is complete, valid frames
//! whose header blocks decode in order with a peer HPACK decoder.
//!
//! Input: configuration octet (`-m`, POST body, windows, table sizes), read-size seed, then
//! the server's bytes.
#![no_main]

mod common;

use std::sync::Arc;

use common::{Reads, WireCheck};
use h2lab_engine::h2::{H2Session, H2Settings};
use h2lab_engine::session::{Session, SessionEvents};
use h2lab_engine::{fuzzing, BenchConfig};
use libfuzzer_sys::fuzz_target;

const SLOTS: usize = 8;

#[derive(Default)]
struct Track {
    live: [bool; SLOTS],
}

impl Track {
    fn live(&self, slot: u32) -> bool {
        self.live.get(slot as usize).copied().unwrap_or(false)
    }
    fn end(&mut self, slot: u32, what: &str) {
        assert!(
            self.live(slot),
            "{what} for slot {slot}, which is not outstanding"
        );
        self.live[slot as usize] = false;
    }
    fn count(&self) -> u32 {
        self.live.iter().filter(|l| **l).count() as u32
    }
}

impl SessionEvents for Track {
    fn status(&mut self, slot: u32, _status: u16) {
        assert!(self.live(slot), "status for slot {slot}");
    }
    fn header_bytes(&mut self, _wire: usize, _decoded: usize) {}
    fn body(&mut self, slot: u32, len: usize) {
        assert!(self.live(slot), "body for slot {slot}");
        assert!(len > 0);
    }
    fn complete(&mut self, slot: u32) {
        self.end(slot, "complete");
    }
    fn reset(&mut self, slot: u32, _code: u32) {
        self.end(slot, "reset");
    }
    fn refused(&mut self, slot: u32) {
        self.end(slot, "refused");
    }
    fn goaway(&mut self, _last_stream_id: u32, _code: u32) {}
    fn push_refused(&mut self) {}
}

fn submit_all(s: &mut H2Session, t: &mut Track, out: &mut Vec<u8>, m: u32, uri: &mut usize) {
    while s.can_submit() {
        let Some(slot) = (0..m).find(|&i| !t.live(i)) else {
            break;
        };
        if s.submit(slot, *uri % 2, out).is_err() {
            break;
        }
        t.live[slot as usize] = true;
        *uri += 1;
    }
}

fuzz_target!(|data: &[u8]| {
    let [cfg_byte, seed, input @ ..] = data else {
        return;
    };
    let m = 1 + u32::from(cfg_byte & 7);
    let mut cfg =
        BenchConfig::from_uris(&["http://127.0.0.1/a", "http://127.0.0.1/b?q"], None).unwrap();
    if cfg_byte & 0x08 != 0 {
        // Larger than the initial windows: bodies wait for WINDOW_UPDATE.
        cfg.body = Some(Arc::from(vec![b'x'; 100_000]));
    }
    let settings = H2Settings {
        window_bits: if cfg_byte & 0x10 != 0 { 16 } else { 30 },
        connection_window_bits: if cfg_byte & 0x10 != 0 { 16 } else { 30 },
        header_table_size: if cfg_byte & 0x20 != 0 { 0 } else { 4096 },
        encoder_header_table_size: if cfg_byte & 0x40 != 0 { 0 } else { 4096 },
        max_frame_size: 16_384,
        enable_push: false,
    };
    let close_when_done = cfg_byte & 0x80 != 0;
    let mut s = fuzzing::h2_session(&cfg, m, &settings).unwrap();
    let mut check = WireCheck::new(true);
    let mut t = Track::default();
    let mut out = Vec::new();
    let mut uri = 0;
    s.on_connect(&mut out);
    submit_all(&mut s, &mut t, &mut out, m, &mut uri);
    s.on_write(&mut out);
    check.feed(&out);
    out.clear();

    let mut reads = Reads::new(*seed, [3, 17, 256, 4096, 1 << 16][usize::from(*seed) % 5]);
    let mut rest = input;
    let mut failed = false;
    while !rest.is_empty() {
        let (chunk, tail) = rest.split_at(reads.next_len().min(rest.len()));
        rest = tail;
        let r = s.on_read(chunk, &mut out, &mut t);
        check.feed(&out);
        out.clear();
        if r.is_err() {
            failed = true;
            break;
        }
        assert_eq!(s.in_flight(), t.count());
        assert!(s.in_flight() <= s.max_concurrency().max(m));
        if close_when_done && s.wants_close() {
            break;
        }
        submit_all(&mut s, &mut t, &mut out, m, &mut uri);
        s.on_write(&mut out);
        check.feed(&out);
        out.clear();
    }
    if !failed {
        let _ = s.on_eof(&mut t);
        s.terminate(&mut out);
        check.feed(&out);
    }
});
