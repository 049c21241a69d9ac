//! Field block reassembly: fast path, buffering, limits, interleaving rules.

use h2lab_wire::frame::{
    encode_headers, Assembled, BlockKind, Continuation, Data, Decoded, ErrorCode, Frame,
    FrameDecoder, FrameHeader, FrameKind, HeaderBlock, HeaderBlockAssembler, Headers, Ping,
    PrioritySpec, PushPromise, Scope, StreamId, RULE_BLOCK_TOO_LARGE, RULE_TOO_MANY_CONTINUATIONS,
};

fn sid(n: u32) -> StreamId {
    StreamId::new(n)
}

fn open_headers(stream: u32, frag: &[u8]) -> Frame<'_> {
    Frame::Headers(Headers {
        end_headers: false,
        end_stream: true,
        ..Headers::new(sid(stream), frag)
    })
}

fn cont(stream: u32, frag: &[u8], end: bool) -> Frame<'_> {
    Frame::Continuation(Continuation {
        stream_id: sid(stream),
        fragment: frag,
        end_headers: end,
    })
}

#[track_caller]
fn complete<'a>(r: Result<Assembled<'a>, h2lab_wire::frame::H2Error>) -> HeaderBlock<'a> {
    match r {
        Ok(Assembled::Complete(b)) => b,
        other => panic!("expected a complete block, got {other:?}"),
    }
}

