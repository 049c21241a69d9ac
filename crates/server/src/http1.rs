//! The HTTP/1.1 server side (RFC 9112): keep-alive, pipelining, Content-Length and chunked
//! request bodies (read and discarded), `Expect: 100-continue`, HEAD, HTTP/1.0 clients, and
//! the `Upgrade: h2c` path to HTTP/2 (RFC 7540 §3.2).

use std::time::{Duration, Instant};

use crate::body::BodyCursor;
use crate::chunked::{Chunked, ChunkedError};
use crate::conn::{Io, Next, HIGH_WATER};
use crate::endpoints::{reason, H1Headers, Method, Proto, Request, Response};
use crate::log::warn;
use crate::worker::{Ctx, Shared};

/// Most header fields in one request head.
const MAX_HEADERS: usize = 128;

/// What [`H1::process`] asks of the connection.
pub enum Step {
    /// Continue / close.
    Next(Next),
    /// The 101 response is queued: switch the connection to HTTP/2.
    Upgrade(Box<Upgrade>),
}

/// Everything HTTP/2 needs to take over after `101 Switching Protocols` (allocated: this
/// happens once per upgraded connection).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Upgrade {
    /// The decoded `HTTP2-Settings` payload (a SETTINGS frame payload).
    pub settings: Vec<u8>,
    /// The request as HTTP/2 fields (pseudo-header fields first, connection-specific
    /// fields and `content-length` dropped, names lowercase): it becomes stream 1
    /// (RFC 7540 §3.2: "The HTTP/1.1 request that is sent prior to upgrade is assigned a
    /// stream identifier of 1 ... with default priority values. Stream 1 is implicitly
    /// "half-closed" from the client toward the server").
    pub fields: Vec<(Vec<u8>, Vec<u8>)>,
}

#[derive(Debug)]
enum State {
    /// Waiting for (more of) a request head.
    Head,
    /// Reading (and discarding) a Content-Length body: bytes left.
    BodyLength(u64),
    /// Reading (and discarding) a chunked body.
    BodyChunked(Chunked),
    /// The response waits for its `/delay` timer.
    Delayed,
    /// Writing a response body.
    Streaming,
    /// No further requests on this connection (close after the queue is written).
    Done,
}

/// How the current response ends the exchange.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Persist {
    /// HTTP/1.1 default: keep the connection.
    KeepAlive,
    /// HTTP/1.0 client that asked for keep-alive: say so.
    KeepAlive10,
    /// Close after the response (`connection: close`).
    Close,
}

/// HTTP/1.1 protocol state of one connection.
pub struct H1 {
    state: State,
    /// Reused buffer for dynamic bodies.
    dynamic: Vec<u8>,
    pending: Option<Response>,
    cursor: Option<BodyCursor>,
    persist: Persist,
    upgrade: Option<Box<Upgrade>>,
    head_started: Option<Instant>,
    body_read: u64,
    max_head: usize,
    max_body: u64,
    keep_alive: bool,
    /// Set once a violation was logged for this connection.
    logged: bool,
}

impl H1 {
    /// Fresh state for a new connection.
    pub fn new(shared: &Shared) -> Self {
        H1 {
            state: State::Head,
            dynamic: Vec::new(),
            pending: None,
            cursor: None,
            persist: Persist::KeepAlive,
            upgrade: None,
            head_started: None,
            body_read: 0,
            max_head: shared.config.max_header_list_size as usize,
            max_body: shared.config.max_request_body,
            keep_alive: shared.config.keep_alive,
            logged: false,
        }
    }

    /// Whether a request head or body is being read (input is useful now).
    pub fn accepts_input(&self) -> bool {
        matches!(
            self.state,
            State::Head | State::BodyLength(_) | State::BodyChunked(_)
        )
    }

    /// Whether a response body still has bytes to queue.
    pub fn has_pending_work(&self) -> bool {
        matches!(self.state, State::Streaming)
    }

