//! HTTP/2 response header blocks: the HPACK encoding of a response head, and a
//! per-connection cache of the last block so that the steady state of a benchmark (the
//! same status, type, length and date on every response) costs one copy instead of seven
//! HPACK field encodings.
//!
//! A cached block is reused only while the encoder's dynamic table is exactly as it was
//! when the block was produced (same [`Encoder::table_generation`], no size update
//! pending) and the encoding inserted nothing: then encoding the same fields again would
//! produce the same bytes and leave the table unchanged, so the copy is indistinguishable
//! from a fresh encoding. The `date` value is part of the key, so the block is re-encoded
//! (and the new date indexed) once per second.

use h2lab_wire::hpack::{Encoder, Indexing};

use crate::endpoints::Response;
use crate::head_key::{HeadFields, HeadKey as Key};

/// The last cacheable block a connection encoded (one per connection: HPACK state is per
/// connection).
#[derive(Debug, Default)]
pub struct HeadCache {
    key: Option<Key>,
    generation: u64,
    block: Vec<u8>,
}

impl HeadCache {
    /// Appends the header block of `resp` to `buf`: the cached bytes when they are valid
    /// (see the module docs), else a fresh encoding (cached if it changed nothing).
    /// Returns whether the cached block was used.
    pub fn encode(
        &mut self,
        enc: &mut Encoder,
        buf: &mut Vec<u8>,
        resp: &Response,
        date: &[u8],
    ) -> bool {
        let key = Key::of(resp, date);
        let before = enc.table_generation();
        if key.is_some()
            && self.key == key
            && self.generation == before
            && !enc.has_pending_size_update()
        {
            buf.extend_from_slice(&self.block);
            return true;
        }
        let start = buf.len();
        encode_head(enc, buf, resp, date);
        self.key = None;
        // An unchanged generation also means no size update was emitted.
        if key.is_some() && enc.table_generation() == before {
            self.block.clear();
            self.block
                .extend_from_slice(buf.get(start..).unwrap_or_default());
            self.key = key;
            self.generation = before;
        }
        false
    }
}

/// Encodes a response head ([`HeadFields`]: `:status`, `server`, `date`, `content-type`,
/// `content-length`, `cache-control`, `allow`). Stack buffers only; the encoder indexes the
/// stable fields, so steady-state blocks are a few bytes.
pub fn encode_head(enc: &mut Encoder, buf: &mut Vec<u8>, resp: &Response, date: &[u8]) {
    let head = HeadFields::new(resp, date);
    enc.encode_with(head.iter().map(|(n, v)| (n, v, Indexing::Auto)), buf);
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::body::Body;
    use crate::date::DATE_LEN;
    use h2lab_wire::hpack::Decoder;

    fn resp(len: u64) -> Response {
        let mut r = Response::error(200);
        r.body = Body::Filler(len);
        r
    }

    fn decode(dec: &mut Decoder, block: &[u8]) -> Vec<(String, String)> {
        let mut v = Vec::new();
        dec.decode(block, |f| {
            v.push((
                String::from_utf8_lossy(f.name).into_owned(),
                String::from_utf8_lossy(f.value).into_owned(),
            ))
        })
        .unwrap();
        v
    }

    /// The cached path produces exactly what the encoder alone would, block after block,
    /// across date changes, other responses and a table size change.
    #[test]
    fn cached_blocks_equal_fresh_encodings() {
        let mut cached_enc = Encoder::new(4096);
        let mut plain_enc = Encoder::new(4096);
        let mut cache = HeadCache::default();
        let mut dec = Decoder::new(4096);
        let d1 = *b"Sun, 06 Nov 1994 08:49:37 GMT";
        let d2 = *b"Sun, 06 Nov 1994 08:49:38 GMT";
        let mut allow = Response::error(405);
        allow.allow = true;
        let steps: Vec<(Response, [u8; DATE_LEN])> = vec![
            (resp(653), d1),
            (resp(653), d1),
            (resp(653), d1),
            (resp(100), d1),
            (resp(653), d1),
            (resp(653), d2),
            (resp(653), d2),
            (allow, d2),
            (resp(653), d2),
        ];
        let mut hits = Vec::new();
        for (i, (r, date)) in steps.iter().enumerate() {
            if i == 6 {
                // The peer shrinks its table: a size update must go out, not a cached block.
                cached_enc.set_max_table_size(256);
                plain_enc.set_max_table_size(256);
            }
            let mut a = Vec::new();
            if cache.encode(&mut cached_enc, &mut a, r, date) {
                hits.push(i);
            }
            let mut b = Vec::new();
            encode_head(&mut plain_enc, &mut b, r, date);
            assert_eq!(a, b, "step {i}");
            let fields = decode(&mut dec, &a);
            assert_eq!(fields[0].1, r.status.to_string());
        }
        // 0 indexes the fields, 1 encodes them as references (and caches the block), 2
        // copies it. 3 indexes a new length, 4 is cached again, 5 indexes the new date, 6
        // must carry the size update, 7 is not cacheable (`allow`).
        assert_eq!(hits, vec![2], "served from the cache");
    }
}
