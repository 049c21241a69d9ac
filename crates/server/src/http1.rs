//! The HTTP/1.1 server side (RFC 9112) on `h2lab_wire::h1`: keep-alive, pipelining,
//! Content-Length and chunked request bodies (read and discarded), `Expect: 100-continue`,
//! HEAD, HTTP/1.0 clients, and the `Upgrade: h2c` path to HTTP/2 (RFC 7540 §3.2). Request
//! heads are parsed by [`RequestParser`] (limits, framing, persistence, h2c detection);
//! response heads are written here from static slices and cached values.

use std::time::{Duration, Instant};

use h2lab_wire::h1::{
    decode_base64url, encode_informational, push_decimal, BodyDecoder, BodyEvent, Framing, Headers,
    Limits, Parsed, RequestParser, Version, CONTINUE_100, H2C_SWITCHING_PROTOCOLS, MAX_HEADERS,
};

use crate::body::BodyCursor;
use crate::ctx::{Ctx, Io, Next, Shared};
use crate::endpoints::{reason, HeaderSource, HttpVersion, Method, Request, Response};
use crate::log::warn;

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
    /// Reading (and discarding) a request body.
    Body(BodyDecoder),
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

/// HTTP/1.1 field lines as a [`HeaderSource`] (for `/info`).
struct H1Fields<'a>(Headers<'a>);

impl HeaderSource for H1Fields<'_> {
    fn for_each(&self, f: &mut dyn FnMut(&[u8], &[u8])) {
        for h in self.0.iter() {
            f(h.name.as_bytes(), h.value);
        }
    }
}

/// HTTP/1.1 protocol state of one connection.
pub struct H1 {
    state: State,
    parser: RequestParser,
    /// Reused buffer for dynamic bodies.
    dynamic: Vec<u8>,
    pending: Option<Response>,
    cursor: Option<BodyCursor>,
    persist: Persist,
    upgrade: Option<Box<Upgrade>>,
    head_started: Option<Instant>,
    keep_alive: bool,
    /// Requests left before the connection ends (`--max-requests-per-connection`).
    requests_left: Option<u32>,
    /// Set once a violation was logged for this connection.
    logged: bool,
}

impl H1 {
    /// Fresh state for a new connection.
    pub fn new(shared: &Shared) -> Self {
        let c = &shared.config;
        let limits = Limits {
            max_request_line: (c.max_header_list_size as usize).max(1024),
            max_header_bytes: c.max_header_list_size as usize,
            max_headers: MAX_HEADERS,
            max_body: c.max_request_body,
        };
        H1 {
            state: State::Head,
            parser: RequestParser::new(limits),
            dynamic: Vec::new(),
            pending: None,
            cursor: None,
            persist: Persist::KeepAlive,
            upgrade: None,
            head_started: None,
            keep_alive: c.keep_alive,
            requests_left: c.max_requests_per_connection,
            logged: false,
        }
    }

