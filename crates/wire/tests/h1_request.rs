//! RequestParser and request encoding: limits, keep-alive, Expect, h2c,
//! framing rules, pipelining, round trips and robustness.

use h2lab_wire::h1::{
    encode_http2_settings, encode_request, BodyDecoder, BodyEvent, Framing, H1Error, Limits,
    Parsed, RequestHead, RequestParser, Version,
};
use proptest::prelude::*;

fn parse_all(input: &[u8]) -> Result<RequestHead<'_>, H1Error> {
    parse_with(Limits::default(), input)
}

fn parse_with(limits: Limits, input: &[u8]) -> Result<RequestHead<'_>, H1Error> {
    match RequestParser::new(limits).parse(input)? {
        Parsed::Complete(h) => Ok(h),
        Parsed::NeedMore => panic!("incomplete: {:?}", String::from_utf8_lossy(input)),
    }
}

/// Feeds `input` byte by byte (keeping the unconsumed head, as a server
/// does); returns the first error or the head parsed at the end.
fn parse_trickled(limits: Limits, input: &[u8]) -> Result<Option<usize>, H1Error> {
    let mut p = RequestParser::new(limits);
    for i in 0..=input.len() {
        match p.parse(&input[..i])? {
            Parsed::Complete(h) => return Ok(Some(h.head_len)),
            Parsed::NeedMore => {}
        }
    }
    Ok(None)
}

fn small_limits() -> Limits {
    Limits {
        max_request_line: 32,
        max_header_bytes: 64,
        max_headers: 4,
        max_body: 16,
    }
}

#[test]
fn long_request_line_is_414() {
    let long = format!("GET /{} HTTP/1.1\r\nHost: h\r\n\r\n", "a".repeat(40));
    for res in [
        parse_with(small_limits(), long.as_bytes()).map(|_| ()),
        parse_trickled(small_limits(), long.as_bytes()).map(|_| ()),
    ] {
        let e = res.unwrap_err();
        assert_eq!(e, H1Error::RequestLineTooLong);
        assert_eq!(e.status_code(), 414);
    }
    // Detected before the line ends: no need to buffer it all.
    let mut p = RequestParser::new(small_limits());
    let partial = format!("GET /{}", "a".repeat(40));
    assert_eq!(
        p.parse(partial.as_bytes()),
        Err(H1Error::RequestLineTooLong)
    );
    // Exactly at the limit is fine.
    let ok = format!("GET /{} HTTP/1.1\r\nHost: h\r\n\r\n", "a".repeat(32 - 17));
    assert!(parse_with(small_limits(), ok.as_bytes()).is_ok());
}

#[test]
fn big_header_section_is_431() {
    let big = format!(
        "GET / HTTP/1.1\r\nHost: h\r\nX-Big: {}\r\n\r\n",
        "b".repeat(60)
    );
    for res in [
        parse_with(small_limits(), big.as_bytes()).map(|_| ()),
        parse_trickled(small_limits(), big.as_bytes()).map(|_| ()),
    ] {
        let e = res.unwrap_err();
        assert_eq!(e, H1Error::HeadersTooLarge);
        assert_eq!(e.status_code(), 431);
    }
    let many = b"GET / HTTP/1.1\r\nHost: h\r\nA: 1\r\nB: 2\r\nC: 3\r\nD: 4\r\n\r\n";
    let e = parse_with(small_limits(), many).unwrap_err();
    assert_eq!(e, H1Error::TooManyHeaders);
    assert_eq!(e.status_code(), 431);
    // A partial header section is refused as soon as it exceeds the limit.
    let mut p = RequestParser::new(small_limits());
    let partial = format!("GET / HTTP/1.1\r\nX: {}", "c".repeat(70));
    assert_eq!(p.parse(partial.as_bytes()), Err(H1Error::HeadersTooLarge));
}

