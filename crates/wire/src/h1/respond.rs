//! Writing responses: the `100 Continue` interim response, chunks of a chunked
//! body (into a reusable output buffer, no allocation beyond its growth) and
//! the reason phrases.

use super::digits::push_hex;

/// The interim response a server sends to a request with
/// `Expect: 100-continue` before reading its body (RFC 9110 §10.1.1).
pub const CONTINUE_100: &[u8] = b"HTTP/1.1 100 Continue\r\n\r\n";

/// Appends an interim (1xx) response: status line, `fields`, empty line. RFC 9110 §15.2:
/// "A client MUST be able to parse one or more 1xx responses received prior to a final
/// response"; for `103 Early Hints` (RFC 8297) the fields are `link` entries. `status` must
/// be 100..=199 but not 101 (which ends HTTP/1.1 on the connection); the caller must not
/// send it to an HTTP/1.0 client (§15.2: "a server MUST NOT send a 1xx response to an
/// HTTP/1.0 client"). Field names and values are written as given (valid tokens and
/// values are the caller's job).
pub fn encode_informational(out: &mut Vec<u8>, status: u16, fields: &[(&[u8], &[u8])]) {
    debug_assert!((100..200).contains(&status) && status != 101);
    out.extend_from_slice(b"HTTP/1.1 ");
    super::digits::push_decimal(out, u64::from(status));
    out.push(b' ');
    out.extend_from_slice(reason_phrase(status).as_bytes());
    out.extend_from_slice(b"\r\n");
    for (name, value) in fields {
        out.extend_from_slice(name);
        out.extend_from_slice(b": ");
        out.extend_from_slice(value);
        out.extend_from_slice(b"\r\n");
    }
    out.extend_from_slice(b"\r\n");
}

/// Appends one chunk (`size CRLF data CRLF`). Empty `data` writes nothing:
/// a zero-size chunk would end the body.
pub fn encode_chunk(out: &mut Vec<u8>, data: &[u8]) {
    if data.is_empty() {
        return;
    }
    push_hex(out, data.len() as u64);
    out.extend_from_slice(b"\r\n");
    out.extend_from_slice(data);
    out.extend_from_slice(b"\r\n");
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
        425 => "Too Early",
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

    #[test]
    fn chunks() {
        let mut out = Vec::new();
        encode_chunk(&mut out, b"");
        encode_chunk(&mut out, &[b'a'; 26]);
        let mut expected = b"1a\r\n".to_vec();
        expected.extend_from_slice(&[b'a'; 26]);
        expected.extend_from_slice(b"\r\n");
        assert_eq!(out, expected);
    }
}
