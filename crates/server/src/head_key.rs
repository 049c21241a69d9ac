//! The response head HTTP/2 and HTTP/3 send, built in one place: [`HeadFields`], the field
//! list each protocol hands to its own compressor (HPACK in `h2head`, QPACK in
//! `http3::head`), and [`HeadKey`], what a reusable head depends on for their per-connection
//! head caches: the common heads only (`cache-control: no-store`, no `allow`). The date is
//! part of the key, so a head is encoded anew once a second.

use crate::date::DATE_LEN;
use crate::endpoints::Response as Resp;
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

/// The fields of a response head, in the order they are sent: `:status`, `server`, `date`,
/// `content-type` and `content-length` (neither on 204 and 304, which have no content, as
/// HTTP/1.1's head), `cache-control`, and `allow` on a 405. Built on the stack: nothing is
/// allocated per response.
pub(crate) struct HeadFields<'a> {
    status: [u8; 3],
    length: [u8; 20],
    /// Where the digits of the content length start in `length`.
    length_at: usize,
    resp: &'a Resp,
    date: &'a [u8],
}

impl<'a> HeadFields<'a> {
    /// The head of `resp` sent at `date`.
    pub(crate) fn new(resp: &'a Resp, date: &'a [u8]) -> HeadFields<'a> {
        let status = resp.status.clamp(100, 999);
        let mut length = [0u8; 20];
        let mut i = length.len();
        let mut v = resp.body.len();
        loop {
            i -= 1;
            length[i] = b'0' + (v % 10) as u8;
            v /= 10;
            if v == 0 || i == 0 {
                break;
            }
        }
        HeadFields {
            status: [
                b'0' + (status / 100) as u8,
                b'0' + (status / 10 % 10) as u8,
                b'0' + (status % 10) as u8,
            ],
            length,
            length_at: i,
            resp,
            date,
        }
    }

    /// The fields as (name, value), in order.
    pub(crate) fn iter(&self) -> impl Iterator<Item = (&[u8], &[u8])> {
        let resp = self.resp;
        let content = !resp.no_content_length();
        let length = &self.length[self.length_at..];
        [
            Some((&b":status"[..], &self.status[..])),
            Some((b"server", b"h2lab")),
            Some((b"date", self.date)),
            content.then_some((b"content-type", resp.content_type.as_bytes())),
            content.then_some((b"content-length", length)),
            Some((b"cache-control", resp.cache.value())),
            resp.allow.then_some((b"allow", b"GET, HEAD, POST, PUT")),
        ]
        .into_iter()
        .flatten()
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::body::Body;
    use h2lab_wire::{hpack, qpack};

    fn text(f: &[u8]) -> String {
        String::from_utf8_lossy(f).into_owned()
    }

    /// What an HTTP/2 client decodes from the HPACK block the server sends for `resp`.
    fn over_h2(resp: &Resp, date: &[u8]) -> Vec<(String, String)> {
        let mut block = Vec::new();
        crate::h2head::encode_head(&mut hpack::Encoder::new(4096), &mut block, resp, date);
        let mut fields = Vec::new();
        hpack::Decoder::new(4096)
            .decode(&block, |f| fields.push((text(f.name), text(f.value))))
            .unwrap();
        fields
    }

    /// What an HTTP/3 client decodes from the QPACK section the server sends for `resp`.
    fn over_h3(resp: &Resp, date: &[u8]) -> Vec<(String, String)> {
        let mut enc = qpack::Encoder::new(qpack::EncoderConfig::default());
        let mut heads = crate::http3::head::HeadEncoder::default();
        let mut encoder_stream = Vec::new();
        let section = heads
            .encode(&mut enc, 0, resp, date, &mut encoder_stream)
            .to_vec();
        let mut fields = Vec::new();
        let done = qpack::Decoder::new(0, 0)
            .decode_section(0, &section, |f| fields.push((text(f.name), text(f.value))))
            .unwrap();
        assert_eq!(done, qpack::Decoded::Done);
        fields
    }

    /// HTTP/2 and HTTP/3 send the same head for every kind of response (they built it
    /// apart before, and HTTP/3 sent a `content-type` on 204 and 304, which have no
    /// content and get none over HTTP/1.1 or HTTP/2).
    #[test]
    fn http2_and_http3_send_the_same_head() {
        let date = b"Sun, 06 Nov 1994 08:49:37 GMT";
        let mut ok = Resp::error(200);
        ok.body = Body::Filler(1 << 20);
        let mut allow = Resp::error(405);
        allow.allow = true;
        for resp in [
            ok,
            Resp::error(204),
            Resp::error(304),
            Resp::error(404),
            allow,
        ] {
            let h2 = over_h2(&resp, date);
            assert_eq!(h2, over_h3(&resp, date), "status {}", resp.status);
            let names: Vec<&str> = h2.iter().map(|(n, _)| n.as_str()).collect();
            let content = !matches!(resp.status, 204 | 304);
            assert_eq!(names.contains(&"content-type"), content, "{names:?}");
            assert_eq!(names.contains(&"content-length"), content, "{names:?}");
            assert_eq!(names.contains(&"allow"), resp.allow, "{names:?}");
        }
    }
}
