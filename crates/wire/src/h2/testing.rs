//! Test support: raw frame builders, a frame reader, an HPACK helper and a
//! recording [`Events`] sink, for tests that play the peer of a
//! [`Connection`](super::Connection) (this crate's tests, engine mock-server
//! tests, server tests).
//!
//! The builders write bytes exactly as told — including invalid lengths,
//! padding and ids — so tests can script protocol violations.
//!
//! ```
//! use h2lab_wire::h2::testing::{self, Recorder, TestPeer};
//! use h2lab_wire::h2::{Connection, Limits, LocalSettings, Role};
//!
//! let mut server = Connection::new(Role::Server, LocalSettings::server(), Limits::new());
//! let mut peer = TestPeer::new();
//! let mut input = Vec::new();
//! testing::preface(&mut input);
//! testing::settings(&mut input, &[]);
//! let block = peer.request_block("GET", "/", &[]);
//! testing::headers(&mut input, 1, &block, true);
//! let (mut out, mut rec) = (Vec::new(), Recorder::default());
//! assert_eq!(server.recv(&input, &mut out, &mut rec).unwrap(), input.len());
//! assert!(rec.request_done(1));
//! ```

use crate::frame::{flags, ErrorCode, FrameKind, StreamId, FRAME_HEADER_LEN, PREFACE};
use crate::hpack;

use super::events::{Events, HeadersDone};

/// Frame type octets (RFC 9113 §6).
pub mod kind {
    /// DATA.
    pub const DATA: u8 = 0x0;
    /// HEADERS.
    pub const HEADERS: u8 = 0x1;
    /// PRIORITY.
    pub const PRIORITY: u8 = 0x2;
    /// RST_STREAM.
    pub const RST_STREAM: u8 = 0x3;
    /// SETTINGS.
    pub const SETTINGS: u8 = 0x4;
    /// PUSH_PROMISE.
    pub const PUSH_PROMISE: u8 = 0x5;
    /// PING.
    pub const PING: u8 = 0x6;
    /// GOAWAY.
    pub const GOAWAY: u8 = 0x7;
    /// WINDOW_UPDATE.
    pub const WINDOW_UPDATE: u8 = 0x8;
    /// CONTINUATION.
    pub const CONTINUATION: u8 = 0x9;
}

/// SETTINGS identifiers (RFC 9113 §6.5.2).
pub mod setting {
    /// SETTINGS_HEADER_TABLE_SIZE.
    pub const HEADER_TABLE_SIZE: u16 = 0x1;
    /// SETTINGS_ENABLE_PUSH.
    pub const ENABLE_PUSH: u16 = 0x2;
    /// SETTINGS_MAX_CONCURRENT_STREAMS.
    pub const MAX_CONCURRENT_STREAMS: u16 = 0x3;
    /// SETTINGS_INITIAL_WINDOW_SIZE.
    pub const INITIAL_WINDOW_SIZE: u16 = 0x4;
    /// SETTINGS_MAX_FRAME_SIZE.
    pub const MAX_FRAME_SIZE: u16 = 0x5;
    /// SETTINGS_MAX_HEADER_LIST_SIZE.
    pub const MAX_HEADER_LIST_SIZE: u16 = 0x6;
}

/// Append the client connection preface (RFC 9113 §3.4).
pub fn preface(buf: &mut Vec<u8>) {
    buf.extend_from_slice(PREFACE);
}

/// Append any frame, header fields taken as given (the length field is the
/// payload length, truncated to 24 bits).
pub fn raw_frame(buf: &mut Vec<u8>, kind: u8, flags: u8, stream: u32, payload: &[u8]) {
    let len = u32::try_from(payload.len()).unwrap_or(u32::MAX) & 0x00ff_ffff;
    buf.extend_from_slice(&len.to_be_bytes()[1..]);
    buf.push(kind);
    buf.push(flags);
    buf.extend_from_slice(&stream.to_be_bytes());
    buf.extend_from_slice(payload);
}

/// SETTINGS with the given `(identifier, value)` pairs, in order.
pub fn settings(buf: &mut Vec<u8>, params: &[(u16, u32)]) {
    let mut p = Vec::with_capacity(params.len() * 6);
    for (id, v) in params {
        p.extend_from_slice(&id.to_be_bytes());
        p.extend_from_slice(&v.to_be_bytes());
    }
    raw_frame(buf, kind::SETTINGS, 0, 0, &p);
}

