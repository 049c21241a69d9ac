//! What is forwarded: hop-by-hop fields are dropped (RFC 9110 §7.6.1), the proxy's own
//! `Host`/`X-Real-IP`/`X-Forwarded-For`/`X-Forwarded-Proto` replace the client's (as the seed's
//! nginx configuration does), and heads are written for the other side's protocol.

use std::io::Write;
use std::net::IpAddr;

use h2lab_wire::h1::{push_decimal, Headers};

/// Fields that never cross the proxy (connection-specific, framing, and the ones the proxy
/// sets itself).
fn dropped_request_field(name: &[u8]) -> bool {
    const NAMES: [&[u8]; 14] = [
        b"connection",
        b"keep-alive",
        b"proxy-connection",
        b"transfer-encoding",
        b"upgrade",
        b"te",
        b"trailer",
        b"http2-settings",
        b"content-length",
        b"expect",
        b"host",
        b"x-real-ip",
        b"x-forwarded-for",
        b"x-forwarded-proto",
    ];
    NAMES.iter().any(|n| n.eq_ignore_ascii_case(name))
}

/// Response fields that are not passed to the client (hop-by-hop and framing).
pub fn dropped_response_field(name: &[u8]) -> bool {
    const NAMES: [&[u8]; 9] = [
        b"connection",
        b"keep-alive",
        b"proxy-connection",
        b"transfer-encoding",
        b"upgrade",
        b"te",
        b"trailer",
        b"http2-settings",
        b"content-length",
    ];
    name.first() == Some(&b':') || NAMES.iter().any(|n| n.eq_ignore_ascii_case(name))
}

/// The client's request, as the proxy forwards it.
pub struct Forward<'a> {
    /// Method.
    pub method: &'a [u8],
    /// Request target (origin form).
    pub target: &'a [u8],
    /// Host (or empty).
    pub host: &'a [u8],
    /// The client's fields.
    pub headers: Headers<'a>,
    /// Whether the client came over TLS.
    pub https: bool,
    /// Body length when known (`None`: chunked).
    pub body_len: Option<u64>,
    /// Whether there is a body at all.
    pub has_body: bool,
    /// The client sent `TE: trailers`: said to HTTP/2 upstreams (RFC 9113 §8.2.2 allows
    /// that one value; gRPC servers ask for it), never to HTTP/1.x ones (hop-by-hop).
    pub te_trailers: bool,
    /// The client sent `X-Forwarded-For` (its values are passed on, the client's address
    /// appended); false spares a scan of the fields.
    pub prior_xff: bool,
    /// The client's `Connection` fields name other fields (RFC 9110 §7.6.1: those are
    /// hop-by-hop too and not forwarded); false spares a scan per field.
    pub connection_options: bool,
}

/// Whether a `Connection` field value names a field other than `close` and `keep-alive`
/// (`close` names no field; `Keep-Alive` is dropped anyway): only then do the other fields
/// have to be checked against it.
fn names_other_fields(connection_value: &[u8]) -> bool {
    // The usual values first, without splitting (about 100 instructions fewer per message).
    if connection_value.eq_ignore_ascii_case(b"keep-alive")
        || connection_value.eq_ignore_ascii_case(b"close")
    {
        return false;
    }
    connection_value.split(|&b| b == b',').any(|t| {
        let t = t.trim_ascii();
        !t.is_empty() && !t.eq_ignore_ascii_case(b"close") && !t.eq_ignore_ascii_case(b"keep-alive")
    })
}

/// Whether a `Connection` field of the section `raw` (the `name: value` lines) lists `name`
/// as a connection option (RFC 9110 §7.6.1: a hop-by-hop field). A bounded scan of the
/// section, no allocation; only called when some `Connection` field names other fields.
fn named_by_connection(raw: &[u8], name: &[u8]) -> bool {
    RawFields { rest: raw }
        .filter(|(n, _)| n.eq_ignore_ascii_case(b"connection"))
        .any(|(_, v)| {
            v.split(|&b| b == b',')
                .any(|t| t.trim_ascii().eq_ignore_ascii_case(name))
        })
}

/// The `(name, value)` pairs of a field section, value trimmed of optional whitespace: what
/// `Headers::iter` yields, without its UTF-8 check of each name (httparse already accepted
/// the names as tokens, and the proxy only copies and compares bytes) and with one pass per
/// line instead of two splits. The per-request paths (request scan, forwarded head, response
/// head) use it: `Headers::iter` was a quarter of the proxy's user-space instructions.
pub fn fields<'a>(headers: &Headers<'a>) -> RawFields<'a> {
    RawFields {
        rest: headers.as_bytes(),
    }
}

