//! The HTTP/3 request-stream state machine (RFC 9114 §4.1) in both roles, driven by the
//! mock peer of `h3::testing`.

use h2lab_wire::h3::frame::{Frame, Settings};
use h2lab_wire::h3::request::{write_data_header, write_headers, RecvError, RequestStream};
use h2lab_wire::h3::testing::{fields, Fields, Peer, Recorder};
use h2lab_wire::h3::{ErrorCode, Role, Scope};
use h2lab_wire::qpack::Decoder;

fn request() -> Fields {
    fields(&[
        (":method", "POST"),
        (":scheme", "https"),
        (":authority", "a.example"),
        (":path", "/up"),
        ("content-length", "5"),
    ])
}

fn response(status: &str) -> Fields {
    fields(&[(":status", status), ("content-type", "text/plain")])
}

/// Feeds `bytes` one split at a time (`step` octets per read), keeping what is not consumed.
fn feed(
    s: &mut RequestStream,
    q: &mut Decoder,
    bytes: &[u8],
    step: usize,
    rec: &mut Recorder,
) -> Result<(), RecvError> {
    let mut buf = Vec::new();
    let mut i = 0;
    while i < bytes.len() {
        let end = (i + step).min(bytes.len());
        buf.extend_from_slice(&bytes[i..end]);
        i = end;
        let p = s.recv(&buf, i == bytes.len(), q, rec)?;
        buf.drain(..p.consumed);
        assert!(!p.blocked);
    }
    Ok(())
}

#[test]
fn server_reads_a_request_with_body_and_trailers_at_every_split() {
    for step in [1, 2, 3, 7, 1000] {
        let mut peer = Peer::new(false, 0, 0);
        let trailers = fields(&[("x-checksum", "abc")]);
        let bytes = peer.message(0, &request(), &[b"he", b"llo"], &trailers);
        let (mut s, mut q, mut rec) = (
            RequestStream::new(Role::Server, 0),
            Decoder::new(0, 0),
            Recorder::default(),
        );
        feed(&mut s, &mut q, &bytes, step, &mut rec).unwrap();
        assert_eq!(
            rec.sections,
            vec![request(), trailers.clone()],
            "step {step}"
        );
        assert_eq!(rec.body, b"hello");
        assert!(rec.ended && s.is_done());
    }
}

#[test]
fn client_reads_informational_then_final_response_and_push_promise() {
    let mut peer = Peer::new(false, 0, 0);
    let mut bytes = peer.message(
        0,
        &fields(&[(":status", "103"), ("link", "</s.css>")]),
        &[],
        &Fields::new(),
    );
    Frame::PushPromise {
        push_id: 0,
        section: &[0, 0, 0xd1],
    }
    .encode(&mut bytes);
    bytes.extend(peer.message(0, &response("200"), &[b"ok"], &Fields::new()));
    let (mut s, mut q, mut rec) = (
        RequestStream::new(Role::Client, 0),
        Decoder::new(0, 0),
        Recorder::default(),
    );
    feed(&mut s, &mut q, &bytes, 5, &mut rec).unwrap();
    assert_eq!(rec.informational, 1);
    assert_eq!(rec.sections.len(), 2);
    assert_eq!(rec.pushes, vec![0]);
    assert_eq!(rec.body, b"ok");
    assert!(rec.ended);
}

fn err(local: Role, bytes: &[u8]) -> RecvError {
    let (mut s, mut q, mut rec) = (
        RequestStream::new(local, 0),
        Decoder::new(0, 0),
        Recorder::default(),
    );
    feed(&mut s, &mut q, bytes, bytes.len().max(1), &mut rec).unwrap_err()
}

