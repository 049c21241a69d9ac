//! PUSH_PROMISE frames (RFC 9113 §6.6).

use super::continuation::encode_block_frames;
use super::error::{ErrorCode, H2Error};
use super::head::{flags, read_u32, write_header, FrameHeader, FrameKind, StreamId};
use super::padding;
use super::FRAME_HEADER_LEN;

/// Length of the Promised Stream ID field.
const PROMISED_ID_LEN: usize = 4;

/// A PUSH_PROMISE frame (type 0x05); `fragment` borrows from the input.
///
/// Role rules are left to the session: a server receiving PUSH_PROMISE, or
/// a client that disabled push, must treat it as a connection
/// PROTOCOL_ERROR (RFC 9113 §8.4, §6.5.2); the promised id must also be
/// greater than any stream the server opened before (§5.1.1).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub struct PushPromise<'a> {
    /// The associated (client-initiated) stream; never 0.
    pub stream_id: StreamId,
    /// The stream being reserved; always even and non-zero once decoded.
    pub promised_stream_id: StreamId,
    /// Field block fragment.
    pub fragment: &'a [u8],
    /// END_HEADERS flag.
    pub end_headers: bool,
    /// `Some(n)` if the frame is PADDED with `n` octets of padding.
    pub pad_len: Option<u8>,
}

impl<'a> PushPromise<'a> {
    /// Decode and validate a PUSH_PROMISE payload.
    ///
    /// Errors (all connection scope): stream 0 → PROTOCOL_ERROR; too short
    /// for Pad Length / Promised Stream ID → FRAME_SIZE_ERROR; padding ≥
    /// remaining payload → PROTOCOL_ERROR; promised id 0 or odd →
    /// PROTOCOL_ERROR.
    pub fn decode(header: FrameHeader, payload: &'a [u8]) -> Result<Self, H2Error> {
        // RFC 9113 §6.6: "If the Stream Identifier field specifies the value
        // 0x00, a recipient MUST respond with a connection error (Section
        // 5.4.1) of type PROTOCOL_ERROR."
        if header.stream_id.is_zero() {
            return Err(H2Error::connection(
                ErrorCode::PROTOCOL_ERROR,
                "RFC 9113 §6.6: PUSH_PROMISE on stream 0",
            ));
        }
        let (pad_len, body) = padding::split(
            payload,
            header.has_flag(flags::PADDED),
            PROMISED_ID_LEN,
            "RFC 9113 §4.2: PUSH_PROMISE too short for Promised Stream ID",
            "RFC 9113 §6.6: PUSH_PROMISE padding not smaller than payload",
        )?;
        let promised = read_u32(body, 0)
            .map(StreamId::new)
            .ok_or(H2Error::connection(
                ErrorCode::FRAME_SIZE_ERROR,
                "RFC 9113 §4.2: PUSH_PROMISE too short for Promised Stream ID",
            ))?;
        // RFC 9113 §6.6: "A receiver MUST treat the receipt of a PUSH_PROMISE
        // that promises an illegal stream identifier (Section 5.1.1) as a
        // connection error (Section 5.4.1) of type PROTOCOL_ERROR." Pushed
        // streams are server-initiated, hence even and non-zero.
        if !promised.is_server_initiated() {
            return Err(H2Error::connection(
                ErrorCode::PROTOCOL_ERROR,
                "RFC 9113 §6.6: PUSH_PROMISE promises an illegal stream id",
            ));
        }
        Ok(PushPromise {
            stream_id: header.stream_id,
            promised_stream_id: promised,
            fragment: body.get(PROMISED_ID_LEN..).unwrap_or_default(),
            end_headers: header.has_flag(flags::END_HEADERS),
            pad_len,
        })
    }

    /// Payload length of this frame when encoded.
    #[inline]
    pub fn payload_len(&self) -> usize {
        padding::overhead(self.pad_len) + PROMISED_ID_LEN + self.fragment.len()
    }

    /// Append this single frame exactly as described (no splitting).
    pub fn encode(&self, dst: &mut Vec<u8>) {
        let mut f = 0;
        if self.end_headers {
            f |= flags::END_HEADERS;
        }
        if self.pad_len.is_some() {
            f |= flags::PADDED;
        }
        let len = self.payload_len();
        dst.reserve(FRAME_HEADER_LEN + len);
        write_header(dst, FrameKind::PushPromise, f, self.stream_id, len);
        if let Some(p) = self.pad_len {
            dst.push(p);
        }
        dst.extend_from_slice(&self.promised_stream_id.get().to_be_bytes());
        dst.extend_from_slice(self.fragment);
        if let Some(p) = self.pad_len {
            padding::write_padding(dst, p);
        }
    }
}

/// Append a complete field block as a PUSH_PROMISE frame followed by
/// CONTINUATION frames if needed so that no payload exceeds
/// `max_frame_size` (same conventions as
/// [`encode_headers`](super::encode_headers)).
pub fn encode_push_promise(
    stream_id: StreamId,
    promised_stream_id: StreamId,
    block: &[u8],
    max_frame_size: u32,
    dst: &mut Vec<u8>,
) {
    let prefix = promised_stream_id.get().to_be_bytes();
    encode_block_frames(
        dst,
        FrameKind::PushPromise,
        0,
        stream_id,
        &prefix,
        block,
        max_frame_size,
    );
}