/// Iterator of [`fields`].
pub struct RawFields<'a> {
    rest: &'a [u8],
}

impl<'a> Iterator for RawFields<'a> {
    type Item = (&'a [u8], &'a [u8]);

    fn next(&mut self) -> Option<Self::Item> {
        while !self.rest.is_empty() {
            let rest = self.rest;
            let nl = rest.iter().position(|&b| b == b'\n');
            let line = &rest[..nl.unwrap_or(rest.len())];
            self.rest = nl.map_or(&[][..], |n| &rest[n + 1..]);
            // No colon: the empty line ending the section (or, defensively, anything
            // httparse would not have accepted), as `Headers::iter` skips it.
            let Some(c) = line.iter().position(|&b| b == b':') else {
                continue;
            };
            let value = &line[c + 1..];
            let value = value.strip_suffix(b"\r").unwrap_or(value);
            return Some((&line[..c], trim_ows(value)));
        }
        None
    }
}

/// Removes optional whitespace (SP / HTAB) at both ends.
fn trim_ows(mut v: &[u8]) -> &[u8] {
    while let [b' ' | b'\t', rest @ ..] = v {
        v = rest;
    }
    while let [rest @ .., b' ' | b'\t'] = v {
        v = rest;
    }
    v
}

/// What one scan of a request's fields tells.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct RequestScan {
    /// `TE` lists `trailers`.
    pub te_trailers: bool,
    /// An `X-Forwarded-For` is present.
    pub prior_xff: bool,
    /// A `Connection` field names other fields ([`Forward::connection_options`]).
    pub connection_options: bool,
}

/// Scans a request's fields once ([`RequestScan`]).
pub fn scan_request_fields(headers: &Headers<'_>) -> RequestScan {
    let mut scan = RequestScan::default();
    for (name, value) in fields(headers) {
        if name.eq_ignore_ascii_case(b"te") {
            scan.te_trailers |= value
                .split(|&b| b == b',')
                .any(|t| t.trim_ascii().eq_ignore_ascii_case(b"trailers"));
        } else if name.eq_ignore_ascii_case(b"x-forwarded-for") {
            scan.prior_xff = true;
        } else if name.eq_ignore_ascii_case(b"connection") {
            scan.connection_options |= names_other_fields(value);
        }
    }
    scan
}