#[test]
fn frame_sequence_rules() {
    let mut peer = Peer::new(false, 0, 0);
    // DATA first.
    let mut b = Vec::new();
    write_data_header(1, &mut b);
    b.push(b'x');
    let e = err(Role::Server, &b);
    assert_eq!(
        (e.code(), e.scope()),
        (ErrorCode::H3_FRAME_UNEXPECTED, Scope::Connection)
    );
    // HEADERS after trailers; DATA after trailers.
    let r = fields(&[
        (":method", "GET"),
        (":scheme", "https"),
        (":authority", "a"),
        (":path", "/"),
    ]);
    let t = fields(&[("x-t", "1")]);
    let base = peer.message(0, &r, &[], &t);
    let mut b = base.clone();
    b.extend(peer.message(0, &t, &[], &Fields::new()));
    assert_eq!(err(Role::Server, &b).code(), ErrorCode::H3_FRAME_UNEXPECTED);
    let mut b = base.clone();
    write_data_header(0, &mut b);
    assert_eq!(err(Role::Server, &b).code(), ErrorCode::H3_FRAME_UNEXPECTED);
}

#[test]
fn incomplete_and_truncated_streams() {
    let mut peer = Peer::new(false, 0, 0);
    // Request stream ends with nothing: H3_REQUEST_INCOMPLETE (stream).
    let (mut s, mut q, mut rec) = (
        RequestStream::new(Role::Server, 0),
        Decoder::new(0, 0),
        Recorder::default(),
    );
    let e = s.recv(&[], true, &mut q, &mut rec).unwrap_err();
    assert_eq!(
        (e.code(), e.scope()),
        (ErrorCode::H3_REQUEST_INCOMPLETE, Scope::Stream)
    );
    // Response stream ends after a 1xx only: malformed.
    let b = peer.message(0, &fields(&[(":status", "100")]), &[], &Fields::new());
    assert_eq!(err(Role::Client, &b).code(), ErrorCode::H3_MESSAGE_ERROR);
    // Ends inside a DATA frame or inside a HEADERS frame: H3_FRAME_ERROR.
    let b = peer.message(0, &response("200"), &[b"abcdef"], &Fields::new());
    assert_eq!(
        err(Role::Client, &b[..b.len() - 1]).code(),
        ErrorCode::H3_FRAME_ERROR
    );
    let mut h = Vec::new();
    write_headers(&[0, 0, 0xd9], &mut h);
    assert_eq!(
        err(Role::Client, &h[..h.len() - 1]).code(),
        ErrorCode::H3_FRAME_ERROR
    );
}

#[test]
fn content_length_must_match_the_data() {
    let mut peer = Peer::new(false, 0, 0);
    let e = err(
        Role::Server,
        &peer.message(0, &request(), &[b"four"], &Fields::new()),
    );
    assert_eq!(
        (e.code(), e.scope()),
        (ErrorCode::H3_MESSAGE_ERROR, Scope::Stream)
    );
    let e = err(
        Role::Server,
        &peer.message(0, &request(), &[b"sixsix"], &Fields::new()),
    );
    assert_eq!(e.code(), ErrorCode::H3_MESSAGE_ERROR);
    // A response to HEAD carries content-length without content.
    let head = peer.message(
        0,
        &fields(&[(":status", "200"), ("content-length", "99")]),
        &[],
        &Fields::new(),
    );
    let (mut s, mut q, mut rec) = (
        RequestStream::new(Role::Client, 0),
        Decoder::new(0, 0),
        Recorder::default(),
    );
    s.set_request_was_head(true);
    feed(&mut s, &mut q, &head, 1000, &mut rec).unwrap();
    assert!(rec.ended);
}

#[test]
fn malformed_sections_are_message_errors_shared_with_http2_rules() {
    let mut peer = Peer::new(false, 0, 0);
    for bad in [
        fields(&[(":method", "GET"), (":path", "/")]), // no :scheme
        fields(&[
            (":method", "GET"),
            (":scheme", "https"),
            (":path", "/"),
            ("connection", "close"),
        ]),
        fields(&[
            (":method", "GET"),
            (":scheme", "https"),
            (":path", "/"),
            ("Upper", "x"),
        ]),
        fields(&[
            ("x", "1"),
            (":method", "GET"),
            (":scheme", "https"),
            (":path", "/"),
        ]),
        fields(&[(":status", "200")]),
    ] {
        let e = err(Role::Server, &peer.message(0, &bad, &[], &Fields::new()));
        assert_eq!(
            (e.code(), e.scope()),
            (ErrorCode::H3_MESSAGE_ERROR, Scope::Stream),
            "{bad:?}"
        );
    }
    let e = err(
        Role::Client,
        &peer.message(0, &fields(&[(":status", "2000")]), &[], &Fields::new()),
    );
    assert_eq!(e.code(), ErrorCode::H3_MESSAGE_ERROR);
}