/// SETTINGS with the ACK flag.
pub fn settings_ack(buf: &mut Vec<u8>) {
    raw_frame(buf, kind::SETTINGS, flags::ACK, 0, &[]);
}

/// HEADERS with END_HEADERS and the given END_STREAM.
pub fn headers(buf: &mut Vec<u8>, stream: u32, block: &[u8], end_stream: bool) {
    headers_flags(buf, stream, block, end_stream, true);
}

/// HEADERS with explicit END_STREAM / END_HEADERS.
pub fn headers_flags(
    buf: &mut Vec<u8>,
    stream: u32,
    block: &[u8],
    end_stream: bool,
    end_headers: bool,
) {
    let mut f = 0;
    if end_stream {
        f |= flags::END_STREAM;
    }
    if end_headers {
        f |= flags::END_HEADERS;
    }
    raw_frame(buf, kind::HEADERS, f, stream, block);
}

/// HEADERS (END_HEADERS) with the PRIORITY flag and fields.
pub fn headers_priority(
    buf: &mut Vec<u8>,
    stream: u32,
    dependency: u32,
    weight: u8,
    block: &[u8],
    end_stream: bool,
) {
    let mut p = dependency.to_be_bytes().to_vec();
    p.push(weight);
    p.extend_from_slice(block);
    let mut f = flags::END_HEADERS | flags::PRIORITY;
    if end_stream {
        f |= flags::END_STREAM;
    }
    raw_frame(buf, kind::HEADERS, f, stream, &p);
}

/// HEADERS (END_HEADERS) with PADDED: the Pad Length octet is `pad_len`,
/// followed by the block and `pad_len` zero octets.
pub fn headers_padded(buf: &mut Vec<u8>, stream: u32, block: &[u8], pad_len: u8, end_stream: bool) {
    let mut p = vec![pad_len];
    p.extend_from_slice(block);
    p.resize(p.len() + usize::from(pad_len), 0);
    let mut f = flags::END_HEADERS | flags::PADDED;
    if end_stream {
        f |= flags::END_STREAM;
    }
    raw_frame(buf, kind::HEADERS, f, stream, &p);
}

/// CONTINUATION.
pub fn continuation(buf: &mut Vec<u8>, stream: u32, block: &[u8], end_headers: bool) {
    let f = if end_headers { flags::END_HEADERS } else { 0 };
    raw_frame(buf, kind::CONTINUATION, f, stream, block);
}

/// DATA.
pub fn data(buf: &mut Vec<u8>, stream: u32, payload: &[u8], end_stream: bool) {
    let f = if end_stream { flags::END_STREAM } else { 0 };
    raw_frame(buf, kind::DATA, f, stream, payload);
}

/// DATA with PADDED: Pad Length `pad_len`, `payload`, `pad_len` zeros.
pub fn data_padded(buf: &mut Vec<u8>, stream: u32, payload: &[u8], pad_len: u8, end_stream: bool) {
    let mut p = vec![pad_len];
    p.extend_from_slice(payload);
    p.resize(p.len() + usize::from(pad_len), 0);
    let mut f = flags::PADDED;
    if end_stream {
        f |= flags::END_STREAM;
    }
    raw_frame(buf, kind::DATA, f, stream, &p);
}

/// PRIORITY.
pub fn priority(buf: &mut Vec<u8>, stream: u32, dependency: u32, exclusive: bool, weight: u8) {
    let dep = if exclusive {
        dependency | 0x8000_0000
    } else {
        dependency
    };
    let mut p = dep.to_be_bytes().to_vec();
    p.push(weight);
    raw_frame(buf, kind::PRIORITY, 0, stream, &p);
}

/// RST_STREAM.
pub fn rst_stream(buf: &mut Vec<u8>, stream: u32, code: u32) {
    raw_frame(buf, kind::RST_STREAM, 0, stream, &code.to_be_bytes());
}

/// PING (with or without ACK).
pub fn ping(buf: &mut Vec<u8>, ack: bool, payload: [u8; 8]) {
    raw_frame(
        buf,
        kind::PING,
        if ack { flags::ACK } else { 0 },
        0,
        &payload,
    );
}

/// GOAWAY.
pub fn goaway(buf: &mut Vec<u8>, last_stream: u32, code: u32, debug: &[u8]) {
    let mut p = last_stream.to_be_bytes().to_vec();
    p.extend_from_slice(&code.to_be_bytes());
    p.extend_from_slice(debug);
    raw_frame(buf, kind::GOAWAY, 0, 0, &p);
}

