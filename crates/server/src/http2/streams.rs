//! Per-stream state of the HTTP/2 half: the reusable stream slots ([`Stream`]), their packed
//! request fields ([`Packed`]), and [`App`], which receives the connection's events
//! (`h2lab_wire::h2::Events`) and keeps the work lists the connection half acts on.

use std::collections::HashMap;
use std::hash::{BuildHasherDefault, Hasher};

use h2lab_wire::frame::{ErrorCode, StreamId};
use h2lab_wire::h2::{Events, HeadersDone, HeadersKind};
use h2lab_wire::priority::{self, ExtPriority};

use crate::body::BodyCursor;
use crate::endpoints::{HeaderSource, Response};
use crate::log::warn;

/// Where a stream is in its life.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(super) enum StreamPhase {
    /// Receiving the request (fields done, body not yet ended).
    Receiving,
    /// Request complete; waiting for a `/delay` timer.
    Delayed,
    /// Response head sent; body being sent.
    Sending,
}

/// Per-stream state (a reusable slot).
#[derive(Debug)]
pub(super) struct Stream {
    pub(super) id: StreamId,
    pub(super) phase: StreamPhase,
    /// Request fields, packed as `[name_len u16][value_len u32][name][value]`.
    pub(super) fields: Vec<u8>,
    /// Whether the field block completed (a reset may arrive before).
    pub(super) fields_done: bool,
    /// Keep regular fields too (only `/info` shows them; pseudo-header fields, which come
    /// first, are always kept).
    pub(super) keep_all: bool,
    pub(super) body_len: u64,
    pub(super) body_too_large: bool,
    /// The response waiting for its timer.
    pub(super) pending: Option<Response>,
    pub(super) dynamic: Vec<u8>,
    pub(super) cursor: Option<BodyCursor>,
    /// RFC 9218 priority (header, then PRIORITY_UPDATE).
    pub(super) prio: ExtPriority,
    /// A PRIORITY_UPDATE set `prio`: it overrides the request's header.
    pub(super) prio_updated: bool,
}

impl Stream {
    pub(super) fn new() -> Self {
        Stream {
            id: StreamId::new(0),
            phase: StreamPhase::Receiving,
            fields: Vec::new(),
            fields_done: false,
            keep_all: false,
            body_len: 0,
            body_too_large: false,
            pending: None,
            dynamic: Vec::new(),
            cursor: None,
            prio: ExtPriority::DEFAULT,
            prio_updated: false,
        }
    }

    pub(super) fn reset_for(&mut self, id: StreamId) {
        self.id = id;
        self.phase = StreamPhase::Receiving;
        self.fields.clear();
        self.fields_done = false;
        self.keep_all = false;
        self.body_len = 0;
        self.body_too_large = false;
        self.pending = None;
        self.dynamic.clear();
        self.cursor = None;
        self.prio = ExtPriority::DEFAULT;
        self.prio_updated = false;
    }
}

/// Packed fields as a [`HeaderSource`].
pub(super) struct Packed<'a>(pub(super) &'a [u8]);

impl Packed<'_> {
    pub(super) fn iter(&self) -> impl Iterator<Item = (&[u8], &[u8])> {
        let mut rest = self.0;
        std::iter::from_fn(move || {
            let (head, tail) = rest.split_at_checked(6)?;
            let nl = u16::from_be_bytes([head[0], head[1]]) as usize;
            let vl = u32::from_be_bytes([head[2], head[3], head[4], head[5]]) as usize;
            let (name, tail) = tail.split_at_checked(nl)?;
            let (value, tail) = tail.split_at_checked(vl)?;
            rest = tail;
            Some((name, value))
        })
    }

    pub(super) fn get(&self, name: &[u8]) -> Option<&[u8]> {
        self.iter().find(|(n, _)| *n == name).map(|(_, v)| v)
    }
}

impl HeaderSource for Packed<'_> {
    fn for_each(&self, f: &mut dyn FnMut(&[u8], &[u8])) {
        for (n, v) in self.iter() {
            f(n, v);
        }
    }
}