#[test]
fn blocked_section_pauses_the_stream_until_inserts_arrive() {
    // The peer uses the dynamic table and may block one stream.
    let mut peer = Peer::new(true, 4096, 1);
    let bytes = peer.message(0, &request(), &[b"hello"], &Fields::new());
    let (mut s, mut q, mut rec) = (
        RequestStream::new(Role::Server, 0),
        Decoder::new(4096, 1),
        Recorder::default(),
    );
    let p = s.recv(&bytes, true, &mut q, &mut rec).unwrap();
    assert!(p.blocked);
    assert!(p.consumed < bytes.len());
    assert!(rec.sections.is_empty());
    // The encoder stream arrives.
    q.feed_encoder_stream(&peer.encoder_stream).unwrap();
    assert_eq!(q.next_unblocked(), Some(0));
    assert!(s.resume(&mut q, &mut rec).unwrap());
    let p2 = s
        .recv(&bytes[p.consumed..], true, &mut q, &mut rec)
        .unwrap();
    assert_eq!(p2.consumed, bytes.len() - p.consumed);
    assert_eq!(rec.sections, vec![request()]);
    assert_eq!(rec.body, b"hello");
    assert!(rec.ended);
}

#[test]
fn qpack_failures_keep_their_codes() {
    let mut h = Vec::new();
    write_headers(&[0x00, 0x00, 0xff, 0x24], &mut h); // static index 99
    let e = err(Role::Server, &h);
    assert_eq!(
        (e.code(), e.scope()),
        (ErrorCode::QPACK_DECOMPRESSION_FAILED, Scope::Connection)
    );
}

#[test]
fn control_stream_bytes_from_the_mock_peer() {
    let b = Peer::control_stream(Settings {
        qpack_max_table_capacity: 4096,
        ..Settings::default()
    });
    assert_eq!(b[0], 0x00, "control stream type");
    assert_eq!(b[1], 0x04, "SETTINGS");
}

#[test]
fn send_stream_enforces_the_message_order_and_content_length() {
    use h2lab_wire::h3::request::{SendError, SendStream};
    let mut out = Vec::new();
    let mut s = SendStream::new();
    assert_eq!(s.data_header(1, &mut out), Err(SendError::OutOfOrder));
    assert_eq!(s.finish(), Err(SendError::OutOfOrder));
    s.headers(&[0, 0, 0xff, 0x00], true, None, &mut out)
        .unwrap(); // 1xx
    s.headers(&[0, 0, 0xd9], false, Some(3), &mut out).unwrap();
    assert_eq!(
        s.headers(&[0, 0], false, None, &mut out),
        Err(SendError::OutOfOrder)
    );
    s.data_header(2, &mut out).unwrap();
    out.extend_from_slice(b"ab");
    assert_eq!(s.data_header(2, &mut out), Err(SendError::TooMuchContent));
    assert_eq!(s.finish(), Err(SendError::TooLittleContent));
    s.data_header(1, &mut out).unwrap();
    out.push(b'c');
    s.trailers(&[0, 0], &mut out).unwrap();
    assert_eq!(s.data_header(0, &mut out), Err(SendError::OutOfOrder));
    s.finish().unwrap();
    assert_eq!(s.finish(), Err(SendError::Finished));
    // What was written is a well-formed frame sequence (the sections here are only
    // placeholders, so only the framing is read back).
    let mut d =
        h2lab_wire::h3::frame::FrameDecoder::new(h2lab_wire::h3::frame::StreamContext::Request {
            local: Role::Client,
        });
    let (mut pos, mut frames) = (0, 0);
    while pos < out.len() {
        let (_, n) = d.decode(&out[pos..]).unwrap();
        pos += n;
        frames += 1;
    }
    assert!(frames >= 5);
}

