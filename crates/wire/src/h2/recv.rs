//! The receive path: frames in, events and control frames out.

use crate::frame::{
    check_preface, encode_settings_ack, encode_window_update, Assembled, BlockKind, Data, Decoded,
    ErrorCode, Frame, GoAway, H2Error, HeaderBlock, Ping, PrefaceCheck, RstStream, Scope, Settings,
    StreamId, WindowUpdate,
};
use crate::hpack::HpackError;

use super::conn::{Connection, HeaderEncoder, Role, State};
use super::error::ConnError;
use super::events::{Events, HeadersDone, HeadersKind};
use super::fields::{BlockKind as Expect, FieldCheck, Malformed};
use super::store::{flag, Closed};

/// Where an absent stream id stands (RFC 9113 §5.1).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Absent {
    /// Never opened: above every id opened by its initiator.
    Idle,
    /// Opened (or skipped, §5.1.1) and now closed.
    Closed,
}

const fn conn_err(code: ErrorCode, rule: &'static str) -> H2Error {
    H2Error::connection(code, rule)
}

const fn protocol(rule: &'static str) -> H2Error {
    conn_err(ErrorCode::PROTOCOL_ERROR, rule)
}

impl<E: HeaderEncoder> Connection<E> {
    /// Process received bytes: every complete frame at the start of `input`
    /// is handled; returns how many bytes were consumed. An incomplete frame
    /// at the end is **not** consumed and not buffered: keep those bytes and
    /// pass them again, followed by more, on the next call (the caller's read
    /// buffer must hold at least [`max_frame_len`](Connection::max_frame_len)
    /// bytes). Replies (SETTINGS/PING ACKs, WINDOW_UPDATEs, RST_STREAMs) are
    /// appended to `out`; decoded headers and data go to `sink`.
    ///
    /// A server first expects the client connection preface (RFC 9113
    /// §3.4). Starts the connection (see [`start`](Connection::start)) if
    /// that was not done.
    ///
    /// On a connection error, GOAWAY is appended to `out` and the error is
    /// returned (and returned again by every later call): flush `out`, then
    /// close the transport. Streams still open then are not reported one by
    /// one: they all failed with the connection.
    pub fn recv(
        &mut self,
        input: &[u8],
        out: &mut Vec<u8>,
        sink: &mut (impl Events + ?Sized),
    ) -> Result<usize, ConnError> {
        if let Some(e) = self.st.error {
            return Err(e);
        }
        self.st.start(out);
        let mut pos = 0;
        if self.st.awaiting_preface {
            match check_preface(input) {
                Ok(PrefaceCheck::NeedMore(_)) => return Ok(0),
                Ok(PrefaceCheck::Ok(n)) => {
                    pos = n;
                    self.st.awaiting_preface = false;
                }
                // RFC 9113 §3.4: "Clients and servers MUST treat an invalid
                // connection preface as a connection error (Section 5.4.1) of
                // type PROTOCOL_ERROR."
                Err(e) => return Err(self.st.fail(e, out)),
            }
        }
        while let Some(buf) = input.get(pos..).filter(|b| !b.is_empty()) {
            let decoded = match self.st.frames.decode(buf) {
                Ok(d) => d,
                Err(e) => return Err(self.st.fail(e, out)),
            };
            let (result, consumed) = match decoded {
                Decoded::NeedMore(_) => break,
                Decoded::Frame { frame, consumed } => (self.on_frame(frame, out, sink), consumed),
                Decoded::StreamError {
                    error,
                    frame,
                    consumed,
                } => (self.on_bad_frame(error, frame, out, sink), consumed),
            };
            if let Err(e) = result {
                return Err(self.st.fail(e, out));
            }
            pos += consumed;
        }
        Ok(pos)
    }