#[test]
fn big_body_is_413() {
    let e = parse_with(
        small_limits(),
        b"POST / HTTP/1.1\r\nHost: h\r\nContent-Length: 17\r\n\r\n",
    )
    .unwrap_err();
    assert_eq!(e, H1Error::BodyTooLarge);
    assert_eq!(e.status_code(), 413);

    let input = b"POST / HTTP/1.1\r\nHost: h\r\nTransfer-Encoding: chunked\r\n\r\n10\r\n0123456789abcdef\r\n1\r\nx\r\n0\r\n\r\n";
    let p = RequestParser::new(small_limits());
    let mut parser = p.clone();
    let Parsed::Complete(head) = parser.parse(input).unwrap() else {
        panic!()
    };
    let mut d = p.body_decoder(&head);
    let mut rest = &input[head.head_len..];
    let (n, ev) = d.decode(rest).unwrap();
    assert_eq!(ev, BodyEvent::Data(b"0123456789abcdef"));
    rest = &rest[n..];
    assert_eq!(d.decode(rest), Err(H1Error::BodyTooLarge));
}

#[test]
fn keep_alive_rules() {
    let ka = |s: &[u8]| parse_all(s).unwrap().keep_alive;
    assert!(!ka(b"GET / HTTP/1.0\r\n\r\n"));
    assert!(ka(b"GET / HTTP/1.0\r\nConnection: keep-alive\r\n\r\n"));
    assert!(ka(b"GET / HTTP/1.0\r\nConnection: Keep-Alive\r\n\r\n"));
    assert!(!ka(
        b"GET / HTTP/1.0\r\nConnection: keep-alive, close\r\n\r\n"
    ));
    assert!(ka(b"GET / HTTP/1.1\r\nHost: h\r\n\r\n"));
    assert!(!ka(
        b"GET / HTTP/1.1\r\nHost: h\r\nConnection: close\r\n\r\n"
    ));
    assert!(!ka(
        b"GET / HTTP/1.1\r\nHost: h\r\nConnection: foo\r\nConnection: CLOSE\r\n\r\n"
    ));
    assert!(ka(
        b"GET / HTTP/1.1\r\nHost: h\r\nConnection: closed\r\n\r\n"
    ));
}

#[test]
fn expect_continue() {
    let h = parse_all(
        b"PUT /f HTTP/1.1\r\nHost: h\r\nExpect: 100-Continue\r\nContent-Length: 3\r\n\r\n",
    )
    .unwrap();
    assert!(h.expect_continue);
    assert_eq!(h.framing, Framing::ContentLength(3));
    let h =
        parse_all(b"PUT /f HTTP/1.0\r\nExpect: 100-continue\r\nContent-Length: 3\r\n\r\n").unwrap();
    assert!(!h.expect_continue, "ignored for HTTP/1.0");
    let h = parse_all(b"PUT /f HTTP/1.1\r\nHost: h\r\nExpect: something\r\n\r\n").unwrap();
    assert!(!h.expect_continue);
}

#[test]
fn h2c_upgrade_detection() {
    let payload = [0u8, 3, 0, 0, 0, 100, 0, 4, 0, 1, 0, 0];
    let settings = encode_http2_settings(&payload);
    let req = format!(
        "GET / HTTP/1.1\r\nHost: h\r\nConnection: Upgrade, HTTP2-Settings\r\nUpgrade: h2c\r\nHTTP2-Settings: {settings}\r\n\r\n"
    );
    let h = parse_all(req.as_bytes()).unwrap();
    let up = h.h2c.expect("h2c upgrade");
    assert_eq!(up.settings, settings.as_bytes());
    assert!(up.connection_options);
    assert_eq!(up.decode_settings().unwrap(), payload);

    // Upgrade listed among others, no Connection options: still reported.
    let req = format!("GET / HTTP/1.1\r\nHost: h\r\nUpgrade: websocket, H2C\r\nHTTP2-Settings: {settings}\r\n\r\n");
    let up = parse_all(req.as_bytes()).unwrap().h2c.expect("h2c");
    assert!(!up.connection_options);

    // Not an h2c upgrade.
    let none = |s: String| parse_all(s.as_bytes()).unwrap().h2c.is_none();
    assert!(none(
        "GET / HTTP/1.1\r\nHost: h\r\nUpgrade: h2c\r\n\r\n".into()
    ));
    assert!(none(format!(
        "GET / HTTP/1.1\r\nHost: h\r\nUpgrade: h2c\r\nHTTP2-Settings: {settings}\r\nHTTP2-Settings: {settings}\r\n\r\n"
    )));
    assert!(none(format!(
        "GET / HTTP/1.0\r\nUpgrade: h2c\r\nHTTP2-Settings: {settings}\r\n\r\n"
    )));
    assert!(none(format!(
        "GET / HTTP/1.1\r\nHost: h\r\nUpgrade: websocket\r\nHTTP2-Settings: {settings}\r\n\r\n"
    )));

    // Reported, but the payload is not base64url.
    let h = parse_all(b"GET / HTTP/1.1\r\nHost: h\r\nUpgrade: h2c\r\nHTTP2-Settings: a+b/\r\n\r\n")
        .unwrap();
    assert_eq!(
        h.h2c.unwrap().decode_settings(),
        Err(H1Error::InvalidHttp2Settings)
    );
}

