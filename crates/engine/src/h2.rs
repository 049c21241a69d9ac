//! HTTP/2 client session on the sans-IO [`h2lab_wire::h2::Connection`]
//! (`h2lab_wire::h2`) with a pre-encoded [`RequestTemplate`] per connection.
//!
//! The connection does the protocol work (SETTINGS/PING ACKs, receive
//! window updates, peer SETTINGS, stream states, GOAWAY); this file maps
//! streams to the worker's slots and turns connection events into
//! [`SessionEvents`]. Push is refused by advertising SETTINGS_ENABLE_PUSH = 0
//! (RFC 9113 §8.4) unless [`H2Settings::enable_push`]; accepted pushes are reported
//! with the `push_*` events.

use std::sync::Arc;

use h2lab_wire::h2::{
    self as wh2, Connection, ErrorCode, HeadersDone, HeadersKind, Limits, LocalSettings, Role,
    SendError, StreamId,
};
use h2lab_wire::hpack::RequestTemplate;

use crate::request::Prepared;
use crate::session::{Session, SessionError, SessionEvents, SubmitError};

/// HTTP/2 settings chosen by the user (`-w`, `-W`, header table sizes).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct H2Settings {
    /// Stream receive window bits (`-w`): SETTINGS_INITIAL_WINDOW_SIZE = 2^w - 1.
    pub window_bits: u8,
    /// Connection receive window bits (`-W`).
    pub connection_window_bits: u8,
    /// SETTINGS_HEADER_TABLE_SIZE we advertise (decoder side).
    pub header_table_size: u32,
    /// Largest dynamic table our encoder uses.
    pub encoder_header_table_size: u32,
    /// SETTINGS_MAX_FRAME_SIZE we advertise (`-f`; 16384 by default).
    pub max_frame_size: u32,
    /// Accept server push (SETTINGS_ENABLE_PUSH = 1): pushed responses are reported
    /// through the `push_*` methods of [`SessionEvents`]. Off (refused, as browsers do)
    /// unless the page fetcher is told `--push accept`.
    pub enable_push: bool,
}

impl H2Settings {
    fn local(&self) -> LocalSettings {
        let win = |bits: u8| (1u32 << bits.min(31)).saturating_sub(1);
        LocalSettings {
            header_table_size: self.header_table_size,
            initial_window_size: win(self.window_bits),
            connection_window: win(self.connection_window_bits),
            encoder_table_size: self.encoder_header_table_size,
            max_frame_size: self.max_frame_size,
            enable_push: self.enable_push,
            ..LocalSettings::client()
        }
    }
}

/// Stream id → slot, open addressing with linear probing (capacity a power
/// of two ≥ 2 × max streams; allocated once per connection).
#[derive(Debug)]
struct StreamMap {
    /// `(stream id, slot)`; id 0 = empty.
    table: Box<[(u32, u32)]>,
    mask: usize,
    len: usize,
}

impl StreamMap {
    fn new(max: u32) -> StreamMap {
        let cap = (max as usize).saturating_mul(2).max(8).next_power_of_two();
        StreamMap {
            table: vec![(0, 0); cap].into_boxed_slice(),
            mask: cap - 1,
            len: 0,
        }
    }

    #[inline]
    fn home(&self, id: u32) -> usize {
        // Client stream ids are odd and sequential: (id >> 1) spreads them.
        (id as usize >> 1) & self.mask
    }

    fn insert(&mut self, id: u32, slot: u32) -> bool {
        if self.len + 1 > self.table.len() / 2 {
            return false;
        }
        let mut i = self.home(id);
        loop {
            let Some(e) = self.table.get_mut(i) else {
                return false;
            };
            if e.0 == 0 || e.0 == id {
                if e.0 == 0 {
                    self.len += 1;
                }
                *e = (id, slot);
                return true;
            }
            i = (i + 1) & self.mask;
        }
    }