    fn on_frame(
        &mut self,
        frame: Frame<'_>,
        out: &mut Vec<u8>,
        sink: &mut (impl Events + ?Sized),
    ) -> Result<(), H2Error> {
        let st = &mut self.st;
        if st.awaiting_settings {
            // RFC 9113 §3.4: the client preface "MUST be followed by a SETTINGS
            // frame"; the server's SETTINGS "MUST be the first frame the server
            // sends". Anything else is an invalid preface: "Clients and servers
            // MUST treat an invalid connection preface as a connection error
            // (Section 5.4.1) of type PROTOCOL_ERROR."
            match frame {
                Frame::Settings(s) if !s.ack => st.awaiting_settings = false,
                _ => return Err(protocol("RFC 9113 §3.4: first frame is not SETTINGS")),
            }
        }
        if let Frame::PushPromise(_) = frame {
            return Err(match st.role {
                // RFC 9113 §8.4: "A client cannot push. Thus, servers MUST
                // treat the receipt of a PUSH_PROMISE frame as a connection
                // error (Section 5.4.1) of type PROTOCOL_ERROR."
                Role::Server => protocol("RFC 9113 §8.4: PUSH_PROMISE sent by a client"),
                // RFC 9113 §6.5.2: "A client that has both set this parameter
                // to 0 and had it acknowledged MUST treat the receipt of a
                // PUSH_PROMISE frame as a connection error (Section 5.4.1) of
                // type PROTOCOL_ERROR." (We always send ENABLE_PUSH = 0 before
                // any request, so a server has processed it before it could
                // push.)
                Role::Client => protocol("RFC 9113 §6.5.2: PUSH_PROMISE with push disabled"),
            });
        }
        match self.asm.push(&frame)? {
            Assembled::Other => {
                let r = st.on_other(frame, out, sink);
                if let Some(n) = st.enc_pending.take() {
                    self.enc.set_max_table_size(n);
                }
                r
            }
            Assembled::Pending => {
                // An empty fragment that does not end the block does nothing.
                if frame_fragment_is_empty(&frame) {
                    st.guard.idle(&st.limits)?;
                }
                Ok(())
            }
            Assembled::Complete(block) => st.on_block(block, out, sink),
        }
    }

    /// A complete frame that carries a stream error (decoder-level check).
    fn on_bad_frame(
        &mut self,
        error: H2Error,
        frame: Option<Frame<'_>>,
        out: &mut Vec<u8>,
        sink: &mut (impl Events + ?Sized),
    ) -> Result<(), H2Error> {
        if let Some(f) = frame {
            // A HEADERS frame whose block must still be decoded (RFC 9113
            // §4.3) before the stream error is applied.
            self.st.block_error = Some(error);
            return self.on_frame(f, out, sink);
        }
        if self.asm.is_open() {
            // RFC 9113 §6.2: "A HEADERS frame without the END_HEADERS flag set
            // MUST be followed by a CONTINUATION frame for the same stream. A
            // receiver MUST treat the receipt of any other type of frame or a
            // frame on a different stream as a connection error (Section
            // 5.4.1) of type PROTOCOL_ERROR."
            return Err(protocol(
                "RFC 9113 §6.10: other frame inside an open header block",
            ));
        }
        if self.st.awaiting_settings {
            return Err(protocol("RFC 9113 §3.4: first frame is not SETTINGS"));
        }
        self.st.stream_error(error, out, sink)
    }
}

fn frame_fragment_is_empty(frame: &Frame<'_>) -> bool {
    match frame {
        Frame::Headers(h) => h.fragment.is_empty(),
        Frame::Continuation(c) => c.fragment.is_empty(),
        _ => false,
    }
}

impl State {
    /// Record a local connection error: write GOAWAY and remember it.
    pub(crate) fn fail(&mut self, e: H2Error, out: &mut Vec<u8>) -> ConnError {
        let err = ConnError::local(e);
        if self.error.is_none() {
            let last = StreamId::new(self.last_peer_id);
            let last = self.goaway_sent.map_or(last, |prev| prev.min(last));
            // RFC 9113 §5.4.1: "An endpoint that encounters a connection error
            // SHOULD first send a GOAWAY frame (Section 6.8) with the stream
            // identifier of the last stream that it successfully received from
            // its peer. The GOAWAY frame includes an error code (Section 7)
            // that indicates why the connection is terminating."
            GoAway {
                last_stream_id: last,
                error_code: e.code,
                debug_data: e.rule.as_bytes(),
            }
            .encode(out);
            self.goaway_sent = Some(last);
            self.error = Some(err);
        }
        err
    }

    /// Is `id` initiated by the peer?
    fn peer_initiated(&self, id: StreamId) -> bool {
        match self.role {
            Role::Server => id.is_client_initiated(),
            Role::Client => id.is_server_initiated(),
        }
    }

    /// RFC 9113 §5.1.1: "The first use of a new stream identifier implicitly
    /// closes all streams in the "idle" state that might have been initiated
    /// by that peer with a lower-valued stream identifier."
    fn absent(&self, id: StreamId) -> Absent {
        let limit = if self.peer_initiated(id) {
            self.last_peer_id
        } else {
            self.next_local_id.saturating_sub(1)
        };
        if id.get() > limit {
            Absent::Idle
        } else {
            Absent::Closed
        }
    }

