//! What a reusable response head depends on, for the per-connection head caches of HTTP/2
//! (HPACK, `h2head`) and HTTP/3 (QPACK, `http3::head`): the common heads only
//! (`cache-control: no-store`, no `allow`). The date is part of the key, so a head is
//! encoded anew once a second.

use crate::date::DATE_LEN;
use crate::endpoints::{CacheControl, Response};

/// The fields a common response head is made of.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) struct HeadKey {
    status: u16,
    content_type: &'static str,
    content_length: Option<u64>,
    date: [u8; DATE_LEN],
}

impl HeadKey {
    /// The key of `resp` sent at `date`, if its head is one of the common shapes.
    pub(crate) fn of(resp: &Response, date: &[u8]) -> Option<HeadKey> {
        if resp.allow || !matches!(resp.cache, CacheControl::NoStore) {
            return None;
        }
        Some(HeadKey {
            status: resp.status,
            content_type: resp.content_type,
            content_length: (!resp.no_content_length()).then(|| resp.body.len()),
            date: date.try_into().ok()?,
        })
    }
}
