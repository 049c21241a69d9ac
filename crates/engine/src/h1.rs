//! HTTP/1.1 client session: keep-alive, pipelining up to `-m`, bodies counted
//! and never stored.
//!
//! Requests are pre-serialised once per URI ([`Prepared::h1`]); submitting is
//! one `extend_from_slice`. Responses are matched to requests in order
//! (RFC 9112 §9.3.2: "A server MUST send its responses to those requests in
//! the same order that the requests were received").

use std::collections::VecDeque;
use std::sync::Arc;

use crate::request::Prepared;
use crate::session::{Session, SessionError, SessionEvents, SubmitError};

/// Largest response head accepted (status line + fields).
const MAX_HEAD: usize = 64 * 1024;
/// Most header fields per response head.
const MAX_FIELDS: usize = 128;
/// Longest chunk-size line / trailer line accepted.
const MAX_LINE: usize = 4096;

/// Body framing of the response being received (RFC 9112 §6.3).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Body {
    /// Exactly this many bytes left.
    Length(u64),
    /// Until the connection closes.
    Close,
    /// Chunked transfer coding, in one of its states.
    Chunk(Chunk),
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Chunk {
    /// Hex digits of chunk-size.
    Size { size: u64, digits: bool, len: usize },
    /// Extensions / whitespace up to CR LF.
    Ext { size: u64, len: usize },
    /// After CR of the size line.
    SizeLf { size: u64 },
    /// Chunk data.
    Data { remaining: u64 },
    /// CR after chunk data.
    DataCr,
    /// LF after chunk data.
    DataLf,
    /// Trailer section: `len` bytes into the current line.
    Trailer { len: usize, cr: bool },
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum State {
    /// Waiting for (more of) a response head.
    Head,
    /// Inside the body of the response for `slot`.
    Body { slot: u32, body: Body },
    /// The connection is finished (after `Connection: close`, or an error).
    Closed,
}

/// Result of looking at the bytes of a response head.
struct HeadInfo {
    len: usize,
    status: u16,
    field_bytes: usize,
    framing: Framing,
    close: bool,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Framing {
    None,
    Length(u64),
    Chunked,
    Close,
}

/// HTTP/1.1 session (see module docs).
#[derive(Debug)]
pub struct H1Session {
    prep: Arc<Prepared>,
    depth: u32,
    /// Slots with a request sent and no complete response, in order.
    queue: VecDeque<u32>,
    /// Partial response head carried between reads.
    head_buf: Vec<u8>,
    state: State,
    /// The current response said `Connection: close`.
    close_after: bool,
    /// No more requests will be submitted.
    closing: bool,
}

impl H1Session {
    /// A session pipelining up to `depth` requests (1 when sending bodies, as h2load).
    pub(crate) fn new(prep: Arc<Prepared>, depth: u32) -> H1Session {
        let depth = if prep.body.is_some() { 1 } else { depth.max(1) };
        H1Session {
            prep,
            depth,
            queue: VecDeque::with_capacity(depth as usize),
            head_buf: Vec::new(),
            state: State::Head,
            close_after: false,
            closing: false,
        }
    }

    fn process(&mut self, mut p: &[u8], ev: &mut dyn SessionEvents) -> Result<(), SessionError> {
        while !p.is_empty() {
            match self.state {
                State::Closed => return Ok(()), // bytes after a `close` response: ignored
                State::Head => {
                    let Some(&slot) = self.queue.front() else {
                        self.state = State::Closed;
                        return Err(SessionError::Protocol(
                            "response received with no request outstanding".into(),
                        ));
                    };
                    match parse_head(p, self.prep.head_method)? {
                        None => {
                            if p.len() > MAX_HEAD {
                                self.state = State::Closed;
                                return Err(SessionError::Protocol(format!(
                                    "response head larger than {MAX_HEAD} bytes"
                                )));
                            }
                            self.head_buf.extend_from_slice(p);
                            return Ok(());
                        }
                        Some(h) => {
                            p = p.get(h.len..).unwrap_or_default();
                            ev.status(slot, h.status);
                            ev.header_bytes(h.field_bytes, h.field_bytes);
                            if (100..200).contains(&h.status) {
                                // Interim response; the final one follows (RFC 9110 §15.2).
                                continue;
                            }
                            self.close_after = h.close;
                            let body = match h.framing {
                                Framing::None | Framing::Length(0) => {
                                    self.finish(ev);
                                    continue;
                                }
                                Framing::Length(n) => Body::Length(n),
                                Framing::Close => Body::Close,
                                Framing::Chunked => Body::Chunk(Chunk::Size {
                                    size: 0,
                                    digits: false,
                                    len: 0,
                                }),
                            };
                            self.state = State::Body { slot, body };
                        }
                    }
                }
                State::Body { slot, body } => {
                    let (used, next) = decode_body(body, p, slot, ev)?;
                    p = p.get(used..).unwrap_or_default();
                    match next {
                        Some(b) => self.state = State::Body { slot, body: b },
                        None => self.finish(ev),
                    }
                }
            }
        }
        Ok(())
    }

    /// The response at the head of the queue is complete.
    fn finish(&mut self, ev: &mut dyn SessionEvents) {
        if let Some(slot) = self.queue.pop_front() {
            ev.complete(slot);
        }
        self.state = State::Head;
        if self.close_after {
            // RFC 9112 §9.6: after "close" the server does not process further
            // requests on this connection, so pipelined ones can be retried.
            self.state = State::Closed;
            self.closing = true;
            while let Some(s) = self.queue.pop_front() {
                ev.refused(s);
            }
        }
    }
}

/// Parses a response head if complete. `Ok(None)`: need more bytes.
fn parse_head(buf: &[u8], head_method: bool) -> Result<Option<HeadInfo>, SessionError> {
    let mut fields = [httparse::EMPTY_HEADER; MAX_FIELDS];
    let mut resp = httparse::Response::new(&mut fields);
    let len = match resp.parse(buf) {
        Ok(httparse::Status::Complete(n)) => n,
        Ok(httparse::Status::Partial) => return Ok(None),
        Err(e) => {
            return Err(SessionError::Protocol(format!(
                "invalid HTTP/1.1 response: {e}"
            )))
        }
    };
    let status = resp.code.unwrap_or(0);
    if status == 101 {
        return Err(SessionError::Protocol(
            "unexpected 101 Switching Protocols".into(),
        ));
    }
    let http10 = resp.version == Some(0);
    let mut field_bytes = 0usize;
    let mut content_length: Option<u64> = None;
    let mut te_present = false;
    let mut chunked_last = false;
    let mut conn_close = false;
    let mut conn_keep_alive = false;
    for h in resp.headers.iter() {
        field_bytes += h.name.len() + h.value.len();
        if h.name.eq_ignore_ascii_case("content-length") {
            let v = parse_content_length(h.value).ok_or_else(|| {
                SessionError::Protocol("invalid Content-Length in response".into())
            })?;
            // RFC 9112 §6.3: differing Content-Length values are unrecoverable.
            if content_length.is_some_and(|c| c != v) {
                return Err(SessionError::Protocol(
                    "conflicting Content-Length values".into(),
                ));
            }
            content_length = Some(v);
        } else if h.name.eq_ignore_ascii_case("transfer-encoding") {
            te_present = true;
            let last = h
                .value
                .split(|&b| b == b',')
                .map(trim)
                .rfind(|t| !t.is_empty());
            chunked_last = last.is_some_and(|t| t.eq_ignore_ascii_case(b"chunked"));
        } else if h.name.eq_ignore_ascii_case("connection") {
            for t in h.value.split(|&b| b == b',').map(trim) {
                if t.eq_ignore_ascii_case(b"close") {
                    conn_close = true;
                } else if t.eq_ignore_ascii_case(b"keep-alive") {
                    conn_keep_alive = true;
                }
            }
        }
    }
    // RFC 9112 §6.3 rules 1-7, in order.
    let framing = if head_method || (100..200).contains(&status) || status == 204 || status == 304 {
        Framing::None
    } else if te_present {
        if chunked_last {
            Framing::Chunked
        } else {
            Framing::Close
        }
    } else if let Some(n) = content_length {
        Framing::Length(n)
    } else {
        Framing::Close
    };
    let close = conn_close || (http10 && !conn_keep_alive) || framing == Framing::Close;
    Ok(Some(HeadInfo {
        len,
        status,
        field_bytes,
        framing,
        close,
    }))
}

fn parse_content_length(v: &[u8]) -> Option<u64> {
    // RFC 9110 §8.6: a list of identical values may be accepted.
    let mut out: Option<u64> = None;
    for part in v.split(|&b| b == b',').map(trim) {
        if part.is_empty() || !part.iter().all(u8::is_ascii_digit) {
            return None;
        }
        let mut n: u64 = 0;
        for &d in part {
            n = n.checked_mul(10)?.checked_add(u64::from(d - b'0'))?;
        }
        if out.is_some_and(|o| o != n) {
            return None;
        }
        out = Some(n);
    }
    out
}

fn trim(mut v: &[u8]) -> &[u8] {
    while let [b' ' | b'\t', rest @ ..] = v {
        v = rest;
    }
    while let [rest @ .., b' ' | b'\t'] = v {
        v = rest;
    }
    v
}

/// Decodes body bytes from `p`. Returns bytes consumed and the next state
/// (`None` = body complete).
fn decode_body(
    body: Body,
    p: &[u8],
    slot: u32,
    ev: &mut dyn SessionEvents,
) -> Result<(usize, Option<Body>), SessionError> {
    match body {
        Body::Length(remaining) => {
            let n = usize::try_from(remaining)
                .unwrap_or(usize::MAX)
                .min(p.len());
            ev.body(slot, n);
            let left = remaining - n as u64;
            Ok((n, (left > 0).then_some(Body::Length(left))))
        }
        Body::Close => {
            ev.body(slot, p.len());
            Ok((p.len(), Some(Body::Close)))
        }
        Body::Chunk(mut c) => {
            let mut i = 0usize;
            let perr = |m: &str| Err(SessionError::Protocol(format!("invalid chunked body: {m}")));
            while i < p.len() {
                let b = p[i];
                match c {
                    Chunk::Data { remaining } => {
                        let n = usize::try_from(remaining)
                            .unwrap_or(usize::MAX)
                            .min(p.len() - i);
                        ev.body(slot, n);
                        i += n;
                        let left = remaining - n as u64;
                        c = if left == 0 {
                            Chunk::DataCr
                        } else {
                            Chunk::Data { remaining: left }
                        };
                        continue;
                    }
                    Chunk::Size { size, digits, len } => {
                        if len > MAX_LINE {
                            return perr("chunk-size line too long");
                        }
                        if let Some(d) = (b as char).to_digit(16) {
                            let Some(s) = size
                                .checked_mul(16)
                                .and_then(|s| s.checked_add(u64::from(d)))
                            else {
                                return perr("chunk size overflows");
                            };
                            c = Chunk::Size {
                                size: s,
                                digits: true,
                                len: len + 1,
                            };
                        } else if !digits {
                            return perr("missing chunk size");
                        } else if b == b'\r' {
                            c = Chunk::SizeLf { size };
                        } else if b == b';' || b == b' ' || b == b'\t' {
                            c = Chunk::Ext { size, len: len + 1 };
                        } else {
                            return perr("bad character in chunk size");
                        }
                    }
                    Chunk::Ext { size, len } => {
                        if len > MAX_LINE {
                            return perr("chunk extension too long");
                        }
                        c = if b == b'\r' {
                            Chunk::SizeLf { size }
                        } else {
                            Chunk::Ext { size, len: len + 1 }
                        };
                    }
                    Chunk::SizeLf { size } => {
                        if b != b'\n' {
                            return perr("expected LF after chunk size");
                        }
                        c = if size == 0 {
                            Chunk::Trailer { len: 0, cr: false }
                        } else {
                            Chunk::Data { remaining: size }
                        };
                    }
                    Chunk::DataCr => {
                        if b != b'\r' {
                            return perr("expected CR after chunk data");
                        }
                        c = Chunk::DataLf;
                    }
                    Chunk::DataLf => {
                        if b != b'\n' {
                            return perr("expected LF after chunk data");
                        }
                        c = Chunk::Size {
                            size: 0,
                            digits: false,
                            len: 0,
                        };
                    }
                    Chunk::Trailer { len, cr } => {
                        if len > MAX_LINE {
                            return perr("trailer line too long");
                        }
                        if b == b'\n' && cr {
                            if len == 0 {
                                // Empty line: end of the trailer section and the message.
                                return Ok((i + 1, None));
                            }
                            c = Chunk::Trailer { len: 0, cr: false };
                        } else if b == b'\r' {
                            c = Chunk::Trailer { len, cr: true };
                        } else {
                            c = Chunk::Trailer {
                                len: len + 1,
                                cr: false,
                            };
                        }
                    }
                }
                i += 1;
            }
            Ok((i, Some(Body::Chunk(c))))
        }
    }
}

impl Session for H1Session {
    fn on_connect(&mut self, _out: &mut Vec<u8>) {}

    #[inline]
    fn can_submit(&self) -> bool {
        !self.closing && (self.queue.len() as u32) < self.depth
    }

    #[inline]
    fn submit(&mut self, slot: u32, uri_idx: usize, out: &mut Vec<u8>) -> Result<(), SubmitError> {
        if !self.can_submit() {
            return Err(SubmitError::WouldBlock);
        }
        let Some(req) = self.prep.h1.get(uri_idx) else {
            return Err(SubmitError::WouldBlock);
        };
        out.extend_from_slice(req);
        self.queue.push_back(slot);
        Ok(())
    }

    fn on_read(
        &mut self,
        input: &[u8],
        _out: &mut Vec<u8>,
        ev: &mut dyn SessionEvents,
    ) -> Result<(), SessionError> {
        if self.head_buf.is_empty() {
            return self.process(input, ev);
        }
        let mut buf = std::mem::take(&mut self.head_buf);
        buf.extend_from_slice(input);
        let r = self.process(&buf, ev);
        if self.head_buf.is_empty() {
            buf.clear();
            self.head_buf = buf; // keep the capacity
        }
        r
    }

    fn on_eof(&mut self, ev: &mut dyn SessionEvents) -> Result<(), SessionError> {
        match self.state {
            State::Body {
                body: Body::Close, ..
            } => {
                // RFC 9112 §6.3 rule 8: the body ends when the connection closes.
                self.close_after = true;
                self.finish(ev);
                Ok(())
            }
            State::Closed => Ok(()),
            State::Head if self.head_buf.is_empty() && self.queue.is_empty() => {
                self.state = State::Closed;
                Ok(())
            }
            _ => {
                self.state = State::Closed;
                Err(SessionError::UnexpectedEof)
            }
        }
    }

    fn on_write(&mut self, _out: &mut Vec<u8>) {}

    fn max_concurrency(&self) -> u32 {
        self.depth
    }

    fn in_flight(&self) -> u32 {
        self.queue.len() as u32
    }

    fn goaway_received(&self) -> bool {
        false
    }

    fn wants_close(&self) -> bool {
        self.state == State::Closed
    }

    fn terminate(&mut self, _out: &mut Vec<u8>) {
        self.closing = true;
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::config::BenchConfig;

    #[derive(Default, Debug)]
    struct Rec {
        status: Vec<(u32, u16)>,
        body: u64,
        head: usize,
        complete: Vec<u32>,
        refused: Vec<u32>,
    }
    impl SessionEvents for Rec {
        fn status(&mut self, slot: u32, status: u16) {
            self.status.push((slot, status));
        }
        fn header_bytes(&mut self, wire: usize, _decoded: usize) {
            self.head += wire;
        }
        fn body(&mut self, _slot: u32, len: usize) {
            self.body += len as u64;
        }
        fn complete(&mut self, slot: u32) {
            self.complete.push(slot);
        }
        fn reset(&mut self, _slot: u32, _code: u32) {}
        fn refused(&mut self, slot: u32) {
            self.refused.push(slot);
        }
        fn goaway(&mut self, _l: u32, _c: u32) {}
        fn push_refused(&mut self) {}
    }

    fn session(depth: u32) -> H1Session {
        let cfg = BenchConfig::from_uris(&["http://h/"], None).unwrap();
        H1Session::new(Arc::new(Prepared::new(&cfg)), depth)
    }

    /// Feeds `input` in pieces of `step` bytes.
    fn feed(
        s: &mut H1Session,
        input: &[u8],
        step: usize,
        ev: &mut Rec,
    ) -> Result<(), SessionError> {
        let mut out = Vec::new();
        for c in input.chunks(step) {
            s.on_read(c, &mut out, ev)?;
        }
        Ok(())
    }

    #[test]
    fn pipelined_responses_any_split() {
        let resp = b"HTTP/1.1 100 Continue\r\n\r\nHTTP/1.1 200 OK\r\nContent-Length: 5\r\n\r\nhelloHTTP/1.1 404 Not Found\r\nTransfer-Encoding: chunked\r\n\r\n3;x=y\r\nabc\r\n10\r\n0123456789abcdef\r\n0\r\nT: v\r\n\r\nHTTP/1.1 204 No Content\r\n\r\n";
        for step in 1..=resp.len() {
            let mut s = session(3);
            let mut out = Vec::new();
            for slot in 0..3 {
                s.submit(slot, 0, &mut out).unwrap();
            }
            assert!(!s.can_submit());
            let mut ev = Rec::default();
            feed(&mut s, resp, step, &mut ev).unwrap();
            assert_eq!(ev.complete, vec![0, 1, 2], "step {step}");
            assert_eq!(ev.status, vec![(0, 100), (0, 200), (1, 404), (2, 204)]);
            assert_eq!(ev.body, 5 + 3 + 16);
            assert_eq!(
                ev.head,
                "Content-Length".len() + 1 + "Transfer-Encoding".len() + 7
            );
            assert_eq!(s.in_flight(), 0);
            assert!(s.on_eof(&mut ev).is_ok());
        }
    }

    #[test]
    fn connection_close_refuses_pipelined_requests() {
        let mut s = session(4);
        let mut out = Vec::new();
        for slot in 0..4 {
            s.submit(slot, 0, &mut out).unwrap();
        }
        let mut ev = Rec::default();
        feed(
            &mut s,
            b"HTTP/1.1 200 OK\r\nContent-Length: 1\r\n\r\nxHTTP/1.1 200 OK\r\nConnection: close\r\nContent-Length: 0\r\n\r\n",
            7,
            &mut ev,
        )
        .unwrap();
        assert_eq!(ev.complete, vec![0, 1]);
        assert_eq!(ev.refused, vec![2, 3]);
        assert!(s.wants_close());
        assert!(!s.can_submit());
    }

    #[test]
    fn close_delimited_body_ends_at_eof() {
        let mut s = session(1);
        let mut out = Vec::new();
        s.submit(0, 0, &mut out).unwrap();
        let mut ev = Rec::default();
        feed(&mut s, b"HTTP/1.0 200 OK\r\n\r\nabcdef", 4, &mut ev).unwrap();
        assert!(ev.complete.is_empty());
        s.on_eof(&mut ev).unwrap();
        assert_eq!(ev.complete, vec![0]);
        assert_eq!(ev.body, 6);
    }

    #[test]
    fn truncated_response_is_an_error() {
        let mut s = session(1);
        let mut out = Vec::new();
        s.submit(0, 0, &mut out).unwrap();
        let mut ev = Rec::default();
        feed(
            &mut s,
            b"HTTP/1.1 200 OK\r\nContent-Length: 10\r\n\r\nabc",
            100,
            &mut ev,
        )
        .unwrap();
        assert_eq!(s.on_eof(&mut ev), Err(SessionError::UnexpectedEof));
    }

    #[test]
    fn malformed_input_is_rejected_without_panic() {
        let cases: [&[u8]; 6] = [
            b"garbage\r\n\r\n",
            b"HTTP/1.1 200 OK\r\nContent-Length: x\r\n\r\n",
            b"HTTP/1.1 200 OK\r\nContent-Length: 1\r\nContent-Length: 2\r\n\r\n",
            b"HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\nzz\r\n",
            b"HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\nfffffffffffffffffffff\r\n",
            b"HTTP/1.1 101 Switching Protocols\r\n\r\n",
        ];
        for c in cases {
            let mut s = session(1);
            let mut out = Vec::new();
            s.submit(0, 0, &mut out).unwrap();
            let mut ev = Rec::default();
            assert!(
                feed(&mut s, c, 3, &mut ev).is_err(),
                "{:?}",
                String::from_utf8_lossy(c)
            );
        }
        // Response without a request.
        let mut s = session(1);
        let mut ev = Rec::default();
        assert!(feed(&mut s, b"HTTP/1.1 200 OK\r\n\r\n", 100, &mut ev).is_err());
    }
}
