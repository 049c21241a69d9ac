//! HTTP/3 frames, SETTINGS, stream types and control-stream rules (RFC 9114 §6, §7), one
//! test per rule.

use h2lab_wire::h3::frame::{
    reserved_frame_type, types, Decoded, Frame, FrameDecoder, Settings, StreamContext,
};
use h2lab_wire::h3::stream::{ControlState, PeerStreams, UniAction, UniStreamType};
use h2lab_wire::h3::{varint, ErrorCode, Role, Scope};
use proptest::prelude::*;

fn encode(f: Frame<'_>) -> Vec<u8> {
    let mut v = Vec::new();
    f.encode(&mut v);
    v
}

/// Decodes a whole buffer, collecting non-DATA frames and concatenated DATA.
fn decode_all(ctx: StreamContext, input: &[u8]) -> Result<(Vec<String>, Vec<u8>), ErrorCode> {
    let mut d = FrameDecoder::new(ctx);
    let (mut frames, mut data, mut pos) = (Vec::new(), Vec::new(), 0);
    loop {
        let (got, n) = d.decode(&input[pos..]).map_err(|e| e.code)?;
        pos += n;
        match got {
            Decoded::NeedMore => break,
            Decoded::Data { chunk, .. } => data.extend_from_slice(chunk),
            Decoded::Frame(f) => frames.push(format!("{f:?}")),
            Decoded::Skipped { ty } => {
                if frames.last() != Some(&format!("skip {ty}")) {
                    frames.push(format!("skip {ty}"))
                }
            }
        }
    }
    assert_eq!(pos, input.len(), "all consumed");
    Ok((frames, data))
}

const SERVER_REQ: StreamContext = StreamContext::Request {
    local: Role::Server,
};
const CLIENT_REQ: StreamContext = StreamContext::Request {
    local: Role::Client,
};
const SERVER_CTRL: StreamContext = StreamContext::Control {
    local: Role::Server,
};
const CLIENT_CTRL: StreamContext = StreamContext::Control {
    local: Role::Client,
};

#[test]
fn every_frame_type_round_trips() {
    let settings = Settings {
        qpack_max_table_capacity: 4096,
        max_field_section_size: Some(16384),
        qpack_blocked_streams: 16,
        enable_connect_protocol: true,
        h3_datagram: true,
        grease: None,
    };
    for f in [
        Frame::Data(b"hello"),
        Frame::Data(b""),
        Frame::Headers(&[0, 0, 0xd1]),
        Frame::CancelPush(7),
        Frame::Settings(settings),
        Frame::Settings(Settings::default()),
        Frame::PushPromise {
            push_id: 3,
            section: &[0, 0, 0xd1],
        },
        Frame::GoAway(1 << 40),
        Frame::MaxPushId(64),
        Frame::Unknown {
            ty: reserved_frame_type(3),
            payload: b"grease",
        },
    ] {
        let b = encode(f);
        let (ty, n) = varint::decode(&b).unwrap();
        let (len, m) = varint::decode(&b[n..]).unwrap();
        assert_eq!(len as usize, b.len() - n - m);
        assert_eq!(Frame::decode(ty, &b[n + m..]), Ok(f), "{f:?}");
    }
}

#[test]
fn single_varint_payloads_must_be_exact() {
    for ty in [types::CANCEL_PUSH, types::GOAWAY, types::MAX_PUSH_ID] {
        assert_eq!(
            Frame::decode(ty, &[]).unwrap_err().code,
            ErrorCode::H3_FRAME_ERROR
        );
        assert_eq!(
            Frame::decode(ty, &[0x01, 0x00]).unwrap_err().code,
            ErrorCode::H3_FRAME_ERROR
        );
        assert_eq!(
            Frame::decode(ty, &[0x40]).unwrap_err().code,
            ErrorCode::H3_FRAME_ERROR
        );
    }
    assert_eq!(
        Frame::decode(types::PUSH_PROMISE, &[]).unwrap_err().code,
        ErrorCode::H3_FRAME_ERROR
    );
}

#[test]
fn http2_frame_types_are_rejected() {
    for ty in [0x02, 0x06, 0x08, 0x09] {
        let e = Frame::decode(ty, &[]).unwrap_err();
        assert_eq!(
            (e.code, e.scope),
            (ErrorCode::H3_FRAME_UNEXPECTED, Scope::Connection),
            "{ty}"
        );
    }
}

