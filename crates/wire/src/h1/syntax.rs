//! Field syntax (RFC 9110 §5): optional whitespace, list elements, tokens, and the field
//! name and value checks used by the encoders.

use super::H1Error;

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

#[cfg(test)]
mod tests {
    use super::*;

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
