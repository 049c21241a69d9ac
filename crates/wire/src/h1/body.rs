//! Message body framing (RFC 9112 §6, §7.1): a decoder shared by the request
//! (server) and response (client) sides.
//!
//! The decoder never copies: every [`BodyEvent::Data`] borrows from the
//! input slice, and chunked framing bytes (chunk-size lines, extensions, the
//! CRLF after each chunk) are consumed without being reported.

use super::headers::Headers;
use super::scan::{HeadScanner, Scan};
use super::H1Error;

/// Longest chunk-size line accepted, extensions included (a fixed bound
/// against a peer streaming an endless extension).
pub const MAX_CHUNK_LINE: usize = 4096;

/// Most trailer fields accepted in one trailer section.
pub const MAX_TRAILERS: usize = 32;

/// Default byte limit of a trailer section.
pub const DEFAULT_MAX_TRAILER_BYTES: usize = 8 * 1024;

/// How the body of a message is delimited (RFC 9112 §6.3).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum Framing {
    /// No body at all (HEAD responses, 1xx, 204, 304, requests without
    /// Content-Length or Transfer-Encoding).
    None,
    /// Exactly this many bytes.
    ContentLength(u64),
    /// `Transfer-Encoding: chunked`.
    Chunked,
    /// Until the connection closes (responses only).
    CloseDelimited,
}