/// WINDOW_UPDATE.
pub fn window_update(buf: &mut Vec<u8>, stream: u32, increment: u32) {
    raw_frame(
        buf,
        kind::WINDOW_UPDATE,
        0,
        stream,
        &increment.to_be_bytes(),
    );
}

/// PUSH_PROMISE (END_HEADERS) promising `promised`.
pub fn push_promise(buf: &mut Vec<u8>, stream: u32, promised: u32, block: &[u8]) {
    let mut p = promised.to_be_bytes().to_vec();
    p.extend_from_slice(block);
    raw_frame(buf, kind::PUSH_PROMISE, flags::END_HEADERS, stream, &p);
}

/// HPACK "literal without indexing, new name" for every field, no Huffman:
/// a block that decodes the same way in any HPACK context (RFC 7541
/// §6.2.2). Names and values must be shorter than 127 octets.
pub fn literal_block(fields: &[(&str, &str)]) -> Vec<u8> {
    let mut b = Vec::new();
    for (n, v) in fields {
        b.push(0x00);
        for s in [n, v] {
            b.push(u8::try_from(s.len()).unwrap_or(0x7f).min(0x7e));
            b.extend_from_slice(s.as_bytes());
        }
    }
    b
}

/// An HPACK bomb for the hostile-client tests (RFC 7541 §7.3 warns of it): `:method GET`,
/// `:scheme http`, `:path /ping`, `:authority localhost`, then a 4,000-octet field inserted
/// into the dynamic table and referenced `refs` more times: about 4 KB on the wire that
/// decodes to `refs` × 4 KB. The references use dynamic index 62, so the block is valid only
/// as the first one of a connection (nothing inserted before it).
pub fn hpack_bomb_block(refs: usize) -> Vec<u8> {
    let mut block = vec![0x82, 0x86];
    block.extend_from_slice(&[0x44, 5]);
    block.extend_from_slice(b"/ping");
    block.extend_from_slice(&[0x41, 9]);
    block.extend_from_slice(b"localhost");
    block.extend_from_slice(&[0x40, 6]);
    block.extend_from_slice(b"x-bomb");
    block.extend_from_slice(&[0x7f, 0xa1, 0x1e]); // 4000 with a 7-bit prefix
    block.extend_from_slice(&[b'a'; 4000]);
    // The bomb entry: inserted last, so dynamic index 62 (0xbe).
    block.resize(block.len() + refs, 0xbe);
    block
}

/// A frame read back from bytes a [`Connection`](super::Connection) wrote.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct RawFrame {
    /// Frame type octet (see [`kind`]).
    pub kind: u8,
    /// Flags.
    pub flags: u8,
    /// Stream identifier (R bit cleared).
    pub stream: u32,
    /// Payload.
    pub payload: Vec<u8>,
}

impl RawFrame {
    /// The frame type.
    pub fn frame_kind(&self) -> FrameKind {
        FrameKind::from_u8(self.kind)
    }

    /// True if every bit of `flag` is set.
    pub fn has(&self, flag: u8) -> bool {
        self.flags & flag == flag
    }

    fn u32_at(&self, at: usize) -> Option<u32> {
        let b: [u8; 4] = self.payload.get(at..at + 4)?.try_into().ok()?;
        Some(u32::from_be_bytes(b))
    }

    /// Error code of RST_STREAM or GOAWAY.
    pub fn error_code(&self) -> Option<ErrorCode> {
        match self.kind {
            kind::RST_STREAM => self.u32_at(0).map(ErrorCode),
            kind::GOAWAY => self.u32_at(4).map(ErrorCode),
            _ => None,
        }
    }

    /// Last-Stream-ID of GOAWAY.
    pub fn last_stream_id(&self) -> Option<u32> {
        (self.kind == kind::GOAWAY)
            .then(|| self.u32_at(0).map(|v| v & 0x7fff_ffff))
            .flatten()
    }

    /// Increment of WINDOW_UPDATE.
    pub fn increment(&self) -> Option<u32> {
        (self.kind == kind::WINDOW_UPDATE)
            .then(|| self.u32_at(0).map(|v| v & 0x7fff_ffff))
            .flatten()
    }

