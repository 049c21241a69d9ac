//! Decimal and hexadecimal numbers written into head buffers without `fmt`.

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
}
