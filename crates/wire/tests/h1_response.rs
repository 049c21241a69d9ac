//! ResponseParser: framing kinds, split invariance, pipelining, interim
//! responses, malformed input, and property tests.

use h2lab_wire::h1::{
    encode_chunk, reason_phrase, Event, Framing, H1Error, ResponseLimits, ResponseParser, Version,
};
use proptest::prelude::*;

/// An owned copy of an [`Event`], body events merged.
#[derive(Debug, Clone, PartialEq, Eq)]
enum Ev {
    Interim(u16, usize),
    Head {
        status: u16,
        version: Version,
        header_bytes: usize,
        keep_alive: bool,
        content_length: Option<u64>,
        framing: Framing,
        headers: Vec<(String, Vec<u8>)>,
    },
    Upgrade(u16),
    Body(Vec<u8>),
    Trailers(Vec<(String, Vec<u8>)>, usize),
    End(bool),
    Closed,
}

#[derive(Debug, Clone, PartialEq, Eq)]
struct Outcome {
    events: Vec<Ev>,
    error: Option<H1Error>,
    /// Bytes left unconsumed (after an upgrade: the new protocol's bytes).
    leftover: Vec<u8>,
}

fn owned_headers(h: h2lab_wire::h1::Headers<'_>) -> Vec<(String, Vec<u8>)> {
    h.iter()
        .map(|h| (h.name.to_ascii_lowercase(), h.value.to_vec()))
        .collect()
}

/// Feeds `input` cut at `cuts` (sorted offsets), starting one response per
/// entry of `expect_body`, then signals EOF if `eof`.
fn drive(input: &[u8], cuts: &[usize], expect_body: &[bool], eof: bool) -> Outcome {
    drive_with(ResponseParser::new(), input, cuts, expect_body, eof)
}

fn drive_with(
    mut p: ResponseParser,
    input: &[u8],
    cuts: &[usize],
    expect_body: &[bool],
    eof: bool,
) -> Outcome {
    let mut pending = expect_body.iter().copied();
    if let Some(e) = pending.next() {
        p.start(e);
    }
    let mut events: Vec<Ev> = Vec::new();
    let mut buf: Vec<u8> = Vec::new();
    let mut fed = 0;
    let mut upgraded = false;
    let ends = cuts
        .iter()
        .copied()
        .filter(|&c| c <= input.len())
        .chain(std::iter::once(input.len()));
    for cut in ends {
        if cut < fed {
            continue;
        }
        buf.extend_from_slice(&input[fed..cut]);
        fed = cut;
        if upgraded {
            continue;
        }
        loop {
            let (n, ev) = match p.parse(&buf) {
                Ok(x) => x,
                Err(error) => {
                    return Outcome {
                        events,
                        error: Some(error),
                        leftover: buf,
                    }
                }
            };
            let stop = matches!(ev, Event::NeedMore | Event::Closed);
            match ev {
                Event::NeedMore => {}
                Event::Interim(h) => events.push(Ev::Interim(h.status, h.header_bytes)),
                Event::Head(h) => events.push(Ev::Head {
                    status: h.status,
                    version: h.version,
                    header_bytes: h.header_bytes,
                    keep_alive: h.keep_alive,
                    content_length: h.content_length,
                    framing: h.framing,
                    headers: owned_headers(h.headers),
                }),
                Event::Upgrade(h) => {
                    events.push(Ev::Upgrade(h.status));
                    upgraded = true;
                }
                Event::Body(b) => {
                    assert!(!b.is_empty(), "empty body event");
                    if let Some(Ev::Body(prev)) = events.last_mut() {
                        prev.extend_from_slice(b);
                    } else {
                        events.push(Ev::Body(b.to_vec()));
                    }
                }
                Event::Trailers { headers, bytes } => {
                    events.push(Ev::Trailers(owned_headers(headers), bytes))
                }
                Event::End { keep_alive } => {
                    events.push(Ev::End(keep_alive));
                    if let Some(e) = pending.next() {
                        p.start(e);
                    }
                }
                Event::Closed => events.push(Ev::Closed),
            }
            buf.drain(..n);
            if stop || upgraded {
                break;
            }
        }
    }
    if eof && !upgraded {
        match p.eof() {
            Ok(Event::End { keep_alive }) => events.push(Ev::End(keep_alive)),
            Ok(Event::Closed) => events.push(Ev::Closed),
            Ok(other) => panic!("unexpected eof event {other:?}"),
            Err(error) => {
                return Outcome {
                    events,
                    error: Some(error),
                    leftover: buf,
                }
            }
        }
    }
    Outcome {
        events,
        error: None,
        leftover: buf,
    }
}

