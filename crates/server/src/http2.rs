//! The HTTP/2 server side: drives the sans-IO `h2lab_wire::h2::Connection` (which owns
//! framing, HPACK, stream states, flow control and the protocol defences) and turns
//! completed requests into responses from [`crate::endpoints`].
//!
//! Per stream the server keeps a reusable slot (packed request fields, a dynamic body
//! buffer, the body cursor); slots are recycled, so steady-state requests allocate nothing.
//! Response bodies are sent round-robin, one frame's worth per stream per pass, bounded by
//! the flow-control windows and by the connection's output high-water mark. Built-in bodies
//! (static pages, the `/data` filler) go out without a copy: the connection writes only the
//! DATA frame header ([`Connection::send_data_header`]) and the payload is spliced into the
//! output queue from static memory. Response header blocks come from a per-connection cache
//! ([`HeadCache`]) when the head repeats.

use std::collections::HashMap;
use std::hash::{BuildHasherDefault, Hasher};
use std::time::{Duration, Instant};

use h2lab_wire::frame::{ErrorCode, StreamId};
use h2lab_wire::h2::{
    ConnError, Connection, Events, HeadersDone, HeadersKind, Initiator, Limits, LocalSettings, Role,
};
use h2lab_wire::hpack::Encoder;
use h2lab_wire::priority::{self, ExtPriority};

use crate::body::BodyCursor;
use crate::conn::{Io, Next};
use crate::endpoints::{split_target, HeaderSource, Method, Proto, Request, Response};
use crate::h2head::HeadCache;
use crate::http1::Upgrade;
use crate::log::warn;
use crate::out::Out;
use crate::sched::{PriorityMode, Scheduler};
use crate::worker::{Ctx, Shared};

#[path = "http2_push.rs"]
mod push;
#[path = "http2_send.rs"]
mod send;
use send::PRIORITY_OUT_LIMIT;

/// Where a stream is in its life.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Phase {
    /// Receiving the request (fields done, body not yet ended).
    Receiving,
    /// Request complete; waiting for a `/delay` timer.
    Delayed,
    /// Response head sent; body being sent.
    Sending,
}

/// Per-stream state (a reusable slot).
#[derive(Debug)]
struct Stream {
    id: StreamId,
    phase: Phase,
    /// Request fields, packed as `[name_len u16][value_len u32][name][value]`.
    fields: Vec<u8>,
    /// Whether the field block completed (a reset may arrive before).
    fields_done: bool,
    /// Keep regular fields too (only `/info` shows them; pseudo-header fields, which come
    /// first, are always kept).
    keep_all: bool,
    body_len: u64,
    body_too_large: bool,
    /// The response waiting for its timer.
    pending: Option<Response>,
    dynamic: Vec<u8>,
    cursor: Option<BodyCursor>,
    /// RFC 9218 priority (header, then PRIORITY_UPDATE).
    prio: ExtPriority,
    /// A PRIORITY_UPDATE set `prio`: it overrides the request's header.
    prio_updated: bool,
}

