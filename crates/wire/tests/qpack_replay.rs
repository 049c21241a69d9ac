//! The QPACK encoder's section replay ([`Encoder::replay`], RFC 9204 §2.1.1, §2.1.2,
//! §4.5.1): the octets of a section sent again on another stream decode to the same fields,
//! are registered like a freshly encoded section (acknowledgments, cancellations, blocked
//! streams, eviction), and are refused once they could mean something else.

use h2lab_wire::qpack::{
    Decoded, Decoder, Encoder, EncoderConfig, Replay, SectionRefs, MAX_UNACKED_SECTIONS,
};

#[global_allocator]
static GLOBAL: h2lab_testkit::CountingAlloc = h2lab_testkit::CountingAlloc;

type Fields = Vec<(Vec<u8>, Vec<u8>)>;

fn owned(fields: &[(&[u8], &[u8])]) -> Fields {
    fields
        .iter()
        .map(|(n, v)| (n.to_vec(), v.to_vec()))
        .collect()
}

/// Decodes `section` on `id` (the decoder must have the inserts it needs).
fn decode(d: &mut Decoder, id: u64, section: &[u8]) -> Fields {
    let mut out = Fields::new();
    let r = d.decode_section(id, section, |f| {
        out.push((f.name.to_vec(), f.value.to_vec()))
    });
    assert_eq!(r, Ok(Decoded::Done), "stream {id}");
    out
}

/// Delivers the decoder's pending instructions (acknowledgments, cancellations, insert
/// count increments) to the encoder.
fn deliver_acks(d: &mut Decoder, e: &mut Encoder) {
    let mut buf = Vec::new();
    d.take_decoder_stream(&mut buf);
    e.feed_decoder_stream(&buf).expect("decoder stream");
}

fn head(date: &'static [u8]) -> [(&'static [u8], &'static [u8]); 5] {
    [
        (b":status", b"200"),
        (b"server", b"h2lab"),
        (b"date", date),
        (b"content-length", b"653"),
        (b"cache-control", b"no-store"),
    ]
}

fn pair(capacity: usize, blocked: usize) -> (Encoder, Decoder) {
    let mut e = Encoder::new(EncoderConfig {
        use_dynamic_table: true,
        max_table_capacity: capacity,
    });
    e.set_peer_settings(capacity, blocked);
    (e, Decoder::new(capacity, blocked))
}

#[test]
fn a_table_referencing_section_is_replayed_and_acknowledged_per_stream() {
    let (mut e, mut d) = pair(4096, 100);
    let fields = head(b"Wed, 25 Nov 2026 12:00:00 GMT");
    let (mut section, mut es) = (Vec::new(), Vec::new());
    e.encode(0, fields.iter().copied(), &mut section, &mut es);
    let refs = e.last_section();
    assert!(refs.required_insert_count() > 0, "references its inserts");
    assert!(!es.is_empty());
    d.feed_encoder_stream(&es).unwrap();
    assert_eq!(decode(&mut d, 0, &section), owned(&fields));
    for id in [4u64, 8, 12] {
        assert_eq!(e.replay(id, &refs), Replay::Replayed, "stream {id}");
        assert_eq!(decode(&mut d, id, &section), owned(&fields));
    }
    assert_eq!((e.sections_encoded(), e.sections_replayed()), (1, 3));
    assert_eq!(e.unacknowledged_sections(), 4);
    assert_eq!(e.blocking_streams(), 4);
    deliver_acks(&mut d, &mut e);
    assert_eq!(e.unacknowledged_sections(), 0);
    assert_eq!(e.blocking_streams(), 0);
    assert_eq!(e.known_received_count(), refs.required_insert_count());
    // Once acknowledged, a replay blocks nothing and is acknowledged again.
    assert_eq!(e.replay(16, &refs), Replay::Replayed);
    assert_eq!(e.blocking_streams(), 0);
    assert_eq!(decode(&mut d, 16, &section), owned(&fields));
    deliver_acks(&mut d, &mut e);
    assert_eq!(e.unacknowledged_sections(), 0);
}

