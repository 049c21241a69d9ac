//! The HTTP/2 front (h2c with prior knowledge, h2 over TLS by ALPN). Each client stream is
//! served by a *virtual* HTTP/1.1 client connection: the stream's request is written into it as
//! HTTP/1.1 bytes (chunked body as DATA arrives), the ordinary exchange machinery (upstream
//! choice, forwarding fields, pools, 502/504, cancellation, counters) handles it, and the
//! HTTP/1.1 response it produces is translated back into HEADERS, DATA and trailers under the
//! client's flow control. A RST_STREAM from the client cancels the stream's exchange.

use h2lab_wire::h1::{Event, ResponseParser};
use h2lab_wire::h2::{
    Connection, ErrorCode, Events, HeadersDone, HeadersKind, Limits, LocalSettings, Role, StreamId,
};

use crate::buf::Buf;
use crate::fields::trailer_fields;

/// What the connection reported, owned (handled after `recv` returns).
pub enum FEv {
    /// A complete request header section.
    Request {
        /// Stream.
        id: u32,
        /// Fields in order.
        fields: Vec<(Vec<u8>, Vec<u8>)>,
        /// END_STREAM on the headers.
        end: bool,
    },
    /// Request body bytes (or the end of the body).
    Data {
        /// Stream.
        id: u32,
        /// Bytes.
        data: Vec<u8>,
        /// Last of the body.
        end: bool,
        /// The request's trailer fields (with `end`).
        trailers: Vec<(Vec<u8>, Vec<u8>)>,
    },
    /// The client reset the stream (or it failed).
    Reset {
        /// Stream.
        id: u32,
    },
}

struct Sink<'a> {
    events: &'a mut Vec<FEv>,
    cur: &'a mut Vec<(Vec<u8>, Vec<u8>)>,
}

impl Events for Sink<'_> {
    fn header(&mut self, _stream: StreamId, name: &[u8], value: &[u8]) {
        self.cur.push((name.to_vec(), value.to_vec()));
    }

    fn headers_done(&mut self, stream: StreamId, d: HeadersDone) {
        let fields = std::mem::take(self.cur);
        match d.kind {
            HeadersKind::Request => self.events.push(FEv::Request {
                id: stream.get(),
                fields,
                end: d.end_stream,
            }),
            HeadersKind::Trailers if d.end_stream => self.events.push(FEv::Data {
                id: stream.get(),
                data: Vec::new(),
                end: true,
                trailers: fields,
            }),
            _ => {}
        }
    }

    fn data(&mut self, stream: StreamId, data: &[u8], end_stream: bool) {
        self.events.push(FEv::Data {
            id: stream.get(),
            data: data.to_vec(),
            end: end_stream,
            trailers: Vec::new(),
        });
    }

    fn reset(&mut self, stream: StreamId, _code: ErrorCode, _by_peer: bool) {
        self.events.push(FEv::Reset { id: stream.get() });
    }
}

/// One client stream and the virtual connection serving it.
pub struct Stream {
    /// Stream id.
    pub id: u32,
    /// The virtual client connection (slot, generation).
    pub child: (usize, u32),
    /// Parses what the virtual connection answers.
    pub parser: ResponseParser,
    /// The request body is sent chunked into the virtual connection.
    pub chunked: bool,
    /// HEADERS sent.
    pub head_sent: bool,
    /// Body bytes taken from the virtual connection but not yet allowed by flow control.
    pub spill: Vec<u8>,
    /// Trailer fields to send at the end.
    pub trailers: Vec<(Vec<u8>, Vec<u8>)>,
    /// The response body is complete; the stream ends once the exchange does (trailers
    /// of an upstream response with a Content-Length come after its last byte).
    pub ended: bool,
    /// The stream is finished (ended or reset).
    pub done: bool,
}

/// HTTP/2 state of a client connection.
pub struct H2Front {
    /// The connection.
    pub conn: Connection,
    /// Open streams.
    pub streams: Vec<Stream>,
    /// Events of the last `recv`.
    pub events: Vec<FEv>,
    /// Some stream's request body waits in its virtual connection beyond [`BACKLOG`]: the
    /// connection is not read until it drains (HTTP/2 flow control alone does not bound it,
    /// the windows are re-opened as frames are received).
    pub backlogged: bool,
    cur: Vec<(Vec<u8>, Vec<u8>)>,
}