    /// Whether a request head or body is being read (input is useful now).
    pub fn accepts_input(&self) -> bool {
        matches!(self.state, State::Head | State::Body(_))
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
            State::Body(_) | State::Streaming | State::Done => {
                now.duration_since(last_active) >= idle
            }
            State::Delayed => false,
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
                    if io.out.is_full() {
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
                    if let Some(step) = self.parse_head(io, ctx) {
                        return step;
                    }
                }
                State::Body(dec) => {
                    let (n, ev) = match dec.decode(io.inbuf.data()) {
                        Ok(r) => r,
                        Err(e) => {
                            let status = e.status_code();
                            self.log(io, format_args!("bad request body: {e} ({status})"));
                            return self.fail(status, io, ctx);
                        }
                    };
                    let end = matches!(ev, BodyEvent::End);
                    let need_more = matches!(ev, BodyEvent::NeedMore);
                    io.inbuf.consume(n);
                    if end {
                        if let Some(step) = self.finish_request(io, ctx) {
                            return step;
                        }
                    } else if need_more {
                        return Step::Next(if io.read_eof {
                            // Truncated request.
                            Next::CloseNow
                        } else {
                            Next::Continue
                        });
                    }
                }
                State::Delayed => return Step::Next(Next::Continue),
                State::Streaming => {
                    let Some(cursor) = &mut self.cursor else {
                        self.after_response();
                        continue;
                    };
                    if io.out.is_full() {
                        return Step::Next(Next::Continue);
                    }
                    let copy_room = io.out.copy_room();
                    if let Some(chunk) = cursor.static_chunk(io.out.splice_room()) {
                        // Built-in bodies: written from static memory, not copied.
                        io.out.splice(chunk);
                        cursor.advance(chunk.len());
                    } else if let Err(e) =
                        cursor.copy_into(&self.dynamic, io.out.bytes(), copy_room)
                    {
                        warn!("{}: reading a file body: {e}", io.peer);
                        return Step::Next(Next::CloseNow);
                    }
                    // Loop: more of the body until the queue is full, or the next request.
                    if cursor.remaining() == 0 {
                        self.after_response();
                    }
                }
                State::Done => return Step::Next(Next::CloseAfterFlush),
            }
        }
    }

    /// Parses one request head. `None`: a request was taken, keep looping.
    fn parse_head(&mut self, io: &mut Io<'_>, ctx: &mut Ctx<'_>) -> Option<Step> {
        let data = io.inbuf.data();
        let head = match self.parser.parse(data) {
            Ok(Parsed::NeedMore) => {
                return Some(Step::Next(if io.read_eof {
                    Next::CloseAfterFlush
                } else {
                    Next::Continue
                }));
            }
            Ok(Parsed::Complete(head)) => head,
            Err(e) => {
                let status = e.status_code();
                let http = looks_like_http1(data);
                self.log(io, format_args!("bad request head: {e} ({status})"));
                if !http {
                    // Not HTTP/1.x at all (e.g. a broken HTTP/2 preface, TLS on the
                    // cleartext port): an HTTP/1.1 error page would only be garbage to such
                    // a peer. Close (RFC 9113 §3.4: "Clients and servers MUST treat an
                    // invalid connection preface as a connection error").
                    return Some(Step::Next(Next::CloseNow));
                }
                return Some(self.fail(status, io, ctx));
            }
        };
        let http10 = head.version == Version::Http10;
        let (has_body, body_len) = match head.framing {
            Framing::ContentLength(n) => (n > 0, Some(n)),
            Framing::Chunked => (true, None),
            Framing::None | Framing::CloseDelimited => (false, Some(0)),
        };
        let last = match &mut self.requests_left {
            Some(n) => {
                *n = n.saturating_sub(1);
                *n == 0
            }
            None => false,
        };
        self.persist = if !self.keep_alive || !head.keep_alive || last {
            Persist::Close
        } else if http10 {
            Persist::KeepAlive10
        } else {
            Persist::KeepAlive
        };
        // RFC 9110 §10.1.1: "A server that receives an Expect field value containing a
        // member other than 100-continue MAY respond with a 417 (Expectation Failed)".
        let expect_other = !head.expect_continue
            && head
                .headers
                .get("expect")
                .is_some_and(|v| !v.eq_ignore_ascii_case(b"100-continue"));

        let request = Request {
            method: Method::parse(head.method.as_bytes()),
            method_raw: head.method.as_bytes(),
            target: head.target.as_bytes(),
            proto: if http10 {
                HttpVersion::Http10
            } else {
                HttpVersion::Http11
            },
            tls: io.tls,
            body_len,
            headers: &H1Fields(head.headers),
            early: io.early,
        };
        let mut resp = ctx.shared.router.route(&request, &mut self.dynamic);
        if http10 {
            // RFC 9110 §15.2: "Since HTTP/1.0 did not define any 1xx status codes, a server
            // MUST NOT send a 1xx response to an HTTP/1.0 client."
            resp.early_hints = None;
        }

        // RFC 7540 §3.2.1: "A server MUST NOT upgrade the connection to HTTP/2 if this header
        // field [HTTP2-Settings] is not present or if more than one is present" (checked by
        // the parser); the client must also list both options in Connection. Upgrade is only
        // meaningful on cleartext (ALPN does the job on TLS).
        self.upgrade = None;
        if let Some(h2c) = head.h2c.filter(|u| u.connection_options && !io.tls) {
            let mut settings = Vec::new();
            if decode_base64url(h2c.settings, &mut settings).is_ok() && settings.len() % 6 == 0 {
                self.upgrade = Some(Box::new(Upgrade {
                    settings,
                    fields: upgrade_fields(head.method, head.target, head.headers),
                }));
            }
        }
        let expect_continue = head.expect_continue;
        let decoder = self.parser.body_decoder(&head);
        io.inbuf.consume(head.head_len);
        self.head_started = None;

        if expect_other {
            return Some(self.fail(417, io, ctx));
        }
        if has_body && expect_continue {
            if resp.status < 400 {
                // RFC 9110 §10.1.1: "A server that receives a 100-continue expectation in an
                // HTTP/1.1 request ... MUST send [a 100 (Continue) response] ... unless it has
                // already received some or all of the content".
                if io.inbuf.is_empty() {
                    io.out.bytes().extend_from_slice(CONTINUE_100);
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
        if has_body {
            self.state = State::Body(decoder);
            None
        } else {
            self.finish_request(io, ctx)
        }
    }

    /// The request (head and body) is complete: answer (now, after a delay, or by upgrading).
    fn finish_request(&mut self, io: &mut Io<'_>, ctx: &mut Ctx<'_>) -> Option<Step> {
        let Some(mut resp) = self.pending.take() else {
            self.state = State::Head;
            return None;
        };
        if let Some(upgrade) = self.upgrade.take() {
            // RFC 7540 §3.2: "The first HTTP/2 frame sent by the server MUST be a server
            // connection preface consisting of a SETTINGS frame. Upon receiving the 101
            // response, the client MUST send a connection preface".
            io.out.bytes().extend_from_slice(H2C_SWITCHING_PROTOCOLS);
            self.state = State::Done;
            drop(resp);
            return Some(Step::Upgrade(upgrade));
        }
        if let Some(page) = resp.early_hints.take() {
            // RFC 8297 §2: the hints go at once, the final response after the think time.
            let mut link = Vec::new();
            page.write_preload_links(&mut link);
            encode_informational(io.out.bytes(), 103, &[(b"link", &link)]);
        }
        match resp.delay {
            Some(d) if !d.is_zero() => {
                ctx.arm(d, 0);
                self.pending = Some(resp);
                self.state = State::Delayed;
            }
            _ => self.write_response(resp, io, ctx),
        }
        None
    }

    /// Answers with an error status and closes the connection afterwards (the input after
    /// a framing error cannot be trusted).
    fn fail(&mut self, status: u16, io: &mut Io<'_>, ctx: &mut Ctx<'_>) -> Step {
        self.persist = Persist::Close;
        self.pending = None;
        self.upgrade = None;
        self.head_started = None;
        self.write_response(Response::error(status), io, ctx);
        Step::Next(Next::Continue)
    }

    fn write_response(&mut self, resp: Response, io: &mut Io<'_>, ctx: &mut Ctx<'_>) {
        let alt_svc = ctx.shared.alt_svc.as_deref().filter(|_| io.tls);
        write_head(io.out.bytes(), &resp, ctx.date.get(), self.persist, alt_svc);
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

/// The HTTP/1.1 request of an h2c upgrade as HTTP/2 fields.
fn upgrade_fields(method: &str, target: &str, headers: Headers<'_>) -> Vec<(Vec<u8>, Vec<u8>)> {
    let (path, _) = crate::endpoints::split_target(target.as_bytes());
    let path_and_query = if target.starts_with('/') {
        target.as_bytes().to_vec()
    } else {
        // absolute-form: keep path and query
        let q = target.find('?').map(|i| &target[i..]).unwrap_or("");
        [path, q.as_bytes()].concat()
    };
    let authority = headers.get("host").map(<[u8]>::to_vec).unwrap_or_default();
    let mut fields = vec![
        (b":method".to_vec(), method.as_bytes().to_vec()),
        (b":scheme".to_vec(), b"http".to_vec()),
        (b":authority".to_vec(), authority),
        (b":path".to_vec(), path_and_query),
    ];
    for h in headers.iter() {
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

/// Writes a response head. Every field is a static slice or a cached value: no allocation.
/// `alt_svc`: an `alt-svc` value to add (HTTP/3 advertised on TLS connections).
fn write_head(
    out: &mut Vec<u8>,
    resp: &Response,
    date: &[u8],
    persist: Persist,
    alt_svc: Option<&[u8]>,
) {
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
        push_decimal(out, resp.body.len());
    }
    out.extend_from_slice(b"\r\ncache-control: ");
    out.extend_from_slice(resp.cache.value());
    if resp.allow {
        out.extend_from_slice(b"\r\nallow: GET, HEAD, POST, PUT");
    }
    if let Some(v) = alt_svc {
        out.extend_from_slice(b"\r\nalt-svc: ");
        out.extend_from_slice(v);
    }
    out.extend_from_slice(match persist {
        Persist::KeepAlive => b"\r\n\r\n" as &[u8],
        Persist::KeepAlive10 => b"\r\nconnection: keep-alive\r\n\r\n",
        Persist::Close => b"\r\nconnection: close\r\n\r\n",
    });
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn http1_detection() {
        assert!(looks_like_http1(b"GET / HTTP/1.1\r\nhost"));
        assert!(looks_like_http1(b"GET / HTTP/1.0\n"));
        assert!(!looks_like_http1(b"PRI * HTTP/2.0\r\n"));
        assert!(!looks_like_http1(b"INVALID CONNECTION PREFACE\r\n"));
        assert!(!looks_like_http1(b"\x16\x03\x01"));
    }

    #[test]
    fn upgrade_request_as_h2_fields() {
        let raw = b"GET /info?x HTTP/1.1\r\nHost: h\r\nConnection: Upgrade, HTTP2-Settings\r\nUpgrade: h2c\r\nHTTP2-Settings: AAMAAABkAARAAAAAAAIAAAAA\r\nX-A: 1\r\nTE: gzip\r\n\r\n";
        let Ok(Parsed::Complete(head)) = RequestParser::default().parse(raw) else {
            panic!()
        };
        let f = upgrade_fields(head.method, head.target, head.headers);
        let f: Vec<(&[u8], &[u8])> = f.iter().map(|(n, v)| (&n[..], &v[..])).collect();
        assert_eq!(
            f,
            vec![
                (&b":method"[..], &b"GET"[..]),
                (b":scheme", b"http"),
                (b":authority", b"h"),
                (b":path", b"/info?x"),
                (b"x-a", b"1"),
            ]
        );
    }
}
