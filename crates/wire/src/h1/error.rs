//! Typed HTTP/1.1 errors.

use core::fmt;

/// Everything that can go wrong while encoding or parsing HTTP/1.1.
///
/// Every variant is a plain value (`Copy`), so a parser can remember the error
/// it failed with. [`H1Error::status_code`] gives the status a server should
/// answer with before closing the connection.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
#[non_exhaustive]
pub enum H1Error {
    /// The request-line or status-line is not well formed (bad method token,
    /// empty target, missing spaces, stray bytes, bad line ending before it).
    InvalidStartLine,
    /// The status code of a response is outside `100..=599`.
    InvalidStatus,
    /// The HTTP-version is syntactically an `HTTP/x.y` version, but not 1.0 or 1.1.
    UnsupportedVersion,
    /// A field name is not a token, or there is whitespace before the colon.
    InvalidHeaderName,
    /// A field value holds a forbidden byte (CR, LF, NUL, other controls), or
    /// a field line uses obsolete line folding.
    InvalidHeaderValue,
    /// A CR inside the head is not followed by LF.
    InvalidLineEnding,
    /// The request-line is longer than [`Limits::max_request_line`](super::Limits::max_request_line).
    RequestLineTooLong,
    /// The field section is larger than the configured byte limit.
    HeadersTooLarge,
    /// The field section holds more field lines than the configured count limit.
    TooManyHeaders,
    /// An HTTP/1.1 request without a Host field, with more than one, or with an
    /// invalid Host value (RFC 9112 §3.2).
    BadHost,
    /// A Content-Length value is not `1*DIGIT` (or a list of identical ones),
    /// or does not fit in 64 bits.
    InvalidContentLength,
    /// Several Content-Length values that differ.
    ConflictingContentLength,
    /// Both Transfer-Encoding and Content-Length are present. RFC 9112 §6.3
    /// lets a recipient either let Transfer-Encoding win or reject the message;
    /// this crate always rejects it (request smuggling / response splitting
    /// defence).
    ContentLengthWithTransferEncoding,
    /// Transfer-Encoding is present but `chunked` is not the final coding, or
    /// `chunked` is applied more than once, or the field is empty.
    TransferEncodingNotChunked,
    /// A request applies a transfer coding other than `chunked` (the only one
    /// this server understands).
    UnsupportedTransferCoding,
    /// An HTTP/1.0 message carries Transfer-Encoding (RFC 9112 §6.1: "MUST
    /// treat the message as if the framing is faulty").
    TransferEncodingInHttp10,
    /// The body is larger than the configured limit.
    BodyTooLarge,
    /// A chunk-size is empty or is not hexadecimal.
    InvalidChunkSize,
    /// A chunk-size does not fit in 64 bits.
    ChunkSizeOverflow,
    /// A chunk extension holds a control character, or the bytes after the
    /// chunk-size are neither whitespace, `;` nor CRLF.
    InvalidChunkExtension,
    /// A chunk-size line (with its extensions) is longer than the fixed bound.
    ChunkLineTooLong,
    /// A chunk-size line or chunk-data is not followed by CRLF.
    InvalidChunkDelimiter,
    /// The trailer section is larger than the configured byte limit.
    TrailersTooLarge,
    /// The connection closed in the middle of a head or of a length-delimited
    /// or chunked body.
    Truncated,
    /// The connection closed before any byte of an expected response arrived
    /// (typically a keep-alive connection the server closed: the request may
    /// be retried).
    ClosedBeforeResponse,
    /// Bytes arrived while no response was expected (no
    /// [`ResponseParser::start`](super::ResponseParser::start) call, after an
    /// upgrade, or after a response that lied about its Content-Length).
    UnexpectedResponseData,
    /// The HTTP2-Settings field of an h2c upgrade is not valid base64url.
    InvalidHttp2Settings,
    /// An encoder was asked to write a framing field (Content-Length,
    /// Transfer-Encoding) or a pseudo-header it computes itself.
    ForbiddenHeader,
}

impl H1Error {
    /// The status code a server should send before closing the connection.
    ///
    /// Request-side errors map to the RFC 9110 codes (400, 413, 414, 431, 501,
    /// 505). Errors that only arise while parsing responses map to 502 (what a
    /// gateway would answer); encoder misuse maps to 500.
    pub fn status_code(&self) -> u16 {
        match self {
            H1Error::RequestLineTooLong => 414,
            H1Error::HeadersTooLarge | H1Error::TooManyHeaders | H1Error::TrailersTooLarge => 431,
            H1Error::BodyTooLarge => 413,
            H1Error::UnsupportedTransferCoding => 501,
            H1Error::UnsupportedVersion => 505,
            H1Error::InvalidStatus
            | H1Error::ClosedBeforeResponse
            | H1Error::UnexpectedResponseData => 502,
            H1Error::ForbiddenHeader => 500,
            H1Error::InvalidStartLine
            | H1Error::InvalidHeaderName
            | H1Error::InvalidHeaderValue
            | H1Error::InvalidLineEnding
            | H1Error::BadHost
            | H1Error::InvalidContentLength
            | H1Error::ConflictingContentLength
            | H1Error::ContentLengthWithTransferEncoding
            | H1Error::TransferEncodingNotChunked
            | H1Error::TransferEncodingInHttp10
            | H1Error::InvalidChunkSize
            | H1Error::ChunkSizeOverflow
            | H1Error::InvalidChunkExtension
            | H1Error::ChunkLineTooLong
            | H1Error::InvalidChunkDelimiter
            | H1Error::Truncated
            | H1Error::InvalidHttp2Settings => 400,
        }
    }

