//! The framing-relevant field summary of one message (Content-Length, Transfer-Encoding,
//! Connection, Host, Expect, Upgrade, HTTP2-Settings), gathered in one pass, and the
//! Content-Length value parser.

use super::syntax::{list_elements, trim_ows};
use super::version::Version;
use super::H1Error;

/// What the fields of one message say about framing and connection handling,
/// gathered in a single pass over the `httparse` output.
#[derive(Debug, Default)]
pub(crate) struct FieldSummary<'a> {
    /// `Ok(None)`: no Content-Length; errors are kept so that the caller can
    /// order its checks as the RFC does.
    pub content_length: Option<Result<u64, H1Error>>,
    /// Transfer-Encoding seen at all.
    pub te_present: bool,
    /// Number of transfer codings listed (over all Transfer-Encoding lines).
    pub te_codings: usize,
    /// Times `chunked` was listed.
    pub te_chunked: usize,
    /// The last listed coding is `chunked`.
    pub te_last_chunked: bool,
    /// Connection options.
    pub conn_close: bool,
    pub conn_keep_alive: bool,
    pub conn_upgrade: bool,
    pub conn_http2_settings: bool,
    /// `Expect: 100-continue`.
    pub expect_continue: bool,
    /// Host fields.
    pub host_count: usize,
    pub host: Option<&'a [u8]>,
    /// Upgrade lists `h2c`.
    pub upgrade_h2c: bool,
    /// HTTP2-Settings fields.
    pub http2_settings_count: usize,
    pub http2_settings: Option<&'a [u8]>,
}