    /// Idle / slowloris check.
    pub fn timed_out(&self, now: Instant, last_active: Instant, idle: Duration) -> bool {
        match self.state {
            // RFC 9112 §9.5 leaves the timeout to the server; a request head must complete
            // within the idle timeout however slowly its bytes trickle in.
            State::Head => match self.head_started {
                Some(t) => now.duration_since(t) >= idle,
                None => now.duration_since(last_active) >= idle,
            },
            State::BodyLength(_) | State::BodyChunked(_) | State::Streaming => {
                now.duration_since(last_active) >= idle
            }
            State::Delayed => false,
            State::Done => now.duration_since(last_active) >= idle,
        }
    }

    /// The `/delay` timer fired.
    pub fn on_timer(&mut self, io: &mut Io<'_>, ctx: &mut Ctx<'_>) {
        if let State::Delayed = self.state {
            if let Some(resp) = self.pending.take() {
                self.write_response(resp, io, ctx);
            }
        }
    }

    /// Processes buffered input and continues any response body.
    pub fn process(&mut self, io: &mut Io<'_>, ctx: &mut Ctx<'_>) -> Step {
        loop {
            match &mut self.state {
                State::Head => {
                    if io.out.len() >= HIGH_WATER {
                        return Step::Next(Next::Continue);
                    }
                    if io.inbuf.is_empty() {
                        self.head_started = None;
                        return Step::Next(if io.read_eof {
                            Next::CloseAfterFlush
                        } else {
                            Next::Continue
                        });
                    }
                    if self.head_started.is_none() {
                        self.head_started = Some(ctx.now);
                    }
                    match self.parse_head(io, ctx) {
                        Some(step) => return step,
                        None => continue,
                    }
                }
                State::BodyLength(rem) => {
                    let n = (*rem).min(io.inbuf.len() as u64);
                    io.inbuf.consume(n as usize);
                    *rem -= n;
                    if *rem == 0 {
                        if let Some(step) = self.finish_request(io, ctx) {
                            return step;
                        }
                    } else if io.read_eof {
                        return Step::Next(Next::CloseNow);
                    } else {
                        return Step::Next(Next::Continue);
                    }
                }
                State::BodyChunked(dec) => {
                    let r = dec.feed(
                        io.inbuf.data(),
                        &mut self.body_read,
                        self.max_body,
                        self.max_head as u32,
                    );
                    match r {
                        Ok(n) => {
                            io.inbuf.consume(n);
                            if dec.is_done() {
                                if let Some(step) = self.finish_request(io, ctx) {
                                    return step;
                                }
                            } else if io.read_eof {
                                return Step::Next(Next::CloseNow);
                            } else {
                                return Step::Next(Next::Continue);
                            }
                        }
                        Err(e) => {
                            let status = match e {
                                ChunkedError::Malformed => 400,
                                ChunkedError::TooLarge => 413,
                            };
                            self.log(io, format_args!("bad chunked request body ({status})"));
                            self.pending = None;
                            self.upgrade = None;
                            return self.fail(status, io, ctx);
                        }
                    }
                }
                State::Delayed => return Step::Next(Next::Continue),
                State::Streaming => {
                    let Some(cursor) = &mut self.cursor else {
                        self.after_response();
                        continue;
                    };
                    let room = HIGH_WATER.saturating_sub(io.out.len());
                    if room == 0 {
                        return Step::Next(Next::Continue);
                    }
                    if let Err(e) = cursor.copy_into(&self.dynamic, io.out, room) {
                        warn!("{}: reading a file body: {e}", io.peer);
                        return Step::Next(Next::CloseNow);
                    }
                    if cursor.remaining() == 0 {
                        self.after_response();
                    } else {
                        return Step::Next(Next::Continue);
                    }
                }
                State::Done => return Step::Next(Next::CloseAfterFlush),
            }
        }
    }

