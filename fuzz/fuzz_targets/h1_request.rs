//! Random bytes through `h1::RequestParser` (whole and in two reads, small and
//! default limits) and through `h1::BodyDecoder` for every framing. Must
//! never panic; a two-read parse that succeeds must agree with a one-read
//! parse; decoded body bytes must respect the limit.
#![no_main]
use h2lab_wire::h1::{BodyDecoder, BodyEvent, Framing, Limits, Parsed, RequestParser};
use libfuzzer_sys::fuzz_target;

/// Decodes `input` in reads of `step` bytes; returns the body size.
fn decode_all(mut d: BodyDecoder, input: &[u8], step: usize) -> u64 {
    let mut buf: Vec<u8> = Vec::new();
    let mut fed = 0;
    let mut total = 0u64;
    loop {
        match d.decode(&buf) {
            Err(_) | Ok((_, BodyEvent::End)) => break,
            Ok((n, BodyEvent::NeedMore)) => {
                assert!(n <= buf.len());
                buf.drain(..n);
                if fed == input.len() {
                    let _ = d.eof();
                    break;
                }
                let end = (fed + step).min(input.len());
                buf.extend_from_slice(&input[fed..end]);
                fed = end;
            }
            Ok((n, ev)) => {
                assert!(n <= buf.len());
                if let BodyEvent::Data(x) = ev {
                    assert!(!x.is_empty());
                    total += x.len() as u64;
                }
                buf.drain(..n);
            }
        }
    }
    assert_eq!(total, d.decoded_bytes());
    total
}

fuzz_target!(|data: &[u8]| {
    let Some((&ctl, input)) = data.split_first() else {
        return;
    };
    let limits = if ctl & 1 == 0 {
        Limits::default()
    } else {
        Limits {
            max_request_line: 64,
            max_header_bytes: 128,
            max_headers: 8,
            max_body: 64,
        }
    };
    let step = usize::from(ctl >> 4) + 1;

    let whole = RequestParser::new(limits).parse(input).map(|p| match p {
        Parsed::Complete(h) => Some((h.head_len, h.framing, h.keep_alive)),
        Parsed::NeedMore => None,
    });
    let cut = usize::from(ctl).min(input.len());
    let mut p = RequestParser::new(limits);
    let split = match p.parse(&input[..cut]) {
        Ok(Parsed::Complete(h)) => Ok(Some((h.head_len, h.framing, h.keep_alive))),
        Ok(Parsed::NeedMore) => p.parse(input).map(|p| match p {
            Parsed::Complete(h) => Some((h.head_len, h.framing, h.keep_alive)),
            Parsed::NeedMore => None,
        }),
        Err(e) => Err(e),
    };
    if split.is_ok() && cut < input.len() {
        assert_eq!(whole, split, "split changed the head");
    }

    let mut parser = RequestParser::new(limits);
    if let Ok(Parsed::Complete(h)) = parser.parse(input) {
        for header in h.headers {
            let _ = (header.name, header.value);
        }
        if let Some(up) = h.h2c {
            let _ = up.decode_settings();
        }
        let body = decode_all(parser.body_decoder(&h), &input[h.head_len..], step);
        assert!(body <= limits.max_body);
    }

    // The body decoder alone, on the raw bytes, for every framing.
    for framing in [
        Framing::Chunked,
        Framing::ContentLength(u64::from(ctl)),
        Framing::CloseDelimited,
        Framing::None,
    ] {
        let body = decode_all(BodyDecoder::with_limits(framing, 256, 64), input, step);
        assert!(body <= 256);
    }
});
