//! QPACK rules (RFC 9204), one test per rule: decoder limits and typed errors, the encoder's
//! handling of the decoder stream, blocked streams, and the request template.

use h2lab_wire::hpack::HpackError;
use h2lab_wire::qpack::instructions::{
    write_duplicate, write_insert_with_literal_name, write_insert_with_name_ref,
    write_set_capacity, DecoderInstruction,
};
use h2lab_wire::qpack::{
    Decoded, Decoder, Encoder, EncoderConfig, QpackError, QpackErrorCode, RequestTemplate, Source,
};

type Fields = Vec<(Vec<u8>, Vec<u8>)>;

fn decode(d: &mut Decoder, id: u64, section: &[u8]) -> Result<(Decoded, Fields), QpackError> {
    let mut out = Fields::new();
    let r = d.decode_section(id, section, |f| {
        out.push((f.name.to_vec(), f.value.to_vec()))
    })?;
    Ok((r, out))
}

fn f(n: &str, v: &str) -> (Vec<u8>, Vec<u8>) {
    (n.as_bytes().to_vec(), v.as_bytes().to_vec())
}

/// A decoder with capacity 4096 set and `name: value` inserted as absolute index 0.
fn with_one_entry(blocked: usize) -> Decoder {
    let mut d = Decoder::new(4096, blocked);
    let mut e = Vec::new();
    write_set_capacity(4096, &mut e);
    write_insert_with_literal_name(b"name", b"value", &mut e);
    d.feed_encoder_stream(&e).unwrap();
    d
}

#[test]
fn static_only_section_and_never_indexed_flag() {
    let mut d = Decoder::new(0, 0);
    // 00 00 | indexed static 17 (:method GET) | literal static name 1 (:path) N=1 "/x" |
    // literal name "a" "b".
    let s = [
        0x00, 0x00, 0xd1, 0x71, 0x02, b'/', b'x', 0x21, b'a', 0x01, b'b',
    ];
    let mut got = Vec::new();
    let r = d.decode_section(0, &s, |fl| {
        got.push((fl.name.to_vec(), fl.value.to_vec(), fl.sensitive))
    });
    assert_eq!(r, Ok(Decoded::Done));
    assert_eq!(
        got,
        vec![
            (b":method".to_vec(), b"GET".to_vec(), false),
            (b":path".to_vec(), b"/x".to_vec(), true),
            (b"a".to_vec(), b"b".to_vec(), false)
        ]
    );
    // Nothing to acknowledge for a section with Required Insert Count 0.
    let mut fb = Vec::new();
    assert_eq!(d.take_decoder_stream(&mut fb), 0);
}

#[test]
fn invalid_static_index_in_section_and_on_encoder_stream() {
    let mut d = Decoder::new(4096, 0);
    // Indexed static 99: 0xff 0x24 (63 + 36).
    assert_eq!(
        decode(&mut d, 0, &[0, 0, 0xff, 0x24]).unwrap_err(),
        QpackError::InvalidStaticIndex {
            source: Source::FieldSection,
            index: 99
        }
    );
    let mut e = Vec::new();
    write_set_capacity(100, &mut e);
    write_insert_with_name_ref(true, 99, b"v", &mut e);
    let err = d.feed_encoder_stream(&e).unwrap_err();
    assert_eq!(
        err,
        QpackError::InvalidStaticIndex {
            source: Source::EncoderStream,
            index: 99
        }
    );
    assert_eq!(err.code(), QpackErrorCode::EncoderStreamError);
    assert_eq!(err.code().value(), 0x0201);
}

#[test]
fn capacity_above_our_setting_is_an_encoder_stream_error() {
    let mut d = Decoder::new(256, 0);
    let mut e = Vec::new();
    write_set_capacity(257, &mut e);
    assert_eq!(
        d.feed_encoder_stream(&e),
        Err(QpackError::CapacityTooLarge {
            requested: 257,
            max: 256
        })
    );
}

#[test]
fn insert_larger_than_capacity_is_an_encoder_stream_error() {
    let mut d = Decoder::new(256, 0);
    let mut e = Vec::new();
    write_set_capacity(40, &mut e);
    write_insert_with_literal_name(b"abcd", b"efgh", &mut e); // 40: fits exactly
    write_insert_with_literal_name(b"abcd", b"efghi", &mut e); // 41
    assert_eq!(
        d.feed_encoder_stream(&e),
        Err(QpackError::EntryTooLarge {
            size: 41,
            capacity: 40
        })
    );
    assert_eq!(d.table().insert_count(), 1);
}

