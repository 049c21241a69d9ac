//! Encode → decode round trips, hot-path encoders, partial input and
//! robustness against arbitrary bytes.

use h2lab_wire::frame::{
    encode_data_header, encode_headers, encode_push_promise, encode_settings_ack,
    encode_window_update, flags, Assembled, BlockKind, Continuation, Data, Decoded, ErrorCode,
    Frame, FrameDecoder, FrameHeader, FrameKind, GoAway, HeaderBlockAssembler, Headers, Ping,
    Priority, PrioritySpec, PushPromise, RstStream, Settings, StreamId, WindowUpdate,
    FRAME_HEADER_LEN,
};
use proptest::prelude::*;

fn sid(n: u32) -> StreamId {
    StreamId::new(n)
}

/// Decode exactly one frame that fills `buf`.
fn decode_all(buf: &[u8]) -> Frame<'_> {
    match FrameDecoder::with_max_frame_size(1 << 24).decode(buf) {
        Ok(Decoded::Frame { frame, consumed }) => {
            assert_eq!(consumed, buf.len());
            frame
        }
        other => panic!("{other:?}"),
    }
}

fn round_trip(f: Frame<'_>) {
    let mut buf = Vec::new();
    f.encode(&mut buf);
    let head = FrameHeader::parse(&buf).unwrap();
    assert_eq!(head.length as usize, buf.len() - FRAME_HEADER_LEN);
    assert_eq!(head.kind, f.kind());
    assert_eq!(head.stream_id, f.stream_id());
    assert_eq!(decode_all(&buf), f);
}

#[test]
fn each_frame_type_round_trips() {
    let prio = PrioritySpec {
        dependency: sid(3),
        exclusive: true,
        weight: 255,
    };
    let frames = [
        Frame::Data(Data::new(sid(1), b"hello")),
        Frame::Data(Data {
            stream_id: sid(1),
            data: b"",
            end_stream: true,
            pad_len: Some(255),
        }),
        Frame::Headers(Headers::new(sid(1), b"\x82\x86")),
        Frame::Headers(Headers {
            stream_id: StreamId::MAX,
            priority: Some(prio),
            fragment: b"abc",
            end_stream: true,
            end_headers: false,
            pad_len: Some(7),
        }),
        Frame::Priority(Priority {
            stream_id: sid(5),
            spec: PrioritySpec {
                dependency: StreamId::ZERO,
                exclusive: false,
                weight: 0,
            },
        }),
        Frame::RstStream(RstStream::new(sid(9), ErrorCode::CANCEL)),
        Frame::RstStream(RstStream::new(sid(9), ErrorCode(0xffff_ffff))),
        Frame::Settings(Settings::ack()),
        Frame::Settings(Settings::default()),
        Frame::Settings(Settings {
            ack: false,
            header_table_size: Some(0),
            enable_push: Some(false),
            max_concurrent_streams: Some(100),
            initial_window_size: Some(1 << 30),
            max_frame_size: Some(1 << 20),
            max_header_list_size: Some(u32::MAX),
            enable_connect_protocol: Some(true),
            no_rfc7540_priorities: Some(true),
        }),
        Frame::PushPromise(PushPromise {
            stream_id: sid(1),
            promised_stream_id: sid(2),
            fragment: b"xyz",
            end_headers: true,
            pad_len: None,
        }),
        Frame::PushPromise(PushPromise {
            stream_id: sid(1),
            promised_stream_id: sid(0x7fff_fffe),
            fragment: b"",
            end_headers: false,
            pad_len: Some(0),
        }),
        Frame::Ping(Ping::new(*b"12345678")),
        Frame::Ping(Ping::pong([0xff; 8])),
        Frame::GoAway(GoAway::new(sid(7), ErrorCode::NO_ERROR)),
        Frame::GoAway(GoAway {
            last_stream_id: StreamId::MAX,
            error_code: ErrorCode::ENHANCE_YOUR_CALM,
            debug_data: b"slow down",
        }),
        Frame::WindowUpdate(WindowUpdate::new(StreamId::ZERO, 1)),
        Frame::WindowUpdate(WindowUpdate::new(sid(3), (1 << 31) - 1)),
        Frame::Continuation(Continuation {
            stream_id: sid(1),
            fragment: b"more",
            end_headers: true,
        }),
        Frame::Unknown {
            header: FrameHeader::new(FrameKind::Unknown(0x42), 0xab, sid(11), 3),
            payload: b"ext",
        },
    ];
    for f in frames {
        round_trip(f);
    }
}

