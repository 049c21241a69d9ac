//! The QPACK static table (RFC 9204 §3.1, Appendix A) and the dynamic table with absolute,
//! relative and post-base indexing (§3.2).
//!
//! The dynamic table reuses HPACK's FIFO table ([`crate::hpack::table::DynamicTable`]:
//! same entry size rule, same eviction order); QPACK adds the absolute index space on top.
//! RFC 9204 §3.2.4: "the first entry inserted has an absolute index of 0; indices increase
//! by one with each insertion." The table keeps the insert count, so the entry with
//! absolute index `a` is at HPACK position `insert_count - 1 - a` (0 = newest) while it has
//! not been evicted.

use crate::hpack::table::{DynamicTable as Fifo, NameSrc, ENTRY_OVERHEAD};

/// Number of entries in the QPACK static table.
pub const STATIC_LEN: usize = 99;

/// RFC 9204 Appendix A, index 0 first (QPACK's static table is 0-based).
#[rustfmt::skip]
pub static STATIC_TABLE: [(&[u8], &[u8]); STATIC_LEN] = [
    (b":authority", b""),
    (b":path", b"/"),
    (b"age", b"0"),
    (b"content-disposition", b""),
    (b"content-length", b"0"),
    (b"cookie", b""),
    (b"date", b""),
    (b"etag", b""),
    (b"if-modified-since", b""),
    (b"if-none-match", b""),
    (b"last-modified", b""),
    (b"link", b""),
    (b"location", b""),
    (b"referer", b""),
    (b"set-cookie", b""),
    (b":method", b"CONNECT"),
    (b":method", b"DELETE"),
    (b":method", b"GET"),
    (b":method", b"HEAD"),
    (b":method", b"OPTIONS"),
    (b":method", b"POST"),
    (b":method", b"PUT"),
    (b":scheme", b"http"),
    (b":scheme", b"https"),
    (b":status", b"103"),
    (b":status", b"200"),
    (b":status", b"304"),
    (b":status", b"404"),
    (b":status", b"503"),
    (b"accept", b"*/*"),
    (b"accept", b"application/dns-message"),
    (b"accept-encoding", b"gzip, deflate, br"),
    (b"accept-ranges", b"bytes"),
    (b"access-control-allow-headers", b"cache-control"),
    (b"access-control-allow-headers", b"content-type"),
    (b"access-control-allow-origin", b"*"),
    (b"cache-control", b"max-age=0"),
    (b"cache-control", b"max-age=2592000"),
    (b"cache-control", b"max-age=604800"),
    (b"cache-control", b"no-cache"),
    (b"cache-control", b"no-store"),
    (b"cache-control", b"public, max-age=31536000"),
    (b"content-encoding", b"br"),
    (b"content-encoding", b"gzip"),
    (b"content-type", b"application/dns-message"),
    (b"content-type", b"application/javascript"),
    (b"content-type", b"application/json"),
    (b"content-type", b"application/x-www-form-urlencoded"),
    (b"content-type", b"image/gif"),
    (b"content-type", b"image/jpeg"),
    (b"content-type", b"image/png"),
    (b"content-type", b"text/css"),
    (b"content-type", b"text/html; charset=utf-8"),
    (b"content-type", b"text/plain"),
    (b"content-type", b"text/plain;charset=utf-8"),
    (b"range", b"bytes=0-"),
    (b"strict-transport-security", b"max-age=31536000"),
    (b"strict-transport-security", b"max-age=31536000; includesubdomains"),
    (b"strict-transport-security", b"max-age=31536000; includesubdomains; preload"),
    (b"vary", b"accept-encoding"),
    (b"vary", b"origin"),
    (b"x-content-type-options", b"nosniff"),
    (b"x-xss-protection", b"1; mode=block"),
    (b":status", b"100"),
    (b":status", b"204"),
    (b":status", b"206"),
    (b":status", b"302"),
    (b":status", b"400"),
    (b":status", b"403"),
    (b":status", b"421"),
    (b":status", b"425"),
    (b":status", b"500"),
    (b"accept-language", b""),
    (b"access-control-allow-credentials", b"FALSE"),
    (b"access-control-allow-credentials", b"TRUE"),
    (b"access-control-allow-headers", b"*"),
    (b"access-control-allow-methods", b"get"),
    (b"access-control-allow-methods", b"get, post, options"),
    (b"access-control-allow-methods", b"options"),
    (b"access-control-expose-headers", b"content-length"),
    (b"access-control-request-headers", b"content-type"),
    (b"access-control-request-method", b"get"),
    (b"access-control-request-method", b"post"),
    (b"alt-svc", b"clear"),
    (b"authorization", b""),
    (b"content-security-policy", b"script-src 'none'; object-src 'none'; base-uri 'none'"),
    (b"early-data", b"1"),
    (b"expect-ct", b""),
    (b"forwarded", b""),
    (b"if-range", b""),
    (b"origin", b""),
    (b"purpose", b"prefetch"),
    (b"server", b""),
    (b"timing-allow-origin", b"*"),
    (b"upgrade-insecure-requests", b"1"),
    (b"user-agent", b""),
    (b"x-forwarded-for", b""),
    (b"x-frame-options", b"deny"),
    (b"x-frame-options", b"sameorigin"),
];

