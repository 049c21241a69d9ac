//! Field lines packed into one buffer: for each field, the name's length and the value's
//! length (each a `u32`, little-endian), then the name, then the value. The section memo
//! keeps a section's validated fields this way, and hands them over in one piece to a sink
//! that stores them the same way
//! ([`packed_fields`](super::request::RequestEvents::packed_fields)): one copy per section
//! instead of one call per field.

/// Appends `name: value` to `dst`. Names and values are bounded far below 4 GiB by the
/// field-section limits; a longer one is cut at `u32::MAX` octets.
#[inline]
pub fn push(dst: &mut Vec<u8>, name: &[u8], value: &[u8]) {
    let name = name.get(..u32::MAX as usize).unwrap_or(name);
    let value = value.get(..u32::MAX as usize).unwrap_or(value);
    dst.extend_from_slice(&(name.len() as u32).to_le_bytes());
    dst.extend_from_slice(&(value.len() as u32).to_le_bytes());
    dst.extend_from_slice(name);
    dst.extend_from_slice(value);
}

/// The fields of `packed`, in order (a truncated record ends the iteration).
pub fn iter(packed: &[u8]) -> impl Iterator<Item = (&[u8], &[u8])> {
    let mut rest = packed;
    std::iter::from_fn(move || {
        let (head, tail) = rest.split_at_checked(8)?;
        let n = u32::from_le_bytes([head[0], head[1], head[2], head[3]]) as usize;
        let v = u32::from_le_bytes([head[4], head[5], head[6], head[7]]) as usize;
        let (name, tail) = tail.split_at_checked(n)?;
        let (value, tail) = tail.split_at_checked(v)?;
        rest = tail;
        Some((name, value))
    })
}