fn whole(input: &[u8], expect_body: &[bool], eof: bool) -> Outcome {
    drive(input, &[], expect_body, eof)
}

fn bytewise(input: &[u8], expect_body: &[bool], eof: bool) -> Outcome {
    let cuts: Vec<usize> = (0..=input.len()).collect();
    drive(input, &cuts, expect_body, eof)
}

const I100: &[u8] = b"HTTP/1.1 100 Continue\r\n\r\n";
const I103: &[u8] = b"HTTP/1.1 103 Early Hints\r\nLink: </s.css>; rel=preload\r\n\r\n";
const H_CL: &[u8] = b"HTTP/1.1 200 OK\r\nContent-Length: 5\r\nServer: t\r\n\r\n";
const H_CHUNKED: &[u8] = b"HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\n";
const CHUNKS: &[u8] = b"5;ext=1;q=\"x y\"\r\nhello\r\n6 ; a\r\n world\r\n0;end\r\n";
const TRAILERS: &[u8] = b"X-Checksum: abc\r\nX-Other:  v \r\n\r\n";
const H_204: &[u8] = b"HTTP/1.1 204 No Content\r\n\r\n";
const H_304: &[u8] = b"HTTP/1.1 304 Not Modified\r\nContent-Length: 100\r\n\r\n";
const H_HEAD: &[u8] = b"HTTP/1.1 200 OK\r\nContent-Length: 1000\r\n\r\n";
const H_LF: &[u8] = b"HTTP/1.1 404 Not Found\nTransfer-Encoding: chunked\n\n";
const H_10: &[u8] = b"HTTP/1.0 200 OK\r\nContent-Type: text/plain\r\n\r\n";

/// A pipelined stream exercising every framing kind.
fn corpus() -> (Vec<u8>, Vec<bool>) {
    let parts: [&[u8]; 14] = [
        // 100-continue and 103 interim, then the final response.
        I100,
        I103,
        H_CL,
        b"hello",
        // Chunked with extensions and trailers.
        H_CHUNKED,
        CHUNKS,
        TRAILERS,
        // 204 and 304: no body whatever the fields say.
        H_204,
        H_304,
        // Response to HEAD: Content-Length but no body.
        H_HEAD,
        // Chunked without trailers, bare-LF head lines (tolerated in heads).
        H_LF,
        b"3\r\nabc\r\n0\r\n\r\n",
        // HTTP/1.0 close-delimited.
        H_10,
        b"until the end",
    ];
    (
        parts.concat(),
        vec![true, true, true, true, false, true, true],
    )
}

fn expected_corpus_events() -> Vec<Ev> {
    let h = |k: &str, v: &str| (k.to_string(), v.as_bytes().to_vec());
    vec![
        Ev::Interim(100, I100.len()),
        Ev::Interim(103, I103.len()),
        Ev::Head {
            status: 200,
            version: Version::Http11,
            header_bytes: H_CL.len(),
            keep_alive: true,
            content_length: Some(5),
            framing: Framing::ContentLength(5),
            headers: vec![h("content-length", "5"), h("server", "t")],
        },
        Ev::Body(b"hello".to_vec()),
        Ev::End(true),
        Ev::Head {
            status: 200,
            version: Version::Http11,
            header_bytes: H_CHUNKED.len(),
            keep_alive: true,
            content_length: None,
            framing: Framing::Chunked,
            headers: vec![h("transfer-encoding", "chunked")],
        },
        Ev::Body(b"hello world".to_vec()),
        Ev::Trailers(
            vec![h("x-checksum", "abc"), h("x-other", "v")],
            TRAILERS.len(),
        ),
        Ev::End(true),
        Ev::Head {
            status: 204,
            version: Version::Http11,
            header_bytes: H_204.len(),
            keep_alive: true,
            content_length: None,
            framing: Framing::None,
            headers: vec![],
        },
        Ev::End(true),
        Ev::Head {
            status: 304,
            version: Version::Http11,
            header_bytes: H_304.len(),
            keep_alive: true,
            content_length: Some(100),
            framing: Framing::None,
            headers: vec![h("content-length", "100")],
        },
        Ev::End(true),
        Ev::Head {
            status: 200,
            version: Version::Http11,
            header_bytes: H_HEAD.len(),
            keep_alive: true,
            content_length: Some(1000),
            framing: Framing::None,
            headers: vec![h("content-length", "1000")],
        },
        Ev::End(true),
        Ev::Head {
            status: 404,
            version: Version::Http11,
            header_bytes: H_LF.len(),
            keep_alive: true,
            content_length: None,
            framing: Framing::Chunked,
            headers: vec![h("transfer-encoding", "chunked")],
        },
        Ev::Body(b"abc".to_vec()),
        Ev::End(true),
        Ev::Head {
            status: 200,
            version: Version::Http10,
            header_bytes: H_10.len(),
            keep_alive: false,
            content_length: None,
            framing: Framing::CloseDelimited,
            headers: vec![h("content-type", "text/plain")],
        },
        Ev::Body(b"until the end".to_vec()),
        Ev::End(false),
    ]
}