impl Forward<'_> {
    /// Whether the client's field `name` is not forwarded: the fixed list, or named by the
    /// client's `Connection` fields.
    fn dropped(&self, name: &[u8]) -> bool {
        dropped_request_field(name)
            || (self.connection_options && named_by_connection(self.headers.as_bytes(), name))
    }

    /// The client's `X-Forwarded-For` values (none scanned for when it sent none).
    fn prior_xff_values(&self) -> impl Iterator<Item = &[u8]> + '_ {
        self.prior_xff
            .then(|| fields(&self.headers))
            .into_iter()
            .flatten()
            .filter(|(n, _)| n.eq_ignore_ascii_case(b"x-forwarded-for"))
            .map(|(_, v)| v)
    }

    fn proto(&self) -> &'static [u8] {
        if self.https {
            b"https"
        } else {
            b"http"
        }
    }

    /// Writes the HTTP/1.x request head (`http10`: an HTTP/1.0 request, no keep-alive).
    /// Returns false when the body cannot be framed (chunked over HTTP/1.0).
    pub fn write_h1(&self, http10: bool, ip: &[u8], out: &mut Vec<u8>) -> bool {
        if http10 && self.has_body && self.body_len.is_none() {
            return false;
        }
        out.extend_from_slice(self.method);
        out.push(b' ');
        out.extend_from_slice(self.target);
        out.extend_from_slice(if http10 {
            b" HTTP/1.0\r\nhost: "
        } else {
            b" HTTP/1.1\r\nhost: "
        });
        out.extend_from_slice(self.host);
        out.extend_from_slice(b"\r\nx-real-ip: ");
        out.extend_from_slice(ip);
        out.extend_from_slice(b"\r\nx-forwarded-for: ");
        for prev in self.prior_xff_values() {
            out.extend_from_slice(prev);
            out.extend_from_slice(b", ");
        }
        out.extend_from_slice(ip);
        out.extend_from_slice(b"\r\nx-forwarded-proto: ");
        out.extend_from_slice(self.proto());
        out.extend_from_slice(b"\r\n");
        for (name, value) in fields(&self.headers) {
            if self.dropped(name) {
                continue;
            }
            out.extend_from_slice(name);
            out.extend_from_slice(b": ");
            out.extend_from_slice(value);
            out.extend_from_slice(b"\r\n");
        }
        match (self.has_body, self.body_len) {
            (true, None) => out.extend_from_slice(b"transfer-encoding: chunked\r\n"),
            (true, Some(n)) => {
                out.extend_from_slice(b"content-length: ");
                push_decimal(out, n);
                out.extend_from_slice(b"\r\n");
            }
            (false, _) => {}
        }
        out.extend_from_slice(b"\r\n");
        true
    }

    /// Calls `f` with the HTTP/2 field list (pseudo-header fields first, names lowercase;
    /// `scratch` holds the lowercased names and the forwarded-for value).
    pub fn with_h2_fields<R>(
        &self,
        ip: &[u8],
        scratch: &mut Vec<u8>,
        f: impl FnOnce(&[(&[u8], &[u8])]) -> R,
    ) -> R {
        scratch.clear();
        // Lowercased names and the X-Forwarded-For value go into `scratch` first; the
        // slices into it are taken once it no longer grows.
        let mut spans: [(usize, usize); 136] = [(0, 0); 136];
        let mut k = 0;
        for h in self.headers.iter() {
            if self.dropped(h.name.as_bytes()) || k >= spans.len() {
                continue;
            }
            let s = scratch.len();
            scratch.extend(h.name.bytes().map(|b| b.to_ascii_lowercase()));
            spans[k] = (s, scratch.len());
            k += 1;
        }
        let xff_start = scratch.len();
        for prev in self.prior_xff_values() {
            scratch.extend_from_slice(prev);
            scratch.extend_from_slice(b", ");
        }
        scratch.extend_from_slice(ip);
        let xff_end = scratch.len();
        let mut len_buf = [0u8; 20];
        let len_str: &[u8] = match self.body_len {
            Some(n) if self.has_body => {
                let mut w = &mut len_buf[..];
                let _ = write!(w, "{n}");
                let used = 20 - w.len();
                &len_buf[..used]
            }
            _ => b"",
        };
        let mut fields: [(&[u8], &[u8]); 145] = [(b"", b""); 145];
        let base: [(&[u8], &[u8]); 7] = [
            (b":method", self.method),
            (b":scheme", b"http"),
            (b":authority", self.host),
            (b":path", self.target),
            (b"x-real-ip", ip),
            (b"x-forwarded-for", &scratch[xff_start..xff_end]),
            (b"x-forwarded-proto", self.proto()),
        ];
        fields[..7].copy_from_slice(&base);
        let mut n = 7;
        let mut i = 0;
        for h in self.headers.iter() {
            if self.dropped(h.name.as_bytes()) || i >= k {
                continue;
            }
            let (s, e) = spans[i];
            i += 1;
            fields[n] = (&scratch[s..e], h.value);
            n += 1;
        }
        if !len_str.is_empty() {
            fields[n] = (b"content-length", len_str);
            n += 1;
        }
        if self.te_trailers {
            fields[n] = (b"te", b"trailers");
            n += 1;
        }
        f(&fields[..n])
    }
}

/// Appends a response's (or trailer section's) fields as `name: value\r\n` lines to
/// `lines`, leaving out hop-by-hop ones: the fixed list ([`dropped_response_field`]) and
/// the fields its `Connection` fields name (RFC 9110 §7.6.1). `raw` is the section's
/// `name: value` lines ([`Headers::as_bytes`]). One pass when no `Connection` field names
/// another field (the usual case: none, or `keep-alive` / `close`); otherwise the lines
/// written so far are taken back and the section is written again, each field checked
/// against the `Connection` fields (a bounded scan, no allocation).
pub fn push_response_fields(lines: &mut Vec<u8>, raw: &[u8]) {
    let start = lines.len();
    for (name, value) in (RawFields { rest: raw }) {
        if name.eq_ignore_ascii_case(b"connection") && names_other_fields(value) {
            lines.truncate(start);
            for (name, value) in (RawFields { rest: raw }) {
                if !named_by_connection(raw, name) {
                    push_response_field(lines, name, value);
                }
            }
            return;
        }
        push_response_field(lines, name, value);
    }
}

