//! A byte queue: bytes are appended at the end and consumed from the front; the storage is
//! reused (no allocation once it has grown to the connection's working size).

/// Unconsumed bytes `data[start..]`.
#[derive(Debug, Default)]
pub struct Buf {
    data: Vec<u8>,
    start: usize,
}

impl Buf {
    /// The unconsumed bytes.
    pub fn data(&self) -> &[u8] {
        &self.data[self.start..]
    }

    /// Unconsumed byte count.
    pub fn len(&self) -> usize {
        self.data.len() - self.start
    }

    /// Whether nothing is queued.
    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }

    /// Marks `n` bytes consumed.
    pub fn consume(&mut self, n: usize) {
        self.start = (self.start + n).min(self.data.len());
        if self.start == self.data.len() {
            self.data.clear();
            self.start = 0;
        }
    }

    /// The storage to append to (compacted first when more than half is consumed).
    pub fn tail(&mut self) -> &mut Vec<u8> {
        if self.start > 0 && self.start >= self.data.len() / 2 {
            self.data.drain(..self.start);
            self.start = 0;
        }
        &mut self.data
    }

    /// Drops everything.
    pub fn clear(&mut self) {
        self.data.clear();
        self.start = 0;
    }
}

/// Input buffer: `buf[start..end]` is unread input; the storage stays initialised, so a read
/// does not clear memory first (only growing does).
#[derive(Debug, Default)]
pub struct InBuf {
    buf: Vec<u8>,
    start: usize,
    end: usize,
}

impl InBuf {
    /// The unread bytes.
    pub fn data(&self) -> &[u8] {
        &self.buf[self.start..self.end]
    }

    /// Unread byte count.
    pub fn len(&self) -> usize {
        self.end - self.start
    }

    /// Whether nothing is unread.
    pub fn is_empty(&self) -> bool {
        self.end == self.start
    }

    /// Marks `n` bytes read.
    pub fn consume(&mut self, n: usize) {
        self.start = (self.start + n).min(self.end);
        if self.start == self.end {
            self.start = 0;
            self.end = 0;
        }
    }

    /// Drops everything.
    pub fn clear(&mut self) {
        self.start = 0;
        self.end = 0;
    }

    /// Appends bytes (input that does not come from a socket).
    pub fn extend(&mut self, b: &[u8]) {
        if self.start > 0 && self.start == self.end {
            self.start = 0;
            self.end = 0;
        }
        self.buf.truncate(self.end);
        self.buf.extend_from_slice(b);
        self.end = self.buf.len();
    }

    /// Room left after the unread bytes (a read that left some did not fill the buffer).
    pub fn spare(&self) -> usize {
        self.buf.len() - self.end
    }

    /// Lends the storage out when nothing is unread (the buffer is left without any), so that
    /// one warm buffer can serve many connections in turn (see [`SparePool`]).
    pub fn take_storage(&mut self) -> Option<Vec<u8>> {
        if !self.is_empty() || self.buf.capacity() == 0 {
            return None;
        }
        self.start = 0;
        self.end = 0;
        Some(std::mem::take(&mut self.buf))
    }

    /// Whether the buffer has storage of its own (it may have lent it out).
    pub fn has_storage(&self) -> bool {
        self.buf.capacity() > 0
    }

    /// Gives an empty buffer without storage the storage `v` (its bytes are kept: they are
    /// initialised memory, overwritten by the next reads).
    pub fn set_storage(&mut self, v: Vec<u8>) {
        debug_assert!(self.is_empty() && !self.has_storage());
        self.start = 0;
        self.end = 0;
        self.buf = v;
    }

    /// Reads once from `r` into at least `chunk` bytes of room; `Ok(0)` is EOF.
    pub fn read_from(
        &mut self,
        r: &mut impl std::io::Read,
        chunk: usize,
    ) -> std::io::Result<usize> {
        if self.buf.len() - self.end < chunk && self.start > 0 {
            self.buf.copy_within(self.start..self.end, 0);
            self.end -= self.start;
            self.start = 0;
        }
        if self.buf.len() - self.end < chunk {
            self.buf.resize(self.end + chunk, 0);
        }
        let n = r.read(&mut self.buf[self.end..])?;
        self.end += n;
        Ok(n)
    }
}

/// Storage of input buffers that are empty, handed out last-in first-out: the buffer used
/// last is the one in the CPU's cache, so a worker whose connections take turns reads into
/// the same few warm buffers instead of one cold buffer per connection (the kernel's copy
/// into a cold buffer costs cache misses per line; with large responses and many
/// connections the per-connection buffers together are larger than the cache).
#[derive(Debug, Default)]
pub struct SparePool {
    free: Vec<Vec<u8>>,
}

impl SparePool {
    /// Most buffers kept; more are freed.
    const KEEP: usize = 4;

    /// Gives `b` storage (the most recently returned) if it has none.
    pub fn lend(&mut self, b: &mut InBuf) {
        if !b.has_storage() {
            if let Some(v) = self.free.pop() {
                b.set_storage(v);
            }
        }
    }

    /// Takes back the storage of `b` if it holds nothing unread.
    pub fn take_back(&mut self, b: &mut InBuf) {
        if let Some(v) = b.take_storage() {
            if self.free.len() < Self::KEEP {
                self.free.push(v);
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn queue() {
        let mut b = Buf::default();
        b.tail().extend_from_slice(b"hello");
        b.consume(2);
        assert_eq!(b.data(), b"llo");
        b.tail().extend_from_slice(b"!");
        assert_eq!(b.data(), b"llo!");
        b.consume(10);
        assert!(b.is_empty());
    }

    #[test]
    fn input() {
        let mut b = InBuf::default();
        let mut r: &[u8] = b"hello world";
        assert_eq!(b.read_from(&mut r, 4).unwrap(), 4);
        assert_eq!(b.read_from(&mut r, 16).unwrap(), 7);
        b.consume(6);
        assert_eq!(b.data(), b"world");
        let mut r: &[u8] = b"!!";
        b.read_from(&mut r, 16).unwrap();
        assert_eq!(b.data(), b"world!!");
        b.consume(7);
        assert!(b.is_empty());
        assert_eq!(b.len(), 0);
    }

    #[test]
    fn spare_pool_lends_the_last_returned_storage() {
        let mut pool = SparePool::default();
        let mut a = InBuf::default();
        let mut r: &[u8] = b"abc";
        a.read_from(&mut r, 64).unwrap();
        // Not empty: nothing is taken.
        pool.take_back(&mut a);
        assert!(a.has_storage());
        assert_eq!(a.data(), b"abc");
        a.consume(3);
        pool.take_back(&mut a);
        assert!(!a.has_storage());
        assert!(a.is_empty());
        let mut b = InBuf::default();
        pool.lend(&mut b);
        assert!(b.has_storage());
        assert!(b.is_empty());
        let mut r: &[u8] = b"xy";
        assert_eq!(b.read_from(&mut r, 16).unwrap(), 2);
        assert_eq!(b.data(), b"xy");
        // Nothing left to lend: `a` reads into storage of its own.
        pool.lend(&mut a);
        assert!(!a.has_storage());
        let mut r: &[u8] = b"z";
        a.read_from(&mut r, 16).unwrap();
        assert_eq!(a.data(), b"z");
    }
}
