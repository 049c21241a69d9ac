//! Validation of decoded field blocks (RFC 9113 §8.1, §8.2, §8.3).
//!
//! The connection runs every decoded field line through a [`FieldCheck`]
//! before handing it to the application. A violation makes the request or
//! response *malformed*; RFC 9113 §8.1.1: "Malformed requests or responses
//! that are detected MUST be treated as a stream error (Section 5.4.2) of type
//! PROTOCOL_ERROR."
//!
//! The checker is a small value type (no allocation) fed one field at a
//! time, so the block never has to be buffered.
//!
//! HTTP/3 shares it ([`crate::h3::fields`]): RFC 9114 §4.2 and §4.3 state the
//! same field and pseudo-header rules as RFC 9113 §8.2 and §8.3 (the rule
//! strings cite RFC 9113), with H3_MESSAGE_ERROR instead of PROTOCOL_ERROR.

/// What a field block is expected to carry, decided by the connection from
/// the role and the stream's state before decoding starts.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum BlockKind {
    /// The HEADERS that opens a request (server role).
    Request,
    /// A response header section, informational or final (client role).
    Response,
    /// A trailer section (either role).
    Trailers,
}

/// Facts about a validated block that the connection needs afterwards.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub(crate) struct BlockFacts {
    /// The `content-length` value, if present.
    pub content_length: Option<u64>,
    /// The `:status` value of a response.
    pub status: Option<u16>,
    /// The request method was `HEAD`.
    pub is_head: bool,
    /// The request method was `CONNECT`.
    pub is_connect: bool,
}

/// Why a field block is malformed: a citation of the violated rule.
pub(crate) type Malformed = &'static str;

// Bits of `FieldCheck::seen` for pseudo-header fields.
const METHOD: u8 = 1 << 0;
const SCHEME: u8 = 1 << 1;
const AUTHORITY: u8 = 1 << 2;
const PATH: u8 = 1 << 3;
const STATUS: u8 = 1 << 4;

/// Incremental validator for one field block.
#[derive(Clone, Debug)]
pub(crate) struct FieldCheck {
    kind: BlockKind,
    /// Pseudo-header fields seen so far.
    seen: u8,
    /// A regular field line has been seen.
    regular: bool,
    /// Path was empty.
    empty_path: bool,
    facts: BlockFacts,
}

/// Octets allowed in a field name: RFC 9113 §8.2.1: "A field name MUST NOT
/// contain characters in the ranges 0x00-0x20, 0x41-0x5a, or 0x7f-0xff (all
/// ranges inclusive)." The colon is excluded too (handled separately for
/// pseudo-header fields): "With the exception of pseudo-header fields
/// (Section 8.3), which have a name that starts with a single colon, field
/// names MUST NOT include a colon (ASCII COLON, 0x3a)."
const NAME_OK: [bool; 256] = {
    let mut t = [false; 256];
    let mut i = 0x21;
    while i < 0x7f {
        t[i] = !(i >= 0x41 && i <= 0x5a) && i != b':' as usize;
        i += 1;
    }
    t
};

impl FieldCheck {
    /// A checker for a block of the given kind.
    pub(crate) fn new(kind: BlockKind) -> Self {
        FieldCheck {
            kind,
            seen: 0,
            regular: false,
            empty_path: false,
            facts: BlockFacts::default(),
        }
    }

    /// Validate one field line.
    pub(crate) fn field(&mut self, name: &[u8], value: &[u8]) -> Result<(), Malformed> {
        check_value(value)?;
        match name.split_first() {
            None => Err("RFC 9113 §8.2.1: empty field name"),
            Some((b':', rest)) => self.pseudo(rest, value),
            Some(_) => self.regular(name, value),
        }
    }

