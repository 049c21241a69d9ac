//! The static table (RFC 7541 §2.3.1, Appendix A) and the dynamic table (§2.3.2, §4).
//!
//! The dynamic table keeps its entries in a `VecDeque` of small fixed-size records (newest
//! at the back) and all names and values in one byte arena. Because eviction is strictly
//! FIFO, the live bytes always form one contiguous run `[head, arena.len())` of the arena;
//! when an insert would outgrow the arena's capacity and at least half of it is dead, the
//! live run is moved to the front (an amortised O(1) memmove per inserted byte). Entries
//! record *virtual* offsets (bytes ever appended), so compaction never touches them. Once
//! the table has been through one full cycle, inserts and evictions allocate nothing.

use std::collections::VecDeque;

/// Number of entries in the static table.
pub const STATIC_LEN: usize = 61;

/// RFC 7541 §4.1: "The size of an entry is the sum of its name's length in octets (as
/// defined in Section 5.2), its value's length in octets, and 32."
pub const ENTRY_OVERHEAD: usize = 32;

/// RFC 7541 Appendix A, index 1 first.
#[rustfmt::skip]
pub static STATIC_TABLE: [(&[u8], &[u8]); STATIC_LEN] = [
    (b":authority", b""),
    (b":method", b"GET"),
    (b":method", b"POST"),
    (b":path", b"/"),
    (b":path", b"/index.html"),
    (b":scheme", b"http"),
    (b":scheme", b"https"),
    (b":status", b"200"),
    (b":status", b"204"),
    (b":status", b"206"),
    (b":status", b"304"),
    (b":status", b"400"),
    (b":status", b"404"),
    (b":status", b"500"),
    (b"accept-charset", b""),
    (b"accept-encoding", b"gzip, deflate"),
    (b"accept-language", b""),
    (b"accept-ranges", b""),
    (b"accept", b""),
    (b"access-control-allow-origin", b""),
    (b"age", b""),
    (b"allow", b""),
    (b"authorization", b""),
    (b"cache-control", b""),
    (b"content-disposition", b""),
    (b"content-encoding", b""),
    (b"content-language", b""),
    (b"content-length", b""),
    (b"content-location", b""),
    (b"content-range", b""),
    (b"content-type", b""),
    (b"cookie", b""),
    (b"date", b""),
    (b"etag", b""),
    (b"expect", b""),
    (b"expires", b""),
    (b"from", b""),
    (b"host", b""),
    (b"if-match", b""),
    (b"if-modified-since", b""),
    (b"if-none-match", b""),
    (b"if-range", b""),
    (b"if-unmodified-since", b""),
    (b"last-modified", b""),
    (b"link", b""),
    (b"location", b""),
    (b"max-forwards", b""),
    (b"proxy-authenticate", b""),
    (b"proxy-authorization", b""),
    (b"range", b""),
    (b"referer", b""),
    (b"refresh", b""),
    (b"retry-after", b""),
    (b"server", b""),
    (b"set-cookie", b""),
    (b"strict-transport-security", b""),
    (b"transfer-encoding", b""),
    (b"user-agent", b""),
    (b"vary", b""),
    (b"via", b""),
    (b"www-authenticate", b""),
];

/// Entry `index` (1-based, RFC numbering) of the static table.
#[inline]
pub fn static_entry(index: usize) -> Option<(&'static [u8], &'static [u8])> {
    STATIC_TABLE.get(index.checked_sub(1)?).copied()
}

/// Result of looking a field up in the static table.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum StaticMatch {
    /// Neither the name nor the field is in the static table.
    None,
    /// The name is at this index (value differs).
    Name(usize),
    /// Name and value are at this index.
    Full(usize),
}

