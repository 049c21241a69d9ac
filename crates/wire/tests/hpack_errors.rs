//! Every HpackError kind, the HPACK bomb, and "random bytes never panic".

use h2lab_wire::hpack::{huffman, integer, Decoder, Encoder, HpackError};
use proptest::prelude::*;

type Headers = Vec<(Vec<u8>, Vec<u8>)>;

fn decode(d: &mut Decoder, block: &[u8]) -> Result<Headers, HpackError> {
    let mut out = Vec::new();
    d.decode(block, |f| out.push((f.name.to_vec(), f.value.to_vec())))?;
    Ok(out)
}

fn err(block: &[u8]) -> HpackError {
    decode(&mut Decoder::new(4096), block).unwrap_err()
}

/// `:path` (static name 4), literal without indexing, with a Huffman value of `bytes`.
fn huffman_value(bytes: &[u8]) -> Vec<u8> {
    let mut b = vec![0x04, 0x80 | bytes.len() as u8];
    b.extend_from_slice(bytes);
    b
}

#[test]
fn zero_index() {
    assert_eq!(err(&[0x80]), HpackError::ZeroIndex);
    assert!(HpackError::ZeroIndex.is_connection_error());
}

#[test]
fn index_out_of_range() {
    assert_eq!(
        err(&[0xbe]),
        HpackError::IndexOutOfRange { index: 62, max: 61 }
    );
    // As the name of a literal (incremental indexing, name index 63).
    assert_eq!(
        err(&[0x7f, 0x00, 0x01, b'v']),
        HpackError::IndexOutOfRange { index: 63, max: 61 }
    );
    // One entry in the table: 62 is valid, 63 is not.
    let mut d = Decoder::new(4096);
    decode(&mut d, &[0x40, 0x01, b'a', 0x01, b'b']).unwrap();
    assert_eq!(
        decode(&mut d, &[0xbe]).unwrap(),
        [(b"a".to_vec(), b"b".to_vec())]
    );
    assert_eq!(
        decode(&mut d, &[0xbf]),
        Err(HpackError::IndexOutOfRange { index: 63, max: 62 })
    );
    // Huge index.
    assert_eq!(
        err(&[0xff, 0xff, 0xff, 0xff, 0x0f]),
        HpackError::IndexOutOfRange {
            index: 127 + 0x7f + (0x7f << 7) + (0x7f << 14) + (0x0f << 21),
            max: 61
        }
    );
}

#[test]
fn huffman_errors() {
    // EOS (30 ones) + 2 padding bits.
    assert_eq!(
        err(&huffman_value(&[0xff, 0xff, 0xff, 0xff])),
        HpackError::HuffmanEos
    );
    // 'a' (00011) + 11 bits of ones: padding longer than 7 bits.
    assert_eq!(
        err(&huffman_value(&[0x1f, 0xff])),
        HpackError::HuffmanPaddingTooLong
    );
    // 'a' + padding 011.
    assert_eq!(
        err(&huffman_value(&[0x1b])),
        HpackError::HuffmanInvalidPadding
    );
    // Same in a literal name.
    assert_eq!(
        err(&[0x00, 0x81, 0x1b, 0x00]),
        HpackError::HuffmanInvalidPadding
    );
}

#[test]
fn integer_overflow() {
    // Index that does not fit in 32 bits.
    assert_eq!(
        err(&[0xff, 0xff, 0xff, 0xff, 0xff, 0x7f]),
        HpackError::IntegerOverflow
    );
    // Small value padded with continuation octets.
    assert_eq!(
        err(&[0xff, 0x80, 0x80, 0x80, 0x80, 0x80, 0x00]),
        HpackError::IntegerOverflow
    );
    // String length.
    assert_eq!(
        err(&[0x04, 0xff, 0xff, 0xff, 0xff, 0xff, 0x7f]),
        HpackError::IntegerOverflow
    );
    // Size update.
    assert_eq!(
        err(&[0x3f, 0xff, 0xff, 0xff, 0xff, 0x7f]),
        HpackError::IntegerOverflow
    );
}

#[test]
fn string_too_long() {
    let mut d = Decoder::new(4096);
    d.set_max_string_len(10);
    let mut block = vec![0x04, 11];
    block.extend_from_slice(b"/0123456789");
    assert_eq!(
        decode(&mut d, &block),
        Err(HpackError::StringTooLong { len: 11, max: 10 })
    );
    // Within the limit on the wire (9 octets) but 12 once Huffman-decoded ("0" is 5 bits).
    let mut d = Decoder::new(4096);
    d.set_max_string_len(10);
    let mut coded = Vec::new();
    huffman::encode(b"000000000000", &mut coded);
    assert!(coded.len() <= 10);
    assert_eq!(
        decode(&mut d, &huffman_value(&coded)),
        Err(HpackError::StringTooLong { len: 12, max: 10 })
    );
    // A name too long as well.
    let mut d = Decoder::new(4096);
    d.set_max_string_len(3);
    assert_eq!(
        decode(&mut d, &[0x00, 0x04, b'a', b'b', b'c', b'd', 0x00]),
        Err(HpackError::StringTooLong { len: 4, max: 3 })
    );
}

