//! Steady-state QPACK and HTTP/3 work allocates nothing (the hot-path rule): the request
//! template in both modes, decoding a warm response section, and reading a response stream.
//! Allocations are counted on the test's own thread (the harness's main thread may allocate
//! at any moment).

use h2lab_testkit::thread_allocations as allocations;
use h2lab_wire::h3::request::RequestStream;
use h2lab_wire::h3::testing::{fields, Fields, Peer, Recorder};
use h2lab_wire::h3::Role;
use h2lab_wire::qpack::{Decoder, Encoder, EncoderConfig, RequestTemplate};

#[global_allocator]
static GLOBAL: h2lab_testkit::CountingAlloc = h2lab_testkit::CountingAlloc;

#[test]
fn steady_state_allocates_nothing() {
    let fixed: [(&[u8], &[u8]); 4] = [
        (b":method", b"GET"),
        (b":scheme", b"https"),
        (b":authority", b"example.com"),
        (b"user-agent", b"h2lab"),
    ];
    let mut section = Vec::with_capacity(1024);
    let mut es = Vec::with_capacity(1024);
    let mut fb = Vec::with_capacity(64);

    // Template, dynamic mode, acknowledged: copy + ack per request.
    let cfg = EncoderConfig::default();
    let mut t = RequestTemplate::new(fixed, [&b"/a"[..], b"/b"], cfg).unwrap();
    t.set_peer_settings(4096, 0);
    let mut peer = Decoder::new(4096, 0);
    t.encode_next(0, 0, &mut section, &mut es);
    peer.feed_encoder_stream(&es).unwrap();
    peer.take_decoder_stream(&mut fb);
    t.feed_decoder_stream(&fb).unwrap();
    let mut request = |t: &mut RequestTemplate, i: u64, section: &mut Vec<u8>, fb: &mut Vec<u8>| {
        section.clear();
        t.encode_next(4 * i, i as usize, section, &mut es);
        // The peer's Section Acknowledgment for the stream.
        fb.clear();
        h2lab_wire::qpack::instructions::DecoderInstruction::SectionAck { stream_id: 4 * i }
            .write(fb);
        t.feed_decoder_stream(fb).unwrap();
    };
    for i in 1..100u64 {
        request(&mut t, i, &mut section, &mut fb);
    }
    assert!(t.uses_dynamic_table());
    let before = allocations();
    for i in 100..1100u64 {
        request(&mut t, i, &mut section, &mut fb);
    }
    assert_eq!(allocations() - before, 0, "template, dynamic mode");

    // Decoding a warm response section (dynamic references), draining the acks.
    let mut enc = Encoder::new(cfg);
    enc.set_peer_settings(4096, 0);
    let mut dec = Decoder::new(4096, 0);
    let resp: [(&[u8], &[u8]); 3] = [
        (b":status", b"200"),
        (b"content-type", b"text/x"),
        (b"date", b"Mon"),
    ];
    for id in [0u64, 4, 8] {
        section.clear();
        es.clear();
        enc.encode(id, resp, &mut section, &mut es);
        dec.feed_encoder_stream(&es).unwrap();
        dec.decode_section(id, &section, |_| {}).unwrap();
        fb.clear();
        dec.take_decoder_stream(&mut fb);
        enc.feed_decoder_stream(&fb).unwrap();
    }
    let before = allocations();
    for _ in 0..1000 {
        let mut n = 0;
        dec.decode_section(12, &section, |f| n += f.value.len())
            .unwrap();
        fb.clear();
        dec.take_decoder_stream(&mut fb);
        assert!(n > 0);
    }
    assert_eq!(allocations() - before, 0, "decoding a warm section");

    // Reading a response stream (static sections, DATA) with a recorder whose buffers are
    // warm.
    let mut p = Peer::new(false, 0, 0);
    let resp: Fields = fields(&[(":status", "200"), ("content-length", "3")]);
    let bytes = p.message(0, &resp, &[b"abc"], &Fields::new());
    let mut q = Decoder::new(0, 0);
    let mut rec = Recorder::default();
    let mut s = RequestStream::new(Role::Client, 0);
    s.recv(&bytes, true, &mut q, &mut rec).unwrap();
    let before = allocations();
    for _ in 0..1000 {
        let mut s = RequestStream::new(Role::Client, 0);
        let mut sink = Sink;
        s.recv(&bytes, true, &mut q, &mut sink).unwrap();
    }
    assert_eq!(allocations() - before, 0, "reading a response stream");
}

struct Sink;
impl h2lab_wire::h3::request::RequestEvents for Sink {
    fn field(&mut self, _: &[u8], _: &[u8]) {}
    fn section_done(
        &mut self,
        _: h2lab_wire::h3::fields::SectionKind,
        _: h2lab_wire::h3::fields::SectionFacts,
        _: bool,
    ) {
    }
    fn data(&mut self, _: &[u8]) {}
    fn end(&mut self) {}
}