#[test]
fn exact_wire_bytes() {
    let mut b = Vec::new();
    Ping::pong(*b"abcdefgh").encode(&mut b);
    assert_eq!(b, b"\0\0\x08\x06\x01\0\0\0\0abcdefgh");
    b.clear();
    encode_settings_ack(&mut b);
    assert_eq!(b, b"\0\0\0\x04\x01\0\0\0\0");
    b.clear();
    encode_window_update(sid(1), 0x0102_0304, &mut b);
    assert_eq!(b, b"\0\0\x04\x08\0\0\0\0\x01\x01\x02\x03\x04");
    b.clear();
    Data {
        stream_id: sid(3),
        data: b"ab",
        end_stream: true,
        pad_len: Some(2),
    }
    .encode(&mut b);
    assert_eq!(b, b"\0\0\x05\0\x09\0\0\0\x03\x02ab\0\0");
    b.clear();
    Settings {
        max_frame_size: Some(16_384),
        ..Settings::default()
    }
    .encode(&mut b);
    assert_eq!(b, b"\0\0\x06\x04\0\0\0\0\0\0\x05\0\0\x40\0");
}

#[test]
fn data_header_then_payload() {
    let body = vec![7u8; 1000];
    let mut buf = Vec::new();
    encode_data_header(sid(5), body.len() as u32, true, &mut buf);
    assert_eq!(buf.len(), FRAME_HEADER_LEN);
    buf.extend_from_slice(&body);
    match decode_all(&buf) {
        Frame::Data(d) => {
            assert_eq!(d.stream_id, sid(5));
            assert!(d.end_stream);
            assert_eq!(d.data, &body[..]);
            // Zero copy: the data points into `buf`.
            assert_eq!(d.data.as_ptr(), buf[FRAME_HEADER_LEN..].as_ptr());
        }
        f => panic!("{f:?}"),
    }
}

/// Decode all frames of `buf` and reassemble one field block.
fn reassemble(buf: &[u8], max_frame: u32) -> (Vec<u8>, Vec<FrameHeader>, BlockKind) {
    let dec = FrameDecoder::new();
    let mut asm = HeaderBlockAssembler::new(1 << 20, 1 << 20);
    let mut heads = Vec::new();
    let mut rest = buf;
    loop {
        let Ok(Decoded::Frame { frame, consumed }) = dec.decode(rest) else {
            panic!("decode failed")
        };
        heads.push(FrameHeader::parse(rest).unwrap());
        assert!(heads.last().unwrap().length <= max_frame);
        rest = &rest[consumed..];
        match asm.push(&frame).unwrap() {
            Assembled::Pending => {}
            Assembled::Complete(b) => {
                assert!(rest.is_empty());
                return (b.block.to_vec(), heads, b.kind);
            }
            Assembled::Other => panic!("not a header frame"),
        }
    }
}

