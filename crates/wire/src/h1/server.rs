//! Server side: parsing request heads on partial input (RFC 9112 §2-§6).

use core::mem::MaybeUninit;

use super::body::{BodyDecoder, Framing};
use super::headers::Headers;
use super::scan::{HeadScanner, Scan};
use super::summary::FieldSummary;
use super::upgrade::H2cUpgrade;
use super::version::Version;
use super::H1Error;

/// Upper bound of [`Limits::max_headers`] (size of the on-stack field array).
pub const MAX_HEADERS: usize = 128;

/// Size limits enforced by [`RequestParser`].
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Limits {
    /// Longest request-line, line terminator included. Longer:
    /// [`H1Error::RequestLineTooLong`] (414).
    pub max_request_line: usize,
    /// Largest field section (field lines plus the final empty line). Larger:
    /// [`H1Error::HeadersTooLarge`] (431). Also bounds trailer sections.
    pub max_header_bytes: usize,
    /// Most field lines. More: [`H1Error::TooManyHeaders`] (431). Values above
    /// [`MAX_HEADERS`] act as [`MAX_HEADERS`].
    pub max_headers: usize,
    /// Largest body. Larger: [`H1Error::BodyTooLarge`] (413), raised by the
    /// head parser for a Content-Length and by the body decoder for chunked.
    pub max_body: u64,
}

impl Default for Limits {
    /// 8 KiB request-line, 16 KiB field section, 100 fields, 16 MiB body.
    fn default() -> Self {
        Limits {
            max_request_line: 8 * 1024,
            max_header_bytes: 16 * 1024,
            max_headers: 100,
            max_body: 16 * 1024 * 1024,
        }
    }
}

/// Outcome of a parse on partial input.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Parsed<T> {
    /// The head is not complete: keep the bytes, append more, call again.
    NeedMore,
    /// The head is complete.
    Complete(T),
}

/// A parsed request head, borrowing from the input buffer.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct RequestHead<'a> {
    /// The method token, e.g. `GET`.
    pub method: &'a str,
    /// The request-target as sent (origin-form, absolute-form, ...).
    pub target: &'a str,
    /// HTTP/1.0 or HTTP/1.1.
    pub version: Version,
    /// The field section.
    pub headers: Headers<'a>,
    /// Bytes of the head (leading empty lines, request-line, fields, final
    /// empty line): the body starts at this offset of the buffer.
    pub head_len: usize,
    /// How the body is delimited: [`Framing::None`],
    /// [`Framing::ContentLength`] or [`Framing::Chunked`] (never
    /// close-delimited for requests).
    pub framing: Framing,
    /// Whether the connection persists after the response (RFC 9112 §9.3):
    /// HTTP/1.1 unless `Connection: close`; HTTP/1.0 only with
    /// `Connection: keep-alive` (and no `close`).
    pub keep_alive: bool,
    /// `Expect: 100-continue` on an HTTP/1.1 request (RFC 9110 §10.1.1: "A
    /// server that receives a 100-continue expectation in an HTTP/1.0 request
    /// MUST ignore that expectation.").
    pub expect_continue: bool,
    /// The Host field value (validated; absent only for HTTP/1.0).
    pub host: Option<&'a [u8]>,
    /// An h2c upgrade request (see [`H2cUpgrade`] for the conditions).
    pub h2c: Option<H2cUpgrade<'a>>,
}

/// Incremental request-head parser.
///
/// Feed it the unconsumed bytes of the connection, always starting at the
/// first byte of the head, with new bytes appended between calls. It
/// remembers how far it looked, so trickled input costs O(n) in total, and it
/// runs `httparse` (fields into a fixed array on the stack, no allocation)
/// once, when the head is complete. After [`Parsed::Complete`] or an error it
/// is ready for the next request.
#[derive(Debug, Clone)]
pub struct RequestParser {
    limits: Limits,
    scanner: HeadScanner,
}

impl Default for RequestParser {
    fn default() -> Self {
        Self::new(Limits::default())
    }
}

impl RequestParser {
    /// A parser enforcing `limits`.
    pub fn new(limits: Limits) -> Self {
        RequestParser {
            limits,
            scanner: HeadScanner::head(),
        }
    }

    /// The limits in force.
    pub fn limits(&self) -> &Limits {
        &self.limits
    }

    /// Forgets any partially scanned head (e.g. before reusing the parser
    /// for another connection).
    pub fn reset(&mut self) {
        self.scanner.reset();
    }