#[test]
fn truncated() {
    assert_eq!(err(&[0xff]), HpackError::Truncated); // integer cut
    assert_eq!(err(&[0x04]), HpackError::Truncated); // value missing
    assert_eq!(err(&[0x04, 0x05, b'/']), HpackError::Truncated); // value cut
    assert_eq!(err(&[0x00, 0x03, b'a', b'b', b'c']), HpackError::Truncated); // name only
    assert_eq!(err(&[0x40, 0x02, b'a']), HpackError::Truncated); // name cut
    assert_eq!(err(&[0x3f]), HpackError::Truncated); // size update cut
}

#[test]
fn size_update_not_at_start() {
    assert_eq!(err(&[0x82, 0x20]), HpackError::SizeUpdateNotAtStart);
    // Several updates at the start are fine.
    let mut d = Decoder::new(4096);
    assert_eq!(
        decode(&mut d, &[0x20, 0x3f, 0xe1, 0x1f, 0x82])
            .unwrap()
            .len(),
        1
    );
}

#[test]
fn size_update_above_the_limit() {
    // 4097 with a 4096 limit.
    assert_eq!(
        err(&[0x3f, 0xe2, 0x1f]),
        HpackError::SizeUpdateTooLarge {
            requested: 4097,
            max: 4096
        }
    );
    let mut d = Decoder::new(4096);
    d.set_max_table_size(100);
    assert_eq!(
        decode(&mut d, &[0x3f, 0x46]),
        Err(HpackError::SizeUpdateTooLarge {
            requested: 101,
            max: 100
        })
    );
}

#[test]
fn missing_size_update_after_lowering_the_limit() {
    let mut d = Decoder::new(4096);
    d.set_max_table_size(100);
    assert_eq!(
        decode(&mut d, &[0x82]),
        Err(HpackError::MissingSizeUpdate {
            required_at_most: 100
        })
    );
    // An empty block does not dodge it either.
    let mut d = Decoder::new(4096);
    d.set_max_table_size(100);
    assert_eq!(
        decode(&mut d, &[]),
        Err(HpackError::MissingSizeUpdate {
            required_at_most: 100
        })
    );
    // Down to 0 and back up: the update to 4096 alone is not enough.
    let mut d = Decoder::new(4096);
    d.set_max_table_size(0);
    d.set_max_table_size(4096);
    assert_eq!(
        decode(&mut d, &[0x3f, 0xe1, 0x1f, 0x82]),
        Err(HpackError::MissingSizeUpdate {
            required_at_most: 0
        })
    );
    // ...but 0 then 4096 is.
    let mut d = Decoder::new(4096);
    d.set_max_table_size(0);
    d.set_max_table_size(4096);
    assert!(decode(&mut d, &[0x20, 0x3f, 0xe1, 0x1f, 0x82]).is_ok());
    // Raising the limit requires nothing.
    let mut d = Decoder::new(4096);
    d.set_max_table_size(8192);
    assert!(decode(&mut d, &[0x82]).is_ok());
}

#[test]
fn header_list_too_large_keeps_the_decoder_in_sync() {
    let mut enc = Encoder::new(4096);
    let mut dec = Decoder::new(4096);
    dec.set_max_header_list_size(200);
    let big = "v".repeat(150);
    let mut block = Vec::new();
    let fields: [(&[u8], &[u8]); 3] = [(b"x-a", b"1"), (b"x-big", big.as_bytes()), (b"x-c", b"3")];
    enc.encode(fields, &mut block);
    let e = decode(&mut dec, &block).unwrap_err();
    assert_eq!(e, HpackError::HeaderListTooLarge { max: 200 });
    assert!(!e.is_connection_error());
    // The table got all three insertions anyway.
    assert_eq!(dec.table_len(), 3);
    assert_eq!(enc.table_size(), dec.table_size());
    // Next block (indexed references to those entries) decodes fine.
    dec.set_max_header_list_size(usize::MAX);
    block.clear();
    enc.encode(fields, &mut block);
    assert_eq!(block.len(), 3);
    assert_eq!(decode(&mut dec, &block).unwrap().len(), 3);
}

