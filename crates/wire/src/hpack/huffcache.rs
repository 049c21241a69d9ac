//! A small memo of recent Huffman decodings, per decoder.
//!
//! Servers that do not index their response fields (nginx sends `server`, `date`,
//! `content-type`, `last-modified`, `etag`, ... as literals without indexing on every
//! response) repeat the very same Huffman-coded octets block after block. Comparing a
//! short literal with the one seen last at the same cache slot and copying its decoding
//! is several times cheaper than decoding it again. The decoding is a pure function of
//! the coded octets, so a hit returns exactly what [`huffman::decode`] would; only
//! successful decodings are stored, so errors are always re-detected.
//!
//! Direct-mapped, fixed size, allocated once with the decoder: no allocation per field.

use super::huffman;
use super::HpackError;

/// Longest coded literal that is cached.
const RAW_MAX: usize = 48;
/// Longest decoding of a [`RAW_MAX`]-octet literal: the shortest code is 5 bits.
const OUT_MAX: usize = RAW_MAX * 8 / 5;
/// Number of slots (a power of two, at most 64).
const SLOTS: usize = 32;

#[derive(Clone, Copy)]
struct Entry {
    raw_len: u8,
    out_len: u8,
    raw: [u8; RAW_MAX],
    out: [u8; OUT_MAX],
}

const EMPTY: Entry = Entry {
    raw_len: 0,
    out_len: 0,
    raw: [0; RAW_MAX],
    out: [0; OUT_MAX],
};

/// Recent Huffman decodings (see the module documentation).
#[derive(Clone)]
pub(crate) struct HuffmanCache {
    slots: Box<[Entry; SLOTS]>,
}

impl std::fmt::Debug for HuffmanCache {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("HuffmanCache").finish_non_exhaustive()
    }
}

impl Default for HuffmanCache {
    fn default() -> Self {
        HuffmanCache {
            slots: Box::new([EMPTY; SLOTS]),
        }
    }
}

/// Slot of a literal: a multiplicative hash of its length and its first and last eight
/// octets (values of one field differ mostly near the end, e.g. `date`).
#[inline]
fn slot_of(raw: &[u8]) -> usize {
    let word = |b: Option<&[u8; 8]>| b.map_or(0, |w| u64::from_le_bytes(*w));
    let (head, tail) = if raw.len() >= 8 {
        (word(raw.first_chunk::<8>()), word(raw.last_chunk::<8>()))
    } else {
        let mut w = [0u8; 8];
        if let Some(d) = w.get_mut(..raw.len()) {
            d.copy_from_slice(raw);
        }
        (u64::from_le_bytes(w), 0)
    };
    let h = (head ^ tail.rotate_left(29) ^ raw.len() as u64).wrapping_mul(0x9e37_79b9_7f4a_7c15);
    (h >> 58) as usize & (SLOTS - 1)
}

impl HuffmanCache {
    /// Appends the Huffman decoding of `raw` to `dst`, like [`huffman::decode`] (same
    /// output, same errors).
    pub(crate) fn decode(&mut self, raw: &[u8], dst: &mut Vec<u8>) -> Result<(), HpackError> {
        if raw.is_empty() || raw.len() > RAW_MAX {
            return huffman::decode(raw, dst);
        }
        let Some(e) = self.slots.get_mut(slot_of(raw)) else {
            return huffman::decode(raw, dst);
        };
        if usize::from(e.raw_len) == raw.len() && e.raw.get(..raw.len()) == Some(raw) {
            dst.extend_from_slice(e.out.get(..usize::from(e.out_len)).unwrap_or_default());
            return Ok(());
        }
        let start = dst.len();
        huffman::decode(raw, dst)?;
        let decoded = dst.get(start..).unwrap_or_default();
        if let (Some(r), Some(o)) = (e.raw.get_mut(..raw.len()), e.out.get_mut(..decoded.len())) {
            r.copy_from_slice(raw);
            o.copy_from_slice(decoded);
            e.raw_len = raw.len() as u8;
            e.out_len = decoded.len() as u8;
        }
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn plain(raw: &[u8]) -> Result<Vec<u8>, HpackError> {
        let mut v = Vec::new();
        huffman::decode(raw, &mut v).map(|()| v)
    }

    fn cached(c: &mut HuffmanCache, raw: &[u8]) -> Result<Vec<u8>, HpackError> {
        let mut v = b"prefix".to_vec();
        c.decode(raw, &mut v).map(|()| v.split_off(6))
    }

    #[test]
    fn hits_and_misses_match_the_plain_decoder() {
        let mut c = HuffmanCache::default();
        let mut inputs: Vec<Vec<u8>> = Vec::new();
        for s in [
            &b"nginx/1.22.1"[..],
            b"Sat, 21 Nov 2026 20:55:48 GMT",
            b"Sat, 21 Nov 2026 20:55:49 GMT",
            b"text/html",
            b"\"6566b8c2-28d\"",
            b"bytes",
            b"",
            b"\x00\xff binary \x7f",
            &[b'a'; 76][..],
            &[b'z'; 200][..],
        ] {
            let mut enc = Vec::new();
            huffman::encode(s, &mut enc);
            inputs.push(enc);
        }
        // Invalid inputs: EOS, bad padding; they must fail every time.
        inputs.push(vec![0xff, 0xff, 0xff, 0xff]);
        inputs.push(vec![0x00]);
        for round in 0..3 {
            for raw in &inputs {
                assert_eq!(cached(&mut c, raw), plain(raw), "round {round} {raw:02x?}");
            }
        }
    }

    #[test]
    fn colliding_inputs_replace_each_other() {
        let mut c = HuffmanCache::default();
        let mut encs = Vec::new();
        for i in 0..100u32 {
            let mut enc = Vec::new();
            huffman::encode(format!("value-{i}").as_bytes(), &mut enc);
            encs.push(enc);
        }
        for raw in encs.iter().chain(encs.iter().rev()) {
            assert_eq!(cached(&mut c, raw), plain(raw));
        }
    }
}