#[test]
fn encoder_stream_instructions_split_anywhere() {
    let mut e = Vec::new();
    write_set_capacity(4096, &mut e);
    write_insert_with_literal_name(b"custom-key", b"custom-value", &mut e);
    write_insert_with_name_ref(false, 0, b"other", &mut e);
    write_duplicate(1, &mut e);
    for cut in 0..=e.len() {
        let mut d = Decoder::new(4096, 0);
        d.feed_encoder_stream(&e[..cut]).unwrap();
        d.feed_encoder_stream(&e[cut..]).unwrap();
        let t = d.table();
        assert_eq!(t.insert_count(), 3, "cut {cut}");
        assert_eq!(t.get_absolute(1), Some((&b"custom-key"[..], &b"other"[..])));
        assert_eq!(
            t.get_absolute(2),
            Some((&b"custom-key"[..], &b"custom-value"[..]))
        );
    }
}

#[test]
fn references_beyond_required_insert_count_or_evicted() {
    let mut d = with_one_entry(0);
    // RIC 1 (encoded 2), Base 1: relative 0 = abs 0: fine.
    let (_, got) = decode(&mut d, 0, &[0x02, 0x00, 0x80]).unwrap();
    assert_eq!(got, vec![f("name", "value")]);
    // RIC 1, post-base index 0 = abs 1 >= RIC: invalid.
    assert_eq!(
        decode(&mut d, 4, &[0x02, 0x00, 0x10]).unwrap_err(),
        QpackError::InvalidDynamicReference {
            source: Source::FieldSection,
            index: 1
        }
    );
    // RIC 0 and a dynamic reference: invalid.
    assert!(matches!(
        decode(&mut d, 8, &[0x00, 0x00, 0x80]).unwrap_err(),
        QpackError::InvalidDynamicReference { .. }
    ));
    // Evicted entry: shrink the capacity to 0, then insert count 1 but nothing live.
    let mut e = Vec::new();
    write_set_capacity(0, &mut e);
    d.feed_encoder_stream(&e).unwrap();
    assert_eq!(
        decode(&mut d, 12, &[0x02, 0x00, 0x80]).unwrap_err(),
        QpackError::InvalidDynamicReference {
            source: Source::FieldSection,
            index: 0
        }
    );
}

#[test]
fn required_insert_count_rules() {
    let mut d = with_one_entry(0);
    // MaxEntries = 4096 / 32 = 128, FullRange = 256: encoded 257 is impossible.
    let mut s = Vec::new();
    h2lab_wire::hpack::integer::encode(257, 8, 0, &mut s);
    s.push(0);
    assert_eq!(
        decode(&mut d, 0, &s).unwrap_err(),
        QpackError::InvalidRequiredInsertCount { encoded: 257 }
    );
    // A table capacity of 0 admits no non-zero Required Insert Count.
    let mut z = Decoder::new(0, 10);
    assert_eq!(
        decode(&mut z, 0, &[0x01, 0x00]).unwrap_err(),
        QpackError::InvalidRequiredInsertCount { encoded: 1 }
    );
    // Declared 1 but nothing referenced.
    assert_eq!(
        decode(&mut d, 0, &[0x02, 0x00, 0xd1]).unwrap_err(),
        QpackError::RequiredInsertCountTooLarge {
            declared: 1,
            used: 0
        }
    );
    // Sign bit with Delta Base >= Required Insert Count: negative Base.
    assert_eq!(
        decode(&mut d, 0, &[0x02, 0x81]).unwrap_err(),
        QpackError::NegativeBase
    );
    assert_eq!(
        QpackError::NegativeBase.code(),
        QpackErrorCode::DecompressionFailed
    );
}

