//! [`Sink`]: a response stream's events forwarded to the worker's [`SessionEvents`].

use h2lab_wire::h3::fields::{SectionFacts, SectionKind};
use h2lab_wire::h3::request::RequestEvents;

use crate::session::SessionEvents;

/// Forwards one stream's response to the caller's [`SessionEvents`].
pub(super) struct Sink<'a> {
    pub(super) slot: u32,
    pub(super) ev: &'a mut dyn SessionEvents,
    /// QPACK-encoded size of the current section (the HEADERS frame payload).
    pub(super) encoded: usize,
    pub(super) decoded: usize,
    pub(super) done: &'a mut bool,
    /// The section being decoded is a `103 Early Hints` (its `link` fields are reported).
    pub(super) hinting: bool,
}

impl RequestEvents for Sink<'_> {
    fn section_start(&mut self, encoded_len: usize) {
        self.encoded = encoded_len;
    }
    fn field(&mut self, name: &[u8], value: &[u8]) {
        self.decoded += name.len() + value.len();
        // `:status` comes first (RFC 9114 §4.3: pseudo-header fields precede the others).
        if name == b":status" {
            self.hinting = value == b"103";
        } else if self.hinting && name == b"link" {
            self.ev.early_hint(self.slot, value);
        }
    }
    fn wants_fields(&self) -> bool {
        // Only the status, the facts and the sizes are counted: a response section equal
        // to the previous one, on an unchanged table, is not decoded again (the wire crate's
        // memo). A page fetcher reads Early Hints.
        self.ev.wants_hints()
    }
    fn fields_skipped(&mut self, decoded_len: usize) {
        self.decoded += decoded_len;
    }
    fn section_done(&mut self, kind: SectionKind, facts: SectionFacts, _informational: bool) {
        self.hinting = false;
        if kind == SectionKind::Response {
            if let Some(s) = facts.status {
                self.ev.status(self.slot, s);
            }
        }
        // As h2load: the HEADERS frame payload (QPACK-encoded) and the sum of the decoded
        // names and values (no per-field overhead, unlike HTTP/2's 32 octets).
        self.ev.header_bytes(self.encoded, self.decoded);
        self.encoded = 0;
        self.decoded = 0;
    }
    fn data(&mut self, chunk: &[u8]) {
        self.ev.body(self.slot, chunk.len());
        self.ev.body_data(self.slot, chunk);
    }
    fn end(&mut self) {
        *self.done = true;
    }
}
