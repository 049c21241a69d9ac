//! Incremental decoder for a chunked request body (RFC 9112 §7.1) that only counts and
//! discards the data (the built-in endpoints never need request content).

/// Decoder state.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Chunked {
    /// Reading the hex chunk size (`size` so far), `line` bytes of the size line seen.
    Size {
        /// Accumulated size.
        size: u64,
        /// Digits seen.
        digits: u32,
        /// In a chunk extension (after `;`).
        ext: bool,
        /// Bytes of this line so far.
        line: u32,
        /// The CR was seen.
        cr: bool,
    },
    /// Inside chunk data.
    Data(u64),
    /// Expecting the CRLF after chunk data (`true`: CR seen).
    DataEnd(bool),
    /// Reading trailer lines; `line` bytes of the current line, `total` trailer bytes.
    Trailer {
        /// Bytes in the current line.
        line: u32,
        /// Trailer bytes so far.
        total: u32,
        /// The CR was seen.
        cr: bool,
    },
    /// The last chunk and trailers were read.
    Done,
}

/// Malformed chunked framing or a limit exceeded.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum ChunkedError {
    /// Framing error (400).
    Malformed,
    /// The decoded body exceeds the limit (413).
    TooLarge,
}

/// Longest chunk-size line accepted (with extensions).
const MAX_LINE: u32 = 4096;

impl Default for Chunked {
    fn default() -> Self {
        Chunked::Size {
            size: 0,
            digits: 0,
            ext: false,
            line: 0,
            cr: false,
        }
    }
}

impl Chunked {
    /// Consumes framing and data from `input`; returns bytes consumed. Adds data bytes to
    /// `*body` and fails with `TooLarge` once it passes `limit`; trailers count against
    /// `max_trailer`. Stops at [`Chunked::Done`].
    pub fn feed(
        &mut self,
        input: &[u8],
        body: &mut u64,
        limit: u64,
        max_trailer: u32,
    ) -> Result<usize, ChunkedError> {
        let mut i = 0;
        while i < input.len() {
            match self {
                Chunked::Done => break,
                Chunked::Data(rem) => {
                    let n = (*rem).min((input.len() - i) as u64);
                    *rem -= n;
                    i += n as usize;
                    if *rem == 0 {
                        *self = Chunked::DataEnd(false);
                    }
                }
                Chunked::DataEnd(cr) => {
                    let b = input[i];
                    i += 1;
                    match (b, *cr) {
                        (b'\r', false) => *cr = true,
                        (b'\n', true) => *self = Chunked::default(),
                        _ => return Err(ChunkedError::Malformed),
                    }
                }
                Chunked::Size {
                    size,
                    digits,
                    ext,
                    line,
                    cr,
                } => {
                    let b = input[i];
                    i += 1;
                    *line += 1;
                    if *line > MAX_LINE {
                        return Err(ChunkedError::Malformed);
                    }
                    if *cr {
                        if b != b'\n' || *digits == 0 {
                            return Err(ChunkedError::Malformed);
                        }
                        let n = *size;
                        *body = body.checked_add(n).ok_or(ChunkedError::TooLarge)?;
                        if *body > limit {
                            return Err(ChunkedError::TooLarge);
                        }
                        *self = if n == 0 {
                            Chunked::Trailer {
                                line: 0,
                                total: 0,
                                cr: false,
                            }
                        } else {
                            Chunked::Data(n)
                        };
                        continue;
                    }
                    match b {
                        b'\r' => *cr = true,
                        _ if *ext => {}
                        b';' | b' ' | b'\t' if *digits > 0 => *ext = true,
                        _ => {
                            let d = match b {
                                b'0'..=b'9' => b - b'0',
                                b'a'..=b'f' => b - b'a' + 10,
                                b'A'..=b'F' => b - b'A' + 10,
                                _ => return Err(ChunkedError::Malformed),
                            };
                            // RFC 9112 §7.1: "Recipients MUST anticipate potentially large
                            // hexadecimal numerals and prevent parsing errors due to integer
                            // conversion overflows".
                            *size = size
                                .checked_mul(16)
                                .and_then(|s| s.checked_add(u64::from(d)))
                                .ok_or(ChunkedError::TooLarge)?;
                            *digits += 1;
                        }
                    }
                }
                Chunked::Trailer { line, total, cr } => {
                    let b = input[i];
                    i += 1;
                    *total += 1;
                    if *total > max_trailer {
                        return Err(ChunkedError::Malformed);
                    }
                    if *cr {
                        if b != b'\n' {
                            return Err(ChunkedError::Malformed);
                        }
                        if *line == 0 {
                            *self = Chunked::Done;
                        } else {
                            *line = 0;
                            *cr = false;
                        }
                    } else if b == b'\r' {
                        *cr = true;
                    } else {
                        *line += 1;
                    }
                }
            }
        }
        Ok(i)
    }

    /// Whether the whole body (last chunk and trailers) was read.
    pub fn is_done(&self) -> bool {
        *self == Chunked::Done
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn decode_in_pieces(input: &[u8], step: usize) -> Result<(u64, usize), ChunkedError> {
        let mut c = Chunked::default();
        let mut body = 0;
        let mut used = 0;
        for piece in input.chunks(step) {
            let n = c.feed(piece, &mut body, 1 << 20, 1024)?;
            used += n;
            if c.is_done() {
                break;
            }
        }
        assert!(c.is_done());
        Ok((body, used))
    }

    #[test]
    fn decodes_with_extensions_and_trailers() {
        let msg = b"5;name=v\r\nhello\r\nA\r\n0123456789\r\n0\r\nx-t: 1\r\n\r\nGET";
        for step in 1..msg.len() {
            assert_eq!(decode_in_pieces(msg, step), Ok((15, msg.len() - 3)));
        }
    }

    #[test]
    fn rejects_bad_framing_and_limits() {
        let mut c = Chunked::default();
        let mut b = 0;
        assert_eq!(
            c.feed(b"zz\r\n", &mut b, 100, 100),
            Err(ChunkedError::Malformed)
        );
        let mut c = Chunked::default();
        assert_eq!(
            c.feed(b"ffffffffffffffffff\r\n", &mut b, 100, 100),
            Err(ChunkedError::TooLarge)
        );
        let mut c = Chunked::default();
        let mut b = 0;
        assert_eq!(
            c.feed(b"65\r\n", &mut b, 100, 100),
            Err(ChunkedError::TooLarge)
        );
        let mut c = Chunked::default();
        let mut b = 0;
        assert_eq!(
            c.feed(b"1\r\nxy", &mut b, 100, 100),
            Err(ChunkedError::Malformed)
        );
        let mut c = Chunked::default();
        let mut b = 0;
        assert_eq!(
            c.feed(b"\r\n", &mut b, 100, 100),
            Err(ChunkedError::Malformed)
        );
    }
}
