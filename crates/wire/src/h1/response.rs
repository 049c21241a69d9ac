//! Client side: an incremental response parser for pipelined keep-alive
//! connections (RFC 9112 §4, §6.3).
//!
//! # Driving it
//!
//! ```
//! use h2lab_wire::h1::{Event, ResponseParser};
//!
//! let mut p = ResponseParser::new();
//! let input = b"HTTP/1.1 200 OK\r\nContent-Length: 5\r\n\r\nhelloHTTP/1.1 204 No Content\r\n\r\n";
//! let mut pos = 0;
//! let mut body = Vec::new();
//! let mut done = 0;
//! p.start(true); // first request was a GET
//! while done < 2 {
//!     let (n, ev) = p.parse(&input[pos..]).unwrap();
//!     pos += n;
//!     match ev {
//!         Event::Body(b) => body.extend_from_slice(b),
//!         Event::End { keep_alive } => {
//!             assert!(keep_alive);
//!             done += 1;
//!             p.start(true); // the next pipelined request
//!         }
//!         Event::NeedMore => unreachable!("all bytes are here"),
//!         _ => {}
//!     }
//! }
//! assert_eq!(body, b"hello");
//! assert_eq!(pos, input.len());
//! ```
//!
//! Each [`ResponseParser::parse`] call returns `(consumed, event)`; the caller
//! drops `consumed` bytes from the front of its buffer (whatever the event)
//! and calls again until [`Event::NeedMore`]. Bytes of an unfinished head (or
//! trailer section) are not consumed: keep them, append what the socket
//! delivers next, and call again.
//!
//! # A Content-Length that lies
//!
//! The parser trusts Content-Length. If a server sends more bytes than it
//! declared, the extra bytes are taken as the start of the next response, and
//! the next parse fails ([`H1Error::InvalidStartLine`] or another parse error
//! when a response was expected, [`H1Error::UnexpectedResponseData`] when none
//! was). If it sends fewer and closes, [`ResponseParser::eof`] reports
//! [`H1Error::Truncated`].

use core::mem::MaybeUninit;

use super::body::{BodyDecoder, BodyEvent, Framing, DEFAULT_MAX_TRAILER_BYTES};
use super::headers::Headers;
use super::scan::{HeadScanner, Scan};
use super::server::MAX_HEADERS;
use super::summary::FieldSummary;
use super::version::Version;
use super::H1Error;

/// Size limits enforced by [`ResponseParser`].
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct ResponseLimits {
    /// Largest head (status-line, fields, final empty line). Larger:
    /// [`H1Error::HeadersTooLarge`].
    pub max_head_bytes: usize,
    /// Most field lines (capped at [`MAX_HEADERS`]). More:
    /// [`H1Error::TooManyHeaders`].
    pub max_headers: usize,
    /// Largest trailer section. Larger: [`H1Error::TrailersTooLarge`].
    pub max_trailer_bytes: usize,
}

impl Default for ResponseLimits {
    /// 64 KiB head, 128 fields, 8 KiB trailers.
    fn default() -> Self {
        ResponseLimits {
            max_head_bytes: 64 * 1024,
            max_headers: MAX_HEADERS,
            max_trailer_bytes: DEFAULT_MAX_TRAILER_BYTES,
        }
    }
}

/// A parsed response head, borrowing from the input buffer.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct ResponseHead<'a> {
    /// HTTP/1.0 or HTTP/1.1.
    pub version: Version,
    /// The status code (100..=599).
    pub status: u16,
    /// The reason phrase (may be empty).
    pub reason: &'a str,
    /// The field section.
    pub headers: Headers<'a>,
    /// Bytes of the head: status-line, fields and the final empty line.
    pub header_bytes: usize,
    /// Field-name plus field-value lengths over all fields, values without
    /// their surrounding whitespace (what h2load counts as HTTP/1.1 header
    /// bytes).
    pub field_bytes: usize,
    /// Whether the connection persists after this response: RFC 9112 §9.3
    /// (HTTP/1.1 unless `Connection: close`, HTTP/1.0 only with
    /// `Connection: keep-alive`), and false for a close-delimited body or a
    /// 101 upgrade. Always false for interim responses.
    pub keep_alive: bool,
    /// The Content-Length value, when present (also for HEAD, 204 and 304
    /// responses, where it does not delimit a body).
    pub content_length: Option<u64>,
    /// How the body that follows is delimited.
    pub framing: Framing,
}