#[test]
fn smuggling_defences() {
    let err = |s: &[u8]| parse_all(s).unwrap_err();
    assert_eq!(
        err(b"POST / HTTP/1.1\r\nHost: h\r\nContent-Length: 4\r\nTransfer-Encoding: chunked\r\n\r\n"),
        H1Error::ContentLengthWithTransferEncoding
    );
    assert_eq!(
        err(b"POST / HTTP/1.1\r\nHost: h\r\nTransfer-Encoding: chunked\r\nContent-Length: 4\r\n\r\n"),
        H1Error::ContentLengthWithTransferEncoding
    );
    assert_eq!(
        err(b"POST / HTTP/1.1\r\nHost: h\r\nTransfer-Encoding: identity\r\n\r\n"),
        H1Error::TransferEncodingNotChunked
    );
    // Numerically identical values are one length: no ambiguity to exploit.
    let h =
        parse_all(b"POST / HTTP/1.1\r\nHost: h\r\nContent-Length: 1\r\nContent-Length: 01\r\n\r\n");
    assert_eq!(h.unwrap().framing, Framing::ContentLength(1));
    assert_eq!(
        err(b"POST / HTTP/1.1\r\nHost: h\r\nContent-Length: 1\r\nContent-Length: 2\r\n\r\n"),
        H1Error::ConflictingContentLength
    );
    assert_eq!(
        err(b"POST / HTTP/1.1\r\nHost: h\r\nContent-Length: +1\r\n\r\n"),
        H1Error::InvalidContentLength
    );
    assert_eq!(
        err(b"POST / HTTP/1.1\r\nHost: h\r\nContent-Length : 1\r\n\r\n"),
        H1Error::InvalidHeaderName
    );
    assert_eq!(
        err(b"POST / HTTP/1.1\r\nHost: h\r\nX: a\r\n b\r\n\r\n"),
        H1Error::InvalidHeaderName
    );
}