    fn get(&self, id: u32) -> Option<u32> {
        let mut i = self.home(id);
        loop {
            match self.table.get(i) {
                Some(&(0, _)) | None => return None,
                Some(&(k, v)) if k == id => return Some(v),
                _ => i = (i + 1) & self.mask,
            }
        }
    }

    fn remove(&mut self, id: u32) -> Option<u32> {
        let mut i = self.home(id);
        let v = loop {
            match self.table.get(i) {
                Some(&(0, _)) | None => return None,
                Some(&(k, v)) if k == id => break v,
                _ => i = (i + 1) & self.mask,
            }
        };
        // Backward-shift deletion keeps probe chains intact without tombstones.
        let mut hole = i;
        let mut j = (i + 1) & self.mask;
        while let Some(&(k, val)) = self.table.get(j) {
            if k == 0 {
                break;
            }
            let h = self.home(k);
            // Move (k) into the hole if its home is not in (hole, j].
            let between = if hole <= j {
                hole < h && h <= j
            } else {
                hole < h || h <= j
            };
            if !between {
                if let Some(e) = self.table.get_mut(hole) {
                    *e = (k, val);
                }
                hole = j;
            }
            j = (j + 1) & self.mask;
        }
        if let Some(e) = self.table.get_mut(hole) {
            *e = (0, 0);
        }
        self.len -= 1;
        Some(v)
    }
}

/// A request body still waiting for send window.
#[derive(Debug, Clone, Copy)]
struct PendingBody {
    stream: StreamId,
    offset: usize,
}

/// HTTP/2 client session.
#[derive(Debug)]
pub struct H2Session {
    conn: Connection<RequestTemplate>,
    prep: Arc<Prepared>,
    /// The URIs' fields differ beyond `:path` (per-request `priority` of the page
    /// fetcher): each request is encoded from its own list with the general encoder
    /// instead of the template.
    per_uri: bool,
    max_streams: u32,
    map: StreamMap,
    /// Bytes of an incomplete frame carried to the next read.
    partial: Vec<u8>,
    bodies: Vec<PendingBody>,
    goaway: bool,
    exhausted: bool,
    terminated: bool,
    verbose: bool,
    /// Streams the peer refused (REFUSED_STREAM) since the last completed
    /// response on this connection; see [`H2Session::refusal_budget`].
    refusals: u32,
    /// Promised (pushed) streams still open.
    pushed: Vec<u32>,
    /// `:path` of the promise being decoded.
    promised_path: Vec<u8>,
}

impl H2Session {
    /// A session allowing up to `max_streams` concurrent streams (`-m`);
    /// `verbose` prints response header fields like h2load `-v`.
    pub(crate) fn new(
        prep: Arc<Prepared>,
        max_streams: u32,
        settings: &H2Settings,
        verbose: bool,
    ) -> H2Session {
        let template = build_template(&prep);
        let conn =
            Connection::with_encoder(Role::Client, settings.local(), Limits::new(), template);
        let max_streams = max_streams.max(1);
        let not_path = |f: &&(Box<[u8]>, Box<[u8]>)| &f.0[..] != b":path";
        let per_uri = prep.h2.first().is_some_and(|first| {
            prep.h2
                .iter()
                .any(|f| !f.iter().filter(not_path).eq(first.iter().filter(not_path)))
        });
        H2Session {
            conn,
            prep,
            per_uri,
            max_streams,
            map: StreamMap::new(max_streams),
            partial: Vec::new(),
            bodies: Vec::new(),
            goaway: false,
            exhausted: false,
            terminated: false,
            verbose,
            refusals: 0,
            pushed: Vec::new(),
            promised_path: Vec::new(),
        }
    }