/// What [`ResponseParser::parse`] found.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Event<'a> {
    /// Every byte given was consumed or must be kept: call again with more.
    NeedMore,
    /// A 1xx interim response other than 101 (e.g. 100 Continue, 103 Early
    /// Hints). The final response follows; no `start` call is needed.
    Interim(ResponseHead<'a>),
    /// The head of the final response; body events and
    /// [`Event::End`] follow.
    Head(ResponseHead<'a>),
    /// A 101 (Switching Protocols) response: it is final, has no body, and
    /// every byte after it belongs to the new protocol. The parser becomes
    /// idle.
    Upgrade(ResponseHead<'a>),
    /// Body bytes as they arrive (after chunk decoding), borrowed from the
    /// input; never empty.
    Body(&'a [u8]),
    /// The trailer section of a chunked response (only when it holds at least
    /// one field).
    Trailers {
        /// The trailer fields.
        headers: Headers<'a>,
        /// Size of the trailer section in bytes.
        bytes: usize,
    },
    /// The response is complete. The parser is idle until the next
    /// [`ResponseParser::start`].
    End {
        /// False when the connection must be closed after this response.
        keep_alive: bool,
    },
    /// The connection closed cleanly while no response was expected (only
    /// from [`ResponseParser::eof`], or from `parse` after it).
    Closed,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum State {
    /// No response expected.
    Idle,
    /// Waiting for (the rest of) a head.
    Head,
    /// Inside the body of the current response.
    Body,
    /// End of input was signalled.
    Closed,
    /// A previous call failed; the connection is unusable.
    Failed(H1Error),
}

/// Incremental HTTP/1.x response parser (sans-IO, no allocation).
#[derive(Debug, Clone)]
pub struct ResponseParser {
    limits: ResponseLimits,
    state: State,
    expect_body: bool,
    keep_alive: bool,
    /// Some byte (or an interim response) of the current response was seen.
    started: bool,
    scanner: HeadScanner,
    body: BodyDecoder,
}

impl Default for ResponseParser {
    fn default() -> Self {
        Self::new()
    }
}

impl ResponseParser {
    /// An idle parser with the default limits.
    pub fn new() -> Self {
        Self::with_limits(ResponseLimits::default())
    }

    /// An idle parser with the given limits.
    pub fn with_limits(limits: ResponseLimits) -> Self {
        ResponseParser {
            limits,
            state: State::Idle,
            expect_body: true,
            keep_alive: false,
            started: false,
            scanner: HeadScanner::head(),
            body: BodyDecoder::new(Framing::None),
        }
    }

    /// Expects the next response. `expect_body` is false when the request
    /// was HEAD (RFC 9112 §6.3: "Any response to a HEAD request [...] cannot
    /// contain a message body").
    ///
    /// Call it once per request, before feeding that response's bytes: first
    /// after sending, then after each [`Event::End`] while pipelined requests
    /// are outstanding. A response in progress is discarded. No effect after
    /// an error or [`eof`](Self::eof) (see [`reset`](Self::reset)).
    pub fn start(&mut self, expect_body: bool) {
        if matches!(self.state, State::Failed(_) | State::Closed) {
            return;
        }
        self.state = State::Head;
        self.expect_body = expect_body;
        self.keep_alive = false;
        self.started = false;
        self.scanner.reset();
    }

    /// Back to a fresh idle parser (e.g. for a new connection).
    pub fn reset(&mut self) {
        *self = Self::with_limits(self.limits);
    }

    /// True when no response is in progress or expected.
    pub fn is_idle(&self) -> bool {
        self.state == State::Idle
    }

    /// Parses the next event from `buf`, which must start with the first
    /// unconsumed byte of the connection. Returns `(consumed, event)`.
    ///
    /// After an error the parser stays failed and returns the same error.
    pub fn parse<'a>(&mut self, buf: &'a [u8]) -> Result<(usize, Event<'a>), H1Error> {
        let result = match self.state {
            State::Failed(e) => return Err(e),
            State::Closed => return Ok((0, Event::Closed)),
            State::Idle if buf.is_empty() => return Ok((0, Event::NeedMore)),
            State::Idle => Err(H1Error::UnexpectedResponseData),
            State::Head => self.parse_head(buf),
            State::Body => self.parse_body(buf),
        };
        if let Err(e) = result {
            self.state = State::Failed(e);
        }
        result
    }

    /// Signals end of input (the server closed the connection).
    ///
    /// - inside a close-delimited body, or after a complete body:
    ///   `Ok(Event::End { keep_alive: false })`;
    /// - idle: `Ok(Event::Closed)`;
    /// - inside a Content-Length or chunked body, or a partial head:
    ///   [`H1Error::Truncated`];
    /// - a response was expected and not a byte of it arrived:
    ///   [`H1Error::ClosedBeforeResponse`].
    pub fn eof(&mut self) -> Result<Event<'static>, H1Error> {
        let result = match self.state {
            State::Failed(e) => return Err(e),
            State::Closed | State::Idle => Ok(Event::Closed),
            State::Head if self.started => Err(H1Error::Truncated),
            State::Head => Err(H1Error::ClosedBeforeResponse),
            State::Body => self.body.eof().map(|_| Event::End { keep_alive: false }),
        };
        self.state = match result {
            Ok(_) => State::Closed,
            Err(e) => State::Failed(e),
        };
        result
    }

    fn parse_body<'a>(&mut self, buf: &'a [u8]) -> Result<(usize, Event<'a>), H1Error> {
        let (n, ev) = self.body.decode(buf)?;
        let ev = match ev {
            BodyEvent::NeedMore => Event::NeedMore,
            BodyEvent::Data(d) => Event::Body(d),
            BodyEvent::Trailers { headers, bytes } => Event::Trailers { headers, bytes },
            BodyEvent::End => {
                self.state = State::Idle;
                Event::End {
                    keep_alive: self.keep_alive,
                }
            }
        };
        Ok((n, ev))
    }

    fn parse_head<'a>(&mut self, buf: &'a [u8]) -> Result<(usize, Event<'a>), H1Error> {
        if !buf.is_empty() {
            self.started = true;
        }
        let max = self.limits.max_head_bytes;
        match self.scanner.scan(buf) {
            Scan::Partial if buf.len() > max => return Err(H1Error::HeadersTooLarge),
            Scan::Partial => return Ok((0, Event::NeedMore)),
            Scan::Complete(end) if end > max => return Err(H1Error::HeadersTooLarge),
            Scan::Complete(_) => {}
        }
        let (line_start, line_end) = self.scanner.start_line().unwrap_or((0, 0));

        let mut storage = [MaybeUninit::<httparse::Header<'a>>::uninit(); MAX_HEADERS];
        let slots = self.limits.max_headers.min(MAX_HEADERS);
        let mut resp = httparse::Response::new(&mut []);
        let parsed = httparse::ParserConfig::default().parse_response_with_uninit_headers(
            &mut resp,
            buf,
            storage.get_mut(..slots).unwrap_or(&mut []),
        );
        let head_len = match parsed {
            Ok(httparse::Status::Complete(n)) => n,
            Ok(httparse::Status::Partial) => return Ok((0, Event::NeedMore)),
            Err(e) => {
                let line = buf.get(line_start..line_end).unwrap_or(&[]);
                return Err(H1Error::from_httparse(e, line));
            }
        };
        if head_len > max {
            return Err(H1Error::HeadersTooLarge);
        }
        let version = Version::from_minor(resp.version);
        let status = resp.code.unwrap_or(0);
        // RFC 9110 §15: "Values outside the range 100..599 are invalid."
        if !(100..=599).contains(&status) {
            return Err(H1Error::InvalidStatus);
        }
        let mut head = ResponseHead {
            version,
            status,
            reason: resp.reason.unwrap_or(""),
            headers: Headers::new(buf.get(line_end..head_len).unwrap_or(&[])),
            header_bytes: head_len,
            field_bytes: resp
                .headers
                .iter()
                .map(|h| h.name.len() + h.value.len())
                .sum(),
            keep_alive: false,
            content_length: None,
            framing: Framing::None,
        };
        self.scanner.reset();

        if status == 101 {
            // RFC 9110 §15.2.2: the server "switches to the protocol defined
            // by the response's Upgrade header field, immediately after the
            // empty line that terminates the 101 response."
            self.state = State::Idle;
            return Ok((head_len, Event::Upgrade(head)));
        }
        if status < 200 {
            // RFC 9110 §15.2: "A client MUST be able to parse one or more 1xx
            // responses received prior to a final response, even if the client
            // does not expect one. A user agent MAY ignore unexpected 1xx
            // responses." The final response follows; stay in Head.
            return Ok((head_len, Event::Interim(head)));
        }

        let fields = FieldSummary::collect(resp.headers);
        let framing = response_framing(&fields, version)?;
        // RFC 9112 §6.3: "Any response to a HEAD request and any response
        // with a 1xx (Informational), 204 (No Content), or 304 (Not Modified)
        // status code is always terminated by the first empty line after the
        // header fields, regardless of the header fields present in the
        // message, and thus cannot contain a message body or trailer section."
        let framing = if !self.expect_body || status == 204 || status == 304 {
            Framing::None
        } else {
            framing
        };
        // RFC 9112 §9.3 for persistence; a close-delimited body ends the
        // connection by definition.
        self.keep_alive = fields.keep_alive(version) && framing != Framing::CloseDelimited;
        head.keep_alive = self.keep_alive;
        head.content_length = fields.content_length_value();
        head.framing = framing;
        self.body = BodyDecoder::with_limits(framing, u64::MAX, self.limits.max_trailer_bytes);
        self.state = State::Body;
        Ok((head_len, Event::Head(head)))
    }
}

/// Body framing of a final response, RFC 9112 §6.1 and §6.3 (before the
/// HEAD / 204 / 304 override).
fn response_framing(fields: &FieldSummary<'_>, version: Version) -> Result<Framing, H1Error> {
    if fields.te_present {
        // RFC 9112 §6.1: "A server or client that receives an HTTP/1.0
        // message containing a Transfer-Encoding header field MUST treat the
        // message as if the framing is faulty".
        if version == Version::Http10 {
            return Err(H1Error::TransferEncodingInHttp10);
        }
        // RFC 9112 §6.3: both fields "ought to be handled as an error"; a
        // user agent "MUST close the connection to the server and discard the
        // received response" when framing is invalid. We reject it.
        if fields.content_length.is_some() {
            return Err(H1Error::ContentLengthWithTransferEncoding);
        }
        // RFC 9112 §6.1: "A sender MUST NOT apply the chunked transfer coding
        // more than once to a message body".
        if fields.te_chunked > 1 {
            return Err(H1Error::TransferEncodingNotChunked);
        }
        // RFC 9112 §6.3: "If a Transfer-Encoding header field is present in a
        // response and the chunked transfer coding is not the final encoding,
        // the message body length is determined by reading the connection
        // until it is closed by the server."
        return Ok(if fields.te_last_chunked {
            Framing::Chunked
        } else {
            Framing::CloseDelimited
        });
    }
    match fields.content_length {
        // RFC 9112 §6.3: "If it is a response message received by a user
        // agent, the user agent MUST close the connection to the server and
        // discard the received response."
        Some(Err(e)) => Err(e),
        Some(Ok(n)) => Ok(Framing::ContentLength(n)),
        // RFC 9112 §6.3: "Otherwise, this is a response message without a
        // declared message body length, so the message body length is
        // determined by the number of octets received prior to the server
        // closing the connection."
        None => Ok(Framing::CloseDelimited),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn head_then_body_then_end() {
        let mut p = ResponseParser::new();
        p.start(true);
        let input = b"HTTP/1.1 200 OK\r\nContent-Length: 3\r\nServer: x\r\n\r\nabc";
        let (n, ev) = p.parse(input).unwrap();
        let Event::Head(h) = ev else { panic!("{ev:?}") };
        assert_eq!(
            (h.status, h.version, h.reason),
            (200, Version::Http11, "OK")
        );
        assert_eq!(h.header_bytes, n);
        assert_eq!(h.content_length, Some(3));
        assert_eq!(h.framing, Framing::ContentLength(3));
        assert_eq!(h.headers.get("server"), Some(&b"x"[..]));
        assert!(h.keep_alive);
        assert_eq!(p.parse(&input[n..]).unwrap(), (3, Event::Body(b"abc")));
        assert_eq!(p.parse(b"").unwrap(), (0, Event::End { keep_alive: true }));
        assert!(p.is_idle());
        assert_eq!(p.parse(b"").unwrap(), (0, Event::NeedMore));
        assert_eq!(p.parse(b"X"), Err(H1Error::UnexpectedResponseData));
        assert_eq!(p.parse(b""), Err(H1Error::UnexpectedResponseData));
    }

    #[test]
    fn field_bytes_are_names_plus_values_without_ows() {
        let input = b"HTTP/1.1 103 Early Hints\r\nLink: </a>\r\n\r\n\
            HTTP/1.1 200 OK\r\nServer: nginx\r\nContent-Length:0\r\nX-E:  \t\r\n\
            X-T: a b \t\r\nX-O: \xff\xfe \r\n\r\n";
        let mut p = ResponseParser::new();
        p.start(true);
        let (n, ev) = p.parse(input).unwrap();
        let Event::Interim(h) = ev else {
            panic!("{ev:?}")
        };
        assert_eq!(h.field_bytes, 4 + 4);
        let (_, ev) = p.parse(&input[n..]).unwrap();
        let Event::Head(h) = ev else { panic!("{ev:?}") };
        // obs-text (RFC 9110 §5.5) counts like any other value byte.
        assert_eq!(h.field_bytes, 6 + 5 + 14 + 1 + 3 + 3 + 3 + 3 + 2);
        let lazy: usize = h.headers.iter().map(|f| f.name.len() + f.value.len()).sum();
        assert_eq!(h.field_bytes, lazy);
    }

    #[test]
    fn eof_states() {
        let mut p = ResponseParser::new();
        assert_eq!(p.eof(), Ok(Event::Closed));
        assert_eq!(p.parse(b"x").unwrap(), (0, Event::Closed));

        let mut p = ResponseParser::new();
        p.start(true);
        assert_eq!(p.eof(), Err(H1Error::ClosedBeforeResponse));

        let mut p = ResponseParser::new();
        p.start(true);
        assert_eq!(p.parse(b"HTTP/1.1 2").unwrap(), (0, Event::NeedMore));
        assert_eq!(p.eof(), Err(H1Error::Truncated));

        let mut p = ResponseParser::new();
        p.start(true);
        let (n, _) = p.parse(b"HTTP/1.0 200 OK\r\n\r\nab").unwrap();
        assert_eq!(n, 19);
        assert_eq!(p.parse(b"ab").unwrap(), (2, Event::Body(b"ab")));
        assert_eq!(p.eof(), Ok(Event::End { keep_alive: false }));
    }

    #[test]
    fn status_range() {
        for line in [&b"HTTP/1.1 099 X\r\n\r\n"[..], b"HTTP/1.1 600 X\r\n\r\n"] {
            let mut p = ResponseParser::new();
            p.start(true);
            assert_eq!(p.parse(line), Err(H1Error::InvalidStatus));
            // Failed parsers stay failed.
            assert_eq!(p.parse(b""), Err(H1Error::InvalidStatus));
            p.start(true);
            assert_eq!(p.eof(), Err(H1Error::InvalidStatus));
        }
    }
}