#[test]
fn blocked_sections_wait_for_inserts_within_the_limit() {
    let mut d = Decoder::new(4096, 2);
    // Sections for streams 0, 4 reference abs 0 (RIC 1): blocked.
    assert_eq!(
        decode(&mut d, 0, &[0x02, 0x00, 0x80]).unwrap().0,
        Decoded::Blocked
    );
    assert_eq!(
        decode(&mut d, 4, &[0x02, 0x80, 0x10]).unwrap().0,
        Decoded::Blocked
    );
    assert_eq!(d.blocked_streams(), 2);
    // A third stream exceeds SETTINGS_QPACK_BLOCKED_STREAMS = 2.
    assert_eq!(
        decode(&mut d, 8, &[0x02, 0x00, 0x80]).unwrap_err(),
        QpackError::TooManyBlockedStreams { max: 2 }
    );
    // A second section on a blocked stream is a caller error.
    assert_eq!(
        decode(&mut d, 0, &[0x02, 0x00, 0x80]).unwrap_err(),
        QpackError::AlreadyBlocked { stream_id: 0 }
    );
    assert_eq!(d.next_unblocked(), None);
    let mut e = Vec::new();
    write_set_capacity(4096, &mut e);
    write_insert_with_literal_name(b"name", b"value", &mut e);
    d.feed_encoder_stream(&e).unwrap();
    let mut released = Vec::new();
    while let Some(s) = d.next_unblocked() {
        let mut got = Fields::new();
        assert_eq!(
            d.decode_unblocked(s, |fl| got.push((fl.name.to_vec(), fl.value.to_vec()))),
            Ok(Decoded::Done)
        );
        released.push((s, got));
    }
    assert_eq!(
        released,
        vec![(0, vec![f("name", "value")]), (4, vec![f("name", "value")])]
    );
    let mut fb = Vec::new();
    d.take_decoder_stream(&mut fb);
    // Two Section Acknowledgments (0x80, 0x84); they cover the insert: no increment.
    assert_eq!(fb, [0x80, 0x84]);
}

#[test]
fn zero_blocked_streams_rejects_the_first_blocked_section() {
    let mut d = Decoder::new(4096, 0);
    assert_eq!(
        decode(&mut d, 0, &[0x02, 0x00, 0x80]).unwrap_err(),
        QpackError::TooManyBlockedStreams { max: 0 }
    );
}

#[test]
fn cancelled_stream_drops_its_blocked_section_and_says_so() {
    let mut d = Decoder::new(4096, 1);
    assert_eq!(
        decode(&mut d, 8, &[0x02, 0x00, 0x80]).unwrap().0,
        Decoded::Blocked
    );
    d.cancel_stream(8);
    assert_eq!(d.blocked_streams(), 0);
    let mut fb = Vec::new();
    d.take_decoder_stream(&mut fb);
    assert_eq!(
        DecoderInstruction::parse(&fb),
        Ok(Some((DecoderInstruction::StreamCancel { stream_id: 8 }, 1)))
    );
}

#[test]
fn insert_count_increment_after_inserts() {
    let mut d = with_one_entry(0);
    let mut fb = Vec::new();
    d.take_decoder_stream(&mut fb);
    assert_eq!(fb, [0x01]);
    fb.clear();
    assert_eq!(d.take_decoder_stream(&mut fb), 0, "only once");
}

#[test]
fn field_section_size_limit_defends_against_bombs() {
    let mut d = Decoder::new(4096, 0);
    let mut e = Vec::new();
    write_set_capacity(4096, &mut e);
    write_insert_with_literal_name(b"x", &[b'y'; 3000], &mut e);
    d.feed_encoder_stream(&e).unwrap();
    d.set_max_field_section_size(16 * 1024);
    // 10,000 one-octet references to a 3 kB entry: 30 MB if expanded.
    let mut s = vec![0x02, 0x00];
    s.extend(std::iter::repeat_n(0x80, 10_000));
    let mut delivered = 0;
    let r = d.decode_section(0, &s, |_| delivered += 1);
    let err = r.unwrap_err();
    assert_eq!(err, QpackError::HeaderListTooLarge { max: 16 * 1024 });
    assert!(!err.is_connection_error());
    assert_eq!(delivered, 5, "fields delivered before the limit");
    // The section was still acknowledged, so the encoder does not stay pinned.
    let mut fb = Vec::new();
    d.take_decoder_stream(&mut fb);
    assert_eq!(fb[0], 0x80);
}

#[test]
fn string_limit_and_huffman_errors_are_typed() {
    let mut d = Decoder::new(0, 0);
    d.set_max_string_len(4);
    assert_eq!(
        decode(
            &mut d,
            0,
            &[0, 0, 0x5f, 0x1d, 0x05, b'a', b'b', b'c', b'd', b'e']
        )
        .unwrap_err(),
        QpackError::StringTooLong {
            source: Source::FieldSection,
            len: 5,
            max: 4
        }
    );
    // Huffman value of one octet 0x00: the padding is not a prefix of EOS.
    let err = decode(&mut d, 0, &[0, 0, 0x5f, 0x1d, 0x81, 0x00]).unwrap_err();
    assert!(
        matches!(
            err,
            QpackError::Primitive {
                source: Source::FieldSection,
                error: HpackError::HuffmanInvalidPadding | HpackError::HuffmanPaddingTooLong
            }
        ),
        "{err:?}"
    );
}