/// Entry `index` (0-based, RFC 9204 numbering) of the static table.
#[inline]
pub fn static_entry(index: usize) -> Option<(&'static [u8], &'static [u8])> {
    STATIC_TABLE.get(index).copied()
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

/// Finds `name: value` in the static table (a full match wins over a name match; the
/// lowest index wins among equals). Only the entries whose name has `name`'s length are
/// compared (`by_name_len`): the server's encoder calls this per response field, and a
/// linear scan of the 99 entries (with a `memcmp` per same-length name) was about 5% of
/// `serve --h3`'s CPU with a dynamic table.
pub fn static_lookup(name: &[u8], value: &[u8]) -> StaticMatch {
    let mut name_match = None;
    let bucket = by_name_len().get(name.len()).map_or(&[][..], Vec::as_slice);
    for &i in bucket {
        let i = usize::from(i);
        let Some((n, v)) = STATIC_TABLE.get(i) else {
            continue;
        };
        if n.first() == name.first() && *n == name {
            if *v == value {
                return StaticMatch::Full(i);
            }
            name_match.get_or_insert(i);
        }
    }
    name_match.map_or(StaticMatch::None, StaticMatch::Name)
}

/// Static-table indices by name length, ascending (built once per process).
fn by_name_len() -> &'static [Vec<u8>] {
    static BY_LEN: std::sync::OnceLock<Vec<Vec<u8>>> = std::sync::OnceLock::new();
    BY_LEN.get_or_init(|| {
        let longest = STATIC_TABLE.iter().map(|(n, _)| n.len()).max().unwrap_or(0);
        let mut by_len = vec![Vec::new(); longest + 1];
        for (i, (n, _)) in STATIC_TABLE.iter().enumerate() {
            if let (Some(b), Ok(i)) = (by_len.get_mut(n.len()), u8::try_from(i)) {
                b.push(i);
            }
        }
        by_len
    })
}

/// The size of an entry (RFC 9204 §3.2.1: "The size of an entry is the sum of its name's
/// length in bytes, its value's length in bytes, and 32 additional bytes.").
#[inline]
pub fn entry_size(name: &[u8], value: &[u8]) -> usize {
    name.len() + value.len() + ENTRY_OVERHEAD
}

/// The QPACK dynamic table: a FIFO bounded by its capacity, addressed by absolute index.
#[derive(Debug, Clone)]
pub struct DynamicTable {
    fifo: Fifo,
    /// Total number of insertions ever (RFC 9204 §2.1.4 "Insert Count").
    inserts: u64,
    scratch: Vec<u8>,
}

impl DynamicTable {
    /// An empty table with capacity 0 (RFC 9204 §3.2.3: "The initial capacity of the
    /// dynamic table is zero."). `hashed` keeps hashes for the encoder's lookups.
    pub fn new(hashed: bool) -> Self {
        DynamicTable {
            fifo: Fifo::new(0, hashed),
            inserts: 0,
            scratch: Vec::new(),
        }
    }

    /// Number of insertions so far: the absolute index the next entry gets.
    #[inline]
    pub fn insert_count(&self) -> u64 {
        self.inserts
    }

    /// Number of live entries.
    #[inline]
    pub fn len(&self) -> usize {
        self.fifo.len()
    }

    /// `true` when no entry is live.
    #[inline]
    pub fn is_empty(&self) -> bool {
        self.fifo.is_empty()
    }

