//! The QPACK encoder's count of streams that may be blocked (RFC 9204 §2.1.2), kept
//! incrementally: after every encode, Section Acknowledgment, Stream Cancellation and
//! Insert Count Increment, [`Encoder::blocking_streams`] equals the count recomputed from
//! scratch (distinct streams with an unacknowledged section whose Required Insert Count is
//! above the Known Received Count), never exceeds the peer's limit, and a section on a new
//! stream references unacknowledged inserts only while the limit allows.

use h2lab_wire::qpack::instructions::DecoderInstruction;
use h2lab_wire::qpack::{Encoder, EncoderConfig};

/// The test's own record of the unacknowledged sections: (stream, Required Insert Count).
#[derive(Default)]
struct Model {
    sections: Vec<(u64, u64)>,
    known_received: u64,
}

impl Model {
    fn blocking_streams(&self) -> usize {
        let mut streams: Vec<u64> = self
            .sections
            .iter()
            .filter(|&&(_, r)| r > self.known_received)
            .map(|&(s, _)| s)
            .collect();
        streams.sort_unstable();
        streams.dedup();
        streams.len()
    }

    fn is_blocking(&self, stream: u64) -> bool {
        self.sections
            .iter()
            .any(|&(s, r)| s == stream && r > self.known_received)
    }
}

/// A small deterministic generator (no dependency, same sequence every run).
struct Lcg(u64);

impl Lcg {
    fn next(&mut self, n: u64) -> u64 {
        self.0 = self
            .0
            .wrapping_mul(6_364_136_223_846_793_005)
            .wrapping_add(1_442_695_040_888_963_407);
        (self.0 >> 33) % n
    }
}

fn feed(e: &mut Encoder, ins: DecoderInstruction) {
    let mut buf = Vec::new();
    ins.write(&mut buf);
    e.feed_decoder_stream(&buf)
        .expect("valid decoder instruction");
}

fn check(e: &Encoder, m: &Model, limit: usize, step: usize) {
    assert_eq!(e.known_received_count(), m.known_received, "step {step}");
    assert_eq!(e.unacknowledged_sections(), m.sections.len(), "step {step}");
    assert_eq!(e.blocking_streams(), m.blocking_streams(), "step {step}");
    assert!(e.blocking_streams() <= limit, "step {step}");
}

/// Runs `steps` random operations against a peer allowing `limit` blocked streams.
fn run(limit: usize, seed: u64, steps: usize) -> (usize, usize, usize) {
    let mut e = Encoder::new(EncoderConfig {
        use_dynamic_table: true,
        max_table_capacity: 1024,
    });
    e.set_peer_settings(1024, limit);
    let mut m = Model::default();
    let mut rng = Lcg(seed);
    let mut next_stream = 0u64;
    let (mut blocked_refusals, mut acks, mut cancels) = (0, 0, 0);
    let (mut section, mut es) = (Vec::new(), Vec::new());
    for step in 0..steps {
        match rng.next(10) {
            // Encode a section: on a stream that already has one (a trailer section) or on
            // a new stream; the values come from a small set, so some are new inserts and
            // some are references to entries inserted before.
            0..=4 => {
                let stream = if !m.sections.is_empty() && rng.next(4) == 0 {
                    m.sections[rng.next(m.sections.len() as u64) as usize].0
                } else {
                    next_stream += 4;
                    next_stream
                };
                let value = format!("value-{}", rng.next(40));
                let fields: [(&[u8], &[u8]); 2] =
                    [(b":status", b"200"), (b"x-test", value.as_bytes())];
                let would_block_ok = m.is_blocking(stream) || m.blocking_streams() < limit;
                section.clear();
                e.encode(stream, fields.iter().copied(), &mut section, &mut es);
                let required = e.last_section().required_insert_count();
                if required > m.known_received {
                    assert!(
                        would_block_ok,
                        "step {step}: a section blocks beyond the limit"
                    );
                } else if !would_block_ok {
                    blocked_refusals += 1;
                }
                if required > 0 {
                    m.sections.push((stream, required));
                }
            }
            // Acknowledge a stream's oldest section (a decoder acknowledges in order).
            5..=6 if !m.sections.is_empty() => {
                let stream = m.sections[rng.next(m.sections.len() as u64) as usize].0;
                let i = m.sections.iter().position(|&(s, _)| s == stream).unwrap();
                let (_, required) = m.sections.remove(i);
                m.known_received = m.known_received.max(required);
                feed(&mut e, DecoderInstruction::SectionAck { stream_id: stream });
                acks += 1;
            }
            // Cancel a stream (all its sections go).
            7 if !m.sections.is_empty() => {
                let stream = m.sections[rng.next(m.sections.len() as u64) as usize].0;
                m.sections.retain(|&(s, _)| s != stream);
                feed(
                    &mut e,
                    DecoderInstruction::StreamCancel { stream_id: stream },
                );
                cancels += 1;
            }
            // Insert Count Increment, up to the inserts sent.
            8 => {
                let sent = e.table().insert_count();
                if sent > m.known_received {
                    let n = 1 + rng.next(sent - m.known_received);
                    m.known_received += n;
                    feed(&mut e, DecoderInstruction::InsertCountIncrement(n));
                }
            }
            _ => {}
        }
        check(&e, &m, limit, step);
    }
    (blocked_refusals, acks, cancels)
}

