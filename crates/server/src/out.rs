//! A connection's output queue: owned bytes (response heads, frame headers, control frames)
//! with borrowed `'static` body slices spliced in between, so large built-in bodies (the
//! filler of `/data`, static pages) reach the socket without being copied by us. The queue
//! is written with one `write_vectored` (`writev`) per loop turn, or fed to rustls's writer
//! slice by slice (rustls encrypts from them directly).

use std::io::IoSlice;

/// Spliced slices shorter than this are copied instead: an iovec entry costs more than
/// copying a few hundred bytes.
const MIN_SPLICE: usize = 512;
/// Most owned (copied) bytes to queue before the protocol stops producing: copies into the
/// queue and the kernel's copy out of it stay in cache at this size (256 KiB measured ~10%
/// more CPU per copied 100 KB response).
pub const OWNED_HIGH_WATER: usize = 64 * 1024;
/// Most bytes in total (owned + spliced) to queue. Spliced bytes cost neither memory nor a
/// copy of ours, and larger `writev`s cost the kernel less per byte: 100 KB responses over
/// h2c took ~25% less server CPU with 1 MiB than with 64 KiB (512 KiB..4 MiB about equal).
pub const TOTAL_HIGH_WATER: usize = 1024 * 1024;
/// Most iovec entries per `writev` (Linux allows 1024; a loop turn rarely needs more than
/// a dozen).
pub const MAX_IOV: usize = 64;

/// See the module docs. Bytes go out in order: `buf[..at_0]`, `splice_0`, `buf[at_0..at_1]`,
/// `splice_1`, ..., `buf[at_n..]`.
#[derive(Debug, Default)]
pub struct Out {
    buf: Vec<u8>,
    /// `(offset in buf, slice)`, offsets non-decreasing.
    splices: Vec<(usize, &'static [u8])>,
    /// Bytes of `buf` already written.
    buf_pos: usize,
    /// Index of the first splice not completely written.
    next: usize,
    /// Bytes of `splices[next]` already written.
    splice_pos: usize,
    /// Unwritten spliced bytes.
    spliced: usize,
    /// Bytes written since the queue was created.
    written: u64,
}

impl Out {
    /// The owned-byte buffer, to append to (frame encoders, response heads). Appending is
    /// always at the end of the queue.
    pub fn bytes(&mut self) -> &mut Vec<u8> {
        &mut self.buf
    }

    /// Queues `data` after everything queued so far, without copying it (short slices are
    /// copied).
    pub fn splice(&mut self, data: &'static [u8]) {
        if data.len() < MIN_SPLICE {
            self.buf.extend_from_slice(data);
            return;
        }
        self.splices.push((self.buf.len(), data));
        self.spliced += data.len();
    }

    /// Bytes written (passed to [`Out::advance`]) since the queue was created.
    pub fn written(&self) -> u64 {
        self.written
    }

    /// Bytes queued and not yet written.
    pub fn len(&self) -> usize {
        self.buf.len() - self.buf_pos + self.spliced
    }

    /// Whether nothing is waiting to be written.
    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }

    /// Whether the protocol should stop producing output (and taking requests) until the
    /// queue is written: above [`OWNED_HIGH_WATER`] copied or [`TOTAL_HIGH_WATER`] total.
    pub fn is_full(&self) -> bool {
        self.buf.len() - self.buf_pos >= OWNED_HIGH_WATER || self.len() >= TOTAL_HIGH_WATER
    }

    /// How many more bytes may be spliced now.
    pub fn splice_room(&self) -> usize {
        if self.is_full() {
            return 0;
        }
        TOTAL_HIGH_WATER - self.len()
    }

    /// How many more bytes may be copied now.
    pub fn copy_room(&self) -> usize {
        if self.is_full() {
            return 0;
        }
        OWNED_HIGH_WATER - (self.buf.len() - self.buf_pos)
    }