    /// Current size (sum of entry sizes).
    #[inline]
    pub fn size(&self) -> usize {
        self.fifo.size()
    }

    /// Current capacity.
    #[inline]
    pub fn capacity(&self) -> usize {
        self.fifo.max_size()
    }

    /// Absolute index of the oldest live entry (equal to the insert count when empty).
    #[inline]
    pub fn first_live(&self) -> u64 {
        self.inserts - self.fifo.len() as u64
    }

    /// Sets the capacity, evicting the oldest entries until the table fits (RFC 9204
    /// §3.2.3: "Reducing the dynamic table capacity can cause entries to be evicted").
    /// The caller checks the limit (SETTINGS_QPACK_MAX_TABLE_CAPACITY).
    pub fn set_capacity(&mut self, capacity: usize) {
        self.fifo.set_max_size(capacity);
    }

    /// Entry with absolute index `abs`, if it is live.
    #[inline]
    pub fn get_absolute(&self, abs: u64) -> Option<(&[u8], &[u8])> {
        let pos = self.position(abs)?;
        self.fifo.get(pos)
    }

    /// Entry at relative index `rel` on the encoder stream (RFC 9204 §3.2.5: "the relative
    /// index of 0 refers to the most recently inserted value"), with its absolute index.
    #[inline]
    pub fn get_relative(&self, rel: u64) -> Option<(u64, &[u8], &[u8])> {
        let abs = self.inserts.checked_sub(rel.checked_add(1)?)?;
        let (n, v) = self.get_absolute(abs)?;
        Some((abs, n, v))
    }

    fn position(&self, abs: u64) -> Option<usize> {
        if abs < self.first_live() || abs >= self.inserts {
            return None;
        }
        usize::try_from(self.inserts - 1 - abs).ok()
    }

    /// Whether `size` more octets fit after evicting only entries below absolute index
    /// `evictable_below` (entries at or above it must stay). RFC 9204 §2.1.1: "If the
    /// dynamic table does not contain enough room for a new entry without evicting other
    /// entries, and the entries that would be evicted are not evictable, the encoder MUST
    /// NOT insert that entry into the dynamic table".
    pub fn fits_evicting_below(&self, size: usize, evictable_below: u64) -> bool {
        if size > self.capacity() {
            return false;
        }
        let mut used = self.size();
        let mut abs = self.first_live();
        while used + size > self.capacity() {
            if abs >= evictable_below {
                return false;
            }
            match self.get_absolute(abs) {
                Some((n, v)) => used -= entry_size(n, v),
                None => return false,
            }
            abs += 1;
        }
        true
    }

    /// Inserts a new entry whose name is `name` (bytes) or the name of the live entry with
    /// absolute index `name_abs`, evicting as needed. Returns `false`, leaving the table
    /// unchanged, when the entry is larger than the capacity (RFC 9204 §3.2.2: an error).
    pub fn insert(&mut self, name: InsertName<'_>, value: &[u8]) -> bool {
        let name_len = match name {
            InsertName::Bytes(b) => b.len(),
            InsertName::Absolute(a) => match self.get_absolute(a) {
                Some((n, _)) => n.len(),
                None => return false,
            },
        };
        if name_len + value.len() + ENTRY_OVERHEAD > self.capacity() {
            return false;
        }
        let src = match name {
            InsertName::Bytes(b) => NameSrc::Bytes(b),
            InsertName::Absolute(a) => match self.position(a) {
                Some(p) => NameSrc::Dynamic(p),
                None => return false,
            },
        };
        let ok = self.fifo.insert(src, value);
        if ok {
            self.inserts += 1;
        }
        ok
    }

    /// Duplicates the live entry with absolute index `abs` (RFC 9204 §4.3.4). Returns
    /// `false` if it is not live (or cannot fit).
    pub fn duplicate(&mut self, abs: u64) -> bool {
        let Some(pos) = self.position(abs) else {
            return false;
        };
        let mut scratch = std::mem::take(&mut self.scratch);
        scratch.clear();
        if let Some((_, v)) = self.fifo.get(pos) {
            scratch.extend_from_slice(v);
        }
        let ok = self.insert(InsertName::Absolute(abs), &scratch);
        self.scratch = scratch;
        ok
    }

