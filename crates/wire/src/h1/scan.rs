//! Incremental search for the end of a head (start-line + field section) or
//! of a bare field section (trailers).
//!
//! The parsers are fed partial input: the caller keeps the unconsumed bytes
//! and calls again with more appended. Re-running `httparse` on every call
//! would cost O(n²) for a peer that trickles its head byte by byte; the
//! scanner remembers how far it has looked, so each byte is examined once and
//! `httparse` runs once, when the empty line ending the section has arrived.
//! Line ends are found eight bytes per step ([`find_byte`]) rather than one
//! byte per loop iteration.

/// The index of the first `needle` in `hay`, eight bytes per step.
///
/// Head lines are short (tens of bytes): a word-at-a-time loop beats both a
/// byte loop and a vectorised search, whose setup costs more than the line.
/// With `x = word ^ needle×8`, `(x - 0x01…01) & !x & 0x80…80` has the high
/// bit set in the lowest byte of `x` that is zero (a borrow can only mark
/// bytes above a zero byte, never below it), so the lowest set bit gives the
/// first match exactly.
pub(crate) fn find_byte(hay: &[u8], needle: u8) -> Option<usize> {
    const LO: u64 = 0x0101_0101_0101_0101;
    const HI: u64 = 0x8080_8080_8080_8080;
    let pattern = LO * u64::from(needle);
    let mut chunks = hay.chunks_exact(8);
    let mut base = 0;
    for chunk in &mut chunks {
        let word = u64::from_le_bytes(<[u8; 8]>::try_from(chunk).unwrap_or_default());
        let x = word ^ pattern;
        let found = x.wrapping_sub(LO) & !x & HI;
        if found != 0 {
            return Some(base + (found.trailing_zeros() / 8) as usize);
        }
        base += 8;
    }
    chunks
        .remainder()
        .iter()
        .position(|b| *b == needle)
        .map(|i| base + i)
}

/// Result of [`HeadScanner::scan`].
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Scan {
    /// The section ends at this offset (just after its empty line).
    Complete(usize),
    /// No end yet.
    Partial,
}

/// Scanner state; offsets are relative to the start of the section, which
/// the caller keeps at the start of the buffer it passes.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) struct HeadScanner {
    /// Bytes examined so far.
    scanned: usize,
    /// Start of the line being scanned.
    line_start: usize,
    /// `(start, end)` of the start-line (`end` just after its LF); for a bare
    /// field section it is `Some((0, 0))` from the beginning.
    start_line: Option<(usize, usize)>,
    fields_only: bool,
}

impl HeadScanner {
    /// Scanner for a message head: leading empty lines, a start-line, fields.
    pub(crate) const fn head() -> Self {
        HeadScanner {
            scanned: 0,
            line_start: 0,
            start_line: None,
            fields_only: false,
        }
    }

    /// Scanner for a bare field section (a trailer section).
    pub(crate) const fn fields() -> Self {
        HeadScanner {
            scanned: 0,
            line_start: 0,
            start_line: Some((0, 0)),
            fields_only: true,
        }
    }

    /// Forgets everything (the next section starts at offset 0).
    pub(crate) fn reset(&mut self) {
        *self = if self.fields_only {
            Self::fields()
        } else {
            Self::head()
        };
    }

    /// Start of the line currently being scanned.
    pub(crate) fn line_start(&self) -> usize {
        self.line_start
    }

    /// `(start, end)` of the start-line once its LF has been seen.
    pub(crate) fn start_line(&self) -> Option<(usize, usize)> {
        self.start_line
    }

