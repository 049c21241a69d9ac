//! The certificate pin Chromium takes in `--ignore-certificate-errors-spki-list`: base64 of
//! the SHA-256 of the leaf certificate's DER SubjectPublicKeyInfo (what
//! `openssl x509 -pubkey | openssl pkey -pubin -outform der | openssl dgst -sha256 -binary |
//! base64` prints). With it the browser trusts the server's self-signed certificate on TCP
//! and QUIC alike, and nothing else.

use crate::BrowserError;

const B64: &[u8; 64] = b"ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/";

/// Base64 (RFC 4648 §4, padded).
pub fn base64(data: &[u8]) -> String {
    let mut s = String::with_capacity(data.len().div_ceil(3) * 4);
    for c in data.chunks(3) {
        let n = (u32::from(c[0]) << 16)
            | (u32::from(*c.get(1).unwrap_or(&0)) << 8)
            | u32::from(*c.get(2).unwrap_or(&0));
        for i in 0..4 {
            if i <= c.len() {
                s.push(B64[(n >> (18 - 6 * i)) as usize & 63] as char);
            } else {
                s.push('=');
            }
        }
    }
    s
}

fn unbase64(s: &str) -> Option<Vec<u8>> {
    let mut out = Vec::with_capacity(s.len() * 3 / 4);
    let (mut acc, mut bits) = (0u32, 0);
    for ch in s.bytes().filter(|b| !b.is_ascii_whitespace() && *b != b'=') {
        let v = B64.iter().position(|&b| b == ch)? as u32;
        acc = (acc << 6) | v;
        bits += 6;
        if bits >= 8 {
            bits -= 8;
            out.push((acc >> bits) as u8);
        }
    }
    Some(out)
}

/// One DER element at the start of `d`: (tag, contents, everything after it).
fn der(d: &[u8]) -> Option<(u8, &[u8], &[u8])> {
    let tag = *d.first()?;
    let first = *d.get(1)?;
    let (len, hdr) = if first < 0x80 {
        (usize::from(first), 2)
    } else {
        let n = usize::from(first & 0x7f);
        if n == 0 || n > 4 {
            return None;
        }
        let mut len = 0usize;
        for i in 0..n {
            len = (len << 8) | usize::from(*d.get(2 + i)?);
        }
        (len, 2 + n)
    };
    let body = d.get(hdr..hdr.checked_add(len)?)?;
    Some((tag, body, &d[hdr + len..]))
}

/// The DER SubjectPublicKeyInfo (whole element) of a DER certificate (RFC 5280 §4.1).
pub fn spki_of(cert_der: &[u8]) -> Option<&[u8]> {
    let (_, cert, _) = der(cert_der)?;
    let (_, tbs, _) = der(cert)?;
    let mut rest = tbs;
    // version [0] EXPLICIT is optional.
    if rest.first() == Some(&0xa0) {
        rest = der(rest)?.2;
    }
    // serialNumber, signature, issuer, validity, subject.
    for _ in 0..5 {
        rest = der(rest)?.2;
    }
    let (_, _, after) = der(rest)?;
    Some(&rest[..rest.len() - after.len()])
}

/// The pin of the first certificate in the PEM file at `path`.
pub fn pin_of_pem_file(path: &std::path::Path) -> Result<String, BrowserError> {
    let pem = std::fs::read_to_string(path)
        .map_err(|e| BrowserError::Certificate(format!("{}: {e}", path.display())))?;
    pin_of_pem(&pem)
        .ok_or_else(|| BrowserError::Certificate(format!("{}: no certificate", path.display())))
}

/// The pin of the first certificate in `pem`.
pub fn pin_of_pem(pem: &str) -> Option<String> {
    let start = pem.find("-----BEGIN CERTIFICATE-----")? + "-----BEGIN CERTIFICATE-----".len();
    let end = start + pem[start..].find("-----END CERTIFICATE-----")?;
    let der_bytes = unbase64(&pem[start..end])?;
    let spki = spki_of(&der_bytes)?;
    let digest = ring::digest::digest(&ring::digest::SHA256, spki);
    Some(base64(digest.as_ref()))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn base64_round_trips_and_pads() {
        assert_eq!(base64(b""), "");
        assert_eq!(base64(b"f"), "Zg==");
        assert_eq!(base64(b"fo"), "Zm8=");
        assert_eq!(base64(b"foo"), "Zm9v");
        assert_eq!(base64(b"foobar"), "Zm9vYmFy");
        assert_eq!(unbase64("Zm9vYmE=").unwrap(), b"fooba");
    }

    #[test]
    fn the_spki_is_the_seventh_element_of_tbs() {
        // A skeleton certificate: SEQ { SEQ { [0]{..}, INT, SEQ, SEQ, SEQ, SEQ, SEQ(spki) } }.
        let spki = [0x30, 0x03, 0x02, 0x01, 0x07];
        let mut tbs = vec![0xa0, 0x03, 0x02, 0x01, 0x02, 0x02, 0x01, 0x01];
        for _ in 0..4 {
            tbs.extend([0x30, 0x00]);
        }
        tbs.extend(spki);
        tbs.extend([0x30, 0x00]);
        let mut tbs_el = vec![0x30, tbs.len() as u8];
        tbs_el.extend(&tbs);
        let mut cert = vec![0x30, tbs_el.len() as u8];
        cert.extend(&tbs_el);
        assert_eq!(spki_of(&cert).unwrap(), &spki);
    }
}