#[test]
fn encode_headers_splits_into_continuations() {
    let block: Vec<u8> = (0..40_000u32).map(|i| i as u8).collect();
    let mut buf = Vec::new();
    encode_headers(sid(1), &block, true, 16_384, &mut buf);
    let (got, heads, kind) = reassemble(&buf, 16_384);
    assert_eq!(got, block);
    let lens: Vec<u32> = heads.iter().map(|h| h.length).collect();
    assert_eq!(lens, [16_384, 16_384, 40_000 - 2 * 16_384]);
    assert_eq!(heads[0].kind, FrameKind::Headers);
    assert_eq!(heads[0].flags, flags::END_STREAM);
    assert_eq!(heads[1].kind, FrameKind::Continuation);
    assert_eq!(heads[1].flags, 0);
    assert_eq!(heads[2].flags, flags::END_HEADERS);
    assert_eq!(
        kind,
        BlockKind::Headers {
            end_stream: true,
            priority: None
        }
    );
    assert_eq!(buf.len(), block.len() + 3 * FRAME_HEADER_LEN);

    // Fits exactly: one frame with both flags.
    buf.clear();
    encode_headers(sid(3), &block[..16_384], false, 16_384, &mut buf);
    let (got, heads, _) = reassemble(&buf, 16_384);
    assert_eq!(got, &block[..16_384]);
    assert_eq!(heads.len(), 1);
    assert_eq!(heads[0].flags, flags::END_HEADERS);

    // Empty block.
    buf.clear();
    encode_headers(sid(3), &[], true, 16_384, &mut buf);
    assert_eq!(buf, b"\0\0\0\x01\x05\0\0\0\x03");
}

#[test]
fn encode_push_promise_splits_into_continuations() {
    let block = vec![0xaa; 20];
    let mut buf = Vec::new();
    encode_push_promise(sid(1), sid(2), &block, 10, &mut buf);
    // Frame sizes: 10 (4 id + 6), 10, 4.
    let mut rest = &buf[..];
    let mut lens = Vec::new();
    while let Some(h) = FrameHeader::parse(rest) {
        lens.push((h.kind, h.length, h.flags));
        rest = &rest[FRAME_HEADER_LEN + h.length as usize..];
    }
    assert_eq!(
        lens,
        [
            (FrameKind::PushPromise, 10, 0),
            (FrameKind::Continuation, 10, 0),
            (FrameKind::Continuation, 4, flags::END_HEADERS)
        ]
    );
    let (got, _, kind) = reassemble(&buf, 10);
    assert_eq!(got, block);
    assert_eq!(
        kind,
        BlockKind::PushPromise {
            promised_stream_id: sid(2)
        }
    );
}

/// Three frames of different kinds, back to back.
fn sample_stream() -> Vec<u8> {
    let mut buf = Vec::new();
    Settings {
        initial_window_size: Some(1 << 20),
        ..Settings::default()
    }
    .encode(&mut buf);
    encode_headers(sid(1), &[0x82; 50], false, 16_384, &mut buf);
    Data {
        stream_id: sid(1),
        data: &[1; 300],
        end_stream: true,
        pad_len: Some(3),
    }
    .encode(&mut buf);
    Ping::new([9; 8]).encode(&mut buf);
    GoAway::new(sid(1), ErrorCode::NO_ERROR).encode(&mut buf);
    buf
}

/// Feed `input` in the given chunk sizes, as a socket reader would, and
/// return each decoded frame re-encoded.
fn feed(input: &[u8], chunks: &[usize]) -> Vec<Vec<u8>> {
    let dec = FrameDecoder::new();
    let mut pending: Vec<u8> = Vec::new();
    let mut out = Vec::new();
    let mut pos = 0;
    let mut chunks = chunks.iter().cycle();
    while pos < input.len() {
        let n = (*chunks.next().unwrap()).clamp(1, input.len() - pos);
        pending.extend_from_slice(&input[pos..pos + n]);
        pos += n;
        loop {
            match dec.decode(&pending).unwrap() {
                Decoded::NeedMore(k) => {
                    assert!(k >= 1);
                    // The input holds only valid frames, so what NeedMore
                    // asks for must still be ahead.
                    if !pending.is_empty() {
                        assert!(k <= input.len() - pos);
                    }
                    break;
                }
                Decoded::Frame { frame, consumed } => {
                    let mut re = Vec::new();
                    frame.encode(&mut re);
                    out.push(re);
                    pending.drain(..consumed);
                }
                Decoded::StreamError { .. } => panic!("unexpected stream error"),
            }
        }
    }
    assert!(pending.is_empty());
    out
}

