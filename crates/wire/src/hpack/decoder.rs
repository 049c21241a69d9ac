//! The HPACK decoder (RFC 7541 §3, §6).

use super::huffcache::HuffmanCache;
use super::integer;
use super::table::{static_entry, DynamicTable, NameSrc, ENTRY_OVERHEAD, STATIC_LEN};
use super::HpackError;

/// Default limit on the decoded header list (sum of name + value + 32 per field, the
/// SETTINGS_MAX_HEADER_LIST_SIZE accounting of RFC 9113 §6.5.2).
pub const DEFAULT_MAX_HEADER_LIST_SIZE: usize = 64 * 1024;

/// Default limit on one string literal (name or value), in octets.
pub const DEFAULT_MAX_STRING_LEN: usize = 64 * 1024;

/// One decoded header field. The slices borrow from the decoder's dynamic table, the
/// static table, the input block or the decoder's scratch buffer, so they are only valid
/// inside the callback: copy what you keep.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Field<'a> {
    /// Field name, as octets (HPACK does not validate names; HTTP/2 rules such as
    /// lowercase-only are the caller's job).
    pub name: &'a [u8],
    /// Field value, as octets.
    pub value: &'a [u8],
    /// The field came as a "literal never indexed" (RFC 7541 §6.2.3). An intermediary
    /// re-encoding it MUST keep that representation ("Intermediaries MUST use the same
    /// representation for encoding this header field.").
    pub sensitive: bool,
}

/// HPACK decoding context: one per connection and direction (RFC 7541 §2.2).
///
/// Steady-state decoding allocates nothing: fields borrow from the dynamic table (a byte
/// arena reused in place) or from the input, and Huffman-coded literals are decoded into
/// a scratch buffer owned by the decoder and reused for every field.
#[derive(Debug, Clone)]
pub struct Decoder {
    table: DynamicTable,
    /// SETTINGS_HEADER_TABLE_SIZE we advertised and the peer acknowledged: the ceiling for
    /// dynamic table size updates.
    settings_max: usize,
    /// Set when we lowered the limit below the peer's current table size: the next block
    /// must start with a size update at most this large.
    required_update: Option<usize>,
    max_header_list_size: usize,
    max_string_len: usize,
    scratch: Vec<u8>,
    /// Recent Huffman decodings (servers repeat unindexed literals block after block).
    huffman: HuffmanCache,
    /// Bumped by every setter (limits and the size-update ceiling), for [`Decoder::context`].
    settings_epoch: u64,
}

/// Everything besides a block's own octets that decoding it depends on (see
/// [`Decoder::context`]).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) struct DecodeContext {
    table_generation: u64,
    settings_epoch: u64,
}

impl DecodeContext {
    /// The part of the context that does not depend on the dynamic table.
    pub(crate) fn settings_epoch(self) -> u64 {
        self.settings_epoch
    }
}

/// What decoding one block did besides delivering fields (see [`Decoder::decode_logged`]).
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub(crate) struct DecodeLog {
    /// Some field referred to the dynamic table (an indexed field or a literal's name).
    pub(crate) dynamic_refs: bool,
    /// The block carried a dynamic table size update.
    pub(crate) size_update: bool,
    /// Literals with incremental indexing (entries inserted, in order).
    pub(crate) inserts: usize,
    /// Some insertion emptied the table instead (an entry larger than the table).
    pub(crate) insert_failed: bool,
}

/// Where a string literal's bytes ended up.
#[derive(Debug, Clone, Copy)]
enum Str {
    /// Raw octets at `block[start..end]`.
    Block(usize, usize),
    /// Huffman-decoded octets at `scratch[start..end]`.
    Scratch(usize, usize),
    /// Not decoded: neither emitted nor inserted.
    Skipped,
}

