//! `/info`: the request echoed as JSON.

use std::io::Write;

use super::{HttpVersion, Request};

/// Writes `/info`'s JSON: method, target, protocol, TLS, body length and every header.
pub(super) fn write_info(req: &Request<'_>, out: &mut Vec<u8>) {
    out.extend_from_slice(b"{\"method\":");
    json_str(out, req.method_raw);
    out.extend_from_slice(b",\"target\":");
    json_str(out, req.target);
    out.extend_from_slice(match req.proto {
        HttpVersion::Http10 => b",\"protocol\":\"HTTP/1.0\"" as &[u8],
        HttpVersion::Http11 => b",\"protocol\":\"HTTP/1.1\"",
        HttpVersion::H2 => b",\"protocol\":\"HTTP/2\"",
        HttpVersion::H3 => b",\"protocol\":\"HTTP/3\"",
    });
    out.extend_from_slice(if req.tls {
        b",\"tls\":true" as &[u8]
    } else {
        b",\"tls\":false"
    });
    if req.early {
        // RFC 8470 §5.1: what a handler behind an intermediary would see as `Early-Data: 1`.
        out.extend_from_slice(b",\"early_data\":true");
    }
    if let Some(n) = req.body_len {
        let _ = write!(out, ",\"body_length\":{n}");
    }
    out.extend_from_slice(b",\"headers\":[");
    let mut first = true;
    let mut total = 0usize;
    req.headers.for_each(&mut |name, value| {
        if !first {
            out.push(b',');
        }
        first = false;
        total += name.len() + value.len() + 32;
        out.push(b'[');
        json_str(out, name);
        out.push(b',');
        json_str(out, value);
        out.push(b']');
    });
    // `header_list_size`: RFC 9113 §6.5.2 accounting (name + value + 32 per field).
    let _ = writeln!(out, "],\"header_list_size\":{total}}}");
}

/// Appends `s` as a JSON string (bytes outside ASCII are escaped as \u00XX of each byte).
fn json_str(out: &mut Vec<u8>, s: &[u8]) {
    out.push(b'"');
    for &b in s {
        match b {
            b'"' => out.extend_from_slice(b"\\\""),
            b'\\' => out.extend_from_slice(b"\\\\"),
            0x20..=0x7e => out.push(b),
            _ => {
                const HEX: &[u8; 16] = b"0123456789abcdef";
                out.extend_from_slice(b"\\u00");
                out.push(HEX[(b >> 4) as usize]);
                out.push(HEX[(b & 15) as usize]);
            }
        }
    }
    out.push(b'"');
}
