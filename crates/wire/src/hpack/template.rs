//! Request template encoder for the load generator.
//!
//! A load generator sends the same request headers over and over on a connection; only
//! `:path` may rotate through a list of URIs. [`RequestTemplate`] owns the connection's
//! [`Encoder`] (one HPACK context per connection and direction) and exploits that:
//!
//! * At the start of a *regime* (the first block, or the first block after the peer's
//!   SETTINGS_HEADER_TABLE_SIZE changed) the dynamic table is empty and its capacity `C`
//!   is known. The template plans, once, which fields go into the table: fixed fields in
//!   order, then the paths, as long as their sizes (name + value + 32) add up to at most
//!   `C`. Since nothing else is inserted, **no entry is ever evicted**, so every planned
//!   entry's index is known exactly at all times.
//! * Fields with a full static-table match (`:method: GET`, `:scheme: https`, `:path: /`,
//!   `accept-encoding: gzip, deflate`…) are always one indexed octet.
//! * A planned fixed field is sent once as "literal with incremental indexing" in the first
//!   block of the regime, then as an indexed reference.
//! * A planned `:path` is sent as "literal with incremental indexing" the first time that
//!   path is used, then as an indexed reference. Paths that do not fit (many URIs, small
//!   table) are sent as "literal without indexing" with the static name `:path` (index 4);
//!   their bytes are precomputed (Huffman coded when shorter).
//! * Sensitive fields (same rule as [`Encoder`]: `authorization`, `proxy-authorization`,
//!   short `cookie`) are precomputed "literal never indexed" bytes.
//!
//! In steady state a block is `prefix ++ path ++ suffix`, where `prefix` and `suffix` are
//! cached byte strings (the encodings of the fixed fields before and after `:path`) and
//! `path` is a 1-2 octet index or a cached literal: three `memcpy`s and no table work.
//! Inserting a new path shifts the indices, so the cache is rebuilt after such a block
//! (at most once per planned path per regime).
//!
//! When the peer changes SETTINGS_HEADER_TABLE_SIZE ([`RequestTemplate::set_peer_table_size`]),
//! or when the encoder was used directly through [`RequestTemplate::encoder_mut`], the next
//! block starts a new regime: it begins with a dynamic table size update to 0 (which
//! empties the peer's table and satisfies the "smallest size in the interval" rule of RFC
//! 7541 §4.2) followed by an update to the new size (if not 0), the cache is dropped and
//! the plan is redone for the new capacity (with capacity 0 everything is a literal or a
//! static index).

use super::encoder::{is_sensitive, write_literal, Encoder};
use super::integer;
use super::table::{static_lookup, NameSrc, StaticMatch, ENTRY_OVERHEAD, STATIC_LEN};
use super::TemplateError;

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum SlotState {
    /// Full static match: indexed field with this index.
    Static(usize),
    /// Planned for the dynamic table, not sent yet in this regime.
    Pending,
    /// In the dynamic table, inserted as our `seq`-th entry of the regime.
    Inserted(usize),
    /// Sent as the precomputed literal (without indexing / never indexed).
    Literal,
}

#[derive(Debug, Clone)]
struct Slot {
    name: Vec<u8>,
    value: Vec<u8>,
    sensitive: bool,
    static_full: Option<usize>,
    static_name: usize,
    state: SlotState,
    /// Precomputed representation for `Pending` (incremental indexing) or `Literal`.
    literal: Vec<u8>,
}

impl Slot {
    fn new(name: &[u8], value: &[u8]) -> Slot {
        let sensitive = is_sensitive(name, value);
        let (static_full, static_name) = match static_lookup(name, value) {
            StaticMatch::Full(i) => (Some(i), i),
            StaticMatch::Name(i) => (None, i),
            StaticMatch::None => (None, 0),
        };
        Slot {
            name: name.to_vec(),
            value: value.to_vec(),
            sensitive,
            static_full,
            static_name,
            state: SlotState::Literal,
            literal: Vec::new(),
        }
    }

    fn entry_size(&self) -> usize {
        self.name.len() + self.value.len() + ENTRY_OVERHEAD
    }
}

/// Per-connection request header encoder for the load generator (see the module docs).
#[derive(Debug, Clone)]
pub struct RequestTemplate {
    encoder: Encoder,
    /// Fixed fields in order, then one slot per path.
    slots: Vec<Slot>,
    n_fixed: usize,
    /// Number of fixed fields sent before `:path`.
    path_pos: usize,
    /// Σ(name + value) over the fixed fields.
    fixed_uncompressed: usize,
    /// Entries inserted in the current regime.
    inserted: usize,
    /// Table generation after our last block; `None` before the first block.
    expected_generation: Option<u64>,
    prefix: Vec<u8>,
    suffix: Vec<u8>,
    cache_valid: bool,
}

