//! Random bytes through `h1::ResponseParser`: fed at random split points, with
//! random HEAD/non-HEAD expectations, ending with `eof()`. Must never panic,
//! and the split points must not change the outcome (events, body bytes,
//! error) compared with feeding everything at once.
#![no_main]
use h2lab_wire::h1::{Event, H1Error, ResponseParser};
use libfuzzer_sys::fuzz_target;

#[derive(Debug, PartialEq, Eq)]
enum Ev {
    Interim(u16),
    Head(u16, bool),
    Upgrade(u16),
    Body(Vec<u8>),
    Trailers(usize),
    End(bool),
    Closed,
}

/// Runs the parser; `next_step` gives the size of each read.
fn run(
    input: &[u8],
    flags: u8,
    mut next_step: impl FnMut() -> usize,
) -> (Vec<Ev>, Option<H1Error>) {
    let mut p = ResponseParser::new();
    let mut events = Vec::new();
    let mut started = 0u32;
    p.start(flags & 1 != 0);
    let mut buf: Vec<u8> = Vec::new();
    let mut fed = 0;
    loop {
        let end = (fed + next_step()).min(input.len());
        buf.extend_from_slice(&input[fed..end]);
        fed = end;
        loop {
            let (n, ev) = match p.parse(&buf) {
                Ok(x) => x,
                Err(e) => return (events, Some(e)),
            };
            assert!(n <= buf.len(), "consumed more than given");
            let stop = matches!(ev, Event::NeedMore | Event::Closed);
            match ev {
                Event::NeedMore => {}
                Event::Interim(h) => events.push(Ev::Interim(h.status)),
                Event::Head(h) => events.push(Ev::Head(h.status, h.keep_alive)),
                Event::Upgrade(h) => {
                    events.push(Ev::Upgrade(h.status));
                    return (events, None);
                }
                Event::Body(b) => {
                    assert!(!b.is_empty(), "empty body event");
                    match events.last_mut() {
                        Some(Ev::Body(prev)) => prev.extend_from_slice(b),
                        _ => events.push(Ev::Body(b.to_vec())),
                    }
                }
                Event::Trailers { bytes, .. } => events.push(Ev::Trailers(bytes)),
                Event::End { keep_alive } => {
                    events.push(Ev::End(keep_alive));
                    started += 1;
                    if started < 8 {
                        p.start((flags >> started) & 1 != 0);
                    }
                }
                Event::Closed => events.push(Ev::Closed),
            }
            buf.drain(..n);
            if stop {
                break;
            }
        }
        if fed == input.len() {
            break;
        }
    }
    match p.eof() {
        Ok(Event::End { keep_alive }) => events.push(Ev::End(keep_alive)),
        Ok(Event::Closed) => events.push(Ev::Closed),
        Ok(other) => panic!("eof returned {other:?}"),
        Err(e) => return (events, Some(e)),
    }
    (events, None)
}

fuzz_target!(|data: &[u8]| {
    let [flags, seed, input @ ..] = data else {
        return;
    };
    let whole = run(input, *flags, || usize::MAX / 2);
    let mut state = u32::from(*seed) | 0x100;
    let split = run(input, *flags, || {
        // xorshift32: deterministic read sizes from the seed byte.
        state ^= state << 13;
        state ^= state >> 17;
        state ^= state << 5;
        (state % 37) as usize
    });
    assert_eq!(whole, split, "split points changed the outcome");
});