fn pair(table: usize, blocked: usize, dynamic: bool) -> (Encoder, Decoder) {
    let mut e = Encoder::new(EncoderConfig {
        use_dynamic_table: dynamic,
        max_table_capacity: 4096,
    });
    e.set_peer_settings(table, blocked);
    (e, Decoder::new(table, blocked))
}

#[test]
fn encoder_rejects_bad_decoder_stream_input() {
    let (mut e, _) = pair(4096, 10, true);
    let mut z = Vec::new();
    DecoderInstruction::InsertCountIncrement(0).write(&mut z);
    assert_eq!(e.feed_decoder_stream(&z), Err(QpackError::ZeroIncrement));
    let mut z = Vec::new();
    DecoderInstruction::InsertCountIncrement(1).write(&mut z);
    assert_eq!(
        e.feed_decoder_stream(&z),
        Err(QpackError::IncrementTooLarge {
            reached: 1,
            sent: 0
        })
    );
    let mut z = Vec::new();
    DecoderInstruction::SectionAck { stream_id: 4 }.write(&mut z);
    let err = e.feed_decoder_stream(&z).unwrap_err();
    assert_eq!(err, QpackError::UnexpectedSectionAck { stream_id: 4 });
    assert_eq!(err.code(), QpackErrorCode::DecoderStreamError);
}

#[test]
fn encoder_blocks_at_most_the_peer_limit_and_unpins_on_ack() {
    let (mut e, mut d) = pair(4096, 1, true);
    let fields: [(&[u8], &[u8]); 2] = [(b"x-a", b"1"), (b"x-b", b"2")];
    let (mut s0, mut s1, mut es) = (Vec::new(), Vec::new(), Vec::new());
    e.encode(0, fields, &mut s0, &mut es);
    // Stream 0 references its fresh inserts (post-base): it may block.
    assert_ne!(s0[0], 0, "Required Insert Count > 0");
    assert_eq!(e.blocking_streams(), 1);
    // Stream 4 may not block (limit 1): literals only, the entries are already there.
    e.encode(4, fields, &mut s1, &mut es);
    assert_eq!(&s1[..2], &[0, 0]);
    assert_eq!(decode(&mut d, 0, &s0).unwrap().0, Decoded::Blocked);
    assert_eq!(decode(&mut d, 4, &s1).unwrap().0, Decoded::Done);
    d.feed_encoder_stream(&es).unwrap();
    assert_eq!(d.next_unblocked(), Some(0));
    d.decode_unblocked(0, |_| {}).unwrap();
    let mut fb = Vec::new();
    d.take_decoder_stream(&mut fb);
    e.feed_decoder_stream(&fb).unwrap();
    assert_eq!(e.blocking_streams(), 0);
    assert_eq!(e.known_received_count(), 2);
    // Now known received: a one-octet reference per field, no blocking.
    let mut s2 = Vec::new();
    e.encode(8, fields, &mut s2, &mut Vec::new());
    assert_eq!(s2.len(), 2 + 2, "prefix + two indexed lines: {s2:02x?}");
    assert_eq!(
        decode(&mut d, 8, &s2).unwrap(),
        (Decoded::Done, vec![f("x-a", "1"), f("x-b", "2")])
    );
}

#[test]
fn encoder_with_the_dynamic_table_off_writes_no_encoder_stream() {
    let (mut e, mut d) = pair(4096, 100, false);
    let (mut s, mut es) = (Vec::new(), Vec::new());
    e.encode(
        0,
        [
            (&b"x-custom"[..], &b"v"[..]),
            (b":status", b"200"),
            (b"authorization", b"secret"),
        ],
        &mut s,
        &mut es,
    );
    assert!(es.is_empty());
    let mut got = Vec::new();
    d.decode_section(0, &s, |fl| got.push((fl.name.to_vec(), fl.sensitive)))
        .unwrap();
    assert_eq!(
        got,
        vec![
            (b"x-custom".to_vec(), false),
            (b":status".to_vec(), false),
            (b"authorization".to_vec(), true)
        ]
    );
}

