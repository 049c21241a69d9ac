//! QPACK decoder (field sections and encoder stream) and encoder (decoder stream) on
//! arbitrary bytes.
//!
//! Input layout: one configuration octet (table capacity, blocked-streams limit, field
//! section limit, string limit), then records of (channel octet, length octet, bytes):
//! channel 0 feeds the encoder stream, 1 a field section on stream `4 * (c >> 2)`, 2 the
//! decoder stream of an encoder, 3 cancels a stream (no bytes) or has that encoder encode
//! the bytes as fields (`name:value` lines) on the stream. Oracles beyond "no panic":
//! delivered fields stay under the section limit, the blocked count under the limit, a
//! released section decodes; every section that decodes is re-encoded by an Encoder
//! (dynamic table on) and decoded by a second Decoder with the encoder stream and
//! acknowledgments exchanged, giving back the same fields. The encoder fed fuzzed decoder
//! stream bytes (insert count increments, section acknowledgements, stream cancellations,
//! mixed with the real acknowledgements of its peer when `c & 4`) keeps producing sections
//! its peer decodes to the encoded fields, and never blocks more streams than allowed.
#![no_main]

use h2lab_wire::qpack::{Decoded, Decoder, Encoder, EncoderConfig};
use libfuzzer_sys::fuzz_target;

type Fields = Vec<(Vec<u8>, Vec<u8>)>;

fuzz_target!(|data: &[u8]| {
    let Some((&cfg, mut rest)) = data.split_first() else {
        return;
    };
    let table = [0usize, 64, 256, 4096][usize::from(cfg & 3)];
    let blocked = usize::from((cfg >> 2) & 3);
    let limit = [64usize, 1024, 64 * 1024, 1 << 20][usize::from((cfg >> 4) & 3)];
    let mut dec = Decoder::new(table, blocked);
    dec.set_max_field_section_size(limit);
    if cfg & 0x40 != 0 {
        dec.set_max_string_len(100);
    }
    dec.assume_capacity(if cfg & 0x80 != 0 { table } else { 0 });
    let mut enc = Encoder::new(EncoderConfig::default());
    enc.set_peer_settings(table, blocked);
    let mut enc_peer = Decoder::new(table, blocked);
    enc_peer.set_max_field_section_size(usize::MAX);
    let mut oracle_enc = Encoder::new(EncoderConfig::default());
    oracle_enc.set_peer_settings(4096, 4);
    let mut oracle_dec = Decoder::new(4096, 4);
    oracle_dec.set_max_field_section_size(usize::MAX);

    let mut check = |fields: &Fields, id: u64| {
        let size: usize = fields.iter().map(|(n, v)| n.len() + v.len() + 32).sum();
        assert!(size <= limit);
        let (mut s, mut es) = (Vec::new(), Vec::new());
        oracle_enc.encode(id, fields.iter().map(|(n, v)| (&n[..], &v[..])), &mut s, &mut es);
        oracle_dec.feed_encoder_stream(&es).expect("our encoder stream");
        let mut again = Fields::new();
        let r = oracle_dec
            .decode_section(id, &s, |f| again.push((f.name.to_vec(), f.value.to_vec())))
            .expect("our section");
        assert_eq!(r, Decoded::Done);
        assert_eq!(&again, fields);
        let mut fb = Vec::new();
        oracle_dec.take_decoder_stream(&mut fb);
        oracle_enc.feed_decoder_stream(&fb).expect("our decoder stream");
    };

    while let Some((&chan, body)) = rest.split_first() {
        let Some((&len, body)) = body.split_first() else {
            return;
        };
        let n = usize::from(len).min(body.len());
        let (bytes, tail) = body.split_at(n);
        rest = tail;
        let id = 4 * u64::from(chan >> 2);
        match chan & 3 {
            0 => {
                if dec.feed_encoder_stream(bytes).is_err() {
                    return;
                }
                while let Some(s) = dec.next_unblocked() {
                    let mut fields = Fields::new();
                    match dec.decode_unblocked(s, |f| fields.push((f.name.to_vec(), f.value.to_vec()))) {
                        Ok(Decoded::Done) => check(&fields, s),
                        Ok(Decoded::Blocked) => panic!("released section still blocked"),
                        Err(e) if e.is_connection_error() => return,
                        Err(_) => {}
                    }
                }
            }
            1 => {
                let mut fields = Fields::new();
                match dec.decode_section(id, bytes, |f| fields.push((f.name.to_vec(), f.value.to_vec()))) {
                    Ok(Decoded::Done) => check(&fields, id),
                    Ok(Decoded::Blocked) => assert!(dec.blocked_streams() <= blocked),
                    Err(e) if e.is_connection_error() => return,
                    Err(_) => {}
                }
            }
            2 => {
                if enc.feed_decoder_stream(bytes).is_err() {
                    return;
                }
            }
            _ if bytes.is_empty() => dec.cancel_stream(id),
            _ => {
                let fields: Fields = bytes
                    .split(|&b| b == b'\n')
                    .map(|line| {
                        let at = line.iter().skip(1).position(|&b| b == b':').map_or(line.len(), |p| p + 1);
                        (line[..at].to_vec(), line.get(at + 1..).unwrap_or_default().to_vec())
                    })
                    .collect();
                let (mut s, mut es) = (Vec::new(), Vec::new());
                enc.encode(id, fields.iter().map(|(n, v)| (&n[..], &v[..])), &mut s, &mut es);
                assert!(enc.blocking_streams() <= blocked);
                enc_peer.feed_encoder_stream(&es).expect("encoder stream of our encoder");
                let mut got = Fields::new();
                let r = enc_peer
                    .decode_section(id, &s, |f| got.push((f.name.to_vec(), f.value.to_vec())))
                    .expect("section of our encoder");
                assert_eq!(r, Decoded::Done);
                assert_eq!(got, fields);
                let mut acks = Vec::new();
                enc_peer.take_decoder_stream(&mut acks);
                if chan & 4 != 0 && enc.feed_decoder_stream(&acks).is_err() {
                    // Fuzzed acknowledgements came first: this one is a duplicate.
                    return;
                }
            }
        }
        let mut fb = Vec::new();
        dec.take_decoder_stream(&mut fb);
    }
});