    /// Parses one request head. `None`: a request was taken, keep looping.
    fn parse_head(&mut self, io: &mut Io<'_>, ctx: &mut Ctx<'_>) -> Option<Step> {
        let mut headers = [httparse::EMPTY_HEADER; MAX_HEADERS];
        let mut req = httparse::Request::new(&mut headers);
        let data = io.inbuf.data();
        let consumed = match req.parse(data) {
            Ok(httparse::Status::Partial) => {
                if data.len() > self.max_head {
                    let max = self.max_head;
                    self.log(io, format_args!("request head over {max} bytes"));
                    return Some(self.fail(431, io, ctx));
                }
                return Some(Step::Next(if io.read_eof {
                    Next::CloseAfterFlush
                } else {
                    Next::Continue
                }));
            }
            Ok(httparse::Status::Complete(n)) => n,
            Err(httparse::Error::TooManyHeaders) => {
                self.log(io, format_args!("more than {MAX_HEADERS} header fields"));
                return Some(self.fail(431, io, ctx));
            }
            Err(e) => {
                self.log(io, format_args!("malformed request head: {e}"));
                if !looks_like_http1(data) {
                    // Not HTTP/1.x at all (e.g. a broken HTTP/2 preface, TLS on the
                    // cleartext port): an HTTP/1.1 error page would only be garbage to such
                    // a peer. Close (RFC 9113 §3.4: "Clients and servers MUST treat an
                    // invalid connection preface as a connection error").
                    return Some(Step::Next(Next::CloseNow));
                }
                return Some(self.fail(400, io, ctx));
            }
        };
        if consumed > self.max_head {
            let max = self.max_head;
            self.log(io, format_args!("request head over {max} bytes"));
            return Some(self.fail(431, io, ctx));
        }
        let (Some(method_raw), Some(target), Some(version)) = (req.method, req.path, req.version)
        else {
            return Some(self.fail(400, io, ctx));
        };
        let http10 = version == 0;

        let mut f = HeadFacts::default();
        for h in req.headers.iter() {
            f.observe(h.name.as_bytes(), h.value);
        }
        // RFC 9112 §3.2: "A server MUST respond with a 400 (Bad Request) status code to any
        // HTTP/1.1 request message that lacks a Host header field and to any request message
        // that contains more than one Host header field line".
        if (!http10 && f.hosts == 0) || f.hosts > 1 || f.bad_content_length {
            return Some(self.fail(400, io, ctx));
        }
        let mut chunked = false;
        if f.transfer_encoding {
            // RFC 9112 §6.1: "A server or client that receives an HTTP/1.0 message containing
            // a Transfer-Encoding header field MUST treat the message as if the framing is
            // faulty"; and "If a Transfer-Encoding header field is present in a request and the
            // chunked transfer coding is not the final encoding, the message body length cannot
            // be determined reliably; the server MUST respond with the 400 (Bad Request)".
            // A request with both Transfer-Encoding and Content-Length is rejected outright
            // (request smuggling).
            if http10 || !f.te_chunked_last || f.content_length.is_some() {
                return Some(self.fail(400, io, ctx));
            }
            chunked = true;
        }
        let body_len = if chunked {
            None
        } else {
            Some(f.content_length.unwrap_or(0))
        };
        if let Some(n) = body_len {
            if n > self.max_body {
                self.log(io, format_args!("request body of {n} bytes over the limit"));
                return Some(self.fail(413, io, ctx));
            }
        }
        let has_body = chunked || body_len.unwrap_or(0) > 0;

        self.persist = if !self.keep_alive {
            Persist::Close
        } else if http10 {
            if f.conn_keep_alive && !f.conn_close {
                Persist::KeepAlive10
            } else {
                Persist::Close
            }
        } else if f.conn_close {
            Persist::Close
        } else {
            Persist::KeepAlive
        };

        let request = Request {
            method: Method::parse(method_raw.as_bytes()),
            method_raw: method_raw.as_bytes(),
            target: target.as_bytes(),
            proto: if http10 { Proto::Http10 } else { Proto::Http11 },
            tls: io.tls,
            body_len,
            headers: &H1Headers(req.headers),
        };
        let resp = ctx.shared.router.route(&request, &mut self.dynamic);

        // RFC 7540 §3.2: "A server MUST ignore an "h2" token in an Upgrade header field" and
        // §3.2.1: "A server MUST NOT upgrade the connection to HTTP/2 if this header field
        // [HTTP2-Settings] is not present or if more than one is present." Upgrade is only
        // meaningful on cleartext (ALPN does the job on TLS).
        self.upgrade = None;
        if !io.tls && !http10 && f.upgrade_h2c && f.conn_upgrade && f.conn_http2_settings {
            if let (1, Some(settings)) = (f.http2_settings_count, f.http2_settings) {
                if let Some(settings) = base64url_decode(settings) {
                    self.upgrade = Some(Box::new(Upgrade {
                        settings,
                        fields: upgrade_fields(method_raw, target, req.headers),
                    }));
                }
            }
        }

        let (expect_other, expect_continue) = (f.expect_other, f.expect_continue);
        io.inbuf.consume(consumed);
        self.head_started = None;
        self.body_read = 0;

        if expect_other {
            // RFC 9110 §10.1.1: "A server that receives an Expect field value containing a
            // member other than 100-continue MAY respond with a 417 (Expectation Failed)".
            return Some(self.fail(417, io, ctx));
        }
        if has_body && expect_continue && !http10 {
            if resp.status < 400 {
                // RFC 9110 §10.1.1: "A server that receives a 100-continue expectation in an
                // HTTP/1.1 request ... MUST send [a 100 (Continue) response] ... unless it has
                // already received some or all of the content".
                if io.inbuf.is_empty() {
                    io.out.extend_from_slice(b"HTTP/1.1 100 Continue\r\n\r\n");
                }
            } else {
                // Final status without reading the content: the connection must close.
                self.persist = Persist::Close;
                self.upgrade = None;
                self.write_response(resp, io, ctx);
                return None;
            }
        }
        self.pending = Some(resp);
        self.state = if chunked {
            State::BodyChunked(Chunked::default())
        } else if let Some(n @ 1..) = body_len {
            State::BodyLength(n)
        } else {
            return self.finish_request(io, ctx);
        };
        None
    }