/// Finds `name: value` in the static table (lowest index wins, as in Appendix A).
pub fn static_lookup(name: &[u8], value: &[u8]) -> StaticMatch {
    // Names whose static entries carry values.
    let with_values: Option<(usize, &[&[u8]])> = match name {
        b":method" => Some((2, &[b"GET", b"POST"])),
        b":path" => Some((4, &[b"/", b"/index.html"])),
        b":scheme" => Some((6, &[b"http", b"https"])),
        b":status" => Some((8, &[b"200", b"204", b"206", b"304", b"400", b"404", b"500"])),
        b"accept-encoding" => Some((16, &[b"gzip, deflate"])),
        _ => None,
    };
    if let Some((first, values)) = with_values {
        return match values.iter().position(|v| *v == value) {
            Some(i) => StaticMatch::Full(first + i),
            None => StaticMatch::Name(first),
        };
    }
    let index = match name {
        b":authority" => 1,
        b"accept-charset" => 15,
        b"accept-language" => 17,
        b"accept-ranges" => 18,
        b"accept" => 19,
        b"access-control-allow-origin" => 20,
        b"age" => 21,
        b"allow" => 22,
        b"authorization" => 23,
        b"cache-control" => 24,
        b"content-disposition" => 25,
        b"content-encoding" => 26,
        b"content-language" => 27,
        b"content-length" => 28,
        b"content-location" => 29,
        b"content-range" => 30,
        b"content-type" => 31,
        b"cookie" => 32,
        b"date" => 33,
        b"etag" => 34,
        b"expect" => 35,
        b"expires" => 36,
        b"from" => 37,
        b"host" => 38,
        b"if-match" => 39,
        b"if-modified-since" => 40,
        b"if-none-match" => 41,
        b"if-range" => 42,
        b"if-unmodified-since" => 43,
        b"last-modified" => 44,
        b"link" => 45,
        b"location" => 46,
        b"max-forwards" => 47,
        b"proxy-authenticate" => 48,
        b"proxy-authorization" => 49,
        b"range" => 50,
        b"referer" => 51,
        b"refresh" => 52,
        b"retry-after" => 53,
        b"server" => 54,
        b"set-cookie" => 55,
        b"strict-transport-security" => 56,
        b"transfer-encoding" => 57,
        b"user-agent" => 58,
        b"vary" => 59,
        b"via" => 60,
        b"www-authenticate" => 61,
        _ => return StaticMatch::None,
    };
    if value.is_empty() {
        StaticMatch::Full(index)
    } else {
        StaticMatch::Name(index)
    }
}

/// A 64-bit multiplicative hash for the encoder's dynamic-table matching (not
/// collision-resistant; matches are always confirmed by comparing bytes).
#[inline]
pub(crate) fn hash_bytes(seed: u64, bytes: &[u8]) -> u64 {
    const K: u64 = 0x9e37_79b9_7f4a_7c15;
    let mut h = seed ^ (bytes.len() as u64).wrapping_mul(K);
    let mut chunks = bytes.chunks_exact(8);
    for c in &mut chunks {
        let mut w = [0u8; 8];
        w.copy_from_slice(c);
        h = (h.rotate_left(23) ^ u64::from_le_bytes(w)).wrapping_mul(K);
    }
    let rest = chunks.remainder();
    if !rest.is_empty() {
        let mut w = [0u8; 8];
        w[..rest.len()].copy_from_slice(rest);
        h = (h.rotate_left(23) ^ u64::from_le_bytes(w)).wrapping_mul(K);
    }
    h ^ (h >> 29)
}

/// Where the name of a new dynamic entry comes from.
#[derive(Debug, Clone, Copy)]
pub(crate) enum NameSrc<'a> {
    /// Bytes outside the table.
    Bytes(&'a [u8]),
    /// The name of the dynamic entry at this 0-based position (0 = newest), copied before
    /// any eviction (RFC 7541 §4.4: "Implementations are cautioned to avoid deleting the
    /// referenced name if the referenced entry is evicted from the dynamic table prior to
    /// inserting the new entry.").
    Dynamic(usize),
}

#[derive(Debug, Clone, Copy)]
struct Entry {
    /// Virtual offset of the name in the arena; the value follows it.
    start: u64,
    name_len: u32,
    value_len: u32,
    /// Hashes of the name and of the name + value (0 when hashing is off).
    name_hash: u64,
    field_hash: u64,
}