fn split_frames(input: &[u8]) -> Vec<Vec<u8>> {
    let mut out = Vec::new();
    let mut rest = input;
    while let Some(h) = FrameHeader::parse(rest) {
        let n = FRAME_HEADER_LEN + h.length as usize;
        out.push(rest[..n].to_vec());
        rest = &rest[n..];
    }
    out
}

#[test]
fn byte_by_byte_recovers_every_frame() {
    let input = sample_stream();
    let got = feed(&input, &[1]);
    assert_eq!(got, split_frames(&input));
    assert_eq!(got.len(), 5);
}

#[test]
fn need_more_is_exact_once_header_is_known() {
    let input = sample_stream();
    let dec = FrameDecoder::new();
    assert_eq!(dec.decode(&input[..0]), Ok(Decoded::NeedMore(9)));
    assert_eq!(dec.decode(&input[..4]), Ok(Decoded::NeedMore(5)));
    let first = FRAME_HEADER_LEN + 6;
    for k in 9..first {
        assert_eq!(dec.decode(&input[..k]), Ok(Decoded::NeedMore(first - k)));
    }
    assert!(
        matches!(dec.decode(&input[..first]), Ok(Decoded::Frame { consumed, .. }) if consumed == first)
    );
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(256))]

    #[test]
    fn random_splits_recover_every_frame(chunks in proptest::collection::vec(1usize..64, 1..16)) {
        let input = sample_stream();
        prop_assert_eq!(feed(&input, &chunks), split_frames(&input));
    }
}

// ---- arbitrary frames ----

#[derive(Debug, Clone)]
enum Spec {
    Data(u32, Vec<u8>, bool, Option<u8>),
    Headers(
        u32,
        Option<(u32, bool, u8)>,
        Vec<u8>,
        bool,
        bool,
        Option<u8>,
    ),
    Priority(u32, u32, bool, u8),
    Rst(u32, u32),
    Settings(Settings),
    Push(u32, u32, Vec<u8>, bool, Option<u8>),
    Ping(bool, [u8; 8]),
    GoAway(u32, u32, Vec<u8>),
    WindowUpdate(u32, u32),
    Continuation(u32, Vec<u8>, bool),
    Unknown(u8, u8, u32, Vec<u8>),
}

/// A dependency that is not the stream itself.
fn not_self(stream: u32, dep: u32) -> StreamId {
    if dep == stream {
        sid(dep ^ 1)
    } else {
        sid(dep)
    }
}

impl Spec {
    fn frame(&self) -> Frame<'_> {
        match self {
            Spec::Data(s, d, e, p) => Frame::Data(Data {
                stream_id: sid(*s),
                data: d,
                end_stream: *e,
                pad_len: *p,
            }),
            Spec::Headers(s, pr, d, es, eh, p) => Frame::Headers(Headers {
                stream_id: sid(*s),
                priority: pr.map(|(dep, x, w)| PrioritySpec {
                    dependency: not_self(*s, dep),
                    exclusive: x,
                    weight: w,
                }),
                fragment: d,
                end_stream: *es,
                end_headers: *eh,
                pad_len: *p,
            }),
            Spec::Priority(s, dep, x, w) => Frame::Priority(Priority {
                stream_id: sid(*s),
                spec: PrioritySpec {
                    dependency: not_self(*s, *dep),
                    exclusive: *x,
                    weight: *w,
                },
            }),
            Spec::Rst(s, c) => Frame::RstStream(RstStream::new(sid(*s), ErrorCode(*c))),
            Spec::Settings(s) => Frame::Settings(*s),
            Spec::Push(s, pr, d, eh, p) => Frame::PushPromise(PushPromise {
                stream_id: sid(*s),
                promised_stream_id: sid(*pr),
                fragment: d,
                end_headers: *eh,
                pad_len: *p,
            }),
            Spec::Ping(a, p) => Frame::Ping(Ping {
                ack: *a,
                payload: *p,
            }),
            Spec::GoAway(l, c, d) => Frame::GoAway(GoAway {
                last_stream_id: sid(*l),
                error_code: ErrorCode(*c),
                debug_data: d,
            }),
            Spec::WindowUpdate(s, i) => Frame::WindowUpdate(WindowUpdate::new(sid(*s), *i)),
            Spec::Continuation(s, d, e) => Frame::Continuation(Continuation {
                stream_id: sid(*s),
                fragment: d,
                end_headers: *e,
            }),
            Spec::Unknown(k, f, s, d) => Frame::Unknown {
                header: FrameHeader::new(FrameKind::Unknown(*k), *f, sid(*s), d.len() as u32),
                payload: d,
            },
        }
    }
}

