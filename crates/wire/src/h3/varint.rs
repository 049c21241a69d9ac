//! QUIC variable-length integers (RFC 9000 §16), the integer encoding of every HTTP/3
//! frame and stream header (RFC 9114 §1.2).
//!
//! "The QUIC variable-length integer encoding reserves the two most significant bits of the
//! first byte to encode the base-2 logarithm of the integer encoding length in bytes. The
//! integer value is encoded on the remaining bits, in network byte order."

/// Largest value a varint can hold, 2^62 - 1.
pub const MAX: u64 = (1 << 62) - 1;

/// Decodes a varint at the start of `buf`: `Some((value, length))`, or `None` if `buf` is
/// shorter than the length announced by its first octet (or empty).
#[inline]
pub fn decode(buf: &[u8]) -> Option<(u64, usize)> {
    let first = *buf.first()?;
    let len = 1usize << (first >> 6);
    let bytes = buf.get(..len)?;
    let mut v = u64::from(first & 0x3f);
    for &b in bytes.iter().skip(1) {
        v = (v << 8) | u64::from(b);
    }
    Some((v, len))
}

/// Number of octets [`encode`] writes for `v` (values above [`MAX`] are clamped to it).
#[inline]
pub fn encoded_len(v: u64) -> usize {
    match v {
        0..=63 => 1,
        64..=16_383 => 2,
        16_384..=1_073_741_823 => 4,
        _ => 8,
    }
}

/// Appends `v` in the shortest encoding (values above [`MAX`] are clamped to it: callers
/// pass lengths and identifiers, which never reach 2^62).
#[inline]
pub fn encode(v: u64, dst: &mut Vec<u8>) {
    let v = v.min(MAX);
    match encoded_len(v) {
        1 => dst.push(v as u8),
        2 => dst.extend_from_slice(&((v as u16) | 0x4000).to_be_bytes()),
        4 => dst.extend_from_slice(&((v as u32) | 0x8000_0000).to_be_bytes()),
        _ => dst.extend_from_slice(&(v | 0xc000_0000_0000_0000).to_be_bytes()),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn rfc9000_appendix_a1_examples() {
        // "the eight-byte sequence 0xc2197c5eff14e88c decodes to the decimal value
        // 151,288,809,941,952,652; the four-byte sequence 0x9d7f3e7d decodes to 494,878,333;
        // the two-byte sequence 0x7bbd decodes to 15,293; and the single byte 0x25 decodes
        // to 37 (as does the two-byte sequence 0x4025)."
        assert_eq!(
            decode(&[0xc2, 0x19, 0x7c, 0x5e, 0xff, 0x14, 0xe8, 0x8c]),
            Some((151_288_809_941_952_652, 8))
        );
        assert_eq!(decode(&[0x9d, 0x7f, 0x3e, 0x7d]), Some((494_878_333, 4)));
        assert_eq!(decode(&[0x7b, 0xbd]), Some((15_293, 2)));
        assert_eq!(decode(&[0x25]), Some((37, 1)));
        assert_eq!(decode(&[0x40, 0x25]), Some((37, 2)));
        assert_eq!(decode(&[0x9d, 0x7f, 0x3e]), None);
        assert_eq!(decode(&[]), None);
    }

    #[test]
    fn round_trip_at_the_boundaries() {
        for v in [0, 63, 64, 16_383, 16_384, 1_073_741_823, 1_073_741_824, MAX] {
            let mut b = Vec::new();
            encode(v, &mut b);
            assert_eq!(b.len(), encoded_len(v));
            assert_eq!(decode(&b), Some((v, b.len())));
        }
    }
}