/// Request body bytes a stream's virtual connection may hold before the client connection
/// stops being read.
pub const BACKLOG: usize = 256 * 1024;

impl H2Front {
    /// Server side; queues our SETTINGS in `out`.
    pub fn new(config: &h2lab_server::ServerConfig, out: &mut Buf) -> Self {
        let local = LocalSettings {
            max_concurrent_streams: Some(config.max_concurrent_streams),
            ..LocalSettings::server()
        };
        let mut conn = Connection::new(Role::Server, local, Limits::new());
        conn.start(out.tail());
        H2Front {
            conn,
            streams: Vec::new(),
            events: Vec::new(),
            backlogged: false,
            cur: Vec::new(),
        }
    }

    /// Feeds received bytes; returns how many were consumed, or `None` on a connection error
    /// (GOAWAY queued in `out`).
    pub fn recv(&mut self, input: &[u8], out: &mut Buf) -> Option<usize> {
        let mut sink = Sink {
            events: &mut self.events,
            cur: &mut self.cur,
        };
        self.conn.recv(input, out.tail(), &mut sink).ok()
    }
}

/// The HTTP/1.1 request bytes for an HTTP/2 request (`connection: close`: one exchange per
/// virtual connection). Returns (bytes, body sent chunked, is HEAD).
pub fn synth_request(fields: &[(Vec<u8>, Vec<u8>)], end: bool) -> (Vec<u8>, bool, bool) {
    let get = |n: &[u8]| fields.iter().find(|f| f.0 == n).map(|f| f.1.as_slice());
    let method = get(b":method").unwrap_or(b"GET");
    let path = get(b":path").unwrap_or(b"/");
    let host = get(b":authority")
        .or_else(|| get(b"host"))
        .unwrap_or_default();
    let mut out = Vec::with_capacity(256);
    out.extend_from_slice(method);
    out.push(b' ');
    out.extend_from_slice(path);
    out.extend_from_slice(b" HTTP/1.1\r\nhost: ");
    out.extend_from_slice(host);
    out.extend_from_slice(b"\r\n");
    let mut has_len = false;
    for (n, v) in fields {
        if n.first() == Some(&b':')
            || n == b"host"
            || n == b"connection"
            || n == b"transfer-encoding"
        {
            continue;
        }
        if n == b"content-length" {
            has_len = true;
        }
        out.extend_from_slice(n);
        out.extend_from_slice(b": ");
        out.extend_from_slice(v);
        out.extend_from_slice(b"\r\n");
    }
    let chunked = !end && !has_len;
    if chunked {
        out.extend_from_slice(b"transfer-encoding: chunked\r\n");
    }
    out.extend_from_slice(b"connection: close\r\n\r\n");
    (out, chunked, method == b"HEAD")
}

fn hop_by_hop(name: &[u8]) -> bool {
    [
        &b"connection"[..],
        b"keep-alive",
        b"proxy-connection",
        b"transfer-encoding",
        b"upgrade",
        b"te",
        b"trailer",
    ]
    .iter()
    .any(|n| n.eq_ignore_ascii_case(name))
}

/// What [`pump`] takes from a stream's virtual connection (the worker builds it from the
/// `Front`: this module does not depend on that one, which holds an [`H2Front`]).
pub struct Child<'a> {
    /// The HTTP/1.1 response bytes it queued (consumed as they are translated).
    pub out: &'a mut Buf,
    /// Its response's trailer lines (taken when the stream ends).
    pub trailers: &'a mut Vec<u8>,
    /// Its exchange is over (the response complete or cut): nothing more will be queued.
    pub over: bool,
}

fn exchange_over(c: &Child<'_>) -> bool {
    c.over
}

