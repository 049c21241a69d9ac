//! HTTP/1.1 client session on [`h2lab_wire::h1::ResponseParser`]: keep-alive,
//! pipelining up to `-m`, bodies counted and never stored.
//!
//! Requests are pre-serialised once per URI (`Prepared::h1`, built with
//! `wire::h1::encode_request`); submitting is one `extend_from_slice`.
//! Responses are matched to requests in order (RFC 9112 §9.3.2: "A server
//! MUST send its responses to those requests in the same order that the
//! requests were received").

use std::collections::VecDeque;
use std::sync::Arc;

use h2lab_wire::h1::{Event, H1Error, ResponseParser};

use crate::request::Prepared;
use crate::session::{Session, SessionError, SessionEvents, SubmitError};

/// HTTP/1.1 session (see module docs).
#[derive(Debug)]
pub struct H1Session {
    prep: Arc<Prepared>,
    depth: u32,
    /// Slots with a request sent and no complete response, in order.
    queue: VecDeque<u32>,
    parser: ResponseParser,
    /// Unconsumed bytes (an unfinished head or trailer section) carried
    /// between reads.
    carry: Vec<u8>,
    /// The connection is finished (after a non-persistent response or an error).
    closed: bool,
    /// No more requests will be submitted.
    closing: bool,
    /// `-v`: copy the raw responses to stdout, like h2load.
    verbose: bool,
}

impl H1Session {
    /// A session pipelining up to `depth` requests (1 when sending bodies, as
    /// h2load); `verbose` copies raw responses to stdout like h2load `-v`.
    pub(crate) fn new(prep: Arc<Prepared>, depth: u32, verbose: bool) -> H1Session {
        let depth = if prep.body.is_some() { 1 } else { depth.max(1) };
        H1Session {
            prep,
            depth,
            queue: VecDeque::with_capacity(depth as usize),
            parser: ResponseParser::new(),
            carry: Vec::new(),
            closed: false,
            closing: false,
            verbose,
        }
    }

    fn process(&mut self, mut p: &[u8], ev: &mut dyn SessionEvents) -> Result<(), SessionError> {
        while !self.closed {
            let (n, event) = match self.parser.parse(p) {
                Ok(r) => r,
                Err(e) => {
                    self.closed = true;
                    return Err(SessionError::H1(e));
                }
            };
            p = p.get(n..).unwrap_or_default();
            let slot = self.queue.front().copied().unwrap_or(u32::MAX);
            match event {
                Event::NeedMore => {
                    // An unfinished head/trailer section is not consumed: keep it.
                    self.carry.extend_from_slice(p);
                    return Ok(());
                }
                Event::Interim(h) | Event::Head(h) => {
                    // h2load's HTTP/1.1 "headers" bytes: field names plus values.
                    let b = h.field_bytes;
                    ev.status(slot, h.status);
                    ev.header_bytes(b, b);
                    if h.status == 103 && ev.wants_hints() {
                        for link in h.headers.get_all("link") {
                            ev.early_hint(slot, link);
                        }
                    }
                }
                Event::Upgrade(_) => {
                    self.closed = true;
                    return Err(SessionError::UnexpectedUpgrade);
                }
                Event::Body(b) => {
                    ev.body(slot, b.len());
                    ev.body_data(slot, b);
                }
                Event::Trailers { .. } => {}
                Event::End { keep_alive } => self.finish(keep_alive, ev),
                Event::Closed => return Ok(()),
            }
        }
        Ok(())
    }

    /// The response at the head of the queue is complete.
    fn finish(&mut self, keep_alive: bool, ev: &mut dyn SessionEvents) {
        if let Some(slot) = self.queue.pop_front() {
            ev.complete(slot);
        }
        if !keep_alive {
            // RFC 9112 §9.6: after "close" the server does not process further
            // requests on this connection, so pipelined ones can be retried.
            self.closed = true;
            self.closing = true;
            while let Some(s) = self.queue.pop_front() {
                ev.refused(s);
            }
        } else if !self.queue.is_empty() {
            self.parser.start(!self.prep.head_method);
        }
    }
}

impl Session for H1Session {
    fn on_connect(&mut self, _out: &mut Vec<u8>) {}

    #[inline]
    fn can_submit(&self) -> bool {
        !self.closing && !self.closed && (self.queue.len() as u32) < self.depth
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
        if self.queue.is_empty() && self.parser.is_idle() {
            self.parser.start(!self.prep.head_method);
        }
        self.queue.push_back(slot);
        Ok(())
    }

    fn on_read(
        &mut self,
        input: &[u8],
        _out: &mut Vec<u8>,
        ev: &mut dyn SessionEvents,
    ) -> Result<(), SessionError> {
        if self.verbose {
            use std::io::Write;
            let _ = std::io::stdout().lock().write_all(input);
        }
        if self.carry.is_empty() {
            return self.process(input, ev);
        }
        let mut buf = std::mem::take(&mut self.carry);
        buf.extend_from_slice(input);
        let r = self.process(&buf, ev);
        if self.carry.is_empty() {
            buf.clear();
            self.carry = buf; // keep the capacity
        }
        r
    }

    fn on_eof(&mut self, ev: &mut dyn SessionEvents) -> Result<(), SessionError> {
        if self.closed {
            return Ok(());
        }
        self.closed = true;
        match self.parser.eof() {
            // RFC 9112 §6.3 rule 8: a close-delimited body ends with the connection.
            Ok(Event::End { .. }) => {
                self.finish(false, ev);
                Ok(())
            }
            Ok(_) => Ok(()),
            Err(H1Error::Truncated | H1Error::ClosedBeforeResponse) => {
                Err(SessionError::UnexpectedEof)
            }
            Err(e) => Err(SessionError::H1(e)),
        }
    }

    fn on_write(&mut self, _out: &mut Vec<u8>) {}

    fn wants_write(&self) -> bool {
        false
    }

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
        self.closed
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
        H1Session::new(Arc::new(Prepared::new(&cfg).unwrap()), depth, false)
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