    /// `(identifier, value)` pairs of SETTINGS.
    pub fn settings(&self) -> Vec<(u16, u32)> {
        if self.kind != kind::SETTINGS {
            return Vec::new();
        }
        self.payload
            .chunks_exact(6)
            .filter_map(|c| match *c {
                [a, b, c, d, e, f] => {
                    Some((u16::from_be_bytes([a, b]), u32::from_be_bytes([c, d, e, f])))
                }
                _ => None,
            })
            .collect()
    }
}

/// Split `bytes` into frames. Skips a leading client preface; stops at an
/// incomplete frame.
pub fn read_frames(mut bytes: &[u8]) -> Vec<RawFrame> {
    if let Some(rest) = bytes.strip_prefix(PREFACE.as_slice()) {
        bytes = rest;
    }
    let mut frames = Vec::new();
    while let Some(h) = bytes.get(..FRAME_HEADER_LEN) {
        let len = usize::from(h[0]) << 16 | usize::from(h[1]) << 8 | usize::from(h[2]);
        let Some(payload) = bytes.get(FRAME_HEADER_LEN..FRAME_HEADER_LEN + len) else {
            break;
        };
        frames.push(RawFrame {
            kind: h[3],
            flags: h[4],
            stream: u32::from_be_bytes([h[5], h[6], h[7], h[8]]) & 0x7fff_ffff,
            payload: payload.to_vec(),
        });
        bytes = bytes.get(FRAME_HEADER_LEN + len..).unwrap_or_default();
    }
    frames
}

/// The HPACK contexts of a scripted peer: encode the blocks it sends, decode
/// the blocks it receives (HEADERS + CONTINUATION reassembled by
/// [`TestPeer::decode_headers`]).
#[derive(Debug)]
pub struct TestPeer {
    /// Encoder for blocks the peer sends.
    pub encoder: hpack::Encoder,
    /// Decoder for blocks the peer receives.
    pub decoder: hpack::Decoder,
}

impl Default for TestPeer {
    fn default() -> Self {
        TestPeer::new()
    }
}

impl TestPeer {
    /// Contexts with the default 4096-octet tables.
    pub fn new() -> Self {
        TestPeer {
            encoder: hpack::Encoder::new(4096),
            decoder: hpack::Decoder::new(4096),
        }
    }

    /// Encode `fields` with the peer's encoder.
    pub fn block(&mut self, fields: &[(&str, &str)]) -> Vec<u8> {
        let mut b = Vec::new();
        self.encoder.encode(
            fields.iter().map(|(n, v)| (n.as_bytes(), v.as_bytes())),
            &mut b,
        );
        b
    }

    /// A request block: `:method`, `:scheme: http`, `:path`,
    /// `:authority: localhost`, then `extra`.
    pub fn request_block(&mut self, method: &str, path: &str, extra: &[(&str, &str)]) -> Vec<u8> {
        let mut f = vec![
            (":method", method),
            (":scheme", "http"),
            (":path", path),
            (":authority", "localhost"),
        ];
        f.extend_from_slice(extra);
        self.block(&f)
    }

    /// A response block: `:status`, then `extra`.
    pub fn response_block(&mut self, status: u16, extra: &[(&str, &str)]) -> Vec<u8> {
        let s = status.to_string();
        let mut f = vec![(":status", s.as_str())];
        f.extend_from_slice(extra);
        self.block(&f)
    }

    /// Decode the field block of every HEADERS (+ CONTINUATION) in
    /// `frames`, in order, as `(stream, fields)`.
    #[allow(clippy::type_complexity)] // (stream, fields) pairs read best spelled out in tests
    pub fn decode_headers(&mut self, frames: &[RawFrame]) -> Vec<(u32, Vec<(String, String)>)> {
        let mut res = Vec::new();
        let mut block = Vec::new();
        let mut stream = 0;
        for f in frames {
            match f.kind {
                kind::HEADERS => {
                    block.clear();
                    stream = f.stream;
                    block.extend_from_slice(&f.payload);
                }
                kind::CONTINUATION => block.extend_from_slice(&f.payload),
                _ => continue,
            }
            if f.has(flags::END_HEADERS) {
                let mut fields = Vec::new();
                let r = self.decoder.decode(&block, |fl| {
                    fields.push((
                        String::from_utf8_lossy(fl.name).into_owned(),
                        String::from_utf8_lossy(fl.value).into_owned(),
                    ))
                });
                if r.is_ok() {
                    res.push((stream, fields));
                }
            }
        }
        res
    }
}

