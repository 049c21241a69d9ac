//! The HPACK encoder (RFC 7541 §2, §4, §6).
//!
//! Default policy of [`Encoder::encode`] (per field, in order):
//! 1. *Sensitive* fields are sent as "literal never indexed" (§6.2.3) and never matched
//!    against the dynamic table: `authorization`, `proxy-authorization`, and `cookie` values
//!    shorter than [`SHORT_COOKIE_LEN`] octets (RFC 7541 §7.1.3: short values are the ones
//!    an attacker can guess; long cookies are high-entropy and worth indexing).
//! 2. A full match in the static table, then in the dynamic table, is sent as an indexed
//!    field (§6.1, 1 or 2 octets).
//! 3. Otherwise a literal, naming the field by index when the name is known (static table
//!    first, as its indices never move, then the dynamic table):
//!    - with incremental indexing (§6.2.1) when the entry takes at most 3/4 of the table,
//!    - without indexing (§6.2.2) otherwise (a huge entry would flush everything else; with
//!      a table of size 0 nothing is indexed).
//! 4. Each string literal is Huffman coded unless that makes it longer (§5.2; on a tie
//!    Huffman is used, which reproduces the RFC 7541 Appendix C examples exactly).

use super::huffman;
use super::integer;
use super::table::{
    hash_bytes, static_lookup, DynamicTable, NameSrc, StaticMatch, ENTRY_OVERHEAD, STATIC_LEN,
};

/// `cookie` values shorter than this are sent never-indexed (see the module docs).
pub const SHORT_COOKIE_LEN: usize = 20;

/// How one field may be represented (see [`Encoder::encode_with`]).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Default)]
pub enum Indexing {
    /// The encoder's default policy (see the module docs).
    #[default]
    Auto,
    /// Never add this field to the dynamic table: indexed if it is already in a table,
    /// else "literal without indexing" (§6.2.2).
    NoIndex,
    /// Sensitive: always "literal never indexed" (§6.2.3), never matched against the
    /// dynamic table. Use it for fields decoded with `sensitive == true`.
    Never,
}

/// HPACK encoding context: one per connection and direction (RFC 7541 §2.2).
///
/// `encode` allocates nothing in steady state beyond growing `dst` (which the caller
/// reuses): the dynamic table reuses its storage and matching uses per-entry hashes.
#[derive(Debug, Clone)]
pub struct Encoder {
    pub(crate) table: DynamicTable,
    /// Size changes not yet signalled: (smallest value seen, latest value).
    pending: Option<(usize, usize)>,
}

impl Encoder {
    /// An encoder whose dynamic table size is `max_table_size`, i.e. the peer's
    /// SETTINGS_HEADER_TABLE_SIZE (4096 until the peer's SETTINGS say otherwise). The peer's
    /// decoder starts with the same size, so no size update is sent at first.
    pub fn new(max_table_size: usize) -> Self {
        Encoder {
            table: DynamicTable::new(max_table_size, true),
            pending: None,
        }
    }

    /// Call when the peer's SETTINGS_HEADER_TABLE_SIZE changes. The encoder adopts `n` as
    /// its table size and signals it with dynamic table size update(s) at the start of the
    /// next header block: if the value went below the current size and back up since the
    /// last block, the smallest value first, then the final one (RFC 7541 §4.2: "the
    /// smallest maximum table size that occurs in that interval MUST be signaled in a
    /// dynamic table size update. The final maximum size is always signaled, resulting in
    /// at most two dynamic table size updates.").
    pub fn set_max_table_size(&mut self, n: usize) {
        self.pending = Some(match self.pending {
            None => (n, n),
            Some((min, _)) => (min.min(n), n),
        });
    }

    /// The table size the encoder uses (including a change not yet signalled).
    pub fn max_table_size(&self) -> usize {
        match self.pending {
            Some((_, last)) => last,
            None => self.table.max_size(),
        }
    }

    /// Current size of the dynamic table (sum of name + value + 32 over its entries).
    pub fn table_size(&self) -> usize {
        self.table.size()
    }

