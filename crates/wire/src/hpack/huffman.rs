//! The static Huffman code of RFC 7541 §5.2 / Appendix B.
//!
//! The Appendix B code is *canonical*: within one code length, codes are consecutive and
//! assigned in increasing symbol order, and each length starts right after the previous
//! length's last code (shifted left). So the whole code follows from the 257 code lengths
//! ([`CODE_LENGTHS`]); the codes and the decoding tables are generated from them at compile
//! time by `const fn`s (a unit test checks a sample of codes against Appendix B).
//!
//! Decoding is table driven: a 64-bit bit buffer is refilled 32 bits at a time, and its
//! top [`LOOKUP_BITS`] bits index a table whose entry gives, directly, the next symbol *and
//! the one after it* when both codes fit in the window (e.g. two 6-bit letters), with the
//! number of bits consumed. Every code of at most [`LOOKUP_BITS`] bits (all common header
//! characters) is resolved this way; longer codes (bytes outside printable ASCII and a few
//! punctuation marks) go through the canonical first-code-per-length search.

use super::HpackError;

/// Code length in bits of each symbol 0..=255 plus EOS (256), RFC 7541 Appendix B.
#[rustfmt::skip]
pub const CODE_LENGTHS: [u8; 257] = [
    // 0x00..=0x1f: control characters.
    13, 23, 28, 28, 28, 28, 28, 28, 28, 24, 30, 28, 28, 30, 28, 28,
    28, 28, 28, 28, 28, 28, 30, 28, 28, 28, 28, 28, 28, 28, 28, 28,
    // ' ' ! " # $ % & ' ( ) * + , - . /
     6, 10, 10, 12, 13,  6,  8, 11, 10, 10,  8, 11,  8,  6,  6,  6,
    // 0 1 2 3 4 5 6 7 8 9 : ; < = > ?
     5,  5,  5,  6,  6,  6,  6,  6,  6,  6,  7,  8, 15,  6, 12, 10,
    // @ A B C D E F G H I J K L M N O
    13,  6,  7,  7,  7,  7,  7,  7,  7,  7,  7,  7,  7,  7,  7,  7,
    // P Q R S T U V W X Y Z [ \ ] ^ _
     7,  7,  7,  7,  7,  7,  7,  7,  8,  7,  8, 13, 19, 13, 14,  6,
    // ` a b c d e f g h i j k l m n o
    15,  5,  6,  5,  6,  5,  6,  6,  6,  5,  7,  7,  6,  6,  6,  5,
    // p q r s t u v w x y z { | } ~ DEL
     6,  7,  6,  5,  5,  6,  7,  7,  7,  7,  7, 15, 11, 14, 13, 28,
    // 0x80..=0xff
    20, 22, 20, 20, 22, 22, 22, 23, 22, 23, 23, 23, 23, 23, 24, 23,
    24, 24, 22, 23, 24, 23, 23, 23, 23, 21, 22, 23, 22, 23, 23, 24,
    22, 21, 20, 22, 22, 23, 23, 21, 23, 22, 22, 24, 21, 22, 23, 23,
    21, 21, 22, 21, 23, 22, 23, 23, 20, 22, 22, 22, 23, 22, 22, 23,
    26, 26, 20, 19, 22, 23, 22, 25, 26, 26, 26, 27, 27, 26, 24, 25,
    19, 21, 26, 27, 27, 26, 27, 24, 21, 21, 26, 26, 28, 27, 27, 27,
    20, 24, 20, 21, 22, 21, 21, 23, 22, 22, 25, 25, 24, 24, 26, 23,
    26, 27, 26, 26, 27, 27, 27, 27, 27, 28, 27, 27, 27, 27, 27, 26,
    // EOS
    30,
];

/// The EOS symbol (RFC 7541 §5.2), never valid inside a string.
const EOS: u16 = 256;
/// Longest code length.
const MAX_LEN: usize = 30;
/// Bits resolved by one lookup in the primary decoding table.
pub const LOOKUP_BITS: u32 = 12;
const LOOKUP_SIZE: usize = 1 << LOOKUP_BITS;

