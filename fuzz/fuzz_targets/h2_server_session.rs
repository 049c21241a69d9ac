//! End to end, server side: a fuzzed byte stream, cut into reads of varying sizes, fed to a
//! server-role `h2lab_wire::h2::Connection` the way `h2lab serve` drives it (unconsumed bytes
//! kept and passed again), answering every complete request with HEADERS and a body that may
//! wait for flow-control window.
//!
//! Oracles: no panic; `recv` never consumes more than given and leaves less than one frame
//! unconsumed; after a connection error every later `recv` fails; events arrive only for
//! streams in a state that allows them; everything we write is complete, valid frames whose
//! header blocks decode in order with a peer HPACK decoder.
//!
//! Input: configuration octet (limits, settings, whether a valid preface + SETTINGS is
//! prepended), read-size seed, then the client's bytes.
#![no_main]

mod common;

use std::collections::HashMap;

use common::{Reads, WireCheck};
use h2lab_wire::frame::PREFACE;
use h2lab_wire::h2::testing;
use h2lab_wire::h2::{
    Connection, ErrorCode, Events, HeadersDone, HeadersKind, Limits, LocalSettings, Role, StreamId,
};
use libfuzzer_sys::fuzz_target;

const BODY: [u8; 3000] = [b'r'; 3000];

#[derive(Clone, Copy, PartialEq, Eq, Debug)]
enum St {
    /// Request header section being received (fields delivered).
    Headers,
    /// Request headers done, body may follow.
    Open,
    /// Request complete: to be answered.
    Done,
    /// Reset (by either side).
    Reset,
}

#[derive(Default)]
struct Sink {
    streams: HashMap<u32, St>,
    ready: Vec<u32>,
    window_opened: bool,
}

impl Events for Sink {
    fn header(&mut self, stream: StreamId, _name: &[u8], _value: &[u8]) {
        let st = self.streams.entry(stream.get()).or_insert(St::Headers);
        assert!(
            matches!(*st, St::Headers | St::Open | St::Reset),
            "field on stream {} in state {st:?}",
            stream.get()
        );
        if *st == St::Reset {
            // A new block can only start on a new stream; a reset stream never gets one.
            panic!("field on reset stream {}", stream.get());
        }
    }
    fn headers_done(&mut self, stream: StreamId, done: HeadersDone) {
        let id = stream.get();
        let st = self.streams.entry(id).or_insert(St::Headers);
        match done.kind {
            HeadersKind::Request => assert_eq!(*st, St::Headers, "request on stream {id}"),
            HeadersKind::Trailers => assert_eq!(*st, St::Open, "trailers on stream {id}"),
            k => panic!("{k:?} received by a server"),
        }
        assert!(done.kind != HeadersKind::Trailers || done.end_stream);
        *st = if done.end_stream { St::Done } else { St::Open };
        if done.end_stream {
            self.ready.push(id);
        }
    }
    fn data(&mut self, stream: StreamId, _data: &[u8], end_stream: bool) {
        let id = stream.get();
        let st = self
            .streams
            .get_mut(&id)
            .expect("DATA on an unknown stream");
        assert_eq!(*st, St::Open, "DATA on stream {id}");
        if end_stream {
            *st = St::Done;
            self.ready.push(id);
        }
    }
    fn reset(&mut self, stream: StreamId, _code: ErrorCode, _by_peer: bool) {
        // A stream may be reset before any of its fields was delivered (malformed block).
        let st = self.streams.entry(stream.get()).or_insert(St::Headers);
        assert_ne!(*st, St::Reset, "stream {} reset twice", stream.get());
        *st = St::Reset;
    }
    fn window_opened(&mut self, _stream: Option<StreamId>) {
        self.window_opened = true;
    }
}

fuzz_target!(|data: &[u8]| {
    let [cfg, seed, input @ ..] = data else {
        return;
    };
    let local = LocalSettings {
        max_concurrent_streams: Some(1 + u32::from(cfg & 7) * 4),
        initial_window_size: if cfg & 0x08 != 0 { 100 } else { 65_535 },
        max_header_list_size: Some(if cfg & 0x10 != 0 { 300 } else { 64 * 1024 }),
        header_table_size: if cfg & 0x20 != 0 { 0 } else { 4096 },
        ..LocalSettings::server()
    };
    let limits = if cfg & 0x40 != 0 {
        Limits {
            max_header_block_bytes: 2048,
            max_continuation_frames: 4,
            rapid_reset_budget: 5,
            rapid_reset_window: 20,
            max_pings_without_progress: 5,
            max_settings_without_progress: 5,
            max_idle_frames_without_progress: 10,
            max_stream_errors_without_progress: 5,
            closed_stream_memory: 4,
            ..Limits::new()
        }
    } else {
        Limits::new()
    };
    let mut wire = Vec::with_capacity(input.len() + 40);
    if cfg & 0x80 != 0 {
        wire.extend_from_slice(PREFACE);
        testing::settings(&mut wire, &[]);
    }
    wire.extend_from_slice(input);

    let mut conn = Connection::new(Role::Server, local, limits);
    let mut check = WireCheck::new(false);
    let mut sink = Sink::default();
    let mut out = Vec::new();
    let mut buf: Vec<u8> = Vec::new();
    // Bodies still waiting for window: (stream, bytes sent).
    let mut pending: Vec<(u32, usize)> = Vec::new();
    let mut reads = Reads::new(*seed, [5, 64, 1024, 1 << 16][usize::from(*seed) % 4]);
    let mut rest = &wire[..];
    while !rest.is_empty() {
        let (chunk, tail) = rest.split_at(reads.next_len().min(rest.len()));
        rest = tail;
        buf.extend_from_slice(chunk);
        match conn.recv(&buf, &mut out, &mut sink) {
            Ok(n) => {
                assert!(n <= buf.len());
                buf.drain(..n);
                // Unconsumed: part of the preface, or less than one frame.
                assert!(buf.len() < conn.max_frame_len().max(PREFACE.len()));
            }
            Err(e) => {
                check.feed(&out);
                assert_eq!(conn.recv(b"", &mut out, &mut sink).err(), Some(e));
                assert!(conn.is_finished());
                return;
            }
        }
        for id in std::mem::take(&mut sink.ready) {
            let stream = StreamId::new(id);
            let fields: [(&[u8], &[u8]); 2] =
                [(b":status", b"200"), (b"content-type", b"text/plain")];
            if conn
                .send_header_fields(stream, &fields, false, &mut out)
                .is_ok()
            {
                pending.push((id, 0));
            }
        }
        if !pending.is_empty() {
            sink.window_opened = false;
            pending.retain_mut(|(id, sent)| {
                match conn.send_data(StreamId::new(*id), &BODY[*sent..], true, &mut out) {
                    Ok(n) => {
                        *sent += n;
                        *sent < BODY.len()
                    }
                    Err(_) => false,
                }
            });
        }
        check.feed(&out);
        out.clear();
    }
});