/// One recorded event.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Event {
    /// [`Events::header`].
    Header(u32, String, String),
    /// [`Events::headers_done`].
    HeadersDone(u32, HeadersDone),
    /// [`Events::data`].
    Data(u32, Vec<u8>, bool),
    /// [`Events::reset`].
    Reset(u32, ErrorCode, bool),
    /// [`Events::goaway`].
    GoAway(u32, ErrorCode, Vec<u8>),
    /// [`Events::settings_changed`].
    SettingsChanged,
    /// [`Events::window_opened`].
    WindowOpened(Option<u32>),
    /// [`Events::ping_ack`].
    PingAck([u8; 8]),
    /// [`Events::promised_header`].
    PromisedHeader(u32, String, String),
    /// [`Events::push_promise`]: (parent, promised).
    PushPromise(u32, u32),
}

/// An [`Events`] sink that records everything (allocates; tests only).
#[derive(Clone, Debug, Default)]
pub struct Recorder {
    /// Events in arrival order.
    pub events: Vec<Event>,
}

impl Recorder {
    /// Fields delivered on `stream`, in order.
    pub fn headers(&self, stream: u32) -> Vec<(String, String)> {
        self.events
            .iter()
            .filter_map(|e| match e {
                Event::Header(s, n, v) if *s == stream => Some((n.clone(), v.clone())),
                _ => None,
            })
            .collect()
    }

    /// `headers_done` summaries for `stream`.
    pub fn done(&self, stream: u32) -> Vec<HeadersDone> {
        self.events
            .iter()
            .filter_map(|e| match e {
                Event::HeadersDone(s, d) if *s == stream => Some(*d),
                _ => None,
            })
            .collect()
    }

    /// True if a request (or any first header section) completed on `stream`.
    pub fn request_done(&self, stream: u32) -> bool {
        !self.done(stream).is_empty()
    }

    /// Body bytes delivered on `stream`, and whether END_STREAM was seen.
    pub fn body(&self, stream: u32) -> (Vec<u8>, bool) {
        let mut b = Vec::new();
        let mut end = false;
        for e in &self.events {
            if let Event::Data(s, d, es) = e {
                if *s == stream {
                    b.extend_from_slice(d);
                    end |= *es;
                }
            }
        }
        (b, end)
    }

    /// `(code, by_peer)` of the reset events of `stream`.
    pub fn resets(&self, stream: u32) -> Vec<(ErrorCode, bool)> {
        self.events
            .iter()
            .filter_map(|e| match e {
                Event::Reset(s, c, p) if *s == stream => Some((*c, *p)),
                _ => None,
            })
            .collect()
    }
}

impl Events for Recorder {
    fn header(&mut self, stream: StreamId, name: &[u8], value: &[u8]) {
        self.events.push(Event::Header(
            stream.get(),
            String::from_utf8_lossy(name).into_owned(),
            String::from_utf8_lossy(value).into_owned(),
        ));
    }
    fn headers_done(&mut self, stream: StreamId, done: HeadersDone) {
        self.events.push(Event::HeadersDone(stream.get(), done));
    }
    fn data(&mut self, stream: StreamId, data: &[u8], end_stream: bool) {
        self.events
            .push(Event::Data(stream.get(), data.to_vec(), end_stream));
    }
    fn reset(&mut self, stream: StreamId, code: ErrorCode, by_peer: bool) {
        self.events.push(Event::Reset(stream.get(), code, by_peer));
    }
    fn goaway(&mut self, last_stream_id: StreamId, code: ErrorCode, debug: &[u8]) {
        self.events
            .push(Event::GoAway(last_stream_id.get(), code, debug.to_vec()));
    }
    fn settings_changed(&mut self) {
        self.events.push(Event::SettingsChanged);
    }
    fn window_opened(&mut self, stream: Option<StreamId>) {
        self.events
            .push(Event::WindowOpened(stream.map(StreamId::get)));
    }
    fn ping_ack(&mut self, payload: [u8; 8]) {
        self.events.push(Event::PingAck(payload));
    }
    fn promised_header(&mut self, promised: StreamId, name: &[u8], value: &[u8]) {
        self.events.push(Event::PromisedHeader(
            promised.get(),
            String::from_utf8_lossy(name).into_owned(),
            String::from_utf8_lossy(value).into_owned(),
        ));
    }
    fn push_promise(&mut self, parent: StreamId, promised: StreamId) {
        self.events
            .push(Event::PushPromise(parent.get(), promised.get()));
    }
}
