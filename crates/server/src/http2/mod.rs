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

use std::time::{Duration, Instant};

use h2lab_wire::frame::{ErrorCode, StreamId};
use h2lab_wire::h2::{ConnError, Connection, Initiator, Limits, LocalSettings, Role};
use h2lab_wire::hpack::Encoder;

use crate::body::BodyCursor;
use crate::ctx::{Ctx, Io, Next, Shared};
use crate::endpoints::{split_target, HttpVersion, Method, Request, Response};
use crate::h2head::HeadCache;
use crate::http1::Upgrade;
use crate::log::warn;
use crate::out::Out;
use crate::sched::{PriorityMode, Scheduler};

mod push;
mod send;
mod streams;
use send::PRIORITY_OUT_LIMIT;
use streams::{App, Packed, StreamPhase};

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
    /// Input is TLS 1.3 early data (the handshake is not complete yet).
    early: bool,
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
    /// Requests left before GOAWAY (`--max-requests-per-connection`).
    requests_left: Option<u32>,
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
            early: false,
            prioritize: ctx.shared.config.priorities == PriorityMode::Rfc9218,
            sched: Scheduler::default(),
            budget: PRIORITY_OUT_LIMIT,
            seen_written: 0,
            settings_sent: Some(Instant::now()),
            lowat_due: None,
            push: ctx.shared.config.push,
            requests_left: ctx.shared.config.max_requests_per_connection,
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
        self.early = io.early;
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
                .is_some_and(|s| s.phase == StreamPhase::Delayed)
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
                s.phase = StreamPhase::Sending;
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
        if s.phase != StreamPhase::Receiving {
            return;
        }
        let packed = Packed(&s.fields);
        let method_raw = packed.get(b":method").unwrap_or(b"GET");
        let target = packed.get(b":path").unwrap_or(b"/");
        let req = Request {
            method: Method::parse(method_raw),
            method_raw,
            target,
            proto: HttpVersion::H2,
            tls,
            body_len: Some(s.body_len),
            headers: &packed,
            early: self.early,
        };
        let mut resp = ctx.shared.router.route(&req, &mut s.dynamic);
        if let Some(page) = resp.early_hints.take() {
            // RFC 8297 §2 and RFC 9113 §8.1: an interim HEADERS (no END_STREAM) now, the
            // final response after the think time.
            let mut link = Vec::new();
            page.write_preload_links(&mut link);
            let _ = self.conn.send_headers(
                id,
                |enc: &mut Encoder, buf: &mut Vec<u8>| {
                    enc.encode(
                        [(&b":status"[..], &b"103"[..]), (b"link", link.as_slice())],
                        buf,
                    );
                },
                false,
                out.bytes(),
            );
        }
        if let Some(n) = &mut self.requests_left {
            *n = n.saturating_sub(1);
            if *n == 0 {
                // `--max-requests-per-connection`: no new streams; those accepted are answered,
                // then the connection closes (`finish_step`).
                self.conn.goaway(ErrorCode::NO_ERROR, b"", out.bytes());
            }
        }
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
            s.phase = StreamPhase::Sending;
            self.send_response(id, resp, ctx, out);
            return;
        }
        match resp.delay {
            Some(d) if !d.is_zero() => {
                s.phase = StreamPhase::Delayed;
                s.pending = Some(resp);
                ctx.arm(d, id.get());
            }
            _ => {
                s.phase = StreamPhase::Sending;
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
        if s.phase != StreamPhase::Delayed {
            return;
        }
        let Some(resp) = s.pending.take() else {
            return;
        };
        s.phase = StreamPhase::Sending;
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