    /// Apply a stream error (RFC 9113 §5.4.2): RST_STREAM, forget the
    /// stream, tell the sink. A stream error on an idle stream becomes a
    /// connection error (an RST_STREAM on an idle stream is itself forbidden,
    /// RFC 9113 §6.4).
    pub(crate) fn stream_error(
        &mut self,
        e: H2Error,
        out: &mut Vec<u8>,
        sink: &mut (impl Events + ?Sized),
    ) -> Result<(), H2Error> {
        let Scope::Stream(id) = e.scope else {
            return Err(e);
        };
        if self.streams.remove(id).is_some() {
            // RFC 9113 §5.4.2: "An endpoint that detects a stream error sends a
            // RST_STREAM frame (Section 6.4) that contains the stream
            // identifier of the stream where the error occurred."
            RstStream::new(id, e.code).encode(out);
            self.closed.push(id, Closed::ByUs);
            sink.reset(id, e.code, false);
        } else {
            if self.absent(id) == Absent::Idle {
                return Err(conn_err(e.code, e.rule));
            }
            RstStream::new(id, e.code).encode(out);
            if self.closed.find(id) != Some(Closed::ByUs) {
                self.closed.push(id, Closed::ByUs);
            }
        }
        self.guard.stream_error(&self.limits)
    }

    fn on_other(
        &mut self,
        frame: Frame<'_>,
        out: &mut Vec<u8>,
        sink: &mut (impl Events + ?Sized),
    ) -> Result<(), H2Error> {
        match frame {
            Frame::Data(d) => self.on_data(d, out, sink),
            Frame::Settings(s) => self.on_settings(s, out, sink),
            Frame::Ping(p) => self.on_ping(p, out, sink),
            Frame::WindowUpdate(w) => self.on_window_update(w, out, sink),
            Frame::RstStream(r) => self.on_rst(r, sink),
            Frame::GoAway(g) => {
                self.on_goaway(g, sink);
                Ok(())
            }
            // RFC 9113 §5.3.2: "a PRIORITY frame can be sent and received in
            // any stream state"; RFC 9113 §5.3: the signaling scheme is
            // deprecated and we do not prioritize. (Stream 0 and
            // self-dependency are rejected by the frame decoder.)
            // RFC 9113 §5.5: "Implementations MUST discard frames that have
            // unknown or unsupported types."
            Frame::Priority(_) | Frame::Unknown { .. } => self.guard.idle(&self.limits),
            // Field-block frames never reach here (the assembler takes them).
            Frame::Headers(_) | Frame::Continuation(_) | Frame::PushPromise(_) => Ok(()),
        }
    }

    fn on_data(
        &mut self,
        d: Data<'_>,
        out: &mut Vec<u8>,
        sink: &mut (impl Events + ?Sized),
    ) -> Result<(), H2Error> {
        let flen = d.flow_controlled_len();
        // RFC 9113 §6.9: "The entire DATA frame payload is included in flow
        // control, including the Pad Length and Padding fields if present."
        // The connection window counts DATA on every stream, whatever its
        // state, so both ends keep the same view of it.
        self.conn_recv.recv(flen, Scope::Connection)?;
        self.conn_recv.release(flen);
        let r = self.data_on_stream(d, flen, out, sink);
        if let Some(inc) = self.conn_recv.take_update() {
            encode_window_update(StreamId::ZERO, inc, out);
        }
        r
    }

