//! Encoder → decoder round trips: every raw-data story of the hpack-test-case corpus with
//! several table sizes, and arbitrary header lists (proptest).

mod support;

use std::fs;
use std::path::PathBuf;

use h2lab_wire::hpack::{Decoder, Encoder, Indexing};
use proptest::prelude::*;
use serde_json::Value;

type Headers = Vec<(Vec<u8>, Vec<u8>)>;

fn corpus_dir() -> PathBuf {
    support::corpus::HPACK_TEST_CASE.dir()
}

fn raw_stories() -> Vec<(String, Vec<Headers>)> {
    let raw = corpus_dir().join("raw-data");
    let mut files: Vec<PathBuf> = fs::read_dir(&raw)
        .unwrap()
        .map(|e| e.unwrap().path())
        .filter(|p| p.extension().is_some_and(|x| x == "json"))
        .collect();
    files.sort();
    files
        .iter()
        .map(|f| {
            let v: Value = serde_json::from_str(&fs::read_to_string(f).unwrap()).unwrap();
            let cases = v["cases"]
                .as_array()
                .unwrap()
                .iter()
                .map(|c| {
                    c["headers"]
                        .as_array()
                        .unwrap()
                        .iter()
                        .map(|h| {
                            let (n, v) = h.as_object().unwrap().iter().next().unwrap();
                            (
                                n.as_bytes().to_vec(),
                                v.as_str().unwrap().as_bytes().to_vec(),
                            )
                        })
                        .collect()
                })
                .collect();
            (f.file_name().unwrap().to_string_lossy().into_owned(), cases)
        })
        .collect()
}

fn decode(d: &mut Decoder, block: &[u8]) -> Headers {
    let mut out = Vec::new();
    d.decode(block, |f| out.push((f.name.to_vec(), f.value.to_vec())))
        .unwrap();
    out
}

#[test]
fn raw_data_round_trips_with_every_table_size() {
    let stories = raw_stories();
    assert_eq!(stories.len(), 32, "raw-data stories");
    for table_size in [0usize, 256, 4096, 65536] {
        let (mut plain, mut coded, mut n_cases) = (0usize, 0usize, 0usize);
        for (name, cases) in &stories {
            let mut enc = Encoder::new(table_size);
            let mut dec = Decoder::new(table_size);
            dec.set_max_header_list_size(usize::MAX);
            let mut block = Vec::new();
            for (i, headers) in cases.iter().enumerate() {
                block.clear();
                enc.encode(headers.iter().map(|(n, v)| (&n[..], &v[..])), &mut block);
                let got = decode(&mut dec, &block);
                assert!(got == *headers, "{name} case {i} table {table_size}");
                assert!(enc.table_size() <= table_size && dec.table_size() <= table_size);
                assert_eq!(
                    enc.table_size(),
                    dec.table_size(),
                    "{name} case {i}: table drift"
                );
                plain += headers
                    .iter()
                    .map(|(n, v)| n.len() + v.len())
                    .sum::<usize>();
                coded += block.len();
                n_cases += 1;
            }
        }
        assert_eq!(n_cases, 3384);
        eprintln!(
            "table {table_size:>5}: {n_cases} cases, {plain} -> {coded} octets ({:.1}% saved)",
            100.0 * (1.0 - coded as f64 / plain as f64)
        );
        assert!(coded < plain, "compression must save space");
    }
}

/// Header names: a mix of static-table names, pseudo-headers, sensitive names and random
/// lowercase tokens. Values: arbitrary octets (HPACK is octet-transparent).
fn name_strategy() -> impl Strategy<Value = Vec<u8>> {
    prop_oneof![
        Just(b":method".to_vec()),
        Just(b":path".to_vec()),
        Just(b":status".to_vec()),
        Just(b"content-type".to_vec()),
        Just(b"cookie".to_vec()),
        Just(b"authorization".to_vec()),
        Just(b"x-repeat".to_vec()),
        proptest::collection::vec(any::<u8>(), 0..24),
    ]
}

fn value_strategy() -> impl Strategy<Value = Vec<u8>> {
    prop_oneof![
        Just(b"GET".to_vec()),
        Just(b"/".to_vec()),
        Just(b"200".to_vec()),
        Just(Vec::new()),
        proptest::collection::vec(any::<u8>(), 0..64),
        proptest::collection::vec(any::<u8>(), 100..400),
    ]
}

fn blocks_strategy() -> impl Strategy<Value = Vec<Headers>> {
    let field = (name_strategy(), value_strategy());
    let block = proptest::collection::vec(field, 0..12);
    proptest::collection::vec(block, 1..8)
}

proptest! {
    #![proptest_config(ProptestConfig {
        cases: 384,
        failure_persistence: None,
        ..ProptestConfig::default()
    })]

    #[test]
    fn arbitrary_header_lists_round_trip(
        blocks in blocks_strategy(),
        table_size in prop_oneof![Just(0usize), Just(64), Just(256), Just(4096), 0usize..2000],
        resize in proptest::option::of((0usize..8, 0usize..5000)),
    ) {
        let mut enc = Encoder::new(table_size);
        let mut dec = Decoder::new(table_size);
        let mut buf = Vec::new();
        for (i, headers) in blocks.iter().enumerate() {
            if let Some((at, new_size)) = resize {
                if at == i {
                    // Peer changes SETTINGS_HEADER_TABLE_SIZE between two blocks.
                    enc.set_max_table_size(new_size);
                    dec.set_max_table_size(new_size);
                }
            }
            buf.clear();
            enc.encode(headers.iter().map(|(n, v)| (&n[..], &v[..])), &mut buf);
            let got = decode(&mut dec, &buf);
            prop_assert_eq!(&got, headers);
            prop_assert_eq!(enc.table_size(), dec.table_size());
        }
    }

    #[test]
    fn explicit_indexing_round_trips_and_keeps_sensitivity(
        headers in proptest::collection::vec(
            (name_strategy(), value_strategy(), 0u8..3), 0..16),
        table_size in prop_oneof![Just(0usize), Just(256), Just(4096)],
    ) {
        let mut enc = Encoder::new(table_size);
        let mut dec = Decoder::new(table_size);
        let mut buf = Vec::new();
        let fields: Vec<(&[u8], &[u8], Indexing)> = headers
            .iter()
            .map(|(n, v, k)| {
                let ix = match k { 0 => Indexing::Auto, 1 => Indexing::NoIndex, _ => Indexing::Never };
                (&n[..], &v[..], ix)
            })
            .collect();
        for _ in 0..2 {
            buf.clear();
            enc.encode_with(fields.iter().copied(), &mut buf);
            let mut got = Vec::new();
            dec.decode(&buf, |f| got.push((f.name.to_vec(), f.value.to_vec(), f.sensitive))).unwrap();
            prop_assert_eq!(got.len(), fields.len());
            for ((n, v, s), (fnm, fv, fi)) in got.iter().zip(&fields) {
                prop_assert_eq!(&n[..], *fnm);
                prop_assert_eq!(&v[..], *fv);
                if *fi == Indexing::Never {
                    prop_assert!(*s, "never-indexed field lost its flag");
                }
            }
        }
    }
}
