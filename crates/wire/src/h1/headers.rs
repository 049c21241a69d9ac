//! Field sections: a zero-copy view over an already validated header block,
//! the framing-relevant field summary, and the field syntax checks used by the
//! encoders.

use super::scan::find_byte;
use super::H1Error;

/// One field line, borrowed from the input buffer.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Header<'a> {
    /// The field name as received (a token; compare case-insensitively).
    pub name: &'a str,
    /// The field value with leading and trailing whitespace removed.
    pub value: &'a [u8],
}

/// A field section (header or trailer section) borrowed from the input.
///
/// The bytes were validated by `httparse` before the view was built; iterating
/// re-splits the lines lazily, so building the view costs nothing and holding
/// it needs no header array.
#[derive(Clone, Copy, PartialEq, Eq, Default)]
pub struct Headers<'a> {
    raw: &'a [u8],
}

impl<'a> Headers<'a> {
    /// Wraps field lines that `httparse` already accepted.
    pub(crate) fn new(raw: &'a [u8]) -> Self {
        Headers { raw }
    }

    /// The raw field lines, each with its line terminator, including the empty
    /// line that ends the section.
    pub fn as_bytes(&self) -> &'a [u8] {
        self.raw
    }

    /// Iterates over the field lines in order.
    pub fn iter(&self) -> HeaderIter<'a> {
        HeaderIter {
            rest: self.raw,
            // One check of the whole section (word-at-a-time for ASCII) is
            // cheaper than one per field name.
            text: core::str::from_utf8(self.raw).ok(),
        }
    }

    /// True when the section has no field line.
    pub fn is_empty(&self) -> bool {
        self.iter().next().is_none()
    }

    /// Number of field lines.
    pub fn len(&self) -> usize {
        self.iter().count()
    }

    /// The value of the first field named `name` (ASCII case-insensitive).
    pub fn get(&self, name: &str) -> Option<&'a [u8]> {
        self.iter()
            .find(|h| h.name.eq_ignore_ascii_case(name))
            .map(|h| h.value)
    }

    /// The values of every field named `name` (ASCII case-insensitive).
    pub fn get_all<'n>(&self, name: &'n str) -> impl Iterator<Item = &'a [u8]> + 'n
    where
        'a: 'n,
    {
        self.iter()
            .filter(move |h| h.name.eq_ignore_ascii_case(name))
            .map(|h| h.value)
    }
}

impl core::fmt::Debug for Headers<'_> {
    fn fmt(&self, f: &mut core::fmt::Formatter<'_>) -> core::fmt::Result {
        f.debug_list()
            .entries(
                self.iter()
                    .map(|h| (h.name, String::from_utf8_lossy(h.value))),
            )
            .finish()
    }
}

impl<'a> IntoIterator for Headers<'a> {
    type Item = Header<'a>;
    type IntoIter = HeaderIter<'a>;
    fn into_iter(self) -> HeaderIter<'a> {
        self.iter()
    }
}

/// Iterator over the field lines of a [`Headers`] view.
#[derive(Debug, Clone)]
pub struct HeaderIter<'a> {
    rest: &'a [u8],
    /// `rest` as text when the section is UTF-8 (ASCII in practice): names
    /// are then sliced from it; otherwise each name is checked on its own.
    text: Option<&'a str>,
}

impl<'a> Iterator for HeaderIter<'a> {
    type Item = Header<'a>;

    fn next(&mut self) -> Option<Header<'a>> {
        while !self.rest.is_empty() {
            // One word-at-a-time search for the line end, then a short scan of the name
            // for the colon: each byte of the line is looked at once.
            let (line, rest) = match find_byte(self.rest, b'\n') {
                Some(lf) => {
                    let (line, rest) = self.rest.split_at(lf);
                    (line, rest.get(1..).unwrap_or(&[]))
                }
                None => (self.rest, &[][..]),
            };
            let line_text = self.text;
            self.text = self
                .text
                .and_then(|t| t.get(self.rest.len() - rest.len()..));
            self.rest = rest;
            let line = line.strip_suffix(b"\r").unwrap_or(line);
            let Some(colon) = line.iter().position(|b| *b == b':') else {
                // The empty line ending the section (or, defensively, anything
                // httparse would not have accepted).
                continue;
            };
            let (name, value) = line.split_at(colon);
            let name = match line_text.and_then(|t| t.get(..colon)) {
                Some(name) => name,
                None => {
                    // httparse accepted the name as a token (ASCII), so the
                    // first UTF-8 chunk is the whole name.
                    let name = name.utf8_chunks().next().map_or("", |c| c.valid());
                    if name.len() != colon {
                        continue;
                    }
                    name
                }
            };
            return Some(Header {
                name,
                value: trim_ows(value.get(1..).unwrap_or(&[])),
            });
        }
        None
    }
}

