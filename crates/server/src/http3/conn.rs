//! One HTTP/3 connection on the server (RFC 9114): our control stream (SETTINGS, GOAWAY on a
//! graceful stop) and QPACK encoder/decoder streams, the peer's unidirectional streams read
//! with the wire crate ([`PeerStreams`], [`ControlReader`], the QPACK [`Decoder`] and
//! [`Encoder`]), and the request streams ([`Req`]) answered through the shared router.
//!
//! Errors follow their scope: a stream error resets that request stream (both directions)
//! with its code; a connection error closes the QUIC connection with it.

use std::time::Instant;

use h2lab_quic::hash::{stream_map, StreamMap};
use h2lab_wire::h3::control::{write_control_stream_start, ControlReader};
use h2lab_wire::h3::frame::{Frame, Settings};
use h2lab_wire::h3::stream::{PeerStreams, UniStreamType};
use h2lab_wire::h3::{ErrorCode, Role, Scope};
use h2lab_wire::qpack::{Decoder, Encoder, EncoderConfig};
use quinn_proto::{Connection, Dir, Event, ReadError, StreamEvent, StreamId};

use super::head::HeadEncoder;
use super::request::{h3_code, Phase, Req};
use super::Ctx;
use crate::body::BodyCursor;
use crate::endpoints::{HttpVersion, Method, PageParams, Request, Response};
use uni::{OutStream, Uni};

#[cfg(test)]
mod browser_bytes;
mod uni;

/// Our QPACK decoder's dynamic table (SETTINGS_QPACK_MAX_TABLE_CAPACITY).
const QPACK_TABLE: u64 = 4096;
/// Finished request streams kept for their buffers.
const POOL: usize = 32;
/// Streams that may wait for QPACK inserts (SETTINGS_QPACK_BLOCKED_STREAMS).
const QPACK_BLOCKED: u64 = 16;

/// An HTTP/3 connection's state (see the module docs).
pub struct H3Conn {
    started: bool,
    control: OutStream,
    encoder_out: OutStream,
    decoder_out: OutStream,
    uni: StreamMap<Uni>,
    peer_streams: PeerStreams,
    control_in: ControlReader,
    qdec: Decoder,
    qenc: Encoder,
    /// Boxed: a request stream's state is several hundred octets, and it moves from the
    /// pool to the map and back once per request (a pointer moves instead).
    reqs: StreamMap<Box<Req>>,
    /// Finished request streams whose buffers are reused (boxed as in `reqs`: they move
    /// between the two).
    #[allow(clippy::vec_box)] // a box moves between `reqs` and here without reallocating
    pool: Vec<Box<Req>>,
    /// `/delay` responses waiting: (when, stream).
    delayed: Vec<(Instant, StreamId)>,
    /// Request streams with a response being written.
    sending: Vec<StreamId>,
    /// Highest request stream accepted (for GOAWAY).
    last_request: Option<u64>,
    /// Requests left before GOAWAY (`--max-requests-per-connection`).
    requests_left: Option<u32>,
    goaway: bool,
    closed: bool,
    heads: HeadEncoder,
    /// Responses finished (FIN written) whose data the client has not acknowledged yet
    /// (`StreamEvent::Finished` ends them): a stopping server waits for them.
    unacked: u32,
    /// The last response head handed to QUIC (shared by identical heads: [`Req::start_body`]).
    last_head: bytes::Bytes,
}

/// Most request-stream bytes held unparsed (behind a blocked header section) before the
/// stream is reset with H3_EXCESSIVE_LOAD.
const MAX_QUEUED_INPUT: usize = 1 << 20;

impl H3Conn {
    /// A connection; `max_field_section` bounds a decoded request header section;
    /// `max_requests` (`--max-requests-per-connection`) sends GOAWAY once that many request
    /// streams were accepted.
    pub fn new(max_field_section: usize, dynamic_table: bool, max_requests: Option<u32>) -> H3Conn {
        let mut qdec = Decoder::new(QPACK_TABLE as usize, QPACK_BLOCKED as usize);
        qdec.set_max_field_section_size(max_field_section);
        H3Conn {
            started: false,
            control: OutStream::default(),
            encoder_out: OutStream::default(),
            decoder_out: OutStream::default(),
            uni: stream_map(4),
            peer_streams: PeerStreams::new(Role::Server),
            control_in: ControlReader::new(Role::Server),
            qdec,
            qenc: Encoder::new(EncoderConfig {
                use_dynamic_table: dynamic_table,
                max_table_capacity: 4096,
            }),
            reqs: stream_map(0),
            pool: Vec::new(),
            delayed: Vec::new(),
            sending: Vec::new(),
            last_request: None,
            requests_left: max_requests,
            goaway: false,
            closed: false,
            heads: HeadEncoder::default(),
            unacked: 0,
            last_head: bytes::Bytes::new(),
        }
    }