    fn data_on_stream(
        &mut self,
        d: Data<'_>,
        flen: u32,
        out: &mut Vec<u8>,
        sink: &mut (impl Events + ?Sized),
    ) -> Result<(), H2Error> {
        let id = d.stream_id;
        let Some(s) = self.streams.get_mut(id) else {
            return match self.absent(id) {
                // RFC 9113 §5.1 idle: "Receiving any frame other than HEADERS
                // or PRIORITY on a stream in this state MUST be treated as a
                // connection error (Section 5.4.1) of type PROTOCOL_ERROR."
                Absent::Idle => Err(protocol("RFC 9113 §5.1: DATA on an idle stream")),
                Absent::Closed if self.closed.find(id) == Some(Closed::ByUs) => {
                    // RFC 9113 §5.1: "An endpoint MUST ignore frames that it
                    // receives on closed streams after it has sent a
                    // RST_STREAM frame."
                    self.guard.idle(&self.limits)
                }
                // RFC 9113 §6.1: "If a DATA frame is received whose stream is
                // not in the "open" or "half-closed (local)" state, the
                // recipient MUST respond with a stream error (Section 5.4.2)
                // of type STREAM_CLOSED."
                Absent::Closed => self.stream_error(
                    H2Error::stream(
                        id,
                        ErrorCode::STREAM_CLOSED,
                        "RFC 9113 §6.1: DATA on a closed stream",
                    ),
                    out,
                    sink,
                ),
            };
        };
        if s.has(flag::RECV_CLOSED) {
            // RFC 9113 §5.1 half-closed (remote): "If an endpoint receives
            // additional frames, other than WINDOW_UPDATE, PRIORITY, or
            // RST_STREAM, for a stream that is in this state, it MUST respond
            // with a stream error (Section 5.4.2) of type STREAM_CLOSED."
            let e = H2Error::stream(
                id,
                ErrorCode::STREAM_CLOSED,
                "RFC 9113 §5.1: DATA on a half-closed (remote) stream",
            );
            return self.stream_error(e, out, sink);
        }
        if !s.has(flag::GOT_HEADERS) {
            // RFC 9113 §8.1: an HTTP message starts with a header section; a
            // response whose DATA precedes its final HEADERS is malformed.
            let e = H2Error::stream(
                id,
                ErrorCode::PROTOCOL_ERROR,
                "RFC 9113 §8.1: DATA before the final header section",
            );
            return self.stream_error(e, out, sink);
        }
        // RFC 9113 §6.9.1: "A receiver MAY respond with a stream error
        // (Section 5.4.2) or connection error (Section 5.4.1) of type
        // FLOW_CONTROL_ERROR if it is unable to accept a frame." — the peer
        // sent more than the window it was given.
        if let Err(e) = s.recv.recv(flen, Scope::Stream(id)) {
            return self.stream_error(e, out, sink);
        }
        s.received = s.received.saturating_add(d.data.len() as u64);
        if let Some(cl) = s.content_length.filter(|_| !s.has(flag::NO_BODY)) {
            // RFC 9113 §8.1.1: "A request or response is also malformed if the
            // value of a content-length header field does not equal the sum of
            // the DATA frame payload lengths that form the content".
            if s.received > cl || (d.end_stream && s.received != cl) {
                let e = H2Error::stream(
                    id,
                    ErrorCode::PROTOCOL_ERROR,
                    "RFC 9113 §8.1.1: DATA length does not match content-length",
                );
                return self.stream_error(e, out, sink);
            }
        }
        if d.data.is_empty() && !d.end_stream {
            self.guard.idle(&self.limits)?;
        } else {
            self.guard.progress();
        }
        sink.data(id, d.data, d.end_stream);
        if d.end_stream {
            self.recv_end(id);
        } else if let Some(s) = self.streams.get_mut(id) {
            // The sink consumed the bytes: return them to the peer once half
            // the stream window is used.
            s.recv.release(flen);
            if let Some(inc) = s.recv.take_update() {
                encode_window_update(id, inc, out);
            }
        }
        Ok(())
    }

    /// The peer ended its side of `id`.
    fn recv_end(&mut self, id: StreamId) {
        if let Some(s) = self.streams.get_mut(id) {
            s.set(flag::RECV_CLOSED);
            if s.is_closed() {
                self.streams.remove(id);
                self.closed.push(id, Closed::Normally);
            }
        }
    }

    fn on_settings(
        &mut self,
        s: Settings,
        out: &mut Vec<u8>,
        sink: &mut (impl Events + ?Sized),
    ) -> Result<(), H2Error> {
        if s.ack {
            if self.settings_unacked > 0 {
                self.settings_unacked -= 1;
                if !self.local_applied {
                    self.apply_local();
                }
            }
            return Ok(());
        }
        self.guard.settings(&self.limits)?;
        let opened = self.apply_peer_settings(&s)?;
        // RFC 9113 §6.5.3: "Once all values have been processed, the
        // recipient MUST immediately emit a SETTINGS frame with the ACK flag
        // set."
        encode_settings_ack(out);
        sink.settings_changed();
        if opened {
            sink.window_opened(None);
        }
        Ok(())
    }

    /// Apply the peer's SETTINGS values (from a SETTINGS frame or, after an
    /// h2c upgrade, the HTTP2-Settings header field). Returns whether stream
    /// send windows grew. The ACK is the caller's business.
    pub(crate) fn apply_peer_settings(&mut self, s: &Settings) -> Result<bool, H2Error> {
        if self.role == Role::Client && s.enable_push == Some(true) {
            // RFC 9113 §6.5.2: "A client MUST treat receipt of a SETTINGS
            // frame with SETTINGS_ENABLE_PUSH set to 1 as a connection error
            // (Section 5.4.1) of type PROTOCOL_ERROR."
            return Err(protocol(
                "RFC 9113 §6.5.2: server sent SETTINGS_ENABLE_PUSH = 1",
            ));
        }
        let old = self.peer.initial_window_size;
        let mut opened = false;
        if let Some(new) = s.initial_window_size {
            // RFC 9113 §6.9.2: "When the value of SETTINGS_INITIAL_WINDOW_SIZE
            // changes, a receiver MUST adjust the size of all stream
            // flow-control windows that it maintains by the difference between
            // the new value and the old value." ... "An endpoint MUST treat a
            // change to SETTINGS_INITIAL_WINDOW_SIZE that causes any
            // flow-control window to exceed the maximum size as a connection
            // error (Section 5.4.1) of type FLOW_CONTROL_ERROR."
            let mut err = None;
            self.streams.for_each_mut(|st| {
                if err.is_none() {
                    err = st.send.apply_initial_window_size_delta(old, new).err();
                }
            });
            if let Some(e) = err {
                return Err(e);
            }
            opened = new > old;
        }
        if let Some(n) = s.header_table_size {
            // RFC 7541 §4.2: the encoder may use up to the decoder's limit and
            // signals the size it uses with a dynamic table size update.
            let n = n.min(self.local.encoder_table_size) as usize;
            if n != self.enc_size {
                self.enc_size = n;
                self.enc_pending = Some(n);
            }
        }
        self.peer.apply(s);
        Ok(opened)
    }