#[test]
fn corpus_in_one_buffer() {
    let (input, flags) = corpus();
    let out = whole(&input, &flags, true);
    assert_eq!(out.error, None);
    assert_eq!(out.events, expected_corpus_events());
    assert!(out.leftover.is_empty());
}

#[test]
fn corpus_byte_by_byte() {
    let (input, flags) = corpus();
    let out = bytewise(&input, &flags, true);
    assert_eq!(out.error, None);
    assert_eq!(out.events, expected_corpus_events());
}

#[test]
fn corpus_every_split_point() {
    let (input, flags) = corpus();
    let expected = expected_corpus_events();
    for i in 0..=input.len() {
        let out = drive(&input, &[i], &flags, true);
        assert_eq!(out.error, None, "split at {i}");
        assert_eq!(out.events, expected, "split at {i}");
    }
}

#[test]
fn eof_without_close_delimited_body_is_clean() {
    // Everything up to the close-delimited response, then EOF while idle.
    let (input, flags) = corpus();
    let cut = input.len() - H_10.len() - b"until the end".len();
    let out = whole(&input[..cut], &flags[..flags.len() - 1], true);
    assert_eq!(out.error, None);
    assert_eq!(out.events.last(), Some(&Ev::Closed));
}

#[test]
fn head_response_leaves_next_response_intact() {
    let input = b"HTTP/1.1 200 OK\r\nContent-Length: 7\r\n\r\nHTTP/1.1 200 OK\r\nContent-Length: 2\r\n\r\nok";
    let out = whole(input, &[false, true], false);
    assert_eq!(out.error, None);
    let bodies: Vec<_> = out
        .events
        .iter()
        .filter_map(|e| match e {
            Ev::Body(b) => Some(b.clone()),
            _ => None,
        })
        .collect();
    assert_eq!(bodies, vec![b"ok".to_vec()]);
    assert_eq!(
        out.events
            .iter()
            .filter(|e| matches!(e, Ev::End(true)))
            .count(),
        2
    );
}

#[test]
fn head_response_with_chunked_has_no_body() {
    let input = b"HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\n";
    let out = whole(input, &[false], false);
    assert_eq!(out.error, None);
    assert!(matches!(
        out.events.as_slice(),
        [
            Ev::Head {
                framing: Framing::None,
                ..
            },
            Ev::End(true)
        ]
    ));
}

#[test]
fn connection_close_and_keep_alive() {
    let cases: [(&[u8], bool); 5] = [
        (
            b"HTTP/1.1 200 OK\r\nConnection: close\r\nContent-Length: 0\r\n\r\n",
            false,
        ),
        (
            b"HTTP/1.1 200 OK\r\nConnection: Keep-Alive, Close\r\nContent-Length: 0\r\n\r\n",
            false,
        ),
        (b"HTTP/1.0 200 OK\r\nContent-Length: 0\r\n\r\n", false),
        (
            b"HTTP/1.0 200 OK\r\nConnection: keep-alive\r\nContent-Length: 0\r\n\r\n",
            true,
        ),
        (b"HTTP/1.1 200 OK\r\nContent-Length: 0\r\n\r\n", true),
    ];
    for (input, ka) in cases {
        let out = whole(input, &[true], false);
        assert_eq!(
            out.events.last(),
            Some(&Ev::End(ka)),
            "{}",
            String::from_utf8_lossy(input)
        );
    }
}