    fn start(&mut self, conn: &mut Connection, max_field_section: u64) {
        // Streams can be opened once the handshake has the client's transport parameters.
        if self.started || conn.is_handshaking() {
            return;
        }
        let mut ids = [None; 3];
        for id in ids.iter_mut() {
            *id = conn.streams().open(Dir::Uni);
        }
        let [Some(c), Some(e), Some(d)] = ids else {
            // The peer allows fewer than 3 unidirectional streams: RFC 9114 §6.2 requires
            // at least 3 ("each endpoint needs to ... permit the peer to create at least
            // one unidirectional stream for the HTTP control stream").
            self.close(conn, ErrorCode::H3_STREAM_CREATION_ERROR, "");
            return;
        };
        self.started = true;
        self.control.id = Some(c);
        self.encoder_out
            .open(e, |b| UniStreamType::QpackEncoder.write(b));
        self.decoder_out
            .open(d, |b| UniStreamType::QpackDecoder.write(b));
        let settings = Settings {
            qpack_max_table_capacity: QPACK_TABLE,
            qpack_blocked_streams: QPACK_BLOCKED,
            max_field_section_size: Some(max_field_section),
            ..Settings::default()
        };
        write_control_stream_start(settings, &mut self.control.buf);
    }

    /// Sends GOAWAY once: requests on later streams are refused (stop sending and reset with
    /// H3_REQUEST_REJECTED), those already accepted are answered.
    fn send_goaway(&mut self, conn: &mut Connection) {
        if self.goaway || !self.started {
            return;
        }
        self.goaway = true;
        // RFC 9114 §5.2: the identifier is the first request stream not processed.
        let next = self.last_request.map_or(0, |id| id + 4);
        Frame::GoAway(next).encode(&mut self.control.buf);
        let _ = self.control.flush(conn);
    }

    fn close(&mut self, conn: &mut Connection, code: ErrorCode, reason: &str) {
        if !self.closed {
            self.closed = true;
            crate::log::warn!(
                "HTTP/3 connection error {} (0x{:x}){}{reason}",
                code.name().unwrap_or("unknown"),
                code.0,
                if reason.is_empty() { "" } else { ": " }
            );
            conn.close(
                Instant::now(),
                h3_code(code.0),
                bytes::Bytes::copy_from_slice(reason.as_bytes()),
            );
        }
    }

    /// Resets request stream `id` in both directions with `code` (a stream error).
    fn reset_stream(&mut self, conn: &mut Connection, id: StreamId, code: ErrorCode) {
        let _ = conn.recv_stream(id).stop(h3_code(code.0));
        let _ = conn.send_stream(id).reset(h3_code(code.0));
        self.qdec.cancel_stream(u64::from(id));
        self.forget(id);
    }

    /// Drops request stream `id`, keeping its buffers for the next request.
    fn forget(&mut self, id: StreamId) -> Option<()> {
        let r = self.reqs.remove(&id)?;
        if self.pool.len() < POOL {
            self.pool.push(r);
        }
        Some(())
    }

    /// A request stream for `id`, reusing a finished one's buffers.
    fn new_req(&mut self, id: StreamId) -> Box<Req> {
        match self.pool.pop() {
            Some(mut r) => {
                r.reset(id);
                r
            }
            None => Box::new(Req::new(id)),
        }
    }