/// Translates what the virtual connection queued (`child`, `None` once it is gone) into
/// frames for stream `s`, as far as flow control allows.
pub fn pump(s: &mut Stream, mut child: Option<Child<'_>>, conn: &mut Connection, out: &mut Buf) {
    let id = StreamId::new(s.id);
    while !s.done {
        if !s.spill.is_empty() {
            let n = conn
                .send_data(id, &s.spill, false, out.tail())
                .unwrap_or(s.spill.len());
            s.spill.drain(..n);
            if !s.spill.is_empty() {
                return;
            }
        }
        if s.ended {
            if child.as_ref().is_some_and(|c| !exchange_over(c)) {
                return; // trailers may still come
            }
            if s.trailers.is_empty() {
                if let Some(c) = child.as_mut() {
                    s.trailers = trailer_fields(c.trailers.as_slice());
                    c.trailers.clear();
                }
            }
            if s.trailers.is_empty() {
                let _ = conn.send_data(id, &[], true, out.tail());
            } else {
                let t: Vec<(&[u8], &[u8])> = s
                    .trailers
                    .iter()
                    .map(|(n, v)| (n.as_slice(), v.as_slice()))
                    .collect();
                let _ = conn.send_header_fields(id, &t, true, out.tail());
            }
            s.done = true;
            return;
        }
        let gone = child.is_none();
        // The exchange ended (or was cut) with nothing more to come.
        let cut = child.as_ref().is_some_and(exchange_over);
        let data: &[u8] = child.as_ref().map_or(&[][..], |c| c.out.data());
        let limit = if s.head_sent {
            data.len().min(conn.send_capacity(id) + 64)
        } else {
            data.len()
        };
        let (n, ev) = match s.parser.parse(&data[..limit]) {
            Ok(x) => x,
            Err(_) => {
                conn.reset(id, ErrorCode::INTERNAL_ERROR, out.tail());
                s.done = true;
                return;
            }
        };
        let mut stop = false;
        match ev {
            Event::NeedMore => {
                if n == 0 {
                    if gone || (cut && limit == data.len()) {
                        conn.reset(id, ErrorCode::INTERNAL_ERROR, out.tail());
                        s.done = true;
                    }
                    stop = true;
                }
            }
            // A forwarded `103 Early Hints` (the exchange passes no other 1xx): an interim
            // HEADERS without END_STREAM (RFC 9113 §8.1).
            Event::Interim(h) if !s.head_sent => {
                let status = h.status.to_string();
                let names: Vec<Vec<u8>> = h
                    .headers
                    .iter()
                    .filter(|f| !hop_by_hop(f.name.as_bytes()))
                    .map(|f| f.name.as_bytes().to_ascii_lowercase())
                    .collect();
                let mut fields: Vec<(&[u8], &[u8])> = vec![(b":status", status.as_bytes())];
                let values = h.headers.iter().filter(|f| !hop_by_hop(f.name.as_bytes()));
                fields.extend(names.iter().map(Vec::as_slice).zip(values.map(|f| f.value)));
                if conn
                    .send_header_fields(id, &fields, false, out.tail())
                    .is_err()
                {
                    s.done = true;
                }
            }
            Event::Interim(_) => {}
            Event::Head(h) => {
                let status = h.status.to_string();
                let mut names: Vec<Vec<u8>> = Vec::with_capacity(h.headers.len());
                for f in h.headers.iter() {
                    if !hop_by_hop(f.name.as_bytes()) {
                        names.push(f.name.as_bytes().to_ascii_lowercase());
                    }
                }
                let mut fields: Vec<(&[u8], &[u8])> = Vec::with_capacity(names.len() + 1);
                fields.push((b":status", status.as_bytes()));
                let mut k = 0;
                for f in h.headers.iter() {
                    if !hop_by_hop(f.name.as_bytes()) {
                        fields.push((&names[k], f.value));
                        k += 1;
                    }
                }
                if conn
                    .send_header_fields(id, &fields, false, out.tail())
                    .is_err()
                {
                    s.done = true;
                }
                s.head_sent = true;
            }
            Event::Body(b) => {
                let k = conn.send_data(id, b, false, out.tail()).unwrap_or(b.len());
                s.spill.extend_from_slice(&b[k..]);
            }
            Event::Trailers { headers, .. } => {
                s.trailers = headers
                    .iter()
                    .filter(|f| !hop_by_hop(f.name.as_bytes()))
                    .map(|f| (f.name.as_bytes().to_ascii_lowercase(), f.value.to_vec()))
                    .collect();
            }
            Event::End { .. } => s.ended = true,
            Event::Upgrade(_) | Event::Closed => {
                conn.reset(id, ErrorCode::INTERNAL_ERROR, out.tail());
                s.done = true;
            }
        }
        if let Some(c) = child.as_mut() {
            c.out.consume(n);
        }
        if stop {
            return;
        }
    }
}
