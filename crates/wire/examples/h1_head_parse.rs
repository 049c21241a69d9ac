//! Parses a typical HTTP/1.1 response head and request head N times, for
//! instruction counting under callgrind (counts do not depend on machine
//! load):
//!
//! ```text
//! cargo build --release -p h2lab-wire --example h1_head_parse
//! valgrind --tool=callgrind target/release/examples/h1_head_parse resp 100000
//! ```
//!
//! The first argument is `resp`, `req` or `both` (default), the second the
//! number of iterations (default 100,000); a third argument `noiter` skips
//! iterating the fields after parsing (the proxy walks them itself). Subtract a run with 0 iterations
//! and divide by N for instructions per head.

use h2lab_wire::h1::{Event, Limits, Parsed, RequestParser, ResponseParser};

/// An nginx-style response head with five fields, as the proxy's upstream sends.
const RESPONSE: &[u8] = b"HTTP/1.1 200 OK\r\n\
Server: nginx/1.22.1\r\n\
Date: Wed, 25 Nov 2026 10:47:05 GMT\r\n\
Content-Type: text/html\r\n\
Content-Length: 653\r\n\
Connection: keep-alive\r\n\
\r\n";

/// An h2load-style request head.
const REQUEST: &[u8] = b"GET /index.html HTTP/1.1\r\n\
Host: 127.0.0.1:8080\r\n\
User-Agent: h2load nghttp2/1.52.0\r\n\
Accept: */*\r\n\
Accept-Encoding: gzip, deflate\r\n\
\r\n";

fn parse_response(p: &mut ResponseParser, buf: &[u8], iter: bool) -> usize {
    p.start(true);
    match p.parse(buf) {
        Ok((n, Event::Head(h))) => {
            n + usize::from(h.status) + if iter { h.headers.iter().count() } else { 0 }
        }
        other => panic!("unexpected {other:?}"),
    }
}

fn parse_request(p: &mut RequestParser, buf: &[u8], iter: bool) -> usize {
    match p.parse(buf) {
        Ok(Parsed::Complete(h)) => {
            h.head_len + usize::from(h.keep_alive) + if iter { h.headers.iter().count() } else { 0 }
        }
        other => panic!("unexpected {other:?}"),
    }
}

fn main() {
    let mut args = std::env::args().skip(1);
    let what = args.next().unwrap_or_else(|| "both".into());
    let n: usize = args.next().and_then(|s| s.parse().ok()).unwrap_or(100_000);
    let iter = args.next().as_deref() != Some("noiter");
    let mut resp = ResponseParser::new();
    let mut req = RequestParser::new(Limits::default());
    let mut acc = 0usize;
    for _ in 0..n {
        let r = std::hint::black_box(RESPONSE);
        let q = std::hint::black_box(REQUEST);
        if what != "req" {
            acc = acc.wrapping_add(parse_response(&mut resp, r, iter));
        }
        if what != "resp" {
            acc = acc.wrapping_add(parse_request(&mut req, q, iter));
        }
    }
    println!("{acc}");
}