impl Entry {
    fn size(&self) -> usize {
        self.name_len as usize + self.value_len as usize + ENTRY_OVERHEAD
    }
}

/// The HPACK dynamic table (RFC 7541 §2.3.2, §4): FIFO, newest entry first in the index
/// space, bounded by a byte size.
#[derive(Debug, Clone)]
pub struct DynamicTable {
    entries: VecDeque<Entry>,
    arena: Vec<u8>,
    /// Virtual offset of `arena[0]`.
    base: u64,
    /// Sum of entry sizes (RFC 7541 §4.1).
    size: usize,
    max_size: usize,
    hashed: bool,
    /// Bumped on every change (insert, eviction, resize); lets cached encodings detect
    /// that the table moved under them.
    generation: u64,
}

impl DynamicTable {
    /// An empty table of maximum size `max_size`. `hashed` keeps per-entry hashes for
    /// the encoder's matching (the decoder does not need them).
    pub fn new(max_size: usize, hashed: bool) -> Self {
        DynamicTable {
            entries: VecDeque::new(),
            arena: Vec::new(),
            base: 0,
            size: 0,
            max_size,
            hashed,
            generation: 0,
        }
    }

    /// Number of entries.
    #[inline]
    pub fn len(&self) -> usize {
        self.entries.len()
    }

    /// `true` when the table holds no entry.
    #[inline]
    pub fn is_empty(&self) -> bool {
        self.entries.is_empty()
    }

    /// Current size (sum of name + value + 32 over the entries).
    #[inline]
    pub fn size(&self) -> usize {
        self.size
    }

    /// Current maximum size.
    #[inline]
    pub fn max_size(&self) -> usize {
        self.max_size
    }

    /// Change counter (see the type's docs).
    #[inline]
    pub fn generation(&self) -> u64 {
        self.generation
    }

    /// Entry at 0-based dynamic position `i` (0 = most recently inserted, which is HPACK
    /// index 62).
    #[inline]
    pub fn get(&self, i: usize) -> Option<(&[u8], &[u8])> {
        let pos = self.entries.len().checked_sub(i.checked_add(1)?)?;
        let e = self.entries.get(pos)?;
        let start = usize::try_from(e.start.checked_sub(self.base)?).ok()?;
        let mid = start.checked_add(e.name_len as usize)?;
        let end = mid.checked_add(e.value_len as usize)?;
        Some((self.arena.get(start..mid)?, self.arena.get(mid..end)?))
    }

    /// Sets the maximum size, evicting the oldest entries until the table fits (RFC 7541
    /// §4.3: "Whenever the maximum size for the dynamic table is reduced, entries are
    /// evicted from the end of the dynamic table until the size of the dynamic table is
    /// less than or equal to the maximum size.").
    pub fn set_max_size(&mut self, max_size: usize) {
        self.max_size = max_size;
        self.generation = self.generation.wrapping_add(1);
        self.evict_to(max_size);
    }

    /// Removes every entry.
    pub fn clear(&mut self) {
        self.entries.clear();
        self.base = self.base.wrapping_add(self.arena.len() as u64);
        self.arena.clear();
        self.size = 0;
        self.generation = self.generation.wrapping_add(1);
    }

    fn evict_to(&mut self, target: usize) {
        while self.size > target {
            match self.entries.pop_front() {
                Some(e) => self.size -= e.size(),
                None => {
                    self.size = 0;
                    break;
                }
            }
        }
        if self.entries.is_empty() {
            self.base = self.base.wrapping_add(self.arena.len() as u64);
            self.arena.clear();
        }
    }