    /// The peer acknowledged our first SETTINGS: its values now bind it.
    fn apply_local(&mut self) {
        self.local_applied = true;
        let old = self.recv_initial;
        let new = self.local.initial_window_size;
        if new != old {
            // RFC 9113 §6.9.2 applies to our receive windows too; RFC 9113
            // §6.9.3: until the ACK "the receiver MUST be prepared to receive
            // data that exceeds this window size".
            self.streams.for_each_mut(|s| {
                let _ = s
                    .recv
                    .window_mut()
                    .apply_initial_window_size_delta(old, new);
                s.recv.set_target(new);
            });
            self.recv_initial = new;
        }
        let table = self.local.header_table_size as usize;
        if table != self.dec.max_table_size() {
            self.dec.set_max_table_size(table);
        }
    }

    fn on_ping(
        &mut self,
        p: Ping,
        out: &mut Vec<u8>,
        sink: &mut (impl Events + ?Sized),
    ) -> Result<(), H2Error> {
        if p.ack {
            // RFC 9113 §6.7: "An endpoint MUST NOT respond to PING frames
            // containing this flag."
            sink.ping_ack(p.payload);
            return Ok(());
        }
        self.guard.ping(&self.limits)?;
        // RFC 9113 §6.7: "Receivers of a PING frame that does not include an
        // ACK flag MUST send a PING frame with the ACK flag set in response,
        // with an identical frame payload."
        Ping::pong(p.payload).encode(out);
        Ok(())
    }

    fn on_window_update(
        &mut self,
        w: WindowUpdate,
        out: &mut Vec<u8>,
        sink: &mut (impl Events + ?Sized),
    ) -> Result<(), H2Error> {
        let id = w.stream_id;
        if id.is_zero() {
            // RFC 9113 §6.9.1: "If a sender receives a WINDOW_UPDATE that
            // causes a flow-control window to exceed this maximum, it MUST
            // terminate either the stream or the connection, as appropriate."
            self.conn_send.increase(w.increment, Scope::Connection)?;
            sink.window_opened(None);
            return Ok(());
        }
        let Some(s) = self.streams.get_mut(id) else {
            return match self.absent(id) {
                Absent::Idle => Err(protocol("RFC 9113 §5.1: WINDOW_UPDATE on an idle stream")),
                // RFC 9113 §6.9: "a receiver could receive a WINDOW_UPDATE
                // frame on a stream in a "half-closed (remote)" or "closed"
                // state. A receiver MUST NOT treat this as an error".
                Absent::Closed => self.guard.idle(&self.limits),
            };
        };
        if let Err(e) = s.send.increase(w.increment, Scope::Stream(id)) {
            return self.stream_error(e, out, sink);
        }
        if !s.has(flag::SEND_CLOSED) {
            sink.window_opened(Some(id));
        }
        Ok(())
    }

    fn on_rst(&mut self, r: RstStream, sink: &mut (impl Events + ?Sized)) -> Result<(), H2Error> {
        let id = r.stream_id;
        let Some(s) = self.streams.remove(id) else {
            return match self.absent(id) {
                // RFC 9113 §6.4: "If a RST_STREAM frame identifying an idle
                // stream is received, the recipient MUST treat this as a
                // connection error (Section 5.4.1) of type PROTOCOL_ERROR."
                Absent::Idle => Err(protocol("RFC 9113 §6.4: RST_STREAM on an idle stream")),
                // RFC 9113 §5.4.2: "an endpoint MUST NOT send a RST_STREAM in
                // response to a RST_STREAM frame" — nothing to do.
                Absent::Closed => self.guard.idle(&self.limits),
            };
        };
        self.closed.push(id, Closed::Normally);
        sink.reset(id, r.error_code, true);
        if self.role == Role::Server && !s.has(flag::LOCAL) && !s.has(flag::SEND_CLOSED) {
            self.guard.peer_reset(&self.limits)?;
        }
        Ok(())
    }