    fn description(&self) -> &'static str {
        match self {
            H1Error::InvalidStartLine => "malformed request-line or status-line",
            H1Error::InvalidStatus => "status code outside 100..=599",
            H1Error::UnsupportedVersion => "unsupported HTTP version",
            H1Error::InvalidHeaderName => "invalid field name",
            H1Error::InvalidHeaderValue => "invalid field value",
            H1Error::InvalidLineEnding => "CR not followed by LF",
            H1Error::RequestLineTooLong => "request-line too long",
            H1Error::HeadersTooLarge => "header section too large",
            H1Error::TooManyHeaders => "too many header fields",
            H1Error::BadHost => "missing, duplicated or invalid Host",
            H1Error::InvalidContentLength => "invalid Content-Length",
            H1Error::ConflictingContentLength => "conflicting Content-Length values",
            H1Error::ContentLengthWithTransferEncoding => {
                "both Transfer-Encoding and Content-Length present"
            }
            H1Error::TransferEncodingNotChunked => "chunked is not the final transfer coding",
            H1Error::UnsupportedTransferCoding => "unsupported transfer coding",
            H1Error::TransferEncodingInHttp10 => "Transfer-Encoding in an HTTP/1.0 message",
            H1Error::BodyTooLarge => "body too large",
            H1Error::InvalidChunkSize => "invalid chunk-size",
            H1Error::ChunkSizeOverflow => "chunk-size overflows 64 bits",
            H1Error::InvalidChunkExtension => "invalid chunk extension",
            H1Error::ChunkLineTooLong => "chunk-size line too long",
            H1Error::InvalidChunkDelimiter => "missing CRLF in chunked framing",
            H1Error::TrailersTooLarge => "trailer section too large",
            H1Error::Truncated => "connection closed in the middle of a message (truncated)",
            H1Error::ClosedBeforeResponse => "connection closed before the response",
            H1Error::UnexpectedResponseData => "bytes received while no response was expected",
            H1Error::InvalidHttp2Settings => "invalid HTTP2-Settings value",
            H1Error::ForbiddenHeader => "framing field supplied by the caller",
        }
    }

    /// Maps an `httparse` error; `start_line` is the first line of the head
    /// (used to tell a foreign `HTTP/x.y` version from plain garbage).
    pub(crate) fn from_httparse(e: httparse::Error, start_line: &[u8]) -> H1Error {
        match e {
            httparse::Error::HeaderName => H1Error::InvalidHeaderName,
            httparse::Error::HeaderValue => H1Error::InvalidHeaderValue,
            httparse::Error::NewLine => H1Error::InvalidLineEnding,
            httparse::Error::TooManyHeaders => H1Error::TooManyHeaders,
            httparse::Error::Version if looks_like_http_version(start_line) => {
                H1Error::UnsupportedVersion
            }
            _ => H1Error::InvalidStartLine,
        }
    }
}

/// True when `line` holds an `HTTP/<digit>.<digit>` token: as the last word of
/// a request-line or the first word of a status-line.
fn looks_like_http_version(line: &[u8]) -> bool {
    let line = line.strip_suffix(b"\n").unwrap_or(line);
    let line = line.strip_suffix(b"\r").unwrap_or(line);
    let is_version = |w: &[u8]| {
        matches!(w, [b'H', b'T', b'T', b'P', b'/', a, b'.', b]
            if a.is_ascii_digit() && b.is_ascii_digit())
    };
    let last = line.rsplit(|b| *b == b' ').next().unwrap_or(&[]);
    let first = line.split(|b| *b == b' ').next().unwrap_or(&[]);
    is_version(last) || is_version(first)
}

impl fmt::Display for H1Error {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.description())
    }
}

impl std::error::Error for H1Error {}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn status_codes() {
        assert_eq!(H1Error::RequestLineTooLong.status_code(), 414);
        assert_eq!(H1Error::HeadersTooLarge.status_code(), 431);
        assert_eq!(H1Error::TooManyHeaders.status_code(), 431);
        assert_eq!(H1Error::BodyTooLarge.status_code(), 413);
        assert_eq!(H1Error::UnsupportedTransferCoding.status_code(), 501);
        assert_eq!(H1Error::UnsupportedVersion.status_code(), 505);
        assert_eq!(
            H1Error::ContentLengthWithTransferEncoding.status_code(),
            400
        );
        assert_eq!(H1Error::UnexpectedResponseData.status_code(), 502);
    }

    #[test]
    fn version_detection() {
        assert!(looks_like_http_version(b"PRI * HTTP/2.0\r\n"));
        assert!(looks_like_http_version(b"HTTP/2.0 200 OK\r\n"));
        assert!(!looks_like_http_version(b"GET / FOO\r\n"));
        assert!(!looks_like_http_version(b""));
    }

    #[test]
    fn display() {
        assert!(H1Error::Truncated.to_string().contains("truncated"));
    }
}
