//! The QPACK encoder (RFC 9204 §2.1, §4.5): field sections, the encoder stream it writes
//! and the decoder stream it reads.
//!
//! Strategy, per field line:
//! 1. a full static match is an indexed static line (one octet for most);
//! 2. a full match in the dynamic table is an indexed dynamic line if the entry is known
//!    to be received, or if this section may block (below the peer's
//!    SETTINGS_QPACK_BLOCKED_STREAMS);
//! 3. otherwise, with the dynamic table on, a field that is not sensitive, not in the
//!    table already (an unacknowledged copy is not duplicated), and whose entry
//!    takes at most 3/4 of the capacity is inserted (with a name reference when there is
//!    one) if that evicts only evictable entries, and referenced if the section may block;
//! 4. what is left is a literal, with a static or usable dynamic name reference when there
//!    is one, "never indexed" (N=1) for sensitive fields (same rule as HPACK's encoder).
//!
//! A full match in the oldest quarter of the table (the entries that inserting another
//! quarter of the capacity would evict: "draining", RFC 9204 §2.1.1.1) is duplicated to the
//! newest end, when that fits and the section may block, and the copy is referenced: the
//! old copy stops gaining references and becomes evictable once its sections are
//! acknowledged. Without it, a hot entry (a response's `server`, referenced by every
//! section in flight) reaching the oldest end would pin the whole table for good, and
//! every later insert (a new `date` each second) would turn into a literal.
//!
//! References to entries inserted while encoding the section use post-base indexing; the
//! Base is the Insert Count when the section starts.

use std::collections::VecDeque;

use super::error::QpackError;
use super::instructions::{
    write_duplicate, write_insert_with_literal_name, write_insert_with_name_ref,
    write_set_capacity, DecoderInstruction,
};
use super::prim::write_string;
use super::table::{entry_size, static_lookup, DynamicTable, InsertName, StaticMatch};
use crate::hpack::integer;

mod blocking;
mod replay;
use blocking::Blocking;
pub use replay::{Replay, SectionRefs};

/// Most sections referencing the dynamic table that may await acknowledgment; past it the
/// encoder stops referencing the table (a peer that never sends Section Acknowledgments
/// cannot make the tracking grow without bound).
pub const MAX_UNACKED_SECTIONS: usize = 1024;

/// Encoder configuration (local choices; the peer's limits come from its SETTINGS).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct EncoderConfig {
    /// Use the dynamic table at all. `false`: static table and literals only, nothing is
    /// ever written on the encoder stream and no section blocks.
    pub use_dynamic_table: bool,
    /// Upper bound on the capacity we use, whatever the peer allows.
    pub max_table_capacity: usize,
}

impl Default for EncoderConfig {
    fn default() -> Self {
        EncoderConfig {
            use_dynamic_table: true,
            max_table_capacity: 4096,
        }
    }
}

#[derive(Debug, Clone, Copy)]
struct Outstanding {
    stream_id: u64,
    required: u64,
    /// Smallest absolute index referenced (pins the entries at and above it).
    min_ref: u64,
}

/// QPACK encoding context: one per connection (RFC 9204 §2.1).
#[derive(Debug, Clone)]
pub struct Encoder {
    config: EncoderConfig,
    table: DynamicTable,
    /// The peer's SETTINGS_QPACK_MAX_TABLE_CAPACITY (for the Required Insert Count
    /// encoding, RFC 9204 §4.5.1.1).
    peer_max_capacity: usize,
    /// The peer's SETTINGS_QPACK_BLOCKED_STREAMS.
    peer_max_blocked: usize,
    /// Capacity to announce with Set Dynamic Table Capacity, if not yet sent.
    capacity_to_send: Option<usize>,
    known_received: u64,
    outstanding: VecDeque<Outstanding>,
    /// The outstanding sections that may block, and their streams (RFC 9204 §2.1.2).
    blocking: Blocking,
    /// Unparsed tail of the decoder stream.
    pending: Vec<u8>,
    lines: Vec<u8>,
    /// Bumped by every change that may make an encoded section mean something else or be
    /// encoded differently (capacity announced, peer SETTINGS): [`SectionRefs`] of an older
    /// epoch are never replayed.
    epoch: u64,
    /// What the last [`Encoder::encode`] referenced.
    last: SectionRefs,
    /// Sections encoded by [`Encoder::encode`] and replayed by [`Encoder::replay`].
    encoded: u64,
    replayed: u64,
}