    fn on_goaway(&mut self, g: GoAway<'_>, sink: &mut (impl Events + ?Sized)) {
        let last = g.last_stream_id;
        self.goaway_recv = Some(self.goaway_recv.map_or(last, |prev| prev.min(last)));
        if g.error_code != ErrorCode::NO_ERROR {
            self.remote_error = Some(ConnError {
                error: H2Error::connection(g.error_code, "GOAWAY received from the peer"),
                initiator: super::error::Initiator::Remote,
            });
        }
        sink.goaway(last, g.error_code, g.debug_data);
        // RFC 9113 §6.8: "Activity on streams numbered lower than or equal to
        // the last stream identifier might still complete successfully. The
        // sender of the GOAWAY frame might gracefully shut down a connection by
        // sending a GOAWAY frame, maintaining the connection in an "open"
        // state until all in-progress streams complete." Streams we opened
        // above it were not processed and can be retried (§8.7).
        let mut n = self.streams.len();
        while n > 0 {
            n -= 1;
            let Some(id) = self.streams.id_at(n) else {
                continue;
            };
            if id <= last {
                break;
            }
            if self.streams.get(id).is_some_and(|s| s.has(flag::LOCAL)) {
                self.streams.remove(id);
                self.closed.push(id, Closed::Normally);
                sink.reset(id, ErrorCode::REFUSED_STREAM, true);
            }
        }
    }

    fn on_block(
        &mut self,
        block: HeaderBlock<'_>,
        out: &mut Vec<u8>,
        sink: &mut (impl Events + ?Sized),
    ) -> Result<(), H2Error> {
        let pre = self.block_error.take();
        match block.kind {
            BlockKind::Headers { end_stream, .. } => {
                self.on_headers(block.stream_id, end_stream, block.block, pre, out, sink)
            }
            BlockKind::PushPromise { .. } => {
                Err(protocol("RFC 9113 §8.4: unexpected PUSH_PROMISE"))
            }
        }
    }

    fn on_headers(
        &mut self,
        id: StreamId,
        end_stream: bool,
        block: &[u8],
        pre: Option<H2Error>,
        out: &mut Vec<u8>,
        sink: &mut (impl Events + ?Sized),
    ) -> Result<(), H2Error> {
        if let Some(s) = self.streams.get(id) {
            let kind = if s.has(flag::GOT_HEADERS) {
                Expect::Trailers
            } else {
                Expect::Response
            };
            let recv_closed = s.has(flag::RECV_CLOSED);
            let e = if recv_closed {
                // RFC 9113 §5.1 half-closed (remote): additional frames "MUST"
                // get "a stream error (Section 5.4.2) of type STREAM_CLOSED".
                Some(H2Error::stream(
                    id,
                    ErrorCode::STREAM_CLOSED,
                    "RFC 9113 §5.1: HEADERS on a half-closed (remote) stream",
                ))
            } else if pre.is_some() {
                pre
            } else if kind == Expect::Trailers && !end_stream {
                // RFC 9113 §8.1: "An endpoint that receives a HEADERS frame
                // without the END_STREAM flag set after receiving the HEADERS
                // frame that opens a request or after receiving a final
                // (non-informational) status code MUST treat the corresponding
                // request or response as malformed (Section 8.1.1)."
                Some(H2Error::stream(
                    id,
                    ErrorCode::PROTOCOL_ERROR,
                    "RFC 9113 §8.1: second HEADERS without END_STREAM",
                ))
            } else {
                None
            };
            if let Some(e) = e {
                self.discard_block(block)?;
                return self.stream_error(e, out, sink);
            }
            return self.deliver_block(id, kind, end_stream, block, out, sink);
        }

        match self.absent(id) {
            Absent::Closed => match self.closed.find(id) {
                Some(Closed::ByUs) => {
                    // RFC 9113 §5.1: frames on a stream we reset are ignored,
                    // but the block still updates the HPACK context (§4.3).
                    self.discard_block(block)?;
                    self.guard.idle(&self.limits)
                }
                // RFC 9113 §5.1 closed: "an endpoint that receives any frames
                // after receiving a frame with the END_STREAM flag set MUST
                // treat that as a connection error (Section 5.4.1) of type
                // STREAM_CLOSED".
                Some(Closed::Normally) => Err(conn_err(
                    ErrorCode::STREAM_CLOSED,
                    "RFC 9113 §5.1: HEADERS on a closed stream",
                )),
                // RFC 9113 §5.1.1: "The identifier of a newly established
                // stream MUST be numerically greater than all streams that the
                // initiating endpoint has opened or reserved. ... An endpoint
                // that receives an unexpected stream identifier MUST respond
                // with a connection error (Section 5.4.1) of type
                // PROTOCOL_ERROR."
                None => Err(protocol(
                    "RFC 9113 §5.1.1: HEADERS on a stream id already used",
                )),
            },
            Absent::Idle => {
                if self.role == Role::Client {
                    // RFC 9113 §5.1 idle: for a stream the server would
                    // initiate, "receiving a HEADERS frame MUST also be treated
                    // as a connection error (Section 5.4.1) of type
                    // PROTOCOL_ERROR"; a stream we have not opened is idle.
                    return Err(protocol("RFC 9113 §5.1: HEADERS on an idle stream"));
                }
                if !self.peer_initiated(id) {
                    // RFC 9113 §5.1.1: "Streams initiated by a client MUST use
                    // odd-numbered stream identifiers".
                    return Err(protocol("RFC 9113 §5.1.1: client stream with an even id"));
                }
                self.open_peer_stream(id, end_stream, block, pre, out, sink)
            }
        }
    }