#[test]
fn control_reader_reports_settings_goaway_and_rejects_closure() {
    use h2lab_wire::h3::control::{write_control_stream_start, ControlEvent, ControlReader};
    use h2lab_wire::h3::stream::UniStreamType;
    let settings = Settings {
        qpack_max_table_capacity: 4096,
        qpack_blocked_streams: 8,
        ..Settings::default()
    };
    let mut bytes = Vec::new();
    write_control_stream_start(settings, &mut bytes);
    let (ty, n) = UniStreamType::parse(&bytes).unwrap();
    assert_eq!(ty, UniStreamType::Control);
    Frame::Unknown {
        ty: 0x21,
        payload: b"grease",
    }
    .encode(&mut bytes);
    Frame::GoAway(8).encode(&mut bytes);
    Frame::GoAway(4).encode(&mut bytes);
    let mut r = ControlReader::new(Role::Client);
    let mut events = Vec::new();
    // Byte by byte.
    let mut buf = Vec::new();
    for &b in &bytes[n..] {
        buf.push(b);
        let used = r.recv(&buf, false, |e| events.push(e)).unwrap();
        buf.drain(..used);
    }
    assert_eq!(
        events,
        vec![
            ControlEvent::Settings(settings),
            ControlEvent::GoAway(8),
            ControlEvent::GoAway(4)
        ]
    );
    assert_eq!(r.settings(), Some(settings));
    // A larger GOAWAY afterwards, and closing the stream, are connection errors.
    let mut more = Vec::new();
    Frame::GoAway(12).encode(&mut more);
    assert_eq!(
        r.recv(&more, false, |_| {}).unwrap_err().code,
        ErrorCode::H3_ID_ERROR
    );
    let mut r2 = ControlReader::new(Role::Server);
    assert_eq!(
        r2.recv(&bytes[n..], true, |_| {}).unwrap_err().code,
        ErrorCode::H3_CLOSED_CRITICAL_STREAM
    );
}

/// A sink that wants only the facts and sizes (as `h2lab bench --h3`'s).
#[derive(Default)]
struct FactsOnly {
    fields: usize,
    skipped: usize,
    decoded: usize,
    statuses: Vec<u16>,
    lengths: Vec<Option<u64>>,
    ended: usize,
}

impl h2lab_wire::h3::request::RequestEvents for FactsOnly {
    fn field(&mut self, name: &[u8], value: &[u8]) {
        self.fields += 1;
        self.decoded += name.len() + value.len();
    }
    fn wants_fields(&self) -> bool {
        false
    }
    fn fields_skipped(&mut self, decoded_len: usize) {
        self.skipped += 1;
        self.decoded += decoded_len;
    }
    fn section_done(
        &mut self,
        _kind: h2lab_wire::h3::fields::SectionKind,
        facts: h2lab_wire::h3::fields::SectionFacts,
        _informational: bool,
    ) {
        self.statuses.extend(facts.status);
        self.lengths.push(facts.content_length);
    }
    fn data(&mut self, _chunk: &[u8]) {}
    fn end(&mut self) {
        self.ended += 1;
    }
}

