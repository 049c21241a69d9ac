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
//! Direct-mapped, fixed size (about 4 KiB), allocated once per decoder — and only once the
//! decoder has Huffman-decoded [`ALLOCATE_AFTER`] cacheable literals: a peer that indexes its
//! fields (nghttpd, h2o) sends few literals after its first blocks, so its connections never
//! pay for a cache they would not use (4 MB of a client's memory at `-c1000`). No
//! allocation per field.

use super::huffman;
use super::HpackError;

/// Longest coded literal that is cached.
const RAW_MAX: usize = 48;
/// Longest decoding of a [`RAW_MAX`]-octet literal: the shortest code is 5 bits.
const OUT_MAX: usize = RAW_MAX * 8 / 5;
/// Number of slots (a power of two, at most 64).
const SLOTS: usize = 32;
/// Cacheable literals decoded without a cache before it is allocated.
pub(crate) const ALLOCATE_AFTER: u32 = 32;

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
#[derive(Clone, Default)]
pub(crate) struct HuffmanCache {
    /// `None` until [`ALLOCATE_AFTER`] cacheable literals were decoded.
    slots: Option<Box<[Entry; SLOTS]>>,
    /// Cacheable literals decoded so far without a cache (up to [`ALLOCATE_AFTER`]).
    uncached: u32,
}

impl std::fmt::Debug for HuffmanCache {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("HuffmanCache").finish_non_exhaustive()
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
        if self.slots.is_none() {
            if self.uncached < ALLOCATE_AFTER {
                self.uncached += 1;
                return huffman::decode(raw, dst);
            }
            self.slots = Some(Box::new([EMPTY; SLOTS]));
        }
        let Some(e) = self.slots.as_mut().and_then(|s| s.get_mut(slot_of(raw))) else {
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

    /// A cache past its allocation threshold (so the tests exercise hits).
    fn warmed() -> HuffmanCache {
        let mut c = HuffmanCache::default();
        let mut enc = Vec::new();
        huffman::encode(b"warm-up", &mut enc);
        for _ in 0..=ALLOCATE_AFTER {
            assert_eq!(cached(&mut c, &enc), plain(&enc));
        }
        assert!(c.slots.is_some());
        c
    }

    #[test]
    fn allocated_only_after_enough_cacheable_literals() {
        let mut c = HuffmanCache::default();
        let mut long = Vec::new();
        huffman::encode(&[b'a'; 200], &mut long);
        // Literals the cache would not hold never count.
        for _ in 0..2 * ALLOCATE_AFTER {
            assert_eq!(cached(&mut c, &long), plain(&long));
            assert_eq!(cached(&mut c, &[]), plain(&[]));
        }
        assert!(c.slots.is_none());
        let mut enc = Vec::new();
        huffman::encode(b"nginx/1.22.1", &mut enc);
        for _ in 0..ALLOCATE_AFTER {
            assert_eq!(cached(&mut c, &enc), plain(&enc));
        }
        assert!(c.slots.is_none(), "still decoding without a cache");
        assert_eq!(cached(&mut c, &enc), plain(&enc));
        assert!(c.slots.is_some(), "allocated by the next cacheable literal");
    }

    #[test]
    fn hits_and_misses_match_the_plain_decoder() {
        let mut c = warmed();
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
        let mut c = warmed();
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
