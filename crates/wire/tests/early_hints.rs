//! `103 Early Hints` (RFC 8297) through each codec, both roles, in memory: what a server
//! writes as an interim response ahead of the final one is read by a client as an
//! informational response (never the final one), with its `link` field, on HTTP/1.1,
//! HTTP/2 and HTTP/3; the send sides keep the order RFC 9110 §15.2 asks for.

use h2lab_wire::h1::{encode_informational, Event, ResponseParser};
use h2lab_wire::h2::testing::Recorder as H2Recorder;
use h2lab_wire::h2::{Connection, HeadersKind, Limits, LocalSettings, Role as H2Role};
use h2lab_wire::h3::request::{RequestStream, SendError, SendStream};
use h2lab_wire::h3::testing::{fields, Recorder as H3Recorder};
use h2lab_wire::h3::Role;
use h2lab_wire::qpack::{Decoder, Encoder, EncoderConfig};

const LINK: &str = "</s.css>; rel=preload; as=style, </a.js>; rel=preload; as=script";

#[test]
fn http1_interim_then_final_response() {
    let mut out = Vec::new();
    encode_informational(&mut out, 103, &[(b"link", LINK.as_bytes())]);
    assert_eq!(
        out,
        format!("HTTP/1.1 103 Early Hints\r\nlink: {LINK}\r\n\r\n").as_bytes()
    );
    out.extend_from_slice(b"HTTP/1.1 200 OK\r\ncontent-length: 2\r\n\r\nok");
    let mut p = ResponseParser::new();
    p.start(true);
    let (n, ev) = p.parse(&out).unwrap();
    let Event::Interim(h) = ev else {
        panic!("{ev:?}")
    };
    assert_eq!(h.status, 103);
    assert_eq!(h.headers.get("link"), Some(LINK.as_bytes()));
    let (m, ev) = p.parse(&out[n..]).unwrap();
    let Event::Head(h) = ev else { panic!("{ev:?}") };
    assert_eq!(h.status, 200);
    assert_eq!(p.parse(&out[n + m..]).unwrap().1, Event::Body(b"ok"));
}

/// Moves bytes between two HTTP/2 endpoints until neither has anything to say.
fn exchange(
    c: &mut Connection,
    s: &mut Connection,
    c_out: &mut Vec<u8>,
    s_out: &mut Vec<u8>,
    c_rec: &mut H2Recorder,
    s_rec: &mut H2Recorder,
) {
    while !c_out.is_empty() || !s_out.is_empty() {
        let to_server = std::mem::take(c_out);
        let n = s.recv(&to_server, s_out, s_rec).unwrap();
        assert_eq!(n, to_server.len());
        let to_client = std::mem::take(s_out);
        let n = c.recv(&to_client, c_out, c_rec).unwrap();
        assert_eq!(n, to_client.len());
    }
}

#[test]
fn http2_interim_headers_then_final_response() {
    let mut c = Connection::new(H2Role::Client, LocalSettings::client(), Limits::new());
    let mut s = Connection::new(H2Role::Server, LocalSettings::server(), Limits::new());
    let (mut c_out, mut s_out) = (Vec::new(), Vec::new());
    let (mut c_rec, mut s_rec) = (H2Recorder::default(), H2Recorder::default());
    c.start(&mut c_out);
    s.start(&mut s_out);
    let fields: [(&[u8], &[u8]); 4] = [
        (b":method", b"GET"),
        (b":scheme", b"https"),
        (b":path", b"/page"),
        (b":authority", b"localhost"),
    ];
    let id = c
        .send_request(
            |enc, buf| enc.encode(fields.iter().copied(), buf),
            true,
            &mut c_out,
        )
        .unwrap();
    exchange(
        &mut c, &mut s, &mut c_out, &mut s_out, &mut c_rec, &mut s_rec,
    );
    // Server role: an interim HEADERS (no END_STREAM), then the final one.
    s.send_header_fields(
        id,
        &[(b":status", b"103"), (b"link", LINK.as_bytes())],
        false,
        &mut s_out,
    )
    .unwrap();
    s.send_header_fields(id, &[(b":status", b"204")], true, &mut s_out)
        .unwrap();
    exchange(
        &mut c, &mut s, &mut c_out, &mut s_out, &mut c_rec, &mut s_rec,
    );
    let done = c_rec.done(id.get());
    assert_eq!(done.len(), 2, "{done:?}");
    assert_eq!(done[0].kind, HeadersKind::Informational);
    assert_eq!(done[0].status, Some(103));
    assert!(!done[0].end_stream);
    assert_eq!(done[1].kind, HeadersKind::Response);
    assert_eq!(done[1].status, Some(204));
    assert!(done[1].end_stream);
    assert!(c_rec
        .headers(id.get())
        .contains(&("link".to_string(), LINK.to_string())));
}

#[test]
fn http3_interim_section_then_final_response() {
    let mut qenc = Encoder::new(EncoderConfig {
        use_dynamic_table: false,
        ..EncoderConfig::default()
    });
    let mut enc_stream = Vec::new();
    let (mut hint, mut fin) = (Vec::new(), Vec::new());
    qenc.encode(
        0,
        [(&b":status"[..], &b"103"[..]), (b"link", LINK.as_bytes())],
        &mut hint,
        &mut enc_stream,
    );
    qenc.encode(
        0,
        [(&b":status"[..], &b"200"[..]), (b"content-length", b"2")],
        &mut fin,
        &mut enc_stream,
    );
    assert!(enc_stream.is_empty(), "static table and literals only");
    // Server role: informational sections may come before the final one, content only
    // after it.
    let mut send = SendStream::new();
    let mut wire = Vec::new();
    send.headers(&hint, true, None, &mut wire).unwrap();
    assert_eq!(
        send.data_header(2, &mut Vec::new()),
        Err(SendError::OutOfOrder),
        "no content before the final response"
    );
    send.headers(&hint, true, None, &mut wire).unwrap();
    send.headers(&fin, false, Some(2), &mut wire).unwrap();
    send.data_header(2, &mut wire).unwrap();
    wire.extend_from_slice(b"ok");
    // Client role.
    let (mut s, mut q, mut rec) = (
        RequestStream::new(Role::Client, 0),
        Decoder::new(0, 0),
        H3Recorder::default(),
    );
    let p = s.recv(&wire, true, &mut q, &mut rec).unwrap();
    assert_eq!(p.consumed, wire.len());
    assert_eq!(rec.informational, 2);
    assert_eq!(
        rec.sections,
        vec![
            fields(&[(":status", "103"), ("link", LINK)]),
            fields(&[(":status", "103"), ("link", LINK)]),
            fields(&[(":status", "200"), ("content-length", "2")]),
        ]
    );
    assert_eq!(rec.body, b"ok");
    assert!(rec.ended);
}
