//! The QPACK decoder (RFC 9204 §2.2, §4.5): field sections, the encoder stream it reads,
//! the decoder stream it writes, and blocked streams.

use super::error::{QpackError, Source};
use super::instructions::{DecoderInstruction, EncoderInstruction};
use super::prim::{read_int, read_string_cached, Str};
use super::table::{static_entry, DynamicTable, InsertName};
use crate::hpack::HuffmanCache;
use crate::hpack::{Field, HpackError};

/// Default limit on a decoded field section (name + value + 32 per field).
pub const DEFAULT_MAX_FIELD_SECTION_SIZE: usize = 64 * 1024;

/// Default limit on one string literal, in octets.
pub const DEFAULT_MAX_STRING_LEN: usize = 64 * 1024;

/// What [`Decoder::decode_section`] did with a field section.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Decoded {
    /// Every field was delivered.
    Done,
    /// The section references inserts that have not arrived yet (RFC 9204 §2.1.2): the
    /// decoder kept a copy; it is released by [`Decoder::next_unblocked`] once the encoder
    /// stream has delivered them.
    Blocked,
}

#[derive(Debug, Clone)]
struct BlockedSection {
    stream_id: u64,
    /// Required Insert Count and Base as decoded when the section arrived (the encoded
    /// count is relative to the insert count at that time, RFC 9204 §4.5.1.1).
    required: u64,
    base: u64,
    /// Where the field lines start in `bytes`.
    lines: usize,
    bytes: Vec<u8>,
}

/// QPACK decoding context: one per connection (RFC 9204 §2.2).
///
/// Steady-state decoding of a section that is not blocked allocates nothing: fields borrow
/// from the static table, the dynamic table or the input, Huffman strings are decoded into
/// a reused scratch buffer. A blocked section is copied once.
#[derive(Debug, Clone)]
pub struct Decoder {
    table: DynamicTable,
    max_capacity: usize,
    max_blocked: usize,
    max_field_section_size: usize,
    max_string_len: usize,
    /// Unparsed tail of the encoder stream (an incomplete instruction).
    pending: Vec<u8>,
    scratch: Vec<u8>,
    /// Recent Huffman decodings (HPACK's memo).
    huffman: HuffmanCache,
    blocked: Vec<BlockedSection>,
    /// Decoder-stream instructions not yet taken by the caller.
    out: Vec<u8>,
    /// Inserts the encoder knows we received (acknowledged or incremented).
    known_received: u64,
    /// The connection's last field section and what it decoded to (`h3::memo`).
    pub(crate) memo: crate::h3::memo::SectionMemo,
}

impl Decoder {
    /// A decoder advertising `max_table_capacity` (our SETTINGS_QPACK_MAX_TABLE_CAPACITY)
    /// and `max_blocked_streams` (our SETTINGS_QPACK_BLOCKED_STREAMS).
    pub fn new(max_table_capacity: usize, max_blocked_streams: usize) -> Self {
        Decoder {
            table: DynamicTable::new(false),
            max_capacity: max_table_capacity,
            max_blocked: max_blocked_streams,
            max_field_section_size: DEFAULT_MAX_FIELD_SECTION_SIZE,
            max_string_len: DEFAULT_MAX_STRING_LEN,
            pending: Vec::new(),
            scratch: Vec::new(),
            huffman: HuffmanCache::default(),
            blocked: Vec::new(),
            out: Vec::new(),
            known_received: 0,
            memo: Default::default(),
        }
    }

    /// Limits a decoded field section (our SETTINGS_MAX_FIELD_SECTION_SIZE, RFC 9114
    /// §4.2.2). Past it, decoding stops with [`QpackError::HeaderListTooLarge`]: a stream
    /// error only, the table is not touched by field sections. This bounds the work a
    /// "QPACK bomb" (many 1-octet references to a large entry) can cause per section.
    pub fn set_max_field_section_size(&mut self, n: usize) {
        self.max_field_section_size = n;
        self.memo.forget();
    }

    /// Limits every string literal (field sections and encoder stream).
    pub fn set_max_string_len(&mut self, n: usize) {
        self.max_string_len = n;
        self.memo.forget();
    }

    /// Sets the dynamic table capacity as if the encoder had sent Set Dynamic Table
    /// Capacity (at most our maximum). Only for interop with pre-RFC drafts (the qpack-05
    /// offline-interop corpus), where the table started at SETTINGS_QPACK_MAX_TABLE_CAPACITY;
    /// RFC 9204 §3.2.3: "The initial capacity of the dynamic table is zero."
    pub fn assume_capacity(&mut self, capacity: usize) {
        self.table.set_capacity(capacity.min(self.max_capacity));
    }