/// Removes optional whitespace (SP / HTAB) at both ends.
pub(crate) fn trim_ows(mut v: &[u8]) -> &[u8] {
    while let [b' ' | b'\t', rest @ ..] = v {
        v = rest;
    }
    while let [rest @ .., b' ' | b'\t'] = v {
        v = rest;
    }
    v
}

/// The non-empty elements of a comma-separated list, trimmed.
///
/// RFC 9110 §5.6.1: "a recipient MUST parse and ignore a reasonable number of
/// empty list elements".
pub(crate) fn list_elements(v: &[u8]) -> impl Iterator<Item = &[u8]> {
    v.split(|b| *b == b',')
        .map(trim_ows)
        .filter(|e| !e.is_empty())
}

/// The HTTP version of a message.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum Version {
    /// HTTP/1.0.
    Http10,
    /// HTTP/1.1.
    Http11,
}

impl Version {
    pub(crate) fn from_minor(minor: Option<u8>) -> Version {
        if minor == Some(0) {
            Version::Http10
        } else {
            Version::Http11
        }
    }

    /// `"HTTP/1.0"` or `"HTTP/1.1"`.
    pub fn as_str(&self) -> &'static str {
        match self {
            Version::Http10 => "HTTP/1.0",
            Version::Http11 => "HTTP/1.1",
        }
    }
}

impl core::fmt::Display for Version {
    fn fmt(&self, f: &mut core::fmt::Formatter<'_>) -> core::fmt::Result {
        f.write_str(self.as_str())
    }
}

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

/// RFC 9110 §5.6.2: `tchar = "!" / "#" / "$" / "%" / "&" / "'" / "*" / "+" /
/// "-" / "." / "^" / "_" / "`" / "|" / "~" / DIGIT / ALPHA`.
pub(crate) fn is_tchar(b: u8) -> bool {
    b.is_ascii_alphanumeric()
        || matches!(
            b,
            b'!' | b'#'
                | b'$'
                | b'%'
                | b'&'
                | b'\''
                | b'*'
                | b'+'
                | b'-'
                | b'.'
                | b'^'
                | b'_'
                | b'`'
                | b'|'
                | b'~'
        )
}

/// A field name the encoders accept: a non-empty token.
pub(crate) fn check_name(name: &[u8]) -> Result<(), H1Error> {
    // RFC 9110 §5.1: field-name = token
    if name.is_empty() || !name.iter().all(|b| is_tchar(*b)) {
        return Err(H1Error::InvalidHeaderName);
    }
    Ok(())
}

/// A field value the encoders accept: no CR, LF, NUL or other controls except
/// HTAB, and no leading/trailing whitespace.
pub(crate) fn check_value(value: &[u8]) -> Result<(), H1Error> {
    // RFC 9110 §5.5: field-value = *field-content; field-vchar = VCHAR /
    // obs-text; SP and HTAB only between visible characters.
    // RFC 9110 §5.5: "Field values containing CR, LF, or NUL characters are
    // invalid and dangerous".
    let ok_byte = |b: u8| b == b'\t' || b == b' ' || (b >= 0x21 && b != 0x7f);
    if !value.iter().all(|b| ok_byte(*b)) || trim_ows(value).len() != value.len() {
        return Err(H1Error::InvalidHeaderValue);
    }
    Ok(())
}

/// Appends `n` in decimal (no `fmt` machinery: the HTTP/1.1 request encoder, the server's and
/// the proxy's response heads use it per message).
pub fn push_decimal(out: &mut Vec<u8>, n: u64) {
    let mut buf = [0u8; 20];
    let mut i = buf.len();
    let mut n = n;
    loop {
        i -= 1;
        if let Some(slot) = buf.get_mut(i) {
            *slot = b'0' + (n % 10) as u8;
        }
        n /= 10;
        if n == 0 || i == 0 {
            break;
        }
    }
    out.extend_from_slice(buf.get(i..).unwrap_or(&[]));
}