/// Canonical codes, right-aligned (`CODES[s]` has `CODE_LENGTHS[s]` significant bits).
pub const CODES: [u32; 257] = build_codes();

/// Per-length data for the canonical search: first code, number of codes, and index of the
/// first symbol of that length in [`SORTED`].
struct LengthInfo {
    first: [u32; MAX_LEN + 1],
    count: [u32; MAX_LEN + 1],
    offset: [u16; MAX_LEN + 1],
}

// Runtime tables are `static`s (one copy in the binary, indexed in place), built by the
// `const fn`s below at compile time.
static LENGTH_INFO: LengthInfo = build_length_info();
/// Symbols sorted by (code length, symbol), i.e. by code.
static SORTED: [u16; 257] = build_sorted();
/// Primary decoding table, indexed by the next [`LOOKUP_BITS`] input bits. Entry layout:
/// bits 0-7 first symbol, 8-15 second symbol, 16-20 first code length, 21-25 total length
/// of the decoded codes, 26-27 number of symbols (0: first code longer than the window).
static LOOKUP: [u32; LOOKUP_SIZE] = build_lookup();
/// Encoder table: `code << 8 | length` per octet.
static ENCODE: [u64; 256] = build_encode();

const fn build_encode() -> [u64; 256] {
    let mut t = [0u64; 256];
    let mut sym = 0;
    while sym < 256 {
        t[sym] = ((CODES[sym] as u64) << 8) | CODE_LENGTHS[sym] as u64;
        sym += 1;
    }
    t
}

const fn build_codes() -> [u32; 257] {
    let mut codes = [0u32; 257];
    let mut code: u32 = 0;
    let mut len = 1;
    while len <= MAX_LEN {
        let mut sym = 0;
        while sym < 257 {
            if CODE_LENGTHS[sym] as usize == len {
                codes[sym] = code;
                code += 1;
            }
            sym += 1;
        }
        code <<= 1;
        len += 1;
    }
    codes
}

const fn build_length_info() -> LengthInfo {
    let mut info = LengthInfo {
        first: [0; MAX_LEN + 1],
        count: [0; MAX_LEN + 1],
        offset: [0; MAX_LEN + 1],
    };
    let mut sym = 0;
    while sym < 257 {
        info.count[CODE_LENGTHS[sym] as usize] += 1;
        sym += 1;
    }
    let mut code: u32 = 0;
    let mut offset: u16 = 0;
    let mut len = 1;
    while len <= MAX_LEN {
        info.first[len] = code;
        info.offset[len] = offset;
        code = (code + info.count[len]) << 1;
        offset += info.count[len] as u16;
        len += 1;
    }
    // Kraft equality: the code is complete, so every 30-bit window decodes to a symbol.
    assert!(info.first[MAX_LEN] + info.count[MAX_LEN] == 1 << MAX_LEN);
    info
}

const fn build_sorted() -> [u16; 257] {
    let mut sorted = [0u16; 257];
    let mut n = 0;
    let mut len = 1;
    while len <= MAX_LEN {
        let mut sym = 0;
        while sym < 257 {
            if CODE_LENGTHS[sym] as usize == len {
                sorted[n] = sym as u16;
                n += 1;
            }
            sym += 1;
        }
        len += 1;
    }
    sorted
}

/// Single-symbol table (`len << 9 | symbol`, 0 when longer), the building block of
/// [`LOOKUP`].
const fn build_single() -> [u16; LOOKUP_SIZE] {
    let mut table = [0u16; LOOKUP_SIZE];
    let mut sym = 0;
    while sym < 257 {
        let len = CODE_LENGTHS[sym] as u32;
        if len <= LOOKUP_BITS {
            let start = (CODES[sym] << (LOOKUP_BITS - len)) as usize;
            let end = start + (1usize << (LOOKUP_BITS - len));
            let mut i = start;
            while i < end {
                table[i] = ((len as u16) << 9) | sym as u16;
                i += 1;
            }
        }
        sym += 1;
    }
    table
}