impl Stream {
    fn new() -> Self {
        Stream {
            id: StreamId::new(0),
            phase: Phase::Receiving,
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

    fn reset_for(&mut self, id: StreamId) {
        self.id = id;
        self.phase = Phase::Receiving;
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
struct Packed<'a>(&'a [u8]);

impl Packed<'_> {
    fn iter(&self) -> impl Iterator<Item = (&[u8], &[u8])> {
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

    fn get(&self, name: &[u8]) -> Option<&[u8]> {
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
struct IdHasher(u64);

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
struct App {
    slots: Vec<Stream>,
    free: Vec<usize>,
    by_id: IdMap,
    /// The stream of the last `header` call and its slot (fields arrive in runs).
    current: Option<(u32, usize)>,
    /// Streams whose request just completed (to route after `recv` returns).
    completed: Vec<u32>,
    /// Streams with a response body to send, in round-robin order.
    sending: Vec<u32>,
    /// Streams to answer with 413 and reset (request body over the limit).
    too_large: Vec<u32>,
    /// Highest stream id that opened a slot: a field block on a lower id without a slot
    /// is a trailer section of a stream already answered (ignored).
    last_opened: u32,
    max_body: u64,
    /// PRIORITY_UPDATEs for streams not opened yet (bounded by the connection: RFC 9218
    /// §7.1 limits them to SETTINGS_MAX_CONCURRENT_STREAMS), applied when they open.
    early_prio: Vec<(u32, ExtPriority)>,
    /// A violation was logged for this connection.
    logged: bool,
    peer: Option<std::net::SocketAddr>,
}

impl App {
    fn slot(&mut self, id: StreamId) -> Option<&mut Stream> {
        let i = *self.by_id.get(&id.get())?;
        self.slots.get_mut(i)
    }

    /// The slot of stream `id`, created (recycled) if needed.
    fn open(&mut self, id: StreamId) -> usize {
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

    fn close(&mut self, id: StreamId) {
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
        if s.phase != Phase::Receiving || s.body_too_large {
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

/// HTTP/2 protocol state of one connection.
pub struct H2 {
    conn: Connection,
    app: App,
    /// The last response header block (reused while the head and the HPACK state repeat).
    heads: HeadCache,
    /// A fatal error was seen: only flush and close.
    failed: bool,
    /// Scratch buffer for file bodies.
    scratch: Vec<u8>,
    /// The connection is TLS (for `/info`).
    tls: bool,
    /// RFC 9218 scheduling (else round-robin).
    prioritize: bool,
    sched: Scheduler,
    /// Current output budget of the prioritized pump (see [`PRIORITY_OUT_LIMIT`]).
    budget: usize,
    /// `Out::written` at the last prioritized pump.
    seen_written: u64,
    /// When our SETTINGS went out (until the peer acknowledges them: an RTT sample).
    settings_sent: Option<Instant>,
    /// TCP_NOTSENT_LOWAT to apply now (taken by the connection, which owns the socket).
    lowat_due: Option<u32>,
    /// `--push`: `/page` responses push their CSS and JS.
    push: bool,
    /// A `link` header value for the next response head (a pushing `/page`).
    link: Vec<u8>,
}

/// The connection settings we advertise and the defences, from the configuration.
fn settings(shared: &Shared) -> (LocalSettings, Limits) {
    let c = &shared.config;
    let mut local = LocalSettings::server();
    local.max_concurrent_streams = Some(c.max_concurrent_streams);
    local.initial_window_size = c.initial_stream_window;
    local.connection_window = c.initial_connection_window;
    local.max_frame_size = c.max_frame_size;
    local.header_table_size = c.header_table_size;
    local.max_header_list_size = Some(c.max_header_list_size);
    let mut limits = Limits::new();
    limits.max_continuation_frames = c.max_continuation_frames as usize;
    limits.max_header_list_size = c.max_header_list_size;
    // An encoded block can be at most about as large as the decoded list (plus framing):
    // a larger block is an attack on the assembler (CONTINUATION flood).
    limits.max_header_block_bytes = (c.max_header_list_size as usize).max(16 * 1024) + 1024;
    limits.rapid_reset_budget = c.max_rapid_resets;
    limits.rapid_reset_window = c.rapid_reset_window;
    // RFC 9218 §2.1: "A server that receives SETTINGS_NO_RFC7540_PRIORITIES with a value of 1
    // MUST ignore HTTP/2 priority signals"; we tell clients we ignore RFC 7540's.
    local.no_rfc7540_priorities = c.priorities == PriorityMode::Rfc9218;
    (local, limits)
}

impl H2 {
    /// Starts the server side: queues our SETTINGS and, after an h2c upgrade, takes the
    /// upgraded request as stream 1 ([`Connection::upgrade_server`]) and answers it.
    pub fn new(ctx: &mut Ctx<'_>, out: &mut Out, upgrade: Option<Box<Upgrade>>) -> Self {
        let (local, limits) = settings(ctx.shared);
        let mut conn = Connection::new(Role::Server, local, limits);
        conn.start(out.bytes());
        let mut h2 = H2 {
            conn,
            app: App {
                max_body: ctx.shared.config.max_request_body,
                ..App::default()
            },
            heads: HeadCache::default(),
            failed: false,
            scratch: Vec::new(),
            tls: false,
            prioritize: ctx.shared.config.priorities == PriorityMode::Rfc9218,
            sched: Scheduler::default(),
            budget: PRIORITY_OUT_LIMIT,
            seen_written: 0,
            settings_sent: Some(Instant::now()),
            lowat_due: None,
            push: ctx.shared.config.push,
            link: Vec::new(),
        };
        if let Some(up) = upgrade {
            // Once per upgraded connection: the request's fields as borrowed pairs.
            let fields: Vec<(&[u8], &[u8])> = up
                .fields
                .iter()
                .map(|(n, v)| (n.as_slice(), v.as_slice()))
                .collect();
            match h2
                .conn
                .upgrade_server(&up.settings, &fields, out.bytes(), &mut h2.app)
            {
                Ok(_) => h2.after_recv(ctx, out),
                Err(e) => h2.on_conn_error(e),
            }
        }
        h2
    }

    /// Processes buffered input and sends what can be sent.
    pub fn process(&mut self, io: &mut Io<'_>, ctx: &mut Ctx<'_>) -> Next {
        self.app.peer = Some(io.peer);
        self.tls = io.tls;
        if self.failed {
            return Next::CloseAfterFlush;
        }
        // Respect the output high-water mark: stop taking requests while the queue is full.
        if !io.out.is_full() && !io.inbuf.is_empty() {
            match self
                .conn
                .recv(io.inbuf.data(), io.out.bytes(), &mut self.app)
            {
                Ok(n) => io.inbuf.consume(n),
                Err(e) => {
                    self.on_conn_error(e);
                    return Next::CloseAfterFlush;
                }
            }
            self.after_recv(ctx, io.out);
            self.sample_rtt(ctx);
        }
        // After an h2c upgrade, stream 1's body waits for the client's connection preface
        // (RFC 7540 §3.2: "Upon receiving the 101 response, the client MUST send a
        // connection preface"): some clients (curl) cannot take much data right behind the
        // 101 before they switched.
        if self.conn.preface_received() {
            self.pump(io.out);
        }
        self.finish_step(io)
    }

    /// Once our SETTINGS are acknowledged: with priorities on and a round trip of at least
    /// `notsent_lowat_min_rtt`, asks for TCP_NOTSENT_LOWAT (see [`H2::take_lowat`]).
    fn sample_rtt(&mut self, ctx: &Ctx<'_>) {
        let Some(sent) = self.settings_sent else {
            return;
        };
        if !self.conn.settings_acked() {
            return;
        }
        self.settings_sent = None;
        let c = &ctx.shared.config;
        if self.prioritize && c.notsent_lowat > 0 && sent.elapsed() >= c.notsent_lowat_min_rtt {
            self.lowat_due = Some(c.notsent_lowat);
        }
    }

    /// The TCP_NOTSENT_LOWAT the connection should set on its socket, once.
    pub fn take_lowat(&mut self) -> Option<u32> {
        self.lowat_due.take()
    }

    fn finish_step(&mut self, io: &mut Io<'_>) -> Next {
        if self.conn.is_finished() && self.app.sending.is_empty() {
            return Next::CloseAfterFlush;
        }
        if io.read_eof {
            // The client will send nothing more: finish what is in flight, then close.
            return if self.app.sending.is_empty() && !self.has_delayed() {
                Next::CloseAfterFlush
            } else {
                Next::Continue
            };
        }
        if io.inbuf.is_full() && !io.out.is_full() {
            // Cannot happen with a buffer of max_frame_len (the connection consumes every
            // complete frame), but never spin on a stuck buffer.
            self.conn.goaway(
                ErrorCode::INTERNAL_ERROR,
                b"input buffer full",
                io.out.bytes(),
            );
            self.failed = true;
            return Next::CloseAfterFlush;
        }
        Next::Continue
    }

    fn has_delayed(&self) -> bool {
        self.app.by_id.values().any(|&i| {
            self.app
                .slots
                .get(i)
                .is_some_and(|s| s.phase == Phase::Delayed)
        })
    }

    fn on_conn_error(&mut self, e: ConnError) {
        self.failed = true;
        if e.initiator == Initiator::Local {
            self.log(format_args!("connection error, sent GOAWAY: {e}"));
        }
    }

    fn log(&mut self, args: std::fmt::Arguments<'_>) {
        if !self.app.logged {
            self.app.logged = true;
            match self.app.peer {
                Some(p) => warn!("{p} (HTTP/2): {args}"),
                None => warn!("(HTTP/2): {args}"),
            }
        }
    }

    /// Answers completed requests and over-limit bodies.
    fn after_recv(&mut self, ctx: &mut Ctx<'_>, out: &mut Out) {
        while let Some(id) = self.app.too_large.pop() {
            let id = StreamId::new(id);
            self.log(format_args!(
                "request body over the limit on stream {}",
                id.get()
            ));
            let resp = Response::error(413);
            if let Some(s) = self.app.slot(id) {
                s.phase = Phase::Sending;
            }
            self.send_response(id, resp, ctx, out);
            // RFC 9113 §8.1: "A server can send a complete response prior to the client
            // sending an entire request ... the server MAY request that the client abort
            // transmission of a request without error by sending a RST_STREAM with an error
            // code of NO_ERROR after sending a complete response".
            if self.app.slot(id).is_some_and(|s| s.cursor.is_none()) {
                self.conn.reset(id, ErrorCode::NO_ERROR, out.bytes());
                self.app.close(id);
            }
        }
        let mut completed = std::mem::take(&mut self.app.completed);
        for &id in &completed {
            self.answer(StreamId::new(id), ctx, out);
        }
        completed.clear();
        if self.app.completed.is_empty() {
            // Give the (empty) vector back so its capacity is reused.
            self.app.completed = completed;
        }
    }

    /// Routes a complete request on `id`.
    fn answer(&mut self, id: StreamId, ctx: &mut Ctx<'_>, out: &mut Out) {
        let tls = self.tls;
        let Some(s) = self.app.slot(id) else {
            return;
        };
        if s.phase != Phase::Receiving {
            return;
        }
        let packed = Packed(&s.fields);
        let method_raw = packed.get(b":method").unwrap_or(b"GET");
        let target = packed.get(b":path").unwrap_or(b"/");
        let req = Request {
            method: Method::parse(method_raw),
            method_raw,
            target,
            proto: Proto::H2,
            tls,
            body_len: Some(s.body_len),
            headers: &packed,
        };
        let resp = ctx.shared.router.route(&req, &mut s.dynamic);
        // `--push`: a page pushes its render-blocking assets before its own head (RFC 9113
        // §8.4: PUSH_PROMISE before the content that refers to the pushed resources).
        let pushing = self.push
            && resp.status == 200
            && req.method == Method::Get
            && split_target(target).0 == b"/page";
        if pushing {
            let target = target.to_vec();
            let authority = packed.get(b":authority").unwrap_or(b"").to_vec();
            self.link = self.push_page(id, &target, &authority, ctx, out);
            let Some(s) = self.app.slot(id) else {
                return;
            };
            s.phase = Phase::Sending;
            self.send_response(id, resp, ctx, out);
            return;
        }
        match resp.delay {
            Some(d) if !d.is_zero() => {
                s.phase = Phase::Delayed;
                s.pending = Some(resp);
                ctx.arm(d, id.get());
            }
            _ => {
                s.phase = Phase::Sending;
                self.send_response(id, resp, ctx, out);
            }
        }
    }

    /// Sends the response head (and, for an empty body, ends the stream); queues the body.
    fn send_response(&mut self, id: StreamId, resp: Response, ctx: &mut Ctx<'_>, out: &mut Out) {
        let no_body = resp.head_only || resp.body.is_empty() || resp.no_content_length();
        let date = ctx.date.get();
        let heads = &mut self.heads;
        let link = std::mem::take(&mut self.link);
        let alt_svc = ctx.shared.alt_svc.as_deref().filter(|_| self.tls);
        let result = self.conn.send_headers(
            id,
            |enc: &mut Encoder, buf: &mut Vec<u8>| {
                if link.is_empty() {
                    heads.encode(enc, buf, &resp, date);
                } else {
                    crate::h2head::encode_head(enc, buf, &resp, date);
                    enc.encode([(&b"link"[..], link.as_slice())], buf);
                }
                if let Some(v) = alt_svc {
                    enc.encode([(&b"alt-svc"[..], v)], buf);
                }
            },
            no_body,
            out.bytes(),
        );
        if result.is_err() {
            // The stream was reset meanwhile.
            self.app.close(id);
            return;
        }
        if no_body {
            self.app.close(id);
            return;
        }
        if let Some(s) = self.app.slot(id) {
            s.cursor = Some(BodyCursor::new(resp.body));
            self.app.sending.push(id.get());
        }
    }

    /// A stream's `/delay` timer fired.
    pub fn on_timer(&mut self, tag: u32, io: &mut Io<'_>, ctx: &mut Ctx<'_>) {
        let id = StreamId::new(tag);
        let Some(s) = self.app.slot(id) else {
            return;
        };
        if s.phase != Phase::Delayed {
            return;
        }
        let Some(resp) = s.pending.take() else {
            return;
        };
        s.phase = Phase::Sending;
        self.send_response(id, resp, ctx, io.out);
        self.pump(io.out);
    }

    /// Whether response data could be queued now (a stream has data and window, and the
    /// client's preface came).
    pub fn has_pending_work(&self) -> bool {
        self.conn.preface_received()
            && self
                .app
                .sending
                .iter()
                .any(|&id| self.conn.send_capacity(StreamId::new(id)) > 0)
    }

    /// Idle check: no input or output progress for `idle` and no `/delay` response pending.
    pub fn timed_out(&self, now: Instant, last_active: Instant, idle: Duration) -> bool {
        now.duration_since(last_active) >= idle && !self.has_delayed()
    }

    /// Queues a GOAWAY (idle timeout or server shutdown).
    pub fn on_idle_timeout(&mut self, io: &mut Io<'_>) {
        self.conn.goaway(ErrorCode::NO_ERROR, b"", io.out.bytes());
        self.failed = true;
    }
}