    /// Number of entries in the dynamic table.
    pub fn table_len(&self) -> usize {
        self.table.len()
    }

    /// A counter bumped by every change of the dynamic table (insertion, eviction, resize).
    /// While it and [`Encoder::has_pending_size_update`] are unchanged, a block whose
    /// encoding inserted nothing encodes to the same bytes again, so callers may cache it.
    pub fn table_generation(&self) -> u64 {
        self.table.generation()
    }

    /// `true` while a table size change still has to be signalled.
    pub fn has_pending_size_update(&self) -> bool {
        self.pending.is_some()
    }

    /// Encodes one header block into `dst` (appending), with the default policy (see the
    /// module docs).
    pub fn encode<'a, I>(&mut self, fields: I, dst: &mut Vec<u8>)
    where
        I: IntoIterator<Item = (&'a [u8], &'a [u8])>,
    {
        self.begin_block(dst);
        for (name, value) in fields {
            self.encode_field(name, value, Indexing::Auto, dst);
        }
    }

    /// Like [`Encoder::encode`], with an explicit [`Indexing`] per field.
    pub fn encode_with<'a, I>(&mut self, fields: I, dst: &mut Vec<u8>)
    where
        I: IntoIterator<Item = (&'a [u8], &'a [u8], Indexing)>,
    {
        self.begin_block(dst);
        for (name, value, indexing) in fields {
            self.encode_field(name, value, indexing, dst);
        }
    }

    /// Emits the pending dynamic table size update(s), if any (start of a block).
    pub(crate) fn begin_block(&mut self, dst: &mut Vec<u8>) {
        let Some((min, last)) = self.pending.take() else {
            return;
        };
        let current = self.table.max_size();
        if min < last && min < current {
            emit_size_update(min, dst);
            self.table.set_max_size(min);
        }
        if last != self.table.max_size() {
            emit_size_update(last, dst);
            self.table.set_max_size(last);
        }
    }

    /// Starts a block by emptying the dynamic table: a size update to 0, then one to the
    /// current size (unless it is 0). Also satisfies any pending change, since 0 is below
    /// every minimum. Used by the request template to reach a known table state.
    pub(crate) fn begin_block_flushed(&mut self, dst: &mut Vec<u8>) {
        let target = self.max_table_size();
        self.pending = None;
        emit_size_update(0, dst);
        self.table.set_max_size(0);
        if target > 0 {
            emit_size_update(target, dst);
            self.table.set_max_size(target);
        }
    }

    fn encode_field(&mut self, name: &[u8], value: &[u8], indexing: Indexing, dst: &mut Vec<u8>) {
        let sensitive = match indexing {
            Indexing::Never => true,
            Indexing::NoIndex => false,
            Indexing::Auto => is_sensitive(name, value),
        };
        let smatch = static_lookup(name, value);
        if let (StaticMatch::Full(i), false) = (smatch, sensitive) {
            integer::encode(i, 7, 0x80, dst);
            return;
        }
        let mut name_index = match smatch {
            StaticMatch::Full(i) | StaticMatch::Name(i) => i,
            StaticMatch::None => 0,
        };
        if !self.table.is_empty() {
            let name_hash = hash_bytes(0, name);
            let field_hash = hash_bytes(name_hash, value);
            match self.table.find(name, value, name_hash, field_hash) {
                Some((pos, true)) if !sensitive => {
                    integer::encode(STATIC_LEN + 1 + pos, 7, 0x80, dst);
                    return;
                }
                Some((pos, _)) if name_index == 0 => name_index = STATIC_LEN + 1 + pos,
                _ => {}
            }
        }
        let entry_size = name.len() + value.len() + ENTRY_OVERHEAD;
        let index_it = indexing == Indexing::Auto
            && !sensitive
            && entry_size.saturating_mul(4) <= self.table.max_size().saturating_mul(3);
        if sensitive {
            // RFC 7541 §6.2.3: pattern 0001, 4-bit prefix.
            write_literal(0x10, 4, name_index, name, value, dst);
        } else if index_it {
            // RFC 7541 §6.2.1: pattern 01, 6-bit prefix.
            write_literal(0x40, 6, name_index, name, value, dst);
            let src = if name_index > STATIC_LEN {
                NameSrc::Dynamic(name_index - STATIC_LEN - 1)
            } else {
                NameSrc::Bytes(name)
            };
            self.table.insert(src, value);
        } else {
            // RFC 7541 §6.2.2: pattern 0000, 4-bit prefix.
            write_literal(0x00, 4, name_index, name, value, dst);
        }
    }
}