#[test]
fn hpack_bomb_stops_early_with_bounded_work() {
    // One 4000-octet entry, then 200 000 one-octet references to it: 800 MB of headers
    // if expanded.
    let mut dec = Decoder::new(4096);
    let limit = 16 * 1024;
    dec.set_max_header_list_size(limit);
    let mut block = vec![0x40, 0x06];
    block.extend_from_slice(b"x-bomb");
    let value = vec![b'A'; 3950];
    integer::encode(value.len(), 7, 0x00, &mut block);
    block.extend_from_slice(&value);
    block.extend(std::iter::repeat(0xbe).take(200_000));
    let (mut calls, mut bytes) = (0usize, 0usize);
    let r = dec.decode(&block, |f| {
        calls += 1;
        bytes += f.name.len() + f.value.len();
    });
    assert_eq!(r, Err(HpackError::HeaderListTooLarge { max: limit }));
    // Delivery stopped at the limit: 4 fields of ~4 KB, not 200 001.
    assert_eq!(calls, 4);
    assert!(bytes + 32 * calls <= limit);
    // The decoder is still usable and in sync.
    assert_eq!(dec.table_len(), 1);
    dec.set_max_header_list_size(usize::MAX);
    assert_eq!(decode(&mut dec, &[0xbe]).unwrap()[0].1.len(), 3950);
}

#[test]
fn bomb_of_huffman_literals_past_the_limit_is_skipped() {
    // Past the limit, non-indexed Huffman literals are skipped, not decoded.
    let mut dec = Decoder::new(4096);
    dec.set_max_header_list_size(100);
    let mut one = Vec::new();
    let mut coded = Vec::new();
    huffman::encode(&[b'e'; 100], &mut coded);
    one.push(0x0f); // literal without indexing, name index 15+
    one.push(0x10); // 15 + 16 = 31: content-type
    integer::encode(coded.len(), 7, 0x80, &mut one);
    one.extend_from_slice(&coded);
    let block: Vec<u8> = one.iter().copied().cycle().take(one.len() * 1000).collect();
    let mut calls = 0;
    let r = dec.decode(&block, |_| calls += 1);
    assert_eq!(r, Err(HpackError::HeaderListTooLarge { max: 100 }));
    assert_eq!(calls, 0);
}

#[test]
fn display_messages() {
    let all = [
        HpackError::ZeroIndex,
        HpackError::IndexOutOfRange { index: 70, max: 61 },
        HpackError::HuffmanEos,
        HpackError::HuffmanPaddingTooLong,
        HpackError::HuffmanInvalidPadding,
        HpackError::IntegerOverflow,
        HpackError::StringTooLong { len: 5, max: 4 },
        HpackError::Truncated,
        HpackError::SizeUpdateNotAtStart,
        HpackError::SizeUpdateTooLarge {
            requested: 2,
            max: 1,
        },
        HpackError::MissingSizeUpdate {
            required_at_most: 0,
        },
        HpackError::HeaderListTooLarge { max: 1 },
    ];
    for e in all {
        assert!(!e.to_string().is_empty());
        assert_eq!(
            e.is_connection_error(),
            !matches!(e, HpackError::HeaderListTooLarge { .. })
        );
    }
}

proptest! {
    #![proptest_config(ProptestConfig { cases: 512, failure_persistence: None, ..ProptestConfig::default() })]

    #[test]
    fn random_bytes_never_panic(
        blocks in proptest::collection::vec(proptest::collection::vec(any::<u8>(), 0..300), 1..6),
        table in prop_oneof![Just(0usize), Just(64), Just(4096)],
        list_limit in prop_oneof![Just(64usize), Just(65536)],
    ) {
        let mut d = Decoder::new(table);
        d.set_max_header_list_size(list_limit);
        for b in &blocks {
            let mut total = 0usize;
            let r = d.decode(b, |f| total += f.name.len() + f.value.len() + 32);
            prop_assert!(total <= list_limit);
            if let Err(e) = r {
                if e.is_connection_error() {
                    break;
                }
            }
            prop_assert!(d.table_size() <= table.max(d.table_max_size()));
        }
    }

    #[test]
    fn random_huffman_never_panics(bytes in proptest::collection::vec(any::<u8>(), 0..64)) {
        let mut out = Vec::new();
        if huffman::decode(&bytes, &mut out).is_ok() {
            // Whatever decodes re-encodes to the same length at most (canonical padding).
            let mut again = Vec::new();
            huffman::encode(&out, &mut again);
            prop_assert!(again.len() <= bytes.len());
            let mut back = Vec::new();
            huffman::decode(&again, &mut back).unwrap();
            prop_assert_eq!(back, out);
        }
    }
}