    /// The request (head and body) is complete: answer (now, after a delay, or by upgrading).
    fn finish_request(&mut self, io: &mut Io<'_>, ctx: &mut Ctx<'_>) -> Option<Step> {
        let Some(resp) = self.pending.take() else {
            self.state = State::Head;
            return None;
        };
        if let Some(upgrade) = self.upgrade.take() {
            // RFC 7540 §3.2: "The first HTTP/2 frame sent by the server MUST be a server
            // connection preface consisting of a SETTINGS frame. Upon receiving the 101
            // response, the client MUST send a connection preface".
            io.out.extend_from_slice(
                b"HTTP/1.1 101 Switching Protocols\r\nconnection: Upgrade\r\nupgrade: h2c\r\n\r\n",
            );
            self.state = State::Done;
            drop(resp);
            return Some(Step::Upgrade(upgrade));
        }
        match resp.delay {
            Some(d) if !d.is_zero() => {
                ctx.arm(ctx.now + d, 0);
                self.pending = Some(resp);
                self.state = State::Delayed;
            }
            _ => self.write_response(resp, io, ctx),
        }
        None
    }

    /// Answers with an error status and closes the connection afterwards.
    fn fail(&mut self, status: u16, io: &mut Io<'_>, ctx: &mut Ctx<'_>) -> Step {
        self.persist = Persist::Close;
        self.pending = None;
        self.upgrade = None;
        self.write_response(Response::error(status), io, ctx);
        // Input after a framing error cannot be trusted: stop reading requests.
        self.cursor_flush_then_done();
        Step::Next(Next::Continue)
    }

    fn cursor_flush_then_done(&mut self) {
        if !matches!(self.state, State::Streaming) {
            self.state = State::Done;
        }
    }

    fn write_response(&mut self, resp: Response, io: &mut Io<'_>, ctx: &mut Ctx<'_>) {
        write_head(io.out, &resp, ctx.date.get(), self.persist);
        if resp.head_only || resp.body.is_empty() || resp.no_content_length() {
            self.after_response();
        } else {
            self.cursor = Some(BodyCursor::new(resp.body));
            self.state = State::Streaming;
        }
    }

    fn after_response(&mut self) {
        self.cursor = None;
        self.state = if self.persist == Persist::Close {
            State::Done
        } else {
            State::Head
        };
    }

    fn log(&mut self, io: &Io<'_>, args: std::fmt::Arguments<'_>) {
        if !self.logged {
            self.logged = true;
            warn!("{} (HTTP/1.1): {}", io.peer, args);
        }
    }
}

