//! Per-stream state and the allocation-free stream table.
//!
//! Streams live in a slab (`Vec<Stream>` plus a free list) whose slots are
//! reused, and a `Vec<(id, slot)>` index kept sorted by stream id. Stream ids
//! of one connection only grow (RFC 9113 §5.1.1), so insertion is a push at
//! the end and lookup a binary search. Once the tables have grown to the
//! concurrency limit, opening and closing streams allocates nothing.

use crate::frame::{RecvWindow, StreamId, Window};

/// Flag bits of [`Stream::flags`].
pub(crate) mod flag {
    /// The peer sent END_STREAM (or we stopped receiving).
    pub const RECV_CLOSED: u8 = 1 << 0;
    /// We sent END_STREAM.
    pub const SEND_CLOSED: u8 = 1 << 1;
    /// We opened the stream.
    pub const LOCAL: u8 = 1 << 2;
    /// The request (server) or final response (client) header section has
    /// been received; a further HEADERS is a trailer section.
    pub const GOT_HEADERS: u8 = 1 << 3;
    /// The message we receive has no content whatever content-length says
    /// (response to HEAD, 204, 304): skip the content-length check.
    pub const NO_BODY: u8 = 1 << 4;
}

/// State of one open stream (RFC 9113 §5.1: "open", "half-closed (local)"
/// or "half-closed (remote)"; idle and closed streams are not stored).
#[derive(Clone, Copy, Debug)]
pub(crate) struct Stream {
    /// Stream identifier.
    pub id: StreamId,
    /// Bytes we may still send (RFC 9113 §6.9.1; may be negative after a
    /// SETTINGS_INITIAL_WINDOW_SIZE decrease, §6.9.2).
    pub send: Window,
    /// Bytes the peer may still send, and what we owe it.
    pub recv: RecvWindow,
    /// Declared `content-length` of the message we receive.
    pub content_length: Option<u64>,
    /// DATA payload received so far (padding excluded).
    pub received: u64,
    /// See [`flag`].
    pub flags: u8,
}

impl Stream {
    pub(crate) fn new(id: StreamId, send: Window, recv: RecvWindow, flags: u8) -> Self {
        Stream {
            id,
            send,
            recv,
            content_length: None,
            received: 0,
            flags,
        }
    }

    #[inline]
    pub(crate) fn has(&self, f: u8) -> bool {
        self.flags & f != 0
    }

    #[inline]
    pub(crate) fn set(&mut self, f: u8) {
        self.flags |= f;
    }

    /// Both directions closed: the stream can be dropped.
    #[inline]
    pub(crate) fn is_closed(&self) -> bool {
        self.has(flag::RECV_CLOSED) && self.has(flag::SEND_CLOSED)
    }
}

/// The table of open streams.
#[derive(Debug, Default)]
pub(crate) struct Store {
    slab: Vec<Stream>,
    free: Vec<u32>,
    index: Vec<(u32, u32)>,
    local_active: usize,
    remote_active: usize,
}

impl Store {
    /// Number of open streams we initiated.
    #[inline]
    pub(crate) fn local_active(&self) -> usize {
        self.local_active
    }

    /// Number of open streams the peer initiated.
    #[inline]
    pub(crate) fn remote_active(&self) -> usize {
        self.remote_active
    }

    /// Number of open streams.
    #[inline]
    pub(crate) fn len(&self) -> usize {
        self.index.len()
    }

    fn position(&self, id: StreamId) -> Result<usize, usize> {
        let id = id.get();
        // Fast path: the newest stream is the most frequently addressed one.
        if let Some(&(last, _)) = self.index.last() {
            if last == id {
                return Ok(self.index.len() - 1);
            }
        }
        self.index.binary_search_by_key(&id, |&(i, _)| i)
    }

    /// The open stream `id`.
    pub(crate) fn get_mut(&mut self, id: StreamId) -> Option<&mut Stream> {
        let pos = self.position(id).ok()?;
        let &(_, slot) = self.index.get(pos)?;
        self.slab.get_mut(slot as usize)
    }

    /// The open stream `id`.
    pub(crate) fn get(&self, id: StreamId) -> Option<&Stream> {
        let pos = self.position(id).ok()?;
        let &(_, slot) = self.index.get(pos)?;
        self.slab.get(slot as usize)
    }

    /// Add a stream (its id must not be present).
    pub(crate) fn insert(&mut self, stream: Stream) {
        let slot = match self.free.pop() {
            Some(slot) => {
                if let Some(s) = self.slab.get_mut(slot as usize) {
                    *s = stream;
                }
                slot
            }
            None => {
                self.slab.push(stream);
                u32::try_from(self.slab.len() - 1).unwrap_or(u32::MAX)
            }
        };
        let id = stream.id.get();
        match self.index.last() {
            Some(&(last, _)) if last > id => {
                let pos = self.index.partition_point(|&(i, _)| i < id);
                self.index.insert(pos, (id, slot));
            }
            _ => self.index.push((id, slot)),
        }
        if stream.has(flag::LOCAL) {
            self.local_active += 1;
        } else {
            self.remote_active += 1;
        }
    }

    /// Remove stream `id`, returning its last state.
    pub(crate) fn remove(&mut self, id: StreamId) -> Option<Stream> {
        let pos = self.position(id).ok()?;
        let (_, slot) = self.index.remove(pos);
        self.free.push(slot);
        let s = *self.slab.get(slot as usize)?;
        if s.has(flag::LOCAL) {
            self.local_active = self.local_active.saturating_sub(1);
        } else {
            self.remote_active = self.remote_active.saturating_sub(1);
        }
        Some(s)
    }