    /// Adds `name: value` as the newest entry, evicting as needed (RFC 7541 §4.4).
    /// Returns `false` when the entry is larger than the maximum size: then, per §4.4, "an
    /// attempt to add an entry larger than the maximum size causes the table to be emptied
    /// of all existing entries and results in an empty table."
    pub(crate) fn insert(&mut self, name: NameSrc<'_>, value: &[u8]) -> bool {
        self.generation = self.generation.wrapping_add(1);
        let name_len = match name {
            NameSrc::Bytes(b) => b.len(),
            NameSrc::Dynamic(i) => match self.get(i) {
                Some((n, _)) => n.len(),
                None => return false,
            },
        };
        let entry_size = name_len
            .saturating_add(value.len())
            .saturating_add(ENTRY_OVERHEAD);
        let (Ok(name_len32), Ok(value_len32)) =
            (u32::try_from(name_len), u32::try_from(value.len()))
        else {
            self.clear();
            return false;
        };
        if entry_size > self.max_size {
            self.clear();
            return false;
        }
        self.make_room(name_len + value.len());
        let start = self.base.wrapping_add(self.arena.len() as u64);
        match name {
            NameSrc::Bytes(b) => self.arena.extend_from_slice(b),
            NameSrc::Dynamic(i) => {
                // The referenced entry is still live (eviction happens below), so its bytes
                // are in the arena; copy them within it.
                let range = self.name_range(i);
                match range {
                    Some(r) => self.arena.extend_from_within(r),
                    None => {
                        self.clear();
                        return false;
                    }
                }
            }
        }
        let (name_hash, field_hash) = if self.hashed {
            let end = self.arena.len();
            let name_bytes = self.arena.get(end - name_len..end).unwrap_or(&[]);
            let nh = hash_bytes(0, name_bytes);
            (nh, hash_bytes(nh, value))
        } else {
            (0, 0)
        };
        self.arena.extend_from_slice(value);
        self.entries.push_back(Entry {
            start,
            name_len: name_len32,
            value_len: value_len32,
            name_hash,
            field_hash,
        });
        self.size += entry_size;
        // The new entry fits on its own (checked above), so only older ones go.
        self.evict_to(self.max_size);
        true
    }

    fn name_range(&self, i: usize) -> Option<std::ops::Range<usize>> {
        let pos = self.entries.len().checked_sub(i.checked_add(1)?)?;
        let e = self.entries.get(pos)?;
        let start = usize::try_from(e.start.checked_sub(self.base)?).ok()?;
        let end = start.checked_add(e.name_len as usize)?;
        (end <= self.arena.len()).then_some(start..end)
    }

    /// Makes sure `extra` bytes can be appended, compacting the arena when that avoids a
    /// reallocation and at least half of the arena is dead.
    fn make_room(&mut self, extra: usize) {
        if self.arena.len() + extra <= self.arena.capacity() {
            return;
        }
        let head = match self.entries.front() {
            Some(e) => usize::try_from(e.start.wrapping_sub(self.base)).unwrap_or(0),
            None => self.arena.len(),
        };
        let head = head.min(self.arena.len());
        let live = self.arena.len() - head;
        if head >= live {
            self.arena.copy_within(head.., 0);
            self.arena.truncate(live);
            self.base = self.base.wrapping_add(head as u64);
        }
        // Otherwise `extend` grows the arena; it is bounded by ~4x the maximum size, since
        // growth only happens while the dead part is smaller than the live part.
        self.arena.reserve(extra);
    }