    /// The table's state a remembered section depends on (`h3::memo`): its insert count
    /// and capacity.
    pub(crate) fn memo_state(&self) -> (u64, usize) {
        (self.table.insert_count(), self.table.capacity())
    }

    /// The Required Insert Count `section` declares (0 when its prefix does not parse; such
    /// a section is never remembered, its decoding failed).
    pub(crate) fn required_of(&self, section: &[u8]) -> u64 {
        self.prefix(section).map_or(0, |(required, _, _)| required)
    }

    /// A remembered section with Required Insert Count `required` (above 0) was replayed on
    /// `stream_id` instead of decoded: what decoding it would have queued (RFC 9204 §4.4.1).
    pub(crate) fn ack_replayed(&mut self, stream_id: u64, required: u64) {
        DecoderInstruction::SectionAck { stream_id }.write(&mut self.out);
        self.known_received = self.known_received.max(required);
    }

    /// The dynamic table (read-only).
    pub fn table(&self) -> &DynamicTable {
        &self.table
    }

    /// Number of streams with a blocked field section.
    pub fn blocked_streams(&self) -> usize {
        self.blocked.len()
    }

    /// Feeds encoder-stream bytes (any split). Complete instructions are applied; an
    /// incomplete tail is kept for the next call. Errors are connection errors of type
    /// QPACK_ENCODER_STREAM_ERROR.
    pub fn feed_encoder_stream(&mut self, bytes: &[u8]) -> Result<(), QpackError> {
        self.pending.extend_from_slice(bytes);
        let mut pending = std::mem::take(&mut self.pending);
        let mut pos = 0;
        let r = loop {
            self.scratch.clear();
            let rest = pending.get(pos..).unwrap_or_default();
            match EncoderInstruction::parse(rest, &mut self.scratch, self.max_string_len) {
                Ok(Some((ins, n))) => {
                    if let Err(e) = self.apply(ins, rest) {
                        break Err(e);
                    }
                    pos += n;
                }
                Ok(None) => break Ok(()),
                Err(e) => break Err(e),
            }
        };
        pending.drain(..pos);
        self.pending = pending;
        r
    }

    fn apply(&mut self, ins: EncoderInstruction, input: &[u8]) -> Result<(), QpackError> {
        let scratch = std::mem::take(&mut self.scratch);
        let r = self.apply_inner(ins, input, &scratch);
        self.scratch = scratch;
        r
    }

    fn apply_inner(
        &mut self,
        ins: EncoderInstruction,
        input: &[u8],
        scratch: &[u8],
    ) -> Result<(), QpackError> {
        let bad_rel = |index: usize| QpackError::InvalidDynamicReference {
            source: Source::EncoderStream,
            index: index as u64,
        };
        let (name, value, size) = match ins {
            EncoderInstruction::SetCapacity(c) => {
                // RFC 9204 §4.3.1: "The decoder MUST treat a new dynamic table capacity
                // value that exceeds this limit as a connection error of type
                // QPACK_ENCODER_STREAM_ERROR."
                if c > self.max_capacity {
                    return Err(QpackError::CapacityTooLarge {
                        requested: c,
                        max: self.max_capacity,
                    });
                }
                self.table.set_capacity(c);
                return Ok(());
            }
            EncoderInstruction::Duplicate { index } => {
                let (abs, n, v) = self
                    .table
                    .get_relative(index as u64)
                    .ok_or(bad_rel(index))?;
                let size = n.len() + v.len() + 32;
                if !self.table.duplicate(abs) {
                    return Err(QpackError::EntryTooLarge {
                        size,
                        capacity: self.table.capacity(),
                    });
                }
                return Ok(());
            }
            EncoderInstruction::InsertWithNameRef {
                is_static: true,
                index,
                value,
            } => {
                // RFC 9204 §3.1: an invalid static index "received on the encoder stream
                // ... MUST be treated as a connection error of type
                // QPACK_ENCODER_STREAM_ERROR."
                let (n, _) = static_entry(index).ok_or(QpackError::InvalidStaticIndex {
                    source: Source::EncoderStream,
                    index,
                })?;
                let v = value.slice(input, scratch);
                (InsertName::Bytes(n), v, n.len() + v.len() + 32)
            }
            EncoderInstruction::InsertWithNameRef {
                is_static: false,
                index,
                value,
            } => {
                // RFC 9204 §4.3.2: the name is "an existing entry in the dynamic table",
                // by relative index; a missing entry is an encoder-stream error (§2.2.3).
                let (abs, n, _) = self
                    .table
                    .get_relative(index as u64)
                    .ok_or(bad_rel(index))?;
                let v = value.slice(input, scratch);
                (InsertName::Absolute(abs), v, n.len() + v.len() + 32)
            }
            EncoderInstruction::InsertWithLiteralName { name, value } => {
                let n = name.slice(input, scratch);
                let v = value.slice(input, scratch);
                (InsertName::Bytes(n), v, n.len() + v.len() + 32)
            }
        };
        if !self.table.insert(name, value) {
            // RFC 9204 §3.2.2: "It is an error if the encoder attempts to add an entry that
            // is larger than the dynamic table capacity; the decoder MUST treat this as a
            // connection error of type QPACK_ENCODER_STREAM_ERROR."
            return Err(QpackError::EntryTooLarge {
                size,
                capacity: self.table.capacity(),
            });
        }
        Ok(())
    }

