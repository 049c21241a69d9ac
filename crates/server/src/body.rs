//! Response bodies: where the bytes come from, without materialising large bodies per request.

use std::fs::File;
use std::os::unix::fs::FileExt;
use std::sync::OnceLock;

/// The filler pattern period; any slice of the filler starting at `offset % PERIOD` is
/// contiguous for up to [`FILLER_CHUNK`] bytes.
const PERIOD: usize = 64;
/// Largest contiguous filler slice handed out at once.
pub const FILLER_CHUNK: usize = 64 * 1024;

/// One 64-byte line repeated: printable, so `curl /data?size=100` is readable.
const PATTERN: &[u8; PERIOD] = b"h2lab 0123456789 abcdefghijklmnopqrstuvwxyz ABCDEFGHIJKLMNOPQRS\n";

/// A whole 1×1 grey PNG (signature, IHDR, IDAT, IEND; 67 bytes): the head of every
/// [`Body::Png`], so that a browser decodes `/asset/*.png` and reads it to its end. A browser
/// cancels an image it cannot decode, which would make it transfer less than the page says.
pub const PNG_HEAD: &[u8; 67] = &[
    0x89, 0x50, 0x4e, 0x47, 0x0d, 0x0a, 0x1a, 0x0a, 0x00, 0x00, 0x00, 0x0d, 0x49, 0x48, 0x44, 0x52,
    0x00, 0x00, 0x00, 0x01, 0x00, 0x00, 0x00, 0x01, 0x08, 0x00, 0x00, 0x00, 0x00, 0x3a, 0x7e, 0x9b,
    0x55, 0x00, 0x00, 0x00, 0x0a, 0x49, 0x44, 0x41, 0x54, 0x78, 0xda, 0x63, 0x68, 0x00, 0x00, 0x00,
    0x82, 0x00, 0x81, 0xda, 0x45, 0x08, 0x3b, 0x00, 0x00, 0x00, 0x00, 0x49, 0x45, 0x4e, 0x44, 0xae,
    0x42, 0x60, 0x82,
];

/// The bytes of a [`Body::Png`] at `offset`, at most `max`: [`PNG_HEAD`], then the filler
/// (after IEND, where decoders stop reading).
fn png_at(offset: u64, max: usize) -> &'static [u8] {
    match usize::try_from(offset) {
        Ok(off) if off < PNG_HEAD.len() => &PNG_HEAD[off..PNG_HEAD.len().min(off + max)],
        _ => filler_at(offset, max),
    }
}

/// The shared, immutable filler buffer (built once per process).
pub fn filler() -> &'static [u8] {
    static FILLER: OnceLock<Box<[u8]>> = OnceLock::new();
    FILLER.get_or_init(|| {
        PATTERN
            .iter()
            .copied()
            .cycle()
            .take(FILLER_CHUNK + PERIOD)
            .collect()
    })
}

/// The filler bytes at body offset `offset`, at most `max` (and at most [`FILLER_CHUNK`]).
pub fn filler_at(offset: u64, max: usize) -> &'static [u8] {
    let start = (offset % PERIOD as u64) as usize;
    let len = max.min(FILLER_CHUNK);
    filler().get(start..start + len).unwrap_or(&[])
}

/// Where a response body comes from.
#[derive(Debug)]
pub enum Body {
    /// No body (and, for 204/304, no `content-length`).
    Empty,
    /// A static byte string.
    Static(&'static [u8]),
    /// `len` bytes of the shared filler pattern (`/data`, `/asset`): streamed, never copied
    /// into a per-request buffer.
    Filler(u64),
    /// `len` bytes of a valid PNG: [`PNG_HEAD`] followed by the filler (`/asset/*.png`), so
    /// that a browser reads an image as the simulated fetcher does. Shorter than the head, it
    /// is the head's first `len` bytes.
    Png(u64),
    /// The first `len` bytes of the caller's dynamic buffer (built by the endpoint).
    Dynamic(usize),
    /// `len` bytes of an open file, read positionally while streaming.
    File(File, u64),
}

impl Body {
    /// Body length in bytes (the `content-length`).
    pub fn len(&self) -> u64 {
        match self {
            Body::Empty => 0,
            Body::Static(s) => s.len() as u64,
            Body::Filler(n) | Body::Png(n) | Body::File(_, n) => *n,
            Body::Dynamic(n) => *n as u64,
        }
    }

    /// Whether the body has no bytes.
    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }
}

/// A body being sent: the source and how far it got.
#[derive(Debug)]
pub struct BodyCursor {
    /// The source.
    pub body: Body,
    /// Bytes already handed out.
    pub offset: u64,
}

impl BodyCursor {
    /// Starts at offset 0.
    pub fn new(body: Body) -> Self {
        BodyCursor { body, offset: 0 }
    }

    /// Bytes not yet handed out.
    pub fn remaining(&self) -> u64 {
        self.body.len().saturating_sub(self.offset)
    }