    /// A body decoder for `head`, enforcing [`Limits::max_body`] and bounding
    /// trailers by [`Limits::max_header_bytes`].
    pub fn body_decoder(&self, head: &RequestHead<'_>) -> BodyDecoder {
        BodyDecoder::with_limits(
            head.framing,
            self.limits.max_body,
            self.limits.max_header_bytes,
        )
    }

    /// Parses a request head from `buf` (which must start at the head).
    ///
    /// The error tells the server what to answer (see
    /// [`H1Error::status_code`]); the connection must then be closed, since
    /// the framing of what follows is unknown.
    pub fn parse<'a>(&mut self, buf: &'a [u8]) -> Result<Parsed<RequestHead<'a>>, H1Error> {
        let result = self.parse_inner(buf);
        if !matches!(result, Ok(Parsed::NeedMore)) {
            self.scanner.reset();
        }
        result
    }

    fn parse_inner<'a>(&mut self, buf: &'a [u8]) -> Result<Parsed<RequestHead<'a>>, H1Error> {
        let limits = self.limits;
        let scan = self.scanner.scan(buf);
        let Some((line_start, line_end)) = self.scanner.start_line() else {
            // Still in leading empty lines or in the request-line.
            let line_start = self.scanner.line_start();
            if line_start > limits.max_request_line {
                // An endless run of empty lines before the request.
                return Err(H1Error::InvalidStartLine);
            }
            // RFC 9112 §3: "A server that receives a request-target longer
            // than any URI it wishes to parse MUST respond with a 414 (URI Too
            // Long) status code".
            if buf.len().saturating_sub(line_start) > limits.max_request_line {
                return Err(H1Error::RequestLineTooLong);
            }
            return Ok(Parsed::NeedMore);
        };
        if line_start > limits.max_request_line {
            return Err(H1Error::InvalidStartLine);
        }
        if line_end - line_start > limits.max_request_line {
            return Err(H1Error::RequestLineTooLong);
        }
        let head_end = match scan {
            Scan::Partial => {
                // RFC 6585 §5: 431 "the server is unwilling to process the
                // request because its header fields are too large".
                if buf.len().saturating_sub(line_end) > limits.max_header_bytes {
                    return Err(H1Error::HeadersTooLarge);
                }
                return Ok(Parsed::NeedMore);
            }
            Scan::Complete(end) => end,
        };
        if head_end.saturating_sub(line_end) > limits.max_header_bytes {
            return Err(H1Error::HeadersTooLarge);
        }

        let mut storage = [MaybeUninit::<httparse::Header<'a>>::uninit(); MAX_HEADERS];
        let slots = limits.max_headers.min(MAX_HEADERS);
        let mut req = httparse::Request::new(&mut []);
        let parsed = httparse::ParserConfig::default().parse_request_with_uninit_headers(
            &mut req,
            buf,
            storage.get_mut(..slots).unwrap_or(&mut []),
        );
        let head_len = match parsed {
            Ok(httparse::Status::Complete(n)) => n,
            // httparse wants more than the scanner saw: keep scanning.
            Ok(httparse::Status::Partial) => return Ok(Parsed::NeedMore),
            Err(e) => {
                let line = buf.get(line_start..line_end).unwrap_or(&[]);
                return Err(H1Error::from_httparse(e, line));
            }
        };
        let (Some(method), Some(target)) = (req.method, req.path) else {
            return Err(H1Error::InvalidStartLine);
        };
        let version = Version::from_minor(req.version);
        let fields = FieldSummary::collect(req.headers);

        // RFC 9112 §3.2: "A server MUST respond with a 400 (Bad Request)
        // status code to any HTTP/1.1 request message that lacks a Host header
        // field and to any request message that contains more than one Host
        // header field line or a Host header field with an invalid field
        // value."
        if fields.host_count > 1
            || (version == Version::Http11 && fields.host_count == 0)
            || fields.host.is_some_and(|h| !valid_host(h))
        {
            return Err(H1Error::BadHost);
        }

        let framing = request_framing(&fields, version, limits.max_body)?;

        let h2c = match (version, fields.upgrade_h2c, fields.http2_settings) {
            (Version::Http11, true, Some(settings)) if fields.http2_settings_count == 1 => {
                Some(H2cUpgrade {
                    settings,
                    connection_options: fields.conn_upgrade && fields.conn_http2_settings,
                })
            }
            _ => None,
        };

        Ok(Parsed::Complete(RequestHead {
            method,
            target,
            version,
            headers: Headers::new(buf.get(line_end..head_len).unwrap_or(&[])),
            head_len,
            framing,
            keep_alive: fields.keep_alive(version),
            expect_continue: version == Version::Http11 && fields.expect_continue,
            host: fields.host,
            h2c,
        }))
    }
}