    fn open_peer_stream(
        &mut self,
        id: StreamId,
        end_stream: bool,
        block: &[u8],
        pre: Option<H2Error>,
        out: &mut Vec<u8>,
        sink: &mut (impl Events + ?Sized),
    ) -> Result<(), H2Error> {
        self.last_peer_id = id.get();
        if self.goaway_sent.is_some_and(|last| id > last) {
            // RFC 9113 §6.8: "the sender can discard frames for streams
            // initiated by the receiver with identifiers higher than the
            // identified last stream." The block still feeds HPACK.
            self.discard_block(block)?;
            self.closed.push(id, Closed::ByUs);
            return self.guard.idle(&self.limits);
        }
        self.guard.stream_opened(&self.limits);
        let refuse = match self.local.max_concurrent_streams {
            Some(max) => self.streams.remote_active() >= max as usize,
            None => false,
        };
        let e = if let Some(e) = pre {
            Some(e)
        } else if refuse {
            // RFC 9113 §5.1.2: "An endpoint that receives a HEADERS frame that
            // causes its advertised concurrent stream limit to be exceeded MUST
            // treat this as a stream error (Section 5.4.2) of type
            // PROTOCOL_ERROR or REFUSED_STREAM."
            Some(H2Error::stream(
                id,
                ErrorCode::REFUSED_STREAM,
                "RFC 9113 §5.1.2: concurrent stream limit exceeded",
            ))
        } else {
            None
        };
        if let Some(e) = e {
            self.discard_block(block)?;
            return self.stream_error(e, out, sink);
        }
        let stream = self.new_stream(id, 0);
        self.streams.insert(stream);
        self.deliver_block(id, Expect::Request, end_stream, block, out, sink)
    }

    /// Decode a block only to keep the HPACK context in sync.
    fn discard_block(&mut self, block: &[u8]) -> Result<(), H2Error> {
        match self.dec.decode(block, |_| {}) {
            Ok(()) | Err(HpackError::HeaderListTooLarge { .. }) => Ok(()),
            Err(e) => Err(compression_error(e)),
        }
    }