/// The default sensitivity rule (see the module docs).
pub(crate) fn is_sensitive(name: &[u8], value: &[u8]) -> bool {
    match name {
        b"authorization" | b"proxy-authorization" => true,
        b"cookie" => value.len() < SHORT_COOKIE_LEN,
        _ => false,
    }
}

/// RFC 7541 §6.3: dynamic table size update, pattern 001, 5-bit prefix.
pub(crate) fn emit_size_update(size: usize, dst: &mut Vec<u8>) {
    integer::encode(size, 5, 0x20, dst);
}

/// Writes a literal representation: first octet `flags` with the name index in a
/// `prefix_bits` prefix (0 = literal name follows), then the value.
pub(crate) fn write_literal(
    flags: u8,
    prefix_bits: u8,
    name_index: usize,
    name: &[u8],
    value: &[u8],
    dst: &mut Vec<u8>,
) {
    integer::encode(name_index, prefix_bits, flags, dst);
    if name_index == 0 {
        write_string(name, dst);
    }
    write_string(value, dst);
}

/// Writes a string literal (RFC 7541 §5.2), Huffman coded unless that is longer (a tie
/// goes to Huffman, as in the RFC 7541 Appendix C examples; the empty string stays raw).
pub(crate) fn write_string(s: &[u8], dst: &mut Vec<u8>) {
    let hlen = huffman::encoded_len(s);
    if hlen <= s.len() && !s.is_empty() {
        integer::encode(hlen, 7, 0x80, dst);
        huffman::encode(s, dst);
    } else {
        integer::encode(s.len(), 7, 0x00, dst);
        dst.extend_from_slice(s);
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::hpack::Decoder;

    fn hex(s: &str) -> Vec<u8> {
        let s: String = s.chars().filter(|c| !c.is_whitespace()).collect();
        (0..s.len())
            .step_by(2)
            .map(|i| u8::from_str_radix(&s[i..i + 2], 16).unwrap())
            .collect()
    }

    fn enc(e: &mut Encoder, fields: &[(&str, &str)]) -> Vec<u8> {
        let mut out = Vec::new();
        e.encode(
            fields.iter().map(|(n, v)| (n.as_bytes(), v.as_bytes())),
            &mut out,
        );
        out
    }

    #[test]
    fn size_updates_signal_minimum_then_final() {
        let mut e = Encoder::new(4096);
        e.set_max_table_size(0);
        e.set_max_table_size(2048);
        let b = enc(&mut e, &[(":method", "GET")]);
        // 0x20 = update(0); 0x3f e1 0f = update(2048); 0x82.
        assert_eq!(b, [0x20, 0x3f, 0xe1, 0x0f, 0x82]);
        // Nothing pending afterwards.
        assert_eq!(enc(&mut e, &[(":method", "GET")]), [0x82]);
        // A single decrease: one update.
        e.set_max_table_size(100);
        assert_eq!(enc(&mut e, &[]), [0x3f, 0x45]);
        // Down and back to the same value: still the minimum, then the final.
        e.set_max_table_size(10);
        e.set_max_table_size(100);
        assert_eq!(enc(&mut e, &[]), [0x2a, 0x3f, 0x45]);
        // Unchanged value: nothing.
        e.set_max_table_size(100);
        assert_eq!(enc(&mut e, &[]), b"");
        // An increase is signalled (the encoder wants to use it).
        e.set_max_table_size(4096);
        assert_eq!(enc(&mut e, &[]), [0x3f, 0xe1, 0x1f]);
    }

    #[test]
    fn sensitive_fields_are_never_indexed() {
        let mut e = Encoder::new(4096);
        let b = enc(
            &mut e,
            &[("authorization", "Bearer abc"), ("cookie", "a=b")],
        );
        assert_eq!(e.table_len(), 0);
        let mut d = Decoder::new(4096);
        let mut got = Vec::new();
        d.decode(&b, |f| got.push(f.sensitive)).unwrap();
        assert_eq!(got, [true, true]);
        // A long cookie is indexed.
        enc(&mut e, &[("cookie", "session=0123456789abcdef0123456789")]);
        assert_eq!(e.table_len(), 1);
    }

    #[test]
    fn oversized_entries_are_not_indexed() {
        let mut e = Encoder::new(100);
        let v = "x".repeat(60); // 6 + 60 + 32 = 98 > 75
        enc(&mut e, &[("x-big", &v)]);
        assert_eq!(e.table_len(), 0);
        let mut e = Encoder::new(0);
        enc(&mut e, &[("x-a", "b")]);
        assert_eq!(e.table_len(), 0);
    }

    #[test]
    fn rfc_c4_requests_with_huffman_exactly() {
        let mut e = Encoder::new(4096);
        let r1 = [
            (":method", "GET"),
            (":scheme", "http"),
            (":path", "/"),
            (":authority", "www.example.com"),
        ];
        assert_eq!(
            enc(&mut e, &r1),
            hex("8286 8441 8cf1 e3c2 e5f2 3a6b a0ab 90f4 ff")
        );
        let mut r2 = r1.to_vec();
        r2.push(("cache-control", "no-cache"));
        assert_eq!(enc(&mut e, &r2), hex("8286 84be 5886 a8eb 1064 9cbf"));
        let r3 = [
            (":method", "GET"),
            (":scheme", "https"),
            (":path", "/index.html"),
            (":authority", "www.example.com"),
            ("custom-key", "custom-value"),
        ];
        assert_eq!(
            enc(&mut e, &r3),
            hex("8287 85bf 4088 25a8 49e9 5ba9 7d7f 8925 a849 e95b b8e8 b4bf")
        );
        assert_eq!(e.table_size(), 164);
    }

    #[test]
    fn rfc_c6_responses_with_huffman_exactly() {
        let mut e = Encoder::new(256);
        let d1 = "Mon, 21 Oct 2013 20:13:21 GMT";
        let loc = "https://www.example.com";
        let r1 = [
            (":status", "302"),
            ("cache-control", "private"),
            ("date", d1),
            ("location", loc),
        ];
        assert_eq!(
            enc(&mut e, &r1),
            hex(
                "4882 6402 5885 aec3 771a 4b61 96d0 7abe 9410 54d4 44a8 2005 9504 0b81 66e0 82a6
                 2d1b ff6e 919d 29ad 1718 63c7 8f0b 97c8 e9ae 82ae 43d3"
            )
        );
        let r2 = [
            (":status", "307"),
            ("cache-control", "private"),
            ("date", d1),
            ("location", loc),
        ];
        assert_eq!(enc(&mut e, &r2), hex("4883 640e ffc1 c0bf"));
        let r3 = [
            (":status", "200"),
            ("cache-control", "private"),
            ("date", "Mon, 21 Oct 2013 20:13:22 GMT"),
            ("location", loc),
            ("content-encoding", "gzip"),
            (
                "set-cookie",
                "foo=ASDJKHQKBZXOQWEOPIUAXQWEOIU; max-age=3600; version=1",
            ),
        ];
        assert_eq!(
            enc(&mut e, &r3),
            hex(
                "88c1 6196 d07a be94 1054 d444 a820 0595 040b 8166 e084 a62d 1bff c05a 839b d9ab
                 77ad 94e7 821d d7f2 e6c7 b335 dfdf cd5b 3960 d5af 2708 7f36 72c1 ab27 0fb5 291f
                 9587 3160 65c0 03ed 4ee5 b106 3d50 07"
            )
        );
        assert_eq!(e.table_size(), 215);
    }
}
