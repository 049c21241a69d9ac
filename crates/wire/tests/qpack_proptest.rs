//! Property tests: any header lists round-trip through the QPACK encoder and decoder at
//! any table size and blocked-streams limit, with the encoder stream arriving late; any
//! bytes fed to the decoder (field sections, encoder stream) or to the encoder (decoder
//! stream) give a value or a typed error, never a panic.

use h2lab_wire::qpack::{Decoded, Decoder, Encoder, EncoderConfig};
use proptest::prelude::*;

type Fields = Vec<(Vec<u8>, Vec<u8>)>;

fn field() -> impl Strategy<Value = (Vec<u8>, Vec<u8>)> {
    let name = prop_oneof![
        Just(b":status".to_vec()),
        Just(b"content-type".to_vec()),
        Just(b"x-custom".to_vec()),
        Just(b"cookie".to_vec()),
        proptest::collection::vec(b'a'..=b'z', 1..12),
    ];
    let value = prop_oneof![
        Just(b"200".to_vec()),
        Just(b"text/plain".to_vec()),
        proptest::collection::vec(any::<u8>(), 0..40),
    ];
    (name, value)
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(200))]

    #[test]
    fn encode_decode_round_trip(
        lists in proptest::collection::vec(proptest::collection::vec(field(), 0..8), 1..12),
        table in prop_oneof![Just(0usize), Just(64), Just(256), Just(4096)],
        blocked in 0usize..3,
        dynamic in any::<bool>(),
    ) {
        let mut enc = Encoder::new(EncoderConfig { use_dynamic_table: dynamic, max_table_capacity: 4096 });
        enc.set_peer_settings(table, blocked);
        let mut dec = Decoder::new(table, blocked);
        let mut got: std::collections::BTreeMap<u64, Fields> = Default::default();
        let mut late = Vec::new();
        for (i, list) in lists.iter().enumerate() {
            let id = 4 * i as u64;
            let mut s = Vec::new();
            enc.encode(id, list.iter().map(|(n, v)| (n.as_slice(), v.as_slice())), &mut s, &mut late);
            let mut out = Fields::new();
            match dec.decode_section(id, &s, |f| out.push((f.name.to_vec(), f.value.to_vec()))).unwrap() {
                Decoded::Done => { got.insert(id, out); }
                Decoded::Blocked => {}
            }
            if i % 2 == 1 {
                dec.feed_encoder_stream(&late).unwrap();
                late.clear();
                while let Some(b) = dec.next_unblocked() {
                    let mut out = Fields::new();
                    dec.decode_unblocked(b, |f| out.push((f.name.to_vec(), f.value.to_vec()))).unwrap();
                    got.insert(b, out);
                }
                let mut fb = Vec::new();
                dec.take_decoder_stream(&mut fb);
                enc.feed_decoder_stream(&fb).unwrap();
            }
        }
        dec.feed_encoder_stream(&late).unwrap();
        while let Some(b) = dec.next_unblocked() {
            let mut out = Fields::new();
            dec.decode_unblocked(b, |f| out.push((f.name.to_vec(), f.value.to_vec()))).unwrap();
            got.insert(b, out);
        }
        prop_assert_eq!(got.len(), lists.len());
        for (i, l) in got.values().enumerate() {
            prop_assert_eq!(l, &lists[i]);
        }
    }

    #[test]
    fn arbitrary_input_never_panics(
        enc_stream in proptest::collection::vec(any::<u8>(), 0..64),
        section in proptest::collection::vec(any::<u8>(), 0..64),
        dec_stream in proptest::collection::vec(any::<u8>(), 0..32),
    ) {
        let mut dec = Decoder::new(256, 2);
        let _ = dec.feed_encoder_stream(&enc_stream);
        let _ = dec.decode_section(0, &section, |_| {});
        let mut enc = Encoder::new(EncoderConfig::default());
        enc.set_peer_settings(256, 2);
        let _ = enc.feed_decoder_stream(&dec_stream);
    }
}