    /// Refused streams retried per connection without a completed response in
    /// between. RFC 9113 §8.7 makes refused requests safe to retry, but a server
    /// that refuses every stream would otherwise be retried forever (the run
    /// never ends): beyond this budget a refusal counts as a stream reset. A
    /// GOAWAY excludes at most `max_streams` streams, so it always fits.
    fn refusal_budget(&self) -> u32 {
        self.max_streams.saturating_mul(2).max(100)
    }

    fn recv_all(
        &mut self,
        mut input: &[u8],
        out: &mut Vec<u8>,
        ev: &mut dyn SessionEvents,
    ) -> Result<(), SessionError> {
        // 1. Complete a frame carried over from the previous read (copying only
        //    the bytes that frame needs).
        while !self.partial.is_empty() && !input.is_empty() {
            let need = frame_len(&self.partial).unwrap_or(9);
            let take = need.saturating_sub(self.partial.len()).min(input.len());
            let (head, rest) = input.split_at(take);
            self.partial.extend_from_slice(head);
            input = rest;
            // A frame header announcing more than our SETTINGS_MAX_FRAME_SIZE is
            // handed to the connection at once (it rejects it from the header,
            // RFC 9113 §4.2) instead of buffering up to 16 MiB of payload first.
            let max = self.conn.max_frame_len();
            if frame_len(&self.partial).is_some_and(|l| self.partial.len() >= l || l > max) {
                let buf = std::mem::take(&mut self.partial);
                let n = self.recv_once(&buf, out, ev)?;
                let mut buf = buf;
                buf.drain(..n.min(buf.len()));
                self.partial = buf;
                if !self.partial.is_empty() {
                    // Could not consume a complete frame (should not happen): keep
                    // accumulating to avoid losing bytes.
                    self.partial.extend_from_slice(input);
                    return Ok(());
                }
            }
        }
        if input.is_empty() {
            return Ok(());
        }
        // 2. Process complete frames straight from the read buffer.
        let n = self.recv_once(input, out, ev)?;
        if let Some(rest) = input.get(n..) {
            self.partial.extend_from_slice(rest);
        }
        Ok(())
    }

    fn recv_once(
        &mut self,
        input: &[u8],
        out: &mut Vec<u8>,
        ev: &mut dyn SessionEvents,
    ) -> Result<usize, SessionError> {
        let refusal_budget = self.refusal_budget();
        let mut bridge = Bridge {
            map: &mut self.map,
            ev,
            goaway: &mut self.goaway,
            window_opened: false,
            verbose: self.verbose,
            bodies: &mut self.bodies,
            refusals: &mut self.refusals,
            refusal_budget,
            pushed: &mut self.pushed,
            promised_path: &mut self.promised_path,
        };
        let r = self.conn.recv(input, out, &mut bridge);
        let opened = bridge.window_opened;
        match r {
            Ok(n) => {
                if opened {
                    self.send_bodies(out);
                }
                Ok(n)
            }
            Err(e) => {
                // An HTTP/1.x server answering our h2c preface: say so, rather
                // than only the frame error its status line decodes to.
                Err(SessionError::H2 {
                    error: e,
                    http1_reply: input.starts_with(b"HTTP/1."),
                })
            }
        }
    }

    /// Sends as much of the pending request bodies as the windows allow.
    fn send_bodies(&mut self, out: &mut Vec<u8>) {
        let Some(body) = self.prep.body.clone() else {
            self.bodies.clear();
            return;
        };
        let conn = &mut self.conn;
        self.bodies.retain_mut(|p| {
            let rest = body.get(p.offset..).unwrap_or_default();
            match conn.send_data(p.stream, rest, true, out) {
                Ok(n) => {
                    p.offset += n;
                    p.offset < body.len()
                }
                Err(_) => false,
            }
        });
    }
}

/// Length of the frame starting `buf` (header + payload), once the 9-byte header is there.
fn frame_len(buf: &[u8]) -> Option<usize> {
    let h = buf.get(..3)?;
    if buf.len() < 9 {
        return None;
    }
    Some(9 + ((h[0] as usize) << 16 | (h[1] as usize) << 8 | h[2] as usize))
}

