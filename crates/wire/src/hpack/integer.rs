//! Prefix integers (RFC 7541 §5.1).
//!
//! An integer is stored in the low `N` bits of a first octet (whose high bits carry the
//! representation's flags); if it does not fit, the prefix is all ones and the remainder
//! follows in 7-bit little-endian groups, the high bit of each octet saying "more follows".

use super::HpackError;

/// Largest integer the decoder accepts. Every HPACK integer is an index, a string length
/// or a table size, and none of those can sensibly exceed 32 bits.
pub const MAX_INTEGER: u64 = u32::MAX as u64;

/// Continuation octets accepted after a full prefix. Five 7-bit groups hold 35 bits, which
/// covers [`MAX_INTEGER`]; a longer run (e.g. padded with `0x80` octets) is rejected.
pub const MAX_CONTINUATION_OCTETS: usize = 5;

/// Appends `value` encoded with an `prefix_bits`-bit prefix (1..=8). `flags` supplies the
/// high bits of the first octet (the representation pattern); its low `prefix_bits` bits
/// must be zero.
pub fn encode(value: usize, prefix_bits: u8, flags: u8, dst: &mut Vec<u8>) {
    debug_assert!((1..=8).contains(&prefix_bits));
    let mask = prefix_mask(prefix_bits);
    // RFC 7541 §5.1: "If the integer value is small enough, i.e., strictly less than
    // 2^N-1, it is encoded within the N-bit prefix."
    if value < usize::from(mask) {
        // Cast is exact: value < mask <= 255.
        dst.push(flags | value as u8);
        return;
    }
    // "Otherwise, all the bits of the prefix are set to 1, and the value, decreased by
    // 2^N-1, is encoded using a list of one or more octets."
    dst.push(flags | mask);
    let mut rest = value - usize::from(mask);
    while rest >= 0x80 {
        dst.push((rest as u8 & 0x7f) | 0x80);
        rest >>= 7;
    }
    dst.push(rest as u8);
}

/// Number of octets [`encode`] writes for `value` with a `prefix_bits`-bit prefix.
pub fn encoded_len(value: usize, prefix_bits: u8) -> usize {
    let mask = usize::from(prefix_mask(prefix_bits));
    if value < mask {
        return 1;
    }
    let mut rest = value - mask;
    let mut n = 2;
    while rest >= 0x80 {
        rest >>= 7;
        n += 1;
    }
    n
}

/// Decodes an integer with an `prefix_bits`-bit prefix (1..=8) from the start of `buf`.
/// Returns the value and the number of octets consumed.
///
/// Errors: [`HpackError::Truncated`] if `buf` ends inside the integer (or is empty),
/// [`HpackError::IntegerOverflow`] if the value exceeds [`MAX_INTEGER`] or uses more than
/// [`MAX_CONTINUATION_OCTETS`] continuation octets.
#[inline]
pub fn decode(buf: &[u8], prefix_bits: u8) -> Result<(usize, usize), HpackError> {
    let mask = prefix_mask(prefix_bits);
    let first = *buf.first().ok_or(HpackError::Truncated)?;
    let prefix = first & mask;
    if prefix < mask {
        return Ok((usize::from(prefix), 1));
    }
    let mut value = u64::from(mask);
    let mut shift = 0u32;
    for (i, &b) in buf.iter().enumerate().skip(1) {
        // RFC 7541 §5.1: "Integer encodings that exceed implementation limits -- in value
        // or octet length -- MUST be treated as decoding errors."
        if i > MAX_CONTINUATION_OCTETS {
            return Err(HpackError::IntegerOverflow);
        }
        // shift <= 28 here, so the term fits easily in u64.
        value += u64::from(b & 0x7f) << shift;
        if value > MAX_INTEGER {
            return Err(HpackError::IntegerOverflow);
        }
        if b & 0x80 == 0 {
            let v = usize::try_from(value).map_err(|_| HpackError::IntegerOverflow)?;
            return Ok((v, i + 1));
        }
        shift += 7;
    }
    Err(HpackError::Truncated)
}

#[inline]
fn prefix_mask(prefix_bits: u8) -> u8 {
    0xffu8 >> (8 - prefix_bits.clamp(1, 8))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn enc(value: usize, n: u8) -> Vec<u8> {
        let mut v = Vec::new();
        encode(value, n, 0, &mut v);
        assert_eq!(v.len(), encoded_len(value, n));
        v
    }

    #[test]
    fn rfc_c1_examples() {
        // C.1.1: 10 with a 5-bit prefix.
        assert_eq!(enc(10, 5), [0x0a]);
        assert_eq!(decode(&[0x0a], 5), Ok((10, 1)));
        // C.1.2: 1337 with a 5-bit prefix.
        assert_eq!(enc(1337, 5), [0x1f, 0x9a, 0x0a]);
        assert_eq!(decode(&[0x1f, 0x9a, 0x0a], 5), Ok((1337, 3)));
        // C.1.3: 42 starting at an octet boundary.
        assert_eq!(enc(42, 8), [0x2a]);
        assert_eq!(decode(&[0x2a], 8), Ok((42, 1)));
    }

    #[test]
    fn flags_are_kept_and_ignored() {
        let mut v = Vec::new();
        encode(3, 6, 0x40, &mut v);
        assert_eq!(v, [0x43]);
        assert_eq!(decode(&v, 6), Ok((3, 1)));
    }

    #[test]
    fn boundaries_round_trip() {
        for n in 1..=8u8 {
            let m = (1usize << n) - 1;
            for v in [
                0,
                1,
                m - 1,
                m,
                m + 1,
                127 + m,
                128 + m,
                0xffff,
                u32::MAX as usize,
            ] {
                let e = enc(v, n);
                assert_eq!(decode(&e, n), Ok((v, e.len())), "n={n} v={v}");
            }
        }
    }

    #[test]
    fn overflow_and_truncation() {
        // Value above u32::MAX.
        let mut v = Vec::new();
        encode(u32::MAX as usize + 1, 5, 0, &mut v);
        assert_eq!(decode(&v, 5), Err(HpackError::IntegerOverflow));
        // Absurd run of continuation octets, even though the value stays small.
        let padded = [0x1f, 0x80, 0x80, 0x80, 0x80, 0x80, 0x00];
        assert_eq!(decode(&padded, 5), Err(HpackError::IntegerOverflow));
        // Endless continuation: overflow, never a panic or a loop.
        assert_eq!(decode(&[0xff; 64], 8), Err(HpackError::IntegerOverflow));
        assert_eq!(decode(&[], 5), Err(HpackError::Truncated));
        assert_eq!(decode(&[0x1f], 5), Err(HpackError::Truncated));
        assert_eq!(decode(&[0x1f, 0x9a], 5), Err(HpackError::Truncated));
    }
}
