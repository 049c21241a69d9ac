//! HTTP/3 frame decoder, unidirectional stream header and request-stream state machine on
//! arbitrary bytes.
//!
//! Input layout: one configuration octet (stream context, split size), then the stream's
//! bytes. Oracles beyond "no panic": reading in pieces of the configured size gives the
//! same frames, DATA bytes and outcome as reading everything at once; every complete
//! non-DATA frame re-encodes to bytes that decode to the same frame; the request-stream
//! state machine (same bytes, as a request or response stream) never consumes more than
//! it is given.
#![no_main]

use h2lab_wire::h3::frame::{Decoded, Frame, FrameDecoder, StreamContext};
use h2lab_wire::h3::request::{RequestEvents, RequestStream};
use h2lab_wire::h3::stream::UniStreamType;
use h2lab_wire::h3::{fields::SectionFacts, fields::SectionKind, varint, Role};
use h2lab_wire::qpack::Decoder;
use libfuzzer_sys::fuzz_target;

#[derive(Default, PartialEq, Debug)]
struct Outcome {
    frames: Vec<String>,
    data: Vec<u8>,
    error: Option<u64>,
}

fn run(ctx: StreamContext, input: &[u8], step: usize) -> Outcome {
    let mut d = FrameDecoder::new(ctx);
    let mut out = Outcome::default();
    let mut buf = Vec::new();
    let mut fed = 0;
    loop {
        let (got, n) = match d.decode(&buf) {
            Ok(x) => x,
            Err(e) => {
                out.error = Some(e.code.0);
                return out;
            }
        };
        assert!(n <= buf.len());
        match got {
            Decoded::NeedMore => {
                if fed == input.len() {
                    return out;
                }
                let end = (fed + step).min(input.len());
                buf.extend_from_slice(&input[fed..end]);
                fed = end;
            }
            Decoded::Data { chunk, .. } => out.data.extend_from_slice(chunk),
            Decoded::Skipped { .. } => {}
            Decoded::Frame(f) => {
                let mut again = Vec::new();
                f.encode(&mut again);
                let (t, a) = varint::decode(&again).unwrap();
                let (_, b) = varint::decode(&again[a..]).unwrap();
                assert_eq!(Frame::decode(t, &again[a + b..]), Ok(f));
                out.frames.push(format!("{f:?}"));
            }
        }
        buf.drain(..n);
    }
}

struct Sink;
impl RequestEvents for Sink {
    fn field(&mut self, _: &[u8], _: &[u8]) {}
    fn section_done(&mut self, _: SectionKind, _: SectionFacts, _: bool) {}
    fn data(&mut self, _: &[u8]) {}
    fn end(&mut self) {}
}

fuzz_target!(|data: &[u8]| {
    let Some((&cfg, input)) = data.split_first() else {
        return;
    };
    let ctx = match cfg & 7 {
        0 => StreamContext::Request { local: Role::Server },
        1 => StreamContext::Request { local: Role::Client },
        2 => StreamContext::Control { local: Role::Server },
        3 => StreamContext::Control { local: Role::Client },
        _ => StreamContext::Push,
    };
    let step = usize::from(cfg >> 3) + 1;
    let whole = run(ctx, input, input.len().max(1));
    let split = run(ctx, input, step);
    assert_eq!(whole, split);
    let _ = UniStreamType::parse(input);

    let local = if cfg & 1 == 0 { Role::Server } else { Role::Client };
    let mut s = RequestStream::new(local, 0);
    let mut q = Decoder::new(256, 1);
    if let Ok(p) = s.recv(input, true, &mut q, &mut Sink) {
        assert!(p.consumed <= input.len());
    }
});
