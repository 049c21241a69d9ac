//! End to end, the server crate's own connection code: a fuzzed client byte stream, cut into
//! reads of varying sizes, fed through `h2lab_server::testing::MemoryConn`: the same protocol
//! detection (HTTP/2 preface, `Upgrade: h2c`, ALPN), HTTP/1.1 and HTTP/2 halves, endpoint
//! router, `/delay` timers, idle timeout and shutdown paths the worker loop drives, minus the
//! socket and the TLS layer.
//!
//! Oracles: no panic, no hang (bounded output: a client that stops reading after 1 MiB);
//! over HTTP/2 (prior knowledge or ALPN `h2`) every complete frame the server wrote is valid
//! and its header blocks decode in order with a peer HPACK decoder; an HTTP/1.1 connection
//! answers with a status line.
//!
//! Input: configuration octet (bits 0-1 transport: cleartext / TLS with ALPN h2 / TLS with
//! HTTP/1.1; bit 2 tight limits; bit 3 push; bit 4 priorities off; bit 5 keep-alive off; bits
//! 6-7 how it ends: peer closes, idle timeout, server shutdown, nothing), read-size seed,
//! then the client's bytes.
#![no_main]

mod common;

use std::time::Duration;

use common::{Reads, WireCheck};
use h2lab_server::sched::PriorityMode;
use h2lab_server::testing::{MemoryConn, Transport};
use h2lab_server::ServerConfig;
use h2lab_wire::frame::PREFACE;
use libfuzzer_sys::fuzz_target;

const OUTPUT_LIMIT: usize = 1 << 20;

fuzz_target!(|data: &[u8]| {
    let [cfg, seed, input @ ..] = data else {
        return;
    };
    let transport = match cfg & 3 {
        1 => Transport::TlsH2,
        2 => Transport::TlsH1,
        _ => Transport::Cleartext,
    };
    let mut config = ServerConfig::local();
    config.max_compute_work = 100_000;
    config.max_delay = Duration::from_secs(1);
    if cfg & 4 != 0 {
        config.max_concurrent_streams = 2;
        config.max_header_list_size = 512;
        config.max_continuation_frames = 2;
        config.max_request_body = 1024;
        config.max_rapid_resets = 4;
        config.rapid_reset_window = 8;
        config.initial_stream_window = 1024;
    }
    config.push = cfg & 8 != 0;
    if cfg & 16 != 0 {
        config.priorities = PriorityMode::Off;
    }
    config.keep_alive = cfg & 32 == 0;
    let Ok(mut conn) = MemoryConn::new(config, transport) else {
        return;
    };
    conn.set_output_limit(OUTPUT_LIMIT);

    let mut reads = Reads::new(*seed, 4096);
    let mut rest = input;
    while !rest.is_empty() && !conn.is_closed() {
        let n = reads.next_len().min(rest.len());
        conn.feed(&rest[..n]);
        rest = &rest[n..];
    }
    conn.fire_timers();
    match cfg >> 6 {
        0 => conn.close_input(),
        1 => conn.idle_timeout(),
        2 => conn.shutdown(),
        _ => {}
    }

    let out = conn.output();
    let h2 = transport == Transport::TlsH2
        || (transport == Transport::Cleartext && input.starts_with(PREFACE.as_slice()));
    if h2 {
        let mut check = WireCheck::new(false);
        check.feed(&out[..complete_frames(out)]);
    } else if !out.is_empty() {
        assert!(
            out.starts_with(b"HTTP/1."),
            "an HTTP/1.1 connection answers with a status line"
        );
    }
});

/// The length of the prefix of `out` made of complete frames (the output limit may cut the
/// last one).
fn complete_frames(out: &[u8]) -> usize {
    let mut at = 0;
    while let Some(head) = out.get(at..at + 9) {
        let len = (usize::from(head[0]) << 16) | (usize::from(head[1]) << 8) | usize::from(head[2]);
        if at + 9 + len > out.len() {
            break;
        }
        at += 9 + len;
    }
    at
}