    /// Fills `iov` with the unwritten data in order; returns how many entries were used.
    pub fn io_slices<'a>(&'a self, iov: &mut [IoSlice<'a>]) -> usize {
        let mut n = 0;
        let mut pos = self.buf_pos;
        let mut k = self.next;
        let mut first_splice = true;
        while n < iov.len() {
            let end = self.splices.get(k).map_or(self.buf.len(), |s| s.0);
            if pos < end {
                if let Some(b) = self.buf.get(pos..end) {
                    iov[n] = IoSlice::new(b);
                    n += 1;
                }
                pos = end;
                continue;
            }
            let Some(&(_, data)) = self.splices.get(k) else {
                break;
            };
            let skip = if first_splice { self.splice_pos } else { 0 };
            first_splice = false;
            if let Some(rest) = data.get(skip..).filter(|r| !r.is_empty()) {
                iov[n] = IoSlice::new(rest);
                n += 1;
            }
            k += 1;
        }
        n
    }

    /// Marks `n` bytes (from the front of [`Out::io_slices`]) as written; releases the
    /// storage once everything is written.
    pub fn advance(&mut self, mut n: usize) {
        self.written += n as u64;
        while n > 0 {
            let end = self.splices.get(self.next).map_or(self.buf.len(), |s| s.0);
            if self.buf_pos < end {
                let m = n.min(end - self.buf_pos);
                self.buf_pos += m;
                n -= m;
                continue;
            }
            let Some(&(_, data)) = self.splices.get(self.next) else {
                break;
            };
            let m = n.min(data.len() - self.splice_pos);
            self.splice_pos += m;
            self.spliced -= m;
            n -= m;
            if self.splice_pos == data.len() {
                self.next += 1;
                self.splice_pos = 0;
            }
        }
        if self.is_empty() {
            self.buf.clear();
            self.splices.clear();
            self.buf_pos = 0;
            self.next = 0;
            self.splice_pos = 0;
        }
    }

    /// Drops the written prefix when it is large (a slow reader), so the buffer does not
    /// grow without bound while the rest waits.
    pub fn compact(&mut self, threshold: usize) {
        if self.buf_pos < threshold {
            return;
        }
        let cut = self.buf_pos;
        self.buf.drain(..cut);
        self.splices.drain(..self.next);
        for s in &mut self.splices {
            s.0 -= cut;
        }
        self.buf_pos = 0;
        self.next = 0;
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    static BIG_A: [u8; 1000] = [b'a'; 1000];
    static BIG_B: [u8; 2000] = [b'b'; 2000];

    fn drain(out: &mut Out, step: usize) -> Vec<u8> {
        let mut got = Vec::new();
        while !out.is_empty() {
            let mut iov = [IoSlice::new(&[]); MAX_IOV];
            let k = out.io_slices(&mut iov);
            assert!(k > 0);
            let mut flat: Vec<u8> = iov[..k].iter().flat_map(|s| s.iter().copied()).collect();
            flat.truncate(step);
            got.extend_from_slice(&flat);
            out.advance(flat.len());
        }
        got
    }

    fn fill(out: &mut Out) -> Vec<u8> {
        let mut want = Vec::new();
        out.bytes().extend_from_slice(b"head1");
        want.extend_from_slice(b"head1");
        out.splice(&BIG_A);
        want.extend_from_slice(&BIG_A);
        out.splice(&BIG_B);
        want.extend_from_slice(&BIG_B);
        out.bytes().extend_from_slice(b"mid");
        want.extend_from_slice(b"mid");
        out.splice(&BIG_A[..10]); // short: copied
        want.extend_from_slice(&BIG_A[..10]);
        out.splice(&BIG_B[..600]);
        want.extend_from_slice(&BIG_B[..600]);
        want
    }

    #[test]
    fn order_is_kept_whatever_the_write_sizes() {
        for step in [1, 3, 5, 999, 1000, 1001, 4000, usize::MAX] {
            let mut out = Out::default();
            let want = fill(&mut out);
            assert_eq!(out.len(), want.len());
            assert_eq!(drain(&mut out, step), want, "step {step}");
            assert!(out.is_empty());
            // Reusable after draining.
            let want = fill(&mut out);
            assert_eq!(drain(&mut out, step), want, "step {step} (reuse)");
        }
    }

    #[test]
    fn compaction_keeps_the_rest() {
        let mut out = Out::default();
        let want = fill(&mut out);
        out.advance(1500);
        out.compact(0);
        out.bytes().extend_from_slice(b"tail");
        let mut rest = want[1500..].to_vec();
        rest.extend_from_slice(b"tail");
        assert_eq!(drain(&mut out, 7), rest);
    }
}