/// Body framing of a request, RFC 9112 §6.1 and §6.3.
fn request_framing(
    fields: &FieldSummary<'_>,
    version: Version,
    max_body: u64,
) -> Result<Framing, H1Error> {
    if fields.te_present {
        // RFC 9112 §6.1: "A server or client that receives an HTTP/1.0
        // message containing a Transfer-Encoding header field MUST treat the
        // message as if the framing is faulty, even if a Content-Length is
        // present, and close the connection after processing the message."
        if version == Version::Http10 {
            return Err(H1Error::TransferEncodingInHttp10);
        }
        // RFC 9112 §6.3: "If a message is received with both a
        // Transfer-Encoding and a Content-Length header field, the
        // Transfer-Encoding overrides the Content-Length. Such a message might
        // indicate an attempt to perform request smuggling (Section 11.2) or
        // response splitting (Section 11.1) and ought to be handled as an
        // error." We reject it.
        if fields.content_length.is_some() {
            return Err(H1Error::ContentLengthWithTransferEncoding);
        }
        // RFC 9112 §6.3: "If a Transfer-Encoding header field is present in a
        // request and the chunked transfer coding is not the final encoding,
        // the message body length cannot be determined reliably; the server
        // MUST respond with the 400 (Bad Request) status code and then close
        // the connection."
        // RFC 9112 §6.1: "A sender MUST NOT apply the chunked transfer coding
        // more than once to a message body".
        if !fields.te_last_chunked || fields.te_chunked != 1 {
            return Err(H1Error::TransferEncodingNotChunked);
        }
        // RFC 9112 §6.1: "A server that receives a request message with a
        // transfer coding it does not understand SHOULD respond with 501 (Not
        // Implemented)."
        if fields.te_codings != 1 {
            return Err(H1Error::UnsupportedTransferCoding);
        }
        return Ok(Framing::Chunked);
    }
    match fields.content_length {
        // RFC 9112 §6.3: "If a message is received without Transfer-Encoding
        // and with an invalid Content-Length header field, then the message
        // framing is invalid and the recipient MUST treat it as an
        // unrecoverable error [...] the server MUST respond with a 400 (Bad
        // Request) status code and then close the connection."
        Some(Err(e)) => Err(e),
        // RFC 9110 §15.5.14: 413 "the server is refusing to process a request
        // because the request content is larger than the server is willing or
        // able to process."
        Some(Ok(n)) if n > max_body => Err(H1Error::BodyTooLarge),
        Some(Ok(n)) => Ok(Framing::ContentLength(n)),
        // RFC 9112 §6.3: "If this is a request message and none of the above
        // are true, then the message body length is zero (no message body is
        // present)."
        None => Ok(Framing::None),
    }
}