fn bytes() -> impl Strategy<Value = Vec<u8>> {
    proptest::collection::vec(any::<u8>(), 0..200)
}

fn settings() -> impl Strategy<Value = Settings> {
    (
        any::<bool>(),
        (
            proptest::option::of(any::<u32>()),
            proptest::option::of(any::<bool>()),
            proptest::option::of(any::<u32>()),
            proptest::option::of(0u32..=(1 << 31) - 1),
        ),
        (
            proptest::option::of((1u32 << 14)..=(1 << 24) - 1),
            proptest::option::of(any::<u32>()),
            proptest::option::of(any::<bool>()),
        ),
    )
        .prop_map(|(ack, (h, p, m, i), (f, l, c))| {
            if ack {
                Settings::ack()
            } else {
                Settings {
                    ack: false,
                    header_table_size: h,
                    enable_push: p,
                    max_concurrent_streams: m,
                    initial_window_size: i,
                    max_frame_size: f,
                    max_header_list_size: l,
                    enable_connect_protocol: c,
                    no_rfc7540_priorities: c.map(|v| !v),
                }
            }
        })
}

fn spec() -> impl Strategy<Value = Spec> {
    let stream = 1u32..=0x7fff_ffff;
    let any_stream = 0u32..=0x7fff_ffff;
    let pad = proptest::option::of(any::<u8>());
    prop_oneof![
        (stream.clone(), bytes(), any::<bool>(), pad.clone())
            .prop_map(|(s, d, e, p)| Spec::Data(s, d, e, p)),
        (
            stream.clone(),
            proptest::option::of((any_stream.clone(), any::<bool>(), any::<u8>())),
            bytes(),
            any::<bool>(),
            any::<bool>(),
            pad.clone()
        )
            .prop_map(|(s, pr, d, es, eh, p)| Spec::Headers(s, pr, d, es, eh, p)),
        (
            stream.clone(),
            any_stream.clone(),
            any::<bool>(),
            any::<u8>()
        )
            .prop_map(|(s, d, x, w)| Spec::Priority(s, d, x, w)),
        (stream.clone(), any::<u32>()).prop_map(|(s, c)| Spec::Rst(s, c)),
        settings().prop_map(Spec::Settings),
        (
            stream.clone(),
            (1u32..=0x3fff_ffff).prop_map(|n| n * 2),
            bytes(),
            any::<bool>(),
            pad
        )
            .prop_map(|(s, pr, d, eh, p)| Spec::Push(s, pr, d, eh, p)),
        (any::<bool>(), any::<[u8; 8]>()).prop_map(|(a, p)| Spec::Ping(a, p)),
        (any_stream.clone(), any::<u32>(), bytes()).prop_map(|(l, c, d)| Spec::GoAway(l, c, d)),
        (any_stream.clone(), 1u32..=0x7fff_ffff).prop_map(|(s, i)| Spec::WindowUpdate(s, i)),
        (stream, bytes(), any::<bool>()).prop_map(|(s, d, e)| Spec::Continuation(s, d, e)),
        (10u8..=255, any::<u8>(), any_stream, bytes())
            .prop_map(|(k, f, s, d)| Spec::Unknown(k, f, s, d)),
    ]
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(512))]

    #[test]
    fn arbitrary_frames_round_trip(specs in proptest::collection::vec(spec(), 1..6)) {
        // Each frame alone, then all of them back to back in one buffer.
        let mut all = Vec::new();
        for s in &specs {
            let f = s.frame();
            let mut buf = Vec::new();
            f.encode(&mut buf);
            prop_assert_eq!(decode_all(&buf), f);
            all.extend_from_slice(&buf);
        }
        let dec = FrameDecoder::new();
        let mut rest = &all[..];
        for s in &specs {
            match dec.decode(rest) {
                Ok(Decoded::Frame { frame, consumed }) => {
                    prop_assert_eq!(frame, s.frame());
                    rest = &rest[consumed..];
                }
                other => prop_assert!(false, "{:?}", other),
            }
        }
        prop_assert!(rest.is_empty());
    }

    #[test]
    fn split_blocks_reassemble(block in proptest::collection::vec(any::<u8>(), 0..3000),
                               max in 1u32..700, end_stream in any::<bool>()) {
        let mut buf = Vec::new();
        encode_headers(sid(7), &block, end_stream, max, &mut buf);
        let (got, heads, kind) = reassemble(&buf, max);
        prop_assert_eq!(got, block);
        prop_assert_eq!(kind, BlockKind::Headers { end_stream, priority: None });
        for (i, h) in heads.iter().enumerate() {
            prop_assert!(h.length <= max);
            prop_assert_eq!(h.has_flag(flags::END_HEADERS), i + 1 == heads.len());
            prop_assert_eq!(h.kind == FrameKind::Headers, i == 0);
        }
    }

    #[test]
    fn random_bytes_never_panic(data in proptest::collection::vec(any::<u8>(), 0..512)) {
        let dec = FrameDecoder::new();
        let mut asm = HeaderBlockAssembler::new(256, 4);
        let mut rest = &data[..];
        loop {
            match dec.decode(rest) {
                Ok(Decoded::Frame { frame, consumed }) => {
                    prop_assert!(consumed >= FRAME_HEADER_LEN && consumed <= rest.len());
                    rest = &rest[consumed..];
                    if asm.push(&frame).is_err() {
                        break;
                    }
                }
                Ok(Decoded::StreamError { consumed, frame, .. }) => {
                    rest = &rest[consumed..];
                    if let Some(f) = frame {
                        if asm.push(&f).is_err() {
                            break;
                        }
                    }
                }
                Ok(Decoded::NeedMore(n)) => {
                    prop_assert!(n > 0);
                    break;
                }
                Err(_) => break,
            }
        }
        // Every frame kind's decoder directly, with a header that lies.
        let _ = h2lab_wire::frame::check_preface(&data);
        for k in 0..=10u8 {
            for fl in [0u8, 0xff, flags::PADDED, flags::PRIORITY | flags::PADDED] {
                for s in [0u32, 1, 2] {
                    let h = FrameHeader::new(FrameKind::from_u8(k), fl, sid(s), 7);
                    if let Ok(f) = Frame::decode(h, &data) {
                        let mut re = Vec::new();
                        f.encode(&mut re);
                        let h2 = FrameHeader::parse(&re).unwrap();
                        prop_assert_eq!(Frame::decode(h2, &re[FRAME_HEADER_LEN..]), Ok(f));
                    }
                }
            }
        }
    }

    #[test]
    fn random_frames_with_valid_headers_never_panic(
        kind in 0u8..12, fl in any::<u8>(), stream in any::<u32>(),
        payload in proptest::collection::vec(any::<u8>(), 0..64)
    ) {
        let mut buf = FrameHeader::new(FrameKind::from_u8(kind), fl, StreamId::new(stream), payload.len() as u32).to_bytes().to_vec();
        buf.extend_from_slice(&payload);
        match FrameDecoder::new().decode(&buf) {
            Ok(Decoded::Frame { frame, consumed }) => {
                prop_assert_eq!(consumed, buf.len());
                let mut re = Vec::new();
                frame.encode(&mut re);
                prop_assert_eq!(decode_all(&re), frame);
            }
            Ok(Decoded::StreamError { error, consumed, .. }) => {
                prop_assert_eq!(consumed, buf.len());
                prop_assert!(!error.is_connection_error());
            }
            Ok(Decoded::NeedMore(_)) => prop_assert!(false, "complete frame"),
            Err(e) => prop_assert!(e.is_connection_error()),
        }
    }
}