    fn pseudo(&mut self, rest: &[u8], value: &[u8]) -> Result<(), Malformed> {
        // RFC 9113 §8.3: "All pseudo-header fields MUST appear in a field block
        // before all regular field lines. Any request or response that contains
        // a pseudo-header field that appears in a field block after a regular
        // field line MUST be treated as malformed (Section 8.1.1)."
        if self.regular {
            return Err("RFC 9113 §8.3: pseudo-header field after a regular field");
        }
        let bit = match (self.kind, rest) {
            // RFC 9113 §8.1: "Trailers MUST NOT include pseudo-header fields
            // (Section 8.3)."
            (BlockKind::Trailers, _) => {
                return Err("RFC 9113 §8.1: pseudo-header field in trailers")
            }
            (BlockKind::Request, b"method") => METHOD,
            (BlockKind::Request, b"scheme") => SCHEME,
            (BlockKind::Request, b"authority") => AUTHORITY,
            (BlockKind::Request, b"path") => PATH,
            (BlockKind::Response, b"status") => STATUS,
            // RFC 9113 §8.3: "Pseudo-header fields defined for requests MUST
            // NOT appear in responses. Pseudo-header fields defined for
            // responses MUST NOT appear in requests. ... Endpoints MUST treat a
            // request or response that contains undefined or invalid
            // pseudo-header fields as malformed (Section 8.1.1)." (`:protocol`
            // is undefined here: we never send SETTINGS_ENABLE_CONNECT_PROTOCOL,
            // RFC 8441 §4.)
            _ => return Err("RFC 9113 §8.3: undefined or misplaced pseudo-header field"),
        };
        // RFC 9113 §8.3: "The same pseudo-header field name MUST NOT appear
        // more than once in a field block."
        if self.seen & bit != 0 {
            return Err("RFC 9113 §8.3: repeated pseudo-header field");
        }
        self.seen |= bit;
        match bit {
            METHOD => {
                self.facts.is_head = value == b"HEAD";
                self.facts.is_connect = value == b"CONNECT";
                if value.is_empty() {
                    return Err("RFC 9113 §8.3.1: empty :method");
                }
            }
            PATH => self.empty_path = value.is_empty(),
            STATUS => {
                self.facts.status = Some(parse_status(value)?);
            }
            _ => {}
        }
        Ok(())
    }

    fn regular(&mut self, name: &[u8], value: &[u8]) -> Result<(), Malformed> {
        self.regular = true;
        if !name.iter().all(|&b| NAME_OK[usize::from(b)]) {
            return Err("RFC 9113 §8.2.1: invalid character (uppercase, space, colon, control or non-ASCII) in field name");
        }
        // RFC 9113 §8.2.2: "An endpoint MUST NOT generate an HTTP/2 message
        // containing connection-specific header fields. This includes the
        // Connection header field and those listed as having
        // connection-specific semantics in Section 7.6.1 of [HTTP] (that is,
        // Proxy-Connection, Keep-Alive, Transfer-Encoding, and Upgrade). Any
        // message containing connection-specific header fields MUST be treated
        // as malformed (Section 8.1.1)."
        match name {
            b"connection" | b"proxy-connection" | b"keep-alive" | b"transfer-encoding"
            | b"upgrade" => Err("RFC 9113 §8.2.2: connection-specific header field"),
            // RFC 9113 §8.2.2: "The only exception to this is the TE header
            // field, which MAY be present in an HTTP/2 request; when it is, it
            // MUST NOT contain any value other than \"trailers\"."
            b"te" if self.kind == BlockKind::Response || value != b"trailers" => {
                Err("RFC 9113 §8.2.2: TE header field other than \"trailers\" in a request")
            }
            b"content-length" if self.kind != BlockKind::Trailers => {
                let n = parse_content_length(value)?;
                match self.facts.content_length {
                    // RFC 9110 §8.6: a recipient may accept repeated identical
                    // values; differing values make the message invalid.
                    Some(prev) if prev != n => {
                        Err("RFC 9110 §8.6: conflicting content-length values")
                    }
                    _ => {
                        self.facts.content_length = Some(n);
                        Ok(())
                    }
                }
            }
            _ => Ok(()),
        }
    }

    /// Check what can only be checked at the end of the block.
    pub(crate) fn finish(&self) -> Result<BlockFacts, Malformed> {
        match self.kind {
            BlockKind::Request => {
                if self.seen & METHOD == 0 {
                    return Err("RFC 9113 §8.3.1: request without :method");
                }
                if self.facts.is_connect {
                    // RFC 9113 §8.5: "The \":scheme\" and \":path\"
                    // pseudo-header fields MUST be omitted." and ":authority"
                    // carries the target.
                    if self.seen & (SCHEME | PATH) != 0 {
                        return Err("RFC 9113 §8.5: CONNECT with :scheme or :path");
                    }
                    if self.seen & AUTHORITY == 0 {
                        return Err("RFC 9113 §8.5: CONNECT without :authority");
                    }
                } else {
                    // RFC 9113 §8.3.1: "All HTTP/2 requests MUST include
                    // exactly one valid value for the \":method\", \":scheme\",
                    // and \":path\" pseudo-header fields, unless they are
                    // CONNECT requests (Section 8.5). An HTTP request that
                    // omits mandatory pseudo-header fields is malformed
                    // (Section 8.1.1)."
                    if self.seen & (SCHEME | PATH) != SCHEME | PATH {
                        return Err("RFC 9113 §8.3.1: request without :scheme or :path");
                    }
                    // RFC 9113 §8.3.1: "This pseudo-header field MUST NOT be
                    // empty for \"http\" or \"https\" URIs".
                    if self.empty_path {
                        return Err("RFC 9113 §8.3.1: empty :path");
                    }
                }
            }
            BlockKind::Response => {
                // RFC 9113 §8.3.2: "This pseudo-header field MUST be included
                // in all responses, including interim responses; otherwise, the
                // response is malformed (Section 8.1.1)."
                if self.seen & STATUS == 0 {
                    return Err("RFC 9113 §8.3.2: response without :status");
                }
            }
            BlockKind::Trailers => {}
        }
        Ok(self.facts)
    }
}