/// The request template of a new connection: fixed fields from the first
/// URI's list without `:path`, then one path per URI.
fn build_template(prep: &Prepared) -> RequestTemplate {
    let fixed: Vec<(&[u8], &[u8])> = prep
        .h2
        .first()
        .map(|f| {
            f.iter()
                .filter(|(n, _)| &n[..] != b":path")
                .map(|(n, v)| (&n[..], &v[..]))
                .collect()
        })
        .unwrap_or_default();
    let paths: Vec<&[u8]> = prep
        .h2
        .iter()
        .map(|f| {
            f.iter()
                .find(|(n, _)| &n[..] == b":path")
                .map_or(&b"/"[..], |(_, v)| &v[..])
        })
        .collect();
    match RequestTemplate::new(fixed, paths, h2lab_wire::hpack::DEFAULT_TABLE_SIZE) {
        Ok(t) => t,
        // Only possible without paths or with :path among the fixed fields,
        // which the construction above excludes; fall back to a minimal request.
        Err(_) => RequestTemplate::new(
            [(&b":method"[..], &b"GET"[..])],
            [&b"/"[..]],
            h2lab_wire::hpack::DEFAULT_TABLE_SIZE,
        )
        .unwrap_or_else(|_| unreachable_template()),
    }
}

#[cold]
fn unreachable_template() -> RequestTemplate {
    // RequestTemplate::new only fails for the reasons excluded above.
    std::process::abort()
}

/// Adapts connection events to the worker's [`SessionEvents`].
struct Bridge<'a> {
    map: &'a mut StreamMap,
    ev: &'a mut dyn SessionEvents,
    goaway: &'a mut bool,
    window_opened: bool,
    verbose: bool,
    bodies: &'a mut Vec<PendingBody>,
    refusals: &'a mut u32,
    refusal_budget: u32,
    pushed: &'a mut Vec<u32>,
    promised_path: &'a mut Vec<u8>,
}

impl Bridge<'_> {
    fn end(&mut self, stream: StreamId) -> Option<u32> {
        let slot = self.map.remove(stream.get())?;
        self.bodies.retain(|p| p.stream != stream);
        Some(slot)
    }

    /// Whether `stream` is an open pushed stream.
    fn is_pushed(&self, stream: StreamId) -> bool {
        self.pushed.contains(&stream.get())
    }

    /// The pushed stream ended (`complete` or reset).
    fn push_end(&mut self, stream: StreamId, complete: bool) {
        self.pushed.retain(|&p| p != stream.get());
        self.ev.push_end(stream.get(), complete);
    }

    /// The response on `stream` is complete.
    fn complete(&mut self, stream: StreamId) {
        if let Some(slot) = self.end(stream) {
            *self.refusals = 0;
            self.ev.complete(slot);
        }
    }
}

