//! QPACK primitives (RFC 9204 §4.1): prefix integers and string literals, on top of the
//! HPACK ones ([`crate::hpack::integer`], [`crate::hpack::huffman`]).
//!
//! RFC 9204 §4.1.1: "The prefixed integer from Section 5.1 of \[RFC7541\] is used heavily
//! throughout this document. The format from \[RFC7541\] is used unmodified." §4.1.2: string
//! literals are HPACK's, except that "QPACK uses an N-bit prefix" for the length, with the
//! Huffman flag H just above it, so the string may start in the middle of an octet.

use crate::hpack::{huffman, integer, HpackError, HuffmanCache};

/// Appends a string literal whose length has a `prefix_bits`-bit prefix (H is bit
/// `prefix_bits`), `flags` carrying the bits above H. Huffman-codes it when shorter (RFC
/// 7541 §5.2 code).
pub fn write_string(value: &[u8], prefix_bits: u8, flags: u8, dst: &mut Vec<u8>) {
    let h = 1u8 << prefix_bits;
    let huff_len = huffman::encoded_len(value);
    if huff_len < value.len() {
        integer::encode(huff_len, prefix_bits, flags | h, dst);
        huffman::encode(value, dst);
    } else {
        integer::encode(value.len(), prefix_bits, flags, dst);
        dst.extend_from_slice(value);
    }
}

/// Octets [`write_string`] appends for `value` with a `prefix_bits`-bit prefix.
pub fn string_len(value: &[u8], prefix_bits: u8) -> usize {
    let n = huffman::encoded_len(value).min(value.len());
    integer::encoded_len(n, prefix_bits) + n
}

/// Where a decoded string literal is.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Str {
    /// Raw octets at `input[start..end]`.
    Raw(usize, usize),
    /// Huffman-decoded octets at `scratch[start..end]`.
    Scratch(usize, usize),
}

impl Str {
    /// The string's octets.
    #[inline]
    pub fn slice<'a>(self, input: &'a [u8], scratch: &'a [u8]) -> &'a [u8] {
        match self {
            Str::Raw(a, b) => input.get(a..b).unwrap_or_default(),
            Str::Scratch(a, b) => scratch.get(a..b).unwrap_or_default(),
        }
    }

    /// The string's length.
    #[inline]
    pub fn len(self) -> usize {
        match self {
            Str::Raw(a, b) | Str::Scratch(a, b) => b - a,
        }
    }

    /// `true` for the empty string.
    #[inline]
    pub fn is_empty(self) -> bool {
        self.len() == 0
    }
}

/// Reads a string literal at `input[*pos..]` whose length has a `prefix_bits`-bit prefix;
/// Huffman-coded strings are decoded and appended to `scratch`. Advances `*pos`.
///
/// Errors: [`HpackError::Truncated`], [`HpackError::IntegerOverflow`], the Huffman errors,
/// and [`HpackError::StringTooLong`] when the wire or decoded length exceeds `max_len`.
pub fn read_string(
    input: &[u8],
    pos: &mut usize,
    prefix_bits: u8,
    scratch: &mut Vec<u8>,
    max_len: usize,
) -> Result<Str, HpackError> {
    read_string_cached(input, pos, prefix_bits, scratch, max_len, None)
}

/// [`read_string`] with HPACK's memo of recent Huffman decodings (field values such as
/// `date` or `content-type` repeat section after section when they are not indexed).
pub(crate) fn read_string_cached(
    input: &[u8],
    pos: &mut usize,
    prefix_bits: u8,
    scratch: &mut Vec<u8>,
    max_len: usize,
    cache: Option<&mut HuffmanCache>,
) -> Result<Str, HpackError> {
    let rest = input.get(*pos..).unwrap_or_default();
    let first = *rest.first().ok_or(HpackError::Truncated)?;
    let huff = first & (1u8 << prefix_bits) != 0;
    let (len, n) = integer::decode(rest, prefix_bits)?;
    if len > max_len {
        return Err(HpackError::StringTooLong { len, max: max_len });
    }
    let start = *pos + n;
    let end = start.checked_add(len).ok_or(HpackError::Truncated)?;
    let raw = input.get(start..end).ok_or(HpackError::Truncated)?;
    *pos = end;
    if !huff {
        return Ok(Str::Raw(start, end));
    }
    let s = scratch.len();
    match cache {
        Some(c) => c.decode(raw, scratch)?,
        None => huffman::decode(raw, scratch)?,
    }
    if scratch.len() - s > max_len {
        return Err(HpackError::StringTooLong {
            len: scratch.len() - s,
            max: max_len,
        });
    }
    Ok(Str::Scratch(s, scratch.len()))
}

/// Reads a prefix integer at `input[*pos..]` and advances `*pos`.
#[inline]
pub fn read_int(input: &[u8], pos: &mut usize, prefix_bits: u8) -> Result<usize, HpackError> {
    let (v, n) = integer::decode(input.get(*pos..).unwrap_or_default(), prefix_bits)?;
    *pos += n;
    Ok(v)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn strings_round_trip_at_every_prefix() {
        for bits in [3u8, 5, 7] {
            for v in [
                &b""[..],
                b"a",
                b"www.example.com",
                &[0xffu8; 40],
                b"custom-key",
            ] {
                let mut out = vec![0xaa];
                write_string(v, bits, 0, &mut out);
                assert_eq!(out.len() - 1, string_len(v, bits));
                let (mut pos, mut scratch) = (1, Vec::new());
                let s = read_string(&out, &mut pos, bits, &mut scratch, 1024).unwrap();
                assert_eq!(pos, out.len());
                assert_eq!(s.slice(&out, &scratch), v);
            }
        }
    }

    #[test]
    fn string_errors() {
        let mut s = Vec::new();
        // Length 5, 2 octets present.
        assert_eq!(
            read_string(&[0x05, b'a', b'b'], &mut 0, 7, &mut s, 9),
            Err(HpackError::Truncated)
        );
        assert_eq!(
            read_string(&[0x05, 1, 2, 3, 4, 5], &mut 0, 7, &mut s, 4),
            Err(HpackError::StringTooLong { len: 5, max: 4 })
        );
        // Huffman flag, one octet of zero bits: padding not EOS-prefix.
        assert!(read_string(&[0x81, 0x00], &mut 0, 7, &mut s, 9).is_err());
        assert_eq!(
            read_string(&[], &mut 0, 7, &mut s, 9),
            Err(HpackError::Truncated)
        );
    }
}