/// Whether the first line of `data` ends in an HTTP/1.x version.
fn looks_like_http1(data: &[u8]) -> bool {
    let line = match data.iter().position(|&b| b == b'\n') {
        Some(i) => &data[..i],
        None => data,
    };
    let line = line.strip_suffix(b"\r").unwrap_or(line);
    line.len() >= 9 && line[line.len() - 9..line.len() - 1].eq_ignore_ascii_case(b" HTTP/1.")
}

/// Facts about a request head gathered in one pass over its fields.
#[derive(Default)]
struct HeadFacts<'a> {
    hosts: u32,
    content_length: Option<u64>,
    bad_content_length: bool,
    transfer_encoding: bool,
    te_chunked_last: bool,
    conn_close: bool,
    conn_keep_alive: bool,
    conn_upgrade: bool,
    conn_http2_settings: bool,
    expect_continue: bool,
    expect_other: bool,
    upgrade_h2c: bool,
    http2_settings: Option<&'a [u8]>,
    http2_settings_count: u32,
}

fn tokens(v: &[u8]) -> impl Iterator<Item = &[u8]> {
    v.split(|&b| b == b',').map(|t| t.trim_ascii())
}

impl<'a> HeadFacts<'a> {
    fn observe(&mut self, name: &[u8], value: &'a [u8]) {
        let is = |n: &str| name.eq_ignore_ascii_case(n.as_bytes());
        if is("host") {
            self.hosts += 1;
        } else if is("content-length") {
            // RFC 9112 §6.3: a list of identical values may be accepted; differing values or
            // anything not a decimal number make the framing invalid.
            for t in tokens(value) {
                match crate::endpoints::parse_u64(t) {
                    Some(n) if self.content_length.map_or(true, |c| c == n) => {
                        self.content_length = Some(n)
                    }
                    _ => self.bad_content_length = true,
                }
            }
        } else if is("transfer-encoding") {
            self.transfer_encoding = true;
            if let Some(last) = tokens(value).filter(|t| !t.is_empty()).last() {
                self.te_chunked_last = last.eq_ignore_ascii_case(b"chunked");
            }
        } else if is("connection") {
            for t in tokens(value) {
                if t.eq_ignore_ascii_case(b"close") {
                    self.conn_close = true;
                } else if t.eq_ignore_ascii_case(b"keep-alive") {
                    self.conn_keep_alive = true;
                } else if t.eq_ignore_ascii_case(b"upgrade") {
                    self.conn_upgrade = true;
                } else if t.eq_ignore_ascii_case(b"http2-settings") {
                    self.conn_http2_settings = true;
                }
            }
        } else if is("expect") {
            if value.trim_ascii().eq_ignore_ascii_case(b"100-continue") {
                self.expect_continue = true;
            } else {
                self.expect_other = true;
            }
        } else if is("upgrade") {
            if tokens(value).any(|t| t.eq_ignore_ascii_case(b"h2c")) {
                self.upgrade_h2c = true;
            }
        } else if is("http2-settings") {
            self.http2_settings_count += 1;
            self.http2_settings = Some(value.trim_ascii());
        }
    }
}