#[test]
fn settings_rules() {
    let pairs = |p: &[(u64, u64)]| {
        let mut v = Vec::new();
        for &(a, b) in p {
            varint::encode(a, &mut v);
            varint::encode(b, &mut v);
        }
        v
    };
    // Unknown and reserved identifiers are ignored.
    let s = Settings::decode(&pairs(&[(0x21, 5), (0x1234, 1), (0x01, 100), (0x07, 3)])).unwrap();
    assert_eq!(
        (s.qpack_max_table_capacity, s.qpack_blocked_streams),
        (100, 3)
    );
    assert_eq!(s.max_field_section_size, None);
    // HTTP/2 identifiers are an error.
    for id in [0x00, 0x02, 0x03, 0x04, 0x05] {
        assert_eq!(
            Settings::decode(&pairs(&[(id, 1)])).unwrap_err().code,
            ErrorCode::H3_SETTINGS_ERROR,
            "{id}"
        );
    }
    // Duplicates.
    assert_eq!(
        Settings::decode(&pairs(&[(0x06, 1), (0x06, 2)]))
            .unwrap_err()
            .code,
        ErrorCode::H3_SETTINGS_ERROR
    );
    // Booleans other than 0/1.
    assert_eq!(
        Settings::decode(&pairs(&[(0x08, 2)])).unwrap_err().code,
        ErrorCode::H3_SETTINGS_ERROR
    );
    assert_eq!(
        Settings::decode(&pairs(&[(0x33, 7)])).unwrap_err().code,
        ErrorCode::H3_SETTINGS_ERROR
    );
    // Truncated pair.
    assert_eq!(
        Settings::decode(&[0x01]).unwrap_err().code,
        ErrorCode::H3_FRAME_ERROR
    );
    // Grease is written and ignored.
    let g = Settings {
        grease: Some(2),
        ..Settings::default()
    };
    let mut p = Vec::new();
    g.encode_payload(&mut p);
    assert_eq!(Settings::decode(&p).unwrap(), Settings::default());
}

#[test]
fn decoder_handles_every_split_and_streams_data() {
    let mut input = Vec::new();
    Frame::Headers(&[0, 0, 0xd1]).encode(&mut input);
    Frame::Unknown {
        ty: 0x21,
        payload: &[9; 100],
    }
    .encode(&mut input);
    Frame::Data(&[7; 300]).encode(&mut input);
    Frame::Data(b"").encode(&mut input);
    Frame::Headers(&[0, 0]).encode(&mut input);
    let whole = decode_all(SERVER_REQ, &input).unwrap();
    assert_eq!(whole.1, vec![7; 300]);
    assert_eq!(whole.0.len(), 3, "{:?}", whole.0);
    for cut in 0..input.len() {
        // Feed in two pieces, keeping what was not consumed.
        let mut d = FrameDecoder::new(SERVER_REQ);
        let (mut buf, mut data, mut frames) = (input[..cut].to_vec(), Vec::new(), 0);
        let mut fed_rest = false;
        loop {
            let (got, n) = d.decode(&buf).unwrap();
            match got {
                Decoded::Data { chunk, .. } => data.extend_from_slice(chunk),
                Decoded::Frame(_) => frames += 1,
                Decoded::Skipped { .. } => {}
                Decoded::NeedMore => {
                    if fed_rest {
                        break;
                    }
                    buf.extend_from_slice(&input[cut..]);
                    fed_rest = true;
                }
            }
            buf.drain(..n);
        }
        assert_eq!((frames, data.len()), (2, 300), "cut {cut}");
        assert!(d.at_boundary());
    }
}

#[test]
fn data_is_zero_copy_and_never_buffered() {
    let mut d = FrameDecoder::new(CLIENT_REQ);
    // A 10 MB DATA frame header followed by 5 octets: the 5 octets come out at once.
    let mut input = Vec::new();
    h2lab_wire::h3::request::write_data_header(10_000_000, &mut input);
    input.extend_from_slice(b"abcde");
    let (got, n) = d.decode(&input).unwrap();
    assert_eq!(
        got,
        Decoded::Data {
            chunk: b"abcde",
            end: false
        }
    );
    assert_eq!(n, input.len());
    assert!(!d.at_boundary());
}

#[test]
fn non_data_frames_have_a_size_limit() {
    let mut d = FrameDecoder::new(SERVER_REQ);
    d.set_max_frame_len(10);
    let mut input = Vec::new();
    h2lab_wire::h3::frame::write_frame_header(types::HEADERS, 11, &mut input);
    assert_eq!(
        d.decode(&input).unwrap_err().code,
        ErrorCode::H3_EXCESSIVE_LOAD
    );
}

