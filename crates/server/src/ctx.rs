//! The per-connection context types the connection, its protocol halves and the worker
//! loop share: the worker's read-only [`Shared`] state, the loop-turn [`Ctx`] (clock, date,
//! timers), and what a protocol half sees of its connection ([`Io`] over an [`InBuf`] and the
//! output queue) and answers ([`Next`]). A leaf: it depends on no module that uses it.

use std::cmp::Reverse;
use std::collections::BinaryHeap;
use std::net::SocketAddr;
use std::sync::Arc;
use std::time::{Duration, Instant};

use crate::config::ServerConfig;
use crate::date::DateCache;
use crate::endpoints::Router;
use crate::out::Out;
use crate::shutdown::Shutdown;

/// Read granularity.
pub(crate) const READ_CHUNK: usize = 16 * 1024;

/// Read-only state shared by all workers.
pub struct Shared {
    /// The configuration.
    pub config: ServerConfig,
    /// Endpoint routing.
    pub router: Router,
    /// rustls configuration for TLS listeners.
    pub tls: Option<Arc<rustls::ServerConfig>>,
    /// Stop handle.
    pub shutdown: Shutdown,
    /// `alt-svc` value for responses on TLS connections (`h3=":PORT"`) when HTTP/3 is on.
    pub alt_svc: Option<Vec<u8>>,
}

/// What protocol code may touch besides its connection.
pub struct Ctx<'a> {
    /// Shared state.
    pub shared: &'a Shared,
    /// Loop-turn time.
    pub now: Instant,
    /// Cached `date` value.
    pub date: &'a DateCache,
    pub(crate) timers: &'a mut Timers,
    pub(crate) slot: usize,
    pub(crate) gen: u32,
}

impl Ctx<'_> {
    /// Arms a timer `delay` from now for the current connection;
    /// the connection's `on_timer` gets `tag` back. "Now" is the clock read here, not
    /// the loop turn's [`Ctx::now`]: a request read late in a busy turn may
    /// have arrived after that, and its `/delay` must not be cut short.
    pub fn arm(&mut self, delay: Duration, tag: u32) {
        self.timers
            .push(Instant::now() + delay, self.slot, self.gen, tag);
    }
}

/// A timer entry: (deadline, sequence, connection slot, generation, tag).
type TimerEntry = (Instant, u64, usize, u32, u32);

/// A min-heap of timers.
#[derive(Default)]
pub struct Timers {
    heap: BinaryHeap<Reverse<TimerEntry>>,
    seq: u64,
}

impl Timers {
    pub(crate) fn push(&mut self, at: Instant, slot: usize, gen: u32, tag: u32) {
        self.seq += 1;
        self.heap.push(Reverse((at, self.seq, slot, gen, tag)));
    }

    pub(crate) fn next_deadline(&self) -> Option<Instant> {
        self.heap.peek().map(|Reverse(t)| t.0)
    }

    pub(crate) fn pop_expired(&mut self, now: Instant) -> Option<(usize, u32, u32)> {
        match self.heap.peek() {
            Some(Reverse(t)) if t.0 <= now => {
                let Reverse((_, _, slot, gen, tag)) = self.heap.pop()?;
                Some((slot, gen, tag))
            }
            _ => None,
        }
    }
}

/// Input buffer: initialised bytes `buf[start..end]` are unread input.
#[derive(Debug, Default)]
pub struct InBuf {
    buf: Vec<u8>,
    start: usize,
    end: usize,
    max: usize,
    /// Bytes consumed so far (input progress, for the stalled-input check).
    pub(crate) consumed: u64,
}

impl InBuf {
    /// An empty buffer that never grows beyond `max` bytes.
    pub fn new(max: usize) -> Self {
        InBuf {
            buf: Vec::new(),
            start: 0,
            end: 0,
            max: max.max(READ_CHUNK),
            consumed: 0,
        }
    }

    /// Unread input.
    pub fn data(&self) -> &[u8] {
        &self.buf[self.start..self.end]
    }

    /// Marks `n` bytes as read.
    pub fn consume(&mut self, n: usize) {
        self.consumed += n.min(self.len()) as u64;
        self.start = (self.start + n).min(self.end);
        if self.start == self.end {
            self.start = 0;
            self.end = 0;
        }
    }

    /// Unread byte count.
    pub fn len(&self) -> usize {
        self.end - self.start
    }

    /// Whether there is no unread input.
    pub fn is_empty(&self) -> bool {
        self.end == self.start
    }

    /// Whether no more input fits (the protocol must consume first).
    pub fn is_full(&self) -> bool {
        self.len() >= self.max
    }

    /// Free space to read into (compacting or growing as needed); empty when full.
    pub fn spare(&mut self) -> &mut [u8] {
        if self.buf.len() - self.end < READ_CHUNK / 2 && self.start > 0 {
            self.buf.copy_within(self.start..self.end, 0);
            self.end -= self.start;
            self.start = 0;
        }
        if self.buf.len() - self.end < READ_CHUNK / 2 && self.buf.len() < self.max {
            let new = (self.buf.len() * 2).clamp(READ_CHUNK, self.max);
            self.buf.resize(new, 0);
        }
        let end = self.end;
        &mut self.buf[end..]
    }

    /// Marks `n` bytes of [`InBuf::spare`] as filled.
    pub fn commit(&mut self, n: usize) {
        self.end = (self.end + n).min(self.buf.len());
    }
}

/// What the protocol layer sees of the connection.
pub struct Io<'a> {
    /// Unread input.
    pub inbuf: &'a mut InBuf,
    /// Output queue (written at the end of the loop turn).
    pub out: &'a mut Out,
    /// The peer closed its sending side (no more input will come).
    pub read_eof: bool,
    /// The connection is TLS.
    pub tls: bool,
    /// The input being processed is TLS 1.3 early data (`--0rtt`, handshake not complete):
    /// requests parsed now may be replays (RFC 8470).
    pub early: bool,
    /// Peer address (for logs).
    pub peer: SocketAddr,
}

/// What the protocol asks the connection to do after processing.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Next {
    /// Keep going.
    Continue,
    /// Send what is queued, then close (lingering).
    CloseAfterFlush,
    /// Drop the connection now.
    CloseNow,
}
