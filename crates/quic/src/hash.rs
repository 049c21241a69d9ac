//! A map keyed by QUIC stream ID with a cheap hasher: request streams are looked up several
//! times per request, and the standard SipHash costs more than the lookup itself. Stream IDs
//! come from the peer, but a peer can only use IDs below its MAX_STREAMS limit, so there is no
//! untrusted key space to flood.

use std::collections::HashMap;
use std::hash::{BuildHasherDefault, Hasher};

use quinn_proto::StreamId;

/// A `HashMap` keyed by stream ID (see the module docs).
pub type StreamMap<V> = HashMap<StreamId, V, BuildHasherDefault<StreamIdHasher>>;

/// An empty [`StreamMap`] with room for `n` streams.
pub fn stream_map<V>(n: usize) -> StreamMap<V> {
    HashMap::with_capacity_and_hasher(n, BuildHasherDefault::default())
}

/// Folded multiply of the 64-bit ID (both halves of the 128-bit product mixed), so that
/// sequential IDs (steps of 4) spread over the low bits (bucket) and the top 7 bits (tag).
#[derive(Debug, Default, Clone, Copy)]
pub struct StreamIdHasher(u64);

impl Hasher for StreamIdHasher {
    fn finish(&self) -> u64 {
        self.0
    }

    fn write(&mut self, bytes: &[u8]) {
        // Not used by `StreamId` (it hashes one u64); kept correct for any key.
        for &b in bytes {
            self.write_u64(u64::from(b));
        }
    }

    fn write_u64(&mut self, x: u64) {
        const K: u64 = 0x9e37_79b9_7f4a_7c15;
        let p = u128::from(self.0 ^ x) * u128::from(K);
        self.0 = (p as u64) ^ ((p >> 64) as u64);
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use quinn_proto::{Dir, Side};

    #[test]
    fn sequential_ids_spread_and_round_trip() {
        let mut m: StreamMap<u64> = stream_map(16);
        for i in 0..10_000u64 {
            m.insert(StreamId::new(Side::Client, Dir::Bi, i), i);
        }
        for i in 0..10_000u64 {
            assert_eq!(m.get(&StreamId::new(Side::Client, Dir::Bi, i)), Some(&i));
        }
        // The low 4 bits (bucket index of a small table) of 64 sequential IDs' hashes take
        // every value: no clustering from the IDs' step of 4.
        let mut seen = [false; 16];
        for i in 0..64u64 {
            let mut h = StreamIdHasher::default();
            h.write_u64(u64::from(StreamId::new(Side::Client, Dir::Bi, i)));
            seen[(h.finish() & 15) as usize] = true;
        }
        assert!(seen.iter().all(|&s| s));
    }
}
