//! HPACK decoder on arbitrary bytes.
//!
//! Input layout: one configuration octet (table size, header-list limit, string limit,
//! table size changes), then a sequence of header blocks, each prefixed by its length
//! (one octet; the last block takes whatever remains). The blocks go through one Decoder
//! (one connection). Every block that decodes successfully is re-encoded by an Encoder and
//! decoded again by a second Decoder (the encoder's peer), which must give back the same
//! fields, with never-indexed fields still flagged sensitive.
#![no_main]

use h2lab_wire::hpack::{Decoder, Encoder, Indexing};
use libfuzzer_sys::fuzz_target;

type Fields = Vec<(Vec<u8>, Vec<u8>, bool)>;

fuzz_target!(|data: &[u8]| {
    let Some((&cfg, mut rest)) = data.split_first() else {
        return;
    };
    let table = [0usize, 64, 256, 4096, 65536][usize::from(cfg & 7) % 5];
    let list_limit = [64usize, 1024, 16 * 1024, 1 << 20][usize::from((cfg >> 3) & 3)];
    let change_sizes = cfg & 0x20 != 0;

    let mut dec = Decoder::new(table);
    dec.set_max_header_list_size(list_limit);
    if cfg & 0x40 != 0 {
        dec.set_max_string_len(200);
    }
    let mut enc = Encoder::new(table);
    let mut peer = Decoder::new(table);
    peer.set_max_header_list_size(usize::MAX);
    let mut wire = Vec::new();

    while let Some((&len, body)) = rest.split_first() {
        let n = usize::from(len).min(body.len());
        let (block, tail) = body.split_at(n);
        rest = tail;

        if change_sizes && len & 0x80 != 0 {
            // Our SETTINGS_HEADER_TABLE_SIZE changes (and is acked) before this block.
            dec.set_max_table_size(usize::from(len & 0x7f) * 64);
        }

        let mut fields: Fields = Vec::new();
        match dec.decode(block, |f| {
            fields.push((f.name.to_vec(), f.value.to_vec(), f.sensitive))
        }) {
            Ok(()) => {}
            // The connection would be closed: stop.
            Err(e) if e.is_connection_error() => return,
            // Header list too large: the decoder stays in sync; go on.
            Err(_) => {
                let total: usize = fields.iter().map(|(n, v, _)| n.len() + v.len() + 32).sum();
                assert!(total <= list_limit);
                continue;
            }
        }
        let total: usize = fields.iter().map(|(n, v, _)| n.len() + v.len() + 32).sum();
        assert!(total <= list_limit);
        assert!(dec.table_size() <= dec.table_max_size());

        // Round trip what decoded.
        wire.clear();
        enc.encode_with(
            fields.iter().map(|(n, v, s)| {
                (
                    &n[..],
                    &v[..],
                    if *s { Indexing::Never } else { Indexing::Auto },
                )
            }),
            &mut wire,
        );
        let mut again: Fields = Vec::new();
        peer.decode(&wire, |f| {
            again.push((f.name.to_vec(), f.value.to_vec(), f.sensitive))
        })
        .expect("our own encoding must decode");
        assert_eq!(again.len(), fields.len());
        for ((n1, v1, s1), (n2, v2, s2)) in fields.iter().zip(&again) {
            assert_eq!((n1, v1), (n2, v2));
            assert!(!*s1 || *s2, "sensitive flag lost");
        }
        assert_eq!(enc.table_size(), peer.table_size());
    }
});
