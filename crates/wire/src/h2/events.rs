//! The application-facing event sink of a [`Connection`](super::Connection).

use crate::frame::{ErrorCode, FrameHeader, StreamId};

/// What a completed field block was.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum HeadersKind {
    /// A request header section (server role): the stream is new.
    Request,
    /// An interim 1xx response (client role); the final response follows.
    Informational,
    /// The final response header section (client role).
    Response,
    /// A trailer section (either role); always ends the stream.
    Trailers,
}

/// Summary of a completed, validated field block, passed to
/// [`Events::headers_done`].
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct HeadersDone {
    /// Request, response or trailers.
    pub kind: HeadersKind,
    /// The peer will send nothing more on this stream (END_STREAM).
    pub end_stream: bool,
    /// Size of the HPACK-encoded field block (for header compression
    /// statistics, as h2load's "space savings").
    pub block_len: usize,
    /// Decoded size (name + value lengths, without the 32-octet overhead).
    pub decoded_len: usize,
    /// `:status` of a response.
    pub status: Option<u16>,
    /// `content-length`, if present.
    pub content_length: Option<u64>,
}

/// Receives what [`Connection::recv`](super::Connection::recv) decodes.
///
/// Fields are delivered as soon as they are decoded and validated, with
/// slices borrowed from the decoder — nothing is allocated or buffered per
/// block. A field block is only valid once [`headers_done`](Events::headers_done)
/// is called for it: if it turns out to be malformed, the connection resets
/// the stream and calls [`reset`](Events::reset) (with `by_peer == false`)
/// instead, and the fields already seen must be discarded.
///
/// Every method except [`header`](Events::header) has an empty default so a
/// sink implements only what it needs.
pub trait Events {
    /// One decoded field line of the block being received on `stream`.
    fn header(&mut self, stream: StreamId, name: &[u8], value: &[u8]);

    /// Whether [`header`](Events::header) must see every field of a response. A sink
    /// that needs only [`headers_done`](Events::headers_done) (status, lengths, content
    /// length) returns `false`: a response block that repeats the previous one
    /// byte for byte under the same HPACK context is then not decoded again, and its
    /// fields are not delivered (its `headers_done` is). Request, trailer and push
    /// promise blocks are always decoded and delivered.
    fn wants_fields(&self) -> bool {
        true
    }

    /// The field block on `stream` is complete and valid.
    fn headers_done(&mut self, stream: StreamId, done: HeadersDone) {
        let _ = (stream, done);
    }

    /// Body bytes (padding removed). `end_stream` marks the last call for
    /// the stream (it may come with an empty `data`). Flow control is
    /// handled by the connection: the bytes count as consumed on return.
    fn data(&mut self, stream: StreamId, data: &[u8], end_stream: bool) {
        let _ = (stream, data, end_stream);
    }

    /// The stream ended abnormally: reset by the peer (`by_peer`, from
    /// RST_STREAM or, with `REFUSED_STREAM`, because a GOAWAY's last stream
    /// id excluded it), or by us because of a stream error we detected (in
    /// which case an RST_STREAM with `code` was written to `out`). A stream
    /// reset with `REFUSED_STREAM` was not processed by the peer and can be
    /// retried (RFC 9113 §8.7). Not called for [`Connection::reset`](super::Connection::reset).
    fn reset(&mut self, stream: StreamId, code: ErrorCode, by_peer: bool) {
        let _ = (stream, code, by_peer);
    }

    /// The peer sent GOAWAY. Called before the `reset` events of the
    /// streams it excludes.
    fn goaway(&mut self, last_stream_id: StreamId, code: ErrorCode, debug: &[u8]) {
        let _ = (last_stream_id, code, debug);
    }

    /// The peer's SETTINGS were applied (and acknowledged); see
    /// [`Connection::peer_settings`](super::Connection::peer_settings).
    fn settings_changed(&mut self) {}

    /// Send window grew: on `Some(stream)` for that stream, on `None` for the
    /// connection or for all streams (INITIAL_WINDOW_SIZE increase). Streams
    /// blocked in [`Connection::send_data`](super::Connection::send_data)
    /// can retry.
    fn window_opened(&mut self, stream: Option<StreamId>) {
        let _ = stream;
    }

    /// A PRIORITY_UPDATE (RFC 9218 §7.1, server role) for `stream`, which is
    /// open or still idle (a request not yet received: RFC 9218 §7 "Servers
    /// SHOULD buffer the most recently received PRIORITY_UPDATE frame and
    /// apply it once the referenced stream is opened"). `field_value` is the
    /// priority text, for [`crate::priority::parse`]. Updates for closed
    /// streams are discarded before this; idle ones are bounded by
    /// SETTINGS_MAX_CONCURRENT_STREAMS, as the RFC requires.
    fn priority_update(&mut self, stream: StreamId, field_value: &[u8]) {
        let _ = (stream, field_value);
    }

    /// One field of the request a server promised on the reserved stream
    /// `promised` (client role with [`LocalSettings::enable_push`](super::LocalSettings::enable_push));
    /// [`push_promise`](Events::push_promise) follows once the block is
    /// complete and valid. The pushed response then arrives on `promised`
    /// like any response ([`header`](Events::header), [`headers_done`](Events::headers_done),
    /// [`data`](Events::data)).
    fn promised_header(&mut self, promised: StreamId, name: &[u8], value: &[u8]) {
        let _ = (promised, name, value);
    }

    /// A PUSH_PROMISE on our request `parent` reserved stream `promised`
    /// (RFC 9113 §8.4). Cancel an unwanted push with
    /// [`Connection::reset`](super::Connection::reset) (CANCEL).
    fn push_promise(&mut self, parent: StreamId, promised: StreamId) {
        let _ = (parent, promised);
    }

    /// The peer acknowledged one of our PINGs with this payload.
    fn ping_ack(&mut self, payload: [u8; 8]) {
        let _ = payload;
    }

    /// A complete frame arrived, before it is handled (and before any event it causes):
    /// its header. The frame took 9 octets plus `head.length` of the input. For byte
    /// accounting by frame, such as telling the frames that carried pushes apart.
    #[inline]
    fn frame_received(&mut self, head: &FrameHeader) {
        let _ = head;
    }
}
