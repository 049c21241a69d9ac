//! DATA frames: flow control, content-length, end of stream (RFC 9113 §6.1).

use crate::frame::{encode_window_update, Data, ErrorCode, H2Error, Scope, StreamId};

use super::{protocol, Absent};
use crate::h2::conn::State;
use crate::h2::events::Events;
use crate::h2::store::{flag, Closed};

impl State {
    pub(super) fn on_data(
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

    pub(super) fn data_on_stream(
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
            // the stream window is used (manual windows: only the padding,
            // the caller returns the data with `release_stream_window`).
            let manual = self.manual_stream_windows;
            s.recv.release(if manual {
                flen.saturating_sub(d.data.len() as u32)
            } else {
                flen
            });
            if let Some(inc) = s.recv.take_update() {
                encode_window_update(id, inc, out);
            }
        }
        Ok(())
    }

    /// The peer ended its side of `id`.
    pub(super) fn recv_end(&mut self, id: StreamId) {
        if let Some(s) = self.streams.get_mut(id) {
            s.set(flag::RECV_CLOSED);
            if s.is_closed() {
                self.streams.remove(id);
                self.closed.push(id, Closed::Normally);
            }
        }
    }
}