/// Appends `name: value\r\n` unless the response field is dropped.
pub fn push_response_field(lines: &mut Vec<u8>, name: &[u8], value: &[u8]) {
    if dropped_response_field(name) {
        return;
    }
    lines.extend_from_slice(name);
    lines.extend_from_slice(b": ");
    lines.extend_from_slice(value);
    lines.extend_from_slice(b"\r\n");
}

/// Trailer fields from `name: value\r\n` lines (as [`push_response_field`] writes them),
/// names lower-cased for HTTP/2.
pub fn trailer_fields(lines: &[u8]) -> Vec<(Vec<u8>, Vec<u8>)> {
    lines
        .split(|&b| b == b'\n')
        .filter_map(|l| {
            let l = l.strip_suffix(b"\r").unwrap_or(l);
            let c = l.iter().position(|&b| b == b':')?;
            Some((
                l[..c].to_ascii_lowercase(),
                l[c + 1..].trim_ascii().to_vec(),
            ))
        })
        .collect()
}

/// Writes the client's IP address as text into `buf`; returns the used part.
pub fn ip_text(ip: IpAddr, buf: &mut [u8; 48]) -> &[u8] {
    let mut w = &mut buf[..];
    let _ = write!(w, "{ip}");
    let used = 48 - w.len();
    &buf[..used]
}

/// A client's address as the text `X-Real-IP` and `X-Forwarded-For` carry, formatted once
/// per connection instead of once per request.
#[derive(Debug, Clone, Copy)]
pub struct IpText {
    buf: [u8; 48],
    len: u8,
}

impl IpText {
    /// Formats `ip`.
    pub fn new(ip: IpAddr) -> Self {
        let mut buf = [0u8; 48];
        let len = ip_text(ip, &mut buf).len() as u8;
        IpText { buf, len }
    }

