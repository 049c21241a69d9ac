//! The last response field block of a connection, remembered with what decoding it
//! gave, so that the next byte-identical block is not decoded and validated again.
//!
//! Servers answer a load generator's requests with the same field block over and over:
//! nghttpd and h2o refer to their dynamic table entries (a few index octets), nginx
//! sends the very same literals with incremental indexing in every response (only
//! `date` changes, once a second). Two kinds of block can be remembered exactly:
//!
//! - A block that refers to the dynamic table but inserts nothing and resizes nothing:
//!   decoding it again under the same [`DecodeContext`] (the table's generation and the
//!   decoder's limits) gives the same fields, the same validation result and the same
//!   facts, and leaves the table as it was.
//! - A block that does not refer to the dynamic table (static indices and literals
//!   only) and does not resize it: its fields do not depend on the table at all, only
//!   on its octets and the decoder's limits. Its insertions are replayed (the entries
//!   are kept with the block), so the table ends exactly as decoding would leave it.
//!
//! Used only when the event sink does not want the fields themselves
//! ([`Events::wants_fields`](crate::h2::Events::wants_fields)), for final and interim
//! responses. The buffers are per connection, filled with the first remembered block and
//! reused (at most [`MEMO_MAX`] octets of block and of entries): nothing is allocated per
//! block.

use crate::h2::fields::BlockFacts;
use crate::hpack::{DecodeContext, DecodeLog, Decoder};

/// Longest block, and most octets of inserted entries, remembered (nginx's response
/// blocks are about 120 octets and insert about 110).
pub(crate) const MEMO_MAX: usize = 512;

/// Under what the remembered block decodes the same.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Key {
    /// This exact context (the block reads the dynamic table, changes nothing).
    Context(DecodeContext),
    /// Any table, these limits (the block never reads the table; its insertions
    /// are replayed).
    Independent { settings_epoch: u64 },
}

/// The remembered block (see the module documentation).
#[derive(Debug, Default)]
pub(crate) struct BlockMemo {
    block: Vec<u8>,
    /// `None`: nothing remembered.
    key: Option<Key>,
    facts: BlockFacts,
    decoded_len: usize,
    /// Names and values of the entries the block inserts, in order, back to back.
    entries: Vec<u8>,
    /// `(name length, value length)` of each inserted entry.
    entry_lens: Vec<(u32, u32)>,
}

impl BlockMemo {
    /// When `block` is the remembered one and `dec` is in a state it decodes the same
    /// under: its facts and decoded length, with its insertions replayed into `dec`.
    #[inline]
    pub(crate) fn replay(&self, block: &[u8], dec: &mut Decoder) -> Option<(BlockFacts, usize)> {
        let key = self.key?;
        let context = dec.context()?;
        let hit = match key {
            Key::Context(c) => c == context,
            Key::Independent { settings_epoch } => settings_epoch == context.settings_epoch(),
        };
        if !hit || self.block != block {
            return None;
        }
        let mut at = 0usize;
        for &(n, v) in &self.entry_lens {
            let (n, v) = (n as usize, v as usize);
            let name = self.entries.get(at..at + n)?;
            let value = self.entries.get(at + n..at + n + v)?;
            at += n + v;
            // Fits: it fitted when the block was decoded (the memo forgets otherwise).
            dec.insert(name, value);
        }
        Some((self.facts, self.decoded_len))
    }

    /// Remembers `block`, which was decoded and validated from `before` (the decoder's
    /// context then) into `facts`, when it is of a kind that can be (see the module
    /// documentation); forgets the previous block otherwise.
    pub(crate) fn remember(
        &mut self,
        block: &[u8],
        before: DecodeContext,
        log: DecodeLog,
        dec: &Decoder,
        facts: BlockFacts,
        decoded_len: usize,
    ) {
        self.key = None;
        if block.len() > MEMO_MAX || log.size_update || log.insert_failed {
            return;
        }
        self.entries.clear();
        self.entry_lens.clear();
        let key = if log.dynamic_refs {
            if log.inserts > 0 {
                return;
            }
            Key::Context(before)
        } else {
            // FIFO eviction: if one of the block's own entries had been evicted by a later
            // one, every older entry would have gone first, leaving fewer than `inserts`.
            let mut entries = 0;
            for (name, value) in dec.newest_entries(log.inserts) {
                if self.entries.len() + name.len() + value.len() > MEMO_MAX {
                    return;
                }
                self.entries.extend_from_slice(name);
                self.entries.extend_from_slice(value);
                self.entry_lens
                    .push((name.len() as u32, value.len() as u32));
                entries += 1;
            }
            if entries != log.inserts {
                return;
            }
            Key::Independent {
                settings_epoch: before.settings_epoch(),
            }
        };
        self.block.clear();
        self.block.extend_from_slice(block);
        self.key = Some(key);
        self.facts = facts;
        self.decoded_len = decoded_len;
    }
}