/// The HTTP/1.1 request of an h2c upgrade as HTTP/2 fields.
fn upgrade_fields(
    method: &str,
    target: &str,
    headers: &[httparse::Header<'_>],
) -> Vec<(Vec<u8>, Vec<u8>)> {
    let (path, _) = crate::endpoints::split_target(target.as_bytes());
    let path_and_query = if target.starts_with('/') {
        target.as_bytes().to_vec()
    } else {
        // absolute-form: keep path and query
        let q = target.find('?').map(|i| &target[i..]).unwrap_or("");
        [path, q.as_bytes()].concat()
    };
    let authority = headers
        .iter()
        .find(|h| h.name.eq_ignore_ascii_case("host"))
        .map(|h| h.value.to_vec())
        .unwrap_or_default();
    let mut fields = vec![
        (b":method".to_vec(), method.as_bytes().to_vec()),
        (b":scheme".to_vec(), b"http".to_vec()),
        (b":authority".to_vec(), authority),
        (b":path".to_vec(), path_and_query),
    ];
    for h in headers {
        let name = h.name.to_ascii_lowercase();
        // RFC 9113 §8.2.2: connection-specific fields must not appear in HTTP/2; `host` is
        // carried by :authority; the body was consumed by HTTP/1.1, so no content-length.
        match name.as_str() {
            "connection" | "upgrade" | "http2-settings" | "keep-alive" | "proxy-connection"
            | "transfer-encoding" | "host" | "content-length" | "expect" => continue,
            "te" if !h.value.trim_ascii().eq_ignore_ascii_case(b"trailers") => continue,
            _ => {}
        }
        fields.push((name.into_bytes(), h.value.to_vec()));
    }
    fields
}

/// Decodes base64url without padding (RFC 7540 §3.2.1 `token68`); `None` if malformed.
pub fn base64url_decode(s: &[u8]) -> Option<Vec<u8>> {
    let s = s
        .strip_suffix(b"==")
        .or_else(|| s.strip_suffix(b"="))
        .unwrap_or(s);
    let mut out = Vec::with_capacity(s.len() * 3 / 4);
    let mut acc = 0u32;
    let mut bits = 0;
    for &c in s {
        let v = match c {
            b'A'..=b'Z' => c - b'A',
            b'a'..=b'z' => c - b'a' + 26,
            b'0'..=b'9' => c - b'0' + 52,
            b'-' | b'+' => 62,
            b'_' | b'/' => 63,
            _ => return None,
        };
        acc = (acc << 6) | u32::from(v);
        bits += 6;
        if bits >= 8 {
            bits -= 8;
            out.push((acc >> bits) as u8);
        }
    }
    Some(out)
}

/// Writes a response head. Every field is a static slice or a cached value: no allocation.
fn write_head(out: &mut Vec<u8>, resp: &Response, date: &[u8], persist: Persist) {
    let status = resp.status.clamp(100, 999);
    out.extend_from_slice(b"HTTP/1.1 ");
    out.extend_from_slice(&[
        b'0' + (status / 100) as u8,
        b'0' + (status / 10 % 10) as u8,
        b'0' + (status % 10) as u8,
        b' ',
    ]);
    out.extend_from_slice(reason(status).as_bytes());
    out.extend_from_slice(b"\r\nserver: h2lab\r\ndate: ");
    out.extend_from_slice(date);
    if !resp.no_content_length() {
        out.extend_from_slice(b"\r\ncontent-type: ");
        out.extend_from_slice(resp.content_type.as_bytes());
        out.extend_from_slice(b"\r\ncontent-length: ");
        write_u64(out, resp.body.len());
    }
    out.extend_from_slice(b"\r\ncache-control: ");
    out.extend_from_slice(resp.cache.value());
    if resp.allow {
        out.extend_from_slice(b"\r\nallow: GET, HEAD, POST, PUT");
    }
    out.extend_from_slice(match persist {
        Persist::KeepAlive => b"\r\n\r\n" as &[u8],
        Persist::KeepAlive10 => b"\r\nconnection: keep-alive\r\n\r\n",
        Persist::Close => b"\r\nconnection: close\r\n\r\n",
    });
}

/// Appends the decimal form of `v`.
pub fn write_u64(out: &mut Vec<u8>, mut v: u64) {
    let mut buf = [0u8; 20];
    let mut i = buf.len();
    loop {
        i -= 1;
        buf[i] = b'0' + (v % 10) as u8;
        v /= 10;
        if v == 0 {
            break;
        }
    }
    out.extend_from_slice(&buf[i..]);
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn base64url() {
        assert_eq!(
            base64url_decode(b"AAMAAABkAARAAAAAAAIAAAAA").unwrap().len(),
            18
        );
        assert_eq!(base64url_decode(b"aGVsbG8").unwrap(), b"hello");
        assert_eq!(base64url_decode(b"aGVsbG8=").unwrap(), b"hello");
        assert!(base64url_decode(b"a b").is_none());
        assert_eq!(base64url_decode(b"").unwrap(), b"");
    }

    #[test]
    fn numbers() {
        let mut v = Vec::new();
        write_u64(&mut v, 0);
        v.push(b' ');
        write_u64(&mut v, u64::MAX);
        assert_eq!(v, b"0 18446744073709551615");
    }
}
