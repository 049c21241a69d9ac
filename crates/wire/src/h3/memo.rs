//! The last field section of a connection, remembered with what decoding and validating it
//! gave, so that the next byte-identical section is neither decoded nor validated again (the
//! HTTP/3 counterpart of HTTP/2's block memo, `h2/recv/memo.rs`).
//!
//! A load generator gets the same response section over and over: a client announcing a
//! QPACK table of 0 (as `h2lab bench --h3` does) gets static-table references and literals
//! only, byte for byte the same until `date` changes once a second. Such a section (Required
//! Insert Count 0) never reads the dynamic table and changes no decoder state (no Section
//! Acknowledgment, RFC 9204 §4.4.1), so its fields, their validation and its facts depend
//! only on its octets, its kind and the decoder's limits (the memo is forgotten when a limit
//! changes). A sink that does not want the fields themselves
//! ([`RequestEvents::wants_fields`](super::request::RequestEvents::wants_fields), the bench
//! client's) gets only their decoded size; one that wants them (the server's, which routes on
//! them) gets them replayed from the memo, validated once. Requests from a load generator
//! that sends static-table references and literals repeat the same way.
//!
//! A section that reads the dynamic table (Required Insert Count above 0) is remembered too,
//! with the table's state when it was decoded (insert count and capacity): the table changes
//! only by encoder-stream instructions, each of which moves one of the two (an insert or a
//! duplicate the insert count, Set Dynamic Table Capacity the capacity, and eviction happens
//! only through those), so while both are unchanged the same octets decode to the same
//! fields. A replayed section of that kind still queues its Section Acknowledgment (RFC 9204
//! §4.4.1), so the peer's encoder sees exactly what a decoding would have told it. Clients
//! that use the table (`h2lab bench --h3` and h2load by default) send the same request
//! section over and over once their entries are acknowledged, and servers answer likewise.
//! The buffers are per connection and reused: nothing is allocated per section.

use super::fields::{SectionFacts, SectionKind};

/// Longest section remembered (a typical response section is 30 to 120 octets).
pub(crate) const MEMO_MAX: usize = 512;

/// Most octets of decoded fields (names, values and 8 octets of lengths each) remembered.
pub(crate) const FIELDS_MAX: usize = 2048;

/// The remembered section (see the module documentation).
#[derive(Debug, Default, Clone)]
pub(crate) struct SectionMemo {
    section: Vec<u8>,
    /// `None`: nothing remembered.
    kind: Option<SectionKind>,
    /// The section's Required Insert Count (0: static-only).
    required: u64,
    /// The dynamic table's (insert count, capacity) when a section with a non-zero Required
    /// Insert Count was decoded: it is replayed only while they are unchanged.
    table: (u64, usize),
    facts: SectionFacts,
    decoded_len: usize,
    /// The section's validated fields ([`super::packed`]), replayed to sinks that want them.
    fields: Vec<u8>,
    /// Fields of the section being decoded, packed the same way (swapped in on success).
    pending: Vec<u8>,
    /// `pending` outgrew [`FIELDS_MAX`]: the section will not be remembered.
    pending_over: bool,
}

impl SectionMemo {
    /// Whether `section` may be remembered: short enough.
    pub(crate) fn eligible(section: &[u8]) -> bool {
        section.len() <= MEMO_MAX
    }

    /// The facts, decoded length (names and values) and Required Insert Count of `section`
    /// of `kind`, when it is the remembered one and, if it reads the dynamic table, the
    /// table is still in the state `table` it was decoded against.
    #[inline]
    pub(crate) fn hit(
        &self,
        kind: SectionKind,
        section: &[u8],
        table: (u64, usize),
    ) -> Option<(SectionFacts, usize, u64)> {
        (self.kind == Some(kind)
            && self.section == section
            && (self.required == 0 || self.table == table))
            .then_some((self.facts, self.decoded_len, self.required))
    }

    /// The remembered fields, packed as [`super::packed`] describes (call only after a
    /// [`SectionMemo::hit`]).
    pub(crate) fn packed(&self) -> &[u8] {
        &self.fields
    }

    /// Replays the remembered fields (call only after a [`SectionMemo::hit`]).
    pub(crate) fn replay(&self, mut on_field: impl FnMut(&[u8], &[u8])) {
        for (name, value) in super::packed::iter(&self.fields) {
            on_field(name, value);
        }
    }

    /// A section is about to be decoded: its fields are collected with
    /// [`SectionMemo::collect`].
    pub(crate) fn start(&mut self) {
        self.pending.clear();
        self.pending_over = false;
    }

    /// One validated field of the section being decoded.
    #[inline]
    pub(crate) fn collect(&mut self, name: &[u8], value: &[u8]) {
        if self.pending_over {
            return;
        }
        if self.pending.len() + 8 + name.len() + value.len() > FIELDS_MAX {
            self.pending_over = true;
            return;
        }
        super::packed::push(&mut self.pending, name, value);
    }

    /// Remembers a valid, eligible `section`, what it gave and the fields collected since
    /// [`SectionMemo::start`] (forgets instead when they did not fit).
    pub(crate) fn remember(
        &mut self,
        kind: SectionKind,
        section: &[u8],
        facts: SectionFacts,
        decoded_len: usize,
        required: u64,
        table: (u64, usize),
    ) {
        if self.pending_over {
            self.forget();
            return;
        }
        self.section.clear();
        self.section.extend_from_slice(section);
        self.kind = Some(kind);
        self.facts = facts;
        self.decoded_len = decoded_len;
        self.required = required;
        self.table = table;
        std::mem::swap(&mut self.fields, &mut self.pending);
    }

    /// Forgets the remembered section (the decoder's limits changed).
    pub(crate) fn forget(&mut self) {
        self.kind = None;
    }
}