/// Appends `n` in lower-case hexadecimal (no leading zeros).
pub(crate) fn push_hex(out: &mut Vec<u8>, n: u64) {
    const DIGITS: &[u8; 16] = b"0123456789abcdef";
    let mut buf = [0u8; 16];
    let mut i = buf.len();
    let mut n = n;
    loop {
        i -= 1;
        if let Some(slot) = buf.get_mut(i) {
            *slot = DIGITS[(n & 0xf) as usize];
        }
        n >>= 4;
        if n == 0 || i == 0 {
            break;
        }
    }
    out.extend_from_slice(buf.get(i..).unwrap_or(&[]));
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn view_iterates_lines() {
        let raw = b"Host: a\r\nX-Empty:\r\nX-Ws: \t v \t\r\nLf-Only: x\n\r\n";
        let h = Headers::new(raw);
        let v: Vec<_> = h.iter().map(|h| (h.name, h.value)).collect();
        assert_eq!(
            v,
            vec![
                ("Host", &b"a"[..]),
                ("X-Empty", &b""[..]),
                ("X-Ws", &b"v"[..]),
                ("Lf-Only", &b"x"[..])
            ]
        );
        assert_eq!(h.get("host"), Some(&b"a"[..]));
        assert_eq!(h.get("missing"), None);
        assert_eq!(h.len(), 4);
        assert!(!h.is_empty());
        assert!(Headers::new(b"\r\n").is_empty());
        assert_eq!(h.get_all("X-WS").count(), 1);
    }

    #[test]
    fn view_edges() {
        // Values with colons, no final line end, a line without a colon, a
        // non-UTF-8 value (obs-text) before and after other fields, and a
        // name that is not UTF-8 (skipped, as before).
        let raw = b"Date: Wed, 10:47:05 GMT\r\nX-Obs: caf\xe9\r\nNoColon\r\nA:b:c\r\n\xff\xfe: v\r\nLast:  z ";
        let v: Vec<_> = Headers::new(raw)
            .iter()
            .map(|h| (h.name, h.value))
            .collect();
        assert_eq!(
            v,
            vec![
                ("Date", &b"Wed, 10:47:05 GMT"[..]),
                ("X-Obs", &b"caf\xe9"[..]),
                ("A", &b"b:c"[..]),
                ("Last", &b"z"[..]),
            ]
        );
        // The same lines, all ASCII, take the sliced-text path.
        let raw = b"Date: Wed, 10:47:05 GMT\nNoColon\r\nA:b:c\r\n:empty\r\nLast:  z ";
        let v: Vec<_> = Headers::new(raw)
            .iter()
            .map(|h| (h.name, h.value))
            .collect();
        assert_eq!(
            v,
            vec![
                ("Date", &b"Wed, 10:47:05 GMT"[..]),
                ("A", &b"b:c"[..]),
                ("", &b"empty"[..]),
                ("Last", &b"z"[..]),
            ]
        );
        assert_eq!(Headers::new(b"").iter().count(), 0);
        assert_eq!(Headers::new(b"\n").iter().count(), 0);
    }

    /// The iterator as it was before the word-at-a-time search: two splits
    /// per line and a UTF-8 check of each name.
    fn reference_fields(mut rest: &[u8]) -> Vec<(&str, &[u8])> {
        let mut out = Vec::new();
        while !rest.is_empty() {
            let mut lines = rest.splitn(2, |b| *b == b'\n');
            let line = lines.next().unwrap_or(&[]);
            rest = lines.next().unwrap_or(&[]);
            let line = line.strip_suffix(b"\r").unwrap_or(line);
            let mut parts = line.splitn(2, |b| *b == b':');
            let (Some(name), Some(value)) = (parts.next(), parts.next()) else {
                continue;
            };
            let Ok(name) = core::str::from_utf8(name) else {
                continue;
            };
            out.push((name, trim_ows(value)));
        }
        out
    }

    proptest::proptest! {
        #![proptest_config(proptest::prelude::ProptestConfig {
            cases: 1024,
            failure_persistence: None,
            ..Default::default()
        })]

        #[test]
        fn iterator_matches_reference(
            bytes in proptest::collection::vec(
                proptest::sample::select(&b"\n\r: \tAz-\xe9\xff\xc3\xa9"[..]),
                0..80,
            )
        ) {
            let ours: Vec<_> = Headers::new(&bytes).iter().map(|h| (h.name, h.value)).collect();
            proptest::prop_assert_eq!(ours, reference_fields(&bytes));
        }
    }

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

    #[test]
    fn numbers() {
        let mut v = Vec::new();
        push_decimal(&mut v, 0);
        v.push(b' ');
        push_decimal(&mut v, u64::MAX);
        v.push(b' ');
        push_hex(&mut v, 0);
        v.push(b' ');
        push_hex(&mut v, 0xabc);
        v.push(b' ');
        push_hex(&mut v, u64::MAX);
        assert_eq!(v, b"0 18446744073709551615 0 abc ffffffffffffffff");
    }

    #[test]
    fn encoder_checks() {
        assert!(check_name(b"x-foo").is_ok());
        assert!(check_name(b"").is_err());
        assert!(check_name(b"a b").is_err());
        assert!(check_name(b":path").is_err());
        assert!(check_value(b"a b\tc").is_ok());
        assert!(check_value(b"").is_ok());
        assert!(check_value(b"a\r\nX: y").is_err());
        assert!(check_value(b" a").is_err());
        assert!(check_value(b"a\0").is_err());
    }
}