    /// Appends up to `max` further bytes to `out`; returns how many. `dynamic` is the
    /// caller's dynamic buffer (for [`Body::Dynamic`]). A file read error ends the body early
    /// (returned as `Err`).
    pub fn copy_into(
        &mut self,
        dynamic: &[u8],
        out: &mut Vec<u8>,
        max: usize,
    ) -> std::io::Result<usize> {
        let want = usize::try_from(self.remaining())
            .unwrap_or(usize::MAX)
            .min(max);
        if want == 0 {
            return Ok(0);
        }
        let n = match &self.body {
            Body::File(f, _) => {
                let start = out.len();
                out.resize(start + want, 0);
                let got = match f.read_at(&mut out[start..], self.offset) {
                    Ok(0) => {
                        out.truncate(start);
                        return Err(std::io::ErrorKind::UnexpectedEof.into());
                    }
                    Ok(n) => n,
                    Err(e) => {
                        out.truncate(start);
                        return Err(e);
                    }
                };
                out.truncate(start + got);
                got
            }
            _ => {
                let chunk = self.chunk(dynamic, want);
                out.extend_from_slice(chunk);
                chunk.len()
            }
        };
        self.offset += n as u64;
        Ok(n)
    }

    /// The next at most `max` bytes as a borrowed slice, without advancing (not for
    /// [`Body::File`], which returns an empty slice: use [`BodyCursor::copy_into`]).
    pub fn chunk<'a>(&self, dynamic: &'a [u8], max: usize) -> &'a [u8] {
        let want = usize::try_from(self.remaining())
            .unwrap_or(usize::MAX)
            .min(max);
        let off = usize::try_from(self.offset).unwrap_or(usize::MAX);
        match &self.body {
            Body::Empty | Body::File(..) => &[],
            Body::Static(s) => s.get(off..).map(|s| &s[..want.min(s.len())]).unwrap_or(&[]),
            Body::Filler(_) => filler_at(self.offset, want),
            Body::Png(_) => png_at(self.offset, want),
            Body::Dynamic(_) => dynamic
                .get(off..)
                .map(|s| &s[..want.min(s.len())])
                .unwrap_or(&[]),
        }
    }

    /// The next at most `max` bytes as a `'static` slice, for bodies that live in static
    /// memory ([`Body::Static`], [`Body::Filler`], [`Body::Png`]): they can be written without a copy.
    /// `None` for the other kinds.
    pub fn static_chunk(&self, max: usize) -> Option<&'static [u8]> {
        let want = usize::try_from(self.remaining())
            .unwrap_or(usize::MAX)
            .min(max);
        match &self.body {
            Body::Static(s) => {
                let off = usize::try_from(self.offset).unwrap_or(usize::MAX);
                Some(s.get(off..).map_or(&[][..], |r| &r[..want.min(r.len())]))
            }
            Body::Filler(_) => Some(filler_at(self.offset, want)),
            Body::Png(_) => Some(png_at(self.offset, want)),
            Body::Empty | Body::Dynamic(_) | Body::File(..) => None,
        }
    }

    /// Marks `n` bytes (from [`BodyCursor::chunk`] or [`BodyCursor::static_chunk`]) as sent.
    pub fn advance(&mut self, n: usize) {
        self.offset = self.offset.saturating_add(n as u64);
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_png_body_is_a_whole_png_then_filler_of_exactly_its_length() {
        for len in [10u64, 67, 1_000, 200_000] {
            let mut c = BodyCursor::new(Body::Png(len));
            let mut out = Vec::new();
            while c.copy_into(&[], &mut out, 1_000).unwrap() > 0 {}
            assert_eq!(out.len() as u64, len);
            let head = (len as usize).min(PNG_HEAD.len());
            assert_eq!(&out[..head], &PNG_HEAD[..head]);
            if len > 67 {
                // The image ends with IEND and its CRC; the rest is the filler.
                assert_eq!(&out[59..67], b"IEND\xaeB`\x82");
                assert_eq!(
                    &out[67..131],
                    &PATTERN[3..]
                        .iter()
                        .chain(&PATTERN[..3])
                        .copied()
                        .collect::<Vec<_>>()[..]
                );
            }
        }
    }

    #[test]
    fn filler_is_periodic_and_contiguous() {
        let a = filler_at(0, 200);
        let b = filler_at(64, 200);
        assert_eq!(a, b);
        assert_eq!(filler_at(10, FILLER_CHUNK + 5).len(), FILLER_CHUNK);
        let mut c = BodyCursor::new(Body::Filler(100_000));
        let mut out = Vec::new();
        while c.remaining() > 0 {
            c.copy_into(&[], &mut out, 7_000).unwrap();
        }
        assert_eq!(out.len(), 100_000);
        for (i, b) in out.iter().enumerate() {
            assert_eq!(*b, PATTERN[i % PERIOD]);
        }
    }
}