#[test]
fn a_static_only_section_replays_without_tracking() {
    let (mut e, mut d) = pair(4096, 100);
    // Only full static matches: nothing inserted, nothing referenced.
    let fields: [(&[u8], &[u8]); 2] = [(b":status", b"200"), (b"cache-control", b"no-store")];
    let (mut section, mut es) = (Vec::new(), Vec::new());
    e.encode(0, fields.iter().copied(), &mut section, &mut es);
    d.feed_encoder_stream(&es).unwrap();
    let refs = e.last_section();
    assert_eq!(refs.required_insert_count(), 0);
    for id in 1..=50u64 {
        assert_eq!(e.replay(id * 4, &refs), Replay::Replayed);
        assert_eq!(decode(&mut d, id * 4, &section), owned(&fields));
    }
    assert_eq!(e.unacknowledged_sections(), 0);
    let mut buf = Vec::new();
    assert_eq!(d.take_decoder_stream(&mut buf), 0, "nothing to acknowledge");
}

#[test]
fn no_replay_once_a_referenced_entry_was_evicted() {
    // Room for two 38-octet entries (32 + name + value), not three.
    let (mut e, mut d) = pair(100, 100);
    let a: [(&[u8], &[u8]); 1] = [(b"x-one", b"a")];
    let (mut section, mut es) = (Vec::new(), Vec::new());
    e.encode(0, a.iter().copied(), &mut section, &mut es);
    let refs = e.last_section();
    assert_eq!(refs.required_insert_count(), 1);
    d.feed_encoder_stream(&es).unwrap();
    assert_eq!(decode(&mut d, 0, &section), owned(&a));
    deliver_acks(&mut d, &mut e);
    assert_eq!(e.replay(4, &refs), Replay::Replayed, "still live");
    assert_eq!(decode(&mut d, 4, &section), owned(&a));
    deliver_acks(&mut d, &mut e);
    // Two more inserts: the second evicts absolute index 0 (acknowledged, unreferenced).
    for (id, v) in [(8u64, &b"b"[..]), (12, b"c")] {
        let (mut s, mut es) = (Vec::new(), Vec::new());
        let f: [(&[u8], &[u8]); 1] = [(b"x-two", v)];
        e.encode(id, f.iter().copied(), &mut s, &mut es);
        d.feed_encoder_stream(&es).unwrap();
        assert_eq!(decode(&mut d, id, &s), owned(&f));
        deliver_acks(&mut d, &mut e);
    }
    assert_eq!(e.table().first_live(), 1, "absolute index 0 evicted");
    let before = (e.unacknowledged_sections(), e.sections_replayed());
    assert_eq!(e.replay(16, &refs), Replay::Stale, "its entry is gone");
    assert_eq!((e.unacknowledged_sections(), e.sections_replayed()), before);
    // Encoding the fields again works (and inserts the entry anew).
    let (mut s, mut es) = (Vec::new(), Vec::new());
    e.encode(16, a.iter().copied(), &mut s, &mut es);
    d.feed_encoder_stream(&es).unwrap();
    assert_eq!(decode(&mut d, 16, &s), owned(&a));
    deliver_acks(&mut d, &mut e);
    assert_eq!(e.unacknowledged_sections(), 0);
}