#[test]
fn control_stream_rules() {
    let settings = encode(Frame::Settings(Settings::default()));
    // Must start with SETTINGS.
    assert_eq!(
        decode_all(SERVER_CTRL, &encode(Frame::GoAway(0))).unwrap_err(),
        ErrorCode::H3_MISSING_SETTINGS
    );
    // A grease frame first is not SETTINGS either.
    assert_eq!(
        decode_all(
            SERVER_CTRL,
            &encode(Frame::Unknown {
                ty: 0x21,
                payload: b""
            })
        )
        .unwrap_err(),
        ErrorCode::H3_MISSING_SETTINGS
    );
    let with = |f: Frame<'_>| [settings.clone(), encode(f)].concat();
    assert_eq!(
        decode_all(SERVER_CTRL, &with(Frame::Settings(Settings::default()))).unwrap_err(),
        ErrorCode::H3_FRAME_UNEXPECTED
    );
    assert_eq!(
        decode_all(SERVER_CTRL, &with(Frame::Data(b"x"))).unwrap_err(),
        ErrorCode::H3_FRAME_UNEXPECTED
    );
    assert_eq!(
        decode_all(SERVER_CTRL, &with(Frame::Headers(b"x"))).unwrap_err(),
        ErrorCode::H3_FRAME_UNEXPECTED
    );
    assert_eq!(
        decode_all(
            SERVER_CTRL,
            &with(Frame::PushPromise {
                push_id: 0,
                section: b""
            })
        )
        .unwrap_err(),
        ErrorCode::H3_FRAME_UNEXPECTED
    );
    // MAX_PUSH_ID only from clients.
    assert!(decode_all(SERVER_CTRL, &with(Frame::MaxPushId(3))).is_ok());
    assert_eq!(
        decode_all(CLIENT_CTRL, &with(Frame::MaxPushId(3))).unwrap_err(),
        ErrorCode::H3_FRAME_UNEXPECTED
    );
    assert!(decode_all(CLIENT_CTRL, &with(Frame::GoAway(8))).is_ok());
    assert!(decode_all(CLIENT_CTRL, &with(Frame::CancelPush(1))).is_ok());
}

#[test]
fn request_stream_rejects_control_frames_and_client_push_promise() {
    for f in [
        Frame::CancelPush(1),
        Frame::Settings(Settings::default()),
        Frame::GoAway(0),
        Frame::MaxPushId(1),
    ] {
        assert_eq!(
            decode_all(SERVER_REQ, &encode(f)).unwrap_err(),
            ErrorCode::H3_FRAME_UNEXPECTED,
            "{f:?}"
        );
        assert_eq!(
            decode_all(StreamContext::Push, &encode(f)).unwrap_err(),
            ErrorCode::H3_FRAME_UNEXPECTED,
            "{f:?}"
        );
    }
    let pp = encode(Frame::PushPromise {
        push_id: 1,
        section: &[0, 0],
    });
    assert_eq!(
        decode_all(SERVER_REQ, &pp).unwrap_err(),
        ErrorCode::H3_FRAME_UNEXPECTED
    );
    assert_eq!(
        decode_all(StreamContext::Push, &pp).unwrap_err(),
        ErrorCode::H3_FRAME_UNEXPECTED
    );
    assert!(decode_all(CLIENT_REQ, &pp).is_ok());
}