/// Hasher for stream ids: they are distinct small integers chosen by the peer, so a
/// multiplicative (Fibonacci) hash is enough and much cheaper than SipHash. A hostile
/// peer can only pick odd ids in increasing order, which this spreads well.
#[derive(Default)]
pub(super) struct IdHasher(u64);

impl Hasher for IdHasher {
    fn finish(&self) -> u64 {
        self.0
    }
    fn write(&mut self, bytes: &[u8]) {
        for &b in bytes {
            self.0 = (self.0 << 8 | u64::from(b)).wrapping_mul(0x9e37_79b9_7f4a_7c15);
        }
    }
    fn write_u32(&mut self, v: u32) {
        self.0 = u64::from(v).wrapping_mul(0x9e37_79b9_7f4a_7c15);
    }
}

type IdMap = HashMap<u32, usize, BuildHasherDefault<IdHasher>>;

/// The application side of the connection: stream slots and work lists.
#[derive(Default)]
pub(super) struct App {
    pub(super) slots: Vec<Stream>,
    pub(super) free: Vec<usize>,
    pub(super) by_id: IdMap,
    /// The stream of the last `header` call and its slot (fields arrive in runs).
    pub(super) current: Option<(u32, usize)>,
    /// Streams whose request just completed (to route after `recv` returns).
    pub(super) completed: Vec<u32>,
    /// Streams with a response body to send, in round-robin order.
    pub(super) sending: Vec<u32>,
    /// Streams to answer with 413 and reset (request body over the limit).
    pub(super) too_large: Vec<u32>,
    /// Highest stream id that opened a slot: a field block on a lower id without a slot
    /// is a trailer section of a stream already answered (ignored).
    pub(super) last_opened: u32,
    pub(super) max_body: u64,
    /// PRIORITY_UPDATEs for streams not opened yet (bounded by the connection: RFC 9218
    /// §7.1 limits them to SETTINGS_MAX_CONCURRENT_STREAMS), applied when they open.
    pub(super) early_prio: Vec<(u32, ExtPriority)>,
    /// A violation was logged for this connection.
    pub(super) logged: bool,
    pub(super) peer: Option<std::net::SocketAddr>,
}

impl App {
    pub(super) fn slot(&mut self, id: StreamId) -> Option<&mut Stream> {
        let i = *self.by_id.get(&id.get())?;
        self.slots.get_mut(i)
    }

    /// The slot of stream `id`, created (recycled) if needed.
    pub(super) fn open(&mut self, id: StreamId) -> usize {
        match self.by_id.get(&id.get()) {
            Some(&i) => i,
            None => {
                let i = self.free.pop().unwrap_or_else(|| {
                    self.slots.push(Stream::new());
                    self.slots.len() - 1
                });
                self.by_id.insert(id.get(), i);
                self.slots[i].reset_for(id);
                if let Some(k) = self.early_prio.iter().position(|&(s, _)| s == id.get()) {
                    let (_, p) = self.early_prio.swap_remove(k);
                    self.slots[i].prio = p;
                    self.slots[i].prio_updated = true;
                }
                // Updates for streams skipped by the client will never apply.
                self.early_prio.retain(|&(s, _)| s > id.get());
                i
            }
        }
    }

    pub(super) fn close(&mut self, id: StreamId) {
        if self.current.is_some_and(|(c, _)| c == id.get()) {
            self.current = None;
        }
        if let Some(i) = self.by_id.remove(&id.get()) {
            if let Some(s) = self.slots.get_mut(i) {
                // Keep the buffers' capacity, drop the body source (may hold a file).
                s.cursor = None;
                s.pending = None;
            }
            self.free.push(i);
        }
        self.sending.retain(|&s| s != id.get());
    }
}