#[track_caller]
fn conn_err(r: Result<Assembled<'_>, h2lab_wire::frame::H2Error>, code: ErrorCode) -> &'static str {
    match r {
        Err(e) => {
            assert_eq!(e.scope, Scope::Connection);
            assert_eq!(e.code, code);
            e.rule
        }
        Ok(a) => panic!("expected {code}, got {a:?}"),
    }
}

#[test]
fn single_frame_block_is_borrowed_without_copy() {
    let mut asm = HeaderBlockAssembler::default();
    let frag = b"\x82\x86\x84".to_vec();
    let prio = PrioritySpec {
        dependency: sid(0),
        exclusive: false,
        weight: 15,
    };
    let f = Frame::Headers(Headers {
        priority: Some(prio),
        end_stream: true,
        ..Headers::new(sid(1), &frag)
    });
    let b = complete(asm.push(&f));
    assert_eq!(b.block.as_ptr(), frag.as_ptr());
    assert_eq!(b.stream_id, sid(1));
    assert_eq!(
        b.kind,
        BlockKind::Headers {
            end_stream: true,
            priority: Some(prio)
        }
    );
    assert!(!asm.is_open());

    let p = Frame::PushPromise(PushPromise {
        stream_id: sid(1),
        promised_stream_id: sid(2),
        fragment: &frag,
        end_headers: true,
        pad_len: None,
    });
    let b = complete(asm.push(&p));
    assert_eq!(b.block.as_ptr(), frag.as_ptr());
    assert_eq!(
        b.kind,
        BlockKind::PushPromise {
            promised_stream_id: sid(2)
        }
    );
}

#[test]
fn other_frames_pass_through_when_no_block_is_open() {
    let mut asm = HeaderBlockAssembler::default();
    assert_eq!(
        asm.push(&Frame::Data(Data::new(sid(1), b"x"))),
        Ok(Assembled::Other)
    );
    assert_eq!(
        asm.push(&Frame::Ping(Ping::new([0; 8]))),
        Ok(Assembled::Other)
    );
    let unknown = Frame::Unknown {
        header: FrameHeader::new(FrameKind::Unknown(0xf0), 0, sid(0), 0),
        payload: b"",
    };
    assert_eq!(asm.push(&unknown), Ok(Assembled::Other));
}

#[test]
fn multi_frame_block_is_concatenated_and_buffer_reused() {
    let mut asm = HeaderBlockAssembler::new(1024, 8);
    let mut first_ptr = None;
    for round in 0..3 {
        assert_eq!(asm.push(&open_headers(3, b"abc")), Ok(Assembled::Pending));
        assert!(asm.is_open());
        assert_eq!(asm.open_stream_id(), Some(sid(3)));
        assert_eq!(asm.push(&cont(3, b"", false)), Ok(Assembled::Pending));
        assert_eq!(asm.push(&cont(3, b"def", false)), Ok(Assembled::Pending));
        let b = complete(asm.push(&cont(3, b"gh", true)));
        assert_eq!(b.block, b"abcdefgh");
        assert_eq!(
            b.kind,
            BlockKind::Headers {
                end_stream: true,
                priority: None
            }
        );
        let ptr = b.block.as_ptr();
        // The internal buffer is reused, not reallocated, per block.
        match first_ptr {
            None => first_ptr = Some(ptr),
            Some(p) => assert_eq!(p, ptr, "round {round}"),
        }
        assert!(!asm.is_open());
    }
    // A single-frame block in between does not disturb anything.
    let b = complete(asm.push(&Frame::Headers(Headers::new(sid(5), b"z"))));
    assert_eq!(b.block, b"z");
}

#[test]
fn push_promise_block_over_continuations() {
    let mut asm = HeaderBlockAssembler::default();
    let p = Frame::PushPromise(PushPromise {
        stream_id: sid(1),
        promised_stream_id: sid(4),
        fragment: b"12",
        end_headers: false,
        pad_len: None,
    });
    assert_eq!(asm.push(&p), Ok(Assembled::Pending));
    let b = complete(asm.push(&cont(1, b"34", true)));
    assert_eq!(b.block, b"1234");
    assert_eq!(b.stream_id, sid(1));
    assert_eq!(
        b.kind,
        BlockKind::PushPromise {
            promised_stream_id: sid(4)
        }
    );
}

#[test]
fn continuation_without_open_block() {
    let mut asm = HeaderBlockAssembler::default();
    conn_err(asm.push(&cont(1, b"x", true)), ErrorCode::PROTOCOL_ERROR);
    conn_err(asm.push(&cont(1, b"x", false)), ErrorCode::PROTOCOL_ERROR);
    // After a completed block, another CONTINUATION is also unexpected.
    complete(asm.push(&Frame::Headers(Headers::new(sid(1), b"a"))));
    conn_err(asm.push(&cont(1, b"x", true)), ErrorCode::PROTOCOL_ERROR);
}

#[test]
fn continuation_on_another_stream() {
    let mut asm = HeaderBlockAssembler::default();
    asm.push(&open_headers(1, b"a")).unwrap();
    conn_err(asm.push(&cont(3, b"b", true)), ErrorCode::PROTOCOL_ERROR);
    // The assembler is reset after an error.
    assert!(!asm.is_open());
}

#[test]
fn any_other_frame_inside_a_block() {
    let unknown = Frame::Unknown {
        header: FrameHeader::new(FrameKind::Unknown(0x20), 0, sid(1), 0),
        payload: b"",
    };
    let others = [
        Frame::Data(Data::new(sid(1), b"x")),
        Frame::Ping(Ping::new([0; 8])),
        Frame::Headers(Headers::new(sid(1), b"x")),
        open_headers(5, b"x"),
        unknown, // RFC 9113 §5.5: not even extension frames
    ];
    for f in others {
        let mut asm = HeaderBlockAssembler::default();
        asm.push(&open_headers(1, b"a")).unwrap();
        conn_err(asm.push(&f), ErrorCode::PROTOCOL_ERROR);
    }
}

#[test]
fn block_size_limit() {
    // Exactly at the limit is fine.
    let mut asm = HeaderBlockAssembler::new(6, 8);
    asm.push(&open_headers(1, b"abc")).unwrap();
    assert_eq!(complete(asm.push(&cont(1, b"def", true))).block, b"abcdef");
    // One octet more is ENHANCE_YOUR_CALM, decided before buffering it.
    asm.push(&open_headers(1, b"abc")).unwrap();
    let rule = conn_err(
        asm.push(&cont(1, b"defg", true)),
        ErrorCode::ENHANCE_YOUR_CALM,
    );
    assert_eq!(rule, RULE_BLOCK_TOO_LARGE);
    // The same limit applies to the opening frame and to a single-frame block.
    conn_err(
        asm.push(&open_headers(1, b"1234567")),
        ErrorCode::ENHANCE_YOUR_CALM,
    );
    conn_err(
        asm.push(&Frame::Headers(Headers::new(sid(1), b"1234567"))),
        ErrorCode::ENHANCE_YOUR_CALM,
    );
    assert_eq!(asm.max_block_size(), 6);
}

#[test]
fn continuation_flood_is_cut_off() {
    let mut asm = HeaderBlockAssembler::new(1 << 20, 3);
    asm.push(&open_headers(1, b"")).unwrap();
    for _ in 0..3 {
        assert_eq!(asm.push(&cont(1, b"", false)), Ok(Assembled::Pending));
    }
    let rule = conn_err(asm.push(&cont(1, b"", true)), ErrorCode::ENHANCE_YOUR_CALM);
    assert_eq!(rule, RULE_TOO_MANY_CONTINUATIONS);
    assert!(!asm.is_open());

    // The limit is per block: exactly `max` CONTINUATIONs complete fine,
    // again and again.
    for _ in 0..3 {
        asm.push(&open_headers(1, b"a")).unwrap();
        asm.push(&cont(1, b"b", false)).unwrap();
        asm.push(&cont(1, b"c", false)).unwrap();
        assert_eq!(complete(asm.push(&cont(1, b"d", true))).block, b"abcd");
    }
    assert_eq!(asm.max_continuations(), 3);
}

#[test]
fn reset_discards_an_open_block() {
    let mut asm = HeaderBlockAssembler::default();
    asm.push(&open_headers(1, b"a")).unwrap();
    asm.reset();
    assert!(!asm.is_open());
    assert_eq!(
        asm.push(&Frame::Ping(Ping::new([0; 8]))),
        Ok(Assembled::Other)
    );
}

#[test]
fn with_frame_decoder_and_self_dependent_headers() {
    // HEADERS (self-dependent, no END_HEADERS) + CONTINUATION on the wire:
    // the decoder reports a stream error but hands over the frame, the
    // assembler still gets the whole block (HPACK must see it).
    let mut wire = Vec::new();
    Headers {
        priority: Some(PrioritySpec {
            dependency: sid(9),
            exclusive: false,
            weight: 1,
        }),
        end_headers: false,
        ..Headers::new(sid(9), b"ab")
    }
    .encode(&mut wire);
    Continuation {
        stream_id: sid(9),
        fragment: b"cd",
        end_headers: true,
    }
    .encode(&mut wire);

    let dec = FrameDecoder::new();
    let mut asm = HeaderBlockAssembler::default();
    let (frame, n) = match dec.decode(&wire).unwrap() {
        Decoded::StreamError {
            error,
            frame: Some(f),
            consumed,
        } => {
            assert_eq!(error.scope, Scope::Stream(sid(9)));
            assert_eq!(error.code, ErrorCode::PROTOCOL_ERROR);
            (f, consumed)
        }
        other => panic!("{other:?}"),
    };
    assert_eq!(asm.push(&frame), Ok(Assembled::Pending));
    let Decoded::Frame { frame, .. } = dec.decode(&wire[n..]).unwrap() else {
        panic!()
    };
    assert_eq!(complete(asm.push(&frame)).block, b"abcd");
}

#[test]
fn large_encoded_block_round_trips_through_assembler() {
    let block: Vec<u8> = (0..50_000u32).map(|i| (i * 7) as u8).collect();
    let mut wire = Vec::new();
    encode_headers(sid(1), &block, false, 16_384, &mut wire);
    let dec = FrameDecoder::new();
    let mut asm = HeaderBlockAssembler::new(64 * 1024, 16);
    let mut rest = &wire[..];
    let mut got = None;
    while !rest.is_empty() {
        let Decoded::Frame { frame, consumed } = dec.decode(rest).unwrap() else {
            panic!()
        };
        rest = &rest[consumed..];
        if let Assembled::Complete(b) = asm.push(&frame).unwrap() {
            got = Some(b.block.to_vec());
        }
    }
    assert_eq!(got.unwrap(), block);
}
