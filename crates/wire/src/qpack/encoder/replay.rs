//! Sending a section the encoder wrote again on another stream ([`Encoder::replay`]), with
//! the same registration a fresh encoding gets (RFC 9204 §2.1.1, §2.1.2).

use super::Encoder;

/// What a field section from [`Encoder::encode`] depends on ([`Encoder::last_section`]):
/// enough for [`Encoder::replay`] to decide whether the same octets may be sent again on
/// another stream, and to register them there.
///
/// A section's octets are self-contained (its prefix carries its Required Insert Count and
/// Base, its lines index relative to that Base), so they decode to the same fields wherever
/// the dynamic entries it references (absolute indices `min_ref..required`) are still the
/// same: absolute indices are never reused, so "not evicted" is enough, within one epoch
/// (no Set Dynamic Table Capacity, no new peer SETTINGS since). It also keeps the encoded
/// Required Insert Count (sent modulo `2 * MaxEntries`, RFC 9204 §4.5.1.1) decodable: the
/// decoder reconstructs it correctly while its insert count is less than `MaxEntries` above
/// it, and the live entries from `min_ref` on (at least 32 octets each) are fewer than that;
/// the replayed section pins them until it is acknowledged.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub struct SectionRefs {
    pub(super) required: u64,
    pub(super) min_ref: u64,
    pub(super) epoch: u64,
}

impl SectionRefs {
    /// The section's Required Insert Count (0: static table and literals only).
    pub fn required_insert_count(&self) -> u64 {
        self.required
    }
}

/// What [`Encoder::replay`] did.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
#[must_use]
pub enum Replay {
    /// The section may be sent again on the stream, and is registered there.
    Replayed,
    /// Not now: it may block and the peer's SETTINGS_QPACK_BLOCKED_STREAMS streams already
    /// may, or [`MAX_UNACKED_SECTIONS`](super::MAX_UNACKED_SECTIONS) sections await
    /// acknowledgment. Encode this one anew (the encoder then uses only what cannot
    /// block); the same section may replay later.
    Deferred,
    /// Never again: an entry it references was evicted, or the capacity or the peer's
    /// SETTINGS changed since it was encoded. Encode the fields anew.
    Stale,
}

impl Encoder {
    /// What the section written by the last [`Encoder::encode`] references, for
    /// [`Encoder::replay`].
    pub fn last_section(&self) -> SectionRefs {
        self.last
    }

    /// Sends again, on `stream_id`, the octets of a section this encoder wrote (whose
    /// [`SectionRefs`] are `refs`), instead of encoding the same fields anew.
    /// [`Replay::Replayed`]: send them; the section is registered on `stream_id` as
    /// [`Encoder::encode`] would have registered it (RFC 9204 §2.1.1: its entries stay
    /// unevictable until it is acknowledged or the stream cancelled; §2.1.2: it counts as
    /// blocking while its Required Insert Count is above the Known Received Count).
    /// Otherwise nothing changes and the fields must be encoded with [`Encoder::encode`]:
    ///
    /// - [`Replay::Stale`]: `refs` is from before a capacity change or the peer's SETTINGS,
    ///   or an entry it references was evicted since (its absolute index is gone);
    /// - [`Replay::Deferred`]: it may block and `stream_id` is not already blocking while
    ///   the peer's SETTINGS_QPACK_BLOCKED_STREAMS streams are, or
    ///   [`MAX_UNACKED_SECTIONS`](super::MAX_UNACKED_SECTIONS) sections await
    ///   acknowledgment.
    ///
    /// A section with Required Insert Count 0 (static table and literals) replays within
    /// its epoch and registers nothing. Nothing is allocated beyond the acknowledgment
    /// queue's amortized growth.
    pub fn replay(&mut self, stream_id: u64, refs: &SectionRefs) -> Replay {
        if refs.epoch != self.epoch {
            return Replay::Stale;
        }
        if refs.required > 0 {
            if refs.min_ref < self.table.first_live() || refs.required > self.table.insert_count() {
                return Replay::Stale;
            }
            if !self.can_track()
                || (refs.required > self.known_received && !self.may_block(stream_id))
            {
                return Replay::Deferred;
            }
            self.track(stream_id, refs.required, refs.min_ref);
        }
        self.replayed += 1;
        Replay::Replayed
    }

    /// Sections written by [`Encoder::encode`].
    pub fn sections_encoded(&self) -> u64 {
        self.encoded
    }

    /// Sections sent again through [`Encoder::replay`].
    pub fn sections_replayed(&self) -> u64 {
        self.replayed
    }
}