#[test]
fn encoder_never_evicts_unacknowledged_entries() {
    // Capacity 100: two 40-octet entries fit; a third would evict the first, which is
    // not acknowledged yet, so it is sent as a literal.
    let (mut e, mut d) = pair(100, 0, true);
    let mut es = Vec::new();
    for (i, v) in ["aaaa", "bbbb", "cccc"].iter().enumerate() {
        let mut s = Vec::new();
        e.encode(
            4 * i as u64,
            [(&b"nnnn"[..], v.as_bytes())],
            &mut s,
            &mut es,
        );
        d.feed_encoder_stream(&es).unwrap();
        es.clear();
        decode(&mut d, 4 * i as u64, &s).unwrap();
    }
    assert_eq!(e.table().insert_count(), 2);
    let mut fb = Vec::new();
    d.take_decoder_stream(&mut fb);
    e.feed_decoder_stream(&fb).unwrap();
    // Acknowledged and unreferenced: the oldest may go now.
    let mut s = Vec::new();
    e.encode(12, [(&b"nnnn"[..], &b"dddd"[..])], &mut s, &mut es);
    assert_eq!(e.table().insert_count(), 3);
    assert_eq!(e.table().first_live(), 1);
}

#[test]
fn template_static_then_dynamic_after_acknowledgment() {
    let fields: [(&[u8], &[u8]); 4] = [
        (b":method", b"GET"),
        (b":scheme", b"https"),
        (b":authority", b"example.com"),
        (b"user-agent", b"h2lab/1"),
    ];
    let paths: [&[u8]; 2] = [b"/", b"/a/longer/path"];
    let mut t = RequestTemplate::new(fields, paths, EncoderConfig::default()).unwrap();
    t.set_peer_settings(4096, 0);
    let mut d = Decoder::new(4096, 0);
    // `:path` goes after the leading pseudo-header fields.
    let expect = |p: &str| {
        vec![
            f(":method", "GET"),
            f(":scheme", "https"),
            f(":authority", "example.com"),
            f(":path", p),
            f("user-agent", "h2lab/1"),
        ]
    };
    let (mut s, mut es) = (Vec::new(), Vec::new());
    let n0 = t.encode_next(0, 0, &mut s, &mut es);
    assert!(!es.is_empty(), "inserts on the first request");
    assert!(!t.uses_dynamic_table());
    assert_eq!(decode(&mut d, 0, &s).unwrap().1, expect("/"));
    d.feed_encoder_stream(&es).unwrap();
    let mut fb = Vec::new();
    d.take_decoder_stream(&mut fb);
    t.feed_decoder_stream(&fb).unwrap();
    let mut sizes = Vec::new();
    for i in 1..6u64 {
        s.clear();
        es.clear();
        sizes.push(t.encode_next(4 * i, i as usize, &mut s, &mut es));
        assert!(es.is_empty());
        let p = if i % 2 == 0 { "/" } else { "/a/longer/path" };
        assert_eq!(decode(&mut d, 4 * i, &s).unwrap().1, expect(p));
        fb.clear();
        d.take_decoder_stream(&mut fb);
        t.feed_decoder_stream(&fb).unwrap();
    }
    assert!(t.uses_dynamic_table());
    // :method GET, :scheme https, :path / are static; :authority, user-agent and the
    // long path are one-octet dynamic references: prefix 2 + 5 lines.
    assert_eq!(sizes[0], 2 + 5);
    assert!(sizes[0] < n0);
    assert_eq!(t.encoder().blocking_streams(), 0);
}

#[test]
fn template_static_only_and_errors() {
    use h2lab_wire::hpack::TemplateError;
    let cfg = EncoderConfig {
        use_dynamic_table: false,
        max_table_capacity: 0,
    };
    let mut t = RequestTemplate::new([(&b":method"[..], &b"GET"[..])], [&b"/x"[..]], cfg).unwrap();
    t.set_peer_settings(4096, 100);
    let (mut s, mut es) = (Vec::new(), Vec::new());
    t.encode_next(0, 7, &mut s, &mut es);
    assert!(es.is_empty());
    assert_eq!(&s[..2], &[0, 0]);
    let mut d = Decoder::new(4096, 100);
    assert_eq!(
        decode(&mut d, 0, &s).unwrap().1,
        vec![f(":method", "GET"), f(":path", "/x")]
    );
    let none: [&[u8]; 0] = [];
    assert_eq!(
        RequestTemplate::new([], none, cfg).unwrap_err(),
        TemplateError::NoPaths
    );
    assert_eq!(
        RequestTemplate::new([(&b":path"[..], &b"/"[..])], [&b"/"[..]], cfg).unwrap_err(),
        TemplateError::PathInFields
    );
}