    /// Encoder lookup: the newest live entry matching `name: value` exactly, else the newest
    /// with the same name, as `(absolute index, full match)`. Only on hashed tables.
    pub(crate) fn find(&self, name: &[u8], value: &[u8]) -> Option<(u64, bool)> {
        let nh = crate::hpack::table::hash_bytes(0, name);
        let fh = crate::hpack::table::hash_bytes(nh, value);
        let (pos, full) = self.fifo.find(name, value, nh, fh)?;
        Some((self.inserts - 1 - pos as u64, full))
    }
}

/// Where an inserted entry's name comes from.
#[derive(Debug, Clone, Copy)]
pub enum InsertName<'a> {
    /// Literal bytes (or a static-table name).
    Bytes(&'a [u8]),
    /// The name of the live dynamic entry with this absolute index (copied before any
    /// eviction the insert causes).
    Absolute(u64),
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn static_lookup_agrees_with_a_linear_scan() {
        let linear = |name: &[u8], value: &[u8]| {
            let mut name_match = None;
            for (i, (n, v)) in STATIC_TABLE.iter().enumerate() {
                if *n == name {
                    if *v == value {
                        return StaticMatch::Full(i);
                    }
                    name_match.get_or_insert(i);
                }
            }
            name_match.map_or(StaticMatch::None, StaticMatch::Name)
        };
        let mut cases: Vec<(&[u8], &[u8])> = STATIC_TABLE.to_vec();
        cases.extend(
            STATIC_TABLE
                .iter()
                .map(|(n, _)| (*n, &b"no such value"[..])),
        );
        cases.extend([
            (&b"server"[..], &b"h2lab"[..]),
            (b"", b""),
            (b"x", b"y"),
            (b"a-name-longer-than-any-in-the-static-table-by-far", b"v"),
            (b":STATUS", b"200"),
        ]);
        for (n, v) in cases {
            assert_eq!(static_lookup(n, v), linear(n, v), "{n:?} {v:?}");
        }
    }

    #[test]
    fn static_table_has_99_entries_and_known_anchors() {
        assert_eq!(STATIC_TABLE.len(), 99);
        assert_eq!(static_entry(0), Some((&b":authority"[..], &b""[..])));
        assert_eq!(static_entry(17), Some((&b":method"[..], &b"GET"[..])));
        assert_eq!(static_entry(25), Some((&b":status"[..], &b"200"[..])));
        assert_eq!(
            static_entry(98),
            Some((&b"x-frame-options"[..], &b"sameorigin"[..]))
        );
        assert_eq!(static_entry(99), None);
        assert_eq!(static_lookup(b":status", b"200"), StaticMatch::Full(25));
        assert_eq!(static_lookup(b":status", b"201"), StaticMatch::Name(24));
        assert_eq!(static_lookup(b"x-nope", b""), StaticMatch::None);
    }

    #[test]
    fn absolute_relative_and_eviction() {
        let mut t = DynamicTable::new(true);
        t.set_capacity(100);
        assert!(t.insert(InsertName::Bytes(b"aaaa"), b"1111")); // 40
        assert!(t.insert(InsertName::Bytes(b"bbbb"), b"2222")); // 80
        assert_eq!(t.insert_count(), 2);
        assert_eq!(t.get_absolute(0), Some((&b"aaaa"[..], &b"1111"[..])));
        assert_eq!(t.get_relative(0).map(|e| e.0), Some(1));
        // Third insert evicts absolute 0.
        assert!(!t.fits_evicting_below(40, 0));
        assert!(t.fits_evicting_below(40, 1));
        assert!(t.insert(InsertName::Absolute(0), b"3333"));
        assert_eq!(t.get_absolute(0), None);
        assert_eq!(t.get_absolute(2), Some((&b"aaaa"[..], &b"3333"[..])));
        assert_eq!(t.first_live(), 1);
        assert!(t.duplicate(1));
        assert_eq!(t.get_absolute(3), Some((&b"bbbb"[..], &b"2222"[..])));
        assert_eq!(t.find(b"aaaa", b"3333"), Some((2, true)));
        assert_eq!(t.find(b"aaaa", b"x"), Some((2, false)));
        // Larger than the capacity: refused, table unchanged.
        assert!(!t.insert(InsertName::Bytes(&[b'x'; 80]), b""));
        assert_eq!(t.insert_count(), 4);
    }
}
