//! HEADERS frames (RFC 9113 §6.2).

use super::continuation::encode_block_frames;
use super::error::{ErrorCode, H2Error};
use super::head::{flags, write_header, FrameHeader, FrameKind, StreamId};
use super::padding;
use super::priority::{PrioritySpec, PRIORITY_LEN};
use super::FRAME_HEADER_LEN;

/// A HEADERS frame (type 0x01); `fragment` borrows from the input.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub struct Headers<'a> {
    /// The stream; never 0.
    pub stream_id: StreamId,
    /// Priority fields, present iff the PRIORITY flag is set.
    pub priority: Option<PrioritySpec>,
    /// Field block fragment (padding and priority fields removed).
    pub fragment: &'a [u8],
    /// END_STREAM flag.
    pub end_stream: bool,
    /// END_HEADERS flag: the fragment is the whole field block.
    pub end_headers: bool,
    /// `Some(n)` if the frame is PADDED with `n` octets of padding.
    pub pad_len: Option<u8>,
}

impl<'a> Headers<'a> {
    /// An unpadded HEADERS frame without priority carrying a complete block
    /// (END_HEADERS set, END_STREAM clear).
    #[inline]
    pub const fn new(stream_id: StreamId, fragment: &'a [u8]) -> Self {
        Headers {
            stream_id,
            priority: None,
            fragment,
            end_stream: false,
            end_headers: true,
            pad_len: None,
        }
    }

    /// Decode and validate a HEADERS payload.
    ///
    /// Errors: stream 0 → connection PROTOCOL_ERROR; payload too short for
    /// Pad Length / priority fields → connection FRAME_SIZE_ERROR; padding
    /// ≥ remaining payload → connection PROTOCOL_ERROR; dependency on itself
    /// → stream PROTOCOL_ERROR.
    ///
    /// Note that on a stream error the field block must still be fed to the
    /// HPACK decoder; [`FrameDecoder`](super::FrameDecoder) therefore reports
    /// that case with the frame attached
    /// ([`Decoded::StreamError`](super::Decoded::StreamError)).
    pub fn decode(header: FrameHeader, payload: &'a [u8]) -> Result<Self, H2Error> {
        let h = Self::decode_lenient(header, payload)?;
        h.check_priority()?;
        Ok(h)
    }

    /// All checks except the stream-scoped self-dependency rule.
    pub(crate) fn decode_lenient(header: FrameHeader, payload: &'a [u8]) -> Result<Self, H2Error> {
        // RFC 9113 §6.2: "If a HEADERS frame is received whose Stream
        // Identifier field is 0x00, the recipient MUST respond with a
        // connection error (Section 5.4.1) of type PROTOCOL_ERROR."
        if header.stream_id.is_zero() {
            return Err(H2Error::connection(
                ErrorCode::PROTOCOL_ERROR,
                "RFC 9113 §6.2: HEADERS on stream 0",
            ));
        }
        let has_priority = header.has_flag(flags::PRIORITY);
        let fixed = if has_priority { PRIORITY_LEN } else { 0 };
        // RFC 9113 §4.2 (too small → FRAME_SIZE_ERROR; HEADERS carries a field
        // block, so it is a connection error) and §6.2 padding rule.
        let (pad_len, body) = padding::split(
            payload,
            header.has_flag(flags::PADDED),
            fixed,
            "RFC 9113 §4.2: HEADERS too short for Pad Length/priority fields",
            "RFC 9113 §6.2: HEADERS padding not smaller than payload",
        )?;
        let (priority, fragment) = if has_priority {
            let spec = PrioritySpec::parse(body).ok_or(H2Error::connection(
                ErrorCode::FRAME_SIZE_ERROR,
                "RFC 9113 §4.2: HEADERS too short for priority fields",
            ))?;
            (Some(spec), body.get(PRIORITY_LEN..).unwrap_or_default())
        } else {
            (None, body)
        };
        Ok(Headers {
            stream_id: header.stream_id,
            priority,
            fragment,
            end_stream: header.has_flag(flags::END_STREAM),
            end_headers: header.has_flag(flags::END_HEADERS),
            pad_len,
        })
    }

    /// The stream-scoped priority rule (self-dependency).
    pub(crate) fn check_priority(&self) -> Result<(), H2Error> {
        match &self.priority {
            Some(p) => p.check_not_self(
                self.stream_id,
                "RFC 7540 §5.3.1: HEADERS depends on its own stream",
            ),
            None => Ok(()),
        }
    }

    /// Payload length of this frame when encoded.
    #[inline]
    pub fn payload_len(&self) -> usize {
        padding::overhead(self.pad_len)
            + if self.priority.is_some() {
                PRIORITY_LEN
            } else {
                0
            }
            + self.fragment.len()
    }

    /// Append this single frame exactly as described (flags from the
    /// fields, no splitting). Use [`encode_headers`] to split a large block.
    pub fn encode(&self, dst: &mut Vec<u8>) {
        let mut f = 0;
        if self.end_stream {
            f |= flags::END_STREAM;
        }
        if self.end_headers {
            f |= flags::END_HEADERS;
        }
        if self.pad_len.is_some() {
            f |= flags::PADDED;
        }
        if self.priority.is_some() {
            f |= flags::PRIORITY;
        }
        let len = self.payload_len();
        dst.reserve(FRAME_HEADER_LEN + len);
        write_header(dst, FrameKind::Headers, f, self.stream_id, len);
        if let Some(p) = self.pad_len {
            dst.push(p);
        }
        if let Some(spec) = &self.priority {
            dst.extend_from_slice(&spec.to_bytes());
        }
        dst.extend_from_slice(self.fragment);
        if let Some(p) = self.pad_len {
            padding::write_padding(dst, p);
        }
    }
}

/// Hot path: append a complete field block as a HEADERS frame followed by
/// CONTINUATION frames if `block` is larger than `max_frame_size` (the
/// peer's SETTINGS_MAX_FRAME_SIZE). END_STREAM is set on the HEADERS frame
/// (RFC 9113 §6.10: CONTINUATION frames carry no END_STREAM), END_HEADERS on
/// the last frame. No padding, no priority.
///
/// A `max_frame_size` below the RFC minimum of 16384 is honoured (handy for
/// tests); 0 is treated as 1.
pub fn encode_headers(
    stream_id: StreamId,
    block: &[u8],
    end_stream: bool,
    max_frame_size: u32,
    dst: &mut Vec<u8>,
) {
    let f = if end_stream { flags::END_STREAM } else { 0 };
    encode_block_frames(
        dst,
        FrameKind::Headers,
        f,
        stream_id,
        &[],
        block,
        max_frame_size,
    );
}