impl Encoder {
    /// A new encoder. Until [`Encoder::set_peer_settings`] is called the peer's limits are
    /// the defaults (RFC 9204 §5: both SETTINGS default to 0), so the dynamic table is not
    /// used.
    pub fn new(config: EncoderConfig) -> Self {
        Encoder {
            config,
            table: DynamicTable::new(true),
            peer_max_capacity: 0,
            peer_max_blocked: 0,
            capacity_to_send: None,
            known_received: 0,
            outstanding: VecDeque::new(),
            blocking: Blocking::default(),
            pending: Vec::new(),
            lines: Vec::new(),
            epoch: 0,
            last: SectionRefs::default(),
            encoded: 0,
            replayed: 0,
        }
    }

    /// Applies the peer's SETTINGS_QPACK_MAX_TABLE_CAPACITY and
    /// SETTINGS_QPACK_BLOCKED_STREAMS (call once, when its SETTINGS arrive). The capacity
    /// used is the smaller of the peer's and ours; it is announced on the encoder stream by
    /// the next [`Encoder::encode`].
    pub fn set_peer_settings(&mut self, max_table_capacity: usize, blocked_streams: usize) {
        self.peer_max_capacity = max_table_capacity;
        self.peer_max_blocked = blocked_streams;
        // The Required Insert Count's encoding depends on the peer's capacity, and what a
        // section may reference on both: nothing encoded before is replayed.
        self.epoch += 1;
        let cap = if self.config.use_dynamic_table {
            max_table_capacity.min(self.config.max_table_capacity)
        } else {
            0
        };
        if cap != self.table.capacity() && self.table.is_empty() {
            self.capacity_to_send = Some(cap);
        }
    }

    /// The dynamic table as the encoder sees it.
    pub fn table(&self) -> &DynamicTable {
        &self.table
    }

    /// Inserts the decoder has acknowledged (RFC 9204 §2.1.4 Known Received Count).
    pub fn known_received_count(&self) -> u64 {
        self.known_received
    }

    /// Streams with an unacknowledged section that references entries the decoder may not
    /// have received (RFC 9204 §2.1.2).
    pub fn blocking_streams(&self) -> usize {
        self.blocking.streams()
    }

    /// Whether a new section on `stream_id` may reference entries the decoder may not have
    /// yet. RFC 9204 §2.1.2: "An encoder MUST limit the number of streams that could become
    /// blocked to the value of SETTINGS_QPACK_BLOCKED_STREAMS at all times."
    fn may_block(&self, stream_id: u64) -> bool {
        self.blocking.has(stream_id) || self.blocking.streams() < self.peer_max_blocked
    }

    /// Absolute index below which live entries are draining: those that inserting another
    /// quarter of the capacity would evict.
    fn draining_below(&self) -> u64 {
        let cap = self.table.capacity();
        let mut excess = (self.table.size() + cap / 4).saturating_sub(cap);
        let mut abs = self.table.first_live();
        while excess > 0 {
            match self.table.get_absolute(abs) {
                Some((n, v)) => excess = excess.saturating_sub(entry_size(n, v)),
                None => break,
            }
            abs += 1;
        }
        abs
    }

    /// Duplicates the live entry `abs` to the newest end (RFC 9204 §4.3.4) if that evicts
    /// only evictable entries (none at or above `min_ref`, this section's references):
    /// the copy's absolute index.
    fn duplicate(&mut self, abs: u64, min_ref: u64, encoder_stream: &mut Vec<u8>) -> Option<u64> {
        let (n, v) = self.table.get_absolute(abs)?;
        let size = entry_size(n, v);
        if size * 4 > self.table.capacity() * 3
            || !self
                .table
                .fits_evicting_below(size, self.pinned_from().min(min_ref))
        {
            return None;
        }
        let rel = self.table.insert_count() - 1 - abs;
        if !self.table.duplicate(abs) {
            return None;
        }
        write_duplicate(rel as usize, encoder_stream);
        Some(self.table.insert_count() - 1)
    }

