//! HTTP/3 response heads: the QPACK field section of a response (`:status`, `server`,
//! `date`, `content-type`, `content-length`, `cache-control`, `allow`), encoded with the
//! connection's encoder, and reused for the next response with the same head when it refers
//! to nothing but the static table and literals (as HTTP/2's head cache).

use h2lab_wire::qpack::Encoder;

use crate::endpoints::Response;
use crate::head_key::HeadKey;

/// The last section encoded on a connection and, when reusable, what it encodes.
#[derive(Debug, Default)]
pub struct HeadEncoder {
    section: Vec<u8>,
    key: Option<HeadKey>,
    /// The encoder's table capacity when `section` was encoded: a static-only section
    /// encoded before the client's SETTINGS allowed a table is not reused after.
    capacity: usize,
}

impl HeadEncoder {
    /// The field section of `resp` on `stream_id`; encoder-stream instructions (inserts)
    /// are appended to `encoder_stream`, which must be sent before the section.
    pub fn encode(
        &mut self,
        qenc: &mut Encoder,
        stream_id: u64,
        resp: &Response,
        date: &[u8],
        encoder_stream: &mut Vec<u8>,
    ) -> &[u8] {
        let key = HeadKey::of(resp, date);
        let capacity = qenc.planned_capacity();
        if key.is_some() && self.key == key && self.capacity == capacity {
            return &self.section;
        }
        self.capacity = capacity;
        self.key = None;
        let status = resp.status.clamp(100, 999);
        let status_text = [
            b'0' + (status / 100) as u8,
            b'0' + (status / 10 % 10) as u8,
            b'0' + (status % 10) as u8,
        ];
        let mut cl_digits = [0u8; 20];
        let cl = digits(resp.body.len(), &mut cl_digits);
        let mut fields: [(&[u8], &[u8]); 7] = [(b"", b""); 7];
        let mut n = 0;
        fields[n] = (b":status", &status_text);
        n += 1;
        fields[n] = (b"server", b"h2lab");
        n += 1;
        fields[n] = (b"date", date);
        n += 1;
        fields[n] = (b"content-type", resp.content_type.as_bytes());
        n += 1;
        if !resp.no_content_length() {
            fields[n] = (b"content-length", cl);
            n += 1;
        }
        fields[n] = (b"cache-control", resp.cache.value());
        n += 1;
        if resp.allow {
            fields[n] = (b"allow", b"GET, HEAD, POST, PUT");
            n += 1;
        }
        self.section.clear();
        let before = encoder_stream.len();
        qenc.encode(
            stream_id,
            fields.iter().take(n).copied(),
            &mut self.section,
            encoder_stream,
        );
        // Required Insert Count 0 and Base 0, nothing inserted: static table and literals
        // only, so the same head encodes to the same bytes on any stream.
        if self.section.starts_with(&[0, 0]) && encoder_stream.len() == before {
            self.key = key;
        }
        &self.section
    }
}

/// The decimal digits of `v` in `buf`.
fn digits(mut v: u64, buf: &mut [u8; 20]) -> &[u8] {
    let mut i = buf.len();
    loop {
        i -= 1;
        buf[i] = b'0' + (v % 10) as u8;
        v /= 10;
        if v == 0 || i == 0 {
            break;
        }
    }
    &buf[i..]
}
