//! Encoder-stream and decoder-stream instructions (RFC 9204 §4.3, §4.4): parsing and
//! encoding.
//!
//! Both streams are byte streams: an instruction may arrive split over several reads, so
//! the parsers return `Ok(None)` for an incomplete instruction (the caller keeps the bytes
//! and retries with more); any other problem is a typed error with the stream's code.

use super::error::{QpackError, Source};
use super::prim::{read_int, read_string, write_string, Str};
use crate::hpack::{integer, HpackError};

/// One encoder-stream instruction (RFC 9204 §4.3). Strings are [`Str`] positions in the
/// parsed input or in the caller's scratch buffer (Huffman-decoded).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum EncoderInstruction {
    /// §4.3.1 Set Dynamic Table Capacity: `001` + capacity (5-bit prefix).
    SetCapacity(usize),
    /// §4.3.2 Insert with Name Reference: `1 T` + index (6-bit prefix), value (7-bit
    /// length prefix). `T=1` is the static table, else a relative index.
    InsertWithNameRef {
        /// The name is a static-table entry (`T` bit), else a dynamic relative index.
        is_static: bool,
        /// Static index or relative index.
        index: usize,
        /// The value.
        value: Str,
    },
    /// §4.3.3 Insert with Literal Name: `01 H` + name length (5-bit prefix), name, value.
    InsertWithLiteralName {
        /// The name.
        name: Str,
        /// The value.
        value: Str,
    },
    /// §4.3.4 Duplicate: `000` + relative index (5-bit prefix).
    Duplicate {
        /// Relative index of the entry to duplicate.
        index: usize,
    },
}

impl EncoderInstruction {
    /// Parses one instruction at the start of `input`: `Ok(Some((instruction, length)))`,
    /// `Ok(None)` if `input` ends inside it. Huffman-coded strings are appended to
    /// `scratch`; strings longer than `max_len` are [`QpackError::StringTooLong`].
    pub fn parse(
        input: &[u8],
        scratch: &mut Vec<u8>,
        max_len: usize,
    ) -> Result<Option<(EncoderInstruction, usize)>, QpackError> {
        match Self::parse_inner(input, scratch, max_len) {
            Ok(r) => Ok(Some(r)),
            Err(HpackError::Truncated) => Ok(None),
            Err(e) => Err(QpackError::primitive(Source::EncoderStream)(e)),
        }
    }

    fn parse_inner(
        input: &[u8],
        scratch: &mut Vec<u8>,
        max_len: usize,
    ) -> Result<(EncoderInstruction, usize), HpackError> {
        let first = *input.first().ok_or(HpackError::Truncated)?;
        let mut pos = 0;
        let ins = if first & 0x80 != 0 {
            let is_static = first & 0x40 != 0;
            let index = read_int(input, &mut pos, 6)?;
            let value = read_string(input, &mut pos, 7, scratch, max_len)?;
            EncoderInstruction::InsertWithNameRef {
                is_static,
                index,
                value,
            }
        } else if first & 0x40 != 0 {
            let name = read_string(input, &mut pos, 5, scratch, max_len)?;
            let value = read_string(input, &mut pos, 7, scratch, max_len)?;
            EncoderInstruction::InsertWithLiteralName { name, value }
        } else if first & 0x20 != 0 {
            EncoderInstruction::SetCapacity(read_int(input, &mut pos, 5)?)
        } else {
            EncoderInstruction::Duplicate {
                index: read_int(input, &mut pos, 5)?,
            }
        };
        Ok((ins, pos))
    }
}

/// Appends Set Dynamic Table Capacity (RFC 9204 §4.3.1).
pub fn write_set_capacity(capacity: usize, dst: &mut Vec<u8>) {
    integer::encode(capacity, 5, 0x20, dst);
}

/// Appends Insert with Name Reference (RFC 9204 §4.3.2): a static index, or a relative
/// dynamic index when `is_static` is false.
pub fn write_insert_with_name_ref(is_static: bool, index: usize, value: &[u8], dst: &mut Vec<u8>) {
    integer::encode(index, 6, if is_static { 0xc0 } else { 0x80 }, dst);
    write_string(value, 7, 0, dst);
}