impl<'a> FieldSummary<'a> {
    pub(crate) fn collect(headers: &[httparse::Header<'a>]) -> Self {
        let mut s = FieldSummary::default();
        for h in headers {
            let name = h.name;
            let value = h.value;
            // Dispatch on length first: most fields are none of these.
            match name.len() {
                4 if eq_lower(name.as_bytes(), b"host") => {
                    s.host_count += 1;
                    s.host = Some(value);
                }
                // RFC 9110 §10.1.1: "The Expect field value is
                // case-insensitive."
                6 if eq_lower(name.as_bytes(), b"expect") => {
                    s.expect_continue |= eq_lower(value, b"100-continue");
                }
                7 if eq_lower(name.as_bytes(), b"upgrade") => {
                    for p in list_elements(value) {
                        if eq_lower(p, b"h2c") {
                            s.upgrade_h2c = true;
                        }
                    }
                }
                10 if eq_lower(name.as_bytes(), b"connection") => {
                    for opt in list_elements(value) {
                        if eq_lower(opt, b"close") {
                            s.conn_close = true;
                        } else if eq_lower(opt, b"keep-alive") {
                            s.conn_keep_alive = true;
                        } else if eq_lower(opt, b"upgrade") {
                            s.conn_upgrade = true;
                        } else if eq_lower(opt, b"http2-settings") {
                            s.conn_http2_settings = true;
                        }
                    }
                }
                14 if eq_lower(name.as_bytes(), b"content-length") => {
                    let parsed = parse_content_length(value);
                    s.content_length = Some(match (s.content_length, parsed) {
                        (None, p) => p,
                        (Some(Err(e)), _) | (Some(Ok(_)), Err(e)) => Err(e),
                        // RFC 9110 §8.6: several identical values may be
                        // replaced by one; differing ones make the message
                        // invalid.
                        (Some(Ok(a)), Ok(b)) if a == b => Ok(a),
                        (Some(Ok(_)), Ok(_)) => Err(H1Error::ConflictingContentLength),
                    });
                }
                14 if eq_lower(name.as_bytes(), b"http2-settings") => {
                    s.http2_settings_count += 1;
                    s.http2_settings = Some(value);
                }
                17 if eq_lower(name.as_bytes(), b"transfer-encoding") => {
                    s.te_present = true;
                    for coding in list_elements(value) {
                        // transfer-coding = token *( OWS ";" OWS transfer-parameter )
                        let token = trim_ows(coding.split(|b| *b == b';').next().unwrap_or(&[]));
                        let chunked = eq_lower(token, b"chunked");
                        s.te_codings += 1;
                        s.te_chunked += usize::from(chunked);
                        s.te_last_chunked = chunked;
                    }
                }
                _ => {}
            }
        }
        s
    }

    /// Persistence per RFC 9112 §9.3: close if the `close` option is present;
    /// otherwise HTTP/1.1 persists, and HTTP/1.0 persists only with the
    /// `keep-alive` option.
    pub(crate) fn keep_alive(&self, version: Version) -> bool {
        // RFC 9112 §9.3: "If the "close" connection option is present, the
        // connection will not persist after the current response"; "If the
        // received protocol is HTTP/1.1 (or later), the connection will persist
        // after the current response"; "If the received protocol is HTTP/1.0,
        // the "keep-alive" connection option is present, [...] the connection
        // will persist after the current response".
        !self.conn_close && (version == Version::Http11 || self.conn_keep_alive)
    }

    /// The Content-Length value if present and valid.
    pub(crate) fn content_length_value(&self) -> Option<u64> {
        match self.content_length {
            Some(Ok(n)) => Some(n),
            _ => None,
        }
    }
}

/// `a` equals `lower` (lower-case ASCII) ignoring ASCII case in `a`: half the
/// work of `eq_ignore_ascii_case`, which folds both sides. Exact: `x | 0x20`
/// equals a lower-case letter only for that letter in either case, and bytes
/// of `lower` that are not letters are compared as they are.
fn eq_lower(a: &[u8], lower: &[u8]) -> bool {
    a.len() == lower.len()
        && a.iter().zip(lower).all(|(&x, &l)| {
            let fold = if l.is_ascii_lowercase() { 0x20 } else { 0 };
            x | fold == l
        })
}

/// Parses a Content-Length field value: `1*DIGIT`, or a list of identical
/// `1*DIGIT` values (RFC 9110 §8.6 allows accepting `42, 42`).
pub(crate) fn parse_content_length(value: &[u8]) -> Result<u64, H1Error> {
    let mut result: Option<u64> = None;
    for element in value.split(|b| *b == b',') {
        let digits = trim_ows(element);
        // RFC 9110 §8.6: Content-Length = 1*DIGIT. Empty elements, signs and
        // anything else are invalid here (stricter than generic lists, since
        // framing depends on it).
        if digits.is_empty() {
            return Err(H1Error::InvalidContentLength);
        }
        let mut n: u64 = 0;
        for &d in digits {
            if !d.is_ascii_digit() {
                return Err(H1Error::InvalidContentLength);
            }
            n = n
                .checked_mul(10)
                .and_then(|n| n.checked_add(u64::from(d - b'0')))
                .ok_or(H1Error::InvalidContentLength)?;
        }
        match result {
            None => result = Some(n),
            Some(prev) if prev == n => {}
            Some(_) => return Err(H1Error::ConflictingContentLength),
        }
    }
    result.ok_or(H1Error::InvalidContentLength)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn eq_lower_is_eq_ignore_ascii_case() {
        for x in 0..=255u8 {
            for &l in b"abcdefghijklmnopqrstuvwxyz0123456789-" {
                assert_eq!(
                    eq_lower(&[x], &[l]),
                    [x].eq_ignore_ascii_case(&[l]),
                    "{x} {l}"
                );
            }
        }
        assert!(eq_lower(b"Content-LENGTH", b"content-length"));
        assert!(!eq_lower(b"Content_Length", b"content-length"));
        assert!(!eq_lower(b"content-lengt", b"content-length"));
    }

    #[test]
    fn content_length_values() {
        assert_eq!(parse_content_length(b"0"), Ok(0));
        assert_eq!(parse_content_length(b"42"), Ok(42));
        assert_eq!(parse_content_length(b"42, 42"), Ok(42));
        assert_eq!(
            parse_content_length(b"42, 43"),
            Err(H1Error::ConflictingContentLength)
        );
        for bad in [
            &b""[..],
            b"-1",
            b"+1",
            b"1a",
            b"0x10",
            b"1 2",
            b"42,",
            b"18446744073709551616",
        ] {
            assert_eq!(
                parse_content_length(bad),
                Err(H1Error::InvalidContentLength),
                "{bad:?}"
            );
        }
        assert_eq!(parse_content_length(b"18446744073709551615"), Ok(u64::MAX));
    }

    #[test]
    fn summary_multiple_content_length_fields() {
        let h = |v: &'static [u8]| httparse::Header {
            name: "Content-Length",
            value: v,
        };
        let s = FieldSummary::collect(&[h(b"5"), h(b"5")]);
        assert_eq!(s.content_length, Some(Ok(5)));
        let s = FieldSummary::collect(&[h(b"5"), h(b"6")]);
        assert_eq!(
            s.content_length,
            Some(Err(H1Error::ConflictingContentLength))
        );
        let s = FieldSummary::collect(&[h(b"5"), h(b"x")]);
        assert_eq!(s.content_length, Some(Err(H1Error::InvalidContentLength)));
    }

    #[test]
    fn summary_lists() {
        let hs = [
            httparse::Header {
                name: "connection",
                value: b"Upgrade, , HTTP2-Settings",
            },
            httparse::Header {
                name: "Transfer-Encoding",
                value: b"gzip;q=1 , CHUNKED",
            },
        ];
        let s = FieldSummary::collect(&hs);
        assert!(s.conn_upgrade && s.conn_http2_settings && !s.conn_close);
        assert_eq!(
            (s.te_codings, s.te_chunked, s.te_last_chunked),
            (2, 1, true)
        );
    }
}
