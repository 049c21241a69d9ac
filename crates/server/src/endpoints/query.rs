//! Request-target helpers: path and query, query parameters, numbers and sizes, the
//! `?cache=` value.

use super::InlineValue;

/// Splits a request target into path and query (without the `?`). An absolute-form target
/// (`http://host/path`) is reduced to its path.
pub fn split_target(target: &[u8]) -> (&[u8], &[u8]) {
    let mut t = target;
    for scheme in [&b"http://"[..], b"https://"] {
        if t.len() > scheme.len() && t[..scheme.len()].eq_ignore_ascii_case(scheme) {
            let rest = &t[scheme.len()..];
            t = match rest.iter().position(|&b| b == b'/' || b == b'?') {
                Some(i) => &rest[i..],
                None => b"/",
            };
            break;
        }
    }
    match t.iter().position(|&b| b == b'?') {
        Some(i) => (&t[..i], &t[i + 1..]),
        None => (t, &[]),
    }
}

/// The raw value of query parameter `key` (first occurrence).
pub fn query_param<'q>(query: &'q [u8], key: &[u8]) -> Option<&'q [u8]> {
    query.split(|&b| b == b'&').find_map(|kv| {
        let (k, v) = match kv.iter().position(|&b| b == b'=') {
            Some(i) => (&kv[..i], &kv[i + 1..]),
            None => (kv, &b""[..]),
        };
        (k == key).then_some(v)
    })
}

/// Parses a decimal `u64` (digits only).
pub fn parse_u64(s: &[u8]) -> Option<u64> {
    if s.is_empty() || s.len() > 20 {
        return None;
    }
    s.iter().try_fold(0u64, |acc, &b| {
        if b.is_ascii_digit() {
            acc.checked_mul(10)?.checked_add(u64::from(b - b'0'))
        } else {
            None
        }
    })
}

/// Parses a size with an optional `k`, `m` or `g` suffix (powers of 1024, as h2load and
/// nghttp do): `653`, `10k`, `100K`, `10m`, `1g`.
pub fn parse_size(s: &[u8]) -> Option<u64> {
    let (digits, mult) = match s.last()? {
        b'k' | b'K' => (&s[..s.len() - 1], 1u64 << 10),
        b'm' | b'M' => (&s[..s.len() - 1], 1 << 20),
        b'g' | b'G' => (&s[..s.len() - 1], 1 << 30),
        _ => (s, 1),
    };
    parse_u64(digits)?.checked_mul(mult)
}

/// Percent-decodes a `?cache=` value into an inline value; `None` if it is too long or
/// contains bytes not allowed in a header value.
pub(super) fn decode_cache_value(v: &[u8]) -> Option<InlineValue> {
    let mut out = InlineValue {
        buf: [0; 96],
        len: 0,
    };
    let mut i = 0;
    let mut n = 0usize;
    while i < v.len() {
        let b = match v[i] {
            b'%' => {
                let hex = v.get(i + 1..i + 3)?;
                let h = (hex_val(hex[0])? << 4) | hex_val(hex[1])?;
                i += 3;
                h
            }
            b'+' => {
                i += 1;
                b' '
            }
            b => {
                i += 1;
                b
            }
        };
        // RFC 9110 §5.5: field values are visible characters and spaces; no CR/LF/NUL.
        if !(0x20..=0x7e).contains(&b) {
            return None;
        }
        *out.buf.get_mut(n)? = b;
        n += 1;
    }
    if n == 0 {
        return None;
    }
    out.len = n as u8;
    Some(out)
}

pub(super) fn hex_val(b: u8) -> Option<u8> {
    match b {
        b'0'..=b'9' => Some(b - b'0'),
        b'a'..=b'f' => Some(b - b'a' + 10),
        b'A'..=b'F' => Some(b - b'A' + 10),
        _ => None,
    }
}