    /// Looks for the end of the section in `buf`, examining only bytes not
    /// seen by earlier calls.
    pub(crate) fn scan(&mut self, buf: &[u8]) -> Scan {
        if buf.len() < self.scanned {
            // The caller handed us a different (shorter) buffer: start over.
            self.reset();
        }
        let mut pos = self.scanned;
        while let Some(rel) = buf.get(pos..).and_then(|rest| find_byte(rest, b'\n')) {
            let lf = pos + rel;
            // RFC 9112 §2.2: "a recipient MAY recognize a single LF as a line
            // terminator and ignore any preceding CR" (as httparse does).
            let content_end = if lf > self.line_start && buf.get(lf - 1) == Some(&b'\r') {
                lf - 1
            } else {
                lf
            };
            let empty = content_end == self.line_start;
            pos = lf + 1;
            match self.start_line {
                // RFC 9112 §2.2: "a server that is expecting to receive and
                // parse a request-line SHOULD ignore at least one empty line
                // (CRLF) received prior to the request-line."
                None if empty => {}
                None => self.start_line = Some((self.line_start, pos)),
                Some(_) if empty => {
                    self.scanned = pos;
                    self.line_start = pos;
                    return Scan::Complete(pos);
                }
                Some(_) => {}
            }
            self.line_start = pos;
        }
        self.scanned = buf.len();
        Scan::Partial
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn scan_bytewise(mut s: HeadScanner, input: &[u8]) -> Option<usize> {
        for i in 0..=input.len() {
            if let Scan::Complete(n) = s.scan(&input[..i]) {
                return Some(n);
            }
        }
        None
    }

    #[test]
    fn finds_end_of_head() {
        let h = b"GET / HTTP/1.1\r\nHost: a\r\n\r\nbody";
        assert_eq!(HeadScanner::head().scan(h), Scan::Complete(27));
        assert_eq!(scan_bytewise(HeadScanner::head(), h), Some(27));
        let h = b"\r\n\nGET / HTTP/1.1\n\nx";
        assert_eq!(scan_bytewise(HeadScanner::head(), h), Some(19));
        let mut s = HeadScanner::head();
        assert_eq!(s.scan(b"\r\nGET / HTTP/1.1\r\nA: b\r\n"), Scan::Partial);
        assert_eq!(s.start_line(), Some((2, 18)));
        assert_eq!(s.line_start(), 24);
    }

    #[test]
    fn fields_only() {
        assert_eq!(HeadScanner::fields().scan(b"\r\n"), Scan::Complete(2));
        assert_eq!(HeadScanner::fields().scan(b"\n"), Scan::Complete(1));
        let t = b"A: b\r\nC: d\r\n\r\n";
        assert_eq!(scan_bytewise(HeadScanner::fields(), t), Some(t.len()));
    }

    #[test]
    fn find_byte_matches_a_byte_loop() {
        // Every length up to three words, the needle (and near misses that
        // differ by one bit or borrow) at every position, alone and twice.
        let needles = [b'\n', b':', 0x00, 0x80, 0xff];
        for &needle in &needles {
            for len in 0..=24 {
                let fillers = [
                    b'a',
                    needle ^ 1,
                    needle.wrapping_add(1),
                    needle.wrapping_sub(1),
                    0x80,
                    0,
                ];
                for &filler in fillers.iter().filter(|f| **f != needle) {
                    let base = vec![filler; len];
                    let expect = |h: &[u8]| h.iter().position(|b| *b == needle);
                    assert_eq!(find_byte(&base, needle), None);
                    for i in 0..len {
                        let mut h = base.clone();
                        h[i] = needle;
                        assert_eq!(find_byte(&h, needle), expect(&h), "{h:?}");
                        for j in i + 1..len {
                            let mut h2 = h.clone();
                            h2[j] = needle;
                            assert_eq!(find_byte(&h2, needle), Some(i), "{h2:?}");
                        }
                    }
                }
            }
        }
    }

    #[test]
    fn long_heads_match_a_line_loop() {
        // Lines of every length around the word size, terminated by CRLF or
        // bare LF, scanned whole and byte by byte.
        for len in 0..20 {
            for crlf in [true, false] {
                let eol: &[u8] = if crlf { b"\r\n" } else { b"\n" };
                let mut h = b"HTTP/1.1 200 OK".to_vec();
                h.extend_from_slice(eol);
                for k in 0..3 {
                    h.extend_from_slice(b"X:");
                    h.extend(std::iter::repeat_n(b'a' + k, len));
                    h.extend_from_slice(eol);
                }
                h.extend_from_slice(eol);
                let end = h.len();
                h.extend_from_slice(b"body\n\n");
                assert_eq!(HeadScanner::head().scan(&h), Scan::Complete(end));
                assert_eq!(scan_bytewise(HeadScanner::head(), &h), Some(end));
            }
        }
    }

    #[test]
    fn shorter_buffer_resets() {
        let mut s = HeadScanner::head();
        assert_eq!(s.scan(b"GET / HTTP/1.1\r\nA"), Scan::Partial);
        assert_eq!(s.scan(b"X"), Scan::Partial);
        assert_eq!(s.start_line(), None);
    }
}