impl RequestTemplate {
    /// Builds the template.
    ///
    /// * `fields`: the fixed request fields, in sending order, **without** `:path`, e.g.
    ///   `:method`, `:scheme`, `:authority`, then the regular fields (`-H` headers, in
    ///   lowercase as HTTP/2 requires). `:path` is sent right after the leading
    ///   pseudo-header fields.
    /// * `paths`: one or more `:path` values; [`RequestTemplate::encode_next`] picks
    ///   `paths[path_index % paths.len()]`.
    /// * `peer_table_size`: the peer's SETTINGS_HEADER_TABLE_SIZE as currently known
    ///   (4096, the protocol default, for a new connection).
    pub fn new<'a, F, P>(fields: F, paths: P, peer_table_size: usize) -> Result<Self, TemplateError>
    where
        F: IntoIterator<Item = (&'a [u8], &'a [u8])>,
        P: IntoIterator<Item = &'a [u8]>,
    {
        let mut slots = Vec::new();
        let mut path_pos = 0;
        let mut leading_pseudo = true;
        let mut fixed_uncompressed = 0usize;
        for (name, value) in fields {
            if name == b":path" {
                return Err(TemplateError::PathInFields);
            }
            if leading_pseudo && name.first() == Some(&b':') {
                path_pos += 1;
            } else {
                leading_pseudo = false;
            }
            fixed_uncompressed += name.len() + value.len();
            slots.push(Slot::new(name, value));
        }
        let n_fixed = slots.len();
        for path in paths {
            slots.push(Slot::new(b":path", path));
        }
        if slots.len() == n_fixed {
            return Err(TemplateError::NoPaths);
        }
        Ok(RequestTemplate {
            encoder: Encoder::new(peer_table_size),
            slots,
            n_fixed,
            path_pos,
            fixed_uncompressed,
            inserted: 0,
            expected_generation: None,
            prefix: Vec::new(),
            suffix: Vec::new(),
            cache_valid: false,
        })
    }

    /// Number of `:path` values.
    pub fn path_count(&self) -> usize {
        self.slots.len() - self.n_fixed
    }

    /// Call when the peer's SETTINGS_HEADER_TABLE_SIZE changes (any value, including 0).
    /// The next block starts with the required dynamic table size update(s) and the
    /// template re-plans for the new size.
    pub fn set_peer_table_size(&mut self, n: usize) {
        self.encoder.set_max_table_size(n);
    }

    /// Appends the header block of the next request, using
    /// `paths[path_index % path_count]`, to `dst`. Returns the number of octets written.
    pub fn encode_next(&mut self, path_index: usize, dst: &mut Vec<u8>) -> usize {
        let start = dst.len();
        let needs_regime = match self.expected_generation {
            None => true,
            Some(g) => {
                self.encoder.has_pending_size_update() || g != self.encoder.table.generation()
            }
        };
        if needs_regime {
            self.start_regime(dst);
        }
        let p = self.n_fixed + path_index % self.path_count();
        let path_pending = self.slots.get(p).map(|s| s.state) == Some(SlotState::Pending);
        if self.cache_valid && !path_pending {
            dst.extend_from_slice(&self.prefix);
            self.emit(p, dst);
            dst.extend_from_slice(&self.suffix);
        } else {
            for i in 0..self.path_pos {
                self.emit(i, dst);
            }
            self.emit(p, dst);
            for i in self.path_pos..self.n_fixed {
                self.emit(i, dst);
            }
            self.rebuild_cache();
        }
        self.expected_generation = Some(self.encoder.table.generation());
        dst.len() - start
    }

    /// Σ(name + value) over the request's fields: the "uncompressed header size" that
    /// h2load compares with the encoded size for its "space savings" figure.
    pub fn uncompressed_len(&self, path_index: usize) -> usize {
        self.fixed_uncompressed + b":path".len() + self.path(path_index).len()
    }

    /// Σ(name + value + 32) over the request's fields: its size as counted against the
    /// peer's SETTINGS_MAX_HEADER_LIST_SIZE (RFC 9113 §6.5.2).
    pub fn header_list_size(&self, path_index: usize) -> usize {
        self.uncompressed_len(path_index) + (self.n_fixed + 1) * ENTRY_OVERHEAD
    }

    /// The `:path` value used for `path_index`.
    pub fn path(&self, path_index: usize) -> &[u8] {
        let p = self.n_fixed + path_index % self.path_count();
        self.slots
            .get(p)
            .map(|s| s.value.as_slice())
            .unwrap_or_default()
    }