#[test]
fn pipelined_requests_with_bodies() {
    let input = b"POST /a HTTP/1.1\r\nHost: h\r\nContent-Length: 3\r\n\r\nabcPOST /b HTTP/1.1\r\nHost: h\r\nTransfer-Encoding: chunked\r\n\r\n2\r\nxy\r\n0\r\nT: 1\r\n\r\nGET /c HTTP/1.1\r\nHost: h\r\n\r\n";
    for step in [1usize, 3, 1000] {
        let mut p = RequestParser::default();
        let mut buf: Vec<u8> = Vec::new();
        let mut fed = 0;
        let mut seen: Vec<(String, Vec<u8>)> = Vec::new();
        let mut decoder: Option<(String, BodyDecoder, Vec<u8>)> = None;
        loop {
            let progressed = if let Some((target, d, body)) = decoder.as_mut() {
                let (n, ev) = d.decode(&buf).unwrap();
                let done = match ev {
                    BodyEvent::Data(x) => {
                        body.extend_from_slice(x);
                        false
                    }
                    BodyEvent::End => true,
                    BodyEvent::Trailers { headers, .. } => {
                        assert_eq!(headers.get("t"), Some(&b"1"[..]));
                        false
                    }
                    BodyEvent::NeedMore => {
                        buf.drain(..n);
                        if fed == input.len() {
                            break;
                        }
                        let end = (fed + step).min(input.len());
                        buf.extend_from_slice(&input[fed..end]);
                        fed = end;
                        continue;
                    }
                };
                buf.drain(..n);
                if done {
                    seen.push((target.clone(), std::mem::take(body)));
                    decoder = None;
                }
                true
            } else {
                match p.parse(&buf).unwrap() {
                    Parsed::Complete(h) => {
                        let d = p.body_decoder(&h);
                        let t = h.target.to_string();
                        let n = h.head_len;
                        decoder = Some((t, d, Vec::new()));
                        buf.drain(..n);
                        true
                    }
                    Parsed::NeedMore => false,
                }
            };
            if !progressed {
                if fed == input.len() {
                    break;
                }
                let end = (fed + step).min(input.len());
                buf.extend_from_slice(&input[fed..end]);
                fed = end;
            }
        }
        assert_eq!(
            seen,
            vec![
                ("/a".to_string(), b"abc".to_vec()),
                ("/b".to_string(), b"xy".to_vec()),
                ("/c".to_string(), Vec::new())
            ],
            "step {step}"
        );
        assert!(buf.is_empty());
    }
}

#[test]
fn leading_empty_lines_are_ignored() {
    let h = parse_all(b"\r\n\r\nGET / HTTP/1.1\r\nHost: h\r\n\r\n").unwrap();
    assert_eq!(h.head_len, 31);
    assert_eq!(h.version, Version::Http11);
    let many = "\r\n".repeat(40) + "GET / HTTP/1.1\r\nHost: h\r\n\r\n";
    assert_eq!(
        parse_with(small_limits(), many.as_bytes()).unwrap_err(),
        H1Error::InvalidStartLine
    );
}