const fn build_lookup() -> [u32; LOOKUP_SIZE] {
    let single = build_single();
    let mut table = [0u32; LOOKUP_SIZE];
    let mut i = 0;
    while i < LOOKUP_SIZE {
        let e1 = single[i] as u32;
        if e1 != 0 {
            let (s1, len1) = (e1 & 0xff, e1 >> 9);
            let mut entry = s1 | (len1 << 16) | (len1 << 21) | (1 << 26);
            // The bits after the first code, moved to the top of the window (zero-filled):
            // a second code is valid only if it lies entirely within the real bits.
            let rest = (i << len1) & (LOOKUP_SIZE - 1);
            let e2 = single[rest] as u32;
            let len2 = e2 >> 9;
            if e2 != 0 && len1 + len2 <= LOOKUP_BITS {
                entry = s1 | ((e2 & 0xff) << 8) | (len1 << 16) | ((len1 + len2) << 21) | (2 << 26);
            }
            table[i] = entry;
        }
        i += 1;
    }
    table
}

#[inline(always)]
fn lookup_entry(acc: u64) -> u32 {
    LOOKUP[(acc >> (64 - LOOKUP_BITS)) as usize & (LOOKUP_SIZE - 1)]
}

/// Canonical search for codes longer than [`LOOKUP_BITS`] (`window` is left-aligned).
#[cold]
fn long_symbol(window: u32) -> (u16, u32) {
    let info = &LENGTH_INFO;
    let mut len = LOOKUP_BITS as usize + 1;
    while len <= MAX_LEN {
        let code = window >> (32 - len);
        let (first, count) = (info.first[len], info.count[len]);
        if code < first + count {
            // code >= first holds for canonical codes once shorter lengths were ruled out.
            let idx = usize::from(info.offset[len]) + (code.wrapping_sub(first)) as usize;
            let sym = SORTED.get(idx).copied().unwrap_or(EOS);
            return (sym, len as u32);
        }
        len += 1;
    }
    // Unreachable for a complete code (checked at compile time); treat as EOS.
    (EOS, MAX_LEN as u32)
}

/// Appends the Huffman decoding of `src` to `dst`.
///
/// Errors (RFC 7541 §5.2): [`HpackError::HuffmanEos`] if the EOS symbol appears,
/// [`HpackError::HuffmanPaddingTooLong`] if more than 7 bits of padding remain,
/// [`HpackError::HuffmanInvalidPadding`] if the trailing bits are not all ones (which also
/// covers a truncated code). On error, `dst` may hold a partial result.
pub fn decode(src: &[u8], dst: &mut Vec<u8>) -> Result<(), HpackError> {
    // The shortest code is 5 bits, so the output is at most 8/5 of the input.
    dst.reserve(src.len() / 5 * 8 + 8);
    let mut acc: u64 = 0; // left-aligned bit buffer
    let mut nbits: u32 = 0;
    let mut rest = src;
    loop {
        // Refill: 32 bits at a time while possible, then byte by byte up to 57+ bits.
        if nbits <= 32 {
            if let Some((chunk, tail)) = rest.split_first_chunk::<4>() {
                acc |= u64::from(u32::from_be_bytes(*chunk)) << (32 - nbits);
                nbits += 32;
                rest = tail;
            }
        }
        while nbits <= 56 {
            let Some((&b, tail)) = rest.split_first() else {
                break;
            };
            acc |= u64::from(b) << (56 - nbits);
            nbits += 8;
            rest = tail;
        }
        decode_complete(&mut acc, &mut nbits, dst)?;
        if rest.is_empty() {
            break;
        }
    }
    // Fewer than 30 bits left: pad the buffer with ones (a prefix of EOS) so the lookup
    // sees a full window, and take a symbol only if its code lies entirely in real bits.
    while nbits > 0 {
        let padded = acc | (u64::MAX >> nbits);
        let entry = lookup_entry(padded);
        let (len1, total) = ((entry >> 16) & 0x1f, (entry >> 21) & 0x1f);
        if entry >> 26 == 2 && total <= nbits {
            dst.extend_from_slice(&[entry as u8, (entry >> 8) as u8]);
            acc <<= total;
            nbits -= total;
            continue;
        }
        if entry >> 26 != 0 && len1 <= nbits {
            dst.push(entry as u8);
            acc <<= len1;
            nbits -= len1;
            continue;
        }
        if entry >> 26 == 0 {
            // Longer than the window (13 to 30 bits): complete if it fits in what is left.
            let (sym, len) = long_symbol((padded >> 32) as u32);
            if len <= nbits {
                if sym == EOS {
                    return Err(HpackError::HuffmanEos);
                }
                dst.push(sym as u8);
                acc <<= len;
                nbits -= len;
                continue;
            }
        }
        // What remains is padding.
        let mask = u64::MAX << (64 - nbits);
        if acc & mask != mask {
            // RFC 7541 §5.2: "A padding not corresponding to the most significant bits of
            // the code for the EOS symbol MUST be treated as a decoding error."
            return Err(HpackError::HuffmanInvalidPadding);
        }
        if nbits > 7 {
            // RFC 7541 §5.2: "A padding strictly longer than 7 bits MUST be treated as a
            // decoding error."
            return Err(HpackError::HuffmanPaddingTooLong);
        }
        return Ok(());
    }
    Ok(())
}