    /// Encoder search: the newest entry matching `name: value` exactly, else the newest
    /// with the same name. Returns `(position, full_match)` (position 0 = newest). Only
    /// meaningful on a table created with hashing on.
    pub(crate) fn find(
        &self,
        name: &[u8],
        value: &[u8],
        name_hash: u64,
        field_hash: u64,
    ) -> Option<(usize, bool)> {
        let mut name_match = None;
        for (i, e) in self.entries.iter().rev().enumerate() {
            if e.name_hash != name_hash {
                continue;
            }
            if e.field_hash == field_hash {
                if let Some((n, v)) = self.get(i) {
                    if n == name && v == value {
                        return Some((i, true));
                    }
                }
            }
            if name_match.is_none() {
                if let Some((n, _)) = self.get(i) {
                    if n == name {
                        name_match = Some((i, false));
                    }
                }
            }
        }
        name_match
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn ins(t: &mut DynamicTable, n: &str, v: &str) -> bool {
        t.insert(NameSrc::Bytes(n.as_bytes()), v.as_bytes())
    }

    fn entries(t: &DynamicTable) -> Vec<(String, String)> {
        (0..t.len())
            .map(|i| {
                let (n, v) = t.get(i).unwrap();
                (
                    String::from_utf8(n.to_vec()).unwrap(),
                    String::from_utf8(v.to_vec()).unwrap(),
                )
            })
            .collect()
    }

    #[test]
    fn static_table_lookups() {
        assert_eq!(static_entry(1), Some((&b":authority"[..], &b""[..])));
        assert_eq!(static_entry(61), Some((&b"www-authenticate"[..], &b""[..])));
        assert_eq!(static_entry(0), None);
        assert_eq!(static_entry(62), None);
        // Every static entry finds itself (full match on the lowest index).
        for (i, (n, v)) in STATIC_TABLE.iter().enumerate() {
            assert_eq!(static_lookup(n, v), StaticMatch::Full(i + 1), "{i}");
        }
        assert_eq!(static_lookup(b":status", b"201"), StaticMatch::Name(8));
        assert_eq!(
            static_lookup(b"content-type", b"text/html"),
            StaticMatch::Name(31)
        );
        assert_eq!(static_lookup(b"x-custom", b""), StaticMatch::None);
    }

    #[test]
    fn sizes_and_eviction() {
        let mut t = DynamicTable::new(100, true);
        assert!(ins(&mut t, "a", "b")); // 34
        assert!(ins(&mut t, "cc", "dd")); // 36 -> 70
        assert_eq!(t.size(), 70);
        assert!(ins(&mut t, "eee", "f")); // 36 -> 106 > 100: evict "a"
        assert_eq!(
            entries(&t),
            [("eee".into(), "f".into()), ("cc".into(), "dd".into())]
        );
        assert_eq!(t.size(), 72);
        t.set_max_size(40);
        assert_eq!(entries(&t), [("eee".into(), "f".into())]);
        // Too large: empties the table.
        assert!(!ins(&mut t, "x", &"y".repeat(10)));
        assert!(t.is_empty());
        assert_eq!(t.size(), 0);
        t.set_max_size(0);
        assert!(!ins(&mut t, "", ""));
    }

    #[test]
    fn name_reference_to_an_entry_that_gets_evicted() {
        // Only room for one entry: inserting with the name of the single existing entry
        // evicts it, and the name must survive (RFC 7541 §4.4).
        let mut t = DynamicTable::new(60, false);
        assert!(ins(&mut t, "custom-name", "v1"));
        assert!(t.insert(NameSrc::Dynamic(0), b"value-2"));
        assert_eq!(entries(&t), [("custom-name".into(), "value-2".into())]);
    }

    #[test]
    fn arena_is_reused_in_steady_state() {
        let mut t = DynamicTable::new(4096, true);
        let mut cap = 0;
        for i in 0..20_000u32 {
            let v = format!("value-{}", i % 977);
            assert!(ins(&mut t, "x-header", &v));
            if i == 10_000 {
                cap = t.arena.capacity();
            }
            assert!(t.size() <= 4096);
        }
        assert_eq!(t.arena.capacity(), cap, "arena grew after warm-up");
        assert!(cap <= 8 * 4096, "arena capacity {cap}");
        // Contents are still right after many compactions.
        let (n, v) = t.get(0).unwrap();
        assert_eq!(
            (n, v),
            (
                &b"x-header"[..],
                format!("value-{}", 19_999 % 977).as_bytes()
            )
        );
    }

    #[test]
    fn find_prefers_full_match() {
        let mut t = DynamicTable::new(4096, true);
        ins(&mut t, "x", "1");
        ins(&mut t, "x", "2");
        ins(&mut t, "y", "1");
        let f = |t: &DynamicTable, n: &str, v: &str| {
            let nh = hash_bytes(0, n.as_bytes());
            t.find(n.as_bytes(), v.as_bytes(), nh, hash_bytes(nh, v.as_bytes()))
        };
        assert_eq!(f(&t, "x", "1"), Some((2, true)));
        assert_eq!(f(&t, "x", "3"), Some((1, false)));
        assert_eq!(f(&t, "z", "1"), None);
    }
}