/// One step of body decoding.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum BodyEvent<'a> {
    /// Every byte given was consumed (framing only, or nothing); call again
    /// with more input.
    NeedMore,
    /// Body bytes, borrowed from the input (never empty).
    Data(&'a [u8]),
    /// The trailer section of a chunked body (only reported when it holds at
    /// least one field); [`BodyEvent::End`] follows.
    Trailers {
        /// The trailer fields.
        headers: Headers<'a>,
        /// Size of the trailer section in bytes, final empty line included.
        bytes: usize,
    },
    /// The body is complete.
    End,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum State {
    Done,
    Length {
        remaining: u64,
    },
    Close,
    /// Reading the hex digits of a chunk-size.
    Size {
        size: u64,
        digits: bool,
    },
    /// Whitespace after the chunk-size, before `;` or CR.
    SizeWs {
        size: u64,
    },
    /// Inside chunk extensions, up to CR.
    Ext {
        size: u64,
    },
    /// After the CR of the chunk-size line.
    SizeLf {
        size: u64,
    },
    /// Inside chunk-data.
    Data {
        remaining: u64,
    },
    /// After chunk-data: expecting CR, then LF.
    DataCr,
    DataLf,
    /// After the last-chunk line: the trailer section.
    Trailers(HeadScanner),
}

/// Incremental body decoder.
///
/// Call [`decode`](Self::decode) with the unconsumed input; it returns how
/// many bytes it consumed (always advance by that much, whatever the event)
/// and one event. At end of input call [`eof`](Self::eof).
#[derive(Debug, Clone)]
pub struct BodyDecoder {
    state: State,
    framing: Framing,
    max_body: u64,
    max_trailer_bytes: usize,
    decoded: u64,
    line_len: usize,
}

impl BodyDecoder {
    /// A decoder without a body limit and with the default trailer limit.
    pub fn new(framing: Framing) -> Self {
        Self::with_limits(framing, u64::MAX, DEFAULT_MAX_TRAILER_BYTES)
    }

    /// A decoder that fails with [`H1Error::BodyTooLarge`] once the body would
    /// exceed `max_body` bytes, and with [`H1Error::TrailersTooLarge`] once a
    /// trailer section exceeds `max_trailer_bytes`.
    pub fn with_limits(framing: Framing, max_body: u64, max_trailer_bytes: usize) -> Self {
        let state = match framing {
            Framing::None => State::Done,
            Framing::ContentLength(n) => State::Length { remaining: n },
            Framing::Chunked => State::Size {
                size: 0,
                digits: false,
            },
            Framing::CloseDelimited => State::Close,
        };
        BodyDecoder {
            state,
            framing,
            max_body,
            max_trailer_bytes,
            decoded: 0,
            line_len: 0,
        }
    }

    /// The framing this decoder was built for.
    pub fn framing(&self) -> Framing {
        self.framing
    }

    /// Body bytes reported so far (after chunk decoding).
    pub fn decoded_bytes(&self) -> u64 {
        self.decoded
    }

    /// True once the end of the body has been reached (the next
    /// [`decode`](Self::decode) returns [`BodyEvent::End`]).
    pub fn is_done(&self) -> bool {
        matches!(self.state, State::Done | State::Length { remaining: 0 })
    }

    /// Decodes the next piece of body from `buf`.
    ///
    /// Returns `(consumed, event)`. `consumed` counts framing bytes too, so it
    /// can be larger than the data reported, and it can be non-zero with
    /// [`BodyEvent::NeedMore`]. The exception is an unfinished trailer
    /// section: its bytes are not consumed until the whole section is there
    /// (the caller keeps them and appends).
    pub fn decode<'a>(&mut self, buf: &'a [u8]) -> Result<(usize, BodyEvent<'a>), H1Error> {
        let mut pos = 0usize;
        loop {
            match self.state {
                State::Done => return Ok((pos, BodyEvent::End)),
                State::Length { remaining: 0 } => self.state = State::Done,
                State::Length { remaining } => {
                    // A Content-Length above the limit is refused before any
                    // byte of it is read.
                    if self.decoded.saturating_add(remaining) > self.max_body {
                        return Err(H1Error::BodyTooLarge);
                    }
                    let data = take(buf, pos, remaining);
                    if data.is_empty() {
                        return Ok((pos, BodyEvent::NeedMore));
                    }
                    let n = data.len() as u64;
                    self.decoded = self.decoded.saturating_add(n);
                    self.state = State::Length {
                        remaining: remaining - n,
                    };
                    return Ok((pos + data.len(), BodyEvent::Data(data)));
                }
                State::Close => {
                    let data = take(buf, pos, u64::MAX);
                    if data.is_empty() {
                        return Ok((pos, BodyEvent::NeedMore));
                    }
                    let decoded = self.decoded.saturating_add(data.len() as u64);
                    if decoded > self.max_body {
                        return Err(H1Error::BodyTooLarge);
                    }
                    self.decoded = decoded;
                    return Ok((pos + data.len(), BodyEvent::Data(data)));
                }
                State::Data { remaining } => {
                    let data = take(buf, pos, remaining);
                    if data.is_empty() {
                        return Ok((pos, BodyEvent::NeedMore));
                    }
                    let n = data.len() as u64;
                    self.decoded = self.decoded.saturating_add(n);
                    self.state = if remaining == n {
                        State::DataCr
                    } else {
                        State::Data {
                            remaining: remaining - n,
                        }
                    };
                    return Ok((pos + data.len(), BodyEvent::Data(data)));
                }
                State::Trailers(mut scanner) => {
                    let rest = buf.get(pos..).unwrap_or(&[]);
                    return self.trailers(&mut scanner, rest, pos);
                }
                framing_state => {
                    let Some(&b) = buf.get(pos) else {
                        return Ok((pos, BodyEvent::NeedMore));
                    };
                    pos += 1;
                    self.state = self.chunk_framing_byte(framing_state, b)?;
                }
            }
        }
    }

    /// One byte of chunked framing (chunk-size line or the CRLF after data).
    fn chunk_framing_byte(&mut self, state: State, b: u8) -> Result<State, H1Error> {
        // RFC 9112 §7.1:
        //   chunk      = chunk-size [ chunk-ext ] CRLF chunk-data CRLF
        //   chunk-size = 1*HEXDIG
        //   last-chunk = 1*("0") [ chunk-ext ] CRLF
        //   chunk-ext  = *( BWS ";" BWS chunk-ext-name [ BWS "=" BWS chunk-ext-val ] )
        if matches!(
            state,
            State::Size { .. } | State::SizeWs { .. } | State::Ext { .. }
        ) {
            self.line_len += 1;
            if self.line_len > MAX_CHUNK_LINE {
                return Err(H1Error::ChunkLineTooLong);
            }
        }
        Ok(match state {
            State::Size { size, digits } => match hex_value(b) {
                Some(d) => State::Size {
                    // RFC 9112 §7.1: "Recipients MUST anticipate potentially
                    // large hexadecimal numerals and prevent parsing errors due
                    // to integer conversion overflows or precision loss due to
                    // integer representation."
                    size: size
                        .checked_mul(16)
                        .and_then(|s| s.checked_add(u64::from(d)))
                        .ok_or(H1Error::ChunkSizeOverflow)?,
                    digits: true,
                },
                None if !digits => return Err(H1Error::InvalidChunkSize),
                None => self.after_size(size, b)?,
            },
            State::SizeWs { size } => self.after_size(size, b)?,
            State::Ext { size } => match b {
                b'\r' => State::SizeLf { size },
                // The extension is ignored, but it must not hide a bare LF or
                // other controls (a request-smuggling vector when parsers
                // disagree on where the line ends).
                b'\t' => State::Ext { size },
                0x00..=0x1f | 0x7f => return Err(H1Error::InvalidChunkExtension),
                _ => State::Ext { size },
            },
            State::SizeLf { size } => {
                if b != b'\n' {
                    return Err(H1Error::InvalidChunkDelimiter);
                }
                self.line_len = 0;
                if size == 0 {
                    State::Trailers(HeadScanner::fields())
                } else {
                    if self.decoded.saturating_add(size) > self.max_body {
                        return Err(H1Error::BodyTooLarge);
                    }
                    State::Data { remaining: size }
                }
            }
            State::DataCr if b == b'\r' => State::DataLf,
            State::DataLf if b == b'\n' => State::Size {
                size: 0,
                digits: false,
            },
            // RFC 9112 §7.1: chunk-data is followed by CRLF; anything else
            // means the chunk-size lied.
            State::DataCr | State::DataLf => return Err(H1Error::InvalidChunkDelimiter),
            // Not framing states: unreachable by construction of `decode`,
            // kept total instead of panicking.
            other => other,
        })
    }

    /// The byte right after the chunk-size digits (or after BWS).
    fn after_size(&self, size: u64, b: u8) -> Result<State, H1Error> {
        Ok(match b {
            b'\r' => State::SizeLf { size },
            b' ' | b'\t' => State::SizeWs { size },
            b';' => State::Ext { size },
            // A bare LF is refused in chunked framing: RFC 9112 §7.1 requires
            // CRLF, and lenient line endings here are a known smuggling vector.
            b'\n' => return Err(H1Error::InvalidChunkDelimiter),
            _ => return Err(H1Error::InvalidChunkSize),
        })
    }

    /// The trailer section after the last chunk.
    fn trailers<'a>(
        &mut self,
        scanner: &mut HeadScanner,
        rest: &'a [u8],
        pos: usize,
    ) -> Result<(usize, BodyEvent<'a>), H1Error> {
        // RFC 9112 §7.1.2: trailer-section = *( field-line CRLF ), then the
        // final CRLF of the chunked body.
        let end = match scanner.scan(rest) {
            Scan::Partial => {
                self.state = State::Trailers(*scanner);
                if rest.len() > self.max_trailer_bytes {
                    return Err(H1Error::TrailersTooLarge);
                }
                return Ok((pos, BodyEvent::NeedMore));
            }
            Scan::Complete(end) => end,
        };
        if end > self.max_trailer_bytes {
            return Err(H1Error::TrailersTooLarge);
        }
        let mut fields = [httparse::EMPTY_HEADER; MAX_TRAILERS];
        match httparse::parse_headers(rest, &mut fields) {
            Ok(httparse::Status::Complete((n, parsed))) => {
                self.state = State::Done;
                let section = rest.get(..n).unwrap_or(&[]);
                if parsed.is_empty() {
                    Ok((pos + n, BodyEvent::End))
                } else {
                    Ok((
                        pos + n,
                        BodyEvent::Trailers {
                            headers: Headers::new(section),
                            bytes: n,
                        },
                    ))
                }
            }
            Ok(httparse::Status::Partial) => {
                // httparse wants more than the scanner found: keep scanning.
                self.state = State::Trailers(*scanner);
                Ok((pos, BodyEvent::NeedMore))
            }
            Err(e) => Err(H1Error::from_httparse(e, &[])),
        }
    }

    /// The connection reached end of input.
    ///
    /// Returns [`BodyEvent::End`] when the body is complete (always for a
    /// close-delimited body) and [`H1Error::Truncated`] when the connection
    /// closed inside a Content-Length or chunked body.
    pub fn eof(&mut self) -> Result<BodyEvent<'static>, H1Error> {
        match self.state {
            State::Done | State::Close | State::Length { remaining: 0 } => {
                self.state = State::Done;
                Ok(BodyEvent::End)
            }
            // RFC 9112 §8: "A message body that uses the chunked transfer
            // coding is incomplete if the zero-sized chunk that terminates the
            // encoding has not been received. A message that uses a valid
            // Content-Length is incomplete if the size of the message body
            // received (in octets) is less than the value given by
            // Content-Length."
            _ => Err(H1Error::Truncated),
        }
    }
}