    fn on_event(&mut self, conn: &mut Connection, ev: Event, ctx: &mut Ctx, now: Instant) {
        match ev {
            Event::Stream(StreamEvent::Opened { dir }) => {
                while let Some(id) = conn.streams().accept(dir) {
                    match dir {
                        Dir::Bi => {
                            if self.goaway {
                                // RFC 9114 §5.2: requests on streams at or above the GOAWAY
                                // identifier are not processed.
                                let code = h3_code(ErrorCode::H3_REQUEST_REJECTED.0);
                                let _ = conn.recv_stream(id).stop(code);
                                let _ = conn.send_stream(id).reset(code);
                                continue;
                            }
                            self.last_request = Some(u64::from(id));
                            let r = self.new_req(id);
                            self.reqs.insert(id, r);
                            if let Some(n) = &mut self.requests_left {
                                *n = n.saturating_sub(1);
                                if *n == 0 {
                                    // `--max-requests-per-connection`: GOAWAY names the next
                                    // stream, so no new request is processed; those accepted
                                    // are answered, and the client closes once it has them
                                    // (RFC 9114 §5.2). The control stream (SETTINGS first) is
                                    // opened now if this turn has not yet done it.
                                    self.start(conn, ctx.max_field_section as u64);
                                    self.send_goaway(conn);
                                }
                            }
                        }
                        Dir::Uni => {
                            self.uni.insert(id, Uni::Header(Vec::new()));
                        }
                    }
                    self.read(conn, id, ctx, now);
                }
            }
            Event::Stream(StreamEvent::Readable { id }) => self.read(conn, id, ctx, now),
            Event::Stream(StreamEvent::Stopped { id, error_code }) => {
                // The client abandoned the response: the reset frees the stream (and gives
                // the client its stream credit back).
                let _ = conn.send_stream(id).reset(error_code);
                if self.forget(id).is_some() {
                    let _ = conn.recv_stream(id).stop(h3_code(0x0100));
                    self.qdec.cancel_stream(u64::from(id));
                }
            }
            Event::Stream(StreamEvent::Finished { id }) if id.dir() == Dir::Bi => {
                self.unacked = self.unacked.saturating_sub(1);
            }
            Event::ConnectionLost { .. } => self.closed = true,
            _ => {}
        }
    }

    /// Reads what stream `id` has.
    fn read(&mut self, conn: &mut Connection, id: StreamId, ctx: &mut Ctx, now: Instant) {
        let bidi = id.dir() == Dir::Bi;
        let mut rs = conn.recv_stream(id);
        let Ok(mut chunks) = rs.read(true) else {
            return;
        };
        let mut fin = false;
        let mut reset = None;
        let mut err: Option<(Scope, ErrorCode)> = None;
        loop {
            match chunks.next(usize::MAX) {
                Ok(Some(chunk)) => {
                    if err.is_none() {
                        err = if bidi {
                            self.feed_request(id, &chunk.bytes, false)
                        } else {
                            self.feed_uni(id, &chunk.bytes, false)
                        };
                    }
                }
                Ok(None) => {
                    fin = true;
                    break;
                }
                Err(ReadError::Blocked) => break,
                Err(ReadError::Reset(code)) => {
                    reset = Some(code);
                    break;
                }
            }
        }
        let _ = chunks.finalize();
        if err.is_none() && fin {
            err = if bidi {
                self.feed_request(id, &[], true)
            } else {
                self.feed_uni(id, &[], true)
            };
        }
        if reset.is_some() {
            if bidi {
                // An abandoned request: forget it (and any blocked section).
                if self.forget(id).is_some() {
                    let _ = conn.send_stream(id).reset(h3_code(0x010c));
                    self.qdec.cancel_stream(u64::from(id));
                }
            } else if self.uni.contains_key(&id) {
                match self.peer_streams.closed(u64::from(id)) {
                    Ok(()) => {
                        self.uni.remove(&id);
                    }
                    Err(e) => err = Some((Scope::Connection, e.code)),
                }
            }
        }
        match err {
            Some((Scope::Connection, code)) => self.close(conn, code, ""),
            Some((Scope::Stream, code)) => self.reset_stream(conn, id, code),
            None => {}
        }
        self.unblock(conn, ctx, now);
        if bidi {
            self.maybe_answer(conn, id, ctx, now);
        }
    }

    /// Feeds request-stream bytes to the parser.
    fn feed_request(
        &mut self,
        id: StreamId,
        bytes: &[u8],
        fin: bool,
    ) -> Option<(Scope, ErrorCode)> {
        let r = self.reqs.get_mut(&id)?;
        if r.phase != Phase::Receiving || r.sink.ended {
            return None;
        }
        r.fin |= fin;
        if r.inbuf.len() + bytes.len() > MAX_QUEUED_INPUT {
            // Bytes queue here only behind a header section blocked on QPACK inserts; reading
            // them returns flow-control credit, so without a bound a client that references
            // an insert it never sends could make us buffer without limit.
            return Some((Scope::Stream, ErrorCode::H3_EXCESSIVE_LOAD));
        }
        let res = if r.inbuf.is_empty() {
            r.recv
                .recv(bytes, fin, &mut self.qdec, &mut r.sink)
                .map(|p| {
                    r.inbuf
                        .extend_from_slice(bytes.get(p.consumed..).unwrap_or_default());
                })
        } else {
            r.inbuf.extend_from_slice(bytes);
            let input = std::mem::take(&mut r.inbuf);
            let res = r.recv.recv(&input, fin, &mut self.qdec, &mut r.sink);
            let used = res.as_ref().map_or(0, |p| p.consumed);
            r.inbuf = input;
            r.inbuf.drain(..used);
            res.map(|_| ())
        };
        match res {
            Ok(()) => None,
            Err(e) => Some((e.scope(), e.code())),
        }
    }

