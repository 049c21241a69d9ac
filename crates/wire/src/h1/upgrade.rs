//! The `h2c` upgrade path (RFC 7540 §3.2, kept as an option by the server
//! although RFC 9113 §3.1 deprecates it): detecting the request and the
//! base64url `HTTP2-Settings` payload.

use super::H1Error;

/// The bytes a server sends to accept an h2c upgrade (RFC 7540 §3.2: "101
/// (Switching Protocols) response"), after which it speaks HTTP/2, starting
/// with its connection preface.
pub const H2C_SWITCHING_PROTOCOLS: &[u8] =
    b"HTTP/1.1 101 Switching Protocols\r\nConnection: Upgrade\r\nUpgrade: h2c\r\n\r\n";

/// A request asking to upgrade to HTTP/2 over cleartext.
///
/// Only reported for HTTP/1.1 requests whose Upgrade field lists `h2c` and
/// that carry exactly one HTTP2-Settings field (RFC 7540 §3.2.1: "A server
/// MUST NOT upgrade the connection to HTTP/2 if this header field is not
/// present or if more than one is present").
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct H2cUpgrade<'a> {
    /// The raw HTTP2-Settings value (base64url, no padding).
    pub settings: &'a [u8],
    /// The Connection field lists both `Upgrade` and `HTTP2-Settings`, as
    /// RFC 7540 §3.2.1 requires of clients. Not required by this parser; a
    /// strict server may refuse to upgrade when false.
    pub connection_options: bool,
}

impl H2cUpgrade<'_> {
    /// Decodes the HTTP2-Settings value: the payload of a SETTINGS frame
    /// (RFC 7540 §3.2.1), to be parsed by the frame codec.
    ///
    /// Allocates (this runs once per upgraded connection).
    pub fn decode_settings(&self) -> Result<Vec<u8>, H1Error> {
        let mut out = Vec::with_capacity(self.settings.len() / 4 * 3 + 3);
        decode_base64url(self.settings, &mut out)?;
        Ok(out)
    }
}

const ALPHABET: &[u8; 64] = b"ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789-_";

/// Encodes a SETTINGS payload as an `HTTP2-Settings` value: base64url with
/// the trailing `=` omitted (RFC 7540 §3.2.1, RFC 4648 §5).
pub fn encode_http2_settings(payload: &[u8]) -> String {
    let mut out = String::with_capacity(payload.len().div_ceil(3) * 4);
    for group in payload.chunks(3) {
        let b0 = group.first().copied().unwrap_or(0);
        let b1 = group.get(1).copied().unwrap_or(0);
        let b2 = group.get(2).copied().unwrap_or(0);
        let n = (u32::from(b0) << 16) | (u32::from(b1) << 8) | u32::from(b2);
        let chars = group.len() + 1;
        for i in 0..chars {
            let idx = (n >> (18 - 6 * i)) & 0x3f;
            out.push(char::from(ALPHABET[idx as usize]));
        }
    }
    out
}

/// Decodes base64url (RFC 4648 §5), accepting but not requiring trailing `=`
/// padding, appending to `out`.
pub fn decode_base64url(value: &[u8], out: &mut Vec<u8>) -> Result<(), H1Error> {
    let trimmed = {
        let mut v = value;
        while let [rest @ .., b'='] = v {
            v = rest;
        }
        v
    };
    if trimmed.len() % 4 == 1 || value.len() - trimmed.len() > 2 {
        return Err(H1Error::InvalidHttp2Settings);
    }
    let mut acc: u32 = 0;
    let mut bits = 0u32;
    for &c in trimmed {
        let v = match c {
            b'A'..=b'Z' => c - b'A',
            b'a'..=b'z' => c - b'a' + 26,
            b'0'..=b'9' => c - b'0' + 52,
            b'-' => 62,
            b'_' => 63,
            _ => return Err(H1Error::InvalidHttp2Settings),
        };
        acc = (acc << 6) | u32::from(v);
        bits += 6;
        if bits >= 8 {
            bits -= 8;
            out.push((acc >> bits) as u8);
            acc &= (1 << bits) - 1;
        }
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn rfc4648_vectors() {
        let cases: [(&[u8], &str); 7] = [
            (b"", ""),
            (b"f", "Zg"),
            (b"fo", "Zm8"),
            (b"foo", "Zm9v"),
            (b"foob", "Zm9vYg"),
            (b"fooba", "Zm9vYmE"),
            (b"foobar", "Zm9vYmFy"),
        ];
        for (raw, enc) in cases {
            assert_eq!(encode_http2_settings(raw), enc);
            let mut out = Vec::new();
            decode_base64url(enc.as_bytes(), &mut out).unwrap();
            assert_eq!(out, raw);
        }
        let mut out = Vec::new();
        decode_base64url(b"Zm8=", &mut out).unwrap();
        assert_eq!(out, b"fo");
    }

    #[test]
    fn url_safe_alphabet() {
        let raw = [0xfb, 0xff, 0xbf];
        assert_eq!(encode_http2_settings(&raw), "-_-_");
        let mut out = Vec::new();
        decode_base64url(b"-_-_", &mut out).unwrap();
        assert_eq!(out, raw);
    }

    #[test]
    fn invalid() {
        for bad in [&b"Z"[..], b"Zm9v+", b"Zm/v", b"Zg===", b"Z m9"] {
            assert_eq!(
                decode_base64url(bad, &mut Vec::new()),
                Err(H1Error::InvalidHttp2Settings),
                "{bad:?}"
            );
        }
    }

    #[test]
    fn settings_payload() {
        // SETTINGS_MAX_CONCURRENT_STREAMS = 100, SETTINGS_INITIAL_WINDOW_SIZE = 65535
        let payload = [0, 3, 0, 0, 0, 100, 0, 4, 0, 0, 0xff, 0xff];
        let enc = encode_http2_settings(&payload);
        let up = H2cUpgrade {
            settings: enc.as_bytes(),
            connection_options: true,
        };
        assert_eq!(up.decode_settings().unwrap(), payload);
    }
}
