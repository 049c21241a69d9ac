//! A growable byte ring: the bytes of one connection-direction between read and write, in
//! stream order. Grows on demand up to a limit (so idle connections cost little) and shrinks back
//! when it empties after a burst. No allocation in the steady state.

/// First allocation of a ring.
const INITIAL: usize = 16 * 1024;
/// A ring larger than this is freed when it empties.
const SHRINK_ABOVE: usize = 256 * 1024;

/// A FIFO of bytes with contiguous read and write windows.
#[derive(Debug)]
pub(crate) struct Ring {
    buf: Vec<u8>,
    head: usize,
    len: usize,
    limit: usize,
}

impl Ring {
    /// An empty ring that will never hold more than `limit` bytes.
    pub(crate) fn new(limit: usize) -> Self {
        Ring {
            buf: Vec::new(),
            head: 0,
            len: 0,
            limit: limit.max(1),
        }
    }

    /// Bytes held.
    pub(crate) fn len(&self) -> usize {
        self.len
    }

    /// Bytes that may still be added before the limit.
    pub(crate) fn free(&self) -> usize {
        self.limit - self.len
    }

    /// A contiguous writable window of at most `max` bytes (empty when full or `max == 0`);
    /// follow with [`commit`](Self::commit).
    pub(crate) fn write_window(&mut self, max: usize) -> &mut [u8] {
        let max = max.min(self.free());
        if max == 0 {
            return &mut [];
        }
        if self.len == self.buf.len() {
            self.grow(self.len + max);
        }
        let cap = self.buf.len();
        let tail = (self.head + self.len) % cap;
        let contiguous = if tail >= self.head && self.len != cap {
            cap - tail
        } else {
            self.head - tail
        };
        let n = contiguous.min(max);
        &mut self.buf[tail..tail + n]
    }

    /// Records that `n` bytes of the last write window were filled.
    pub(crate) fn commit(&mut self, n: usize) {
        debug_assert!(self.len + n <= self.buf.len());
        self.len += n;
    }

    /// The first `max` held bytes as one or two slices.
    pub(crate) fn read_slices(&self, max: usize) -> (&[u8], &[u8]) {
        let n = max.min(self.len);
        if n == 0 {
            return (&[], &[]);
        }
        let cap = self.buf.len();
        let first = n.min(cap - self.head);
        (
            &self.buf[self.head..self.head + first],
            &self.buf[..n - first],
        )
    }

    /// Drops the first `n` held bytes.
    pub(crate) fn consume(&mut self, n: usize) {
        let n = n.min(self.len);
        self.len -= n;
        if self.len == 0 {
            self.head = 0;
            if self.buf.len() > SHRINK_ABOVE {
                self.buf = Vec::new();
            }
        } else {
            self.head = (self.head + n) % self.buf.len();
        }
    }

    /// Drops every held byte.
    pub(crate) fn clear(&mut self) {
        self.consume(self.len);
    }

    /// Reallocates to hold at least `want` bytes (doubling, capped at the limit), keeping the
    /// held bytes in order at the front.
    fn grow(&mut self, want: usize) {
        let cap = want
            .max(self.buf.len() * 2)
            .max(INITIAL)
            .min(self.limit)
            .max(self.len);
        if cap <= self.buf.len() {
            return;
        }
        let mut next = vec![0u8; cap];
        let (a, b) = self.read_slices(self.len);
        next[..a.len()].copy_from_slice(a);
        next[a.len()..a.len() + b.len()].copy_from_slice(b);
        self.buf = next;
        self.head = 0;
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn push(r: &mut Ring, data: &[u8]) -> usize {
        let mut done = 0;
        while done < data.len() {
            let w = r.write_window(data.len() - done);
            if w.is_empty() {
                break;
            }
            let n = w.len();
            w.copy_from_slice(&data[done..done + n]);
            r.commit(n);
            done += n;
        }
        done
    }

    fn pop(r: &mut Ring, n: usize) -> Vec<u8> {
        let (a, b) = r.read_slices(n);
        let mut v = a.to_vec();
        v.extend_from_slice(b);
        r.consume(v.len());
        v
    }

    #[test]
    fn fifo_across_wraps_and_growth() {
        let mut r = Ring::new(100_000);
        let mut expect = std::collections::VecDeque::new();
        let mut next = 0u8;
        for round in 0..2000usize {
            let n = (round * 37) % 3000;
            let data: Vec<u8> = (0..n)
                .map(|_| {
                    next = next.wrapping_add(1);
                    next
                })
                .collect();
            let pushed = push(&mut r, &data);
            expect.extend(&data[..pushed]);
            let out = pop(&mut r, (round * 53) % 3100);
            for b in out {
                assert_eq!(Some(b), expect.pop_front());
            }
            assert_eq!(r.len(), expect.len());
        }
    }

    #[test]
    fn limit_is_respected() {
        let mut r = Ring::new(1000);
        assert_eq!(push(&mut r, &[1; 5000]), 1000);
        assert_eq!(r.free(), 0);
        assert!(r.write_window(10).is_empty());
        assert_eq!(pop(&mut r, 400).len(), 400);
        assert_eq!(push(&mut r, &[2; 5000]), 400);
        let all = pop(&mut r, 5000);
        assert_eq!(all.len(), 1000);
        assert!(all[..600].iter().all(|&b| b == 1));
        assert!(all[600..].iter().all(|&b| b == 2));
    }

    #[test]
    fn shrinks_after_a_burst() {
        let mut r = Ring::new(1 << 20);
        push(&mut r, &vec![7; 600_000]);
        r.clear();
        assert_eq!(r.buf.len(), 0);
        assert_eq!(push(&mut r, &[1, 2, 3]), 3);
        assert_eq!(pop(&mut r, 10), vec![1, 2, 3]);
    }
}