impl wh2::Events for Bridge<'_> {
    fn header(&mut self, stream: StreamId, name: &[u8], value: &[u8]) {
        if self.verbose {
            println!(
                "[stream_id={}] {}: {}",
                stream.get(),
                String::from_utf8_lossy(name),
                String::from_utf8_lossy(value)
            );
        }
    }

    fn headers_done(&mut self, stream: StreamId, done: HeadersDone) {
        let Some(slot) = self.map.get(stream.get()) else {
            if self.is_pushed(stream) {
                self.ev.header_bytes(done.block_len, done.decoded_len);
                if let (Some(s), HeadersKind::Response) = (done.status, done.kind) {
                    self.ev.push_status(stream.get(), s);
                }
                if done.end_stream {
                    self.push_end(stream, true);
                }
            }
            return;
        };
        self.ev.header_bytes(done.block_len, done.decoded_len);
        match done.kind {
            HeadersKind::Informational | HeadersKind::Response => {
                if let Some(s) = done.status {
                    self.ev.status(slot, s);
                }
            }
            HeadersKind::Trailers | HeadersKind::Request => {}
        }
        if done.end_stream {
            self.complete(stream);
        }
    }

    fn data(&mut self, stream: StreamId, data: &[u8], end_stream: bool) {
        let Some(slot) = self.map.get(stream.get()) else {
            if self.is_pushed(stream) {
                self.ev.push_body(stream.get(), data.len());
                if end_stream {
                    self.push_end(stream, true);
                }
            }
            return;
        };
        if !data.is_empty() {
            self.ev.body(slot, data.len());
            self.ev.body_data(slot, data);
        }
        if end_stream {
            self.complete(stream);
        }
    }

    fn reset(&mut self, stream: StreamId, code: ErrorCode, by_peer: bool) {
        let Some(slot) = self.end(stream) else {
            if self.is_pushed(stream) {
                self.push_end(stream, false);
            }
            return;
        };
        // RFC 9113 §8.7: "The REFUSED_STREAM error code can be included in a
        // RST_STREAM frame to indicate that the stream is being closed prior to
        // any processing having occurred. Any request that was sent on the
        // reset stream can be safely retried." (The connection also reports
        // streams above a GOAWAY's last stream id this way.)
        if by_peer && code == ErrorCode::REFUSED_STREAM && *self.refusals < self.refusal_budget {
            *self.refusals += 1;
            self.ev.refused(slot);
        } else {
            self.ev.reset(slot, code.as_u32());
        }
    }

    fn goaway(&mut self, last_stream_id: StreamId, code: ErrorCode, _debug: &[u8]) {
        *self.goaway = true;
        self.ev.goaway(last_stream_id.get(), code.as_u32());
    }

    fn window_opened(&mut self, _stream: Option<StreamId>) {
        self.window_opened = true;
    }

    fn promised_header(&mut self, _promised: StreamId, name: &[u8], value: &[u8]) {
        if name == b":path" {
            self.promised_path.clear();
            self.promised_path.extend_from_slice(value);
        }
    }

    fn push_promise(&mut self, _parent: StreamId, promised: StreamId) {
        self.pushed.push(promised.get());
        self.ev.push_promise(promised.get(), self.promised_path);
        self.promised_path.clear();
    }
}

impl Session for H2Session {
    fn on_connect(&mut self, out: &mut Vec<u8>) {
        self.conn.start(out);
    }

    #[inline]
    fn can_submit(&self) -> bool {
        !self.goaway
            && !self.exhausted
            && !self.terminated
            && (self.map.len as u32) < self.max_streams
            && self.conn.can_open_stream()
    }

    fn submit(&mut self, slot: u32, uri_idx: usize, out: &mut Vec<u8>) -> Result<(), SubmitError> {
        if (self.map.len as u32) >= self.max_streams || self.terminated {
            return Err(SubmitError::WouldBlock);
        }
        let has_body = self.prep.body.as_ref().is_some_and(|b| !b.is_empty());
        let own = self
            .per_uri
            .then(|| self.prep.h2.get(uri_idx % self.prep.h2.len().max(1)))
            .flatten();
        let r = self.conn.send_request(
            |tpl, buf| match own {
                Some(fields) => tpl
                    .encoder_mut()
                    .encode(fields.iter().map(|(n, v)| (&n[..], &v[..])), buf),
                None => {
                    tpl.encode_next(uri_idx, buf);
                }
            },
            !has_body,
            out,
        );
        let id = match r {
            Ok(id) => id,
            Err(SendError::StreamIdsExhausted) => {
                self.exhausted = true;
                return Err(SubmitError::Exhausted);
            }
            Err(SendError::GoingAway) => {
                self.goaway = true;
                return Err(SubmitError::WouldBlock);
            }
            Err(_) => return Err(SubmitError::WouldBlock),
        };
        if !self.map.insert(id.get(), slot) {
            // Cannot happen: the map holds 2 × max_streams entries.
            let _ = self.conn.reset(id, ErrorCode::CANCEL, out);
            return Err(SubmitError::WouldBlock);
        }
        if has_body {
            if let Some(body) = self.prep.body.clone() {
                let sent = self.conn.send_data(id, &body, true, out).unwrap_or(0);
                if sent < body.len() {
                    self.bodies.push(PendingBody {
                        stream: id,
                        offset: sent,
                    });
                }
            }
        }
        Ok(())
    }

