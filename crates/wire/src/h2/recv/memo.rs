//! The last response field block of a connection, remembered with what decoding it
//! gave, so that the next byte-identical block is not decoded and validated again.
//!
//! Servers answer a load generator's requests with the same field block over and over:
//! nghttpd and h2o refer to their dynamic table entries (a few index octets), nginx
//! repeats its literals without indexing (only `date` changes, once a second). Decoding
//! is a pure function of the block's octets and the decoder's context
//! ([`DecodeContext`]: the dynamic table's generation and the decoder's limits), so a
//! block equal to the remembered one under an equal context gives the same fields, the
//! same validation result and the same facts; and only a block that left the context
//! unchanged (it inserted and resized nothing) is remembered.
//!
//! Used only when the event sink does not want the fields themselves
//! ([`Events::wants_fields`](crate::h2::Events::wants_fields)), for final and interim
//! responses. One buffer per connection, allocated with the first remembered block and
//! reused (at most [`MEMO_MAX`] octets): nothing is allocated per block.

use crate::h2::fields::BlockFacts;
use crate::hpack::DecodeContext;

/// Longest block remembered (nginx's response blocks are about 100 octets).
pub(crate) const MEMO_MAX: usize = 256;

/// The remembered block (see the module documentation).
#[derive(Debug, Default)]
pub(crate) struct BlockMemo {
    block: Vec<u8>,
    /// `None`: nothing remembered.
    context: Option<DecodeContext>,
    facts: BlockFacts,
    decoded_len: usize,
}

impl BlockMemo {
    /// The facts and decoded length of `block` if it is the remembered one and `context`
    /// is the one it was decoded under.
    #[inline]
    pub(crate) fn get(
        &self,
        block: &[u8],
        context: Option<DecodeContext>,
    ) -> Option<(BlockFacts, usize)> {
        match (self.context, context) {
            (Some(a), Some(b)) if a == b && self.block == block => {
                Some((self.facts, self.decoded_len))
            }
            _ => None,
        }
    }

    /// Remembers `block`, which decoded and validated under `context` into `facts`
    /// without changing the context (forgets instead when it is too long).
    pub(crate) fn set(
        &mut self,
        block: &[u8],
        context: DecodeContext,
        facts: BlockFacts,
        decoded_len: usize,
    ) {
        if block.len() > MEMO_MAX {
            self.context = None;
            return;
        }
        self.block.clear();
        self.block.extend_from_slice(block);
        self.context = Some(context);
        self.facts = facts;
        self.decoded_len = decoded_len;
    }
}