    /// The text.
    pub fn as_bytes(&self) -> &[u8] {
        &self.buf[..usize::from(self.len)]
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use h2lab_wire::h1::{Parsed, RequestParser};

    fn with_head(raw: &[u8], f: impl FnOnce(Forward<'_>)) {
        let Ok(Parsed::Complete(h)) = RequestParser::default().parse(raw) else {
            panic!("bad test request")
        };
        f(Forward {
            method: h.method.as_bytes(),
            target: h.target.as_bytes(),
            host: h.host.unwrap_or_default(),
            headers: h.headers,
            https: false,
            body_len: Some(3),
            has_body: true,
            te_trailers: false,
            prior_xff: scan_request_fields(&h.headers).prior_xff,
            connection_options: scan_request_fields(&h.headers).connection_options,
        });
    }

    #[test]
    fn fields_yield_what_headers_iter_yields() {
        let raw = b"GET / HTTP/1.1\r\nHost: a\r\nX-Empty:\r\nX-Ows: \t v a l \t\r\nx-colon: a:b: c\r\nX-Forwarded-For: 1.2.3.4\r\nX-Forwarded-For:5.6.7.8 \r\nlf-only: yes\n\r\n";
        let Ok(Parsed::Complete(h)) = RequestParser::default().parse(raw) else {
            panic!("bad test request")
        };
        let ours: Vec<(&[u8], &[u8])> = fields(&h.headers).collect();
        let theirs: Vec<(&[u8], &[u8])> = h
            .headers
            .iter()
            .map(|f| (f.name.as_bytes(), f.value))
            .collect();
        assert_eq!(ours, theirs);
        assert_eq!(ours.len(), 7);
        assert_eq!(ours[2], (&b"X-Ows"[..], &b"v a l"[..]));
        assert_eq!(ours[3], (&b"x-colon"[..], &b"a:b: c"[..]));
        with_head(raw, |f| {
            let prior: Vec<&[u8]> = f.prior_xff_values().collect();
            assert_eq!(prior, [&b"1.2.3.4"[..], &b"5.6.7.8"[..]]);
        });
    }

    #[test]
    fn decimal_and_ip_text() {
        for n in [0u64, 7, 10, 653, 102_400, u64::MAX] {
            let mut v = Vec::new();
            push_decimal(&mut v, n);
            assert_eq!(v, n.to_string().as_bytes());
        }
        for ip in [
            "127.0.0.1",
            "::1",
            "2001:db8::ff00:42:8329",
            "255.255.255.255",
        ] {
            let ip: IpAddr = ip.parse().unwrap();
            assert_eq!(IpText::new(ip).as_bytes(), ip.to_string().as_bytes());
        }
    }

    #[test]
    fn h1_head_drops_hop_by_hop_and_sets_forwarding_fields() {
        let raw = b"POST /x HTTP/1.1\r\nHost: a\r\nConnection: keep-alive\r\nX-Forwarded-For: 1.2.3.4\r\nContent-Length: 3\r\nX-A: b\r\n\r\n";
        with_head(raw, |f| {
            let mut out = Vec::new();
            let mut ipb = [0u8; 48];
            assert!(f.write_h1(
                false,
                ip_text("10.0.0.9".parse().unwrap(), &mut ipb),
                &mut out
            ));
            assert_eq!(
                String::from_utf8(out).unwrap(),
                "POST /x HTTP/1.1\r\nhost: a\r\nx-real-ip: 10.0.0.9\r\nx-forwarded-for: 1.2.3.4, 10.0.0.9\r\nx-forwarded-proto: http\r\nX-A: b\r\ncontent-length: 3\r\n\r\n"
            );
        });
    }

    #[test]
    fn h2_fields() {
        let raw =
            b"POST /x HTTP/1.1\r\nHost: a\r\nTE: trailers\r\nContent-Length: 3\r\nX-A: b\r\n\r\n";
        with_head(raw, |f| {
            let mut scratch = Vec::new();
            let got = f.with_h2_fields(b"10.0.0.9", &mut scratch, |fl| {
                fl.iter()
                    .map(|(n, v)| {
                        format!(
                            "{}={}",
                            String::from_utf8_lossy(n),
                            String::from_utf8_lossy(v)
                        )
                    })
                    .collect::<Vec<_>>()
            });
            assert_eq!(
                got,
                [
                    ":method=POST",
                    ":scheme=http",
                    ":authority=a",
                    ":path=/x",
                    "x-real-ip=10.0.0.9",
                    "x-forwarded-for=10.0.0.9",
                    "x-forwarded-proto=http",
                    "x-a=b",
                    "content-length=3"
                ]
            );
        });
    }

    #[test]
    fn fields_named_by_connection_are_dropped() {
        let raw = b"GET /x HTTP/1.1\r\nHost: a\r\nConnection: keep-alive, X-Foo\r\nX-Foo: bar\r\nX-Bar: 1\r\nconnection:  x-bar ,close\r\nX-A: b\r\n\r\n";
        with_head(raw, |f| {
            assert!(f.connection_options);
            let mut out = Vec::new();
            assert!(f.write_h1(false, b"10.0.0.9", &mut out));
            let out = String::from_utf8(out).unwrap();
            assert!(out.contains("X-A: b\r\n"), "{out}");
            assert!(!out.to_ascii_lowercase().contains("x-foo"), "{out}");
            assert!(!out.to_ascii_lowercase().contains("x-bar"), "{out}");
            let mut scratch = Vec::new();
            let names = f.with_h2_fields(b"10.0.0.9", &mut scratch, |fl| {
                fl.iter().map(|(n, _)| n.to_vec()).collect::<Vec<_>>()
            });
            assert!(names.contains(&b"x-a".to_vec()));
            assert!(!names.contains(&b"x-foo".to_vec()));
            assert!(!names.contains(&b"x-bar".to_vec()));
        });
        // `keep-alive` / `close` alone name no other field: no per-field check.
        let plain = b"GET / HTTP/1.1\r\nHost: a\r\nConnection: keep-alive\r\n\r\n";
        with_head(plain, |f| assert!(!f.connection_options));

        // Responses: the lines written before the `Connection` field are taken back.
        let mut lines = b"kept\r\n".to_vec();
        push_response_fields(
            &mut lines,
            b"X-Foo: bar\r\nServer: s\r\nConnection: keep-alive, x-foo\r\nKeep-Alive: timeout=5\r\nX-B: c\r\n",
        );
        assert_eq!(lines, b"kept\r\nServer: s\r\nX-B: c\r\n");
        let mut lines = Vec::new();
        push_response_fields(
            &mut lines,
            b"Server: s\r\nConnection: close\r\nContent-Length: 3\r\n",
        );
        assert_eq!(lines, b"Server: s\r\n");
    }
}