impl Events for App {
    fn header(&mut self, stream: StreamId, name: &[u8], value: &[u8]) {
        let slot = match self.current {
            Some((id, slot)) if id == stream.get() => slot,
            _ => {
                if !self.by_id.contains_key(&stream.get()) && stream.get() <= self.last_opened {
                    return;
                }
                self.last_opened = self.last_opened.max(stream.get());
                let slot = self.open(stream);
                self.current = Some((stream.get(), slot));
                slot
            }
        };
        let Some(s) = self.slots.get_mut(slot) else {
            return;
        };
        if s.fields_done {
            // Trailers: not needed by any endpoint.
            return;
        }
        if name == b"priority" && !s.prio_updated {
            // RFC 9218 §5: the Priority header field; several lines combine as one
            // Dictionary, where the last value of a parameter wins (parsed line by line
            // here, the same result for well-formed lines).
            if let Ok(p) = priority::parse(value) {
                s.prio = p;
            }
        }
        if name.first() == Some(&b':') {
            if name == b":path" {
                let (path, _) = crate::endpoints::split_target(value);
                s.keep_all = path == b"/info";
            }
        } else if !s.keep_all {
            return;
        }
        let nl = u16::try_from(name.len()).unwrap_or(u16::MAX);
        let vl = u32::try_from(value.len()).unwrap_or(u32::MAX);
        s.fields.extend_from_slice(&nl.to_be_bytes());
        s.fields.extend_from_slice(&vl.to_be_bytes());
        s.fields.extend_from_slice(&name[..nl as usize]);
        s.fields.extend_from_slice(&value[..vl as usize]);
    }

    fn headers_done(&mut self, stream: StreamId, done: HeadersDone) {
        let max_body = self.max_body;
        let Some(s) = self.slot(stream) else {
            return;
        };
        match done.kind {
            HeadersKind::Request => {
                s.fields_done = true;
                if done.content_length.is_some_and(|n| n > max_body) {
                    s.body_too_large = true;
                }
                if s.body_too_large {
                    self.too_large.push(stream.get());
                } else if done.end_stream {
                    self.completed.push(stream.get());
                }
            }
            HeadersKind::Trailers => {
                if !s.body_too_large {
                    self.completed.push(stream.get());
                }
            }
            // Not sent to a server.
            HeadersKind::Informational | HeadersKind::Response => {}
        }
    }

    fn data(&mut self, stream: StreamId, data: &[u8], end_stream: bool) {
        let max_body = self.max_body;
        let Some(s) = self.slot(stream) else {
            return;
        };
        if s.phase != StreamPhase::Receiving || s.body_too_large {
            return;
        }
        s.body_len = s.body_len.saturating_add(data.len() as u64);
        if s.body_len > max_body {
            s.body_too_large = true;
            self.too_large.push(stream.get());
        } else if end_stream {
            self.completed.push(stream.get());
        }
    }

    fn priority_update(&mut self, stream: StreamId, field_value: &[u8]) {
        // RFC 9218 §7: "Omitting a priority parameter is a signal to use its default
        // value"; an unparsable value gets the defaults (the RFC's MAY-error not taken).
        let p = priority::parse_or_default(field_value);
        if let Some(s) = self.slot(stream) {
            s.prio = p;
            s.prio_updated = true;
            return;
        }
        // RFC 9218 §7: "Servers SHOULD buffer the most recently received PRIORITY_UPDATE
        // frame and apply it once the referenced stream is opened."
        match self.early_prio.iter_mut().find(|(s, _)| *s == stream.get()) {
            Some(e) => e.1 = p,
            None => self.early_prio.push((stream.get(), p)),
        }
    }

    fn reset(&mut self, stream: StreamId, code: ErrorCode, by_peer: bool) {
        if !by_peer && !self.logged {
            self.logged = true;
            if let Some(peer) = self.peer {
                warn!(
                    "{peer} (HTTP/2): stream {} reset with {code:?}",
                    stream.get()
                );
            }
        }
        self.close(stream);
        self.completed.retain(|&s| s != stream.get());
        self.too_large.retain(|&s| s != stream.get());
    }
}