    /// Smallest absolute index that must not be evicted.
    fn pinned_from(&self) -> u64 {
        let refs = self.outstanding.iter().map(|o| o.min_ref).min();
        refs.unwrap_or(u64::MAX).min(self.known_received)
    }

    /// Encodes a field section for `stream_id`: the section (prefix and field lines) is
    /// appended to `section`, encoder-stream instructions to `encoder_stream` (write them
    /// before, or together with, the HEADERS frame).
    pub fn encode<'a, I>(
        &mut self,
        stream_id: u64,
        fields: I,
        section: &mut Vec<u8>,
        encoder_stream: &mut Vec<u8>,
    ) where
        I: IntoIterator<Item = (&'a [u8], &'a [u8])>,
    {
        self.flush_capacity(encoder_stream);
        // A peer that never acknowledges sections would make the tracking grow without
        // bound: past the cap, sections use the static table and literals only.
        let dynamic =
            self.config.use_dynamic_table && self.table.capacity() > 0 && self.can_track();
        let may_block = dynamic && self.may_block(stream_id);
        let draining = if may_block { self.draining_below() } else { 0 };
        let base = self.table.insert_count();
        let mut required = 0u64;
        let mut min_ref = u64::MAX;
        let mut lines = std::mem::take(&mut self.lines);
        lines.clear();
        for (name, value) in fields {
            let sensitive = crate::hpack::is_sensitive(name, value);
            let st = static_lookup(name, value);
            if let StaticMatch::Full(i) = st {
                // §4.5.2 Indexed Field Line, T=1.
                integer::encode(i, 6, 0xc0, &mut lines);
                continue;
            }
            let usable = |abs: u64, kr: u64| abs < kr || may_block;
            let mut found = if dynamic {
                self.table.find(name, value)
            } else {
                None
            };
            if let Some((mut abs, true)) = found {
                if usable(abs, self.known_received) && !sensitive {
                    if abs < draining {
                        // `may_block` holds: the fresh copy may be referenced.
                        abs = self.duplicate(abs, min_ref, encoder_stream).unwrap_or(abs);
                    }
                    write_indexed(abs, base, &mut lines);
                    required = required.max(abs + 1);
                    min_ref = min_ref.min(abs);
                    continue;
                }
            }
            let size = entry_size(name, value);
            // An entry already holding this field is not inserted again (it would be as
            // unacknowledged as the first copy).
            let present = matches!(found, Some((_, true)));
            if dynamic
                && !sensitive
                && !present
                && size * 4 <= self.table.capacity() * 3
                && self
                    .table
                    .fits_evicting_below(size, self.pinned_from().min(min_ref))
            {
                let name_src = match (st, found) {
                    (StaticMatch::Name(i), _) => {
                        write_insert_with_name_ref(true, i, value, encoder_stream);
                        InsertName::Bytes(name)
                    }
                    (_, Some((abs, _))) if abs >= self.table.first_live() => {
                        let rel = self.table.insert_count() - 1 - abs;
                        write_insert_with_name_ref(false, rel as usize, value, encoder_stream);
                        InsertName::Absolute(abs)
                    }
                    _ => {
                        write_insert_with_literal_name(name, value, encoder_stream);
                        InsertName::Bytes(name)
                    }
                };
                let inserted = self.table.insert(name_src, value);
                debug_assert!(inserted);
                let abs = self.table.insert_count() - 1;
                if may_block {
                    write_indexed(abs, base, &mut lines);
                    required = required.max(abs + 1);
                    min_ref = min_ref.min(abs);
                    continue;
                }
                found = Some((abs, true));
            }
            // A literal, with the best name reference available.
            let n = u8::from(sensitive);
            match (st, found) {
                (StaticMatch::Name(i), _) => {
                    // §4.5.4 Literal Field Line with Name Reference: 01 N T=1 index(4).
                    integer::encode(i, 4, 0x50 | (n << 5), &mut lines);
                }
                (_, Some((abs, _))) if usable(abs, self.known_received) => {
                    required = required.max(abs + 1);
                    min_ref = min_ref.min(abs);
                    if abs < base {
                        integer::encode((base - 1 - abs) as usize, 4, 0x40 | (n << 5), &mut lines);
                    } else {
                        // §4.5.5 Literal Field Line with Post-Base Name Reference.
                        integer::encode((abs - base) as usize, 3, n << 3, &mut lines);
                    }
                }
                _ => {
                    // §4.5.6 Literal Field Line with Literal Name: 001 N H len(3).
                    write_string(name, 3, 0x20 | (n << 4), &mut lines);
                }
            }
            write_string(value, 7, 0, &mut lines);
        }
        self.write_prefix(required, base, section);
        section.extend_from_slice(&lines);
        self.lines = lines;
        self.encoded += 1;
        self.last = SectionRefs {
            required,
            min_ref: if required > 0 { min_ref } else { 0 },
            epoch: self.epoch,
        };
        if required > 0 {
            self.track(stream_id, required, min_ref);
        }
    }

    /// `true` while fewer than [`MAX_UNACKED_SECTIONS`] sections await acknowledgment.
    pub(crate) fn can_track(&self) -> bool {
        self.outstanding.len() < MAX_UNACKED_SECTIONS
    }

    /// Sections referencing the dynamic table not yet acknowledged.
    pub fn unacknowledged_sections(&self) -> usize {
        self.outstanding.len()
    }

    /// Records a section referencing the dynamic table (for the template, which writes
    /// its own precomputed sections).
    pub(crate) fn track(&mut self, stream_id: u64, required: u64, min_ref: u64) {
        self.outstanding.push_back(Outstanding {
            stream_id,
            required,
            min_ref,
        });
        self.blocking.add(stream_id, required, self.known_received);
    }

    /// Raises the Known Received Count to `count` (if higher).
    fn set_known_received(&mut self, count: u64) {
        if count > self.known_received {
            self.known_received = count;
            self.blocking.received(count);
        }
    }

    /// The encoder's configuration.
    pub fn config(&self) -> EncoderConfig {
        self.config
    }

    /// Announces a pending capacity change and inserts `name: value` (name as a static
    /// reference when `static_name` is given), for the template. Returns the absolute index
    /// or `None` if the entry does not fit without evicting.
    pub(crate) fn insert_for_template(
        &mut self,
        name: &[u8],
        value: &[u8],
        static_name: Option<usize>,
        encoder_stream: &mut Vec<u8>,
    ) -> Option<u64> {
        self.flush_capacity(encoder_stream);
        if !self
            .table
            .fits_evicting_below(entry_size(name, value), self.table.first_live())
        {
            return None;
        }
        match static_name {
            Some(i) => write_insert_with_name_ref(true, i, value, encoder_stream),
            None => write_insert_with_literal_name(name, value, encoder_stream),
        }
        self.table.insert(InsertName::Bytes(name), value);
        Some(self.table.insert_count() - 1)
    }

    fn flush_capacity(&mut self, encoder_stream: &mut Vec<u8>) {
        if let Some(cap) = self.capacity_to_send.take() {
            // RFC 9204 §4.3.1 Set Dynamic Table Capacity.
            write_set_capacity(cap, encoder_stream);
            self.table.set_capacity(cap);
            self.epoch += 1;
        }
    }

    /// The capacity the encoder uses once announced (0 with the dynamic table off).
    pub fn planned_capacity(&self) -> usize {
        self.capacity_to_send.unwrap_or(self.table.capacity())
    }

    /// RFC 9204 §4.5.1: Required Insert Count (8-bit prefix) and Delta Base with its sign.
    pub(crate) fn write_prefix(&self, required: u64, base: u64, dst: &mut Vec<u8>) {
        if required == 0 {
            dst.extend_from_slice(&[0, 0]);
            return;
        }
        // §4.5.1.1: "EncodedInsertCount = (ReqInsertCount mod (2 * MaxEntries)) + 1".
        let max_entries = (self.peer_max_capacity / 32) as u64;
        let encoded = required % (2 * max_entries) + 1;
        integer::encode(encoded as usize, 8, 0, dst);
        // §4.5.1.2: sign 0 and Base - ReqInsertCount when Base >= ReqInsertCount, else sign
        // 1 and ReqInsertCount - Base - 1.
        if base >= required {
            integer::encode((base - required) as usize, 7, 0, dst);
        } else {
            integer::encode((required - base - 1) as usize, 7, 0x80, dst);
        }
    }

    /// Feeds decoder-stream bytes (any split). Errors are connection errors of type
    /// QPACK_DECODER_STREAM_ERROR.
    pub fn feed_decoder_stream(&mut self, bytes: &[u8]) -> Result<(), QpackError> {
        if self.pending.is_empty() {
            // Common case: whole instructions, parsed in place; only a tail is kept.
            let (used, r) = self.apply_all(bytes);
            if r.is_ok() {
                self.pending
                    .extend_from_slice(bytes.get(used..).unwrap_or_default());
            }
            return r;
        }
        let mut pending = std::mem::take(&mut self.pending);
        pending.extend_from_slice(bytes);
        let (used, r) = self.apply_all(&pending);
        pending.drain(..used);
        self.pending = pending;
        r
    }

    /// Applies the complete instructions at the start of `input`: (octets used, result).
    fn apply_all(&mut self, input: &[u8]) -> (usize, Result<(), QpackError>) {
        let mut pos = 0;
        loop {
            match DecoderInstruction::parse(input.get(pos..).unwrap_or_default()) {
                Ok(Some((ins, n))) => {
                    pos += n;
                    if let Err(e) = self.apply(ins) {
                        return (pos, Err(e));
                    }
                }
                Ok(None) => return (pos, Ok(())),
                Err(e) => return (pos, Err(e)),
            }
        }
    }

    fn apply(&mut self, ins: DecoderInstruction) -> Result<(), QpackError> {
        match ins {
            DecoderInstruction::SectionAck { stream_id } => {
                // Sections of one stream are acknowledged in order; a decoder that reads
                // streams in the order they were answered acknowledges the oldest section.
                let i = if self.outstanding.front().map(|o| o.stream_id) == Some(stream_id) {
                    0
                } else {
                    self.outstanding
                        .iter()
                        .position(|o| o.stream_id == stream_id)
                        .ok_or(QpackError::UnexpectedSectionAck { stream_id })?
                };
                if let Some(o) = self.outstanding.remove(i) {
                    self.blocking
                        .acknowledged(stream_id, o.required, self.known_received);
                    // RFC 9204 §2.1.4: a Section Acknowledgment raises the Known Received
                    // Count to the acknowledged section's Required Insert Count if larger.
                    self.set_known_received(o.required);
                }
            }
            DecoderInstruction::StreamCancel { stream_id } => {
                self.outstanding.retain(|o| o.stream_id != stream_id);
                self.blocking.cancelled(stream_id);
            }
            DecoderInstruction::InsertCountIncrement(n) => {
                if n == 0 {
                    return Err(QpackError::ZeroIncrement);
                }
                let reached = self.known_received.saturating_add(n);
                if reached > self.table.insert_count() {
                    return Err(QpackError::IncrementTooLarge {
                        reached,
                        sent: self.table.insert_count(),
                    });
                }
                self.set_known_received(reached);
            }
        }
        Ok(())
    }
}

/// §4.5.2 Indexed Field Line (T=0, relative to Base) or §4.5.3 with Post-Base Index.
fn write_indexed(abs: u64, base: u64, dst: &mut Vec<u8>) {
    if abs < base {
        integer::encode((base - 1 - abs) as usize, 6, 0x80, dst);
    } else {
        integer::encode((abs - base) as usize, 4, 0x10, dst);
    }
}