    /// Decodes sections the encoder stream released, and the bytes queued behind them, and
    /// answers the requests they complete. A request whose HEADERS referenced inserts still
    /// in flight on the encoder stream (a browser's second request, often its first) is
    /// complete only here: its own stream has nothing more to say (FIN came with the HEADERS).
    fn unblock(&mut self, conn: &mut Connection, ctx: &mut Ctx, now: Instant) {
        while let Some(sid) = self.qdec.next_unblocked() {
            let Ok(id) = quinn_proto::VarInt::from_u64(sid).map(StreamId::from) else {
                self.qdec.cancel_stream(sid);
                continue;
            };
            let Some(r) = self.reqs.get_mut(&id) else {
                self.qdec.cancel_stream(sid);
                continue;
            };
            let res = r.recv.resume(&mut self.qdec, &mut r.sink);
            let err = match res {
                Ok(_) => {
                    let fin = r.fin;
                    let rest = std::mem::take(&mut r.inbuf);
                    self.feed_request(id, &rest, fin)
                }
                Err(e) => Some((e.scope(), e.code())),
            };
            match err {
                Some((Scope::Connection, code)) => {
                    self.close(conn, code, "");
                    return;
                }
                Some((Scope::Stream, code)) => self.reset_stream(conn, id, code),
                None => self.maybe_answer(conn, id, ctx, now),
            }
        }
    }

    /// Routes request `id` once it is complete.
    fn maybe_answer(&mut self, conn: &mut Connection, id: StreamId, ctx: &mut Ctx, now: Instant) {
        let Some(r) = self.reqs.get_mut(&id) else {
            return;
        };
        if r.phase != Phase::Receiving {
            return;
        }
        let too_large = r.sink.body_len > ctx.max_request_body;
        if !r.sink.ended && !too_large {
            return;
        }
        let resp = if too_large {
            // RFC 9114 §4.1.1: a complete response may come before the whole request; the
            // rest is refused with STOP_SENDING(H3_NO_ERROR).
            let _ = conn.recv_stream(id).stop(h3_code(ErrorCode::H3_NO_ERROR.0));
            Response::error(413)
        } else {
            let fields = &r.sink.fields;
            let method_raw = fields.get(b":method").unwrap_or(b"GET");
            let target = fields.get(b":path").unwrap_or(b"/");
            let req = Request {
                method: Method::parse(method_raw),
                method_raw,
                target,
                proto: HttpVersion::H3,
                tls: true,
                body_len: Some(r.sink.body_len),
                headers: fields,
                early: conn.is_handshaking(), // complete before the handshake: 0-RTT
            };
            ctx.router.route(&req, &mut r.dynamic)
        };
        let mut resp = resp;
        if let Some(page) = resp.early_hints.take() {
            self.early_hints(conn, id, &page);
        }
        let Some(r) = self.reqs.get_mut(&id) else {
            return;
        };
        match resp.delay {
            Some(d) if !d.is_zero() => {
                r.phase = Phase::Delayed;
                r.pending = Some((now + d, resp));
                self.delayed.push((now + d, id));
            }
            _ => self.respond(conn, id, resp, ctx),
        }
    }

    /// Sends `103 Early Hints` on `id` (RFC 8297; RFC 9114 §4.1: interim HEADERS before
    /// the final one) naming `page`'s render-blocking assets. What QUIC does not take now
    /// goes ahead of the final head ([`Req::early`]).
    fn early_hints(&mut self, conn: &mut Connection, id: StreamId, page: &PageParams) {
        let Some(r) = self.reqs.get_mut(&id) else {
            return;
        };
        let mut link = Vec::new();
        page.write_preload_links(&mut link);
        let mut section = Vec::new();
        self.qenc.encode(
            u64::from(id),
            [(&b":status"[..], &b"103"[..]), (b"link", link.as_slice())],
            &mut section,
            &mut self.encoder_out.buf,
        );
        let mut frame = Vec::new();
        if r.send.headers(&section, true, None, &mut frame).is_err() {
            return;
        }
        // The encoder stream goes first: the section may reference what it inserts.
        if !self.encoder_out.flush(conn) {
            self.close(conn, ErrorCode::H3_CLOSED_CRITICAL_STREAM, "");
            return;
        }
        let Some(r) = self.reqs.get_mut(&id) else {
            return;
        };
        let taken = conn.send_stream(id).write(&frame).unwrap_or(0);
        r.early
            .extend_from_slice(frame.get(taken..).unwrap_or_default());
    }