    /// Apply `f` to every open stream, in id order.
    pub(crate) fn for_each_mut(&mut self, mut f: impl FnMut(&mut Stream)) {
        for &(_, slot) in &self.index {
            if let Some(s) = self.slab.get_mut(slot as usize) {
                f(s);
            }
        }
    }

    /// The id of the `n`-th open stream in id order (for iteration while
    /// mutating other state).
    pub(crate) fn id_at(&self, n: usize) -> Option<StreamId> {
        self.index.get(n).map(|&(id, _)| StreamId::new(id))
    }
}

/// How a remembered stream was closed.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum Closed {
    /// We sent RST_STREAM: frames still in flight from the peer are ignored.
    ByUs,
    /// Closed normally or reset by the peer.
    Normally,
}

/// Recently closed stream ids, in two fixed-size rings so that the many
/// normal closes of a busy connection never push out the streams we reset
/// (whose late frames must be ignored, not answered with errors).
#[derive(Debug)]
pub(crate) struct RecentlyClosed {
    by_us: Ring,
    normally: Ring,
}

impl RecentlyClosed {
    pub(crate) fn new(capacity: usize) -> Self {
        RecentlyClosed {
            by_us: Ring::new(capacity),
            normally: Ring::new(capacity),
        }
    }

    /// Remember `id` (forgetting the oldest entry of its ring when full).
    pub(crate) fn push(&mut self, id: StreamId, how: Closed) {
        match how {
            Closed::ByUs => self.by_us.push(id.get()),
            Closed::Normally => self.normally.push(id.get()),
        }
    }

    /// How `id` was closed, if it is remembered.
    pub(crate) fn find(&self, id: StreamId) -> Option<Closed> {
        if self.by_us.contains(id.get()) {
            Some(Closed::ByUs)
        } else if self.normally.contains(id.get()) {
            Some(Closed::Normally)
        } else {
            None
        }
    }
}

#[derive(Debug)]
struct Ring {
    ids: Vec<u32>,
    cap: usize,
    next: usize,
}

impl Ring {
    fn new(cap: usize) -> Self {
        Ring {
            ids: Vec::with_capacity(cap),
            cap,
            next: 0,
        }
    }

    fn push(&mut self, id: u32) {
        if self.cap == 0 {
            return;
        }
        if self.ids.len() < self.cap {
            self.ids.push(id);
        } else if let Some(slot) = self.ids.get_mut(self.next) {
            *slot = id;
        }
        self.next = (self.next + 1) % self.cap;
    }

    fn contains(&self, id: u32) -> bool {
        self.ids.contains(&id)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn s(id: u32, local: bool) -> Stream {
        Stream::new(
            StreamId::new(id),
            Window::new(0),
            RecvWindow::new(0, 0),
            if local { flag::LOCAL } else { 0 },
        )
    }

    #[test]
    fn insert_lookup_remove_reuse() {
        let mut st = Store::default();
        for id in [1, 3, 5, 7] {
            st.insert(s(id, true));
        }
        assert_eq!(st.len(), 4);
        assert_eq!(st.local_active(), 4);
        assert!(st.get(StreamId::new(5)).is_some());
        assert!(st.get(StreamId::new(4)).is_none());
        assert_eq!(st.remove(StreamId::new(3)).map(|x| x.id.get()), Some(3));
        assert!(st.remove(StreamId::new(3)).is_none());
        assert_eq!(st.local_active(), 3);
        let cap = st.slab.capacity();
        st.insert(s(9, false));
        assert_eq!(st.slab.len(), 4, "slot reused");
        assert_eq!(st.slab.capacity(), cap);
        assert_eq!(st.remote_active(), 1);
        // Out-of-order insert stays sorted.
        st.insert(s(2, false));
        let ids: Vec<u32> = (0..st.len())
            .filter_map(|n| st.id_at(n))
            .map(|i| i.get())
            .collect();
        assert_eq!(ids, vec![1, 2, 5, 7, 9]);
        st.get_mut(StreamId::new(7)).unwrap().set(flag::RECV_CLOSED);
        assert!(st.get(StreamId::new(7)).unwrap().has(flag::RECV_CLOSED));
        let mut n = 0;
        st.for_each_mut(|x| {
            x.received += 1;
            n += 1
        });
        assert_eq!(n, 5);
    }

    #[test]
    fn recently_closed_ring() {
        let mut r = RecentlyClosed::new(2);
        r.push(StreamId::new(1), Closed::ByUs);
        r.push(StreamId::new(3), Closed::Normally);
        assert_eq!(r.find(StreamId::new(1)), Some(Closed::ByUs));
        assert_eq!(r.find(StreamId::new(3)), Some(Closed::Normally));
        // Normal closes do not evict resets.
        for id in [5, 7, 9] {
            r.push(StreamId::new(id), Closed::Normally);
        }
        assert_eq!(r.find(StreamId::new(1)), Some(Closed::ByUs));
        assert_eq!(r.find(StreamId::new(3)), None);
        assert_eq!(r.find(StreamId::new(9)), Some(Closed::Normally));
        r.push(StreamId::new(11), Closed::ByUs);
        r.push(StreamId::new(13), Closed::ByUs);
        assert_eq!(r.find(StreamId::new(1)), None);
        let mut z = RecentlyClosed::new(0);
        z.push(StreamId::new(1), Closed::ByUs);
        assert_eq!(z.find(StreamId::new(1)), None);
    }
}