/// Where a literal's name comes from.
#[derive(Debug, Clone, Copy)]
enum Name {
    Static(&'static [u8]),
    Dynamic(usize),
    Literal(Str),
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Literal {
    Incremental,
    Without,
    Never,
}

impl Decoder {
    /// A decoder whose dynamic table, and limit for size updates, is `max_table_size`
    /// (the peer's encoder is assumed to start with a table of that size, so use the
    /// protocol default 4096 for a new HTTP/2 connection and call
    /// [`Decoder::set_max_table_size`] when a different SETTINGS_HEADER_TABLE_SIZE of ours
    /// is acknowledged).
    pub fn new(max_table_size: usize) -> Self {
        Decoder {
            table: DynamicTable::new(max_table_size, false),
            settings_max: max_table_size,
            required_update: None,
            max_header_list_size: DEFAULT_MAX_HEADER_LIST_SIZE,
            max_string_len: DEFAULT_MAX_STRING_LEN,
            scratch: Vec::new(),
            huffman: HuffmanCache::default(),
            settings_epoch: 0,
        }
    }

    /// What decoding a block depends on besides its octets: the dynamic table (its
    /// generation changes with every insertion, eviction or resize) and the limits set on
    /// this decoder. Decoding the same octets twice under an equal context delivers the
    /// same fields with the same result; a block that leaves the context unchanged
    /// inserted nothing and resized nothing. `None` while the next block must start with
    /// a size update (it cannot be repeated).
    pub(crate) fn context(&self) -> Option<DecodeContext> {
        self.required_update.is_none().then_some(DecodeContext {
            table_generation: self.table.generation(),
            settings_epoch: self.settings_epoch,
        })
    }

    /// Applies the SETTINGS_HEADER_TABLE_SIZE we advertised, once the peer has
    /// acknowledged it. Dynamic table size updates above `n` are then errors. If `n` is
    /// below the peer's current table size, the next header block MUST start with a size
    /// update to at most the smallest value set since the previous block (RFC 7541 §4.2),
    /// else [`HpackError::MissingSizeUpdate`].
    pub fn set_max_table_size(&mut self, n: usize) {
        self.settings_epoch = self.settings_epoch.wrapping_add(1);
        self.settings_max = n;
        if n < self.table.max_size() {
            self.required_update = Some(self.required_update.map_or(n, |r| r.min(n)));
        }
    }

    /// The current limit for dynamic table size updates (our SETTINGS_HEADER_TABLE_SIZE).
    pub fn max_table_size(&self) -> usize {
        self.settings_max
    }

    /// Limits the decoded header list of one block (sum of name + value + 32 per field,
    /// our SETTINGS_MAX_HEADER_LIST_SIZE). Default [`DEFAULT_MAX_HEADER_LIST_SIZE`].
    ///
    /// When a block exceeds it, the fields past the limit are not delivered,
    /// [`Decoder::decode`] returns [`HpackError::HeaderListTooLarge`] after the whole block
    /// has been processed, and the dynamic table is left exactly as the encoder expects,
    /// so the connection can go on (answer the stream with 431 or REFUSED_STREAM). Past the
    /// limit the decoder only does the work needed to keep the table in sync: indexed
    /// fields and non-indexed literals cost O(1) and O(octets skipped), nothing is copied
    /// or Huffman-decoded unless it is inserted in the table, so a "bomb" of 1-byte
    /// references to a large entry costs a few nanoseconds per octet and no memory.
    pub fn set_max_header_list_size(&mut self, n: usize) {
        self.settings_epoch = self.settings_epoch.wrapping_add(1);
        self.max_header_list_size = n;
    }

    /// Limits each string literal, both its length on the wire and its decoded length.
    /// Default [`DEFAULT_MAX_STRING_LEN`]. Exceeding it is [`HpackError::StringTooLong`]
    /// (a connection error: the literal cannot be skipped safely if it was to be indexed).
    pub fn set_max_string_len(&mut self, n: usize) {
        self.settings_epoch = self.settings_epoch.wrapping_add(1);
        self.max_string_len = n;
    }

    /// Current size of the dynamic table (sum of name + value + 32 over its entries).
    pub fn table_size(&self) -> usize {
        self.table.size()
    }

    /// Number of entries in the dynamic table.
    pub fn table_len(&self) -> usize {
        self.table.len()
    }

    /// The dynamic table's current maximum size, as last set by the peer's size updates.
    pub fn table_max_size(&self) -> usize {
        self.table.max_size()
    }

    /// Entry at 0-based dynamic position `i` (0 = newest, HPACK index 62).
    pub fn table_entry(&self, i: usize) -> Option<(&[u8], &[u8])> {
        self.table.get(i)
    }

    /// Decodes one complete header block (a HEADERS/PUSH_PROMISE fragment plus its
    /// CONTINUATION fragments, already concatenated), calling `on_field` for every field in
    /// order.
    ///
    /// Any error but [`HpackError::HeaderListTooLarge`] leaves the decoding context
    /// unusable: RFC 9113 §4.3 requires a connection error of type COMPRESSION_ERROR. On
    /// `HeaderListTooLarge` the fields already delivered must be discarded, and the
    /// decoder remains in sync for the next block.
    ///
    /// The caller bounds the block length (frame layer); the work done here is linear in
    /// it.
    pub fn decode<F>(&mut self, block: &[u8], on_field: F) -> Result<(), HpackError>
    where
        F: FnMut(Field<'_>),
    {
        self.decode_logged(block, on_field, &mut DecodeLog::default())
    }

    /// The `n` newest dynamic table entries, oldest first (the order they were
    /// inserted in).
    pub(crate) fn newest_entries(&self, n: usize) -> impl Iterator<Item = (&[u8], &[u8])> {
        (0..n.min(self.table.len()))
            .rev()
            .filter_map(|i| self.table.get(i))
    }

    /// Inserts `name: value` into the dynamic table as a literal with incremental
    /// indexing would (RFC 7541 §6.2.1); `false` when it emptied the table instead.
    pub(crate) fn insert(&mut self, name: &[u8], value: &[u8]) -> bool {
        self.table.insert(NameSrc::Bytes(name), value)
    }

    /// [`Decoder::decode`], also recording in `log` what the block did to (and needed
    /// from) the dynamic table.
    pub(crate) fn decode_logged<F>(
        &mut self,
        block: &[u8],
        mut on_field: F,
        log: &mut DecodeLog,
    ) -> Result<(), HpackError>
    where
        F: FnMut(Field<'_>),
    {
        let Decoder {
            table,
            settings_max,
            required_update,
            max_header_list_size,
            max_string_len,
            scratch,
            huffman,
            settings_epoch: _,
        } = self;
        let max_list = *max_header_list_size;
        let max_str = *max_string_len;
        let mut pos = 0usize;
        let mut at_start = true;
        let mut list_size = 0usize;
        let mut over_limit = false;

        while let Some(&first) = block.get(pos) {
            let rest = block.get(pos..).unwrap_or_default();

            if first & 0xe0 == 0x20 {
                // RFC 7541 §6.3: dynamic table size update, pattern 001, 5-bit prefix.
                let (size, n) = integer::decode(rest, 5)?;
                pos += n;
                // RFC 7541 §4.2: "This dynamic table size update MUST occur at the
                // beginning of the first header block following the change to the dynamic
                // table size." A size update after a field representation is an error.
                if !at_start {
                    return Err(HpackError::SizeUpdateNotAtStart);
                }
                // RFC 7541 §6.3: "The new maximum size MUST be lower than or equal to the
                // limit determined by the protocol using HPACK. A value that exceeds this
                // limit MUST be treated as a decoding error."
                if size > *settings_max {
                    return Err(HpackError::SizeUpdateTooLarge {
                        requested: size,
                        max: *settings_max,
                    });
                }
                if required_update.is_some_and(|r| size <= r) {
                    *required_update = None;
                }
                log.size_update = true;
                table.set_max_size(size);
                continue;
            }

            if at_start {
                at_start = false;
                check_required_update(required_update)?;
            }

            if first & 0x80 != 0 {
                // RFC 7541 §6.1: indexed header field, 7-bit prefix.
                let (index, n) = integer::decode(rest, 7)?;
                pos += n;
                log.dynamic_refs |= index > STATIC_LEN;
                let (name, value) = lookup(table, index)?;
                if !over_limit {
                    list_size = list_size
                        .saturating_add(name.len() + value.len())
                        .saturating_add(ENTRY_OVERHEAD);
                    if list_size > max_list {
                        over_limit = true;
                    } else {
                        on_field(Field {
                            name,
                            value,
                            sensitive: false,
                        });
                    }
                }
                continue;
            }

            // RFC 7541 §6.2: literal representations: 01 incremental indexing (6-bit
            // prefix), 0001 never indexed and 0000 without indexing (4-bit prefix).
            let (kind, prefix_bits) = if first & 0x40 != 0 {
                (Literal::Incremental, 6)
            } else if first & 0x10 != 0 {
                (Literal::Never, 4)
            } else {
                (Literal::Without, 4)
            };
            let (name_index, n) = integer::decode(rest, prefix_bits)?;
            pos += n;
            // Past the list limit, only what goes into the table is worth decoding.
            let needed = kind == Literal::Incremental || !over_limit;
            scratch.clear();
            let name = if name_index == 0 {
                Name::Literal(read_string(
                    block, &mut pos, scratch, huffman, max_str, needed,
                )?)
            } else if name_index <= STATIC_LEN {
                Name::Static(static_entry(name_index).map(|(n, _)| n).unwrap_or_default())
            } else {
                // Validates the index even when the name is not needed.
                log.dynamic_refs = true;
                lookup(table, name_index)?;
                Name::Dynamic(name_index - STATIC_LEN - 1)
            };
            let value = read_string(block, &mut pos, scratch, huffman, max_str, needed)?;

            if !over_limit {
                let name_bytes = name_slice(name, table, block, scratch);
                let value_bytes = str_slice(value, block, scratch);
                list_size = list_size
                    .saturating_add(name_bytes.len() + value_bytes.len())
                    .saturating_add(ENTRY_OVERHEAD);
                if list_size > max_list {
                    over_limit = true;
                } else {
                    on_field(Field {
                        name: name_bytes,
                        value: value_bytes,
                        sensitive: kind == Literal::Never,
                    });
                }
            }

            if kind == Literal::Incremental {
                // RFC 7541 §6.2.1: "A literal header field with incremental indexing
                // representation results in appending a header field to the decoded header
                // list and inserting it as a new entry into the dynamic table."
                let src = match name {
                    Name::Static(b) => NameSrc::Bytes(b),
                    Name::Dynamic(i) => NameSrc::Dynamic(i),
                    Name::Literal(s) => NameSrc::Bytes(str_slice(s, block, scratch)),
                };
                log.inserts += 1;
                log.insert_failed |= !table.insert(src, str_slice(value, block, scratch));
            }
        }

        if at_start {
            // An empty block, or one with only size updates, still has to carry a
            // required update.
            check_required_update(required_update)?;
        }
        if over_limit {
            return Err(HpackError::HeaderListTooLarge { max: max_list });
        }
        Ok(())
    }
}

fn check_required_update(required_update: &Option<usize>) -> Result<(), HpackError> {
    match *required_update {
        // RFC 7541 §4.2: "the smallest maximum table size that occurs in that interval
        // MUST be signaled in a dynamic table size update."
        Some(r) => Err(HpackError::MissingSizeUpdate {
            required_at_most: r,
        }),
        None => Ok(()),
    }
}

/// Resolves an index in the combined address space (RFC 7541 §2.3.3).
#[inline]
fn lookup(table: &DynamicTable, index: usize) -> Result<(&[u8], &[u8]), HpackError> {
    if index == 0 {
        // RFC 7541 §6.1: "The index value of 0 is not used. It MUST be treated as a
        // decoding error if found in an indexed header field representation."
        return Err(HpackError::ZeroIndex);
    }
    if index <= STATIC_LEN {
        return static_entry(index).ok_or(HpackError::ZeroIndex);
    }
    // RFC 7541 §2.3.3: "Indices strictly greater than the sum of the lengths of both
    // tables MUST be treated as a decoding error."
    table
        .get(index - STATIC_LEN - 1)
        .ok_or(HpackError::IndexOutOfRange {
            index,
            max: STATIC_LEN + table.len(),
        })
}

/// Reads a string literal (RFC 7541 §5.2) at `block[*pos..]` and advances `pos`.
fn read_string(
    block: &[u8],
    pos: &mut usize,
    scratch: &mut Vec<u8>,
    huffman: &mut HuffmanCache,
    max_len: usize,
    needed: bool,
) -> Result<Str, HpackError> {
    let rest = block.get(*pos..).unwrap_or_default();
    let first = *rest.first().ok_or(HpackError::Truncated)?;
    let huffman_coded = first & 0x80 != 0;
    let (len, n) = integer::decode(rest, 7)?;
    if len > max_len {
        return Err(HpackError::StringTooLong { len, max: max_len });
    }
    let start = *pos + n;
    let end = start.checked_add(len).ok_or(HpackError::Truncated)?;
    let raw = block.get(start..end).ok_or(HpackError::Truncated)?;
    *pos = end;
    if !huffman_coded {
        return Ok(Str::Block(start, end));
    }
    if !needed {
        return Ok(Str::Skipped);
    }
    let s = scratch.len();
    huffman.decode(raw, scratch)?;
    let decoded = scratch.len() - s;
    if decoded > max_len {
        return Err(HpackError::StringTooLong {
            len: decoded,
            max: max_len,
        });
    }
    Ok(Str::Scratch(s, scratch.len()))
}

#[inline]
fn str_slice<'a>(s: Str, block: &'a [u8], scratch: &'a [u8]) -> &'a [u8] {
    match s {
        Str::Block(a, b) => block.get(a..b).unwrap_or_default(),
        Str::Scratch(a, b) => scratch.get(a..b).unwrap_or_default(),
        Str::Skipped => &[],
    }
}

#[inline]
fn name_slice<'a>(
    name: Name,
    table: &'a DynamicTable,
    block: &'a [u8],
    scratch: &'a [u8],
) -> &'a [u8] {
    match name {
        Name::Static(b) => b,
        Name::Dynamic(i) => table.get(i).map(|(n, _)| n).unwrap_or_default(),
        Name::Literal(s) => str_slice(s, block, scratch),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn hex(s: &str) -> Vec<u8> {
        let s: String = s.chars().filter(|c| !c.is_whitespace()).collect();
        (0..s.len())
            .step_by(2)
            .map(|i| u8::from_str_radix(&s[i..i + 2], 16).unwrap())
            .collect()
    }

    fn decode_all(d: &mut Decoder, block: &[u8]) -> Result<Vec<(String, String)>, HpackError> {
        let mut out = Vec::new();
        d.decode(block, |f| {
            out.push((
                String::from_utf8(f.name.to_vec()).unwrap(),
                String::from_utf8(f.value.to_vec()).unwrap(),
            ))
        })?;
        Ok(out)
    }

    fn pairs(p: &[(&str, &str)]) -> Vec<(String, String)> {
        p.iter()
            .map(|(n, v)| (n.to_string(), v.to_string()))
            .collect()
    }

    #[test]
    fn rfc_c2_single_representations() {
        // C.2.1 literal with indexing.
        let mut d = Decoder::new(4096);
        let b = hex("400a 6375 7374 6f6d 2d6b 6579 0d63 7573 746f 6d2d 6865 6164 6572");
        assert_eq!(
            decode_all(&mut d, &b).unwrap(),
            pairs(&[("custom-key", "custom-header")])
        );
        assert_eq!(d.table_size(), 55);
        // C.2.2 literal without indexing.
        let mut d = Decoder::new(4096);
        let b = hex("040c 2f73 616d 706c 652f 7061 7468");
        assert_eq!(
            decode_all(&mut d, &b).unwrap(),
            pairs(&[(":path", "/sample/path")])
        );
        assert_eq!(d.table_len(), 0);
        // C.2.3 never indexed: reported as sensitive.
        let mut d = Decoder::new(4096);
        let b = hex("1008 7061 7373 776f 7264 0673 6563 7265 74");
        let mut sensitive = false;
        d.decode(&b, |f| {
            assert_eq!((f.name, f.value), (&b"password"[..], &b"secret"[..]));
            sensitive = f.sensitive;
        })
        .unwrap();
        assert!(sensitive);
        // C.2.4 indexed.
        assert_eq!(
            decode_all(&mut d, &[0x82]).unwrap(),
            pairs(&[(":method", "GET")])
        );
    }

    #[test]
    fn rfc_c3_requests_without_huffman() {
        let mut d = Decoder::new(4096);
        let b1 = hex("8286 8441 0f77 7777 2e65 7861 6d70 6c65 2e63 6f6d");
        let b2 = hex("8286 84be 5808 6e6f 2d63 6163 6865");
        let b3 = hex("8287 85bf 400a 6375 7374 6f6d 2d6b 6579 0c63 7573 746f 6d2d 7661 6c75 65");
        assert_eq!(
            decode_all(&mut d, &b1).unwrap(),
            pairs(&[
                (":method", "GET"),
                (":scheme", "http"),
                (":path", "/"),
                (":authority", "www.example.com")
            ])
        );
        assert_eq!(d.table_size(), 57);
        assert_eq!(
            decode_all(&mut d, &b2).unwrap().last().unwrap().1,
            "no-cache"
        );
        assert_eq!(d.table_size(), 110);
        assert_eq!(
            decode_all(&mut d, &b3).unwrap(),
            pairs(&[
                (":method", "GET"),
                (":scheme", "https"),
                (":path", "/index.html"),
                (":authority", "www.example.com"),
                ("custom-key", "custom-value")
            ])
        );
        assert_eq!(d.table_size(), 164);
    }

    #[test]
    fn rfc_c5_responses_with_eviction() {
        let mut d = Decoder::new(256);
        let b1 = hex(
            "4803 3330 3258 0770 7269 7661 7465 611d 4d6f 6e2c 2032 3120 4f63 7420 3230 3133
             2032 303a 3133 3a32 3120 474d 546e 1768 7474 7073 3a2f 2f77 7777 2e65 7861 6d70
             6c65 2e63 6f6d",
        );
        let b2 = hex("4803 3330 37c1 c0bf");
        let b3 = hex(
            "88c1 611d 4d6f 6e2c 2032 3120 4f63 7420 3230 3133 2032 303a 3133 3a32 3220 474d
             54c0 5a04 677a 6970 7738 666f 6f3d 4153 444a 4b48 514b 425a 584f 5157 454f 5049
             5541 5851 5745 4f49 553b 206d 6178 2d61 6765 3d33 3630 303b 2076 6572 7369 6f6e
             3d31",
        );
        decode_all(&mut d, &b1).unwrap();
        assert_eq!(d.table_size(), 222);
        let r2 = decode_all(&mut d, &b2).unwrap();
        assert_eq!(r2[0], (":status".into(), "307".into()));
        assert_eq!(d.table_size(), 222);
        let r3 = decode_all(&mut d, &b3).unwrap();
        assert_eq!(r3.len(), 6);
        assert_eq!(
            r3[5].1,
            "foo=ASDJKHQKBZXOQWEOPIUAXQWEOIU; max-age=3600; version=1"
        );
        assert_eq!(d.table_size(), 215);
        assert_eq!(d.table_len(), 3);
    }
    #[test]
    fn rfc_c4_requests_with_huffman() {
        let mut d = Decoder::new(4096);
        let blocks = [
            hex("8286 8441 8cf1 e3c2 e5f2 3a6b a0ab 90f4 ff"),
            hex("8286 84be 5886 a8eb 1064 9cbf"),
            hex("8287 85bf 4088 25a8 49e9 5ba9 7d7f 8925 a849 e95b b8e8 b4bf"),
        ];
        let base = [
            (":method", "GET"),
            (":scheme", "http"),
            (":path", "/"),
            (":authority", "www.example.com"),
        ];
        assert_eq!(decode_all(&mut d, &blocks[0]).unwrap(), pairs(&base));
        assert_eq!(d.table_size(), 57);
        let mut second = base.to_vec();
        second.push(("cache-control", "no-cache"));
        assert_eq!(decode_all(&mut d, &blocks[1]).unwrap(), pairs(&second));
        assert_eq!(d.table_size(), 110);
        assert_eq!(
            decode_all(&mut d, &blocks[2]).unwrap(),
            pairs(&[
                (":method", "GET"),
                (":scheme", "https"),
                (":path", "/index.html"),
                (":authority", "www.example.com"),
                ("custom-key", "custom-value")
            ])
        );
        assert_eq!(d.table_size(), 164);
        assert_eq!(
            d.table_entry(0),
            Some((&b"custom-key"[..], &b"custom-value"[..]))
        );
    }

    #[test]
    fn rfc_c6_responses_with_huffman() {
        let mut d = Decoder::new(256);
        let blocks = [
            hex(
                "4882 6402 5885 aec3 771a 4b61 96d0 7abe 9410 54d4 44a8 2005 9504 0b81 66e0 82a6
                 2d1b ff6e 919d 29ad 1718 63c7 8f0b 97c8 e9ae 82ae 43d3",
            ),
            hex("4883 640e ffc1 c0bf"),
            hex(
                "88c1 6196 d07a be94 1054 d444 a820 0595 040b 8166 e084 a62d 1bff c05a 839b d9ab
                 77ad 94e7 821d d7f2 e6c7 b335 dfdf cd5b 3960 d5af 2708 7f36 72c1 ab27 0fb5 291f
                 9587 3160 65c0 03ed 4ee5 b106 3d50 07",
            ),
        ];
        let d1 = "Mon, 21 Oct 2013 20:13:21 GMT";
        let loc = "https://www.example.com";
        assert_eq!(
            decode_all(&mut d, &blocks[0]).unwrap(),
            pairs(&[
                (":status", "302"),
                ("cache-control", "private"),
                ("date", d1),
                ("location", loc)
            ])
        );
        assert_eq!(d.table_size(), 222);
        assert_eq!(
            decode_all(&mut d, &blocks[1]).unwrap(),
            pairs(&[
                (":status", "307"),
                ("cache-control", "private"),
                ("date", d1),
                ("location", loc)
            ])
        );
        assert_eq!(d.table_size(), 222);
        assert_eq!(
            decode_all(&mut d, &blocks[2]).unwrap(),
            pairs(&[
                (":status", "200"),
                ("cache-control", "private"),
                ("date", "Mon, 21 Oct 2013 20:13:22 GMT"),
                ("location", loc),
                ("content-encoding", "gzip"),
                (
                    "set-cookie",
                    "foo=ASDJKHQKBZXOQWEOPIUAXQWEOIU; max-age=3600; version=1"
                )
            ])
        );
        assert_eq!(d.table_size(), 215);
        assert_eq!(d.table_len(), 3);
    }
}