    /// Decodes the field section of a HEADERS (or PUSH_PROMISE) frame on `stream_id`,
    /// calling `on_field` for each field line in order, or holds it if it is blocked.
    ///
    /// A decoded section with a non-zero Required Insert Count queues a Section
    /// Acknowledgment (RFC 9204 §4.4.1) for [`Decoder::take_decoder_stream`].
    pub fn decode_section<F>(
        &mut self,
        stream_id: u64,
        section: &[u8],
        on_field: F,
    ) -> Result<Decoded, QpackError>
    where
        F: FnMut(Field<'_>),
    {
        let (required, base, pos) = self.prefix(section)?;
        if required > self.table.insert_count() {
            if self.blocked.iter().any(|b| b.stream_id == stream_id) {
                return Err(QpackError::AlreadyBlocked { stream_id });
            }
            // RFC 9204 §2.1.2: "If a decoder encounters more blocked streams than it
            // promised to support, it MUST treat this as a connection error of type
            // QPACK_DECOMPRESSION_FAILED."
            if self.blocked.len() >= self.max_blocked {
                return Err(QpackError::TooManyBlockedStreams {
                    max: self.max_blocked,
                });
            }
            self.blocked.push(BlockedSection {
                stream_id,
                required,
                base,
                lines: pos,
                bytes: section.to_vec(),
            });
            return Ok(Decoded::Blocked);
        }
        self.decode_lines(stream_id, section, pos, required, base, on_field)?;
        Ok(Decoded::Done)
    }

    /// A stream whose blocked section can now be decoded (its Required Insert Count has
    /// been reached), oldest first; decode it with [`Decoder::decode_unblocked`].
    pub fn next_unblocked(&self) -> Option<u64> {
        let inserts = self.table.insert_count();
        self.blocked
            .iter()
            .find(|b| b.required <= inserts)
            .map(|b| b.stream_id)
    }

    /// Decodes the held section of `stream_id` if it is no longer blocked. Returns
    /// [`Decoded::Blocked`] if it still is (or if the stream has none).
    pub fn decode_unblocked<F>(
        &mut self,
        stream_id: u64,
        on_field: F,
    ) -> Result<Decoded, QpackError>
    where
        F: FnMut(Field<'_>),
    {
        let inserts = self.table.insert_count();
        let Some(i) = self
            .blocked
            .iter()
            .position(|b| b.stream_id == stream_id && b.required <= inserts)
        else {
            return Ok(Decoded::Blocked);
        };
        let b = self.blocked.remove(i);
        self.decode_lines(stream_id, &b.bytes, b.lines, b.required, b.base, on_field)?;
        Ok(Decoded::Done)
    }

    /// The stream was reset or its reading abandoned: drops its blocked section and queues
    /// a Stream Cancellation (RFC 9204 §4.4.2) unless our table capacity is 0 ("A decoder
    /// with a maximum dynamic table capacity equal to zero MAY omit sending Stream
    /// Cancellations").
    pub fn cancel_stream(&mut self, stream_id: u64) {
        self.blocked.retain(|b| b.stream_id != stream_id);
        if self.max_capacity > 0 {
            DecoderInstruction::StreamCancel { stream_id }.write(&mut self.out);
        }
    }

    /// Appends the pending decoder-stream instructions to `dst`: Section Acknowledgments
    /// and Stream Cancellations in order, then an Insert Count Increment for inserts the
    /// encoder does not yet know we received (RFC 9204 §4.4.3). Returns the octets added.
    pub fn take_decoder_stream(&mut self, dst: &mut Vec<u8>) -> usize {
        let before = dst.len();
        dst.append(&mut self.out);
        let inserts = self.table.insert_count();
        if inserts > self.known_received {
            DecoderInstruction::InsertCountIncrement(inserts - self.known_received).write(dst);
            self.known_received = inserts;
        }
        dst.len() - before
    }

    /// Parses the field section prefix (RFC 9204 §4.5.1): (Required Insert Count, Base,
    /// octets used).
    fn prefix(&self, section: &[u8]) -> Result<(u64, u64, usize), QpackError> {
        let err = QpackError::primitive(Source::FieldSection);
        let mut pos = 0;
        let encoded = read_int(section, &mut pos, 8).map_err(&err)?;
        let required = self.required_insert_count(encoded)?;
        let sign = section.get(pos).ok_or(err(HpackError::Truncated))? & 0x80 != 0;
        let delta = read_int(section, &mut pos, 7).map_err(&err)? as u64;
        // RFC 9204 §4.5.1.2: "If S is 0, the Base is equal to the Required Insert Count
        // plus the value of Delta Base. If S is 1, the Base is equal to the Required Insert
        // Count minus the value of Delta Base minus 1."
        let base = if sign {
            required
                .checked_sub(delta + 1)
                .ok_or(QpackError::NegativeBase)?
        } else {
            required + delta
        };
        Ok((required, base, pos))
    }

    /// RFC 9204 §4.5.1.1, the decoding algorithm, step by step.
    fn required_insert_count(&self, encoded: usize) -> Result<u64, QpackError> {
        if encoded == 0 {
            return Ok(0);
        }
        let bad = QpackError::InvalidRequiredInsertCount { encoded };
        let encoded = encoded as u64;
        let max_entries = (self.max_capacity / 32) as u64;
        let full_range = 2 * max_entries;
        if encoded > full_range {
            return Err(bad);
        }
        let max_value = self.table.insert_count() + max_entries;
        let max_wrapped = (max_value / full_range) * full_range;
        let mut required = max_wrapped + encoded - 1;
        if required > max_value {
            if required <= full_range {
                return Err(bad);
            }
            required -= full_range;
        }
        if required == 0 {
            return Err(bad);
        }
        Ok(required)
    }

    fn decode_lines<F>(
        &mut self,
        stream_id: u64,
        section: &[u8],
        mut pos: usize,
        required: u64,
        base: u64,
        mut on_field: F,
    ) -> Result<(), QpackError>
    where
        F: FnMut(Field<'_>),
    {
        let Decoder {
            table,
            max_field_section_size,
            max_string_len,
            scratch,
            out,
            known_received,
            huffman,
            ..
        } = self;
        let err = QpackError::primitive(Source::FieldSection);
        let max_str = *max_string_len;
        let mut size = 0usize;
        let mut largest: u64 = 0; // largest absolute index referenced, plus one
        let table: &DynamicTable = table;
        while let Some(&first) = section.get(pos) {
            scratch.clear();
            let (name, value, never): (NameRef<'_>, Str, bool);
            if first & 0x80 != 0 {
                // §4.5.2 Indexed Field Line: 1 T index(6).
                let index = read_int(section, &mut pos, 6).map_err(&err)?;
                let (n, v) = if first & 0x40 != 0 {
                    stat(index)?
                } else {
                    dynamic(
                        table,
                        base.checked_sub(index as u64 + 1),
                        required,
                        &mut largest,
                    )?
                };
                size = size.saturating_add(n.len() + v.len() + 32);
                if size > *max_field_section_size {
                    break;
                }
                on_field(Field {
                    name: n,
                    value: v,
                    sensitive: false,
                });
                continue;
            } else if first & 0xf0 == 0x10 {
                // §4.5.3 Indexed Field Line with Post-Base Index: 0001 index(4).
                let index = read_int(section, &mut pos, 4).map_err(&err)?;
                let (n, v) = dynamic(
                    table,
                    base.checked_add(index as u64),
                    required,
                    &mut largest,
                )?;
                size = size.saturating_add(n.len() + v.len() + 32);
                if size > *max_field_section_size {
                    break;
                }
                on_field(Field {
                    name: n,
                    value: v,
                    sensitive: false,
                });
                continue;
            } else if first & 0xc0 == 0x40 {
                // §4.5.4 Literal Field Line with Name Reference: 01 N T index(4).
                never = first & 0x20 != 0;
                let index = read_int(section, &mut pos, 4).map_err(&err)?;
                name = if first & 0x10 != 0 {
                    NameRef::Table(stat(index)?.0)
                } else {
                    NameRef::Table(
                        dynamic(
                            table,
                            base.checked_sub(index as u64 + 1),
                            required,
                            &mut largest,
                        )?
                        .0,
                    )
                };
                value = read_string_cached(section, &mut pos, 7, scratch, max_str, Some(huffman))
                    .map_err(&err)?;
            } else if first & 0xe0 == 0x20 {
                // §4.5.6 Literal Field Line with Literal Name: 001 N H len(3).
                never = first & 0x10 != 0;
                let n = read_string_cached(section, &mut pos, 3, scratch, max_str, Some(huffman))
                    .map_err(&err)?;
                name = NameRef::Str(n);
                value = read_string_cached(section, &mut pos, 7, scratch, max_str, Some(huffman))
                    .map_err(&err)?;
            } else {
                // §4.5.5 Literal Field Line with Post-Base Name Reference: 0000 N index(3).
                never = first & 0x08 != 0;
                let index = read_int(section, &mut pos, 3).map_err(&err)?;
                name = NameRef::Table(
                    dynamic(
                        table,
                        base.checked_add(index as u64),
                        required,
                        &mut largest,
                    )?
                    .0,
                );
                value = read_string_cached(section, &mut pos, 7, scratch, max_str, Some(huffman))
                    .map_err(&err)?;
            }
            let n = match name {
                NameRef::Table(n) => n,
                NameRef::Str(s) => s.slice(section, scratch),
            };
            let v = value.slice(section, scratch);
            size = size.saturating_add(n.len() + v.len() + 32);
            if size > *max_field_section_size {
                break;
            }
            on_field(Field {
                name: n,
                value: v,
                sensitive: never,
            });
        }
        let over = size > *max_field_section_size;
        if !over && largest != required {
            // RFC 9204 §4.5.1.1: the Required Insert Count is the largest absolute index
            // referenced plus one (0 when none); a section claiming more is rejected.
            return Err(QpackError::RequiredInsertCountTooLarge {
                declared: required,
                used: largest,
            });
        }
        if required > 0 {
            // RFC 9204 §4.4.1: "After processing an encoded field section whose declared
            // Required Insert Count is not zero, the decoder emits a Section Acknowledgment
            // instruction."
            DecoderInstruction::SectionAck { stream_id }.write(out);
            *known_received = (*known_received).max(required);
        }
        if over {
            return Err(QpackError::HeaderListTooLarge {
                max: *max_field_section_size,
            });
        }
        Ok(())
    }
}

#[derive(Clone, Copy)]
enum NameRef<'a> {
    Table(&'a [u8]),
    Str(Str),
}

/// Resolves a dynamic reference of a field line. RFC 9204 §2.2.3: "If the decoder
/// encounters a reference in a field line representation to a dynamic table entry that has
/// already been evicted or that has an absolute index greater than or equal to the declared
/// Required Insert Count (Section 4.5.1), it MUST treat this as a connection error of type
/// QPACK_DECOMPRESSION_FAILED."
fn dynamic<'t>(
    table: &'t DynamicTable,
    abs: Option<u64>,
    required: u64,
    largest: &mut u64,
) -> Result<(&'t [u8], &'t [u8]), QpackError> {
    let bad = QpackError::InvalidDynamicReference {
        source: Source::FieldSection,
        index: abs.unwrap_or(u64::MAX),
    };
    let abs = abs.ok_or(bad)?;
    if abs >= required {
        return Err(bad);
    }
    let e = table.get_absolute(abs).ok_or(bad)?;
    *largest = (*largest).max(abs + 1);
    Ok(e)
}

/// Resolves a static reference. RFC 9204 §3.1: "When the decoder encounters an invalid
/// static table index in a field line format, it MUST treat this as a connection error of
/// type QPACK_DECOMPRESSION_FAILED."
fn stat(index: usize) -> Result<(&'static [u8], &'static [u8]), QpackError> {
    static_entry(index).ok_or(QpackError::InvalidStaticIndex {
        source: Source::FieldSection,
        index,
    })
}
