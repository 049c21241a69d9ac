//! The encoder's count of streams that may be blocked (RFC 9204 §2.1.2), kept as sections
//! come and go instead of recomputed over every unacknowledged section.
//!
//! A section "may block" while its Required Insert Count is above the Known Received Count.
//! Only those sections are held here (in the order they were registered), with the number
//! of distinct streams among them. Most sections reference acknowledged entries only and
//! never enter; one that does leaves when the Known Received Count passes it, when it is
//! acknowledged, or when its stream is cancelled. So the question "may a section on this
//! stream block?" costs nothing while no section may block, and otherwise a look at the
//! few that may (at most the peer's SETTINGS_QPACK_BLOCKED_STREAMS streams' sections),
//! not at every unacknowledged section.

/// Sections whose Required Insert Count is above the Known Received Count.
#[derive(Debug, Clone, Default)]
pub(super) struct Blocking {
    /// (stream, Required Insert Count), oldest first.
    sections: Vec<(u64, u64)>,
    /// Distinct streams in `sections`.
    streams: usize,
    /// Scratch for counting distinct streams (kept for its capacity).
    scratch: Vec<u64>,
}

impl Blocking {
    /// Streams that may be blocked.
    pub(super) fn streams(&self) -> usize {
        self.streams
    }

    /// Whether `stream_id` has a section that may block.
    pub(super) fn has(&self, stream_id: u64) -> bool {
        !self.sections.is_empty() && self.sections.iter().any(|&(s, _)| s == stream_id)
    }

    /// A section registered on `stream_id` with Required Insert Count `required`, the
    /// Known Received Count being `known_received`.
    pub(super) fn add(&mut self, stream_id: u64, required: u64, known_received: u64) {
        if required <= known_received {
            return;
        }
        if !self.has(stream_id) {
            self.streams += 1;
        }
        self.sections.push((stream_id, required));
    }

    /// The oldest unacknowledged section of `stream_id` was acknowledged; it may block
    /// when its Required Insert Count is above `known_received` (the count before the
    /// acknowledgment raises it). Sections of a stream are acknowledged in order, so it is
    /// that stream's first entry here.
    pub(super) fn acknowledged(&mut self, stream_id: u64, required: u64, known_received: u64) {
        if required <= known_received {
            return;
        }
        if let Some(i) = self.sections.iter().position(|&(s, _)| s == stream_id) {
            self.sections.remove(i);
            if !self.has(stream_id) {
                self.streams -= 1;
            }
        }
    }

    /// Every section of `stream_id` is gone (Stream Cancellation).
    pub(super) fn cancelled(&mut self, stream_id: u64) {
        let before = self.sections.len();
        self.sections.retain(|&(s, _)| s != stream_id);
        if self.sections.len() != before {
            self.streams -= 1;
        }
    }

    /// The Known Received Count rose to `known_received`: sections at or below it no
    /// longer block.
    pub(super) fn received(&mut self, known_received: u64) {
        if self.sections.is_empty() {
            return;
        }
        let before = self.sections.len();
        self.sections.retain(|&(_, r)| r > known_received);
        if self.sections.len() == before {
            return;
        }
        self.scratch.clear();
        self.scratch.extend(self.sections.iter().map(|&(s, _)| s));
        self.scratch.sort_unstable();
        self.scratch.dedup();
        self.streams = self.scratch.len();
    }
}