#[test]
fn an_unacknowledged_referenced_entry_is_not_evicted_by_later_inserts() {
    // The replayed section pins its entry exactly as the encoded one did (§2.1.1).
    let (mut e, mut d) = pair(100, 100);
    let a: [(&[u8], &[u8]); 1] = [(b"x-one", b"a")];
    let (mut section, mut es) = (Vec::new(), Vec::new());
    e.encode(0, a.iter().copied(), &mut section, &mut es);
    let refs = e.last_section();
    d.feed_encoder_stream(&es).unwrap();
    assert_eq!(decode(&mut d, 0, &section), owned(&a));
    deliver_acks(&mut d, &mut e);
    // Replayed on stream 4, not yet acknowledged: absolute index 0 must stay.
    assert_eq!(e.replay(4, &refs), Replay::Replayed);
    for (id, v) in [(8u64, &b"b"[..]), (12, b"c"), (16, b"d")] {
        let (mut s, mut es) = (Vec::new(), Vec::new());
        let f: [(&[u8], &[u8]); 1] = [(b"x-two", v)];
        e.encode(id, f.iter().copied(), &mut s, &mut es);
        d.feed_encoder_stream(&es).unwrap();
        assert_eq!(decode(&mut d, id, &s), owned(&f));
    }
    assert_eq!(e.table().first_live(), 0, "pinned by the replayed section");
    assert_eq!(decode(&mut d, 4, &section), owned(&a));
    deliver_acks(&mut d, &mut e);
    assert_eq!(e.unacknowledged_sections(), 0);
}

#[test]
fn no_replay_across_the_peer_settings_or_a_capacity_change() {
    let mut e = Encoder::new(EncoderConfig::default());
    let fields = head(b"Wed, 25 Nov 2026 12:00:00 GMT");
    let (mut section, mut es) = (Vec::new(), Vec::new());
    // Before the peer's SETTINGS: static table and literals only.
    e.encode(0, fields.iter().copied(), &mut section, &mut es);
    let before_settings = e.last_section();
    assert_eq!(before_settings.required_insert_count(), 0);
    assert_eq!(
        e.replay(4, &before_settings),
        Replay::Replayed,
        "same epoch"
    );
    e.set_peer_settings(4096, 100);
    assert_eq!(
        e.replay(8, &before_settings),
        Replay::Stale,
        "the table is now allowed: encode anew"
    );
    section.clear();
    e.encode(8, fields.iter().copied(), &mut section, &mut es);
    let with_table = e.last_section();
    assert!(with_table.required_insert_count() > 0);
    assert_eq!(e.replay(12, &with_table), Replay::Replayed);
    // The capacity is announced by the first encode after the SETTINGS; one set later
    // (as a second SETTINGS would) makes every earlier section stale.
    e.set_peer_settings(4096, 100);
    assert_eq!(e.replay(16, &with_table), Replay::Stale);
    assert_eq!(e.sections_replayed(), 2);
    assert_eq!(e.unacknowledged_sections(), 2);
}

#[test]
fn a_replay_never_blocks_more_streams_than_the_peer_allows() {
    let (mut e, mut d) = pair(4096, 1);
    let fields = head(b"Wed, 25 Nov 2026 12:00:00 GMT");
    let (mut section, mut es) = (Vec::new(), Vec::new());
    e.encode(0, fields.iter().copied(), &mut section, &mut es);
    let refs = e.last_section();
    assert!(refs.required_insert_count() > 0);
    assert_eq!(e.blocking_streams(), 1);
    // Stream 0 may block: another stream may not.
    assert_eq!(e.replay(4, &refs), Replay::Deferred);
    assert_eq!(e.blocking_streams(), 1);
    assert_eq!(e.unacknowledged_sections(), 1);
    // The same stream again (trailers, say) adds no blocked stream.
    assert_eq!(e.replay(0, &refs), Replay::Replayed);
    assert_eq!(e.blocking_streams(), 1);
    // Refused, the caller encodes: a section that cannot block.
    let mut s4 = Vec::new();
    e.encode(4, fields.iter().copied(), &mut s4, &mut es);
    assert_eq!(e.blocking_streams(), 1);
    d.feed_encoder_stream(&es).unwrap();
    assert_eq!(decode(&mut d, 4, &s4), owned(&fields));
    assert_eq!(decode(&mut d, 0, &section), owned(&fields));
    assert_eq!(decode(&mut d, 0, &section), owned(&fields));
    deliver_acks(&mut d, &mut e);
    assert_eq!(e.blocking_streams(), 0);
    assert_eq!(e.unacknowledged_sections(), 0);
    // Acknowledged: the referencing section now replays on any stream.
    assert_eq!(e.replay(8, &refs), Replay::Replayed);
    assert_eq!(e.replay(12, &refs), Replay::Replayed);
    assert_eq!(e.blocking_streams(), 0);
}

