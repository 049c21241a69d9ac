//! Property tests: arbitrary input never panics, and how the input is split
//! into reads does not change what happens.

use h2lab_wire::h2::testing::{self as t, kind, read_frames, Recorder, TestPeer};
use h2lab_wire::h2::{Connection, Limits, LocalSettings, Role};
use proptest::prelude::*;

fn started(role: Role) -> (Connection, Vec<u8>, Recorder) {
    let local = if role == Role::Server {
        LocalSettings::server()
    } else {
        LocalSettings::client()
    };
    let mut c = Connection::new(role, local, Limits::new());
    let (mut out, mut rec) = (Vec::new(), Recorder::default());
    let mut b = Vec::new();
    if role == Role::Server {
        t::preface(&mut b);
    }
    t::settings(&mut b, &[]);
    t::settings_ack(&mut b);
    c.recv(&b, &mut out, &mut rec).unwrap();
    if role == Role::Client {
        // Open a few streams so frames from the "server" can hit them.
        for _ in 0..3 {
            c.send_request(
                |enc, buf| enc.encode([(&b":method"[..], &b"GET"[..])], buf),
                false,
                &mut out,
            )
            .unwrap();
        }
    }
    (c, out, rec)
}

/// Feed `input` split at `cuts`, keeping unconsumed tails like a caller's
/// read buffer does. Returns what was written and whether it failed.
fn feed_split(
    c: &mut Connection,
    input: &[u8],
    cuts: &[usize],
    out: &mut Vec<u8>,
    rec: &mut Recorder,
) -> bool {
    let mut buf = Vec::new();
    let mut at = 0;
    let mut points: Vec<usize> = cuts.iter().map(|&c| c % (input.len() + 1)).collect();
    points.push(input.len());
    points.sort_unstable();
    for p in points {
        buf.extend_from_slice(&input[at..p]);
        at = p;
        match c.recv(&buf, out, rec) {
            Ok(n) => {
                assert!(n <= buf.len());
                buf.drain(..n);
            }
            Err(e) => {
                // A GOAWAY with the error's code was written, and the error
                // sticks.
                let f = read_frames(out);
                let g = f
                    .iter()
                    .rev()
                    .find(|f| f.kind == kind::GOAWAY)
                    .expect("GOAWAY");
                assert_eq!(g.error_code(), Some(e.code()));
                assert_eq!(c.recv(&[], out, rec), Err(e));
                return true;
            }
        }
    }
    false
}

/// A structurally valid frame with arbitrary type, flags, stream and payload.
fn any_frame() -> impl Strategy<Value = Vec<u8>> {
    (
        0u8..12,
        any::<u8>(),
        0u32..12,
        proptest::collection::vec(any::<u8>(), 0..40),
    )
        .prop_map(|(k, flags, stream, payload)| {
            let mut b = Vec::new();
            t::raw_frame(&mut b, k, flags, stream, &payload);
            b
        })
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(384))]

    #[test]
    fn garbage_never_panics(
        server in any::<bool>(),
        input in proptest::collection::vec(any::<u8>(), 0..600),
        cuts in proptest::collection::vec(any::<usize>(), 0..6),
    ) {
        let role = if server { Role::Server } else { Role::Client };
        let (mut c, mut out, mut rec) = started(role);
        feed_split(&mut c, &input, &cuts, &mut out, &mut rec);
    }

    #[test]
    fn frame_soup_never_panics(
        server in any::<bool>(),
        frames in proptest::collection::vec(any_frame(), 0..40),
        cuts in proptest::collection::vec(any::<usize>(), 0..4),
    ) {
        let role = if server { Role::Server } else { Role::Client };
        let (mut c, mut out, mut rec) = started(role);
        let input = frames.concat();
        feed_split(&mut c, &input, &cuts, &mut out, &mut rec);
        prop_assert!(c.active_streams() <= 128);
        // Whatever happened, sending never panics either.
        for id in 1..12u32 {
            let id = h2lab_wire::h2::StreamId::new(id);
            let _ = c.send_data(id, b"abc", true, &mut out);
            let _ = c.send_header_fields(id, &[(b":status", b"200")], false, &mut out);
        }
    }

    #[test]
    fn read_boundaries_do_not_matter(cuts in proptest::collection::vec(any::<usize>(), 0..12)) {
        let mut peer = TestPeer::new();
        let mut input = Vec::new();
        t::preface(&mut input);
        t::settings(&mut input, &[(4, 1000)]);
        for id in [1u32, 3, 5] {
            let block = peer.request_block("POST", "/upload", &[("content-length", "40000")]);
            t::headers(&mut input, id, &block, false);
        }
        for id in [1u32, 3, 5] {
            t::data(&mut input, id, &[id as u8; 16000], false);
            t::ping(&mut input, false, [id as u8; 8]);
            t::data_padded(&mut input, id, &[0; 14000], 10, false);
            let block = peer.request_block("GET", "/", &[]);
            t::headers_flags(&mut input, id + 6, &block[..3], true, false);
            t::continuation(&mut input, id + 6, &block[3..], true);
            t::data(&mut input, id, &[1; 10000], true);
            t::window_update(&mut input, 0, 1000);
        }
        let one_shot = {
            let mut c = Connection::new(Role::Server, LocalSettings::server(), Limits::new());
            let (mut out, mut rec) = (Vec::new(), Recorder::default());
            prop_assert_eq!(c.recv(&input, &mut out, &mut rec).unwrap(), input.len());
            (out, rec.events)
        };
        let mut c = Connection::new(Role::Server, LocalSettings::server(), Limits::new());
        let (mut out, mut rec) = (Vec::new(), Recorder::default());
        prop_assert!(!feed_split(&mut c, &input, &cuts, &mut out, &mut rec));
        // Events may be split differently only in nothing: frames are atomic.
        prop_assert_eq!(&rec.events, &one_shot.1);
        prop_assert_eq!(&out, &one_shot.0);
        for id in [1u32, 3, 5] {
            prop_assert_eq!(rec.body(id).0.len(), 40000);
        }
    }
}