/// RFC 9112 §3.2 / RFC 3986 §3.2.2: `Host = uri-host [ ":" port ]`, where
/// uri-host is an IP-literal in brackets, an IPv4 address or a reg-name made
/// of unreserved, pct-encoded and sub-delims characters. Empty is allowed.
fn valid_host(host: &[u8]) -> bool {
    host.iter().all(|&b| {
        b.is_ascii_alphanumeric()
            || matches!(
                b,
                b'-' | b'.'
                    | b'_'
                    | b'~'
                    | b'%'
                    | b'!'
                    | b'$'
                    | b'&'
                    | b'\''
                    | b'('
                    | b')'
                    | b'*'
                    | b'+'
                    | b','
                    | b';'
                    | b'='
                    | b':'
                    | b'['
                    | b']'
            )
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    fn head(input: &[u8]) -> Result<RequestHead<'_>, H1Error> {
        match RequestParser::default().parse(input)? {
            Parsed::Complete(h) => Ok(h),
            Parsed::NeedMore => panic!("incomplete"),
        }
    }

    #[test]
    fn simple_get() {
        let input = b"GET /a?b HTTP/1.1\r\nHost: x\r\nAccept: */*\r\n\r\nNEXT";
        let h = head(input).unwrap();
        assert_eq!(
            (h.method, h.target, h.version),
            ("GET", "/a?b", Version::Http11)
        );
        assert_eq!(h.head_len, input.len() - 4);
        assert_eq!(h.framing, Framing::None);
        assert!(h.keep_alive && !h.expect_continue && h.h2c.is_none());
        assert_eq!(h.host, Some(&b"x"[..]));
        assert_eq!(h.headers.get("accept"), Some(&b"*/*"[..]));
        assert_eq!(h.headers.len(), 2);
    }

    #[test]
    fn partial_then_complete() {
        let input = b"\r\nPOST / HTTP/1.1\r\nHost: x\r\nContent-Length: 3\r\n\r\nabc";
        let mut p = RequestParser::default();
        for i in 0..input.len() - 3 {
            assert_eq!(p.parse(&input[..i]), Ok(Parsed::NeedMore), "at {i}");
        }
        let Parsed::Complete(h) = p.parse(input).unwrap() else {
            panic!()
        };
        assert_eq!(h.framing, Framing::ContentLength(3));
        assert_eq!(&input[h.head_len..], b"abc");
    }

    #[test]
    fn framing_rules() {
        let f = |extra: &str| {
            let s = format!("POST / HTTP/1.1\r\nHost: x\r\n{extra}\r\n");
            head(s.as_bytes()).map(|h| h.framing)
        };
        assert_eq!(f("Transfer-Encoding: chunked\r\n"), Ok(Framing::Chunked));
        assert_eq!(f("Transfer-Encoding: Chunked \r\n"), Ok(Framing::Chunked));
        assert_eq!(
            f("Content-Length: 10\r\nContent-Length: 10\r\n"),
            Ok(Framing::ContentLength(10))
        );
        assert_eq!(
            f("Content-Length: 10, 10\r\n"),
            Ok(Framing::ContentLength(10))
        );
        assert_eq!(
            f("Content-Length: 1\r\nContent-Length: 2\r\n"),
            Err(H1Error::ConflictingContentLength)
        );
        assert_eq!(
            f("Content-Length: -1\r\n"),
            Err(H1Error::InvalidContentLength)
        );
        assert_eq!(
            f("Content-Length: \r\n"),
            Err(H1Error::InvalidContentLength)
        );
        assert_eq!(
            f("Content-Length: 3\r\nTransfer-Encoding: chunked\r\n"),
            Err(H1Error::ContentLengthWithTransferEncoding)
        );
        assert_eq!(
            f("Transfer-Encoding: chunked, gzip\r\n"),
            Err(H1Error::TransferEncodingNotChunked)
        );
        assert_eq!(
            f("Transfer-Encoding: chunked\r\nTransfer-Encoding: chunked\r\n"),
            Err(H1Error::TransferEncodingNotChunked)
        );
        assert_eq!(
            f("Transfer-Encoding: \r\n"),
            Err(H1Error::TransferEncodingNotChunked)
        );
        assert_eq!(
            f("Transfer-Encoding: gzip, chunked\r\n"),
            Err(H1Error::UnsupportedTransferCoding)
        );
        assert_eq!(
            f("Transfer-Encoding: gzip, chunked\r\n")
                .unwrap_err()
                .status_code(),
            501
        );
        let h10 = head(b"POST / HTTP/1.0\r\nTransfer-Encoding: chunked\r\n\r\n");
        assert_eq!(h10.unwrap_err(), H1Error::TransferEncodingInHttp10);
    }

    #[test]
    fn host_rules() {
        assert_eq!(
            head(b"GET / HTTP/1.1\r\n\r\n").unwrap_err(),
            H1Error::BadHost
        );
        assert_eq!(
            head(b"GET / HTTP/1.1\r\nHost: a\r\nHost: a\r\n\r\n").unwrap_err(),
            H1Error::BadHost
        );
        assert_eq!(
            head(b"GET / HTTP/1.1\r\nHost: a/b\r\n\r\n").unwrap_err(),
            H1Error::BadHost
        );
        assert!(head(b"GET / HTTP/1.1\r\nHost:\r\n\r\n").is_ok());
        assert!(head(b"GET / HTTP/1.1\r\nHost: [::1]:80\r\n\r\n").is_ok());
        let h = head(b"GET / HTTP/1.0\r\n\r\n").unwrap();
        assert_eq!(h.host, None);
    }

    #[test]
    fn http2_preface_is_505() {
        let e = head(b"PRI * HTTP/2.0\r\n\r\nSM\r\n\r\n").unwrap_err();
        assert_eq!(e, H1Error::UnsupportedVersion);
        assert_eq!(e.status_code(), 505);
        assert_eq!(
            head(b"GET / FOO\r\n\r\n").unwrap_err(),
            H1Error::InvalidStartLine
        );
    }

    #[test]
    fn max_headers_clamped() {
        let mut s = b"GET / HTTP/1.1\r\nHost: x\r\n".to_vec();
        for i in 0..MAX_HEADERS {
            s.extend_from_slice(format!("h{i}: v\r\n").as_bytes());
        }
        s.extend_from_slice(b"\r\n");
        let mut p = RequestParser::new(Limits {
            max_headers: usize::MAX,
            max_header_bytes: usize::MAX,
            ..Limits::default()
        });
        assert_eq!(p.parse(&s), Err(H1Error::TooManyHeaders));
    }
}