#[test]
fn blocking_streams_match_a_recount_under_acks_cancellations_and_increments() {
    for (limit, seed) in [(1, 1), (2, 7), (4, 42), (16, 99), (100, 5)] {
        let (refusals, acks, cancels) = run(limit, seed, 3000);
        assert!(
            acks > 300 && cancels > 100,
            "limit {limit}: {acks} acks, {cancels} cancels"
        );
        if limit <= 4 {
            // The limit was reached and respected: some sections did without a reference
            // they would otherwise have blocked on.
            assert!(refusals > 0, "limit {limit}");
        }
    }
}

#[test]
fn no_section_blocks_with_a_limit_of_zero() {
    let (refusals, _, _) = run(0, 3, 1000);
    assert!(refusals > 0);
}

#[test]
fn a_blocking_stream_keeps_its_place_until_its_last_section_goes() {
    let mut e = Encoder::new(EncoderConfig::default());
    e.set_peer_settings(4096, 1);
    let (mut section, mut es) = (Vec::new(), Vec::new());
    let a: [(&[u8], &[u8]); 1] = [(b"x-a", b"1")];
    let b: [(&[u8], &[u8]); 1] = [(b"x-b", b"2")];
    // Stream 0: two sections (headers, trailers), both referencing their own new inserts.
    e.encode(0, a.iter().copied(), &mut section, &mut es);
    assert_eq!(e.last_section().required_insert_count(), 1);
    e.encode(0, b.iter().copied(), &mut section, &mut es);
    assert_eq!(e.last_section().required_insert_count(), 2);
    assert_eq!(e.blocking_streams(), 1);
    // Stream 4 may not block (the limit is 1 and stream 0 holds it): its insert is made
    // but sent as a literal, and the section references nothing unacknowledged.
    let c: [(&[u8], &[u8]); 1] = [(b"x-c", b"3")];
    e.encode(4, c.iter().copied(), &mut section, &mut es);
    assert_eq!(e.last_section().required_insert_count(), 0);
    assert_eq!(e.blocking_streams(), 1);
    // The first section's acknowledgment raises the Known Received Count to 1: the second
    // (Required Insert Count 2) still blocks.
    feed(&mut e, DecoderInstruction::SectionAck { stream_id: 0 });
    assert_eq!(e.known_received_count(), 1);
    assert_eq!(e.blocking_streams(), 1);
    // The second one's acknowledgment frees the stream.
    feed(&mut e, DecoderInstruction::SectionAck { stream_id: 0 });
    assert_eq!(e.known_received_count(), 2);
    assert_eq!(e.blocking_streams(), 0);
    // A cancellation frees a blocking stream too.
    let d: [(&[u8], &[u8]); 1] = [(b"x-d", b"4")];
    e.encode(8, d.iter().copied(), &mut section, &mut es);
    assert!(e.last_section().required_insert_count() > 2);
    assert_eq!(e.blocking_streams(), 1);
    feed(&mut e, DecoderInstruction::StreamCancel { stream_id: 8 });
    assert_eq!(e.blocking_streams(), 0);
    assert_eq!(e.unacknowledged_sections(), 0);
}