#[test]
fn upgrade_101_leaves_new_protocol_bytes() {
    let input = b"HTTP/1.1 101 Switching Protocols\r\nConnection: Upgrade\r\nUpgrade: h2c\r\n\r\n\x00\x00\x12\x04\x00";
    let out = whole(input, &[true], false);
    assert_eq!(out.error, None);
    assert_eq!(out.events, vec![Ev::Upgrade(101)]);
    assert_eq!(out.leftover, b"\x00\x00\x12\x04\x00");
    // Feeding those bytes to the idle parser is an error.
    let mut p = ResponseParser::new();
    p.start(true);
    let (n, ev) = p.parse(input).unwrap();
    assert!(matches!(ev, Event::Upgrade(_)));
    assert!(p.is_idle());
    assert_eq!(p.parse(&input[n..]), Err(H1Error::UnexpectedResponseData));
}

#[test]
fn interim_responses_then_final_byte_by_byte() {
    let input = b"HTTP/1.1 100 Continue\r\n\r\nHTTP/1.1 102 Processing\r\n\r\nHTTP/1.1 103 Early Hints\r\nLink: </a>\r\n\r\nHTTP/1.1 201 Created\r\nContent-Length: 2\r\n\r\nok";
    let out = bytewise(input, &[true], false);
    assert_eq!(out.error, None);
    let statuses: Vec<u16> = out
        .events
        .iter()
        .filter_map(|e| match e {
            Ev::Interim(s, _) => Some(*s),
            Ev::Head { status, .. } => Some(*status),
            _ => None,
        })
        .collect();
    assert_eq!(statuses, vec![100, 102, 103, 201]);
    assert_eq!(out.events.last(), Some(&Ev::End(true)));
}

fn error_of(input: &[u8]) -> Option<H1Error> {
    let a = whole(input, &[true], true).error;
    let b = bytewise(input, &[true], true).error;
    assert_eq!(
        a,
        b,
        "split changed the error for {:?}",
        String::from_utf8_lossy(input)
    );
    a
}

#[test]
fn malformed_responses() {
    let cases: [(&[u8], H1Error); 22] = [
        (b"HTTP/1.1 2OO OK\r\n\r\n", H1Error::InvalidStartLine),
        (b"HTTX/1.1 200 OK\r\n\r\n", H1Error::InvalidStartLine),
        (b"HTTP/1.1200 OK\r\n\r\n", H1Error::InvalidStartLine),
        (b"HTTP/2.0 200 OK\r\n\r\n", H1Error::UnsupportedVersion),
        (b"HTTP/1.1 000 Zero\r\n\r\n", H1Error::InvalidStatus),
        (
            b"HTTP/1.1 200 OK\r\nBad Name: x\r\n\r\n",
            H1Error::InvalidHeaderName,
        ),
        (
            b"HTTP/1.1 200 OK\r\nX: a\rb\r\n\r\n",
            H1Error::InvalidHeaderValue,
        ),
        (
            b"HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\nzz\r\n",
            H1Error::InvalidChunkSize,
        ),
        (
            b"HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\n\r\n",
            H1Error::InvalidChunkSize,
        ),
        (
            b"HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\n1ffffffffffffffff\r\n",
            H1Error::ChunkSizeOverflow,
        ),
        (
            b"HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\n2\r\nabc\r\n",
            H1Error::InvalidChunkDelimiter,
        ),
        (
            b"HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\n2\nab\r\n",
            H1Error::InvalidChunkDelimiter,
        ),
        (
            b"HTTP/1.1 200 OK\r\nContent-Length: -1\r\n\r\n",
            H1Error::InvalidContentLength,
        ),
        (
            b"HTTP/1.1 200 OK\r\nContent-Length: 1x\r\n\r\n",
            H1Error::InvalidContentLength,
        ),
        (
            b"HTTP/1.1 200 OK\r\nContent-Length: 1\r\nContent-Length: 2\r\n\r\nab",
            H1Error::ConflictingContentLength,
        ),
        (
            b"HTTP/1.1 200 OK\r\nContent-Length: 3, 4\r\n\r\nabcd",
            H1Error::ConflictingContentLength,
        ),
        (
            b"HTTP/1.1 200 OK\r\nContent-Length: 3\r\nTransfer-Encoding: chunked\r\n\r\n0\r\n\r\n",
            H1Error::ContentLengthWithTransferEncoding,
        ),
        (
            b"HTTP/1.0 200 OK\r\nTransfer-Encoding: chunked\r\n\r\n0\r\n\r\n",
            H1Error::TransferEncodingInHttp10,
        ),
        (
            b"HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked, chunked\r\n\r\n0\r\n\r\n",
            H1Error::TransferEncodingNotChunked,
        ),
        (
            b"HTTP/1.1 200 OK\r\nContent-Length: 10\r\n\r\nshort",
            H1Error::Truncated,
        ),
        (
            b"HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\n5\r\nab",
            H1Error::Truncated,
        ),
        (b"HTTP/1.1 200 OK\r\nContent-", H1Error::Truncated),
    ];
    for (input, expected) in cases {
        assert_eq!(
            error_of(input),
            Some(expected),
            "{}",
            String::from_utf8_lossy(input)
        );
    }
}

