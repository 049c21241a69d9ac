//! Client side: pre-serialised requests.
//!
//! A load generator sends the same request over and over; the bytes are built
//! once by [`encode_request`] and then copied into the socket buffer per
//! request, with no formatting on the hot path.

use super::digits::push_decimal;
use super::syntax::{check_name, check_value, is_tchar};
use super::H1Error;

/// The exact bytes of one HTTP/1.1 request (head and body).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct RequestBytes {
    bytes: Vec<u8>,
    header_bytes: usize,
}

impl RequestBytes {
    /// The whole request: head followed by body.
    pub fn as_bytes(&self) -> &[u8] {
        &self.bytes
    }

    /// The head: request-line, fields and the empty line.
    pub fn head(&self) -> &[u8] {
        self.bytes.get(..self.header_bytes).unwrap_or(&[])
    }

    /// The body (empty when none).
    pub fn body(&self) -> &[u8] {
        self.bytes.get(self.header_bytes..).unwrap_or(&[])
    }

    /// Size of the head in bytes (h2load counts these as "headers" bytes).
    pub fn header_bytes(&self) -> usize {
        self.header_bytes
    }

    /// Size of the body in bytes.
    pub fn body_bytes(&self) -> usize {
        self.bytes.len() - self.header_bytes
    }

    /// Total size in bytes.
    pub fn len(&self) -> usize {
        self.bytes.len()
    }

    /// Always false: a request has at least a request-line.
    pub fn is_empty(&self) -> bool {
        self.bytes.is_empty()
    }

    /// The bytes, by value.
    pub fn into_vec(self) -> Vec<u8> {
        self.bytes
    }
}

impl AsRef<[u8]> for RequestBytes {
    fn as_ref(&self) -> &[u8] {
        &self.bytes
    }
}