#[test]
fn a_peer_that_never_acknowledges_cannot_grow_the_tracking() {
    use h2lab_wire::qpack::MAX_UNACKED_SECTIONS;
    let (mut e, mut d) = pair(4096, 0, true);
    let fields: [(&[u8], &[u8]); 1] = [(b"x-a", b"1")];
    let mut es = Vec::new();
    let mut s = Vec::new();
    e.encode(0, fields, &mut s, &mut es);
    d.feed_encoder_stream(&es).unwrap();
    // Insert Count Increment only: the entry is usable, but no section is ever acknowledged.
    let mut fb = Vec::new();
    d.take_decoder_stream(&mut fb);
    e.feed_decoder_stream(&fb).unwrap();
    for i in 1..3000u64 {
        s.clear();
        e.encode(4 * i, fields, &mut s, &mut es);
        assert_eq!(d.decode_section(4 * i, &s, |_| {}), Ok(Decoded::Done));
    }
    assert_eq!(e.unacknowledged_sections(), MAX_UNACKED_SECTIONS);
    // Past the cap: static table and literals, Required Insert Count 0.
    assert_eq!(&s[..2], &[0, 0]);
}

#[test]
fn decoder_stream_split_anywhere() {
    // Two blocked sections on streams 300 (a two-octet stream ID) and 4, both released and
    // acknowledged: the decoder stream is fed to the encoder in every two-piece split.
    let mk = || {
        let (mut e, mut d) = pair(4096, 10, true);
        let mut es = Vec::new();
        for id in [300u64, 4] {
            let mut s = Vec::new();
            e.encode(
                id,
                [(&b"x-long-name"[..], id.to_string().as_bytes())],
                &mut s,
                &mut es,
            );
            assert_eq!(decode(&mut d, id, &s).unwrap().0, Decoded::Blocked);
        }
        d.feed_encoder_stream(&es).unwrap();
        while let Some(s) = d.next_unblocked() {
            d.decode_unblocked(s, |_| {}).unwrap();
        }
        let mut fb = Vec::new();
        d.take_decoder_stream(&mut fb);
        (e, fb)
    };
    let (_, fb) = mk();
    assert!(fb.len() >= 3, "{fb:02x?}");
    for cut in 0..=fb.len() {
        let (mut e, _) = mk();
        e.feed_decoder_stream(&fb[..cut]).unwrap();
        e.feed_decoder_stream(&fb[cut..]).unwrap();
        assert_eq!(e.blocking_streams(), 0, "cut {cut}");
        assert_eq!(e.known_received_count(), 2);
    }
}

#[test]
fn template_waits_for_the_peers_settings_before_planning() {
    let fields: [(&[u8], &[u8]); 3] = [
        (b":method", b"GET"),
        (b":authority", b"example.com"),
        (b"user-agent", b"h2lab/1"),
    ];
    let mut t = RequestTemplate::new(fields, [&b"/"[..]], EncoderConfig::default()).unwrap();
    let (mut s, mut es) = (Vec::new(), Vec::new());
    // Before SETTINGS (RFC 9204 §5: both default to 0): static sections, nothing inserted,
    // and nothing decided for good.
    for i in 0..3u64 {
        s.clear();
        t.encode_next(4 * i, 0, &mut s, &mut es);
        assert_eq!(&s[..2], &[0, 0]);
    }
    assert!(es.is_empty());
    assert!(!t.peer_settings_known());
    t.set_peer_settings(4096, 100);
    assert!(t.peer_settings_known());
    // A second SETTINGS cannot change the limits (RFC 9114 §7.2.4.1: sent once).
    t.set_peer_settings(0, 0);
    s.clear();
    t.encode_next(12, 0, &mut s, &mut es);
    assert!(
        !es.is_empty(),
        "the fixed fields are inserted once SETTINGS allow it"
    );
    let mut d = Decoder::new(4096, 100);
    d.feed_encoder_stream(&es).unwrap();
    assert_eq!(d.table().insert_count(), 2, "authority and user-agent");
}