    fn on_read(
        &mut self,
        input: &[u8],
        out: &mut Vec<u8>,
        ev: &mut dyn SessionEvents,
    ) -> Result<(), SessionError> {
        self.recv_all(input, out, ev)
    }

    fn on_eof(&mut self, _ev: &mut dyn SessionEvents) -> Result<(), SessionError> {
        if self.map.len > 0 {
            return Err(SessionError::UnexpectedEof);
        }
        Ok(())
    }

    fn on_write(&mut self, out: &mut Vec<u8>) {
        if !self.bodies.is_empty() {
            self.send_bodies(out);
        }
    }

    fn wants_write(&self) -> bool {
        !self.bodies.is_empty()
    }

    fn max_concurrency(&self) -> u32 {
        let peer = self.conn.peer_settings().max_concurrent_streams;
        peer.map_or(self.max_streams, |p| p.min(self.max_streams))
    }

    fn in_flight(&self) -> u32 {
        self.map.len as u32
    }

    fn goaway_received(&self) -> bool {
        self.goaway
    }

    fn wants_close(&self) -> bool {
        self.conn.is_finished() || ((self.goaway || self.exhausted) && self.map.len == 0)
    }

    fn terminate(&mut self, out: &mut Vec<u8>) {
        if !self.terminated {
            self.terminated = true;
            self.conn.goaway(ErrorCode::NO_ERROR, b"", out);
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn stream_map_insert_get_remove() {
        let mut m = StreamMap::new(4);
        for (i, id) in [1u32, 3, 5, 7].iter().enumerate() {
            assert!(m.insert(*id, i as u32));
        }
        assert_eq!(m.get(5), Some(2));
        assert_eq!(m.remove(3), Some(1));
        assert_eq!(m.get(3), None);
        assert_eq!(m.get(7), Some(3));
        // Ids that collide in the table (same home modulo capacity).
        let mut m = StreamMap::new(4); // capacity 8
        for (slot, id) in [1u32, 17, 33, 49].iter().enumerate() {
            assert!(m.insert(*id, slot as u32));
        }
        assert_eq!(m.remove(17), Some(1));
        assert_eq!(
            (m.get(1), m.get(33), m.get(49)),
            (Some(0), Some(2), Some(3))
        );
        assert_eq!(m.remove(1), Some(0));
        assert_eq!((m.get(33), m.get(49)), (Some(2), Some(3)));
        assert!(!m.insert(51, 9) || m.len <= 4);
    }

    #[test]
    fn stream_map_matches_a_model() {
        use std::collections::HashMap;
        let mut m = StreamMap::new(16);
        let mut model = HashMap::new();
        let mut next = 1u32;
        let mut x = 12345u64;
        for _ in 0..20_000 {
            x = x
                .wrapping_mul(6364136223846793005)
                .wrapping_add(1442695040888963407);
            if (x >> 33) % 2 == 0 && model.len() < 16 {
                assert!(m.insert(next, next * 3));
                model.insert(next, next * 3);
                next += 2;
            } else if let Some(&k) = model.keys().nth(((x >> 40) as usize) % model.len().max(1)) {
                assert_eq!(m.remove(k), model.remove(&k));
            }
            for (k, v) in &model {
                assert_eq!(m.get(*k), Some(*v));
            }
            assert_eq!(m.len, model.len());
        }
    }
}