#[test]
fn a_repeated_static_only_response_section_is_not_decoded_again() {
    // Static table and literals only (a client that announced a QPACK table of 0): the
    // second and third identical sections come from the memo with the same facts and sizes;
    // a different one is decoded; the memo's content-length is still enforced.
    let mut peer = Peer::new(false, 0, 0);
    let ok = fields(&[(":status", "200"), ("content-length", "5"), ("server", "x")]);
    let other = fields(&[(":status", "404"), ("content-length", "5"), ("server", "x")]);
    let mut q = Decoder::new(0, 0);
    let mut sink = FactsOnly::default();
    let decoded_one = ":status200content-length5serverx".len();
    for (i, f) in [&ok, &ok, &ok, &other, &ok].into_iter().enumerate() {
        let id = 4 * i as u64;
        let bytes = peer.message(id, f, &[b"hello"], &Fields::new());
        let mut s = RequestStream::new(Role::Client, id);
        s.recv(&bytes, true, &mut q, &mut sink).unwrap();
        assert!(s.is_done());
    }
    assert_eq!(sink.statuses, [200, 200, 200, 404, 200]);
    assert_eq!(sink.lengths, [Some(5); 5]);
    assert_eq!(sink.ended, 5);
    // Decoded: the first 200, the 404 and the 200 after it (the memo holds one section).
    assert_eq!(sink.fields, 9);
    assert_eq!(sink.skipped, 2);
    assert_eq!(sink.decoded, 5 * decoded_one);
    // A remembered section's content-length still binds the body.
    let bytes = peer.message(20, &ok, &[b"hell"], &Fields::new());
    let mut s = RequestStream::new(Role::Client, 20);
    let e = s.recv(&bytes, true, &mut q, &mut sink).unwrap_err();
    assert_eq!(e.code(), ErrorCode::H3_MESSAGE_ERROR);
    assert_eq!(sink.skipped, 3);
}

#[test]
fn dynamic_sections_are_replayed_only_while_the_table_is_unchanged_and_still_acknowledged() {
    // A dynamic-table peer: Required Insert Count above 0. A section byte-identical to the
    // remembered one is replayed while the table's insert count and capacity are unchanged,
    // and it still queues its Section Acknowledgment; after an insert the same octets are
    // decoded again.
    let mut peer = Peer::new(true, 4096, 1);
    let ok = fields(&[(":status", "200"), ("server", "x")]);
    let mut q = Decoder::new(4096, 1);
    let mut sink = FactsOnly::default();
    let round = |i: u64, peer: &mut Peer, q: &mut Decoder, sink: &mut FactsOnly| {
        let bytes = peer.message(4 * i, &ok, &[], &Fields::new());
        q.feed_encoder_stream(&std::mem::take(&mut peer.encoder_stream))
            .unwrap();
        let mut s = RequestStream::new(Role::Client, 4 * i);
        s.recv(&bytes, true, q, sink).unwrap();
        // Our acknowledgments back to the peer, so it keeps referring to its entries: a
        // Section Acknowledgment for this stream (0b1 + stream id) every time, replayed or
        // decoded.
        let mut acks = Vec::new();
        q.take_decoder_stream(&mut acks);
        assert_eq!(
            acks.first(),
            Some(&(0x80 | (4 * i) as u8)),
            "round {i}: {acks:?}"
        );
        peer.encoder.feed_decoder_stream(&acks).unwrap();
        bytes
    };
    round(0, &mut peer, &mut q, &mut sink);
    let second = round(1, &mut peer, &mut q, &mut sink);
    let third = round(2, &mut peer, &mut q, &mut sink);
    assert_eq!(second, third);
    // Decoded twice (the first section, then the one on acknowledged entries), replayed once.
    assert_eq!((sink.fields, sink.skipped), (4, 1));
    assert_eq!(sink.statuses, [200, 200, 200]);
    // Set Dynamic Table Capacity changes the table's state (nothing is evicted here): the
    // same octets are decoded again, then replayed again.
    let mut enc = Vec::new();
    h2lab_wire::qpack::instructions::write_set_capacity(4000, &mut enc);
    q.feed_encoder_stream(&enc).unwrap();
    for id in [12u64, 16] {
        let mut s = RequestStream::new(Role::Client, id);
        s.recv(&third, true, &mut q, &mut sink).unwrap();
        let mut acks = Vec::new();
        q.take_decoder_stream(&mut acks);
        assert_eq!(acks.first(), Some(&(0x80 | id as u8)));
    }
    assert_eq!((sink.fields, sink.skipped), (6, 2));
    // A sink that wants the fields gets them every time, static-only or not.
    let mut peer = Peer::new(false, 0, 0);
    let mut q = Decoder::new(0, 0);
    let mut rec = Recorder::default();
    for i in 0..3u64 {
        let bytes = peer.message(4 * i, &ok, &[], &Fields::new());
        let mut s = RequestStream::new(Role::Client, 4 * i);
        s.recv(&bytes, true, &mut q, &mut rec).unwrap();
    }
    assert_eq!(rec.sections, vec![ok.clone(), ok.clone(), ok]);
}

