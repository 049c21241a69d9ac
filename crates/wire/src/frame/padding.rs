//! Shared PADDED handling for DATA, HEADERS and PUSH_PROMISE (RFC 9113 §6.1,
//! §6.2, §6.6).

use super::error::{ErrorCode, H2Error};

/// Split a payload into `(pad_len, body)` where `body` is everything between
/// the Pad Length octet and the padding, i.e. the frame's fixed fields
/// followed by its data / field block fragment.
///
/// `fixed` is the size of the fixed fields that must precede the variable
/// part (0 for DATA, 5 for HEADERS with PRIORITY, 4 for PUSH_PROMISE).
#[inline]
pub(crate) fn split<'p>(
    payload: &'p [u8],
    padded: bool,
    fixed: usize,
    too_small: &'static str,
    too_much_padding: &'static str,
) -> Result<(Option<u8>, &'p [u8]), H2Error> {
    if !padded {
        // RFC 9113 §4.2: "An endpoint MUST send an error code of
        // FRAME_SIZE_ERROR if a frame [...] is too small to contain mandatory
        // frame data."
        if payload.len() < fixed {
            return Err(H2Error::connection(ErrorCode::FRAME_SIZE_ERROR, too_small));
        }
        return Ok((None, payload));
    }
    let (&pad, rest) = payload
        .split_first()
        .ok_or(H2Error::connection(ErrorCode::FRAME_SIZE_ERROR, too_small))?;
    if rest.len() < fixed {
        return Err(H2Error::connection(ErrorCode::FRAME_SIZE_ERROR, too_small));
    }
    // RFC 9113 §6.1/§6.2/§6.6: "If the length of the padding is the length
    // of the frame payload or greater, the recipient MUST treat this as a
    // connection error of type PROTOCOL_ERROR." Padding that would eat into
    // the mandatory fixed fields is treated the same way.
    let body_len = rest
        .len()
        .checked_sub(usize::from(pad))
        .filter(|&n| n >= fixed)
        .ok_or(H2Error::connection(
            ErrorCode::PROTOCOL_ERROR,
            too_much_padding,
        ))?;
    let body = rest.get(..body_len).ok_or(H2Error::connection(
        ErrorCode::PROTOCOL_ERROR,
        too_much_padding,
    ))?;
    Ok((Some(pad), body))
}

/// Append `n` zero octets of padding. RFC 9113 §6.1: "Padding octets MUST be
/// set to zero when sending."
#[inline]
pub(crate) fn write_padding(dst: &mut Vec<u8>, n: u8) {
    dst.resize(dst.len() + usize::from(n), 0);
}

/// Payload bytes taken by padding: the Pad Length octet plus the padding.
#[inline]
pub(crate) fn overhead(pad_len: Option<u8>) -> usize {
    match pad_len {
        Some(p) => 1 + usize::from(p),
        None => 0,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn run(p: &[u8], padded: bool, fixed: usize) -> Result<(Option<u8>, &[u8]), ErrorCode> {
        split(p, padded, fixed, "small", "pad").map_err(|e| e.code)
    }

    #[test]
    fn split_cases() {
        assert_eq!(run(b"abc", false, 0), Ok((None, &b"abc"[..])));
        assert_eq!(run(b"abc", false, 4), Err(ErrorCode::FRAME_SIZE_ERROR));
        assert_eq!(run(b"", true, 0), Err(ErrorCode::FRAME_SIZE_ERROR));
        assert_eq!(run(&[0], true, 0), Ok((Some(0), &b""[..])));
        assert_eq!(run(&[1, b'a', 0], true, 0), Ok((Some(1), &b"a"[..])));
        assert_eq!(run(&[2, b'a', 0], true, 0), Ok((Some(2), &b""[..])));
        assert_eq!(run(&[3, b'a', 0], true, 0), Err(ErrorCode::PROTOCOL_ERROR));
        assert_eq!(run(&[255], true, 0), Err(ErrorCode::PROTOCOL_ERROR));
        // Fixed fields must survive the padding.
        assert_eq!(run(&[1, 9, 9, 0], true, 2), Ok((Some(1), &[9u8, 9][..])));
        assert_eq!(run(&[2, 9, 9, 0], true, 2), Err(ErrorCode::PROTOCOL_ERROR));
        assert_eq!(run(&[0, 9], true, 2), Err(ErrorCode::FRAME_SIZE_ERROR));
        assert_eq!(overhead(None), 0);
        assert_eq!(overhead(Some(255)), 256);
    }
}