/// Up to `max` bytes of `buf` from `pos`.
fn take(buf: &[u8], pos: usize, max: u64) -> &[u8] {
    let rest = buf.get(pos..).unwrap_or(&[]);
    let n = usize::try_from(max).map_or(rest.len(), |m| m.min(rest.len()));
    rest.get(..n).unwrap_or(&[])
}

fn hex_value(b: u8) -> Option<u8> {
    match b {
        b'0'..=b'9' => Some(b - b'0'),
        b'a'..=b'f' => Some(b - b'a' + 10),
        b'A'..=b'F' => Some(b - b'A' + 10),
        _ => None,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Decodes `input` fed in pieces of `step` bytes; returns body, trailers
    /// and whether End was seen.
    fn run(
        framing: Framing,
        input: &[u8],
        step: usize,
    ) -> Result<(Vec<u8>, Vec<String>, bool), H1Error> {
        let mut d = BodyDecoder::new(framing);
        let mut buf = Vec::new();
        let mut body = Vec::new();
        let mut trailers = Vec::new();
        let mut fed = 0;
        loop {
            let (n, ev) = d.decode(&buf)?;
            let ev = match ev {
                BodyEvent::Data(x) => {
                    body.extend_from_slice(x);
                    None
                }
                BodyEvent::Trailers { headers, .. } => {
                    for h in headers {
                        trailers.push(format!("{}={}", h.name, String::from_utf8_lossy(h.value)));
                    }
                    None
                }
                BodyEvent::End => Some(true),
                BodyEvent::NeedMore => Some(false),
            };
            buf.drain(..n);
            match ev {
                Some(true) => return Ok((body, trailers, true)),
                Some(false) if fed >= input.len() => {
                    d.eof()?;
                    return Ok((body, trailers, false));
                }
                Some(false) => {
                    let end = (fed + step).min(input.len());
                    buf.extend_from_slice(&input[fed..end]);
                    fed = end;
                }
                None => {}
            }
        }
    }

    #[test]
    fn content_length() {
        for step in [1, 2, 7, 100] {
            let (b, _, end) = run(Framing::ContentLength(5), b"hello", step).unwrap();
            assert_eq!((b.as_slice(), end), (&b"hello"[..], true));
        }
        let mut d = BodyDecoder::new(Framing::ContentLength(3));
        assert_eq!(d.decode(b"abcdef").unwrap(), (3, BodyEvent::Data(b"abc")));
        assert_eq!(d.decode(b"def").unwrap(), (0, BodyEvent::End));
        assert_eq!(
            run(Framing::ContentLength(5), b"hel", 1),
            Err(H1Error::Truncated)
        );
    }

    #[test]
    fn none_and_close() {
        let mut d = BodyDecoder::new(Framing::None);
        assert_eq!(d.decode(b"xyz").unwrap(), (0, BodyEvent::End));
        let mut d = BodyDecoder::new(Framing::CloseDelimited);
        assert_eq!(d.decode(b"").unwrap(), (0, BodyEvent::NeedMore));
        assert_eq!(d.decode(b"xyz").unwrap(), (3, BodyEvent::Data(b"xyz")));
        assert_eq!(d.eof().unwrap(), BodyEvent::End);
    }

    #[test]
    fn chunked_with_extensions_and_trailers() {
        let input = b"4;name=value;q=\"a b\"\r\nWiki\r\n5 ; x\r\npedia\r\nE\r\n in\r\n\r\nchunks.\r\n0;last\r\nExpires: never\r\nX-T: 1\r\n\r\n";
        for step in 1..=input.len() {
            let (b, t, end) = run(Framing::Chunked, input, step).unwrap();
            assert_eq!(b, b"Wikipedia in\r\n\r\nchunks.");
            assert_eq!(t, vec!["Expires=never", "X-T=1"]);
            assert!(end);
        }
    }

    #[test]
    fn chunked_without_trailers_ends_directly() {
        let mut d = BodyDecoder::new(Framing::Chunked);
        assert_eq!(
            d.decode(b"3\r\nabc\r\n").unwrap(),
            (6, BodyEvent::Data(b"abc"))
        );
        assert_eq!(d.decode(b"\r\n0\r\n\r\nNEXT").unwrap(), (7, BodyEvent::End));
        assert!(d.is_done());
        assert_eq!(d.decoded_bytes(), 3);
    }

    #[test]
    fn chunked_errors() {
        let err = |input: &[u8]| run(Framing::Chunked, input, input.len().max(1)).unwrap_err();
        assert_eq!(err(b"\r\n"), H1Error::InvalidChunkSize);
        assert_eq!(err(b"g\r\n"), H1Error::InvalidChunkSize);
        assert_eq!(err(b"-1\r\n"), H1Error::InvalidChunkSize);
        assert_eq!(err(b"1 2\r\n"), H1Error::InvalidChunkSize);
        assert_eq!(err(b"10000000000000000\r\n"), H1Error::ChunkSizeOverflow);
        assert_eq!(err(b"3\nabc\r\n"), H1Error::InvalidChunkDelimiter);
        assert_eq!(err(b"3\rabc\r\n"), H1Error::InvalidChunkDelimiter);
        assert_eq!(err(b"3\r\nabcd\r\n"), H1Error::InvalidChunkDelimiter);
        assert_eq!(err(b"3\r\nabc\n0\r\n\r\n"), H1Error::InvalidChunkDelimiter);
        assert_eq!(err(b"3;a\nb\r\nabc\r\n"), H1Error::InvalidChunkExtension);
        assert_eq!(err(b"3;a\0\r\nabc\r\n"), H1Error::InvalidChunkExtension);
        assert_eq!(err(b"3\r\nab"), H1Error::Truncated);
        assert_eq!(err(b"0\r\nX: y\r\n"), H1Error::Truncated);
        assert_eq!(err(b"0\r\nX y\r\n\r\n"), H1Error::InvalidHeaderName);
        let mut long = b"1;".to_vec();
        long.resize(MAX_CHUNK_LINE + 10, b'a');
        assert_eq!(err(&long), H1Error::ChunkLineTooLong);
        let zeros = vec![b'0'; MAX_CHUNK_LINE + 1];
        assert_eq!(err(&zeros), H1Error::ChunkLineTooLong);
        // Largest chunk size that fits is accepted (and then truncated).
        assert_eq!(err(b"ffffffffffffffff\r\nab"), H1Error::Truncated);
    }

    #[test]
    fn body_limit() {
        let mut d = BodyDecoder::with_limits(Framing::ContentLength(11), 10, 100);
        assert_eq!(d.decode(b"x"), Err(H1Error::BodyTooLarge));
        let mut d = BodyDecoder::with_limits(Framing::Chunked, 10, 100);
        assert_eq!(
            d.decode(b"5\r\nhello\r\n").unwrap(),
            (8, BodyEvent::Data(b"hello"))
        );
        assert_eq!(d.decode(b"\r\n6\r\n"), Err(H1Error::BodyTooLarge));
        let mut d = BodyDecoder::with_limits(Framing::Chunked, 10, 10);
        assert_eq!(
            d.decode(b"0\r\nX-Long: 0123456789\r\n"),
            Err(H1Error::TrailersTooLarge)
        );
        let mut d = BodyDecoder::with_limits(Framing::Chunked, 10, 10);
        assert_eq!(
            d.decode(b"0\r\nX-Long: 012\r\n\r\n"),
            Err(H1Error::TrailersTooLarge)
        );
    }

    #[test]
    fn too_many_trailers() {
        let mut input = b"0\r\n".to_vec();
        for i in 0..=MAX_TRAILERS {
            input.extend_from_slice(format!("T{i}: v\r\n").as_bytes());
        }
        input.extend_from_slice(b"\r\n");
        assert_eq!(
            BodyDecoder::new(Framing::Chunked).decode(&input),
            Err(H1Error::TooManyHeaders)
        );
    }
}