/// Appends Insert with Literal Name (RFC 9204 §4.3.3).
pub fn write_insert_with_literal_name(name: &[u8], value: &[u8], dst: &mut Vec<u8>) {
    write_string(name, 5, 0x40, dst);
    write_string(value, 7, 0, dst);
}

/// Appends Duplicate (RFC 9204 §4.3.4) of the entry at relative index `index`.
pub fn write_duplicate(index: usize, dst: &mut Vec<u8>) {
    integer::encode(index, 5, 0x00, dst);
}

/// One decoder-stream instruction (RFC 9204 §4.4).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum DecoderInstruction {
    /// §4.4.1 Section Acknowledgment: `1` + stream ID (7-bit prefix).
    SectionAck {
        /// The request or push stream whose field section was decoded.
        stream_id: u64,
    },
    /// §4.4.2 Stream Cancellation: `01` + stream ID (6-bit prefix).
    StreamCancel {
        /// The stream abandoned.
        stream_id: u64,
    },
    /// §4.4.3 Insert Count Increment: `00` + increment (6-bit prefix).
    InsertCountIncrement(u64),
}

impl DecoderInstruction {
    /// Parses one instruction at the start of `input`: `Ok(Some((instruction, length)))`,
    /// `Ok(None)` if `input` ends inside it. Integers above 2^32-1 (the shared prefix-integer
    /// limit) are [`QpackError::Primitive`] with [`HpackError::IntegerOverflow`].
    pub fn parse(input: &[u8]) -> Result<Option<(DecoderInstruction, usize)>, QpackError> {
        let Some(&first) = input.first() else {
            return Ok(None);
        };
        let mut pos = 0;
        let r = if first & 0x80 != 0 {
            read_int(input, &mut pos, 7).map(|s| DecoderInstruction::SectionAck {
                stream_id: s as u64,
            })
        } else if first & 0x40 != 0 {
            read_int(input, &mut pos, 6).map(|s| DecoderInstruction::StreamCancel {
                stream_id: s as u64,
            })
        } else {
            read_int(input, &mut pos, 6).map(|n| DecoderInstruction::InsertCountIncrement(n as u64))
        };
        match r {
            Ok(i) => Ok(Some((i, pos))),
            Err(HpackError::Truncated) => Ok(None),
            Err(error) => Err(QpackError::Primitive {
                source: Source::DecoderStream,
                error,
            }),
        }
    }