/// Builds the bytes of one HTTP/1.1 request.
///
/// Writes, in order: `method SP target SP HTTP/1.1`, `Host: host`, the
/// caller's `headers` in order, `Content-Length` when `body` is `Some` (even
/// an empty one), `Connection: close` when `keep_alive` is false (for
/// HTTP/1.0-style runs: one request per connection), the empty line, then the
/// body.
///
/// A caller field named `host` (any case) replaces the `host` argument.
/// Caller fields named `content-length` or `transfer-encoding` are refused
/// with [`H1Error::ForbiddenHeader`] (framing is computed here). Names must be
/// tokens (so HTTP/2 pseudo-headers such as `:authority` are refused with
/// [`H1Error::InvalidHeaderName`]); values must not contain CR, LF, NUL or
/// surrounding whitespace ([`H1Error::InvalidHeaderValue`]); the method must be
/// a token and the target visible ASCII ([`H1Error::InvalidStartLine`]).
pub fn encode_request<N, V>(
    method: &str,
    target: &str,
    host: &str,
    headers: &[(N, V)],
    body: Option<&[u8]>,
    keep_alive: bool,
) -> Result<RequestBytes, H1Error>
where
    N: AsRef<[u8]>,
    V: AsRef<[u8]>,
{
    // RFC 9112 §3: request-line = method SP request-target SP HTTP-version;
    // method = token.
    if method.is_empty() || !method.bytes().all(is_tchar) {
        return Err(H1Error::InvalidStartLine);
    }
    // RFC 9112 §3.2: request-target forms are made of URI characters; no
    // whitespace or controls.
    if target.is_empty() || !target.bytes().all(|b| (0x21..=0x7e).contains(&b)) {
        return Err(H1Error::InvalidStartLine);
    }
    // RFC 9112 §3.2: Host = uri-host [ ":" port ]: no whitespace.
    check_value(host.as_bytes())?;
    if host.bytes().any(|b| b == b' ' || b == b'\t') {
        return Err(H1Error::InvalidHeaderValue);
    }
    let mut user_host = false;
    let mut size = method.len() + target.len() + host.len() + 64;
    for (name, value) in headers {
        let (name, value) = (name.as_ref(), value.as_ref());
        check_name(name)?;
        check_value(value)?;
        if name.eq_ignore_ascii_case(b"content-length")
            || name.eq_ignore_ascii_case(b"transfer-encoding")
        {
            return Err(H1Error::ForbiddenHeader);
        }
        user_host |= name.eq_ignore_ascii_case(b"host");
        size += name.len() + value.len() + 4;
    }
    let body_len = body.map_or(0, <[u8]>::len);
    let mut out = Vec::with_capacity(size + body_len);
    out.extend_from_slice(method.as_bytes());
    out.push(b' ');
    out.extend_from_slice(target.as_bytes());
    out.extend_from_slice(b" HTTP/1.1\r\n");
    // RFC 9112 §3.2: "A client MUST send a Host header field in all HTTP/1.1
    // request messages."
    if !user_host {
        out.extend_from_slice(b"Host: ");
        out.extend_from_slice(host.as_bytes());
        out.extend_from_slice(b"\r\n");
    }
    for (name, value) in headers {
        out.extend_from_slice(name.as_ref());
        out.extend_from_slice(b": ");
        out.extend_from_slice(value.as_ref());
        out.extend_from_slice(b"\r\n");
    }
    if let Some(body) = body {
        // RFC 9110 §8.6: "a user agent SHOULD send Content-Length in a request
        // when the method defines a meaning for enclosed content and it is not
        // sending Transfer-Encoding."
        out.extend_from_slice(b"Content-Length: ");
        push_decimal(&mut out, body.len() as u64);
        out.extend_from_slice(b"\r\n");
    }
    if !keep_alive {
        // RFC 9112 §9.6: "A client that does not support persistent
        // connections MUST send the "close" connection option in every request
        // message."
        out.extend_from_slice(b"Connection: close\r\n");
    }
    out.extend_from_slice(b"\r\n");
    let header_bytes = out.len();
    if let Some(body) = body {
        out.extend_from_slice(body);
    }
    Ok(RequestBytes {
        bytes: out,
        header_bytes,
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    const NONE: &[(&str, &str)] = &[];

    #[test]
    fn get_keep_alive() {
        let r = encode_request("GET", "/index.html", "example.com", NONE, None, true).unwrap();
        assert_eq!(
            r.as_bytes(),
            b"GET /index.html HTTP/1.1\r\nHost: example.com\r\n\r\n"
        );
        assert_eq!(r.header_bytes(), r.len());
        assert_eq!(r.body_bytes(), 0);
        assert!(r.body().is_empty());
    }

    #[test]
    fn post_close_with_headers() {
        let r = encode_request(
            "POST",
            "/upload",
            "h:8080",
            &[("user-agent", "h2lab"), ("accept", "*/*")],
            Some(b"hello"),
            false,
        )
        .unwrap();
        let expected_head: &[u8] = b"POST /upload HTTP/1.1\r\nHost: h:8080\r\nuser-agent: h2lab\r\naccept: */*\r\nContent-Length: 5\r\nConnection: close\r\n\r\n";
        assert_eq!(r.head(), expected_head);
        assert_eq!(r.body(), b"hello");
        assert_eq!(r.header_bytes(), expected_head.len());
        assert_eq!(r.body_bytes(), 5);
        assert_eq!(r.clone().into_vec().len(), r.len());
    }

    #[test]
    fn empty_body_still_has_length() {
        let r = encode_request("PUT", "/", "h", NONE, Some(b""), true).unwrap();
        assert!(r.head().ends_with(b"Content-Length: 0\r\n\r\n"));
    }

    #[test]
    fn user_host_replaces() {
        let r = encode_request("GET", "/", "a", &[("HOST", "b")], None, true).unwrap();
        assert_eq!(r.as_bytes(), b"GET / HTTP/1.1\r\nHOST: b\r\n\r\n");
    }

    #[test]
    fn refused() {
        let e = |m: &str, t: &str, h: &str, hs: &[(&str, &str)]| {
            encode_request(m, t, h, hs, None, true).unwrap_err()
        };
        assert_eq!(e("G T", "/", "h", NONE), H1Error::InvalidStartLine);
        assert_eq!(e("", "/", "h", NONE), H1Error::InvalidStartLine);
        assert_eq!(e("GET", "/a b", "h", NONE), H1Error::InvalidStartLine);
        assert_eq!(e("GET", "", "h", NONE), H1Error::InvalidStartLine);
        assert_eq!(
            e("GET", "/", "h\r\nX: y", NONE),
            H1Error::InvalidHeaderValue
        );
        assert_eq!(e("GET", "/", "a b", NONE), H1Error::InvalidHeaderValue);
        assert_eq!(
            e("GET", "/", "h", &[(":authority", "x")]),
            H1Error::InvalidHeaderName
        );
        assert_eq!(
            e("GET", "/", "h", &[("x", "a\nb")]),
            H1Error::InvalidHeaderValue
        );
        assert_eq!(
            e("GET", "/", "h", &[("Content-Length", "1")]),
            H1Error::ForbiddenHeader
        );
        assert_eq!(
            e("GET", "/", "h", &[("transfer-encoding", "chunked")]),
            H1Error::ForbiddenHeader
        );
    }

    #[test]
    fn byte_slices_accepted() {
        let hs: [(&[u8], Vec<u8>); 1] = [(b"x-bin", vec![0x80, b'a'])];
        let r = encode_request("GET", "/", "h", &hs, None, true).unwrap();
        assert!(r.head().windows(9).any(|w| w == b"x-bin: \x80a"));
    }
}