    /// Decode, validate and deliver a field block on the open stream `id`.
    fn deliver_block(
        &mut self,
        id: StreamId,
        kind: Expect,
        end_stream: bool,
        block: &[u8],
        out: &mut Vec<u8>,
        sink: &mut (impl Events + ?Sized),
    ) -> Result<(), H2Error> {
        let mut check = FieldCheck::new(kind);
        let mut bad: Option<Malformed> = None;
        let mut decoded_len = 0usize;
        let res = self.dec.decode(block, |f| {
            if bad.is_some() {
                return;
            }
            match check.field(f.name, f.value) {
                Ok(()) => {
                    decoded_len = decoded_len.saturating_add(f.name.len() + f.value.len());
                    sink.header(id, f.name, f.value);
                }
                Err(m) => bad = Some(m),
            }
        });
        match res {
            Ok(()) => {}
            // RFC 9113 §10.5.1: "A server that receives a larger field block
            // than it is willing to handle can send an HTTP 431 (Request Header
            // Fields Too Large) status code. A client can discard responses
            // that it cannot process." The decoder kept the HPACK context in
            // sync; the stream is refused.
            Err(HpackError::HeaderListTooLarge { .. }) => {
                let e = H2Error::stream(
                    id,
                    ErrorCode::REFUSED_STREAM,
                    "RFC 9113 §10.5.1: header list larger than SETTINGS_MAX_HEADER_LIST_SIZE",
                );
                return self.stream_error(e, out, sink);
            }
            Err(e) => return Err(compression_error(e)),
        }
        let facts = match bad.map_or_else(|| check.finish(), Err) {
            Ok(f) => f,
            Err(rule) => {
                return self.stream_error(
                    H2Error::stream(id, ErrorCode::PROTOCOL_ERROR, rule),
                    out,
                    sink,
                )
            }
        };
        let client = self.role == Role::Client;
        let Some(s) = self.streams.get_mut(id) else {
            return Ok(());
        };
        let mut malformed: Option<Malformed> = None;
        let hk = match kind {
            Expect::Request => HeadersKind::Request,
            Expect::Trailers => HeadersKind::Trailers,
            Expect::Response => match facts.status {
                // RFC 9113 §8.6: "The 101 (Switching Protocols) informational
                // status code (Section 15.2.2 of [HTTP]) MUST NOT be used in
                // HTTP/2" — treat as malformed.
                Some(101) => {
                    malformed = Some("RFC 9113 §8.6: 101 Switching Protocols in HTTP/2");
                    HeadersKind::Informational
                }
                Some(100..=199) => {
                    // RFC 9113 §8.1: "A HEADERS frame with the END_STREAM flag
                    // set that carries an informational status code is
                    // malformed (Section 8.1.1)."
                    if end_stream {
                        malformed = Some("RFC 9113 §8.1: informational response with END_STREAM");
                    }
                    HeadersKind::Informational
                }
                _ => HeadersKind::Response,
            },
        };
        match hk {
            HeadersKind::Request | HeadersKind::Response => {
                s.set(flag::GOT_HEADERS);
                s.content_length = facts.content_length;
                // RFC 9110 §8.6: 204 and 304 responses carry no content
                // whatever content-length says.
                if matches!(facts.status, Some(204 | 304)) {
                    s.set(flag::NO_BODY);
                }
                // RFC 9113 §8.1.1: content-length must equal the DATA sum; a
                // request ending with its HEADERS has none. (A response ending
                // here may answer HEAD, RFC 9110 §9.3.2, which we cannot know.)
                if end_stream && !client && s.content_length.is_some_and(|n| n > 0) {
                    malformed = Some("RFC 9113 §8.1.1: content-length without DATA");
                }
            }
            HeadersKind::Trailers => {
                // RFC 9113 §8.1.1 at the end of the content. A client cannot
                // tell a response to HEAD: it only checks when DATA came.
                if let Some(cl) = s.content_length.filter(|_| !s.has(flag::NO_BODY)) {
                    if s.received != cl && (!client || s.received > 0) {
                        malformed =
                            Some("RFC 9113 §8.1.1: DATA length does not match content-length");
                    }
                }
            }
            HeadersKind::Informational => {}
        }
        if let Some(rule) = malformed {
            return self.stream_error(
                H2Error::stream(id, ErrorCode::PROTOCOL_ERROR, rule),
                out,
                sink,
            );
        }
        self.guard.progress();
        sink.headers_done(
            id,
            HeadersDone {
                kind: hk,
                end_stream,
                block_len: block.len(),
                decoded_len,
                status: facts.status,
                content_length: facts.content_length,
            },
        );
        if end_stream {
            self.recv_end(id);
        }
        Ok(())
    }
}

/// RFC 9113 §4.3: "A decoding error in a field block MUST be treated as a
/// connection error (Section 5.4.1) of type COMPRESSION_ERROR."
fn compression_error(e: HpackError) -> H2Error {
    let rule = match e {
        HpackError::ZeroIndex => "RFC 7541 §6.1: index 0",
        HpackError::IndexOutOfRange { .. } => "RFC 7541 §2.3.3: index out of range",
        HpackError::HuffmanEos => "RFC 7541 §5.2: EOS in a Huffman string",
        HpackError::HuffmanPaddingTooLong => "RFC 7541 §5.2: Huffman padding longer than 7 bits",
        HpackError::HuffmanInvalidPadding => "RFC 7541 §5.2: Huffman padding is not EOS",
        HpackError::IntegerOverflow => "RFC 7541 §5.1: integer overflow",
        HpackError::StringTooLong { .. } => "RFC 7541 §7.4: string literal too long",
        HpackError::Truncated => "RFC 9113 §4.3: truncated field block",
        HpackError::SizeUpdateNotAtStart => "RFC 7541 §4.2: size update after a field",
        HpackError::SizeUpdateTooLarge { .. } => {
            "RFC 7541 §6.3: size update above SETTINGS_HEADER_TABLE_SIZE"
        }
        HpackError::MissingSizeUpdate { .. } => {
            "RFC 9113 §4.3.1: missing dynamic table size update"
        }
        HpackError::HeaderListTooLarge { .. } => "RFC 9113 §10.5.1: header list too large",
    };
    conn_err(ErrorCode::COMPRESSION_ERROR, rule)
}