/// Decodes every code that is certainly complete (while at least 30 bits are buffered).
/// Symbols go to a small local buffer first (at most 64 / 5 = 12 per call), written two at
/// a time without branching on how many the table entry holds.
#[inline(always)]
fn decode_complete(acc: &mut u64, nbits: &mut u32, dst: &mut Vec<u8>) -> Result<(), HpackError> {
    let mut out = [0u8; 16];
    let mut n = 0usize;
    while *nbits >= MAX_LEN as u32 {
        let entry = lookup_entry(*acc);
        let count = (entry >> 26) as usize;
        if count == 0 {
            let (sym, len) = long_symbol((*acc >> 32) as u32);
            if sym == EOS {
                // RFC 7541 §5.2: "A Huffman-encoded string literal containing the EOS
                // symbol MUST be treated as a decoding error."
                return Err(HpackError::HuffmanEos);
            }
            out[n & 15] = sym as u8;
            n += 1;
            *acc <<= len;
            *nbits -= len;
            continue;
        }
        out[n & 15] = entry as u8;
        out[(n + 1) & 15] = (entry >> 8) as u8;
        n += count;
        let len = (entry >> 21) & 0x1f;
        *acc <<= len;
        *nbits -= len;
    }
    // A fixed-size copy (no memcpy call for a variable length), then drop the excess.
    let keep = dst.len() + n;
    dst.extend_from_slice(&out);
    dst.truncate(keep);
    Ok(())
}

/// Number of octets [`encode`] produces for `src` (including the final padding).
#[inline]
pub fn encoded_len(src: &[u8]) -> usize {
    let bits: usize = src
        .iter()
        .map(|&b| (ENCODE[usize::from(b)] & 0xff) as usize)
        .sum();
    bits.div_ceil(8)
}

