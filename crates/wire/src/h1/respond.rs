//! Server side: writing response heads and chunked bodies into a reusable
//! output buffer (no formatting machinery, no allocation beyond the buffer's
//! growth).

use super::body::Framing;
use super::headers::{check_name, check_value, push_decimal, push_hex, Version};
use super::H1Error;

/// The interim response a server sends to a request with
/// `Expect: 100-continue` before reading its body (RFC 9110 §10.1.1).
pub const CONTINUE_100: &[u8] = b"HTTP/1.1 100 Continue\r\n\r\n";

/// Appends a response head to `out` and returns the number of bytes written.
///
/// Writes `HTTP/1.1 status reason`, the caller's `headers` in order, the
/// framing field (`Content-Length: n` for [`Framing::ContentLength`] — also
/// right for a HEAD response announcing the GET length — or
/// `Transfer-Encoding: chunked`; nothing for [`Framing::None`] and
/// [`Framing::CloseDelimited`]), then the connection option:
/// `Connection: close` when `keep_alive` is false or the body is
/// close-delimited, `Connection: keep-alive` when keeping an HTTP/1.0 peer's
/// connection open (RFC 9112 §9.3: HTTP/1.0 does not persist by default),
/// and the empty line.
///
/// Errors (nothing is written): status outside 100..=599
/// ([`H1Error::InvalidStatus`]), a caller field named Content-Length or
/// Transfer-Encoding ([`H1Error::ForbiddenHeader`]), an invalid name or
/// value, chunked framing for an HTTP/1.0 peer ([`H1Error::ChunkedToHttp10`];
/// RFC 9112 §6.1: a server "MUST NOT send a response containing
/// Transfer-Encoding unless the corresponding request indicates HTTP/1.1").
pub fn encode_response_head<N, V>(
    out: &mut Vec<u8>,
    peer: Version,
    status: u16,
    headers: &[(N, V)],
    framing: Framing,
    keep_alive: bool,
) -> Result<usize, H1Error>
where
    N: AsRef<[u8]>,
    V: AsRef<[u8]>,
{
    if !(100..=599).contains(&status) {
        return Err(H1Error::InvalidStatus);
    }
    if framing == Framing::Chunked && peer == Version::Http10 {
        return Err(H1Error::ChunkedToHttp10);
    }
    for (name, value) in headers {
        let name = name.as_ref();
        check_name(name)?;
        check_value(value.as_ref())?;
        if name.eq_ignore_ascii_case(b"content-length")
            || name.eq_ignore_ascii_case(b"transfer-encoding")
        {
            return Err(H1Error::ForbiddenHeader);
        }
    }
    let start = out.len();
    // RFC 9112 §4: status-line = HTTP-version SP status-code SP [ reason-phrase ]
    out.extend_from_slice(b"HTTP/1.1 ");
    push_decimal(out, u64::from(status));
    out.push(b' ');
    out.extend_from_slice(reason_phrase(status).as_bytes());
    out.extend_from_slice(b"\r\n");
    for (name, value) in headers {
        out.extend_from_slice(name.as_ref());
        out.extend_from_slice(b": ");
        out.extend_from_slice(value.as_ref());
        out.extend_from_slice(b"\r\n");
    }
    match framing {
        Framing::ContentLength(n) => {
            out.extend_from_slice(b"Content-Length: ");
            push_decimal(out, n);
            out.extend_from_slice(b"\r\n");
        }
        Framing::Chunked => out.extend_from_slice(b"Transfer-Encoding: chunked\r\n"),
        Framing::None | Framing::CloseDelimited => {}
    }
    if !keep_alive || framing == Framing::CloseDelimited {
        // RFC 9112 §9.6: "A server that does not support persistent
        // connections MUST send the "close" connection option in every
        // response message that does not have a 1xx (Informational) status
        // code."
        out.extend_from_slice(b"Connection: close\r\n");
    } else if peer == Version::Http10 {
        out.extend_from_slice(b"Connection: keep-alive\r\n");
    }
    out.extend_from_slice(b"\r\n");
    Ok(out.len() - start)
}

/// Appends one chunk (`size CRLF data CRLF`). Empty `data` writes nothing:
/// a zero-size chunk would end the body (use [`encode_last_chunk`]).
pub fn encode_chunk(out: &mut Vec<u8>, data: &[u8]) {
    if data.is_empty() {
        return;
    }
    push_hex(out, data.len() as u64);
    out.extend_from_slice(b"\r\n");
    out.extend_from_slice(data);
    out.extend_from_slice(b"\r\n");
}