#[test]
fn encoded_requests_parse_back() {
    let r = encode_request(
        "POST",
        "/submit?x=1",
        "example.org:8443",
        &[("user-agent", "h2lab/0.1"), ("x-a", "")],
        Some(b"payload"),
        false,
    )
    .unwrap();
    let h = parse_all(r.as_bytes()).unwrap();
    assert_eq!((h.method, h.target), ("POST", "/submit?x=1"));
    assert_eq!(h.host, Some(&b"example.org:8443"[..]));
    assert_eq!(h.head_len, r.header_bytes());
    assert_eq!(h.framing, Framing::ContentLength(7));
    assert!(!h.keep_alive);
    assert_eq!(h.headers.get("x-a"), Some(&b""[..]));
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(384))]

    #[test]
    fn encode_parse_round_trip(
        method in "[A-Z]{1,8}",
        target in "/[!-~]{0,40}",
        host in "[a-z0-9.-]{0,20}(:[0-9]{1,5})?",
        headers in proptest::collection::vec(("x-[a-z0-9-]{1,12}", "[!-~]([ -~]{0,30}[!-~])?"), 0..8),
        body in proptest::option::of(proptest::collection::vec(any::<u8>(), 0..200)),
        keep_alive in any::<bool>(),
        cuts in proptest::collection::vec(any::<prop::sample::Index>(), 0..6),
    ) {
        let r = encode_request(&method, &target, &host, &headers, body.as_deref(), keep_alive).unwrap();
        let bytes = r.as_bytes();
        // Split invariance: trickle the head in random pieces.
        let mut cuts: Vec<usize> = cuts.iter().map(|i| i.index(bytes.len() + 1)).collect();
        cuts.sort_unstable();
        cuts.push(bytes.len());
        let mut p = RequestParser::default();
        let mut result = None;
        for c in cuts {
            if let Parsed::Complete(h) = p.parse(&bytes[..c]).unwrap() {
                result = Some(h);
                break;
            }
        }
        let h = result.expect("complete head");
        prop_assert_eq!(h.method, method.as_str());
        prop_assert_eq!(h.target, target.as_str());
        prop_assert_eq!(h.host, Some(host.as_bytes()));
        prop_assert_eq!(h.head_len, r.header_bytes());
        prop_assert_eq!(h.keep_alive, keep_alive);
        let got: Vec<(String, Vec<u8>)> = h.headers.iter()
            .filter(|x| x.name.starts_with("x-"))
            .map(|x| (x.name.to_string(), x.value.to_vec()))
            .collect();
        let want: Vec<(String, Vec<u8>)> = headers.iter()
            .map(|(k, v)| (k.clone(), v.clone().into_bytes()))
            .collect();
        prop_assert_eq!(got, want);
        let mut d = RequestParser::default().body_decoder(&h);
        let mut rest = &bytes[h.head_len..];
        let mut got_body = Vec::new();
        loop {
            let (n, ev) = d.decode(rest).unwrap();
            rest = &rest[n..];
            match ev {
                BodyEvent::Data(x) => got_body.extend_from_slice(x),
                BodyEvent::End => break,
                other => prop_assert!(false, "unexpected {:?}", other),
            }
        }
        prop_assert_eq!(got_body, body.unwrap_or_default());
        prop_assert!(rest.is_empty());
    }

    #[test]
    fn random_bytes_never_panic(
        input in proptest::collection::vec(any::<u8>(), 0..600),
        cut in any::<prop::sample::Index>(),
    ) {
        let limits = small_limits();
        let whole = RequestParser::new(limits).parse(&input).map(|p| match p {
            Parsed::Complete(h) => Some(h.head_len),
            Parsed::NeedMore => None,
        });
        // Two-step feed gives the same answer as one step.
        let c = cut.index(input.len() + 1);
        let mut p = RequestParser::new(limits);
        let split = match p.parse(&input[..c]) {
            Ok(Parsed::Complete(h)) => Ok(Some(h.head_len)),
            Ok(Parsed::NeedMore) => p.parse(&input).map(|p| match p {
                Parsed::Complete(h) => Some(h.head_len),
                Parsed::NeedMore => None,
            }),
            Err(e) => Err(e),
        };
        if c == input.len() || split.is_ok() {
            prop_assert_eq!(whole, split);
        }
        if let Ok(Parsed::Complete(h)) = RequestParser::new(limits).parse(&input) {
            let mut d = RequestParser::new(limits).body_decoder(&h);
            let mut rest = &input[h.head_len..];
            for _ in 0..1000 {
                match d.decode(rest) {
                    Ok((_, BodyEvent::NeedMore)) => { let _ = d.eof(); break; }
                    Ok((_, BodyEvent::End)) | Err(_) => break,
                    Ok((n, _)) => rest = &rest[n..],
                }
            }
        }
    }

    #[test]
    fn random_chunked_bytes_never_panic(
        parts in proptest::collection::vec(prop::sample::select(vec![
            "0", "1", "a", "F", "ffffffffffffffffff", ";", "=", "\"", " ", "\t", "\r\n", "\r", "\n",
            "x", "X-T: v", ":", "\0",
        ]), 0..40),
        framing in prop_oneof![
            Just(Framing::Chunked), Just(Framing::ContentLength(5)), Just(Framing::CloseDelimited),
            Just(Framing::None),
        ],
        step in 1usize..8,
    ) {
        let input = parts.concat().into_bytes();
        let mut d = BodyDecoder::with_limits(framing, 64, 32);
        let mut buf: Vec<u8> = Vec::new();
        let mut fed = 0;
        let mut total = 0u64;
        loop {
            match d.decode(&buf) {
                Err(_) | Ok((_, BodyEvent::End)) => break,
                Ok((n, BodyEvent::NeedMore)) => {
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
                    if let BodyEvent::Data(x) = ev {
                        prop_assert!(!x.is_empty());
                        total += x.len() as u64;
                    }
                    buf.drain(..n);
                }
            }
        }
        prop_assert!(total <= 64);
        prop_assert_eq!(total, d.decoded_bytes());
    }
}
