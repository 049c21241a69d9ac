//! The last static-only field section of a connection, remembered with what decoding and
//! validating it gave, so that the next byte-identical section is neither decoded nor
//! validated again (the HTTP/3 counterpart of HTTP/2's block memo, `h2/recv/memo.rs`).
//!
//! A load generator gets the same response section over and over: a client announcing a
//! QPACK table of 0 (as `h2lab bench --h3` does) gets static-table references and literals
//! only, byte for byte the same until `date` changes once a second. Such a section (Required
//! Insert Count 0) never reads the dynamic table and changes no decoder state (no Section
//! Acknowledgment, RFC 9204 §4.4.1), so its fields, their validation and its facts depend
//! only on its octets, its kind and the decoder's limits (the memo is forgotten when a limit
//! changes). Used only when the sink does not want the fields themselves
//! ([`RequestEvents::wants_fields`](super::request::RequestEvents::wants_fields)); the buffer
//! is per connection and reused: nothing is allocated per section.

use super::fields::{SectionFacts, SectionKind};

/// Longest section remembered (a typical response section is 30 to 120 octets).
pub(crate) const MEMO_MAX: usize = 512;

/// The remembered section (see the module documentation).
#[derive(Debug, Default, Clone)]
pub(crate) struct SectionMemo {
    section: Vec<u8>,
    /// `None`: nothing remembered.
    kind: Option<SectionKind>,
    facts: SectionFacts,
    decoded_len: usize,
}

impl SectionMemo {
    /// Whether `section` may be remembered: static-only (an encoded Required Insert Count of
    /// 0, the first octet of its prefix) and short.
    pub(crate) fn eligible(section: &[u8]) -> bool {
        section.first() == Some(&0) && section.len() <= MEMO_MAX
    }

    /// The facts and decoded length (names and values) of `section` of `kind`, when it is
    /// the remembered one.
    #[inline]
    pub(crate) fn hit(&self, kind: SectionKind, section: &[u8]) -> Option<(SectionFacts, usize)> {
        (self.kind == Some(kind) && self.section == section)
            .then_some((self.facts, self.decoded_len))
    }

    /// Remembers a valid, eligible `section` and what it gave.
    pub(crate) fn remember(
        &mut self,
        kind: SectionKind,
        section: &[u8],
        facts: SectionFacts,
        decoded_len: usize,
    ) {
        self.section.clear();
        self.section.extend_from_slice(section);
        self.kind = Some(kind);
        self.facts = facts;
        self.decoded_len = decoded_len;
    }

    /// Forgets the remembered section (the decoder's limits changed).
    pub(crate) fn forget(&mut self) {
        self.kind = None;
    }
}