#[test]
fn duplicate_identical_content_length_is_accepted() {
    let out = whole(
        b"HTTP/1.1 200 OK\r\nContent-Length: 2\r\ncontent-length: 2\r\n\r\nok",
        &[true],
        false,
    );
    assert_eq!(out.error, None);
    assert!(out.events.contains(&Ev::Body(b"ok".to_vec())));
}

#[test]
fn non_chunked_final_coding_reads_until_close() {
    let out = whole(
        b"HTTP/1.1 200 OK\r\nTransfer-Encoding: gzip\r\n\r\nbinary",
        &[true],
        true,
    );
    assert_eq!(out.error, None);
    assert!(out.events.contains(&Ev::Body(b"binary".to_vec())));
    assert_eq!(out.events.last(), Some(&Ev::End(false)));
}

#[test]
fn lying_content_length_breaks_the_next_response() {
    // Declares 2 bytes, sends 4: "xx" is taken as the next status-line.
    let input = b"HTTP/1.1 200 OK\r\nContent-Length: 2\r\n\r\nokxxHTTP/1.1 200 OK\r\nContent-Length: 0\r\n\r\n";
    let out = whole(input, &[true, true], false);
    assert_eq!(out.error, Some(H1Error::InvalidStartLine));
    assert!(out.events.contains(&Ev::Body(b"ok".to_vec())));
    // With no second request outstanding the extra bytes are unexpected.
    let out = whole(input, &[true], false);
    assert_eq!(out.error, Some(H1Error::UnexpectedResponseData));
}

#[test]
fn closed_before_any_response_byte() {
    let out = whole(b"", &[true], true);
    assert_eq!(out.error, Some(H1Error::ClosedBeforeResponse));
}

#[test]
fn head_size_limits() {
    let limits = ResponseLimits {
        max_head_bytes: 64,
        max_headers: 2,
        max_trailer_bytes: 16,
    };
    let drive_l = |input: &[u8]| {
        let cuts: Vec<usize> = (0..=input.len()).collect();
        drive_with(
            ResponseParser::with_limits(limits),
            input,
            &cuts,
            &[true],
            false,
        )
        .error
    };
    let mut big = b"HTTP/1.1 200 OK\r\nX: ".to_vec();
    big.resize(100, b'a');
    assert_eq!(drive_l(&big), Some(H1Error::HeadersTooLarge));
    assert_eq!(
        drive_l(b"HTTP/1.1 200 OK\r\nA: 1\r\nB: 2\r\nC: 3\r\n\r\n"),
        Some(H1Error::TooManyHeaders)
    );
    assert_eq!(
        drive_l(b"HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\n0\r\nX-Long-Trailer: 0123456789\r\n\r\n"),
        Some(H1Error::TrailersTooLarge)
    );
}

// ---------------------------------------------------------------- proptest

#[derive(Debug, Clone)]
enum BodyKind {
    Length,
    Chunked {
        sizes: Vec<usize>,
        ext: bool,
        trailers: bool,
    },
    Close,
}

#[derive(Debug, Clone)]
struct Resp {
    interim: Vec<u16>,
    status: u16,
    head_request: bool,
    kind: BodyKind,
    body: Vec<u8>,
    headers: Vec<(String, String)>,
}

