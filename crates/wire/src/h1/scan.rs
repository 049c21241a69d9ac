//! Incremental search for the end of a head (start-line + field section) or
//! of a bare field section (trailers).
//!
//! The parsers are fed partial input: the caller keeps the unconsumed bytes
//! and calls again with more appended. Re-running `httparse` on every call
//! would cost O(n²) for a peer that trickles its head byte by byte; the
//! scanner remembers how far it has looked, so each byte is examined once and
//! `httparse` runs once, when the empty line ending the section has arrived.
//! Line ends are found with `memchr` (several bytes per step) rather than a
//! byte-by-byte loop.

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
        while let Some(rel) = buf.get(pos..).and_then(|rest| memchr::memchr(b'\n', rest)) {
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
    fn shorter_buffer_resets() {
        let mut s = HeadScanner::head();
        assert_eq!(s.scan(b"GET / HTTP/1.1\r\nA"), Scan::Partial);
        assert_eq!(s.scan(b"X"), Scan::Partial);
        assert_eq!(s.start_line(), None);
    }
}