/// RFC 9113 §8.2.1: "A field value MUST NOT contain the zero value (ASCII NUL,
/// 0x00), line feed (ASCII LF, 0x0a), or carriage return (ASCII CR, 0x0d) at
/// any position. A field value MUST NOT start or end with an ASCII whitespace
/// character (ASCII SP or HTAB, 0x20 or 0x09)."
fn check_value(value: &[u8]) -> Result<(), Malformed> {
    if let (Some(&first), Some(&last)) = (value.first(), value.last()) {
        if matches!(first, b' ' | b'\t') || matches!(last, b' ' | b'\t') {
            return Err("RFC 9113 §8.2.1: field value starts or ends with whitespace");
        }
    }
    if value.iter().any(|&b| matches!(b, 0 | b'\n' | b'\r')) {
        return Err("RFC 9113 §8.2.1: NUL, CR or LF in field value");
    }
    Ok(())
}

/// `content-length = 1*DIGIT` (RFC 9110 §8.6), without overflow.
fn parse_content_length(v: &[u8]) -> Result<u64, Malformed> {
    const BAD: Malformed = "RFC 9110 §8.6: invalid content-length";
    if v.is_empty() {
        return Err(BAD);
    }
    let mut n: u64 = 0;
    for &b in v {
        if !b.is_ascii_digit() {
            return Err(BAD);
        }
        n = n
            .checked_mul(10)
            .and_then(|n| n.checked_add(u64::from(b - b'0')))
            .ok_or(BAD)?;
    }
    Ok(n)
}

