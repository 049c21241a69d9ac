//! The receive path: frames in, events and control frames out. Dispatch and the rules
//! shared by every frame live here; each frame family has its own file, like `frame/`.

mod control;
mod data;
mod headers;
pub(crate) mod memo;
mod priority;

use crate::frame::{
    check_preface, Assembled, Decoded, ErrorCode, Frame, FrameHeader, GoAway, H2Error,
    PrefaceCheck, RstStream, Scope, StreamId,
};

use super::conn::{Connection, HeaderEncoder, Role, State};
use super::error::ConnError;
use super::events::Events;
use super::store::Closed;

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
            if !matches!(decoded, Decoded::NeedMore(_)) {
                if let Some(head) = FrameHeader::parse(buf) {
                    sink.frame_received(&head);
                }
            }
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
            match st.role {
                // RFC 9113 §8.4: "A client cannot push. Thus, servers MUST
                // treat the receipt of a PUSH_PROMISE frame as a connection
                // error (Section 5.4.1) of type PROTOCOL_ERROR."
                Role::Server => {
                    return Err(protocol("RFC 9113 §8.4: PUSH_PROMISE sent by a client"))
                }
                // RFC 9113 §8.4: "A client cannot push. ... If a client
                // receives a PUSH_PROMISE ... Receiving a PUSH_PROMISE frame
                // when push is disabled" — RFC 9113 §6.5.2: "A client that has
                // both set this parameter to 0 and had it acknowledged MUST
                // treat the receipt of a PUSH_PROMISE frame as a connection
                // error (Section 5.4.1) of type PROTOCOL_ERROR." (We send
                // ENABLE_PUSH = 0 before any request, so a server has processed
                // it before it could push.)
                Role::Client if !st.local.enable_push => {
                    return Err(protocol("RFC 9113 §6.5.2: PUSH_PROMISE with push disabled"))
                }
                Role::Client => {}
            }
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
            // RFC 9218 §7.1: PRIORITY_UPDATE (type 0x10).
            Frame::Unknown { header, payload }
                if header.kind.as_u8() == crate::frame::PRIORITY_UPDATE_TYPE =>
            {
                self.on_priority_update(header, payload, sink)
            }
            // RFC 9113 §5.5: "Implementations MUST discard frames that have
            // unknown or unsupported types."
            Frame::Priority(_) | Frame::Unknown { .. } => self.guard.idle(&self.limits),
            // Field-block frames never reach here (the assembler takes them).
            Frame::Headers(_) | Frame::Continuation(_) | Frame::PushPromise(_) => Ok(()),
        }
    }
}