/// Appends the Huffman encoding of `src` to `dst`, padded with the most significant bits
/// of EOS (all ones) to an octet boundary (RFC 7541 §5.2).
pub fn encode(src: &[u8], dst: &mut Vec<u8>) {
    dst.reserve(encoded_len(src));
    let mut acc: u64 = 0; // right-aligned: the low `nbits` bits are pending output
    let mut nbits: u32 = 0;
    for &b in src {
        let e = ENCODE[usize::from(b)];
        let len = (e & 0xff) as u32;
        acc = (acc << len) | (e >> 8);
        nbits += len;
        // nbits <= 31 + 30 < 64, so nothing pending is shifted out.
        if nbits >= 32 {
            nbits -= 32;
            dst.extend_from_slice(&((acc >> nbits) as u32).to_be_bytes());
        }
    }
    while nbits >= 8 {
        nbits -= 8;
        dst.push((acc >> nbits) as u8);
    }
    if nbits > 0 {
        dst.push(((acc << (8 - nbits)) as u8) | (0xff >> nbits));
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn hex(s: &str) -> Vec<u8> {
        let s: String = s.chars().filter(|c| !c.is_whitespace()).collect();
        (0..s.len())
            .step_by(2)
            .map(|i| u8::from_str_radix(&s[i..i + 2], 16).unwrap())
            .collect()
    }

    fn dec(src: &[u8]) -> Result<Vec<u8>, HpackError> {
        let mut out = Vec::new();
        decode(src, &mut out).map(|()| out)
    }

    fn enc(src: &[u8]) -> Vec<u8> {
        let mut out = Vec::new();
        encode(src, &mut out);
        assert_eq!(out.len(), encoded_len(src));
        out
    }

    #[test]
    fn codes_match_appendix_b_sample() {
        // (symbol, code as hex aligned to LSB, length) rows copied from RFC 7541 Appendix B.
        let rows: [(usize, u32, u8); 16] = [
            (0, 0x1ff8, 13),
            (1, 0x7fffd8, 23),
            (9, 0xffffea, 24),
            (10, 0x3ffffffc, 30),
            (22, 0x3ffffffe, 30),
            (b' ' as usize, 0x14, 6),
            (b'0' as usize, 0x0, 5),
            (b'<' as usize, 0x7ffc, 15),
            (b'\\' as usize, 0x7fff0, 19),
            (b'a' as usize, 0x3, 5),
            (b'z' as usize, 0x7b, 7),
            (b'~' as usize, 0x1ffd, 13),
            (127, 0xffffffc, 28),
            (220, 0xffffffd, 28),
            (255, 0x3ffffee, 26),
            (256, 0x3fffffff, 30),
        ];
        for (sym, code, len) in rows {
            assert_eq!((CODES[sym], CODE_LENGTHS[sym]), (code, len), "symbol {sym}");
        }
    }

    #[test]
    fn rfc_appendix_c_strings() {
        let cases: [(&str, &str); 8] = [
            ("www.example.com", "f1e3 c2e5 f23a 6ba0 ab90 f4ff"),
            ("no-cache", "a8eb 1064 9cbf"),
            ("custom-key", "25a8 49e9 5ba9 7d7f"),
            ("custom-value", "25a8 49e9 5bb8 e8b4 bf"),
            ("302", "6402"),
            ("private", "aec3 771a 4b"),
            (
                "Mon, 21 Oct 2013 20:13:21 GMT",
                "d07a be94 1054 d444 a820 0595 040b 8166 e082 a62d 1bff",
            ),
            (
                "https://www.example.com",
                "9d29 ad17 1863 c78f 0b97 c8e9 ae82 ae43 d3",
            ),
        ];
        for (plain, coded) in cases {
            assert_eq!(enc(plain.as_bytes()), hex(coded), "{plain}");
            assert_eq!(dec(&hex(coded)).unwrap(), plain.as_bytes(), "{plain}");
        }
    }

    #[test]
    fn all_bytes_round_trip() {
        let all: Vec<u8> = (0..=255u8).collect();
        assert_eq!(dec(&enc(&all)).unwrap(), all);
        for b in 0..=255u8 {
            for n in 1..12 {
                let s = vec![b; n];
                assert_eq!(dec(&enc(&s)).unwrap(), s);
            }
        }
        assert_eq!(dec(&[]).unwrap(), b"");
    }

    #[test]
    fn eos_is_rejected() {
        // EOS (30 ones) followed by 2 bits of padding.
        assert_eq!(dec(&[0xff, 0xff, 0xff, 0xff]), Err(HpackError::HuffmanEos));
        // 'a' (00011) then EOS, padded.
        let mut bits: u64 = 0b00011;
        bits = (bits << 30) | 0x3fff_ffff;
        bits = (bits << 5) | 0b11111; // pad to 40 bits
        let bytes = &bits.to_be_bytes()[3..];
        assert_eq!(dec(bytes), Err(HpackError::HuffmanEos));
        // EOS in the middle of a long buffer (taken by the fast path).
        let mut long = enc(&[b'x'; 20]);
        long.splice(0..0, [0xff, 0xff, 0xff, 0xfc]); // EOS + "00" (2 bits of the next code)
        assert!(dec(&long).is_err());
    }

    #[test]
    fn padding_rules() {
        // 'a' = 00011, padded with 111 -> valid.
        assert_eq!(dec(&[0b0001_1111]).unwrap(), b"a");
        // 'a' padded with 011: padding not all ones.
        assert_eq!(dec(&[0b0001_1011]), Err(HpackError::HuffmanInvalidPadding));
        // 'a' then a whole octet of ones: 11 bits of padding.
        assert_eq!(
            dec(&[0b0001_1111, 0xff]),
            Err(HpackError::HuffmanPaddingTooLong)
        );
        // A lone 0xff: 8 bits of padding.
        assert_eq!(dec(&[0xff]), Err(HpackError::HuffmanPaddingTooLong));
        // Incomplete long code: '\\' is 19 bits 1111111111111110000; give its first 16.
        assert_eq!(dec(&[0xff, 0xfe]), Err(HpackError::HuffmanInvalidPadding));
        // Zero octet: '0','0' would need 10 bits; 8 zero bits = '0' + 000 padding.
        assert_eq!(dec(&[0x00]), Err(HpackError::HuffmanInvalidPadding));
    }
    /// Bit-by-bit reference decoder straight from the code table.
    fn reference_decode(src: &[u8]) -> Result<Vec<u8>, HpackError> {
        let mut map = std::collections::HashMap::new();
        for sym in 0..257usize {
            map.insert((CODES[sym], CODE_LENGTHS[sym] as u32), sym as u16);
        }
        let (mut out, mut code, mut len) = (Vec::new(), 0u32, 0u32);
        for &byte in src {
            for i in (0..8).rev() {
                code = (code << 1) | u32::from((byte >> i) & 1);
                len += 1;
                if let Some(&sym) = map.get(&(code, len)) {
                    if sym == EOS {
                        return Err(HpackError::HuffmanEos);
                    }
                    out.push(sym as u8);
                    code = 0;
                    len = 0;
                }
            }
        }
        if len > 0 && code != (1 << len) - 1 {
            return Err(HpackError::HuffmanInvalidPadding);
        }
        if len > 7 {
            return Err(HpackError::HuffmanPaddingTooLong);
        }
        Ok(out)
    }

    proptest::proptest! {
        #![proptest_config(proptest::prelude::ProptestConfig {
            cases: 512,
            failure_persistence: None,
            ..Default::default()
        })]

        #[test]
        fn matches_reference_on_random_input(bytes in proptest::collection::vec(0u8..=255, 0..48)) {
            proptest::prop_assert_eq!(dec(&bytes), reference_decode(&bytes));
        }

        #[test]
        fn matches_reference_on_encoded_strings(
            text in proptest::collection::vec(0u8..=255, 0..40),
            cut in 0usize..8,
            flip in proptest::option::of((0usize..64, 0u8..8)),
        ) {
            let mut coded = enc(&text);
            proptest::prop_assert_eq!(dec(&coded).unwrap(), text.clone());
            // Truncate and/or flip a bit: both decoders must agree on the outcome.
            coded.truncate(coded.len().saturating_sub(cut));
            if let Some((at, bit)) = flip {
                if let Some(b) = coded.get_mut(at) {
                    *b ^= 1 << bit;
                }
            }
            proptest::prop_assert_eq!(dec(&coded), reference_decode(&coded));
        }
    }
}