fn resp_strategy(last: bool) -> impl Strategy<Value = Resp> {
    let kind = if last {
        prop_oneof![
            Just(BodyKind::Length),
            (
                proptest::collection::vec(1usize..40, 0..6),
                any::<bool>(),
                any::<bool>()
            )
                .prop_map(|(sizes, ext, trailers)| BodyKind::Chunked {
                    sizes,
                    ext,
                    trailers
                }),
            Just(BodyKind::Close),
        ]
        .boxed()
    } else {
        prop_oneof![
            Just(BodyKind::Length),
            (
                proptest::collection::vec(1usize..40, 0..6),
                any::<bool>(),
                any::<bool>()
            )
                .prop_map(|(sizes, ext, trailers)| BodyKind::Chunked {
                    sizes,
                    ext,
                    trailers
                }),
        ]
        .boxed()
    };
    (
        proptest::collection::vec(prop_oneof![Just(100u16), Just(103)], 0..3),
        prop_oneof![
            Just(200u16),
            Just(201),
            Just(204),
            Just(304),
            Just(404),
            Just(500)
        ],
        proptest::bool::weighted(0.2),
        kind,
        proptest::collection::vec(any::<u8>(), 0..300),
        proptest::collection::vec(("x-[a-z]{1,8}", "[ -~]{0,20}"), 0..4),
    )
        .prop_map(
            |(interim, status, head_request, kind, body, headers)| Resp {
                interim,
                status,
                head_request,
                kind,
                body,
                headers: headers
                    .into_iter()
                    .map(|(k, v)| (k, v.trim_matches(|c| c == ' ').to_string()))
                    .collect(),
            },
        )
}

/// A server's response head to an HTTP/1.1 request: status line, `headers`, the framing
/// field and `Connection: close` when the connection ends with the response.
fn encode_head(
    out: &mut Vec<u8>,
    status: u16,
    headers: &[(String, String)],
    framing: Framing,
    keep_alive: bool,
) {
    out.extend_from_slice(format!("HTTP/1.1 {status} {}\r\n", reason_phrase(status)).as_bytes());
    for (name, value) in headers {
        out.extend_from_slice(format!("{name}: {value}\r\n").as_bytes());
    }
    match framing {
        Framing::ContentLength(n) => {
            out.extend_from_slice(format!("Content-Length: {n}\r\n").as_bytes())
        }
        Framing::Chunked => out.extend_from_slice(b"Transfer-Encoding: chunked\r\n"),
        Framing::None | Framing::CloseDelimited => {}
    }
    if !keep_alive || framing == Framing::CloseDelimited {
        out.extend_from_slice(b"Connection: close\r\n");
    }
    out.extend_from_slice(b"\r\n");
}

/// Encodes `r`; returns the bytes and the body the client must see.
fn encode(r: &Resp) -> (Vec<u8>, Vec<u8>) {
    let mut out = Vec::new();
    for s in &r.interim {
        encode_head(&mut out, *s, &[], Framing::None, true);
    }
    let no_body = r.head_request || r.status == 204 || r.status == 304;
    let framing = match &r.kind {
        BodyKind::Length => Framing::ContentLength(r.body.len() as u64),
        BodyKind::Chunked { .. } => Framing::Chunked,
        BodyKind::Close => Framing::CloseDelimited,
    };
    let ka = !matches!(r.kind, BodyKind::Close);
    encode_head(&mut out, r.status, &r.headers, framing, ka);
    if no_body {
        return (out, Vec::new());
    }
    match &r.kind {
        BodyKind::Length | BodyKind::Close => out.extend_from_slice(&r.body),
        BodyKind::Chunked {
            sizes,
            ext,
            trailers,
        } => {
            let mut rest = &r.body[..];
            let mut sizes = sizes.iter().cycle();
            while !rest.is_empty() {
                let n = (*sizes.next().unwrap_or(&7)).min(rest.len());
                if *ext {
                    out.extend_from_slice(format!("{n:X};name=\"v; x\" ;flag\r\n").as_bytes());
                    out.extend_from_slice(&rest[..n]);
                    out.extend_from_slice(b"\r\n");
                } else {
                    encode_chunk(&mut out, &rest[..n]);
                }
                rest = &rest[n..];
            }
            let t: &[(&str, &str)] = if *trailers {
                &[("x-sum", "1"), ("x-more", "two")]
            } else {
                &[]
            };
            // RFC 9112 §7.1: last-chunk CRLF, trailer section, CRLF.
            out.extend_from_slice(b"0\r\n");
            for (name, value) in t {
                out.extend_from_slice(format!("{name}: {value}\r\n").as_bytes());
            }
            out.extend_from_slice(b"\r\n");
        }
    }
    (out, r.body.clone())
}

