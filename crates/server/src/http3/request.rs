//! One HTTP/3 request stream on the server: the request read with the wire crate's
//! [`RequestStream`] (frames, QPACK, field validation, content-length), routed through the
//! same [`Router`](crate::endpoints::Router) as HTTP/1.1 and HTTP/2, and the response written
//! into the QUIC stream as far as flow control allows: the HEADERS frame and one DATA frame
//! header covering the whole body, then the body straight from its source (static and
//! filler bodies as `'static` chunks, no copy; files read piecewise), never the whole body
//! at once.

use std::time::Instant;

use bytes::Bytes;
use h2lab_wire::h3::fields::{SectionFacts, SectionKind};
use h2lab_wire::h3::packed;
use h2lab_wire::h3::request::{RequestEvents, RequestStream, SendStream};
use h2lab_wire::h3::Role;
use quinn_proto::{Connection, StreamId, WriteError};

use crate::body::BodyCursor;
use crate::endpoints::{HeaderSource, Response};

/// Largest piece of body written per call (also the file read size).
const PIECE: usize = 64 * 1024;

/// Where a request stream is.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Phase {
    /// Reading the request.
    Receiving,
    /// Answered after a `/delay` timer.
    Delayed,
    /// Writing the response.
    Sending,
    /// Everything written and the stream finished.
    Done,
}

/// Request fields packed as the wire crate's section memo keeps them
/// ([`h2lab_wire::h3::packed`]): one growing buffer per stream instead of a vector per
/// field, filled in one copy when the memo replays a repeated section.
#[derive(Debug, Default)]
pub struct Fields(pub Vec<u8>);

impl Fields {
    fn push(&mut self, name: &[u8], value: &[u8]) {
        packed::push(&mut self.0, name, value);
    }

    fn iter(&self) -> impl Iterator<Item = (&[u8], &[u8])> {
        packed::iter(&self.0)
    }

    /// The first value of `name`.
    pub fn get(&self, name: &[u8]) -> Option<&[u8]> {
        self.iter().find(|(n, _)| *n == name).map(|(_, v)| v)
    }
}

impl HeaderSource for Fields {
    fn for_each(&self, f: &mut dyn FnMut(&[u8], &[u8])) {
        for (n, v) in self.iter() {
            f(n, v);
        }
    }
}

/// What the request parser reported.
#[derive(Debug, Default)]
pub struct Sink {
    /// The request header fields (trailers are not kept).
    pub fields: Fields,
    in_trailers: bool,
    /// Content octets received.
    pub body_len: u64,
    /// The whole request arrived.
    pub ended: bool,
}

impl RequestEvents for Sink {
    fn field(&mut self, name: &[u8], value: &[u8]) {
        if !self.in_trailers {
            self.fields.push(name, value);
        }
    }

    fn packed_fields(&mut self, packed: &[u8]) -> bool {
        if !self.in_trailers {
            self.fields.0.extend_from_slice(packed);
        }
        true
    }

    fn section_done(&mut self, kind: SectionKind, _facts: SectionFacts, _informational: bool) {
        if kind == SectionKind::Request {
            self.in_trailers = true;
        }
    }

    fn data(&mut self, chunk: &[u8]) {
        self.body_len += chunk.len() as u64;
    }

    fn end(&mut self) {
        self.ended = true;
    }
}

/// One request stream.
pub struct Req {
    /// The stream.
    pub id: StreamId,
    /// Receive side (wire crate).
    pub recv: RequestStream,
    /// What was received.
    pub sink: Sink,
    /// Unconsumed input (an incomplete HEADERS frame, or a blocked section's successors).
    pub inbuf: Vec<u8>,
    /// The peer ended its side (FIN seen).
    pub fin: bool,
    /// Where the stream is.
    pub phase: Phase,
    /// Send side (wire crate): frame order and content-length.
    pub send: SendStream,
    /// The HEADERS frame and DATA frame header, as framed.
    pub head: Vec<u8>,
    /// The part of a `103 Early Hints` HEADERS frame QUIC did not take when it was sent:
    /// written ahead of the final head.
    pub early: Vec<u8>,
    /// What of `head` QUIC has not accepted yet: a reference-counted clone of the
    /// connection's last head when identical (see [`Req::start_body`]).
    head_out: Bytes,
    /// The body being sent.
    pub cursor: Option<BodyCursor>,
    /// The endpoint's dynamic body buffer (`/json`, `/info`, `/page`).
    pub dynamic: Vec<u8>,
    /// A response waiting for its `/delay` timer.
    pub pending: Option<(Instant, Response)>,
}

impl Req {
    /// A new request stream.
    pub fn new(id: StreamId) -> Req {
        Req {
            id,
            recv: RequestStream::new(Role::Server, u64::from(id)),
            sink: Sink::default(),
            inbuf: Vec::new(),
            fin: false,
            phase: Phase::Receiving,
            send: SendStream::new(),
            head: Vec::new(),
            early: Vec::new(),
            head_out: Bytes::new(),
            cursor: None,
            dynamic: Vec::new(),
            pending: None,
        }
    }