#[test]
fn unidirectional_stream_types_and_rules() {
    for t in [
        UniStreamType::Control,
        UniStreamType::Push(9),
        UniStreamType::QpackEncoder,
        UniStreamType::QpackDecoder,
        UniStreamType::Unknown(0x21 + 0x1f),
    ] {
        let mut b = Vec::new();
        t.write(&mut b);
        assert_eq!(UniStreamType::parse(&b), Some((t, b.len())));
        assert_eq!(UniStreamType::parse(&b[..b.len() - 1]), None);
    }
    assert!(UniStreamType::Unknown(0x40).is_reserved());
    let mut server = PeerStreams::new(Role::Server);
    assert_eq!(
        server.open(2, UniStreamType::Control),
        Ok(UniAction::Control)
    );
    assert_eq!(
        server.open(6, UniStreamType::QpackEncoder),
        Ok(UniAction::QpackEncoder)
    );
    assert_eq!(
        server.open(10, UniStreamType::QpackDecoder),
        Ok(UniAction::QpackDecoder)
    );
    assert_eq!(
        server.open(14, UniStreamType::Unknown(0x21)),
        Ok(UniAction::Ignore(ErrorCode::H3_STREAM_CREATION_ERROR))
    );
    for t in [
        UniStreamType::Control,
        UniStreamType::QpackEncoder,
        UniStreamType::QpackDecoder,
        UniStreamType::Push(0),
    ] {
        assert_eq!(
            server.open(18, t).unwrap_err().code,
            ErrorCode::H3_STREAM_CREATION_ERROR,
            "{t:?}"
        );
    }
    assert_eq!(
        server.closed(6).unwrap_err().code,
        ErrorCode::H3_CLOSED_CRITICAL_STREAM
    );
    assert_eq!(server.closed(14), Ok(()));
    let mut client = PeerStreams::new(Role::Client);
    assert_eq!(
        client.open(3, UniStreamType::Push(0)),
        Ok(UniAction::Push(0))
    );
}

#[test]
fn goaway_and_max_push_id_ordering() {
    let mut c = ControlState::new(Role::Client);
    assert_eq!(c.on_goaway(2).unwrap_err().code, ErrorCode::H3_ID_ERROR);
    assert_eq!(c.on_goaway(8), Ok(()));
    assert_eq!(c.on_goaway(8), Ok(()));
    assert_eq!(c.on_goaway(12).unwrap_err().code, ErrorCode::H3_ID_ERROR);
    assert_eq!(c.on_goaway(4), Ok(()));
    assert_eq!(c.goaway(), Some(4));
    let mut s = ControlState::new(Role::Server);
    assert_eq!(s.on_goaway(3), Ok(()), "push IDs from a client: any value");
    assert_eq!(s.on_max_push_id(10), Ok(()));
    assert_eq!(
        s.on_max_push_id(9).unwrap_err().code,
        ErrorCode::H3_ID_ERROR
    );
}

#[test]
fn error_codes_have_their_rfc_values() {
    assert_eq!(ErrorCode::H3_NO_ERROR.0, 0x100);
    assert_eq!(ErrorCode::H3_VERSION_FALLBACK.0, 0x110);
    assert_eq!(
        ErrorCode::H3_MISSING_SETTINGS.to_string(),
        "H3_MISSING_SETTINGS"
    );
    assert_eq!(ErrorCode(0x21).to_string(), "0x21");
    assert!(h2lab_wire::h3::is_reserved(0x21 + 0x1f * 1000));
    assert_eq!(
        ErrorCode::from_qpack(h2lab_wire::qpack::QpackErrorCode::DecoderStreamError),
        ErrorCode::QPACK_DECODER_STREAM_ERROR
    );
}

proptest! {
    #[test]
    fn arbitrary_bytes_never_panic(input in proptest::collection::vec(any::<u8>(), 0..200), ctx in 0u8..5) {
        let ctx = match ctx {
            0 => SERVER_REQ,
            1 => CLIENT_REQ,
            2 => SERVER_CTRL,
            3 => CLIENT_CTRL,
            _ => StreamContext::Push,
        };
        let mut d = FrameDecoder::new(ctx);
        let mut pos = 0;
        while let Ok((got, n)) = d.decode(&input[pos..]) {
            pos += n;
            if got == Decoded::NeedMore {
                break;
            }
            prop_assert!(pos <= input.len());
        }
    }

    #[test]
    fn varints_round_trip(v in 0u64..=varint::MAX) {
        let mut b = Vec::new();
        varint::encode(v, &mut b);
        prop_assert_eq!(varint::decode(&b), Some((v, b.len())));
    }

    #[test]
    fn frames_round_trip(ty in 0u8..4, id in 0u64..=varint::MAX, payload in proptest::collection::vec(any::<u8>(), 0..64)) {
        let f = match ty {
            0 => Frame::Data(&payload),
            1 => Frame::GoAway(id),
            2 => Frame::PushPromise { push_id: id, section: &payload },
            _ => Frame::Unknown { ty: 0x21 + 0x1f * (id % 1000), payload: &payload },
        };
        let b = encode(f);
        let (t, n) = varint::decode(&b).unwrap();
        let (_, m) = varint::decode(&b[n..]).unwrap();
        prop_assert_eq!(Frame::decode(t, &b[n + m..]), Ok(f));
    }
}