#[test]
fn a_replay_is_refused_past_the_unacknowledged_sections_cap() {
    let (mut e, _d) = pair(4096, 100);
    let fields = head(b"Wed, 25 Nov 2026 12:00:00 GMT");
    let (mut section, mut es) = (Vec::new(), Vec::new());
    e.encode(0, fields.iter().copied(), &mut section, &mut es);
    let refs = e.last_section();
    // Acknowledge the inserts (Insert Count Increment) so no replay blocks.
    let mut ici = Vec::new();
    h2lab_wire::qpack::instructions::DecoderInstruction::InsertCountIncrement(
        refs.required_insert_count(),
    )
    .write(&mut ici);
    e.feed_decoder_stream(&ici).unwrap();
    let mut n = 1;
    while e.replay(4 * n as u64, &refs) == Replay::Replayed {
        n += 1;
        assert!(n <= MAX_UNACKED_SECTIONS + 1);
    }
    assert_eq!(e.unacknowledged_sections(), MAX_UNACKED_SECTIONS);
    assert_eq!(e.replay(4 * n as u64, &refs), Replay::Deferred);
}

#[test]
fn counts_stay_exact_under_many_replays_acknowledgments_and_cancellations() {
    // A small table, so that the per-second date entries evict the older ones, and a
    // blocked-streams limit below the burst, so that some replays are deferred.
    let (mut e, mut d) = pair(300, 6);
    let dates: [&'static [u8]; 5] = [
        b"Wed, 25 Nov 2026 12:00:00 GMT",
        b"Wed, 25 Nov 2026 12:00:01 GMT",
        b"Wed, 25 Nov 2026 12:00:02 GMT",
        b"Wed, 25 Nov 2026 12:00:03 GMT",
        b"Wed, 25 Nov 2026 12:00:04 GMT",
    ];
    // The server's head cache: (date, section, refs).
    let mut memo: Option<(usize, Vec<u8>, SectionRefs)> = None;
    let mut es = Vec::new();
    // Sections sent but not yet read by the peer: (stream, octets, fields).
    let mut in_flight: Vec<(u64, Vec<u8>, Fields)> = Vec::new();
    let (mut cancelled, mut deferred) = (0, 0);
    for i in 0..2000usize {
        let id = 4 * i as u64;
        let which = i / 400;
        let date = dates[which];
        let fields: [(&[u8], &[u8]); 5] = [
            (b":status", b"200"),
            (b"date", date),
            (b"server", b"h2lab"),
            (b"content-length", b"653"),
            (b"cache-control", b"no-store"),
        ];
        let replay = match &memo {
            Some((w, _, refs)) if *w == which => e.replay(id, refs),
            _ => Replay::Stale,
        };
        let section = match (replay, &memo) {
            (Replay::Replayed, Some((_, s, _))) => s.clone(),
            (Replay::Deferred, _) => {
                deferred += 1;
                let mut s = Vec::new();
                e.encode(id, fields.iter().copied(), &mut s, &mut es);
                s
            }
            _ => {
                let mut s = Vec::new();
                e.encode(id, fields.iter().copied(), &mut s, &mut es);
                memo = Some((which, s.clone(), e.last_section()));
                s
            }
        };
        assert!(e.blocking_streams() <= 6);
        in_flight.push((id, section, owned(&fields)));
        // The peer reads in bursts of 8: the encoder stream first, then the sections
        // (every 11th stream is reset before its section is read: a cancellation), then
        // its decoder stream comes back.
        if in_flight.len() == 8 {
            d.feed_encoder_stream(&es).unwrap();
            es.clear();
            for (id, s, f) in in_flight.drain(..) {
                if id % 11 == 0 {
                    d.cancel_stream(id);
                    cancelled += 1;
                } else {
                    assert_eq!(decode(&mut d, id, &s), f);
                }
            }
            deliver_acks(&mut d, &mut e);
            assert_eq!(e.unacknowledged_sections(), 0, "after request {i}");
            assert_eq!(e.blocking_streams(), 0);
        }
    }
    assert!(cancelled > 100);
    assert!(deferred > 0);
    assert_eq!(e.sections_encoded() + e.sections_replayed(), 2000);
    assert!(
        e.sections_replayed() > 1900,
        "replayed {} of 2000",
        e.sections_replayed()
    );
    assert!(e.table().first_live() > 0, "dates evicted older entries");
    assert_eq!(e.known_received_count(), e.table().insert_count());
}