fn responses_strategy() -> impl Strategy<Value = Vec<Resp>> {
    (
        proptest::collection::vec(resp_strategy(false), 0..3),
        resp_strategy(true),
    )
        .prop_map(|(mut v, last)| {
            v.push(last);
            v
        })
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(384))]

    #[test]
    fn round_trip_with_random_splits(
        resps in responses_strategy(),
        cuts in proptest::collection::vec(any::<prop::sample::Index>(), 0..12),
    ) {
        let mut input = Vec::new();
        let mut bodies = Vec::new();
        for r in &resps {
            let (bytes, body) = encode(r);
            input.extend_from_slice(&bytes);
            bodies.push(body);
        }
        let flags: Vec<bool> = resps.iter().map(|r| !r.head_request).collect();
        let mut cuts: Vec<usize> = cuts.iter().map(|i| i.index(input.len() + 1)).collect();
        cuts.sort_unstable();
        let reference = whole(&input, &flags, true);
        let split = drive(&input, &cuts, &flags, true);
        prop_assert_eq!(&reference, &split);
        prop_assert_eq!(reference.error, None);

        // Per response: the statuses and the body bytes.
        let mut got_bodies = Vec::new();
        let mut statuses = Vec::new();
        let mut current: Option<Vec<u8>> = None;
        for e in &reference.events {
            match e {
                Ev::Head { status, .. } => { statuses.push(*status); current = Some(Vec::new()); }
                Ev::Body(b) => current.as_mut().unwrap().extend_from_slice(b),
                Ev::End(_) => got_bodies.push(current.take().unwrap()),
                _ => {}
            }
        }
        let want_status: Vec<u16> = resps.iter().map(|r| r.status).collect();
        prop_assert_eq!(statuses, want_status);
        prop_assert_eq!(got_bodies, bodies);
        let interims = reference.events.iter().filter(|e| matches!(e, Ev::Interim(..))).count();
        prop_assert_eq!(interims, resps.iter().map(|r| r.interim.len()).sum::<usize>());
    }

    #[test]
    fn random_bytes_never_panic(
        input in proptest::collection::vec(any::<u8>(), 0..400),
        flags in proptest::collection::vec(any::<bool>(), 1..4),
        cuts in proptest::collection::vec(any::<prop::sample::Index>(), 0..8),
        eof in any::<bool>(),
    ) {
        let mut cuts: Vec<usize> = cuts.iter().map(|i| i.index(input.len() + 1)).collect();
        cuts.sort_unstable();
        let a = drive(&input, &cuts, &flags, eof);
        let b = whole(&input, &flags, eof);
        // Splitting never changes the outcome.
        prop_assert_eq!(a.error, b.error);
    }

    #[test]
    fn http_like_bytes_never_panic(
        parts in proptest::collection::vec(prop::sample::select(vec![
            "HTTP/1.1 ", "HTTP/1.0 ", "200 OK", "100 Continue", "101 X", "204 N", "\r\n",
            "\n", "\r", "Content-Length: ", "Transfer-Encoding: ", "chunked",
            "Connection: close", "0", "5", "ffffffffffffffffff", ";ext", ": ", "x", ",", " ",
        ]), 0..60),
        flags in proptest::collection::vec(any::<bool>(), 1..4),
        cuts in proptest::collection::vec(any::<prop::sample::Index>(), 0..8),
    ) {
        let input: Vec<u8> = parts.concat().into_bytes();
        let mut cuts: Vec<usize> = cuts.iter().map(|i| i.index(input.len() + 1)).collect();
        cuts.sort_unstable();
        let a = drive(&input, &cuts, &flags, true);
        let b = bytewise(&input, &flags, true);
        // Same events and error (what was left unconsumed when the error hit
        // depends on the split).
        prop_assert_eq!((a.events, a.error), (b.events, b.error));
    }
}