/// Appends the last chunk, the trailer fields and the final CRLF.
pub fn encode_last_chunk<N, V>(out: &mut Vec<u8>, trailers: &[(N, V)]) -> Result<(), H1Error>
where
    N: AsRef<[u8]>,
    V: AsRef<[u8]>,
{
    for (name, value) in trailers {
        check_name(name.as_ref())?;
        check_value(value.as_ref())?;
    }
    // RFC 9112 §7.1: last-chunk = 1*("0") [ chunk-ext ] CRLF, then
    // trailer-section CRLF.
    out.extend_from_slice(b"0\r\n");
    for (name, value) in trailers {
        out.extend_from_slice(name.as_ref());
        out.extend_from_slice(b": ");
        out.extend_from_slice(value.as_ref());
        out.extend_from_slice(b"\r\n");
    }
    out.extend_from_slice(b"\r\n");
    Ok(())
}

/// The usual reason phrase of a status code (empty for unknown codes; the
/// phrase is optional, RFC 9112 §4).
pub fn reason_phrase(status: u16) -> &'static str {
    match status {
        100 => "Continue",
        101 => "Switching Protocols",
        103 => "Early Hints",
        200 => "OK",
        201 => "Created",
        202 => "Accepted",
        204 => "No Content",
        206 => "Partial Content",
        301 => "Moved Permanently",
        302 => "Found",
        303 => "See Other",
        304 => "Not Modified",
        307 => "Temporary Redirect",
        308 => "Permanent Redirect",
        400 => "Bad Request",
        401 => "Unauthorized",
        403 => "Forbidden",
        404 => "Not Found",
        405 => "Method Not Allowed",
        408 => "Request Timeout",
        409 => "Conflict",
        410 => "Gone",
        411 => "Length Required",
        413 => "Content Too Large",
        414 => "URI Too Long",
        417 => "Expectation Failed",
        418 => "I'm a teapot",
        421 => "Misdirected Request",
        426 => "Upgrade Required",
        429 => "Too Many Requests",
        431 => "Request Header Fields Too Large",
        500 => "Internal Server Error",
        501 => "Not Implemented",
        502 => "Bad Gateway",
        503 => "Service Unavailable",
        504 => "Gateway Timeout",
        505 => "HTTP Version Not Supported",
        _ => "",
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    const NONE: &[(&str, &str)] = &[];

    #[test]
    fn heads() {
        let mut out = Vec::new();
        let n = encode_response_head(
            &mut out,
            Version::Http11,
            200,
            &[("server", "h2lab")],
            Framing::ContentLength(12),
            true,
        )
        .unwrap();
        assert_eq!(
            out,
            b"HTTP/1.1 200 OK\r\nserver: h2lab\r\nContent-Length: 12\r\n\r\n"
        );
        assert_eq!(n, out.len());

        out.clear();
        encode_response_head(
            &mut out,
            Version::Http10,
            404,
            NONE,
            Framing::ContentLength(0),
            true,
        )
        .unwrap();
        assert_eq!(
            out,
            b"HTTP/1.1 404 Not Found\r\nContent-Length: 0\r\nConnection: keep-alive\r\n\r\n"
        );

        out.clear();
        encode_response_head(
            &mut out,
            Version::Http11,
            299,
            NONE,
            Framing::Chunked,
            false,
        )
        .unwrap();
        assert_eq!(
            out,
            b"HTTP/1.1 299 \r\nTransfer-Encoding: chunked\r\nConnection: close\r\n\r\n"
        );
    }

    #[test]
    fn refused_heads_write_nothing() {
        let mut out = b"keep".to_vec();
        let mut e = |v, s, h: &[(&str, &str)], f| {
            encode_response_head(&mut out, v, s, h, f, true).unwrap_err()
        };
        assert_eq!(
            e(Version::Http11, 99, NONE, Framing::None),
            H1Error::InvalidStatus
        );
        assert_eq!(
            e(Version::Http10, 200, NONE, Framing::Chunked),
            H1Error::ChunkedToHttp10
        );
        assert_eq!(
            e(
                Version::Http11,
                200,
                &[("content-length", "1")],
                Framing::None
            ),
            H1Error::ForbiddenHeader
        );
        assert_eq!(
            e(Version::Http11, 200, &[("x", "a\r\nb")], Framing::None),
            H1Error::InvalidHeaderValue
        );
        assert_eq!(out, b"keep");
    }

    #[test]
    fn chunks() {
        let mut out = Vec::new();
        encode_chunk(&mut out, b"");
        encode_chunk(&mut out, &[b'a'; 26]);
        encode_last_chunk(&mut out, &[("x-t", "1")]).unwrap();
        let mut expected = b"1a\r\n".to_vec();
        expected.extend_from_slice(&[b'a'; 26]);
        expected.extend_from_slice(b"\r\n0\r\nx-t: 1\r\n\r\n");
        assert_eq!(out, expected);
        assert!(encode_last_chunk(&mut out, &[("bad name", "1")]).is_err());
    }
}
