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
}
