//! The client connection preface (RFC 9113 §3.4).

use super::error::{ErrorCode, H2Error};

/// The client connection preface: `PRI * HTTP/2.0\r\n\r\nSM\r\n\r\n`.
///
/// RFC 9113 §3.4: "the connection preface starts with the string
/// PRI * HTTP/2.0\r\n\r\nSM\r\n\r\n" and must be followed by a SETTINGS frame.
pub const PREFACE: &[u8; 24] = b"PRI * HTTP/2.0\r\n\r\nSM\r\n\r\n";

/// Progress of [`check_preface`] on a possibly partial input.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum PrefaceCheck {
    /// Everything received so far matches; at least this many more octets
    /// are needed.
    NeedMore(usize),
    /// The full preface is present; this many octets (always 24) are
    /// consumed and the first frame (SETTINGS) follows.
    Ok(usize),
}

/// Check the start of a connection for the client preface.
///
/// Decides as early as possible: the first mismatching octet yields an
/// error, so a server can tell prior-knowledge h2c from HTTP/1.1 after the
/// first octet of e.g. `GET`. The error is a connection PROTOCOL_ERROR
/// (RFC 9113 §3.4: "Clients and servers MUST treat an invalid connection
/// preface as a connection error (Section 5.4.1) of type PROTOCOL_ERROR.");
/// a server that also speaks HTTP/1.1 treats it as "not HTTP/2" instead.
pub fn check_preface(buf: &[u8]) -> Result<PrefaceCheck, H2Error> {
    let n = buf.len().min(PREFACE.len());
    let (got, want) = (
        buf.get(..n).unwrap_or_default(),
        PREFACE.get(..n).unwrap_or_default(),
    );
    if got != want {
        return Err(H2Error::connection(
            ErrorCode::PROTOCOL_ERROR,
            "RFC 9113 §3.4: invalid connection preface",
        ));
    }
    if n < PREFACE.len() {
        Ok(PrefaceCheck::NeedMore(PREFACE.len() - n))
    } else {
        Ok(PrefaceCheck::Ok(PREFACE.len()))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn preface_partial_and_full() {
        assert_eq!(check_preface(b""), Ok(PrefaceCheck::NeedMore(24)));
        for i in 0..24 {
            assert_eq!(
                check_preface(&PREFACE[..i]),
                Ok(PrefaceCheck::NeedMore(24 - i))
            );
        }
        assert_eq!(check_preface(PREFACE), Ok(PrefaceCheck::Ok(24)));
        let mut more = PREFACE.to_vec();
        more.extend_from_slice(&[0, 0, 0, 4, 0, 0, 0, 0, 0]);
        assert_eq!(check_preface(&more), Ok(PrefaceCheck::Ok(24)));
    }

    #[test]
    fn preface_mismatch_is_early() {
        let e = check_preface(b"G").unwrap_err();
        assert_eq!(e.code, ErrorCode::PROTOCOL_ERROR);
        assert!(e.is_connection_error());
        assert!(check_preface(b"GET / HTTP/1.1\r\n").is_err());
        assert!(check_preface(b"PRI * HTTP/1.1").is_err());
        let mut bad = PREFACE.to_vec();
        bad[23] = b'x';
        assert!(check_preface(&bad).is_err());
    }
}