/// `:status` is a three-digit status code (RFC 9110 §15).
fn parse_status(v: &[u8]) -> Result<u16, Malformed> {
    match v {
        [a @ b'1'..=b'9', b, c] if b.is_ascii_digit() && c.is_ascii_digit() => {
            Ok(u16::from(a - b'0') * 100 + u16::from(b - b'0') * 10 + u16::from(c - b'0'))
        }
        _ => Err("RFC 9113 §8.3.2: :status is not a three-digit status code"),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn run(kind: BlockKind, fields: &[(&str, &str)]) -> Result<BlockFacts, Malformed> {
        let mut c = FieldCheck::new(kind);
        for (n, v) in fields {
            c.field(n.as_bytes(), v.as_bytes())?;
        }
        c.finish()
    }

    const GET: &[(&str, &str)] = &[
        (":method", "GET"),
        (":scheme", "http"),
        (":path", "/"),
        (":authority", "localhost"),
    ];

    fn with(extra: &[(&'static str, &'static str)]) -> Vec<(&'static str, &'static str)> {
        let mut v = GET.to_vec();
        v.extend_from_slice(extra);
        v
    }

    #[test]
    fn valid_request() {
        let f = run(
            BlockKind::Request,
            &with(&[("user-agent", "x"), ("te", "trailers")]),
        )
        .unwrap();
        assert_eq!(f.content_length, None);
        assert!(!f.is_head);
        let f = run(
            BlockKind::Request,
            &[
                (":method", "HEAD"),
                (":scheme", "https"),
                (":path", "/a"),
                ("content-length", "12"),
            ],
        )
        .unwrap();
        assert!(f.is_head);
        assert_eq!(f.content_length, Some(12));
    }

    #[test]
    fn request_pseudo_rules() {
        let r = BlockKind::Request;
        // h2spec 8.1.2.1: unknown pseudo-header, response pseudo in request.
        assert!(run(r, &with(&[(":test", "ok")])).is_err());
        assert!(run(r, &with(&[(":status", "200")])).is_err());
        // Pseudo after regular.
        assert!(run(
            r,
            &[
                (":method", "GET"),
                ("x-test", "ok"),
                (":scheme", "http"),
                (":path", "/")
            ]
        )
        .is_err());
        // h2spec 8.1.2.3: missing / duplicated / empty.
        assert!(run(r, &[(":scheme", "http"), (":path", "/")]).is_err());
        assert!(run(r, &[(":method", "GET"), (":path", "/")]).is_err());
        assert!(run(r, &[(":method", "GET"), (":scheme", "http")]).is_err());
        assert!(run(r, &with(&[(":method", "GET")])).is_err());
        assert!(run(
            r,
            &[
                (":method", "GET"),
                (":scheme", "http"),
                (":path", "/"),
                (":scheme", "http")
            ]
        )
        .is_err());
        assert!(run(
            r,
            &[
                (":method", "GET"),
                (":scheme", "http"),
                (":path", "/"),
                (":path", "/")
            ]
        )
        .is_err());
        assert!(run(r, &[(":method", "GET"), (":scheme", "http"), (":path", "")]).is_err());
        // CONNECT.
        assert!(run(r, &[(":method", "CONNECT"), (":authority", "h:443")]).is_ok());
        assert!(run(
            r,
            &[
                (":method", "CONNECT"),
                (":authority", "h:443"),
                (":path", "/")
            ]
        )
        .is_err());
        assert!(run(r, &[(":method", "CONNECT")]).is_err());
        // :protocol is undefined without RFC 8441.
        assert!(run(r, &with(&[(":protocol", "websocket")])).is_err());
    }

    #[test]
    fn regular_field_rules() {
        let r = BlockKind::Request;
        // h2spec 8.1.2: uppercase name.
        assert!(run(r, &with(&[("X-TEST", "ok")])).is_err());
        assert!(run(r, &with(&[("x test", "ok")])).is_err());
        assert!(run(r, &with(&[("x:test", "ok")])).is_err());
        assert!(run(r, &with(&[("x\u{7f}", "ok")])).is_err());
        assert!(run(r, &with(&[("", "ok")])).is_err());
        // h2spec 8.1.2.2: connection-specific fields, TE other than trailers.
        for n in [
            "connection",
            "proxy-connection",
            "keep-alive",
            "transfer-encoding",
            "upgrade",
        ] {
            assert!(run(r, &with(&[(n, "x")])).is_err(), "{n}");
        }
        assert!(run(r, &with(&[("te", "trailers, deflate")])).is_err());
        assert!(run(
            BlockKind::Response,
            &[(":status", "200"), ("te", "trailers")]
        )
        .is_err());
        // Values.
        assert!(run(r, &with(&[("x", " a")])).is_err());
        assert!(run(r, &with(&[("x", "a\t")])).is_err());
        assert!(run(r, &with(&[("x", "a\r\nb")])).is_err());
        assert!(run(r, &with(&[("x", "a\0b")])).is_err());
        assert!(run(r, &with(&[("x", "a b")])).is_ok());
        assert!(run(r, &with(&[("x", "")])).is_ok());
    }

    #[test]
    fn content_length() {
        let r = BlockKind::Request;
        assert_eq!(
            run(r, &with(&[("content-length", "0")]))
                .unwrap()
                .content_length,
            Some(0)
        );
        assert!(run(r, &with(&[("content-length", "")])).is_err());
        assert!(run(r, &with(&[("content-length", "-1")])).is_err());
        assert!(run(r, &with(&[("content-length", "1 ")])).is_err());
        assert!(run(r, &with(&[("content-length", "99999999999999999999999")])).is_err());
        assert!(run(
            r,
            &with(&[("content-length", "3"), ("content-length", "3")])
        )
        .is_ok());
        assert!(run(
            r,
            &with(&[("content-length", "3"), ("content-length", "4")])
        )
        .is_err());
    }

    #[test]
    fn responses_and_trailers() {
        let s = BlockKind::Response;
        assert_eq!(run(s, &[(":status", "200")]).unwrap().status, Some(200));
        assert_eq!(run(s, &[(":status", "103")]).unwrap().status, Some(103));
        assert!(run(s, &[]).is_err());
        assert!(run(s, &[(":status", "20")]).is_err());
        assert!(run(s, &[(":status", "2000")]).is_err());
        assert!(run(s, &[(":status", "abc")]).is_err());
        assert!(run(s, &[(":status", "200"), (":status", "200")]).is_err());
        assert!(run(s, &[(":status", "200"), (":path", "/")]).is_err());
        let t = BlockKind::Trailers;
        assert!(run(t, &[("x-test", "ok")]).is_ok());
        assert!(run(t, &[]).is_ok());
        // h2spec 8.1.2.1: pseudo-header field as trailers.
        assert!(run(t, &[(":method", "POST")]).is_err());
    }
}