    /// The request's header list, in sending order (for HTTP/1.1 or logging).
    pub fn fields(&self, path_index: usize) -> impl Iterator<Item = (&[u8], &[u8])> + '_ {
        let p = self.n_fixed + path_index % self.path_count();
        let order = (0..self.path_pos)
            .chain(std::iter::once(p))
            .chain(self.path_pos..self.n_fixed);
        order
            .filter_map(move |i| self.slots.get(i))
            .map(|s| (s.name.as_slice(), s.value.as_slice()))
    }

    /// The connection's encoder (table size, state).
    pub fn encoder(&self) -> &Encoder {
        &self.encoder
    }

    /// The connection's encoder, to encode other header blocks on the same connection.
    /// Doing so is allowed; the template notices that the table moved and starts a new
    /// regime at its next block.
    pub fn encoder_mut(&mut self) -> &mut Encoder {
        &mut self.encoder
    }

    /// Brings the table to a known empty state of the negotiated size and plans the slots.
    fn start_regime(&mut self, dst: &mut Vec<u8>) {
        if self.encoder.table.is_empty() {
            // Already empty (new connection): only signal a pending size change, if any.
            self.encoder.begin_block(dst);
        } else {
            self.encoder.begin_block_flushed(dst);
        }
        debug_assert!(self.encoder.table.is_empty());
        let mut budget = self.encoder.table.max_size();
        for slot in &mut self.slots {
            slot.literal.clear();
            slot.state = if let (Some(i), false) = (slot.static_full, slot.sensitive) {
                SlotState::Static(i)
            } else if slot.sensitive {
                // RFC 7541 §6.2.3: literal never indexed.
                write_literal(
                    0x10,
                    4,
                    slot.static_name,
                    &slot.name,
                    &slot.value,
                    &mut slot.literal,
                );
                SlotState::Literal
            } else if slot.entry_size() <= budget {
                budget -= slot.entry_size();
                // RFC 7541 §6.2.1: literal with incremental indexing.
                write_literal(
                    0x40,
                    6,
                    slot.static_name,
                    &slot.name,
                    &slot.value,
                    &mut slot.literal,
                );
                SlotState::Pending
            } else {
                // RFC 7541 §6.2.2: literal without indexing.
                write_literal(
                    0x00,
                    4,
                    slot.static_name,
                    &slot.name,
                    &slot.value,
                    &mut slot.literal,
                );
                SlotState::Literal
            };
        }
        self.inserted = 0;
        self.cache_valid = false;
    }

    /// Appends slot `i`'s representation, inserting it in the table if it is pending.
    fn emit(&mut self, i: usize, dst: &mut Vec<u8>) {
        let Some(slot) = self.slots.get_mut(i) else {
            return;
        };
        let was_pending = slot.state == SlotState::Pending;
        emit_slot(slot, &mut self.encoder, &mut self.inserted, dst);
        if was_pending {
            // A fresh insertion shifts every dynamic index: the cached bytes are stale.
            self.cache_valid = false;
        }
    }

    fn rebuild_cache(&mut self) {
        let (n_fixed, path_pos) = (self.n_fixed, self.path_pos);
        let RequestTemplate {
            slots,
            encoder,
            inserted,
            prefix,
            suffix,
            cache_valid,
            ..
        } = self;
        prefix.clear();
        suffix.clear();
        let fixed = slots.get_mut(..n_fixed).unwrap_or_default();
        if fixed.iter().any(|s| s.state == SlotState::Pending) {
            *cache_valid = false;
            return;
        }
        // No slot is pending, so emitting writes indices only and leaves the table alone.
        for (i, slot) in fixed.iter_mut().enumerate() {
            let out = if i < path_pos {
                &mut *prefix
            } else {
                &mut *suffix
            };
            emit_slot(slot, encoder, inserted, out);
        }
        *cache_valid = true;
    }
}

/// Appends one slot's representation; a pending slot is inserted into the table.
fn emit_slot(slot: &mut Slot, encoder: &mut Encoder, inserted: &mut usize, dst: &mut Vec<u8>) {
    match slot.state {
        // RFC 7541 §6.1: indexed header field.
        SlotState::Static(index) => integer::encode(index, 7, 0x80, dst),
        SlotState::Inserted(seq) => {
            // The newest entry is index 62; nothing is ever evicted within a regime.
            let index = STATIC_LEN + (*inserted - seq);
            integer::encode(index, 7, 0x80, dst);
        }
        SlotState::Pending => {
            dst.extend_from_slice(&slot.literal);
            encoder
                .table
                .insert(NameSrc::Bytes(&slot.name), &slot.value);
            slot.state = SlotState::Inserted(*inserted);
            *inserted += 1;
        }
        SlotState::Literal => dst.extend_from_slice(&slot.literal),
    }
}
