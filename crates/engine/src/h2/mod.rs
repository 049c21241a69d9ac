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

use h2lab_wire::h2::{Connection, ErrorCode, Limits, LocalSettings, Role, SendError, StreamId};
use h2lab_wire::hpack::RequestTemplate;

use crate::request::Prepared;
use crate::session::{Session, SessionError, SessionEvents, SubmitError};
use bridge::Bridge;
use stream_map::StreamMap;

mod bridge;
mod stream_map;

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
    /// The settings `cfg`'s flags ask for (`-w`, `-W`, table sizes, `-f`, push).
    pub(crate) fn of(cfg: &crate::BenchConfig) -> H2Settings {
        H2Settings {
            window_bits: cfg.window_bits,
            connection_window_bits: cfg.connection_window_bits,
            header_table_size: cfg.header_table_size,
            encoder_header_table_size: cfg.encoder_header_table_size,
            max_frame_size: cfg.max_frame_size,
            enable_push: cfg.accept_push,
        }
    }

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

/// A request body still waiting for send window.
#[derive(Debug, Clone, Copy)]
pub(super) struct PendingBody {
    pub(super) stream: StreamId,
    pub(super) offset: usize,
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
    /// A PUSH_PROMISE's field block is still arriving.
    in_promise: bool,
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
            in_promise: false,
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
            in_promise: &mut self.in_promise,
            hinting: false,
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