#[test]
fn a_steady_replay_and_its_acknowledgment_allocate_nothing() {
    // Counted on this thread only (the harness may allocate on others).
    let (mut e, mut d) = pair(4096, 100);
    let fields = head(b"Wed, 25 Nov 2026 12:00:00 GMT");
    let (mut section, mut es) = (Vec::new(), Vec::new());
    e.encode(0, fields.iter().copied(), &mut section, &mut es);
    let refs = e.last_section();
    d.feed_encoder_stream(&es).unwrap();
    let mut fb = Vec::with_capacity(64);
    let request = |e: &mut Encoder, i: u64, fb: &mut Vec<u8>| {
        // Ten streams in flight, acknowledged in order.
        assert_eq!(e.replay(4 * i, &refs), Replay::Replayed);
        if i >= 10 {
            fb.clear();
            h2lab_wire::qpack::instructions::DecoderInstruction::SectionAck {
                stream_id: 4 * (i - 10),
            }
            .write(fb);
            e.feed_decoder_stream(fb).unwrap();
        }
    };
    for i in 1..100u64 {
        request(&mut e, i, &mut fb);
    }
    let before = h2lab_testkit::thread_allocations();
    for i in 100..1100u64 {
        request(&mut e, i, &mut fb);
    }
    assert_eq!(h2lab_testkit::thread_allocations() - before, 0);
    assert_eq!(e.unacknowledged_sections(), 10);
}

#[test]
fn hot_entries_are_duplicated_before_they_pin_the_table() {
    // Two minutes of a server's heads, a new date each "second", with the previous
    // second's sections still unacknowledged when the next second's head is encoded (as
    // under load). The dates fill the 4096-octet table in about a minute; `server`,
    // `content-type` and `content-length` (inserted first) then reach the oldest end while
    // referenced. They must be duplicated before that, so that new dates still get
    // inserted and every head stays all references.
    let (mut e, mut d) = pair(4096, 100);
    let mut acks: Vec<u8> = Vec::new();
    let mut sizes = Vec::new();
    for sec in 0..150u64 {
        let date = format!("Wed, 25 Nov 2026 12:{:02}:{:02} GMT", sec / 60, sec % 60);
        let fields: [(&[u8], &[u8]); 6] = [
            (b":status", b"200"),
            (b"server", b"h2lab"),
            (b"date", date.as_bytes()),
            (b"content-type", b"application/octet-stream"),
            (b"content-length", b"653"),
            (b"cache-control", b"no-store"),
        ];
        let (mut s, mut es) = (Vec::new(), Vec::new());
        e.encode(8 * sec, fields.iter().copied(), &mut s, &mut es);
        let refs = e.last_section();
        assert_eq!(e.replay(8 * sec + 4, &refs), Replay::Replayed);
        // The previous second's acknowledgments arrive only now.
        e.feed_decoder_stream(&acks).unwrap();
        acks.clear();
        d.feed_encoder_stream(&es).unwrap();
        for id in [8 * sec, 8 * sec + 4] {
            assert_eq!(decode(&mut d, id, &s), owned(&fields), "second {sec}");
        }
        d.take_decoder_stream(&mut acks);
        sizes.push(s.len());
    }
    e.feed_decoder_stream(&acks).unwrap();
    assert_eq!(e.unacknowledged_sections(), 0);
    assert!(e.table().first_live() > 0, "old dates were evicted");
    let longest = sizes.iter().max().copied();
    assert!(longest <= Some(8), "section sizes {sizes:?}");
}
