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

    /// Reads once from `r` into spare room (at least `chunk` bytes); `Ok(0)` is EOF.
    pub fn read_from(
        &mut self,
        r: &mut impl std::io::Read,
        chunk: usize,
    ) -> std::io::Result<usize> {
        let v = self.tail();
        let old = v.len();
        v.resize(old + chunk, 0);
        let res = r.read(&mut v[old..]);
        let n = *res.as_ref().unwrap_or(&0);
        v.truncate(old + n);
        res
    }

    /// Drops everything.
    pub fn clear(&mut self) {
        self.data.clear();
        self.start = 0;
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
        let mut r: &[u8] = b"abc";
        assert_eq!(b.read_from(&mut r, 16).unwrap(), 3);
        assert_eq!(b.data(), b"abc");
    }
}