    /// Makes a finished request stream new for `id`, keeping its buffers' capacity.
    pub fn reset(&mut self, id: StreamId) {
        self.id = id;
        self.recv = RequestStream::new(Role::Server, u64::from(id));
        self.sink.fields.0.clear();
        self.sink.in_trailers = false;
        self.sink.body_len = 0;
        self.sink.ended = false;
        self.inbuf.clear();
        self.fin = false;
        self.phase = Phase::Receiving;
        self.send = SendStream::new();
        self.head.clear();
        self.early.clear();
        self.head_out = Bytes::new();
        self.cursor = None;
        self.dynamic.clear();
        self.pending = None;
    }

    /// Queues the response head (already framed in `self.head`) and the body. `shared` is
    /// the connection's last head handed to QUIC: a head identical to it (the same replayed
    /// QPACK section and body length, as in a steady run) is sent as a reference-counted
    /// clone, so quinn-proto's send buffer gets no new allocation and copy per response.
    pub fn start_body(&mut self, cursor: Option<BodyCursor>, shared: &mut Bytes) {
        if *shared != self.head[..] {
            *shared = Bytes::copy_from_slice(&self.head);
        }
        self.head_out = shared.clone();
        self.cursor = cursor;
        self.phase = Phase::Sending;
    }

    /// Writes what flow control allows; finishes the stream when everything is written.
    /// `scratch` is the loop's buffer for file reads. Returns `Err` when the peer stopped
    /// the stream (it is reset: forget it).
    pub fn pump(&mut self, conn: &mut Connection, scratch: &mut Vec<u8>) -> Result<(), ()> {
        let r = self.pump_inner(conn, scratch);
        if r.is_err() {
            let _ = conn.send_stream(self.id).reset(h3_code(REQUEST_CANCELLED));
        }
        r
    }

    fn pump_inner(&mut self, conn: &mut Connection, scratch: &mut Vec<u8>) -> Result<(), ()> {
        if self.phase != Phase::Sending {
            return Ok(());
        }
        let mut s = conn.send_stream(self.id);
        while !self.head_out.is_empty() {
            // A partial write advances `head_out` past what QUIC took.
            match s.write_chunks(std::slice::from_mut(&mut self.head_out)) {
                Ok(w) if w.bytes == 0 => return Ok(()),
                Ok(_) => {}
                Err(WriteError::Blocked) => return Ok(()),
                Err(_) => return Err(()),
            }
        }
        if let Some(c) = self.cursor.as_mut() {
            while c.remaining() > 0 {
                let n = if let Some(chunk) = c.static_chunk(PIECE) {
                    let mut b = [Bytes::from_static(chunk)];
                    match s.write_chunks(&mut b) {
                        Ok(w) => w.bytes,
                        Err(WriteError::Blocked) => 0,
                        Err(_) => return Err(()),
                    }
                } else if matches!(c.body, crate::body::Body::File(..)) {
                    scratch.clear();
                    let got = match c.copy_into(&self.dynamic, scratch, PIECE) {
                        Ok(n) => n,
                        Err(_) => {
                            // A file that shrank: the body cannot be completed.
                            let _ = s.reset(h3_code(INTERNAL_ERROR));
                            return Err(());
                        }
                    };
                    let w = match s.write(scratch) {
                        Ok(w) => w,
                        Err(WriteError::Blocked) => 0,
                        Err(_) => return Err(()),
                    };
                    // Re-read what QUIC did not take next time.
                    c.offset -= (got - w) as u64;
                    if w == 0 {
                        return Ok(());
                    }
                    continue;
                } else {
                    let chunk = c.chunk(&self.dynamic, PIECE);
                    match s.write(chunk) {
                        Ok(w) => w,
                        Err(WriteError::Blocked) => 0,
                        Err(_) => return Err(()),
                    }
                };
                if n == 0 {
                    return Ok(());
                }
                c.advance(n);
            }
        }
        let _ = s.finish();
        self.phase = Phase::Done;
        Ok(())
    }
}

/// H3_REQUEST_CANCELLED.
pub const REQUEST_CANCELLED: u64 = 0x010c;

/// H3_INTERNAL_ERROR.
pub const INTERNAL_ERROR: u64 = 0x0102;

/// An HTTP/3 error code as a QUIC varint.
pub fn h3_code(code: u64) -> quinn_proto::VarInt {
    quinn_proto::VarInt::from_u64(code).unwrap_or(quinn_proto::VarInt::MAX)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn fields_keep_order_and_find_the_first_value() {
        let mut f = Fields::default();
        f.push(b":method", b"GET");
        f.push(b"x", b"1");
        f.push(b"x", b"2");
        f.push(b"empty", b"");
        assert_eq!(f.get(b":method"), Some(&b"GET"[..]));
        assert_eq!(f.get(b"x"), Some(&b"1"[..]));
        assert_eq!(f.get(b"empty"), Some(&b""[..]));
        assert_eq!(f.get(b"missing"), None);
        let mut all = Vec::new();
        f.for_each(&mut |n, v| all.push((n.to_vec(), v.to_vec())));
        assert_eq!(all.len(), 4);
        assert_eq!(all[2], (b"x".to_vec(), b"2".to_vec()));
    }
}
