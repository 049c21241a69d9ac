//! The wire connection's events ([`h2lab_wire::h2::Events`]) turned into the
//! session's [`SessionEvents`]: stream ids to slots, statuses, bodies, resets,
//! refused streams, GOAWAY and pushes.

use h2lab_wire::frame::{flags, FrameHeader, FrameKind, FRAME_HEADER_LEN};
use h2lab_wire::h2::{self as wh2, ErrorCode, HeadersDone, HeadersKind, StreamId};

use super::stream_map::StreamMap;
use super::PendingBody;
use crate::session::SessionEvents;

/// Adapts connection events to the worker's [`SessionEvents`].
pub(super) struct Bridge<'a> {
    pub(super) map: &'a mut StreamMap,
    pub(super) ev: &'a mut dyn SessionEvents,
    pub(super) goaway: &'a mut bool,
    pub(super) window_opened: bool,
    pub(super) verbose: bool,
    pub(super) bodies: &'a mut Vec<PendingBody>,
    pub(super) refusals: &'a mut u32,
    pub(super) refusal_budget: u32,
    pub(super) pushed: &'a mut Vec<u32>,
    pub(super) promised_path: &'a mut Vec<u8>,
    /// A PUSH_PROMISE's field block is still arriving (CONTINUATION frames follow).
    pub(super) in_promise: &'a mut bool,
    /// The section being decoded is a `103 Early Hints` (its `link` fields are reported).
    pub(super) hinting: bool,
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
        // `:status` comes first (RFC 9113 §8.3: pseudo-header fields precede the others).
        if name == b":status" {
            self.hinting = value == b"103";
        } else if self.hinting && name == b"link" {
            if let Some(slot) = self.map.get(stream.get()) {
                self.ev.early_hint(slot, value);
            }
        }
        if self.verbose {
            println!(
                "[stream_id={}] {}: {}",
                stream.get(),
                String::from_utf8_lossy(name),
                String::from_utf8_lossy(value)
            );
        }
    }

    fn wants_fields(&self) -> bool {
        // Only `-v` prints them and a page fetcher reads Early Hints; everything counted
        // comes with `headers_done`.
        self.verbose || self.ev.wants_hints()
    }

    fn headers_done(&mut self, stream: StreamId, done: HeadersDone) {
        let Some(slot) = self.map.get(stream.get()) else {
            if self.is_pushed(stream) {
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
        self.hinting = false;
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

    fn frame_received(&mut self, head: &FrameHeader) {
        // The frames that carried a push: PUSH_PROMISE (with its CONTINUATIONs, on the
        // parent stream) and every frame on a promised stream.
        let more = head.flags & flags::END_HEADERS == 0;
        let push = match head.kind {
            FrameKind::PushPromise => {
                *self.in_promise = more;
                true
            }
            FrameKind::Continuation if *self.in_promise => {
                *self.in_promise = more;
                true
            }
            _ => !self.pushed.is_empty() && self.is_pushed(head.stream_id),
        };
        if push {
            self.ev.push_frame(FRAME_HEADER_LEN + head.length as usize);
        }
    }

    fn push_promise(&mut self, _parent: StreamId, promised: StreamId) {
        self.pushed.push(promised.get());
        self.ev.push_promise(promised.get(), self.promised_path);
        self.promised_path.clear();
    }
}