#[test]
fn a_repeated_static_only_request_section_is_replayed_field_for_field() {
    // The server wants the fields (it routes on them): a request section identical to the
    // previous static-only one is replayed from the memo, then a different one decoded, and
    // a malformed one is still refused after a remembered one.
    let mut peer = Peer::new(false, 0, 0);
    let other = fields(&[
        (":method", "GET"),
        (":scheme", "https"),
        (":authority", "a.example"),
        (":path", "/other"),
    ]);
    let mut q = Decoder::new(0, 0);
    let mut rec = Recorder::default();
    let sent = [
        request(),
        request(),
        other.clone(),
        other.clone(),
        request(),
    ];
    for (i, f) in sent.iter().enumerate() {
        let id = 4 * i as u64;
        let body: &[&[u8]] = if f == &request() { &[b"hello"] } else { &[] };
        let bytes = peer.message(id, f, body, &Fields::new());
        let mut s = RequestStream::new(Role::Server, id);
        s.recv(&bytes, true, &mut q, &mut rec).unwrap();
        assert!(s.is_done());
    }
    assert_eq!(rec.sections, sent.to_vec());
    let bad = fields(&[(":method", "GET"), (":path", "/other")]);
    let bytes = peer.message(40, &bad, &[], &Fields::new());
    let mut s = RequestStream::new(Role::Server, 40);
    assert!(s.recv(&bytes, true, &mut q, &mut rec).is_err());
}

/// A sink that takes a replayed section's fields in one piece (as `h2lab serve`'s).
#[derive(Default)]
struct PackedSink {
    current: Vec<u8>,
    sections: Vec<Fields>,
    packed: usize,
}

impl h2lab_wire::h3::request::RequestEvents for PackedSink {
    fn field(&mut self, name: &[u8], value: &[u8]) {
        h2lab_wire::h3::packed::push(&mut self.current, name, value);
    }
    fn packed_fields(&mut self, packed: &[u8]) -> bool {
        self.packed += 1;
        self.current.extend_from_slice(packed);
        true
    }
    fn section_done(
        &mut self,
        _kind: h2lab_wire::h3::fields::SectionKind,
        _facts: h2lab_wire::h3::fields::SectionFacts,
        _informational: bool,
    ) {
        let f = h2lab_wire::h3::packed::iter(&self.current)
            .map(|(n, v)| (n.to_vec(), v.to_vec()))
            .collect();
        self.sections.push(f);
        self.current.clear();
    }
    fn data(&mut self, _chunk: &[u8]) {}
    fn end(&mut self) {}
}

#[test]
fn a_repeated_request_section_is_handed_over_packed_to_a_sink_that_takes_it() {
    // The same sequence as above, to a sink taking packed fields: the repeated sections
    // come in one piece from the memo and read back field for field as sent; the others
    // are decoded and delivered one field at a time.
    let mut peer = Peer::new(false, 0, 0);
    let other = fields(&[
        (":method", "GET"),
        (":scheme", "https"),
        (":authority", "a.example"),
        (":path", "/other"),
        ("x-empty", ""),
    ]);
    let mut q = Decoder::new(0, 0);
    let mut sink = PackedSink::default();
    let sent = [
        request(),
        request(),
        other.clone(),
        other.clone(),
        request(),
    ];
    for (i, f) in sent.iter().enumerate() {
        let id = 4 * i as u64;
        let body: &[&[u8]] = if f == &request() { &[b"hello"] } else { &[] };
        let bytes = peer.message(id, f, body, &Fields::new());
        let mut s = RequestStream::new(Role::Server, id);
        s.recv(&bytes, true, &mut q, &mut sink).unwrap();
        assert!(s.is_done());
    }
    assert_eq!(sink.sections, sent.to_vec());
    // Sections 2 and 4 repeat their predecessor.
    assert_eq!(sink.packed, 2);
}