    /// Encodes and queues the response head and body of `id`.
    fn respond(&mut self, conn: &mut Connection, id: StreamId, resp: Response, ctx: &mut Ctx) {
        let Some(r) = self.reqs.get_mut(&id) else {
            return;
        };
        let no_body = resp.head_only || resp.body.is_empty() || resp.no_content_length();
        let section = self.heads.encode(
            &mut self.qenc,
            u64::from(id),
            &resp,
            ctx.date.get(),
            &mut self.encoder_out.buf,
        );
        r.head.clear();
        r.head.append(&mut r.early);
        let declared = (!resp.no_content_length()).then(|| resp.body.len());
        let _ = r.send.headers(section, false, declared, &mut r.head);
        let body_len = resp.body.len();
        let cursor = if no_body {
            None
        } else {
            let _ = r.send.data_header(body_len, &mut r.head);
            Some(BodyCursor::new(resp.body))
        };
        r.start_body(cursor, &mut self.last_head);
        // The encoder stream goes first: the HEADERS may reference what it inserts.
        if !self.encoder_out.flush(conn) {
            self.close(conn, ErrorCode::H3_CLOSED_CRITICAL_STREAM, "");
        }
        self.sending.push(id);
    }

    /// Writes response data for every stream that has some.
    fn pump(&mut self, conn: &mut Connection, ctx: &mut Ctx) {
        let mut i = 0;
        while i < self.sending.len() {
            let id = self.sending[i];
            let done = match self.reqs.get_mut(&id) {
                None => true,
                Some(r) => match r.pump(conn, &mut ctx.scratch) {
                    Ok(()) => r.phase == Phase::Done,
                    Err(()) => {
                        self.forget(id);
                        true
                    }
                },
            };
            if done {
                self.sending.swap_remove(i);
                if let Some(r) = self.reqs.get(&id) {
                    if r.phase == Phase::Done {
                        self.unacked += 1;
                        if !r.fin {
                            let _ = conn.recv_stream(id).stop(h3_code(ErrorCode::H3_NO_ERROR.0));
                        }
                        self.forget(id);
                    }
                }
            } else {
                i += 1;
            }
        }
    }

    fn fire_timers(&mut self, conn: &mut Connection, ctx: &mut Ctx, now: Instant) {
        let mut i = 0;
        while i < self.delayed.len() {
            let (at, id) = self.delayed[i];
            if at > now {
                i += 1;
                continue;
            }
            self.delayed.swap_remove(i);
            // The stream may be gone (reset) or reused meanwhile: only a pending response
            // fires.
            let Some(r) = self.reqs.get_mut(&id) else {
                continue;
            };
            if let Some((_, resp)) = r.pending.take() {
                self.respond(conn, id, resp, ctx);
            }
        }
    }
}

impl crate::quic::ConnApp for H3Conn {
    type Ctx = Ctx;

    fn drive(&mut self, conn: &mut Connection, ctx: &mut Ctx, now: Instant) {
        if self.closed {
            while conn.poll().is_some() {}
            return;
        }
        while let Some(ev) = conn.poll() {
            self.on_event(conn, ev, ctx, now);
            if self.closed {
                return;
            }
        }
        self.start(conn, ctx.max_field_section as u64);
        self.fire_timers(conn, ctx, now);
        self.pump(conn, ctx);
        self.qdec.take_decoder_stream(&mut self.decoder_out.buf);
        let flushed = self.control.flush(conn)
            && self.encoder_out.flush(conn)
            && self.decoder_out.flush(conn);
        if !flushed {
            self.close(conn, ErrorCode::H3_CLOSED_CRITICAL_STREAM, "");
        }
    }

    fn deadline(&self) -> Option<Instant> {
        self.delayed.iter().map(|(t, _)| *t).min()
    }

    fn on_shutdown(&mut self, conn: &mut Connection, _now: Instant) {
        if self.closed || !self.started {
            return;
        }
        self.send_goaway(conn);
    }

    fn settled(&self) -> bool {
        self.closed || (self.reqs.is_empty() && self.delayed.is_empty() && self.unacked == 0)
    }
}