    /// Appends the instruction.
    pub fn write(&self, dst: &mut Vec<u8>) {
        let (v, bits, flags) = match *self {
            DecoderInstruction::SectionAck { stream_id } => (stream_id, 7, 0x80),
            DecoderInstruction::StreamCancel { stream_id } => (stream_id, 6, 0x40),
            DecoderInstruction::InsertCountIncrement(n) => (n, 6, 0x00),
        };
        integer::encode(usize::try_from(v).unwrap_or(usize::MAX), bits, flags, dst);
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn parse_all(input: &[u8]) -> Vec<(EncoderInstruction, Vec<u8>, Vec<u8>)> {
        let mut out = Vec::new();
        let mut pos = 0;
        while pos < input.len() {
            let mut scratch = Vec::new();
            let (ins, n) = EncoderInstruction::parse(&input[pos..], &mut scratch, 4096)
                .unwrap()
                .unwrap();
            let rest = &input[pos..];
            let (a, b) = match ins {
                EncoderInstruction::InsertWithNameRef { value, .. } => {
                    (Vec::new(), value.slice(rest, &scratch).to_vec())
                }
                EncoderInstruction::InsertWithLiteralName { name, value } => (
                    name.slice(rest, &scratch).to_vec(),
                    value.slice(rest, &scratch).to_vec(),
                ),
                _ => (Vec::new(), Vec::new()),
            };
            out.push((ins, a, b));
            pos += n;
        }
        out
    }

    #[test]
    fn rfc_b2_encoder_stream() {
        // RFC 9204 Appendix B.2: Set Dynamic Table Capacity 220, Insert With Name Reference
        // (static 0 :authority = www.example.com), Insert With Name Reference (static 1
        // :path = /sample/path).
        let wire = [
            0x3f, 0xbd, 0x01, 0xc0, 0x0f, 0x77, 0x77, 0x77, 0x2e, 0x65, 0x78, 0x61, 0x6d, 0x70,
            0x6c, 0x65, 0x2e, 0x63, 0x6f, 0x6d, 0xc1, 0x0c, 0x2f, 0x73, 0x61, 0x6d, 0x70, 0x6c,
            0x65, 0x2f, 0x70, 0x61, 0x74, 0x68,
        ];
        let got = parse_all(&wire);
        assert_eq!(got.len(), 3);
        assert_eq!(got[0].0, EncoderInstruction::SetCapacity(220));
        assert!(matches!(
            got[1].0,
            EncoderInstruction::InsertWithNameRef {
                is_static: true,
                index: 0,
                ..
            }
        ));
        assert_eq!(got[1].2, b"www.example.com");
        assert_eq!(got[2].2, b"/sample/path");
        let mut again = Vec::new();
        write_set_capacity(220, &mut again);
        assert_eq!(again, [0x3f, 0xbd, 0x01]);
    }

    #[test]
    fn encoder_instructions_round_trip() {
        let mut w = Vec::new();
        write_set_capacity(4096, &mut w);
        write_insert_with_name_ref(true, 98, b"sameorigin-x", &mut w);
        write_insert_with_name_ref(false, 3, b"v", &mut w);
        write_insert_with_literal_name(b"custom-key", b"custom-value", &mut w);
        write_duplicate(70, &mut w);
        let got = parse_all(&w);
        assert_eq!(got[0].0, EncoderInstruction::SetCapacity(4096));
        assert!(matches!(
            got[1].0,
            EncoderInstruction::InsertWithNameRef {
                is_static: true,
                index: 98,
                ..
            }
        ));
        assert_eq!(got[1].2, b"sameorigin-x");
        assert!(matches!(
            got[2].0,
            EncoderInstruction::InsertWithNameRef {
                is_static: false,
                index: 3,
                ..
            }
        ));
        assert_eq!(
            (got[3].1.as_slice(), got[3].2.as_slice()),
            (&b"custom-key"[..], &b"custom-value"[..])
        );
        assert_eq!(got[4].0, EncoderInstruction::Duplicate { index: 70 });
        // Every strict prefix is incomplete, never an error.
        for cut in 0..w.len() {
            let mut pos = 0;
            let mut s = Vec::new();
            while let Some((_, n)) = EncoderInstruction::parse(&w[pos..cut], &mut s, 4096).unwrap()
            {
                pos += n;
            }
        }
    }

    #[test]
    fn decoder_instructions_round_trip() {
        for ins in [
            DecoderInstruction::SectionAck { stream_id: 4 },
            DecoderInstruction::SectionAck { stream_id: 1 << 20 },
            DecoderInstruction::StreamCancel { stream_id: 8 },
            DecoderInstruction::InsertCountIncrement(1),
            DecoderInstruction::InsertCountIncrement(500),
        ] {
            let mut w = Vec::new();
            ins.write(&mut w);
            assert_eq!(DecoderInstruction::parse(&w), Ok(Some((ins, w.len()))));
            assert_eq!(DecoderInstruction::parse(&w[..w.len() - 1]), Ok(None));
        }
        // RFC 9204 B.1: Section Acknowledgment for stream 4 is 0x84.
        assert_eq!(
            DecoderInstruction::parse(&[0x84]),
            Ok(Some((DecoderInstruction::SectionAck { stream_id: 4 }, 1)))
        );
        assert!(DecoderInstruction::parse(&[0xff; 12]).is_err());
    }
}
